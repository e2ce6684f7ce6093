/* The production run loop and wake path: the batch's shared context, the
 * inline wakes of core's primitives, and which executors get them. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include <pollen/executor.h>
#include <pollen/observer.h>
#include <pollen/sync.h>
#include <pollen/timer.h>

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

static void notified_tag_drop(pl_future *f) { pl_drop_child(&((notified_tag *)f)->wait.base); }

static const pl_future_vtable notified_tag_vt = {"notified_tag", notified_tag_poll,
                                                 notified_tag_drop};

/* Three tasks parked on their notifies are woken in order from outside
 * any poll; then the executor runs them, its decide() (if deciding)
 * answering from `script`. Checks the order they completed in and how
 * many schedule decisions were taken. */
static void wakes_run_in(bool deciding, const uint32_t *script, size_t script_len,
                         const int expect[3], unsigned decisions)
{
    order_len = 0;
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, deciding, NULL);
    pl_notify n[3];
    for (int i = 0; i < 3; i++) {
        pl_notify_init(&n[i]);
        notified_tag w = {PL_FUTURE_INIT(&notified_tag_vt), i, pl_notified_make(&n[i])};
        cr_assert_eq(PL_SPAWN(ex, w, NULL, NULL), 0);
    }
    cr_assert_eq(pl_run(ex), PL_EDEADLK, "all three parked");
    for (int i = 0; i < 3; i++) {
        pl_notify_one(&n[i]);
    }
    cr_assert_eq(pl__executor_runnable_count(ex), 3);
    m.script = script;
    m.script_len = script_len;
    m.decisions = 0;
    m.kinds[PL_DECIDE_SCHEDULE] = 0;
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(order_len, 3);
    cr_assert_arr_eq(order, expect, 3 * sizeof *expect);
    cr_assert_eq(m.kinds[PL_DECIDE_SCHEDULE], decisions);
    pl_executor_destroy(ex);
}

/* core's primitives wake their waiters inline when the waker is the fast
 * one; a deciding executor must not hand that one out, or those wakes
 * would skip the scheduling window and the decisions would see nothing
 * (one decision per pick among two or more). */
Test(wake_path, primitive_wakes_reach_the_schedule_decisions)
{
    static const uint32_t script[] = {2, 1};
    static const int expect[] = {2, 1, 0};
    wakes_run_in(true, script, 2, expect, 2);
}

