/* tests/sim/cli_selftests.c: the harness's scenarios that test_campaign.c
 * runs too, in-process and through pl_main, to compare the two: a
 * scenario that differs from one run to the next, a pl_sometimes
 * that is never true, and a premise that seldom holds. Extra scenarios (not registered), so each binary
 * lists them itself. */
#include <stdio.h>

#include <pollen/sim.h>

#include "cli_selftests.h"

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

const pl_scenario selftest_nondet = {
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

const pl_scenario selftest_sometimes = {
    .name = "selftest_sometimes",
    .summary = "CLI self-test: a pl_sometimes that is never true",
    .setup = sometimes_setup,
    .expect = "assertion",
};

/* ---- selftest_premise (extra): a premise that holds in one seed of four ---
 * Setup prints a draw in 0..3 and spawns a task whose premise is that it
 * was 0 (pl_assume). When it was not, the run is discarded: the task then
 * parks with no waker kept, an orphan if a discarded run were judged. */

bool selftest_premise_quiet;

typedef struct premise {
    pl_future base;
    uint64_t draw;
} premise;

static pl_poll_result premise_poll(pl_future *f, pl_context *cx)
{
    (void)cx;
    premise *self = (premise *)f;
    pl_assume(self->draw == 0);
    return self->draw == 0 ? PL_READY : PL_PENDING;
}

static const pl_future_vtable premise_vtable = {"premise", premise_poll, NULL};

static int premise_setup(pl_executor *ex, void *state)
{
    (void)state;
    premise p = {.base = PL_FUTURE_INIT(&premise_vtable), .draw = pl_random_below(4)};
    if (!selftest_premise_quiet) {
        printf("premise: drew %u\n", (unsigned)p.draw);
    }
    return PL_SPAWN(ex, p, "premise", NULL);
}

const pl_scenario selftest_premise = {
    .name = "selftest_premise",
    .summary = "CLI self-test: a premise (pl_assume) that holds in one seed of four",
    .setup = premise_setup,
};
