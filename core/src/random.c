/* core/src/random.c: pollen/random.h, production's generator and the
 * seam a simulator installs its source through.
 *
 * Like pl_thread_ops (thread.c), the seam is one thread-local pointer: a
 * simulated run owns its OS thread and installs its source there, and
 * every other OS thread keeps production's generator. The generator is
 * splitmix64: a 64-bit state, one add and a mix per value, and any seed
 * (zero included) is good. Its state is per OS thread so that no lock
 * is needed and one thread's draws never change another's sequence.
 *
 * fork() copies the forking thread's state into the child, which would
 * then draw the parent's next values: two processes handing out the same
 * "random" ids. A child handler (pthread_atfork, registered at the first
 * seeding from entropy) makes the child seed itself afresh. A state the
 * program seeded by pl_random_seed is the program's choice and is kept. */
#include "pollen/random.h"

#include <pthread.h>
#include <stdbool.h>

#include "internal.h"

uint64_t pl__random_entropy(void); /* core/backend/entropy.c */

static _Thread_local const pl_random_ops *cur_ops;
static _Thread_local void *cur_self;
static _Thread_local uint64_t state;
static _Thread_local bool seeded;
static _Thread_local bool from_entropy; /* seeded by pl__random_entropy */

/* The child's only thread is the one that forked: its copy is reseeded
 * at its next draw. */
static void reseed_in_child(void)
{
    if (from_entropy) {
        seeded = false;
    }
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void register_atfork(void) { (void)pthread_atfork(NULL, NULL, reseed_in_child); }

void pl_random_ops_install(const pl_random_ops *ops, void *self)
{
    PL_ASSERT(ops == NULL || (ops->version >= 1 && ops->below != NULL));
    cur_ops = ops;
    cur_self = self;
}

void pl_random_seed(uint64_t seed)
{
    state = seed;
    seeded = true;
    from_entropy = false;
}

static uint64_t splitmix64(void)
{
    if (!seeded) {
        (void)pthread_once(&atfork_once, register_atfork);
        pl_random_seed(pl__random_entropy());
        from_entropy = true;
    }
    state += 0x9e3779b97f4a7c15u;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* The high 64 bits of x * bound: a value in [0, bound) whose bias is at
 * most bound / 2^64, and 0 for x = 0 (a shrunk draw stays the smallest). */
static uint64_t scale(uint64_t x, uint64_t bound)
{
    uint64_t xl = x & 0xffffffffu, xh = x >> 32;
    uint64_t bl = bound & 0xffffffffu, bh = bound >> 32;
    uint64_t ll = xl * bl, lh = xl * bh, hl = xh * bl, hh = xh * bh;
    uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

uint64_t pl_random_u64(void)
{
    if (cur_ops != NULL) {
        return cur_ops->below(cur_self, 0, "pl_random_u64()");
    }
    return splitmix64();
}

uint64_t pl_random_below(uint64_t bound)
{
    PL_ASSERT(bound >= 1);
    if (cur_ops == NULL) {
        return scale(splitmix64(), bound);
    }
    if (bound >= PL_RANDOM_OPS_BOUND_MAX) {
        return scale(cur_ops->below(cur_self, 0, "pl_random_below()"), bound);
    }
    uint64_t v = cur_ops->below(cur_self, bound, "pl_random_below()");
    PL_ASSERT(v < bound);
    return v;
}
