/* sim/src/cli/cmd_replay.c: the `replay` command: replay files and raw
 * fuzzer inputs rerun (in a child unless --no-fork) and compared with
 * what they recorded, timelines and Chrome traces. */
#include "cli_internal.h"
#include "run_record.h"

typedef struct replay_opts {
    char **files;
    size_t nfiles;
    const char *scenario;   /* for raw fuzzer inputs */
    const char *chrome;     /* --chrome-trace OUT.json */
    bool trace, quiet, no_fork;
    pl_time watchdog_ns;
    pl_time poll_cost_ns;   /* --poll-cost, when poll_cost_set */
    bool poll_cost_set;
    bool rotation_off;      /* --waker-rotation, when rotation_set */
    bool rotation_set;
    uint64_t break_at;      /* --break-at STEP; 0: none */
} replay_opts;

enum replay_opt {
    P_SCENARIO, P_TRACE, P_CHROME, P_WATCHDOG, P_NO_FORK, P_QUIET, P_HELP, P_POLL_COST,
    P_POLL_BUDGET, P_BREAK_AT, P_ROTATION
};

static const opt_spec replay_specs[] = {
    [P_SCENARIO] = {"scenario", 0, "NAME"},
    [P_TRACE] = {"trace", 0, NULL},
    [P_CHROME] = {"chrome-trace", 0, "OUT.json"},
    [P_WATCHDOG] = {"watchdog", 0, "DURATION"},
    [P_NO_FORK] = {"no-fork", 0, NULL},
    [P_QUIET] = {"quiet", 'q', NULL},
    [P_HELP] = {"help", 'h', NULL},
    [P_POLL_COST] = {"poll-cost", 0, "DURATION"},
    [P_POLL_BUDGET] = {"poll-budget", 0, "DURATION"},
    [P_BREAK_AT] = {"break-at", 0, "STEP"},
    [P_ROTATION] = {"waker-rotation", 0, "on|off"},
    {NULL, 0, NULL},
};

/* What one file asks for, once read. */
typedef struct replay_input {
    const char *path;
    const pl_scenario *sc;
    bool raw;               /* a libFuzzer input, not a replay file */
    pl__replay file;        /* parsed replay file (owned) */
    uint8_t *bytes;         /* raw input (owned) */
    size_t bytes_len;
} replay_input;

static int replay_opts_parse(const cli *c, int argc, char **argv, replay_opts *ro)
{
    opts_iter it = {c, "replay", replay_specs, argc, argv, 0, false, {NULL}};
    memset(ro, 0, sizeof *ro);
    ro->watchdog_ns = DEFAULT_WATCHDOG_NS;
    ro->files = calloc((size_t)argc + 1, sizeof *ro->files);
    if (ro->files == NULL) {
        return pl__cli_internal_error(c, "replay", "out of memory");
    }
    const char *v;
    for (int id; (id = pl__cli_opts_next(&it, &v)) != OPT_END;) {
        if (id == OPT_ERROR) {
            return ST_USAGE;
        } else if (id == OPT_POSITIONAL) {
            ro->files[ro->nfiles++] = (char *)v;
        } else if (id == P_HELP) {
            pl__cli_show_help(c, "replay");
            return -1;
        } else if (id == P_WATCHDOG && pl__cli_opt_duration(&it, id, v, &ro->watchdog_ns) != 0) {
            return ST_USAGE;
        } else if (id == P_POLL_COST && pl__cli_opt_poll_cost(&it, id, v, &ro->poll_cost_ns) != 0) {
            return ST_USAGE;
        } else if (id == P_POLL_BUDGET && pl__cli_opt_poll_budget(&it, id, v) != 0) {
            return ST_USAGE;
        } else if (id == P_ROTATION && pl__cli_opt_rotation(&it, id, v, &ro->rotation_off) != 0) {
            return ST_USAGE;
        } else if (id == P_BREAK_AT &&
                   pl__cli_opt_number(&it, id, v, 1, UINT64_MAX, &ro->break_at) != 0) {
            return ST_USAGE;
        }
        ro->poll_cost_set = ro->poll_cost_set || id == P_POLL_COST;
        ro->rotation_set = ro->rotation_set || id == P_ROTATION;
        ro->scenario = id == P_SCENARIO ? v : ro->scenario;
        ro->chrome = id == P_CHROME ? v : ro->chrome;
        ro->trace = ro->trace || id == P_TRACE;
        /* The trap must stop the process a debugger runs: this one. */
        ro->no_fork = ro->no_fork || id == P_NO_FORK || id == P_BREAK_AT;
        ro->quiet = ro->quiet || id == P_QUIET;
    }
    if (ro->nfiles == 0) {
        return usage_error(c, "replay", "which file? give one or more replay files");
    }
    if (ro->chrome != NULL && ro->nfiles != 1) {
        return usage_error(c, "replay", "'--chrome-trace' writes one trace: give exactly one FILE");
    }
    if (ro->scenario != NULL && pl__cli_catalogue_find(c, ro->scenario) == NULL) {
        return pl__cli_no_such_scenario(c, "replay", ro->scenario);
    }
    return 0;
}

