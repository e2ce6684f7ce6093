/* tests/sim/test_run_options.c: the one options -> knobs function and
 * the one replay file -> run options function (run.h), and the
 * comparison of a rerun with its file, which pl_sim_replay_file, `pollen
 * replay` and the shrinker all use. */
#include <criterion/criterion.h>
#include <pollen/sim.h>
#include <stdio.h>
#include <string.h>

#include "decide.h"
#include "knobs_of.h"
#include "leakcheck.h"
#include "replay.h"
#include "run.h"

/* Three tasks ready at once: their order is a schedule decision, so the
 * trace depends on the seed. */
static pl_poll_result quick_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    return PL_READY;
}

static const pl_future_vtable quick_vtable = {"quick", quick_poll, NULL};

static int three_setup(pl_executor *ex, void *state)
{
    (void)state;
    for (int i = 0; i < 3; i++) {
        pl_future q = PL_FUTURE_INIT(&quick_vtable);
        int rc = PL_SPAWN(ex, q, "quick", NULL);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

PL_SCENARIO(run_options_three, .name = "run_options_three", .setup = three_setup);

LEAK_TEST(run_options, knobs_are_the_defaults_then_swarm_then_the_text)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl__dec_knobs k, want;
    cr_assert_eq(pl__sim_knobs_of(&o, &k, NULL, 0), 0);
    pl__dec_knobs_default(&want);
    cr_assert(pl__dec_knobs_equal(&k, &want));

    o.strategy = "swarm";
    o.seed = 7;
    o.knobs = "io_fault=off";
    cr_assert_eq(pl__sim_knobs_of(&o, &k, NULL, 0), 0);
    pl__dec_knobs_default(&want);
    pl__dec_knobs_swarm(&want, 7);
    cr_assert_eq(pl__dec_knobs_parse(&want, "io_fault=off", 12, NULL, 0), 0);
    cr_assert(pl__dec_knobs_equal(&k, &want));

    /* pl_sim_knobs_text says the same knobs. */
    char text[PL_SIM_KNOBS_TEXT_MAX], fmt[PL__DEC_KNOBS_TEXT_MAX];
    cr_assert_eq(pl_sim_knobs_text(&o, text, sizeof text), 0);
    pl__dec_knobs_format(&want, fmt, sizeof fmt);
    cr_assert_str_eq(text, fmt);
}

LEAK_TEST(run_options, bad_strategy_or_knobs_are_refused_with_a_reason)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl__dec_knobs k;
    char err[256] = "";
    o.strategy = "sideways";
    cr_assert_eq(pl__sim_knobs_of(&o, &k, err, sizeof err), PL_EINVAL);
    cr_assert_neq(err[0], '\0');
    o.strategy = "random";
    o.knobs = "no_such_knob=on";
    err[0] = '\0';
    cr_assert_eq(pl__sim_knobs_of(&o, &k, err, sizeof err), PL_EINVAL);
    cr_assert_neq(err[0], '\0');
}

LEAK_TEST(run_options, a_file_with_decisions_reruns_its_list)
{
    pl__replay rp;
    pl__replay_init(&rp);
    pl__dec_record recs[2];
    memset(recs, 0, sizeof recs);
    rp.seed = 42;
    rp.strategy = "swarm";
    rp.poll_cost_ns = 100;
    rp.decisions = recs;
    rp.decisions_len = 2;
    rp.has_knobs = true;
    pl__dec_knobs_default(&rp.knobs);
    pl_sim_options o;
    char knobs[PL__DEC_KNOBS_TEXT_MAX], want[PL__DEC_KNOBS_TEXT_MAX];
    cr_assert_eq(pl__replay_options(&rp, &o, knobs, sizeof knobs), 0);
    cr_assert_eq(o.source, PL_SIM_SOURCE_LIST);
    cr_assert_eq(o.decisions, recs);
    cr_assert_eq(o.decisions_len, 2);
    cr_assert_eq(o.seed, 42);
    cr_assert_eq(o.poll_cost_ns, 100);
    pl__dec_knobs_format(&rp.knobs, want, sizeof want);
    cr_assert_str_eq(o.knobs, want);
    cr_assert_eq(pl__replay_options(&rp, &o, knobs, 4), PL_EINVAL, "knobs cut short");
}

