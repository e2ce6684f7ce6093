/* sim/src/env/clock.c: the C library's clocks routed to the run's
 * virtual time (env.h), and pollen's private path to the real clock. */
#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "../sim_internal.h"
#include "env.h"

/* Looked up once per name; two threads racing store the same address.
 * A name the C library lacks is looked up again at each call: only the
 * optional ones (arc4random before glibc 2.36) can be missing, and their
 * callers fall back. */
void *pl__env_real(_Atomic(void *) *slot, const char *name)
{
    void *fn = atomic_load_explicit(slot, memory_order_acquire);
    if (fn == NULL) {
        fn = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, fn, memory_order_release);
    }
    return fn;
}

/* dlsym is not async-signal-safe, and a signal handler may read the real
 * clocks (pl_sim_route_clocks): the clocks' lookups are made as the
 * library loads, outside any run, so no handler makes the first one. */
__attribute__((constructor)) static void resolve_clocks(void)
{
    struct timespec ts;
    struct timeval tv;
    (void)pl__env_real_clock_gettime(CLOCK_MONOTONIC, &ts);
    (void)gettimeofday(&tv, NULL);
    (void)time(NULL);
}

int pl__env_real_clock_gettime(clockid_t clk, struct timespec *ts)
{
    int (*fn)(clockid_t, struct timespec *);
    PL__ENV_REAL(fn, "clock_gettime");
    return fn(clk, ts);
}

pl_time pl__env_real_now(void)
{
    struct timespec ts;
    (void)pl__env_real_clock_gettime(CLOCK_MONOTONIC, &ts);
    return (pl_time)ts.tv_sec * PL_S + (pl_time)ts.tv_nsec;
}

/* Wall clocks start at the epoch, the others (monotonic, boot time, CPU
 * time) at 0: a run's CPU clocks advance with virtual time, as a
 * program's would if it ran flat out. */
static bool wall_clock(clockid_t clk)
{
    return clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE || clk == CLOCK_TAI ||
           clk == CLOCK_REALTIME_ALARM;
}

/* sig_atomic_t: a signal handler may switch routing around its own
 * clock reads (fuzz/fuzz_scenario.c wraps libFuzzer's timeout so). */
static volatile sig_atomic_t clocks_routed = 1;

bool pl_sim_route_clocks(bool on)
{
    bool was = clocks_routed != 0;
    clocks_routed = on;
    return was;
}

/* The run whose virtual time the calling thread's clocks read: none
 * outside a run, or when routing is off. */
static const pl__sim *routed_run(void) { return clocks_routed != 0 ? pl__sim_current() : NULL; }

/* The virtual reading of clk, in nanoseconds: the clock of the node
 * whose code reads it (a skewed node's own, node_clock.c). */
static pl_time virtual_now(const pl__sim *s, clockid_t clk)
{
    bool wall = wall_clock(clk);
    return pl__node_clock_read(s, pl__node_current(s), pl__sim_now(s), wall) +
           (wall ? PL__ENV_EPOCH_NS : 0);
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    const pl__sim *s = routed_run();
    if (s == NULL) {
        return pl__env_real_clock_gettime(clk, ts);
    }
    pl_time t = virtual_now(s, clk);
    ts->tv_sec = (time_t)(t / PL_S);
    ts->tv_nsec = (long)(t % PL_S);
    return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    const pl__sim *s = routed_run();
    if (s == NULL) {
        int (*fn)(struct timeval *restrict, void *restrict);
        PL__ENV_REAL(fn, "gettimeofday");
        return fn(tv, tz);
    }
    pl_time t = virtual_now(s, CLOCK_REALTIME); /* tv is nonnull, as glibc declares it */
    tv->tv_sec = (time_t)(t / PL_S);
    tv->tv_usec = (suseconds_t)(t % PL_S / PL_US);
    if (tz != NULL) {
        memset(tz, 0, sizeof(struct timezone)); /* UTC, as the kernel keeps it */
    }
    return 0;
}

time_t time(time_t *out)
{
    const pl__sim *s = routed_run();
    if (s == NULL) {
        time_t (*fn)(time_t *);
        PL__ENV_REAL(fn, "time");
        return fn(out);
    }
    time_t t = (time_t)(virtual_now(s, CLOCK_REALTIME) / PL_S);
    if (out != NULL) {
        *out = t;
    }
    return t;
}
