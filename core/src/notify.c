/* core/src/notify.c: pl_notify, one permit and a FIFO of waiters.
 *
 * This is the pingpong hot path: a round trip is notify_one, the waker's
 * wake, one poll that links and clones, one poll that returns READY. So
 * no allocation, no observer call, and one branch on the common paths.
 * The observer hears of the rest (pl_observer.signal): a waiter linked
 * under a watch, a waiting waiter dropped, a broadcast. A broadcast keeps
 * nothing for a task that was not waiting, so a simulator that knows who
 * waits on what can tell a task that will wait for the next one.
 */
#include <stdio.h>

#include "internal.h"
#include "pollen/observer.h"
#include "pollen/sync.h"
#include "waiter.h"

/* pl_notified state, kept in base.resume. */
enum {
    NOTIFIED_INIT = PL_WAITER_INIT,       /* not polled yet */
    NOTIFIED_WAITING = PL_WAITER_WAITING, /* linked, waker stored */
    NOTIFIED_BY_ONE = 2,   /* chosen by notify_one: owes a pass-on if dropped */
    NOTIFIED_BY_ALL = 3,   /* released by notify_waiters: owes nothing */
    NOTIFIED_DONE = 4,
};

_Static_assert(sizeof(pl_notified) == 56, "a pl_notified finds its notify through its link");

/* An unlinked future's link points back at its notify's list. */
static pl_notify *notify_of(const pl_notified *w)
{
    return pl_container_of(w->node.prev, pl_notify, waiters);
}

void pl_notify_init(pl_notify *n)
{
    pl_list_init(&n->waiters);
    n->permit = 0;
    n->reserved = 0;
}

bool pl_notify_has_permit(const pl_notify *n) { return n->permit != 0; }

/* The unlinking emptied the link: it names the notify again, which a
 * drop of a future chosen by pl_notify_one passes the notification to. */
static void release(pl_notify *n, pl_notified *w, uint32_t state)
{
    w->node.prev = &n->waiters;
    pl_waiter_choose(&w->base, &w->waker, state);
}

void pl_notify_one(pl_notify *n)
{
    pl_list_node *node = pl_list_pop_front(&n->waiters);
    if (node == NULL) {
        n->permit = 1;
        return;
    }
    release(n, pl_container_of(node, pl_notified, node), NOTIFIED_BY_ONE);
}

/* Tells the observer of `ex` (NULL: no executor runs; no observer in
 * production). */
static void tell(pl_executor *ex, const void *primitive, pl_signal_event ev, pl_task *t)
{
    void *ud;
    const pl_observer *obs = ex != NULL ? pl__executor_observer(ex, &ud) : NULL;
    if (obs != NULL && obs->signal != NULL) {
        obs->signal(ud, primitive, ev, t);
    }
}

void pl_notify_waiters(pl_notify *n)
{
    pl_executor *ex = pl__current_executor();
    tell(ex, n, PL_SIGNAL_BROADCAST, NULL);
    /* Detach the current waiters first, so a waiter that registers while
     * we wake (a waker that polls synchronously) waits for the next call
     * instead of making this loop endless. */
    pl_list_node batch;
    pl_list_init(&batch);
    pl_list_splice(&batch, &n->waiters);
    PL_LIST_CONSUME(node, &batch) {
        release(n, pl_container_of(node, pl_notified, node), NOTIFIED_BY_ALL);
    }
    tell(ex, n, PL_SIGNAL_BROADCAST_END, NULL);
}

/* The declared wait condition: the waiter could complete on its next
 * poll. Its subject is the waiter, not the notify: a waiter dropped (or
 * rebuilt) since its declaration reads as not waiting, without touching a
 * notify that may be gone by then. A waiter registered after a
 * notify_waiters is plain WAITING: a broadcast stores nothing for it, and
 * a permit is never stored while a waiter is linked (pl_notify_one stores
 * one only into an empty list, a first poll takes it instead of linking),
 * so WAITING never holds: nor could it find the notify, which only an
 * unlinked future's link points at. */
static bool notified_holds(const void *subject, char *why, size_t why_len)
{
    const pl_notified *self = subject;
    if (self->base.vtable != &pl__notified_vtable || self->base.flags != 0) {
        return false;
    }
    switch (self->base.resume) {
    case NOTIFIED_BY_ONE:
        snprintf(why, why_len, "pl_notify_one chose it");
        return true;
    case NOTIFIED_BY_ALL:
        snprintf(why, why_len, "pl_notify_waiters released it");
        return true;
    default:
        return false;
    }
}

/* Every park but a production task's first (pl_waiter_can_park_fast),
 * and the first poll that finds a permit. Out of line: the fast park and
 * the poll that finds its notification (each half of the polls of a
 * ping-pong) then need no frame. */
static __attribute__((noinline)) pl_poll_result notified_park(pl_notified *self, pl_context *cx)
{
    pl_notify *n = notify_of(self); /* garbage while WAITING: not read then */
    if (self->base.resume == NOTIFIED_INIT && n->permit != 0) {
        n->permit = 0;
        self->base.resume = NOTIFIED_DONE;
        return PL_READY;
    }
    if (cx->watch != NULL) {
        /* While WAITING the link does not find the notify: its key then is
         * NULL, and the observer keeps the one it was told at the link. */
        tell(cx->ex, self->base.resume == NOTIFIED_INIT ? n : NULL, PL_SIGNAL_WAITER, cx->task);
    }
    pl_waiter_park(&self->base, &n->waiters, &self->node, &self->waker, cx);
    PL_WAIT_DECLARE(cx, "notify", "a notification or a stored permit", self, notified_holds);
    return PL_PENDING;
}

static pl_poll_result notified_poll(pl_future *f, pl_context *cx)
{
    pl_notified *self = (pl_notified *)f;
    /* One unsigned range test for "chosen": anything else is INIT or
     * WAITING (pl_waiter_park asserts which), since pl_poll never polls a
     * DONE future. */
    if (self->base.resume - NOTIFIED_BY_ONE <= NOTIFIED_BY_ALL - NOTIFIED_BY_ONE) {
        self->base.resume = NOTIFIED_DONE;
        return PL_READY;
    }
    /* Only an unlinked (INIT) future's link finds its notify. */
    if (pl_waiter_can_park_fast(&self->base, cx)) {
        pl_notify *n = notify_of(self);
        if (n->permit == 0) {
            pl_waiter_park_fast(&self->base, &n->waiters, &self->node, &self->waker, cx);
            return PL_PENDING;
        }
    }
    return notified_park(self, cx);
}

static void notified_drop(pl_future *f)
{
    pl_notified *self = (pl_notified *)f;
    switch (self->base.resume) {
    case NOTIFIED_WAITING: {
        pl_executor *ex = pl__current_executor();
        if (ex != NULL) {
            tell(ex, NULL, PL_SIGNAL_UNWAIT, pl__executor_waker_task(ex, &self->waker));
        }
        pl_waiter_unlink(&self->node, &self->waker);
        break;
    }
    case NOTIFIED_BY_ONE:
        /* The notification was meant for someone: hand it on. */
        pl_notify_one(notify_of(self));
        break;
    default:
        break;
    }
    self->base.resume = NOTIFIED_DONE;
}

const pl_future_vtable pl__notified_vtable = {
    .name = "pl_notified",
    .poll = notified_poll,
    .drop = notified_drop,
};
