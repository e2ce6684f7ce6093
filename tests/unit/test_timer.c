/* Timers: the heap against a model, tie-breaks, sleep, timeout, interval,
 * and the simulator-facing decisions (tie order, lateness). */
#include <criterion/criterion.h>
#include <string.h>

#include <pollen/executor.h>
#include <pollen/observer.h>
#include <pollen/testing.h>
#include <pollen/timer.h>

#include "leakcheck.h"
#include "manual_system.h"

TestSuite(timer, .fini = pl_test_leak_check);

static int done_order[64];
static int done_len;
static pl_time done_at[64];

/* Sleeps `delay` then records its tag and the time. */
typedef struct sleeper {
    pl_future base;
    int tag;
    pl_sleep sleep;
} sleeper;

static pl_poll_result sleeper_poll(pl_future *f, pl_context *cx)
{
    sleeper *s = (sleeper *)f;
    if (pl_poll(&s->sleep.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    done_at[done_len] = pl_now(cx->ex);
    done_order[done_len++] = s->tag;
    return PL_READY;
}

static void sleeper_drop(pl_future *f)
{
    sleeper *s = (sleeper *)f;
    if (!(s->sleep.base.flags & PL_FUTURE_DROPPED)) {
        pl_drop(&s->sleep.base);
    }
}

static const pl_future_vtable sleeper_vt = {"sleeper", sleeper_poll, sleeper_drop};

static void spawn_sleeper(pl_executor *ex, int tag, pl_time delay)
{
    sleeper s = {PL_FUTURE_INIT(&sleeper_vt), tag, pl_sleep_for(delay)};
    cr_assert_eq(PL_SPAWN(ex, s, NULL, NULL), 0);
}

Test(timer, sleeps_fire_in_deadline_then_arming_order)
{
    done_len = 0;
    manual_system m = {.now_ns = 1000};
    pl_executor *ex = manual_executor(&m, false, NULL);
    spawn_sleeper(ex, 0, 30 * PL_MS);
    spawn_sleeper(ex, 1, 10 * PL_MS);
    spawn_sleeper(ex, 2, 20 * PL_MS);
    spawn_sleeper(ex, 3, 10 * PL_MS);
    spawn_sleeper(ex, 4, 10 * PL_MS);
    cr_assert_eq(pl_run(ex), 0);
    int expect[] = {1, 3, 4, 2, 0};
    cr_assert_arr_eq(done_order, expect, sizeof expect);
    cr_assert_eq(done_at[0], 1000 + 10 * PL_MS);
    cr_assert_eq(done_at[4], 1000 + 30 * PL_MS);
    cr_assert_eq(pl__executor_timer_count(ex), 0);
    pl_executor_destroy(ex);
}

Test(timer, equal_deadlines_follow_decisions_under_a_deciding_system)
{
    done_len = 0;
    manual_system m = {0};
    /* Three spawned tasks: 2 schedule picks; then the tie of three. */
    uint32_t script[] = {0, 0, 2, 1};
    m.script = script;
    m.script_len = 4;
    pl_executor *ex = manual_executor(&m, true, NULL);
    for (int i = 0; i < 3; i++) {
        spawn_sleeper(ex, i, 5 * PL_MS);
    }
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(m.kinds[PL_DECIDE_TIMER_ORDER], 2);
    /* Tie batch 0 1 2: pick 2, then from 0 1 pick 1, then 0. */
    int expect[] = {2, 1, 0};
    cr_assert_arr_eq(done_order, expect, sizeof expect);
    pl_executor_destroy(ex);
}

Test(timer, lateness_is_never_early_and_bounded)
{
    done_len = 0;
    manual_system m = {0};
    uint32_t script[] = {3};
    m.script = script;
    m.script_len = 1;
    pl_executor_options o;
    pl_executor_options_default(&o);
    pl_executor_testing_options to;
    pl_executor_testing_options_default(&to);
    to.timer_late_max = 5;
    to.timer_late_quantum_ns = PL_MS;
    o.testing = &to;
    pl_executor *ex = manual_executor(&m, true, &o);
    spawn_sleeper(ex, 0, 10 * PL_MS);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(m.kinds[PL_DECIDE_TIMER_LATE], 1);
    cr_assert_eq(done_at[0], 13 * PL_MS, "3 quanta late");
    pl_executor_destroy(ex);
}

/* Never completes; counts drops. */
static int forever_drops;

static pl_poll_result forever_poll(pl_future *f, pl_context *cx)
{
    (void)f, (void)cx;
    return PL_PENDING;
}

static void forever_drop(pl_future *f)
{
    (void)f;
    forever_drops++;
}

static const pl_future_vtable forever_vt = {"forever", forever_poll, forever_drop};

typedef struct timeout_user {
    pl_future base;
    pl_future inner_storage;
    pl_sleep inner_sleep;
    pl_timeout timeout;
    bool use_sleep;
    int result;
} timeout_user;

static pl_poll_result timeout_user_poll(pl_future *f, pl_context *cx)
{
    timeout_user *u = (timeout_user *)f;
    if (u->timeout.base.vtable == NULL) {
        pl_future *inner = u->use_sleep ? &u->inner_sleep.base : &u->inner_storage;
        u->timeout = pl_timeout_make(inner, 50 * PL_MS);
    }
    if (pl_poll(&u->timeout.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    u->result = u->timeout.result;
    return PL_READY;
}

static const pl_future_vtable timeout_user_vt = {"timeout_user", timeout_user_poll, NULL};

Test(timer, timeout_expires_and_drops_the_inner_future)
{
    forever_drops = 0;
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    timeout_user u;
    memset(&u, 0, sizeof u);
    u.base = PL_FUTURE_INIT(&timeout_user_vt);
    u.inner_storage = PL_FUTURE_INIT(&forever_vt);
    cr_assert_eq(PL_BLOCK_ON(ex, u), 0);
    cr_assert_eq(u.result, PL_ETIMEDOUT);
    cr_assert_eq(forever_drops, 1);
    cr_assert_eq(m.now_ns, 50 * PL_MS);
    pl_executor_destroy(ex);
}

Test(timer, timeout_passes_through_an_inner_that_finishes_first)
{
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    timeout_user u;
    memset(&u, 0, sizeof u);
    u.base = PL_FUTURE_INIT(&timeout_user_vt);
    u.use_sleep = true;
    u.inner_sleep = pl_sleep_for(20 * PL_MS);
    cr_assert_eq(PL_BLOCK_ON(ex, u), 0);
    cr_assert_eq(u.result, 0);
    cr_assert_eq(m.now_ns, 20 * PL_MS);
    cr_assert_eq(pl__executor_timer_count(ex), 0, "the timeout's own timer was disarmed");
    pl_executor_destroy(ex);
}

typedef struct ticker {
    pl_future base;
    pl_interval iv;
    pl_interval_tick tick;
    int ticks;
    pl_time at[4];
} ticker;

static pl_poll_result ticker_poll(pl_future *f, pl_context *cx)
{
    ticker *t = (ticker *)f;
    while (t->ticks < 4) {
        if (t->tick.base.vtable == NULL) {
            t->tick = pl_interval_tick_make(&t->iv);
        }
        if (pl_poll(&t->tick.base, cx) == PL_PENDING) {
            return PL_PENDING;
        }
        t->at[t->ticks++] = pl_now(cx->ex);
        pl_drop(&t->tick.base);
        t->tick.base.vtable = NULL;
    }
    return PL_READY;
}

static const pl_future_vtable ticker_vt = {"ticker", ticker_poll, NULL};

Test(timer, interval_ticks_every_period_from_its_first_tick)
{
    manual_system m = {.now_ns = 5};
    pl_executor *ex = manual_executor(&m, false, NULL);
    ticker t;
    memset(&t, 0, sizeof t);
    t.base = PL_FUTURE_INIT(&ticker_vt);
    t.iv = pl_interval_make(10 * PL_MS);
    cr_assert_eq(PL_BLOCK_ON(ex, t), 0);
    pl_time expect[] = {5, 5 + 10 * PL_MS, 5 + 20 * PL_MS, 5 + 30 * PL_MS};
    cr_assert_arr_eq(t.at, expect, sizeof expect);
    pl_executor_destroy(ex);
}

typedef struct resetter {
    pl_future base;
    pl_sleep sleep;
    int polls;
} resetter;

static pl_poll_result resetter_poll(pl_future *f, pl_context *cx)
{
    resetter *r = (resetter *)f;
    r->polls++;
    if (r->polls == 2) {
        pl_sleep_reset(&r->sleep, pl_now(cx->ex) - 1);
    }
    if (pl_poll(&r->sleep.base, cx) == PL_READY) {
        return PL_READY;
    }
    if (r->polls == 1) {
        pl_waker_wake_by_ref(&cx->waker);
    }
    return PL_PENDING;
}

static const pl_future_vtable resetter_vt = {"resetter", resetter_poll, NULL};

Test(timer, reset_to_a_past_deadline_completes_at_once)
{
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    resetter r = {PL_FUTURE_INIT(&resetter_vt), pl_sleep_for(PL_S), 0};
    cr_assert_eq(PL_BLOCK_ON(ex, r), 0);
    cr_assert_eq(r.polls, 2);
    cr_assert_eq(m.now_ns, 0, "no time passed");
    pl_executor_destroy(ex);
}

typedef struct aborter {
    pl_future base;
    pl_task *victim;
    size_t timers_before;
} aborter;

static pl_poll_result aborter_poll(pl_future *f, pl_context *cx)
{
    aborter *a = (aborter *)f;
    a->timers_before = pl__executor_timer_count(cx->ex);
    pl_task_cancel(a->victim);
    return PL_READY;
}

static const pl_future_vtable aborter_vt = {"aborter", aborter_poll, NULL};

Test(timer, abort_disarms_the_sleep)
{
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    sleeper s = {PL_FUTURE_INIT(&sleeper_vt), 0, pl_sleep_for(PL_S)};
    pl_task *t;
    PL_SPAWN(ex, s, NULL, &t);
    aborter a = {PL_FUTURE_INIT(&aborter_vt), t, 0};
    pl_task *at;
    PL_SPAWN(ex, a, NULL, &at);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(((aborter *)pl_task_future(at))->timers_before, 1);
    cr_assert(pl_task_is_cancelled(t));
    cr_assert_eq(pl__executor_timer_count(ex), 0);
    cr_assert_eq(m.now_ns, 0, "the clock never jumped to the cancelled deadline");
    pl_task_release(t);
    pl_task_release(at);
    pl_executor_destroy(ex);
}

/* The heap against a sorted-array model: random arms, re-arms and
 * disarms, then firing order must match (deadline, arming order). */
static uint64_t lcg = 42;
static uint32_t rnd(uint32_t n)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((lcg >> 33) % n);
}

static int fired_ids[512];
static int fired_len;

static void rec_wake_by_ref(const pl_waker *w) { fired_ids[fired_len++] = (int)(intptr_t)w->data; }
static void rec_wake(pl_waker w) { rec_wake_by_ref(&w); }
static void rec_clone(const pl_waker *w, pl_waker *out) { *out = *w; }
static void rec_drop(pl_waker w) { (void)w; }
static const pl_waker_vtable rec_vt = {rec_clone, rec_wake, rec_wake_by_ref, rec_drop};

Test(timer, heap_matches_a_sorted_model)
{
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    enum { N = 300 };
    static pl_timer timers[N];
    pl_time deadline[N];
    uint64_t armed_order[N];
    uint64_t seq = 0;
    for (int i = 0; i < N; i++) {
        timers[i] = PL_TIMER_INIT;
        armed_order[i] = 0;
    }
    for (int op = 0; op < 2000; op++) {
        int i = (int)rnd(N);
        if (rnd(4) == 0) {
            pl_timer_disarm(&timers[i]);
            armed_order[i] = 0;
        } else {
            pl_waker w = {&rec_vt, (void *)(intptr_t)i, 0, 0};
            deadline[i] = (pl_time)rnd(50) + 1;
            cr_assert_eq(pl_timer_arm(ex, &timers[i], deadline[i], &w), 0);
            armed_order[i] = ++seq;
        }
    }
    /* Model: sort armed timers by (deadline, arming order). */
    int model[N];
    int model_len = 0;
    for (int i = 0; i < N; i++) {
        if (armed_order[i] != 0) {
            model[model_len++] = i;
        }
    }
    for (int a = 1; a < model_len; a++) {
        for (int b = a; b > 0; b--) {
            int x = model[b - 1], y = model[b];
            bool swap = deadline[x] > deadline[y] ||
                        (deadline[x] == deadline[y] && armed_order[x] > armed_order[y]);
            if (!swap) {
                break;
            }
            model[b - 1] = y;
            model[b] = x;
        }
    }
    cr_assert_eq(pl__executor_timer_count(ex), (size_t)model_len);
    fired_len = 0;
    m.now_ns = 100;
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(fired_len, model_len);
    cr_assert_arr_eq(fired_ids, model, (size_t)model_len * sizeof(int));
    pl_executor_destroy(ex);
}

/* A waker that stops the executor: armed last for a time, it fires after
 * every timer due then, and pl_run returns before the next. */
static pl_executor *stop_ex;
static void stop_wake_by_ref(const pl_waker *w)
{
    (void)w;
    pl_executor_stop(stop_ex);
}
static void stop_wake(pl_waker w) { stop_wake_by_ref(&w); }
static const pl_waker_vtable stop_vt = {rec_clone, stop_wake, stop_wake_by_ref, rec_drop};

/* Sorts the armed timers of `order` (0: not armed) by (deadline, arming
 * order) into model; returns how many. */
static int model_sort(const pl_time *deadline, const uint64_t *order, int n, int *model)
{
    int len = 0;
    for (int i = 0; i < n; i++) {
        if (order[i] != 0) {
            int j = len++;
            while (j > 0 &&
                   (deadline[model[j - 1]] > deadline[i] ||
                    (deadline[model[j - 1]] == deadline[i] && order[model[j - 1]] > order[i]))) {
                model[j] = model[j - 1];
                j--;
            }
            model[j] = i;
        }
    }
    return len;
}

/* Timers sharing fire times form groups (one heap slot, the timers in
 * an array in arming order): rounds of arms, re-arms and disarms over few and many
 * groups (a scan finds a few, a map many, and the map goes when the heap
 * empties), each round firing a prefix that must match the model. */
Test(timer, groups_match_a_sorted_model_as_the_heap_fills_and_empties)
{
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    enum { N = 300 };
    static pl_timer timers[N];
    pl_time deadline[N];
    uint64_t order[N];
    uint64_t seq = 0;
    for (int i = 0; i < N; i++) {
        timers[i] = PL_TIMER_INIT;
        order[i] = 0;
    }
    static const uint32_t spreads[] = {3, 40, 200, 1, 9, 120};
    for (int round = 0; round < 12; round++) {
        uint32_t spread = spreads[round % 6];
        for (int op = 0; op < 400; op++) {
            int i = (int)rnd(round % 3 == 0 ? 20 : N);
            if (rnd(3) == 0) {
                pl_timer_disarm(&timers[i]);
                order[i] = 0;
            } else {
                pl_waker w = {&rec_vt, (void *)(intptr_t)i, 0, 0};
                deadline[i] = m.now_ns + (pl_time)rnd(spread) + 1;
                cr_assert_eq(pl_timer_arm(ex, &timers[i], deadline[i], &w), 0);
                order[i] = ++seq;
            }
        }
        int model[N];
        int len = model_sort(deadline, order, N, model);
        cr_assert_eq(pl__executor_timer_count(ex), (size_t)len);
        /* Fire the first half of the fire times (all, every third round). */
        pl_time until =
            round % 3 == 2 || len == 0 ? m.now_ns + (pl_time)spread + 1 : deadline[model[len / 2]];
        int due = 0;
        while (due < len && deadline[model[due]] <= until) {
            due++;
        }
        fired_len = 0;
        stop_ex = ex;
        pl_timer stopper = PL_TIMER_INIT;
        pl_waker sw = {&stop_vt, NULL, 0, 0};
        cr_assert_eq(pl_timer_arm(ex, &stopper, until, &sw), 0);
        cr_assert_eq(pl_run(ex), PL_ECANCELED);
        cr_assert_eq(m.now_ns, until);
        cr_assert_eq(fired_len, due, "round %d", round);
        cr_assert_arr_eq(fired_ids, model, (size_t)due * sizeof(int), "round %d", round);
        for (int k = 0; k < due; k++) {
            order[model[k]] = 0;
            pl_timer_disarm(&timers[model[k]]);
        }
        cr_assert_eq(pl__executor_timer_count(ex), (size_t)(len - due));
    }
    for (int i = 0; i < N; i++) {
        pl_timer_disarm(&timers[i]);
    }
    cr_assert_eq(pl__executor_timer_count(ex), 0);
    pl_executor_destroy(ex);
}

/* timer.h: a past deadline is clamped to now, so the next deadline never
 * reads as overdue; lateness counts from the clamped time. */
Test(timer, a_past_deadline_is_clamped_to_now)
{
    manual_system m = {.now_ns = 100 * PL_MS};
    pl_executor *ex = manual_executor(&m, false, NULL);
    pl_waker w = pl_waker_noop();
    pl_timer a = PL_TIMER_INIT, b = PL_TIMER_INIT, c = PL_TIMER_INIT;
    cr_assert_eq(pl_timer_arm(ex, &a, 100 * PL_MS, &w), 0);
    cr_assert_eq(pl_timer_arm(ex, &b, 95 * PL_MS, &w), 0);
    cr_assert_eq(pl__executor_next_timer(ex), 100 * PL_MS, "5 ms in the past reads as now");
    pl_timer_disarm(&a);
    cr_assert_eq(pl__executor_next_timer(ex), 100 * PL_MS, "b alone");
    cr_assert_eq(pl_timer_arm(ex, &c, -PL_S, &w), 0);
    pl_timer_disarm(&b);
    cr_assert_eq(pl__executor_next_timer(ex), 100 * PL_MS, "a negative deadline too");
    pl_timer_disarm(&c);
    pl_executor_destroy(ex);
}

Test(timer, lateness_counts_from_the_clamped_deadline)
{
    manual_system m = {.now_ns = 100 * PL_MS};
    uint32_t script[] = {2};
    m.script = script;
    m.script_len = 1;
    pl_executor_options o;
    pl_executor_options_default(&o);
    pl_executor_testing_options to;
    pl_executor_testing_options_default(&to);
    to.timer_late_max = 5;
    to.timer_late_quantum_ns = PL_MS;
    o.testing = &to;
    pl_executor *ex = manual_executor(&m, true, &o);
    pl_waker w = pl_waker_noop();
    pl_timer t = PL_TIMER_INIT;
    cr_assert_eq(pl_timer_arm(ex, &t, 90 * PL_MS, &w), 0);
    cr_assert_eq(pl__executor_next_timer(ex), 102 * PL_MS,
                 "2 quanta after now, not after the past deadline");
    pl_timer_disarm(&t);
    pl_executor_destroy(ex);
}

/* observer.h's clock map: the code running reads a clock twice as fast
 * as the executor's, 1 s ahead. pl_now gives that clock, a timer armed
 * on it waits in executor time until that clock reaches its deadline,
 * and the clamp to now is the executor's now. */
static pl_time double_local(void *ud, pl_time now_ns)
{
    (void)ud;
    return PL_S + 2 * now_ns;
}

static pl_time double_deadline(void *ud, pl_time local_ns)
{
    (void)ud;
    return local_ns == PL_TIME_NEVER ? local_ns : (local_ns - PL_S + 1) / 2;
}

Test(timer, a_clock_map_moves_pl_now_and_deadlines)
{
    done_len = 0;
    manual_system m = {.now_ns = 10 * PL_MS};
    pl_executor *ex = manual_executor(&m, false, NULL);
    static const pl_clock_map map = {double_local, double_deadline, NULL};
    pl__executor_set_clock_map(ex, &map);
    cr_assert_eq(pl_now(ex), PL_S + 20 * PL_MS);
    pl_waker w = pl_waker_noop();
    pl_timer t = PL_TIMER_INIT;
    cr_assert_eq(pl_timer_arm(ex, &t, PL_S + 60 * PL_MS, &w), 0);
    cr_assert_eq(pl__executor_next_timer(ex), 30 * PL_MS, "its clock reads the deadline then");
    cr_assert_eq(pl_timer_arm(ex, &t, PL_S, &w), 0);
    cr_assert_eq(pl__executor_next_timer(ex), 10 * PL_MS, "a past deadline: the executor's now");
    pl_timer_disarm(&t);
    spawn_sleeper(ex, 0, 40 * PL_MS);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(m.now_ns, 30 * PL_MS, "40 ms on a clock twice as fast take 20 ms");
    cr_assert_eq(done_at[0], PL_S + 60 * PL_MS);
    pl__executor_set_clock_map(ex, NULL);
    cr_assert_eq(pl_now(ex), 30 * PL_MS);
    pl_executor_destroy(ex);
}
