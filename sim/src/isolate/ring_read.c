/* sim/src/isolate/ring_read.c: the crash ring (trace_ring.h) mapped in
 * shared memory, and read once the process that wrote it is gone: its
 * events in order, their names, and the poll the run died in.
 *
 * A child killed mid-write leaves each counter at most one entry behind
 * what it wrote (every entry is stored before its count is bumped), so
 * the counters are trusted and asserted against the ring's sizes. */
#include "ring_read.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "pollen/error.h"
#include "run_record.h"
#include "sim_assert.h"
#include "sim_internal.h"
#include "strategy.h"

pl__trace_ring *pl__ring_map(void)
{
    /* Anonymous pages are committed on first touch: a short run costs
     * the pages it writes. */
    void *p = mmap(NULL, sizeof(pl__trace_ring), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        return NULL;
    }
    pl__trace_ring *r = p;
    pl__ring_reset(r);
    return r;
}

void pl__ring_unmap(pl__trace_ring *r)
{
    if (r != NULL) {
        munmap(r, sizeof *r);
    }
}

/* The ring's slot of event number i (0-based over the run). */
static const pl__trace_rec *ring_ev(const pl__trace_ring *r, uint64_t i)
{
    PL__SIM_ASSERT(i < r->len);
    return &r->ev[i % PL__RING_EVENTS];
}

pl__trace_rec *pl__ring_events(const pl__trace_ring *r, size_t *n, uint64_t *lost)
{
    PL__SIM_ASSERT(r != NULL && n != NULL && lost != NULL);
    uint64_t len = r->len;
    uint64_t kept = len < PL__RING_EVENTS ? len : PL__RING_EVENTS;
    *n = 0;
    *lost = len - kept;
    pl__trace_rec *out = kept > 0 ? malloc((size_t)kept * sizeof *out) : NULL;
    if (out == NULL) {
        return NULL;
    }
    for (uint64_t i = 0; i < kept; i++) {
        out[i] = *ring_ev(r, len - kept + i);
    }
    *n = (size_t)kept;
    return out;
}

static const char *ring_task(void *ud, uint32_t task)
{
    const pl__trace_ring *r = ud;
    const pl__ring_name *slot = &r->names[task % PL__RING_NAMES];
    if (slot->id != task) {
        return NULL;
    }
    /* Written by pl__ring_name_task, which always terminates it. */
    PL__SIM_ASSERT(memchr(slot->name, '\0', sizeof slot->name) != NULL);
    return slot->name;
}

static const char *ring_spawn_site(void *ud, uint32_t task, const char **func)
{
    const pl__trace_ring *r = ud;
    const pl__ring_name *slot = &r->names[task % PL__RING_NAMES];
    bool known = slot->id == task && slot->site[0] != '\0';
    *func = known && slot->func[0] != '\0' ? slot->func : NULL;
    return known ? slot->site : NULL;
}

/* A text the ring has since overwritten is "not kept". */
static const char *ring_text(void *ud, const pl__trace_rec *e, size_t *len)
{
    const pl__trace_ring *r = ud;
    PL__SIM_ASSERT(e->kind == PL__EV_USER);
    const pl__ring_text *slot = &r->text[e->a % PL__RING_TEXTS];
    if (slot->seq != e->a + 1) {
        return NULL;
    }
    /* A kept text's number is below the count of texts written. */
    PL__SIM_ASSERT(e->a < r->texts);
    *len = strnlen(slot->text, sizeof slot->text);
    return slot->text;
}

pl__trace_namer pl__ring_namer(const pl__trace_ring *r)
{
    PL__SIM_ASSERT(r != NULL);
    return (pl__trace_namer){ring_task, ring_text, (void *)r, ring_spawn_site};
}

static bool begins_poll(uint32_t kind) { return kind == PL__EV_POLL || kind == PL__EV_PROBE; }
static bool ends_poll(uint32_t kind) { return kind == PL__EV_PENDING || kind == PL__EV_READY; }

