/* sim/src/trace.c: event encoding, running hash, log, checkpoints and
 * the text/Chrome outputs. */
#include "trace.h"

#include <assert.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "decide.h"
#include "grow.h"
#include "sim_assert.h"
#include "trace_ring.h"
#include "pollen/error.h"

/* 4 KiB of encoded events (PL__TRACE_BUF_BYTES): large enough that
 * XXH3_64bits_update runs on long inputs (its fast path), small enough to
 * stay in L1. */

struct pl__trace {
    pl__trace_hot hot;     /* first: the inline append in trace.h reads it */
    XXH3_state_t *xxh;     /* hash of everything flushed from hot.buf */
    pl__trace_options opts;
    pl__trace_rec *log;    /* keep_log: events, log_len of them */
    size_t log_len;
    size_t log_cap;
    bool log_truncated;
    uint64_t *cps;         /* checkpoints: hashes, cps_len of them */
    size_t cps_len;
    size_t cps_cap;
    bool cps_stopped;      /* growth failed: cps is a valid prefix */
    char *texts;           /* keep_log: the texts of USER events */
    size_t texts_len;
    size_t texts_cap;
    pl__trace_ring *ring;  /* every event is copied here too; NULL: none */
};

static const char *const kind_names[PL__EV__COUNT] = {
    "spawn",       "poll",       "pending",    "ready",      "wake",     "wake_stale",
    "wake_dedup",  "waker_clone", "waker_drop", "timer_arm", "timer_fire", "io_ready",
    "decision",    "complete",   "drop",       "finding",    "clock",      "probe",
    "event",       "node",       "thread",
};

const char *pl__trace_kind_name(uint32_t kind)
{
    return kind < PL__EV__COUNT ? kind_names[kind] : "?";
}

/* The hashed-event count at which the next event needs pl__trace_after_: every
 * event with the log on, every checkpoint's worth without, never else. */
static void update_slow_at(pl__trace *t)
{
    t->hot.keep_log = t->opts.keep_log || t->ring != NULL;
    if (t->hot.keep_log) {
        t->hot.slow_at = t->hot.count + 1;
    } else if (t->opts.checkpoints) {
        uint64_t n = PL__TRACE_CHECKPOINT_EVENTS;
        t->hot.slow_at = (t->hot.count / n + 1) * n;
    } else {
        t->hot.slow_at = UINT64_MAX;
    }
}

/* Life cycle ------------------------------------------------------------ */

int pl__trace_create(pl__trace **out, const pl__trace_options *opts)
{
    *out = NULL;
    /* Not calloc: the 4 KiB of hot.buf are written before they are read
     * (hot.used counts them), and zeroing them was a sixth of what a
     * short run (the Handle lesson's) spends outside its polls. */
    pl__trace *t = malloc(sizeof(*t));
    if (t == NULL) {
        return PL_ENOMEM;
    }
    size_t after_hot = offsetof(pl__trace, hot) + sizeof(t->hot);
    memset(t, 0, offsetof(pl__trace, hot.buf));
    memset((char *)t + after_hot, 0, sizeof(*t) - after_hot);
    /* XXH3_createState returns 64-byte aligned memory, which the state
     * requires and a plain malloc'd struct would not guarantee. */
    t->xxh = XXH3_createState();
    if (t->xxh == NULL) {
        free(t);
        return PL_ENOMEM;
    }
    if (opts != NULL) {
        t->opts = *opts;
    }
    if (t->opts.log_max == 0) {
        t->opts.log_max = PL__TRACE_LOG_MAX_DEFAULT;
    }
    pl__trace_reset(t);
    *out = t;
    return 0;
}

void pl__trace_destroy(pl__trace *t)
{
    if (t == NULL) {
        return;
    }
    XXH3_freeState(t->xxh);
    free(t->log);
    free(t->cps);
    free(t->texts);
    free(t);
}

void pl__trace_reset(pl__trace *t)
{
    XXH3_64bits_reset(t->xxh);
    t->hot.used = 0;
    t->hot.count = 0;
    t->log_len = 0;
    t->texts_len = 0;
    t->log_truncated = false;
    t->cps_len = 0;
    t->cps_stopped = false;
    update_slow_at(t);
}

