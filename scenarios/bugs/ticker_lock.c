/* Zoo: a lock handed to a waiter that is cancelled before it runs, behind a background ticker.
 *
 * The primitive: `fifo_lock`, a hand-written asyncio-style lock guarding
 * a journal. Waiters queue FIFO; lock_release hands the lock straight to
 * the head waiter (marks it granted and wakes it: the lock stays held,
 * now on the waiter's behalf) or frees it when nobody waits. Four jobs
 * each take the lock, append to the journal for 2.5 ms and release it;
 * job #3 is interactive and must have started within 4 ms. At 8 ms the
 * journal's owner takes the lock to close the journal. A watchdog
 * ticks every 5 ms forever (pl_interval) and sheds interactive jobs that
 * missed their start deadline (pl_task_cancel). The watchdog is a
 * background task (pl_task_set_background): the program is done when
 * the jobs are. Jobs are abortable (pl_task_set_abortable), so with the
 * `cancel` decision on the simulator also cancels jobs that were woken
 * but not yet polled.
 *
 * BUG (bug_ticker_lock): lock_acquire's drop unlinks a waiting acquire,
 * but drops a granted one ("it never got to run") as is: the lock it was
 * handed stays held, by nobody, and the jobs behind it wait forever. At
 * 5 ms job #2 releases the lock to job #3 just as the watchdog ticks;
 * production's order runs the watchdog first (its timer was armed
 * first), which sheds job #3 while it still waits, and that is handled;
 * the other order sheds it granted.
 * Why it is a bug: with direct handoff a granted waiter owns the lock
 * from the moment it is woken, and cancellation can come at any await,
 * so the drop of every state that owns something must give it back. The
 * ticker hides the hang from every oracle that waits for the executor to
 * go quiet: its timer is always armed, so the run only ends at its
 * virtual time limit, seemingly busy.
 * Finding: deadlock. With the watchdog in the background, the jobs are
 * judged while it still ticks: job #4 and the owner are parked with
 * their wakers in the lock's queue, only the watchdog's timer can fire,
 * and no probe progresses. (With the `cancel` decision on, the simulator's own
 * cancellations of granted jobs lose the lock the same way.)
 * FIX (fix_ticker_lock): the drop of a granted acquire releases the
 * lock, handing it to the next waiter or freeing it, as pl_mutex does.
 */
#include "zoo.h"

enum { JOBS = 4, INTERACTIVE = 2 /* index of job #3 */ };

#define HOLD_NS           (2500 * PL_US)
#define START_DEADLINE_NS (4 * PL_MS)
#define TICK_NS           (5 * PL_MS)
#define SHUTDOWN_NS       (8 * PL_MS)

typedef struct fifo_lock {
    bool held;
    zoo_queue waiters; /* lock_acquire nodes, FIFO */
    bool fixed;        /* which drop this scenario uses */
} fifo_lock;

typedef struct lock_state {
    fifo_lock lock;
    pl_task *interactive; /* the watchdog's handle on job #3 */
    bool started[JOBS];   /* a job got the lock */
    int served;
    int cancelled;
    int holders; /* jobs inside the critical section now */
    int holders_max;
    int shed;
    uint64_t ticks;
    bool closed;
} lock_state;

/* ---- lock_acquire ------------------------------------------------------ */

enum { ACQ_INIT = 0, ACQ_WAITING = 1, ACQ_GRANTED = 2, ACQ_DONE = 3 };

typedef struct lock_acquire {
    pl_future base; /* base.resume holds ACQ_* */
    fifo_lock *lock;
    zoo_node node;
    pl_waker waker;
} lock_acquire;

static void lock_release(fifo_lock *l)
{
    zoo_node *n = zoo_queue_pop(&l->waiters);
    if (n == NULL) {
        l->held = false;
        return;
    }
    lock_acquire *a = ZOO_CONTAINER_OF(n, lock_acquire, node);
    a->base.resume = ACQ_GRANTED; /* the lock is a's from now on */
    pl_waker_wake(pl_waker_slot_take(&a->waker));
}

