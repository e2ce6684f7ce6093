/* sim/src/shrink_explain.c: the explanation of a shrunk run.
 *
 * Reads the final run's record, its event log and the capture of keys
 * (strategy.h), and says in words what each non-default decision did,
 * and what each crash lost (the disk's notes, disk.h). Starts no run.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk/disk.h"
#include "grow.h"
#include "net/net.h"
#include "run_record.h"
#include "shrink.h"
#include "sim_internal.h"
#include "strategy.h"

/* ---- Explanation --------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t len;
    size_t cap;
    bool failed;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(sbuf *b, const char *fmt, ...)
{
    if (b->failed) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (w < 0) {
        b->failed = true;
        return;
    }
    size_t need = b->len + (size_t)w + 1;
    if (pl__grow((void **)&b->p, &b->cap, need, 1, 256, 0) != 0) {
        b->failed = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)w;
}

typedef struct explainer {
    const pl__run_record *rec;
    const pl__capture *cap;
    sbuf out;
    char names[2][96]; /* two task names may be in use at once */
    char where[160];   /* a buggify site's location */
    pl_sim_fault_options faults; /* the run's: what one latency step is */
} explainer;

/* True when another task of the run has the name of task `id`. */
static bool name_shared(const pl__run_record *rec, uint32_t id, const char *name)
{
    const char *p = rec->names_blob;
    for (uint32_t i = 1; i <= rec->names_count; i++, p += strlen(p) + 1) {
        if (i != id && strcmp(p, name) == 0) {
            return true;
        }
    }
    return false;
}

/* "'worker'", or "'producer' (#2)" when tasks share the name. */
static const char *task_name(explainer *x, int slot, uint32_t id)
{
    const char *n = pl__run_task_name(x->rec, id);
    if (n != NULL && name_shared(x->rec, id, n)) {
        snprintf(x->names[slot], sizeof x->names[slot], "'%s' (#%u)", n, id);
    } else if (n != NULL) {
        snprintf(x->names[slot], sizeof x->names[slot], "'%s'", n);
    } else if (id == 0) {
        snprintf(x->names[slot], sizeof x->names[slot], "(no task)");
    } else {
        snprintf(x->names[slot], sizeof x->names[slot], "task-%u", id);
    }
    return x->names[slot];
}

/* Where buggify site `key` is written, "relay.c:88 (relay_loop)"; the
 * site's key when the run does not know (a site asked without one). */
static const char *buggify_at(explainer *x, uint64_t key)
{
    const pl__site *site = pl__run_buggify_site(x->rec, key);
    if (site != NULL && site->file != NULL) {
        snprintf(x->where, sizeof x->where, "%s:%d (%s)", pl__site_base(site->file), site->line,
                 site->func != NULL ? site->func : "?");
    } else {
        snprintf(x->where, sizeof x->where, "site %016llx", (unsigned long long)key);
    }
    return x->where;
}

/* The task of the first event of `kind` after event i, or 0. */
static uint32_t next_task(const explainer *x, size_t i, uint32_t kind)
{
    for (size_t j = i + 1; j < x->rec->events_len; j++) {
        if (x->rec->events[j].kind == kind) {
            return x->rec->events[j].task;
        }
    }
    return 0;
}

static void explain_schedule(explainer *x, size_t i, const pl__decision_note *note, uint32_t v,
                             uint32_t n)
{
    uint32_t chosen = note != NULL && note->chosen != 0 ? note->chosen
                                                        : next_task(x, i, PL__EV_POLL);
    uint32_t head = note != NULL ? (uint32_t)note->key : 0;
    if (head != 0) {
        sb_printf(&x->out, "schedule: polled %s before %s, choice %u of %u",
                  task_name(x, 0, chosen), task_name(x, 1, head), v, n);
    } else {
        sb_printf(&x->out, "schedule: polled %s out of FIFO order, choice %u of %u",
                  task_name(x, 0, chosen), v, n);
    }
}

