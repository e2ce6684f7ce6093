/* scenarios/selftest.c: two tiny scenarios that exercise the `pollen`
 * command itself (tests/sim/test_cli.c runs them end to end).
 *
 *  - selftest_clean: one task sleeps 1 ms and finishes. Every seed is
 *    clean, so `pollen run selftest_clean` must exit 0.
 *  - selftest_crash: one task yields a few times and raises SIGSEGV
 *    inside its poll when a PL_BUGGIFY site fires, so only some seeds
 *    crash, after printing a last line without a newline. The worker
 *    running such a seed dies; the CLI must report a crash finding with
 *    its seed, replay file and last output, and go on.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include <pollen/sim.h>

/* ---- selftest_clean ----------------------------------------------------- */

typedef struct sleeper {
    pl_future base;
    bool *done;
    pl_sleep sleep;
} sleeper;

static pl_poll_result sleeper_poll(pl_future *f, pl_context *cx)
{
    sleeper *self = (sleeper *)f;
    PL_ASYNC_BEGIN(self);
    self->sleep = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->sleep);
    *self->done = true;
    PL_ASYNC_END;
}

/* Cancelled while asleep, the sleep's timer still holds our waker. */
static void sleeper_drop(pl_future *f)
{
    pl_future *child = &((sleeper *)f)->sleep.base;
    if (child->vtable != NULL && (child->flags & PL_FUTURE_DROPPED) == 0) {
        pl_drop(child);
    }
}

static const pl_future_vtable sleeper_vtable = {"sleeper", sleeper_poll, sleeper_drop};

static int clean_setup(pl_executor *ex, void *state)
{
    sleeper s = {.base = PL_FUTURE_INIT(&sleeper_vtable), .done = state};
    return PL_SPAWN(ex, s, "sleeper", NULL);
}

static int clean_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    if (!*(bool *)state) {
        snprintf(msg, len, "the sleeper never finished");
        return 1;
    }
    return 0;
}

PL_SCENARIO(selftest_clean_scenario,
            .name = "selftest_clean",
            .summary = "CLI self-test: a task sleeps 1 ms and finishes (always clean)",
            .state_size = sizeof(bool),
            .setup = clean_setup,
            .check = clean_check);

/* ---- selftest_crash ----------------------------------------------------- */

enum { CRASH_YIELDS = 16 };

typedef struct crasher {
    pl_future base;
    int round;
} crasher;

static pl_poll_result crasher_poll(pl_future *f, pl_context *cx)
{
    crasher *self = (crasher *)f;
    PL_ASYNC_BEGIN(self);
    for (self->round = 0; self->round < CRASH_YIELDS; self->round++) {
        if (PL_BUGGIFY(cx)) {
            /* The last words, without a newline: the CLI must keep them. */
            printf("crasher: raising SIGSEGV in round %d", self->round);
            /* What a wild pointer in user code does, without the UB. */
            raise(SIGSEGV);
        }
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable crasher_vtable = {"crasher", crasher_poll, NULL};

static int crash_setup(pl_executor *ex, void *state)
{
    (void)state;
    crasher c = {.base = PL_FUTURE_INIT(&crasher_vtable)};
    return PL_SPAWN(ex, c, "crasher", NULL);
}

PL_SCENARIO(selftest_crash_scenario,
            .name = "selftest_crash",
            .summary = "CLI self-test: raises SIGSEGV inside a poll when a PL_BUGGIFY fires",
            .setup = crash_setup,
            .expect = "crash");
