/* sim/src/cli/cmd_run.c: the `run` command: a campaign per scenario
 * (workers, then the pl_sometimes verdict and the summary line), `run
 * --real` and `--strategy bounded:K` in one child per scenario, PCT's
 * guarantee line, the JSON summary and the exit status. */
#include "cli_internal.h"
#include "real.h"

static int campaign_start(campaign *cp)
{
    const run_opts *o = cp->o;
    cp->shard = pl__seed_slice_of(o->seed_lo, o->seed_hi, o->shard_k, o->shard_n, 0, 1);
    pl__seed_slice_count_text(&cp->shard, cp->total, sizeof cp->total);
    for (uint32_t j = 0; j < o->jobs; j++) {
        pl__seed_slice s =
            pl__seed_slice_of(o->seed_lo, o->seed_hi, o->shard_k, o->shard_n, j, o->jobs);
        if (!s.empty && pl__cli_spawn_seed_worker(cp, s) == NULL) {
            /* The loop still collects the workers already started. */
            cp->error = true;
            return ST_INTERNAL;
        }
    }
    return 0;
}

/* Why the campaign gives no pl_sometimes verdict; "" when it gives one.
 * Only a complete range of two seeds or more can tell: a single run says
 * nothing about "sometimes", and a shard sees part of the range (merge
 * the shards' --json to judge it). */
static void sometimes_not_judged(const campaign *cp, char *buf, size_t len)
{
    const run_opts *o = cp->o;
    size_t n = 0;
    pl__sometimes_sites(&n);
    buf[0] = '\0';
    if (!pl__campaign_sometimes_judged(o->seed_lo, o->seed_hi)) {
        snprintf(buf, len, "one seed (a verdict needs a range of two seeds or more)");
    } else if (o->shard_n > 1) {
        snprintf(buf, len,
                 "shard %" PRIu32 "/%" PRIu32 " of seeds %" PRIu64 "..%" PRIu64
                 " (merge every shard's --json with '%s merge')",
                 o->shard_k, o->shard_n, o->seed_lo, o->seed_hi, cp->c->prog);
    } else if (cp->stopped || cp->error) {
        snprintf(buf, len, "the campaign did not run to its end");
    } else if (cp->first != NULL && !o->keep_going) {
        snprintf(buf, len, "a finding stopped the campaign");
    } else if (cp->sites_received != cp->sites_expected ||
               cp->cover_received != cp->sites_expected || n != cp->tally.nsites) {
        snprintf(buf, len, "not every worker sent its counts");
    }
}

/* pl_sometimes sites reached in this campaign but never true, and those
 * of the scenario's own file never reached: findings without a seed. */
static void check_sometimes(campaign *cp, bool judged)
{
    size_t n = 0;
    pl__sometimes_sites(&n);
    for (size_t i = 0; judged && i < n; i++) {
        pl_finding f;
        if (!pl__campaign_site_failed(&cp->tally, cp->sc, i, &f)) {
            continue;
        }
        report *rp = calloc(1, sizeof *rp);
        if (rp == NULL) {
            cp->error = true;
            return;
        }
        rp->sc = cp->sc;
        rp->f = f;
        /* Printed at once: these come after the campaign's other output. */
        pl__cli_make_reproduce(cp->c, cp->o, rp);
        pl__cli_print_report(cp->o, rp);
        cp->findings++;
        if (cp->first == NULL) {
            cp->first = rp;
        } else {
            free(rp);
        }
    }
}

/* What one scenario's campaign came to, for the summary and the exit. */
typedef struct outcome {
    const pl_scenario *sc;
    bool ran;
    char total[24];         /* seeds, in decimal; "" for none */
    uint64_t runs, findings, distinct;
    uint64_t setup_errors;  /* seeds whose setup failed (not findings) */
    bool distinct_partial;
    uint64_t discarded; /* runs a pl_assume discarded (with the coverage) */
    bool stopped;
    uint64_t resume_seed;   /* stopped: every seed below it is done */
    double seconds;
    pl_finding_kind first;  /* NONE: clean */
    bool first_setup;       /* first is a setup error (pl_finding_is_setup_error) */
    bool complete;          /* every seed of the range judged (no --time, no shard) */
    bool first_has_seed;
    uint64_t first_seed;
    bool has_cover;
    cover cov;              /* decisions per kind, buggify and sometimes sites */
} outcome;

