/* sim/src/prng.h: the simulator's pseudo-random generator.
 *
 * Integer-only and frozen for replay-format version 1: a seed must give
 * the same numbers on every compiler, flag set and platform, forever.
 * Changing any function below changes every recorded seed's meaning and
 * requires a new replay-format version.
 *
 * Algorithm (version 1):
 *   - splitmix64 (Steele, Lea, Flood 2014): state += 0x9e3779b97f4a7c15;
 *     z = state; z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9;
 *     z = (z ^ z >> 27) * 0x94d049bb133111eb; return z ^ z >> 31.
 *   - pl__prng_seed(seed): xoshiro256** (Blackman, Vigna 2018) state
 *     s[0..3] = four consecutive splitmix64 outputs from state = seed.
 *     splitmix64 is a bijection of its counter, so the state is never all
 *     zero.
 *   - pl__prng_next: one xoshiro256** step, 64 bits.
 *   - pl__prng_below(n): Lemire's multiply-shift with rejection on the top
 *     32 bits of each pl__prng_next output: x = next() >> 32;
 *     m = x * n (64-bit); accept when (uint32_t)m >= (2^32 - n) % n;
 *     result m >> 32. Each attempt consumes exactly one output.
 *   - pl__prng_chance(p): one output; true when (next() >> 48) < p, p in
 *     parts per 65536 (0 never, 65536 always, one output consumed either
 *     way).
 *   - pl__prng_subseed(root, purpose): z = purpose + 0x5eed;
 *     x = root ^ splitmix64(&z); return splitmix64(&x).
 *
 * Ownership: pl__prng is a plain value (32 bytes); copy it to fork a
 * stream. Not thread-safe; one per user. No function here allocates,
 * reads a clock or touches global state.
 *
 * The hot functions are C99 inline definitions so callers in other
 * translation units inline them; prng.c provides the one external
 * definition each.
 */
#ifndef POLLEN_SIM_PRNG_H
#define POLLEN_SIM_PRNG_H

#include <stdbool.h>
#include <stdint.h>

/* Probabilities are integer parts per 65536, never floating point. */
#define PL__PROB_ONE 65536u

/* Purposes for pl__prng_subseed. Values are part of replay format 1:
 * append only, never renumber. Callers may also use their own values
 * from PL__SEED_USER upward. */
typedef enum pl__seed_purpose {
    PL__SEED_DECIDE = 1, /* the decision stream (pl__dec PRNG source) */
    PL__SEED_SWARM = 2,  /* pl__dec_knobs_swarm */
    PL__SEED_SIM = 3,    /* sim backend data not drawn through decisions */
    PL__SEED_STRATEGY = 4, /* exploration strategies (PCT change points) */
    PL__SEED_WHY = 5,      /* `pollen why`'s continuations, from the replay's seed */
    PL__SEED_USER = 0x10000,
} pl__seed_purpose;

typedef struct pl__prng {
    uint64_t s[4]; /* xoshiro256** state; never all zero */
} pl__prng;

#define PL__ROTL64(x, k) (((x) << (k)) | ((x) >> (64 - (k))))

/* Advances a splitmix64 counter at *state and returns the next output. */
inline uint64_t pl__splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* The next 64 bits of the stream. */
inline uint64_t pl__prng_next(pl__prng *p)
{
    uint64_t s1 = p->s[1];
    uint64_t result = PL__ROTL64(s1 * 5, 7) * 9;
    uint64_t t = s1 << 17;
    p->s[2] ^= p->s[0];
    p->s[3] ^= p->s[1];
    p->s[1] ^= p->s[2];
    p->s[0] ^= p->s[3];
    p->s[2] ^= t;
    p->s[3] = PL__ROTL64(p->s[3], 45);
    return result;
}

/* A uniform value in [0, n). Requires n >= 1 (n == 1 still consumes one
 * output and returns 0). */
inline uint32_t pl__prng_below(pl__prng *p, uint32_t n)
{
    uint64_t m = (pl__prng_next(p) >> 32) * (uint64_t)n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        /* (2^32 - n) % n: the size of the biased zone to reject. */
        uint32_t threshold = (uint32_t)(0u - n) % n;
        while (low < threshold) {
            m = (pl__prng_next(p) >> 32) * (uint64_t)n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* True with probability prob / 65536 (prob in [0, 65536]). Always consumes
 * exactly one output. */
inline bool pl__prng_chance(pl__prng *p, uint32_t prob)
{
    return (pl__prng_next(p) >> 48) < prob;
}

/* Seeds *p from `seed` (any value, 0 included). */
void pl__prng_seed(pl__prng *p, uint64_t seed);

/* A seed for `purpose` derived from the run's root seed: independent
 * streams per subsystem, so enabling one consumer does not shift
 * another's numbers. */
uint64_t pl__prng_subseed(uint64_t root, uint64_t purpose);

#endif