/* Kinds other than schedule: what production would have done instead. */
static void explain_other(explainer *x, size_t i, uint32_t kind, uint64_t key, const char *what,
                          uint32_t v, uint32_t n)
{
    const pl__trace_rec *e = &x->rec->events[i];
    unsigned long long k = (unsigned long long)key;
    switch (kind) {
    case PL_DECIDE_IO_ORDER:
        sb_printf(&x->out, "I/O order: delivered ready source %u of %u first (then woke %s)", v,
                  n, task_name(x, 0, next_task(x, i, PL__EV_WAKE)));
        break;
    case PL_DECIDE_TIMER_ORDER:
        sb_printf(&x->out,
                  "timer order: fired equal-deadline timer %u of %u first (then woke %s)", v, n,
                  task_name(x, 0, next_task(x, i, PL__EV_WAKE)));
        break;
    case PL_DECIDE_TIMER_LATE:
        /* sim.c arms the executor with a 1 ms lateness quantum. */
        sb_printf(&x->out, "timer lateness: timer #%llu armed by %s fires %u ms late", k,
                  task_name(x, 0, e->task), v);
        break;
    /* The value of a spurious wake or poll is the task id itself (sim.c).
     * One naming a task that is not parked does nothing, so a finished
     * shrink has zeroed it: what is left names a parked task. */
    case PL_DECIDE_SPURIOUS_WAKE:
        sb_printf(&x->out, "spurious wake: woke parked %s though nothing it waits for happened",
                  task_name(x, 0, v));
        break;
    case PL_DECIDE_SPURIOUS_POLL:
        sb_printf(&x->out, "spurious poll: polled parked %s without a wake", task_name(x, 0, v));
        break;
    case PL_DECIDE_WAKE_DELAY:
        sb_printf(&x->out, "wake delay: held a remote wake back for one more wait");
        break;
    case PL_DECIDE_CANCEL:
        sb_printf(&x->out, "cancel: aborted %s after its wake, before it ran",
                  task_name(x, 0, (uint32_t)key));
        break;
    case PL_DECIDE_IO_FAULT:
        if (what != NULL && what[0] != '\0') {
            sb_printf(&x->out, "I/O fault: %s (endpoint #%llu, choice %u of %u)", what, k, v, n);
        } else {
            sb_printf(&x->out, "I/O fault: endpoint #%llu got fault choice %u of %u "
                               "instead of a clean transfer", k, v, n);
        }
        break;
    case PL_DECIDE_IO_LATENCY:
        sb_printf(&x->out,
                  "I/O latency: a delivery on endpoint #%llu (data, a connection or room to "
                  "write) arrives %.3f ms late: %u latency steps of %.3f ms",
                  k, (double)v * (double)x->faults.latency_quantum_ns / 1e6, v,
                  (double)x->faults.latency_quantum_ns / 1e6);
        break;
    case PL_DECIDE_BUGGIFY_SITE:
        sb_printf(&x->out, "buggify at %s enabled for this run", buggify_at(x, key));
        break;
    case PL_DECIDE_BUGGIFY_FIRE:
        sb_printf(&x->out, "buggify at %s fired in %s", buggify_at(x, key),
                  task_name(x, 0, e->task));
        break;
    case PL_DECIDE_PROBE:
        sb_printf(&x->out, "probe: polled the parked tasks where only a timer could fire "
                           "next (timer-quiescent point #%llu)", k);
        break;
    /* Simulated threads (threads/sched.c): the asker says who ran where. */
    case PL_DECIDE_THREAD_SWITCH:
        if (what != NULL && what[0] != '\0') {
            sb_printf(&x->out, "thread switch: %s", what);
        } else {
            sb_printf(&x->out, "thread switch: choice %u of %u (thread #%llu was running)", v, n,
                      k);
        }
        break;
    case PL_DECIDE_COND_SPURIOUS:
        sb_printf(&x->out, "spurious wakeup: a condition-variable wait of thread #%llu returned "
                           "without a signal",
                  k);
        break;
    /* The draw's value is v - 1 (knobs.h); the asker names its call. */
    case PL_DECIDE_RANDOM:
        if (what != NULL && what[0] != '\0') {
            sb_printf(&x->out, "random: %s", what);
        } else {
            sb_printf(&x->out, "random: a draw of user code's randomness gave %u (of %u values)",
                      v - 1, n - 1);
        }
        break;
    /* A skewed node's clock (node_clock.c) says what it became. */
    case PL_DECIDE_CLOCK_OFFSET:
    case PL_DECIDE_CLOCK_DRIFT:
    case PL_DECIDE_CLOCK_JUMP:
        if (what != NULL && what[0] != '\0') {
            sb_printf(&x->out, "%s", what);
        } else {
            sb_printf(&x->out, "%s: choice %u of %u (node #%llu)", pl__dec_kind_name(kind), v, n,
                      k >> 32);
        }
        break;
    case PL_DECIDE_CRASH_SILENCE:
        if (what != NULL && what[0] != '\0') {
            sb_printf(&x->out,
                      "node crash: the connection %s went silent (no reset reached the peer)",
                      what);
        } else {
            sb_printf(&x->out,
                      "node crash: the connection of endpoint #%llu went silent (no reset "
                      "reached the peer)",
                      k);
        }
        break;
    default: {
        char disk[720]; /* a node's name and two paths of 255-byte names fit */
        char link[PL__DECISION_TEXT_MAX + 160];
        if (pl__disk_explain_run(disk, sizeof disk, kind, key, v, n, x->rec->files_blob,
                                 x->rec->files_count)) {
            sb_printf(&x->out, "%s", disk);
        } else if (pl__net_explain(link, sizeof link, kind, key, v, n, e->time_ns, what)) {
            sb_printf(&x->out, "%s", link);
        } else if (pl__node_explain(link, sizeof link, x->rec, i, kind, v, n)) {
            sb_printf(&x->out, "%s", link);
        } else {
            sb_printf(&x->out, "%s: choice %u of %u", pl__dec_kind_name(kind), v, n);
        }
        break;
    }
    }
}

