/* sim/src/env/random.c: user code's randomness under the simulator:
 * pollen/random.h's source during a run, and the C library's random
 * functions routed (env.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "../prng.h"
#include "../sim_internal.h"
#include "env.h"
#include "pollen/random.h"

/* One decision: n = bound + 1, where choice 0 (production's, the kind
 * off, a value shrunk away) and choice 1 both give 0 and choice v gives
 * v - 1 (knobs.h). The asker's words go with it when the run explains
 * its decisions. */
static uint64_t draw_one(pl__sim *s, uint32_t bound, const char *what, const char *part)
{
    uint32_t v = pl__sim_choose(s, PL_DECIDE_RANDOM, bound + 1, 0);
    uint32_t value = v == 0 ? 0 : v - 1;
    char *text = pl__sim_decision_text(s);
    if (text != NULL) {
        snprintf(text, PL__DECISION_TEXT_MAX, "%s drew %" PRIu32 "%s", what, value, part);
    }
    return value;
}

uint64_t pl__env_draw(pl__sim *s, uint64_t bound, const char *what)
{
    PL__SIM_ASSERT(bound < PL_RANDOM_OPS_BOUND_MAX);
    if (bound == 1) {
        return 0;
    }
    if (bound != 0) {
        return draw_one(s, (uint32_t)bound, what, "");
    }
    /* 64 bits as three draws whose bounds stay far below a decision's
     * 2^32 choices. */
    uint64_t hi = draw_one(s, 1u << 22, what, " (bits 63..42)");
    uint64_t mid = draw_one(s, 1u << 21, what, " (bits 41..21)");
    uint64_t lo = draw_one(s, 1u << 21, what, " (bits 20..0)");
    return hi << 42 | mid << 21 | lo;
}

static uint64_t ops_below(void *self, uint64_t bound, const char *what)
{
    return pl__env_draw(self, bound, what);
}

static const pl_random_ops sim_random_ops = {
    .version = PL_RANDOM_OPS_VERSION,
    .below = ops_below,
};

void pl__env_install(pl__sim *s)
{
    pl_random_ops_install(s != NULL ? &sim_random_ops : NULL, s);
}

/* ---- The C library's functions, routed ---------------------------------
 * Outside a run each calls the definition that follows this library's in
 * the lookup order: the C library's (or a sanitizer's interceptor, which
 * calls it in turn). */

int rand(void)
{
    pl__sim *s = pl__sim_current();
    if (s != NULL) {
        return (int)pl__env_draw(s, (uint64_t)RAND_MAX + 1, "rand()");
    }
    int (*fn)(void);
    PL__ENV_REAL(fn, "rand");
    return fn();
}

long random(void)
{
    pl__sim *s = pl__sim_current();
    if (s != NULL) {
        return (long)pl__env_draw(s, (uint64_t)1 << 31, "random()");
    }
    long (*fn)(void);
    PL__ENV_REAL(fn, "random");
    return fn();
}

/* In a run the stream decides every value, whatever the seed given. */
void srand(unsigned int seed)
{
    if (pl__sim_current() != NULL) {
        return;
    }
    void (*fn)(unsigned int);
    PL__ENV_REAL(fn, "srand");
    fn(seed);
}

void srandom(unsigned int seed)
{
    if (pl__sim_current() != NULL) {
        return;
    }
    void (*fn)(unsigned int);
    PL__ENV_REAL(fn, "srandom");
    fn(seed);
}

/* Up to this many bytes a fill draws three bytes a decision, so a short
 * read (a seed, a nonce) shrinks byte by byte; a longer one draws one
 * 64-bit value (three decisions) and expands it with splitmix64, so a
 * megabyte costs three decisions, not 350,000 that would overflow the
 * run's record. */
#define FILL_DIRECT_MAX 24

/* Fills buf from the stream. */
static void fill(pl__sim *s, void *buf, size_t len, const char *what)
{
    unsigned char *p = buf;
    if (len > FILL_DIRECT_MAX) {
        uint64_t state = pl__env_draw(s, 0, what);
        for (size_t i = 0; i < len; i += 8) {
            uint64_t v = pl__splitmix64(&state);
            size_t n = len - i < 8 ? len - i : 8;
            for (size_t b = 0; b < n; b++) {
                p[i + b] = (unsigned char)(v >> (8 * b));
            }
        }
        return;
    }
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)pl__env_draw(s, 1u << 24, what);
        for (size_t b = 0; b < 3 && i + b < len; b++) {
            p[i + b] = (unsigned char)(v >> (8 * b));
        }
    }
}

ssize_t getrandom(void *buf, size_t len, unsigned int flags)
{
    pl__sim *s = pl__sim_current();
    if (s != NULL) {
        if (len > SSIZE_MAX) {
            len = SSIZE_MAX;
        }
        fill(s, buf, len, "getrandom()");
        return (ssize_t)len;
    }
    ssize_t (*fn)(void *, size_t, unsigned int);
    PL__ENV_REAL(fn, "getrandom");
    return fn(buf, len, flags);
}

int getentropy(void *buf, size_t len)
{
    pl__sim *s = pl__sim_current();
    if (s != NULL) {
        if (len > 256) { /* the C library's limit */
            errno = EIO;
            return -1;
        }
        fill(s, buf, len, "getentropy()");
        return 0;
    }
    int (*fn)(void *, size_t);
    PL__ENV_REAL(fn, "getentropy");
    return fn(buf, len);
}

/* arc4random_buf outside a run where the C library has no arc4random
 * (before glibc 2.36): the kernel's generator, as glibc's own uses. */
static void fill_from_kernel(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            PL__SIM_ASSERT(errno == EINTR); /* getrandom(2) without flags fails only so */
            continue;
        }
        p += n;
        len -= (size_t)n;
    }
}

uint32_t arc4random(void)
{
    pl__sim *s = pl__sim_current();
    if (s != NULL) {
        return (uint32_t)(pl__env_draw(s, 0, "arc4random()") >> 32);
    }
    uint32_t (*fn)(void);
    PL__ENV_REAL_OPTIONAL(fn, "arc4random");
    if (fn == NULL) {
        uint32_t v;
        arc4random_buf(&v, sizeof v);
        return v;
    }
    return fn();
}

uint32_t arc4random_uniform(uint32_t bound)
{
    pl__sim *s = pl__sim_current();
    if (s != NULL) {
        if (bound < PL_RANDOM_OPS_BOUND_MAX) {
            return bound <= 1 ? 0 : (uint32_t)pl__env_draw(s, bound, "arc4random_uniform()");
        }
        uint64_t x = pl__env_draw(s, 0, "arc4random_uniform()") >> 32;
        return (uint32_t)(x * bound >> 32);
    }
    uint32_t (*fn)(uint32_t);
    PL__ENV_REAL_OPTIONAL(fn, "arc4random_uniform");
    if (fn == NULL) {
        return (uint32_t)((uint64_t)arc4random() * bound >> 32); /* bias < bound / 2^32 */
    }
    return fn(bound);
}

void arc4random_buf(void *buf, size_t len)
{
    pl__sim *s = pl__sim_current();
    if (s != NULL) {
        fill(s, buf, len, "arc4random_buf()");
        return;
    }
    void (*fn)(void *, size_t);
    PL__ENV_REAL_OPTIONAL(fn, "arc4random_buf");
    if (fn == NULL) {
        fill_from_kernel(buf, len);
        return;
    }
    fn(buf, len);
}
