/* core/src/semaphore.c: counting semaphore, strict FIFO.
 *
 * Requests are granted whole and in order at release time, and permits
 * are taken out of the pool when granted, not when the granted future
 * runs: otherwise a try_acquire between the wake and the poll could
 * steal them (barging).
 */
#include <stdio.h>

#include "pollen/sync.h"
#include "waiter.h"

/* pl_semaphore_acquire state, kept in base.resume. */
enum {
    ACQ_INIT = PL_WAITER_INIT,
    ACQ_WAITING = PL_WAITER_WAITING, /* linked, waker stored */
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
        pl_waiter_choose(&a->base, &a->waker, ACQ_GRANTED);
    }
}

void pl_semaphore_release(pl_semaphore *s, size_t n)
{
    PL_ASSERT(n <= SIZE_MAX - s->permits);
    s->permits += n;
    grant(s);
}

static const pl_future_vtable acquire_vtable;

/* A waiting acquire could be granted now under the FIFO rule exactly when
 * every request from the head up to and including it fits in the free
 * permits: grant() would hand them out in that order. One behind an unmet
 * head is not owed anything, however few permits it needs. */
static bool waiting_acquire_fits(const pl_semaphore_acquire *self, char *why, size_t why_len)
{
    const pl_semaphore *s = self->sem;
    size_t left = s->permits;
    size_t ahead = 0;
    for (const pl_list_node *node = s->waiters.next; node != &s->waiters; node = node->next) {
        const pl_semaphore_acquire *a = pl_container_of(node, pl_semaphore_acquire, node);
        if (a->n > left) {
            return false;
        }
        if (a == self) {
            snprintf(why, why_len,
                     "%zu permit(s) are free, it needs %zu, %zu waiter(s) ahead of it", s->permits,
                     self->n, ahead);
            return true;
        }
        left -= a->n;
        ahead++;
    }
    return false;
}

/* The declared wait condition (sync.h). The subject is the acquire, so a
 * dropped or rebuilt one reads as not waiting without touching the
 * semaphore. */
static bool acquire_holds(const void *subject, char *why, size_t why_len)
{
    const pl_semaphore_acquire *self = subject;
    if (self->base.vtable != &acquire_vtable || self->base.flags != 0) {
        return false;
    }
    if (self->base.resume == ACQ_GRANTED) {
        snprintf(why, why_len, "its %zu permit(s) were granted to it", self->n);
        return true;
    }
    return self->base.resume == ACQ_WAITING && waiting_acquire_fits(self, why, why_len);
}

static pl_poll_result acquire_poll(pl_future *f, pl_context *cx)
{
    pl_semaphore_acquire *self = (pl_semaphore_acquire *)f;
    if (self->base.resume > ACQ_WAITING) {
        PL_ASSERT(self->base.resume == ACQ_GRANTED);
        self->base.resume = ACQ_DONE;
        return PL_READY;
    }
    if (self->base.resume == ACQ_INIT && pl_semaphore_try_acquire(self->sem, self->n)) {
        self->base.resume = ACQ_DONE;
        return PL_READY;
    }
    pl_waiter_park(&self->base, &self->sem->waiters, &self->node, &self->waker, cx);
    PL_WAIT_DECLARE(cx, "semaphore", "its permits, first come first served", self, acquire_holds);
    return PL_PENDING;
}

static void acquire_drop(pl_future *f)
{
    pl_semaphore_acquire *self = (pl_semaphore_acquire *)f;
    if (self->base.resume == ACQ_WAITING) {
        pl_waiter_unlink(&self->node, &self->waker);
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

pl_semaphore_acquire pl_semaphore_acquire_make(pl_semaphore *s, size_t n)
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