/* Appending ------------------------------------------------------------- */

static __attribute__((noinline)) void flush(pl__trace *t)
{
    if (t->hot.used > 0) {
        XXH3_64bits_update(t->xxh, t->hot.buf, t->hot.used);
        t->hot.used = 0;
    }
}

/* One more element in *arr, up to `max`; false when full or out of memory. */
static bool grow(void **arr, size_t *cap, size_t size, size_t max)
{
    return pl__grow_append(arr, cap, *cap + 1, size, 256, max) == 0;
}

static void log_append(pl__trace *t, const pl__trace_rec *r)
{
    if (t->log_len == t->log_cap &&
        !grow((void **)&t->log, &t->log_cap, sizeof(*t->log), t->opts.log_max)) {
        t->log_truncated = true;
        return;
    }
    t->log[t->log_len++] = *r;
}

static void checkpoint(pl__trace *t)
{
    if (t->cps_stopped) {
        return;
    }
    if (t->cps_len == t->cps_cap &&
        !grow((void **)&t->cps, &t->cps_cap, sizeof(*t->cps), SIZE_MAX / sizeof(*t->cps))) {
        /* A gap would shift every later window; stop instead. */
        t->cps_stopped = true;
        return;
    }
    t->cps[t->cps_len++] = pl__trace_hash(t);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p) { return get32(p) | (uint64_t)get32(p + 4) << 32; }

/* The rare work of an event: the inline append encoded it at the end of
 * the buffer, and the log, the ring and a checkpoint read it back from
 * there (the checkpoint's hash flushes the buffer with it). */
void pl__trace_after_(pl__trace *t, uint64_t step, pl_time time_ns)
{
    if (t->hot.count == t->hot.slow_at) {
        const uint8_t *p = t->hot.buf + t->hot.used - PL__TRACE_EVENT_BYTES;
        pl__trace_rec r = {step, time_ns, get32(p), get32(p + 4), get64(p + 8), get64(p + 16)};
        if (t->opts.keep_log) {
            log_append(t, &r);
        }
        if (t->ring != NULL) {
            pl__ring_event(t->ring, &r);
        }
        if (t->opts.checkpoints && t->hot.count % PL__TRACE_CHECKPOINT_EVENTS == 0) {
            checkpoint(t);
        }
        update_slow_at(t);
    }
    if (t->hot.used > PL__TRACE_BUF_BYTES - PL__TRACE_EVENT_BYTES) {
        flush(t);
    }
}

bool pl__trace_kind_hashed(uint32_t kind)
{
    return kind != PL__EV_POLL && kind != PL__EV_DECISION && kind != PL__EV_USER;
}

void pl__trace_log_only_(pl__trace *t, uint64_t step, pl_time time_ns, pl__trace_kind kind,
                         uint32_t task, uint64_t a, uint64_t b)
{
    pl__trace_rec r = {step, time_ns, (uint32_t)kind, task, a, b};
    if (t->opts.keep_log) {
        log_append(t, &r);
    }
    if (t->ring != NULL) {
        pl__ring_event(t->ring, &r);
    }
}

void pl__trace_set_ring(pl__trace *t, pl__trace_ring *ring)
{
    t->ring = ring;
    update_slow_at(t);
}

/* The text goes to the store first; the event points into it. A store
 * that cannot grow drops the event (and says so through truncation)
 * rather than point at nothing. */
void pl__trace_user(pl__trace *t, uint64_t step, pl_time time_ns, uint32_t task,
                    const char *text, size_t len)
{
    len = len < PL_TRACE_EVENT_MAX - 1 ? len : PL_TRACE_EVENT_MAX - 1;
    pl__trace_rec r = {step, time_ns, PL__EV_USER, task, 0, len};
    if (t->ring != NULL) {
        pl__ring_user(t->ring, &r, text, len);
    }
    if (!t->opts.keep_log) {
        return;
    }
    if (pl__grow_append((void **)&t->texts, &t->texts_cap, t->texts_len + len + 1, 1, 4096,
                        PL__TRACE_TEXT_MAX) != 0) {
        t->log_truncated = true;
        return;
    }
    r.a = t->texts_len;
    memcpy(t->texts + t->texts_len, text, len);
    t->texts[t->texts_len + len] = '\0';
    t->texts_len += len + 1;
    log_append(t, &r);
}