static bool is_replay_file(const uint8_t *data, size_t len)
{
    static const char magic[] = "pollen-replay";
    return len >= sizeof magic - 1 && memcmp(data, magic, sizeof magic - 1) == 0;
}

/* Reads and classifies a file. Returns 0, ST_USAGE or ST_INTERNAL
 * (unreadable or malformed), with the message printed. */
static int replay_load(const cli *c, const replay_opts *ro, const char *path, replay_input *in)
{
    char err[512];
    memset(in, 0, sizeof *in);
    in->path = path;
    pl__replay_init(&in->file);
    char *bytes = NULL;
    int rc = pl__replay_read_path(path, &bytes, &in->bytes_len, err, sizeof err);
    if (rc < 0) {
        return pl__cli_internal_error(c, "replay", "%s", err);
    }
    in->bytes = (uint8_t *)bytes;
    in->file.poll_cost_ns = ro->poll_cost_ns;
    in->file.rotation_off = ro->rotation_off;
    if (!is_replay_file(in->bytes, in->bytes_len)) {
        in->raw = true;
        if (ro->scenario == NULL) {
            return pl__cli_usage_hint(c, "replay",
                                      "pass --scenario NAME to run it as a raw fuzzer input",
                                      "%s is not a replay file (no 'pollen-replay' header)", path);
        }
        in->sc = pl__cli_catalogue_find(c, ro->scenario);
        return 0;
    }
    rc = pl__replay_parse_buffer((const char *)in->bytes, in->bytes_len, &in->file, err,
                                 sizeof err);
    if (rc < 0) {
        return pl__cli_internal_error(c, "replay", "%s: %s", path, err);
    }
    const char *name = ro->scenario != NULL ? ro->scenario : in->file.scenario;
    in->sc = name != NULL ? pl__cli_catalogue_find(c, name) : NULL;
    if (name == NULL) {
        return pl__cli_internal_error(c, "replay", "%s names no scenario; pass --scenario NAME",
                                      path);
    }
    if (in->sc == NULL) {
        return pl__cli_internal_error(
            c, "replay",
            "%s: scenario '%s' is not linked into this program; run it with "
            "the program that has it ('%s list' shows what this one has)",
            path, name, c->prog);
    }
    in->file.poll_cost_ns = ro->poll_cost_set ? ro->poll_cost_ns : in->file.poll_cost_ns;
    in->file.rotation_off = ro->rotation_set ? ro->rotation_off : in->file.rotation_off;
    return 0;
}

static void replay_input_free(replay_input *in)
{
    pl__replay_free(&in->file);
    free(in->bytes);
}

static bool seed_only(const replay_input *in)
{
    return !in->raw && pl__replay_seed_only(&in->file);
}

/* The options that rerun the input: its bytes, its decision list (which
 * already holds the strategy's choices), or its seed. */
static void replay_sim_options(const replay_input *in, pl_sim_options *so, char *knobs,
                               size_t knobs_len)
{
    if (!in->raw) {
        /* knobs_len PL__DEC_KNOBS_TEXT_MAX: every knobs text fits. */
        pl__replay_options(&in->file, so, knobs, knobs_len);
        return;
    }
    pl_sim_options_default(so);
    so->seed = in->file.seed;
    so->poll_cost_ns = in->file.poll_cost_ns; /* --poll-cost */
    so->rotate_wakers = !in->file.rotation_off; /* --waker-rotation */
    so->source = PL_SIM_SOURCE_BYTES;
    so->bytes = in->bytes;
    so->bytes_len = in->bytes_len;
}

