/* Coroutine macros: PL_ASYNC_BEGIN / PL_AWAIT / PL_YIELD / PL_ASYNC_END.
 *
 * Linear code over several awaits, yields interleaving with other tasks,
 * loops whose locals live in the struct, nested coroutines, and spurious
 * polls that must not advance a coroutine. */
#include <criterion/criterion.h>

#include <pollen/executor.h>
#include <pollen/sync.h>

#include "leakcheck.h"

TestSuite(coroutine, .fini = pl_test_leak_check);

static int trace[64];
static int trace_len;

static void note(int v)
{
    cr_assert_lt(trace_len, 64);
    trace[trace_len++] = v;
}

static void assert_trace(const int *want, int n)
{
    cr_assert_eq(trace_len, n, "trace has %d entries, want %d", trace_len, n);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(trace[i], want[i], "trace[%d] = %d, want %d", i, trace[i], want[i]);
    }
}

static pl_executor *new_executor(void)
{
    pl_executor *ex = NULL;
    cr_assert_eq(pl_executor_create(&ex, NULL), 0);
    trace_len = 0;
    return ex;
}

/* ---- Linear code over several awaits ---------------------------------- */

typedef struct steps {
    pl_notify n[3];
} steps;

/* Waits for n[0], n[1], n[2] in turn, noting 10, 11, 12 after each. */
typedef struct stepper {
    pl_future base;
    steps *st;
    pl_notified wait;
    int polls;
} stepper;

static pl_poll_result stepper_poll(pl_future *f, pl_context *cx)
{
    stepper *self = (stepper *)f;
    self->polls++;
    PL_ASYNC_BEGIN(self);
    note(1);
    self->wait = pl_notified_make(&self->st->n[0]);
    PL_AWAIT(cx, &self->wait);
    note(10);
    self->wait = pl_notified_make(&self->st->n[1]);
    PL_AWAIT(cx, &self->wait);
    note(11);
    self->wait = pl_notified_make(&self->st->n[2]);
    PL_AWAIT(cx, &self->wait);
    note(12);
    PL_ASYNC_END;
}

static const pl_future_vtable stepper_vtable = {"stepper", stepper_poll, NULL};

/* Notifies n[0..2] in order, yielding between, noting 20, 21, 22. */
typedef struct driver {
    pl_future base;
    steps *st;
} driver;

static pl_poll_result driver_poll(pl_future *f, pl_context *cx)
{
    driver *self = (driver *)f;
    PL_ASYNC_BEGIN(self);
    note(20);
    pl_notify_one(&self->st->n[0]);
    PL_YIELD(cx);
    note(21);
    pl_notify_one(&self->st->n[1]);
    PL_YIELD(cx);
    note(22);
    pl_notify_one(&self->st->n[2]);
    PL_ASYNC_END;
}

static const pl_future_vtable driver_vtable = {"driver", driver_poll, NULL};

Test(coroutine, linear_code_over_several_awaits)
{
    pl_executor *ex = new_executor();
    steps st;
    for (int i = 0; i < 3; i++) {
        pl_notify_init(&st.n[i]);
    }
    stepper s = {.base = PL_FUTURE_INIT(&stepper_vtable), .st = &st};
    driver d = {PL_FUTURE_INIT(&driver_vtable), &st};
    pl_task *h;
    cr_assert_eq(PL_SPAWN(ex, s, "stepper", &h), 0);
    cr_assert_eq(PL_SPAWN(ex, d, "driver", NULL), 0);
    cr_assert_eq(s.polls, 0, "spawn is lazy");
    cr_assert_eq(pl_run(ex), 0);
    const int want[] = {1, 20, 10, 21, 11, 22, 12};
    assert_trace(want, 7);
    stepper *done = pl_task_future(h);
    cr_assert_eq(done->polls, 4, "one poll per await plus the first");
    for (int i = 0; i < 3; i++) {
        cr_assert(!pl_notify_has_permit(&st.n[i]));
    }
    pl_task_release(h);
    pl_executor_destroy(ex);
}

