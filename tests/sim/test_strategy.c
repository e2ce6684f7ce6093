/* tests/sim/test_strategy.c: strategies (PCT, bounded, swarm) and specs.
 *
 * The scenarios are tiny programs whose bugs need a known number of
 * departures from production order, so each strategy's promise can be
 * checked exactly: bounded:K finds what needs K deviations and proves a
 * correct scenario by exhausting its space; PCT finds a depth-2 bug that
 * needs many deviations. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leakcheck.h"
#include "pollen/pollen.h"
#include "pollen/sim.h"
#include "sim_internal.h"
#include "strategy.h"
#include "run_record.h"

/* ---- Scenarios -------------------------------------------------------- */

typedef struct race_state {
    int flag;
    int order[8];
    int order_len;
    int a_steps;
    int a_at_b1;
} race_state;

typedef void (*step_fn)(race_state *s, int who, int step);

/* A task that takes `steps` polls, yielding between them, and reports
 * each step to `on_step`. */
typedef struct stepper {
    pl_future base;
    race_state *s;
    step_fn on_step;
    int who;
    int steps;
    int step;
} stepper;

static pl_poll_result stepper_poll(pl_future *self, pl_context *cx)
{
    stepper *t = (stepper *)self;
    t->step++;
    t->on_step(t->s, t->who, t->step);
    if (t->step < t->steps) {
        pl_waker_wake_by_ref(&cx->waker);
        return PL_PENDING;
    }
    return PL_READY;
}

static const pl_future_vtable stepper_vt = {"stepper", stepper_poll, NULL};

static int spawn_stepper(pl_executor *ex, race_state *s, step_fn fn, int who, int steps,
                         const char *name)
{
    stepper t = {PL_FUTURE_INIT(&stepper_vt), s, fn, who, steps, 0};
    return PL_SPAWN(ex, t, name, NULL);
}

/* race: the reader must see the writer's flag; production polls the
 * writer first, one schedule deviation breaks it. */
static void race_step(race_state *s, int who, int step)
{
    (void)step;
    if (who == 0) {
        s->flag = 1;
    } else {
        pl_always(s->flag, "reader ran before writer");
    }
}

static int race_setup(pl_executor *ex, void *state)
{
    int rc = spawn_stepper(ex, state, race_step, 0, 1, "writer");
    return rc != 0 ? rc : spawn_stepper(ex, state, race_step, 1, 1, "reader");
}

PL_SCENARIO(race_scenario, .name = "t_race", .summary = "1-deviation race",
            .state_size = sizeof(race_state), .setup = race_setup, .expect = "assertion");

/* order: three one-poll tasks log their order; only c, b, a is wrong,
 * which takes two deviations (pick c out of three, then b out of two). */
static void order_step(race_state *s, int who, int step)
{
    (void)step;
    s->order[s->order_len++] = who;
}