static void print_replay_finding(const replay_input *in, const pl_sim_result *r)
{
    report rp;
    memset(&rp, 0, sizeof rp);
    rp.sc = in->sc;
    rp.has_seed = !in->raw;
    if (in->raw) {
        snprintf(rp.origin, sizeof rp.origin, "fuzzer input");
    }
    rp.seed = in->file.seed;
    rp.positioned = true;
    rp.f = r->finding;
    pl__cli_print_finding_head(stdout, NULL, &rp);
}

/* Compares a run made here with what its file expects. Returns 0 when
 * it matches, 1 (with why in err) when it differs. */
static int compare_run(const replay_input *in, const pl_sim_result *r, char *err, size_t len)
{
    if (!in->raw) {
        return pl__replay_compare(&in->file, r, err, len);
    }
    if (r->finding.kind == PL_FINDING_NONE) {
        snprintf(err, len, "no finding: this input does not reproduce a failure");
        return 1;
    }
    return 0;
}

static void print_verdict(const replay_opts *ro, const replay_input *in, bool same,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void print_verdict(const replay_opts *ro, const replay_input *in, bool same,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s%s%s: ", ro->quiet ? pl__cli_safe_text(in->path).s : "  ", ro->quiet ? ": " : "",
           same ? "reproduced" : "DIFFERS");
    pl__cli_put_message(stdout, fmt, ap);
    putchar('\n');
    va_end(ap);
    fflush(stdout);
}

/* --trace, --chrome-trace: the run's event log (replays keep it), the
 * text timeline on `text` and the Chrome trace in the file `chrome`
 * (either may be off). `what` names the run in an error. `run --seed N
 * --trace` prints its run with this too. Returns ST_CLEAN or ST_INTERNAL
 * (message printed). */
int pl__cli_write_trace(const cli *c, const char *cmd, FILE *text, const char *chrome,
                        bool quiet, const char *what, const pl_sim_result *r)
{
    size_t n = 0;
    const pl__trace_rec *ev = pl__result_events(r, &n);
    const pl__run_record *rec = pl__sim_result_record(r);
    pl__trace_store_namer sn = {pl__result_task_name, (void *)rec, rec != NULL ? rec->texts : NULL,
                                rec != NULL ? rec->texts_len : 0, pl__run_spawn_site};
    pl__trace_namer nm = {pl__trace_store_task, pl__trace_store_text, &sn,
                          pl__trace_store_spawn_site};
    return pl__cli_write_events(c, cmd, text, chrome, quiet, what, ev, n, &nm);
}

static void print_reproduced(const replay_opts *ro, const replay_input *in,
                             const pl_sim_result *r)
{
    const char *what = r->finding.kind != PL_FINDING_NONE ? pl_finding_name(r->finding.kind)
                                                          : "no finding";
    if (in->raw) {
        print_verdict(ro, in, true, "the input produces %s", what);
    } else if (seed_only(in)) {
        print_verdict(ro, in, true, "%s (run from the seed: the file holds no decisions)", what);
    } else {
        print_verdict(ro, in, true, "%s, hash %016" PRIx64 " matches", what, r->hash);
    }
}

static bool expects_nondeterminism(const replay_input *in)
{
    return !in->raw && in->file.finding != NULL &&
           strcmp(in->file.finding, pl_finding_name(PL_FINDING_NONDETERMINISM)) == 0;
}

/* A nondeterminism file cannot match itself: it reproduces when two
 * runs of its decisions disagree with each other or with its hash. */
