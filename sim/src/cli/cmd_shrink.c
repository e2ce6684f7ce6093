/* sim/src/cli/cmd_shrink.c: shrinking in a child (candidate runs execute
 * user code), used by `run`'s auto-shrink and by the `shrink` command. */
#include "cli_internal.h"
#include "run_record.h"

typedef struct shrink_job {
    const char *in;
    const char *out;                 /* NULL: the shrinker's default */
    const pl_sim_shrink_limits *limits;
    const char *indent;              /* of the printed lines */
    pl__rotation rotation;           /* shrink --waker-rotation; else the file's */
} shrink_job;

typedef struct shrink_msg {
    int rc;
    char err[512];
    char out[PATH_MAX];              /* where the shrunk replay went */
    char text[8192];                 /* what pl__shrink_print says */
    pl_finding finding;              /* the shrunk run's */
    size_t decisions_before;         /* the original list's length */
    char timeline[4096];             /* a shrunk crash's last events */
    char timeline_json[8192];        /* the same, as pl__cli_timeline_json writes them */
} shrink_msg;

/* The shrinker names errors with pl_strerror, which knows only pollen's
 * codes: replace its "unknown error" by the system's name of the errno
 * (EISDIR: "Is a directory", ENOSPC: "No space left on device"). */
static void name_errno(char *err, size_t len, int rc)
{
    static const char unknown[] = "unknown error";
    size_t n = strlen(err), u = sizeof unknown - 1;
    if (strcmp(pl__cli_error_text(rc), pl_strerror(rc)) == 0 || n < u ||
        strcmp(err + n - u, unknown) != 0) {
        return;
    }
    snprintf(err + n - u, len - (n - u), "%s", pl__cli_error_text(rc));
}

/* The last events of a shrunk crash (its record holds what the crash
 * ring kept), as the finding shows a crash's. */
static void shrunk_timeline(const pl_sim_result *run, char *buf, size_t len, char *json,
                            size_t json_len)
{
    json[0] = '\0';
    size_t n = 0;
    const pl__trace_rec *ev = pl__result_events(run, &n);
    const pl__run_record *rec = pl__sim_result_record(run);
    size_t from = n > CRASH_TIMELINE_EVENTS ? n - CRASH_TIMELINE_EVENTS : 0;
    FILE *f = n > 0 && rec != NULL ? fmemopen(buf, len - 1, "w") : NULL;
    if (f == NULL) {
        return;
    }
    pl__trace_store_namer sn = {pl__result_task_name, (void *)rec, rec->texts, rec->texts_len,
                                pl__run_spawn_site};
    pl__trace_namer nm = {pl__trace_store_task, pl__trace_store_text, &sn,
                          pl__trace_store_spawn_site};
    pl__cli_timeline_json(json, json_len, ev, n, CRASH_TIMELINE_EVENTS, &nm);
    fputs("  the run's last events, the latest last:\n", f);
    /* Indented like the rest of the finding. */
    char *mem = NULL;
    size_t memlen = 0;
    FILE *m = open_memstream(&mem, &memlen);
    if (m != NULL) {
        pl__trace_write_text_ex(m, ev + from, n - from, &nm);
        fclose(m);
    }
    for (const char *p = mem; p != NULL && *p != '\0';) {
        size_t l = strcspn(p, "\n");
        fprintf(f, "    %.*s\n", (int)l, p);
        p += l + (p[l] == '\n');
    }
    free(mem);
    fclose(f);
}

static void shrink_child(const void *ctx, void *result)
{
    const shrink_job *sj = ctx;
    shrink_msg *m = result;
    pl_sim_shrink_result res;
    if (sj->out != NULL) {
        snprintf(m->out, sizeof m->out, "%s", sj->out);
    } else {
        pl__shrink_default_out(sj->in, m->out, sizeof m->out);
    }
    m->rc = pl__shrink_file_rotation(sj->in, m->out, sj->limits, sj->rotation,
                                     pl__cpu_budget_run_candidate, &res, m->err, sizeof m->err);
    name_errno(m->err, sizeof m->err, m->rc);
    if (m->rc == 0) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (f != NULL) {
            pl__shrink_print(f, &res, NULL, sj->indent);
            fclose(f);
            pl__cli_cut_lines(m->text, sizeof m->text, text != NULL ? text : "", sj->indent, m->out);
        }
        free(text);
        m->finding = res.run.finding;
        m->decisions_before = res.decisions_before;
        if (res.kind == PL_FINDING_CRASH) {
            shrunk_timeline(&res.run, m->timeline, sizeof m->timeline, m->timeline_json,
                            sizeof m->timeline_json);
        }
    }
    pl_sim_shrink_result_free(&res);
}

