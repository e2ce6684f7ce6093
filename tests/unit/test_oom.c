/* Out of memory in core: the executor under an allocator hook whose N-th
 * allocation fails, for every N up to a workload's allocation count (as
 * libuv's loop OOM tests and SQLite's malloc countdown do), and the
 * failure paths that once spun, bypassed the hook or ignored an error.
 *
 * The workload creates an executor, spawns tasks that sleep on
 * equal-deadline timers (a batch larger than the first batch buffer),
 * send over an mpsc channel, take a mutex and a semaphore, wait on a
 * notify, a oneshot and a timeout, and are joined; then runs and
 * destroys it. Every failure must come back as PL_ENOMEM to whoever
 * asked, the run must still finish, and everything must be freed. The
 * binary also links with --wrap for malloc, calloc, realloc
 * (tests/failalloc.h) and pthread_mutex_init, to see allocations that
 * bypass the hook and to fail the executor's lock. Every N is tried:
 * the workload makes under a hundred allocations. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <pollen/executor.h>
#include <pollen/sync.h>
#include <pollen/timer.h>

#include "failalloc.h"
#include "leakcheck.h"
#include "manual_system.h"

TestSuite(oom, .fini = pl_test_leak_check, .timeout = 120);

/* ---- The allocator hook ------------------------------------------------ */

/* Counts allocations, fails the fail_at-th (and with `persistent` every
 * later one), and keeps the balance of what is live, from the sizes the
 * executor passes back on free: both must be 0 after destroy. */
typedef struct hook {
    uint64_t calls;
    uint64_t fail_at;
    bool persistent;
    uint64_t failed;
    uint64_t failed_max; /* more failed calls than this: a retry loop that spins */
    long live_blocks;
    long long live_bytes;
} hook;

static void *hook_alloc(void *ud, void *ptr, size_t old_size, size_t new_size)
{
    hook *h = ud;
    if (new_size == 0) {
        if (ptr != NULL) {
            h->live_blocks--;
            h->live_bytes -= (long long)old_size;
            free(ptr);
        }
        return NULL;
    }
    uint64_t n = ++h->calls;
    if (h->fail_at != 0 && (n == h->fail_at || (h->persistent && n > h->fail_at))) {
        h->failed++;
        cr_assert_leq(h->failed, h->failed_max,
                      "%llu allocations failed: something retries a failed allocation "
                      "forever",
                      (unsigned long long)h->failed);
        return NULL;
    }
    /* The real realloc: the hook's own memory is not pollen's to count. */
    void *p = __real_realloc(ptr, new_size);
    if (p != NULL) {
        h->live_blocks += ptr == NULL;
        h->live_bytes += (long long)new_size - (long long)old_size;
    }
    return p;
}

static void hook_reset(hook *h, uint64_t fail_at, bool persistent)
{
    *h = (hook){.fail_at = fail_at, .persistent = persistent, .failed_max = 1000};
}

static void assert_all_freed(const hook *h, const char *what, uint64_t n)
{
    cr_assert_eq(h->live_blocks, 0, "%s, allocation %llu failing: %ld block(s) not freed", what,
                 (unsigned long long)n, h->live_blocks);
    cr_assert_eq(h->live_bytes, 0, "%s, allocation %llu failing: %lld byte(s) not freed", what,
                 (unsigned long long)n, h->live_bytes);
}

/* ---- The workload ---------------------------------------------------- */

/* TIES: more than the first timer heap, task table and batch buffer hold. */
enum { TIES = 70, PRODUCERS = 3, ITEMS = 3, LOCKERS = 3 };

/* What the tasks share and report. Reset before every run. */
typedef struct world {
    pl_time t0;
    pl_mpsc ch;
    bool ch_open;
    pl_mutex mu;
    pl_semaphore sem;
    pl_notify note;
    pl_notify never;
    pl_oneshot os;
    int os_value;
    int sleepers, sleeps_done;
    int producers, received, sum;
    int lockers, locked;
    bool waiter, waiter_done;
    bool timed_out;
    int spawn_failed;
    int unexpected; /* an error other than PL_ENOMEM, or a wrong result */
} world;

static world W;