const char *pl__trace_texts(const pl__trace *t, size_t *len)
{
    *len = t->texts_len;
    return t->texts;
}

void pl__trace_decision(pl__trace *t, uint64_t step, pl_time time_ns, uint32_t task,
                        uint32_t decision_kind, uint32_t n, uint32_t value)
{
    pl__trace_event(t, step, time_ns, PL__EV_DECISION, task, decision_kind,
                    (uint64_t)n << 32 | value);
}

uint64_t pl__trace_hash(pl__trace *t)
{
    /* Flushing into the live state is equivalent to hashing a copy: XXH3
     * streaming does not depend on how the input was split, and digest
     * leaves the state untouched. It avoids copying ~600 bytes. */
    flush(t);
    return XXH3_64bits_digest(t->xxh);
}

uint64_t pl__trace_count(const pl__trace *t)
{
    return t->hot.count;
}

const pl__trace_rec *pl__trace_log(const pl__trace *t, size_t *len, bool *truncated)
{
    *len = t->log_len;
    if (truncated != NULL) {
        *truncated = t->log_truncated;
    }
    return t->log_len > 0 ? t->log : NULL;
}

const uint64_t *pl__trace_checkpoints(const pl__trace *t, size_t *len)
{
    *len = t->cps_len;
    return t->cps_len > 0 ? t->cps : NULL;
}

/* Comparing ------------------------------------------------------------- */

static bool rec_equal(const pl__trace_rec *x, const pl__trace_rec *y)
{
    return x->step == y->step && x->time_ns == y->time_ns && x->kind == y->kind &&
           x->task == y->task && x->a == y->a && x->b == y->b;
}

size_t pl__trace_first_diff(const pl__trace_rec *a, size_t na, const pl__trace_rec *b,
                            size_t nb)
{
    size_t common = na < nb ? na : nb;
    for (size_t i = 0; i < common; i++) {
        if (!rec_equal(&a[i], &b[i])) {
            return i;
        }
    }
    return na == nb ? SIZE_MAX : common;
}

size_t pl__trace_first_diff_window(const uint64_t *a, size_t na, const uint64_t *b,
                                   size_t nb)
{
    size_t common = na < nb ? na : nb;
    for (size_t i = 0; i < common; i++) {
        if (a[i] != b[i]) {
            return i;
        }
    }
    return na == nb ? SIZE_MAX : common;
}

/* Text timeline --------------------------------------------------------- */

/* How the timeline labels a and b per kind. A NULL label prints the
 * value as "a="/"b=" only when it is nonzero; `task` marks arguments
 * that hold a task id and print as names. */
typedef struct arg_label {
    const char *a;
    const char *b;
    bool a_task;
    bool b_task;
} arg_label;

static const arg_label arg_labels[PL__EV__COUNT] = {
    [PL__EV_SPAWN] = {"parent", NULL, true, false},
    [PL__EV_POLL] = {"poll", "gen", false, false},
    [PL__EV_PENDING] = {"poll", "gen", false, false},
    [PL__EV_READY] = {"poll", "gen", false, false},
    [PL__EV_WAKE] = {"gen", "by", false, true},
    [PL__EV_WAKE_STALE] = {"gen", "by", false, true},
    [PL__EV_WAKE_DEDUP] = {"gen", "by", false, true},
    [PL__EV_WAKER_CLONE] = {"gen", "clones", false, false},
    [PL__EV_WAKER_DROP] = {"gen", "clones", false, false},
    [PL__EV_TIMER_ARM] = {"timer", "fire_ns", false, false},
    [PL__EV_TIMER_FIRE] = {"timer", "now_ns", false, false},
    [PL__EV_IO_READY] = {"source", "bits", false, false},
    [PL__EV_DECISION] = {NULL, NULL, false, false},
    [PL__EV_COMPLETE] = {NULL, NULL, false, false},
    [PL__EV_DROP] = {"cancelled", NULL, false, false},
    [PL__EV_FINDING] = {"code", "detail", false, false},
    [PL__EV_CLOCK] = {"now_ns", "was_ns", false, false},
    [PL__EV_PROBE] = {"poll", "gen", false, false},
    [PL__EV_USER] = {NULL, NULL, false, false},
    [PL__EV_NODE] = {"node", "what", false, false},
    [PL__EV_THREAD] = {"thread", "what", false, false},
};