/* The outcome's seed count as text ("0" when it has none). */
static const char *total_of(const outcome *out)
{
    return out->total[0] != '\0' ? out->total : "0";
}

static void outcome_of(const campaign *cp, const char *not_judged, outcome *out)
{
    out->has_cover = pl__cli_cover_of(cp, not_judged, &out->cov) == 0;
    out->sc = cp->sc;
    out->ran = true;
    snprintf(out->total, sizeof out->total, "%s", cp->total);
    out->runs = cp->done;
    out->findings = cp->findings;
    out->setup_errors = cp->setup_errors;
    out->distinct = cp->tally.hashes.count;
    out->distinct_partial = cp->tally.hashes.full;
    out->discarded = cp->tally.discarded;
    out->stopped = cp->stopped;
    out->resume_seed = cp->resume_seed;
    out->seconds = (double)(cp->end_ms - cp->start_ms) / 1000.0;
    out->first = cp->first != NULL ? cp->first->f.kind : PL_FINDING_NONE;
    out->first_setup = cp->first != NULL && pl_finding_is_setup_error(&cp->first->f);
    out->complete = !cp->stopped && !cp->error && cp->o->shard_n == 1;
    out->first_has_seed = cp->first != NULL && cp->first->has_seed;
    out->first_seed = cp->first != NULL ? cp->first->seed : 0;
}

static void print_summary_line(const run_opts *o, const outcome *out)
{
    FILE *f = o->text;
    if (!out->ran) {
        fprintf(f, "%s: not run (%s)\n", out->sc->name,
                pl__cli_interrupted ? "interrupted" : "--time ran out");
        return;
    }
    fprintf(f, "%s: %" PRIu64 " run%s%s, %" PRIu64 " finding%s, %s%" PRIu64
               " distinct schedule%s, %.1f s",
            out->sc->name, out->runs, out->runs == 1 ? "" : "s",
            o->check_det ? " (each twice)" : "", out->findings, out->findings == 1 ? "" : "s",
            out->distinct_partial ? "at least " : "", out->distinct,
            out->distinct == 1 ? "" : "s", out->seconds);
    if (out->setup_errors > 0) {
        fprintf(f, "; %" PRIu64 " setup error%s (the scenario never ran)", out->setup_errors,
                out->setup_errors == 1 ? "" : "s");
    }
    if (out->stopped) {
        fprintf(f, "; %s after %" PRIu64 " of %s seeds",
                pl__cli_interrupted ? "interrupted" : "stopped by --time", out->runs,
                total_of(out));
        if (out->resume_seed != UINT64_MAX) {
            fprintf(f, ", every seed%s below %" PRIu64 " done",
                    o->shard_n > 1 ? " of this shard" : "", out->resume_seed);
        }
    }
    if (out->sc->expect != NULL && out->first == PL_FINDING_NONE) {
        fprintf(f, "; expected %s, not found", out->sc->expect);
    }
    fputc('\n', f);
    pl__cli_discarded_text(f, out->discarded, out->runs);
    if (out->first != PL_FINDING_NONE && !o->keep_going && o->seed_lo < o->seed_hi) {
        /* The workers' tallies of the slices cut short never arrive: a
         * partial block would read as the range's coverage. */
        fprintf(f, "  coverage: not gathered: the campaign stopped at its first %s "
                   "(--keep-going runs the whole range)\n",
                out->first_setup ? "setup error" : "finding");
    } else if (out->has_cover && o->seed_lo < o->seed_hi) {
        pl__cli_cover_text(f, &out->cov, out->runs);
    } else if (out->has_cover && out->cov.nsometimes > 0) {
        fprintf(f, "  pl_sometimes: not judged: %s\n", out->cov.not_judged);
    }
    pl__cli_flush_out(f);
}

static void campaign_free(campaign *cp)
{
    free(cp->first);
    pl__campaign_tally_free(&cp->tally);
    for (size_t i = 0; i < cp->nw; i++) {
        free(cp->w[i].buf);
    }
    free(cp->w);
}

