/* tests/sim/test_threads.c: simulated threads (pollen/thread.h under the
 * simulator): the primitives, the schedule, and each thread oracle
 * firing on a buggy program and silent on its fixed twin.
 *
 * The scenarios are small programs of their own (PL_SCENARIO), most with
 * no task at all: pl_run returns at once and the threads run to their
 * end after it (threads/sched.c).
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pollen/sim.h>
#include <pollen/thread.h>

#include "child.h"
#include "leakcheck.h"

/* ---- Helpers ------------------------------------------------------------ */

static pl_sim_result run_seed(const pl_scenario *sc, uint64_t seed, const char *strategy)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = seed;
    o.strategy = strategy;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(sc, &o, &r), 0, "%s seed %llu did not run", sc->name,
                 (unsigned long long)seed);
    return r;
}

/* Seeds 0..seeds-1: the first finding's seed (kind in *kind), or -1. */
static int64_t first_finding(const pl_scenario *sc, uint64_t seeds, pl_finding_kind *kind,
                             char *msg, size_t msg_len)
{
    for (uint64_t seed = 0; seed < seeds; seed++) {
        pl_sim_result r = run_seed(sc, seed, NULL);
        if (r.finding.kind != PL_FINDING_NONE) {
            *kind = r.finding.kind;
            snprintf(msg, msg_len, "%s", r.finding.message);
            pl_sim_result_free(&r);
            return (int64_t)seed;
        }
        pl_sim_result_free(&r);
    }
    return -1;
}

static void expect_clean(const pl_scenario *sc, uint64_t seeds)
{
    pl_finding_kind kind = PL_FINDING_NONE;
    char msg[1024] = "";
    int64_t seed = first_finding(sc, seeds, &kind, msg, sizeof msg);
    cr_assert_eq(seed, -1, "%s: %s at seed %lld: %s", sc->name, pl_finding_name(kind),
                 (long long)seed, msg);
}

static void expect_found(const pl_scenario *sc, uint64_t seeds, pl_finding_kind want,
                         const char *needle)
{
    pl_finding_kind kind = PL_FINDING_NONE;
    char msg[1024] = "";
    int64_t seed = first_finding(sc, seeds, &kind, msg, sizeof msg);
    cr_assert_neq(seed, -1, "%s: no finding in %llu seeds", sc->name, (unsigned long long)seeds);
    cr_assert_eq(kind, want, "%s: %s, want %s: %s", sc->name, pl_finding_name(kind),
                 pl_finding_name(want), msg);
    cr_assert(needle == NULL || strstr(msg, needle) != NULL, "%s: '%s' not in: %s", sc->name,
              needle, msg);
}

/* ---- A counter: a race on a plain variable needs a point --------------- */

enum { WORKERS = 3, ROUNDS = 3 };

typedef struct counter_state {
    pl_thread *t[WORKERS];
    pl_thread_mutex lock;
    bool locked;
    int value;
} counter_state;

static void *count_main(void *arg)
{
    counter_state *st = arg;
    for (int i = 0; i < ROUNDS; i++) {
        if (st->locked) {
            pl_thread_mutex_lock(&st->lock);
        }
        int v = st->value;
        PL_SCHED_POINT(); /* the read and the write are two steps */
        st->value = v + 1;
        if (st->locked) {
            pl_thread_mutex_unlock(&st->lock);
        }
    }
    return NULL;
}

static int counter_setup(counter_state *st, bool locked)
{
    st->locked = locked;
    int rc = pl_thread_mutex_init(&st->lock);
    for (int i = 0; i < WORKERS && rc == 0; i++) {
        char name[16];
        snprintf(name, sizeof name, "counter%d", i);
        rc = pl_thread_spawn(&st->t[i], name, count_main, st);
    }
    return rc;
}

static int counter_racy(pl_executor *ex, void *state)
{
    (void)ex;
    return counter_setup(state, false);
}

static int counter_locked(pl_executor *ex, void *state)
{
    (void)ex;
    return counter_setup(state, true);
}

static int counter_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    counter_state *st = state;
    for (int i = 0; i < WORKERS; i++) {
        if (st->t[i] != NULL && pl_thread_join(st->t[i], NULL) != 0) {
            return pl_check_fail(msg, len, "join failed");
        }
        st->t[i] = NULL;
    }
    pl_thread_mutex_finish(&st->lock);
    if (st->value != WORKERS * ROUNDS) {
        return pl_check_fail(msg, len, "counter %d, want %d", st->value, WORKERS * ROUNDS);
    }
    return 0;
}

