/* sim/src/shrink.c: the shrinker (its explanation is shrink_explain.c).
 *
 * The shrinker works on the decision list only. A list is smaller when
 * it leaves production's order in fewer decisions (fewer non-zero
 * values), then when it is shorter, then when it is smaller value by
 * value (shortlex, like Hypothesis): what a reader has to understand is
 * the departures, so a longer list with fewer of them is the better
 * explanation. Every candidate is an edit of the best list so far; a
 * candidate that still fails with the same finding kind is replaced by
 * what its run actually consulted (its record, trailing zeros trimmed),
 * which replays exactly, without divergence, and is adopted only when
 * smaller. Only complete records are adopted: a truncated one is a
 * prefix that replays something else. The final list is run once more
 * the way `pollen replay` reads it (positionally), and the shrink fails
 * unless that run fails with the same kind, without divergence,
 * recording exactly that list: what is written is what was verified.
 *
 * Order of the work: a finding at the virtual time limit first shrinks
 * the limit (every later candidate then runs a shorter run); then the
 * bulk passes (drop the tail, zero whole kinds, keep only the last
 * departures, delete chunks, zero chunks, lower values) until they stop
 * helping; then the cause passes (each departure alone, zeroed and the
 * rest of the list re-aligned with what the run then asks), and the bulk
 * passes again, until a whole round changes nothing; then the limit
 * again.
 *
 * The budget counts candidate runs (default 100000), so the result
 * depends only on the input: the same finding shrinks to the same list,
 * in the same number of runs, on any machine. A wall-clock limit exists
 * only as a safety net for the CLI (a scenario whose runs are slow); the
 * result says when it stopped the shrink, the one case where it is not
 * reproducible.
 */
#include "shrink.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "env/env.h"
#include "grow.h"
#include "isolate/ring_read.h"
#include "pollen/error.h"
#include "replay.h"
#include "run.h"
#include "run_record.h"
#include "sim_assert.h"
#include "sim_internal.h"
#include "strategy.h"

#define SHRINK_RUNS_DEFAULT 100000u

typedef struct shrinker {
    const pl_scenario *sc;
    pl_sim_options o;
    pl_finding_kind kind;
    pl__dec_record *cur;  /* the best list so far, owned */
    size_t len;
    pl__dec_record *cand; /* scratch for candidates, cap entries */
    size_t cap;
    uint64_t runs;
    uint64_t runs_max;
    pl_time start_ns;
    pl_time time_ns;      /* the wall-clock safety net; 0: none */
    bool out_of_budget;
    bool clock_hit;       /* the safety net stopped it */
    bool at_limit;        /* a finding at the virtual time limit: keep its stuck tasks */
    uint32_t stuck_len;
    uint32_t stuck[PL_FINDING_TASKS_MAX];
    pl_time limit_before; /* the effective limit of the input's run */
    pl__shrink_runner_fn runner; /* livelock and crash candidates; NULL: in-process */
    size_t start_nonzero; /* departures of the first list adopted */
    bool verified;        /* the final run reproduced the finding from cur */
    int rc;               /* first internal error */
} shrinker;

/* Livelocks and crashes run through the runner: a poll that never
 * returns, or a candidate that kills its process, ends only a child. */
static bool isolated(const shrinker *sh)
{
    return sh->runner != NULL &&
           (sh->kind == PL_FINDING_LIVELOCK || sh->kind == PL_FINDING_CRASH);
}

/* One run of the shrink: through the runner when isolated. */
static int run_once(const shrinker *sh, const pl_sim_options *o, pl_sim_result *r, bool *hung)
{
    *hung = false;
    if (isolated(sh)) {
        return sh->runner(sh->sc, o, r, hung);
    }
    return pl_sim_run(sh->sc, o, r);
}

/* memcpy of records: with n == 0 either pointer may be NULL (an empty
 * list, a scratch buffer never grown), which memcpy does not allow. */
static void copy_records(pl__dec_record *dst, const pl__dec_record *src, size_t n)
{
    if (n > 0) {
        memcpy(dst, src, n * sizeof *dst);
    }
}

static size_t count_nonzero(const pl__dec_record *d, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) {
        c += d[i].value != 0;
    }
    return c;
}

/* Values past a list's end read as 0, so trailing zeros say nothing. */
static size_t trimmed_len(const pl__dec_record *d, size_t n)
{
    while (n > 0 && d[n - 1].value == 0) {
        n--;
    }
    return n;
}

static bool shortlex_less(const pl__dec_record *a, size_t na, const pl__dec_record *b, size_t nb)
{
    if (na != nb) {
        return na < nb;
    }
    for (size_t i = 0; i < na; i++) {
        if (a[i].value != b[i].value) {
            return a[i].value < b[i].value;
        }
    }
    return false;
}

/* The order the shrinker descends: fewer departures, then shortlex. */
static bool smaller(const pl__dec_record *a, size_t na, const pl__dec_record *b, size_t nb)
{
    size_t ca = count_nonzero(a, na), cb = count_nonzero(b, nb);
    return ca != cb ? ca < cb : shortlex_less(a, na, b, nb);
}

/* The clock is read only when a safety net is set: the run count alone
 * decides where a shrink without one ends. */
static bool budget_left(shrinker *sh)
{
    if (sh->rc == 0 && sh->runs < sh->runs_max && sh->time_ns > 0 &&
        pl__env_real_now() - sh->start_ns >= sh->time_ns) {
        sh->clock_hit = true;
    }
    if (sh->rc != 0 || sh->runs >= sh->runs_max || sh->clock_hit) {
        sh->out_of_budget = sh->rc == 0;
        return false;
    }
    return true;
}

/* Makes `list` (n entries; may alias nothing owned by sh) the best list:
 * the first one, or one smaller than the best, so the descent ends. */
static bool adopt(shrinker *sh, const pl__dec_record *list, size_t n)
{
    PL__SIM_ASSERT(sh->cur == NULL || smaller(list, n, sh->cur, sh->len));
    /* Trailing zeros say nothing (a list's end reads as 0): the best list
     * never ends in one, so every proper prefix of it is smaller. */
    PL__SIM_ASSERT(n == trimmed_len(list, n));
    pl__dec_record *copy = malloc((n ? n : 1) * sizeof *copy);
    if (copy == NULL) {
        sh->rc = PL_ENOMEM;
        return false;
    }
    copy_records(copy, list, n);
    free(sh->cur);
    sh->cur = copy;
    sh->len = n;
    if (pl__grow((void **)&sh->cand, &sh->cap, n, sizeof *sh->cand, n, 0) != 0) {
        sh->rc = PL_ENOMEM;
        return false;
    }
    return true;
}

