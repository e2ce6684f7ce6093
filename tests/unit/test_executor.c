/* Executor semantics: spawn, wake rules, join, abort, drop, block_on,
 * scheduling decisions and waker rotation. */
#include <criterion/criterion.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include <pollen/executor.h>
#include <pollen/testing.h>
#include <pollen/observer.h>

#include "leakcheck.h"
#include "manual_system.h"

TestSuite(executor, .fini = pl_test_leak_check);

/* ---- Test futures ----------------------------------------------------- */

static int order[64];
static int order_len;
static int drops;

/* Completes after `yields` self-wakes, logging its tag at every poll. */
typedef struct yielder {
    pl_future base;
    int tag;
    int yields;
    int polls;
} yielder;

static pl_poll_result yielder_poll(pl_future *f, pl_context *cx)
{
    yielder *y = (yielder *)f;
    y->polls++;
    if (order_len < 64) {
        order[order_len++] = y->tag;
    }
    if (y->yields-- > 0) {
        pl_waker_wake_by_ref(&cx->waker);
        return PL_PENDING;
    }
    return PL_READY;
}

static void count_drop(pl_future *f)
{
    (void)f;
    drops++;
}

static const pl_future_vtable yielder_vt = {"yielder", yielder_poll, count_drop};

static yielder make_yielder(int tag, int yields)
{
    return (yielder){PL_FUTURE_INIT(&yielder_vt), tag, yields, 0};
}

/* Parks storing its waker in a shared slot until `*flag` is set. */
typedef struct parker {
    pl_future base;
    pl_waker *slot;
    bool *flag;
    int polls;
} parker;

static pl_poll_result parker_poll(pl_future *f, pl_context *cx)
{
    parker *p = (parker *)f;
    p->polls++;
    if (*p->flag) {
        return PL_READY;
    }
    pl_waker_slot_set(p->slot, &cx->waker);
    return PL_PENDING;
}

static const pl_future_vtable parker_vt = {"parker", parker_poll, count_drop};

static void reset(void)
{
    order_len = 0;
    drops = 0;
}

/* ---- Tests ------------------------------------------------------------ */

Test(executor, runs_tasks_fifo_to_completion)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    cr_assert_not_null(ex);
    for (int i = 0; i < 3; i++) {
        yielder y = make_yielder(i, 1);
        cr_assert_eq(PL_SPAWN(ex, y, NULL, NULL), 0);
    }
    cr_assert_eq(pl_executor_live_tasks(ex), 3);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(pl_executor_live_tasks(ex), 0);
    int expect[] = {0, 1, 2, 0, 1, 2};
    cr_assert_eq(order_len, 6);
    cr_assert_arr_eq(order, expect, sizeof expect);
    cr_assert_eq(drops, 3, "each detached task's future is dropped once");
    pl_executor_destroy(ex);
}

Test(executor, wake_dedupes_and_finished_wake_is_noop)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    pl_waker slot = PL_WAKER_EMPTY;
    bool flag = false;
    parker p = {PL_FUTURE_INIT(&parker_vt), &slot, &flag, 0};
    pl_task *t;
    cr_assert_eq(PL_SPAWN(ex, p, "parker", &t), 0);
    cr_assert_eq(pl_run(ex), PL_EDEADLK, "parked with nothing to wake it");
    parker *pp = pl_task_future(t);
    cr_assert_eq(pp->polls, 1);
    /* Three wakes before it runs: one poll. */
    pl_waker_wake_by_ref(&slot);
    pl_waker_wake_by_ref(&slot);
    pl_waker_wake_by_ref(&slot);
    cr_assert_eq(pl__executor_runnable_count(ex), 1);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    cr_assert_eq(pp->polls, 2);
    flag = true;
    pl_waker_wake_by_ref(&slot);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert(pl_task_is_finished(t));
    cr_assert_eq(pp->polls, 3);
    /* Waking a finished task does nothing; the clone keeps it allocated. */
    pl_waker_wake_by_ref(&slot);
    cr_assert_eq(pl__executor_runnable_count(ex), 0);
    pl_waker_slot_clear(&slot);
    pl_task_release(t);
    cr_assert_eq(drops, 1);
    pl_executor_destroy(ex);
}

