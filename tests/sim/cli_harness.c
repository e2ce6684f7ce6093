/* tests/sim/cli_harness.c: a user's own harness binary, as README.md
 * describes it: pl_main over the registered scenarios plus extra ones
 * passed as an argument. test_cli.c runs it to reach the paths the
 * `pollen` binary's scenarios never take: a hang inside a poll, a
 * nondeterministic scenario, a pl_sometimes that is never true, and an
 * ordinary finding with a full replay file.
 */
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include <pollen/sim.h>

/* ---- selftest_assert (registered): check() fails on some seeds -------- */

typedef struct flipper {
    pl_future base;
    bool *fired;
    int round;
} flipper;

static pl_poll_result flipper_poll(pl_future *f, pl_context *cx)
{
    flipper *self = (flipper *)f;
    PL_ASYNC_BEGIN(self);
    for (self->round = 0; self->round < 8; self->round++) {
        *self->fired = *self->fired || PL_BUGGIFY(cx);
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable flipper_vtable = {"flipper", flipper_poll, NULL};

static int assert_setup(pl_executor *ex, void *state)
{
    flipper fl = {.base = PL_FUTURE_INIT(&flipper_vtable), .fired = state};
    return PL_SPAWN(ex, fl, "flipper", NULL);
}

static int assert_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    if (*(bool *)state) {
        snprintf(msg, len, "a buggify site fired");
        return 1;
    }
    return 0;
}

PL_SCENARIO(selftest_assert_scenario,
            .name = "selftest_assert",
            .summary = "CLI self-test: check() fails when a PL_BUGGIFY fired",
            .state_size = sizeof(bool),
            .setup = assert_setup,
            .check = assert_check,
            .expect = "assertion");

/* ---- selftest_hang (extra): a poll that never returns ------------------- */

typedef struct hanger {
    pl_future base;
} hanger;

/* Volatile: the compiler may not prove the loop endless. */
static volatile bool hang_forever = true;

static pl_poll_result hanger_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    while (hang_forever) {
        sleep(1);
    }
    return PL_PENDING;
}

static const pl_future_vtable hanger_vtable = {"hanger", hanger_poll, NULL};

static int hang_setup(pl_executor *ex, void *state)
{
    (void)state;
    hanger h = {.base = PL_FUTURE_INIT(&hanger_vtable)};
    return PL_SPAWN(ex, h, "hanger", NULL);
}

static const pl_scenario selftest_hang = {
    .name = "selftest_hang",
    .summary = "CLI self-test: a poll that never returns (the watchdog's case)",
    .setup = hang_setup,
    .expect = "livelock",
};

/* The same hang, registered: the shrinker finds its scenarios by name in
 * the registry, so a shrink of a hang that sleeps needs one. */
PL_SCENARIO(selftest_sleep_hang_sc, .name = "selftest_sleep_hang",
            .summary = "CLI self-test: a poll that sleeps forever (the shrink's watchdog)",
            .setup = hang_setup, .expect = "livelock");

/* ---- selftest_nondet (extra): differs from one run to the next ---------- */

typedef struct napper {
    pl_future base;
    pl_sleep sleep;
} napper;

static pl_poll_result napper_poll(pl_future *f, pl_context *cx)
{
    napper *self = (napper *)f;
    PL_ASYNC_BEGIN(self);
    PL_AWAIT(cx, &self->sleep);
    PL_ASYNC_END;
}

static const pl_future_vtable napper_vtable = {"napper", napper_poll, NULL};

/* State outside the simulation, the classic source of nondeterminism:
 * every run of the process sleeps a different time. */
static int runs_so_far;

static int nondet_setup(pl_executor *ex, void *state)
{
    (void)state;
    runs_so_far++;
    napper n = {.base = PL_FUTURE_INIT(&napper_vtable),
                .sleep = pl_sleep_for(runs_so_far * PL_MS)};
    return PL_SPAWN(ex, n, "napper", NULL);
}

static const pl_scenario selftest_nondet = {
    .name = "selftest_nondet",
    .summary = "CLI self-test: reads state outside the simulation",
    .setup = nondet_setup,
    .expect = "nondeterminism",
};

/* ---- selftest_sometimes (extra): a property never true ------------------ */

typedef struct seldom {
    pl_future base;
} seldom;

static pl_poll_result seldom_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    pl_sometimes(false, "the impossible happens");
    return PL_READY;
}

static const pl_future_vtable seldom_vtable = {"seldom", seldom_poll, NULL};

static int sometimes_setup(pl_executor *ex, void *state)
{
    (void)state;
    seldom s = {.base = PL_FUTURE_INIT(&seldom_vtable)};
    return PL_SPAWN(ex, s, "seldom", NULL);
}

static const pl_scenario selftest_sometimes = {
    .name = "selftest_sometimes",
    .summary = "CLI self-test: a pl_sometimes that is never true",
    .setup = sometimes_setup,
    .expect = "assertion",
};

int main(int argc, char **argv)
{
    static const pl_scenario *const extra[] = {&selftest_hang, &selftest_nondet,
                                               &selftest_sometimes, NULL};
    return pl_main(argc, argv, extra);
}
