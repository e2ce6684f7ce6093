/* sim/src/sim_internal.h: the world, what every simulator module shares.
 *
 * One pl__sim exists per run. It is the pl_system the executor runs on
 * (its vtable is sim.c's) and keeps what a run is: the clock, the step,
 * the limits, the decision stream, the trace, the network, the disk, the
 * executor and the finding. Each other concern owns a sub-struct,
 * declared in its own header and embedded here by value: the task table
 * (tasks.h), async backtraces (backtrace.h), the probes (check_probe.h),
 * the bounds inside a poll (check_budget.h), the properties
 * (check_props.h), the rescue oracle (check_rescue.h), the nodes
 * (node.h), the threads (threads/threads.h) and the words naming
 * messages (net/label.h). The world calls no checker: the run installs
 * its judges (pl__sim_judges). The functions below are instance.c's.
 */
#ifndef POLLEN_SIM_INTERNAL_H
#define POLLEN_SIM_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "assume.h"
#include "backtrace.h"
#include "check_budget.h"
#include "check_probe.h"
#include "check_props.h"
#include "check_rescue.h"
#include "decide.h"
#include "history.h"
#include "nemesis.h"
#include "net/label.h"
#include "node.h"
#include "pollen/observer.h"
#include "pollen/sim.h"
#include "pollen/sim_node.h"
#include "quiet.h"
#include "sim_assert.h"
#include "sites.h"
#include "tasks.h"
#include "threads/threads.h"
#include "trace.h"

typedef struct pl__sim pl__sim;
typedef struct pl__reactor pl__reactor;
struct pl__disk;

/* What the world asks of the run's judges at its moments (run.c installs
 * them; the world knows no checker). point: a timer-quiescent point
 * (nothing runnable, no I/O or remote wake in flight, a timer armed),
 * true when a finding stops the run; before_injection: a spurious wake
 * (is_poll: poll) of t is due at such a point, true when a finding stops
 * the run, *probed when the judge's poll was the spurious poll;
 * time_limit: the virtual time limit is reached; quiet_end: the quiet
 * phase's deadline is reached (quiet.h), the liveness is judged and
 * s->quiet.judged set. */
typedef struct pl__sim_judges {
    bool (*point)(pl__sim *s);
    bool (*before_injection)(pl__sim *s, pl_task *t, bool is_poll, bool *probed);
    void (*time_limit)(pl__sim *s);
    void (*quiet_end)(pl__sim *s);
} pl__sim_judges;

/* The world's pl_system vtable (sim.c). */
extern const pl_system_vtable pl__sim_vtable;

struct pl__sim {
    pl_system system;
    pl_executor *ex;
    pl__dec dec;
    struct pl__strategy *strategy; /* strategy.c's per-run state; NULL: none */
    pl__trace *trace;
    pl__reactor *reactor;
    struct pl__disk *disk;  /* the simulated disk (disk/); NULL until a file is used */
    char *decision_text;    /* see pl__sim_decision_text */
    const pl_scenario *scenario;
    const pl__sim_judges *judges;
    pl_sim_options opts;

    pl_time now;
    pl_time time_limit_ns;
    uint64_t step;          /* polls so far */
    uint64_t steps_since_progress;
    uint64_t steps_charged; /* polls whose poll cost the clock has taken */
    uint64_t steps_max;
    uint32_t self_wakes_max;

    pl_poll_watch watch;    /* handed to every poll (pl_context.watch) */
    jmp_buf *escape;        /* armed by pl_sim_run around pl_run; NULL: none */
    bool run_over;          /* pl_run returned: drops are teardown, not orphans */
    uint32_t polling;       /* id of the task being polled; 0: none */
    bool polling_probe;
    bool woken_in_poll;     /* the polled task was woken during its poll */
    bool woke_other;        /* the polled task woke another task */
    bool remote_pending;    /* a remote wake waits for delivery */
    bool injecting;         /* a spurious wake is being delivered */
    uint32_t passed_head;   /* the latest schedule decision left FIFO order: the id of
                               the head it passed over; 0: it took the head (or none) */
    bool poll_deviated;     /* this poll's task was picked over the FIFO head */
    uint64_t firing_seq;    /* timer whose wake is being delivered; 0: none */
    pl__site_table buggify; /* the PL_BUGGIFY sites met, enabled or not for the run */
    /* Why the latest call of pollen's simulator API that returned an
     * error refused (pl__sim_call_error): a setup error names it. "" none. */
    char call_error[192];

    pl__task_table tasks;
    pl__bt bt;
    pl__bounds bounds;
    pl__probe probe;
    pl__props props;
    pl__rescue rescue;
    pl__nodes nodes;
    pl__threads threads;
    pl__nemesis nemesis;    /* paused and isolated nodes (nemesis.h) */
    pl__history history;    /* the clients' operations (history.h) */
    pl__premise assume;     /* a failed pl_assume discarded the run (assume.h) */
    pl__quiet quiet;        /* the quiet phase and its deadline (quiet.h) */
    pl__labels labels;      /* what names a message in explanations (net/label.h) */

    bool stopped;
    pl_finding finding;
};

/* The simulator running on this thread (properties reach it this way);
 * pl__sim_init and pl__sim_finish set it. */