Test(executor, wake_during_own_poll_repolls_after_it)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    yielder a = make_yielder(1, 2);
    yielder b = make_yielder(2, 0);
    PL_SPAWN(ex, a, NULL, NULL);
    PL_SPAWN(ex, b, NULL, NULL);
    cr_assert_eq(pl_run(ex), 0);
    /* a's self-wake queues it behind b, not in front. */
    int expect[] = {1, 2, 1, 1};
    cr_assert_eq(order_len, 4);
    cr_assert_arr_eq(order, expect, sizeof expect);
    pl_executor_destroy(ex);
}

/* Joins a task and records the result. */
typedef struct joiner {
    pl_future base;
    pl_join join;
    int result;
    int output_polls;
} joiner;

static pl_poll_result joiner_poll(pl_future *f, pl_context *cx)
{
    joiner *j = (joiner *)f;
    if (pl_poll(&j->join.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    j->result = j->join.result;
    if (j->result == 0) {
        j->output_polls = ((yielder *)pl_task_future(j->join.task))->polls;
    }
    return PL_READY;
}

static void joiner_drop(pl_future *f)
{
    joiner *j = (joiner *)f;
    pl_drop(&j->join.base);
    pl_task_release(j->join.task);
}

static const pl_future_vtable joiner_vt = {"joiner", joiner_poll, joiner_drop};

Test(executor, join_sees_completion_and_output)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    yielder y = make_yielder(7, 3);
    pl_task *t;
    PL_SPAWN(ex, y, "worker", &t);
    cr_assert_str_eq(pl_task_name(t), "worker");
    joiner j = {PL_FUTURE_INIT(&joiner_vt), pl_join_make(t), -1, 0};
    cr_assert_eq(PL_BLOCK_ON(ex, j), 0);
    cr_assert_eq(j.result, 0);
    cr_assert_eq(j.output_polls, 4);
    cr_assert_eq(drops, 1, "the worker's future was dropped when it completed");
    pl_executor_destroy(ex);
}

Test(executor, abort_drops_once_and_joiner_sees_cancel)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    pl_waker slot = PL_WAKER_EMPTY;
    bool flag = false;
    parker p = {PL_FUTURE_INIT(&parker_vt), &slot, &flag, 0};
    pl_task *t;
    PL_SPAWN(ex, p, NULL, &t);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    pl_task_cancel(t);
    cr_assert(pl_task_is_cancelled(t));
    cr_assert_eq(drops, 1);
    pl_task_cancel(t);
    cr_assert_eq(drops, 1, "abort of a finished task is a no-op");
    joiner j = {PL_FUTURE_INIT(&joiner_vt), pl_join_make(t), -1, 0};
    cr_assert_eq(PL_BLOCK_ON(ex, j), 0);
    cr_assert_eq(j.result, PL_ECANCELED);
    pl_waker_slot_clear(&slot);
    cr_assert_eq(drops, 1, "the joiner released the last handle; nothing dropped twice");
    pl_executor_destroy(ex);
}

Test(executor, abort_while_queued_is_skipped)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    yielder y = make_yielder(1, 0);
    pl_task *t;
    PL_SPAWN(ex, y, NULL, &t);
    pl_task_cancel(t);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(order_len, 0, "never polled");
    cr_assert_eq(drops, 1);
    pl_task_release(t);
    pl_executor_destroy(ex);
}

/* Aborts itself from inside its poll. */
typedef struct self_aborter {
    pl_future base;
    int polls;
} self_aborter;

static pl_poll_result self_aborter_poll(pl_future *f, pl_context *cx)
{
    ((self_aborter *)f)->polls++;
    pl_task_cancel(cx->task);
    pl_waker_wake_by_ref(&cx->waker);
    return PL_PENDING;
}

static const pl_future_vtable self_aborter_vt = {"self_aborter", self_aborter_poll, count_drop};

Test(executor, abort_during_own_poll_is_deferred)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    self_aborter s = {PL_FUTURE_INIT(&self_aborter_vt), 0};
    pl_task *t;
    PL_SPAWN(ex, s, NULL, &t);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(((self_aborter *)pl_task_future(t))->polls, 1);
    cr_assert(pl_task_is_cancelled(t));
    cr_assert_eq(drops, 1);
    pl_task_release(t);
    pl_executor_destroy(ex);
}