static int replay_nondeterminism(const cli *c, const replay_opts *ro, const replay_input *in)
{
    pl_sim_options so;
    pl_sim_result a, b;
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    replay_sim_options(in, &so, knobs, sizeof knobs);
    so.break_at_step = ro->break_at;
    int ra = pl_sim_run(in->sc, &so, &a), rb = pl_sim_run(in->sc, &so, &b);
    uint64_t ha = a.hash, hb = b.hash;
    pl_sim_result_free(&a);
    pl_sim_result_free(&b);
    if (ra < 0 || rb < 0) {
        return pl__cli_internal_error(c, "replay", "%s: the run could not start: %s", in->path,
                                      pl__cli_error_text(ra < 0 ? ra : rb));
    }
    uint64_t want = in->file.hash;
    if (ha != hb || (in->file.has_hash && (ha != want || hb != want))) {
        print_verdict(ro, in, true, "nondeterminism, two runs gave hashes %016" PRIx64
                                    " and %016" PRIx64 " (recorded %016" PRIx64 ")",
                      ha, hb, want);
        return ST_CLEAN;
    }
    print_verdict(ro, in, false, "two runs agreed (hash %016" PRIx64 "): the nondeterminism "
                                 "did not show this time",
                  ha);
    return ST_DIFFERS;
}

/* Runs one input and prints its verdict (in the child unless
 * --no-fork). Returns ST_CLEAN, ST_DIFFERS or ST_INTERNAL. */
static int replay_exec(const cli *c, const replay_opts *ro, const replay_input *in)
{
    if (expects_nondeterminism(in)) {
        return replay_nondeterminism(c, ro, in);
    }
    pl_sim_result r;
    char err[1024] = "";
    int rc;
    bool canonical = !in->raw && !seed_only(in) && in->file.scenario != NULL &&
                     strcmp(in->file.scenario, in->sc->name) == 0 &&
                     pl_scenario_find(in->sc->name) == in->sc && !ro->poll_cost_set &&
                     !ro->rotation_set && ro->break_at == 0;
    if (canonical) {
        rc = pl_sim_replay_file(in->path, &r, err, sizeof err);
    } else {
        pl_sim_options so;
        char knobs[PL__DEC_KNOBS_TEXT_MAX];
        replay_sim_options(in, &so, knobs, sizeof knobs);
        so.keep_events = ro->trace || ro->chrome != NULL;
        so.break_at_step = ro->break_at;
        rc = pl_sim_run(in->sc, &so, &r);
        rc = rc == 0 ? compare_run(in, &r, err, sizeof err) : rc;
    }
    if (rc < 0) {
        pl_sim_result_free(&r);
        return pl__cli_internal_error(c, "replay", "%s: %s", in->path,
                                      err[0] != '\0' ? err : pl__cli_error_text(rc));
    }
    if (!ro->quiet && r.finding.kind != PL_FINDING_NONE) {
        print_replay_finding(in, &r);
    }
    if (rc == 0) {
        print_reproduced(ro, in, &r);
    } else {
        print_verdict(ro, in, false, "%s", err);
    }
    int status = rc == 0 ? ST_CLEAN : ST_DIFFERS;
    if (ro->break_at > r.steps) {
        printf("  --break-at %" PRIu64 ": never reached: the run ended at step %" PRIu64 "\n",
               ro->break_at, r.steps);
    }
    if (ro->trace || ro->chrome != NULL) {
        int trc = pl__cli_write_trace(c, "replay", ro->trace ? stdout : NULL, ro->chrome,
                                      ro->quiet, in->path, &r);
        status = trc != ST_CLEAN ? trc : status;
    }
    pl_sim_result_free(&r);
    return status;
}

/* The replay child died or hung: a reproduction when the file expects
 * exactly that. */
static int replay_lost(const replay_opts *ro, const replay_input *in, pl_finding_kind kind,
                       const char *text)
{
    const char *got = pl_finding_name(kind);
    const char *want = in->raw ? got : in->file.finding;
    bool same = want != NULL && strcmp(want, got) == 0;
    if (same) {
        print_verdict(ro, in, true, "%s (the replay process %s)", got, text);
        return ST_CLEAN;
    }
    print_verdict(ro, in, false, "the replay process %s, but the file expects %s", text,
                  want != NULL ? want : "no finding");
    return ST_DIFFERS;
}

/* The poll budget stopped the replay child inside a poll. */
static int replay_stopped(const replay_opts *ro, const replay_input *in)
{
    char d[32], text[160];
    pl__cpu_budget_text(pl__cpu_budget_get(), d, sizeof d);
    snprintf(text, sizeof text, "ran for %s of CPU time inside one poll and was stopped", d);
    return replay_lost(ro, in, PL_FINDING_LIVELOCK, text);
}

