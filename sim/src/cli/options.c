/* sim/src/cli/options.c: what the commands share to read their
 * arguments: the option iterator and its value parsers, and `run`'s
 * options (messages are messages.c's). */
#include "cli_internal.h"

static int find_long(const opt_spec *specs, const char *name, size_t len)
{
    for (int i = 0; specs[i].name != NULL; i++) {
        if (strlen(specs[i].name) == len && strncmp(specs[i].name, name, len) == 0) {
            return i;
        }
    }
    return -1;
}

static int find_short(const opt_spec *specs, char c)
{
    for (int i = 0; specs[i].name != NULL; i++) {
        if (specs[i].short_name != 0 && specs[i].short_name == c) {
            return i;
        }
    }
    return -1;
}

static int unknown_option(const opts_iter *it, const char *arg)
{
    char typed[64];
    snprintf(typed, sizeof typed, "%.*s", (int)strcspn(arg, "="), arg);
    const char *best = NULL;
    size_t best_d = 3;
    for (int i = 0; it->specs[i].name != NULL && typed[0] == '-' && typed[1] == '-'; i++) {
        size_t d = pl__cli_distance(typed + 2, it->specs[i].name, 3);
        if (d < best_d) {
            best_d = d;
            best = it->specs[i].name;
        }
    }
    if (best != NULL) {
        return usage_error(it->c, it->cmd, "unknown option '%s' (did you mean '--%s'?)", typed,
                           best);
    }
    return usage_error(it->c, it->cmd, "unknown option '%s'", typed);
}

/* Takes the value of option s: inline ("--x=v", "-jv") or the next
 * argument. Returns the option index or OPT_ERROR. */
static int option_value(opts_iter *it, int idx, const char *inline_value, const char **value)
{
    /* given[] remembers at most OPTS_MAX options (cli_internal.h). */
    PL__CLI_ASSERT(idx >= 0 && idx < OPTS_MAX && it->i <= it->argc);
    const opt_spec *s = &it->specs[idx];
    if (s->arg == NULL) {
        if (inline_value != NULL) {
            usage_error(it->c, it->cmd, "option '--%s' takes no value", s->name);
            return OPT_ERROR;
        }
        *value = NULL;
        return idx;
    }
    if (inline_value != NULL) {
        *value = inline_value;
    } else if (it->i >= it->argc || strncmp(it->argv[it->i], "--", 2) == 0) {
        /* "--seeds --json" means the value was forgotten, not "--json". */
        usage_error(it->c, it->cmd, "option '--%s' needs a value (%s)", s->name, s->arg);
        return OPT_ERROR;
    } else {
        *value = it->argv[it->i++];
    }
    /* Keeping the last of two values would silently drop the other. */
    if (it->given[idx] != NULL) {
        usage_error(it->c, it->cmd, "option '--%s' given twice ('%s', then '%s'): give it once",
                    s->name, it->given[idx], *value);
        return OPT_ERROR;
    }
    it->given[idx] = *value;
    return idx;
}

/* The next option (its index in specs, *value set or NULL for a flag),
 * OPT_POSITIONAL (*value the argument), OPT_END, or OPT_ERROR after a
 * usage error was printed. */
int pl__cli_opts_next(opts_iter *it, const char **value)
{
    while (it->i < it->argc) {
        const char *a = it->argv[it->i++];
        if (it->positional_only || a[0] != '-' || a[1] == '\0') {
            *value = a;
            return OPT_POSITIONAL;
        }
        if (strcmp(a, "--") == 0) {
            it->positional_only = true;
            continue;
        }
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            int idx = find_long(it->specs, name, eq != NULL ? (size_t)(eq - name) : strlen(name));
            if (idx < 0) {
                unknown_option(it, a);
                return OPT_ERROR;
            }
            return option_value(it, idx, eq != NULL ? eq + 1 : NULL, value);
        }
        int idx = find_short(it->specs, a[1]);
        if (idx < 0) {
            unknown_option(it, a);
            return OPT_ERROR;
        }
        return option_value(it, idx, a[2] != '\0' ? a + 2 : NULL, value);
    }
    return OPT_END;
}

