/* sim/src/why.c: the point of no return and the passing twins (why.h
 * says what they are). One reference run of the file gives the full list
 * of decisions and the timeline that names them; every other run is a
 * continuation of one of its prefixes or a twin of the file's list.
 */
#include "why.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pollen/error.h"
#include "prng.h"
#include "replay.h"
#include "sim_internal.h"
#include "strategy.h"
#include "run_record.h"
#include "run.h"

typedef struct why_ctx {
    const pl_scenario *sc;
    pl_sim_options base; /* the file's run: seed, knobs, limits */
    pl_finding_kind kind;
    pl__shrink_runner_fn runner;
    pl__dec_record *list; /* the reference run's consulted decisions (owned) */
    uint64_t len;
    uint64_t seed_root; /* continuations' seeds derive from it */
    pl__why_progress_fn progress;
    void *ud;
    pl__why_result *out;
} why_ctx;

/* A livelock may be a poll that never returns and a crash kills its
 * process: only a run elsewhere survives them (as the shrinker's). */
static bool isolated(const why_ctx *w)
{
    return w->runner != NULL && (w->kind == PL_FINDING_LIVELOCK || w->kind == PL_FINDING_CRASH);
}

/* One run; *hung when it never returned. Returns 0 or a negative code. */
static int run_one(why_ctx *w, const pl_sim_options *o, pl_sim_result *r, bool *hung)
{
    *hung = false;
    w->out->runs_total++;
    return isolated(w) ? w->runner(w->sc, o, r, hung) : pl_sim_run(w->sc, o, r);
}

/* The run failed as the file's did (a livelock that never returned is
 * one). */
static bool failed_so(const why_ctx *w, const pl_sim_result *r, bool hung)
{
    return r->finding.kind == w->kind || (hung && w->kind == PL_FINDING_LIVELOCK);
}

/* The file's run with another source and list; events only for the
 * reference run, which names the decisions. */
static pl_sim_options options_for(const why_ctx *w, pl_sim_source source,
                                  const pl__dec_record *list, size_t len, bool events)
{
    pl_sim_options o = w->base;
    o.source = source;
    o.decisions = list;
    o.decisions_len = len;
    o.keep_events = events;
    return o;
}

/* Continuation j of prefix k: its seed depends on the file's seed, k and
 * j alone. */
static uint64_t continuation_seed(const why_ctx *w, uint64_t k, uint32_t j)
{
    return pl__prng_subseed(pl__prng_subseed(w->seed_root, k), (uint64_t)j + 1);
}

static int probe(why_ctx *w, uint64_t k, pl__why_probe *p)
{
    PL__SIM_ASSERT(k <= w->len);
    *p = (pl__why_probe){.k = k, .runs = w->out->runs};
    pl_sim_options o = options_for(w, PL_SIM_SOURCE_PREFIX, w->list, (size_t)k, false);
    o.keep_decisions = false;
    for (uint32_t j = 0; j < p->runs; j++) {
        o.prefix_seed = continuation_seed(w, k, j);
        pl_sim_result r;
        bool hung;
        int rc = run_one(w, &o, &r, &hung);
        if (rc != 0) {
            return rc;
        }
        p->failed += failed_so(w, &r, hung);
        pl_sim_result_free(&r);
    }
    pl__why_result *out = w->out;
    PL__SIM_ASSERT(out->probes_len < PL__WHY_PROBES_MAX);
    size_t at = out->probes_len;
    while (at > 0 && out->probes[at - 1].k > k) {
        out->probes[at] = out->probes[at - 1];
        at--;
    }
    out->probes[at] = *p;
    out->probes_len++;
    return 0;
}

static bool inevitable(const pl__why_probe *p)
{
    return (uint64_t)p->failed * 100 >= (uint64_t)p->runs * PL__WHY_INEVITABLE;
}

/* Reports progress; false once the caller asked to stop (and from then
 * on). */
static bool go_on(why_ctx *w, const pl__why_probe *p, uint64_t lo, uint64_t hi)
{
    if (!w->out->stopped && w->progress != NULL && !w->progress(w->ud, p, lo, hi)) {
        w->out->stopped = true;
    }
    return !w->out->stopped;
}

/* Stopped between lo, below the threshold, and hi, at or above it. */
static void bracket(why_ctx *w, pl__why_probe lo, pl__why_probe hi)
{
    w->out->bracketed = true;
    w->out->before = lo;
    w->out->after = hi;
}

/* Bisects [lo, hi], lo below the threshold and hi at or above it, down
 * to adjacent prefixes. */
