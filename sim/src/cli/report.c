/* sim/src/cli/report.c: findings as the parent prints them (text, and
 * JSON lines under --json), their reproduce commands, the replay file of
 * a run that never finished, and the output helpers the other files
 * share (escaped text, JSON strings, wait statuses, mkdir -p). */
#include "cli_internal.h"

/* OUT/<scenario>-seed<seed>.replay. Returns 0 or -ENAMETOOLONG. */
int pl__cli_replay_path(const run_opts *o, const pl_scenario *sc, uint64_t seed, char *buf,
                        size_t len)
{
    int n = snprintf(buf, len, "%s/%s-seed%" PRIu64 ".replay", o->out_dir, sc->name, seed);
    return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

void pl__cli_textf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

safe_buf pl__cli_safe_text(const char *text)
{
    safe_buf b;
    pl__cli_escape(text, false, b.s, sizeof b.s);
    return b;
}

/* A JSON string. Bytes that are not UTF-8 (user output, names from
 * files) become U+FFFD: JSON text must be valid UTF-8. */
void pl__cli_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        size_t seq = pl__cli_utf8_len(p);
        if (seq == 0) {
            fputs("\\ufffd", f);
        } else if (seq > 1) {
            fwrite(p, 1, seq, f);
            p += seq - 1;
        } else if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
        } else if (*p == '\n') {
            fputs("\\n", f);
        } else if (*p == '\t') {
            fputs("\\t", f);
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(f, "\\u%04x", *p);
        } else {
            fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* Describes a wait status: "was killed by SIGSEGV (Segmentation fault)". */
void pl__cli_describe_status(int status, char *buf, size_t len)
{
    pl__wait_status_text(status, buf, len);
}

/* mkdir -p: creates dir and its parents. Returns 0 or a negative errno. */
int pl__cli_make_dirs(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        return -ENAMETOOLONG;
    }
    for (char *p = path + 1; ; p++) {
        bool end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            struct stat st;
            if (mkdir(path, 0777) != 0 && (errno != EEXIST || stat(path, &st) != 0 ||
                                           !S_ISDIR(st.st_mode))) {
                return errno == EEXIST ? -ENOTDIR : -errno;
            }
            if (end) {
                return 0;
            }
            *p = '/';
        }
    }
}

/* Writes all of buf to fd, retrying short writes and EINTR. */
int pl__cli_write_all(int fd, const void *buf, size_t len)
{
    PL__CLI_ASSERT(buf != NULL || len == 0);
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -errno;
        }
        PL__CLI_ASSERT((size_t)n <= len); /* write(2) writes at most len */
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* "--strategy S --knobs K --poll-cost Nns --waker-rotation off" when they
 * differ from the defaults. */
static void schedule_args(const run_opts *o, char *buf, size_t len)
{
    char knobs[PL_SIM_KNOBS_TEXT_MAX + 64] = "";
    char cost[80] = "";
    buf[0] = '\0';
    if (o->knobs != NULL) {
        pl__cli_shell_quote(o->knobs, knobs, sizeof knobs);
    }
    if (o->poll_cost_ns > 0) {
        snprintf(cost, sizeof cost, " --poll-cost %lldns", (long long)o->poll_cost_ns);
    }
    if (o->rotation_off) {
        size_t used = strlen(cost);
        snprintf(cost + used, sizeof cost - used, " --waker-rotation off");
    }
    snprintf(buf, len, "%s%s%s%s%s", strcmp(o->strategy, "random") != 0 ? " --strategy " : "",
             strcmp(o->strategy, "random") != 0 ? o->strategy : "",
             o->knobs != NULL ? " --knobs " : "", knobs, cost);
}

