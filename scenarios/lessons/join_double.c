/* Lesson: run two futures concurrently inside one task with join2.
 *
 * double_after(x) sleeps 1 ms, then outputs 2 * x. A task builds
 * double_after(10) and double_after(20) and awaits pl_join2 over both:
 * the two sleeps run at the same time, so the task is done after about
 * 1 ms, not 2, and the sum of the outputs is 60.
 *
 * What it teaches:
 *  - A future is a value. Creating one runs nothing (futures are lazy);
 *    its work starts at its first poll.
 *  - Combinators borrow their children: the children live in the
 *    caller's struct, where their outputs stay readable after the join.
 *  - A coroutine's drop drops the children it may be suspended on.
 */
#include <pollen/sim.h>


typedef struct join_state {
    int total;          /* 2 * 10 + 2 * 20 */
    pl_time elapsed_ns; /* from the join's first poll to its completion */
    int done;
} join_state;

/* ---- double_after(x) ---------------------------------------------------- */

typedef struct double_after {
    pl_future base;
    int x;
    int out; /* 2 * x, after READY */
    pl_sleep sleep;
} double_after;

static pl_poll_result double_after_poll(pl_future *f, pl_context *cx)
{
    double_after *self = (double_after *)f;
    PL_ASYNC_BEGIN(self);
    /* pl_sleep_for measures from its first poll, i.e. from here. */
    self->sleep = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->sleep);
    self->out = 2 * self->x;
    PL_ASYNC_END;
}

/* If dropped while sleeping, the sleep's timer still holds our waker. */
static void double_after_drop(pl_future *f) { pl_drop_child(&((double_after *)f)->sleep.base); }

static const pl_future_vtable double_after_vtable = {"double_after", double_after_poll,
                                                     double_after_drop};

static double_after double_after_init(int x)
{
    return (double_after){.base = PL_FUTURE_INIT(&double_after_vtable), .x = x};
}

/* ---- The task that joins them ------------------------------------------- */

typedef struct doubler {
    pl_future base;
    join_state *st;
    pl_time start_ns;
    double_after a;
    double_after b;
    pl_join2 both;
} doubler;

static pl_poll_result doubler_poll(pl_future *f, pl_context *cx)
{
    doubler *self = (doubler *)f;
    PL_ASYNC_BEGIN(self);
    self->start_ns = pl_now(cx->ex);
    /* The children must not move once polled: they live right here, in
     * the task's own struct, and the join points at them. */
    self->a = double_after_init(10);
    self->b = double_after_init(20);
    self->both = pl_join2_make(&self->a.base, &self->b.base);
    PL_AWAIT(cx, &self->both);
    self->st->total = self->a.out + self->b.out;
    self->st->elapsed_ns = pl_now(cx->ex) - self->start_ns;
    self->st->done = 1;
    PL_ASYNC_END;
}

/* The join drops the children it did not finish; finished ones are ours.
 * Drop it first so each child is dropped exactly once. */
static void doubler_drop(pl_future *f)
{
    doubler *self = (doubler *)f;
    pl_drop_child(&self->both.base);
    pl_drop_child(&self->a.base);
    pl_drop_child(&self->b.base);
}

static const pl_future_vtable doubler_vtable = {"doubler", doubler_poll, doubler_drop};

/* ---- The scenario ------------------------------------------------------- */

static int join_setup(pl_executor *ex, void *state)
{
    doubler d = {.base = PL_FUTURE_INIT(&doubler_vtable), .st = state};
    return PL_SPAWN(ex, d, "doubler", NULL);
}

static int join_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const join_state *st = state;
    if (!st->done) {
        return pl_check_fail(msg, len, "the doubler did not finish");
    }
    if (st->total != 60) {
        return pl_check_fail(msg, len, "join2(double(10), double(20)) gave %d, want 60", st->total);
    }
    /* Never early: a sleep completes at or after its deadline. */
    if (st->elapsed_ns < 1 * PL_MS) {
        return pl_check_fail(msg, len, "done after %lld ns, before the 1 ms sleeps ended",
                            (long long)st->elapsed_ns);
    }
    return 0;
}

PL_SCENARIO(join_double_scenario, .name = "join_double",
            .summary = "lesson: join2 of two 1 ms double_after futures gives 60",
            .state_size = sizeof(join_state), .setup = join_setup, .check = join_check);
