/* sim/src/campaign.h: the parts of a campaign (many seeds of one
 * scenario) that pl_sim_campaign and the CLI's `run` share, so that
 * both give the same findings for the same range:
 *  - seed ranges: a range split across shards and workers (slices);
 *  - one seed: the run, then (when asked) the determinism check, which
 *    reruns the seed and turns a different trace into a nondeterminism
 *    finding positioned at the first event where the runs part;
 *  - the tally: distinct trace hashes and pl_sometimes counters summed
 *    over the seeds (the CLI sums what its workers send);
 *  - the pl_sometimes verdict over a whole range.
 * Nothing here forks or reads a clock: the CLI adds the processes. */
#ifndef POLLEN_SIM_CAMPAIGN_H
#define POLLEN_SIM_CAMPAIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim.h"
#include "decide.h"
#include "hashset.h"
#include "trace.h"

/* Seed ranges: the seeds one worker (or one in-process campaign) runs:
 * first, first + stride, ... in increasing order, `last` + 1 of them. A slice counts its seeds by the index of
 * the last one because the whole seed space holds 2^64 seeds, one more
 * than a uint64_t counts. */
typedef struct pl__seed_slice {
    uint64_t first;
    uint64_t stride;
    uint64_t last; /* index of the last seed; 0 when empty */
    bool empty;    /* no seed at all */
} pl__seed_slice;

/* Seeds [lo, hi] are split across shards, then across jobs:
 *   - shard k of n (1-based) owns seed s when (s - lo) mod n == k - 1;
 *   - job j of `jobs` (0-based) owns the shard's i-th seed (i from 0, in
 *     increasing order) when i mod jobs == j.
 * The intersection is itself an arithmetic progression, returned here.
 * Over all k and j the slices cover [lo, hi] exactly once (the whole
 * shard is the slice of j = 0, jobs = 1; [lo, hi] is the slice of shard
 * 1 of 1). Requires lo <= hi, 1 <= k <= n, j < jobs (the CLI bounds n and
 * jobs, cli.h). */
pl__seed_slice pl__seed_slice_of(uint64_t lo, uint64_t hi, uint32_t k, uint32_t n, uint32_t j,
                                 uint32_t jobs);

/* True when the slice has an i-th seed (i < its count). */
bool pl__seed_slice_has(const pl__seed_slice *s, uint64_t i);

/* The i-th seed of a slice (requires pl__seed_slice_has(s, i)). */
uint64_t pl__seed_slice_seed(const pl__seed_slice *s, uint64_t i);

/* The seeds of s from its i-th on (empty when it has no i-th seed): what
 * a fresh worker resumes after one that ran i seeds of s. */
pl__seed_slice pl__seed_slice_rest(const pl__seed_slice *s, uint64_t i);

/* The number of seeds of s in decimal, "18446744073709551616" for the
 * whole seed space. Returns the length like snprintf. */
int pl__seed_slice_count_text(const pl__seed_slice *s, char *buf, size_t len);

/* Runs seed so->seed of sc (so->source PL_SIM_SOURCE_SEED) into r; with
 * check_det, runs it again and, on a different hash, replaces r's
 * finding with a nondeterminism finding. Returns pl_sim_run's code (r
 * must be freed with pl_sim_result_free either way). */
int pl__campaign_seed(const pl_scenario *sc, const pl_sim_options *so, bool check_det,
                      pl_sim_result *r);

/* Timelines of a run made with keep_events: its event log (NULL, 0
 * without one), and the namer of its tasks for pl__trace_write_text and
 * pl__trace_write_chrome (ud: pl__sim_result_record of the run). */
const pl__trace_rec *pl__result_events(const pl_sim_result *r, size_t *len);
const char *pl__result_task_name(void *ud, uint32_t task);

/* A PL_BUGGIFY site over a campaign. Plain bytes (no pointer), so a
 * worker sends its array to the parent as it is. */