/* Writes a task's display name into buf (valid until the next call). */
static const char *task_label(char *buf, size_t len, uint64_t task, const pl__trace_namer *nm)
{
    if (task == PL__TRACE_NO_TASK || task > UINT32_MAX) {
        return "-";
    }
    /* Tasks often share a name (workers spawned in a loop): the id keeps
     * them apart. */
    const char *name = nm->task_name != NULL ? nm->task_name(nm->ud, (uint32_t)task) : NULL;
    snprintf(buf, len, "%s#%" PRIu64, name != NULL ? name : "task", task);
    return buf;
}

static void write_arg(FILE *f, const char *label, bool is_task, const char *fallback,
                      uint64_t v, const pl__trace_namer *nm)
{
    char buf[96];
    if (label == NULL) {
        if (v != 0) {
            fprintf(f, " %s=%" PRIu64, fallback, v);
        }
        return;
    }
    if (is_task) {
        fprintf(f, " %s=%s", label, task_label(buf, sizeof(buf), v, nm));
        return;
    }
    fprintf(f, " %s=%" PRIu64, label, v);
}

/* A USER event's text, or a placeholder when the namer has none. */
static const char *user_text(const pl__trace_rec *e, const pl__trace_namer *nm, size_t *len)
{
    const char *text = nm->user_text != NULL ? nm->user_text(nm->ud, e, len) : NULL;
    if (text == NULL) {
        static const char none[] = "(text not kept)";
        *len = sizeof none - 1;
        return none;
    }
    return text;
}

const char *pl__trace_store_text(void *ud, const pl__trace_rec *e, size_t *len)
{
    const pl__trace_store_namer *sn = ud;
    if (sn->texts == NULL || e->a >= sn->texts_len || e->b > sn->texts_len - e->a) {
        return NULL;
    }
    *len = (size_t)e->b;
    return sn->texts + e->a;
}

const char *pl__trace_store_task(void *ud, uint32_t task)
{
    const pl__trace_store_namer *sn = ud;
    return sn->task_name != NULL ? sn->task_name(sn->ud, task) : NULL;
}

const char *pl__trace_store_spawn_site(void *ud, uint32_t task, const char **func)
{
    const pl__trace_store_namer *sn = ud;
    *func = NULL;
    return sn->spawn_site != NULL ? sn->spawn_site(sn->ud, task, func) : NULL;
}

/* The spawn site of a SPAWN event's task, or NULL (*func NULL too). */
static const char *spawn_site(const pl__trace_rec *e, const pl__trace_namer *nm, const char **func)
{
    *func = NULL;
    if (nm->spawn_site == NULL || e->task == PL__TRACE_NO_TASK) {
        return NULL;
    }
    const char *where = nm->spawn_site(nm->ud, e->task, func);
    if (where == NULL) {
        *func = NULL;
    }
    return where;
}

/* Formats a duration of `mag` ns (negative when `neg`) as
 * "<whole>.<3 decimals>" of unit_ns (frac_div = unit_ns / 1000). Integer
 * only: output must not depend on floating-point formatting. */
static const char *fmt_fixed_mag(char *buf, size_t len, bool neg, uint64_t mag,
                                 int64_t unit_ns, int64_t frac_div)
{
    uint64_t whole = mag / (uint64_t)unit_ns;
    uint64_t frac = (mag % (uint64_t)unit_ns) / (uint64_t)frac_div;
    snprintf(buf, len, "%s%" PRIu64 ".%03" PRIu64, neg ? "-" : "", whole, frac);
    return buf;
}