PL_SCENARIO(counter_racy_sc, .name = "t_thr_counter_racy", .summary = "lost update",
            .state_size = sizeof(counter_state), .setup = counter_racy, .check = counter_check);
PL_SCENARIO(counter_locked_sc, .name = "t_thr_counter_locked", .summary = "locked counter",
            .state_size = sizeof(counter_state), .setup = counter_locked,
            .check = counter_check);

LEAK_TEST(threads, racy_counter_is_found) { expect_found(&counter_racy_sc, 200, PL_FINDING_ASSERTION, "counter"); }

LEAK_TEST(threads, locked_counter_is_clean) { expect_clean(&counter_locked_sc, 500); }

LEAK_TEST(threads, same_seed_same_hash)
{
    for (uint64_t seed = 0; seed < 20; seed++) {
        pl_sim_result a = run_seed(&counter_locked_sc, seed, NULL);
        pl_sim_result b = run_seed(&counter_locked_sc, seed, NULL);
        cr_assert_eq(a.hash, b.hash, "seed %llu: %016llx then %016llx", (unsigned long long)seed,
                     (unsigned long long)a.hash, (unsigned long long)b.hash);
        cr_assert_gt(a.decisions, 0, "threads consult thread_switch decisions");
        pl_sim_result_free(&a);
        pl_sim_result_free(&b);
    }
}

LEAK_TEST(threads, replay_file_reproduces_a_thread_finding)
{
    pl_finding_kind kind;
    char msg[1024];
    int64_t seed = first_finding(&counter_racy_sc, 200, &kind, msg, sizeof msg);
    cr_assert_neq(seed, -1);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = (uint64_t)seed;
    pl_sim_result run;
    cr_assert_eq(pl_sim_run(&counter_racy_sc, &o, &run), 0);
    char path[] = "/tmp/pollen-threads-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(pl_sim_write_replay(&counter_racy_sc, &o, &run, path), 0);
    pl_sim_result replayed;
    char err[512] = "";
    int rc = pl_sim_replay_file(path, &replayed, err, sizeof err);
    unlink(path);
    cr_assert_eq(rc, 0, "replay: %s", err);
    cr_assert_eq(replayed.hash, run.hash);
    cr_assert_eq(replayed.finding.kind, run.finding.kind);
    pl_sim_result_free(&replayed);
    pl_sim_result_free(&run);
}

/* ---- Deadlock: two locks taken in opposite orders ------------------------ */

typedef struct ab_state {
    pl_thread_mutex a, b;
    pl_thread *t1, *t2;
    bool ordered;
} ab_state;

static void *ab_main(void *arg)
{
    ab_state *st = arg;
    pl_thread_mutex_lock(&st->a);
    pl_thread_mutex_lock(&st->b);
    pl_thread_mutex_unlock(&st->b);
    pl_thread_mutex_unlock(&st->a);
    return NULL;
}

static void *ba_main(void *arg)
{
    ab_state *st = arg;
    pl_thread_mutex *first = st->ordered ? &st->a : &st->b;
    pl_thread_mutex *second = st->ordered ? &st->b : &st->a;
    pl_thread_mutex_lock(first);
    pl_thread_mutex_lock(second);
    pl_thread_mutex_unlock(second);
    pl_thread_mutex_unlock(first);
    return NULL;
}

static int ab_setup(ab_state *st, bool ordered)
{
    st->a = (pl_thread_mutex)PL_THREAD_MUTEX_INIT;
    st->b = (pl_thread_mutex)PL_THREAD_MUTEX_INIT;
    st->ordered = ordered;
    int rc = pl_thread_spawn(&st->t1, "ab", ab_main, st);
    return rc != 0 ? rc : pl_thread_spawn(&st->t2, "ba", ba_main, st);
}

static int ab_bad(pl_executor *ex, void *state)
{
    (void)ex;
    return ab_setup(state, false);
}

static int ab_good(pl_executor *ex, void *state)
{
    (void)ex;
    return ab_setup(state, true);
}

static int ab_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    ab_state *st = state;
    if (pl_thread_join(st->t1, NULL) != 0 || pl_thread_join(st->t2, NULL) != 0) {
        return pl_check_fail(msg, len, "join failed");
    }
    return 0;
}

PL_SCENARIO(ab_bad_sc, .name = "t_thr_lock_order", .summary = "AB-BA deadlock",
            .state_size = sizeof(ab_state), .setup = ab_bad, .check = ab_check);