typedef struct pl__cover_buggify {
    uint64_t key;          /* the site's decision key (pl__site_key) */
    uint64_t reached;      /* evaluations */
    uint64_t runs_enabled; /* runs in which it was enabled */
    uint64_t fired;        /* evaluations that fired */
    int32_t line;          /* 0: location unknown */
    char file[128];        /* base name */
    char func[64];
} pl__cover_buggify;

/* What a campaign adds up over its seeds. Initialise with
 * pl__campaign_tally_init, free with pl__campaign_tally_free. */
typedef struct pl__campaign_tally {
    pl__hashset hashes; /* distinct trace hashes (a lower bound when full) */
    uint64_t *sites;    /* hits, reached per pl_sometimes site, summed */
    char *last;         /* per site, PL__SOMETIMES_LAST bytes: the latest message
                           of a run (or a worker) that never saw it true; "" none */
    size_t nsites;      /* sites linked into the program */
    uint64_t consulted[PL_DECIDE__COUNT]; /* decisions consulted, per kind */
    uint64_t deviated[PL_DECIDE__COUNT];  /* of those, values other than 0 */
    uint64_t discarded;                   /* runs a pl_assume discarded */
    pl__cover_buggify *buggify; /* in the order the campaign met them (grow.h) */
    size_t nbuggify, capbuggify;
    pl__hashmap buggify_index;  /* key -> position */
} pl__campaign_tally;

/* Returns 0 or PL_ENOMEM (t is then still safe to free). */
int pl__campaign_tally_init(pl__campaign_tally *t);
void pl__campaign_tally_free(pl__campaign_tally *t);

/* The tally's pl_sometimes counts as (hits, reached) pairs, as a worker
 * sends them: 2 * t->nsites entries, each capped at UINT32_MAX; NULL on
 * PL_ENOMEM. The caller frees it. */
uint32_t *pl__campaign_tally_counts(const pl__campaign_tally *t);

/* Adds (hits, reached) pairs for n sites. Returns false, adding nothing,
 * when n is not the program's site count. */
bool pl__campaign_tally_sites(pl__campaign_tally *t, const uint32_t *counts, size_t n);

/* Adds a finished run's decisions per kind, buggify sites and
 * pl_sometimes counts (its record; a run without one adds nothing). Returns 0 or PL_ENOMEM. */
int pl__campaign_tally_run(pl__campaign_tally *t, const pl_sim_result *r);

/* Adds another tally's decisions per kind and n buggify sites (a
 * worker's, the parent adds them up). Returns 0 or PL_ENOMEM. */
int pl__campaign_tally_cover(pl__campaign_tally *t, const uint64_t *consulted,
                             const uint64_t *deviated, const pl__cover_buggify *sites, size_t n);

/* Whether a pl_sometimes verdict can be given over [lo, hi]: a single
 * seed is never judged on a site (one run says nothing about "sometimes"). */
bool pl__campaign_sometimes_judged(uint64_t lo, uint64_t hi);

/* The verdict on a pl_sometimes site from its counts over a complete
 * range: true when it fails (reached and never true, or never reached
 * though written in the scenario's own file: `own`), with f set to the
 * assertion finding naming it; `last` (may be NULL or ""), the site's
 * message formatted the last time it was false, ends the finding's when
 * it says more than the format. */
bool pl__campaign_sometimes_failed(const char *msg, const char *file, int line, const char *func,
                                   bool own, uint64_t hits, uint64_t reached, const char *last,
                                   pl_finding *f);

/* Keeps `text` (len bytes, cut to fit) as site i's latest false message
 * (pl_sometimes's formatted arguments). Ignored for a bad index. */
void pl__campaign_tally_last(pl__campaign_tally *t, size_t i, const char *text, size_t len);

/* The verdict on site i after a complete range: true when it fails
 * (reached and never true, or, for a site written in sc's own file,
 * never reached), with f set to the assertion finding. Sites of other
 * files that no run reached belong to other scenarios. */
bool pl__campaign_site_failed(const pl__campaign_tally *t, const pl_scenario *sc, size_t i,
                              pl_finding *f);

#endif
