/* sim/src/shrink_file.c: shrinking replay files and printing the result
 * (the shrinker itself is shrink.c): a shrunk replay is the verified list
 * with the finding and the explanation as comments, so the file explains
 * itself to whoever opens it.
 */
#include "shrink.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pollen/error.h"
#include "replay.h"
#include "run.h"
#include "run_record.h"
#include "sim_internal.h"

static const char *budget_note(const pl_sim_shrink_result *r)
{
    return r->clock_hit    ? ", stopped by its wall-clock safety net (not reproducible)"
           : r->budget_hit ? ", stopped by its budget of runs"
                           : "";
}

static void write_comments(FILE *f, const pl_sim_shrink_result *r)
{
    fprintf(f, "# shrunk-from %zu decisions (%zu non-default) to %zu (%zu non-default) in %llu "
               "runs%s\n",
            r->decisions_before, r->nonzero_before, r->decisions_after, r->nonzero_after,
            (unsigned long long)r->runs, budget_note(r));
    if (r->limit_after > 0 && r->limit_after < r->limit_before) {
        fprintf(f, "# virtual time limit shrunk from %.3f s to %.3f s (time-limit-ns below)\n",
                (double)r->limit_before / 1e9, (double)r->limit_after / 1e9);
    }
    fprintf(f, "# %s with these departures from production order\n", pl_finding_name(r->kind));
    fprintf(f, "# (every other decision is production's: FIFO, no fault, no delay):\n");
    for (const char *p = r->explanation; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t l = nl != NULL ? (size_t)(nl - p) : strlen(p);
        fprintf(f, "#   %.*s\n", (int)l, p);
        p += l + (nl != NULL);
    }
}

/* Rewrites `path` with the comments after its first line (the format
 * line must stay first), through a temporary file and a rename. */
static int insert_comments(const char *path, const pl_sim_shrink_result *r)
{
    size_t len;
    char *data = NULL;
    int rc = pl__replay_read_path(path, &data, &len, NULL, 0);
    if (rc < 0) {
        return rc;
    }
    const char *nl = memchr(data, '\n', len);
    size_t head = nl != NULL ? (size_t)(nl - data) + 1 : len;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (f == NULL) {
        free(data);
        return PL_EIO;
    }
    fwrite(data, 1, head, f);
    write_comments(f, r);
    fwrite(data + head, 1, len - head, f);
    free(data);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return PL_EIO;
    }
    return 0;
}

int pl_sim_write_shrunk_replay(const pl_scenario *sc, const pl_sim_options *base,
                               const pl_sim_shrink_result *r, const char *path)
{
    const pl__run_record *rec = pl__sim_result_record(&r->run);
    if (rec == NULL || rec->decisions_truncated || r->decisions_after > rec->decisions_len) {
        return PL_EINVAL;
    }
    /* The run consulted zeros past the shrunk list's end; the file keeps
     * the list itself, which replays the same run. */
    pl__run_record trimmed = *rec;
    trimmed.decisions_len = r->decisions_after;
    pl_sim_result run = r->run;
    run.internal = &trimmed;
    /* The shrunk run's limit, so the file replays it. */
    pl_sim_options o = *base;
    o.time_limit_ns = r->limit_after > 0 ? r->limit_after : base->time_limit_ns;
    int rc = pl_sim_write_replay(sc, &o, &run, path);
    return rc != 0 ? rc : insert_comments(path, r);
}

int pl__shrink_default_out(const char *in, char *buf, size_t len)
{
    PL__SIM_ASSERT(in != NULL && (buf != NULL || len == 0));
    static const char ext[] = ".replay";
    size_t n = strlen(in);
    size_t e = sizeof ext - 1;
    if (n > e && strcmp(in + n - e, ext) == 0) {
        return snprintf(buf, len, "%.*s.shrunk.replay", (int)(n - e), in);
    }
    return snprintf(buf, len, "%s.shrunk.replay", in);
}

/* The options a replay file's run had (as `pollen replay` sets them):
 * the shrinker brings its own decisions. */
static int options_of(const pl__replay *rp, pl_sim_options *o, char *knobs, size_t knobs_len)
{
    int rc = pl__replay_options(rp, o, knobs, knobs_len);
    o->source = PL_SIM_SOURCE_LIST;
    o->strategy = rp->strategy != NULL ? rp->strategy : "random";
    o->decisions = NULL;
    o->decisions_len = 0;
    return rc;
}