/* A short transfer's length is the next decision, on the same endpoint,
 * and usually the default one (1 byte), which is not listed: its text
 * ("moves 1 of 4 bytes") goes with the fault's line. NULL: none. */
static const char *short_length(const explainer *x, uint64_t index)
{
    if (x->cap == NULL || index + 1 >= x->cap->len) {
        return NULL;
    }
    const pl__decision_note *a = &x->cap->notes[index], *b = &x->cap->notes[index + 1];
    bool is_short = strncmp(a->what, "a short transfer", 16) == 0;
    const char *moves = strstr(b->what, " moves ");
    return is_short && b->kind == PL_DECIDE_IO_FAULT && b->key == a->key && moves != NULL
               ? moves + 1
               : NULL;
}

static void explain_decision(explainer *x, size_t i, uint64_t index)
{
    PL__SIM_ASSERT(i < x->rec->events_len);
    const pl__trace_rec *e = &x->rec->events[i];
    uint32_t kind = (uint32_t)e->a;
    uint32_t n = (uint32_t)(e->b >> 32);
    uint32_t v = (uint32_t)e->b;
    const pl__decision_note *note =
        x->cap != NULL && index < x->cap->len ? &x->cap->notes[index] : NULL;
    sb_printf(&x->out, "step %llu (%.3f ms): ", (unsigned long long)e->step,
              (double)e->time_ns / 1e6);
    if (kind == PL_DECIDE_SCHEDULE) {
        explain_schedule(x, i, note, v, n);
    } else {
        explain_other(x, i, kind, note != NULL ? note->key : 0, note != NULL ? note->what : NULL,
                      v, n);
    }
    const char *len = short_length(x, index);
    if (kind == PL_DECIDE_IO_FAULT && len != NULL) {
        sb_printf(&x->out, "; %s", len);
    }
    sb_printf(&x->out, "\n");
}

/* An explainer of `run`, with the latency quantum of options o (NULL:
 * the defaults). */
static explainer explainer_of(const pl_sim_result *run, const pl__capture *cap,
                              const pl_sim_options *o)
{
    explainer x = {.rec = pl__sim_result_record(run), .cap = cap};
    pl_sim_options def;
    if (o == NULL) {
        pl_sim_options_default(&def);
        o = &def;
    }
    pl__net_faults_of(o, &x.faults);
    return x;
}

/* A crash's loss, which the disk noted in the trace (disk.h): a line of
 * its own, though no decision made it (a crash loses every unsynced
 * write by default). False for any other event. */
static bool explain_crash_note(explainer *x, const pl__trace_rec *e)
{
    size_t prefix = strlen(PL__DISK_CRASH_NOTE);
    if (e->kind != PL__EV_USER || e->task != PL__TRACE_NO_TASK || x->rec->texts == NULL ||
        e->a > x->rec->texts_len || e->b > x->rec->texts_len - e->a || e->b < prefix ||
        memcmp(x->rec->texts + e->a, PL__DISK_CRASH_NOTE, prefix) != 0) {
        return false;
    }
    sb_printf(&x->out, "step %llu (%.3f ms): %.*s\n", (unsigned long long)e->step,
              (double)e->time_ns / 1e6, (int)e->b, x->rec->texts + e->a);
    return true;
}