/* Tasks a, b and c, one poll each, stepping through fn. */
static int spawn_abc(pl_executor *ex, race_state *s, step_fn fn)
{
    static const char *const names[3] = {"a", "b", "c"};
    for (int i = 0; i < 3; i++) {
        int rc = spawn_stepper(ex, s, fn, i, 1, names[i]);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static int order_setup(pl_executor *ex, void *state) { return spawn_abc(ex, state, order_step); }

static int order_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    race_state *s = state;
    if (s->order_len == 3 && s->order[0] == 2 && s->order[1] == 1 && s->order[2] == 0) {
        snprintf(msg, len, "ran in reverse order");
        return 1;
    }
    return 0;
}

PL_SCENARIO(order_scenario, .name = "t_order", .summary = "2-deviation order bug",
            .state_size = sizeof(race_state), .setup = order_setup, .check = order_check,
            .expect = "assertion");
PL_SCENARIO(order_ok_scenario, .name = "t_order_ok", .summary = "three tasks, no bug",
            .state_size = sizeof(race_state), .setup = order_setup);

/* order_assume: the three tasks of order, but a schedule where c runs
 * first is outside the premise (pl_assume discards it). */
static void assume_step(race_state *s, int who, int step)
{
    pl_assume(who != 2 || s->order_len > 0);
    order_step(s, who, step);
}

static int assume_setup(pl_executor *ex, void *state) { return spawn_abc(ex, state, assume_step); }

PL_SCENARIO(order_assume_scenario, .name = "t_order_assume",
            .summary = "three tasks, c first discarded", .state_size = sizeof(race_state),
            .setup = assume_setup);

/* window: a and b take 5 steps each; the bug is b running entirely
 * between a's 3rd and 4th steps. Depth 2 for PCT (b below a, one change
 * point after a's 3rd step), but many deviations from FIFO. */
static void window_step(race_state *s, int who, int step)
{
    if (who == 0) {
        s->a_steps++;
        return;
    }
    if (step == 1) {
        s->a_at_b1 = s->a_steps;
    } else if (step == 5) {
        pl_always(!(s->a_at_b1 == 3 && s->a_steps == 3), "b ran inside a's window");
    }
}

static int window_setup(pl_executor *ex, void *state)
{
    int rc = spawn_stepper(ex, state, window_step, 0, 5, "a");
    return rc != 0 ? rc : spawn_stepper(ex, state, window_step, 1, 5, "b");
}

PL_SCENARIO(window_scenario, .name = "t_window", .summary = "depth-2 ordering bug",
            .state_size = sizeof(race_state), .setup = window_setup, .expect = "assertion");

/* late window: a takes 40 steps, b 5; the bug is b running entirely
 * between a's 30th and 31st steps. Depth 2 again, but its change point
 * comes at schedule step 30, while the production run (FIFO: a and b
 * alternate until b is done) makes only 10 schedule decisions. */
enum { LATE_A_STEPS = 40, LATE_AT = 30 };

static void late_step(race_state *s, int who, int step)
{
    if (who == 0) {
        s->a_steps++;
        return;
    }
    if (step == 1) {
        s->a_at_b1 = s->a_steps;
    } else if (step == 5) {
        pl_always(!(s->a_at_b1 == LATE_AT && s->a_steps == LATE_AT),
                  "b ran inside a's late window");
    }
}

static int late_setup(pl_executor *ex, void *state)
{
    int rc = spawn_stepper(ex, state, late_step, 0, LATE_A_STEPS, "a");
    return rc != 0 ? rc : spawn_stepper(ex, state, late_step, 1, 5, "b");
}

PL_SCENARIO(late_scenario, .name = "t_late_window", .summary = "depth-2 bug at step 30",
            .state_size = sizeof(race_state), .setup = late_setup, .expect = "assertion");

/* spin: a spinner yields until a setter, spawned after it, sets a flag.
 * Correct under any fair scheduler. */
static void spin_step(race_state *s, int who, int step)
{
    (void)step;
    if (who == 1) {
        s->flag = 1;
    }
}

typedef struct spinner {
    pl_future base;
    race_state *s;
} spinner;

static pl_poll_result spinner_poll(pl_future *self, pl_context *cx)
{
    spinner *t = (spinner *)self;
    if (t->s->flag) {
        return PL_READY;
    }
    pl_waker_wake_by_ref(&cx->waker);
    return PL_PENDING;
}

static const pl_future_vtable spinner_vt = {"spinner", spinner_poll, NULL};

static int spin_setup(pl_executor *ex, void *state)
{
    spinner sp = {PL_FUTURE_INIT(&spinner_vt), state};
    int rc = PL_SPAWN(ex, sp, "spinner", NULL);
    return rc != 0 ? rc : spawn_stepper(ex, state, spin_step, 1, 1, "setter");
}

PL_SCENARIO(spin_scenario, .name = "t_spin", .summary = "spin-wait on a flag",
            .state_size = sizeof(race_state), .setup = spin_setup);

/* ---- Helpers ---------------------------------------------------------- */

static pl_sim_options options(const char *strategy, uint64_t seed)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.strategy = strategy;
    o.seed = seed;
    return o;
}

/* The first seed in [1, max] with a finding, or 0. */
static uint64_t first_failing_seed(const pl_scenario *sc, const char *strategy, uint64_t max)
{
    pl_sim_options o = options(strategy, 0);
    pl_campaign_result c;
    cr_assert_eq(
        pl_sim_campaign(
            sc,
            &(pl_campaign_options){.seed_lo = 1, .seed_hi = max, .sim = &o, .stop_at_first = true},
            &c),
        0);
    return c.findings > 0 ? c.first_seed : 0;
}

/* ---- Specs ------------------------------------------------------------ */