static void expect_enomem(int rc)
{
    if (rc != PL_ENOMEM) {
        W.unexpected++;
    }
}

/* Two rounds of sleeps to deadlines shared by every sleeper. */
typedef struct sleeper {
    pl_future base;
    pl_sleep sleep;
} sleeper;

static pl_poll_result sleeper_poll(pl_future *f, pl_context *cx)
{
    sleeper *self = (sleeper *)f;
    PL_ASYNC_BEGIN(self);
    self->sleep = pl_sleep_until(W.t0 + PL_MS);
    PL_AWAIT(cx, &self->sleep);
    self->sleep = pl_sleep_until(W.t0 + 2 * PL_MS);
    PL_AWAIT(cx, &self->sleep);
    W.sleeps_done++;
    PL_ASYNC_END;
}

static void sleeper_drop(pl_future *f) { pl_drop_child(&((sleeper *)f)->sleep.base); }

static const pl_future_vtable sleeper_vt = {"sleeper", sleeper_poll, sleeper_drop};

/* Sends ITEMS values, then drops its sender. */
typedef struct producer {
    pl_future base;
    int i;
    int item;
    pl_mpsc_send send;
} producer;

static pl_poll_result producer_poll(pl_future *f, pl_context *cx)
{
    producer *self = (producer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 1; self->i <= ITEMS; self->i++) {
        self->item = self->i;
        self->send = pl_mpsc_send_make(&W.ch, &self->item);
        PL_AWAIT(cx, &self->send);
        W.unexpected += self->send.result != 0;
    }
    pl_mpsc_sender_drop(&W.ch);
    PL_ASYNC_END;
}

static void producer_drop(pl_future *f) { pl_drop_child(&((producer *)f)->send.base); }

static const pl_future_vtable producer_vt = {"producer", producer_poll, producer_drop};

/* Holds the mutex across a sleep, then takes the semaphore across a yield. */
typedef struct locker {
    pl_future base;
    pl_mutex_lock lock;
    pl_sleep sleep;
    pl_semaphore_acquire acq;
} locker;

static pl_poll_result locker_poll(pl_future *f, pl_context *cx)
{
    locker *self = (locker *)f;
    PL_ASYNC_BEGIN(self);
    self->lock = pl_mutex_lock_make(&W.mu);
    PL_AWAIT(cx, &self->lock);
    self->sleep = pl_sleep_for(PL_MS);
    PL_AWAIT(cx, &self->sleep);
    pl_mutex_unlock(&W.mu);
    self->acq = pl_semaphore_acquire_make(&W.sem, 1);
    PL_AWAIT(cx, &self->acq);
    PL_YIELD(cx);
    pl_semaphore_release(&W.sem, 1);
    W.locked++;
    PL_ASYNC_END;
}

static void locker_drop(pl_future *f)
{
    locker *self = (locker *)f;
    pl_drop_child(&self->lock.base);
    pl_drop_child(&self->sleep.base);
    pl_drop_child(&self->acq.base);
}

static const pl_future_vtable locker_vt = {"locker", locker_poll, locker_drop};

/* Waits for the notify, then for the oneshot's value; then times out
 * waiting on a notify nobody signals. */
typedef struct waiter {
    pl_future base;
    pl_notified wait;
    pl_oneshot_recv recv;
    pl_notified never;
    pl_timeout timeout;
} waiter;