PL_SCENARIO(ab_good_sc, .name = "t_thr_lock_order_ok", .summary = "one lock order",
            .state_size = sizeof(ab_state), .setup = ab_good, .check = ab_check);

LEAK_TEST(threads, lock_order_deadlock_names_threads_and_locks)
{
    pl_finding_kind kind = PL_FINDING_NONE;
    char msg[1024] = "";
    int64_t seed = first_finding(&ab_bad_sc, 500, &kind, msg, sizeof msg);
    cr_assert_neq(seed, -1, "no deadlock in 500 seeds");
    cr_assert_eq(kind, PL_FINDING_DEADLOCK, "%s: %s", pl_finding_name(kind), msg);
    cr_assert(strstr(msg, "thread 'ab' (#1, spawned at test_threads.c:") != NULL, "%s", msg);
    cr_assert(strstr(msg, "thread 'ba' (#2") != NULL, "%s", msg);
    cr_assert(strstr(msg, "blocked on mutex #2") != NULL, "%s", msg);
    cr_assert(strstr(msg, "holding mutex #1") != NULL, "%s", msg);
    cr_assert(strstr(msg, "in ab_main") != NULL, "%s", msg);
    /* The threads raised it: their list is not appended a second time. */
    const char *first = strstr(msg, "thread 'ab' (#1");
    cr_assert(strstr(first + 1, "thread 'ab' (#1") == NULL, "listed twice: %s", msg);
}

LEAK_TEST(threads, one_lock_order_is_clean) { expect_clean(&ab_good_sc, 500); }

LEAK_TEST(threads, lock_order_found_by_bounded_and_pct)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_sim_bounded_result b;
    pl_sim_bounded_limits lim = {.runs_max = 10000};
    cr_assert_eq(pl_sim_explore_bounded(&ab_bad_sc, 2, &lim, &o, &b), 0);
    cr_assert_eq(b.finding.kind, PL_FINDING_DEADLOCK, "bounded:2 found %s",
                 pl_finding_name(b.finding.kind));
    cr_assert_leq(b.deviations, 2);
    pl_sim_result_free(&b.run);
    bool found = false;
    for (uint64_t seed = 0; seed < 200 && !found; seed++) {
        pl_sim_result r = run_seed(&ab_bad_sc, seed, "pct:3");
        found = r.finding.kind == PL_FINDING_DEADLOCK;
        pl_sim_result_free(&r);
    }
    cr_assert(found, "pct:3 found no deadlock in 200 seeds");
}

/* ---- Misuse: unlocking a mutex one does not hold ------------------------- */

typedef struct unlock_state {
    pl_thread_mutex m;
    pl_thread *owner, *other;
    bool bad;
} unlock_state;

static void *owner_main(void *arg)
{
    unlock_state *st = arg;
    pl_thread_mutex_lock(&st->m);
    pl_thread_sleep(1 * PL_MS);
    pl_thread_mutex_unlock(&st->m);
    return NULL;
}

static void *other_main(void *arg)
{
    unlock_state *st = arg;
    if (st->bad) {
        pl_thread_mutex_unlock(&st->m); /* "it must be mine by now" */
    } else {
        pl_thread_mutex_lock(&st->m);
        pl_thread_mutex_unlock(&st->m);
    }
    return NULL;
}

static int unlock_setup(unlock_state *st, bool bad)
{
    st->m = (pl_thread_mutex)PL_THREAD_MUTEX_INIT;
    st->bad = bad;
    int rc = pl_thread_spawn(&st->owner, "owner", owner_main, st);
    return rc != 0 ? rc : pl_thread_spawn(&st->other, "other", other_main, st);
}

static int unlock_bad(pl_executor *ex, void *state)
{
    (void)ex;
    return unlock_setup(state, true);
}

static int unlock_good(pl_executor *ex, void *state)
{
    (void)ex;
    return unlock_setup(state, false);
}

static int unlock_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    unlock_state *st = state;
    if (pl_thread_join(st->owner, NULL) != 0 || pl_thread_join(st->other, NULL) != 0) {
        return pl_check_fail(msg, len, "join failed");
    }
    return 0;
}

PL_SCENARIO(unlock_bad_sc, .name = "t_thr_unlock", .summary = "unlock not held",
            .state_size = sizeof(unlock_state), .setup = unlock_bad, .check = unlock_check);
