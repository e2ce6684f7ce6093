/* Zoo: a poll that busy-waits for a flag another task would set.
 *
 * The primitive: `start_flag`, raised by a starter task once the service
 * is warmed up (after a 1 ms warm-up), with a waker slot for the task
 * waiting for it. A worker waits for the flag before doing its work.
 *
 * BUG (bug_poll_hang): the worker's wait loops on the flag inside its
 * poll ("it is raised within a millisecond; a busy-wait is cheaper than
 * a round trip through the executor"). The starter can only raise it
 * once the worker's poll returns, which it never does: the executor
 * thread is stuck in one poll forever. No pl_poll, no wake, no clock:
 * nothing the simulator counts moves, so no in-process oracle sees it.
 * Why it is a bug: a poll must never wait; everything else on the
 * executor thread, including whoever would end the wait, waits with it.
 * Finding: livelock, from the CLI's CPU-time budget around each poll
 * (`pollen run --poll-budget`, 1 s by default): the worker process sees
 * that one poll has run for a second of CPU time and reports the task,
 * its poll count and the step. The in-process Criterion suite cannot
 * run it (an endless loop cannot be interrupted there), so its test goes
 * through the CLI (tests/sim/test_cli.c).
 * FIX (fix_poll_hang): the wait stores its waker in the flag's slot and
 * returns PENDING; raising the flag wakes it.
 */
#include "zoo.h"

#include <pollen/timer.h>

typedef struct start_flag {
    bool up;
    pl_waker waker;
} start_flag;

typedef struct hang_state {
    start_flag started;
    bool fixed;
    int work_done;
} hang_state;

typedef struct flag_wait {
    pl_future base;
    hang_state *st;
} flag_wait;

static pl_poll_result flag_wait_poll(pl_future *f, pl_context *cx)
{
    hang_state *st = ((flag_wait *)f)->st;
    if (!st->fixed) {
        /* BUG: wait for the flag right here. Volatile, as busy-waits on a
         * flag are written: the load is repeated every time round. */
        while (!*(volatile bool *)&st->started.up) {
        }
        return PL_READY;
    }
    if (st->started.up) {
        return PL_READY;
    }
    pl_waker_slot_set(&st->started.waker, &cx->waker); /* FIX: sleep until raised */
    return PL_PENDING;
}

static void flag_wait_drop(pl_future *f)
{
    pl_waker_slot_clear(&((flag_wait *)f)->st->started.waker);
}

static const pl_future_vtable flag_wait_vt = {"flag_wait", flag_wait_poll, flag_wait_drop};

/* ---- Worker and starter -------------------------------------------------- */

typedef struct worker {
    pl_future base;
    hang_state *st;
    flag_wait wait;
} worker;

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *self = (worker *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = (flag_wait){PL_FUTURE_INIT(&flag_wait_vt), self->st};
    PL_AWAIT(cx, &self->wait);
    self->st->work_done++;
    PL_ASYNC_END;
}

static void worker_drop(pl_future *f) { pl_drop_child(&((worker *)f)->wait.base); }

static const pl_future_vtable worker_vt = {"worker", worker_poll, worker_drop};

typedef struct starter {
    pl_future base;
    hang_state *st;
    pl_sleep warm_up;
} starter;

static pl_poll_result starter_poll(pl_future *f, pl_context *cx)
{
    starter *self = (starter *)f;
    PL_ASYNC_BEGIN(self);
    self->warm_up = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->warm_up);
    self->st->started.up = true;
    pl_waker_slot_wake(&self->st->started.waker);
    PL_ASYNC_END;
}

static void starter_drop(pl_future *f) { pl_drop_child(&((starter *)f)->warm_up.base); }

static const pl_future_vtable starter_vt = {"starter", starter_poll, starter_drop};

/* ---- Scenario ------------------------------------------------------------ */

static int setup(pl_executor *ex, hang_state *st, bool fixed)
{
    st->fixed = fixed;
    worker w = {.base = PL_FUTURE_INIT(&worker_vt), .st = st};
    starter s = {.base = PL_FUTURE_INIT(&starter_vt), .st = st};
    int rc = PL_SPAWN(ex, w, "worker", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, s, "starter", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    hang_state *st = state;
    if (st->work_done != 1) {
        return pl_check_fail(msg, len, "the worker ran %d time(s), want once", st->work_done);
    }
    return 0;
}

PL_SCENARIO(bug_poll_hang_sc, .name = "bug_poll_hang",
            .summary = "a poll busy-waits for a flag another task sets (livelock)",
            .state_size = sizeof(hang_state), .setup = setup_buggy, .check = check,
            .expect = "livelock");

PL_SCENARIO(fix_poll_hang_sc, .name = "fix_poll_hang",
            .summary = "a wait for a flag stores its waker and returns PENDING",
            .state_size = sizeof(hang_state), .setup = setup_fixed, .check = check);