static const char *fmt_fixed(char *buf, size_t len, int64_t ns, int64_t unit_ns,
                             int64_t frac_div)
{
    uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    return fmt_fixed_mag(buf, len, ns < 0, mag, unit_ns, frac_div);
}

/* The name of the decision kind packed in a DECISION event. */
static const char *decision_name(const pl__trace_rec *e)
{
    const char *name = e->a <= UINT32_MAX ? pl__dec_kind_name((uint32_t)e->a) : NULL;
    return name != NULL ? name : "?";
}

static const pl__trace_namer no_namer = {NULL, NULL, NULL, NULL};

void pl__trace_write_args(FILE *f, const pl__trace_rec *e, const pl__trace_namer *nm)
{
    nm = nm != NULL ? nm : &no_namer;
    if (e->kind == PL__EV_USER) {
        size_t len = 0;
        const char *text = user_text(e, nm, &len);
        fprintf(f, " %.*s", (int)len, text);
    } else if (e->kind == PL__EV_DECISION) {
        fprintf(f, " %s n=%" PRIu64 " value=%" PRIu64, decision_name(e), e->b >> 32,
                e->b & UINT32_MAX);
    } else if (e->kind == PL__EV_THREAD) {
        static const char *const what[] = {"spawned by", "runs after", "blocks: wait", "exits",
                                           "ready: by deadline"};
        uint64_t w = e->b >> 32;
        fprintf(f, " #%" PRIu64 " %s", e->a, w < 5 ? what[w] : "?");
        if (w != PL__THREAD_EV_EXIT) {
            fprintf(f, " %s%" PRIu64, w <= PL__THREAD_EV_SWITCH ? "#" : "", e->b & UINT32_MAX);
        } else if ((e->b & UINT32_MAX) != 0) {
            fprintf(f, " (killed: its node crashed)");
        }
    } else if (e->kind < PL__EV__COUNT) {
        const arg_label *l = &arg_labels[e->kind];
        write_arg(f, l->a, l->a_task, "a", e->a, nm);
        write_arg(f, l->b, l->b_task, "b", e->b, nm);
        const char *func;
        const char *where = e->kind == PL__EV_SPAWN ? spawn_site(e, nm, &func) : NULL;
        if (where != NULL) {
            fprintf(f, " at %s%s%s", where, func != NULL ? " in " : "", func != NULL ? func : "");
        }
    } else {
        fprintf(f, " a=%" PRIu64 " b=%" PRIu64, e->a, e->b);
    }
}

static void write_text_line(FILE *f, const pl__trace_rec *e, const pl__trace_namer *nm)
{
    char buf[96];
    char time[32];
    fmt_fixed(time, sizeof(time), e->time_ns, PL_MS, PL_US);
    fprintf(f, "%8" PRIu64 " %10s", e->step, time);
    fprintf(f, "ms %-12s %-12s", pl__trace_kind_name(e->kind),
            task_label(buf, sizeof(buf), e->task, nm));
    pl__trace_write_args(f, e, nm);
    fputc('\n', f);
}

int pl__trace_write_text_ex(FILE *f, const pl__trace_rec *ev, size_t n,
                            const pl__trace_namer *nm)
{
    nm = nm != NULL ? nm : &no_namer;
    for (size_t i = 0; i < n; i++) {
        write_text_line(f, &ev[i], nm);
    }
    return ferror(f) ? PL_EIO : 0;
}

int pl__trace_write_text(FILE *f, const pl__trace_rec *ev, size_t n,
                         pl__trace_task_name_fn task_name, void *ud)
{
    pl__trace_namer nm = {task_name, NULL, ud, NULL};
    return pl__trace_write_text_ex(f, ev, n, &nm);
}

/* Chrome trace-event JSON ---------------------------------------------- */

static void json_string_n(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; len > 0 && *p != '\0'; p++, len--) {
        if (*p == '"' || *p == '\\') {
            fputc('\\', f);
            fputc(*p, f);
        } else if (*p < 0x20 || *p >= 0x7f) {
            /* Also escapes non-ASCII bytes: names are not known to be
             * UTF-8, and invalid UTF-8 would make the file invalid JSON. */
            fprintf(f, "\\u%04x", (unsigned)*p);
        } else {
            fputc(*p, f);
        }
    }
    fputc('"', f);
}

