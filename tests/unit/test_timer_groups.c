/* Timer groups (core/src/timer.c, internal.h): the memory the group of
 * one fire time holds while timers leave it and after it fired, and an
 * arming that finds no memory. Measured through the executor's allocator
 * hook. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include <pollen/executor.h>
#include <pollen/observer.h>
#include <pollen/testing.h>
#include <pollen/timer.h>

#include "leakcheck.h"
#include "manual_system.h"

TestSuite(timer_groups, .fini = pl_test_leak_check);

/* Keeps the executor's live and peak bytes; fails every allocation while
 * `fail` is set. */
typedef struct counter {
    long long live;
    long long peak;
    bool fail;
    unsigned failed;
} counter;

static void *count_alloc(void *ud, void *ptr, size_t old_size, size_t new_size)
{
    counter *c = ud;
    if (new_size == 0) {
        if (ptr != NULL) {
            c->live -= (long long)old_size;
            free(ptr);
        }
        return NULL;
    }
    if (c->fail) {
        c->failed++;
        return NULL;
    }
    void *p = realloc(ptr, new_size);
    if (p != NULL) {
        c->live += (long long)new_size - (long long)old_size;
        c->peak = c->live > c->peak ? c->live : c->peak;
    }
    return p;
}

static pl_executor *counted_executor(manual_system *m, bool deciding, counter *c,
                                     pl_executor_testing_options *to)
{
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.alloc = count_alloc;
    o.alloc_ud = c;
    o.testing = to;
    return manual_executor(m, deciding, &o);
}

/* Wakers that record their number, in firing order. */
static int fired[2048];
static int fired_len;

static void rec_wake_by_ref(const pl_waker *w) { fired[fired_len++] = (int)(intptr_t)w->data; }
static void rec_wake(pl_waker w) { rec_wake_by_ref(&w); }
static void rec_clone(const pl_waker *w, pl_waker *out) { *out = *w; }
static void rec_drop(pl_waker w) { (void)w; }
static const pl_waker_vtable rec_vt = {rec_clone, rec_wake, rec_wake_by_ref, rec_drop};

static pl_waker rec(int id) { return (pl_waker){&rec_vt, (void *)(intptr_t)id, 0, 0}; }

/* Every re-arm to the same fire time leaves a hole where the timer was:
 * the group's array compacts them away rather than growing by one slot
 * per re-arm, and the timer that stayed still fires first. */
LEAK_TEST(timer_groups, a_group_that_timers_leave_compacts_instead_of_growing)
{
    manual_system m = {0};
    counter c = {0};
    pl_executor *ex = counted_executor(&m, false, &c, NULL);
    cr_assert_not_null(ex);
    pl_timer stay = PL_TIMER_INIT, moving = PL_TIMER_INIT;
    pl_waker w1 = rec(1), w2 = rec(2);
    cr_assert_eq(pl_timer_arm(ex, &stay, 10 * PL_MS, &w1), 0);
    cr_assert_eq(pl_timer_arm(ex, &moving, 10 * PL_MS, &w2), 0);
    long long base = c.live;
    c.peak = c.live;
    for (int i = 0; i < 100000; i++) {
        cr_assert_eq(pl_timer_arm(ex, &moving, 10 * PL_MS, &w2), 0);
    }
    cr_assert_lt(c.peak - base, 1024, "%lld bytes for two armed timers", c.peak - base);
    cr_assert_eq(pl__executor_timer_count(ex), 2);
    fired_len = 0;
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(fired_len, 2);
    cr_assert_eq(fired[0], 1, "the timer armed first fires first");
    cr_assert_eq(fired[1], 2);
    pl_executor_destroy(ex);
    cr_assert_eq(c.live, 0);
}

/* A thousand timers of one fire time grow their group's array; once they
 * fired, the array goes back to the allocator instead of staying with
 * the free group. */