static int replay_forked(const cli *c, const replay_opts *ro, const replay_input *in)
{
    int fds[2];
    if (pipe(fds) != 0) {
        return pl__cli_internal_error(c, "replay", "cannot create a pipe: %s", strerror(errno));
    }
    fflush(NULL);
    pl__hang *hang = pl__hang_map();
    /* The run's events outlive a crash there (NULL: told without them). */
    pl__trace_ring *ring = pl__ring_map();
    pl__crash_stack *stack = pl__crash_stack_map();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        pl__hang_unmap(hang);
        pl__ring_unmap(ring);
        pl__crash_stack_unmap(stack);
        return pl__cli_internal_error(c, "replay", "cannot fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        pl__cpu_budget_arm(hang);
        pl__sim_ring_to(ring);
        pl__crash_stack_arm(stack);
        /* Line buffering: what was printed survives a crash. */
        setvbuf(stdout, NULL, _IOLBF, 0);
        unsigned char verdict = (unsigned char)replay_exec(c, ro, in);
        fflush(NULL);
        /* The verdict tells a finished replay from one that died with
         * an exit status of its own (user code, a sanitizer). */
        pl__cli_write_all(fds[1], &verdict, 1);
        _exit(verdict);
    }
    close(fds[1]);
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    unsigned char verdict = 0;
    bool hung = poll(&p, 1, (int)(ro->watchdog_ns / PL_MS)) == 0;
    bool got = !hung && read(fds[0], &verdict, 1) == 1;
    if (hung) {
        kill(pid, SIGKILL);
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    char text[160];
    bool stopped = !got && pl__hang_ended(hang, status);
    pl__hang_unmap(hang);
    if (stopped || hung) {
        pl__ring_unmap(ring);
        pl__crash_stack_unmap(stack);
    }
    if (stopped) {
        return replay_stopped(ro, in);
    }
    if (hung) {
        char d[32];
        pl__cli_format_duration(ro->watchdog_ns, d, sizeof d);
        snprintf(text, sizeof text, "made no progress for %s of wall time and was killed", d);
        return replay_lost(ro, in, PL_FINDING_LIVELOCK, text);
    }
    if (!got) {
        pl__cli_describe_status(status, text, sizeof text);
        pl__cli_print_crash_events(c, "replay", stdout, "the replay process", ro->trace,
                                   ro->chrome, ro->quiet, ring);
        char native[4096];
        pl__cli_crash_stack_text(stack, "  its native stack", native, sizeof native);
        fputs(native, stdout);
        verdict = (unsigned char)replay_lost(ro, in, PL_FINDING_CRASH, text);
    }
    pl__ring_unmap(ring);
    pl__crash_stack_unmap(stack);
    return verdict;
}

static int replay_one(const cli *c, const replay_opts *ro, const char *path)
{
    replay_input in;
    int rc = replay_load(c, ro, path, &in);
    if (rc == 0 && !ro->quiet) {
        if (in.raw) {
            printf("%s: raw fuzzer input, %zu bytes, scenario %s\n", pl__cli_safe_text(path).s,
                   in.bytes_len, in.sc->name);
        } else {
            printf("%s: scenario %s, seed %" PRIu64 ", expects %s\n", pl__cli_safe_text(path).s,
                   in.sc->name, in.file.seed,
                   pl__cli_safe_text(in.file.finding != NULL ? in.file.finding : "no finding").s);
        }
    }
    if (rc == 0) {
        rc = ro->no_fork ? replay_exec(c, ro, &in) : replay_forked(c, ro, &in);
    }
    replay_input_free(&in);
    return rc;
}

int pl__cli_cmd_replay(cli *c, int argc, char **argv)
{
    replay_opts ro;
    int rc = replay_opts_parse(c, argc, argv, &ro);
    int worst = ST_CLEAN;
    for (size_t i = 0; rc == 0 && i < ro.nfiles; i++) {
        int one = replay_one(c, &ro, ro.files[i]);
        if (one == ST_USAGE) {
            rc = one;
        } else if (one == ST_INTERNAL || (one == ST_DIFFERS && worst == ST_CLEAN)) {
            worst = one;
        }
    }
    free(ro.files);
    if (rc != 0) {
        return rc < 0 ? ST_CLEAN : rc;
    }
    return worst;
}
