/* sim/src/strategy.c: PCT, fairness, swarm knobs, capture (per-run hooks).
 *
 * Strategies sit on the decision stream's hook (decide.h). The stream
 * records the value a hook returns, so every run, whatever chose its
 * values, is reproduced by its recorded list alone: nothing here is
 * installed on a list source except the pass-through capture hook. No
 * run starts here: PCT's horizon is measured by the caller (pct.c), and
 * bounded exploration is a driver of its own (explore.c).
 */
#include "strategy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "digits.h"
#include "grow.h"
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
    size_t prio_cap;
    uint64_t *thread_prio;    /* by simulated thread id; 0: not seen yet */
    size_t thread_prio_cap;
    uint32_t *ids;            /* candidate buffer */
    size_t ids_cap;
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
        free(st->thread_prio);
        free(st->ids);
        free(st);
    }
}

static bool reserve_ids(pl__strategy *st, uint32_t n)
{
    return pl__grow((void **)&st->ids, &st->ids_cap, n, sizeof *st->ids, n, 0) == 0;
}

/* Candidates of the schedule decision being made, in queue order; false
 * when they cannot be read (the caller then keeps the source's value). */
static bool candidates(pl__strategy *st, uint32_t n)
{
    return reserve_ids(st, n) && pl__executor_runnable_ids(st->sim->ex, st->ids, n) == n;
}

/* ---- Fairness ----------------------------------------------------------- */

/* Random choices, and PCT's priorities, may pass over the task at the
 * head of the run queue without end: with schedule=65536 every pick
 * leaves FIFO order, and a task that yields is queued last and picked
 * again, starving the head for good (PCT does the same to a task below a
 * yielding one that is not spinning on itself alone). Past
 * FAIR_PASSES_MAX consecutive passes the head is taken, so every
 * runnable task gets polled and a run ends; the oracles do not count the
 * passed-over picks meanwhile. Under the default knobs (one pass in two)
 * the bound is never reached in practice. */
#define FAIR_PASSES_MAX 64u

/* `choice` for a schedule decision whose head task is `head`, or 0 when
 * the head was passed over FAIR_PASSES_MAX times in a row. */
static uint32_t fair_bound(pl__strategy *st, uint64_t head, uint32_t choice)
{
    if (head != st->fair_head || choice == 0) {
        st->fair_head = head;
        st->fair_passes = 0;
    }
    if (choice == 0 || st->fair_passes == FAIR_PASSES_MAX) {
        st->fair_passes = 0;
        return 0;
    }
    st->fair_passes++;
    PL__SIM_ASSERT(st->fair_passes <= FAIR_PASSES_MAX);
    return choice;
}

/* ---- PCT ---------------------------------------------------------------- */

/* Initial priorities live in [64, 2^62 + 64): above every change-point
 * priority (1..63) and below the top bit, which marks "not spinning". */
#define PCT_PRIO_FLOOR 64u
#define PCT_NOT_SPINNING (UINT64_C(1) << 63)

static uint64_t pct_priority(pl__strategy *st, uint32_t id)
{
    if (pl__grow((void **)&st->prio, &st->prio_cap, (size_t)id + 1, sizeof *st->prio, 64, 0) !=
        0) {
        return PCT_PRIO_FLOOR; /* ties break by queue order */
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
    bool spinning = pl__tasks_self_wakes(st->sim, id) >= PCT_SPIN_MIN;
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

/* Simulated threads get PCT priorities of their own (thread ids are
 * not task ids): the highest-ranked runnable thread runs, and at a
 * change point the chosen one drops below every initial priority. A
 * yielding thread is not among the choices (threads/sched.c). */
static uint64_t pct_thread_priority(pl__strategy *st, uint32_t id)
{
    if (pl__grow((void **)&st->thread_prio, &st->thread_prio_cap, (size_t)id + 1,
                 sizeof *st->thread_prio, 8, 0) != 0) {
        return PCT_PRIO_FLOOR;
    }
    if (st->thread_prio[id] == 0) {
        st->thread_prio[id] = PCT_PRIO_FLOOR + (pl__prng_next(&st->prng) >> 2);
    }
    return st->thread_prio[id];
}

static uint32_t pct_choose_thread(pl__strategy *st, uint32_t n, uint32_t fallback)
{
    const uint32_t *ids = pl__threads_choices(st->sim, n);
    if (ids == NULL) {
        return fallback; /* which waiter to wake: not a priority question */
    }
    st->step++;
    uint32_t best = 0;
    uint64_t best_prio = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t p = pct_thread_priority(st, ids[i]);
        if (p > best_prio) {
            best_prio = p;
            best = i;
        }
    }
    for (uint32_t j = 1; j < st->depth; j++) {
        if (st->change[j] == st->step && ids[best] < st->thread_prio_cap) {
            st->thread_prio[ids[best]] = st->depth - j;
        }
    }
    return best;
}

static uint32_t pct_choose(void *ud, pl_decision_kind kind, uint32_t n, uint64_t key,
                           uint32_t fallback)
{
    pl__strategy *st = ud;
    if (kind == PL_DECIDE_THREAD_SWITCH) {
        return pct_choose_thread(st, n, fallback);
    }
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
    best = fair_bound(st, key, best);
    PL__SIM_ASSERT(best < n);
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
        PL__SIM_ASSERT(st->change[j] >= 1 &&
                       (st->change[j] <= st->horizon || st->horizon < count));
    }
}

