/* The production run loop and wake path: the batch's shared context, the
 * inline wakes of core's primitives, and which executors get them. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include <pollen/executor.h>
#include <pollen/observer.h>
#include <pollen/sync.h>

#include "leakcheck.h"
#include "manual_system.h"

TestSuite(wake_path, .fini = pl_test_leak_check);

static int order[16];
static int order_len;

/* Awaits its notify, then logs its tag. */
typedef struct notified_tag {
    pl_future base;
    int tag;
    pl_notified wait;
} notified_tag;

static pl_poll_result notified_tag_poll(pl_future *f, pl_context *cx)
{
    notified_tag *self = (notified_tag *)f;
    if (pl_poll(&self->wait.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    if (order_len < 16) {
        order[order_len++] = self->tag;
    }
    return PL_READY;
}

static void notified_tag_drop(pl_future *f)
{
    pl_drop_child(&((notified_tag *)f)->wait.base);
}

static const pl_future_vtable notified_tag_vt = {"notified_tag", notified_tag_poll,
                                                 notified_tag_drop};

/* Spawns three tasks parked on n[0..2] and wakes them in order from
 * outside any poll. */
static void park_three_and_notify(pl_executor *ex, pl_notify n[3])
{
    for (int i = 0; i < 3; i++) {
        pl_notify_init(&n[i]);
        notified_tag w = {PL_FUTURE_INIT(&notified_tag_vt), i, pl_notified_init(&n[i])};
        cr_assert_eq(PL_SPAWN(ex, w, NULL, NULL), 0);
    }
    cr_assert_eq(pl_run(ex), PL_EDEADLK, "all three parked");
    for (int i = 0; i < 3; i++) {
        pl_notify_one(&n[i]);
    }
    cr_assert_eq(pl_executor_runnable(ex), 3);
}

/* core's primitives wake their waiters inline when the waker is the fast
 * one; a deciding executor must not hand that one out, or those wakes
 * would skip the scheduling window and the decisions would see nothing. */
Test(wake_path, primitive_wakes_reach_the_schedule_decisions)
{
    order_len = 0;
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, true, NULL);
    pl_notify n[3];
    park_three_and_notify(ex, n);
    uint32_t script[] = {2, 1};
    m.script = script;
    m.script_len = 2;
    m.decisions = 0;
    m.kinds[PL_DECIDE_SCHEDULE] = 0;
    cr_assert_eq(pl_run(ex), 0);
    int expect[] = {2, 1, 0};
    cr_assert_eq(order_len, 3);
    cr_assert_arr_eq(order, expect, sizeof expect);
    cr_assert_eq(m.kinds[PL_DECIDE_SCHEDULE], 2, "one decision per pick of two or more");
    pl_executor_destroy(ex);
}

/* Without decisions the same wakes run FIFO. */
Test(wake_path, primitive_wakes_run_fifo_in_production)
{
    order_len = 0;
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    pl_notify n[3];
    park_three_and_notify(ex, n);
    cr_assert_eq(pl_run(ex), 0);
    int expect[] = {0, 1, 2};
    cr_assert_eq(order_len, 3);
    cr_assert_arr_eq(order, expect, sizeof expect);
    pl_executor_destroy(ex);
}

static pl_task *seen_task[8];
static const void *seen_waker[8];
static int seen_len;

typedef struct context_logger {
    pl_future base;
    int yields;
} context_logger;

/* Logs the task and the waker data its context names, then yields. */
static pl_poll_result context_logger_poll(pl_future *f, pl_context *cx)
{
    context_logger *self = (context_logger *)f;
    if (seen_len < 8) {
        seen_task[seen_len] = cx->task;
        seen_waker[seen_len++] = cx->waker.data;
    }
    if (self->yields-- > 0) {
        pl_waker_wake_by_ref(&cx->waker);
        return PL_PENDING;
    }
    return PL_READY;
}

static const pl_future_vtable context_logger_vt = {"context_logger", context_logger_poll, NULL};

/* The production loop reuses one context per batch of polls: each poll
 * must still see its own task and a waker that wakes it. */
Test(wake_path, production_polls_see_their_own_context)
{
    seen_len = 0;
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    pl_task *t[3];
    for (int i = 0; i < 3; i++) {
        context_logger c = {PL_FUTURE_INIT(&context_logger_vt), 1};
        cr_assert_eq(PL_SPAWN(ex, c, NULL, &t[i]), 0);
    }
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(seen_len, 6);
    for (int i = 0; i < 6; i++) {
        cr_assert_eq(seen_task[i], t[i % 3], "poll %d names its task", i);
        cr_assert_eq(seen_waker[i], t[i % 3], "poll %d has its task's waker", i);
    }
    for (int i = 0; i < 3; i++) {
        pl_task_release(t[i]);
    }
    pl_executor_destroy(ex);
}

/* ---- The fast park of a production task's pl_notified ------------------- */

static size_t live_bytes;

static void *counting_alloc(void *ud, void *ptr, size_t old_size, size_t new_size)
{
    (void)ud;
    live_bytes = live_bytes - old_size + new_size;
    if (new_size == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, new_size);
}

/* A production executor counting its bytes, with one task parked on n
 * (handle in *t); returns the bytes live before the spawn. */
static size_t parked_on(pl_executor **ex, manual_system *m, pl_notify *n, pl_task **t)
{
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.alloc = counting_alloc;
    live_bytes = 0;
    order_len = 0;
    *ex = manual_executor(m, false, &o);
    cr_assert_not_null(*ex);
    /* A first task grows the executor's task table once. */
    pl_notify_init(n);
    pl_notify_one(n);
    notified_tag first = {PL_FUTURE_INIT(&notified_tag_vt), 0, pl_notified_init(n)};
    cr_assert_eq(PL_SPAWN(*ex, first, NULL, NULL), 0);
    cr_assert_eq(pl_run(*ex), 0);
    order_len = 0;
    size_t before = live_bytes;
    notified_tag w = {PL_FUTURE_INIT(&notified_tag_vt), 7, pl_notified_init(n)};
    cr_assert_eq(PL_SPAWN(*ex, w, NULL, t), 0);
    cr_assert_eq(pl_run(*ex), PL_EDEADLK, "parked");
    return before;
}

/* The park took a reference for its waker clone and the wake gave it
 * back: once the handle goes too, the task's block is freed. */
Test(wake_path, a_fast_parked_waiter_woken_lets_its_task_go)
{
    manual_system m = {0};
    pl_executor *ex;
    pl_notify n;
    pl_task *t;
    size_t before = parked_on(&ex, &m, &n, &t);
    pl_notify_one(&n);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(order_len, 1);
    cr_assert(!pl_notify_has_permit(&n), "the notification went to the waiter");
    pl_task_release(t);
    cr_assert_eq(live_bytes, before, "the task's block is freed");
    pl_executor_destroy(ex);
}

/* Dropping the parked waiter (the task aborted) unlinks it and drops its
 * waker: the next notify_one stores a permit, and the block is freed. */
Test(wake_path, a_fast_parked_waiter_dropped_unlinks_and_lets_go)
{
    manual_system m = {0};
    pl_executor *ex;
    pl_notify n;
    pl_task *t;
    size_t before = parked_on(&ex, &m, &n, &t);
    pl_task_abort(t);
    cr_assert(pl_task_is_cancelled(t));
    pl_notify_one(&n);
    cr_assert(pl_notify_has_permit(&n), "no waiter was left to take it");
    cr_assert_eq(order_len, 0);
    pl_task_release(t);
    cr_assert_eq(live_bytes, before, "the task's block is freed");
    pl_executor_destroy(ex);
}

/* A spurious poll after the fast park keeps the stored waker (the same
 * identity) and the place in the queue; the notification still lands. */
Test(wake_path, a_fast_parked_waiter_survives_a_spurious_poll)
{
    manual_system m = {0};
    pl_executor *ex;
    pl_notify n;
    pl_task *t;
    size_t before = parked_on(&ex, &m, &n, &t);
    pl_executor_wake_task(ex, t);
    cr_assert_eq(pl_run(ex), PL_EDEADLK, "still parked");
    cr_assert_eq(pl_task_polls(t), 2);
    pl_notify_one(&n);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(pl_task_polls(t), 3);
    cr_assert_eq(order_len, 1);
    pl_task_release(t);
    cr_assert_eq(live_bytes, before, "the task's block is freed");
    pl_executor_destroy(ex);
}