void pl__cli_make_reproduce(const cli *c, const run_opts *o, report *rp)
{
    char prog[PATH_MAX], arg[PATH_MAX + 8], sched[PL_SIM_KNOBS_TEXT_MAX + 192];
    pl__cli_shell_quote(c->argv0, prog, sizeof prog);
    schedule_args(o, sched, sizeof sched);
    if (rp->replay[0] != '\0') {
        pl__cli_shell_quote(rp->replay, arg, sizeof arg);
        pl__cli_textf(rp->reproduce, sizeof rp->reproduce, "%s replay %s", prog, arg);
    } else if (rp->real) {
        pl__cli_textf(rp->reproduce, sizeof rp->reproduce, "%s run %s --real", prog, rp->sc->name);
    } else if (o->bounded) {
        pl__cli_textf(rp->reproduce, sizeof rp->reproduce, "%s run %s%s", prog, rp->sc->name,
                      sched);
    } else if (rp->has_seed) {
        pl__cli_textf(rp->reproduce, sizeof rp->reproduce, "%s run %s --seed %" PRIu64 "%s", prog,
                      rp->sc->name, rp->seed, sched);
    } else {
        pl__cli_textf(rp->reproduce, sizeof rp->reproduce,
                      "%s run %s --seeds %" PRIu64 "..%" PRIu64 "%s", prog, rp->sc->name,
                      o->seed_lo, o->seed_hi, sched);
    }
}

/* Who raised a finding that names no task, in words. */
static const char *raised_by(pl_finding_kind kind)
{
    switch (kind) {
    case PL_FINDING_ASSERTION:
        return "the finding was raised by the run's end checks (the scenario's check, "
               "pl_eventually) or outside any poll";
    case PL_FINDING_WAKER_LEAK:
    case PL_FINDING_TASK_LEAK:
        return "the finding was raised by the leak check after the run's teardown";
    case PL_FINDING_NONDETERMINISM:
        return "the finding compares two runs of the same seed";
    case PL_FINDING_DEADLOCK:
        return "the finding was raised at quiescence, between polls";
    default:
        return "the finding was raised between polls";
    }
}

static void print_task_line(FILE *f, const report *rp)
{
    const pl_finding *fd = &rp->f;
    pl_time t = fd->time_ns < 0 ? 0 : fd->time_ns;
    char when[96];
    snprintf(when, sizeof when, "virtual time %" PRId64 ".%03" PRId64 " ms, step %" PRIu64,
             t / PL_MS, t % PL_MS / PL_US, fd->step);
    if (fd->task_id != 0) {
        fprintf(f, "  task: %s (#%" PRIu32 "), poll %" PRIu32 ", %s\n",
                fd->task_name[0] != '\0' ? fd->task_name : "unnamed", fd->task_id,
                fd->task_polls, when);
    } else if (fd->thread_id != 0) {
        fprintf(f, "  thread: '%s' (#%" PRIu32 "), a simulated thread (it runs plain C, no task), "
                   "at %s\n",
                fd->thread_name, fd->thread_id, when);
    } else {
        fprintf(f, "  task: no task was running: %s, at %s\n", raised_by(fd->kind), when);
    }
}

/* Prints text indented by two spaces, line by line, control bytes
 * other than newlines and tabs escaped. */
static void print_indented(FILE *f, const char *text)
{
    char *safe = malloc(4 * strlen(text) + 1);
    if (safe != NULL) {
        pl__cli_escape(text, true, safe, 4 * strlen(text) + 1);
        text = safe;
    }
    while (*text != '\0') {
        size_t n = strcspn(text, "\n");
        fprintf(f, "  %.*s\n", (int)n, text);
        text += n + (text[n] == '\n');
    }
    free(safe);
}

/* The finding itself: headline, position, message, expectation. */
void pl__cli_print_finding_head(FILE *f, const run_opts *o, const report *rp)
{
    const char *kind = pl_finding_name(rp->f.kind);
    bool setup = pl_finding_is_setup_error(&rp->f);
    if (setup && rp->has_seed) {
        fprintf(f, "SETUP ERROR in %s (seed %" PRIu64 "): not a finding, the scenario never ran\n",
                rp->sc->name, rp->seed);
    } else if (rp->has_seed) {
        fprintf(f, "FINDING %s in %s (seed %" PRIu64 ")\n", kind, rp->sc->name, rp->seed);
    } else if (rp->origin[0] != '\0') {
        fprintf(f, "FINDING %s in %s (%s)\n", kind, rp->sc->name, rp->origin);
    } else {
        fprintf(f, "FINDING %s in %s (seeds %" PRIu64 "..%" PRIu64 ")\n", kind, rp->sc->name,
                o->seed_lo, o->seed_hi);
    }
    fputs(rp->original, f); /* a shrunk finding: what the original run was */
    if (setup) {
        /* The scenario never ran: no task, time or step to tell. */
    } else if (rp->positioned) {
        print_task_line(f, rp);
    } else if (rp->has_seed && rp->unknown[0] != '\0') {
        /* The reproduce command, with --trace: a replay, or the seed's run. */
        fprintf(f, "  task: not known: %s; to find it: %s --trace\n", rp->unknown,
                pl__cli_safe_text(rp->reproduce).s);
    } else if (rp->has_seed) {
        fprintf(f, "  task: not known: the run's process died before it could report which "
                   "task it was polling (a crash, or a hang stopped by the watchdog)\n");
    }
    print_indented(f, rp->f.message);
    if (rp->sc->expect != NULL && !setup) {
        bool same = strcmp(rp->sc->expect, kind) == 0;
        fprintf(f, "  expected: %s, this known-bug scenario must produce %s\n", same ? "yes" : "no",
                rp->sc->expect);
    }
}