bool pl__ring_position(const pl__trace_ring *r, pl_finding *f)
{
    PL__SIM_ASSERT(r != NULL && f != NULL);
    uint64_t len = r->len;
    uint64_t kept = len < PL__RING_EVENTS ? len : PL__RING_EVENTS;
    if (kept == 0) {
        return false;
    }
    const pl__trace_rec *last = ring_ev(r, len - 1);
    f->task_id = 0;
    f->task_polls = 0;
    f->task_name[0] = '\0';
    f->step = last->step;
    f->time_ns = last->time_ns;
    /* Polls never nest: the run died in a poll when the latest poll
     * boundary is a beginning. */
    for (uint64_t i = 0; i < kept; i++) {
        const pl__trace_rec *e = ring_ev(r, len - 1 - i);
        if (ends_poll(e->kind)) {
            break;
        }
        if (begins_poll(e->kind)) {
            const char *name = ring_task((void *)r, e->task);
            f->task_id = e->task;
            f->task_polls = (uint32_t)e->a;
            f->step = e->step;
            f->time_ns = e->time_ns;
            snprintf(f->task_name, sizeof f->task_name, "%s", name != NULL ? name : "");
            break;
        }
    }
    return true;
}

void pl__ring_where(const pl_finding *f, char *buf, size_t len)
{
    PL__SIM_ASSERT(f != NULL && buf != NULL && len > 0);
    pl_time t = f->time_ns < 0 ? 0 : f->time_ns;
    if (f->task_id != 0) {
        snprintf(buf, len,
                 "in '%s' (#%" PRIu32 "), poll %" PRIu32 ", step %" PRIu64
                 ", virtual time %" PRId64 ".%03" PRId64 " ms",
                 f->task_name[0] != '\0' ? f->task_name : "unnamed", f->task_id, f->task_polls,
                 f->step, t / PL_MS, t % PL_MS / PL_US);
    } else {
        snprintf(buf, len,
                 "outside any poll, after step %" PRIu64 ", virtual time %" PRId64
                 ".%03" PRId64 " ms",
                 f->step, t / PL_MS, t % PL_MS / PL_US);
    }
}

/* Timeline lines of ev, each prefixed by indent. */
static int write_indented(FILE *f, const pl__trace_rec *ev, size_t n, const pl__trace_namer *nm,
                          const char *indent)
{
    char *mem = NULL;
    size_t memlen = 0;
    FILE *m = open_memstream(&mem, &memlen);
    if (m == NULL) {
        return PL_ENOMEM;
    }
    int rc = pl__trace_write_text_ex(m, ev, n, nm);
    rc = fclose(m) != 0 && rc == 0 ? PL_ENOMEM : rc;
    for (const char *p = mem; rc == 0 && p != NULL && *p != '\0';) {
        size_t l = strcspn(p, "\n");
        fprintf(f, "%s%.*s\n", indent, (int)l, p);
        p += l + (p[l] == '\n');
    }
    free(mem);
    return rc != 0 ? rc : ferror(f) ? PL_EIO : 0;
}

int pl__ring_write_text(FILE *f, const pl__trace_ring *r, size_t max, const char *indent)
{
    PL__SIM_ASSERT(f != NULL && r != NULL && indent != NULL);
    size_t n = 0;
    uint64_t lost = 0;
    pl__trace_rec *ev = pl__ring_events(r, &n, &lost);
    if (ev == NULL && r->len > 0) {
        return PL_ENOMEM;
    }
    size_t from = max > 0 && n > max ? n - max : 0;
    PL__SIM_ASSERT(from <= n && lost + n == r->len);
    if (lost + from > 0) {
        fprintf(f, "%s(%" PRIu64 " earlier events not shown)\n", indent, lost + from);
    }
    pl__trace_namer nm = pl__ring_namer(r);
    int rc = n > 0 ? write_indented(f, ev + from, n - from, &nm, indent) : 0;
    free(ev);
    return rc;
}