PL_SCENARIO(unlock_good_sc, .name = "t_thr_unlock_ok", .summary = "lock, then unlock",
            .state_size = sizeof(unlock_state), .setup = unlock_good, .check = unlock_check);

LEAK_TEST(threads, unlocking_a_mutex_not_held_is_a_finding)
{
    expect_found(&unlock_bad_sc, 50, PL_FINDING_ASSERTION,
                 "thread 'other' (#2) unlocks a mutex it does not hold: mutex #1 (held by "
                 "'owner')");
}

LEAK_TEST(threads, lock_then_unlock_is_clean) { expect_clean(&unlock_good_sc, 300); }

/* A finding raised on a simulated thread names that thread: no task was
 * being polled, and the report says which thread it was. */
LEAK_TEST(threads, a_finding_on_a_thread_names_it)
{
    for (uint64_t seed = 0; seed < 50; seed++) {
        pl_sim_result r = run_seed(&unlock_bad_sc, seed, NULL);
        bool found = r.finding.kind != PL_FINDING_NONE;
        if (found) {
            cr_assert_eq(r.finding.task_id, 0u);
            cr_assert_eq(r.finding.thread_id, 2u, "%s", r.finding.message);
            cr_assert_str_eq(r.finding.thread_name, "other");
        }
        pl_sim_result_free(&r);
        if (found) {
            return;
        }
    }
    cr_assert_fail("no finding in 50 seeds");
}

/* ---- Spin-waits: without a yield, a livelock ----------------------------- */

typedef struct spin_state {
    _Atomic int flag;
    pl_thread *spinner;
    bool yield;
    pl_sleep nap;
} spin_state;

static void *spin_main(void *arg)
{
    spin_state *st = arg;
    while (!pl_atomic_load(&st->flag)) {
        if (st->yield) {
            pl_thread_yield();
        }
    }
    return NULL;
}

/* A task sets the flag after 1 ms of virtual time. */
typedef struct setter {
    pl_future base;
    spin_state *st;
} setter;

static pl_poll_result setter_poll(pl_future *f, pl_context *cx)
{
    setter *self = (setter *)f;
    PL_ASYNC_BEGIN(self);
    self->st->nap = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->st->nap);
    pl_atomic_store(&self->st->flag, 1);
    PL_ASYNC_END;
}

static const pl_future_vtable setter_vt = {"setter", setter_poll, NULL};

static int spin_setup(pl_executor *ex, spin_state *st, bool yield)
{
    st->yield = yield;
    setter s = {.base = PL_FUTURE_INIT(&setter_vt), .st = st};
    int rc = PL_SPAWN(ex, s, "setter", NULL);
    return rc != 0 ? rc : pl_thread_spawn(&st->spinner, "spinner", spin_main, st);
}

static int spin_bad(pl_executor *ex, void *state) { return spin_setup(ex, state, false); }
static int spin_good(pl_executor *ex, void *state) { return spin_setup(ex, state, true); }

static int spin_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    spin_state *st = state;
    return pl_thread_join(st->spinner, NULL) == 0 ? 0 : pl_check_fail(msg, len, "join failed");
}

PL_SCENARIO(spin_bad_sc, .name = "t_thr_spin", .summary = "spin without yield",
            .state_size = sizeof(spin_state), .setup = spin_bad, .check = spin_check);
PL_SCENARIO(spin_good_sc, .name = "t_thr_spin_yield", .summary = "spin with yield",
            .state_size = sizeof(spin_state), .setup = spin_good, .check = spin_check);

LEAK_TEST(threads, spin_without_yield_is_a_livelock)
{
    expect_found(&spin_bad_sc, 5, PL_FINDING_LIVELOCK,
                 "thread 'spinner' (#1) spins: 100000 schedule points in a row at "
                 "test_threads.c:");
}

LEAK_TEST(threads, spin_with_yield_is_clean) { expect_clean(&spin_good_sc, 200); }

/* Two threads that yield: the setter yields once before its store while
 * the waiter spins with a yield. Both stand aside at once; the yielded
 * setter must get its turn, or the waiter spins forever (a livelock of
 * the simulation, not of the program). */
typedef struct yield_pair {
    _Atomic int flag;
    pl_thread *setter;
    pl_thread *waiter;
    bool joined;
} yield_pair;

static void *yield_then_store(void *arg)
{
    yield_pair *st = arg;
    pl_thread_yield();
    pl_atomic_store(&st->flag, 1);
    return NULL;
}

