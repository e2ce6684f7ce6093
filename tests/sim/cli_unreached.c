/* tests/sim/cli_unreached.c: a registered scenario with a pl_sometimes
 * site no run reaches. Alone in its file because sites are attributed to
 * the scenarios written in the same file. */
#include <pollen/sim.h>

static pl_poll_result rare_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    if (cx->ex == NULL) { /* never: a poll always has an executor */
        pl_sometimes(true, "the rare branch runs");
    }
    return PL_READY;
}

static const pl_future_vtable rare_vtable = {"rare", rare_poll, NULL};

static int unreached_setup(pl_executor *ex, void *state)
{
    (void)state;
    pl_future f = PL_FUTURE_INIT(&rare_vtable);
    return PL_SPAWN(ex, f, "rare", NULL);
}

PL_SCENARIO(selftest_unreached, .name = "selftest_unreached",
            .summary = "CLI self-test: a pl_sometimes site no run reaches",
            .setup = unreached_setup, .expect = "assertion");
