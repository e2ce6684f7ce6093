/* sim/src/cli/cmd_why.c: the `why` command: the point of no return of a
 * replay's finding and the passing twin of each departure (why.h), in a
 * child process (the runs execute user code), as text or JSON. */
#include "../backtrace.h"
#include "../why.h"
#include "cli_internal.h"

typedef struct why_args {
    const char *in;
    uint32_t runs; /* continuations per prefix; 0: the default */
    pl_time time_ns; /* --time: the analysis stops with what it has after it */
    bool json;
    bool quiet; /* no progress lines */
} why_args;

typedef struct why_msg {
    int rc;
    char err[512];
    pl__why_result res;
} why_msg;

typedef struct why_progress {
    int64_t start_ms;
    int64_t stop_ms; /* --time runs out */
    bool quiet;
} why_progress;

/* A progress line per probed prefix once the analysis has taken a
 * second (on stderr: stdout stays the answer for a given file and
 * --time that is not reached). Stops the analysis when --time is up. */
static bool on_probe(void *ud, const pl__why_probe *p, uint64_t lo, uint64_t hi)
{
    const why_progress *wp = ud;
    int64_t now = pl__cli_now_ms();
    if (p != NULL && !wp->quiet && now - wp->start_ms >= 1000) {
        fprintf(stderr,
                "why: prefix of %llu decisions: %u of %u continuations fail (bisecting "
                "%llu..%llu)\n",
                (unsigned long long)p->k, p->failed, p->runs, (unsigned long long)lo,
                (unsigned long long)hi);
    }
    return now < wp->stop_ms;
}

static void why_child(const void *ctx, void *result)
{
    const why_args *wa = ctx;
    why_msg *m = result;
    int64_t start = pl__cli_now_ms();
    why_progress wp = {start, start + wa->time_ns / PL_MS, wa->quiet};
    m->rc = pl__why_file(wa->in, wa->runs, pl__cpu_budget_run_candidate, on_probe, &wp, &m->res,
                         m->err, sizeof m->err);
}

/* ---- Text ------------------------------------------------------------- */

/* A task parked in several branches: its tree, as findings draw it. */
static void print_tree(const pl_finding_task *t)
{
    char buf[4096];
    size_t used = 0;
    buf[0] = '\0';
    pl__bt_tree_text(t->tree, t->tree_len < PL_FINDING_TREE_MAX ? t->tree_len : PL_FINDING_TREE_MAX,
                     t->tree_cut, "        ", buf, sizeof buf, &used);
    for (char *line = buf + 1; used > 0;) { /* escaped a line at a time */
        char *end = strchr(line, '\n');
        if (end != NULL) {
            *end = '\0';
        }
        printf("%s\n", pl__cli_safe_text(line).s);
        if (end == NULL) {
            break;
        }
        line = end + 1;
    }
}

static void print_frames(const pl_finding_task *t)
{
    if (t->tree_branches > 1) {
        print_tree(t);
        return;
    }
    for (uint32_t j = 0; j < t->frames_len && j < PL_FINDING_FRAMES_MAX; j++) {
        const pl_finding_frame *fr = &t->frames[j];
        if (fr->file != NULL) {
            printf("        %s at %s:%d (%s)\n", pl__cli_safe_text(fr->future).s,
                   pl__cli_safe_text(fr->file).s, fr->line,
                   pl__cli_safe_text(fr->function != NULL ? fr->function : "?").s);
        } else {
            printf("        %s\n", pl__cli_safe_text(fr->future != NULL ? fr->future : "?").s);
        }
    }
    if (t->frames_cut) {
        printf("        ...\n");
    }
}

