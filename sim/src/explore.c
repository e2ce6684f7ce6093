/* sim/src/explore.c: bounded exploration (pl_sim_explore_bounded), a
 * driver: it only calls pl_sim_run, on list sources.
 */
#include <stdlib.h>
#include <string.h>

#include "env/env.h"
#include "run_record.h"
#include "sim_internal.h"
#include "strategy.h"

/* ---- Bounded exploration ------------------------------------------------
 * Iterative deepening over the number of deviations (non-zero values).
 * A schedule is a list whose deviations sit at increasing positions; the
 * children of a run are its list extended to position p >= the list's
 * end (values there were 0) with p's value set to 1..n-1. Each schedule
 * has exactly one parent, so each is run once per level that counts it;
 * shallower levels are re-run to learn their decision points, a small
 * price next to the deepest level, and memory stays one record per
 * depth. */

typedef struct explorer {
    const pl_scenario *sc;
    pl_sim_options o;
    uint32_t level;           /* deviations of the schedules this pass counts */
    uint64_t max_runs;
    pl_time deadline_ns;      /* wall clock; 0: none */
    pl_sim_bounded_result *out;
    int rc;
    bool stop;
} explorer;

static void visit(explorer *e, const pl__dec_record *list, size_t len, uint32_t depth);

/* A draw of user code's randomness has up to 2^32 - 1 choices (choice v
 * gives v - 1: knobs.h): a deviation there tries the smallest non-zero
 * value, the middle and the largest, into out. Returns how many. */
static uint32_t random_deviations(uint32_t n, uint32_t out[3])
{
    uint32_t vals[3] = {2, 1 + n / 2, n - 1};
    uint32_t len = 0;
    for (uint32_t i = 0; i < 3; i++) {
        if (vals[i] < n && (len == 0 || vals[i] > out[len - 1])) {
            out[len++] = vals[i];
        }
    }
    return len;
}

static void expand(explorer *e, const pl__run_record *rec, size_t start, uint32_t depth)
{
    size_t len = rec->decisions_len;
    if (start >= len) {
        return;
    }
    pl__dec_record *child = malloc(len * sizeof *child);
    if (child == NULL) {
        e->rc = PL_ENOMEM;
        e->stop = true;
        return;
    }
    memcpy(child, rec->decisions, len * sizeof *child);
    for (size_t p = start; p < len && !e->stop; p++) {
        if (child[p].kind == (uint32_t)PL_DECIDE_RANDOM) {
            uint32_t vals[3];
            uint32_t tries = random_deviations(child[p].n, vals);
            for (uint32_t i = 0; i < tries && !e->stop; i++) {
                child[p].value = vals[i];
                visit(e, child, p + 1, depth + 1);
            }
        }
        for (uint32_t v = 1; v < child[p].n && !e->stop &&
                             child[p].kind != (uint32_t)PL_DECIDE_RANDOM; v++) {
            child[p].value = v;
            visit(e, child, p + 1, depth + 1);
        }
        child[p].value = rec->decisions[p].value;
    }
    free(child);
}

static bool run_list(explorer *e, const pl__dec_record *list, size_t len, pl_sim_result *r)
{
    if (e->max_runs != 0 && e->out->runs >= e->max_runs) {
        e->out->budget_hit = true;
        e->stop = true;
        return false;
    }
    /* The real clock (env.h), read between runs only: it decides where the
     * exploration stops, never what a run does. */
    if (e->deadline_ns != 0 && pl__env_real_now() >= e->deadline_ns) {
        e->out->clock_hit = true;
        e->stop = true;
        return false;
    }
    e->o.decisions = list;
    e->o.decisions_len = len;
    int rc = pl_sim_run(e->sc, &e->o, r);
    e->out->runs++;
    if (rc != 0) {
        pl_sim_result_free(r);
        e->rc = rc;
        e->stop = true;
        return false;
    }
    return true;
}

static void visit(explorer *e, const pl__dec_record *list, size_t len, uint32_t depth)
{
    PL__SIM_ASSERT(depth <= e->level);
    pl_sim_result r;
    if (!run_list(e, list, len, &r)) {
        return;
    }
    if (depth == e->level) {
        e->out->schedules++;
        e->out->discarded += r.discarded;
        if (r.finding.kind != PL_FINDING_NONE) {
            e->out->finding = r.finding;
            e->out->deviations = depth;
            e->out->run = r; /* the caller frees it */
            e->stop = true;
            return;
        }
        pl_sim_result_free(&r);
        e->out->level_schedules++;
        return;
    }
    const pl__run_record *rec = pl__sim_result_record(&r);
    if (rec == NULL) {
        e->rc = PL_ENOMEM;
        e->stop = true;
    } else {
        e->out->truncated |= rec->decisions_truncated;
        expand(e, rec, len, depth);
    }
    pl_sim_result_free(&r);
}

int pl_sim_explore_bounded(const pl_scenario *sc, uint32_t k, const pl_sim_bounded_limits *limits,
                           const pl_sim_options *opts, pl_sim_bounded_result *out)
{
    memset(out, 0, sizeof *out);
    if (sc == NULL || k > PL__STRATEGY_DEPTH_MAX || (limits != NULL && limits->time_ns < 0)) {
        return PL_EINVAL;
    }
    explorer e = {.sc = sc, .out = out};
    if (limits != NULL) {
        e.max_runs = limits->runs_max;
        pl_time now = pl__env_real_now();
        e.deadline_ns = limits->time_ns <= 0                    ? 0
                        : limits->time_ns > PL_TIME_NEVER - now ? PL_TIME_NEVER
                                                                : now + limits->time_ns;
    }
    if (opts != NULL) {
        e.o = *opts;
    } else {
        pl_sim_options_default(&e.o);
    }
    e.o.source = PL_SIM_SOURCE_LIST;
    e.o.keep_decisions = true;
    for (uint32_t level = 0; level <= k && !e.stop; level++) {
        e.level = level;
        out->level_schedules = 0;
        visit(&e, NULL, 0, 0);
        if (e.stop) {
            break;
        }
        out->levels_done = level + 1;
        if (out->level_schedules == 0) {
            out->levels_done = k + 1; /* no schedule this deep, so none deeper */
            break;
        }
    }
    out->exhausted = e.rc == 0 && !e.stop && !out->truncated;
    return e.rc;
}

void pl_sim_bounded_result_free(pl_sim_bounded_result *r)
{
    pl_sim_result_free(&r->run);
}
