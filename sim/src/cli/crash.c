/* sim/src/cli/crash.c: a crashed run told from its crash ring (the
 * rerun of a crashed seed, a forked replay): the poll it died in, and
 * its last events as timeline lines; the writer of timelines and Chrome
 * traces the commands share; and the line a shrunk finding gives its
 * original run. */
#include "cli_internal.h"

/* Below `replay` and `run --trace`, which call it with a run's events. */
int pl__cli_write_events(const cli *c, const char *cmd, FILE *text, const char *chrome,
                         bool quiet, const char *what, const pl__trace_rec *ev, size_t n,
                         const pl__trace_namer *nm)
{
    int rc = 0;
    if (text != NULL) {
        rc = pl__trace_write_text_ex(text, ev, n, nm);
    }
    if (rc == 0 && chrome != NULL) {
        FILE *f = fopen(chrome, "w");
        rc = f == NULL ? -errno : pl__trace_write_chrome_ex(f, ev, n, nm);
        rc = f != NULL && fclose(f) != 0 && rc == 0 ? -errno : rc;
        if (rc == 0 && !quiet) {
            fprintf(text != NULL ? text : stdout, "  chrome trace: %s (%zu events)\n",
                    pl__cli_safe_text(chrome).s, n);
        }
    }
    if (rc != 0) {
        return pl__cli_internal_error(c, cmd, "cannot write the trace of %s: %s", what,
                                      pl__cli_error_text(rc));
    }
    return ST_CLEAN;
}

/* Writes the ring's last events into buf (indented, NUL-terminated). */
static void ring_lines(const pl__trace_ring *ring, size_t max, const char *head, char *buf,
                       size_t len)
{
    buf[0] = '\0';
    /* One byte short: the text stays NUL-terminated when it is cut. */
    FILE *f = fmemopen(buf, len - 1, "w");
    if (f == NULL) {
        return;
    }
    fputs(head, f);
    pl__ring_write_text(f, ring, max, "    ");
    fclose(f);
}

static void event_json(FILE *f, const pl__trace_rec *e, const pl__trace_namer *nm)
{
    char *args = NULL;
    size_t args_len = 0;
    FILE *m = open_memstream(&args, &args_len);
    if (m != NULL) {
        pl__trace_write_args(m, e, nm);
        fclose(m);
    }
    const char *name = e->task != PL__TRACE_NO_TASK && nm->task_name != NULL
                           ? nm->task_name(nm->ud, e->task)
                           : NULL;
    fprintf(f, ",{\"step\":%" PRIu64 ",\"time_ns\":%" PRId64 ",\"event\":", e->step, e->time_ns);
    pl__cli_json_string(f, pl__trace_kind_name(e->kind));
    fputs(",\"task\":", f);
    if (name != NULL) {
        pl__cli_json_string(f, name);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"task_id\":%" PRIu32 ",\"text\":", e->task);
    /* The arguments each begin with a space: the first one is not kept. */
    pl__cli_json_string(f, args == NULL ? "" : args + (args[0] == ' '));
    fputc('}', f);
    free(args);
}

void pl__cli_timeline_json(char *buf, size_t len, const pl__trace_rec *ev, size_t n, size_t max,
                           const pl__trace_namer *nm)
{
    buf[0] = '\0';
    size_t from = n > max ? n - max : 0;
    size_t *at = calloc(n - from + 1, sizeof *at);
    char *mem = NULL;
    size_t mem_len = 0;
    FILE *f = at != NULL ? open_memstream(&mem, &mem_len) : NULL;
    if (f == NULL) {
        free(at);
        return;
    }
    /* Each object after a comma, its offset kept: the suffix that fits
     * is cut at an object's start, and its comma becomes the '['. */
    for (size_t i = from; i < n; i++) {
        at[i - from] = (size_t)ftell(f);
        event_json(f, &ev[i], nm);
    }
    fclose(f);
    for (size_t k = 0; mem != NULL && k < n - from; k++) {
        if (mem_len - at[k] + 2 <= len) {
            snprintf(buf, len, "[%s]", mem + at[k] + 1);
            break;
        }
    }
    if (mem != NULL && n == from && len >= 3) {
        snprintf(buf, len, "[]");
    }
    free(mem);
    free(at);
}

void pl__cli_crash_timeline(report *rp, const pl__trace_ring *ring)
{
    if (!pl__ring_position(ring, &rp->f)) {
        return;
    }
    rp->positioned = true;
    char where[256];
    pl__ring_where(&rp->f, where, sizeof where);
    pl__cli_textf(rp->f.message + strlen(rp->f.message),
                  sizeof rp->f.message - strlen(rp->f.message), "\nit died %s", where);
    ring_lines(ring, CRASH_TIMELINE_EVENTS, "  the run's last events, the latest last:\n",
               rp->timeline, sizeof rp->timeline);
    size_t n = 0;
    uint64_t lost = 0;
    pl__trace_rec *ev = pl__ring_events(ring, &n, &lost);
    pl__trace_namer nm = pl__ring_namer(ring);
    if (ev != NULL) {
        pl__cli_timeline_json(rp->timeline_json, sizeof rp->timeline_json, ev, n,
                              CRASH_TIMELINE_EVENTS, &nm);
    }
    free(ev);
}

void pl__cli_print_crash_events(const cli *c, const char *cmd, FILE *out, const char *who,
                                bool trace, const char *chrome, bool quiet,
                                const pl__trace_ring *ring)
{
    pl_finding f;
    memset(&f, 0, sizeof f);
    if (ring == NULL || !pl__ring_position(ring, &f)) {
        return;
    }
    char where[256];
    pl__ring_where(&f, where, sizeof where);
    fprintf(out, "  %s died %s\n", who, where);
    if (!trace && chrome == NULL) {
        char lines[8192];
        ring_lines(ring, CRASH_TIMELINE_EVENTS, "  its last events, the latest last:\n", lines,
                   sizeof lines);
        fputs(lines, out);
        return;
    }
    size_t n = 0;
    uint64_t lost = 0;
    pl__trace_rec *ev = pl__ring_events(ring, &n, &lost);
    if (lost > 0 && trace) {
        fprintf(out, "(the first %" PRIu64 " events are not kept: a crash keeps the last %u)\n",
                lost, PL__RING_EVENTS);
    }
    pl__trace_namer nm = pl__ring_namer(ring);
    pl__cli_write_events(c, cmd, trace ? out : NULL, chrome, quiet, who, ev, n, &nm);
    free(ev);
}

void pl__cli_original_line(char *buf, size_t len, const report *rp, const pl_finding *orig,
                           size_t decisions)
{
    pl_time t = orig->time_ns < 0 ? 0 : orig->time_ns;
    char seed[48] = "";
    if (rp->has_seed) {
        snprintf(seed, sizeof seed, "seed %" PRIu64 ", ", rp->seed);
    }
    pl__cli_textf(buf, len,
                  "  shrunk: this finding is the shrunk run's; the original run (%sstep %" PRIu64
                  ", virtual time %" PRId64 ".%03" PRId64 " ms, %zu decisions) is the 'replay' "
                  "below\n",
                  seed, orig->step, t / PL_MS, t % PL_MS / PL_US, decisions);
}