static void print_tasks_text(const pl__why_result *r)
{
    if (r->tasks_len == 0) {
        return;
    }
    printf("  tasks involved:\n");
    for (size_t i = 0; i < r->tasks_len; i++) {
        const pl__why_task *t = &r->tasks[i];
        printf("    '%s' (#%u), %s", pl__cli_safe_text(t->name).s, t->id, t->role);
        if (!t->parked) {
            printf(": not among the finding's parked tasks\n");
            continue;
        }
        if (t->parked_as.spawn_site != NULL) {
            printf(", spawned at %s (%s)", pl__cli_safe_text(t->parked_as.spawn_site).s,
                   pl__cli_safe_text(
                       t->parked_as.spawn_function != NULL ? t->parked_as.spawn_function : "?")
                       .s);
        }
        printf("; parked when the failure surfaced, in:\n");
        print_frames(&t->parked_as);
    }
}

static void print_point_text(const pl__why_result *r, const char *name)
{
    if (r->stopped && r->bracketed && !r->found) {
        printf("  point of no return: not narrowed down (--time ran out): after decision "
               "%llu (with the first %llu, %u of %u continuations fail), by decision %llu "
               "(with the first %llu, %u of %u)\n",
               (unsigned long long)r->before.k, (unsigned long long)r->before.k,
               r->before.failed, r->before.runs, (unsigned long long)(r->after.k - 1),
               (unsigned long long)r->after.k, r->after.failed, r->after.runs);
        return;
    }
    if (r->stopped && !r->found) {
        printf("  point of no return: not measured (--time ran out)\n");
        return;
    }
    if (r->inevitable_at_start) {
        printf("  point of no return: before the first decision (%u of %u random runs fail "
               "with %s)\n",
               r->after.failed, r->after.runs, name);
    } else if (!r->found) {
        printf("  no point of no return: the whole list's continuations fail less often than "
               "%u%% (the run is not deterministic)\n",
               PL__WHY_INEVITABLE);
    } else {
        printf("  point of no return: decision %llu (with it %u of %u continuations fail, "
               "without it %u of %u)\n",
               (unsigned long long)r->decisive.index, r->after.failed, r->after.runs,
               r->before.failed, r->before.runs);
        printf("    %s\n", pl__cli_safe_text(r->decisive.text).s);
        print_tasks_text(r);
    }
}

static void print_twins_text(const pl__why_result *r)
{
    if (r->departures == 0) {
        printf("  passing twins: none (no decision leaves production's order: the "
               "production schedule itself fails)\n");
        return;
    }
    printf("  passing twins (each departure set back to production's choice, the rest "
           "kept):\n");
    size_t passing = 0;
    for (size_t i = 0; i < r->twins_len; i++) {
        const pl__why_twin *t = &r->twins[i];
        bool passes = t->outcome == PL_FINDING_NONE;
        passing += passes;
        printf("    decision %llu: %s\n      -> %s%s\n", (unsigned long long)t->d.index,
               pl__cli_safe_text(t->d.text).s,
               passes ? "passes" : "still fails: ", passes ? "" : pl_finding_name(t->outcome));
    }
    if (r->twins_len < r->departures) {
        printf("    (the first %zu of %zu departures%s)\n", r->twins_len, r->departures,
               r->stopped ? ": --time ran out" : "");
    }
    if (r->twins_len == 0) {
        return;
    }
    printf("  %zu of %zu twins pass%s\n", passing, r->twins_len,
           passing == r->twins_len && r->twins_len == r->departures
               ? ": every departure is needed for the failure"
               : "");
}

static void print_text(const why_args *wa, const pl__why_result *r)
{
    const char *name = pl_finding_name(r->finding.kind);
    printf("why %s: %s, %llu decisions, %u continuations per prefix (seeded from seed %llu)\n",
           pl__cli_safe_text(wa->in).s, name, (unsigned long long)r->decisions, r->runs,
           (unsigned long long)r->seed);
    printf("  share of continuations that fail with %s, by prefix length k:\n", name);
    for (size_t i = 0; i < r->probes_len; i++) {
        const pl__why_probe *p = &r->probes[i];
        printf("    k=%-8llu %3u of %u\n", (unsigned long long)p->k, p->failed, p->runs);
    }
    print_point_text(r, name);
    print_twins_text(r);
    printf("  (%llu runs)\n", (unsigned long long)r->runs_total);
}

/* ---- JSON ------------------------------------------------------------- */

