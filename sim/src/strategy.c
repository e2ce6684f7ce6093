/* sim/src/strategy.c: PCT, bounded exploration, swarm knobs, capture.
 *
 * Strategies sit on the decision stream's hook (decide.h). The stream
 * records the value a hook returns, so every run, whatever chose its
 * values, is reproduced by its recorded list alone: nothing here is
 * installed on a list source except the pass-through capture hook.
 */
#include "strategy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"
#include "pollen/observer.h"
#include "sim_internal.h"

/* ---- Specs ------------------------------------------------------------ */

static int bad_spec(const char *text, const char *why, char *err, size_t err_len)
{
    if (err != NULL && err_len > 0) {
        snprintf(err, err_len, "bad strategy '%s': %s", text, why);
    }
    return PL_EINVAL;
}

/* "pct:D" or "pct:D:K"; `arg` points after "pct:". */
static int parse_pct(const char *text, const char *arg, pl__strategy_spec *out, char *err,
                     size_t err_len)
{
    const char *colon = strchr(arg, ':');
    size_t dlen = colon != NULL ? (size_t)(colon - arg) : strlen(arg);
    uint64_t d;
    if (!parse_decimal(arg, dlen, &d) || d < 1 || d > PL__STRATEGY_DEPTH_MAX) {
        return bad_spec(text, "pct:D needs a depth D from 1 to 64", err, err_len);
    }
    uint64_t k = 0;
    if (colon != NULL && (!parse_decimal(colon + 1, strlen(colon + 1), &k) || k < 1 ||
                          k > UINT32_MAX)) {
        return bad_spec(text, "pct:D:K needs a horizon K from 1 to 4294967295", err, err_len);
    }
    *out = (pl__strategy_spec){PL__STRATEGY_PCT, (uint32_t)d, k};
    return 0;
}

int pl__strategy_parse(const char *text, pl__strategy_spec *out, char *err, size_t err_len)
{
    if (text == NULL || strcmp(text, "random") == 0) {
        *out = (pl__strategy_spec){PL__STRATEGY_RANDOM, 0, 0};
        return 0;
    }
    if (strcmp(text, "swarm") == 0) {
        *out = (pl__strategy_spec){PL__STRATEGY_SWARM, 0, 0};
        return 0;
    }
    if (strncmp(text, "pct:", 4) == 0) {
        return parse_pct(text, text + 4, out, err, err_len);
    }
    if (strncmp(text, "bounded:", 8) == 0) {
        uint64_t k;
        if (!parse_decimal(text + 8, strlen(text + 8), &k) || k > PL__STRATEGY_DEPTH_MAX) {
            return bad_spec(text, "bounded:K needs a bound K from 0 to 64", err, err_len);
        }
        *out = (pl__strategy_spec){PL__STRATEGY_BOUNDED, (uint32_t)k, 0};
        return 0;
    }
    return bad_spec(text, "expected random, swarm, pct:D or bounded:K", err, err_len);
}

/* ---- Per-run state ------------------------------------------------------ */

struct pl__strategy {
    pl__sim *sim;
    uint32_t depth;           /* PCT's D */
    uint64_t horizon;         /* PCT's k */
    pl__prng prng;            /* priorities and change points */
    uint64_t *prio;           /* by task id; 0: not seen yet */
    uint32_t prio_cap;
    uint32_t *ids;            /* candidate buffer */
    uint32_t ids_cap;
    uint64_t step;            /* schedule decisions so far */
    uint64_t change[PL__STRATEGY_DEPTH_MAX]; /* change[j], j = 1..depth-1 */
    pl__capture *capture;     /* capture hook only */
    uint64_t fair_head;       /* fairness hook: head task of the latest schedule decision */
    uint32_t fair_passes;     /* consecutive decisions that passed over it */
};

void pl__strategy_free(pl__strategy *st)
{
    if (st != NULL) {
        free(st->prio);
        free(st->ids);
        free(st);
    }
}

static bool reserve_ids(pl__strategy *st, uint32_t n)
{
    if (n <= st->ids_cap) {
        return true;
    }
    uint32_t *ids = realloc(st->ids, (size_t)n * sizeof *ids);
    if (ids == NULL) {
        return false;
    }
    st->ids = ids;
    st->ids_cap = n;
    return true;
}