LEAK_TEST(run_options, a_seed_only_file_reruns_its_seed_and_strategy)
{
    pl__replay rp;
    pl__replay_init(&rp);
    rp.seed = 9;
    rp.strategy = "swarm";
    rp.truncated = true;
    pl_sim_options o;
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    cr_assert(pl__replay_seed_only(&rp));
    cr_assert_eq(pl__replay_options(&rp, &o, knobs, sizeof knobs), 0);
    cr_assert_eq(o.source, PL_SIM_SOURCE_SEED);
    cr_assert_eq(o.seed, 9);
    cr_assert_str_eq(o.strategy, "swarm");
    cr_assert_null(o.knobs);
}

/* pl_sim_replay_file runs a seed-only file from its seed: the run it
 * makes is the seed's, not production's order. */
LEAK_TEST(run_options, pl_sim_replay_file_replays_a_seed_only_file_from_its_seed)
{
    const pl_scenario *sc = pl_scenario_find("run_options_three");
    cr_assert_not_null(sc);
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_sim_result prod, r;
    o.source = PL_SIM_SOURCE_LIST; /* no decisions: production's order */
    cr_assert_eq(pl_sim_run(sc, &o, &prod), 0);
    uint64_t seed = 0;
    o.source = PL_SIM_SOURCE_SEED;
    for (;; seed++) {
        cr_assert_lt(seed, 64, "every seed ran in production's order");
        o.seed = seed;
        cr_assert_eq(pl_sim_run(sc, &o, &r), 0);
        if (r.hash != prod.hash) {
            break;
        }
        pl_sim_result_free(&r);
    }
    pl__replay rp;
    pl__replay_init(&rp);
    rp.pollen_version = (char *)PL_VERSION_STRING;
    rp.build = (char *)pl__run_build_id();
    rp.scenario = (char *)sc->name;
    rp.seed = seed;
    rp.strategy = "random";
    rp.truncated = true;
    char path[] = "seed-only.replay";
    cr_assert_eq(pl__replay_write_path(path, &rp), 0);
    pl_sim_result again;
    char err[512] = "";
    cr_assert_eq(pl_sim_replay_file(path, &again, err, sizeof err), 0, "%s", err);
    cr_assert_eq(again.hash, r.hash, "the seed's run, not production's");
    remove(path);
    pl_sim_result_free(&again);
    pl_sim_result_free(&r);
    pl_sim_result_free(&prod);
}

LEAK_TEST(run_options, a_rerun_is_compared_by_finding_hash_and_divergence)
{
    pl__replay rp;
    pl__replay_init(&rp);
    pl__dec_record recs[1];
    memset(recs, 0, sizeof recs);
    rp.decisions = recs;
    rp.decisions_len = 1;
    rp.finding = "assertion";
    rp.has_hash = true;
    rp.hash = 0x1234;
    pl_sim_result r;
    memset(&r, 0, sizeof r);
    char err[512] = "";
    cr_assert_eq(pl__replay_compare(&rp, &r, err, sizeof err), 1);
    cr_assert_str_eq(err, "expected assertion, got no finding");
    r.finding.kind = PL_FINDING_ASSERTION;
    r.hash = 0x1234;
    cr_assert_eq(pl__replay_compare(&rp, &r, err, sizeof err), 0);
    r.hash = 0x4321;
    cr_assert_eq(pl__replay_compare(&rp, &r, err, sizeof err), 1);
    cr_assert_not_null(strstr(err, "expected hash 0000000000001234"), "%s", err);
    r.hash = 0x1234;
    r.diverged = true;
    snprintf(r.divergence, sizeof r.divergence, "decision 3");
    cr_assert_eq(pl__replay_compare(&rp, &r, err, sizeof err), 1);
    cr_assert_str_eq(err, "the run diverged at decision 3");
    /* A seed-only file has no list to diverge from nor a hash to match. */
    rp.decisions_len = 0;
    rp.truncated = true;
    r.diverged = false;
    r.hash = 0x4321;
    cr_assert_eq(pl__replay_compare(&rp, &r, err, sizeof err), 0);
}
