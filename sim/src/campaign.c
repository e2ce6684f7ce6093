/* sim/src/campaign.c: campaigns in the library (pl_sim_campaign) and
 * the pieces the CLI's workers and parent share with them (campaign.h):
 * one seed with the determinism check, the tally of distinct schedules
 * and pl_sometimes counters, the pl_sometimes verdict. */
#include "campaign.h"
#include "run.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "isolate/guard.h"
#include "run_record.h"
#include "sim_internal.h"
#include "trace.h"

/* Distinct hashes tracked; past this, the count is a lower bound. */
#define CAMPAIGN_HASHES_MAX ((size_t)1 << 22)

/* snprintf where a cut tail is acceptable (messages): says so to the
 * compiler's truncation warnings, which only look at snprintf itself. */
static void textf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void textf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* ---- Seed ranges ---------------------------------------------------------- */

pl__seed_slice pl__seed_slice_of(uint64_t lo, uint64_t hi, uint32_t k, uint32_t n, uint32_t j,
                                 uint32_t jobs)
{
    pl__seed_slice none = {0, 1, 0, true};
    /* The shard's seeds: lo + (k - 1) + i * n for i <= shard_last. Indexes
     * rather than counts: a count of the whole seed space overflows. */
    uint64_t span = hi - lo; /* seeds in range minus one; no overflow */
    if ((uint64_t)(k - 1) > span) {
        return none;
    }
    uint64_t shard_last = (span - (k - 1)) / n;
    if (j > shard_last) {
        return none;
    }
    pl__seed_slice s;
    s.first = lo + (k - 1) + (uint64_t)j * n;
    s.stride = (uint64_t)n * jobs;
    s.last = (shard_last - j) / jobs;
    s.empty = false;
    return s;
}

bool pl__seed_slice_has(const pl__seed_slice *s, uint64_t i) { return !s->empty && i <= s->last; }

uint64_t pl__seed_slice_seed(const pl__seed_slice *s, uint64_t i)
{
    PL__SIM_ASSERT(pl__seed_slice_has(s, i));
    return s->first + i * s->stride;
}

pl__seed_slice pl__seed_slice_rest(const pl__seed_slice *s, uint64_t i)
{
    pl__seed_slice rest = {0, 1, 0, true};
    if (pl__seed_slice_has(s, i)) {
        rest.first = pl__seed_slice_seed(s, i);
        rest.stride = s->stride;
        rest.last = s->last - i;
        rest.empty = false;
    }
    return rest;
}

int pl__seed_slice_count_text(const pl__seed_slice *s, char *buf, size_t len)
{
    if (s->empty) {
        return snprintf(buf, len, "0");
    }
    if (s->last == UINT64_MAX) {
        return snprintf(buf, len, "18446744073709551616"); /* 2^64 */
    }
    return snprintf(buf, len, "%" PRIu64, s->last + 1);
}

/* ---- The determinism check --------------------------------------------- */

const char *pl__result_task_name(void *ud, uint32_t task)
{
    return pl__run_task_name(ud, task);
}

const pl__trace_rec *pl__result_events(const pl_sim_result *r, size_t *len)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    *len = rec != NULL ? rec->events_len : 0;
    return rec != NULL ? rec->events : NULL;
}

/* One event as a timeline line, without the trailing newline. */
static void event_text(const pl_sim_result *r, const pl__trace_rec *ev, char *buf, size_t len)
{
    char *mem = NULL;
    size_t memlen = 0;
    FILE *f = open_memstream(&mem, &memlen);
    buf[0] = '\0';
    if (f == NULL) {
        return;
    }
    pl__trace_write_text(f, ev, 1, pl__result_task_name, (void *)pl__sim_result_record(r));
    fclose(f);
    if (mem != NULL) {
        snprintf(buf, len, "%.*s", (int)strcspn(mem, "\n"), mem);
    }
    free(mem);
}

