/* Zoo: a lock acquire that backs off, then queues without looking; its retry deadline takes it.
 *
 * The primitive: `blog`, a hand-written lock (a held flag and a `freed`
 * pl_notify broadcast on unlock). Its acquire takes the lock when it is
 * free; when it is held, it backs off 1 ms (an awaited sleep: "let the
 * holder finish before we queue"), then waits on `freed`. Callers bound
 * each attempt with a 10 ms deadline (pl_timeout) and retry on
 * PL_ETIMEDOUT. An `owner` holds the lock from 0 to 3 ms; a `worker`
 * asks for it at 2.5 ms.
 *
 * BUG (bug_retry_lock): after the back-off the acquire waits on `freed`
 * without looking at the flag again. The owner unlocks at 3 ms, during
 * the worker's back-off, and broadcasts to no one; the worker waits for
 * a broadcast that already happened, until its deadline fires at
 * 12.5 ms and the retry finds the lock free. The program finishes, one
 * deadline late.
 * Why it is a bug: a broadcast (pl_notify_waiters) wakes the waiters
 * linked at that moment and keeps nothing for the others; a waiter must
 * look at the state after linking, or link before it can change.
 * Finding: deadlock, one the retry deadline hides: the worker waits on
 * the notify whose broadcast it missed, and its deadline is the only
 * timer left.
 * FIX (fix_retry_lock): after the back-off, a fresh pass: take the lock
 * if it is free, else wait (the look and the link in one poll).
 */
#include "zoo.h"

#define HOLD_NS (3 * PL_MS)
#define ARRIVE_NS (2500 * PL_US)
#define BACKOFF_NS (1 * PL_MS)
#define DEADLINE_NS (10 * PL_MS)

typedef struct blog {
    bool held;
    pl_notify freed; /* broadcast on unlock */
    bool fixed;
} blog;

typedef struct lock_state {
    blog lock;
    int retries;
    int done;
} lock_state;

static void blog_unlock(blog *l)
{
    l->held = false;
    pl_notify_waiters(&l->freed);
}

/* ---- The acquire future ------------------------------------------------ */

enum { ACQ_CHECK = 0, ACQ_BACKOFF = 1, ACQ_WAIT = 2 };

typedef struct blog_acquire {
    pl_future base;
    blog *lock;
    pl_sleep backoff;
    pl_notified freed;
} blog_acquire;

static pl_poll_result blog_acquire_poll(pl_future *f, pl_context *cx)
{
    blog_acquire *self = (blog_acquire *)f;
    blog *l = self->lock;
    for (;;) {
        switch (self->base.resume) {
        case ACQ_CHECK:
            if (!l->held) {
                l->held = true;
                return PL_READY;
            }
            self->backoff = pl_sleep_for(BACKOFF_NS);
            self->base.resume = ACQ_BACKOFF;
            break;
        case ACQ_BACKOFF:
            if (pl_poll(&self->backoff.base, cx) == PL_PENDING) {
                return PL_PENDING;
            }
            if (l->fixed) {
                self->base.resume = ACQ_CHECK; /* FIX: look again, then wait */
                if (!l->held) {
                    break;
                }
            }
            /* BUG (the buggy twin): queue without looking at the flag. */
            self->freed = pl_notified_make(&l->freed);
            self->base.resume = ACQ_WAIT;
            break;
        default: /* ACQ_WAIT */
            if (pl_poll(&self->freed.base, cx) == PL_PENDING) {
                return PL_PENDING;
            }
            self->base.resume = ACQ_CHECK;
            break;
        }
    }
}

static void blog_acquire_drop(pl_future *f)
{
    blog_acquire *self = (blog_acquire *)f;
    pl_drop_child(&self->backoff.base);
    pl_drop_child(&self->freed.base);
}

static const pl_future_vtable blog_acquire_vt = {"blog_acquire", blog_acquire_poll,
                                                 blog_acquire_drop};

static blog_acquire blog_acquire_init(blog *l)
{
    return (blog_acquire){.base = PL_FUTURE_INIT(&blog_acquire_vt), .lock = l};
}

/* ---- Owner and worker -------------------------------------------------- */

typedef struct owner {
    pl_future base;
    lock_state *st;
    pl_sleep hold;
} owner;

static pl_poll_result owner_poll(pl_future *f, pl_context *cx)
{
    owner *self = (owner *)f;
    PL_ASYNC_BEGIN(self);
    self->st->lock.held = true;
    self->hold = pl_sleep_for(HOLD_NS);
    PL_AWAIT(cx, &self->hold);
    blog_unlock(&self->st->lock);
    self->st->done++;
    PL_ASYNC_END;
}

static void owner_drop(pl_future *f) { pl_drop_child(&((owner *)f)->hold.base); }

static const pl_future_vtable owner_vt = {"owner", owner_poll, owner_drop};

typedef struct worker {
    pl_future base;
    lock_state *st;
    pl_sleep arrive;
    blog_acquire acq;
    pl_timeout attempt;
} worker;

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *self = (worker *)f;
    PL_ASYNC_BEGIN(self);
    self->arrive = pl_sleep_for(ARRIVE_NS);
    PL_AWAIT(cx, &self->arrive);
    for (;;) {
        self->acq = blog_acquire_init(&self->st->lock);
        self->attempt = pl_timeout_make(&self->acq.base, DEADLINE_NS);
        PL_AWAIT(cx, &self->attempt);
        if (self->attempt.result == 0) {
            break;
        }
        self->st->retries++; /* PL_ETIMEDOUT: ask again */
    }
    blog_unlock(&self->st->lock);
    self->st->done++;
    PL_ASYNC_END;
}

static void worker_drop(pl_future *f)
{
    worker *self = (worker *)f;
    pl_drop_child(&self->arrive.base);
    pl_drop_child(&self->attempt.base);
}

static const pl_future_vtable worker_vt = {"worker", worker_poll, worker_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, lock_state *st, bool fixed)
{
    pl_notify_init(&st->lock.freed);
    st->lock.fixed = fixed;
    owner o = {.base = PL_FUTURE_INIT(&owner_vt), .st = st};
    worker w = {.base = PL_FUTURE_INIT(&worker_vt), .st = st};
    int rc = PL_SPAWN(ex, o, "owner", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, w, "worker", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    lock_state *st = state;
    if (st->done != 2 || st->lock.held) {
        return pl_check_fail(msg, len, "%d of 2 tasks done, lock %s", st->done,
                             st->lock.held ? "held" : "free");
    }
    return 0;
}

PL_SCENARIO(bug_retry_lock_sc, .name = "bug_retry_lock",
            .summary = "lock acquire backs off, then queues without looking; the unlock's "
                       "broadcast is lost until the retry deadline (deadlock a timer hides)",
            .state_size = sizeof(lock_state), .setup = setup_buggy, .check = check,
            .expect = "deadlock", .time_limit_ns = 1 * PL_S);

PL_SCENARIO(fix_retry_lock_sc, .name = "fix_retry_lock",
            .summary = "lock acquire looks again after its back-off, then waits",
            .state_size = sizeof(lock_state), .setup = setup_fixed, .check = check,
            .time_limit_ns = 1 * PL_S);
