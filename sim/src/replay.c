/* sim/src/replay.c: replay records and their writer (format in replay.h).
 *
 * The parser is replay_parse.c, reading files replay_read.c. The writer
 * refuses what the parser would (validate), so every file it writes
 * parses back to the same record (pl__replay_same; pl_sim_write_replay
 * checks it).
 */
#include "replay.h"


#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digits.h"
#include "grow.h"
#include "pollen/error.h"
#include "pollen/sim.h"
#include "sim_assert.h"
#include "trace.h"

/* Writer columns before a 'd' or 'c' line wraps. */
#define WRAP_COLS 100

void pl__replay_init(pl__replay *r)
{
    memset(r, 0, sizeof(*r));
    r->format = PL__REPLAY_FORMAT;
    r->checkpoint_events = PL__TRACE_CHECKPOINT_EVENTS;
}

void pl__replay_free(pl__replay *r)
{
    free(r->pollen_version);
    free(r->build);
    free(r->scenario);
    free(r->strategy);
    free(r->finding);
    free(r->message);
    free(r->checkpoints);
    free(r->decisions);
    free(r->notes);
    pl__replay_init(r);
}

int pl__replay_set(char **field, const char *value)
{
    char *copy = NULL;
    if (value != NULL) {
        size_t n = strlen(value) + 1;
        copy = malloc(n);
        if (copy == NULL) {
            return PL_ENOMEM;
        }
        memcpy(copy, value, n);
    }
    free(*field);
    *field = copy;
    return 0;
}

/* Writer ------------------------------------------------------------------ */

static bool record_valid(const pl__dec_record *d)
{
    return d->kind < PL_DECIDE__COUNT && d->n >= 2 && d->value < d->n;
}

static bool text_fits(const char *text)
{
    return text == NULL || strlen(text) <= PL__REPLAY_TEXT_MAX;
}

static int validate(const pl__replay *r)
{
    if (!text_fits(r->pollen_version) || !text_fits(r->build) || !text_fits(r->scenario) ||
        !text_fits(r->strategy) || !text_fits(r->finding) || !text_fits(r->message)) {
        return PL_EINVAL;
    }
    if (r->decisions_len > PL__REPLAY_DECISIONS_MAX ||
        r->checkpoints_len > PL__REPLAY_CHECKPOINTS_MAX || r->poll_cost_ns < 0 ||
        r->poll_cost_ns > PL_SIM_POLL_COST_MAX || r->time_limit_ns < 0 ||
        r->time_limit_ns > PL__REPLAY_TIME_LIMIT_MAX) {
        return PL_EINVAL;
    }
    if ((r->decisions_len > 0 && r->decisions == NULL) ||
        (r->checkpoints_len > 0 && (r->checkpoints == NULL || r->checkpoint_events == 0))) {
        return PL_EINVAL;
    }
    for (size_t i = 0; i < r->decisions_len; i++) {
        if (!record_valid(&r->decisions[i])) {
            return PL_EINVAL;
        }
    }
    return 0;
}

/* Writes "key value\n" with the value escaped; NULL values are omitted. */
static void write_text(FILE *f, const char *key, const char *value)
{
    if (value == NULL) {
        return;
    }
    fprintf(f, "%s ", key);
    for (const unsigned char *p = (const unsigned char *)value; *p != '\0'; p++) {
        switch (*p) {
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (*p < 0x20 || *p == 0x7f) {
                fprintf(f, "\\x%02x", (unsigned)*p);
            } else {
                fputc(*p, f);
            }
        }
    }
    fputc('\n', f);
}

/* Appends a token to a wrapped continuation line starting with `tag`.
 * *col is the current line's width, 0 when no line is open. */
static void write_token(FILE *f, char tag, const char *tok, size_t *col)
{
    size_t len = strlen(tok);
    if (*col > 0 && *col + 1 + len > WRAP_COLS) {
        fputc('\n', f);
        *col = 0;
    }
    if (*col == 0) {
        fputc(tag, f);
        *col = 1;
    }
    fputc(' ', f);
    fputs(tok, f);
    *col += 1 + len;
}

static bool record_same(const pl__dec_record *a, const pl__dec_record *b)
{
    return a->kind == b->kind && a->n == b->n && a->value == b->value;
}

static void write_decisions(FILE *f, const pl__dec_record *d, size_t n)
{
    fprintf(f, "decisions %zu\n", n);
    size_t col = 0;
    size_t i = 0;
    while (i < n) {
        /* Runs of identical decisions (typically zeros) collapse to
         * "s2:0*40": shrunk replays then read as the few places where the
         * run leaves production order. */
        size_t run = 1;
        while (i + run < n && record_same(&d[i], &d[i + run])) {
            run++;
        }
        PL__SIM_ASSERT(record_valid(&d[i])); /* validate() refused the rest */
        char tok[64];
        char letter = pl__dec_kind_letter(d[i].kind);
        if (run >= 2) {
            snprintf(tok, sizeof(tok), "%c%" PRIu32 ":%" PRIu32 "*%zu", letter, d[i].n,
                     d[i].value, run);
        } else {
            snprintf(tok, sizeof(tok), "%c%" PRIu32 ":%" PRIu32, letter, d[i].n, d[i].value);
        }
        write_token(f, 'd', tok, &col);
        i += run;
    }
    if (col > 0) {
        fputc('\n', f);
    }
}

