/* sim/src/replay_run.c: replay files and runs: writing a run's file,
 * the options that rerun a file, the comparison of a rerun with its
 * file (and where it left it), and pl_sim_replay_file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_run.h"
#include "run_record.h"
#include "sim_internal.h"

const char *pl__run_build_id(void)
{
#if defined(__clang__)
    return "clang " __clang_version__
#elif defined(__GNUC__)
    return "gcc " __VERSION__
#else
    return "cc"
#endif
#if defined(__OPTIMIZE__)
           " optimized"
#endif
#if defined(__SANITIZE_ADDRESS__)
           " asan"
#endif
        ;
}

/* The file just written must parse back to the record it was written
 * from: a writer/parser mismatch would make every replay of it fail or,
 * worse, replay another run. A truncated list cannot be replayed (the
 * parser refuses it on purpose), so its file is not read back. Reading
 * it can still fail on its own (the file gone, memory): that is the
 * caller's error, not a broken invariant. */
static int check_round_trip(const pl__replay *rp, const char *path)
{
    if (rp->truncated && rp->decisions_len > 0) {
        return 0;
    }
    pl__replay back;
    char err[256];
    int rc = pl__replay_parse_file(path, &back, err, sizeof err);
    if (rc == PL_EFORMAT || rc == PL_EVERSION) {
        PL__SIM_ASSERT(!"a replay file as written does not parse");
    }
    if (rc == 0) {
        PL__SIM_ASSERT(pl__replay_same(rp, &back));
        pl__replay_free(&back);
    }
    return rc;
}

int pl_sim_write_replay(const pl_scenario *sc, const pl_sim_options *opts,
                        const pl_sim_result *r, const char *path)
{
    const pl__run_record *rec = r->internal;
    if (rec == NULL) {
        return PL_EINVAL;
    }
    pl__replay rp;
    pl__replay_init(&rp);
    rp.pollen_version = (char *)PL_VERSION_STRING;
    rp.build = (char *)pl__run_build_id();
    rp.scenario = (char *)sc->name;
    rp.seed = opts != NULL ? opts->seed : 0;
    rp.strategy = (char *)(opts != NULL && opts->strategy != NULL ? opts->strategy : "random");
    /* Through the text, as the file's reader will see them (a kind that
     * is off keeps no probability there). */
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    pl__dec_knobs_format(&rec->knobs, knobs, sizeof knobs);
    pl__dec_knobs_default(&rp.knobs);
    rp.has_knobs = pl__dec_knobs_parse(&rp.knobs, knobs, strlen(knobs), NULL, 0) == 0;
    rp.poll_cost_ns = opts != NULL ? opts->poll_cost_ns : 0;
    rp.time_limit_ns = opts != NULL ? opts->time_limit_ns : 0;
    rp.rotation_off = opts != NULL && !opts->rotate_wakers;
    rp.finding = r->finding.kind != PL_FINDING_NONE ? (char *)pl_finding_name(r->finding.kind)
                                                     : NULL;
    rp.message = r->finding.kind != PL_FINDING_NONE ? (char *)r->finding.message : NULL;
    rp.steps = r->steps;
    rp.events = r->events;
    rp.has_hash = true;
    rp.hash = r->hash;
    rp.truncated = rec->decisions_truncated;
    rp.checkpoints = rec->checkpoints;
    rp.checkpoints_len = rec->checkpoints_len;
    rp.decisions = rec->decisions;
    rp.decisions_len = rec->decisions_len;
    int rc = pl__replay_write_path(path, &rp);
    return rc == 0 ? check_round_trip(&rp, path) : rc;
}

/* The log entry of the i-th hashed event (the log also holds log-only
 * kinds, which checkpoints do not count), or NULL. */
static const pl__trace_rec *hashed_event(const pl__run_record *rec, size_t i)
{
    for (size_t k = 0; rec != NULL && k < rec->events_len; k++) {
        if (pl__trace_kind_hashed(rec->events[k].kind) && i-- == 0) {
            return &rec->events[k];
        }
    }
    return NULL;
}