/* Runs one scenario's seeds. Returns 0 or ST_INTERNAL. */
static int campaign_run(const cli *c, const run_opts *o, const pl_scenario *sc, outcome *out)
{
    campaign cp;
    memset(&cp, 0, sizeof cp);
    cp.c = c;
    cp.o = o;
    cp.sc = sc;
    cp.limit = UINT64_MAX;
    cp.resume_seed = UINT64_MAX;
    cp.start_ms = cp.progress_ms = pl__cli_now_ms();
    if (pl__campaign_tally_init(&cp.tally) != 0) {
        cp.error = true;
    } else {
        campaign_start(&cp);
    }
    pl__cli_campaign_loop(&cp);
    cp.end_ms = pl__cli_now_ms();
    pl__cli_clear_progress(&cp);
    char not_judged[160];
    sometimes_not_judged(&cp, not_judged, sizeof not_judged);
    if (pl__cli_stdout_errno != 0) {
        /* Nobody reads any more: no shrink, no report. */
        outcome_of(&cp, not_judged, out);
        campaign_free(&cp);
        return 0;
    }
    if (cp.first != NULL && !o->keep_going) {
        pl__cli_shrink_report(c, o, cp.first);
        pl__cli_print_report(o, cp.first);
    }
    check_sometimes(&cp, not_judged[0] == '\0');
    outcome_of(&cp, not_judged, out);
    if (!o->quiet) {
        print_summary_line(o, out);
    }
    bool error = cp.error;
    campaign_free(&cp);
    return error ? ST_INTERNAL : 0;
}

typedef struct real_result {
    pl_finding_kind kind;
    char message[1024];
} real_result;

/* The scenario's run on the real backend, its nodes included (real.h). */
static void real_scenario(const void *ctx, void *result)
{
    real_result *res = result;
    res->kind = pl__real_run(ctx, res->message, sizeof res->message);
}

static int real_one(const cli *c, const run_opts *o, const pl_scenario *sc, outcome *out)
{
    real_result res;
    child_end end;
    memset(&res, 0, sizeof res);
    pl_time limit = o->time_ns > 0 ? o->time_ns : DEFAULT_REAL_LIMIT_NS;
    int rc = pl__cli_run_in_child(real_scenario, sc, &res, sizeof res,
                                  pl__cli_now_ms() + limit / PL_MS, OUT_CAPTURE_ALL, &end);
    if (rc != 0) {
        return pl__cli_internal_error(c, "run", "cannot start a process: %s", strerror(-rc));
    }
    if (!end.complete && !pl__cli_interrupted) {
        res.kind =
            pl__cli_child_lost(&end, "the scenario's process", res.message, sizeof res.message);
    }
    memset(out, 0, sizeof *out);
    out->sc = sc;
    out->ran = true;
    snprintf(out->total, sizeof out->total, "1");
    out->runs = 1;
    out->first = pl__cli_interrupted ? PL_FINDING_NONE : res.kind;
    out->findings = out->first != PL_FINDING_NONE;
    out->seconds = end.seconds;
    out->stopped = pl__cli_interrupted != 0;
    if (pl__cli_interrupted) {
        fprintf(o->text, "%s: real backend run interrupted\n", sc->name);
    } else if (res.kind != PL_FINDING_NONE) {
        report *rp = calloc(1, sizeof *rp);
        if (rp == NULL) {
            return pl__cli_internal_error(c, "run", "out of memory");
        }
        rp->sc = sc;
        rp->real = true;
        snprintf(rp->origin, sizeof rp->origin, "real backend");
        rp->f.kind = res.kind;
        snprintf(rp->f.message, sizeof rp->f.message, "%s", res.message);
        rp->output = end.output;
        return pl__cli_report_once(c, o, rp);
    } else if (!o->quiet) {
        fprintf(o->text, "%s: real backend ok, %.1f s\n", sc->name, out->seconds);
    }
    return 0;
}

typedef struct bounded_job {
    const run_opts *o;
    const pl_scenario *sc;
} bounded_job;

/* How long past --time the parent waits for the exploring child, which
 * stops itself at --time between two runs and reports how far it got;
 * only a run that outlasts this is cut off with nothing to tell. */