LEAK_TEST(spec, parses_every_form)
{
    pl__strategy_spec s;
    cr_assert_eq(pl__strategy_parse(NULL, &s, NULL, 0), 0);
    cr_assert_eq(s.kind, PL__STRATEGY_RANDOM);
    cr_assert_eq(pl__strategy_parse("swarm", &s, NULL, 0), 0);
    cr_assert_eq(s.kind, PL__STRATEGY_SWARM);
    cr_assert_eq(pl__strategy_parse("pct:3", &s, NULL, 0), 0);
    cr_assert(s.kind == PL__STRATEGY_PCT && s.depth == 3 && s.horizon == 0);
    cr_assert_eq(pl__strategy_parse("pct:2:50", &s, NULL, 0), 0);
    cr_assert(s.depth == 2 && s.horizon == 50);
    cr_assert_eq(pl__strategy_parse("bounded:0", &s, NULL, 0), 0);
    cr_assert(s.kind == PL__STRATEGY_BOUNDED && s.depth == 0);
    cr_assert_eq(pl__strategy_parse("bounded:64", &s, NULL, 0), 0);
}

LEAK_TEST(spec, rejects_bad_specs_with_a_reason)
{
    static const char *const bad[] = {"pct:0",     "pct:65", "pct:",  "pct:2:0", "pct:x",
                                      "bounded:x", "bounded:65", "bounded:", "foo", "PCT:2",
                                      "pct:-1",    "bounded:1 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pl__strategy_spec s;
        char err[160] = "";
        cr_assert_eq(pl__strategy_parse(bad[i], &s, err, sizeof err), PL_EINVAL, "%s", bad[i]);
        cr_assert(strstr(err, bad[i]) != NULL, "'%s' not named in: %s", bad[i], err);
    }
}

LEAK_TEST(spec, run_refuses_a_bad_strategy)
{
    pl_sim_options o = options("pct:0", 1);
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&race_scenario, &o, &r), PL_EINVAL);
    cr_assert(strstr(r.finding.message, "pct:D needs a depth D from 1 to 64") != NULL, "%s",
              r.finding.message);
    pl_sim_result_free(&r);
    o.strategy = "bounded:x";
    cr_assert_eq(pl_sim_run(&race_scenario, &o, &r), PL_EINVAL);
    cr_assert(strstr(r.finding.message, "bounded:K") != NULL, "%s", r.finding.message);
    pl_sim_result_free(&r);
}

/* ---- Bounded ---------------------------------------------------------- */

LEAK_TEST(bounded, one_deviation_finds_the_race)
{
    pl_sim_options o = options("bounded:1", 0);
    pl_sim_bounded_result b;
    cr_assert_eq(pl_sim_explore_bounded(&race_scenario, 1, NULL, &o, &b), 0);
    cr_assert_eq(b.finding.kind, PL_FINDING_ASSERTION);
    cr_assert_eq(b.deviations, 1);
    cr_assert(!b.exhausted);
    cr_assert_eq(b.run.nonzero_decisions, 1);
    cr_assert(b.runs <= 3, "%llu runs", (unsigned long long)b.runs);
    pl_sim_bounded_result_free(&b);
}

LEAK_TEST(bounded, zero_deviations_is_production_only)
{
    pl_sim_bounded_result b;
    cr_assert_eq(pl_sim_explore_bounded(&race_scenario, 0, NULL, NULL, &b), 0);
    cr_assert_eq(b.finding.kind, PL_FINDING_NONE);
    cr_assert(b.exhausted);
    cr_assert_eq(b.schedules, 1);
    pl_sim_bounded_result_free(&b);
}

LEAK_TEST(bounded, proves_a_correct_scenario_exhaustively)
{
    pl_sim_bounded_result b;
    cr_assert_eq(pl_sim_explore_bounded(&order_ok_scenario, 1, NULL, NULL, &b), 0);
    cr_assert_eq(b.finding.kind, PL_FINDING_NONE);
    cr_assert(b.exhausted);
    cr_assert(!b.budget_hit);
    /* Production, then c/b first (2 ways) or the second pick flipped. */
    cr_assert_eq(b.schedules, 4, "%llu schedules", (unsigned long long)b.schedules);
    cr_assert_eq(b.levels_done, 2);
    pl_sim_bounded_result_free(&b);
    /* With 3 deviations allowed, every one of the 3! orders. */
    cr_assert_eq(pl_sim_explore_bounded(&order_ok_scenario, 3, NULL, NULL, &b), 0);
    cr_assert(b.exhausted);
    cr_assert_eq(b.schedules, 6, "%llu schedules", (unsigned long long)b.schedules);
    pl_sim_bounded_result_free(&b);
}

