/* sim/src/instance.c: the services of the run's pl__sim that every
 * module calls: the current simulator, virtual now, decisions (handed to
 * the crash mirror, isolate/mirror.h, when one is attached), trace
 * events, findings, and the site tables. It sits below the checkers,
 * the reactor and sim.c, and calls none of them.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isolate/mirror.h"
#include "sim_internal.h"

static _Thread_local pl__sim *current_sim;

pl__sim *pl__sim_current(void) { return current_sim; }

void pl__sim_set_current(pl__sim *s) { current_sim = s; }

pl_time pl__sim_now(const pl__sim *s) { return s->now; }

void pl__sim_event(pl__sim *s, uint32_t kind, uint32_t task, uint64_t a, uint64_t b)
{
    pl__trace_event(s->trace, s->step, s->now, (pl__trace_kind)kind, task, a, b);
}

bool pl__sim_notes_on(const pl__sim *s)
{
    return s->trace != NULL && pl__trace_wants_text(s->trace);
}

void pl__sim_note(pl__sim *s, const char *text)
{
    if (pl__sim_notes_on(s)) {
        pl__trace_user(s->trace, s->step, s->now, PL__TRACE_NO_TASK, text, strlen(text));
    }
}

uint32_t pl__sim_choose(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    return pl__sim_choose_fast(s, kind, n, key);
}

/* Kept off the decision's path: only a run that keeps a log, a crash
 * mirror or a crash ring reaches it, by a tail call. */
#if defined(__GNUC__)
#define SIM_RARE __attribute__((noinline, cold))
#else
#define SIM_RARE
#endif

/* What a kept log, the crash mirror and the crash ring take of a
 * decision, in that order. */
SIM_RARE static uint32_t keep_decision(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key,
                                       uint32_t v)
{
    pl__trace_event(s->trace, s->step, s->now, PL__EV_DECISION, s->polling, (uint32_t)kind,
                    (uint64_t)n << 32 | v);
    if (pl__mirror_on) {
        pl__mirror_decision(kind, n, v, key);
    }
    return v;
}

/* The simulator's part of a decision v, once the stream drew it. */
static inline uint32_t after_decision(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key,
                                      uint32_t v)
{
    if (kind == PL_DECIDE_SCHEDULE) {
        /* The oracles count only polls production would make too. */
        s->passed_head = v != 0 ? (uint32_t)key : 0;
    }
    /* A DECISION event is log-only: nothing to do unless a log keeps it. */
    if (pl__trace_wants_text(s->trace) || pl__mirror_on) {
        return keep_decision(s, kind, n, key, v);
    }
    return v;
}

/* The stream draws; the simulator keeps what it needs of the decision. */
uint32_t pl__sim_choose_consulted(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    return after_decision(s, kind, n, key, pl__dec_draw(&s->dec, kind, n, key));
}

void pl__sim_break(const pl__sim *s, const pl_task *t)
{
    /* The run's own state, before the poll: where a debugger's user is.
     * Named and timed as findings are (a node's tasks carry its prefix);
     * virtual time never goes below 0. */
    int64_t now = (int64_t)s->now;
    fprintf(stderr,
            "pollen: break at step %" PRIu64 ": '%s' (#%" PRIu32 ") is polled next, at "
            "%" PRId64 ".%03" PRId64 " ms\n",
            s->step, pl_task_name(t), pl_task_id(t), now / PL_MS, now % PL_MS / PL_US);
    fflush(NULL); /* what was printed so far, before a debugger holds the process */
    raise(SIGTRAP);
}

void pl__sim_finding(pl__sim *s, pl_finding_kind kind, const pl_task *t, const char *fmt, ...)
{
    if (s->finding.kind != PL_FINDING_NONE || s->assume.discarded) {
        return;
    }
    pl_finding *f = &s->finding;
    f->kind = kind;
    f->time_ns = s->now;
    f->step = s->step;
    if (t != NULL) {
        f->task_id = pl_task_id(t);
        f->task_polls = pl_task_polls(t);
        snprintf(f->task_name, sizeof f->task_name, "%s", pl_task_name(t));
    }
    const pl__threads *th = &s->threads;
    if (th->live > 0 && th->current != 0) {
        /* Threads other than 0 run plain C, never a poll: name the thread. */
        PL__SIM_ASSERT(th->current < th->len);
        f->thread_id = th->current;
        snprintf(f->thread_name, sizeof f->thread_name, "%s", th->t[th->current]->name);
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    pl__sim_event(s, PL__EV_FINDING, f->task_id, (uint64_t)kind, 0);
    s->stopped = true;
    if (s->ex != NULL) {
        pl_executor_stop(s->ex);
    }
}

/* ---- Errors of the run ----------------------------------------------- */

int pl__sim_call_error(pl__sim *s, int rc, const char *fmt, ...)
{
    PL__SIM_ASSERT(rc < 0);
    if (s == NULL) {
        return rc;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->call_error, sizeof s->call_error, fmt, ap);
    va_end(ap);
    return rc;
}

bool pl_finding_is_setup_error(const pl_finding *f)
{
    static const char prefix[] = PL_SIM_SETUP_FAILED ": ";
    return f->kind == PL_FINDING_ASSERTION && f->task_id == 0 && f->step == 0 &&
           strncmp(f->message, prefix, sizeof prefix - 1) == 0;
}

void pl__sim_oom(pl__sim *s, const pl_task *t, const char *what)
{
    if (what == NULL) {
        pl__sim_finding(s, PL_FINDING_ASSERTION, t, "simulator out of memory");
    } else {
        pl__sim_finding(s, PL_FINDING_ASSERTION, t, "simulator out of memory: %s", what);
    }
}
