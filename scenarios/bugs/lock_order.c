/* Zoo: two locks taken in opposite orders, while a progress ticker runs.
 *
 * The program: two workers update an index and a log, each guarded by a
 * pl_mutex. "indexer" takes the index lock, works 1 ms, takes the log
 * lock, works 1 ms and releases both. "logger" starts at 1 ms and does
 * the same with the two locks. A progress reporter ticks every 10 ms
 * (pl_interval) and returns once both workers are done; it is an
 * ordinary (foreground) task, as such reporters usually are.
 *
 * BUG (bug_lock_order): the logger takes the log lock first, then the
 * index lock. At 1 ms both workers' timers are due; production's order
 * fires the indexer's first (armed first), which takes the log lock
 * before the logger starts, and all is well. The other order (a timer
 * decision, or the indexer's timer firing late) lets the logger take
 * the log lock first: the indexer then waits for it holding the index
 * lock, and the logger waits for the index lock. Both are parked for
 * good, but the reporter keeps ticking, so the executor never goes quiet
 * and the run only ended at its virtual time limit (an hour, 360,000
 * ticks).
 * Why it is a bug: locks taken in different orders by two tasks can each
 * hold what the other waits for; one global order makes a cycle
 * impossible.
 * Finding: deadlock, while the reporter still ticks: the two workers are
 * parked with no timer of their own and untouched while the reporter
 * runs its rounds, and the report names the reporter and its timer.
 * FIX (fix_lock_order): both workers take the index lock first.
 */
#include "zoo.h"

#define TICK_NS (10 * PL_MS)
#define WORK_NS (1 * PL_MS)

enum { WORKERS = 2 };

typedef struct order_state {
    pl_mutex index;
    pl_mutex log;
    int done;
    uint64_t ticks;
    bool fixed;
} order_state;

/* ---- Workers ------------------------------------------------------------ */

typedef struct worker {
    pl_future base;
    order_state *st;
    pl_mutex *first;
    pl_mutex *second;
    pl_time start_ns;
    pl_sleep work;
    pl_mutex_lock lock;
    bool holds_first;
    bool holds_second;
} worker;

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *w = (worker *)f;
    PL_ASYNC_BEGIN(w);
    w->work = pl_sleep_until(w->start_ns);
    PL_AWAIT(cx, &w->work);
    w->lock = pl_mutex_lock_make(w->first);
    PL_AWAIT(cx, &w->lock);
    w->holds_first = true;
    w->work = pl_sleep_for(WORK_NS);
    PL_AWAIT(cx, &w->work);
    w->lock = pl_mutex_lock_make(w->second);
    PL_AWAIT(cx, &w->lock);
    w->holds_second = true;
    w->work = pl_sleep_for(WORK_NS);
    PL_AWAIT(cx, &w->work);
    pl_mutex_unlock(w->second);
    w->holds_second = false;
    pl_mutex_unlock(w->first);
    w->holds_first = false;
    w->st->done++;
    PL_ASYNC_END;
}

static void worker_drop(pl_future *f)
{
    worker *w = (worker *)f;
    pl_drop_child(&w->work.base);
    pl_drop_child(&w->lock.base);
    if (w->holds_second) {
        pl_mutex_unlock(w->second);
    }
    if (w->holds_first) {
        pl_mutex_unlock(w->first);
    }
}

static const pl_future_vtable worker_vt = {"worker", worker_poll, worker_drop};

/* ---- The progress reporter ---------------------------------------------- */

typedef struct reporter {
    pl_future base;
    order_state *st;
    pl_interval every;
    pl_interval_tick tick;
} reporter;

static pl_poll_result reporter_poll(pl_future *f, pl_context *cx)
{
    reporter *r = (reporter *)f;
    PL_ASYNC_BEGIN(r);
    r->every = pl_interval_make(TICK_NS);
    while (r->st->done < WORKERS) {
        r->tick = pl_interval_tick_make(&r->every);
        PL_AWAIT(cx, &r->tick);
        r->st->ticks++;
        PL_TRACE_EVENT(cx, "progress: %d of %d workers done", r->st->done, WORKERS);
    }
    PL_ASYNC_END;
}

static void reporter_drop(pl_future *f) { pl_drop_child(&((reporter *)f)->tick.base); }

static const pl_future_vtable reporter_vt = {"reporter", reporter_poll, reporter_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int spawn_worker(pl_executor *ex, order_state *st, const char *name, pl_mutex *first,
                        pl_mutex *second, pl_time start_ns)
{
    worker w = {.base = PL_FUTURE_INIT(&worker_vt), .st = st, .first = first, .second = second,
                .start_ns = start_ns, .work = pl_sleep_for(0),
                .lock = pl_mutex_lock_make(first)};
    return PL_SPAWN(ex, w, name, NULL);
}

static int setup(pl_executor *ex, void *state, bool fixed)
{
    order_state *st = state;
    pl_mutex_init(&st->index);
    pl_mutex_init(&st->log);
    st->fixed = fixed;
    pl_time t0 = pl_now(ex);
    reporter r = {.base = PL_FUTURE_INIT(&reporter_vt), .st = st};
    int rc = spawn_worker(ex, st, "indexer", &st->index, &st->log, t0);
    rc = rc != 0 ? rc
                 : spawn_worker(ex, st, "logger", fixed ? &st->index : &st->log,
                                fixed ? &st->log : &st->index, t0 + WORK_NS);
    return rc != 0 ? rc : PL_SPAWN(ex, r, "reporter", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const order_state *st = state;
    if (st->done != WORKERS || pl_mutex_is_locked(&st->index) || pl_mutex_is_locked(&st->log)) {
        return pl_check_fail(msg, len, "%d of %d workers done, index %s, log %s", st->done,
                             WORKERS, pl_mutex_is_locked(&st->index) ? "locked" : "free",
                             pl_mutex_is_locked(&st->log) ? "locked" : "free");
    }
    return 0;
}

PL_SCENARIO(bug_lock_order_sc, .name = "bug_lock_order",
            .summary = "two workers take two locks in opposite orders while a reporter "
                       "ticks (deadlock)",
            .state_size = sizeof(order_state), .setup = setup_buggy, .check = check,
            .expect = "deadlock");

PL_SCENARIO(fix_lock_order_sc, .name = "fix_lock_order",
            .summary = "two workers take two locks in one order while a reporter ticks",
            .state_size = sizeof(order_state), .setup = setup_fixed, .check = check);
