/* sim/src/cli/cmd_merge.c: `merge`, the verdict of a sharded campaign.
 *
 * Each shard of `run --shard K/N --json` judges its seeds but cannot
 * judge pl_sometimes: a site true in one shard only is fine over the
 * whole range. merge reads the shards' JSON back (the summary line, and
 * the finding lines for the first finding's details), checks that they
 * are the N shards of one campaign, each once, adds their counts up and
 * gives the verdict and exit status `run` gives over the union: the
 * lowest-seed finding, then the pl_sometimes sites, then a known-bug
 * scenario's missing finding. Nothing here runs user code or forks. */
#include "cli_internal.h"

#define MERGE_FILE_MAX ((size_t)256 << 20)

/* One shard's file, read and checked. */
typedef struct shard_in {
    const char *path;
    char *text;      /* the whole file */
    jval summary;    /* its {"summary":...} line, parsed */
    const jval *sum; /* summary["summary"] */
    uint64_t seed_lo, seed_hi;
    uint32_t k, n;
} shard_in;

/* One scenario over every shard. */
typedef struct merged {
    const char *name;
    const char *expect; /* NULL: must stay clean */
    uint64_t seeds, runs, findings, distinct_max, distinct_sum;
    uint64_t discarded; /* runs a pl_assume discarded */
    bool complete; /* every shard ran all its seeds */
    bool first_found, first_setup, first_has_seed;
    uint64_t first_seed;
    char first_kind[32];
    const shard_in *first_in; /* the shard that reported it */
    bool cover_ok;
    cover cov;
} merged;