/* Shrinks replay file `in` in a child process. Returns 0 with m filled,
 * or nonzero with the reason in m->err. */
static int shrink_isolated(const char *in, const char *out,
                           const pl_sim_shrink_limits *limits, const char *indent,
                           pl__rotation rotation, shrink_msg *m)
{
    shrink_job sj = {in, out, limits, indent, rotation};
    child_end end;
    memset(m, 0, sizeof *m);
    /* The shrinker keeps its own safety net; this is the backstop. */
    pl_time budget = limits->time_ns > 0 ? limits->time_ns : DEFAULT_SHRINK_NS;
    int64_t deadline = pl__cli_now_ms() + budget / PL_MS + 60 * 1000;
    int rc = pl__cli_run_in_child(shrink_child, &sj, m, sizeof *m, deadline, OUT_DISCARD, &end);
    if (rc != 0) {
        snprintf(m->err, sizeof m->err, "cannot start the shrinker: %s", strerror(-rc));
        return ST_INTERNAL;
    }
    if (!end.complete) {
        char text[160];
        pl__cli_child_lost(&end, "the shrinker's process", text, sizeof text);
        snprintf(m->err, sizeof m->err, "%s (a candidate schedule crashed or hung)", text);
        return ST_INTERNAL;
    }
    if (m->rc != 0 && m->err[0] == '\0') {
        snprintf(m->err, sizeof m->err, "%s", pl__cli_error_text(m->rc));
    }
    return m->rc != 0 ? ST_INTERNAL : 0;
}

/* The first finding of `run`, shrunk to the few decisions that matter.
 * Watchdog hangs and crashes that were not rerun (not positioned: no
 * decisions) and nondeterminism are not shrunk: their candidate runs
 * would not fail the same way, or not at all. A poll the budget stopped
 * is (livelock candidates run in children under the same budget), and so
 * is a crash (each candidate in a child, which may die). The report then
 * describes the shrunk run, with one line for the original. */
/* The header then describes the shrunk run, as its explanation does;
 * one line keeps the original's seed, step, time and decisions. */
static void adopt_shrunk_head(report *rp, const shrink_msg *m)
{
    if (m->finding.kind != rp->f.kind) {
        return; /* the shrinker verified the kind: not reached */
    }
    pl__cli_original_line(rp->original, sizeof rp->original, rp, &rp->f, m->decisions_before);
    rp->has_original = true;
    rp->original_step = rp->f.step;
    rp->original_time_ns = rp->f.time_ns;
    rp->original_decisions = m->decisions_before;
    rp->f = m->finding;
    if (m->timeline[0] != '\0' || rp->timeline[0] != '\0') {
        snprintf(rp->timeline, sizeof rp->timeline, "%s", m->timeline);
        snprintf(rp->timeline_json, sizeof rp->timeline_json, "%s", m->timeline_json);
    }
}

void pl__cli_shrink_report(const cli *c, const run_opts *o, report *rp)
{
    int64_t left_ms = o->deadline_ms - pl__cli_now_ms();
    if (o->no_shrink || !rp->positioned || rp->replay[0] == '\0' || left_ms <= 0 ||
        rp->f.kind == PL_FINDING_NONDETERMINISM) {
        return;
    }
    pl_sim_shrink_limits limits = {o->shrink_ns, 0};
    if (left_ms < o->shrink_ns / PL_MS) {
        limits.time_ns = left_ms * PL_MS;
    }
    shrink_msg *m = malloc(sizeof *m);
    if (m == NULL) {
        return;
    }
    pl__cpu_budget_set_watchdog(o->watchdog_ns);
    if (shrink_isolated(rp->replay, NULL, &limits, "  ", PL__ROTATION_FILE, m) == 0) {
        char prog[PATH_MAX], arg[PATH_MAX + 8];
        pl__cli_shell_quote(c->argv0, prog, sizeof prog);
        pl__cli_shell_quote(m->out, arg, sizeof arg);
        snprintf(rp->shrunk, sizeof rp->shrunk, "%s", m->out);
        pl__cli_textf(rp->shrunk_reproduce, sizeof rp->shrunk_reproduce, "%s replay %s", prog, arg);
        snprintf(rp->shrink_text, sizeof rp->shrink_text, "%s", m->text);
        adopt_shrunk_head(rp, m);
    } else {
        pl__cli_textf(rp->shrink_text, sizeof rp->shrink_text, "  not shrunk: %s\n", m->err);
    }
    free(m);
}