static void print_decision_json(const pl__why_decision *d)
{
    printf("{\"index\":%llu,\"kind\":", (unsigned long long)d->index);
    pl__cli_json_string(stdout, pl__dec_kind_name(d->kind));
    printf(",\"value\":%u,\"n\":%u", d->value, d->n);
    if (d->has_step) {
        printf(",\"step\":%llu,\"time_ns\":%lld", (unsigned long long)d->step,
               (long long)d->time_ns);
    } else {
        printf(",\"step\":null,\"time_ns\":null");
    }
    printf(",\"text\":");
    pl__cli_json_string(stdout, d->text);
    putchar('}');
}

static void print_tasks_json(const pl__why_result *r)
{
    printf(",\"tasks\":[");
    for (size_t i = 0; i < r->tasks_len; i++) {
        const pl__why_task *t = &r->tasks[i];
        printf("%s{\"task_id\":%u,\"task\":", i > 0 ? "," : "", t->id);
        pl__cli_json_string(stdout, t->name);
        printf(",\"role\":");
        pl__cli_json_string(stdout, t->role);
        printf(",\"parked\":");
        if (t->parked) {
            pl__cli_task_json(stdout, &t->parked_as);
        } else {
            printf("null");
        }
        putchar('}');
    }
    putchar(']');
}

static void print_probe_json(const char *key, const pl__why_probe *p)
{
    printf("\"%s\":{\"k\":%llu,\"failed\":%u,\"runs\":%u}", key, (unsigned long long)p->k,
           p->failed, p->runs);
}

static void print_json(const why_args *wa, const pl__why_result *r)
{
    printf("{\"file\":");
    pl__cli_json_string(stdout, wa->in);
    printf(",\"finding\":");
    pl__cli_json_string(stdout, pl_finding_name(r->finding.kind));
    printf(",\"seed\":%llu,\"decisions\":%llu,\"continuations\":%u,\"threshold_percent\":%u,"
           "\"probes\":[",
           (unsigned long long)r->seed, (unsigned long long)r->decisions, r->runs,
           PL__WHY_INEVITABLE);
    for (size_t i = 0; i < r->probes_len; i++) {
        printf("%s{\"k\":%llu,\"failed\":%u,\"runs\":%u}", i > 0 ? "," : "",
               (unsigned long long)r->probes[i].k, r->probes[i].failed, r->probes[i].runs);
    }
    printf("],\"point_of_no_return\":");
    if (!r->found) {
        printf("null");
    } else {
        printf("{\"k\":%llu,\"at_start\":%s,", (unsigned long long)r->point,
               r->inevitable_at_start ? "true" : "false");
        print_probe_json("after", &r->after);
        if (r->point > 0) {
            putchar(',');
            print_probe_json("before", &r->before);
            printf(",\"decision\":");
            print_decision_json(&r->decisive);
        }
        print_tasks_json(r);
        putchar('}');
    }
    printf(",\"stopped\":%s", r->stopped ? "true" : "false");
    if (r->bracketed && !r->found) {
        printf(",\"bracket\":{");
        print_probe_json("before", &r->before);
        putchar(',');
        print_probe_json("after", &r->after);
        putchar('}');
    }
    printf(",\"departures\":%zu,\"last_departure\":", r->departures);
    if (r->has_last_departure) {
        printf("%llu", (unsigned long long)r->last_departure);
    } else {
        printf("null");
    }
    printf(",\"twins\":[");
    for (size_t i = 0; i < r->twins_len; i++) {
        const pl__why_twin *t = &r->twins[i];
        printf("%s{\"decision\":", i > 0 ? "," : "");
        print_decision_json(&t->d);
        printf(",\"passes\":%s,\"finding\":", t->outcome == PL_FINDING_NONE ? "true" : "false");
        if (t->outcome == PL_FINDING_NONE) {
            printf("null}");
        } else {
            pl__cli_json_string(stdout, pl_finding_name(t->outcome));
            putchar('}');
        }
    }
    printf("],\"runs\":%llu}\n", (unsigned long long)r->runs_total);
}