char *pl__shrink_explain(const pl_sim_result *run, const pl__capture *cap,
                         const pl_sim_options *o)
{
    PL__SIM_ASSERT(run != NULL);
    explainer x = explainer_of(run, cap, o);
    if (x.rec == NULL) {
        return NULL;
    }
    uint64_t index = 0;
    bool deviated = false;
    for (size_t i = 0; i < x.rec->events_len; i++) {
        const pl__trace_rec *e = &x.rec->events[i];
        if (explain_crash_note(&x, e) || e->kind != PL__EV_DECISION) {
            continue;
        }
        if ((uint32_t)e->b != 0) {
            explain_decision(&x, i, index);
            deviated = true;
        }
        index++;
    }
    if (!deviated) {
        sb_printf(&x.out, "no decision leaves production's order: the production schedule "
                          "itself fails\n");
    }
    if (x.out.failed) {
        free(x.out.p);
        return NULL;
    }
    return x.out.p;
}

/* Production's own choice says which task ran, or only that nothing
 * left production's order. */
static void explain_default(explainer *x, size_t i, uint64_t index, uint32_t kind, uint32_t n)
{
    const pl__trace_rec *e = &x->rec->events[i];
    const pl__decision_note *note =
        x->cap != NULL && index < x->cap->len ? &x->cap->notes[index] : NULL;
    sb_printf(&x->out, "step %llu (%.3f ms): ", (unsigned long long)e->step,
              (double)e->time_ns / 1e6);
    if (kind == PL_DECIDE_SCHEDULE) {
        uint32_t chosen =
            note != NULL && note->chosen != 0 ? note->chosen : next_task(x, i, PL__EV_POLL);
        sb_printf(&x->out, "schedule: polled %s in FIFO order (production's choice 0 of %u)",
                  task_name(x, 0, chosen), n);
    } else {
        sb_printf(&x->out, "%s: production's choice 0 of %u", pl__dec_kind_name(kind), n);
    }
}

char *pl__shrink_explain_one(const pl_sim_result *run, const pl__capture *cap,
                             const pl_sim_options *o, uint64_t index, size_t *event)
{
    PL__SIM_ASSERT(run != NULL && event != NULL);
    explainer x = explainer_of(run, cap, o);
    uint64_t seen = 0;
    for (size_t i = 0; x.rec != NULL && i < x.rec->events_len; i++) {
        const pl__trace_rec *e = &x.rec->events[i];
        if (e->kind != PL__EV_DECISION || seen++ != index) {
            continue;
        }
        *event = i;
        if ((uint32_t)e->b != 0) {
            explain_decision(&x, i, index);
        } else {
            explain_default(&x, i, index, (uint32_t)e->a, (uint32_t)(e->b >> 32));
        }
        if (x.out.failed || x.out.p == NULL) {
            free(x.out.p);
            return NULL;
        }
        x.out.p[strcspn(x.out.p, "\n")] = '\0';
        return x.out.p;
    }
    return NULL;
}

/* A run that never returned has no timeline: its non-default decisions
 * are listed by their index in the list. */
char *pl__shrink_explain_hung(const pl_sim_result *run)
{
    PL__SIM_ASSERT(run != NULL);
    const pl__run_record *rec = pl__sim_result_record(run);
    sbuf out = {0};
    for (size_t i = 0; rec != NULL && i < rec->decisions_len; i++) {
        const pl__dec_record *d = &rec->decisions[i];
        if (d->value != 0) {
            sb_printf(&out, "decision %zu: %s, choice %u of %u\n", i,
                      pl__dec_kind_name(d->kind), d->value, d->n);
        }
    }
    if (out.len == 0) {
        sb_printf(&out, "no decision leaves production's order: the production schedule "
                        "itself fails\n");
    }
    sb_printf(&out, "(the run never returns from a poll, so it has no timeline)\n");
    if (out.failed) {
        free(out.p);
        return NULL;
    }
    return out.p;
}