/* Runs a candidate into *r (free it). False when out of budget or when
 * the run could not start. */
static bool run_candidate(shrinker *sh, const pl__dec_record *list, size_t n, pl_sim_result *r)
{
    if (!budget_left(sh)) {
        return false;
    }
    sh->o.decisions = list;
    sh->o.decisions_len = n;
    bool hung;
    int rc = run_once(sh, &sh->o, r, &hung);
    sh->runs++;
    if (rc != 0) {
        sh->rc = rc;
        pl_sim_result_free(r);
        return false;
    }
    return true;
}

/* A finding raised at the virtual time limit (check_probe.c's
 * pl__probe_time_limit) says so first. */
#define AT_LIMIT_PREFIX "virtual time limit of "

static bool finding_at_limit(const pl_finding *f)
{
    return strncmp(f->message, AT_LIMIT_PREFIX, sizeof AT_LIMIT_PREFIX - 1) == 0;
}

/* Whether r shows the finding kept: its kind, and for a finding at the
 * time limit, at the limit with the same stuck tasks. */
static bool same_finding(const shrinker *sh, const pl_sim_result *r)
{
    const pl_finding *f = &r->finding;
    if (f->kind != sh->kind) {
        return false;
    }
    if (!sh->at_limit) {
        return true;
    }
    if (!finding_at_limit(f) || f->tasks_len != sh->stuck_len) {
        return false;
    }
    for (uint32_t i = 0; i < f->tasks_len; i++) {
        if (f->tasks[i].id != sh->stuck[i]) {
            return false;
        }
    }
    return true;
}

/* When a candidate's run r failed with the kind and its normalized list is
 * smaller than the best, adopts that. Returns whether it adopted. */
static bool consider(shrinker *sh, const pl_sim_result *r)
{
    if (!same_finding(sh, r)) {
        return false;
    }
    /* The candidate itself is read by kind, not positionally: only the
     * run's own complete record is a list that replays it. */
    const pl__run_record *rec = pl__sim_result_record(r);
    if (rec == NULL || rec->decisions_truncated) {
        return false;
    }
    const pl__dec_record *norm = rec->decisions;
    size_t nn = trimmed_len(rec->decisions, rec->decisions_len);
    if (!smaller(norm, nn, sh->cur, sh->len)) {
        return false;
    }
    return adopt(sh, norm, nn);
}

static bool try_list(shrinker *sh, const pl__dec_record *list, size_t n)
{
    pl_sim_result r;
    if (!run_candidate(sh, list, n, &r)) {
        return false;
    }
    bool adopted = consider(sh, &r);
    pl_sim_result_free(&r);
    return adopted;
}

/* try_list for the bulk passes' edits (a prefix, a chunk deleted or
 * zeroed, a kind zeroed, a value lowered): each is smaller than the best
 * list by construction, which is what makes the descent end. */
static bool try_edit(shrinker *sh, const pl__dec_record *list, size_t n)
{
    PL__SIM_ASSERT(smaller(list, n, sh->cur, sh->len));
    return try_list(sh, list, n);
}

/* ---- Passes -------------------------------------------------------------
 * Each returns whether it made progress. They re-read sh->cur after every
 * adoption: a success may change the list's length and contents. */

/* Binary search for the shortest failing prefix (not monotone in
 * general, so a heuristic; the other passes pick up the rest). */
static bool pass_tail(shrinker *sh)
{
    bool progress = false;
    size_t lo = 0;
    size_t hi = sh->len;
    while (lo < hi && budget_left(sh)) {
        size_t mid = lo + (hi - lo) / 2;
        if (try_edit(sh, sh->cur, mid)) {
            progress = true;
            hi = sh->len < mid ? sh->len : mid;
        } else {
            lo = mid + 1;
        }
    }
    return progress;
}

static bool pass_delete(shrinker *sh)
{
    bool progress = false;
    for (size_t size = sh->len / 2 ? sh->len / 2 : 1; size >= 1 && sh->len > 0; size /= 2) {
        size_t i = 0;
        while (i < sh->len && budget_left(sh)) {
            size_t chunk = sh->len - i < size ? sh->len - i : size;
            copy_records(sh->cand, sh->cur, i);
            copy_records(sh->cand + i, sh->cur + i + chunk, sh->len - i - chunk);
            if (try_edit(sh, sh->cand, sh->len - chunk)) {
                progress = true; /* retry the same place: new items slid in */
            } else {
                i += chunk;
            }
        }
        if (size == 1 || !budget_left(sh)) {
            break;
        }
    }
    return progress;
}

static bool any_nonzero(const pl__dec_record *d, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        if (d[i].value != 0) {
            return true;
        }
    }
    return false;
}

static bool pass_zero(shrinker *sh)
{
    bool progress = false;
    for (size_t size = sh->len / 2 ? sh->len / 2 : 1; size >= 1 && sh->len > 0; size /= 2) {
        for (size_t i = 0; i < sh->len && budget_left(sh); i += size) {
            size_t end = i + size < sh->len ? i + size : sh->len;
            if (!any_nonzero(sh->cur, i, end)) {
                continue;
            }
            copy_records(sh->cand, sh->cur, sh->len);
            for (size_t j = i; j < end; j++) {
                sh->cand[j].value = 0;
            }
            progress |= try_edit(sh, sh->cand, sh->len);
        }
        if (size == 1 || !budget_left(sh)) {
            break;
        }
    }
    return progress;
}

/* Zeroes every decision of one kind at once (all the timer lateness, all
 * the spurious wakes...): a failure usually needs one or two kinds of
 * deviation, and chunks of positions mix kinds, so this removes in one
 * run what pass_zero could only remove decision by decision, if at all
 * (zeroing one of many interdependent delays often loses the failure,
 * zeroing all of them not). */
static bool pass_zero_kind(shrinker *sh)
{
    bool progress = false;
    for (uint32_t kind = 0; kind < PL_DECIDE__COUNT && sh->len > 0 && budget_left(sh); kind++) {
        bool any = false;
        copy_records(sh->cand, sh->cur, sh->len);
        for (size_t j = 0; j < sh->len; j++) {
            if (sh->cand[j].kind == kind && sh->cand[j].value != 0) {
                sh->cand[j].value = 0;
                any = true;
            }
        }
        if (any) {
            progress |= try_edit(sh, sh->cand, sh->len);
        }
    }
    return progress;
}