/* Candidates of the schedule decision being made, in queue order; false
 * when they cannot be read (the caller then keeps the source's value). */
static bool candidates(pl__strategy *st, uint32_t n)
{
    return reserve_ids(st, n) && pl_executor_runnable_ids(st->sim->ex, st->ids, n) == n;
}

/* ---- PCT ---------------------------------------------------------------- */

/* Initial priorities live in [64, 2^62 + 64): above every change-point
 * priority (1..63) and below the top bit, which marks "not spinning". */
#define PCT_PRIO_FLOOR 64u
#define PCT_NOT_SPINNING (UINT64_C(1) << 63)

static uint64_t pct_priority(pl__strategy *st, uint32_t id)
{
    if (id >= st->prio_cap) {
        uint32_t cap = st->prio_cap ? st->prio_cap : 64;
        while (cap <= id) {
            cap *= 2;
        }
        uint64_t *p = realloc(st->prio, (size_t)cap * sizeof *p);
        if (p == NULL) {
            return PCT_PRIO_FLOOR; /* ties break by queue order */
        }
        memset(p + st->prio_cap, 0, (size_t)(cap - st->prio_cap) * sizeof *p);
        st->prio = p;
        st->prio_cap = cap;
    }
    if (st->prio[id] == 0) {
        /* A uniform draw per newcomer: the ranks of tasks seen so far form
         * a uniformly random permutation, as PCT's initial priorities. */
        st->prio[id] = PCT_PRIO_FLOOR + (pl__prng_next(&st->prng) >> 2);
    }
    return st->prio[id];
}

/* Consecutive self-wakes after which a task counts as spinning. A few
 * yields keep their PCT rank (yield loops are ordinary code and their
 * interleavings matter); a spinner past this yields its rank to every
 * task that is not spinning, long before the livelock oracle's limit. */
#define PCT_SPIN_MIN 32u

static uint64_t pct_rank(pl__strategy *st, uint32_t id)
{
    bool spinning = pl__oracle_self_wakes(st->sim, id) >= PCT_SPIN_MIN;
    return pct_priority(st, id) | (spinning ? 0 : PCT_NOT_SPINNING);
}

/* After the chosen task takes its step: at change point j its priority
 * drops to depth - j, below every initial priority. */
static void pct_change_point(pl__strategy *st, uint32_t id)
{
    for (uint32_t j = 1; j < st->depth; j++) {
        if (st->change[j] == st->step && id < st->prio_cap) {
            st->prio[id] = st->depth - j;
        }
    }
}

static uint32_t pct_choose(void *ud, pl_decision_kind kind, uint32_t n, uint64_t key,
                           uint32_t fallback)
{
    pl__strategy *st = ud;
    (void)key;
    if (kind != PL_DECIDE_SCHEDULE) {
        return fallback;
    }
    st->step++;
    if (!candidates(st, n)) {
        return fallback;
    }
    uint32_t best = 0;
    uint64_t best_rank = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t r = pct_rank(st, st->ids[i]);
        if (r > best_rank) {
            best_rank = r;
            best = i;
        }
    }
    pct_change_point(st, st->ids[best]);
    return best;
}

/* D - 1 distinct change points, uniform in [1, k] (all of [1, k] when
 * k < D - 1). */
static void pct_draw_change_points(pl__strategy *st)
{
    uint32_t count = st->depth - 1;
    for (uint32_t j = 1; j <= count; j++) {
        if (st->horizon < j) {
            st->change[j] = j; /* fewer steps than change points */
            continue;
        }
        bool dup;
        do {
            uint64_t r = pl__prng_next(&st->prng) % st->horizon;
            st->change[j] = r + 1;
            dup = false;
            for (uint32_t i = 1; i < j; i++) {
                dup = dup || st->change[i] == st->change[j];
            }
        } while (dup);
    }
}

/* ---- Horizon estimate --------------------------------------------------- */

typedef struct pct_cache_entry {
    const pl_scenario *sc;
    uint32_t depth;
    uint32_t tasks;
    uint64_t steps;
} pct_cache_entry;

#define PCT_CACHE_SIZE 8
static _Thread_local pct_cache_entry pct_cache[PCT_CACHE_SIZE];
static _Thread_local size_t pct_cache_next;