/* Parses a whole number option value in [lo, hi]. */
int pl__cli_opt_number(const opts_iter *it, int idx, const char *v, uint64_t lo, uint64_t hi,
                       uint64_t *out)
{
    PL__CLI_ASSERT(lo <= hi && idx >= 0 && idx < OPTS_MAX);
    if (pl__cli_parse_u64(v, out) != 0 || *out < lo || *out > hi) {
        return usage_error(it->c, it->cmd,
                           "bad value for '--%s': '%s' (expected a whole number from %" PRIu64
                           " to %" PRIu64 ")",
                           it->specs[idx].name, v, lo, hi);
    }
    return 0;
}

int pl__cli_opt_duration(const opts_iter *it, int idx, const char *v, pl_time *out)
{
    if (pl__cli_parse_duration(v, out) != 0) {
        return usage_error(it->c, it->cmd,
                           "bad value for '--%s': '%s' (expected a duration such as 500ms, 30s, "
                           "10m or 1.5h)",
                           it->specs[idx].name, v);
    }
    return 0;
}

/* --poll-cost: 0, or a virtual duration up to PL_SIM_POLL_COST_MAX. */
int pl__cli_opt_poll_cost(const opts_iter *it, int idx, const char *v, pl_time *out)
{
    if (strcmp(v, "0") == 0) {
        *out = 0;
        return 0;
    }
    if (pl__cli_parse_duration(v, out) != 0 || *out > PL_SIM_POLL_COST_MAX) {
        return usage_error(it->c, it->cmd,
                           "bad value for '--%s': '%s' (expected 0 or a duration up to 1s, such "
                           "as 100ns or 2us)",
                           it->specs[idx].name, v);
    }
    return 0;
}

int pl__cli_opt_rotation(const opts_iter *it, int idx, const char *v, bool *off)
{
    if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
        return usage_error(it->c, it->cmd, "bad value for '--%s': '%s' (expected on or off)",
                           it->specs[idx].name, v);
    }
    *off = strcmp(v, "off") == 0;
    return 0;
}

/* --poll-budget: the CPU time one poll may take in a child process
 * before it counts as never returning (isolate/cpu_budget.h). */
int pl__cli_opt_poll_budget(const opts_iter *it, int idx, const char *v)
{
    pl_time ns;
    if (pl__cli_opt_duration(it, idx, v, &ns) != 0) {
        return ST_USAGE;
    }
    pl__cpu_budget_set(ns);
    return 0;
}

/* shrink --watchdog: the wall time a livelock's candidate may run. */
int pl__cli_opt_candidate_watchdog(const opts_iter *it, int idx, const char *v)
{
    pl_time ns;
    if (pl__cli_opt_duration(it, idx, v, &ns) != 0) {
        return ST_USAGE;
    }
    pl__cpu_budget_set_watchdog(ns);
    return 0;
}

static const opt_spec run_specs[] = {
    [R_SEEDS] = {"seeds", 0, "A..B"},
    [R_SEED] = {"seed", 0, "N"},
    [R_TIME] = {"time", 0, "DURATION"},
    [R_STRATEGY] = {"strategy", 0, "random|pct:D|bounded:K|swarm"},
    [R_KNOBS] = {"knobs", 0, "TEXT"},
    [R_JOBS] = {"jobs", 'j', "N"},
    [R_SHARD] = {"shard", 0, "K/N|auto"},
    [R_OUT] = {"out", 0, "DIR"},
    [R_JSON] = {"json", 0, NULL},
    [R_CHECK_DET] = {"check-determinism", 0, NULL},
    [R_REAL] = {"real", 0, NULL},
    [R_KEEP_GOING] = {"keep-going", 0, NULL},
    [R_QUIET] = {"quiet", 'q', NULL},
    [R_WATCHDOG] = {"watchdog", 0, "DURATION"},
    [R_NO_SHRINK] = {"no-shrink", 0, NULL},
    [R_SHRINK_TIME] = {"shrink-time", 0, "DURATION"},
    [R_RECYCLE_SEEDS] = {"recycle-seeds", 0, "N"},
    [R_WORKER_RSS] = {"worker-rss", 0, "SIZE"},
    [R_HELP] = {"help", 'h', NULL},
    [R_POLL_COST] = {"poll-cost", 0, "DURATION"},
    [R_POLL_BUDGET] = {"poll-budget", 0, "DURATION"},
    [R_TRACE] = {"trace", 0, NULL},
    [R_CHROME_TRACE] = {"chrome-trace", 0, "OUT.json"},
    [R_ROTATION] = {"waker-rotation", 0, "on|off"},
    [R__COUNT] = {NULL, 0, NULL},
};