static void *yield_until_stored(void *arg)
{
    yield_pair *st = arg;
    while (!pl_atomic_load(&st->flag)) {
        pl_thread_yield();
    }
    return NULL;
}

/* A task joins both threads inside its poll: thread 0 blocks there, so
 * the two yielding threads are all that can run. */
typedef struct joiner {
    pl_future base;
    yield_pair *st;
} joiner;

static pl_poll_result joiner_poll(pl_future *f, pl_context *cx)
{
    (void)cx;
    yield_pair *st = ((joiner *)f)->st;
    int a = pl_thread_join(st->setter, NULL);
    int b = pl_thread_join(st->waiter, NULL);
    st->setter = st->waiter = NULL;
    st->joined = a == 0 && b == 0;
    return PL_READY;
}

static const pl_future_vtable joiner_vt = {"joiner", joiner_poll, NULL};

static int yield_pair_setup(pl_executor *ex, void *state)
{
    yield_pair *st = state;
    int rc = pl_thread_spawn(&st->setter, "setter", yield_then_store, st);
    rc = rc != 0 ? rc : pl_thread_spawn(&st->waiter, "waiter", yield_until_stored, st);
    joiner j = {.base = PL_FUTURE_INIT(&joiner_vt), .st = st};
    return rc != 0 ? rc : PL_SPAWN(ex, j, "joiner", NULL);
}

static int yield_pair_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const yield_pair *st = state;
    return st->joined ? 0 : pl_check_fail(msg, len, "the joins failed");
}

PL_SCENARIO(yield_pair_sc, .name = "t_thr_yield_pair", .summary = "two threads that yield",
            .state_size = sizeof(yield_pair), .setup = yield_pair_setup, .check = yield_pair_check);

LEAK_TEST(threads, two_yielding_threads_take_turns) { expect_clean(&yield_pair_sc, 200); }

/* ---- A task's waker used from another thread ------------------------------ */

typedef struct waker_state {
    pl_waker slot;
    _Atomic int ready;
    _Atomic(pl_remote_waker *) remote;
    pl_thread *t;
    bool remote_path;
} waker_state;

static void *waker_main(void *arg)
{
    waker_state *st = arg;
    while (!pl_atomic_load(&st->ready)) {
        pl_thread_yield();
    }
    pl_atomic_store(&st->ready, 2);
    if (st->remote_path) {
        pl_remote_waker_wake(pl_atomic_exchange(&st->remote, NULL));
    } else {
        pl_waker_slot_wake(&st->slot); /* a task waker, from this thread */
    }
    return NULL;
}

typedef struct waiter {
    pl_future base;
    waker_state *st;
} waiter;

static pl_poll_result waiter_poll(pl_future *f, pl_context *cx)
{
    waker_state *st = ((waiter *)f)->st;
    if (pl_atomic_load(&st->ready) == 2) {
        return PL_READY;
    }
    if (st->remote_path) {
        if (pl_atomic_load(&st->ready) == 0) {
            pl_remote_waker *rw;
            cr_assert_eq(pl_remote_waker_create(cx, &rw), 0);
            pl_atomic_store(&st->remote, rw);
        }
    } else {
        pl_waker_slot_set(&st->slot, &cx->waker);
    }
    pl_atomic_store(&st->ready, 1);
    return PL_PENDING;
}

static void waiter_drop(pl_future *f) { pl_waker_slot_clear(&((waiter *)f)->st->slot); }

static const pl_future_vtable waiter_vt = {"waiter", waiter_poll, waiter_drop};

static int waker_setup(pl_executor *ex, waker_state *st, bool remote_path)
{
    st->remote_path = remote_path;
    waiter w = {.base = PL_FUTURE_INIT(&waiter_vt), .st = st};
    int rc = PL_SPAWN(ex, w, "waiter", NULL);
    return rc != 0 ? rc : pl_thread_spawn(&st->t, "waker", waker_main, st);
}

static int waker_bad(pl_executor *ex, void *state) { return waker_setup(ex, state, false); }
static int waker_good(pl_executor *ex, void *state) { return waker_setup(ex, state, true); }

static int waker_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    waker_state *st = state;
    return pl_thread_join(st->t, NULL) == 0 ? 0 : pl_check_fail(msg, len, "join failed");
}

PL_SCENARIO(waker_bad_sc, .name = "t_thr_task_waker", .summary = "task waker from a thread",
            .state_size = sizeof(waker_state), .setup = waker_bad, .check = waker_check);
