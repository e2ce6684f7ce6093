/* core/src/waker.c: task wakers, clone counting, the orphan hook, the noop waker.
 *
 * Three vtables: production executors (no observer, no rotation, no
 * decide()) hand out the fast one, which is a state test, a queue push
 * and a reference count, or with count_wakers the counting one, the same
 * steps and a clone count for dumps; the others hand out the checking
 * one, which counts clones in the task header and reports wakes. The
 * choice is made once, at pl_executor_create.
 */
#include "executor_internal.h"
#include "ready.h"
#include "recorder.h"
#include "waiter.h"

/* ---- Task wakers ------------------------------------------------------ */

static void notify_wake(pl_executor *ex, pl_task *t, uint32_t gen, bool by_ref,
                        pl_wake_outcome outcome)
{
    if (ex->obs != NULL && ex->obs->wake != NULL) {
        ex->obs->wake(ex->obs_ud, t, gen, by_ref, ex->running, outcome);
    }
}

/* A recorder's wake. Under the fast waker, a poll's wakes are found in
 * the queue after it (run_ready_rec): here are only those from outside
 * polls (remote wakes). Under this file's checking waker (an observed,
 * rotating or deciding executor: never production's) they are recorded
 * as they happen, so they too come before their poll's pending or
 * ready; one from outside a poll says by 0. */
static void record_wake(pl_executor *ex, const pl_task *t)
{
    if (ex->running == NULL) {
        pl__rec(ex, PL__REC_WAKE, t->id, 0);
    } else if (ex->waker_vtable != &pl__fast_waker_vtable) {
        (void)pl_now(ex); /* the event's time: a tick may leave it unread */
        pl__rec(ex, PL__REC_WAKE, t->id, ex->running->id);
    }
}

/* The one place a task becomes runnable: dedupes, defers wakes during the
 * task's own poll, ignores finished tasks and (under rotation) wakers a
 * later poll superseded. */
void pl__task_wake(pl_task *t, uint32_t gen, bool by_ref)
{
    pl_executor *ex = t->ex;
    pl_wake_outcome outcome;
    if (t->state >= TASK_DONE) {
        outcome = PL_WAKE_FINISHED;
    } else if (ex->rotate && gen != task_watch_of(t)->gen) {
        outcome = PL_WAKE_STALE;
    } else if (t->state == TASK_IDLE) {
        t->state = TASK_SCHEDULED;
        ready_push(ex, t);
        outcome = PL_WAKE_SCHEDULED;
    } else if (t->state == TASK_RUNNING) {
        t->flags |= TASK_WOKEN_IN_POLL;
        outcome = PL_WAKE_DURING_POLL;
    } else {
        outcome = PL_WAKE_DEDUPED;
    }
    if (ex->obs != NULL) {
        notify_wake(ex, t, gen, by_ref, outcome);
    }
    if (ex->rec != NULL && (outcome == PL_WAKE_SCHEDULED || outcome == PL_WAKE_DURING_POLL)) {
        record_wake(ex, t);
    }
}

/* Counts the clone in the task (hot: refs sits next to it) instead of a
 * hook call per clone; the observer hears only of clones made outside the
 * task's own poll, the rare case where it wants to know who made them. */
void pl__task_count_clone(pl_executor *ex, pl_task *t, uint32_t gen)
{
    task_watch_of(t)->waker_clones++;
    if (ex->running == t) {
        t->flags &= (uint8_t)~TASK_CLONED_ELSEWHERE;
        return;
    }
    t->flags |= TASK_CLONED_ELSEWHERE;
    if (ex->obs != NULL && ex->obs->waker_clone != NULL) {
        ex->obs->waker_clone(ex->obs_ud, t, gen);
    }
}

/* A parked task whose last waker clone goes without a wake can never be
 * woken again. Its own poll and its own drop are not that: the poll may
 * still store a new clone or wake itself, the drop ends the task. A
 * consuming wake schedules the task before it drops the clone. Out of
 * line: the drop path stays as short as it was. */
PL_COLD void pl__task_notify_orphan(pl_executor *ex, pl_task *t)
{
    if (!(t->flags & (TASK_DROPPING | TASK_ABANDONED)) && ex->obs != NULL &&
        ex->obs->orphaned != NULL) {
        ex->obs->orphaned(ex->obs_ud, t, ex->running);
    }
}

static void task_waker_clone(const pl_waker *w, pl_waker *out)
{
    pl_task *t = w->data;
    t->refs++;
    pl__task_count_clone(t->ex, t, w->gen);
    out->vtable = w->vtable;
    out->data = t;
    out->gen = w->gen;
    out->reserved = 0;
}