/* Positions f at the event where two runs part. */
static void position_at(pl_finding *f, const pl_sim_result *r, const pl__trace_rec *at)
{
    const char *name = pl__run_task_name(pl__sim_result_record(r), at->task);
    f->step = at->step;
    f->time_ns = at->time_ns;
    f->task_id = at->task == PL__TRACE_NO_TASK ? 0 : at->task;
    snprintf(f->task_name, sizeof f->task_name, "%s", name != NULL ? name : "");
}

/* Reruns a seed twice with the event log and describes where the two
 * runs part; also positions the finding at that event. */
static void locate_divergence(const pl_scenario *sc, const pl_sim_options *so, pl_finding *f,
                              char *buf, size_t len)
{
    pl_sim_options o2 = *so;
    o2.keep_events = true;
    pl_sim_result a, b;
    int ra = pl_sim_run(sc, &o2, &a), rb = pl_sim_run(sc, &o2, &b);
    size_t na = 0, nb = 0;
    const pl__trace_rec *ea = ra == 0 ? pl__result_events(&a, &na) : NULL;
    const pl__trace_rec *eb = rb == 0 ? pl__result_events(&b, &nb) : NULL;
    size_t i = ea != NULL && eb != NULL ? pl__trace_first_diff(ea, na, eb, nb) : SIZE_MAX;
    if (i == SIZE_MAX) {
        snprintf(buf, len, "\n(two more runs with the event log agreed: the difference is "
                           "intermittent)");
    } else {
        char la[256] = "(no event: the run ended)", lb[256] = "(no event: the run ended)";
        if (i < na) {
            event_text(&a, &ea[i], la, sizeof la);
        }
        if (i < nb) {
            event_text(&b, &eb[i], lb, sizeof lb);
        }
        snprintf(buf, len, "\nfirst difference at event %zu:\n  one run: %s\n  other:   %s", i, la,
                 lb);
        if (i < na) {
            position_at(f, &a, &ea[i]);
        } else {
            position_at(f, &b, &eb[i]);
        }
    }
    pl_sim_result_free(&a);
    pl_sim_result_free(&b);
}

/* Runs the seed again; on a different hash turns r1's finding into a
 * nondeterminism finding. Returns 0 or the run's error. */
static int check_determinism(const pl_scenario *sc, const pl_sim_options *so, pl_sim_result *r1)
{
    pl_sim_result r2;
    int rc = pl_sim_run(sc, so, &r2);
    uint64_t h2 = r2.hash;
    pl_sim_result_free(&r2);
    if (rc < 0 || h2 == r1->hash) {
        return rc;
    }
    pl_finding *f = &r1->finding;
    char before[160] = "";
    if (f->kind != PL_FINDING_NONE) {
        snprintf(before, sizeof before, " (the first run ended with %s)",
                 pl_finding_name(f->kind));
    }
    pl_finding nf;
    memset(&nf, 0, sizeof nf);
    nf.kind = PL_FINDING_NONDETERMINISM;
    char where[900];
    locate_divergence(sc, so, &nf, where, sizeof where);
    textf(nf.message, sizeof nf.message,
          "the same seed gave two different traces: hash %016" PRIx64 ", then %016" PRIx64 "%s%s",
          r1->hash, h2, before, where);
    *f = nf;
    return 0;
}

int pl__campaign_seed(const pl_scenario *sc, const pl_sim_options *so, bool check_det,
                      pl_sim_result *r)
{
    int rc = pl_sim_run(sc, so, r);
    if (rc == 0 && check_det) {
        rc = check_determinism(sc, so, r);
    }
    return rc;
}

/* ---- pl_sometimes counters and the tally -------------------------------- */