Test(executor, destroy_cancels_parked_tasks)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    pl_waker slot = PL_WAKER_EMPTY;
    bool flag = false;
    parker p = {PL_FUTURE_INIT(&parker_vt), &slot, &flag, 0};
    PL_SPAWN(ex, p, NULL, NULL);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    pl_waker_slot_clear(&slot);
    pl_executor_destroy(ex);
    cr_assert_eq(drops, 1);
}

Test(executor, block_on_copies_the_output_back)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    yielder y = make_yielder(3, 5);
    cr_assert_eq(PL_BLOCK_ON(ex, y), 0);
    cr_assert_eq(y.polls, 6);
    cr_assert(pl_future_is_done(&y.base));
    cr_assert_eq(drops, 1, "dropped once, at completion");
    cr_assert(y.base.flags & PL_FUTURE_DROPPED);
    pl_executor_destroy(ex);
}

Test(executor, block_on_reports_deadlock)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    pl_waker slot = PL_WAKER_EMPTY;
    bool flag = false;
    parker p = {PL_FUTURE_INIT(&parker_vt), &slot, &flag, 0};
    cr_assert_eq(PL_BLOCK_ON(ex, p), PL_EDEADLK);
    pl_waker_slot_clear(&slot);
    cr_assert_eq(drops, 1, "the stuck task was cancelled");
    pl_executor_destroy(ex);
}

Test(executor, poll_after_ready_aborts_in_production, .signal = SIGABRT)
{
    yielder y = make_yielder(0, 0);
    pl_context cx = {pl_waker_noop(), NULL, NULL, NULL};
    cr_assert_eq(pl_poll(&y.base, &cx), PL_READY);
    pl_poll(&y.base, &cx);
}

Test(executor, double_drop_aborts_in_production, .signal = SIGABRT)
{
    yielder y = make_yielder(0, 0);
    pl_drop(&y.base);
    pl_drop(&y.base);
}

Test(executor, schedule_decisions_pick_among_runnable)
{
    reset();
    manual_system m = {0};
    uint32_t script[] = {2, 1, 0};
    m.script = script;
    m.script_len = 3;
    pl_executor *ex = manual_executor(&m, true, NULL);
    for (int i = 0; i < 4; i++) {
        yielder y = make_yielder(i, 0);
        PL_SPAWN(ex, y, NULL, NULL);
    }
    cr_assert_eq(pl_run(ex), 0);
    /* Queue 0 1 2 3: pick index 2 -> 2; queue 0 1 3: pick 1 -> 1; then 0, 3. */
    int expect[] = {2, 1, 0, 3};
    cr_assert_arr_eq(order, expect, sizeof expect);
    cr_assert_eq(m.kinds[PL_DECIDE_SCHEDULE], 3, "no decision for a single candidate");
    pl_executor_destroy(ex);
}

static int stale_wakes;
static int scheduled_wakes;

static void count_wake(void *ud, pl_task *t, uint32_t gen, bool by_ref, pl_task *running,
                       pl_wake_outcome outcome)
{
    (void)ud, (void)t, (void)gen, (void)by_ref, (void)running;
    stale_wakes += outcome == PL_WAKE_STALE;
    scheduled_wakes += outcome == PL_WAKE_SCHEDULED;
}

/* Stores a waker on its first poll only, the classic stale-waker bug. */
typedef struct first_poll_only {
    pl_future base;
    pl_waker *slot;
    int polls;
} first_poll_only;

static pl_poll_result first_poll_only_poll(pl_future *f, pl_context *cx)
{
    first_poll_only *s = (first_poll_only *)f;
    if (s->polls++ == 0) {
        *s->slot = pl_waker_clone(&cx->waker);
        pl_waker_wake_by_ref(&cx->waker); /* get polled a second time */
    }
    return PL_PENDING;
}

static const pl_future_vtable first_poll_only_vt = {"first_poll_only", first_poll_only_poll,
                                                    count_drop};