static void task_waker_drop(pl_waker w)
{
    pl_task *t = w.data;
    count_drop(t->ex, t, w.gen);
    task_release(t);
}

static void task_waker_wake_by_ref(const pl_waker *w) { pl__task_wake(w->data, w->gen, true); }

static void task_waker_wake(pl_waker w)
{
    pl__task_wake(w.data, w.gen, false);
    task_waker_drop(w);
}

const pl_waker_vtable pl__task_waker_vtable = {
    task_waker_clone,
    task_waker_wake,
    task_waker_wake_by_ref,
    task_waker_drop,
};

/* Production wakers: with no observer and no rotation there is nothing
 * to report and no identity to check, so the hot path is a state test,
 * a queue push and a reference count. */
static void fast_waker_clone(const pl_waker *w, pl_waker *out)
{
    pl_task *t = w->data;
    t->refs++;
    /* Field by field from narrow loads: the context's waker was just
     * written field by field, and one wide reload of it would stall on
     * store forwarding. No rotation here: gen is always 0. */
    out->vtable = &pl__fast_waker_vtable;
    out->data = t;
    out->gen = 0;
    out->reserved = 0;
}

/* pl__fast_wake (ready.h) is inline in both wake entries: a consuming
 * wake is the common one, and a call from it to wake_by_ref costs a tenth
 * of the wake. */
static void fast_waker_wake_by_ref(const pl_waker *w) { pl__fast_wake(w->data); }

static void fast_waker_drop(pl_waker w) { task_release(w.data); }

static void fast_waker_wake(pl_waker w) { pl__fast_wake_consume(w.data); }

const pl_waker_vtable pl__fast_waker_vtable = {
    fast_waker_clone,
    fast_waker_wake,
    fast_waker_wake_by_ref,
    fast_waker_drop,
};

/* Counting production wakers (count_wakers): the fast waker's steps, and
 * each clone counted in the task's watch for a dump. Through the vtable
 * (waiter.h inlines the fast waker alone), so executors without the
 * option keep their inline wake and park. */
static void counted_waker_clone(const pl_waker *w, pl_waker *out)
{
    pl_task *t = w->data;
    t->refs++;
    task_watch_of(t)->waker_clones++;
    out->vtable = &pl__counted_waker_vtable;
    out->data = t;
    out->gen = 0;
    out->reserved = 0;
}

static void counted_waker_wake_by_ref(const pl_waker *w) { pl__fast_wake(w->data); }

/* No observer hears of an orphan here (count_drop's): the count alone. A
 * clone is dropped once (its reference says so), so the count is above 0. */
static void uncount(pl_task *t)
{
    task_watch *w = task_watch_of(t);
    PL_ASSERT(w->waker_clones > 0);
    w->waker_clones--;
}

static void counted_waker_drop(pl_waker w)
{
    uncount(w.data);
    task_release(w.data);
}

/* The count goes first: the wake may release the task's last reference. */
static void counted_waker_wake(pl_waker w)
{
    uncount(w.data);
    pl__fast_wake_consume(w.data);
}

const pl_waker_vtable pl__counted_waker_vtable = {
    counted_waker_clone,
    counted_waker_wake,
    counted_waker_wake_by_ref,
    counted_waker_drop,
};

/* waiter.h's wake of any waker but the fast one (the simulator's, a
 * combinator's): by value, through its vtable. */
void pl__waiter_wake_slow(pl_waker *slot) { pl_waker_wake(pl_waker_slot_take(slot)); }

void pl__executor_wake_task(pl_executor *ex, pl_task *t)
{
    PL_ASSERT(t->ex == ex);
    pl__task_wake(t, task_gen(t), true);
}

/* ---- Noop waker ------------------------------------------------------- */

static void noop_clone(const pl_waker *w, pl_waker *out) { *out = *w; }
static void noop_wake(pl_waker w) { (void)w; }
static void noop_wake_by_ref(const pl_waker *w) { (void)w; }

static const pl_waker_vtable noop_vtable = {noop_clone, noop_wake, noop_wake_by_ref, noop_wake};

pl_waker pl_waker_noop(void) { return (pl_waker){&noop_vtable, NULL, 0, 0}; }

/* ---- Which task a waker wakes ------------------------------------------ */

pl_task *pl__executor_waker_task(const pl_executor *ex, const pl_waker *w)
{
    if (w->vtable != &pl__task_waker_vtable && w->vtable != &pl__fast_waker_vtable &&
        w->vtable != &pl__counted_waker_vtable) {
        return NULL;
    }
    pl_task *t = w->data;
    return t->ex == ex ? t : NULL;
}
