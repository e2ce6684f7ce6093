/* Lesson: a sub-runtime that yields to its host between rounds.
 *
 * A `feeder` task hands jobs to a `runtime` task through a plain inbox
 * (no waker: the runtime polls it), one job per poll, yielding between
 * jobs as code does while it produces. The runtime is a little event
 * loop of its own, as an embedded interpreter's loop run inside one task
 * is: each round it moves new jobs from the inbox to its own run list,
 * takes one step of every local job, and then yields (PL_YIELD) so the
 * host's other tasks get a turn. Each job takes a few steps and adds its
 * value to a total; the runtime ends when the inbox is closed and its
 * run list is empty. The check verifies the total.
 *
 * What it teaches:
 *  - PL_YIELD is a self-wake: the task goes to the back of the run
 *    queue, so in FIFO order every other runnable task gets one poll
 *    between two rounds. A loop that yields between checks of a plain
 *    flag therefore makes progress as long as whoever sets the flag is
 *    runnable (here the feeder is: it yields too).
 *  - The same loop is a busy wait when the flag's setter sleeps (on a
 *    timer, on I/O): nothing else runs, and time only passes when no task
 *    is runnable. That is bug_spin_wait. Wait on something that stores
 *    your waker when the setter can sleep.
 *  - Under the simulator a schedule may pick the runtime again and again
 *    right after it yields, starving the feeder. That is the scheduler's
 *    choice, not the program's: pollen counts a self-wake toward its
 *    busy-loop limit only when the task would also have been polled in
 *    FIFO order, and never lets one runnable task wait at the head of the
 *    queue for more than a bounded number of picks. Run it with
 *    `--knobs schedule=65536`: every pick leaves FIFO order, and it stays
 *    clean.
 */
#include <pollen/sim.h>

enum { JOBS = 40, LOCAL_MAX = 8 };

typedef struct inbox {
    int items[JOBS];
    int len;     /* written so far */
    int taken;   /* read so far */
    bool closed; /* no more jobs */
} inbox;

typedef struct yield_state {
    inbox box;
    long total;
    int rounds; /* runtime rounds, for the check */
} yield_state;

/* ---- The runtime: its own run list, one step per job per round -------- */

typedef struct local_job {
    int value;
    int steps_left;
} local_job;

typedef struct runtime {
    pl_future base;
    yield_state *st;
    local_job jobs[LOCAL_MAX];
    int len;
} runtime;

/* Moves jobs from the inbox while the run list has room. */
static void take_new_jobs(runtime *self)
{
    inbox *box = &self->st->box;
    while (self->len < LOCAL_MAX && box->taken < box->len) {
        int v = box->items[box->taken++];
        self->jobs[self->len++] = (local_job){v, 1 + v % 3};
    }
}

/* One step of every local job; finished jobs leave the list. */
static void run_round(runtime *self)
{
    int kept = 0;
    for (int i = 0; i < self->len; i++) {
        local_job *j = &self->jobs[i];
        if (--j->steps_left == 0) {
            self->st->total += j->value;
        } else {
            self->jobs[kept++] = *j;
        }
    }
    self->len = kept;
    self->st->rounds++;
}

static bool runtime_done(const runtime *self)
{
    const inbox *box = &self->st->box;
    return box->closed && box->taken == box->len && self->len == 0;
}

static pl_poll_result runtime_poll(pl_future *f, pl_context *cx)
{
    runtime *self = (runtime *)f;
    PL_ASYNC_BEGIN(self);
    while (!runtime_done(self)) {
        take_new_jobs(self);
        run_round(self);
        /* The host's other tasks, the feeder among them, run meanwhile. */
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable runtime_vtable = {"runtime", runtime_poll, NULL};

/* ---- The feeder: one job per poll ------------------------------------- */

typedef struct feeder {
    pl_future base;
    yield_state *st;
    int i;
} feeder;

static pl_poll_result feeder_poll(pl_future *f, pl_context *cx)
{
    feeder *self = (feeder *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 1; self->i <= JOBS; self->i++) {
        self->st->box.items[self->st->box.len++] = self->i;
        PL_YIELD(cx);
    }
    self->st->box.closed = true;
    PL_ASYNC_END;
}

static const pl_future_vtable feeder_vtable = {"feeder", feeder_poll, NULL};

/* ---- The scenario ------------------------------------------------------- */

static int yield_setup(pl_executor *ex, void *state)
{
    feeder fd = {.base = PL_FUTURE_INIT(&feeder_vtable), .st = state};
    runtime rt = {.base = PL_FUTURE_INIT(&runtime_vtable), .st = state};
    /* The feeder first: a schedule that always takes the task queued last
     * then keeps picking the runtime, the starvation this lesson is about. */
    int rc = PL_SPAWN(ex, fd, "feeder", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, rt, "runtime", NULL);
}

static int yield_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const yield_state *st = state;
    long want = (long)JOBS * (JOBS + 1) / 2;
    if (st->total != want) {
        return pl_check_fail(msg, len, "total %ld, want %ld", st->total, want);
    }
    if (st->rounds < JOBS / LOCAL_MAX) {
        return pl_check_fail(msg, len, "only %d rounds for %d jobs", st->rounds, JOBS);
    }
    return 0;
}

PL_SCENARIO(yield_runtime_scenario, .name = "yield_runtime",
            .summary = "lesson: a task running its own job loop, yielding between rounds",
            .state_size = sizeof(yield_state), .setup = yield_setup, .check = yield_check);
