/* scenarios/selftest_trace.c: user trace events and a real crash, for
 * the tests of both (tests/sim/test_crash.c, test_user_trace.c); only
 * in the test copies of the `pollen` binary.
 *
 *  - selftest_traced: two tasks, 'alice' and 'bob', each take four
 *    rounds, saying so with PL_TRACE_EVENT; always clean.
 *  - selftest_untraced: the same futures without the trace events: the
 *    same seed must hash the same (the events are log-only).
 *  - selftest_deref: as selftest_traced, but 'bob' reads through a null
 *    pointer in the round where a PL_BUGGIFY site fires, as a wild
 *    pointer in user code would: the run dies with SIGSEGV (or, under
 *    AddressSanitizer, with its report) inside bob's poll.
 */
#include <stdbool.h>
#include <stdio.h>

#include <pollen/sim.h>

enum { ROUNDS = 4 };

typedef struct pinger {
    pl_future base;
    const char *who;
    bool traced;
    bool crashes;         /* reads through `table` when the site fires */
    const int *volatile table; /* NULL: never set up, the bug */
    int round;
    int sum;
} pinger;

static pl_poll_result pinger_poll(pl_future *f, pl_context *cx)
{
    pinger *self = (pinger *)f;
    PL_ASYNC_BEGIN(self);
    for (self->round = 1; self->round <= ROUNDS; self->round++) {
        if (self->traced) {
            PL_TRACE_EVENT(cx, "%s: round %d of %d", self->who, self->round, ROUNDS);
        }
        if (self->crashes && PL_BUGGIFY(cx)) {
            PL_TRACE_EVENT(cx, "%s: reading the peer table", self->who);
            self->sum += self->table[self->round]; /* the null dereference */
        }
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable pinger_vtable = {"pinger", pinger_poll, NULL};

static int spawn_pair(pl_executor *ex, bool traced, bool crashes)
{
    pinger a = {.base = PL_FUTURE_INIT(&pinger_vtable), .who = "alice", .traced = traced};
    pinger b = {.base = PL_FUTURE_INIT(&pinger_vtable), .who = "bob", .traced = traced,
                .crashes = crashes};
    int rc = PL_SPAWN(ex, a, "alice", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, b, "bob", NULL);
}

static int traced_setup(pl_executor *ex, void *state)
{
    (void)state;
    return spawn_pair(ex, true, false);
}

static int untraced_setup(pl_executor *ex, void *state)
{
    (void)state;
    return spawn_pair(ex, false, false);
}

static int deref_setup(pl_executor *ex, void *state)
{
    (void)state;
    return spawn_pair(ex, true, true);
}

PL_SCENARIO(selftest_traced_scenario,
            .name = "selftest_traced",
            .summary = "self-test: two tasks say what they do with PL_TRACE_EVENT (clean)",
            .setup = traced_setup);

PL_SCENARIO(selftest_untraced_scenario,
            .name = "selftest_untraced",
            .summary = "self-test: selftest_traced without its trace events (clean)",
            .setup = untraced_setup);

PL_SCENARIO(selftest_deref_scenario,
            .name = "selftest_deref",
            .summary = "self-test: 'bob' reads through a null pointer when a PL_BUGGIFY fires",
            .setup = deref_setup,
            .expect = "crash");