static pl_poll_result lock_acquire_poll(pl_future *f, pl_context *cx)
{
    lock_acquire *self = (lock_acquire *)f;
    switch (self->base.resume) {
    case ACQ_INIT:
        if (!self->lock->held) {
            self->lock->held = true;
            self->base.resume = ACQ_DONE;
            return PL_READY;
        }
        zoo_queue_push(&self->lock->waiters, &self->node);
        self->base.resume = ACQ_WAITING;
        pl_waker_slot_set(&self->waker, &cx->waker);
        return PL_PENDING;
    case ACQ_WAITING:
        pl_waker_slot_set(&self->waker, &cx->waker);
        return PL_PENDING;
    default: /* ACQ_GRANTED */
        self->base.resume = ACQ_DONE;
        return PL_READY;
    }
}

static void lock_acquire_drop(pl_future *f)
{
    lock_acquire *self = (lock_acquire *)f;
    if (self->base.resume == ACQ_WAITING) {
        zoo_queue_remove(&self->lock->waiters, &self->node);
        pl_waker_slot_clear(&self->waker);
    } else if (self->base.resume == ACQ_GRANTED && self->lock->fixed) {
        lock_release(self->lock); /* FIX: pass the handed-over lock on */
    }
    /* BUG (when !fixed): a granted acquire keeps the lock held forever. */
    self->base.resume = ACQ_DONE;
}

static const pl_future_vtable lock_acquire_vt = {"lock_acquire", lock_acquire_poll,
                                                 lock_acquire_drop};

/* ---- Job: take the lock, append to the journal, release --------------- */

typedef struct job {
    pl_future base;
    lock_state *st;
    int index;
    bool holding;
    lock_acquire acq;
    pl_sleep append;
} job;

static void enter(job *self)
{
    lock_state *st = self->st;
    self->holding = true;
    st->started[self->index] = true;
    st->holders++;
    st->holders_max = st->holders > st->holders_max ? st->holders : st->holders_max;
}

static void leave(job *self)
{
    self->holding = false;
    self->st->holders--;
    lock_release(&self->st->lock);
}

static pl_poll_result job_poll(pl_future *f, pl_context *cx)
{
    job *self = (job *)f;
    PL_ASYNC_BEGIN(self);
    self->acq = (lock_acquire){
        .base = PL_FUTURE_INIT(&lock_acquire_vt), .lock = &self->st->lock, .waker = PL_WAKER_EMPTY};
    PL_AWAIT(cx, &self->acq);
    enter(self);
    self->append = pl_sleep_for(HOLD_NS);
    PL_AWAIT(cx, &self->append);
    leave(self);
    self->st->served++;
    PL_ASYNC_END;
}

/* Cancelled: give back what this job holds, at whatever await. */
static void job_drop(pl_future *f)
{
    job *self = (job *)f;
    pl_drop_child(&self->acq.base);
    pl_drop_child(&self->append.base);
    if (self->holding) {
        leave(self);
    }
    if (!pl_future_is_done(f)) {
        self->st->cancelled++;
    }
}

static const pl_future_vtable job_vt = {"job", job_poll, job_drop};

/* ---- The journal's owner: at shutdown, closes it under the lock ------ */

typedef struct closer {
    pl_future base;
    lock_state *st;
    pl_sleep shutdown;
    lock_acquire acq;
} closer;

static pl_poll_result closer_poll(pl_future *f, pl_context *cx)
{
    closer *self = (closer *)f;
    PL_ASYNC_BEGIN(self);
    self->shutdown = pl_sleep_for(SHUTDOWN_NS);
    PL_AWAIT(cx, &self->shutdown);
    self->acq = (lock_acquire){
        .base = PL_FUTURE_INIT(&lock_acquire_vt), .lock = &self->st->lock, .waker = PL_WAKER_EMPTY};
    PL_AWAIT(cx, &self->acq);
    self->st->closed = true; /* flushed and closed: appends after this fail */
    lock_release(&self->st->lock);
    PL_ASYNC_END;
}

static void closer_drop(pl_future *f)
{
    closer *self = (closer *)f;
    pl_drop_child(&self->shutdown.base);
    pl_drop_child(&self->acq.base);
}

static const pl_future_vtable closer_vt = {"closer", closer_poll, closer_drop};

/* ---- The watchdog: ticks forever, sheds a late interactive job ------- */

