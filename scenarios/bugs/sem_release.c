/* Zoo: a semaphore whose release wakes no one.
 *
 * The primitive: `limiter`, a hand-written counting semaphore that caps
 * concurrent uploads at one. Acquirers queue FIFO and store their waker;
 * an acquire takes a free permit when it is at the head of the queue.
 * Three uploaders each acquire, upload for 1 ms and release.
 *
 * BUG (bug_sem_release): limiter_release just increments the count,
 * reasoning that "waiters take the permit on their next poll". No poll is
 * coming: a parked waiter runs only when something wakes it, and the
 * release was the only event it waited for.
 * Why it is a bug: whoever makes progress possible for a parked future
 * must wake it; a future's poll is not a timer. The bug shows on every
 * schedule with contention, so the simulator finds it on the first seed.
 * Finding: lost_wakeup. At quiescence the next uploader is parked with
 * its waker in the queue, and a probe poll takes the free permit.
 * FIX (fix_sem_release): release wakes the waiter at the head of the
 * queue; that waiter, once it has the permit, wakes the next one if a
 * permit is still free (a chain, so one release never wakes a crowd).
 */
#include "zoo.h"

enum { UPLOADERS = 3 };

typedef struct limiter {
    size_t free;
    zoo_queue waiters; /* limiter_acquire nodes, FIFO */
    bool fixed;
} limiter;

typedef struct limiter_state {
    limiter lim;
    int uploaded;
    int busy;     /* uploads in progress */
    int busy_max;
} limiter_state;

typedef struct limiter_acquire {
    pl_future base;
    limiter *lim;
    zoo_node node;
    pl_waker waker;
} limiter_acquire;

static void wake_head(limiter *l)
{
    if (l->waiters.head != NULL && l->free > 0) {
        limiter_acquire *a = ZOO_CONTAINER_OF(l->waiters.head, limiter_acquire, node);
        pl_waker_wake_by_ref(&a->waker);
    }
}

static void limiter_release(limiter *l)
{
    l->free++;
    if (l->fixed) {
        wake_head(l); /* FIX: the head waiter can go now: tell it */
    }
    /* BUG (when !fixed): "waiters will notice on their next poll". */
}

/* ---- limiter_acquire --------------------------------------------------- */

static pl_poll_result limiter_acquire_poll(pl_future *f, pl_context *cx)
{
    limiter_acquire *self = (limiter_acquire *)f;
    limiter *l = self->lim;
    if (!self->node.linked) {
        zoo_queue_push(&l->waiters, &self->node);
    }
    if (l->waiters.head == &self->node && l->free > 0) {
        l->free--;
        zoo_queue_remove(&l->waiters, &self->node);
        pl_waker_slot_clear(&self->waker);
        if (l->fixed) {
            wake_head(l); /* pass the chain on if permits remain */
        }
        return PL_READY;
    }
    pl_waker_slot_set(&self->waker, &cx->waker);
    return PL_PENDING;
}

static void limiter_acquire_drop(pl_future *f)
{
    limiter_acquire *self = (limiter_acquire *)f;
    bool was_head = self->lim->waiters.head == &self->node;
    zoo_queue_remove(&self->lim->waiters, &self->node);
    pl_waker_slot_clear(&self->waker);
    if (was_head && self->lim->fixed) {
        wake_head(self->lim); /* the head may have been woken for us */
    }
}

static const pl_future_vtable limiter_acquire_vt = {"limiter_acquire", limiter_acquire_poll,
                                                    limiter_acquire_drop};

/* ---- Uploader ---------------------------------------------------------- */

typedef struct uploader {
    pl_future base;
    limiter_state *st;
    bool holding;
    limiter_acquire acq;
    pl_sleep upload;
} uploader;

static pl_poll_result uploader_poll(pl_future *f, pl_context *cx)
{
    uploader *self = (uploader *)f;
    limiter_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    self->acq = (limiter_acquire){.base = PL_FUTURE_INIT(&limiter_acquire_vt), .lim = &st->lim,
                                  .waker = PL_WAKER_EMPTY};
    PL_AWAIT(cx, &self->acq);
    self->holding = true;
    st->busy++;
    st->busy_max = st->busy > st->busy_max ? st->busy : st->busy_max;
    self->upload = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->upload);
    st->busy--;
    st->uploaded++;
    self->holding = false;
    limiter_release(&st->lim);
    PL_ASYNC_END;
}

static void uploader_drop(pl_future *f)
{
    uploader *self = (uploader *)f;
    pl_drop_child(&self->acq.base);
    pl_drop_child(&self->upload.base);
    if (self->holding) {
        self->holding = false;
        self->st->busy--;
        limiter_release(&self->st->lim);
    }
}

static const pl_future_vtable uploader_vt = {"uploader", uploader_poll, uploader_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, limiter_state *st, bool fixed)
{
    st->lim.free = 1;
    st->lim.fixed = fixed;
    for (int i = 0; i < UPLOADERS; i++) {
        uploader u = {.base = PL_FUTURE_INIT(&uploader_vt), .st = st};
        int rc = PL_SPAWN(ex, u, "uploader", NULL);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    limiter_state *st = state;
    if (st->uploaded != UPLOADERS || st->busy_max != 1 || st->lim.free != 1) {
        return pl_check_fail(msg, len,
                             "%d uploads (want %d), at most %d at once (want 1), %zu free",
                             st->uploaded, UPLOADERS, st->busy_max, st->lim.free);
    }
    return 0;
}

PL_SCENARIO(bug_sem_release_sc, .name = "bug_sem_release",
            .summary = "semaphore release wakes no one (lost wakeup)",
            .state_size = sizeof(limiter_state), .setup = setup_buggy, .check = check,
            .expect = "lost_wakeup");

PL_SCENARIO(fix_sem_release_sc, .name = "fix_sem_release",
            .summary = "semaphore release wakes the head waiter",
            .state_size = sizeof(limiter_state), .setup = setup_fixed, .check = check);