/* Swarm draws its knobs per seed: show the ones this finding ran with. */
static void print_swarm_knobs(FILE *f, const run_opts *o, const report *rp)
{
    pl_sim_options so;
    char knobs[PL_SIM_KNOBS_TEXT_MAX];
    if (strcmp(o->strategy, "swarm") != 0 || !rp->has_seed) {
        return;
    }
    pl__cli_sim_options(o, rp->seed, &so);
    if (pl_sim_knobs_text(&so, knobs, sizeof knobs) == 0) {
        fprintf(f, "  swarm knobs: %s\n", knobs);
    }
}

void pl__cli_print_output(FILE *f, const output_tail *t)
{
    size_t shown = strlen(t->text);
    if (t->bytes == 0) {
        return;
    }
    bool cut = t->bytes > shown;
    if (cut) {
        fprintf(f, "  stdout of the run (%" PRIu64 " bytes), the last %zu:\n", t->bytes, shown);
    } else {
        fprintf(f, "  stdout of the run (%" PRIu64 " bytes):\n", t->bytes);
    }
    char *safe = malloc(4 * shown + 1);
    if (safe == NULL) {
        return;
    }
    pl__cli_escape(t->text, true, safe, 4 * shown + 1);
    for (const char *p = safe; *p != '\0'; cut = false) {
        size_t n = strcspn(p, "\n");
        fprintf(f, "    | %s%.*s\n", cut ? "..." : "", (int)n, p);
        p += n + (p[n] == '\n');
    }
    free(safe);
}

static void print_report_text(FILE *f, const run_opts *o, const report *rp)
{
    pl__cli_print_finding_head(f, o, rp);
    print_swarm_knobs(f, o, rp);
    pl__cli_print_output(f, &rp->output);
    fputs(rp->timeline, f); /* a crashed run's last events */
    fputs(rp->native, f);   /* and its native stack */
    /* Paths and commands hold the --out directory and argv[0]. */
    if (rp->replay[0] != '\0') {
        fprintf(f, "  replay: %s%s%s%s\n", pl__cli_safe_text(rp->replay).s,
                rp->note[0] != '\0' ? " (" : "", pl__cli_safe_text(rp->note).s,
                rp->note[0] != '\0' ? ")" : "");
    } else if (!rp->real && rp->has_seed) {
        fprintf(f, "  replay: none (%s)\n",
                rp->note[0] != '\0' ? pl__cli_safe_text(rp->note).s : "not written");
    }
    fprintf(f, "  reproduce: %s\n", pl__cli_safe_text(rp->reproduce).s);
    if (rp->shrunk[0] != '\0') {
        fputs(rp->shrink_text, f);
        fprintf(f, "  shrunk replay: %s\n  reproduce shrunk: %s\n", pl__cli_safe_text(rp->shrunk).s,
                pl__cli_safe_text(rp->shrunk_reproduce).s);
    } else if (rp->shrink_text[0] != '\0') {
        fputs(rp->shrink_text, f);
    }
    pl__cli_flush_out(f);
}

/* A JSON string, or null for NULL. */
static void json_string_or_null(FILE *f, const char *s)
{
    if (s == NULL) {
        fputs("null", f);
    } else {
        pl__cli_json_string(f, s);
    }
}

/* {"file":...,"line":...,"function":...} of a "file.c:120" site, null when unknown. */
static void print_site_json(FILE *f, const char *site, const char *function)
{
    const char *colon = site != NULL ? strrchr(site, ':') : NULL;
    if (colon == NULL) {
        fputs("null", f);
        return;
    }
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%.*s", (int)(colon - site), site);
    fputs("{\"file\":", f);
    pl__cli_json_string(f, file);
    fprintf(f, ",\"line\":%d,\"function\":", atoi(colon + 1));
    json_string_or_null(f, function);
    fputc('}', f);
}