uint32_t *pl__campaign_tally_counts(const pl__campaign_tally *t)
{
    uint32_t *counts = calloc(2 * t->nsites + 1, sizeof *counts);
    for (size_t i = 0; counts != NULL && t->sites != NULL && i < 2 * t->nsites; i++) {
        counts[i] = t->sites[i] < UINT32_MAX ? (uint32_t)t->sites[i] : UINT32_MAX;
    }
    return counts;
}

int pl__campaign_tally_init(pl__campaign_tally *t)
{
    memset(t, 0, sizeof *t);
    t->hashes.cap_max = CAMPAIGN_HASHES_MAX;
    pl__sometimes_sites(&t->nsites);
    t->sites = calloc(2 * t->nsites + 1, sizeof *t->sites);
    t->last = calloc(t->nsites + 1, PL__SOMETIMES_LAST);
    return t->sites != NULL && t->last != NULL ? 0 : PL_ENOMEM;
}

void pl__campaign_tally_free(pl__campaign_tally *t)
{
    free(t->hashes.slots);
    free(t->sites);
    free(t->last);
    free(t->buggify);
    pl__hashmap_free(&t->buggify_index);
    memset(t, 0, sizeof *t);
}

/* The tally's entry for buggify site `key`, created zeroed; NULL when out
 * of memory. */
static pl__cover_buggify *buggify_entry(pl__campaign_tally *t, uint64_t key)
{
    uint32_t i;
    if (pl__hashmap_get(&t->buggify_index, key, &i)) {
        return &t->buggify[i];
    }
    if (t->nbuggify >= UINT32_MAX ||
        pl__grow((void **)&t->buggify, &t->capbuggify, t->nbuggify + 1, sizeof *t->buggify, 16,
                 0) != 0 ||
        pl__hashmap_put(&t->buggify_index, key, (uint32_t)t->nbuggify) != 0) {
        return NULL;
    }
    pl__cover_buggify *b = &t->buggify[t->nbuggify++];
    memset(b, 0, sizeof *b);
    b->key = key;
    return b;
}

/* Adds one site's counts; the first known location names it. */
static int add_buggify(pl__campaign_tally *t, const pl__cover_buggify *from)
{
    pl__cover_buggify *b = buggify_entry(t, from->key);
    if (b == NULL) {
        return PL_ENOMEM;
    }
    b->reached += from->reached;
    b->runs_enabled += from->runs_enabled;
    b->fired += from->fired;
    if (b->line == 0 && from->line != 0) {
        b->line = from->line;
        memcpy(b->file, from->file, sizeof b->file);
        memcpy(b->func, from->func, sizeof b->func);
    }
    return 0;
}

/* A run's pl_sometimes counts, and the last false message of each site
 * the run never saw true. */
static void tally_sometimes(pl__campaign_tally *t, const pl__run_record *rec)
{
    /* Both read the one section: their counts agree. */
    PL__SIM_ASSERT(rec->sometimes == NULL || rec->sometimes_len == t->nsites);
    for (size_t i = 0; rec->sometimes != NULL && t->sites != NULL && i < t->nsites; i++) {
        uint32_t hits, reached;
        const char *last;
        pl__run_sometimes(rec, i, &hits, &reached, &last);
        t->sites[2 * i] += hits;
        t->sites[2 * i + 1] += reached;
        if (hits == 0 && last[0] != '\0') {
            pl__campaign_tally_last(t, i, last, strlen(last));
        }
    }
}