#define BOUNDED_GRACE_MS 2000

typedef struct bounded_msg {
    int rc;                  /* pl_sim_explore_bounded's */
    uint64_t runs, schedules, discarded, level_schedules;
    uint32_t levels_done, deviations;
    bool exhausted, budget_hit, clock_hit, truncated;
    pl_finding finding;
    char replay[PATH_MAX];   /* "" when not written */
    char replay_error[256];
} bounded_msg;

/* In the child: the whole exploration, then the failing run's replay. */
static void bounded_explore(const void *ctx, void *result)
{
    const bounded_job *bj = ctx;
    bounded_msg *m = result;
    pl_sim_options so;
    pl_sim_bounded_result res;
    pl__cli_sim_options(bj->o, 0, &so);
    pl_sim_bounded_limits lim = {0, 0};
    if (bj->o->deadline_ms != INT64_MAX) {
        int64_t left_ms = bj->o->deadline_ms - pl__cli_now_ms();
        /* Saturated: --time far in the future must not wrap. */
        lim.time_ns = left_ms <= 0 ? 1 : left_ms > INT64_MAX / PL_MS ? INT64_MAX : left_ms * PL_MS;
    }
    m->rc = pl_sim_explore_bounded(bj->sc, bj->o->bound_k, &lim, &so, &res);
    m->runs = res.runs;
    m->schedules = res.schedules;
    m->discarded = res.discarded;
    m->level_schedules = res.level_schedules;
    m->levels_done = res.levels_done;
    m->deviations = res.deviations;
    m->exhausted = res.exhausted;
    m->budget_hit = res.budget_hit;
    m->clock_hit = res.clock_hit;
    m->truncated = res.truncated;
    m->finding = res.finding;
    if (m->rc == 0 && res.finding.kind != PL_FINDING_NONE) {
        int n = snprintf(m->replay, sizeof m->replay, "%s/%s-bounded%" PRIu32 ".replay",
                         bj->o->out_dir, bj->sc->name, bj->o->bound_k);
        int rc = n > 0 && (size_t)n < sizeof m->replay ? pl__cli_make_dirs(bj->o->out_dir)
                                                       : -ENAMETOOLONG;
        rc = rc == 0 ? pl_sim_write_replay(bj->sc, &so, &res.run, m->replay) : rc;
        if (rc != 0) {
            pl__cli_textf(m->replay_error, sizeof m->replay_error, "cannot write %s: %s", m->replay,
                          pl__cli_error_text(rc));
            m->replay[0] = '\0';
        }
    }
    pl_sim_bounded_result_free(&res);
}

/* Which decision kinds a bounded claim covers: the enumeration deviates
 * only at consulted decisions, and a kind whose knob is off is never
 * consulted, so its faults were not explored at all. Appends
 * " over decision kinds a, b; not explored: c (off)" to buf. */
static void bounded_kinds(const run_opts *o, char *buf, size_t len)
{
    pl__dec_knobs k;
    pl__cli_knobs_for(o, 0, &k);
    static const char *const heads[2] = {" over decision kinds ", "; not explored: "};
    size_t used = strlen(buf);
    for (int pass = 0; pass < 2; pass++) {
        bool first = true;
        for (uint32_t i = 0; i < PL_DECIDE__COUNT; i++) {
            if (pl__dec_kind_name(i) == NULL || k.kind[i].enabled != (pass == 0) ||
                used >= len) {
                continue;
            }
            /* A draw of user code's randomness tries three values (explore.c). */
            const char *note = pass == 1                     ? " (off)"
                               : i == (uint32_t)PL_DECIDE_RANDOM ? " (3 values a draw)"
                                                                 : "";
            int n = snprintf(buf + used, len - used, "%s%s%s", first ? heads[pass] : ", ",
                             pl__dec_kind_name(i), note);
            used += n > 0 ? (size_t)n : 0;
            first = false;
        }
    }
}