/* ---- Command ---------------------------------------------------------- */

enum why_opt { W_RUNS, W_TIME, W_JSON, W_QUIET, W_HELP, W_POLL_BUDGET, W_WATCHDOG };

static const opt_spec why_specs[] = {
    [W_RUNS] = {"runs", 0, "N"},
    [W_TIME] = {"time", 0, "DURATION"},
    [W_JSON] = {"json", 0, NULL},
    [W_QUIET] = {"quiet", 'q', NULL},
    [W_HELP] = {"help", 'h', NULL},
    [W_POLL_BUDGET] = {"poll-budget", 0, "DURATION"},
    [W_WATCHDOG] = {"watchdog", 0, "DURATION"},
    {NULL, 0, NULL},
};

static int why_opts_parse(const cli *c, int argc, char **argv, why_args *wa)
{
    opts_iter it = {c, "why", why_specs, argc, argv, 0, false, {NULL}};
    memset(wa, 0, sizeof *wa);
    wa->time_ns = DEFAULT_SHRINK_NS;
    const char *v;
    uint64_t n;
    for (int id; (id = pl__cli_opts_next(&it, &v)) != OPT_END;) {
        if (id == OPT_ERROR) {
            return ST_USAGE;
        } else if (id == W_HELP) {
            pl__cli_show_help(c, "why");
            return -1;
        } else if (id == W_JSON) {
            wa->json = true;
        } else if (id == W_QUIET) {
            wa->quiet = true;
        } else if (id == W_POLL_BUDGET && pl__cli_opt_poll_budget(&it, id, v) != 0) {
            return ST_USAGE;
        } else if (id == W_WATCHDOG && pl__cli_opt_candidate_watchdog(&it, id, v) != 0) {
            return ST_USAGE;
        } else if (id == W_TIME && pl__cli_opt_duration(&it, id, v, &wa->time_ns) != 0) {
            return ST_USAGE;
        } else if (id == W_RUNS) {
            if (pl__cli_opt_number(&it, id, v, 1, PL__WHY_RUNS_MAX, &n) != 0) {
                return ST_USAGE;
            }
            wa->runs = (uint32_t)n;
        } else if (id == OPT_POSITIONAL && wa->in != NULL) {
            return usage_error(c, "why", "one FILE at a time (got '%s' and '%s')", wa->in, v);
        } else if (id == OPT_POSITIONAL) {
            wa->in = v;
        }
    }
    if (wa->in == NULL) {
        return usage_error(c, "why", "which file? give a replay file with a finding");
    }
    return 0;
}

int pl__cli_cmd_why(cli *c, int argc, char **argv)
{
    why_args wa;
    int rc = why_opts_parse(c, argc, argv, &wa);
    if (rc != 0) {
        return rc < 0 ? ST_CLEAN : rc;
    }
    why_msg *m = calloc(1, sizeof *m);
    if (m == NULL) {
        return pl__cli_internal_error(c, "why", "out of memory");
    }
    child_end end;
    /* The analysis stops itself at --time; a run that overstays it is
     * bounded by the watchdogs, and past another minute the process is
     * taken as lost. */
    int64_t deadline = pl__cli_now_ms() + wa.time_ns / PL_MS + 60 * 1000;
    rc = pl__cli_run_in_child(why_child, &wa, m, sizeof *m, deadline, OUT_DISCARD, &end);
    char text[160] = "";
    if (rc != 0) {
        snprintf(text, sizeof text, "cannot start the analysis: %s", strerror(-rc));
    } else if (!end.complete) {
        pl__cli_child_lost(&end, "the analysis's process", text, sizeof text);
    }
    if (text[0] != '\0' || m->rc != 0) {
        rc = pl__cli_internal_error(c, "why", "%s", text[0] != '\0' ? text : m->err);
        free(m);
        return rc;
    }
    if (wa.json) {
        print_json(&wa, &m->res);
    } else {
        print_text(&wa, &m->res);
    }
    free(m);
    return fflush(stdout) == 0 ? ST_CLEAN : ST_INTERNAL;
}