/* A schedule pl_assume discarded ran without a finding but was not
 * checked: counted apart, so nobody reads it as verified. */
LEAK_TEST(bounded, discarded_schedules_are_counted_apart)
{
    pl_sim_bounded_result b;
    cr_assert_eq(pl_sim_explore_bounded(&order_assume_scenario, 3, NULL, NULL, &b), 0);
    cr_assert_eq(b.finding.kind, PL_FINDING_NONE);
    cr_assert(b.exhausted);
    /* c first ends the run at once: c, a, b and c, b, a are one schedule. */
    cr_assert_eq(b.schedules, 5, "%llu schedules", (unsigned long long)b.schedules);
    cr_assert_eq(b.discarded, 1, "%llu discarded", (unsigned long long)b.discarded);
    pl_sim_bounded_result_free(&b);
    cr_assert_eq(pl_sim_explore_bounded(&order_ok_scenario, 3, NULL, NULL, &b), 0);
    cr_assert_eq(b.discarded, 0);
    pl_sim_bounded_result_free(&b);
}

LEAK_TEST(bounded, two_deviations_find_what_one_cannot)
{
    pl_sim_bounded_result b;
    cr_assert_eq(pl_sim_explore_bounded(&order_scenario, 1, NULL, NULL, &b), 0);
    cr_assert_eq(b.finding.kind, PL_FINDING_NONE);
    cr_assert(b.exhausted, "bounded:1 must exhaust the space");
    pl_sim_bounded_result_free(&b);
    cr_assert_eq(pl_sim_explore_bounded(&order_scenario, 2, NULL, NULL, &b), 0);
    cr_assert_eq(b.finding.kind, PL_FINDING_ASSERTION);
    cr_assert_eq(b.deviations, 2);
    cr_assert_eq(b.run.nonzero_decisions, 2);
    pl_sim_bounded_result_free(&b);
}

/* A stop says how far it got: production (1 run), then level 1 re-runs
 * production and runs one single deviation before the budget ends. */
LEAK_TEST(bounded, stops_at_the_run_budget_and_names_the_level_reached)
{
    pl_sim_bounded_result b;
    pl_sim_bounded_limits lim = {.runs_max = 3};
    cr_assert_eq(pl_sim_explore_bounded(&order_ok_scenario, 3, &lim, NULL, &b), 0);
    cr_assert(b.budget_hit && !b.clock_hit && !b.exhausted);
    cr_assert_eq(b.runs, 3);
    cr_assert_eq(b.levels_done, 1);
    cr_assert_eq(b.level_schedules, 1);
    cr_assert_eq(b.schedules, 2);
    pl_sim_bounded_result_free(&b);
}

/* The wall-clock limit stops between runs: at 1 ns, after the first run
 * at the latest. */
LEAK_TEST(bounded, stops_at_the_wall_clock_limit)
{
    pl_sim_bounded_result b;
    pl_sim_bounded_limits lim = {.time_ns = 1};
    cr_assert_eq(pl_sim_explore_bounded(&order_ok_scenario, 3, &lim, NULL, &b), 0);
    cr_assert(b.clock_hit && !b.budget_hit && !b.exhausted);
    cr_assert_leq(b.runs, 1, "%llu runs", (unsigned long long)b.runs);
    cr_assert_eq(b.levels_done, 0);
    pl_sim_bounded_result_free(&b);
    lim.time_ns = -1;
    cr_assert_eq(pl_sim_explore_bounded(&order_ok_scenario, 3, &lim, NULL, &b), PL_EINVAL);
    pl_sim_bounded_result_free(&b);
}

