/* Zoo: a worker that misses a job's broadcast; a periodic sweeper's notify-all rescues it.
 *
 * The program: a producer pushes two jobs into a queue (a counter) at
 * 2 ms and 2.5 ms and broadcasts on `work` (pl_notify_waiters) after
 * each. A worker takes every job; when the queue is empty it writes an
 * idle heartbeat (an awaited 1 ms) and waits on `work`. A sweeper, a
 * background task, ticks every 10 ms and broadcasts on `work` too ("kick
 * any worker that got stuck"), the kind of repair loop that makes a lost
 * wake invisible.
 *
 * BUG (bug_sweeper): after its heartbeat the worker waits on `work`
 * without looking at the queue again. The second job's broadcast comes
 * during the heartbeat, when the worker is not waiting, and keeps
 * nothing for it; the worker waits until the sweeper's next tick at
 * 10 ms, 7.5 ms late.
 * Why it is a bug: a broadcast wakes the waiters linked at that moment
 * only. The sweeper hides the bug, it does not fix it: the program's
 * latency is now the sweeper's period.
 * Finding: deadlock, one the sweeper's tick hides: the worker waits on
 * the notify whose broadcast it missed, the sweeper's timer is the only
 * one left, and the sweeper it wakes is what wakes the worker.
 * FIX (fix_sweeper): link first (poll the notified once), then look at
 * the queue, then wait: a broadcast after the look finds the worker
 * linked.
 */
#include "zoo.h"

enum { JOBS = 2 };

#define HEARTBEAT_NS (1 * PL_MS)
#define SWEEP_NS (10 * PL_MS)

static const pl_time push_at_us[JOBS] = {2000, 2500};

typedef struct sweep_state {
    int pushed;
    int taken;
    pl_notify work;
    bool fixed;
    uint64_t sweeps;
} sweep_state;

/* ---- Producer ---------------------------------------------------------- */

typedef struct producer {
    pl_future base;
    sweep_state *st;
    int i;
    pl_sleep gap;
} producer;

static pl_poll_result producer_poll(pl_future *f, pl_context *cx)
{
    producer *self = (producer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < JOBS; self->i++) {
        self->gap = pl_sleep_until(push_at_us[self->i] * PL_US);
        PL_AWAIT(cx, &self->gap);
        self->st->pushed++;
        pl_notify_waiters(&self->st->work);
    }
    PL_ASYNC_END;
}

static void producer_drop(pl_future *f) { pl_drop_child(&((producer *)f)->gap.base); }

static const pl_future_vtable producer_vt = {"producer", producer_poll, producer_drop};

/* ---- Worker ------------------------------------------------------------ */

typedef struct worker {
    pl_future base;
    sweep_state *st;
    pl_sleep heartbeat;
    pl_notified work;
} worker;

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *self = (worker *)f;
    sweep_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    while (st->taken < JOBS) {
        if (st->pushed > st->taken) {
            st->taken = st->pushed;
            continue;
        }
        self->heartbeat = pl_sleep_for(HEARTBEAT_NS);
        PL_AWAIT(cx, &self->heartbeat);
        self->work = pl_notified_make(&st->work);
        if (st->fixed) {
            /* FIX: link, then look. */
            if (pl_poll(&self->work.base, cx) == PL_READY) {
                continue;
            }
            if (st->pushed > st->taken) {
                pl_drop(&self->work.base);
                continue;
            }
        }
        /* BUG (the buggy twin): wait without looking again. */
        PL_AWAIT(cx, &self->work);
    }
    PL_ASYNC_END;
}

static void worker_drop(pl_future *f)
{
    worker *self = (worker *)f;
    pl_drop_child(&self->heartbeat.base);
    pl_drop_child(&self->work.base);
}

static const pl_future_vtable worker_vt = {"worker", worker_poll, worker_drop};

/* ---- Sweeper: every 10 ms, broadcast to whoever waits ------------------ */

typedef struct sweeper {
    pl_future base;
    sweep_state *st;
    pl_interval every;
    pl_interval_tick tick;
} sweeper;

static pl_poll_result sweeper_poll(pl_future *f, pl_context *cx)
{
    sweeper *self = (sweeper *)f;
    PL_ASYNC_BEGIN(self);
    self->every = pl_interval_make(SWEEP_NS);
    for (;;) {
        self->tick = pl_interval_tick_make(&self->every);
        PL_AWAIT(cx, &self->tick);
        self->st->sweeps++;
        pl_notify_waiters(&self->st->work);
    }
    PL_ASYNC_END;
}

/* Cancelled when the program ends (it is a background task). */
static void sweeper_drop(pl_future *f) { pl_drop_child(&((sweeper *)f)->tick.base); }

static const pl_future_vtable sweeper_vt = {"sweeper", sweeper_poll, sweeper_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, sweep_state *st, bool fixed)
{
    pl_notify_init(&st->work);
    st->fixed = fixed;
    worker w = {.base = PL_FUTURE_INIT(&worker_vt), .st = st};
    producer p = {.base = PL_FUTURE_INIT(&producer_vt), .st = st};
    sweeper sw = {.base = PL_FUTURE_INIT(&sweeper_vt), .st = st};
    int rc = PL_SPAWN(ex, w, "worker", NULL);
    if (rc == 0) {
        rc = PL_SPAWN(ex, p, "producer", NULL);
    }
    pl_task *t;
    if (rc == 0 && (rc = PL_SPAWN(ex, sw, "sweeper", &t)) == 0) {
        pl_task_set_background(t, true);
        pl_task_release(t);
    }
    return rc;
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    sweep_state *st = state;
    if (st->taken != JOBS) {
        return pl_check_fail(msg, len, "the worker took %d of %d jobs", st->taken, JOBS);
    }
    return 0;
}

PL_SCENARIO(bug_sweeper_sc, .name = "bug_sweeper",
            .summary = "worker waits without looking after its heartbeat; a sweeper's periodic "
                       "notify-all rescues it (deadlock a timer hides)",
            .state_size = sizeof(sweep_state), .setup = setup_buggy, .check = check,
            .expect = "deadlock", .time_limit_ns = 1 * PL_S);

PL_SCENARIO(fix_sweeper_sc, .name = "fix_sweeper",
            .summary = "worker links, then looks at the queue, then waits",
            .state_size = sizeof(sweep_state), .setup = setup_fixed, .check = check,
            .time_limit_ns = 1 * PL_S);
