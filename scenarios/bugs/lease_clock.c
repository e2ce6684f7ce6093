/* Zoo: a worker that keeps its lease alive by reading clock_gettime, and
 * paces its work with rand(), as plain C code does.
 *
 * The protocol: a worker holds a lease of 300 ms that a keeper (the lock
 * service, a background task) revokes when it is not renewed in time.
 * The worker does steps of 1 to 50 ms of work, their lengths from
 * rand(), and after each step renews the lease once 200 ms have passed
 * since the last renewal, measured with clock_gettime(CLOCK_MONOTONIC).
 * It works for 2.5 s.
 *
 * Neither task knows it runs under a simulator: the worker calls the C
 * library. In a simulation binary those calls are routed to the run
 * (docs/simulator.md, "The C library's clocks and random numbers"):
 * clock_gettime reads the virtual clock the keeper's timers run on, and
 * rand() draws from the run's stream, so a seed replays and every run of
 * it has the same trace hash. With the wall clock instead, 2.5 s of
 * virtual work pass in microseconds, the worker never sees 200 ms go by,
 * and the fixed twin would lose its lease too.
 *
 * BUG (bug_lease_clock): the elapsed time is computed from tv_nsec alone
 * (now.tv_nsec - last.tv_nsec), a classic slip. tv_nsec stays below 1 s,
 * so that difference is below 1 s - last.tv_nsec whatever the seconds
 * say: a renewal whose tv_nsec is 0.8 s or more is the worker's last (its
 * difference never reaches 200 ms again), and one earlier in its second
 * is followed by another only if a step ends between 200 ms after it and
 * the end of that second (past it, the difference is negative until the
 * same point of a later second, 1.2 s on at the soonest). The keeper
 * revokes the lease 300 ms after the last renewal, while the worker is
 * still working. Finding: assertion (pl_always: the lease is renewed
 * before it lapses). The schedule needs no departure: renewals 200 to
 * 250 ms apart (steps of at most 50 ms) from the start of a second reach
 * its 0.8 s within four, long before the 2.5 s of work are done.
 * FIX (fix_lease_clock): elapsed time in nanoseconds from both fields.
 */
#include <stdlib.h>
#include <time.h>

#include "zoo.h"

#define LEASE_NS (300 * PL_MS)
#define RENEW_AFTER_NS (200 * PL_MS)
#define STEP_MAX_MS 50
#define WORK_NS (2500 * PL_MS)

typedef struct lease_state {
    bool fixed;
    bool done;          /* the worker finished */
    pl_time renewed_at; /* the keeper's clock (pl_now) at the latest renewal */
    uint32_t renewals;
} lease_state;

static pl_time ts_ns(const struct timespec *ts)
{
    return (pl_time)ts->tv_sec * PL_S + (pl_time)ts->tv_nsec;
}

/* Time since `last` by clock_gettime; the buggy worker's lease arithmetic
 * keeps tv_nsec only. */
static pl_time elapsed(bool nsec_only, const struct timespec *last)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (nsec_only) {
        return (pl_time)(now.tv_nsec - last->tv_nsec); /* BUG: the seconds are lost */
    }
    return ts_ns(&now) - ts_ns(last); /* FIX */
}

/* ---- The worker: steps of work, a renewal every 200 ms ------------------- */

typedef struct worker {
    pl_future base;
    lease_state *st;
    struct timespec start, last;
    pl_sleep step;
} worker;

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *self = (worker *)f;
    lease_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    clock_gettime(CLOCK_MONOTONIC, &self->start);
    self->last = self->start;
    while (elapsed(false, &self->start) < WORK_NS) {
        self->step = pl_sleep_for((pl_time)(1 + rand() % STEP_MAX_MS) * PL_MS);
        PL_AWAIT(cx, &self->step);
        if (elapsed(!st->fixed, &self->last) >= RENEW_AFTER_NS) {
            clock_gettime(CLOCK_MONOTONIC, &self->last);
            st->renewed_at = pl_now(cx->ex);
            st->renewals++;
        }
    }
    st->done = true;
    PL_ASYNC_END;
}

static void worker_drop(pl_future *f)
{
    worker *self = (worker *)f;
    pl_drop_child(&self->step.base);
}

static const pl_future_vtable worker_vt = {"worker", worker_poll, worker_drop};

/* ---- The keeper: revokes a lease not renewed within 300 ms --------------- */

typedef struct keeper {
    pl_future base;
    lease_state *st;
    pl_sleep until;
} keeper;

static pl_poll_result keeper_poll(pl_future *f, pl_context *cx)
{
    keeper *self = (keeper *)f;
    lease_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    while (!st->done) {
        self->until = pl_sleep_until(st->renewed_at + LEASE_NS);
        PL_AWAIT(cx, &self->until);
        bool renewed = st->done || pl_now(cx->ex) < st->renewed_at + LEASE_NS;
        pl_always(renewed, "the lease is renewed before it lapses");
        if (!renewed) {
            break; /* revoked: a lapsed lease's sleep is due at once, and
                      looping on it would never yield */
        }
    }
    PL_ASYNC_END;
}

static void keeper_drop(pl_future *f)
{
    keeper *self = (keeper *)f;
    pl_drop_child(&self->until.base);
}

static const pl_future_vtable keeper_vt = {"keeper", keeper_poll, keeper_drop};

static int setup(pl_executor *ex, lease_state *st)
{
    st->renewed_at = pl_now(ex);
    keeper k = {.base = PL_FUTURE_INIT(&keeper_vt), .st = st};
    pl_task *t;
    int rc = PL_SPAWN(ex, k, "keeper", &t);
    if (rc != 0) {
        return rc;
    }
    pl_task_set_background(t, true);
    pl_task_release(t);
    worker w = {.base = PL_FUTURE_INIT(&worker_vt), .st = st};
    return PL_SPAWN(ex, w, "worker", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state); }

static int setup_fixed(pl_executor *ex, void *state)
{
    ((lease_state *)state)->fixed = true;
    return setup(ex, state);
}

/* 2.5 s of work with a renewal at least every 250 ms. */
static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const lease_state *st = state;
    if (!st->done || st->renewals < WORK_NS / (RENEW_AFTER_NS + STEP_MAX_MS * PL_MS)) {
        return pl_check_fail(msg, len, "the worker finished: %d, after %u renewals", st->done,
                             st->renewals);
    }
    return 0;
}

PL_SCENARIO(bug_lease_clock_sc, .name = "bug_lease_clock",
            .summary = "worker renews its lease by clock_gettime, paced by rand(); elapsed "
                       "time from tv_nsec alone goes negative at a second boundary",
            .state_size = sizeof(lease_state), .setup = setup_buggy, .check = check,
            .expect = "assertion");

PL_SCENARIO(fix_lease_clock_sc, .name = "fix_lease_clock",
            .summary = "worker measures its lease with both timespec fields",
            .state_size = sizeof(lease_state), .setup = setup_fixed, .check = check);