static pl_poll_result waiter_poll(pl_future *f, pl_context *cx)
{
    waiter *self = (waiter *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = pl_notified_make(&W.note);
    PL_AWAIT(cx, &self->wait);
    self->recv = pl_oneshot_recv_make(&W.os);
    PL_AWAIT(cx, &self->recv);
    W.unexpected += self->recv.result != 0 || W.os_value != 42;
    pl_oneshot_receiver_drop(&W.os);
    self->never = pl_notified_make(&W.never);
    self->timeout = pl_timeout_make(&self->never.base, 3 * PL_MS);
    PL_AWAIT(cx, &self->timeout);
    W.timed_out = self->timeout.result == PL_ETIMEDOUT;
    W.waiter_done = true;
    PL_ASYNC_END;
}

static void waiter_drop(pl_future *f)
{
    waiter *self = (waiter *)f;
    pl_drop_child(&self->wait.base);
    pl_drop_child(&self->recv.base);
    pl_drop_child(&self->timeout.base);
}

static const pl_future_vtable waiter_vt = {"waiter", waiter_poll, waiter_drop};

/* Spawns everything, signals, receives every item, joins the lockers. */
typedef struct root {
    pl_future base;
    pl_task *lockers[LOCKERS];
    int i;
    int item;
    pl_mpsc_recv recv;
    pl_join join;
} root;

static int spawn_counted(pl_executor *ex, const pl_future *fut, size_t size, pl_task **handle)
{
    int rc = pl_spawn(ex, fut, size, NULL, handle);
    if (rc != 0) {
        expect_enomem(rc);
        W.spawn_failed++;
    }
    return rc;
}

static void root_spawn(root *self, pl_executor *ex)
{
    for (int i = 0; i < TIES; i++) {
        sleeper s = {.base = PL_FUTURE_INIT(&sleeper_vt)};
        W.sleepers += spawn_counted(ex, &s.base, sizeof s, NULL) == 0;
    }
    int rc = pl_mpsc_init(&W.ch, ex, sizeof(int), 2);
    W.ch_open = rc == 0;
    if (rc != 0) {
        expect_enomem(rc);
    }
    for (int i = 0; W.ch_open && i < PRODUCERS; i++) {
        producer p = {.base = PL_FUTURE_INIT(&producer_vt)};
        pl_mpsc_sender_clone(&W.ch);
        if (spawn_counted(ex, &p.base, sizeof p, NULL) == 0) {
            W.producers++;
        } else {
            pl_mpsc_sender_drop(&W.ch);
        }
    }
    for (int i = 0; i < LOCKERS; i++) {
        locker l = {.base = PL_FUTURE_INIT(&locker_vt)};
        W.lockers += spawn_counted(ex, &l.base, sizeof l, &self->lockers[i]) == 0;
    }
    waiter w = {.base = PL_FUTURE_INIT(&waiter_vt)};
    W.waiter = spawn_counted(ex, &w.base, sizeof w, NULL) == 0;
}

static pl_poll_result root_poll(pl_future *f, pl_context *cx)
{
    root *self = (root *)f;
    PL_ASYNC_BEGIN(self);
    root_spawn(self, cx->ex);
    pl_notify_one(&W.note);
    W.os_value = 42;
    if (pl_oneshot_send(&W.os, &W.os_value) != 0 && W.waiter) {
        W.unexpected++;
    }
    if (W.ch_open) {
        pl_mpsc_sender_drop(&W.ch);
        for (;;) {
            self->recv = pl_mpsc_recv_make(&W.ch, &self->item);
            PL_AWAIT(cx, &self->recv);
            if (self->recv.result != 0) {
                break;
            }
            W.received++;
            W.sum += self->item;
        }
    }
    for (self->i = 0; self->i < LOCKERS; self->i++) {
        if (self->lockers[self->i] != NULL) {
            self->join = pl_join_make(self->lockers[self->i]);
            PL_AWAIT(cx, &self->join);
            W.unexpected += self->join.result != 0;
            pl_task_release(self->lockers[self->i]);
            self->lockers[self->i] = NULL;
        }
    }
    PL_ASYNC_END;
}

static void root_drop(pl_future *f)
{
    root *self = (root *)f;
    pl_drop_child(&self->recv.base);
    pl_drop_child(&self->join.base);
    for (int i = 0; i < LOCKERS; i++) {
        pl_task_release(self->lockers[i]);
    }
}

static const pl_future_vtable root_vt = {"root", root_poll, root_drop};

static void world_reset(void)
{
    memset(&W, 0, sizeof W);
    pl_mutex_init(&W.mu);
    pl_semaphore_init(&W.sem, 1);
    pl_notify_init(&W.note);
    pl_notify_init(&W.never);
    pl_oneshot_init(&W.os, &W.os_value, sizeof W.os_value);
}

/* What a finished workload must show: whatever failed was PL_ENOMEM, and
 * every task that was spawned did all of its work. */
static void check_world(const char *what, uint64_t n)
{
    cr_assert_eq(W.unexpected, 0, "%s, allocation %llu failing: %d unexpected result(s)", what,
                 (unsigned long long)n, W.unexpected);
    cr_assert_eq(W.sleeps_done, W.sleepers, "%s, allocation %llu failing: %d of %d sleepers woke",
                 what, (unsigned long long)n, W.sleeps_done, W.sleepers);
    cr_assert_eq(W.received, W.producers * ITEMS, "%s, allocation %llu failing: %d items of %d",
                 what, (unsigned long long)n, W.received, W.producers * ITEMS);
    cr_assert_eq(W.sum, W.producers * ITEMS * (ITEMS + 1) / 2);
    cr_assert_eq(W.locked, W.lockers, "%s, allocation %llu failing", what, (unsigned long long)n);
    cr_assert_eq(W.waiter_done, W.waiter, "%s, allocation %llu failing", what,
                 (unsigned long long)n);
    cr_assert_eq(W.timed_out, W.waiter);
}

/* One run of the workload with the n-th allocation failing (0: none):
 * on the manual deciding system (decisions all 0, so equal deadlines go
 * through the batch path), or on the real backend the executor creates
 * through the same hook. Returns the allocations made. */
static uint64_t run_workload(uint64_t n, bool real_backend)
{
    static manual_system m;
    static pl_system manual;
    m = (manual_system){.now_ns = 0};
    manual = (pl_system){&manual_deciding_vtable, &m};
    hook h;
    hook_reset(&h, n, false);
    world_reset();
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.system = real_backend ? NULL : &manual;
    o.alloc = hook_alloc;
    o.alloc_ud = &h;
    const char *what = real_backend ? "real backend" : "deciding system";
    /* Nothing in core may allocate behind the hook. */
    failalloc_arm(0, false);
    pl_executor *ex = NULL;
    int rc = pl_executor_create(&ex, &o);
    if (rc == 0) {
        W.t0 = pl_now(ex);
        root r;
        memset(&r, 0, sizeof r);
        r.base = PL_FUTURE_INIT(&root_vt);
        rc = PL_SPAWN(ex, r, "root", NULL);
        if (rc == 0) {
            cr_assert_eq(pl_run(ex), 0, "%s, allocation %llu failing: pl_run did not finish", what,
                         (unsigned long long)n);
            cr_assert_eq(pl_executor_live_tasks(ex), 0);
            check_world(what, n);
        }
        if (W.ch_open) {
            pl_mpsc_finish(&W.ch);
        }
        pl_executor_destroy(ex);
    }
    uint64_t behind = failalloc_disarm();
    cr_assert_eq(behind, 0, "%s: %llu allocation(s) bypassed the executor's allocator", what,
                 (unsigned long long)behind);
    cr_assert(rc == 0 || rc == PL_ENOMEM, "%s, allocation %llu failing: %s", what,
              (unsigned long long)n, pl_err_name(rc));
    cr_assert(n == 0 || rc == 0 || h.failed == 1);
    cr_assert_leq(h.failed, 1);
    assert_all_freed(&h, what, n);
    return h.calls;
}

static void sweep(bool real_backend)
{
    uint64_t total = run_workload(0, real_backend);
    cr_assert_gt(total, 10, "the workload made only %llu allocations", (unsigned long long)total);
    for (uint64_t n = 1; n <= total; n++) {
        run_workload(n, real_backend);
    }
}

LEAK_TEST(oom, executor_sweep_deciding_system) { sweep(false); }

LEAK_TEST(oom, executor_sweep_real_backend) { sweep(true); }

/* ---- Equal deadlines with no memory for a batch ---------------------- */

static int fired_order[8];
static int fired_len;
static hook *batch_hook;

typedef struct tie {
    pl_future base;
    int tag;
    pl_sleep sleep;
} tie;

static pl_poll_result tie_poll(pl_future *f, pl_context *cx)
{
    tie *self = (tie *)f;
    if (pl_poll(&self->sleep.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    fired_order[fired_len++] = self->tag;
    return PL_READY;
}

static void tie_drop(pl_future *f) { pl_drop_child(&((tie *)f)->sleep.base); }

static const pl_future_vtable tie_vt = {"tie", tie_poll, tie_drop};

/* Polled after the ties armed their timers: from now on every allocation
 * fails, the batch buffer's first one included. */
static pl_poll_result starve_poll(pl_future *f, pl_context *cx)
{
    batch_hook->fail_at = batch_hook->calls + 1;
    batch_hook->persistent = true;
    return PL_READY;
}

static const pl_future_vtable starve_vt = {"starve", starve_poll, NULL};

/* The batch of equal deadlines needs a buffer under a deciding system;
 * when it cannot get one the timers still fire, in production order,
 * instead of pl_run retrying the allocation forever. */
LEAK_TEST(oom, tie_batch_without_memory_fires_in_arming_order)
{
    manual_system m = {.now_ns = 0};
    hook h;
    hook_reset(&h, 0, false);
    batch_hook = &h;
    fired_len = 0;
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.alloc = hook_alloc;
    o.alloc_ud = &h;
    pl_executor *ex = manual_executor(&m, true, &o);
    cr_assert_not_null(ex);
    for (int i = 0; i < 3; i++) {
        tie t = {PL_FUTURE_INIT(&tie_vt), i, pl_sleep_until(5 * PL_MS)};
        cr_assert_eq(PL_SPAWN(ex, t, NULL, NULL), 0);
    }
    pl_future starve = PL_FUTURE_INIT(&starve_vt);
    cr_assert_eq(pl_spawn(ex, &starve, sizeof starve, NULL, NULL), 0);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_geq(h.failed, 1, "the batch buffer was never asked for");
    cr_assert_eq(fired_len, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(fired_order[i], i, "tie %d fired at place %d", fired_order[i], i);
    }
    pl_executor_destroy(ex);
    assert_all_freed(&h, "tie batch", h.fail_at);
}

/* ---- The executor's lock --------------------------------------------- */

static bool mutex_init_fails;

int __real_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a);
int __wrap_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a);

int __wrap_pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
    return mutex_init_fails ? EAGAIN : __real_pthread_mutex_init(m, a);
}

