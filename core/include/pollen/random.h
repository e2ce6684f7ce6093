/* pollen/random.h: a random source for user code, seeded per run.
 *
 * A client workload, a backoff's jitter or a load generator needs random
 * numbers that differ from run to run in production and that a simulated
 * run can reproduce. pl_random_u64 and pl_random_below are that source:
 *
 *   - in production, each OS thread has its own generator (splitmix64),
 *     seeded on its first use from the system's entropy (getrandom), or
 *     by pl_random_seed for a reproducible sequence; a child of fork()
 *     seeds its copy of an entropy-seeded generator afresh (it does not
 *     repeat the parent's values), and keeps a pl_random_seed one;
 *   - under the simulator, every value is a recorded decision of the
 *     kind `random` (pollen/sim.h), drawn from the run's stream: a seed
 *     gives the same values every time, a replay file reproduces them,
 *     and the shrinker lowers them towards 0 (the value a draw takes
 *     when the kind is off: `--knobs random=off`).
 *
 * Where: any thread, any time (in a poll, in setup, in a simulated
 * thread). Neither allocates nor fails.
 */
#ifndef POLLEN_RANDOM_H
#define POLLEN_RANDOM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A uniformly distributed 64-bit value. Under the simulator: three
 * decisions (22, 21 and 21 bits, high bits first). */
uint64_t pl_random_u64(void);

/* A value in [0, bound); `bound` must be at least 1 (an assertion).
 * Under the simulator: one decision when bound < 2^32 - 1 (exactly
 * uniform), else the high half of pl_random_u64() * bound. */
uint64_t pl_random_below(uint64_t bound);

/* Seeds the calling OS thread's production generator: the values that
 * follow are a function of `seed`. Under the simulator it changes
 * nothing (the run's stream decides). */
void pl_random_seed(uint64_t seed);

/* ---- For implementers of a system (the simulator) ------------------------
 * The random source of the calling OS thread: `below(self, bound, what)`
 * returns a value in [0, bound) for 1 <= bound < PL_RANDOM_OPS_BOUND_MAX,
 * any 64-bit value for bound 0 (pl_random_below scales one for a larger
 * bound); `what` names the call that asked ("pl_random_u64()", "rand()"),
 * for the explanation of a recorded draw. Applications never use this. */
#define PL_RANDOM_OPS_VERSION 1u
#define PL_RANDOM_OPS_BOUND_MAX ((uint64_t)UINT32_MAX)

typedef struct pl_random_ops {
    uint32_t version;  /* PL_RANDOM_OPS_VERSION */
    uint32_t reserved; /* zero */
    uint64_t (*below)(void *self, uint64_t bound, const char *what);
} pl_random_ops;

/* Installs `ops` (NULL: production) for the calling OS thread. */
void pl_random_ops_install(const pl_random_ops *ops, void *self);

#ifdef __cplusplus
}
#endif

#endif
