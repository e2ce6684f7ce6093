/* sim/src/cli/cmd_run_pct.c: `run --strategy pct:D`: PCT's horizon and
 * the guarantee line, n and k measured in a child (user code runs). */
#include "cli_internal.h"

typedef struct pct_job {
    const run_opts *o;
    const pl_scenario *sc;
} pct_job;

typedef struct pct_msg {
    int rc;
    uint32_t tasks;
    uint64_t steps;
} pct_msg;

static void pct_measure(const void *ctx, void *result)
{
    const pct_job *pj = ctx;
    pct_msg *m = result;
    pl_sim_options so;
    pl__cli_sim_options(pj->o, 0, &so);
    m->rc = pl_sim_pct_estimate(pj->sc, &so, &m->tasks, &m->steps);
}

/* PCT's horizon for every seed of the campaign of `sc`, measured once in
 * a child; 0 when it is not PCT without K, or the measure failed (then
 * each run measures it itself). */
uint64_t pl__cli_pct_horizon_of(const run_opts *o, const pl_scenario *sc)
{
    pl_sim_options so;
    pl__cli_sim_options(o, 0, &so);
    if (o->real || o->bounded || !pl__strategy_needs_horizon(&so)) {
        return 0;
    }
    pct_job pj = {o, sc};
    pct_msg m;
    child_end end;
    memset(&m, 0, sizeof m);
    int rc = pl__cli_run_in_child(pct_measure, &pj, &m, sizeof m,
                                  pl__cli_now_ms() + o->watchdog_ns / PL_MS, OUT_DISCARD, &end);
    if (rc != 0 || !end.complete || m.rc != 0) {
        return 0;
    }
    return m.steps > 0 ? m.steps : 1;
}

/* x^n by squaring (no libm for one power). */
static double power(double x, uint64_t n)
{
    double r = 1.0;
    for (; n > 0; n >>= 1, x *= x) {
        if (n & 1) {
            r *= x;
        }
    }
    return r;
}

/* After a pct:D campaign: the paper's bound 1/(n k^(D-1)) for one run and
 * what it promises over the runs made. n and k come from the scenario's
 * production run, as PCT's default horizon does (pct:D:K sets k). */
void pl__cli_pct_guarantee_line(const run_opts *o, const pl_scenario *sc, uint64_t runs)
{
    pct_job pj = {o, sc};
    pct_msg m;
    child_end end;
    pl__strategy_spec spec;
    memset(&m, 0, sizeof m);
    int rc = pl__cli_run_in_child(pct_measure, &pj, &m, sizeof m,
                                  pl__cli_now_ms() + o->watchdog_ns / PL_MS, OUT_DISCARD, &end);
    if (rc != 0 || !end.complete || m.rc != 0 ||
        pl__strategy_parse(o->strategy, &spec, NULL, 0) != 0) {
        fprintf(o->text, "%s: %s guarantee unknown (the production run could not be measured)\n",
                sc->name, o->strategy);
        return;
    }
    /* The bound holds for what the change points covered: the first k
     * schedule steps (the horizon they were drawn over), and the schedule
     * decisions only, which are all PCT orders. */
    uint64_t k = spec.horizon > 0 ? spec.horizon : m.steps;
    double p = pl_sim_pct_guarantee(o->pct_depth, m.tasks, k);
    double miss = power(1.0 - p, runs);
    char miss_text[32] = "< 1e-300"; /* (1-p)^runs underflows: say so, never "<= 0" */
    if (miss >= 1e-300) {
        snprintf(miss_text, sizeof miss_text, "<= %.3g", miss);
    }
    fprintf(o->text,
            "%s: %s guarantee: each run finds a scheduling bug of depth %" PRIu32 " within the "
            "first k schedule steps with probability >= 1/(n*k^%" PRIu32 ") = %.3g (n = %" PRIu32
            " task%s, k = %" PRIu64 " schedule step%s, %s); all %" PRIu64
            " runs miss such a bug with probability %s. PCT orders schedule decisions only: "
            "every other decision kind was drawn at random, with no such bound\n",
            sc->name, o->strategy, o->pct_depth, o->pct_depth - 1, p, m.tasks,
            m.tasks == 1 ? "" : "s", k, k == 1 ? "" : "s",
            spec.horizon > 0 ? "as given" : "the longest of the production run and 8 PCT runs",
            runs, miss_text);
    pl__cli_flush_out(o->text);
}