static void json_string(FILE *f, const char *s) { json_string_n(f, s, SIZE_MAX); }

/* The writer's state: the separator and the time map (trace.h). */
typedef struct chrome_out {
    FILE *f;
    bool first;
    bool any;        /* an event was placed: `at` holds */
    int64_t at;      /* chrome_ns of the latest event */
    const pl__trace_namer *nm;
} chrome_out;

/* chrome_ns of the next event of the log (called once per event, in order). */
static int64_t chrome_place(chrome_out *c, const pl__trace_rec *e)
{
    int64_t next = c->any && c->at < INT64_MAX ? c->at + 1 : c->at;
    c->at = !c->any || e->time_ns > next ? e->time_ns : next;
    c->any = true;
    return c->at;
}

/* Starts one JSON object: separator, name, ph, ts, pid, tid. */
static void chrome_begin(chrome_out *c, const char *name, size_t name_len, const char *ph,
                         int64_t ts_ns, uint32_t task)
{
    FILE *f = c->f;
    fputs(c->first ? "\n" : ",\n", f);
    c->first = false;
    fputs("{\"name\":", f);
    json_string_n(f, name, name_len);
    char ts[32];
    fmt_fixed(ts, sizeof(ts), ts_ns, PL_US, 1);
    fprintf(f, ",\"ph\":\"%s\",\"ts\":%s,\"pid\":1,\"tid\":%" PRIu32, ph, ts, task);
}

/* A SPAWN's site, as args of its instant (the text timeline's " at"). */
static void chrome_spawn_site(chrome_out *c, const pl__trace_rec *e)
{
    const char *func;
    const char *where = e->kind == PL__EV_SPAWN ? spawn_site(e, c->nm, &func) : NULL;
    if (where != NULL) {
        fputs(",\"site\":", c->f);
        json_string(c->f, where);
        if (func != NULL) {
            fputs(",\"function\":", c->f);
            json_string(c->f, func);
        }
    }
}

static void chrome_instant(chrome_out *c, const pl__trace_rec *e, int64_t at)
{
    FILE *f = c->f;
    if (e->kind == PL__EV_DECISION) {
        chrome_begin(c, "decision", SIZE_MAX, "i", at, e->task);
        fputs(",\"s\":\"t\",\"args\":{\"kind\":", f);
        json_string(f, decision_name(e));
        fprintf(f, ",\"n\":%" PRIu64 ",\"value\":%" PRIu64, e->b >> 32, e->b & UINT32_MAX);
    } else if (e->kind == PL__EV_USER) {
        /* Named by its text: what Perfetto shows on the track. */
        size_t len = 0;
        const char *text = user_text(e, c->nm, &len);
        chrome_begin(c, text, len, "i", at, e->task);
        fputs(",\"s\":\"t\",\"cat\":\"user\",\"args\":{\"text\":", f);
        json_string_n(f, text, len);
    } else {
        /* The same labels as the text timeline, so both read alike. */
        const arg_label *l = e->kind < PL__EV__COUNT ? &arg_labels[e->kind] : NULL;
        const char *la = l != NULL && l->a != NULL ? l->a : "a";
        const char *lb = l != NULL && l->b != NULL ? l->b : "b";
        chrome_begin(c, pl__trace_kind_name(e->kind), SIZE_MAX, "i", at, e->task);
        fprintf(f, ",\"s\":\"t\",\"args\":{\"%s\":%" PRIu64 ",\"%s\":%" PRIu64, la, e->a, lb,
                e->b);
        chrome_spawn_site(c, e);
    }
    fprintf(f, ",\"step\":%" PRIu64 ",\"time_ns\":%" PRId64 "}}", e->step, (int64_t)e->time_ns);
}