static uint32_t default_jobs(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) {
        return 1;
    }
    return n > (long)JOBS_DEFAULT_MAX ? JOBS_DEFAULT_MAX : (uint32_t)n;
}

static void run_opts_default(run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed_hi = DEFAULT_SEED_HI;
    o->watchdog_ns = DEFAULT_WATCHDOG_NS;
    o->shrink_ns = DEFAULT_SHRINK_NS;
    o->recycle_seeds = DEFAULT_RECYCLE_SEEDS;
    o->worker_rss = DEFAULT_WORKER_RSS;
    o->strategy = "random";
    o->jobs = default_jobs();
    o->shard_k = o->shard_n = 1;
    snprintf(o->out_dir, sizeof o->out_dir, "%s", DEFAULT_OUT_DIR);
    o->deadline_ms = INT64_MAX;
    o->text = stdout;
}

static int run_opt_seeds(const opts_iter *it, int id, const char *v, run_opts *o)
{
    if (id == R_SEEDS && pl__cli_parse_seeds(v, &o->seed_lo, &o->seed_hi) != 0) {
        return usage_error(it->c, it->cmd,
                           "bad value for '--seeds': '%s' (expected A..B with A <= B, e.g. "
                           "0..999)",
                           v);
    }
    if (id == R_SEED && pl__cli_parse_seed(v, &o->seed_lo) != 0) {
        return usage_error(it->c, it->cmd,
                           "bad value for '--seed': '%s' (expected a decimal number, 0x-hex "
                           "or a 40-hex commit hash)",
                           v);
    }
    if (id == R_SEED) {
        o->seed_hi = o->seed_lo;
    }
    return 0;
}

static int run_opt_schedule(const opts_iter *it, int id, const char *v, run_opts *o)
{
    if (id == R_STRATEGY) {
        pl__strategy_spec spec;
        char err[200];
        if (pl__strategy_parse(v, &spec, err, sizeof err) != 0) {
            return usage_error(it->c, it->cmd, "bad value for '--strategy': %s", err);
        }
        o->strategy = v;
        o->bounded = spec.kind == PL__STRATEGY_BOUNDED;
        o->bound_k = spec.depth;
        o->pct_depth = spec.kind == PL__STRATEGY_PCT ? spec.depth : 0;
        return 0;
    }
    pl__dec_knobs k;
    char err[160];
    pl__dec_knobs_default(&k);
    if (pl__dec_knobs_parse(&k, v, strlen(v), err, sizeof err) != 0) {
        return usage_error(it->c, it->cmd, "bad value for '--knobs': %s", err);
    }
    o->knobs = v;
    return 0;
}

static int run_opt_out(const opts_iter *it, const char *v, run_opts *o)
{
    size_t n = strlen(v);
    while (n > 1 && v[n - 1] == '/') {
        n--;
    }
    if (n == 0 || n >= sizeof o->out_dir) {
        return usage_error(it->c, it->cmd, "bad value for '--out': '%s' (expected a directory)",
                           v);
    }
    memcpy(o->out_dir, v, n);
    o->out_dir[n] = '\0';
    return 0;
}

static int run_opt_flag(int id, run_opts *o)
{
    o->json = o->json || id == R_JSON;
    o->check_det = o->check_det || id == R_CHECK_DET;
    o->real = o->real || id == R_REAL;
    o->keep_going = o->keep_going || id == R_KEEP_GOING;
    o->quiet = o->quiet || id == R_QUIET;
    o->no_shrink = o->no_shrink || id == R_NO_SHRINK;
    o->trace = o->trace || id == R_TRACE;
    return 0;
}