LEAK_TEST(timer_groups, a_fired_group_gives_back_a_large_array)
{
    enum { N = 1000 };
    static pl_timer t[N];
    manual_system m = {0};
    counter c = {0};
    pl_executor *ex = counted_executor(&m, false, &c, NULL);
    cr_assert_not_null(ex);
    for (int i = 0; i < N; i++) {
        t[i] = PL_TIMER_INIT;
    }
    pl_waker w0 = rec(0);
    cr_assert_eq(pl_timer_arm(ex, &t[0], 5 * PL_MS, &w0), 0);
    long long base = c.live;
    for (int i = 1; i < N; i++) {
        pl_waker w = rec(i);
        cr_assert_eq(pl_timer_arm(ex, &t[i], 5 * PL_MS, &w), 0);
    }
    cr_assert_geq(c.live - base, (long long)(N * sizeof(pl_timer *)) / 2, "the array grew");
    fired_len = 0;
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(fired_len, N);
    for (int i = 0; i < N; i++) {
        cr_assert_eq(fired[i], i, "timer %d fired at place %d", fired[i], i);
    }
    cr_assert_leq(c.live - base, 0, "%lld bytes kept after the group fired", c.live - base);
    pl_executor_destroy(ex);
    cr_assert_eq(c.live, 0);
}

/* The fire time is known only after the lateness decision, so an arming
 * must never need memory after it: a group whose array filled up and
 * could not grow makes the next arming fail before it decides anything
 * (PL_ENOMEM, nothing changed), and succeed once memory is back. */
LEAK_TEST(timer_groups, an_arming_needs_no_memory_after_its_lateness_decision)
{
    manual_system m = {0};
    counter c = {0};
    pl_executor_testing_options to;
    pl_executor_testing_options_default(&to);
    to.timer_late_max = 3;
    to.timer_late_quantum_ns = PL_MS;
    pl_executor *ex = counted_executor(&m, true, &c, &to);
    cr_assert_not_null(ex);
    pl_timer t[5];
    pl_waker w[5];
    for (int i = 0; i < 5; i++) {
        t[i] = PL_TIMER_INIT;
        w[i] = rec(i);
    }
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pl_timer_arm(ex, &t[i], 10 * PL_MS, &w[i]), 0);
    }
    /* The fourth fills the group's array (2, then 4 slots) and the
     * array cannot grow: the arming itself still succeeds. */
    c.fail = true;
    cr_assert_eq(pl_timer_arm(ex, &t[3], 10 * PL_MS, &w[3]), 0);
    cr_assert_geq(c.failed, 1, "the full array asked for memory at once");
    cr_assert_eq(m.kinds[PL_DECIDE_TIMER_LATE], 4);
    cr_assert_eq(pl_timer_arm(ex, &t[4], 10 * PL_MS, &w[4]), PL_ENOMEM);
    cr_assert_eq(m.kinds[PL_DECIDE_TIMER_LATE], 4, "no decision drawn for a failed arming");
    cr_assert(!pl_timer_is_armed(&t[4]));
    cr_assert_eq(pl__executor_timer_count(ex), 4);
    c.fail = false;
    cr_assert_eq(pl_timer_arm(ex, &t[4], 10 * PL_MS, &w[4]), 0);
    cr_assert_eq(m.kinds[PL_DECIDE_TIMER_LATE], 5);
    fired_len = 0;
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(fired_len, 5);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(fired[i], i, "timer %d fired at place %d", fired[i], i);
    }
    pl_executor_destroy(ex);
    cr_assert_eq(c.live, 0);
}

/* A timer leaving from the middle of its group or from its head: the
 * next one to fire is the first left in arming order, and the peeks the
 * simulator reads skip the holes. */
LEAK_TEST(timer_groups, holes_in_a_group_keep_the_arming_order)
{
    enum { N = 9 };
    manual_system m = {0};
    counter c = {0};
    pl_executor *ex = counted_executor(&m, false, &c, NULL);
    cr_assert_not_null(ex);
    pl_timer t[N];
    for (int i = 0; i < N; i++) {
        pl_waker w = rec(i);
        t[i] = PL_TIMER_INIT;
        cr_assert_eq(pl_timer_arm(ex, &t[i], 3 * PL_MS, &w), 0);
    }
    static const int leave[] = {0, 4, 1, 8};
    for (size_t k = 0; k < sizeof leave / sizeof *leave; k++) {
        pl_timer_disarm(&t[leave[k]]);
    }
    uint32_t ids[N];
    cr_assert_eq(pl__executor_timer_task_ids(ex, ids, N), N - 4, "holes are not timers");
    cr_assert_eq(pl__executor_timer_count(ex), N - 4);
    fired_len = 0;
    cr_assert_eq(pl_run(ex), 0);
    static const int want[] = {2, 3, 5, 6, 7};
    cr_assert_eq(fired_len, 5);
    cr_assert_arr_eq(fired, want, sizeof want);
    pl_executor_destroy(ex);
    cr_assert_eq(c.live, 0);
}