/* A frame's fields, without the braces: "function" is its await's
 * function, or the future's name where it has none. */
static void print_frame_fields(FILE *f, const pl_finding_frame *fr)
{
    fputs("\"function\":", f);
    json_string_or_null(f, fr->file != NULL ? fr->function : fr->future);
    fputs(",\"future\":", f);
    json_string_or_null(f, fr->future);
    fputs(",\"file\":", f);
    json_string_or_null(f, fr->file);
    if (fr->file != NULL) {
        fprintf(f, ",\"line\":%d", fr->line);
    } else {
        fputs(",\"line\":null", f);
    }
}

/* Tree node i and its subtree, nested; returns the index past it. */
static uint32_t print_tree_json(FILE *f, const pl_finding_task *t, uint32_t i)
{
    const pl_finding_node *n = &t->tree[i];
    fputc('{', f);
    print_frame_fields(f, &n->frame);
    fputs(",\"children\":[", f);
    uint32_t j = i + 1;
    uint32_t len = t->tree_len < PL_FINDING_TREE_MAX ? t->tree_len : PL_FINDING_TREE_MAX;
    while (j < len && t->tree[j].depth > n->depth) {
        fputs(j != i + 1 ? "," : "", f);
        j = print_tree_json(f, t, j);
    }
    fputs("]}", f);
    return j;
}

void pl__cli_task_json(FILE *f, const pl_finding_task *t)
{
    fprintf(f, "{\"task_id\":%" PRIu32 ",\"task\":", t->id);
    json_string_or_null(f, t->name);
    fputs(",\"spawned_at\":", f);
    print_site_json(f, t->spawn_site, t->spawn_function);
    fputs(",\"frames\":[", f);
    for (uint32_t j = 0; j < t->frames_len && j < PL_FINDING_FRAMES_MAX; j++) {
        fputs(j > 0 ? ",{" : "{", f);
        print_frame_fields(f, &t->frames[j]);
        fputc('}', f);
    }
    fprintf(f, "],\"frames_cut\":%s,\"tree\":", t->frames_cut ? "true" : "false");
    if (t->tree_len > 0) {
        (void)print_tree_json(f, t, 0);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"tree_cut\":%s}", t->tree_cut ? "true" : "false");
}

/* "parked": each parked task the finding names, with its spawn site and
 * its async backtrace (frames outermost first). A frame's "function" is
 * the C function of its await, or the future's name where it has none. */
static void print_parked_json(FILE *f, const pl_finding *fd)
{
    fputs(",\"parked\":[", f);
    for (uint32_t i = 0; i < fd->tasks_len && i < PL_FINDING_TASKS_MAX; i++) {
        fputs(i > 0 ? "," : "", f);
        pl__cli_task_json(f, &fd->tasks[i]);
    }
    fputc(']', f);
}