static void chrome_poll(chrome_out *c, const pl__trace_rec *begin, int64_t begin_at,
                        const pl__trace_rec *end, int64_t end_at)
{
    chrome_begin(c, begin->kind == PL__EV_PROBE ? "probe" : "poll", SIZE_MAX, "X", begin_at,
                 begin->task);
    /* chrome_ns only grows, and end comes after begin in the log. */
    uint64_t dur_ns = (uint64_t)end_at - (uint64_t)begin_at;
    char dur[32];
    fmt_fixed_mag(dur, sizeof(dur), false, dur_ns, PL_US, 1);
    fprintf(c->f,
            ",\"dur\":%s,\"args\":{\"poll\":%" PRIu64 ",\"result\":\"%s\",\"step\":%" PRIu64
            ",\"time_ns\":%" PRId64 "}}",
            dur, begin->a, end->kind == PL__EV_READY ? "ready" : "pending", begin->step,
            (int64_t)begin->time_ns);
}

static void chrome_thread_name(chrome_out *c, const pl__trace_rec *e)
{
    char buf[96];
    fputs(c->first ? "\n" : ",\n", c->f);
    c->first = false;
    fprintf(c->f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"ts\":0,\"pid\":1,\"tid\":%" PRIu32
                  ",\"args\":{\"name\":",
            e->task);
    json_string(c->f, task_label(buf, sizeof(buf), e->task, c->nm));
    fputs("}}", c->f);
}

int pl__trace_write_chrome_ex(FILE *f, const pl__trace_rec *ev, size_t n,
                              const pl__trace_namer *nm)
{
    chrome_out c = {f, true, false, 0, nm != NULL ? nm : &no_namer};
    size_t open = SIZE_MAX; /* the POLL waiting for its PENDING/READY */
    int64_t open_at = 0;
    fputc('[', f);
    for (size_t i = 0; i < n; i++) {
        const pl__trace_rec *e = &ev[i];
        int64_t at = chrome_place(&c, e);
        if (e->kind == PL__EV_SPAWN) {
            chrome_thread_name(&c, e);
        }
        bool ends_poll = e->kind == PL__EV_PENDING || e->kind == PL__EV_READY;
        if (ends_poll && open != SIZE_MAX && ev[open].task == e->task) {
            chrome_poll(&c, &ev[open], open_at, e, at);
            open = SIZE_MAX;
            continue;
        }
        if (e->kind == PL__EV_POLL || e->kind == PL__EV_PROBE) {
            /* The executor never nests polls; an unclosed one (a crash
             * mid-poll, a truncated log) is still shown, as an instant. */
            if (open != SIZE_MAX) {
                chrome_instant(&c, &ev[open], open_at);
            }
            open = i;
            open_at = at;
            continue;
        }
        chrome_instant(&c, e, at);
    }
    if (open != SIZE_MAX) {
        chrome_instant(&c, &ev[open], open_at);
    }
    fputs("\n]\n", f);
    return ferror(f) ? PL_EIO : 0;
}

int pl__trace_write_chrome(FILE *f, const pl__trace_rec *ev, size_t n,
                           pl__trace_task_name_fn task_name, void *ud)
{
    pl__trace_namer nm = {task_name, NULL, ud, NULL};
    return pl__trace_write_chrome_ex(f, ev, n, &nm);
}

void pl__trace_check(const pl__trace *t)
{
    PL__SIM_ASSERT(t->hot.used <= PL__TRACE_BUF_BYTES - PL__TRACE_EVENT_BYTES);
    PL__SIM_ASSERT(t->hot.slow_at > t->hot.count);
    PL__SIM_ASSERT(t->log_len <= t->log_cap || t->log_cap == 0);
    PL__SIM_ASSERT(!t->opts.keep_log || t->log_len <= t->opts.log_max);
    PL__SIM_ASSERT(t->texts_len <= t->texts_cap && t->texts_len <= PL__TRACE_TEXT_MAX);
    PL__SIM_ASSERT(t->hot.keep_log == (t->opts.keep_log || t->ring != NULL));
    if (t->opts.checkpoints && !t->cps_stopped) {
        /* One checkpoint per full window of hashed events, none missing. */
        PL__SIM_ASSERT(t->cps_len == t->hot.count / PL__TRACE_CHECKPOINT_EVENTS);
    }
}