/* --shard K/N, or auto: from the batch engine's variables (shard_auto.c). */
static int run_opt_shard(const opts_iter *it, const char *v, run_opts *o)
{
    if (strcmp(v, "auto") == 0) {
        if (pl__cli_shard_auto(getenv, &o->shard_k, &o->shard_n, o->shard_from,
                               sizeof o->shard_from) != 0) {
            return usage_error(it->c, it->cmd, "'--shard auto': %s", o->shard_from);
        }
        return 0;
    }
    o->shard_from[0] = '\0';
    if (pl__cli_parse_shard(v, &o->shard_k, &o->shard_n) != 0) {
        return usage_error(it->c, it->cmd,
                           "bad value for '--shard': '%s' (expected K/N with 1 <= K <= N <= "
                           "%u, e.g. 2/4, or auto)",
                           v, PL__CLI_SHARDS_MAX);
    }
    return 0;
}

/* Applies one option. Returns 0 or ST_USAGE (message printed). */
static int run_opt_apply(const opts_iter *it, int id, const char *v, run_opts *o)
{
    uint64_t n;
    switch (id) {
    case R_SEEDS:
    case R_SEED:
        return run_opt_seeds(it, id, v, o);
    case R_STRATEGY:
    case R_KNOBS:
        return run_opt_schedule(it, id, v, o);
    case R_TIME:
        return pl__cli_opt_duration(it, id, v, &o->time_ns);
    case R_WATCHDOG:
        return pl__cli_opt_duration(it, id, v, &o->watchdog_ns);
    case R_SHRINK_TIME:
        return pl__cli_opt_duration(it, id, v, &o->shrink_ns);
    case R_POLL_COST:
        return pl__cli_opt_poll_cost(it, id, v, &o->poll_cost_ns);
    case R_ROTATION:
        return pl__cli_opt_rotation(it, id, v, &o->rotation_off);
    case R_POLL_BUDGET:
        return pl__cli_opt_poll_budget(it, id, v);
    case R_JOBS:
        if (pl__cli_opt_number(it, id, v, 1, PL__CLI_JOBS_MAX, &n) != 0) {
            return ST_USAGE;
        }
        o->jobs = (uint32_t)n;
        return 0;
    case R_SHARD:
        return run_opt_shard(it, v, o);
    case R_OUT:
        return run_opt_out(it, v, o);
    case R_CHROME_TRACE:
        o->chrome = v;
        return 0;
    case R_RECYCLE_SEEDS:
        return pl__cli_opt_number(it, id, v, 1, UINT64_MAX, &o->recycle_seeds);
    case R_WORKER_RSS:
        if (pl__cli_parse_size(v, &o->worker_rss) != 0) {
            return usage_error(it->c, it->cmd,
                               "bad value for '--worker-rss': '%s' (expected a size such as "
                               "512MiB or 2GiB)",
                               v);
        }
        return 0;
    default:
        return run_opt_flag(id, o);
    }
}

/* --trace and --chrome-trace show one run: one scenario, one seed. */
static int run_opts_check_trace(const opts_iter *it, const bool *seen, const run_opts *o)
{
    const char *name = o->trace ? "--trace" : "--chrome-trace";
    if (o->real || o->bounded) {
        return usage_error(it->c, it->cmd, "'%s' traces one simulated seed: not with '%s'", name,
                           o->real ? "--real" : "--strategy bounded:K");
    }
    if (!seen[R_SEED] && (!seen[R_SEEDS] || o->seed_lo != o->seed_hi)) {
        return usage_error(it->c, it->cmd,
                           "'%s' traces one run: give one seed with '--seed N', not a range",
                           name);
    }
    if (o->npatterns > 1) {
        return usage_error(it->c, it->cmd, "'%s' traces one run: name exactly one scenario",
                           name);
    }
    return 0;
}