static void bounded_summary(const run_opts *o, const outcome *out, const bounded_msg *m,
                            const child_end *end)
{
    char kinds[512] = "";
    bounded_kinds(o, kinds, sizeof kinds);
    FILE *f = o->text;
    if (!end->complete) {
        const char *why = end->hung             ? "a poll never returned"
                          : !out->stopped       ? "the process died"
                          : pl__cli_interrupted ? "interrupted"
                                                : "stopped by --time";
        fprintf(f, "%s: %s, %.1f s; %s before the exploration finished\n", out->sc->name,
                o->strategy, out->seconds, why);
        return;
    }
    fprintf(f, "%s: %s, %" PRIu64 " runs, %" PRIu64 " schedules, %.1f s", out->sc->name,
            o->strategy, m->runs, m->schedules, out->seconds);
    if (m->clock_hit) {
        fprintf(f, "; stopped by --time at %" PRIu32 " deviation%s (%" PRIu64 " such schedule%s "
                   "ran clean), every schedule with fewer ran clean%s,%s",
                m->levels_done, m->levels_done == 1 ? "" : "s", m->level_schedules,
                m->level_schedules == 1 ? "" : "s",
                m->truncated ? " (a run outgrew the decision recorder)" : "", kinds);
    } else if (m->exhausted && m->discarded == 0) {
        fprintf(f, "; verified: all %" PRIu64 " schedules with at most %" PRIu32 " deviation%s "
                   "explored, no finding,%s",
                m->schedules, o->bound_k, o->bound_k == 1 ? "" : "s", kinds);
    } else if (m->exhausted) {
        /* A discarded schedule was not checked: no claim covers it. */
        fprintf(f,
                "; all %" PRIu64 " schedules with at most %" PRIu32 " deviation%s explored, "
                "no finding, but %" PRIu64 " of them discarded by pl_assume (not checked),%s",
                m->schedules, o->bound_k, o->bound_k == 1 ? "" : "s", m->discarded, kinds);
    } else if (m->finding.kind == PL_FINDING_NONE) {
        fprintf(f, "; schedules with fewer than %" PRIu32 " deviations done%s,%s",
                m->levels_done, m->truncated ? " (a run outgrew the decision recorder)" : "",
                kinds);
    }
    fputc('\n', f);
}

static report *bounded_report(const pl_scenario *sc, const bounded_msg *m, const child_end *end)
{
    report *rp = calloc(1, sizeof *rp);
    if (rp == NULL) {
        return NULL;
    }
    rp->sc = sc;
    rp->output = end->output;
    if (end->complete) {
        rp->positioned = true;
        rp->f = m->finding;
        snprintf(rp->replay, sizeof rp->replay, "%s", m->replay);
        snprintf(rp->note, sizeof rp->note, "%s", m->replay_error);
        snprintf(rp->origin, sizeof rp->origin, "schedule with %" PRIu32 " deviation%s",
                 m->deviations, m->deviations == 1 ? "" : "s");
    } else if (end->hung) {
        rp->positioned = true;
        rp->f = end->hang;
        snprintf(rp->origin, sizeof rp->origin, "one of the schedules explored");
    } else {
        rp->f.kind =
            pl__cli_child_lost(end, "the exploring process", rp->f.message, sizeof rp->f.message);
        snprintf(rp->origin, sizeof rp->origin, "one of the schedules explored");
    }
    return rp;
}

/* --strategy bounded:K: every schedule with at most K deviations, in a
 * child; no seeds, so no jobs, shards or per-seed watchdog. */