/* Says where a replayed run left the recorded one. */
static void explain_divergence(const pl__replay *rp, const pl_sim_result *out, char *err,
                               size_t err_len)
{
    const pl__run_record *rec = out->internal;
    if (out->diverged) {
        snprintf(err, err_len, "the run diverged at %s", out->divergence);
        return;
    }
    size_t w = pl__trace_first_diff_window(rp->checkpoints, rp->checkpoints_len,
                                           rec != NULL ? rec->checkpoints : NULL,
                                           rec != NULL ? rec->checkpoints_len : 0);
    const pl__trace_rec *e = w != SIZE_MAX ? hashed_event(rec, w * 256) : NULL;
    if (e != NULL) {
        const char *name = pl__run_task_name(rec, e->task);
        snprintf(err, err_len,
                 "the trace differs within events %zu..%zu (step %llu, %.3f ms; that window "
                 "starts with %s of task %s); expected hash %016llx, got %016llx",
                 w * 256, w * 256 + 255, (unsigned long long)e->step, (double)e->time_ns / 1e6,
                 pl__trace_kind_name(e->kind), name != NULL ? name : "-",
                 (unsigned long long)rp->hash, (unsigned long long)out->hash);
        return;
    }
    snprintf(err, err_len, "expected hash %016llx and %s, got hash %016llx and %s",
             (unsigned long long)rp->hash, rp->finding != NULL ? rp->finding : "no finding",
             (unsigned long long)out->hash, pl_finding_name(out->finding.kind));
}

bool pl__replay_seed_only(const pl__replay *rp)
{
    return rp->decisions_len == 0 && rp->truncated;
}

int pl__replay_options(const pl__replay *rp, pl_sim_options *o, char *knobs, size_t knobs_len)
{
    pl_sim_options_default(o);
    o->seed = rp->seed;
    o->poll_cost_ns = rp->poll_cost_ns;
    o->time_limit_ns = rp->time_limit_ns;
    o->rotate_wakers = !rp->rotation_off;
    if (pl__replay_seed_only(rp)) {
        o->source = PL_SIM_SOURCE_SEED;
        o->strategy = rp->strategy != NULL ? rp->strategy : "random";
    } else {
        o->source = PL_SIM_SOURCE_LIST;
        o->decisions = rp->decisions;
        o->decisions_len = rp->decisions_len;
    }
    if (rp->has_knobs) {
        int n = pl__dec_knobs_format(&rp->knobs, knobs, knobs_len);
        if (n < 0 || (size_t)n >= knobs_len) {
            return PL_EINVAL;
        }
        o->knobs = knobs;
    }
    return 0;
}

int pl__replay_compare(const pl__replay *rp, const pl_sim_result *r, char *err, size_t err_len)
{
    const char *want = rp->finding;
    const char *got = r->finding.kind != PL_FINDING_NONE ? pl_finding_name(r->finding.kind) : NULL;
    if ((want == NULL) != (got == NULL) || (want != NULL && strcmp(want, got) != 0)) {
        snprintf(err, err_len, "expected %s, got %s%s%s", want != NULL ? want : "no finding",
                 got != NULL ? got : "no finding", r->diverged ? "; " : "",
                 r->diverged ? r->divergence : "");
        return 1;
    }
    bool hashed = rp->has_hash && !pl__replay_seed_only(rp);
    if ((hashed && rp->hash != r->hash) || r->diverged) {
        explain_divergence(rp, r, err, err_len);
        return 1;
    }
    return 0;
}

int pl_sim_replay_file(const char *path, pl_sim_result *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    pl__replay rp;
    int rc = pl__replay_parse_file(path, &rp, err, err_len);
    if (rc != 0) {
        return rc;
    }
    const pl_scenario *sc = rp.scenario != NULL ? pl_scenario_find(rp.scenario) : NULL;
    if (sc == NULL) {
        snprintf(err, err_len, "%s: scenario '%s' is not linked into this program", path,
                 rp.scenario != NULL ? rp.scenario : "(none)");
        pl__replay_free(&rp);
        return PL_EFORMAT;
    }
    pl_sim_options o;
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    rc = pl__replay_options(&rp, &o, knobs, sizeof knobs);
    o.keep_events = true;
    if (rc == 0) {
        rc = pl_sim_run(sc, &o, out);
    }
    if (rc != 0) {
        snprintf(err, err_len, "%s: the run could not start: %s", path, pl_strerror(rc));
        pl__replay_free(&rp);
        return rc;
    }
    rc = pl__replay_compare(&rp, out, err, err_len);
    pl__replay_free(&rp);
    return rc;
}
