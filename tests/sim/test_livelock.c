/* tests/sim/test_livelock.c: the livelock oracles see through the schedule.
 *
 * A livelock must be the program's, not the strategy's: a task the
 * schedule keeps picking right after it yields, over the task it waits
 * for, is starved by the decisions, and that is no finding. The lessons
 * yield_runtime and join_rotate are such programs (their sources are
 * compiled in); bug_spin_wait is a real busy loop and must still be
 * found. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "leakcheck.h"
#include "pollen/pollen.h"
#include "pollen/sim.h"
#include "sim_internal.h"

static const char *const yielding_lessons[] = {"yield_runtime", "join_rotate"};
enum { YIELDING_LESSONS = sizeof yielding_lessons / sizeof yielding_lessons[0] };

static const pl_scenario *scenario(const char *name)
{
    const pl_scenario *sc = pl_scenario_find(name);
    cr_assert_not_null(sc, "scenario '%s' is not registered", name);
    return sc;
}

static void assert_campaign_clean(const char *name, const pl_sim_options *o, uint64_t lo,
                                  uint64_t hi)
{
    pl_campaign_result r;
    cr_assert_eq(pl_sim_campaign(scenario(name),
                                 &(pl_campaign_options){
                                     .seed_lo = lo, .seed_hi = hi, .sim = o, .stop_at_first = true},
                                 &r),
                 0);
    cr_assert_eq(r.findings, 0, "%s: seed %llu: %s: %s", name, (unsigned long long)r.first_seed,
                 pl_finding_name(r.first.kind), r.first.message);
    cr_assert_eq(r.runs, hi - lo + 1);
}

/* Every pick leaves FIFO order: with two runnable tasks the one queued
 * last, the task that just yielded, is picked again and again. */
LEAK_TEST(livelock, yielding_lessons_clean_when_every_pick_leaves_fifo)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = "schedule=65536";
    for (int i = 0; i < YIELDING_LESSONS; i++) {
        assert_campaign_clean(yielding_lessons[i], &o, 0, 199);
    }
}

LEAK_TEST(livelock, yielding_lessons_clean_under_swarm)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.strategy = "swarm";
    for (int i = 0; i < YIELDING_LESSONS; i++) {
        assert_campaign_clean(yielding_lessons[i], &o, 0, 999);
    }
}

/* PCT's priorities starve a task below a yielding one the same way: a
 * run that never ends (the watchdog's 10 s in the CLI) before the bound. */
LEAK_TEST(livelock, yielding_lessons_clean_under_pct)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.strategy = "pct:3";
    for (int i = 0; i < YIELDING_LESSONS; i++) {
        assert_campaign_clean(yielding_lessons[i], &o, 0, 499);
    }
}

/* The runs end: the strategy never passes over the head of the run
 * queue without bound, so the starved task gets its polls. */
LEAK_TEST(livelock, starvation_by_the_schedule_is_bounded)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = "schedule=65536";
    for (int i = 0; i < YIELDING_LESSONS; i++) {
        pl_sim_result r;
        cr_assert_eq(pl_sim_run(scenario(yielding_lessons[i]), &o, &r), 0);
        cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s: %s", yielding_lessons[i],
                     r.finding.message);
        cr_assert_lt(r.steps, 20000, "%s took %llu polls", yielding_lessons[i],
                     (unsigned long long)r.steps);
        pl_sim_result_free(&r);
    }
}

/* A recorded list replays without any strategy hook, so here only the
 * oracles' rule keeps the run clean: 30,000 schedule decisions that each
 * pass over the FIFO head, then production order (past the list's end). */
static void run_deviating_list(const char *name, pl_sim_options *o, pl_sim_result *r)
{
    enum { DEVIATIONS = 30000 };
    pl__dec_record *list = malloc(DEVIATIONS * sizeof *list);
    cr_assert_not_null(list);
    for (size_t i = 0; i < DEVIATIONS; i++) {
        list[i] = (pl__dec_record){PL_DECIDE_SCHEDULE, 2, 1};
    }
    o->source = PL_SIM_SOURCE_LIST_BY_KIND;
    o->decisions = list;
    o->decisions_len = DEVIATIONS;
    cr_assert_eq(pl_sim_run(scenario(name), o, r), 0);
    cr_assert_gt(r->steps, 10000, "%s: the list did not starve anyone", name);
    free(list);
}

LEAK_TEST(livelock, deviated_self_wakes_are_not_a_busy_loop)
{
    for (int i = 0; i < YIELDING_LESSONS; i++) {
        pl_sim_options o;
        pl_sim_options_default(&o);
        pl_sim_result r;
        run_deviating_list(yielding_lessons[i], &o, &r);
        cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s: %s", yielding_lessons[i],
                     r.finding.message);
        pl_sim_result_free(&r);
    }
}

LEAK_TEST(livelock, deviated_polls_are_not_steps_without_progress)
{
    for (int i = 0; i < YIELDING_LESSONS; i++) {
        pl_sim_options o;
        pl_sim_options_default(&o);
        o.steps_without_progress_max = 1000;
        o.self_wakes_max = 1000000;
        pl_sim_result r;
        run_deviating_list(yielding_lessons[i], &o, &r);
        cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s: %s", yielding_lessons[i],
                     r.finding.message);
        pl_sim_result_free(&r);
    }
}

/* The real busy loop: the server spins while the loader sleeps on a
 * timer, alone in the run queue, so FIFO order polls it too. */
static void assert_spin_wait_found(const pl_sim_options *o, uint64_t seeds)
{
    pl_campaign_result r;
    cr_assert_eq(
        pl_sim_campaign(scenario("bug_spin_wait"),
                        &(pl_campaign_options){.seed_lo = 0, .seed_hi = seeds - 1, .sim = o}, &r),
        0);
    cr_assert_eq(r.findings, seeds, "bug_spin_wait: %llu of %llu seeds found it",
                 (unsigned long long)r.findings, (unsigned long long)seeds);
    cr_assert_eq(r.first.kind, PL_FINDING_LIVELOCK, "%s", r.first.message);
}

LEAK_TEST(livelock, spin_wait_found_by_default) { assert_spin_wait_found(NULL, 100); }

LEAK_TEST(livelock, spin_wait_found_under_swarm)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.strategy = "swarm";
    assert_spin_wait_found(&o, 200);
}

LEAK_TEST(livelock, spin_wait_found_when_every_pick_leaves_fifo)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = "schedule=65536";
    assert_spin_wait_found(&o, 50);
}
