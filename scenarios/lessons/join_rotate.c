/* Lesson: a join that rotates its branches, as tokio's join! does.
 *
 * A `client` task sends three requests to a `worker` task and awaits all
 * three replies with join_rotate, a join of N children that starts each
 * poll at the next child in turn, so no branch is always polled first.
 * A request puts its job in a shared table and then checks its reply
 * slot between yields; the worker serves one job per poll and yields
 * between jobs. The check verifies every reply.
 *
 * What it teaches:
 *  - A combinator polls its children inside one task: a child that
 *    yields wakes the whole task, so the join returns PENDING and is
 *    polled again after the other runnable tasks had their turn.
 *  - Rotating the start is fairness inside the task: with a fixed order
 *    the first child would always see the world before the others.
 *    Under rotation each child is polled first every N-th poll (the
 *    check counts it in `firsts`).
 *  - A child that yields while it waits for another task is a busy wait
 *    only if that task can sleep; here the worker is runnable until every
 *    job is served. A schedule that keeps picking the client right after
 *    it yields starves the worker, and that is the schedule's doing:
 *    pollen does not report it as the program's livelock (try
 *    `--knobs schedule=65536`).
 */
#include <pollen/sim.h>

enum { REQUESTS = 3, SERVE_STEPS = 4 };

typedef struct job_table {
    int arg[REQUESTS];
    bool submitted[REQUESTS];
    bool answered[REQUESTS];
    int reply[REQUESTS];
    int submitted_count;
} job_table;

typedef struct rotate_state {
    job_table jobs;
    int replies[REQUESTS];
    int firsts[REQUESTS]; /* polls in which child i was polled first */
    int done;
} rotate_state;

/* ---- join_rotate: a join of N borrowed children ------------------------- */

typedef struct join_rotate {
    pl_future base;
    pl_future *const *children;
    size_t n;
    size_t start; /* the child polled first at the next poll */
    int *firsts;  /* per child, how often it came first; may be NULL */
} join_rotate;

static pl_poll_result join_rotate_poll(pl_future *f, pl_context *cx)
{
    join_rotate *self = (join_rotate *)f;
    size_t pending = 0;
    size_t first = self->start;
    self->start = (self->start + 1) % self->n;
    if (self->firsts != NULL) {
        self->firsts[first]++;
    }
    for (size_t k = 0; k < self->n; k++) {
        pl_future *child = self->children[(first + k) % self->n];
        if (!pl_future_is_done(child) && pl_poll(child, cx) == PL_PENDING) {
            pending++;
        }
    }
    return pending == 0 ? PL_READY : PL_PENDING;
}

/* A child that finished belongs to the caller; the rest are dropped. */
static void join_rotate_drop(pl_future *f)
{
    join_rotate *self = (join_rotate *)f;
    for (size_t i = 0; i < self->n; i++) {
        if (!pl_future_is_done(self->children[i])) {
            pl_drop_child(self->children[i]);
        }
    }
}

static const pl_future_vtable join_rotate_vtable = {"join_rotate", join_rotate_poll,
                                                    join_rotate_drop};

static join_rotate join_rotate_init(pl_future *const *children, size_t n, int *firsts)
{
    return (join_rotate){PL_FUTURE_INIT(&join_rotate_vtable), children, n, 0, firsts};
}

/* ---- A request: submit, then check the reply between yields ------------ */

typedef struct request {
    pl_future base;
    job_table *jobs;
    int slot;
    int out;
} request;

static pl_poll_result request_poll(pl_future *f, pl_context *cx)
{
    request *self = (request *)f;
    job_table *jobs = self->jobs;
    PL_ASYNC_BEGIN(self);
    jobs->arg[self->slot] = 10 * (self->slot + 1);
    jobs->submitted[self->slot] = true;
    jobs->submitted_count++;
    while (!jobs->answered[self->slot]) {
        PL_YIELD(cx);
    }
    self->out = jobs->reply[self->slot];
    PL_ASYNC_END;
}