int pl__campaign_tally_run(pl__campaign_tally *t, const pl_sim_result *r)
{
    t->discarded += r->discarded;
    const pl__run_record *rec = pl__sim_result_record(r);
    if (rec == NULL) {
        return 0;
    }
    for (size_t k = 0; k < PL_DECIDE__COUNT; k++) {
        t->consulted[k] += rec->consulted[k];
        t->deviated[k] += rec->deviated[k];
    }
    tally_sometimes(t, rec);
    for (size_t i = 0; i < rec->buggify_len; i++) {
        const pl__site *site = &rec->buggify[i];
        pl__cover_buggify *b = buggify_entry(t, site->key);
        if (b == NULL) {
            return PL_ENOMEM;
        }
        b->reached += site->reached;
        b->runs_enabled += site->enabled != 0;
        b->fired += site->fired;
        /* As add_buggify: the first known location names the site. Written
         * once per campaign, not once per seed (two snprintf a site). */
        if (b->line == 0 && site->file != NULL && site->line != 0) {
            b->line = site->line;
            snprintf(b->file, sizeof b->file, "%s", pl__site_base(site->file));
            snprintf(b->func, sizeof b->func, "%s", site->func != NULL ? site->func : "?");
        }
    }
    return 0;
}

int pl__campaign_tally_cover(pl__campaign_tally *t, const uint64_t *consulted,
                             const uint64_t *deviated, const pl__cover_buggify *sites, size_t n)
{
    for (size_t k = 0; k < PL_DECIDE__COUNT; k++) {
        t->consulted[k] += consulted[k];
        t->deviated[k] += deviated[k];
    }
    for (size_t i = 0; i < n; i++) {
        if (add_buggify(t, &sites[i]) != 0) {
            return PL_ENOMEM;
        }
    }
    return 0;
}

bool pl__campaign_tally_sites(pl__campaign_tally *t, const uint32_t *counts, size_t n)
{
    if (n != t->nsites || t->sites == NULL) {
        return false;
    }
    for (size_t i = 0; i < 2 * n; i++) {
        t->sites[i] += counts[i];
    }
    return true;
}

void pl__campaign_tally_last(pl__campaign_tally *t, size_t i, const char *text, size_t len)
{
    if (i >= t->nsites || t->last == NULL) {
        return;
    }
    char *dst = t->last + i * PL__SOMETIMES_LAST;
    len = len < PL__SOMETIMES_LAST - 1 ? len : PL__SOMETIMES_LAST - 1;
    memcpy(dst, text, len);
    dst[len] = '\0';
}

bool pl__campaign_sometimes_judged(uint64_t lo, uint64_t hi) { return lo < hi; }

bool pl__campaign_sometimes_failed(const char *msg, const char *file, int line, const char *func,
                                   bool own, uint64_t hits, uint64_t reached, const char *last,
                                   pl_finding *f)
{
    /* A site no run reached counts against the scenario written in the
     * same file; sites elsewhere belong to other scenarios. */
    if (hits > 0 || (reached == 0 && !own)) {
        return false;
    }
    memset(f, 0, sizeof *f);
    f->kind = PL_FINDING_ASSERTION;
    /* A message without arguments formats to itself: nothing to add. */
    bool show_last = last != NULL && last[0] != '\0' && strcmp(last, msg) != 0;
    if (reached == 0) {
        textf(f->message, sizeof f->message,
              "pl_sometimes(\"%s\") at %s:%d (in %s) was never even reached over the campaign",
              msg, file, line, func);
    } else {
        textf(f->message, sizeof f->message,
              "pl_sometimes(\"%s\") at %s:%d (in %s) was evaluated %" PRIu64
              " times over the campaign and never true%s%s%s",
              msg, file, line, func, reached, show_last ? " (last: " : "",
              show_last ? last : "", show_last ? ")" : "");
    }
    return true;
}

bool pl__campaign_site_failed(const pl__campaign_tally *t, const pl_scenario *sc, size_t i,
                              pl_finding *f)
{
    size_t n = 0;
    const pl__sometimes_site *sites = pl__sometimes_sites(&n);
    PL__SIM_ASSERT(i < n && n == t->nsites);
    const pl__sometimes_site *s = &sites[i];
    bool own = sc->source_file != NULL && strcmp(s->file, sc->source_file) == 0;
    const char *last = t->last != NULL ? t->last + i * PL__SOMETIMES_LAST : "";
    return pl__campaign_sometimes_failed(s->msg, s->file, s->line, s->func, own, t->sites[2 * i],
                                         t->sites[2 * i + 1], last, f);
}

