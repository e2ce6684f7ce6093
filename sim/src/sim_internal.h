/* sim/src/sim_internal.h: what the simulator's modules share.
 *
 * One pl__sim exists per run. It is the pl_system the executor runs on
 * (its vtable is in sim.c), owns the decision stream, the trace and the
 * reactor, and is the executor's observer (oracle.c).
 */
#ifndef POLLEN_SIM_INTERNAL_H
#define POLLEN_SIM_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim.h"
#include "pollen/observer.h"
#include "decide.h"
#include "trace.h"

typedef struct pl__sim pl__sim;
typedef struct pl__reactor pl__reactor;

/* ---- For the reactor and the oracles --------------------------------- */

/* Virtual now. */
pl_time pl__sim_now(const pl__sim *s);

/* A decision from the run's stream (0 = what production does). */
uint32_t pl__sim_choose(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key);

/* Appends a trace event (kind from trace.h; task id 0 when none). */
void pl__sim_event(pl__sim *s, uint32_t kind, uint32_t task, uint64_t a, uint64_t b);

/* Mirrors every consulted decision of the runs that follow into buf
 * (shared memory): *len restarts at 0 with each run, and each record is
 * stored before *len counts it, so a run killed by a signal leaves a
 * consistent prefix. The CLI uses it to replay crashes. */
void pl__sim_record_to(pl__dec_record *buf, size_t cap, volatile uint64_t *len);