/* The measuring run must not count as coverage of pl_sometimes sites. */
static uint32_t *save_sometimes(size_t *count)
{
    pl__sometimes_site *sites = pl__sometimes_sites(count);
    uint32_t *saved = *count ? malloc(*count * 2 * sizeof *saved) : NULL;
    for (size_t i = 0; saved != NULL && i < *count; i++) {
        saved[2 * i] = sites[i].hits;
        saved[2 * i + 1] = sites[i].reached;
    }
    return saved;
}

static void restore_sometimes(uint32_t *saved, size_t count)
{
    size_t n;
    pl__sometimes_site *sites = pl__sometimes_sites(&n);
    for (size_t i = 0; saved != NULL && i < count && i < n; i++) {
        sites[i].hits = saved[2 * i];
        sites[i].reached = saved[2 * i + 1];
    }
    free(saved);
}

/* The production run: an empty list (every value 0) with only schedule
 * decisions consulted, so result.decisions counts exactly those. Values
 * are all 0 either way, so the knobs change what is counted, not what
 * the run does. */
static int measure_production(const pl_scenario *sc, const pl_sim_options *o, uint32_t *tasks,
                              uint64_t *steps)
{
    pl_sim_options m;
    if (o != NULL) {
        m = *o;
    } else {
        pl_sim_options_default(&m);
    }
    m.source = PL_SIM_SOURCE_LIST;
    m.decisions = NULL;
    m.decisions_len = 0;
    m.strategy = "random";
    m.knobs = "schedule=on,io_order=off,timer_order=off,timer_late=off,spurious_wake=off,"
              "spurious_poll=off,wake_delay=off,cancel=off,io_fault=off,io_latency=off,"
              "buggify_site=off,buggify_fire=off";
    m.keep_events = false;
    m.keep_decisions = false;
    size_t nsites;
    uint32_t *saved = save_sometimes(&nsites);
    pl_sim_result r;
    int rc = pl_sim_run(sc, &m, &r);
    restore_sometimes(saved, nsites);
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
    pl_sim_options m;
    if (o != NULL) {
        m = *o;
    } else {
        pl_sim_options_default(&m);
    }
    char spec[64];
    snprintf(spec, sizeof spec, "pct:%u:%llu", depth,
             (unsigned long long)(*steps > 0 ? *steps : 1));
    m.source = PL_SIM_SOURCE_SEED;
    m.strategy = spec;
    m.keep_events = false;
    m.keep_decisions = true;
    size_t nsites;
    uint32_t *saved = save_sometimes(&nsites);
    int rc = 0;
    for (uint64_t seed = 0; seed < PCT_CALIBRATION_RUNS && rc == 0; seed++) {
        m.seed = seed;
        pl_sim_result r;
        rc = pl_sim_run(sc, &m, &r);
        if (rc == 0) {
            uint64_t k = schedule_steps(&r);
            *steps = k > *steps ? k : *steps;
            *tasks = r.tasks > *tasks ? r.tasks : *tasks;
        }
        pl_sim_result_free(&r);
    }
    restore_sometimes(saved, nsites);
    return rc;
}

/* PCT's depth in the caller's options; 3, a common choice, otherwise. */
static uint32_t pct_depth_of(const pl_sim_options *o)
{
    pl__strategy_spec spec;
    if (o != NULL && pl__strategy_parse(o->strategy, &spec, NULL, 0) == 0 &&
        spec.kind == PL__STRATEGY_PCT) {
        return spec.depth;
    }
    return 3;
}

int pl__strategy_pct_estimate(const pl_scenario *sc, const pl_sim_options *o, uint32_t *tasks,
                              uint64_t *steps)
{
    uint32_t depth = pct_depth_of(o);
    for (size_t i = 0; i < PCT_CACHE_SIZE; i++) {
        if (pct_cache[i].sc == sc && pct_cache[i].depth == depth) {
            *tasks = pct_cache[i].tasks;
            *steps = pct_cache[i].steps;
            return 0;
        }
    }
    int rc = measure_production(sc, o, tasks, steps);
    if (rc == 0) {
        rc = measure_pct_runs(sc, o, depth, tasks, steps);
    }
    if (rc == 0) {
        pct_cache[pct_cache_next] = (pct_cache_entry){sc, depth, *tasks, *steps};
        pct_cache_next = (pct_cache_next + 1) % PCT_CACHE_SIZE;
    }
    return rc;
}

