/* core/src/waiter.h: the waiter state machine of pollen's FIFO primitives.
 *
 * A waiter is a future parked in a primitive's intrusive FIFO
 * (pl_notified, pl_mutex_lock, pl_semaphore_acquire, pl_mpsc_send). Its
 * state lives in base.resume: PL_WAITER_INIT until its first pending
 * poll, PL_WAITER_WAITING while it is linked with a waker stored, and any
 * higher value is the primitive's own "chosen" state (notified, handed,
 * granted, closed), set by whoever unlinked it. The primitives' declared
 * wait conditions read these same values. Static inline: pl_notified is
 * the pingpong hot path.
 */
#ifndef POLLEN_WAITER_H
#define POLLEN_WAITER_H

#include "list.h"
#include "ready.h"

enum { PL_WAITER_INIT = 0, PL_WAITER_WAITING = 1 };

/* Any other waker than the fast one: moved out of the slot and woken
 * through its vtable. Out of line, so the inline fast path below needs
 * no stack frame for a by-value waker. */
PL_INTERNAL void pl__waiter_wake_slow(pl_waker *slot);

/* Wakes the waker in `slot` and empties it. The production waker's wake
 * is devirtualised: core's primitives wake their own executor's wakers,
 * so the fast vtable's wake is inlined here (the same code as waker.c's).
 * A fast waker's gen and reserved are always 0 (its clones and the
 * production context make no other), so emptying the slot is two stores,
 * and the waker is read as two words rather than copied as a struct. */
static inline void pl__waiter_wake(pl_waker *slot)
{
    if (slot->vtable != &pl__fast_waker_vtable) {
        pl__waiter_wake_slow(slot);
        return;
    }
    pl_task *t = slot->data;
    slot->vtable = NULL;
    slot->data = NULL;
    pl__fast_wake_consume(t);
}

/* A pending poll: the first links the waiter at the back of `list` with a
 * clone of the poll's waker, later ones keep the newest waker (a task's
 * waker identity may change between polls). */
static inline void pl_waiter_park(pl_future *base, pl_list_node *list, pl_list_node *node,
                                  pl_waker *waker, const pl_context *cx)
{
    if (base->resume == PL_WAITER_INIT) {
        pl_waker_clone_into(waker, &cx->waker);
        pl_list_push_back(list, node);
        base->resume = PL_WAITER_WAITING;
        return;
    }
    PL_ASSERT(base->resume == PL_WAITER_WAITING);
    pl_waker_slot_set(waker, &cx->waker);
}

/* True when pl_waiter_park_fast may park the waiter: its first pending
 * poll, by a production executor (the fast waker, no watch). */
static inline bool pl_waiter_can_park_fast(const pl_future *base, const pl_context *cx)
{
    return base->resume == PL_WAITER_INIT && cx->waker.vtable == &pl__fast_waker_vtable &&
           cx->watch == NULL;
}

/* pl_waiter_park where pl_waiter_can_park_fast holds, with the fast
 * waker's clone inline (a reference and two words): no call, so a
 * primitive's poll that parks this way needs no frame. */
static inline void pl_waiter_park_fast(pl_future *base, pl_list_node *list, pl_list_node *node,
                                       pl_waker *waker, const pl_context *cx)
{
    pl_task *t = cx->waker.data;
    t->refs++;
    *waker = (pl_waker){&pl__fast_waker_vtable, t, 0, 0};
    pl_list_push_back(list, node);
    base->resume = PL_WAITER_WAITING;
}

/* The drop of a waiting waiter: leaves the list and releases its waker. */
static inline void pl_waiter_unlink(pl_list_node *node, pl_waker *waker)
{
    pl_list_remove(node);
    pl_waker_slot_clear(waker);
}

/* Chooses a waiter already unlinked from its list: the state first, then
 * the wake, through the waker moved out of its slot. A waker may run
 * arbitrary code, and the future must already look chosen if it is
 * polled from there. */
static inline void pl_waiter_choose(pl_future *base, pl_waker *waker, uint32_t state)
{
    PL_ASSERT(state > PL_WAITER_WAITING);
    base->resume = state;
    pl__waiter_wake(waker);
}

#endif
