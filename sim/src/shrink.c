/* sim/src/shrink.c: the shrinker (its explanation is shrink_explain.c).
 *
 * The shrinker works on the decision list only, shortlex like Hypothesis:
 * a list is smaller when it is shorter, or as long and smaller value by
 * value. Every candidate is a smaller edit of the best list so far; a
 * candidate that still fails with the same finding kind is replaced by
 * what its run actually consulted (its record, trailing zeros trimmed),
 * which is never larger and replays exactly, without divergence. Only
 * complete records are adopted: a truncated one is a prefix that replays
 * something else. The final list is run once more the way `pollen replay`
 * reads it (positionally), and the shrink fails unless that run fails
 * with the same kind, without divergence, recording exactly that list:
 * what is written is what was verified.
 *
 * Default limits: 30 s of wall-clock time and 20000 runs. Runs are
 * deterministic, so the result depends only on the input and the run
 * limit unless the clock cuts a pass short.
 */
#include "shrink.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pollen/error.h"
#include "replay.h"
#include "run.h"
#include "sim_internal.h"
#include "strategy.h"
#include "trace_ring.h"

#define SHRINK_TIME_DEFAULT_NS (30 * PL_S)
#define SHRINK_RUNS_DEFAULT 20000u

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
    pl_time time_ns;
    bool out_of_budget;
    int rc;               /* first internal error */
} shrinker;

static pl__shrink_runner_fn runner;

void pl__shrink_set_runner(pl__shrink_runner_fn fn) { runner = fn; }

/* Livelocks and crashes run through the runner: a poll that never
 * returns, or a candidate that kills its process, ends only a child. */
static bool isolated(const shrinker *sh)
{
    return runner != NULL && (sh->kind == PL_FINDING_LIVELOCK || sh->kind == PL_FINDING_CRASH);
}

/* One run of the shrink: through the runner when isolated. */
static int run_once(const shrinker *sh, const pl_sim_options *o, pl_sim_result *r, bool *hung)
{
    *hung = false;
    if (isolated(sh)) {
        return runner(sh->sc, o, r, hung);
    }
    return pl_sim_run(sh->sc, o, r);
}

static pl_time wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (pl_time)ts.tv_sec * PL_S + ts.tv_nsec;
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

static bool budget_left(shrinker *sh)
{
    if (sh->rc != 0 || sh->runs >= sh->runs_max || wall_ns() - sh->start_ns >= sh->time_ns) {
        sh->out_of_budget = sh->rc == 0;
        return false;
    }
    return true;
}

/* Makes `list` (n entries; may alias nothing owned by sh) the best list. */
static bool adopt(shrinker *sh, const pl__dec_record *list, size_t n)
{
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

/* When a candidate's run r failed with the kind and its normalized list is
 * smaller than the best, adopts that. Returns whether it adopted. */
static bool consider(shrinker *sh, const pl_sim_result *r)
{
    if (r->finding.kind != sh->kind) {
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
    return shortlex_less(norm, nn, sh->cur, sh->len) && adopt(sh, norm, nn);
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
        if (try_list(sh, sh->cur, mid)) {
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
            if (try_list(sh, sh->cand, sh->len - chunk)) {
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
            progress |= try_list(sh, sh->cand, sh->len);
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
            progress |= try_list(sh, sh->cand, sh->len);
        }
    }
    return progress;
}

/* Tries value v at position i of the best list. */
static bool try_value(shrinker *sh, size_t i, uint32_t v)
{
    copy_records(sh->cand, sh->cur, sh->len);
    sh->cand[i].value = v;
    return try_list(sh, sh->cand, sh->len);
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
    copy_records(cand, sh->cur, len);
    cand[i].value = 0;
    for (int t = 0; t <= REALIGN_MAX; t++) {
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

static bool pass_realign(shrinker *sh)
{
    bool progress = false;
    pl__dec_record *cand = malloc((sh->len + REALIGN_MAX + 1) * sizeof *cand);
    if (cand == NULL) {
        sh->rc = PL_ENOMEM;
        return false;
    }
    size_t cap = sh->len;
    for (size_t i = 0; i < sh->len && sh->len <= cap && budget_left(sh); i++) {
        if (sh->cur[i].value != 0 && zero_realigned(sh, i, cand)) {
            progress = true;
        }
    }
    free(cand);
    return progress;
}

static void shrink_rounds(shrinker *sh)
{
    bool progress = true;
    while (progress && budget_left(sh)) {
        progress = pass_tail(sh);
        progress |= pass_zero_kind(sh);
        progress |= pass_delete(sh);
        progress |= pass_zero(sh);
        progress |= pass_lower(sh);
        /* Costlier: only once the simple passes are stuck. */
        progress = progress || pass_realign(sh);
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
    adopt(sh, rec->decisions, trimmed_len(rec->decisions, rec->decisions_len));
    pl_sim_result_free(&r);
    return sh->rc;
}

int pl_sim_shrink(const pl_scenario *sc, const pl_sim_options *base, const void *decisions,
                  size_t n, pl_finding_kind kind, const pl_sim_shrink_limits *limits,
                  pl_sim_shrink_result *out)
{
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
    shrinker sh = {.sc = sc, .kind = kind, .start_ns = wall_ns()};
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
    sh.time_ns = limits != NULL && limits->time_ns > 0 ? limits->time_ns : SHRINK_TIME_DEFAULT_NS;
    sh.runs_max = limits != NULL && limits->runs_max > 0 ? limits->runs_max : SHRINK_RUNS_DEFAULT;
    out->kind = kind;
    out->decisions_before = n;
    out->nonzero_before = count_nonzero(decisions, n);
    int rc = shrink_start(&sh, decisions, n, out);
    if (rc == 0) {
        shrink_rounds(&sh);
        rc = sh.rc != 0 ? sh.rc : final_run(&sh, out);
    }
    out->decisions_after = sh.len;
    out->nonzero_after = count_nonzero(sh.cur, sh.len);
    out->runs = sh.runs;
    out->budget_hit = sh.out_of_budget;
    out->elapsed_ns = wall_ns() - sh.start_ns;
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