/* ---- Yield ------------------------------------------------------------ */

/* Notes its tag, yields, three times over, keeping the loop counter in
 * the struct because locals do not survive a yield. */
typedef struct yielder {
    pl_future base;
    int tag;
    int i;
    int polls;
} yielder;

static pl_poll_result yielder_poll(pl_future *f, pl_context *cx)
{
    yielder *self = (yielder *)f;
    self->polls++;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < 3; self->i++) {
        note(self->tag);
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable yielder_vtable = {"yielder", yielder_poll, NULL};

Test(coroutine, yield_lets_other_tasks_run)
{
    pl_executor *ex = new_executor();
    yielder a = {PL_FUTURE_INIT(&yielder_vtable), 1, 0, 0};
    yielder b = {PL_FUTURE_INIT(&yielder_vtable), 2, 0, 0};
    pl_task *ha, *hb;
    cr_assert_eq(PL_SPAWN(ex, a, "a", &ha), 0);
    cr_assert_eq(PL_SPAWN(ex, b, "b", &hb), 0);
    cr_assert_eq(pl_run(ex), 0);
    const int want[] = {1, 2, 1, 2, 1, 2};
    assert_trace(want, 6);
    cr_assert_eq(((yielder *)pl_task_future(ha))->polls, 4);
    cr_assert_eq(pl_task_polls(hb), 4);
    pl_task_release(ha);
    pl_task_release(hb);
    pl_executor_destroy(ex);
}

/* ---- Locals in the struct across awaits, and nesting ------------------ */

/* Receives `count` ints from a channel and sums them. */
typedef struct summer {
    pl_future base;
    pl_mpsc *ch;
    int count;
    int i;
    int item;
    long sum;
    int result;
    pl_mpsc_recv recv;
} summer;

static pl_poll_result summer_poll(pl_future *f, pl_context *cx)
{
    summer *self = (summer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < self->count; self->i++) {
        self->recv = pl_mpsc_recv_make(self->ch, &self->item);
        PL_AWAIT(cx, &self->recv);
        if (self->recv.result != 0) {
            self->result = self->recv.result;
            return PL_READY;
        }
        self->sum += self->item;
    }
    PL_ASYNC_END;
}

static const pl_future_vtable summer_vtable = {"summer", summer_poll, NULL};

/* A parent coroutine that awaits a nested summer twice, then notes. */
typedef struct parent {
    pl_future base;
    pl_mpsc *ch;
    summer child;
    long first;
    long second;
} parent;

static summer summer_init(pl_mpsc *ch, int count)
{
    return (summer){.base = PL_FUTURE_INIT(&summer_vtable), .ch = ch, .count = count};
}

static pl_poll_result parent_poll(pl_future *f, pl_context *cx)
{
    parent *self = (parent *)f;
    PL_ASYNC_BEGIN(self);
    self->child = summer_init(self->ch, 3);
    PL_AWAIT(cx, &self->child);
    self->first = self->child.sum;
    self->child = summer_init(self->ch, 2);
    PL_AWAIT(cx, &self->child);
    self->second = self->child.sum;
    note(99);
    PL_ASYNC_END;
}

static const pl_future_vtable parent_vtable = {"parent", parent_poll, NULL};

/* Sends 1..n one at a time, yielding after each send. */
typedef struct producer {
    pl_future base;
    pl_mpsc *ch;
    int n;
    int k;
    pl_mpsc_send send;
} producer;

static pl_poll_result producer_poll(pl_future *f, pl_context *cx)
{
    producer *self = (producer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->k = 1; self->k <= self->n; self->k++) {
        self->send = pl_mpsc_send_make(self->ch, &self->k);
        PL_AWAIT(cx, &self->send);
        cr_assert_eq(self->send.result, 0);
        PL_YIELD(cx);
    }
    pl_mpsc_sender_drop(self->ch);
    PL_ASYNC_END;
}

static const pl_future_vtable producer_vtable = {"producer", producer_poll, NULL};

Test(coroutine, nested_coroutines_keep_their_locals_in_structs)
{
    pl_executor *ex = new_executor();
    pl_mpsc ch;
    cr_assert_eq(pl_mpsc_init(&ch, ex, sizeof(int), 1), 0);
    parent p = {.base = PL_FUTURE_INIT(&parent_vtable), .ch = &ch};
    producer prod = {.base = PL_FUTURE_INIT(&producer_vtable), .ch = &ch, .n = 5};
    pl_task *h;
    cr_assert_eq(PL_SPAWN(ex, p, "parent", &h), 0);
    cr_assert_eq(PL_SPAWN(ex, prod, "producer", NULL), 0);
    cr_assert_eq(pl_run(ex), 0);
    parent *done = pl_task_future(h);
    cr_assert_eq(done->first, 1 + 2 + 3);
    cr_assert_eq(done->second, 4 + 5);
    const int want[] = {99};
    assert_trace(want, 1);
    pl_task_release(h);
    pl_mpsc_finish(&ch);
    pl_executor_destroy(ex);
}

/* ---- Polled by hand: resume points and spurious polls ------------------ */

static int manual_wakes;
static void counting_clone(const pl_waker *w, pl_waker *out) { *out = *w; }
static void counting_wake(pl_waker w)
{
    (void)w;
    manual_wakes++;
}
static void counting_wake_by_ref(const pl_waker *w)
{
    (void)w;
    manual_wakes++;
}
static void counting_drop(pl_waker w) { (void)w; }
static const pl_waker_vtable counting_vtable = {counting_clone, counting_wake,
                                                counting_wake_by_ref, counting_drop};

Test(coroutine, spurious_polls_do_not_advance_and_yield_wakes_itself)
{
    steps st;
    pl_notify_init(&st.n[0]);
    pl_notify_init(&st.n[1]);
    pl_notify_init(&st.n[2]);
    stepper s = {.base = PL_FUTURE_INIT(&stepper_vtable), .st = &st};
    pl_context cx = {{&counting_vtable, NULL, 1, 0}, NULL, NULL, NULL};
    trace_len = 0;
    manual_wakes = 0;
    cr_assert_eq(pl_poll(&s.base, &cx), PL_PENDING);
    uint32_t at_first_await = s.base.resume;
    cr_assert_neq(at_first_await, 0);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pl_poll(&s.base, &cx), PL_PENDING);
    }
    cr_assert_eq(s.base.resume, at_first_await, "spurious polls stay at the await");
    const int want1[] = {1};
    assert_trace(want1, 1);
    pl_notify_one(&st.n[0]);
    cr_assert_eq(manual_wakes, 1);
    cr_assert_eq(pl_poll(&s.base, &cx), PL_PENDING);
    cr_assert_neq(s.base.resume, at_first_await);
    pl_notify_one(&st.n[1]);
    pl_notify_one(&st.n[2]);  /* no waiter yet: stored as the permit */
    cr_assert_eq(pl_poll(&s.base, &cx), PL_READY, "the permit completes the last await");
    const int want2[] = {1, 10, 11, 12};
    assert_trace(want2, 4);

    yielder y = {PL_FUTURE_INIT(&yielder_vtable), 5, 0, 0};
    manual_wakes = 0;
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pl_poll(&y.base, &cx), PL_PENDING);
        cr_assert_eq(manual_wakes, i + 1, "a yield wakes its own task");
    }
    cr_assert_eq(pl_poll(&y.base, &cx), PL_READY);
}