/* ======================================================================
 * `shrink`, dispatch
 * ==================================================================== */

enum shrink_opt { S_OUTPUT, S_TIME, S_RUNS, S_HELP, S_POLL_BUDGET, S_WATCHDOG, S_ROTATION };

static const opt_spec shrink_specs[] = {
    [S_OUTPUT] = {"output", 'o', "OUT"},
    [S_TIME] = {"time", 0, "DURATION"},
    [S_RUNS] = {"runs", 0, "N"},
    [S_HELP] = {"help", 'h', NULL},
    [S_POLL_BUDGET] = {"poll-budget", 0, "DURATION"},
    [S_WATCHDOG] = {"watchdog", 0, "DURATION"},
    [S_ROTATION] = {"waker-rotation", 0, "on|off"},
    {NULL, 0, NULL},
};

typedef struct shrink_args {
    const char *in;
    const char *out; /* NULL: the shrinker's default */
    pl_sim_shrink_limits limits;
    pl__rotation rotation;
} shrink_args;

static int shrink_opts_parse(const cli *c, int argc, char **argv, shrink_args *sa)
{
    opts_iter it = {c, "shrink", shrink_specs, argc, argv, 0, false, {NULL}};
    memset(sa, 0, sizeof *sa);
    const char *v;
    uint64_t n;
    bool off;
    for (int id; (id = pl__cli_opts_next(&it, &v)) != OPT_END;) {
        if (id == OPT_ERROR) {
            return ST_USAGE;
        } else if (id == S_HELP) {
            pl__cli_show_help(c, "shrink");
            return -1;
        } else if (id == S_OUTPUT) {
            sa->out = v;
        } else if (id == S_TIME && pl__cli_opt_duration(&it, id, v, &sa->limits.time_ns) != 0) {
            return ST_USAGE;
        } else if (id == S_POLL_BUDGET && pl__cli_opt_poll_budget(&it, id, v) != 0) {
            return ST_USAGE;
        } else if (id == S_WATCHDOG && pl__cli_opt_candidate_watchdog(&it, id, v) != 0) {
            return ST_USAGE;
        } else if (id == S_ROTATION) {
            if (pl__cli_opt_rotation(&it, id, v, &off) != 0) {
                return ST_USAGE;
            }
            sa->rotation = off ? PL__ROTATION_OFF : PL__ROTATION_ON;
        } else if (id == S_RUNS) {
            if (pl__cli_opt_number(&it, id, v, 1, UINT64_MAX, &n) != 0) {
                return ST_USAGE;
            }
            sa->limits.runs_max = n;
        } else if (id == OPT_POSITIONAL && sa->in != NULL) {
            return usage_error(c, "shrink", "one FILE at a time (got '%s' and '%s')", sa->in, v);
        } else if (id == OPT_POSITIONAL) {
            sa->in = v;
        }
    }
    if (sa->in == NULL) {
        return usage_error(c, "shrink", "which file? give a replay file to shrink");
    }
    return 0;
}

int pl__cli_cmd_shrink(cli *c, int argc, char **argv)
{
    shrink_args sa;
    int rc = shrink_opts_parse(c, argc, argv, &sa);
    if (rc != 0) {
        return rc < 0 ? ST_CLEAN : rc;
    }
    if (sa.limits.time_ns == 0) {
        sa.limits.time_ns = DEFAULT_SHRINK_NS;
    }
    shrink_msg m;
    if (shrink_isolated(sa.in, sa.out, &sa.limits, "", sa.rotation, &m) != 0) {
        return pl__cli_internal_error(c, "shrink", "%s", m.err);
    }
    char prog[PATH_MAX], arg[PATH_MAX + 8];
    pl__cli_shell_quote(c->argv0, prog, sizeof prog);
    pl__cli_shell_quote(m.out, arg, sizeof arg);
    printf("%sshrunk replay: %s\n  reproduce: %s replay %s\n", m.text, pl__cli_safe_text(m.out).s,
           pl__cli_safe_text(prog).s, pl__cli_safe_text(arg).s);
    return fflush(stdout) == 0 ? ST_CLEAN : ST_INTERNAL;
}
