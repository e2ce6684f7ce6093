/* sim/src/strategy.h: exploration strategies on the decision stream.
 *
 * A strategy decides how a run leaves production's order. Specs, as the
 * `strategy` option and `--strategy` spell them:
 *
 *   random       the PRNG source with the knobs (decide.h), through the
 *                fairness hook below.
 *   swarm        random, with knobs drawn per seed (pl__dec_knobs_swarm).
 *   pct:D[:K]    PCT with depth D (1..64), Burckhardt et al., ASPLOS 2010.
 *                K (1..2^32) is the horizon for the change points; without
 *                it, K is pl_sim_options.pct_horizon, which the caller
 *                measures once (pl_sim_pct_estimate: the most schedule
 *                decisions made by the scenario's production run, every
 *                decision 0, and by 8 PCT runs over that first horizon;
 *                PCT's runs are often much longer than production's, and
 *                change points drawn over production's steps alone never
 *                reach their later steps). pl_sim_run measures it before
 *                the run when the caller passed 0.
 *   bounded:K    systematic exploration of every schedule with at most K
 *                (0..64) non-zero decisions: pl_sim_explore_bounded. A
 *                single run with this spec is the production schedule
 *                (the enumeration's root): every decision 0.
 *
 * Fairness (random and swarm on a PRNG source). The PRNG may pass over
 * the task at the head of the run queue (the FIFO head, the decision's
 * key) at every schedule decision: with schedule=65536 a task that yields
 * is queued last and picked again forever, starving the task it waits
 * for. The hook lets at most 64 consecutive schedule decisions pass over
 * the same head; the next one takes it (value 0). The source's draw still
 * happens, so the PRNG stream stays aligned. Under the default knobs a
 * run of 65 passes has probability 2^-65 per head and never happens in
 * practice, so default runs are unchanged. Starvation by the decisions is
 * not a finding: the oracles count toward livelock only the polls that
 * production's FIFO order would make too (oracle.c).
 *
 * PCT, as installed on a run. Tasks get distinct random priorities the
 * first time the strategy sees them among the candidates of a schedule
 * decision, drawn from a generator seeded with pl__prng_subseed(seed,
 * PL__SEED_STRATEGY), so the seed alone reproduces the run. D - 1 change
 * points are drawn at the start: distinct schedule-decision numbers,
 * uniform in [1, K]. At the i-th schedule decision the candidate with the
 * highest priority is chosen; when i is the j-th change point (j = 1..D-1,
 * in draw order) the chosen task's priority drops to D - j, below every
 * task's initial priority, after it is chosen (as in the paper: the task
 * takes this step, then yields its rank). Two departures from the paper,
 * both for poll/waker code:
 *   - only the candidates the executor offers (its schedule window, the
 *     first 16 runnable tasks by default) can be chosen;
 *   - a task whose latest 32 or more polls only re-woke itself (a
 *     spin-wait) ranks below every task that is not spinning, so a
 *     high-priority spinner cannot starve the task it waits for into a
 *     false livelock (as Coyote's fair PCT, but local to the spinner).
 * Other decision kinds keep the PRNG's value. The values PCT chose are
 * recorded like any others, so a replay (list source) reproduces the run
 * without the strategy: strategies are never installed on list sources.
 *
 * Guarantee: for a bug of depth d in a program with at most n tasks and
 * k steps, one PCT run finds it with probability at least
 * 1 / (n * k^(d-1)) (pl_sim_pct_guarantee in sim.h).
 */
#ifndef POLLEN_SIM_STRATEGY_H
#define POLLEN_SIM_STRATEGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim.h"
#include "sim_internal.h" /* PL__DECISION_TEXT_MAX */

typedef enum pl__strategy_kind {
    PL__STRATEGY_RANDOM = 0,
    PL__STRATEGY_SWARM = 1,
    PL__STRATEGY_PCT = 2,
    PL__STRATEGY_BOUNDED = 3,
} pl__strategy_kind;

#define PL__STRATEGY_DEPTH_MAX 64u

typedef struct pl__strategy_spec {
    pl__strategy_kind kind;
    uint32_t depth;   /* pct: D; bounded: K; otherwise 0 */
    uint64_t horizon; /* pct: K from "pct:D:K"; 0: estimate */
} pl__strategy_spec;

/* Parses a strategy spec (NULL means "random"). Returns 0, or PL_EINVAL
 * with a message in err such as "bad strategy 'pct:0': the depth D of
 * pct:D must be 1 to 64" (err may be NULL). */
int pl__strategy_parse(const char *text, pl__strategy_spec *out, char *err, size_t err_len);

struct pl__sim;
typedef struct pl__strategy pl__strategy;

typedef struct pl__capture pl__capture;

/* True for the list sources, on which no strategy but the capture is
 * installed. */
bool pl__strategy_list_source(const pl_sim_options *o);

/* True when a run with `o` is PCT without a horizon: neither K in the
 * spec nor o->pct_horizon. pl_sim_run then measures it first. */
bool pl__strategy_needs_horizon(const pl_sim_options *o);

/* Installs the strategy of `spec` on s->dec and stores its per-run state
 * in s->strategy (NULL when the strategy needs none: bounded, a byte
 * source, or a list source without a capture). Call after the source is
 * selected. PCT needs its horizon (the spec's K or o->pct_horizon; it is
 * an invariant that one is set). `capture` (NULL: none) gets the notes of
 * a list source's run (see below). Starts no run. Returns 0 or
 * PL_ENOMEM. */
int pl__strategy_install(struct pl__sim *s, const pl__strategy_spec *spec,
                         const pl_sim_options *o, pl__capture *capture);

/* Frees per-run strategy state; NULL is a no-op. */
void pl__strategy_free(pl__strategy *st);

/* ---- Explaining decisions --------------------------------------------
 * A run with a list source and a capture (pl__sim_run_captured) gets a
 * pass-through hook that notes, per consulted decision, its key and, for
 * schedule decisions, the id of the task chosen. The shrinker uses it to
 * name the FIFO head and the task polled instead. */
typedef struct pl__decision_note {
    uint64_t key;    /* the decision's subject (head task id, timer seq, ...) */
    uint32_t chosen; /* schedule: id of the task polled; otherwise 0 */
    uint32_t kind;
    char what[PL__DECISION_TEXT_MAX]; /* what it chose, in words, when the code
                                         that asked said (pl__sim_decision_text) */
} pl__decision_note;

struct pl__capture {
    pl__decision_note *notes; /* owned; free() it */
    size_t len;
    size_t cap;
    bool truncated;           /* out of memory: notes is a prefix */
};

#endif