pl__sim *pl__sim_current(void);
void pl__sim_set_current(pl__sim *s);
/* Virtual now. */
pl_time pl__sim_now(const pl__sim *s);
/* A decision from the run's stream (0 = what production does). Out of
 * line: the network's files call it, and their tests link a fake. */
uint32_t pl__sim_choose(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key);
/* The same for a decision known to be consulted (pl__dec_consulted):
 * drawn, traced and mirrored. pl__sim_choose_fast, below, is
 * pl__sim_choose inline, for the hot callers. */
uint32_t pl__sim_choose_consulted(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key);
/* While a run explains its decisions (the shrinker's final run, with a
 * capture), the buffer, PL__DECISION_TEXT_MAX bytes, where the code that
 * consulted the latest decision may say in words what it chose ("EAGAIN
 * on pipe (read end)"); NULL otherwise, so that other runs pay a load
 * and a branch. Valid until the next decision. A decision not consulted
 * (its kind off, or one choice) leaves it NULL until the next consulted
 * one: whoever asked it cannot write over the words of the decision
 * before. Log-only: never hashed. */
#define PL__DECISION_TEXT_MAX 256
static inline char *pl__sim_decision_text(const pl__sim *s) { return s->decision_text; }
/* Appends a trace event (kind from trace.h; task id 0 when none). */
void pl__sim_event(pl__sim *s, uint32_t kind, uint32_t task, uint64_t a, uint64_t b);
/* True when the run keeps its trace's texts (a log or a crash ring), so
 * that the simulator's own words (pl__sim_note) are worth making. */
bool pl__sim_notes_on(const pl__sim *s);
/* The simulator says `text` (one line, cut to PL_TRACE_EVENT_MAX - 1
 * bytes) in the run's trace, as a user event of no task: the timeline
 * shows it, and the explanation of a shrunk run lists the crash's
 * (disk.h). Log-only, like every user event: it changes no run. Nothing
 * unless pl__sim_notes_on. */
void pl__sim_note(pl__sim *s, const char *text);
/* Records a finding (the first one wins) and stops the run. */
void pl__sim_finding(pl__sim *s, pl_finding_kind kind, const pl_task *t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The simulator ran out of memory where going on would make the run pass
 * untested: an assertion finding. what: NULL, or a detail after
 * "simulator out of memory: ". */
void pl__sim_oom(pl__sim *s, const pl_task *t, const char *what);
/* Records why a call of the simulator's API refused ("pl_sim_node_add:
 * host '192.168.0.1' of node 'db' is outside 10.0.0.0/8"), for the
 * setup error that may follow; returns rc, so a refusal reads
 * `return pl__sim_call_error(s, PL_EINVAL, "...", ...)`. s may be NULL
 * (no run: nothing to record). */
__attribute__((format(printf, 3, 4))) int pl__sim_call_error(pl__sim *s, int rc, const char *fmt,
                                                             ...);
/* pl_sim_options.break_at_step was reached as task t's poll begins: says
 * where on stderr, then raises SIGTRAP (a debugger stops here). */
void pl__sim_break(const pl__sim *s, const pl_task *t);

static inline uint32_t pl__sim_choose_fast(pl__sim *s, pl_decision_kind kind, uint32_t n,
                                           uint64_t key)
{
    PL__SIM_ASSERT((uint32_t)kind < PL_DECIDE__COUNT);
    if (pl__dec_consulted(&s->dec, kind, n)) {
        return pl__sim_choose_consulted(s, kind, n, key);
    }
    /* Drew nothing, so has nothing to say: its asker finds no buffer, not
     * the previous decision's (pl__sim_decision_text). */
    s->decision_text = NULL;
    if (kind == PL_DECIDE_SCHEDULE) {
        s->passed_head = 0; /* production's order: the head was taken */
    }
    return 0;
}

/* The task being polled (NULL: none). */
static inline pl_task *pl__sim_polled(const pl__sim *s)
{
    return s->polling != 0 ? s->tasks.info[s->polling].task : NULL;
}

/* A parked task that may be polled out of turn (a spurious poll, a probe):
 * not one of a paused node, none of whose tasks is polled until it
 * resumes (pollen/sim_node.h; the executor's probe ignores its hold). */
static inline bool pl__sim_pollable_parked(const pl__sim *s, const pl__task_info *ti)
{
    return pl__tasks_is_parked(ti) && s->nemesis.paused_until[ti->node] == 0;
}

/* The node the current code runs on: the booting one, else a simulated
 * thread's (the node its spawner ran on: a thread may run in the middle
 * of another node's poll), else the polled task's, else the dropped
 * task's; 0: the scenario's own. Inline: the network asks at each socket
 * it opens and links without node.c. */
static inline uint32_t pl__node_current(const pl__sim *s)
{
    if (s->nodes.list == NULL) {
        return 0;
    }
    if (s->nodes.booting != 0) {
        return s->nodes.booting;
    }
    if (s->threads.current != 0) {
        return s->threads.t[s->threads.current]->node;
    }
    uint32_t id = s->polling != 0 ? s->polling : s->nodes.dropping;
    return id != 0 ? s->tasks.info[id].node : 0;
}

/* The disk the current code uses: its node's (s->disk for the scenario).
 * Inline: the disk links without node.c too. */
static inline struct pl__disk **pl__node_disk_slot(pl__sim *s)
{
    uint32_t n = pl__node_current(s);
    return n != 0 ? &s->nodes.list[n].disk : &s->disk;
}

#endif