/* Tries value v at position i of the best list. */
static bool try_value(shrinker *sh, size_t i, uint32_t v)
{
    PL__SIM_ASSERT(i < sh->len);
    copy_records(sh->cand, sh->cur, sh->len);
    sh->cand[i].value = v;
    return try_edit(sh, sh->cand, sh->len);
}

static bool pass_lower(shrinker *sh)
{
    bool progress = false;
    for (size_t i = 0; i < sh->len && budget_left(sh); i++) {
        uint32_t lo = 1;
        uint32_t hi = sh->cur[i].value; /* known to fail */
        while (lo < hi && i < sh->len && budget_left(sh)) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (try_value(sh, i, mid)) {
                progress = true;
                hi = i < sh->len && sh->cur[i].value < mid ? sh->cur[i].value : mid;
            } else {
                lo = mid + 1;
            }
        }
    }
    return progress;
}

/* Zeroing a decision often changes which decisions follow it (a buggify
 * site that no longer fires arms no timer, so no lateness is asked), and
 * every later value then lands on the wrong decision. This pass zeroes
 * one value and re-aligns the rest of the list with what the run asked
 * for: where the kinds first disagree, it drops the list's entry (when
 * the next one fits) or inserts a 0 for the new decision, and runs
 * again, up to REALIGN_MAX times. */
#define REALIGN_MAX 8

static size_t first_kind_mismatch(const pl__dec_record *l, size_t nl, const pl_sim_result *r)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    size_t n = rec != NULL ? rec->decisions_len : 0;
    n = n < nl ? n : nl;
    for (size_t i = 0; i < n; i++) {
        if (l[i].kind != rec->decisions[i].kind) {
            return i;
        }
    }
    return SIZE_MAX;
}

/* One re-alignment edit of cand (*len entries, room for one more). */
static bool realign(pl__dec_record *cand, size_t *len, const pl_sim_result *r)
{
    size_t j = first_kind_mismatch(cand, *len, r);
    if (j == SIZE_MAX) {
        return false;
    }
    PL__SIM_ASSERT(j < *len && j < pl__sim_result_record(r)->decisions_len);
    const pl__dec_record *asked = &pl__sim_result_record(r)->decisions[j];
    if (j + 1 < *len && cand[j + 1].kind == asked->kind) {
        memmove(cand + j, cand + j + 1, (*len - j - 1) * sizeof *cand);
        (*len)--;
    } else {
        memmove(cand + j + 1, cand + j, (*len - j) * sizeof *cand);
        cand[j] = (pl__dec_record){asked->kind, asked->n, 0};
        (*len)++;
    }
    return true;
}

static bool zero_realigned(shrinker *sh, size_t i, pl__dec_record *cand)
{
    size_t len = sh->len;
    PL__SIM_ASSERT(i < len && sh->cur[i].value != 0);
    copy_records(cand, sh->cur, len);
    cand[i].value = 0;
    /* The first candidate, one departure fewer, is smaller; the
     * re-aligned ones (cand holds sh->len + REALIGN_MAX + 1) may not be. */
    PL__SIM_ASSERT(smaller(cand, len, sh->cur, sh->len));
    for (int t = 0; t <= REALIGN_MAX; t++) {
        PL__SIM_ASSERT(len <= sh->len + (size_t)t);
        pl_sim_result r;
        if (!run_candidate(sh, cand, len, &r)) {
            return false;
        }
        bool adopted = consider(sh, &r);
        bool again = !adopted && r.finding.kind != sh->kind && t < REALIGN_MAX &&
                     realign(cand, &len, &r);
        pl_sim_result_free(&r);
        if (adopted || !again) {
            return adopted;
        }
    }
    return false;
}

/* ---- Moments ------------------------------------------------------------
 * Removing one departure often changes how many decisions of a kind come
 * before the others (a buggify firing that no longer fires arms no timer,
 * two items that no longer batch make one more relay), and every later
 * departure of that kind then lands on another decision, at another
 * moment of the run: the failure is lost although the departures that
 * make it were kept. A departure is better named by its moment: its
 * kind, the task running when it was asked, the virtual time, and its
 * rank among the decisions sharing those three. A moved candidate is the
 * record of the run without the removed departures, with each kept
 * departure set again on the decision of its moment there. */

typedef struct moment {
    int64_t time_ns;
    uint32_t kind;
    uint32_t task;
    uint32_t rank;
    uint32_t value; /* what the departure chose */
} moment;

/* The moment of each decision of run r, whose events were kept; NULL
 * (and *n 0) when its log does not hold every decision. */
static moment *moments_of(const pl_sim_result *r, size_t *n)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    *n = 0;
    if (rec == NULL || rec->decisions_truncated) {
        return NULL;
    }
    moment *m = malloc((rec->decisions_len ? rec->decisions_len : 1) * sizeof *m);
    if (m == NULL) {
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < rec->events_len && k < rec->decisions_len; i++) {
        const pl__trace_rec *e = &rec->events[i];
        if (e->kind != PL__EV_DECISION) {
            continue;
        }
        moment t = {e->time_ns, rec->decisions[k].kind, e->task, 0, rec->decisions[k].value};
        /* Time never goes back: equal moments are adjacent in time. */
        for (size_t j = k; j-- > 0 && m[j].time_ns == t.time_ns;) {
            t.rank += m[j].kind == t.kind && m[j].task == t.task;
        }
        m[k++] = t;
    }
    if (k < rec->decisions_len) {
        free(m);
        return NULL;
    }
    *n = k;
    return m;
}

static bool same_moment(const moment *a, const moment *b)
{
    return a->time_ns == b->time_ns && a->kind == b->kind && a->task == b->task &&
           a->rank == b->rank;
}

/* Sets each wanted departure on the decision of its moment in run r
 * (every other decision 0) into sh->cand; returns its trimmed length, or
 * SIZE_MAX when no moment is found again or nothing changes. */