static void print_report_json(const report *rp)
{
    FILE *f = stdout;
    fputs("{\"kind\":", f);
    pl__cli_json_string(f, pl_finding_name(rp->f.kind));
    fputs(",\"scenario\":", f);
    pl__cli_json_string(f, rp->sc->name);
    if (rp->has_seed) {
        fprintf(f, ",\"seed\":%" PRIu64, rp->seed);
    } else {
        fputs(",\"seed\":null", f);
    }
    fputs(",\"task\":", f);
    if (rp->positioned && rp->f.task_id != 0) {
        pl__cli_json_string(f, rp->f.task_name);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"task_id\":%" PRIu32 ",\"poll\":%" PRIu32 ",\"time_ns\":%" PRId64
               ",\"step\":%" PRIu64 ",\"message\":",
            rp->f.task_id, rp->f.task_polls, rp->f.time_ns, rp->f.step);
    pl__cli_json_string(f, rp->f.message);
    print_parked_json(f, &rp->f);
    if (rp->f.kind == PL_FINDING_CRASH) {
        /* The events the text finding shows; null when no run kept them. */
        fprintf(f, ",\"timeline\":%s", rp->timeline_json[0] != '\0' ? rp->timeline_json : "null");
        fprintf(f, ",\"native_stack\":%s", rp->native_json[0] != '\0' ? rp->native_json : "null");
    }
    fputs(",\"replay\":", f);
    if (rp->replay[0] != '\0') {
        pl__cli_json_string(f, rp->replay);
    } else {
        fputs("null", f);
    }
    fputs(",\"reproduce\":", f);
    pl__cli_json_string(f, rp->reproduce);
    fputs(",\"shrunk\":", f);
    if (rp->shrunk[0] != '\0') {
        pl__cli_json_string(f, rp->shrunk);
    } else {
        fputs("null", f);
    }
    fputs(",\"output\":", f);
    if (rp->output.bytes > 0) {
        pl__cli_json_string(f, rp->output.text);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"output_bytes\":%" PRIu64, rp->output.bytes);
    if (rp->has_original) {
        fprintf(f, ",\"original\":{\"step\":%" PRIu64 ",\"time_ns\":%" PRId64
                   ",\"decisions\":%zu}",
                rp->original_step, rp->original_time_ns, rp->original_decisions);
    }
    fprintf(f, ",\"setup_error\":%s", pl_finding_is_setup_error(&rp->f) ? "true" : "false");
    fputs(",\"thread\":", f);
    if (rp->f.thread_id != 0) {
        pl__cli_json_string(f, rp->f.thread_name);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"thread_id\":%" PRIu32, rp->f.thread_id);
    fprintf(f, ",\"expected\":%s,\"real\":%s}\n",
            rp->sc->expect != NULL && strcmp(rp->sc->expect, pl_finding_name(rp->f.kind)) == 0
                ? "true"
                : "false",
            rp->real ? "true" : "false");
    pl__cli_flush_out(f);
}

void pl__cli_print_report(const run_opts *o, const report *rp)
{
    print_report_text(o->text, o, rp);
    if (o->json) {
        print_report_json(rp);
    }
}

/* Knobs a run with these options used, for replay files written here
 * (the library's options -> knobs function, as pl_sim_run itself). */
void pl__cli_knobs_for(const run_opts *o, uint64_t seed, pl__dec_knobs *k)
{
    pl_sim_options so;
    pl__cli_sim_options(o, seed, &so);
    if (pl__sim_knobs_of(&so, k, NULL, 0) != 0) {
        pl__dec_knobs_default(k); /* `run` checked strategy and knobs already */
    }
}

/* Writes the replay file of a run that never finished (crash, hang):
 * the decisions a rerun recorded in shared memory, or, without them, the
 * seed only, marked by an empty list flagged truncated. */
int pl__cli_write_lost_replay(const run_opts *o, report *rp, const shared_rec *rec,
                              const char *seed_only_note)
{
    pl__replay r;
    pl__replay_init(&r);
    /* Borrowed pointers: r is never passed to pl__replay_free. */
    r.pollen_version = (char *)PL_VERSION_STRING;
    r.build = (char *)pl__run_build_id();
    r.scenario = (char *)rp->sc->name;
    r.seed = rp->seed;
    r.strategy = (char *)o->strategy;
    r.has_knobs = true;
    pl__cli_knobs_for(o, rp->seed, &r.knobs);
    r.poll_cost_ns = o->poll_cost_ns;
    r.rotation_off = o->rotation_off;
    r.finding = (char *)pl_finding_name(rp->f.kind);
    r.message = rp->f.message;
    bool have = rec != NULL;
    uint64_t n = have ? rec->len : 0;
    r.decisions = have ? (pl__dec_record *)rec->recs : NULL;
    r.decisions_len = (size_t)(n < (have ? rec->cap : 0) ? n : (have ? rec->cap : 0));
    r.truncated = !have || n > rec->cap;
    int rc = pl__cli_replay_path(o, rp->sc, rp->seed, rp->replay, sizeof rp->replay);
    rc = rc == 0 ? pl__cli_make_dirs(o->out_dir) : rc;
    if (rc == 0) {
        rc = pl__replay_write_path(rp->replay, &r);
    }
    if (rc != 0) {
        pl__cli_textf(rp->note, sizeof rp->note, "cannot write %s: %s", rp->replay,
                      pl__cli_error_text(rc));
        rp->replay[0] = '\0';
    } else if (!have) {
        snprintf(rp->note, sizeof rp->note, "seed only: %s", seed_only_note);
    }
    return rc;
}
