/* Zoo: a thread pool finishes a job and wakes the task waiting for it
 * through a pl_remote_waker (a lost wakeup between two threads).
 *
 * The primitive: `job`, handed to a worker thread (pollen/thread.h). The
 * worker computes the result, sets `done` and takes the waker the task
 * left in `waiter`, if any, and wakes it. A task awaits the job with
 * job_wait.
 *
 * BUG (bug_pool_done_flag): job_wait checks `done` first and only then
 * creates its remote waker and stores it in `waiter`. When the worker
 * runs between the two (it sets `done`, finds `waiter` empty and wakes no
 * one), the task parks with its waker in a slot nobody will look at
 * again. A single-threaded simulation never puts the worker there; the
 * simulator's thread_switch decision at the task's pl_atomic_load does.
 * Why it is a bug: a check and a registration must be ordered so that
 * whatever the other side does in between is seen: the waker must be
 * where the setter looks before the flag is checked.
 * Finding: lost_wakeup (the probe at quiescence polls the parked task,
 * which sees `done` and completes: it could have run).
 * FIX (fix_pool_done_flag): register first, then check; when the job is
 * already done, take the waker back (or leave it to the worker, which
 * took it and will wake a finished task: harmless) and complete.
 */
#include <stdatomic.h>

#include <pollen/thread.h>

#include "zoo.h"

typedef struct job {
    _Atomic int done;
    _Atomic(pl_remote_waker *) waiter;
    int input;
    int result; /* plain: written before `done`, read after it */
} job;

typedef struct pool_state {
    job job;
    pl_thread *worker;
    int got;
    int spawn_rc;
} pool_state;

static void *worker_main(void *arg)
{
    job *j = arg;
    j->result = j->input * 2;
    pl_atomic_store(&j->done, 1);
    pl_remote_waker *rw = pl_atomic_exchange(&j->waiter, NULL);
    if (rw != NULL) {
        pl_remote_waker_wake(rw);
    }
    return NULL;
}

typedef struct job_wait {
    pl_future base;
    job *job;
} job_wait;

/* Stores a fresh remote waker in the slot (dropping one a spurious poll
 * left there). 0 or PL_ENOMEM. */
static int job_register(job *j, pl_context *cx)
{
    pl_remote_waker *rw;
    if (pl_remote_waker_create(cx, &rw) != 0) {
        return PL_ENOMEM;
    }
    pl_remote_waker *old = pl_atomic_exchange(&j->waiter, rw);
    if (old != NULL) {
        pl_remote_waker_drop(old);
    }
    return 0;
}

static pl_poll_result job_check_then_register(pl_future *f, pl_context *cx)
{
    job *j = ((job_wait *)f)->job;
    if (pl_atomic_load(&j->done)) {
        return PL_READY;
    }
    /* BUG: the worker may finish right here and find no waker. */
    if (job_register(j, cx) != 0) {
        pl_waker_wake_by_ref(&cx->waker); /* try again */
    }
    return PL_PENDING;
}

static pl_poll_result job_register_then_check(pl_future *f, pl_context *cx)
{
    job *j = ((job_wait *)f)->job;
    if (!pl_atomic_load(&j->done) && job_register(j, cx) != 0) {
        pl_waker_wake_by_ref(&cx->waker);
        return PL_PENDING;
    }
    /* FIX: checked after the waker is where the worker looks. */
    if (!pl_atomic_load(&j->done)) {
        return PL_PENDING;
    }
    pl_remote_waker *mine = pl_atomic_exchange(&j->waiter, NULL);
    if (mine != NULL) {
        pl_remote_waker_drop(mine);
    }
    return PL_READY;
}

/* A task dropped while parked takes its waker back. */
static void job_wait_drop(pl_future *f)
{
    job *j = ((job_wait *)f)->job;
    pl_remote_waker *mine = pl_atomic_exchange(&j->waiter, NULL);
    if (mine != NULL) {
        pl_remote_waker_drop(mine);
    }
}

static const pl_future_vtable job_buggy_vt = {"job_wait", job_check_then_register, job_wait_drop};
static const pl_future_vtable job_fixed_vt = {"job_wait", job_register_then_check, job_wait_drop};

/* ---- The client task ----------------------------------------------------- */

typedef struct client {
    pl_future base;
    pool_state *st;
    const pl_future_vtable *wait_vt;
    job_wait wait;
} client;

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *self = (client *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = (job_wait){PL_FUTURE_INIT(self->wait_vt), &self->st->job};
    PL_AWAIT(cx, &self->wait);
    self->st->got = self->st->job.result;
    PL_ASYNC_END;
}

static void client_drop(pl_future *f) { pl_drop_child(&((client *)f)->wait.base); }

static const pl_future_vtable client_vt = {"client", client_poll, client_drop};

/* ---- Scenario -------------------------------------------------------------- */

static int setup(pl_executor *ex, pool_state *st, const pl_future_vtable *wait_vt)
{
    st->job.input = 21;
    client c = {.base = PL_FUTURE_INIT(&client_vt), .st = st, .wait_vt = wait_vt};
    int rc = PL_SPAWN(ex, c, "client", NULL);
    if (rc != 0) {
        return rc;
    }
    return pl_thread_spawn(&st->worker, "worker", worker_main, &st->job);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, &job_buggy_vt); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, &job_fixed_vt); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    pool_state *st = state;
    void *ret = NULL;
    if (st->worker != NULL && pl_thread_join(st->worker, &ret) != 0) {
        return pl_check_fail(msg, len, "joining the worker failed");
    }
    st->worker = NULL;
    if (st->got != 42) {
        return pl_check_fail(msg, len, "the client got %d, want 42", st->got);
    }
    return 0;
}

PL_SCENARIO(bug_pool_done_flag_sc, .name = "bug_pool_done_flag",
            .summary = "task checks a worker thread's done flag, then registers its remote "
                       "waker (lost wakeup)",
            .state_size = sizeof(pool_state), .setup = setup_buggy, .check = check,
            .expect = "lost_wakeup");

PL_SCENARIO(fix_pool_done_flag_sc, .name = "fix_pool_done_flag",
            .summary = "task registers its remote waker, then checks the worker's done flag",
            .state_size = sizeof(pool_state), .setup = setup_fixed, .check = check);