LEAK_TEST(bounded, failing_run_replays_from_its_file)
{
    pl_sim_options o = options("bounded:2", 0);
    pl_sim_bounded_result b;
    cr_assert_eq(pl_sim_explore_bounded(&order_scenario, 2, NULL, &o, &b), 0);
    cr_assert_eq(b.finding.kind, PL_FINDING_ASSERTION);
    char path[] = "/tmp/pollen-test-bounded-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(pl_sim_write_replay(&order_scenario, &o, &b.run, path), 0);
    pl_sim_result r;
    char err[512] = "";
    cr_assert_eq(pl_sim_replay_file(path, &r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(r.hash, b.run.hash);
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION);
    pl_sim_result_free(&r);
    pl_sim_bounded_result_free(&b);
    remove(path);
}

/* ---- PCT -------------------------------------------------------------- */

static bool near(double a, double b) { return a - b < 1e-12 && b - a < 1e-12; }

LEAK_TEST(pct, guarantee_formula)
{
    cr_assert(near(pl_sim_pct_guarantee(3, 4, 10), 1.0 / 400.0));
    cr_assert(near(pl_sim_pct_guarantee(1, 5, 1000), 0.2));
    cr_assert(pl_sim_pct_guarantee(0, 5, 10) == 0.0);
    cr_assert(pl_sim_pct_guarantee(2, 0, 10) == 0.0);
}

LEAK_TEST(pct, estimate_measures_the_production_run)
{
    uint32_t tasks = 0;
    uint64_t steps = 0;
    cr_assert_eq(pl_sim_pct_estimate(&window_scenario, NULL, &tasks, &steps), 0);
    cr_assert_eq(tasks, 2);
    /* a1 b1 a2 b2 ... a5 b5: a choice at every pick but the last. */
    cr_assert_eq(steps, 9, "%llu", (unsigned long long)steps);
}

LEAK_TEST(pct, finds_the_depth_two_bug_within_a_few_seeds)
{
    uint64_t pct = first_failing_seed(&window_scenario, "pct:2", 100);
    cr_assert(pct != 0, "pct:2 missed the bug in 100 seeds");
    uint64_t pct3 = first_failing_seed(&window_scenario, "pct:3", 100);
    cr_assert(pct3 != 0, "pct:3 missed the bug in 100 seeds");
}

LEAK_TEST(pct, depth_one_never_finds_a_depth_two_bug)
{
    cr_assert_eq(first_failing_seed(&window_scenario, "pct:1", 200), 0);
}

LEAK_TEST(pct, runs_reproduce_from_the_seed_and_from_the_list)
{
    pl_sim_options o = options("pct:2", 0);
    uint64_t seed = first_failing_seed(&window_scenario, "pct:2", 100);
    cr_assert(seed != 0);
    o.seed = seed;
    pl_sim_result a, b, c;
    cr_assert_eq(pl_sim_run(&window_scenario, &o, &a), 0);
    cr_assert_eq(pl_sim_run(&window_scenario, &o, &b), 0);
    cr_assert_eq(a.hash, b.hash);
    cr_assert_eq(a.finding.kind, PL_FINDING_ASSERTION);
    size_t n;
    const pl__run_record *rec = pl__sim_result_record(&a);
    n = rec->decisions_len;
    pl_sim_options l = o;
    l.source = PL_SIM_SOURCE_LIST;
    l.decisions = rec->decisions;
    l.decisions_len = n;
    cr_assert_eq(pl_sim_run(&window_scenario, &l, &c), 0);
    cr_assert_eq(c.hash, a.hash, "the list replay must not depend on the strategy");
    cr_assert(!c.diverged);
    cr_assert_eq(c.finding.kind, PL_FINDING_ASSERTION);
    pl_sim_result_free(&a);
    pl_sim_result_free(&b);
    pl_sim_result_free(&c);
}

LEAK_TEST(pct, spin_waits_do_not_become_livelocks)
{
    cr_assert_eq(first_failing_seed(&spin_scenario, "pct:1", 50), 0);
    cr_assert_eq(first_failing_seed(&spin_scenario, "pct:3", 50), 0);
}

/* The horizon covers PCT's own runs, not only production's: drawn over
 * the 10 steps of the production run, the change point never reaches step
 * 30 and the bug is never found; over the measured horizon it is. */
LEAK_TEST(pct, horizon_covers_runs_longer_than_production)
{
    uint32_t tasks = 0;
    uint64_t steps = 0;
    pl_sim_options o = options("pct:2", 0);
    cr_assert_eq(pl_sim_pct_estimate(&late_scenario, &o, &tasks, &steps), 0);
    cr_assert_eq(tasks, 2);
    cr_assert_geq(steps, LATE_AT, "horizon %llu", (unsigned long long)steps);
    cr_assert_leq(steps, LATE_A_STEPS + 5);
    cr_assert_eq(first_failing_seed(&late_scenario, "pct:2:10", 1000), 0);
    cr_assert(first_failing_seed(&late_scenario, "pct:2", 1000) != 0,
              "pct:2 missed the late bug in 1000 seeds");
}

LEAK_TEST(pct, explicit_horizon_is_accepted)
{
    cr_assert(first_failing_seed(&window_scenario, "pct:2:9", 100) != 0);
}

/* The horizon the caller measured and passed in is the one the run uses:
 * pct:D with pct_horizon K runs as pct:D:K, and pct:D with none runs as
 * pct:D over pl_sim_pct_estimate's steps. */
static uint64_t run_hash(const char *strategy, uint64_t seed, uint64_t horizon)
{
    pl_sim_options o = options(strategy, seed);
    o.pct_horizon = horizon;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&late_scenario, &o, &r), 0);
    uint64_t h = r.hash;
    pl_sim_result_free(&r);
    return h;
}