/* ---- Capture ------------------------------------------------------------ */

static _Thread_local pl__capture *active_capture;

void pl__capture_begin(pl__capture *c)
{
    memset(c, 0, sizeof *c);
    active_capture = c;
}

void pl__capture_end(void) { active_capture = NULL; }

static void capture_note(pl__capture *c, pl__decision_note note)
{
    if (c->len == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        pl__decision_note *p = c->truncated ? NULL : realloc(c->notes, cap * sizeof *p);
        if (p == NULL) {
            c->truncated = true;
            return;
        }
        c->notes = p;
        c->cap = cap;
    }
    c->notes[c->len++] = note;
}

static uint32_t capture_choose(void *ud, pl_decision_kind kind, uint32_t n, uint64_t key,
                               uint32_t fallback)
{
    pl__strategy *st = ud;
    pl__decision_note note = {key, 0, (uint32_t)kind};
    if (kind == PL_DECIDE_SCHEDULE && candidates(st, n)) {
        note.chosen = st->ids[fallback];
    }
    capture_note(st->capture, note);
    return fallback;
}

/* ---- Fairness ----------------------------------------------------------- */

/* Random choices may pass over the task at the head of the run queue
 * without end: with schedule=65536 every pick leaves FIFO order, and a
 * task that yields is queued last and picked again, starving the head
 * for good. Past FAIR_PASSES_MAX consecutive passes the head is taken,
 * so every runnable task gets polled and a run ends; the oracles do not
 * count the passed-over picks meanwhile. Under the default knobs (one
 * pass in two) the bound is never reached in practice. */
#define FAIR_PASSES_MAX 64u

static uint32_t fair_choose(void *ud, pl_decision_kind kind, uint32_t n, uint64_t key,
                            uint32_t fallback)
{
    pl__strategy *st = ud;
    (void)n;
    if (kind != PL_DECIDE_SCHEDULE) {
        return fallback;
    }
    if (key != st->fair_head || fallback == 0) {
        st->fair_head = key;
        st->fair_passes = 0;
    }
    if (fallback == 0 || st->fair_passes == FAIR_PASSES_MAX) {
        st->fair_passes = 0;
        return 0;
    }
    st->fair_passes++;
    return fallback;
}

static int install_fair(pl__sim *s)
{
    pl__strategy *st = calloc(1, sizeof *st);
    if (st == NULL) {
        return PL_ENOMEM;
    }
    st->sim = s;
    s->strategy = st;
    pl__dec_set_strategy(&s->dec, fair_choose, st);
    return 0;
}

/* ---- Install ------------------------------------------------------------ */

/* bounded:K outside the explorer: the enumeration's root. */
static uint32_t zero_choose(void *ud, pl_decision_kind kind, uint32_t n, uint64_t key,
                            uint32_t fallback)
{
    (void)ud, (void)kind, (void)n, (void)key, (void)fallback;
    return 0;
}

static int install_pct(pl__sim *s, const pl__strategy_spec *spec, const pl_sim_options *o)
{
    uint64_t horizon = spec->horizon;
    if (horizon == 0) {
        uint32_t tasks;
        int rc = pl__strategy_pct_estimate(s->scenario, o, &tasks, &horizon);
        if (rc != 0) {
            return rc;
        }
        horizon = horizon > 0 ? horizon : 1;
    }
    pl__strategy *st = calloc(1, sizeof *st);
    if (st == NULL) {
        return PL_ENOMEM;
    }
    st->sim = s;
    st->depth = spec->depth;
    st->horizon = horizon;
    pl__prng_seed(&st->prng, pl__prng_subseed(o->seed, PL__SEED_STRATEGY));
    pct_draw_change_points(st);
    s->strategy = st;
    pl__dec_set_strategy(&s->dec, pct_choose, st);
    return 0;
}