static size_t place_moments(shrinker *sh, const pl_sim_result *r, const moment *want,
                            size_t nwant)
{
    size_t n;
    moment *have = moments_of(r, &n);
    if (have == NULL) {
        return SIZE_MAX;
    }
    const pl__run_record *rec = pl__sim_result_record(r);
    if (pl__grow((void **)&sh->cand, &sh->cap, n, sizeof *sh->cand, n, 0) != 0) {
        free(have);
        sh->rc = PL_ENOMEM;
        return SIZE_MAX;
    }
    bool changed = false;
    size_t placed = 0, from = 0;
    for (size_t i = 0; i < n; i++) {
        sh->cand[i] = rec->decisions[i];
        sh->cand[i].value = 0;
    }
    for (size_t w = 0; w < nwant; w++) {
        /* The same moment; else the first free decision of the kind at
         * that time (another task may be the one busy then). */
        size_t at = SIZE_MAX;
        for (size_t i = from; i < n && at == SIZE_MAX; i++) {
            at = same_moment(&have[i], &want[w]) ? i : at;
        }
        for (size_t i = from; i < n && at == SIZE_MAX && have[i].time_ns <= want[w].time_ns;
             i++) {
            at = have[i].time_ns == want[w].time_ns && have[i].kind == want[w].kind ? i : at;
        }
        if (at != SIZE_MAX && want[w].value < rec->decisions[at].n) {
            sh->cand[at].value = want[w].value;
            placed++;
            from = at + 1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        changed |= sh->cand[i].value != rec->decisions[i].value;
    }
    free(have);
    return placed > 0 && changed ? trimmed_len(sh->cand, n) : SIZE_MAX;
}

/* The moments of the best list's departures (its run again, with
 * events); NULL when they cannot be had. */
static moment *best_moments(shrinker *sh, size_t *k)
{
    pl_sim_result r;
    sh->o.keep_events = true;
    bool ran = run_candidate(sh, sh->cur, sh->len, &r);
    sh->o.keep_events = false;
    *k = 0;
    if (!ran) {
        return NULL;
    }
    size_t n;
    moment *all = moments_of(&r, &n);
    pl_sim_result_free(&r);
    if (all == NULL) {
        return NULL;
    }
    size_t j = 0;
    for (size_t i = 0; i < n && i < sh->len; i++) {
        if (all[i].value != 0) {
            all[j++] = all[i];
        }
    }
    *k = j;
    return all;
}

/* Runs list (n entries, in sh->cand or elsewhere; copied as needed) and,
 * when it does not fail, moves the wanted departures back to their
 * moments in what it ran, up to MOVE_TRIES times. Returns whether it
 * adopted. */
#define MOVE_TRIES 3

static bool try_moved(shrinker *sh, const pl__dec_record *list, size_t n, const moment *want,
                      size_t nwant)
{
    pl_sim_result r;
    sh->o.keep_events = true;
    bool ran = run_candidate(sh, list, n, &r);
    for (int t = 0; ran && t <= MOVE_TRIES; t++) {
        if (consider(sh, &r)) {
            pl_sim_result_free(&r);
            sh->o.keep_events = false;
            return true;
        }
        size_t len = t < MOVE_TRIES ? place_moments(sh, &r, want, nwant) : SIZE_MAX;
        pl_sim_result_free(&r);
        ran = len != SIZE_MAX && run_candidate(sh, sh->cand, len, &r);
    }
    sh->o.keep_events = false;
    return false;
}

/* Zeroes every departure but the last m: a failure is usually made by
 * the few departures just before it, the earlier ones being noise the
 * run has since forgotten. Tries m = 1, 2, ... up to KEEP_LAST_LINEAR,
 * then doubling, each with the kept departures moved to their moments,
 * and adopts the first that still fails. */
#define KEEP_LAST_LINEAR 8

static bool pass_keep_last(shrinker *sh)
{
    size_t k;
    moment *mo = best_moments(sh, &k);
    if (mo == NULL) {
        return false;
    }
    bool adopted = false;
    for (size_t m = 1; m < k && !adopted && budget_left(sh);
         m = m < KEEP_LAST_LINEAR ? m + 1 : m * 2) {
        /* cur's departures in order are mo's: zero all but the last m. */
        copy_records(sh->cand, sh->cur, sh->len);
        for (size_t i = 0, j = 0; i < sh->len; i++) {
            if (sh->cand[i].value != 0 && j++ + m < k) {
                sh->cand[i].value = 0;
            }
        }
        adopted = try_moved(sh, sh->cand, sh->len, mo + (k - m), m);
    }
    free(mo);
    return adopted;
}

/* Removes departure j of mo (k of them) from the best list, the others
 * moved to their moments. */
static bool try_without(shrinker *sh, const moment *mo, size_t k, size_t j)
{
    moment *want = malloc((k ? k : 1) * sizeof *want);
    if (want == NULL) {
        sh->rc = PL_ENOMEM;
        return false;
    }
    memcpy(want, mo, j * sizeof *want);
    memcpy(want + j, mo + j + 1, (k - j - 1) * sizeof *want);
    copy_records(sh->cand, sh->cur, sh->len);
    for (size_t i = 0, d = 0; i < sh->len; i++) {
        if (sh->cand[i].value != 0 && d++ == j) {
            sh->cand[i].value = 0;
        }
    }
    bool adopted = try_moved(sh, sh->cand, sh->len, want, k - 1);
    free(want);
    return adopted;
}

/* The cause pass: every departure alone, last first, removed with the
 * others moved to their moments, else zeroed and the rest of the list
 * re-aligned positionally with what the run asked for. */
static bool pass_each(shrinker *sh)
{
    bool progress = false;
    size_t k;
    moment *mo = best_moments(sh, &k);
    for (size_t j = k; j-- > 0 && mo != NULL && budget_left(sh);) {
        if (try_without(sh, mo, k, j)) {
            progress = true;
            free(mo);
            mo = best_moments(sh, &k);
            j = k;
        }
    }
    free(mo);
    pl__dec_record *cand = malloc((sh->len + REALIGN_MAX + 1) * sizeof *cand);
    if (cand == NULL) {
        sh->rc = PL_ENOMEM;
        return progress;
    }
    size_t cap = sh->len;
    for (size_t i = sh->len; i-- > 0 && budget_left(sh);) {
        if (i < sh->len && sh->len <= cap && sh->cur[i].value != 0 &&
            zero_realigned(sh, i, cand)) {
            progress = true;
        }
    }
    free(cand);
    return progress;
}

/* Two departures traded for one: removes departures a and b (the others
 * moved to their moments) and, when that alone does not fail, tries one
 * departure instead at each decision from a's moment on, each value up
 * to TRADE_VALUES. Two interchangeable causes (a slow relay, a late
 * timer) are often both in a run; keeping the cheaper one is a smaller
 * explanation that no removal alone reaches. */
#define TRADE_VALUES 4u

static bool trade_at(shrinker *sh, pl__dec_record *base, size_t n, const moment *have,
                     int64_t from_ns)
{
    for (size_t p = 0; p < n && budget_left(sh); p++) {
        if (base[p].value != 0 || have[p].time_ns < from_ns) {
            continue;
        }
        for (uint32_t v = 1; v < base[p].n && v <= TRADE_VALUES && budget_left(sh); v++) {
            copy_records(sh->cand, base, n);
            sh->cand[p].value = v;
            if (try_list(sh, sh->cand, n)) {
                return true;
            }
        }
    }
    return false;
}

static bool try_trade(shrinker *sh, const moment *mo, size_t k, size_t a, size_t b)
{
    moment *want = malloc((k ? k : 1) * sizeof *want);
    if (want == NULL) {
        sh->rc = PL_ENOMEM;
        return false;
    }
    size_t nw = 0;
    for (size_t j = 0; j < k; j++) {
        if (j != a && j != b) {
            want[nw++] = mo[j];
        }
    }
    copy_records(sh->cand, sh->cur, sh->len);
    for (size_t i = 0, d = 0; i < sh->len; i++) {
        if (sh->cand[i].value != 0 && (d == a || d == b)) {
            sh->cand[i].value = 0;
        }
        d += sh->cur[i].value != 0;
    }
    /* The run without them, its departures moved back once. */
    pl_sim_result r;
    sh->o.keep_events = true;
    bool adopted = false;
    if (run_candidate(sh, sh->cand, sh->len, &r)) {
        adopted = consider(sh, &r);
        size_t len = adopted ? SIZE_MAX : place_moments(sh, &r, want, nw);
        if (len != SIZE_MAX) {
            pl_sim_result_free(&r);
            pl__dec_record *moved = malloc((len ? len : 1) * sizeof *moved);
            if (moved != NULL) {
                copy_records(moved, sh->cand, len);
            }
            bool ran = moved != NULL && run_candidate(sh, moved, len, &r);
            free(moved);
            if (!ran) {
                sh->o.keep_events = false;
                free(want);
                return false;
            }
            adopted = consider(sh, &r);
        }
        size_t n;
        moment *have = adopted ? NULL : moments_of(&r, &n);
        const pl__run_record *rec = pl__sim_result_record(&r);
        pl__dec_record *base = have != NULL ? malloc((n ? n : 1) * sizeof *base) : NULL;
        sh->o.keep_events = false;
        if (base != NULL && rec != NULL) {
            copy_records(base, rec->decisions, n);
            adopted = trade_at(sh, base, n, have, mo[a].time_ns);
        }
        free(base);
        free(have);
        pl_sim_result_free(&r);
    }
    sh->o.keep_events = false;
    free(want);
    return adopted;
}

static bool pass_trade(shrinker *sh)
{
    size_t k;
    moment *mo = best_moments(sh, &k);
    bool adopted = false;
    /* Latest pairs first: they leave the fewest decisions to try. */
    for (size_t a = k; a-- > 0 && mo != NULL && !adopted && budget_left(sh);) {
        for (size_t b = k; b-- > a + 1 && !adopted && budget_left(sh);) {
            adopted = try_trade(sh, mo, k, a, b);
        }
    }
    free(mo);
    return adopted;
}

/* Whole kinds traded for fewer departures of other kinds: a buggify
 * site enabled and fired three times (four departures of two kinds) is
 * often one late timer per busy task away from failing without them.
 * Removes every departure of one kind or two (the others moved to their
 * moments) and, in the run without them, tries each set of up to (their
 * count - 1, at most SWAP_LAST) departures of one kind, then of any, at
 * decisions from the earliest of their last SWAP_LAST departures on, each
 * with its largest value (the latest timer, the last task in the queue):
 * an exhaustive search of a window, tried only while it costs at most
 * SWAP_RUNS_MAX runs, fewest departures first. */
#define SWAP_LAST 3
#define SWAP_RUNS_MAX 30000u
#define SWAP_OPTIONS_MAX 256

typedef struct swap_option {
    uint32_t at;    /* index in the base list */
    uint32_t value;
} swap_option;

static uint64_t choose(uint64_t n, uint64_t k)
{
    uint64_t c = 1;
    for (uint64_t i = 1; i <= k && c <= SWAP_RUNS_MAX; i++) {
        c = c * (n - k + i) / i;
    }
    return c;
}

/* Tries every set of `size` options (distinct decisions), in order. */
static bool swap_sets(shrinker *sh, const pl__dec_record *base, size_t n,
                      const swap_option *opt, size_t nopt, size_t size)
{
    size_t idx[SWAP_LAST] = {0};
    for (size_t i = 0; i < size; i++) {
        idx[i] = i;
    }
    while (budget_left(sh)) {
        bool distinct = true;
        for (size_t i = 1; i < size; i++) {
            distinct &= opt[idx[i]].at != opt[idx[i - 1]].at;
        }
        if (distinct) {
            copy_records(sh->cand, base, n);
            for (size_t i = 0; i < size; i++) {
                sh->cand[opt[idx[i]].at].value = opt[idx[i]].value;
            }
            if (try_list(sh, sh->cand, n)) {
                return true;
            }
        }
        size_t i = size;
        while (i-- > 0 && idx[i] == nopt - size + i) {
        }
        if (i == SIZE_MAX) {
            return false;
        }
        idx[i]++;
        for (size_t j = i + 1; j < size; j++) {
            idx[j] = idx[j - 1] + 1;
        }
    }
    return false;
}

/* The options of kind `only` (PL_DECIDE__COUNT: every kind) from
 * from_ns on, each with its largest value. */
static size_t swap_options(const pl__dec_record *base, const moment *have, size_t n,
                           int64_t from_ns, uint32_t only, swap_option *opt)
{
    size_t nopt = 0;
    for (size_t i = 0; i < n && nopt < SWAP_OPTIONS_MAX; i++) {
        bool kind_ok = only == PL_DECIDE__COUNT || base[i].kind == only;
        if (have[i].time_ns >= from_ns && kind_ok && base[i].value == 0) {
            opt[nopt++] = (swap_option){(uint32_t)i, base[i].n - 1};
        }
    }
    return nopt;
}

/* Each kind alone first (a few late timers: the kind removed too, at
 * other decisions), then every kind together while that stays
 * affordable. */
static bool swap_search(shrinker *sh, const pl_sim_result *r, int64_t from_ns, size_t add_max)
{
    size_t n;
    moment *have = moments_of(r, &n);
    const pl__run_record *rec = pl__sim_result_record(r);
    swap_option *opt = malloc(SWAP_OPTIONS_MAX * sizeof *opt);
    pl__dec_record *base = malloc((n ? n : 1) * sizeof *base);
    bool adopted = false;
    if (have != NULL && opt != NULL && base != NULL) {
        copy_records(base, rec->decisions, n);
        for (uint32_t only = 0; only <= PL_DECIDE__COUNT && !adopted; only++) {
            size_t nopt = swap_options(base, have, n, from_ns, only, opt);
            for (size_t size = 1; size <= add_max && size <= nopt && !adopted; size++) {
                if (choose(nopt, size) > SWAP_RUNS_MAX) {
                    break;
                }
                adopted = swap_sets(sh, base, n, opt, nopt, size);
            }
        }
    }
    free(have);
    free(opt);
    free(base);
    return adopted;
}

static bool try_swap_kinds(shrinker *sh, const moment *mo, size_t k, const bool *gone)
{
    moment *want = malloc((k ? k : 1) * sizeof *want);
    if (want == NULL) {
        sh->rc = PL_ENOMEM;
        return false;
    }
    size_t nw = 0, nk = 0;
    int64_t from_ns = INT64_MAX;
    for (size_t j = k; j-- > 0;) {
        if (gone[mo[j].kind]) {
            from_ns = nk++ < SWAP_LAST ? mo[j].time_ns : from_ns;
        }
    }
    for (size_t j = 0; j < k; j++) {
        if (!gone[mo[j].kind]) {
            want[nw++] = mo[j];
        }
    }
    copy_records(sh->cand, sh->cur, sh->len);
    for (size_t i = 0; i < sh->len; i++) {
        sh->cand[i].value = gone[sh->cand[i].kind] ? 0 : sh->cand[i].value;
    }
    bool adopted = false;
    pl_sim_result r;
    sh->o.keep_events = true;
    if (run_candidate(sh, sh->cand, sh->len, &r)) {
        adopted = consider(sh, &r);
        size_t len = adopted || nw == 0 ? SIZE_MAX : place_moments(sh, &r, want, nw);
        if (len != SIZE_MAX) {
            pl_sim_result_free(&r);
            pl__dec_record *moved = malloc((len ? len : 1) * sizeof *moved);
            bool ran = false;
            if (moved != NULL) {
                copy_records(moved, sh->cand, len);
                ran = run_candidate(sh, moved, len, &r);
            }
            free(moved);
            if (!ran) {
                sh->o.keep_events = false;
                free(want);
                return false;
            }
            adopted = consider(sh, &r);
        }
        sh->o.keep_events = false;
        if (!adopted && nk > 1) {
            adopted = swap_search(sh, &r, from_ns, nk - 1 < SWAP_LAST ? nk - 1 : SWAP_LAST);
        }
        pl_sim_result_free(&r);
    }
    sh->o.keep_events = false;
    free(want);
    return adopted;
}

/* Each kind the departures use, then each pair of them. */
static bool pass_swap_kind(shrinker *sh)
{
    size_t k;
    moment *mo = best_moments(sh, &k);
    bool used[PL_DECIDE__COUNT] = {false};
    for (size_t j = 0; mo != NULL && j < k; j++) {
        used[mo[j].kind] = true;
    }
    bool adopted = false;
    for (uint32_t a = 0; a < PL_DECIDE__COUNT && mo != NULL && !adopted && k > 1; a++) {
        for (uint32_t b = a; b < PL_DECIDE__COUNT && used[a] && !adopted; b++) {
            bool gone[PL_DECIDE__COUNT] = {false};
            gone[a] = gone[b] = true;
            adopted = used[b] && budget_left(sh) && try_swap_kinds(sh, mo, k, gone);
        }
    }
    free(mo);
    return adopted;
}

/* ---- The time limit -------------------------------------------------------
 * A finding at the virtual time limit (tasks stuck while a ticker keeps
 * the run alive) shows at any limit after the tasks got stuck: the
 * smallest whole millisecond that still shows the same stuck tasks,
 * found by binary search (assumed monotone, checked by every later run),
 * makes every later candidate a short run and the replay a short one. */

static pl_time effective_limit(const shrinker *sh)
{
    return sh->o.time_limit_ns > 0       ? sh->o.time_limit_ns
           : sh->sc->time_limit_ns > 0 ? sh->sc->time_limit_ns
                                         : 3600 * PL_S;
}

/* Whether the best list shows the finding with limit `ns`; its record
 * into *r when it does (free it). */
static bool fails_with_limit(shrinker *sh, pl_time ns, pl_sim_result *r)
{
    pl_time was = sh->o.time_limit_ns;
    sh->o.time_limit_ns = ns;
    bool ran = run_candidate(sh, sh->cur, sh->len, r);
    sh->o.time_limit_ns = was;
    if (ran && same_finding(sh, r)) {
        const pl__run_record *rec = pl__sim_result_record(r);
        if (rec != NULL && !rec->decisions_truncated) {
            return true;
        }
    }
    if (ran) {
        pl_sim_result_free(r);
    }
    return false;
}

static bool pass_limit(shrinker *sh)
{
    if (!sh->at_limit) {
        return false;
    }
    pl_time limit = effective_limit(sh);
    int64_t lo = 1, hi = (limit + PL_MS - 1) / PL_MS; /* in ms; hi is known to fail */
    while (lo < hi && budget_left(sh)) {
        int64_t mid = lo + (hi - lo) / 2;
        pl_sim_result r;
        if (fails_with_limit(sh, mid * PL_MS, &r)) {
            pl_sim_result_free(&r);
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    pl_sim_result r;
    if (hi * PL_MS >= limit || !fails_with_limit(sh, hi * PL_MS, &r)) {
        return false;
    }
    sh->o.time_limit_ns = hi * PL_MS;
    /* A shorter run consults a prefix of the list: never larger. */
    const pl__run_record *rec = pl__sim_result_record(&r);
    size_t n = trimmed_len(rec->decisions, rec->decisions_len);
    PL__SIM_ASSERT(!smaller(sh->cur, sh->len, rec->decisions, n));
    if (smaller(rec->decisions, n, sh->cur, sh->len)) {
        adopt(sh, rec->decisions, n);
    }
    pl_sim_result_free(&r);
    return true;
}

/* The bulk passes: cheap, big steps first. */
static bool bulk_round(shrinker *sh)
{
    bool progress = pass_tail(sh);
    progress |= pass_zero_kind(sh);
    progress |= pass_keep_last(sh);
    progress |= pass_delete(sh);
    progress |= pass_zero(sh);
    progress |= pass_lower(sh);
    return progress;
}

static void shrink_rounds(shrinker *sh)
{
    pass_limit(sh);
    while (bulk_round(sh) && budget_left(sh)) {
    }
    /* Then until a fixed point: each departure alone, whole kinds again
     * (a departure gone may leave a kind that no longer matters), and
     * the bulk passes on what is left. */
    bool progress = true;
    while (progress && budget_left(sh)) {
        progress = pass_each(sh);
        progress |= pass_zero_kind(sh);
        progress |= progress && bulk_round(sh);
        /* Costliest: only once nothing else helps. */
        progress = progress || pass_swap_kind(sh);
        progress = progress || pass_trade(sh);
    }
    /* Fewer departures may get stuck sooner. */
    pass_limit(sh);
}

/* A descent ends in a local minimum that depends on its first steps:
 * one kind of departure (buggify's slow relays) may have been kept
 * where another (late timers) makes a smaller explanation. So when more
 * than one departure is left, the original list is shrunk again without
 * each kind the result still uses, and the smallest result is kept. */
static void shrink_without(shrinker *sh, const pl__dec_record *orig, size_t n, uint32_t kind)
{
    shrinker sub = *sh;
    sub.cur = NULL;
    sub.len = 0;
    sub.cand = malloc((n ? n : 1) * sizeof *sub.cand);
    sub.cap = n;
    if (sub.cand == NULL) {
        sh->rc = PL_ENOMEM;
        return;
    }
    copy_records(sub.cand, orig, n);
    for (size_t i = 0; i < n; i++) {
        sub.cand[i].value = sub.cand[i].kind == kind ? 0 : sub.cand[i].value;
    }
    pl_sim_result r;
    if (run_candidate(&sub, sub.cand, n, &r)) {
        const pl__run_record *rec = pl__sim_result_record(&r);
        bool fails = r.finding.kind == sh->kind && rec != NULL && !rec->decisions_truncated;
        if (fails && adopt(&sub, rec->decisions, trimmed_len(rec->decisions, rec->decisions_len))) {
            pl_sim_result_free(&r);
            shrink_rounds(&sub);
        } else {
            pl_sim_result_free(&r);
        }
    }
    sh->runs = sub.runs;
    sh->rc = sub.rc;
    sh->out_of_budget |= sub.out_of_budget;
    sh->clock_hit |= sub.clock_hit;
    if (sh->rc == 0 && sub.cur != NULL && smaller(sub.cur, sub.len, sh->cur, sh->len)) {
        adopt(sh, sub.cur, sub.len);
    }
    free(sub.cur);
    free(sub.cand);
}

static void shrink_restarts(shrinker *sh, const pl__dec_record *orig, size_t n)
{
    bool used[PL_DECIDE__COUNT] = {false};
    for (size_t i = 0; i < sh->len; i++) {
        used[sh->cur[i].kind] |= sh->cur[i].value != 0;
    }
    for (uint32_t kind = 0; kind < PL_DECIDE__COUNT; kind++) {
        if (used[kind] && count_nonzero(sh->cur, sh->len) > 1 && budget_left(sh)) {
            shrink_without(sh, orig, n, kind);
        }
    }
}

/* Whether the final run reproduces the finding from exactly the shrunk
 * list, as a replay file of it will. Says why not in out->message. */
static bool final_run_verified(const shrinker *sh, pl_sim_shrink_result *out)
{
    const pl_sim_result *r = &out->run;
    const pl__run_record *rec = pl__sim_result_record(r);
    const char *why = NULL;
    if (r->finding.kind != sh->kind) {
        why = "it ends with another finding";
    } else if (!same_finding(sh, r)) {
        why = "it is no longer stuck at the time limit with the same tasks";
    } else if (r->diverged) {
        why = "it diverges from the list";
    } else if (rec == NULL || rec->decisions_truncated || rec->decisions_len < sh->len) {
        why = "its record is incomplete";
    } else if (sh->len > 0 && memcmp(rec->decisions, sh->cur, sh->len * sizeof *sh->cur) != 0) {
        why = "it records other decisions";
    }
    if (why != NULL) {
        snprintf(out->message, sizeof out->message,
                 "internal error: the shrunk list of %zu decisions does not replay %s (%s; "
                 "the run ended with %s)",
                 sh->len, pl_finding_name(sh->kind), why, pl_finding_name(r->finding.kind));
    }
    return why == NULL;
}


/* A crashed run's explanation: its departures from production as the
 * timeline shows them when the crash ring kept the whole run, by their
 * index in the list otherwise, then where it died. */
static char *explain_crash(const pl_sim_result *run, const pl_sim_options *o)
{
    const pl__run_record *rec = pl__sim_result_record(run);
    bool whole = rec != NULL && rec->events_len > 0;
    pl__capture cap = {rec != NULL ? rec->notes : NULL, rec != NULL ? rec->notes_len : 0, 0,
                       false};
    char *text = whole ? pl__shrink_explain(run, cap.notes != NULL ? &cap : NULL, o)
                       : pl__shrink_explain_hung(run);
    if (text == NULL) {
        return NULL;
    }
    if (!whole) {
        /* Its last line is about runs that never return. */
        char *last = strstr(text, "(the run never returns");
        if (last != NULL) {
            *last = '\0';
        }
    }
    char where[256];
    pl__ring_where(&run->finding, where, sizeof where);
    size_t len = strlen(text), add = strlen(where) + 32;
    char *all = realloc(text, len + add);
    if (all == NULL) {
        free(text);
        return NULL;
    }
    snprintf(all + len, add, "then the run crashed %s\n", where);
    return all;
}

/* The postcondition for a crash, whose final run died in a child: the
 * crash reproduced from exactly the shrunk list (its mirrored record). */
static int final_crash(shrinker *sh, pl_sim_shrink_result *out)
{
    if (!final_run_verified(sh, out)) {
        return PL_EINVAL;
    }
    sh->verified = true;
    out->explanation = explain_crash(&out->run, &sh->o);
    return out->explanation != NULL ? 0 : PL_ENOMEM;
}

/* The shrunk list's run again, read positionally as `pollen replay` reads
 * the file written from it, with events and the capture of keys. A
 * livelock list whose run never returns is run where it can be stopped,
 * and explained without a timeline. This is the shrinker's postcondition
 * and every result passes through it: the list it returns reproduces the
 * finding it was asked to keep, or the shrink fails (PL_EINVAL, "internal
 * error: ..."), never a result that does not replay. */
static int final_run(shrinker *sh, pl_sim_shrink_result *out)
{
    pl_sim_options o = sh->o;
    o.source = PL_SIM_SOURCE_LIST;
    o.decisions = sh->cur;
    o.decisions_len = sh->len;
    o.keep_events = true;
    bool hung = false;
    if (isolated(sh)) {
        int rc = run_once(sh, &o, &out->run, &hung);
        sh->runs++;
        if (rc == 0 && !hung && sh->kind == PL_FINDING_CRASH) {
            return final_crash(sh, out);
        }
        if (rc == 0 && hung && sh->kind != PL_FINDING_LIVELOCK) {
            snprintf(out->message, sizeof out->message,
                     "internal error: the shrunk list of %zu decisions does not replay %s (its "
                     "run never returned)",
                     sh->len, pl_finding_name(sh->kind));
            return PL_EINVAL;
        }
        if (rc != 0 || hung) {
            /* The postcondition, for a list whose run never returns: that
             * is the livelock reproduced. */
            sh->verified = rc == 0;
            out->explanation = rc == 0 ? pl__shrink_explain_hung(&out->run) : NULL;
            return rc != 0 ? rc : out->explanation != NULL ? 0 : PL_ENOMEM;
        }
        pl_sim_result_free(&out->run);
    }
    pl__capture cap;
    memset(&cap, 0, sizeof cap);
    int rc = pl__sim_run_captured(sh->sc, &o, &cap, &out->run);
    sh->runs++;
    if (rc == 0 && !final_run_verified(sh, out)) {
        rc = PL_EINVAL;
    }
    sh->verified = rc == 0;
    if (rc == 0) {
        out->explanation = pl__shrink_explain(&out->run, &cap, &o);
        rc = out->explanation != NULL ? 0 : PL_ENOMEM;
    }
    free(cap.notes);
    return rc;
}

/* ---- Entry points ------------------------------------------------------- */

static int shrink_start(shrinker *sh, const pl__dec_record *list, size_t n,
                        pl_sim_shrink_result *out)
{
    pl_sim_result r;
    sh->o.decisions = list;
    sh->o.decisions_len = n;
    bool hung;
    int rc = run_once(sh, &sh->o, &r, &hung);
    sh->runs++;
    if (rc != 0) {
        snprintf(out->message, sizeof out->message, "the run could not start: %.200s",
                 r.finding.message[0] ? r.finding.message : pl_strerror(rc));
        pl_sim_result_free(&r);
        return rc;
    }
    if (r.finding.kind != sh->kind) {
        snprintf(out->message, sizeof out->message,
                 "the decisions do not reproduce %s (the run ended with %s)",
                 pl_finding_name(sh->kind), pl_finding_name(r.finding.kind));
        pl_sim_result_free(&r);
        return PL_EINVAL;
    }
    const pl__run_record *rec = pl__sim_result_record(&r);
    if (rec == NULL) {
        pl_sim_result_free(&r);
        snprintf(out->message, sizeof out->message, "out of memory for the run's record");
        return PL_ENOMEM;
    }
    if (rec->decisions_truncated) {
        snprintf(out->message, sizeof out->message,
                 "this run's decisions were truncated at %zu: it cannot be replayed, so it "
                 "cannot be shrunk",
                 rec->decisions_len);
        pl_sim_result_free(&r);
        return PL_EINVAL;
    }
    sh->limit_before = effective_limit(sh);
    sh->at_limit = finding_at_limit(&r.finding);
    sh->stuck_len = r.finding.tasks_len;
    for (uint32_t i = 0; i < r.finding.tasks_len; i++) {
        sh->stuck[i] = r.finding.tasks[i].id;
    }
    adopt(sh, rec->decisions, trimmed_len(rec->decisions, rec->decisions_len));
    sh->start_nonzero = count_nonzero(sh->cur, sh->len);
    pl_sim_result_free(&r);
    return sh->rc;
}

int pl_sim_shrink(const pl_scenario *sc, const pl_sim_options *base, const void *decisions,
                  size_t n, pl_finding_kind kind, const pl_sim_shrink_limits *limits,
                  pl_sim_shrink_result *out)
{
    return pl__shrink_with(sc, base, decisions, n, kind, limits, NULL, out);
}

int pl__shrink_with(const pl_scenario *sc, const pl_sim_options *base, const void *decisions,
                    size_t n, pl_finding_kind kind, const pl_sim_shrink_limits *limits,
                    pl__shrink_runner_fn runner, pl_sim_shrink_result *out)
{
    PL__SIM_ASSERT(out != NULL);
    memset(out, 0, sizeof *out);
    if (sc == NULL || kind == PL_FINDING_NONE || kind >= PL_FINDING__COUNT ||
        (decisions == NULL && n > 0)) {
        snprintf(out->message, sizeof out->message, "nothing to shrink");
        return PL_EINVAL;
    }
    if (kind == PL_FINDING_CRASH && runner == NULL) {
        snprintf(out->message, sizeof out->message,
                 "a crash is shrunk with every candidate in a child process (pollen shrink)");
        return PL_EINVAL;
    }
    shrinker sh = {.sc = sc, .kind = kind, .runner = runner, .start_ns = pl__env_real_now()};
    if (base != NULL) {
        sh.o = *base;
    } else {
        pl_sim_options_default(&sh.o);
    }
    /* Candidates are read one sub-list per decision kind: deleting or
     * zeroing decisions of one kind then leaves the others on the same
     * decision points. A run's record reads back identically this way,
     * and what is adopted is always a run's own positional record. */
    sh.o.source = PL_SIM_SOURCE_LIST_BY_KIND;
    sh.o.keep_decisions = true;
    sh.o.keep_events = false;
    sh.time_ns = limits != NULL && limits->time_ns > 0 ? limits->time_ns : 0;
    sh.runs_max = limits != NULL && limits->runs_max > 0 ? limits->runs_max : SHRINK_RUNS_DEFAULT;
    out->kind = kind;
    out->decisions_before = n;
    out->nonzero_before = count_nonzero(decisions, n);
    int rc = shrink_start(&sh, decisions, n, out);
    if (rc == 0) {
        shrink_rounds(&sh);
        shrink_restarts(&sh, decisions, n);
        rc = sh.rc != 0 ? sh.rc : final_run(&sh, out);
        /* The postconditions: what is returned was verified by a run of
         * exactly that list, and the descent never climbed. */
        PL__SIM_ASSERT(rc != 0 || sh.verified);
        PL__SIM_ASSERT(count_nonzero(sh.cur, sh.len) <= sh.start_nonzero);
    }
    out->decisions_after = sh.len;
    out->nonzero_after = count_nonzero(sh.cur, sh.len);
    out->runs = sh.runs;
    out->budget_hit = sh.out_of_budget;
    out->clock_hit = sh.clock_hit;
    out->limit_before = sh.at_limit ? sh.limit_before : 0;
    out->limit_after = sh.at_limit ? effective_limit(&sh) : 0;
    out->elapsed_ns = pl__env_real_now() - sh.start_ns;
    free(sh.cur);
    free(sh.cand);
    return rc;
}

void pl_sim_shrink_result_free(pl_sim_shrink_result *r)
{
    pl_sim_result_free(&r->run);
    free(r->explanation);
    r->explanation = NULL;
}