static int open_fds(void)
{
    int n = 0;
    for (int fd = 0; fd < 1024; fd++) {
        n += fcntl(fd, F_GETFD) != -1;
    }
    return n;
}

/* A lock that cannot be made fails the create, which frees what it
 * allocated and closes the backend it opened. */
LEAK_TEST(oom, create_fails_cleanly_when_the_lock_cannot_be_made)
{
    hook h;
    hook_reset(&h, 0, false);
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.alloc = hook_alloc;
    o.alloc_ud = &h;
    int fds = open_fds();
    mutex_init_fails = true;
    pl_executor *ex = NULL;
    int rc = pl_executor_create(&ex, &o);
    mutex_init_fails = false;
    if (rc == 0) {
        pl_executor_destroy(ex);
    }
    cr_assert_eq(rc, PL_EAGAIN, "pl_executor_create returned %s", pl_err_name(rc));
    cr_assert_gt(h.calls, 0);
    assert_all_freed(&h, "lock", 0);
    cr_assert_eq(open_fds(), fds, "the backend's descriptors were not closed");
}

/* The real backend's state comes from the executor's allocator: an
 * executor that owns its backend allocates nothing behind its hook, and a
 * failure of that allocation is the create's PL_ENOMEM. */
LEAK_TEST(oom, owned_backend_allocates_through_the_hook)
{
    hook h;
    hook_reset(&h, 0, false);
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.alloc = hook_alloc;
    o.alloc_ud = &h;
    failalloc_arm(0, false);
    pl_executor *ex = NULL;
    cr_assert_eq(pl_executor_create(&ex, &o), 0);
    uint64_t created = h.calls;
    pl_executor_destroy(ex);
    cr_assert_eq(failalloc_disarm(), 0, "the backend allocated behind the hook");
    assert_all_freed(&h, "backend", 0);
    for (uint64_t n = 1; n <= created; n++) {
        hook_reset(&h, n, false);
        cr_assert_eq(pl_executor_create(&ex, &o), PL_ENOMEM, "allocation %llu of %llu failing",
                     (unsigned long long)n, (unsigned long long)created);
        assert_all_freed(&h, "backend", n);
    }
}