static const pl_future_vtable request_vtable = {"request", request_poll, NULL};

/* ---- The client task ---------------------------------------------------- */

typedef struct client {
    pl_future base;
    rotate_state *st;
    request req[REQUESTS];
    pl_future *children[REQUESTS];
    join_rotate all;
} client;

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *self = (client *)f;
    PL_ASYNC_BEGIN(self);
    for (int i = 0; i < REQUESTS; i++) {
        self->req[i] = (request){PL_FUTURE_INIT(&request_vtable), &self->st->jobs, i, 0};
        self->children[i] = &self->req[i].base;
    }
    self->all = join_rotate_init(self->children, REQUESTS, self->st->firsts);
    PL_AWAIT(cx, &self->all);
    for (int i = 0; i < REQUESTS; i++) {
        self->st->replies[i] = self->req[i].out;
    }
    self->st->done = 1;
    PL_ASYNC_END;
}

static void client_drop(pl_future *f) { pl_drop_child(&((client *)f)->all.base); }

static const pl_future_vtable client_vtable = {"client", client_poll, client_drop};

/* ---- The worker: a few polls per job, one job at a time ----------------- */

typedef struct worker {
    pl_future base;
    job_table *jobs;
    int served;
    int slot;
    int step;
} worker;

static int next_submitted(const job_table *jobs)
{
    for (int i = 0; i < REQUESTS; i++) {
        if (jobs->submitted[i] && !jobs->answered[i]) {
            return i;
        }
    }
    return -1;
}

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *self = (worker *)f;
    PL_ASYNC_BEGIN(self);
    while (self->served < REQUESTS) {
        self->slot = next_submitted(self->jobs);
        if (self->slot < 0) {
            PL_YIELD(cx); /* nothing submitted yet: the client has not run */
            continue;
        }
        for (self->step = 0; self->step < SERVE_STEPS; self->step++) {
            PL_YIELD(cx); /* the work of one job, in slices */
        }
        self->jobs->reply[self->slot] = self->jobs->arg[self->slot] + 1;
        self->jobs->answered[self->slot] = true;
        self->served++;
    }
    PL_ASYNC_END;
}

static const pl_future_vtable worker_vtable = {"worker", worker_poll, NULL};

/* ---- The scenario ------------------------------------------------------- */

static int rotate_setup(pl_executor *ex, void *state)
{
    rotate_state *st = state;
    worker w = {.base = PL_FUTURE_INIT(&worker_vtable), .jobs = &st->jobs};
    client c = {.base = PL_FUTURE_INIT(&client_vtable), .st = st};
    /* The worker first, so a schedule that always takes the task queued
     * last keeps picking the client. */
    int rc = PL_SPAWN(ex, w, "worker", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, c, "client", NULL);
}

static int rotate_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const rotate_state *st = state;
    if (!st->done) {
        return pl_check_fail(msg, len, "the client did not finish");
    }
    for (int i = 0; i < REQUESTS; i++) {
        if (st->replies[i] != 10 * (i + 1) + 1) {
            return pl_check_fail(msg, len, "reply %d is %d, want %d", i, st->replies[i],
                                 10 * (i + 1) + 1);
        }
    }
    /* Round robin: no child came first more than once more than another. */
    for (int i = 1; i < REQUESTS; i++) {
        if (st->firsts[i] > st->firsts[0] || st->firsts[i] < st->firsts[0] - 1) {
            return pl_check_fail(msg, len, "child %d came first %d times, child 0 %d times", i,
                                 st->firsts[i], st->firsts[0]);
        }
    }
    return 0;
}

PL_SCENARIO(join_rotate_scenario, .name = "join_rotate",
            .summary = "lesson: a join polling its children from a rotating start",
            .state_size = sizeof(rotate_state), .setup = rotate_setup, .check = rotate_check);