/* Names by id 1..count, "\0"-separated as run.c keeps them ("?" for a
 * name the ring no longer holds). */
static char *names_blob(const pl__trace_ring *r, uint32_t count, size_t *len)
{
    *len = 0;
    for (uint32_t id = 1; id <= count; id++) {
        const char *n = ring_task((void *)r, id);
        *len += strlen(n != NULL ? n : "?") + 1;
    }
    char *blob = malloc(*len > 0 ? *len : 1);
    char *p = blob;
    for (uint32_t id = 1; blob != NULL && id <= count; id++) {
        const char *n = ring_task((void *)r, id);
        size_t l = strlen(n != NULL ? n : "?") + 1;
        memcpy(p, n != NULL ? n : "?", l);
        p += l;
    }
    /* Both loops read the same names: the sizes agree. */
    PL__SIM_ASSERT(blob == NULL || (size_t)(p - blob) == *len);
    return blob;
}

/* The texts of the USER events of ev, in one store; each event's a/b
 * rewritten to point into it. */
static char *texts_store(const pl__trace_ring *r, pl__trace_rec *ev, size_t n, size_t *len)
{
    *len = 0;
    char *store = malloc((size_t)PL__RING_TEXTS * PL_TRACE_EVENT_MAX);
    for (size_t i = 0; store != NULL && i < n; i++) {
        size_t l = 0;
        const char *t = ev[i].kind == PL__EV_USER ? ring_text((void *)r, &ev[i], &l) : NULL;
        if (ev[i].kind == PL__EV_USER) {
            /* A text the ring overwrote reads as not kept. */
            ev[i].a = t != NULL ? *len : UINT64_MAX;
            ev[i].b = l;
        }
        if (t != NULL) {
            /* At most PL__RING_TEXTS texts are kept, each shorter than
             * PL_TRACE_EVENT_MAX: the store holds them all. */
            PL__SIM_ASSERT(l < PL_TRACE_EVENT_MAX &&
                           *len + l + 1 <= (size_t)PL__RING_TEXTS * PL_TRACE_EVENT_MAX);
            memcpy(store + *len, t, l);
            store[*len + l] = '\0';
            *len += l + 1;
        }
    }
    return store;
}

int pl__ring_to_record(const pl__trace_ring *r, pl__run_record *rec)
{
    PL__SIM_ASSERT(r != NULL && rec != NULL);
    /* Filled once, on a record of decisions only (cpu_budget.c). */
    PL__SIM_ASSERT(rec->events == NULL && rec->names_blob == NULL && rec->texts == NULL);
    size_t n = 0, names_len = 0, texts_len = 0;
    uint64_t lost = 0;
    pl__trace_rec *ev = pl__ring_events(r, &n, &lost);
    uint32_t count = 0;
    for (size_t i = 0; i < n; i++) {
        count = ev[i].task > count ? ev[i].task : count;
    }
    char *blob = names_blob(r, count, &names_len);
    char *texts = texts_store(r, ev, n, &texts_len);
    if ((ev == NULL && r->len > 0) || blob == NULL || texts == NULL) {
        free(ev);
        free(blob);
        free(texts);
        return PL_ENOMEM;
    }
    if (lost > 0) {
        free(ev);
        ev = NULL;
        n = 0;
    }
    uint64_t nk = r->decisions;
    pl__decision_note *notes = nk > 0 && nk <= PL__RING_KEYS ? malloc(nk * sizeof *notes) : NULL;
    for (uint64_t i = 0; notes != NULL && i < nk; i++) {
        /* The kind is not needed: the explainer reads it from the event. */
        notes[i] = (pl__decision_note){.key = r->keys[i]};
    }
    rec->notes = notes;
    rec->notes_len = notes != NULL ? (size_t)nk : 0;
    rec->events = ev;
    rec->events_len = n;
    rec->names_blob = blob;
    rec->names_len = names_len;
    rec->names_count = count;
    rec->texts = texts;
    rec->texts_len = texts_len;
    return 0;
}
