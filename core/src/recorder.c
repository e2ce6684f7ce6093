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
#if SIZE_MAX <= UINT32_MAX /* 2^31 events of 32 bytes fit a 64-bit size_t */
    if (cap > SIZE_MAX / sizeof(pl__rec_event)) {
        return PL_EINVAL;
    }
#endif
    pl__recorder *r = pl_alloc(ex, sizeof *r);
    if (r == NULL) {
        return PL_ENOMEM;
    }
    r->ring = pl_alloc(ex, (size_t)cap * sizeof *r->ring);
    if (r->ring == NULL) {
        pl_free(ex, r, sizeof *r);
        return PL_ENOMEM;
    }
    r->next = 0;
    r->mask = cap - 1;
    ex->rec = r;
    return 0;
}

void pl__recorder_destroy(pl_executor *ex)
{
    pl__recorder *r = ex->rec;
    if (r == NULL) {
        return;
    }
    pl_free(ex, r->ring, ((size_t)r->mask + 1) * sizeof *r->ring);
    pl_free(ex, r, sizeof *r);
    ex->rec = NULL;
}

static const char *const kind_names[PL__REC_KINDS] = {
    [PL__REC_SPAWN] = "spawn",           [PL__REC_PENDING] = "pending",
    [PL__REC_READY] = "ready",           [PL__REC_WAKE] = "wake",
    [PL__REC_TIMER_FIRE] = "timer_fire", [PL__REC_IO_READY] = "io_ready",
    [PL__REC_PROBE] = "probe",
};

const char *pl__rec_kind_name(uint32_t kind)
{
    const char *name = kind < PL__REC_KINDS ? kind_names[kind] : NULL;
    return name != NULL ? name : "?";
}

/* The timeline's labels of a and b (sim/src/trace.c's arg_labels), and
 * whether a value names a task. NULL: printed only when nonzero, as a=. */
typedef struct rec_label {
    const char *a;
    const char *b;
    bool a_task;
    bool b_task;
} rec_label;

static rec_label label_of(uint32_t kind)
{
    switch (kind) {
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

/* The events still in the ring: the latest min(next, capacity). */
static uint64_t first_kept(const pl__recorder *r)
{
    uint64_t cap = (uint64_t)r->mask + 1;
    return r->next > cap ? r->next - cap : 0;
}

size_t pl_executor_recorder_events(const pl_executor *ex, pl_recorder_event *out, size_t max)
{
    const pl__recorder *r = ex->rec;
    if (r == NULL) {
        return 0;
    }
    uint64_t from = first_kept(r);
    if (r->next - from > max) {
        from = r->next - max;
    }
    size_t n = 0;
    for (uint64_t i = from; i < r->next; i++) {
        const pl__rec_event *e = &r->ring[i & r->mask];
        out[n++] = (pl_recorder_event){i + 1, e->time_ns, pl__rec_kind_name(e->kind),
                                       e->task, 0, e->a, e->b};
    }
    return n;
}

void pl__recorder_write_json(const pl_executor *ex, FILE *out)
{
    const pl__recorder *r = ex->rec;
    fputc('[', out);
    for (uint64_t i = first_kept(r); i < r->next; i++) {
        const pl__rec_event *e = &r->ring[i & r->mask];
        fprintf(out,
                "%s{\"seq\":%" PRIu64 ",\"time_ns\":%" PRId64 ",\"event\":\"%s\","
                "\"task_id\":%" PRIu32 ",\"a\":%" PRIu64 ",\"b\":%" PRIu64 "}",
                i == first_kept(r) ? "" : ",", i + 1, e->time_ns, pl__rec_kind_name(e->kind),
                e->task, e->a, e->b);
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

static void format_event(line_buf *l, uint64_t seq, const pl__rec_event *e)
{
    uint64_t t = e->time_ns > 0 ? (uint64_t)e->time_ns : 0;
    l->len = 0;
    put_u64(l, seq, 8);
    put_str(l, " ");
    put_u64(l, t / PL_MS, 6);
    put_str(l, ".");
    uint64_t us = (t % PL_MS) / PL_US;
    put_str(l, us < 100 ? (us < 10 ? "00" : "0") : "");
    put_u64(l, us, 0);
    put_str(l, "ms ");
    size_t column = l->len;
    put_str(l, pl__rec_kind_name(e->kind));
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
        fprintf(out, "%s(%" PRIu64 " earlier events not kept)\n", indent, from);
    }
    line_buf l;
    for (uint64_t i = from; i < r->next; i++) {
        format_event(&l, i + 1, &r->ring[i & r->mask]);
        fputs(indent, out);
        fwrite(l.text, 1, l.len, out);
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
    int rc = 0;
    for (uint64_t i = first_kept(r); i < r->next && rc == 0; i++) {
        format_event(&l, i + 1, &r->ring[i & r->mask]);
        rc = write_all(fd, l.text, l.len);
    }
    errno = saved;
    return rc;
}
