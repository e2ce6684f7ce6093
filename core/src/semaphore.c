/* core/src/semaphore.c: counting semaphore, strict FIFO.
 *
 * Requests are granted whole and in order at release time, and permits
 * are taken out of the pool when granted, not when the granted future
 * runs: otherwise a try_acquire between the wake and the poll could
 * steal them (barging).
 */
#include "list.h"
#include "pollen/sync.h"

/* pl_semaphore_acquire state, kept in base.resume. */
enum {
    ACQ_INIT = 0,
    ACQ_WAITING = 1,  /* linked, waker stored */
    ACQ_GRANTED = 2,  /* holds its permits, not yet polled */
    ACQ_DONE = 3,
};

void pl_semaphore_init(pl_semaphore *s, size_t permits)
{
    pl_list_init(&s->waiters);
    s->permits = permits;
}

size_t pl_semaphore_available(const pl_semaphore *s) { return s->permits; }

bool pl_semaphore_try_acquire(pl_semaphore *s, size_t n)
{
    PL_ASSERT(n > 0);
    if (!pl_list_empty(&s->waiters) || s->permits < n) {
        return false;
    }
    s->permits -= n;
    return true;
}

/* Grants whole requests from the head while they fit. */
static void grant(pl_semaphore *s)
{
    for (;;) {
        pl_list_node *node = pl_list_front(&s->waiters);
        if (node == NULL) {
            return;
        }
        pl_semaphore_acquire *a = pl_container_of(node, pl_semaphore_acquire, node);
        if (a->n > s->permits) {
            return;
        }
        s->permits -= a->n;
        pl_list_remove(node);
        a->base.resume = ACQ_GRANTED;
        pl_waker_wake(pl_waker_slot_take(&a->waker));
    }
}

void pl_semaphore_release(pl_semaphore *s, size_t n)
{
    PL_ASSERT(n <= SIZE_MAX - s->permits);
    s->permits += n;
    grant(s);
}

static pl_poll_result acquire_poll(pl_future *f, pl_context *cx)
{
    pl_semaphore_acquire *self = (pl_semaphore_acquire *)f;
    switch (self->base.resume) {
    case ACQ_INIT:
        if (pl_semaphore_try_acquire(self->sem, self->n)) {
            self->base.resume = ACQ_DONE;
            return PL_READY;
        }
        pl_waker_clone_into(&self->waker, &cx->waker);
        pl_list_push_back(&self->sem->waiters, &self->node);
        self->base.resume = ACQ_WAITING;
        return PL_PENDING;
    case ACQ_WAITING:
        pl_waker_slot_set(&self->waker, &cx->waker);
        return PL_PENDING;
    default:
        PL_ASSERT(self->base.resume == ACQ_GRANTED);
        self->base.resume = ACQ_DONE;
        return PL_READY;
    }
}

static void acquire_drop(pl_future *f)
{
    pl_semaphore_acquire *self = (pl_semaphore_acquire *)f;
    if (self->base.resume == ACQ_WAITING) {
        pl_list_remove(&self->node);
        pl_waker_slot_clear(&self->waker);
        /* A large head may have been what held the others back. */
        grant(self->sem);
    } else if (self->base.resume == ACQ_GRANTED) {
        pl_semaphore_release(self->sem, self->n);
    }
    self->base.resume = ACQ_DONE;
}

static const pl_future_vtable acquire_vtable = {
    .name = "pl_semaphore_acquire",
    .poll = acquire_poll,
    .drop = acquire_drop,
};

pl_semaphore_acquire pl_semaphore_acquire_init(pl_semaphore *s, size_t n)
{
    PL_ASSERT(n > 0);
    return (pl_semaphore_acquire){
        .base = PL_FUTURE_INIT(&acquire_vtable),
        .sem = s,
        .n = n,
        .node = {NULL, NULL},
        .waker = PL_WAKER_EMPTY,
    };
}
