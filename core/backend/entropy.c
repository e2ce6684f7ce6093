/* core/backend/entropy.c: the seed of production's random generator
 * (core/src/random.c may not read a random source itself). */
#include <stdint.h>
#include <sys/random.h>
#include <time.h>

uint64_t pl__random_entropy(void);

/* getrandom does not block once the kernel's pool is initialized, which
 * it is long before a program runs; should it fail anyway (a seccomp
 * filter, an old kernel), the clock and a stack address still make two
 * threads' sequences differ. */
uint64_t pl__random_entropy(void)
{
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == (ssize_t)sizeof seed) {
        return seed;
    }
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)ts.tv_sec ^
           (uint64_t)(uintptr_t)&seed;
}