/* Options that make no sense together. */
static int run_opts_check(const opts_iter *it, const bool *seen, const run_opts *o)
{
    static const int sim_only[] = {R_SEEDS, R_SEED, R_STRATEGY, R_KNOBS, R_JOBS, R_SHARD,
                                   R_OUT, R_CHECK_DET, R_KEEP_GOING, R_WATCHDOG, R_NO_SHRINK,
                                   R_SHRINK_TIME, R_RECYCLE_SEEDS, R_WORKER_RSS, R_POLL_BUDGET};
    if (seen[R_SEEDS] && seen[R_SEED]) {
        return usage_error(it->c, it->cmd, "'--seeds' and '--seed' exclude each other");
    }
    for (size_t i = 0; o->real && i < sizeof sim_only / sizeof sim_only[0]; i++) {
        if (seen[sim_only[i]]) {
            return usage_error(it->c, it->cmd,
                               "'--%s' has no effect with '--real', which runs each scenario "
                               "once on the real backend",
                               run_specs[sim_only[i]].name);
        }
    }
    static const int seed_only_opts[] = {R_SEEDS, R_SEED, R_SHARD, R_JOBS, R_KEEP_GOING,
                                         R_CHECK_DET, R_RECYCLE_SEEDS, R_WORKER_RSS};
    for (size_t i = 0; o->bounded && i < sizeof seed_only_opts / sizeof seed_only_opts[0]; i++) {
        if (seen[seed_only_opts[i]]) {
            return usage_error(it->c, it->cmd,
                               "'--%s' has no effect with '--strategy %s', which enumerates "
                               "schedules instead of seeds",
                               run_specs[seed_only_opts[i]].name, o->strategy);
        }
    }
    if (o->trace || o->chrome != NULL) {
        int rc = run_opts_check_trace(it, seen, o);
        if (rc != 0) {
            return rc;
        }
    }
    if (o->npatterns == 0) {
        return pl__cli_usage_hint(
            it->c, it->cmd, NULL,
            "which scenarios? name them, use a glob such as 'bugs_*', or 'all'");
    }
    return 0;
}

/* Parses `run`'s arguments. Returns 0, ST_USAGE, or -1 after --help. */
int pl__cli_run_opts_parse(const cli *c, int argc, char **argv, run_opts *o)
{
    opts_iter it = {c, "run", run_specs, argc, argv, 0, false, {NULL}};
    bool seen[R__COUNT] = {false};
    run_opts_default(o);
    o->patterns = calloc((size_t)argc + 1, sizeof *o->patterns);
    if (o->patterns == NULL) {
        return pl__cli_internal_error(c, "run", "out of memory");
    }
    const char *v;
    for (int id; (id = pl__cli_opts_next(&it, &v)) != OPT_END;) {
        if (id == OPT_ERROR) {
            return ST_USAGE;
        }
        if (id == OPT_POSITIONAL) {
            o->patterns[o->npatterns++] = (char *)v;
            continue;
        }
        if (id == R_HELP) {
            pl__cli_show_help(c, "run");
            return -1;
        }
        if (run_opt_apply(&it, id, v, o) != 0) {
            return ST_USAGE;
        }
        seen[id] = true;
    }
    if (run_opts_check(&it, seen, o) != 0) {
        return ST_USAGE;
    }
    o->text = o->json ? stderr : stdout;
    o->tty = isatty(STDERR_FILENO) != 0;
    if (o->shard_from[0] != '\0' && !o->quiet) {
        fprintf(o->text, "--shard auto: %s\n", o->shard_from);
    }
    if (o->time_ns > 0) {
        o->deadline_ms = pl__cli_now_ms() + o->time_ns / PL_MS;
    }
    return 0;
}

void pl__cli_sim_options(const run_opts *o, uint64_t seed, pl_sim_options *so)
{
    pl_sim_options_default(so);
    so->source = PL_SIM_SOURCE_SEED;
    so->seed = seed;
    so->strategy = o->strategy;
    so->knobs = o->knobs;
    so->poll_cost_ns = o->poll_cost_ns;
    so->rotate_wakers = !o->rotation_off;
    so->pct_horizon = o->pct_horizon;
}

/* A message for a negative code, falling back to strerror for errno
 * values pollen has no name for. */
const char *pl__cli_error_text(int rc)
{
    const char *s = pl_strerror(rc);
    if (strcmp(s, "unknown error") == 0 && rc < 0 && rc > -4096) {
        return strerror(-rc);
    }
    return s;
}