static int bounded_one(const cli *c, const run_opts *o, const pl_scenario *sc, outcome *out)
{
    bounded_msg m;
    child_end end;
    bounded_job bj = {o, sc};
    memset(&m, 0, sizeof m);
    int64_t kill_ms = o->deadline_ms > INT64_MAX - BOUNDED_GRACE_MS ? INT64_MAX
                                                                     : o->deadline_ms + BOUNDED_GRACE_MS;
    int rc = pl__cli_run_in_child(bounded_explore, &bj, &m, sizeof m, kill_ms, OUT_CAPTURE, &end);
    if (rc != 0) {
        return pl__cli_internal_error(c, "run", "cannot start a process: %s", strerror(-rc));
    }
    if (end.complete && m.rc < 0) {
        return pl__cli_internal_error(c, "run", "%s: the exploration failed: %s", sc->name,
                                      pl__cli_error_text(m.rc));
    }
    memset(out, 0, sizeof *out);
    out->sc = sc;
    out->ran = true;
    out->runs = m.runs;
    out->distinct = m.schedules;
    out->resume_seed = UINT64_MAX; /* no seeds to resume from */
    out->seconds = end.seconds;
    out->stopped = end.complete ? m.clock_hit
                                : end.timed_out &&
                                      (pl__cli_interrupted || pl__cli_now_ms() >= o->deadline_ms);
    bool found = end.complete ? m.finding.kind != PL_FINDING_NONE : !out->stopped;
    out->complete = end.complete && m.exhausted;
    if (found) {
        report *rp = bounded_report(sc, &m, &end);
        if (rp == NULL) {
            return pl__cli_internal_error(c, "run", "out of memory");
        }
        out->first = rp->f.kind;
        out->first_setup = pl_finding_is_setup_error(&rp->f);
        out->findings = !out->first_setup;
        out->setup_errors = out->first_setup;
        rc = rp->note[0] != '\0' ? ST_INTERNAL : 0;
        pl__cli_shrink_report(c, o, rp);
        pl__cli_report_once(c, o, rp);
    }
    if (!o->quiet) {
        bounded_summary(o, out, &m, &end);
    }
    return rc;
}

/* ======================================================================
 * `run`: the command
 * ==================================================================== */

static void summary_json_scenario(const outcome *out)
{
    FILE *f = stdout;
    fputs("{\"scenario\":", f);
    pl__cli_json_string(f, out->sc->name);
    fprintf(f, ",\"ran\":%s,\"seeds\":%s,\"runs\":%" PRIu64 ",\"findings\":%" PRIu64
               ",\"distinct_schedules\":%" PRIu64 ",\"distinct_exact\":%s,\"seconds\":%.3f",
            out->ran ? "true" : "false", total_of(out), out->runs, out->findings, out->distinct,
            out->distinct_partial ? "false" : "true", out->seconds);
    fprintf(f, ",\"setup_errors\":%" PRIu64 ",\"discarded\":%" PRIu64, out->setup_errors,
            out->discarded);
    fprintf(f, ",\"complete\":%s", out->ran && !out->stopped ? "true" : "false");
    if (out->stopped && out->resume_seed != UINT64_MAX) {
        fprintf(f, ",\"resume_seed\":%" PRIu64, out->resume_seed);
    }
    fputs(",\"first\":", f);
    if (out->first != PL_FINDING_NONE) {
        fputs("{\"kind\":", f);
        pl__cli_json_string(f, pl_finding_name(out->first));
        fprintf(f, ",\"setup_error\":%s", out->first_setup ? "true" : "false");
        if (out->first_has_seed) {
            fprintf(f, ",\"seed\":%" PRIu64 "}", out->first_seed);
        } else {
            fputs(",\"seed\":null}", f);
        }
    } else {
        fputs("null", f);
    }
    fputs(",\"expect\":", f);
    if (out->sc->expect != NULL) {
        pl__cli_json_string(f, out->sc->expect);
    } else {
        fputs("null", f);
    }
    fputs(",\"coverage\":", f);
    if (out->has_cover) {
        pl__cli_cover_json(f, &out->cov);
    } else {
        fputs("null", f);
    }
    fputc('}', f);
}

static void summary_json(const run_opts *o, const outcome *outs, size_t n, int status)
{
    FILE *f = stdout;
    fprintf(f, "{\"summary\":{\"exit\":%d,\"real\":%s", status, o->real ? "true" : "false");
    if (!o->real) {
        fprintf(f, ",\"seeds\":\"%" PRIu64 "..%" PRIu64 "\",\"shard\":\"%" PRIu32 "/%" PRIu32
                   "\",\"strategy\":",
                o->seed_lo, o->seed_hi, o->shard_k, o->shard_n);
        pl__cli_json_string(f, o->strategy);
        fputs(",\"knobs\":", f);
        if (o->knobs != NULL) {
            pl__cli_json_string(f, o->knobs);
        } else {
            fputs("null", f);
        }
        fprintf(f, ",\"poll_cost_ns\":%" PRId64 ",\"check_determinism\":%s,\"keep_going\":%s",
                (int64_t)o->poll_cost_ns, o->check_det ? "true" : "false",
                o->keep_going ? "true" : "false");
    }
    fprintf(f, ",\"interrupted\":%s,\"scenarios\":[", pl__cli_interrupted ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            fputc(',', f);
        }
        summary_json_scenario(&outs[i]);
    }
    fputs("]}}\n", f);
    pl__cli_flush_out(f);
}