static void write_checkpoints(FILE *f, const pl__replay *r)
{
    if (r->checkpoints_len == 0) {
        return;
    }
    fprintf(f, "checkpoints %" PRIu32 " %zu\n", r->checkpoint_events, r->checkpoints_len);
    size_t col = 0;
    for (size_t i = 0; i < r->checkpoints_len; i++) {
        char tok[24];
        snprintf(tok, sizeof(tok), "%016" PRIx64, r->checkpoints[i]);
        write_token(f, 'c', tok, &col);
    }
    if (col > 0) {
        fputc('\n', f);
    }
}

int pl__replay_write(FILE *f, const pl__replay *r)
{
    int rc = validate(r);
    if (rc < 0) {
        return rc;
    }
    fprintf(f, "pollen-replay %u\n", PL__REPLAY_FORMAT);
    write_text(f, "pollen-version", r->pollen_version);
    write_text(f, "build", r->build);
    write_text(f, "scenario", r->scenario);
    fprintf(f, "seed %" PRIu64 "\n", r->seed);
    write_text(f, "strategy", r->strategy);
    if (r->has_knobs) {
        char knobs[PL__DEC_KNOBS_TEXT_MAX];
        pl__dec_knobs_format(&r->knobs, knobs, sizeof(knobs));
        fprintf(f, "knobs %s\n", knobs);
    }
    if (r->poll_cost_ns != 0) {
        fprintf(f, "poll-cost-ns %" PRId64 "\n", r->poll_cost_ns);
    }
    if (r->time_limit_ns != 0) {
        fprintf(f, "time-limit-ns %" PRId64 "\n", r->time_limit_ns);
    }
    if (r->rotation_off) {
        fprintf(f, "waker-rotation off\n");
    }
    write_text(f, "finding", r->finding);
    write_text(f, "message", r->message);
    fprintf(f, "steps %" PRIu64 "\nevents %" PRIu64 "\n", r->steps, r->events);
    if (r->has_hash) {
        fprintf(f, "hash %016" PRIx64 "\n", r->hash);
    }
    if (r->truncated) {
        fputs("truncated 1\n", f);
    }
    write_checkpoints(f, r);
    write_decisions(f, r->decisions, r->decisions_len);
    fputs("end\n", f);
    return ferror(f) ? PL_EIO : 0;
}

int pl__replay_write_path(const char *path, const pl__replay *r)
{
    int rc = validate(r);
    if (rc < 0) {
        return rc;
    }
    size_t n = strlen(path);
    char *tmp = malloc(n + 5);
    if (tmp == NULL) {
        return PL_ENOMEM;
    }
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", 5);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        rc = -errno;
        free(tmp);
        return rc;
    }
    rc = pl__replay_write(f, r);
    /* Closing flushes: a full disk shows here, and its errno says so. */
    int closed = fclose(f) != 0 ? (errno != 0 ? -errno : PL_EIO) : 0;
    if (closed != 0 && (rc == 0 || rc == PL_EIO)) {
        rc = closed;
    }
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = -errno;
    }
    if (rc < 0) {
        remove(tmp);
    }
    free(tmp);
    return rc;
}

/* Same content, field by field (the parse-only fields format, notes and
 * error_line aside): what a file written from `a` must parse back to. */
static bool same_text(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool same_array(const void *a, const void *b, size_t n, size_t size)
{
    return n == 0 || memcmp(a, b, n * size) == 0;
}

bool pl__replay_same(const pl__replay *a, const pl__replay *b)
{
    bool numbers = a->seed == b->seed && a->steps == b->steps && a->events == b->events &&
                   a->poll_cost_ns == b->poll_cost_ns && a->rotation_off == b->rotation_off &&
                   a->time_limit_ns == b->time_limit_ns &&
                   a->has_hash == b->has_hash &&
                   (!a->has_hash || a->hash == b->hash) && a->truncated == b->truncated &&
                   a->has_knobs == b->has_knobs &&
                   (!a->has_knobs || pl__dec_knobs_equal(&a->knobs, &b->knobs));
    bool texts = same_text(a->pollen_version, b->pollen_version) &&
                 same_text(a->build, b->build) && same_text(a->scenario, b->scenario) &&
                 same_text(a->strategy, b->strategy) && same_text(a->finding, b->finding) &&
                 same_text(a->message, b->message);
    bool arrays = a->checkpoints_len == b->checkpoints_len &&
                  (a->checkpoints_len == 0 || a->checkpoint_events == b->checkpoint_events) &&
                  same_array(a->checkpoints, b->checkpoints, a->checkpoints_len,
                             sizeof *a->checkpoints) &&
                  a->decisions_len == b->decisions_len &&
                  same_array(a->decisions, b->decisions, a->decisions_len,
                             sizeof *a->decisions);
    return numbers && texts && arrays;
}