static int bad_file(const cli *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Bad input: a usage error (exit 2) naming the file. */
static int bad_file(const cli *c, const char *path, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return usage_error(c, "merge", "%s: %s", pl__cli_safe_text(path).s, what);
}

static char *read_text(const char *path, int *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t len = 0, cap = 0;
    *err = f == NULL ? errno : 0;
    while (f != NULL && *err == 0) {
        if (cap - len < 4096) {
            char *nb = cap < MERGE_FILE_MAX ? realloc(buf, cap * 2 + 65536) : NULL;
            if (nb == NULL) {
                *err = cap < MERGE_FILE_MAX ? ENOMEM : EFBIG;
                break;
            }
            buf = nb;
            cap = cap * 2 + 65536;
        }
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0) {
            *err = ferror(f) ? EIO : 0;
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    if (*err != 0) {
        free(buf);
        return NULL;
    }
    if (buf == NULL) {
        buf = calloc(1, 1);
        *err = buf == NULL ? ENOMEM : 0;
        return buf;
    }
    buf[len] = '\0';
    return buf;
}

/* The line of `text` starting with `prefix` (its length in *len); with
 * *count how many there are. */
static const char *line_with(const char *text, const char *prefix, size_t *len, size_t *count)
{
    const char *found = NULL;
    *count = 0;
    for (const char *l = text; *l != '\0';) {
        size_t n = strcspn(l, "\n");
        if (strncmp(l, prefix, strlen(prefix)) == 0) {
            (*count)++;
            found = found == NULL ? l : found;
            *len = found == l ? n : *len;
        }
        l += n + (l[n] == '\n');
    }
    return found;
}

static bool parse_range(const char *s, uint64_t *lo, uint64_t *hi)
{
    char tail;
    unsigned long long a, b;
    if (s == NULL || sscanf(s, "%llu..%llu%c", &a, &b, &tail) != 2 || a > b) {
        return false;
    }
    *lo = a;
    *hi = b;
    return true;
}

static bool parse_shard(const char *s, uint32_t *k, uint32_t *n)
{
    char tail;
    unsigned a, b;
    if (s == NULL || sscanf(s, "%u/%u%c", &a, &b, &tail) != 2 || a < 1 || a > b) {
        return false;
    }
    *k = a;
    *n = b;
    return true;
}

/* Reads one file and checks its summary line alone. */
static int read_shard(const cli *c, shard_in *in)
{
    int err;
    in->text = read_text(in->path, &err);
    if (in->text == NULL) {
        return bad_file(c, in->path, "cannot read it: %s", strerror(err));
    }
    size_t len = 0, count = 0;
    const char *line = line_with(in->text, "{\"summary\":", &len, &count);
    if (count == 0) {
        return bad_file(c, in->path, "no summary line: give the stdout of '%s run ... --json'",
                        c->prog);
    }
    if (count > 1) {
        return bad_file(c, in->path, "%zu summary lines: give one run's --json per file", count);
    }
    char jerr[128];
    if (pl__cli_json_parse(line, len, &in->summary, jerr, sizeof jerr) != 0) {
        return bad_file(c, in->path, "the summary line is not valid JSON: %s", jerr);
    }
    in->sum = pl__cli_json_get(&in->summary, "summary");
    bool real = false;
    if (!pl__cli_json_bool(pl__cli_json_get(in->sum, "real"), &real) || real) {
        return bad_file(c, in->path,
                        real ? "a --real run has no seeds to merge"
                             : "the summary has no \"real\" field");
    }
    if (!parse_range(pl__cli_json_str(pl__cli_json_get(in->sum, "seeds")), &in->seed_lo,
                     &in->seed_hi) ||
        !parse_shard(pl__cli_json_str(pl__cli_json_get(in->sum, "shard")), &in->k, &in->n)) {
        return bad_file(c, in->path,
                        "the summary has no \"seeds\":\"A..B\" or no "
                        "\"shard\":\"K/N\"");
    }
    const char *strategy = pl__cli_json_str(pl__cli_json_get(in->sum, "strategy"));
    if (strategy == NULL || strncmp(strategy, "bounded:", 8) == 0) {
        return bad_file(c, in->path,
                        strategy == NULL ? "the summary names no strategy"
                                         : "a bounded exploration has no shards");
    }
    const jval *scs = pl__cli_json_get(in->sum, "scenarios");
    if (scs == NULL || scs->type != JV_ARR) {
        return bad_file(c, in->path, "the summary has no \"scenarios\" list");
    }
    return 0;
}

/* A campaign setting as text, for comparing shards ("null" when absent). */
static void setting_text(const shard_in *in, const char *key, char *buf, size_t len)
{
    const jval *v = pl__cli_json_get(in->sum, key);
    snprintf(buf, len, "%s",
             v == NULL            ? "(none)"
             : v->type == JV_NULL ? "null"
             : v->type == JV_BOOL ? (v->b ? "true" : "false")
             : v->text != NULL    ? v->text
                                  : "(a list)");
}

/* The scenario names of a shard, one text. */
static void scenario_names(const shard_in *in, char *buf, size_t len)
{
    const jval *scs = pl__cli_json_get(in->sum, "scenarios");
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < scs->n && used < len; i++) {
        const char *name = pl__cli_json_str(pl__cli_json_get(&scs->items[i], "scenario"));
        int w =
            snprintf(buf + used, len - used, "%s%s", i > 0 ? "," : "", name != NULL ? name : "?");
        used += w > 0 ? (size_t)w : 0;
    }
}

/* Fewer files than shards (they are distinct): names the missing ones. */
static int missing_shards(const cli *c, const shard_in *in, size_t nin)
{
    char missing[256] = "";
    size_t used = 0, count = 0;
    for (uint32_t k = 1; k <= in[0].n && used < sizeof missing; k++) {
        bool given = false;
        for (size_t i = 0; i < nin; i++) {
            given = given || in[i].k == k;
        }
        if (!given) {
            int w = snprintf(missing + used, sizeof missing - used, "%s%" PRIu32 "/%" PRIu32,
                             count++ > 0 ? ", " : "", k, in[0].n);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    return bad_file(c, in[0].path,
                    "shard %" PRIu32 "/%" PRIu32 " and %zu more given; "
                    "missing: %s (give every shard's --json: a missing shard's seeds were "
                    "never judged)",
                    in[0].k, in[0].n, nin - 1, missing);
}

/* Every shard against the first: one campaign, each shard once, all. */
static int check_shards(const cli *c, const shard_in *in, size_t nin)
{
    static const char *const same[] = {"seeds",        "strategy",          "knobs",
                                       "poll_cost_ns", "check_determinism", "keep_going"};
    for (size_t i = 1; i < nin; i++) {
        for (size_t s = 0; s < sizeof same / sizeof same[0]; s++) {
            char a[512], b[512];
            setting_text(&in[0], same[s], a, sizeof a);
            setting_text(&in[i], same[s], b, sizeof b);
            if (strcmp(a, b) != 0) {
                return bad_file(c, in[i].path, "%s %s, but %s has %s: not shards of one campaign",
                                same[s], pl__cli_safe_text(b).s, pl__cli_safe_text(in[0].path).s,
                                pl__cli_safe_text(a).s);
            }
        }
        char a[2048], b[2048];
        scenario_names(&in[0], a, sizeof a);
        scenario_names(&in[i], b, sizeof b);
        if (strcmp(a, b) != 0) {
            return bad_file(c, in[i].path,
                            "scenarios %s, but %s has %s: not shards of one "
                            "campaign",
                            pl__cli_safe_text(b).s, pl__cli_safe_text(in[0].path).s,
                            pl__cli_safe_text(a).s);
        }
        if (in[i].n != in[0].n) {
            return bad_file(c, in[i].path,
                            "shard %" PRIu32 "/%" PRIu32 ", but %s is shard "
                            "%" PRIu32 "/%" PRIu32 ": a campaign is split one way",
                            in[i].k, in[i].n, pl__cli_safe_text(in[0].path).s, in[0].k, in[0].n);
        }
        for (size_t j = 0; j < i; j++) {
            if (in[j].k == in[i].k) {
                return bad_file(c, in[i].path,
                                "shard %" PRIu32 "/%" PRIu32 " again (%s is that "
                                "shard too): each shard's seeds count once",
                                in[i].k, in[i].n, pl__cli_safe_text(in[j].path).s);
            }
        }
    }
    if (nin != in[0].n) {
        return missing_shards(c, in, nin);
    }
    return 0;
}

/* ---- Adding up ------------------------------------------------------------ */

static bool cover_kinds_of(const jval *dec, cover *cv)
{
    for (size_t i = 0; dec != NULL && dec->type == JV_OBJ && i < dec->n; i++) {
        if (cv->nkinds == COVER_KINDS_MAX) {
            return false;
        }
        cover_kind *k = &cv->kinds[cv->nkinds++];
        snprintf(k->name, sizeof k->name, "%s", dec->keys[i]);
        if (!pl__cli_json_u64(pl__cli_json_get(&dec->items[i], "consulted"), &k->consulted) ||
            !pl__cli_json_u64(pl__cli_json_get(&dec->items[i], "deviated"), &k->deviated)) {
            return false;
        }
    }
    return dec != NULL && dec->type == JV_OBJ;
}

static bool cover_buggify_of(const jval *arr, cover *cv)
{
    if (arr == NULL || arr->type != JV_ARR) {
        return false;
    }
    cv->buggify = calloc(arr->n + 1, sizeof *cv->buggify);
    for (size_t i = 0; cv->buggify != NULL && i < arr->n; i++) {
        const jval *b = &arr->items[i];
        pl__cover_buggify *o = &cv->buggify[cv->nbuggify++];
        const char *key = pl__cli_json_str(pl__cli_json_get(b, "key"));
        const char *file = pl__cli_json_str(pl__cli_json_get(b, "file"));
        const char *func = pl__cli_json_str(pl__cli_json_get(b, "func"));
        uint64_t line = 0;
        char *end = NULL;
        o->key = key != NULL ? strtoull(key, &end, 16) : 0;
        if (key == NULL || *end != '\0' || file == NULL || func == NULL ||
            !pl__cli_json_u64(pl__cli_json_get(b, "line"), &line) || line > INT32_MAX ||
            !pl__cli_json_u64(pl__cli_json_get(b, "reached"), &o->reached) ||
            !pl__cli_json_u64(pl__cli_json_get(b, "runs_enabled"), &o->runs_enabled) ||
            !pl__cli_json_u64(pl__cli_json_get(b, "fired"), &o->fired)) {
            return false;
        }
        o->line = (int32_t)line;
        snprintf(o->file, sizeof o->file, "%s", file);
        snprintf(o->func, sizeof o->func, "%s", func);
    }
    return cv->buggify != NULL;
}

static bool cover_sometimes_of(const jval *arr, cover *cv)
{
    if (arr == NULL || arr->type != JV_ARR) {
        return false;
    }
    cv->sometimes = calloc(arr->n + 1, sizeof *cv->sometimes);
    for (size_t i = 0; cv->sometimes != NULL && i < arr->n; i++) {
        const jval *s = &arr->items[i];
        cover_sometimes *o = &cv->sometimes[cv->nsometimes++];
        const char *msg = pl__cli_json_str(pl__cli_json_get(s, "message"));
        const char *file = pl__cli_json_str(pl__cli_json_get(s, "file"));
        const char *func = pl__cli_json_str(pl__cli_json_get(s, "func"));
        uint64_t line = 0;
        if (msg == NULL || file == NULL || func == NULL ||
            !pl__cli_json_u64(pl__cli_json_get(s, "line"), &line) || line > INT32_MAX ||
            !pl__cli_json_bool(pl__cli_json_get(s, "own"), &o->own) ||
            !pl__cli_json_u64(pl__cli_json_get(s, "reached"), &o->reached) ||
            !pl__cli_json_u64(pl__cli_json_get(s, "true"), &o->hits)) {
            return false;
        }
        o->line = (int32_t)line;
        const char *last = pl__cli_json_str(pl__cli_json_get(s, "last"));
        snprintf(o->last, sizeof o->last, "%s", last != NULL ? last : "");
        snprintf(o->msg, sizeof o->msg, "%s", msg);
        snprintf(o->file, sizeof o->file, "%s", file);
        snprintf(o->func, sizeof o->func, "%s", func);
    }
    return cv->sometimes != NULL;
}

/* A shard's "coverage" object as a cover; false when it is not one. */
static bool cover_from_json(const jval *v, cover *cv)
{
    memset(cv, 0, sizeof *cv);
    bool ok = v != NULL && v->type == JV_OBJ &&
              cover_kinds_of(pl__cli_json_get(v, "decisions"), cv) &&
              cover_buggify_of(pl__cli_json_get(v, "buggify"), cv) &&
              cover_sometimes_of(pl__cli_json_get(v, "sometimes"), cv);
    if (!ok) {
        pl__cli_cover_free(cv);
    }
    return ok;
}

/* The first finding of one shard's scenario entry, if lower than m's. */
static void merge_first(merged *m, const jval *sc, const shard_in *in)
{
    const jval *first = pl__cli_json_get(sc, "first");
    const char *kind = pl__cli_json_str(pl__cli_json_get(first, "kind"));
    uint64_t seed = 0;
    /* A finding without a seed is a pl_sometimes verdict: merge gives
     * that one itself, from the counts. */
    if (kind == NULL || !pl__cli_json_u64(pl__cli_json_get(first, "seed"), &seed) ||
        (m->first_found && seed >= m->first_seed)) {
        return;
    }
    m->first_found = true;
    m->first_has_seed = true;
    m->first_seed = seed;
    m->first_in = in;
    m->first_setup = false;
    pl__cli_json_bool(pl__cli_json_get(first, "setup_error"), &m->first_setup);
    snprintf(m->first_kind, sizeof m->first_kind, "%s", kind);
}

static void ignore_finding(void *ud, const pl_finding *f)
{
    (void)ud;
    (void)f;
}

/* Adds shard `in`'s entry of scenario i to m. Returns 0 or exit 2. */
static int merge_scenario(const cli *c, merged *m, const shard_in *in, size_t i)
{
    const jval *sc = &pl__cli_json_get(in->sum, "scenarios")->items[i];
    uint64_t seeds, runs, findings, distinct, discarded;
    bool complete = false;
    if (!pl__cli_json_u64(pl__cli_json_get(sc, "seeds"), &seeds) ||
        !pl__cli_json_u64(pl__cli_json_get(sc, "runs"), &runs) ||
        !pl__cli_json_u64(pl__cli_json_get(sc, "findings"), &findings) ||
        !pl__cli_json_u64(pl__cli_json_get(sc, "distinct_schedules"), &distinct) ||
        !pl__cli_json_u64(pl__cli_json_get(sc, "discarded"), &discarded) ||
        !pl__cli_json_bool(pl__cli_json_get(sc, "complete"), &complete)) {
        return bad_file(c, in->path,
                        "scenario %zu of the summary lacks seeds, runs, findings, "
                        "distinct_schedules, discarded or complete",
                        i + 1);
    }
    if (discarded > runs) {
        return bad_file(c, in->path, "scenario %zu: %" PRIu64 " discarded of %" PRIu64 " runs",
                        i + 1, discarded, runs);
    }
    m->name = pl__cli_json_str(pl__cli_json_get(sc, "scenario"));
    m->expect = pl__cli_json_str(pl__cli_json_get(sc, "expect"));
    m->seeds += seeds;
    m->runs += runs;
    m->discarded += discarded;
    m->findings += findings;
    m->distinct_sum += distinct;
    m->distinct_max = distinct > m->distinct_max ? distinct : m->distinct_max;
    m->complete = m->complete && complete;
    merge_first(m, sc, in);
    cover one;
    const jval *cj = pl__cli_json_get(sc, "coverage");
    if (cj == NULL || cj->type == JV_NULL) {
        m->cover_ok = false; /* out of memory in that run: no verdict */
        return 0;
    }
    if (!cover_from_json(cj, &one)) {
        return bad_file(c, in->path, "the coverage of scenario '%s' is malformed",
                        pl__cli_safe_text(m->name != NULL ? m->name : "?").s);
    }
    bool judged = false;
    if (pl__cli_json_bool(pl__cli_json_get(cj, "sometimes_judged"), &judged) && judged) {
        /* An unsharded run counted its failed sites among its findings. */
        m->findings -= pl__cli_cover_verdict(&one, ignore_finding, NULL);
    }
    int rc = pl__cli_cover_add(&m->cov, &one);
    pl__cli_cover_free(&one);
    return rc == 0 ? 0 : pl__cli_internal_error(c, "merge", "out of memory");
}

/* ---- The verdict ------------------------------------------------------------ */

/* Why the merged campaign gives no pl_sometimes verdict; "" when it does. */
static void merged_not_judged(const merged *m, const shard_in *in, bool keep_going, char *buf,
                              size_t len)
{
    buf[0] = '\0';
    if (!pl__campaign_sometimes_judged(in->seed_lo, in->seed_hi)) {
        snprintf(buf, len, "one seed (a verdict needs a range of two seeds or more)");
    } else if (!m->complete) {
        snprintf(buf, len, "a shard did not run to its end");
    } else if (m->first_found && !keep_going) {
        snprintf(buf, len, "a finding stopped the campaign");
    } else if (!m->cover_ok) {
        snprintf(buf, len, "a shard has no site counts");
    }
}

/* The first finding's own line in its shard's file: message, replay. */
static void print_first(const merged *m)
{
    fprintf(stdout, "FINDING %s in %s (seed %" PRIu64 ", shard %" PRIu32 "/%" PRIu32 ": %s)\n",
            m->first_kind, pl__cli_safe_text(m->name).s, m->first_seed, m->first_in->k,
            m->first_in->n, pl__cli_safe_text(m->first_in->path).s);
    for (const char *l = m->first_in->text; *l != '\0';) {
        size_t n = strcspn(l, "\n");
        jval v;
        char err[64];
        uint64_t seed;
        if (strncmp(l, "{\"kind\":", 8) == 0 &&
            pl__cli_json_parse(l, n, &v, err, sizeof err) == 0) {
            const char *name = pl__cli_json_str(pl__cli_json_get(&v, "scenario"));
            const char *msg = pl__cli_json_str(pl__cli_json_get(&v, "message"));
            const char *repro = pl__cli_json_str(pl__cli_json_get(&v, "reproduce"));
            if (name != NULL && strcmp(name, m->name) == 0 && msg != NULL &&
                pl__cli_json_u64(pl__cli_json_get(&v, "seed"), &seed) && seed == m->first_seed) {
                fprintf(stdout, "  %s\n", pl__cli_safe_text(msg).s);
                if (repro != NULL && repro[0] != '\0') {
                    fprintf(stdout, "  reproduce: %s\n", pl__cli_safe_text(repro).s);
                }
            }
            pl__cli_json_free(&v);
        }
        l += n + (l[n] == '\n');
    }
}

typedef struct sometimes_ctx {
    const merged *m;
    const shard_in *in;
} sometimes_ctx;

static void print_sometimes(void *ud, const pl_finding *f)
{
    const sometimes_ctx *x = ud;
    fprintf(stdout,
            "FINDING assertion in %s (seeds %" PRIu64 "..%" PRIu64 ", %" PRIu32
            " shard%s merged)\n  %s\n",
            pl__cli_safe_text(x->m->name).s, x->in->seed_lo, x->in->seed_hi, x->in->n,
            x->in->n == 1 ? "" : "s", pl__cli_safe_text(f->message).s);
}

/* Prints scenario m's merged report; returns its status as `run` would
 * (10 + kind, ST_SETUP_ERROR, ST_EXPECT_MISSED or 0). */
static int report_merged(merged *m, const shard_in *in, bool keep_going, bool quiet)
{
    char why[160];
    merged_not_judged(m, in, keep_going, why, sizeof why);
    snprintf(m->cov.not_judged, sizeof m->cov.not_judged, "%s", why);
    int status = ST_CLEAN;
    if (m->first_found && m->first_has_seed) {
        print_first(m);
    }
    sometimes_ctx x = {m, in};
    size_t failed = why[0] == '\0' ? pl__cli_cover_verdict(&m->cov, print_sometimes, &x) : 0;
    int kind = pl_finding_from_name(m->first_kind);
    if (m->first_found && m->first_setup) {
        status = ST_SETUP_ERROR;
    } else if (m->first_found && kind > 0) {
        status = ST_FINDING_BASE + kind;
    } else if (failed > 0) {
        status = ST_FINDING_BASE + PL_FINDING_ASSERTION;
    } else if (m->expect != NULL && m->complete) {
        status = ST_EXPECT_MISSED;
    }
    if (!quiet) {
        fprintf(stdout,
                "%s: %" PRIu32 " shard%s merged, %" PRIu64 " runs, %" PRIu64 " finding%s, %" PRIu64
                "..%" PRIu64 " distinct schedules (shards may "
                "share schedules)%s\n",
                pl__cli_safe_text(m->name).s, in->n, in->n == 1 ? "" : "s", m->runs,
                m->findings + failed, m->findings + failed == 1 ? "" : "s", m->distinct_max,
                m->distinct_sum, status == ST_EXPECT_MISSED ? "; expected finding not found" : "");
        pl__cli_discarded_text(stdout, m->discarded, m->runs);
        if (m->cover_ok) {
            pl__cli_cover_text(stdout, &m->cov, m->runs);
        }
    }
    return status;
}

/* ---- The command -------------------------------------------------------------- */

enum merge_opt { M_QUIET, M_HELP };

static const opt_spec merge_specs[] = {
    [M_QUIET] = {"quiet", 'q', NULL},
    [M_HELP] = {"help", 'h', NULL},
    {NULL, 0, NULL},
};

/* Collects the file names; -1 after --help, ST_USAGE on a bad option. */
static int merge_opts(const cli *c, int argc, char **argv, shard_in *in, size_t *nin, bool *quiet)
{
    opts_iter it = {c, "merge", merge_specs, argc, argv, 0, false, {NULL}};
    const char *v;
    for (int id; (id = pl__cli_opts_next(&it, &v)) != OPT_END;) {
        if (id == OPT_ERROR) {
            return ST_USAGE;
        } else if (id == M_HELP) {
            pl__cli_show_help(c, "merge");
            return -1;
        } else if (id == M_QUIET) {
            *quiet = true;
        } else if (id == OPT_POSITIONAL) {
            in[(*nin)++].path = v;
        }
    }
    if (*nin == 0) {
        return usage_error(c, "merge", "which files? give the --json output of every shard");
    }
    return 0;
}

static int merge_all(const cli *c, shard_in *in, size_t nin, bool quiet)
{
    const jval *scs = pl__cli_json_get(in[0].sum, "scenarios");
    bool keep_going = false;
    pl__cli_json_bool(pl__cli_json_get(in[0].sum, "keep_going"), &keep_going);
    int status = ST_CLEAN, rc = 0;
    bool setup = false, missed = false;
    for (size_t i = 0; i < scs->n && rc == 0; i++) {
        merged m;
        memset(&m, 0, sizeof m);
        m.complete = m.cover_ok = true;
        for (size_t s = 0; s < nin && rc == 0; s++) {
            rc = merge_scenario(c, &m, &in[s], i);
        }
        int st = rc == 0 ? report_merged(&m, &in[0], keep_going, quiet) : rc;
        pl__cli_cover_free(&m.cov);
        setup = setup || st == ST_SETUP_ERROR;
        missed = missed || st == ST_EXPECT_MISSED;
        if (st >= ST_FINDING_BASE && status == ST_CLEAN) {
            status = st;
        }
    }
    if (rc != 0) {
        return rc;
    }
    if (status == ST_CLEAN) {
        status = setup ? ST_SETUP_ERROR : missed ? ST_EXPECT_MISSED : ST_CLEAN;
    }
    if (!quiet) {
        fprintf(stdout, "merged verdict: exit %d\n", status);
    }
    return fflush(stdout) == 0 ? status : ST_INTERNAL;
}

int pl__cli_cmd_merge(cli *c, int argc, char **argv)
{
    shard_in *in = calloc((size_t)argc + 1, sizeof *in);
    size_t nin = 0;
    bool quiet = false;
    int rc = in != NULL ? merge_opts(c, argc, argv, in, &nin, &quiet)
                        : pl__cli_internal_error(c, "merge", "out of memory");
    for (size_t i = 0; rc == 0 && i < nin; i++) {
        rc = read_shard(c, &in[i]);
    }
    rc = rc == 0 ? check_shards(c, in, nin) : rc;
    rc = rc == 0 ? merge_all(c, in, nin, quiet) : rc;
    for (size_t i = 0; in != NULL && i < nin; i++) {
        free(in[i].text);
        pl__cli_json_free(&in[i].summary);
    }
    free(in);
    return rc < 0 ? ST_CLEAN : rc;
}