/* ---- Campaigns in this process ------------------------------------------ */

void pl_campaign_options_default(pl_campaign_options *o)
{
    memset(o, 0, sizeof *o);
    o->seed_hi = 999;
    o->stop_at_first = true;
}

/* A finding of the range: counted, and kept when it is the first. */
static void note_finding(pl_campaign_result *out, const pl_finding *f, bool has_seed,
                         uint64_t seed)
{
    if (out->findings++ == 0) {
        out->first = *f;
        out->first_has_seed = has_seed;
        out->first_seed = has_seed ? seed : 0;
    }
}

/* The pl_sometimes verdict over the range, as the CLI gives it: only
 * when the range ran to its end. */
static void sometimes_verdict(const pl_scenario *sc, pl__campaign_tally *t,
                              pl_campaign_result *out)
{
    size_t n = 0;
    const pl__sometimes_site *sites = pl__sometimes_sites(&n);
    /* Every run's counts were added as it ended (pl__campaign_tally_run). */
    out->sometimes_judged = t->sites != NULL;
    for (size_t i = 0; out->sometimes_judged && i < n; i++) {
        pl_finding f;
        bool own = sc->source_file != NULL && strcmp(sites[i].file, sc->source_file) == 0;
        out->sometimes_sites += own || t->sites[2 * i + 1] > 0;
        if (pl__campaign_site_failed(t, sc, i, &f)) {
            out->sometimes_failed++;
            note_finding(out, &f, false, 0);
        }
    }
}

int pl_sim_campaign(const pl_scenario *sc, const pl_campaign_options *opts, pl_campaign_result *out)
{
    memset(out, 0, sizeof *out);
    pl_sim_options o;
    if (opts->sim != NULL) {
        o = *opts->sim;
    } else {
        pl_sim_options_default(&o);
    }
    o.source = PL_SIM_SOURCE_SEED;
    int hrc = pl__resolve_pct_horizon(sc, &o); /* once for every seed */
    if (hrc != 0) {
        return hrc;
    }
    pl__campaign_tally t;
    if (pl__campaign_tally_init(&t) != 0) {
        pl__campaign_tally_free(&t);
        return PL_ENOMEM;
    }
    int rc = 0;
    out->isolated = false; /* in this process: a crash is told by the guard */
    pl__campaign_guard_begin(sc);
    pl__seed_slice range = pl__seed_slice_of(opts->seed_lo, opts->seed_hi, 1, 1, 0, 1);
    for (uint64_t i = 0; opts->seed_lo <= opts->seed_hi && pl__seed_slice_has(&range, i); i++) {
        uint64_t seed = pl__seed_slice_seed(&range, i);
        o.seed = seed;
        pl_sim_result r;
        pl__campaign_guard_seed(seed);
        rc = pl__campaign_seed(sc, &o, opts->check_determinism, &r);
        if (rc == 0) {
            out->runs++;
            pl__hashset_add(&t.hashes, r.hash);
            rc = pl__campaign_tally_run(&t, &r);
            if (r.finding.kind == PL_FINDING_NONE) {
                out->clean++;
                out->discarded += r.discarded;
            } else {
                note_finding(out, &r.finding, true, seed);
            }
        }
        pl_sim_result_free(&r);
        if (rc != 0 || (opts->stop_at_first && out->findings > 0) || i == UINT64_MAX) {
            break;
        }
    }
    pl__campaign_guard_end();
    if (rc == 0 && out->runs > 0 && !(opts->stop_at_first && out->findings > 0) &&
        pl__campaign_sometimes_judged(opts->seed_lo, opts->seed_hi)) {
        sometimes_verdict(sc, &t, out);
    }
    out->distinct_hashes = t.hashes.count;
    pl__campaign_tally_free(&t);
    return rc;
}