static int bisect(why_ctx *w, pl__why_probe lo, pl__why_probe hi)
{
    while (hi.k - lo.k > 1) {
        pl__why_probe mid;
        int rc = probe(w, lo.k + (hi.k - lo.k) / 2, &mid);
        if (rc != 0) {
            return rc;
        }
        if (inevitable(&mid)) {
            hi = mid;
        } else {
            lo = mid;
        }
        if (!go_on(w, &mid, lo.k, hi.k) && hi.k - lo.k > 1) {
            bracket(w, lo, hi);
            return 0;
        }
    }
    w->out->found = true;
    w->out->point = hi.k;
    w->out->before = lo;
    w->out->after = hi;
    return 0;
}

static int point_of_no_return(why_ctx *w)
{
    pl__why_probe first, last;
    int rc = probe(w, 0, &first);
    bool more = rc == 0 && go_on(w, &first, 0, w->len);
    if (rc != 0 || inevitable(&first)) {
        w->out->inevitable_at_start = rc == 0;
        w->out->found = rc == 0;
        w->out->after = first;
        return rc;
    }
    if (!more) {
        return 0;
    }
    rc = probe(w, w->len, &last);
    more = rc == 0 && go_on(w, &last, 0, w->len);
    /* The whole list is the replay itself: below the threshold only if
     * the run is not deterministic. found stays false then. */
    if (rc != 0 || !inevitable(&last)) {
        return rc;
    }
    if (!more) {
        bracket(w, first, last);
        return 0;
    }
    return bisect(w, first, last);
}

/* ---- Naming decisions and tasks ----------------------------------------- */

static void describe(const pl_sim_result *ref, const pl__capture *cap, const why_ctx *w,
                     uint64_t index, pl__why_decision *d)
{
    PL__SIM_ASSERT(index < w->len);
    const pl__dec_record *r = &w->list[index];
    *d = (pl__why_decision){.index = index, .kind = r->kind, .n = r->n, .value = r->value};
    size_t ev = 0;
    char *text = pl__shrink_explain_one(ref, cap, &w->base, index, &ev);
    const pl__run_record *rec = pl__sim_result_record(ref);
    if (text != NULL) {
        const pl__trace_rec *e = &rec->events[ev];
        d->has_step = true;
        d->step = e->step;
        d->time_ns = e->time_ns;
        d->task = e->task != PL__TRACE_NO_TASK ? e->task : 0;
        snprintf(d->text, sizeof d->text, "%s", text);
    } else {
        /* No timeline: the run never returned. */
        snprintf(d->text, sizeof d->text, "decision %llu: %s, choice %u of %u",
                 (unsigned long long)index, pl__dec_kind_name(r->kind), r->value, r->n);
    }
    free(text);
}

static void add_task(pl__why_result *out, const pl__run_record *rec, uint32_t id, const char *role)
{
    if (id == 0 || out->tasks_len >= PL__WHY_TASKS_MAX) {
        return;
    }
    for (size_t i = 0; i < out->tasks_len; i++) {
        if (out->tasks[i].id == id) {
            return;
        }
    }
    pl__why_task *t = &out->tasks[out->tasks_len++];
    memset(t, 0, sizeof *t);
    t->id = id;
    t->role = role;
    const char *name = rec != NULL ? pl__run_task_name(rec, id) : NULL;
    snprintf(t->name, sizeof t->name, "%s", name != NULL ? name : "?");
    for (uint32_t i = 0; i < out->finding.tasks_len && i < PL_FINDING_TASKS_MAX; i++) {
        if (out->finding.tasks[i].id == id) {
            t->parked = true;
            t->parked_as = out->finding.tasks[i];
        }
    }
}

/* The tasks of the decisive decision: for a schedule decision the task
 * it polled and the FIFO head it passed over; the task its event names
 * (the one running, or the owner of a timer it delays); and the finding's
 * own task, which a probe or a fault decision does not name but which is
 * what the reader came for. */
static void involved(const pl_sim_result *ref, const pl__capture *cap, pl__why_result *out)
{
    const pl__run_record *rec = pl__sim_result_record(ref);
    uint64_t i = out->decisive.index;
    const pl__decision_note *note = cap != NULL && i < cap->len ? &cap->notes[i] : NULL;
    if (out->decisive.kind == PL_DECIDE_SCHEDULE && note != NULL) {
        add_task(out, rec, note->chosen, "polled");
        add_task(out, rec, (uint32_t)note->key, "passed over");
    }
    add_task(out, rec, out->decisive.task, "its subject");
    add_task(out, rec, out->finding.task_id, "the finding's task");
}

/* ---- Passing twins ------------------------------------------------------ */