/* A setup error is no finding of the code under test, and a known-bug
 * scenario whose bug a complete range missed fails too: the bug, or the
 * simulator's power to find it, is gone. */
static int run_status(const outcome *outs, size_t n, bool error)
{
    if (error) {
        return ST_INTERNAL;
    }
    bool setup = false, missed = false;
    for (size_t i = 0; i < n; i++) {
        if (outs[i].first_setup) {
            setup = true;
        } else if (outs[i].first != PL_FINDING_NONE) {
            return ST_FINDING_BASE + (int)outs[i].first;
        }
        missed = missed || (outs[i].sc->expect != NULL && outs[i].first == PL_FINDING_NONE &&
                            outs[i].complete);
    }
    if (setup) {
        return ST_SETUP_ERROR;
    }
    if (pl__cli_interrupted) {
        return ST_INTERRUPTED;
    }
    return missed ? ST_EXPECT_MISSED : ST_CLEAN;
}

/* ---- --seed N --trace: the one seed's timeline ------------------------ */

typedef struct trace_job {
    const cli *c;
    const run_opts *o;
    const pl_scenario *sc;
    int fd; /* a copy of the text stream's fd: the child's own stdout is discarded */
    pl__trace_ring *ring; /* the run's events, should it crash; NULL: none */
} trace_job;

typedef struct trace_msg {
    int rc;     /* pl_sim_run's */
    int status; /* pl__cli_write_trace's */
} trace_msg;

/* In a child (user code runs again): the seed once more, keeping its
 * events, then the timeline the replay command prints. The campaign
 * already showed the run's own output. */
static void trace_child(const void *ctx, void *result)
{
    const trace_job *tj = ctx;
    trace_msg *m = result;
    pl_sim_options so;
    pl_sim_result r;
    pl__cli_sim_options(tj->o, tj->o->seed_lo, &so);
    so.keep_events = true;
    pl__sim_ring_to(tj->ring);
    m->rc = pl_sim_run(tj->sc, &so, &r);
    fflush(stdout);
    dup2(tj->fd, STDOUT_FILENO);
    if (m->rc == 0) {
        char what[64];
        snprintf(what, sizeof what, "seed %" PRIu64, tj->o->seed_lo);
        m->status = pl__cli_write_trace(tj->c, "run", tj->o->trace ? stdout : NULL,
                                        tj->o->chrome, tj->o->quiet, what, &r);
    }
    fflush(stdout);
    pl_sim_result_free(&r);
}

/* Returns 0 or ST_INTERNAL. A run that dies here was reported by the
 * campaign already: this says how, and prints what its crash ring kept. */
static int trace_seed(const cli *c, const run_opts *o, const pl_scenario *sc)
{
    pl__cli_flush_out(o->text);
    trace_job tj = {c, o, sc, dup(fileno(o->text)), pl__ring_map()};
    trace_msg m;
    child_end end;
    memset(&m, 0, sizeof m);
    int rc = tj.fd < 0 ? -errno
                       : pl__cli_run_in_child(trace_child, &tj, &m, sizeof m,
                                              pl__cli_now_ms() + o->watchdog_ns / PL_MS,
                                              OUT_DISCARD, &end);
    if (tj.fd >= 0) {
        close(tj.fd);
    }
    if (rc != 0) {
        pl__ring_unmap(tj.ring);
        return pl__cli_internal_error(c, "run", "cannot start a process: %s", strerror(-rc));
    }
    if (!end.complete) {
        char why[1200];
        pl__cli_child_lost(&end, "the traced run's process", why, sizeof why);
        fprintf(o->text, "%s: seed %" PRIu64 ": %s\n", sc->name, o->seed_lo, why);
        pl__cli_print_crash_events(c, "run", o->text, "the traced run's process", o->trace,
                                   o->chrome, o->quiet, tj.ring);
    }
    pl__ring_unmap(tj.ring);
    if (!end.complete) {
        return 0;
    }
    if (m.rc < 0) {
        return pl__cli_internal_error(c, "run", "the traced run could not start: %s",
                                      pl__cli_error_text(m.rc));
    }
    return m.status;
}