PL_SCENARIO(waker_good_sc, .name = "t_thr_remote_waker", .summary = "remote waker",
            .state_size = sizeof(waker_state), .setup = waker_good, .check = waker_check);

LEAK_TEST(threads, task_waker_from_another_thread_is_a_finding)
{
    expect_found(&waker_bad_sc, 20, PL_FINDING_ASSERTION,
                 "thread 'waker' (#1) wakes a task's waker: only the executor's thread");
}

LEAK_TEST(threads, remote_waker_from_another_thread_is_clean) { expect_clean(&waker_good_sc, 300); }

/* ---- Condition variables: a spurious wakeup breaks an `if` --------------- */

enum { QCAP = 2, QITEMS = 6 };

typedef struct queue_state {
    pl_thread_mutex m;
    pl_thread_cond nonempty, nonfull;
    int items[QCAP];
    int len;
    int sum;
    bool use_if;
    pl_thread *producer, *consumer;
} queue_state;

static void *producer_main(void *arg)
{
    queue_state *st = arg;
    for (int i = 1; i <= QITEMS; i++) {
        pl_thread_mutex_lock(&st->m);
        while (st->len == QCAP) {
            pl_thread_cond_wait(&st->nonfull, &st->m);
        }
        st->items[st->len++] = i;
        pl_thread_cond_signal(&st->nonempty);
        pl_thread_mutex_unlock(&st->m);
    }
    return NULL;
}

static void *consumer_main(void *arg)
{
    queue_state *st = arg;
    for (int i = 0; i < QITEMS; i++) {
        pl_thread_mutex_lock(&st->m);
        if (st->use_if) {
            if (st->len == 0) { /* BUG: a wakeup is not a promise */
                pl_thread_cond_wait(&st->nonempty, &st->m);
            }
        } else {
            while (st->len == 0) {
                pl_thread_cond_wait(&st->nonempty, &st->m);
            }
        }
        if (st->len > 0) {
            st->sum += st->items[0];
            st->items[0] = st->items[1];
            st->len--;
        }
        pl_thread_cond_signal(&st->nonfull);
        pl_thread_mutex_unlock(&st->m);
    }
    return NULL;
}

static int queue_setup(queue_state *st, bool use_if)
{
    st->use_if = use_if;
    int rc = pl_thread_mutex_init(&st->m);
    rc = rc != 0 ? rc : pl_thread_cond_init(&st->nonempty);
    rc = rc != 0 ? rc : pl_thread_cond_init(&st->nonfull);
    rc = rc != 0 ? rc : pl_thread_spawn(&st->producer, "producer", producer_main, st);
    return rc != 0 ? rc : pl_thread_spawn(&st->consumer, "consumer", consumer_main, st);
}

static int queue_if(pl_executor *ex, void *state)
{
    (void)ex;
    return queue_setup(state, true);
}

static int queue_while(pl_executor *ex, void *state)
{
    (void)ex;
    return queue_setup(state, false);
}

static int queue_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    queue_state *st = state;
    if (pl_thread_join(st->producer, NULL) != 0 || pl_thread_join(st->consumer, NULL) != 0) {
        return pl_check_fail(msg, len, "join failed");
    }
    pl_thread_cond_finish(&st->nonempty);
    pl_thread_cond_finish(&st->nonfull);
    pl_thread_mutex_finish(&st->m);
    int want = QITEMS * (QITEMS + 1) / 2;
    return st->sum == want ? 0 : pl_check_fail(msg, len, "sum %d, want %d", st->sum, want);
}

PL_SCENARIO(queue_if_sc, .name = "t_thr_cond_if", .summary = "cond wait under an if",
            .state_size = sizeof(queue_state), .setup = queue_if, .check = queue_check);
PL_SCENARIO(queue_while_sc, .name = "t_thr_cond_while", .summary = "cond wait in a loop",
            .state_size = sizeof(queue_state), .setup = queue_while, .check = queue_check);

LEAK_TEST(threads, cond_wait_under_if_breaks_on_a_spurious_wakeup)
{
    expect_found(&queue_if_sc, 2000, PL_FINDING_ASSERTION, "sum");
}

LEAK_TEST(threads, cond_wait_in_a_loop_is_clean) { expect_clean(&queue_while_sc, 1000); }

/* ---- Semaphores, sleeps, timed waits, ids, the static initializer ---------- */

typedef struct misc_state {
    pl_thread_sem sem;
    pl_thread_mutex m;
    pl_thread_cond c;
    pl_thread *sleeper, *poster;
    pl_time slept_at;
    pl_time timed_out_at;
    int timed_rc;
    uint32_t id;
    char name[32];
} misc_state;