static int twins(why_ctx *w, const pl__replay *rp, const pl_sim_result *ref, const pl__capture *cap)
{
    pl__why_result *out = w->out;
    size_t n = rp->decisions_len;
    pl__dec_record *copy = n > 0 ? malloc(n * sizeof *copy) : NULL;
    if (n > 0 && copy == NULL) {
        return PL_ENOMEM;
    }
    if (n > 0) {
        memcpy(copy, rp->decisions, n * sizeof *copy);
    }
    pl_sim_options o = options_for(w, PL_SIM_SOURCE_LIST_BY_KIND, copy, n, false);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (copy[i].value == 0) {
            continue;
        }
        out->departures++;
        out->has_last_departure = true;
        out->last_departure = i;
        if (out->twins_len >= PL__WHY_TWINS_MAX || i >= w->len || out->stopped) {
            continue;
        }
        pl__why_twin *t = &out->twins[out->twins_len++];
        describe(ref, cap, w, i, &t->d);
        uint32_t keep = copy[i].value;
        copy[i].value = 0;
        pl_sim_result r;
        rc = run_one(w, &o, &r, &t->hung);
        copy[i].value = keep;
        if (rc == 0) {
            t->outcome = t->hung ? PL_FINDING_LIVELOCK : r.finding.kind;
            pl_sim_result_free(&r);
            (void)go_on(w, NULL, 0, 0);
        }
    }
    free(copy);
    return rc;
}

/* ---- Entry point -------------------------------------------------------- */

/* The file's run again, with its timeline and the capture that names
 * its decisions (no timeline when it never returns). */
static int reference(why_ctx *w, const pl__replay *rp, pl_sim_result *ref, pl__capture *cap,
                     char *err, size_t err_len)
{
    pl_sim_options o = options_for(w, PL_SIM_SOURCE_LIST, rp->decisions, rp->decisions_len, true);
    bool hung = false;
    int rc = isolated(w) ? run_one(w, &o, ref, &hung)
                         : (w->out->runs_total++, pl__sim_run_captured(w->sc, &o, cap, ref));
    if (rc != 0) {
        snprintf(err, err_len, "cannot replay it: %s", pl_strerror(rc));
        return rc;
    }
    const pl__run_record *rec = pl__sim_result_record(ref);
    if (!failed_so(w, ref, hung) || rec == NULL || rec->decisions_truncated) {
        snprintf(err, err_len, "its run does not reproduce %s (it ended in %s)",
                 pl_finding_name(w->kind), hung ? "a hang" : pl_finding_name(ref->finding.kind));
        return PL_EINVAL;
    }
    w->list = malloc((rec->decisions_len + 1) * sizeof *w->list);
    if (w->list == NULL) {
        return PL_ENOMEM;
    }
    memcpy(w->list, rec->decisions, rec->decisions_len * sizeof *w->list);
    w->len = rec->decisions_len;
    w->out->finding = ref->finding;
    w->out->decisions = w->len;
    return 0;
}

static int analyse(why_ctx *w, const pl__replay *rp, char *err, size_t err_len)
{
    pl_sim_result ref;
    pl__capture cap;
    memset(&ref, 0, sizeof ref);
    memset(&cap, 0, sizeof cap);
    int rc = reference(w, rp, &ref, &cap, err, err_len);
    if (rc == 0) {
        rc = point_of_no_return(w);
    }
    if (rc == 0 && w->out->found && w->out->point > 0) {
        describe(&ref, &cap, w, w->out->point - 1, &w->out->decisive);
        involved(&ref, &cap, w->out);
    }
    if (rc == 0) {
        rc = twins(w, rp, &ref, &cap);
    }
    if (rc != 0 && err[0] == '\0') {
        snprintf(err, err_len, "%s", pl_strerror(rc));
    }
    free(cap.notes);
    pl_sim_result_free(&ref);
    return rc;
}

int pl__why_file(const char *path, uint32_t runs, pl__shrink_runner_fn runner,
                 pl__why_progress_fn progress, void *ud, pl__why_result *out, char *err,
                 size_t err_len)
{
    PL__SIM_ASSERT(path != NULL && out != NULL && err != NULL && err_len > 0);
    PL__SIM_ASSERT(runs <= PL__WHY_RUNS_MAX);
    memset(out, 0, sizeof *out);
    err[0] = '\0';
    out->runs = runs != 0 ? runs : PL__WHY_RUNS_DEFAULT;
    pl__replay rp;
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    why_ctx w = {.runner = runner, .progress = progress, .ud = ud, .out = out};
    int kind = 0;
    int rc = pl__shrink_load(path, &rp, &w.sc, &kind, &w.base, knobs, sizeof knobs, err, err_len);
    if (rc == 0 && kind == PL_FINDING_CRASH && runner == NULL) {
        snprintf(err, err_len, "%s: a crash is analysed only with runs in other processes", path);
        rc = PL_EINVAL;
    }
    if (rc == 0) {
        w.kind = (pl_finding_kind)kind;
        w.seed_root = pl__prng_subseed(rp.seed, PL__SEED_WHY);
        out->seed = rp.seed;
        char why[400] = "";
        rc = analyse(&w, &rp, why, sizeof why);
        if (rc != 0) {
            snprintf(err, err_len, "%s: %s", path, why);
        }
    }
    free(w.list);
    pl__replay_free(&rp);
    return rc;
}
