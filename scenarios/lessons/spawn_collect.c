/* Lesson: spawn tasks and collect their results through join handles.
 *
 * A collector task spawns four workers; worker i computes i * i. The
 * collector keeps each worker's handle, awaits pl_join on it in spawn
 * order and reads the worker's output out of the finished task. The
 * results are [0, 1, 4, 9] whatever order the workers run in.
 *
 * What it teaches:
 *  - pl_spawn copies a future into the task: the worker's struct is the
 *    task's state, and its plain output fields stay readable through
 *    pl_task_future after the task finished (its future has been dropped).
 *  - A handle is a counted reference: every handle kept is released once
 *    with pl_task_release, or the simulator reports a task leak.
 *  - A pl_join borrows its handle, so it is dropped before the handle is
 *    released.
 */
#include <pollen/sim.h>


enum { WORKERS = 4 };

typedef struct spawn_state {
    int squares[WORKERS]; /* filled by the collector */
    int collected;        /* how many results arrived */
    int error;            /* a spawn or join error, or 0 */
} spawn_state;

/* ---- The worker --------------------------------------------------------- */

typedef struct square {
    pl_future base;
    int i;   /* input */
    int out; /* output: i * i, readable after the task finished */
} square;

static pl_poll_result square_poll(pl_future *f, pl_context *cx)
{
    square *self = (square *)f;
    PL_ASYNC_BEGIN(self);
    /* Give the other tasks a turn before answering, as real work would:
     * the workers then finish in whatever order the scheduler picks. */
    PL_YIELD(cx);
    self->out = self->i * self->i;
    PL_ASYNC_END;
}

/* Nothing to drop: a yield stores no waker anywhere. */
static const pl_future_vtable square_vtable = {"square", square_poll, NULL};

static square square_init(int i)
{
    return (square){.base = PL_FUTURE_INIT(&square_vtable), .i = i};
}

/* ---- The collector ------------------------------------------------------ */

typedef struct collector {
    pl_future base;
    spawn_state *st;
    pl_task *workers[WORKERS]; /* our handles; NULL once released */
    int i;                     /* loop counter: locals do not survive an await */
    pl_join join;
} collector;

static void release_workers(collector *self)
{
    for (int i = 0; i < WORKERS; i++) {
        pl_task_release(self->workers[i]);
        self->workers[i] = NULL;
    }
}

static int spawn_workers(collector *self, pl_executor *ex)
{
    for (int i = 0; i < WORKERS; i++) {
        square w = square_init(i);
        int rc = PL_SPAWN(ex, w, "square", &self->workers[i]);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static pl_poll_result collector_poll(pl_future *f, pl_context *cx)
{
    collector *self = (collector *)f;
    PL_ASYNC_BEGIN(self);
    /* Spawning from inside a poll is allowed: the workers start running
     * after this poll returns. */
    self->st->error = spawn_workers(self, cx->ex);
    if (self->st->error != 0) {
        release_workers(self);
        return PL_READY;
    }
    for (self->i = 0; self->i < WORKERS; self->i++) {
        self->join = pl_join_make(self->workers[self->i]);
        PL_AWAIT(cx, &self->join);
        if (self->join.result != 0) {
            self->st->error = self->join.result; /* PL_ECANCELED */
        } else {
            const square *done = pl_task_future(self->workers[self->i]);
            self->st->squares[self->i] = done->out;
            self->st->collected++;
        }
        /* The join borrows the handle: drop it first, then release. */
        pl_drop(&self->join.base);
        pl_task_release(self->workers[self->i]);
        self->workers[self->i] = NULL;
    }
    PL_ASYNC_END;
}

/* Cancelled halfway (the simulator may cancel tasks): stop waiting, then
 * give back the handles we still hold. */
static void collector_drop(pl_future *f)
{
    collector *self = (collector *)f;
    pl_drop_child(&self->join.base);
    release_workers(self);
}

static const pl_future_vtable collector_vtable = {"collector", collector_poll, collector_drop};

/* ---- The scenario ------------------------------------------------------- */

static int spawn_setup(pl_executor *ex, void *state)
{
    collector c = {.base = PL_FUTURE_INIT(&collector_vtable), .st = state};
    return PL_SPAWN(ex, c, "collector", NULL);
}

static int spawn_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const spawn_state *st = state;
    if (st->error != 0) {
        return pl_check_fail(msg, len, "collector failed: %s", pl_strerror(st->error));
    }
    if (st->collected != WORKERS) {
        return pl_check_fail(msg, len, "collected %d results, want %d", st->collected, WORKERS);
    }
    for (int i = 0; i < WORKERS; i++) {
        if (st->squares[i] != i * i) {
            return pl_check_fail(msg, len, "squares[%d] = %d, want %d", i, st->squares[i], i * i);
        }
    }
    return 0;
}

PL_SCENARIO(spawn_collect_scenario, .name = "spawn_collect",
            .summary = "lesson: 4 workers compute i*i, collected through join handles",
            .state_size = sizeof(spawn_state), .setup = spawn_setup, .check = spawn_check);
