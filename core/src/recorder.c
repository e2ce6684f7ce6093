/* core/src/recorder.c: the flight recorder's ring, and its outputs.
 *
 * The text lines follow the simulator's timeline (`pollen replay FILE
 * --trace`): event number where the simulator prints its step, time in
 * ms, kind, task#id, then the arguments with the timeline's labels, so a
 * production incident reads like a simulated schedule. One formatter,
 * by hand (snprintf is not async-signal-safe), serves the stdio writer
 * and the signal-safe one, so both write the same lines.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "pollen/dump.h"
#include "recorder.h"

int pl__recorder_create(pl_executor *ex, uint32_t events)
{
    PL_ASSERT(events > 0);
    /* The capacity is a uint32_t power of two, so at most 2^31, and the
     * ring's bytes must fit a size_t (a 32-bit one may not hold them). */
    if (events > (UINT32_C(1) << 31)) {
        return PL_EINVAL;
    }
    uint32_t cap = 1;
    while (cap < events) {
        cap *= 2;
    }
#if SIZE_MAX <= UINT32_MAX /* 2^31 records of 16 bytes fit a 64-bit size_t */
    if (cap > SIZE_MAX / sizeof(pl__rec_event)) {
        return PL_EINVAL;
    }
#endif
    pl__recorder *r = &ex->recorder;
    r->ring = pl_alloc(ex, (size_t)cap * sizeof *r->ring);
    if (r->ring == NULL) {
        return PL_ENOMEM;
    }
    r->at = r->ring;
    r->end = r->ring + cap;
    r->laps = 0;
    r->clock_ns = PL_TIME_NEVER; /* the first record is dated */
    ex->rec = r;
    return 0;
}

void pl__recorder_destroy(pl_executor *ex)
{
    pl__recorder *r = ex->rec;
    if (r == NULL) {
        return;
    }
    pl_free(ex, r->ring, (size_t)(r->end - r->ring) * sizeof *r->ring);
    ex->rec = NULL;
}

static const char *const kind_names[PL__REC_KINDS] = {
    [PL__REC_SPAWN] = "spawn",           [PL__REC_PENDING] = "pending",
    [PL__REC_READY] = "ready",           [PL__REC_WAKE] = "wake",
    [PL__REC_TIMER_FIRE] = "timer_fire", [PL__REC_IO_READY] = "io_ready",
    [PL__REC_PROBE] = "probe",
};

/* The timeline's labels of a and b (sim/src/trace.c's arg_labels), and
 * whether a value names a task. NULL: not printed. */
typedef struct rec_label {
    const char *a;
    const char *b;
    bool a_task;
    bool b_task;
} rec_label;

static rec_label label_of(const char *kind)
{
    uint32_t k = 0;
    while (k < PL__REC_KINDS && kind_names[k] != kind) {
        k++;
    }
    switch (k) {
    case PL__REC_SPAWN:
        return (rec_label){"parent", NULL, true, false};
    case PL__REC_PENDING:
    case PL__REC_READY:
    case PL__REC_PROBE:
        return (rec_label){"poll", NULL, false, false};
    case PL__REC_WAKE:
        return (rec_label){NULL, "by", false, true};
    case PL__REC_TIMER_FIRE:
        return (rec_label){"timer", "late_ns", false, false};
    case PL__REC_IO_READY:
        return (rec_label){"source", "bits", false, false};
    default:
        return (rec_label){NULL, NULL, false, false};
    }
}

static uint64_t capacity(const pl__recorder *r) { return (uint64_t)(r->end - r->ring); }

/* How many records were written. */
static uint64_t written(const pl__recorder *r)
{
    return r->laps * capacity(r) + (uint64_t)(r->at - r->ring);
}

/* The records still in the ring: the latest min(written, capacity). */
static uint64_t first_kept(const pl__recorder *r)
{
    uint64_t n = written(r);
    return n > capacity(r) ? n - capacity(r) : 0;
}

static uint64_t rec_a(const pl__rec_event *e) { return e->lo | (uint64_t)e->hi << 32; }

