/* core/src/mutex.c: FIFO async mutex with direct handoff.
 *
 * unlock never frees the lock while someone waits: it hands it to the
 * head waiter. That keeps the queue fair (no newcomer can take a lock
 * the head was woken for) and makes "waiters => locked" an invariant.
 */
#include <stdio.h>

#include "pollen/sync.h"
#include "waiter.h"

/* pl_mutex_lock state, kept in base.resume. */
enum {
    LOCK_INIT = PL_WAITER_INIT,
    LOCK_WAITING = PL_WAITER_WAITING, /* linked, waker stored */
    LOCK_HANDED = 2,   /* owns the lock, not yet polled */
    LOCK_DONE = 3,
};

void pl_mutex_init(pl_mutex *m)
{
    pl_list_init(&m->waiters);
    m->locked = 0;
    m->reserved = 0;
}

bool pl_mutex_is_locked(const pl_mutex *m) { return m->locked != 0; }

bool pl_mutex_try_lock(pl_mutex *m)
{
    if (m->locked) {
        return false;
    }
    PL_ASSERT(pl_list_empty(&m->waiters));
    m->locked = 1;
    return true;
}

void pl_mutex_unlock(pl_mutex *m)
{
    PL_ASSERT(m->locked);
    pl_list_node *node = pl_list_pop_front(&m->waiters);
    if (node == NULL) {
        m->locked = 0;
        return;
    }
    pl_mutex_lock *w = pl_container_of(node, pl_mutex_lock, node);
    pl_waiter_choose(&w->base, &w->waker, LOCK_HANDED);
}

static const pl_future_vtable lock_vtable;

/* The declared wait condition (sync.h): the lock was handed to it, or the
 * mutex is free and it is first in line (never true while unlock keeps
 * "waiters => locked"; one behind the head is never owed the lock). The
 * subject is the lock future, so a dropped or rebuilt one reads as not
 * waiting without touching the mutex. */
static bool lock_holds(const void *subject, char *why, size_t why_len)
{
    const pl_mutex_lock *self = subject;
    if (self->base.vtable != &lock_vtable || self->base.flags != 0) {
        return false;
    }
    if (self->base.resume == LOCK_HANDED) {
        snprintf(why, why_len, "the lock was handed to it");
        return true;
    }
    const pl_mutex *m = self->mutex;
    if (self->base.resume == LOCK_WAITING && !m->locked &&
        pl_list_front(&m->waiters) == &self->node) {
        snprintf(why, why_len, "the mutex is free and it is first in line");
        return true;
    }
    return false;
}

static pl_poll_result lock_poll(pl_future *f, pl_context *cx)
{
    pl_mutex_lock *self = (pl_mutex_lock *)f;
    if (self->base.resume > LOCK_WAITING) {
        PL_ASSERT(self->base.resume == LOCK_HANDED);
        self->base.resume = LOCK_DONE;
        return PL_READY;
    }
    if (self->base.resume == LOCK_INIT && pl_mutex_try_lock(self->mutex)) {
        self->base.resume = LOCK_DONE;
        return PL_READY;
    }
    pl_waiter_park(&self->base, &self->mutex->waiters, &self->node, &self->waker, cx);
    PL_WAIT_DECLARE(cx, "mutex", "the lock, first come first served", self, lock_holds);
    return PL_PENDING;
}

static void lock_drop(pl_future *f)
{
    pl_mutex_lock *self = (pl_mutex_lock *)f;
    if (self->base.resume == LOCK_WAITING) {
        pl_waiter_unlink(&self->node, &self->waker);
    } else if (self->base.resume == LOCK_HANDED) {
        /* We own a lock nobody will use: pass it on. */
        pl_mutex_unlock(self->mutex);
    }
    self->base.resume = LOCK_DONE;
}

static const pl_future_vtable lock_vtable = {
    .name = "pl_mutex_lock",
    .poll = lock_poll,
    .drop = lock_drop,
};

pl_mutex_lock pl_mutex_lock_make(pl_mutex *m)
{
    return (pl_mutex_lock){
        .base = PL_FUTURE_INIT(&lock_vtable),
        .mutex = m,
        .node = {NULL, NULL},
        .waker = PL_WAKER_EMPTY,
    };
}