/* Without decisions the same wakes run FIFO. */
Test(wake_path, primitive_wakes_run_fifo_in_production)
{
    static const int expect[] = {0, 1, 2};
    wakes_run_in(false, NULL, 0, expect, 0);
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
 * (its handle in t), and the bytes live before that task's spawn. */
typedef struct parked {
    manual_system m;
    pl_executor *ex;
    pl_notify n;
    pl_task *t;
    size_t before;
} parked;

static void park_one(parked *p)
{
    *p = (parked){0};
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.alloc = counting_alloc;
    live_bytes = 0;
    p->ex = manual_executor(&p->m, false, &o);
    cr_assert_not_null(p->ex);
    /* A first task grows the executor's task table once. */
    pl_notify_init(&p->n);
    pl_notify_one(&p->n);
    notified_tag first = {PL_FUTURE_INIT(&notified_tag_vt), 0, pl_notified_make(&p->n)};
    cr_assert_eq(PL_SPAWN(p->ex, first, NULL, NULL), 0);
    cr_assert_eq(pl_run(p->ex), 0);
    order_len = 0;
    p->before = live_bytes;
    notified_tag w = {PL_FUTURE_INIT(&notified_tag_vt), 7, pl_notified_make(&p->n)};
    cr_assert_eq(PL_SPAWN(p->ex, w, NULL, &p->t), 0);
    cr_assert_eq(pl_run(p->ex), PL_EDEADLK, "parked");
}

/* Lets the handle go: the task's block must be freed with it. */
static void let_go(parked *p)
{
    pl_task_release(p->t);
    cr_assert_eq(live_bytes, p->before, "the task's block is freed");
    pl_executor_destroy(p->ex);
}

/* The park took a reference for its waker clone and the wake gave it
 * back: once the handle goes too, the task's block is freed. */
Test(wake_path, a_fast_parked_waiter_woken_lets_its_task_go)
{
    parked p;
    park_one(&p);
    pl_notify_one(&p.n);
    cr_assert_eq(pl_run(p.ex), 0);
    cr_assert_eq(order_len, 1);
    cr_assert(!pl_notify_has_permit(&p.n), "the notification went to the waiter");
    let_go(&p);
}

/* Dropping the parked waiter (the task aborted) unlinks it and drops its
 * waker: the next notify_one stores a permit, and the block is freed. */
Test(wake_path, a_fast_parked_waiter_dropped_unlinks_and_lets_go)
{
    parked p;
    park_one(&p);
    pl_task_cancel(p.t);
    cr_assert(pl_task_is_cancelled(p.t));
    pl_notify_one(&p.n);
    cr_assert(pl_notify_has_permit(&p.n), "no waiter was left to take it");
    cr_assert_eq(order_len, 0);
    let_go(&p);
}

/* A spurious poll after the fast park keeps the stored waker (the same
 * identity) and the place in the queue; the notification still lands. */
Test(wake_path, a_fast_parked_waiter_survives_a_spurious_poll)
{
    parked p;
    park_one(&p);
    pl__executor_wake_task(p.ex, p.t);
    cr_assert_eq(pl_run(p.ex), PL_EDEADLK, "still parked");
    cr_assert_eq(pl_task_polls(p.t), 2);
    pl_notify_one(&p.n);
    cr_assert_eq(pl_run(p.ex), 0);
    cr_assert_eq(pl_task_polls(p.t), 3);
    cr_assert_eq(order_len, 1);
    let_go(&p);
}

/* ---- The clock, read only when asked ------------------------------------ */

static pl_time wall_ns; /* the counting system's clock: the tasks move it */
static unsigned now_calls;

static pl_time counting_now(void *self)
{
    (void)self;
    now_calls++;
    return wall_ns;
}

static int counting_wait(void *self, pl_executor *ex, pl_time deadline_ns)
{
    (void)self, (void)ex;
    if (deadline_ns == PL_TIME_NEVER) {
        return PL_EDEADLK;
    }
    if (deadline_ns > wall_ns) {
        wall_ns = deadline_ns;
    }
    return 0;
}

static const pl_system_vtable counting_vtable = {
    .version = PL_SYSTEM_VERSION,
    .name = "counting",
    .now = counting_now,
    .wait = counting_wait,
    .remote_wake = manual_remote_wake,
};

static pl_executor *counting_executor(void)
{
    static pl_system sys = {&counting_vtable, NULL};
    wall_ns = 0;
    now_calls = 0;
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.system = &sys;
    pl_executor *ex = NULL;
    cr_assert_eq(pl_executor_create(&ex, &o), 0);
    return ex;
}

enum { CLOCK_POLLS = 300, CLOCK_SLEEP_AT = 200 };

static pl_time seen_now[CLOCK_POLLS];

/* Every poll moves the clock 1 ms and yields. With `ask`, it records
 * pl_now; with `sleep`, its poll CLOCK_SLEEP_AT arms a 10 ms sleep and
 * records the deadline instead. */
typedef struct clock_task {
    pl_future base;
    bool ask;
    bool sleep;
    int polls;
    pl_time deadline;
    pl_sleep nap;
} clock_task;

static pl_poll_result clock_task_poll(pl_future *f, pl_context *cx)
{
    clock_task *self = (clock_task *)f;
    if (self->sleep && self->polls > CLOCK_SLEEP_AT) {
        return pl_poll(&self->nap.base, cx);
    }
    wall_ns += PL_MS;
    if (self->ask) {
        seen_now[self->polls] = pl_now(cx->ex);
    }
    if (self->sleep && self->polls == CLOCK_SLEEP_AT) {
        self->polls++;
        self->nap = pl_sleep_for(10 * PL_MS);
        cr_assert_eq(pl_poll(&self->nap.base, cx), PL_PENDING);
        self->deadline = pl__executor_next_timer(cx->ex);
        return PL_PENDING;
    }
    if (++self->polls == CLOCK_POLLS) {
        return PL_READY;
    }
    pl_waker_wake_by_ref(&cx->waker);
    return PL_PENDING;
}

static void clock_task_drop(pl_future *f) { pl_drop_child(&((clock_task *)f)->nap.base); }

static const pl_future_vtable clock_task_vt = {"clock_task", clock_task_poll, clock_task_drop};

static void run_clock_task(bool ask, bool sleep, pl_time *deadline)
{
    pl_executor *ex = counting_executor();
    clock_task c = {.base = PL_FUTURE_INIT(&clock_task_vt), .ask = ask, .sleep = sleep};
    pl_task *t;
    cr_assert_eq(PL_SPAWN(ex, c, NULL, &t), 0);
    cr_assert_eq(pl_run(ex), 0);
    *deadline = ((clock_task *)pl_task_future(t))->deadline;
    pl_task_release(t);
    pl_executor_destroy(ex);
}

/* A production tick with no timer armed leaves the clock unread: 300
 * polls are three ticks, and nobody asks for the time. */
Test(wake_path, ticks_with_nothing_to_fire_leave_the_clock_unread)
{
    pl_time deadline;
    run_clock_task(false, false, &deadline);
    cr_assert_eq(now_calls, 1, "read once, by pl_executor_create");
}

/* pl_now reads the clock at most once per tick, when first asked, so
 * what it says is never older than the tick. */
Test(wake_path, pl_now_reads_the_clock_once_per_tick_when_asked)
{
    pl_time deadline;
    run_clock_task(true, false, &deadline);
    cr_assert_eq(now_calls, 1 + 3, "one read per tick of 128 polls");
    for (int i = 0; i < CLOCK_POLLS; i++) {
        pl_time tick_start = (pl_time)(i - i % 128) + 1;
        cr_assert_eq(seen_now[i], tick_start * PL_MS, "poll %d", i);
    }
}

/* A sleep armed after ticks that left the clock unread measures from a
 * fresh reading: the 201st poll moved the clock to 201 ms. */
Test(wake_path, a_sleep_after_unread_ticks_measures_from_now)
{
    pl_time deadline;
    run_clock_task(false, true, &deadline);
    cr_assert_eq(deadline, 211 * PL_MS);
}