int pl__strategy_install(pl__sim *s, const pl__strategy_spec *spec, const pl_sim_options *o)
{
    s->strategy = NULL;
    if (o->source == PL_SIM_SOURCE_LIST || o->source == PL_SIM_SOURCE_LIST_BY_KIND) {
        if (active_capture == NULL) {
            return 0;
        }
        pl__strategy *st = calloc(1, sizeof *st);
        if (st == NULL) {
            return PL_ENOMEM;
        }
        st->sim = s;
        st->capture = active_capture;
        s->strategy = st;
        pl__dec_set_strategy(&s->dec, capture_choose, st);
        return 0;
    }
    if (spec->kind == PL__STRATEGY_BOUNDED) {
        pl__dec_set_strategy(&s->dec, zero_choose, NULL);
        return 0;
    }
    if (spec->kind == PL__STRATEGY_PCT) {
        return install_pct(s, spec, o);
    }
    /* random and swarm: the PRNG's choices, starvation bounded. A byte
     * source (the fuzzer) ends, and production order resumes with it. */
    return o->source == PL_SIM_SOURCE_SEED ? install_fair(s) : 0;
}

/* ---- Public helpers ----------------------------------------------------- */

double pl_sim_pct_guarantee(uint32_t depth, uint32_t tasks, uint64_t steps)
{
    if (depth == 0 || tasks == 0) {
        return 0.0;
    }
    double k = steps > 0 ? (double)steps : 1.0;
    double p = 1.0 / (double)tasks;
    for (uint32_t i = 1; i < depth; i++) {
        p /= k;
    }
    return p;
}

int pl_sim_pct_estimate(const pl_scenario *sc, const pl_sim_options *opts, uint32_t *tasks,
                        uint64_t *steps)
{
    return pl__strategy_pct_estimate(sc, opts, tasks, steps);
}

int pl_sim_knobs_text(const pl_sim_options *opts, char *buf, size_t len)
{
    pl_sim_options d;
    if (opts == NULL) {
        pl_sim_options_default(&d);
        opts = &d;
    }
    pl__strategy_spec spec;
    if (pl__strategy_parse(opts->strategy, &spec, NULL, 0) != 0) {
        return PL_EINVAL;
    }
    pl__dec_knobs k;
    pl__dec_knobs_default(&k);
    if (spec.kind == PL__STRATEGY_SWARM) {
        pl__dec_knobs_swarm(&k, opts->seed);
    }
    if (opts->knobs != NULL && opts->knobs[0] != '\0' &&
        pl__dec_knobs_parse(&k, opts->knobs, strlen(opts->knobs), NULL, 0) != 0) {
        return PL_EINVAL;
    }
    pl__dec_knobs_format(&k, buf, len);
    return 0;
}

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
    uint64_t level_schedules; /* schedules counted in this pass */
    pl_sim_bounded_result *out;
    int rc;
    bool stop;
} explorer;

static void visit(explorer *e, const pl__dec_record *list, size_t len, uint32_t depth);

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
        for (uint32_t v = 1; v < child[p].n && !e->stop; v++) {
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
    pl_sim_result r;
    if (!run_list(e, list, len, &r)) {
        return;
    }
    if (depth == e->level) {
        e->out->schedules++;
        e->level_schedules++;
        if (r.finding.kind != PL_FINDING_NONE) {
            e->out->finding = r.finding;
            e->out->deviations = depth;
            e->out->run = r; /* the caller frees it */
            e->stop = true;
            return;
        }
        pl_sim_result_free(&r);
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

int pl_sim_explore_bounded(const pl_scenario *sc, uint32_t k, uint64_t max_runs,
                           const pl_sim_options *opts, pl_sim_bounded_result *out)
{
    memset(out, 0, sizeof *out);
    if (sc == NULL || k > PL__STRATEGY_DEPTH_MAX) {
        return PL_EINVAL;
    }
    explorer e = {.sc = sc, .max_runs = max_runs, .out = out};
    if (opts != NULL) {
        e.o = *opts;
    } else {
        pl_sim_options_default(&e.o);
    }
    e.o.source = PL_SIM_SOURCE_LIST;
    e.o.keep_decisions = true;
    for (uint32_t level = 0; level <= k && !e.stop; level++) {
        e.level = level;
        e.level_schedules = 0;
        visit(&e, NULL, 0, 0);
        if (e.stop) {
            break;
        }
        out->levels_done = level + 1;
        if (e.level_schedules == 0) {
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