LEAK_TEST(pct, horizon_passed_in_is_the_one_used)
{
    uint32_t tasks = 0;
    uint64_t steps = 0;
    pl_sim_options o = options("pct:2", 0);
    cr_assert_eq(pl_sim_pct_estimate(&late_scenario, &o, &tasks, &steps), 0);
    char spec[64];
    snprintf(spec, sizeof spec, "pct:2:%llu", (unsigned long long)steps);
    bool differs = false;
    for (uint64_t seed = 0; seed < 20; seed++) {
        cr_assert_eq(run_hash("pct:2", seed, 0), run_hash(spec, seed, 0));
        cr_assert_eq(run_hash("pct:2", seed, 3), run_hash("pct:2:3", seed, 0));
        differs = differs || run_hash("pct:2", seed, 3) != run_hash("pct:2", seed, 0);
    }
    cr_assert(differs, "a horizon of 3 changed no run: the option is not read");
}

/* ---- Swarm ------------------------------------------------------------ */

LEAK_TEST(swarm, knobs_vary_across_seeds)
{
    char first[PL_SIM_KNOBS_TEXT_MAX];
    pl_sim_options o = options("swarm", 1);
    cr_assert_eq(pl_sim_knobs_text(&o, first, sizeof first), 0);
    int differ = 0;
    for (uint64_t seed = 2; seed <= 16; seed++) {
        char k[PL_SIM_KNOBS_TEXT_MAX];
        o.seed = seed;
        cr_assert_eq(pl_sim_knobs_text(&o, k, sizeof k), 0);
        differ += strcmp(k, first) != 0;
    }
    cr_assert(differ >= 10, "only %d of 15 seeds drew other knobs", differ);
    o.strategy = "random";
    char def[PL_SIM_KNOBS_TEXT_MAX];
    cr_assert_eq(pl_sim_knobs_text(&o, def, sizeof def), 0);
    cr_assert(strstr(def, "schedule=32768") != NULL, "%s", def);
    o.strategy = "pct:0";
    cr_assert_eq(pl_sim_knobs_text(&o, def, sizeof def), PL_EINVAL);
}

LEAK_TEST(swarm, runs_reproduce_and_record_their_knobs)
{
    pl_sim_options o = options("swarm", 7);
    char want[PL_SIM_KNOBS_TEXT_MAX];
    cr_assert_eq(pl_sim_knobs_text(&o, want, sizeof want), 0);
    pl_sim_result a, b;
    cr_assert_eq(pl_sim_run(&window_scenario, &o, &a), 0);
    cr_assert_eq(pl_sim_run(&window_scenario, &o, &b), 0);
    cr_assert_eq(a.hash, b.hash);
    char got[PL_SIM_KNOBS_TEXT_MAX];
    pl__dec_knobs_format(&pl__sim_result_record(&a)->knobs, got, sizeof got);
    cr_assert_str_eq(got, want);
    char path[] = "/tmp/pollen-test-swarm-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(pl_sim_write_replay(&window_scenario, &o, &a, path), 0);
    FILE *f = fopen(path, "r");
    char line[PL_SIM_KNOBS_TEXT_MAX + 8];
    bool found = false;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        found |= strncmp(line, "knobs ", 6) == 0 && strncmp(line + 6, want, strlen(want)) == 0;
    }
    fclose(f);
    remove(path);
    cr_assert(found, "the replay's knobs line must hold the swarm knobs");
    pl_sim_result_free(&a);
    pl_sim_result_free(&b);
}