static void *sleeper_main(void *arg)
{
    misc_state *st = arg;
    st->id = pl_thread_id();
    snprintf(st->name, sizeof st->name, "%s", pl_thread_name());
    pl_thread_sem_wait(&st->sem);
    pl_thread_sleep(5 * PL_MS);
    st->slept_at = pl_thread_now();
    pl_thread_mutex_lock(&st->m);
    st->timed_rc = pl_thread_cond_wait_until(&st->c, &st->m, pl_thread_now() + 2 * PL_MS);
    st->timed_out_at = pl_thread_now();
    pl_thread_mutex_unlock(&st->m);
    return (void *)(uintptr_t)7;
}

static void *poster_main(void *arg)
{
    misc_state *st = arg;
    pl_thread_sleep(1 * PL_MS);
    pl_thread_sem_post(&st->sem);
    return NULL;
}

static int misc_setup(pl_executor *ex, void *state)
{
    (void)ex;
    misc_state *st = state;
    int rc = pl_thread_sem_init(&st->sem, 0);
    rc = rc != 0 ? rc : pl_thread_mutex_init(&st->m);
    rc = rc != 0 ? rc : pl_thread_cond_init(&st->c);
    rc = rc != 0 ? rc : pl_thread_spawn(&st->sleeper, "sleeper", sleeper_main, st);
    return rc != 0 ? rc : pl_thread_spawn(&st->poster, "poster", poster_main, st);
}

static int misc_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    misc_state *st = state;
    void *ret = NULL;
    if (pl_thread_join(st->sleeper, &ret) != 0 || pl_thread_join(st->poster, NULL) != 0) {
        return pl_check_fail(msg, len, "join failed");
    }
    pl_thread_sem_finish(&st->sem);
    if ((uintptr_t)ret != 7 || st->id != 1 || strcmp(st->name, "sleeper") != 0) {
        return pl_check_fail(msg, len, "ret %p id %u name %s", ret, st->id, st->name);
    }
    /* Spurious wakeups may end the timed wait early, never late. */
    if (st->slept_at != 6 * PL_MS || st->timed_out_at > 8 * PL_MS ||
        (st->timed_rc == PL_ETIMEDOUT) != (st->timed_out_at == 8 * PL_MS)) {
        return pl_check_fail(msg, len, "slept until %lld ns, timed wait %d at %lld ns",
                             (long long)st->slept_at, st->timed_rc,
                             (long long)st->timed_out_at);
    }
    return 0;
}

PL_SCENARIO(misc_sc, .name = "t_thr_misc", .summary = "sem, sleep, timed wait, ids",
            .state_size = sizeof(misc_state), .setup = misc_setup, .check = misc_check);

LEAK_TEST(threads, sem_sleep_and_timed_waits_follow_the_virtual_clock)
{
    expect_clean(&misc_sc, 300);
    pl_sim_result r = run_seed(&misc_sc, 0, NULL);
    cr_assert_eq(r.time_ns, 8 * PL_MS, "the run ends at the timed wait's deadline: %lld",
                 (long long)r.time_ns);
    pl_sim_result_free(&r);
}

static pl_thread_mutex static_lock = PL_THREAD_MUTEX_INIT;

static void *hold_main(void *arg)
{
    (void)arg;
    /* Ends holding it: the run's tables forget it with the run. */
    return pl_thread_mutex_trylock(&static_lock) ? (void *)1 : NULL;
}

typedef struct static_state {
    pl_thread *t;
} static_state;

static int static_setup(pl_executor *ex, void *state)
{
    (void)ex;
    static_state *st = state;
    return pl_thread_spawn(&st->t, "holder", hold_main, st);
}

static int static_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    static_state *st = state;
    void *ret = NULL;
    if (pl_thread_join(st->t, &ret) != 0 || ret != (void *)1) {
        return pl_check_fail(msg, len, "the static mutex was not free at the run's start");
    }
    return 0;
}

PL_SCENARIO(static_sc, .name = "t_thr_static", .summary = "a static mutex in many runs",
            .state_size = sizeof(static_state), .setup = static_setup, .check = static_check);

LEAK_TEST(threads, a_static_mutex_starts_every_run_unlocked) { expect_clean(&static_sc, 20); }

/* ---- Stack overflow: the report names the thread ------------------------- */