Test(executor, rotation_withholds_wakes_through_superseded_wakers)
{
    reset();
    stale_wakes = scheduled_wakes = 0;
    static const pl_observer obs = {.version = PL_OBSERVER_VERSION, .wake = count_wake};
    manual_system m = {0};
    pl_executor_options o;
    pl_executor_options_default(&o);
    pl_executor_testing_options to;
    pl_executor_testing_options_default(&to);
    to.rotate_wakers = true;
    o.testing = &to;
    o.observer = &obs;
    pl_executor *ex = manual_executor(&m, false, &o);
    pl_waker slot = PL_WAKER_EMPTY;
    first_poll_only s = {PL_FUTURE_INIT(&first_poll_only_vt), &slot, 0};
    pl_task *t;
    PL_SPAWN(ex, s, NULL, &t);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    cr_assert_eq(((first_poll_only *)pl_task_future(t))->polls, 2);
    cr_assert_eq(pl__task_waker_gen(t), 2);
    pl_waker_wake_by_ref(&slot);
    cr_assert_eq(stale_wakes, 1);
    cr_assert_eq(pl__executor_runnable_count(ex), 0, "a stale wake is not delivered");
    pl_waker_slot_clear(&slot);
    pl_task_release(t);
    pl_executor_destroy(ex);
}

/* Creates a remote waker on its first poll and wakes it immediately. */
typedef struct remote_user {
    pl_future base;
    int polls;
} remote_user;

static pl_poll_result remote_user_poll(pl_future *f, pl_context *cx)
{
    remote_user *r = (remote_user *)f;
    if (r->polls++ > 0) {
        return PL_READY;
    }
    pl_remote_waker *rw;
    cr_assert_eq(pl_remote_waker_create(cx, &rw), 0);
    pl_remote_waker_wake(rw);
    return PL_PENDING;
}

static const pl_future_vtable remote_user_vt = {"remote_user", remote_user_poll, NULL};

Test(executor, remote_wake_is_delivered_by_the_system_wait)
{
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    remote_user r = {PL_FUTURE_INIT(&remote_user_vt), 0};
    cr_assert_eq(PL_BLOCK_ON(ex, r), 0);
    cr_assert_eq(r.polls, 2);
    cr_assert(m.waits >= 1);
    pl_executor_destroy(ex);
}

static size_t alloc_budget;

static void *budget_alloc(void *ud, void *ptr, size_t old_size, size_t new_size)
{
    (void)ud, (void)old_size;
    if (new_size == 0) {
        free(ptr);
        return NULL;
    }
    if (alloc_budget == 0) {
        return NULL;
    }
    alloc_budget--;
    return realloc(ptr, new_size);
}

Test(executor, out_of_memory_is_reported_at_every_allocation)
{
    /* Raise the allocation budget until a create+spawn+run succeeds; every
     * failure before that must be PL_ENOMEM and leak nothing. */
    for (size_t budget = 0; budget < 16; budget++) {
        manual_system m = {0};
        pl_executor_options o;
        pl_executor_options_default(&o);
        o.alloc = budget_alloc;
        alloc_budget = budget;
        static pl_system sys;
        sys.vtable = &manual_vtable;
        sys.self = &m;
        o.system = &sys;
        pl_executor *ex = NULL;
        int rc = pl_executor_create(&ex, &o);
        if (rc != 0) {
            cr_assert_eq(rc, PL_ENOMEM);
            continue;
        }
        yielder y = make_yielder(0, 1);
        rc = PL_SPAWN(ex, y, NULL, NULL);
        if (rc != 0) {
            cr_assert_eq(rc, PL_ENOMEM);
            pl_executor_destroy(ex);
            continue;
        }
        cr_assert_eq(pl_run(ex), 0);
        pl_executor_destroy(ex);
        return;
    }
    cr_assert_fail("never succeeded");
}

/* ---- Orphans at the drop, abandoned polls -------------------------------- */

static int orphans;
static uint32_t orphan_id;
static pl_task *orphan_dropper;

static void count_orphan(void *ud, pl_task *t, pl_task *dropper)
{
    (void)ud;
    orphans++;
    orphan_id = pl_task_id(t);
    orphan_dropper = dropper;
}

static const pl_observer orphan_obs = {.version = PL_OBSERVER_VERSION,
                                        .orphaned = count_orphan};

