/* sim/src/pct.c: PCT's horizon, and pl_sim_run, which measures it first
 * when the caller gave none.
 *
 * Measured here, before a run, by whoever starts runs: pl_sim_run for a
 * caller that passed none, pl_sim_campaign once per campaign. The
 * measuring runs are runs like any other (pl__sim_run_captured), with a
 * horizon given, so none of them measures again; each counts its
 * pl_sometimes sites in its own record, which no campaign sums.
 * pl_sim_run lives here, not in run.c, because it calls the measure,
 * which calls a run: in run.c the two files would call each other.
 */
#include <stdio.h>
#include <string.h>

#include "pct.h"
#include "run.h"
#include "run_record.h"
#include "sim_internal.h"
#include "strategy.h"

/* The production run: an empty list (every value 0) with only schedule
 * decisions consulted, so result.decisions counts exactly those. Values
 * are all 0 either way, so the knobs change what is counted, not what
 * the run does. */
static int measure_production(const pl_scenario *sc, const pl_sim_options *o, uint32_t *tasks,
                              uint64_t *steps)
{
    pl_sim_options m = *o;
    m.source = PL_SIM_SOURCE_LIST;
    m.decisions = NULL;
    m.decisions_len = 0;
    m.strategy = "random";
    m.knobs = "schedule=on,io_order=off,timer_order=off,timer_late=off,spurious_wake=off,"
              "spurious_poll=off,wake_delay=off,cancel=off,io_fault=off,io_latency=off,"
              "buggify_site=off,buggify_fire=off,disk_latency=off,disk_fault=off,"
              "disk_corrupt=off,disk_lose=off";
    m.keep_events = false;
    m.keep_decisions = false;
    pl_sim_result r;
    int rc = pl__sim_run_captured(sc, &m, NULL, &r);
    if (rc == 0) {
        *tasks = r.tasks;
        *steps = r.decisions;
    }
    pl_sim_result_free(&r);
    return rc;
}

/* Schedule decisions of a finished run, from its record (a lower bound
 * when the recorder hit its cap). */
static uint64_t schedule_steps(const pl_sim_result *r)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    uint64_t n = 0;
    for (size_t i = 0; rec != NULL && i < rec->decisions_len; i++) {
        n += rec->decisions[i].kind == PL_DECIDE_SCHEDULE;
    }
    return n;
}

/* PCT runs are often much longer than production's (a task of high rank
 * runs until it blocks, a spinner spins until it is demoted), and change
 * points drawn over the production run never reach their later steps.
 * So the horizon is also measured on PCT_CALIBRATION_RUNS runs of PCT
 * itself (seeds 0.., change points over the production horizon, the
 * caller's knobs): the longest of them all. A function of the scenario,
 * depth and knobs alone, so every seed of a campaign, and a rerun of one,
 * uses the same horizon. */
#define PCT_CALIBRATION_RUNS 8u

static int measure_pct_runs(const pl_scenario *sc, const pl_sim_options *o, uint32_t depth,
                            uint32_t *tasks, uint64_t *steps)
{
    pl_sim_options m = *o;
    char spec[64];
    snprintf(spec, sizeof spec, "pct:%u:%llu", depth,
             (unsigned long long)(*steps > 0 ? *steps : 1));
    m.source = PL_SIM_SOURCE_SEED;
    m.strategy = spec;
    m.keep_events = false;
    m.keep_decisions = true;
    int rc = 0;
    for (uint64_t seed = 0; seed < PCT_CALIBRATION_RUNS && rc == 0; seed++) {
        m.seed = seed;
        pl_sim_result r;
        rc = pl__sim_run_captured(sc, &m, NULL, &r);
        if (rc == 0) {
            uint64_t k = schedule_steps(&r);
            *steps = k > *steps ? k : *steps;
            *tasks = r.tasks > *tasks ? r.tasks : *tasks;
        }
        pl_sim_result_free(&r);
    }
    return rc;
}

/* PCT's depth in the caller's options; 3, a common choice, otherwise. */
static uint32_t pct_depth_of(const pl_sim_options *o)
{
    pl__strategy_spec spec;
    if (pl__strategy_parse(o->strategy, &spec, NULL, 0) == 0 && spec.kind == PL__STRATEGY_PCT) {
        return spec.depth;
    }
    return 3;
}

int pl_sim_pct_estimate(const pl_scenario *sc, const pl_sim_options *opts, uint32_t *tasks,
                        uint64_t *steps)
{
    pl_sim_options o;
    if (opts != NULL) {
        o = *opts;
    } else {
        pl_sim_options_default(&o);
    }
    int rc = measure_production(sc, &o, tasks, steps);
    if (rc == 0) {
        rc = measure_pct_runs(sc, &o, pct_depth_of(&o), tasks, steps);
    }
    return rc;
}

int pl__resolve_pct_horizon(const pl_scenario *sc, pl_sim_options *o)
{
    if (!pl__strategy_needs_horizon(o)) {
        return 0;
    }
    uint32_t tasks;
    uint64_t steps;
    int rc = pl_sim_pct_estimate(sc, o, &tasks, &steps);
    if (rc == 0) {
        o->pct_horizon = steps > 0 ? steps : 1;
    }
    return rc;
}

int pl_sim_run(const pl_scenario *sc, const pl_sim_options *opts, pl_sim_result *out)
{
    pl_sim_options o;
    if (opts != NULL) {
        o = *opts;
    } else {
        pl_sim_options_default(&o);
    }
    int rc = pl__resolve_pct_horizon(sc, &o);
    if (rc != 0) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    return pl__sim_run_captured(sc, &o, NULL, out);
}