static int deep(volatile char *p, int n)
{
    volatile char pad[512];
    pad[0] = (char)n;
    pad[511] = p != NULL ? p[0] : 0;
    return n > 1000000000 ? 0 : deep(pad, n + 1) + pad[511];
}

static void *deep_main(void *arg)
{
    (void)arg;
    return (void *)(intptr_t)deep(NULL, 0);
}

static int deep_setup(pl_executor *ex, void *state)
{
    (void)ex;
    pl_thread **t = state;
    return pl_thread_spawn(t, "recurser", deep_main, NULL);
}

PL_SCENARIO(deep_sc, .name = "t_thr_overflow", .summary = "unbounded recursion",
            .state_size = sizeof(pl_thread *), .setup = deep_setup);

static int overflow_child(void *arg)
{
    (void)arg;
    pl_sim_result r = run_seed(&deep_sc, 0, NULL);
    pl_sim_result_free(&r);
    return 0; /* not reached: the thread overflows */
}

/* Ended threads' stacks are pooled for the next runs (threads/fiber.c):
 * a reused stack keeps its guard page. */
static int overflow_after_reuse_child(void *arg)
{
    (void)arg;
    for (uint64_t seed = 0; seed < 4; seed++) {
        pl_sim_result r = run_seed(&counter_locked_sc, seed, NULL);
        pl_sim_result_free(&r);
    }
    return overflow_child(NULL);
}

static void expect_overflow_report(int (*child)(void *))
{
    child_ran c = child_run(child, NULL, -1);
    cr_assert_neq(c.status, 0, "the child survived");
    cr_assert(strstr(c.err, "stack overflow in simulated thread 'recurser' (#1)") != NULL,
              "stderr: %s", c.err);
    child_ran_free(&c);
}

Test(threads, stack_overflow_names_the_thread) { expect_overflow_report(overflow_child); }

Test(threads, stack_overflow_on_a_reused_stack_names_the_thread)
{
    expect_overflow_report(overflow_after_reuse_child);
}

/* ---- Thread per core: a thread's own executor on the virtual clock -------- */

typedef struct core_state {
    pl_thread *t;
    pl_time done_at;
    int rc;
    pl_sleep nap;
} core_state;

typedef struct napper {
    pl_future base;
    core_state *st;
} napper;

static pl_poll_result napper_poll(pl_future *f, pl_context *cx)
{
    napper *self = (napper *)f;
    PL_ASYNC_BEGIN(self);
    self->st->nap = pl_sleep_for(3 * PL_MS);
    PL_AWAIT(cx, &self->st->nap);
    self->st->done_at = pl_now(cx->ex);
    PL_ASYNC_END;
}

static const pl_future_vtable napper_vt = {"napper", napper_poll, NULL};

static void *core_main(void *arg)
{
    core_state *st = arg;
    pl_executor *ex = NULL;
    st->rc = pl_thread_executor_create(&ex);
    if (st->rc == 0) {
        napper n = {.base = PL_FUTURE_INIT(&napper_vt), .st = st};
        st->rc = PL_SPAWN(ex, n, "napper", NULL);
    }
    if (st->rc == 0) {
        st->rc = pl_run(ex);
    }
    pl_executor_destroy(ex);
    return NULL;
}

static int core_setup(pl_executor *ex, void *state)
{
    (void)ex;
    core_state *st = state;
    return pl_thread_spawn(&st->t, "core1", core_main, st);
}

static int core_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    core_state *st = state;
    if (pl_thread_join(st->t, NULL) != 0 || st->rc != 0) {
        return pl_check_fail(msg, len, "core 1 failed: %d", st->rc);
    }
    /* Its timer may fire late (timer_late is not asked by its executor,
     * but the clock only moves to the earliest deadline). */
    if (st->done_at != 3 * PL_MS) {
        return pl_check_fail(msg, len, "the nap ended at %lld ns", (long long)st->done_at);
    }
    return 0;
}

PL_SCENARIO(core_sc, .name = "t_thr_core", .summary = "a thread's own executor and a timer",
            .state_size = sizeof(core_state), .setup = core_setup, .check = core_check);

LEAK_TEST(threads, a_threads_own_executor_sleeps_on_the_virtual_clock)
{
    expect_clean(&core_sc, 50);
    pl_sim_result r = run_seed(&core_sc, 0, NULL);
    cr_assert_eq(r.time_ns, 3 * PL_MS, "the run ends at the nap's end: %lld",
                 (long long)r.time_ns);
    pl_sim_result_free(&r);
}