/* The exit status once stdout failed: a reader that went away (`| head`)
 * is no error of the run, only the end of it; anything else (a full disk)
 * is one. */
static int stdout_status(const cli *c, int status)
{
    if (pl__cli_stdout_errno == EPIPE) {
        return ST_OUTPUT_CLOSED;
    }
    if (pl__cli_stdout_errno != 0) {
        return pl__cli_internal_error(c, "run", "cannot write to stdout: %s",
                                      strerror(pl__cli_stdout_errno));
    }
    return status;
}

static int run_all(const cli *c, const run_opts *o, const pl_scenario **sel, size_t nsel)
{
    outcome *outs = calloc(nsel + 1, sizeof *outs);
    if (outs == NULL) {
        return pl__cli_internal_error(c, "run", "out of memory");
    }
    bool error = false;
    for (size_t i = 0; i < nsel && pl__cli_stdout_errno == 0; i++) {
        outs[i].sc = sel[i];
        if (error || pl__cli_interrupted || pl__cli_now_ms() >= o->deadline_ms) {
            if (!o->quiet && !error) {
                print_summary_line(o, &outs[i]);
            }
            continue;
        }
        run_opts oi = *o;
        oi.pct_horizon = pl__cli_pct_horizon_of(o, sel[i]);
        int rc = o->real      ? real_one(c, &oi, sel[i], &outs[i])
                 : o->bounded ? bounded_one(c, &oi, sel[i], &outs[i])
                              : campaign_run(c, &oi, sel[i], &outs[i]);
        if (rc == 0 && (o->trace || o->chrome != NULL) && pl__cli_stdout_errno == 0) {
            rc = trace_seed(c, &oi, sel[i]);
        }
        if (rc == 0 && o->pct_depth > 0 && !o->quiet && outs[i].ran) {
            pl__cli_pct_guarantee_line(o, sel[i], outs[i].runs);
        }
        error = error || rc != 0;
        pl__cli_flush_out(o->text);
    }
    int status = run_status(outs, nsel, error);
    if (o->json && pl__cli_stdout_errno == 0) {
        summary_json(o, outs, nsel, status);
    }
    for (size_t i = 0; i < nsel; i++) {
        pl__cli_cover_free(&outs[i].cov);
    }
    free(outs);
    pl__cli_flush_out(stdout);
    return stdout_status(c, status);
}

int pl__cli_cmd_run(cli *c, int argc, char **argv)
{
    run_opts o;
    int rc = pl__cli_run_opts_parse(c, argc, argv, &o);
    const pl_scenario **sel = NULL;
    size_t nsel = 0;
    if (rc == 0) {
        sel = calloc(c->nall + 1, sizeof *sel);
        rc = sel == NULL ? pl__cli_internal_error(c, "run", "out of memory")
                         : pl__cli_select_scenarios(c, "run", o.patterns, o.npatterns, sel, &nsel);
    }
    if (rc == 0 && (o.trace || o.chrome != NULL) && nsel != 1) {
        rc = usage_error(c, "run", "'%s' traces one run: the patterns select %zu scenarios, "
                         "name exactly one", o.trace ? "--trace" : "--chrome-trace", nsel);
    }
    if (rc == 0) {
        struct sigaction sa, old, ign, old_pipe;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = pl__cli_on_interrupt;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old);
        /* A closed stdout is an EPIPE the parent handles (stdout_errno),
         * and workers inherit this: a worker dying of SIGPIPE would be
         * taken for a crash of user code. */
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        sigaction(SIGPIPE, &ign, &old_pipe);
        rc = run_all(c, &o, sel, nsel);
        sigaction(SIGPIPE, &old_pipe, NULL);
        sigaction(SIGINT, &old, NULL);
    }
    free(sel);
    free(o.patterns);
    return rc < 0 ? ST_CLEAN : rc;
}
