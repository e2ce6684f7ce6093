/* sim/src/env/env.h: the C library's clocks and random numbers, routed
 * to the run in a simulation binary.
 *
 * Real C code calls clock_gettime, gettimeofday, time, rand, random and
 * getrandom itself. libpollen-sim defines those names (clock.c,
 * random.c), so in a program linked with it (the pollen CLI, a harness
 * over pl_main, the pthread shim's programs) the dynamic linker binds
 * every call to these definitions, whichever library makes it. Each one
 * asks whether the calling OS thread runs a simulated run
 * (pl__sim_current, a thread-local):
 *
 *   in a run   clocks read the run's virtual time (CLOCK_REALTIME and the
 *              other wall clocks at PL__ENV_EPOCH_NS plus virtual now,
 *              every other clock at virtual now); the random functions
 *              draw from the run's stream, each value a recorded
 *              decision of kind `random` (knobs.h), so a seed gives the
 *              same values, a replay reproduces them and the shrinker
 *              lowers them. srand and srandom change nothing there.
 *   outside    each forwards to the C library's own definition (the next
 *              one in the lookup order, dlsym(RTLD_NEXT)).
 *
 * pollen's own code that needs the real clock inside a run (the CLI's
 * watchdogs and progress lines, the shrinker's time budget) reads it
 * through pl__env_real_now, never through clock_gettime.
 *
 * Not routed (docs/simulator.md lists them): rdtsc, clock(), times(),
 * getrusage, rand_r and the drand48 family, /dev/urandom or /dev/random
 * opened by hand, a raw syscall(SYS_clock_gettime), a statically linked
 * libc, and calls the C library makes internally (it uses its own
 * aliases). A signal handler that runs on the run's OS thread during a
 * run reads virtual time too.
 */
#ifndef POLLEN_SIM_ENV_H
#define POLLEN_SIM_ENV_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "pollen/time.h"
#include "../sim_assert.h"

struct pl__sim;

/* CLOCK_REALTIME's value at virtual time 0 (2023-11-14T22:13:20Z): a
 * plausible date, the same in every run. */
#define PL__ENV_EPOCH_NS ((pl_time)1700000000 * PL_S)

/* The definition of `name` that follows libpollen-sim's in the lookup
 * order (the C library's), looked up once and kept in *slot; NULL when
 * the C library has none. Any thread. */
void *pl__env_real(_Atomic(void *) *slot, const char *name);

/* Sets the function pointer `fn` (a local of the right type) to the real
 * `name`, or NULL when the C library lacks it: PL__ENV_REAL for a name
 * every supported C library has (it asserts), PL__ENV_REAL_OPTIONAL for
 * one a caller falls back from (arc4random: glibc 2.36 and later). */
#define PL__ENV_REAL_OPTIONAL(fn, name)                                                            \
    do {                                                                                           \
        static _Atomic(void *) pl__env_slot_;                                                      \
        void *pl__env_p_ = pl__env_real(&pl__env_slot_, (name));                                   \
        memcpy(&(fn), &pl__env_p_, sizeof(fn));                                                    \
    } while (0)
#define PL__ENV_REAL(fn, name)                                                                     \
    do {                                                                                           \
        PL__ENV_REAL_OPTIONAL(fn, name);                                                           \
        PL__SIM_ASSERT((fn) != NULL);                                                              \
    } while (0)

/* The real CLOCK_MONOTONIC, in and outside runs. Any thread. */
pl_time pl__env_real_now(void);

/* The C library's clock_gettime, in and outside runs. Any thread. */
int pl__env_real_clock_gettime(clockid_t clk, struct timespec *ts);

/* Makes the run s the source of pollen/random.h's values on the calling
 * OS thread (pl_random_ops_install); NULL gives production's generator
 * back. sim.c calls it as a run starts and ends. */
void pl__env_install(struct pl__sim *s);

/* A value in [0, bound) from run s's stream (bound 0: any 64-bit value;
 * otherwise bound < PL_RANDOM_OPS_BOUND_MAX), drawn as decisions of kind
 * random; `what` names the call for the decision's explanation. */
uint64_t pl__env_draw(struct pl__sim *s, uint64_t bound, const char *what);

#endif