/* ---- Records to events ---------------------------------------------------
 * Every reader walks the kept records through one cursor, which turns
 * them into the public events: a clock record dates what follows and is
 * no event, a MORE record is its predecessor's b, a poll record that
 * woke a task is that wake and then the poll's result (both numbered by
 * the record). Records before the oldest kept clock record have no time
 * (-1): their date was overwritten. */

typedef struct rec_cursor {
    const pl__recorder *r;
    uint64_t i;   /* the next record to read */
    uint64_t end; /* records written */
    pl_time time; /* the latest clock record's, -1 before any */
} rec_cursor;

static rec_cursor cursor_at_oldest(const pl__recorder *r)
{
    return (rec_cursor){r, first_kept(r), written(r), -1};
}

static const pl__rec_event *record_at(const pl__recorder *r, uint64_t i)
{
    return &r->ring[i % capacity(r)];
}

/* The events of the record at the cursor (0, 1 or 2 into out), and
 * moves past it and its MORE record. */
static size_t cursor_next(rec_cursor *c, pl_recorder_event out[2])
{
    const pl__rec_event *e = record_at(c->r, c->i);
    uint64_t seq = ++c->i;
    if (e->kind == PL__REC_CLOCK) {
        c->time = (pl_time)rec_a(e);
        return 0;
    }
    if (e->kind >= PL__REC_KINDS || kind_names[e->kind] == NULL) {
        return 0; /* a MORE whose record was overwritten */
    }
    pl_recorder_event ev = {seq, c->time, kind_names[e->kind], e->task, 0, rec_a(e), 0};
    if (e->kind == PL__REC_WAKE) {
        ev.a = 0;
        ev.b = rec_a(e); /* by, as the timeline labels it */
    } else if (e->kind == PL__REC_TIMER_FIRE || e->kind == PL__REC_IO_READY) {
        if (c->i < c->end && record_at(c->r, c->i)->kind == PL__REC_MORE) {
            ev.b = rec_a(record_at(c->r, c->i++));
        }
    } else if (e->kind == PL__REC_PENDING || e->kind == PL__REC_READY) {
        ev.a = e->lo;
        if (e->hi != 0) { /* the task it woke, just before */
            out[0] = (pl_recorder_event){seq, c->time, kind_names[PL__REC_WAKE], e->hi, 0, 0,
                                         e->task};
            out[1] = ev;
            return 2;
        }
    }
    out[0] = ev;
    return 1;
}

static size_t events_kept(const pl__recorder *r)
{
    size_t n = 0;
    pl_recorder_event ev[2];
    for (rec_cursor c = cursor_at_oldest(r); c.i < c.end;) {
        n += cursor_next(&c, ev);
    }
    return n;
}

size_t pl_executor_recorder_events(const pl_executor *ex, pl_recorder_event *out, size_t max)
{
    const pl__recorder *r = ex->rec;
    if (r == NULL) {
        return 0;
    }
    size_t total = events_kept(r);
    size_t skip = total > max ? total - max : 0;
    size_t n = 0;
    pl_recorder_event ev[2];
    for (rec_cursor c = cursor_at_oldest(r); c.i < c.end;) {
        size_t got = cursor_next(&c, ev);
        for (size_t k = 0; k < got; k++) {
            if (skip > 0) {
                skip--;
            } else {
                out[n++] = ev[k];
            }
        }
    }
    return n;
}

void pl__recorder_write_json(const pl_executor *ex, FILE *out)
{
    const char *sep = "";
    pl_recorder_event ev[2];
    fputc('[', out);
    for (rec_cursor c = cursor_at_oldest(ex->rec); c.i < c.end;) {
        size_t got = cursor_next(&c, ev);
        for (size_t k = 0; k < got; k++) {
            fprintf(out,
                    "%s{\"seq\":%" PRIu64 ",\"time_ns\":%" PRId64 ",\"event\":\"%s\","
                    "\"task_id\":%" PRIu32 ",\"a\":%" PRIu64 ",\"b\":%" PRIu64 "}",
                    sep, ev[k].seq, ev[k].time_ns, ev[k].kind, ev[k].task, ev[k].a, ev[k].b);
            sep = ",";
        }
    }
    fputc(']', out);
}

/* ---- A text line, formatted by hand ------------------------------------------
 * One formatter for both writers, so the dump's tail and a crash
 * handler's output are the same lines. */