int pl__shrink_load(const char *in, pl__replay *rp, const pl_scenario **sc, int *kind,
                    pl_sim_options *o, char *knobs, size_t knobs_len, char *err, size_t err_len)
{
    PL__SIM_ASSERT(in != NULL && rp != NULL && sc != NULL && kind != NULL && o != NULL);
    char why[512] = "";
    int rc = pl__replay_parse_file(in, rp, why, sizeof why);
    if (rc != 0) {
        /* Read errors name the path already; parse errors only the line. */
        bool named = strstr(why, in) != NULL;
        snprintf(err, err_len, "%s%s%s", named ? "" : in, named ? "" : ": ", why);
        return rc;
    }
    *sc = rp->scenario != NULL ? pl_scenario_find(rp->scenario) : NULL;
    if (*sc == NULL) {
        snprintf(err, err_len, "%s: scenario '%s' is not linked into this program", in,
                 rp->scenario != NULL ? rp->scenario : "(none)");
        return PL_EFORMAT;
    }
    *kind = rp->finding != NULL ? pl_finding_from_name(rp->finding) : -1;
    if (*kind <= 0) {
        snprintf(err, err_len,
                 "%s: the replay records no finding: nothing to shrink or explain", in);
        return PL_EINVAL;
    }
    rc = options_of(rp, o, knobs, knobs_len);
    if (rc != 0) {
        snprintf(err, err_len, "%s: its knobs do not fit the %zu bytes given for them", in,
                 knobs_len);
    }
    return rc;
}

int pl__shrink_file_ex(const char *in, const char *out, const pl_sim_shrink_limits *limits,
                       pl_sim_shrink_result *res, char *err, size_t err_len)
{
    return pl__shrink_file_rotation(in, out, limits, PL__ROTATION_FILE, NULL, res, err, err_len);
}

int pl__shrink_file_rotation(const char *in, const char *out, const pl_sim_shrink_limits *limits,
                             pl__rotation rotation, pl__shrink_runner_fn runner,
                             pl_sim_shrink_result *res, char *err, size_t err_len)
{
    PL__SIM_ASSERT(in != NULL && res != NULL && err != NULL && err_len > 0);
    memset(res, 0, sizeof *res);
    pl__replay rp;
    const pl_scenario *sc = NULL;
    int kind = 0;
    pl_sim_options o;
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    int rc = pl__shrink_load(in, &rp, &sc, &kind, &o, knobs, sizeof knobs, err, err_len);
    if (rc != 0) {
        pl__replay_free(&rp);
        return rc;
    }
    if (rotation != PL__ROTATION_FILE) {
        o.rotate_wakers = rotation == PL__ROTATION_ON;
    }
    rc = pl__shrink_with(sc, &o, rp.decisions, rp.decisions_len, (pl_finding_kind)kind, limits,
                         runner, res);
    if (rc != 0) {
        snprintf(err, err_len, "%s: %s", in, res->message[0] ? res->message : pl_strerror(rc));
    } else {
        char def[4096];
        if (out == NULL) {
            pl__shrink_default_out(in, def, sizeof def);
            out = def;
        }
        rc = pl_sim_write_shrunk_replay(sc, &o, res, out);
        if (rc != 0) {
            snprintf(err, err_len, "cannot write '%s': %s", out, pl_strerror(rc));
        }
    }
    pl__replay_free(&rp);
    return rc;
}

int pl__shrink_file(const char *in, const char *out, char *err, size_t err_len)
{
    pl_sim_shrink_result res;
    int rc = pl__shrink_file_ex(in, out, NULL, &res, err, err_len);
    pl_sim_shrink_result_free(&res);
    return rc;
}

void pl__shrink_print(FILE *f, const pl_sim_shrink_result *res, const char *out,
                      const char *indent)
{
    PL__SIM_ASSERT(f != NULL && res != NULL && indent != NULL);
    /* Departures are some of a list's decisions. */
    PL__SIM_ASSERT(res->nonzero_before <= res->decisions_before &&
                   res->nonzero_after <= res->decisions_after);
    fprintf(f, "%sshrunk %s: %zu decisions (%zu non-default) -> %zu (%zu non-default), %llu "
               "runs, %.1f s%s\n",
            indent, pl_finding_name(res->kind), res->decisions_before, res->nonzero_before,
            res->decisions_after, res->nonzero_after, (unsigned long long)res->runs,
            (double)res->elapsed_ns / 1e9,
            res->clock_hit    ? " (stopped by the wall-clock safety net: a smaller schedule may "
                                "exist, and another shrink may end elsewhere)"
            : res->budget_hit ? " (budget of runs reached: a smaller schedule may exist)"
                              : "");
    if (res->limit_after > 0 && res->limit_after < res->limit_before) {
        fprintf(f, "%sthe same tasks are stuck at a virtual time limit of %.3f s (was %.3f s)\n",
                indent, (double)res->limit_after / 1e9, (double)res->limit_before / 1e9);
    }
    fprintf(f, "%sthe schedule that fails leaves production's order here:\n", indent);
    for (const char *p = res->explanation; p != NULL && *p != '\0';) {
        const char *nl = strchr(p, '\n');
        size_t l = nl != NULL ? (size_t)(nl - p) : strlen(p);
        fprintf(f, "%s  %.*s\n", indent, (int)l, p);
        p += l + (nl != NULL);
    }
    if (out != NULL) {
        fprintf(f, "%sshrunk replay: %s\n", indent, out);
    }
}