/* ---- Capture ------------------------------------------------------------ */

static void capture_note(pl__capture *c, pl__decision_note note)
{
    if (c->truncated ||
        pl__grow_append((void **)&c->notes, &c->cap, c->len + 1, sizeof *c->notes, 256, 0) !=
            0) {
        c->truncated = true;
        return;
    }
    c->notes[c->len++] = note;
}

static uint32_t capture_choose(void *ud, pl_decision_kind kind, uint32_t n, uint64_t key,
                               uint32_t fallback)
{
    pl__strategy *st = ud;
    pl__decision_note note = {.key = key, .kind = (uint32_t)kind};
    if (kind == PL_DECIDE_SCHEDULE && candidates(st, n)) {
        note.chosen = st->ids[fallback];
    }
    capture_note(st->capture, note);
    /* Valid until the next decision: the asker may say what it chose. */
    pl__capture *c = st->capture;
    st->sim->decision_text = c->truncated ? NULL : c->notes[c->len - 1].what;
    return fallback;
}

static uint32_t fair_choose(void *ud, pl_decision_kind kind, uint32_t n, uint64_t key,
                            uint32_t fallback)
{
    (void)n;
    return kind == PL_DECIDE_SCHEDULE ? fair_bound(ud, key, fallback) : fallback;
}

static int install_fair(pl__sim *s)
{
    pl__strategy *st = calloc(1, sizeof *st);
    if (st == NULL) {
        return PL_ENOMEM;
    }
    st->sim = s;
    s->strategy = st;
    pl__dec_set_strategy_kinds(&s->dec, fair_choose, st, 1u << PL_DECIDE_SCHEDULE);
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
    /* pl_sim_run measured the horizon before the run when neither the
     * spec nor the caller gave it. */
    uint64_t horizon = spec->horizon != 0 ? spec->horizon : o->pct_horizon;
    PL__SIM_ASSERT(horizon != 0);
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
    pl__dec_set_strategy_kinds(&s->dec, pct_choose, st,
                               1u << PL_DECIDE_SCHEDULE | 1u << PL_DECIDE_THREAD_SWITCH);
    return 0;
}

bool pl__strategy_list_source(const pl_sim_options *o)
{
    return o->source == PL_SIM_SOURCE_LIST || o->source == PL_SIM_SOURCE_LIST_BY_KIND ||
           o->source == PL_SIM_SOURCE_PREFIX;
}

bool pl__strategy_needs_horizon(const pl_sim_options *o)
{
    pl__strategy_spec spec;
    return o->pct_horizon == 0 && !pl__strategy_list_source(o) &&
           pl__strategy_parse(o->strategy, &spec, NULL, 0) == 0 &&
           spec.kind == PL__STRATEGY_PCT && spec.horizon == 0;
}

int pl__strategy_install(pl__sim *s, const pl__strategy_spec *spec, const pl_sim_options *o,
                         pl__capture *capture)
{
    s->strategy = NULL;
    if (pl__strategy_list_source(o)) {
        if (capture == NULL) {
            return 0;
        }
        pl__strategy *st = calloc(1, sizeof *st);
        if (st == NULL) {
            return PL_ENOMEM;
        }
        st->sim = s;
        st->capture = capture;
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