typedef struct watchdog {
    pl_future base;
    lock_state *st;
    pl_interval every;
    pl_interval_tick tick;
} watchdog;

static void shed_late(lock_state *st, pl_time now)
{
    pl_task *t = st->interactive;
    if (t == NULL) {
        return;
    }
    if (!pl_task_is_finished(t) && !st->started[INTERACTIVE] && now > START_DEADLINE_NS) {
        pl_task_cancel(t); /* missed its start deadline: shed it */
        st->shed++;
    }
    if (pl_task_is_finished(t)) {
        pl_task_release(t);
        st->interactive = NULL;
    }
}

static pl_poll_result watchdog_poll(pl_future *f, pl_context *cx)
{
    watchdog *self = (watchdog *)f;
    PL_ASYNC_BEGIN(self);
    self->every = pl_interval_make(TICK_NS);
    for (;;) {
        self->tick = pl_interval_tick_make(&self->every);
        PL_AWAIT(cx, &self->tick);
        self->st->ticks++;
        shed_late(self->st, pl_now(cx->ex));
    }
    PL_ASYNC_END;
}

/* Cancelled when the program ends (it is a background task). */
static void watchdog_drop(pl_future *f)
{
    watchdog *self = (watchdog *)f;
    pl_drop_child(&self->tick.base);
    pl_task_release(self->st->interactive);
    self->st->interactive = NULL;
}

static const pl_future_vtable watchdog_vt = {"watchdog", watchdog_poll, watchdog_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int spawn_watchdog(pl_executor *ex, lock_state *st)
{
    watchdog w = {.base = PL_FUTURE_INIT(&watchdog_vt), .st = st};
    pl_task *t;
    int rc = PL_SPAWN(ex, w, "watchdog", &t);
    if (rc != 0) {
        return rc;
    }
    pl_task_set_background(t, true);
    pl_task_release(t);
    return 0;
}

static int spawn_jobs(pl_executor *ex, lock_state *st)
{
    for (int i = 0; i < JOBS; i++) {
        job j = {.base = PL_FUTURE_INIT(&job_vt), .st = st, .index = i};
        pl_task *t;
        int rc = PL_SPAWN(ex, j, "job", &t);
        if (rc != 0) {
            return rc;
        }
        pl_task_set_abortable(t, true);
        if (i == INTERACTIVE) {
            st->interactive = t;
        } else {
            pl_task_release(t);
        }
    }
    return 0;
}

static int setup(pl_executor *ex, lock_state *st, bool fixed)
{
    st->lock.fixed = fixed;
    int rc = spawn_watchdog(ex, st);
    rc = rc != 0 ? rc : spawn_jobs(ex, st);
    closer c = {.base = PL_FUTURE_INIT(&closer_vt), .st = st};
    return rc != 0 ? rc : PL_SPAWN(ex, c, "closer", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    lock_state *st = state;
    if (st->lock.held || st->lock.waiters.head != NULL) {
        return pl_check_fail(msg, len, "the lock ends held (%s waiter), %d of %d jobs served",
                             st->lock.waiters.head != NULL ? "with a" : "with no", st->served,
                             JOBS);
    }
    if (!st->closed || st->served + st->cancelled != JOBS || st->holders_max > 1) {
        return pl_check_fail(msg, len,
                             "closed=%d, %d jobs served and %d cancelled (want 1, %d in "
                             "all), at most %d holding the lock at once (want at most 1)",
                             st->closed, st->served, st->cancelled, JOBS, st->holders_max);
    }
    return 0;
}

PL_SCENARIO(bug_ticker_lock_sc, .name = "bug_ticker_lock",
            .summary = "lock handed to a waiter cancelled before it runs stays held; a "
                       "background ticker keeps the run busy (deadlock)",
            .state_size = sizeof(lock_state), .setup = setup_buggy, .check = check,
            .expect = "deadlock", .time_limit_ns = 1 * PL_S);

PL_SCENARIO(fix_ticker_lock_sc, .name = "fix_ticker_lock",
            .summary = "a cancelled granted waiter passes the lock on",
            .state_size = sizeof(lock_state), .setup = setup_fixed, .check = check,
            .time_limit_ns = 1 * PL_S);
