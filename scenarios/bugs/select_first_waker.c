/* Zoo: a completion flag that keeps the waker of its first poll, under select.
 *
 * The primitive: `done_flag`, a hand-written one-shot event: a bool and
 * a waker slot; done_flag_set raises it and wakes the stored waker. A job
 * runner awaits pl_select over two children: `done_wait` (the job is
 * done) and `progress_log` (prints each progress report the worker sends
 * through a pl_notify, forever; the select drops it when the job ends).
 *
 * BUG (bug_select_first_waker): done_wait stores a waker only when the
 * slot is empty, i.e. on its first poll ("we are registered already").
 * Every progress report re-polls the task, and the select re-polls
 * done_wait with that poll's waker, which done_wait ignores. The Future
 * contract only promises that the waker of the most recent poll is
 * honoured; pollen's simulator holds code to it by handing every poll a
 * fresh waker identity and not delivering wakes through superseded ones.
 * So done_flag_set wakes a stale waker and the runner never sees "done".
 * Why it is a bug: a future may be polled with a different waker each
 * time (moved to another task, wrapped by a combinator that installs its
 * own waker, or simply rotated); it must store the latest one. Without
 * waker rotation (production's executor) the bug is invisible.
 * Finding: stale_waker. At quiescence the runner is parked and its only
 * wake since its last poll came through a superseded waker.
 * FIX (fix_select_first_waker): pl_waker_slot_set on every poll: it keeps
 * the stored waker when it will_wake the current one and replaces it
 * otherwise.
 */
#include "zoo.h"

enum { REPORTS = 3 };

typedef struct done_flag {
    bool set;
    pl_waker waker;
} done_flag;

typedef struct select_state {
    done_flag done;
    pl_notify progress;
    int reports_logged;
    bool runner_saw_done;
} select_state;

static void done_flag_set(done_flag *d)
{
    d->set = true;
    pl_waker_slot_wake(&d->waker);
}

/* ---- done_wait: the leaf future ---------------------------------------- */

typedef struct done_wait {
    pl_future base;
    done_flag *flag;
} done_wait;

static pl_poll_result done_wait_poll_buggy(pl_future *f, pl_context *cx)
{
    done_flag *d = ((done_wait *)f)->flag;
    if (d->set) {
        return PL_READY;
    }
    /* BUG: registers once; later polls' wakers are ignored. */
    if (!pl_waker_is_set(&d->waker)) {
        d->waker = pl_waker_clone(&cx->waker);
    }
    return PL_PENDING;
}

static pl_poll_result done_wait_poll_fixed(pl_future *f, pl_context *cx)
{
    done_flag *d = ((done_wait *)f)->flag;
    if (d->set) {
        return PL_READY;
    }
    pl_waker_slot_set(&d->waker, &cx->waker); /* FIX: always the latest */
    return PL_PENDING;
}

static void done_wait_drop(pl_future *f) { pl_waker_slot_clear(&((done_wait *)f)->flag->waker); }

static const pl_future_vtable done_wait_buggy_vt = {"done_wait", done_wait_poll_buggy,
                                                    done_wait_drop};
static const pl_future_vtable done_wait_fixed_vt = {"done_wait", done_wait_poll_fixed,
                                                    done_wait_drop};

/* ---- progress_log: logs reports until dropped ------------------------- */

typedef struct progress_log {
    pl_future base;
    select_state *st;
    pl_notified report;
} progress_log;

static pl_poll_result progress_log_poll(pl_future *f, pl_context *cx)
{
    progress_log *self = (progress_log *)f;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->report = pl_notified_make(&self->st->progress);
        PL_AWAIT(cx, &self->report);
        self->st->reports_logged++;
    }
    PL_ASYNC_END;
}

static void progress_log_drop(pl_future *f)
{
    pl_drop_child(&((progress_log *)f)->report.base);
}

static const pl_future_vtable progress_log_vt = {"progress_log", progress_log_poll,
                                                 progress_log_drop};

/* ---- The runner task: select(done_wait, progress_log) ----------------- */

typedef struct runner {
    pl_future base;
    select_state *st;
    const pl_future_vtable *done_vt;
    done_wait done;
    progress_log log;
    pl_future *children[2];
    pl_select sel;
} runner;

static pl_poll_result runner_poll(pl_future *f, pl_context *cx)
{
    runner *self = (runner *)f;
    PL_ASYNC_BEGIN(self);
    self->done = (done_wait){PL_FUTURE_INIT(self->done_vt), &self->st->done};
    self->log = (progress_log){.base = PL_FUTURE_INIT(&progress_log_vt), .st = self->st};
    self->children[0] = &self->done.base;
    self->children[1] = &self->log.base;
    self->sel = pl_select_make(self->children, 2);
    PL_AWAIT(cx, &self->sel);
    self->st->runner_saw_done = self->sel.index == 0;
    PL_ASYNC_END;
}

/* Dropping a pending select drops its unfinished children. */
static void runner_drop(pl_future *f) { pl_drop_child(&((runner *)f)->sel.base); }

static const pl_future_vtable runner_vt = {"runner", runner_poll, runner_drop};

/* ---- The worker: three progress reports, then done -------------------- */

typedef struct worker {
    pl_future base;
    select_state *st;
    int i;
    pl_sleep step;
} worker;

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *self = (worker *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < REPORTS; self->i++) {
        self->step = pl_sleep_for(1 * PL_MS);
        PL_AWAIT(cx, &self->step);
        pl_notify_one(&self->st->progress);
    }
    self->step = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->step);
    done_flag_set(&self->st->done);
    PL_ASYNC_END;
}

static void worker_drop(pl_future *f) { pl_drop_child(&((worker *)f)->step.base); }

static const pl_future_vtable worker_vt = {"worker", worker_poll, worker_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, select_state *st, const pl_future_vtable *done_vt)
{
    pl_notify_init(&st->progress);
    runner r = {.base = PL_FUTURE_INIT(&runner_vt), .st = st, .done_vt = done_vt};
    worker w = {.base = PL_FUTURE_INIT(&worker_vt), .st = st};
    int rc = PL_SPAWN(ex, r, "runner", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, w, "worker", NULL);
}

static int setup_buggy(pl_executor *ex, void *state)
{
    return setup(ex, state, &done_wait_buggy_vt);
}

static int setup_fixed(pl_executor *ex, void *state)
{
    return setup(ex, state, &done_wait_fixed_vt);
}

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    select_state *st = state;
    if (!st->runner_saw_done) {
        return pl_check_fail(msg, len, "the runner finished without seeing the job done");
    }
    if (st->reports_logged > REPORTS) {
        return pl_check_fail(msg, len, "%d reports logged, only %d sent", st->reports_logged,
                        REPORTS);
    }
    return 0;
}

PL_SCENARIO(bug_select_first_waker_sc, .name = "bug_select_first_waker",
            .summary = "flag under select keeps its first poll's waker (stale waker)",
            .state_size = sizeof(select_state), .setup = setup_buggy, .check = check,
            .expect = "stale_waker");

PL_SCENARIO(fix_select_first_waker_sc, .name = "fix_select_first_waker",
            .summary = "flag under select stores the latest waker on every poll",
            .state_size = sizeof(select_state), .setup = setup_fixed, .check = check);