static pl_executor *orphan_executor(manual_system *m)
{
    orphans = 0;
    orphan_id = 0;
    orphan_dropper = NULL;
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.observer = &orphan_obs;
    return manual_executor(m, false, &o);
}

Test(executor, dropping_the_last_clone_of_a_parked_task_is_an_orphan)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = orphan_executor(&m);
    pl_waker slot = PL_WAKER_EMPTY;
    bool flag = false;
    parker p = {PL_FUTURE_INIT(&parker_vt), &slot, &flag, 0};
    pl_task *t;
    PL_SPAWN(ex, p, NULL, &t);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    cr_assert_eq(orphans, 0, "parking with a stored clone is no orphan");
    pl_waker_slot_clear(&slot);
    cr_assert_eq(orphans, 1);
    cr_assert_eq(orphan_id, pl_task_id(t));
    cr_assert_null(orphan_dropper, "dropped outside any poll");
    pl_task_cancel(t);
    cr_assert_eq(orphans, 1);
    pl_task_release(t);
    pl_executor_destroy(ex);
}

Test(executor, a_consuming_wake_is_no_orphan)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = orphan_executor(&m);
    pl_waker slot = PL_WAKER_EMPTY;
    bool flag = false;
    parker p = {PL_FUTURE_INIT(&parker_vt), &slot, &flag, 0};
    PL_SPAWN(ex, p, NULL, NULL);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    flag = true;
    pl_waker_slot_wake(&slot);
    cr_assert_eq(orphans, 0, "the task is scheduled before the clone goes");
    cr_assert_eq(pl_run(ex), 0);
    pl_executor_destroy(ex);
}

/* Keeps its own waker in its own struct and releases it in its drop. */
typedef struct self_keeper {
    pl_future base;
    pl_waker waker;
} self_keeper;

static pl_poll_result self_keeper_poll(pl_future *f, pl_context *cx)
{
    pl_waker_slot_set(&((self_keeper *)f)->waker, &cx->waker);
    return PL_PENDING;
}

static void self_keeper_drop(pl_future *f)
{
    drops++;
    pl_waker_slot_clear(&((self_keeper *)f)->waker);
}

static const pl_future_vtable self_keeper_vt = {"self_keeper", self_keeper_poll,
                                                self_keeper_drop};

Test(executor, a_task_dropping_its_own_clone_when_cancelled_is_no_orphan)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = orphan_executor(&m);
    self_keeper k = {PL_FUTURE_INIT(&self_keeper_vt), PL_WAKER_EMPTY};
    pl_task *t;
    PL_SPAWN(ex, k, NULL, &t);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    pl_task_cancel(t);
    cr_assert_eq(drops, 1);
    cr_assert_eq(orphans, 0);
    pl_task_release(t);
    pl_executor_destroy(ex);
}

/* Leaves its poll the way the simulator leaves a spinning one. */
static jmp_buf spin_escape;

typedef struct escaper {
    pl_future base;
    pl_waker waker;
} escaper;

static pl_poll_result escaper_poll(pl_future *f, pl_context *cx)
{
    pl_waker_slot_set(&((escaper *)f)->waker, &cx->waker);
    longjmp(spin_escape, 1);
}

static void escaper_drop(pl_future *f)
{
    (void)f;
    drops++;
}

static const pl_future_vtable escaper_vt = {"escaper", escaper_poll, escaper_drop};

Test(executor, an_abandoned_poll_is_never_polled_or_dropped_again)
{
    reset();
    manual_system m = {0};
    pl_executor *ex = orphan_executor(&m);
    escaper e = {PL_FUTURE_INIT(&escaper_vt), PL_WAKER_EMPTY};
    pl_task *t;
    PL_SPAWN(ex, e, NULL, &t);
    if (setjmp(spin_escape) == 0) {
        pl_run(ex);
        cr_assert_fail("the poll returned");
    }
    pl__executor_abandon_poll(ex);
    cr_assert_eq(pl_task_polls(t), 1);
    pl_executor_cancel_all(ex);
    cr_assert(pl_task_is_cancelled(t));
    cr_assert_eq(drops, 0, "its drop never runs: its bytes are mid-poll");
    cr_assert_eq(orphans, 0);
    pl_task_release(t);
    /* The clone in its own struct is never dropped: destroy frees the
     * task by force, so nothing leaks. */
    pl_executor_destroy(ex);
}