/* ---- block_on reads a coroutine's output back -------------------------- */

typedef struct counter {
    pl_future base;
    int n;
    int out;
} counter;

static pl_poll_result counter_poll(pl_future *f, pl_context *cx)
{
    counter *self = (counter *)f;
    PL_ASYNC_BEGIN(self);
    while (self->n > 0) {
        self->out += self->n;
        self->n--;
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable counter_vtable = {"counter", counter_poll, NULL};

Test(coroutine, block_on_returns_the_output)
{
    pl_executor *ex = new_executor();
    counter c = {PL_FUTURE_INIT(&counter_vtable), 4, 0};
    cr_assert_eq(PL_BLOCK_ON(ex, c), 0);
    cr_assert_eq(c.out, 10);
    cr_assert_eq(c.n, 0);
    pl_executor_destroy(ex);
}

/* ---- Await sites reach a poll watch, and only a watch --------------------- */

typedef struct sites_seen {
    int n;
    pl_future *child[8];
    pl_poll_result r[8];
    const pl_await_site *site[8];
    int enters;
} sites_seen;

static void seen_enter(void *ud, pl_future *f)
{
    (void)f;
    ((sites_seen *)ud)->enters++;
}

static void seen_await(void *ud, pl_future *child, pl_poll_result r, const pl_await_site *site)
{
    sites_seen *s = ud;
    cr_assert_lt(s->n, 8);
    s->child[s->n] = child;
    s->r[s->n] = r;
    s->site[s->n++] = site;
}

static void seen_wait(void *ud, const pl_wait *w) { (void)ud, (void)w; }
static void seen_purpose(void *ud) { (void)ud; }

static int await_line, yield_line;

/* Awaits a notified, then yields once. */
typedef struct sited {
    pl_future base;
    pl_notify *n;
    pl_notified wait;
} sited;

static pl_poll_result sited_poll(pl_future *f, pl_context *cx)
{
    sited *self = (sited *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = pl_notified_make(self->n);
    await_line = __LINE__ + 1;
    PL_AWAIT(cx, &self->wait);
    yield_line = __LINE__ + 1;
    PL_YIELD(cx);
    PL_ASYNC_END;
}

static const pl_future_vtable sited_vtable = {"sited", sited_poll, NULL};

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

Test(coroutine, await_sites_reach_the_watch_and_nothing_else)
{
    pl_notify n;
    pl_notify_init(&n);
    sited s = {.base = PL_FUTURE_INIT(&sited_vtable), .n = &n};
    sites_seen seen = {0};
    pl_poll_watch watch = {&seen, seen_enter, NULL, seen_wait, seen_purpose, NULL, seen_await};
    pl_context cx = {{&counting_vtable, NULL, 1, 0}, NULL, NULL, &watch};
    cr_assert_eq(pl_poll(&s.base, &cx), PL_PENDING);
    cr_assert_eq(seen.n, 1);
    cr_assert_eq(seen.child[0], &s.wait.base);
    cr_assert_eq(seen.r[0], PL_PENDING);
    cr_assert_eq(seen.site[0]->line, await_line);
    cr_assert_str_eq(seen.site[0]->func, "sited_poll");
    cr_assert(ends_with(seen.site[0]->file, "test_coroutine.c"), "%s", seen.site[0]->file);
    const pl_await_site *first = seen.site[0];
    cr_assert_eq(pl_poll(&s.base, &cx), PL_PENDING, "a spurious poll parks at the same await");
    cr_assert_eq(seen.site[1], first, "one site object per await");
    pl_notify_one(&n);
    cr_assert_eq(pl_poll(&s.base, &cx), PL_PENDING);
    cr_assert_eq(seen.n, 4);
    cr_assert_eq(seen.r[2], PL_READY, "an await that completes ends through the hook too");
    cr_assert_null(seen.child[3], "a yield polls no child");
    cr_assert_eq(seen.site[3]->line, yield_line);
    cr_assert_eq(seen.enters, 6, "three polls of the coroutine, three of its child");
    cr_assert_eq(pl_poll(&s.base, &cx), PL_READY);

    /* Without a watch nobody hears of a site. */
    sited t = {.base = PL_FUTURE_INIT(&sited_vtable), .n = &n};
    cx.watch = NULL;
    seen.n = 0;
    cr_assert_eq(pl_poll(&t.base, &cx), PL_PENDING);
    cr_assert_eq(seen.n, 0);
    pl_drop(&t.base);
    pl_drop_child(&t.wait.base);
}
