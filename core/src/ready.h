/* core/src/ready.h: the ready queue and its scheduling window.
 *
 * The queue is a FIFO in two parts: under a deciding system its first
 * `window` tasks sit in a small ring (the candidates of a scheduling
 * decision, picked by index), the rest in an intrusive singly linked list
 * through task->next (production uses the list alone), so scheduling
 * never allocates. Everything is static inline: a push is on every wake
 * and a take on every poll.
 */
#ifndef POLLEN_READY_H
#define POLLEN_READY_H

#include "executor_internal.h"

#if defined(__GNUC__)
#define PL__LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define PL__LIKELY(x) (x)
#endif

static inline pl_task **win_at(pl_executor *ex, uint32_t i)
{
    return &ex->win[(ex->win_head + i) & ex->win_mask];
}

/* Appends t to the list after the window. */
static inline void list_append(pl_executor *ex, pl_task *t)
{
    t->next = NULL;
    if (ex->ready_tail != NULL) {
        ex->ready_tail->next = t;
    } else {
        ex->ready_head = t;
    }
    ex->ready_tail = t;
}

/* The list after the window is used only once the window is full, so the
 * window always holds the first min(ready_len, window) tasks in order. */
static inline void ready_push(pl_executor *ex, pl_task *t)
{
    PL_ASSERT(!(t->flags & TASK_QUEUED));
    t->flags |= TASK_QUEUED;
    ex->ready_len++;
    if (ex->ready_head == NULL && ex->win_len < ex->win_max) {
        *win_at(ex, ex->win_len++) = t;
        return;
    }
    list_append(ex, t);
}

/* The production push: without decide() the window stays empty (win_max
 * is 0, which pl_executor_create ties to the fast waker), so the queue is
 * the list alone. */
static inline void list_push(pl_executor *ex, pl_task *t)
{
    PL_ASSERT(!(t->flags & TASK_QUEUED));
    t->flags |= TASK_QUEUED;
    ex->ready_len++;
    list_append(ex, t);
}

/* Without decisions the queue is the list alone: popping its head reads
 * the link of a task about to be polled anyway, and fetching the next
 * head now overlaps that task's miss with this poll. With `link`, says
 * where the next task pushed will be linked (the flight recorder's loop
 * finds a poll's wakes there): the head once the list is empty, else
 * the tail's next, known from the emptiness test the take makes anyway. */
static inline pl_task *list_take_linked(pl_executor *ex, pl_task *const **link)
{
    pl_task *t = ex->ready_head;
    ex->ready_head = t->next;
    if (ex->ready_head == NULL) {
        ex->ready_tail = NULL;
        if (link != NULL) {
            *link = &ex->ready_head;
        }
    } else {
        PL_PREFETCH(ex->ready_head);
        if (link != NULL) {
            *link = &ex->ready_tail->next;
        }
    }
    ex->ready_len--;
    t->flags &= (uint8_t)~TASK_QUEUED;
    return t;
}

static inline pl_task *list_take(pl_executor *ex) { return list_take_linked(ex, NULL); }

/* Removes the k-th runnable task (k < win_len; 0: the head). The ones
 * before it move up a place, and the list's head refills the window: a
 * pick reads no task but the one it takes and the one that moves in,
 * where walking a linked list to the k-th would miss the cache k times. */
static inline pl_task *ready_take(pl_executor *ex, uint32_t k)
{
    if (ex->win_len == 0) {
        return list_take(ex);
    }
    PL_ASSERT(k < ex->win_len);
    pl_task *t = *win_at(ex, k);
    for (uint32_t j = k; j > 0; j--) {
        *win_at(ex, j) = *win_at(ex, j - 1);
    }
    ex->win_head = (ex->win_head + 1) & ex->win_mask;
    ex->win_len--;
    pl_task *next = ex->ready_head;
    if (next != NULL) {
        /* Walking the list is a chain of dependent loads through cold
         * task headers: fetch the new head now, a poll before the next
         * refill reads its link, and the future of the task moving in. */
        ex->ready_head = next->next;
        if (ex->ready_head == NULL) {
            ex->ready_tail = NULL;
        } else {
            PL_PREFETCH(ex->ready_head);
        }
        PL_PREFETCH(next->future);
        *win_at(ex, ex->win_len++) = next;
    }
    ex->ready_len--;
    t->flags &= (uint8_t)~TASK_QUEUED;
    return t;
}

/* A held task picked to run waits aside, still counted as queued (its
 * wakes stay no-ops, the queue's reference stays), until its release. */
static inline void set_aside(pl_executor *ex, pl_task *t)
{
    t->held = TASK_ASIDE;
    t->flags |= TASK_QUEUED;
    t->next = NULL;
    if (ex->held_tail != NULL) {
        ex->held_tail->next = t;
    } else {
        ex->held_head = t;
    }
    ex->held_tail = t;
    ex->held_len++;
}

/* Unlinks t from the aside list (a simulator's path: a walk is fine). */
static inline void take_aside(pl_executor *ex, pl_task *t)
{
    pl_task *prev = NULL;
    pl_task *at = ex->held_head;
    while (at != t) {
        PL_ASSERT(at != NULL);
        prev = at;
        at = at->next;
    }
    if (prev != NULL) {
        prev->next = t->next;
    } else {
        ex->held_head = t->next;
    }
    if (ex->held_tail == t) {
        ex->held_tail = prev;
    }
    ex->held_len--;
    t->flags &= (uint8_t)~TASK_QUEUED;
}

/* FIFO in production. With a decide() hook the system picks among the
 * first `window` runnable tasks, so a pick costs O(window) however many
 * tasks are runnable. */
static inline pl_task *ready_pop(pl_executor *ex)
{
    if (ex->decide == NULL || ex->ready_len <= 1) {
        return ready_take(ex, 0);
    }
    uint32_t n = ex->win_len;
    uint32_t k = pl__executor_decide(ex, PL_DECIDE_SCHEDULE, n, (*win_at(ex, 0))->id);
    return ready_take(ex, k);
}

/* The production waker's wake of task t, its reference kept: waker.c's
 * fast vtable and core's own primitives (waiter.h) share it. Production
 * executors have no decide() (pl_executor_create hands out the fast
 * vtable only then), so the push is the list's. */
static inline void pl__fast_wake(pl_task *t)
{
    if (t->state == TASK_IDLE) {
        t->state = TASK_SCHEDULED;
        list_push(t->ex, t);
    } else if (t->state == TASK_RUNNING) {
        t->flags |= TASK_WOKEN_IN_POLL;
    }
}

/* The consuming wake: pl__fast_wake, then the waker's reference goes.
 * Waking a parked task is the common case, laid out first; such a task
 * is unfinished, so the executor's own reference stays beside the
 * waker's and the count cannot reach zero there. */
static inline void pl__fast_wake_consume(pl_task *t)
{
    if (PL__LIKELY(t->state == TASK_IDLE)) {
        t->state = TASK_SCHEDULED;
        list_push(t->ex, t);
        PL_ASSERT(t->refs > 1);
        t->refs--;
        return;
    }
    pl__fast_wake(t);
    task_release(t);
}

#endif