/* An observer or testing options of another version would be read with
 * the wrong layout: the executor refuses them, as it refuses a system of
 * another version, and allocates nothing. */
Test(executor, create_refuses_observer_and_testing_options_of_another_version)
{
    pl_observer obs = {.version = PL_OBSERVER_VERSION + 1};
    pl_executor_testing_options to;
    pl_executor_testing_options_default(&to);
    manual_system m = {0};
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.system = &(pl_system){&manual_vtable, &m};
    o.observer = &obs;
    pl_executor *ex = NULL;
    cr_assert_eq(pl_executor_create(&ex, &o), PL_EINVAL);
    cr_assert_null(ex);
    obs.version = PL_OBSERVER_VERSION;
    to.version = PL_TESTING_VERSION + 1;
    o.testing = &to;
    cr_assert_eq(pl_executor_create(&ex, &o), PL_EINVAL);
    cr_assert_null(ex);
    to.version = PL_TESTING_VERSION;
    cr_assert_eq(pl_executor_create(&ex, &o), 0);
    pl_executor_destroy(ex);
}

/* ---- Spawn sites --------------------------------------------------------- */

static const char *site_where[4];
static const char *site_func[4];
static int sites;

static void note_site(void *ud, pl_task *t, const char *where, const char *func)
{
    (void)ud;
    (void)t;
    cr_assert_lt(sites, 4);
    site_where[sites] = where;
    site_func[sites++] = func;
}

/* True when `where` is "<dir>/test_executor.c:<line>". */
static bool site_is(const char *where, int line)
{
    char want[64];
    snprintf(want, sizeof want, "test_executor.c:%d", line);
    size_t n = strlen(where), w = strlen(want);
    return n >= w && strcmp(where + n - w, want) == 0;
}

static pl_executor *site_executor(manual_system *m)
{
    reset();
    sites = 0;
    static const pl_observer obs = {.version = PL_OBSERVER_VERSION, .spawn_site = note_site};
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.observer = &obs;
    return manual_executor(m, false, &o);
}

/* pl_spawn and PL_SPAWN hand the observer their call site;
 * pl_spawn_at with NULLs and pl_block_on have none. */
Test(executor, spawns_tell_the_observer_where_they_were_made)
{
    manual_system m = {0};
    pl_executor *ex = site_executor(&m);
    yielder a = make_yielder(1, 0), b = make_yielder(2, 0), c = make_yielder(3, 0);
    int line_a = __LINE__ + 1;
    cr_assert_eq(PL_SPAWN(ex, a, "a", NULL), 0);
    int line_b = __LINE__ + 1;
    cr_assert_eq(pl_spawn(ex, &b.base, sizeof b, "b", NULL), 0);
    cr_assert_eq(pl_spawn_at(ex, &c.base, sizeof c, "c", NULL, NULL, NULL), 0);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(sites, 3);
    cr_assert(site_is(site_where[0], line_a), "%s", site_where[0]);
    cr_assert(site_is(site_where[1], line_b), "%s", site_where[1]);
    cr_assert_str_eq(site_func[0], __func__);
    cr_assert_str_eq(site_func[1], __func__);
    cr_assert_null(site_where[2]);
    cr_assert_null(site_func[2]);
    pl_executor_destroy(ex);
}

/* README's idiom: a helper that spawns on its caller's behalf takes the
 * caller's site and passes it on. */
static int start_yielder_at(pl_executor *ex, yielder *y, const char *where, const char *func)
{
    return pl_spawn_at(ex, &y->base, sizeof *y, "helped", NULL, where, func);
}
#define start_yielder(ex, y) start_yielder_at((ex), (y), PL_WHERE, __func__)

Test(executor, a_spawning_helper_passes_its_callers_site_on)
{
    manual_system m = {0};
    pl_executor *ex = site_executor(&m);
    yielder a = make_yielder(1, 0);
    int line = __LINE__ + 1;
    cr_assert_eq(start_yielder(ex, &a), 0);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(sites, 1);
    cr_assert(site_is(site_where[0], line), "%s", site_where[0]);
    cr_assert_str_eq(site_func[0], __func__);
    pl_executor_destroy(ex);
}