/* A line under construction on the stack. */
typedef struct line_buf {
    char text[160];
    size_t len;
} line_buf;

static void put_str(line_buf *l, const char *s)
{
    while (*s != '\0' && l->len < sizeof l->text) {
        l->text[l->len++] = *s++;
    }
}

/* Decimal, right-aligned in `width` columns (0: as long as it is). */
static void put_u64(line_buf *l, uint64_t v, size_t width)
{
    char digits[24];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (size_t i = n; i < width && l->len < sizeof l->text; i++) {
        l->text[l->len++] = ' ';
    }
    while (n > 0 && l->len < sizeof l->text) {
        l->text[l->len++] = digits[--n];
    }
}

/* Spaces up to column `from + width` (left alignment, as %-Ns). */
static void pad_to(line_buf *l, size_t from, size_t width)
{
    while (l->len < from + width && l->len < sizeof l->text) {
        l->text[l->len++] = ' ';
    }
}

/* A task argument is #id, or - for none (id 0). */
static void put_arg(line_buf *l, const char *label, uint64_t v, bool is_task)
{
    put_str(l, " ");
    put_str(l, label);
    if (is_task && v == 0) {
        put_str(l, "=-");
        return;
    }
    put_str(l, is_task ? "=#" : "=");
    put_u64(l, v, 0);
}

/* The time column: ms with three decimals, or ? where the record's
 * clock record was overwritten. */
static void put_time(line_buf *l, pl_time time_ns)
{
    if (time_ns < 0) {
        put_str(l, "     ?.???ms ");
        return;
    }
    uint64_t t = (uint64_t)time_ns;
    put_u64(l, t / PL_MS, 6);
    put_str(l, ".");
    uint64_t us = (t % PL_MS) / PL_US;
    put_str(l, us < 100 ? (us < 10 ? "00" : "0") : "");
    put_u64(l, us, 0);
    put_str(l, "ms ");
}

static void format_event(line_buf *l, const pl_recorder_event *e)
{
    l->len = 0;
    put_u64(l, e->seq, 8);
    put_str(l, " ");
    put_time(l, e->time_ns);
    size_t column = l->len;
    put_str(l, e->kind);
    pad_to(l, column, 12);
    put_str(l, " task#");
    column = l->len;
    put_u64(l, e->task, 0);
    pad_to(l, column, 7);
    rec_label lb = label_of(e->kind);
    if (lb.a != NULL) {
        put_arg(l, lb.a, e->a, lb.a_task);
    }
    if (lb.b != NULL) {
        put_arg(l, lb.b, e->b, lb.b_task);
    }
    put_str(l, "\n");
}

/* ---- The two writers: stdio (a dump's tail), write(2) (a crash handler) ---- */

void pl__recorder_write_text(const pl_executor *ex, FILE *out, const char *indent)
{
    const pl__recorder *r = ex->rec;
    uint64_t from = first_kept(r);
    if (from > 0) {
        fprintf(out, "%s(%" PRIu64 " earlier records not kept)\n", indent, from);
    }
    line_buf l;
    pl_recorder_event ev[2];
    for (rec_cursor c = cursor_at_oldest(r); c.i < c.end;) {
        size_t got = cursor_next(&c, ev);
        for (size_t k = 0; k < got; k++) {
            format_event(&l, &ev[k]);
            fputs(indent, out);
            fwrite(l.text, 1, l.len, out);
        }
    }
}

/* A signal landing in a handler's write(2) interrupts it before it wrote
 * anything: that write is retried, any other failure ends the output. */
static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return PL_EIO;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int pl_executor_recorder_write(const pl_executor *ex, int fd)
{
    const pl__recorder *r = ex->rec;
    if (r == NULL) {
        return PL_EIO;
    }
    int saved = errno; /* a signal handler must leave errno as it found it */
    line_buf l;
    pl_recorder_event ev[2];
    int rc = 0;
    for (rec_cursor c = cursor_at_oldest(r); c.i < c.end && rc == 0;) {
        size_t got = cursor_next(&c, ev);
        for (size_t k = 0; k < got && rc == 0; k++) {
            format_event(&l, &ev[k]);
            rc = write_all(fd, l.text, l.len);
        }
    }
    errno = saved;
    return rc;
}