/* Records a finding (the first one wins) and stops the run. */
void pl__sim_finding(pl__sim *s, pl_finding_kind kind, const pl_task *t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- The reactor: in-memory I/O (reactor.c) ---------------------------
 * Simulated pipes, stream sockets (listen/accept/connect on loopback
 * addresses) and datagram sockets. Handles are small integers owned by
 * the reactor. Data written travels with a latency and faults drawn from
 * the decision stream and becomes readable at a virtual time; the sim's
 * wait() asks for the next delivery time and advances the clock. */
int pl__reactor_create(pl__reactor **out, pl__sim *sim);
void pl__reactor_destroy(pl__reactor *r);
/* Earliest pending delivery, or PL_TIME_NEVER. */
pl_time pl__reactor_next_event(const pl__reactor *r);
/* Delivers everything due at or before `now`: readiness through
 * pl_io_source_ready, simultaneous ones in PL_DECIDE_IO_ORDER order.
 * Returns how many sources were made ready. */
size_t pl__reactor_deliver(pl__reactor *r, pl_time now);
/* Handles still open (reported as leaks at the end of a run). */
size_t pl__reactor_open_handles(const pl__reactor *r);

/* The seam's I/O entries (same meaning as in pollen/system.h). */
int pl__reactor_io_register(pl__reactor *r, pl_io_source *src);
void pl__reactor_io_deregister(pl__reactor *r, pl_io_source *src);
int pl__reactor_socket(pl__reactor *r, int domain, int type);
int pl__reactor_pipe(pl__reactor *r, int handles[2]);
int pl__reactor_close(pl__reactor *r, int handle);
int pl__reactor_bind(pl__reactor *r, int handle, const struct sockaddr *addr, socklen_t len);
int pl__reactor_listen(pl__reactor *r, int handle, int backlog);
int pl__reactor_accept(pl__reactor *r, int handle, struct sockaddr *addr, socklen_t *len);
int pl__reactor_connect(pl__reactor *r, int handle, const struct sockaddr *addr,
                        socklen_t len);
int pl__reactor_connect_result(pl__reactor *r, int handle);
int pl__reactor_local_addr(pl__reactor *r, int handle, struct sockaddr *addr, socklen_t *len);
ssize_t pl__reactor_read(pl__reactor *r, int handle, void *buf, size_t len);
ssize_t pl__reactor_write(pl__reactor *r, int handle, const void *buf, size_t len);
ssize_t pl__reactor_sendto(pl__reactor *r, int handle, const void *buf, size_t len,
                           const struct sockaddr *addr, socklen_t addr_len);
ssize_t pl__reactor_recvfrom(pl__reactor *r, int handle, void *buf, size_t len,
                             struct sockaddr *addr, socklen_t *addr_len);

/* ---- The simulator instance ------------------------------------------ */

/* Wait conditions a parked task declared in its latest poll (pl_wait_declare). */
#define PL__WAITS_MAX 4

/* What the oracles know of one task, indexed by task id. */
typedef struct pl__task_info {
    pl_task *task;          /* NULL once freed; never hashed */
    const char *name;       /* static storage, as pl_task_name returned it */
    uint32_t clone_holder;  /* task polling when the latest clone was made outside
                               the task's own poll; 0: none (see clone_holder()) */
    uint32_t self_wakes;    /* consecutive polls that woke only themselves */
    uint32_t stale_wakes;   /* wakes through superseded wakers since the last poll */
    uint32_t last_stale_gen;
    uint64_t parked_step;   /* step of its latest PENDING */
    pl_time parked_ns;
    uint32_t waits_len;     /* declared in the latest poll; more than PL__WAITS_MAX
                               keeps the first ones */
    pl_wait waits[PL__WAITS_MAX];
} pl__task_info;

/* A PL_BUGGIFY site or a pl_eventually site seen in this run. */
typedef struct pl__site {
    uint64_t key;
    uint8_t used;
    uint8_t enabled;        /* buggify: enabled for this run */
    uint8_t last_ok;        /* eventually: the latest evaluation */
    const char *msg;
    const char *file;
    int line;
} pl__site;

typedef struct pl__site_table {
    pl__site *slots;        /* open addressing; power-of-two size */
    size_t cap;
    size_t len;
} pl__site_table;

struct pl__sim {
    pl_system system;
    pl_executor *ex;
    pl__dec dec;
    struct pl__strategy *strategy; /* strategy.c's per-run state; NULL: none */
    pl__trace *trace;
    pl__reactor *reactor;
    const pl_scenario *scenario;
    pl_sim_options opts;

    pl_time now;
    pl_time time_limit_ns;
    uint64_t step;          /* polls so far */
    uint64_t steps_since_progress;
    uint64_t steps_max;
    uint32_t self_wakes_max;

    pl__task_info *tasks;   /* index = task id */
    uint32_t tasks_cap;
    uint32_t tasks_spawned;
    uint32_t stale_tasks;   /* tasks whose stale_wakes is not 0 */

    pl_poll_watch watch;    /* handed to every poll (pl_context.watch) */
    uint32_t poll_depth;    /* pl_poll nesting inside the current task poll */
    uint64_t sub_polls;     /* pl_poll calls inside the current task poll */
    uint64_t sub_polls_max;
    uint64_t wakes_in_poll; /* self-wakes inside the current task poll */
    uint64_t wakes_in_poll_max;
    jmp_buf *escape;        /* armed by pl_sim_run around pl_run; NULL: none */
    bool run_over;          /* pl_run returned: drops are teardown, not orphans */

    uint32_t polling;       /* id of the task being polled; 0: none */
    bool polling_probe;
    bool woken_in_poll;     /* the polled task was woken during its poll */
    bool woke_other;        /* the polled task woke another task */
    bool remote_pending;    /* a remote wake waits for delivery */

    pl__site_table buggify;
    pl__site_table eventually;

    bool stopped;
    pl_finding finding;
};

/* The simulator running on this thread (properties reach it this way). */
pl__sim *pl__sim_current(void);

/* Sim lifecycle (sim.c). */
int pl__sim_init(pl__sim *s, const pl_scenario *sc, const pl_sim_options *o, char *err,
                 size_t err_len);
void pl__sim_finish(pl__sim *s);

/* Oracles (oracle.c). */
extern const pl_observer pl__sim_observer;
/* The poll watch's hooks (oracle.c), installed in s->watch by pl__sim_init. */
void pl__oracle_watch_init(pl__sim *s);
/* Quiescence: stale wakers, then probes, then deadlock. */
void pl__oracle_quiescence(pl__sim *s);
/* End of a clean run: eventually sites, waker and task leaks. */
void pl__oracle_eventually(pl__sim *s);
void pl__oracle_leaks(pl__sim *s);

/* Budgets inside one poll and orphans at the drop (check_budget.c). The
 * first two record a livelock finding and leave the poll through
 * s->escape when it is armed; oracle.c calls them when a bound is
 * crossed. */
void pl__budget_sub_polls(pl__sim *s);
void pl__budget_wakes_in_poll(pl__sim *s);
void pl__oracle_orphaned(void *ud, pl_task *t, pl_task *dropper);

/* What runs now, for an asynchronous reader: the CLI's CPU-time budget
 * reads it from a signal handler. Plain stores on the executor thread;
 * volatile so that every store happens and every read is fresh. `task`
 * is the task being polled (NULL: none); while it is set, the task is
 * alive and its id, poll count and name do not change. */
typedef struct pl__sim_progress {
    volatile uint64_t run;        /* pl_sim_run calls begun in this process */
    volatile uint64_t step;       /* of the poll in progress */
    volatile int64_t time_ns;     /* virtual time at its start */
    pl_task *volatile task;
} pl__sim_progress;

extern pl__sim_progress pl__progress;

static inline void pl__progress_poll(const pl__sim *s, pl_task *t)
{
    pl__progress.step = s->step;
    pl__progress.time_ns = s->now;
    pl__progress.task = t;
}

/* Site tables (sim.c). */
pl__site *pl__site_lookup(pl__site_table *t, uint64_t key, bool *created);
void pl__site_table_free(pl__site_table *t);

/* Result internals, for the CLI (run.c). */
typedef struct pl__run_record {
    pl__dec_record *decisions;
    size_t decisions_len;
    bool decisions_truncated;
    uint64_t *checkpoints;
    size_t checkpoints_len;
    pl__trace_rec *events;
    size_t events_len;
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    char scenario[64];
    char *names_blob;       /* "\0"-separated task names, by id (1-based) */
    size_t names_len;
    uint32_t names_count;
} pl__run_record;

const pl__run_record *pl__sim_result_record(const pl_sim_result *r);
/* The name of task `id` in a finished run, or NULL. */
const char *pl__run_task_name(const pl__run_record *rec, uint32_t id);

#endif
