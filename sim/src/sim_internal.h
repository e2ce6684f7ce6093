/* sim/src/sim_internal.h: what the simulator's modules share.
 *
 * One pl__sim exists per run. It is the pl_system the executor runs on
 * (its vtable is in sim.c), owns the decision stream, the trace and the
 * network (net/), and is the executor's observer (oracle.c).
 */
#ifndef POLLEN_SIM_INTERNAL_H
#define POLLEN_SIM_INTERNAL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim.h"
#include "pollen/sim_node.h"
#include "pollen/observer.h"
#include "decide.h"
#include "grow.h"
#include "hashset.h"
#include "sim_assert.h"
#include "threads/threads.h"
#include "assume.h"
#include "check_rescue.h"
#include "nemesis.h"
#include "history.h"
#include "trace.h"

typedef struct pl__sim pl__sim;
typedef struct pl__reactor pl__reactor;
struct pl__disk;

/* ---- For the reactor and the oracles --------------------------------- */

/* Virtual now. */
pl_time pl__sim_now(const pl__sim *s);

/* A decision from the run's stream (0 = what production does). Out of
 * line: the network's files call it, and their tests link a fake. */
uint32_t pl__sim_choose(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key);
/* The same for a decision known to be consulted (pl__dec_consulted):
 * drawn, traced and mirrored. pl__sim_choose_fast, below struct pl__sim,
 * is pl__sim_choose inline, for the hot callers (the executor's
 * decisions, the probe decision at every timer-quiescent point). */
uint32_t pl__sim_choose_consulted(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key);

/* While a run explains its decisions (the shrinker's final run, with a
 * capture), the buffer, PL__DECISION_TEXT_MAX bytes, where the code that
 * consulted the latest decision may say in words what it chose ("EAGAIN
 * on pipe (read end)"); NULL otherwise, so that other runs pay a load
 * and a branch. Valid until the next decision. Log-only: never hashed. */
#define PL__DECISION_TEXT_MAX 256
static inline char *pl__sim_decision_text(const pl__sim *s);

/* Appends a trace event (kind from trace.h; task id 0 when none). */
void pl__sim_event(pl__sim *s, uint32_t kind, uint32_t task, uint64_t a, uint64_t b);

/* Records a finding (the first one wins) and stops the run. */
void pl__sim_finding(pl__sim *s, pl_finding_kind kind, const pl_task *t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* pl_sim_options.break_at_step was reached as task t's poll begins: says
 * where on stderr, then raises SIGTRAP (a debugger stops here). */
void pl__sim_break(const pl__sim *s, const pl_task *t);

/* ---- The network: in-memory I/O ---------------------------------------
 * Simulated pipes, stream sockets and datagram sockets (pl__reactor):
 * its API, the system's I/O entries included, is net/net.h. */

/* ---- The simulator instance ------------------------------------------ */

/* Wait conditions a parked task declared in its latest poll (pl_wait_declare).
 * Two: a select of two branches, a timeout around one. They live apart
 * from the task table, one table per position (s->waits[i][id] is task
 * id's declaration i), each allocated once a task declares that many: a
 * run whose tasks declare nothing (a million sleeps) pays nothing, one
 * whose tasks declare one each (a million waiters on a notify) pays for
 * one each. */
#define PL__WAITS_MAX 2
/* Timers one probe poll may arm and still be told apart (check_probe.c). */
#define PL__PROBE_ARMS_MAX 8

/* One future of an async backtrace (backtrace.c): its name and where it
 * awaited (static storage; site NULL while unknown). */
typedef struct pl__frame {
    const char *future;
    const pl_await_site *site;
} pl__frame;

#define PL__FRAMES_MAX PL_FINDING_FRAMES_MAX

/* A chain of futures, outermost first; len may exceed PL__FRAMES_MAX
 * (the deeper ones are not kept). */
typedef struct pl__chain {
    uint32_t len;
    pl__frame f[PL__FRAMES_MAX];
} pl__chain;

/* What a task's spawn said of it, interned for the run (tasks.c): the
 * tasks of one pl_spawn site share one, so a task's record holds a
 * pointer where it held these four. Never moves once made; freed with
 * the run. */
typedef struct pl__spawn_kind {
    const char *name;       /* static storage, as pl_task_name returned it (a node's
                               "node/task" is interned by node.c) */
    const char *root;       /* its future's vtable name (the chain's first frame) */
    const char *where;      /* "file:line" of its pl_spawn (static); NULL: unknown */
    const char *func;
} pl__spawn_kind;

/* The kind of a record without a spawn (entry 0, a task whose record
 * could not be allocated): every field NULL. */
extern const pl__spawn_kind pl__spawn_kind_none;

/* What the oracles know of one task, indexed by task id. */
typedef struct pl__task_info {
    /* Pointers, then 8-byte counts, then 4-byte ones, then bytes: no
     * padding (96 bytes; one per task the run ever spawned). */
    pl_task *task;          /* NULL once freed; never hashed */
    const pl__spawn_kind *kind; /* name, root and spawn site; never NULL */
    uint64_t parked_step; /* step of its latest PENDING */
    pl_time parked_ns;
    uint64_t probed_step; /* s->step after its latest probe: nothing changed since */
    pl_time stale_ns;     /* its latest wake through a superseded waker */
    uint32_t clone_holder;  /* task polling when the latest clone was made outside
                               the task's own poll; 0: none (see clone_holder()) */
    uint32_t self_wakes;    /* consecutive polls that woke only themselves */
    uint32_t busy_wakes;    /* of those, the polls production's FIFO order made too:
                               what the busy-loop oracle counts */
    uint32_t stale_wakes;   /* wakes through superseded wakers since the last poll */
    uint32_t last_stale_gen;
    uint32_t waits_len;     /* declared in the latest poll (in s->waits[id]); more
                               than PL__WAITS_MAX keeps the first ones */
    uint32_t stale_by;      /* task polling then (0: outside polls) */
    uint32_t late_head;     /* its late timers (s->late), index + 1; 0: none */
    uint32_t quiet_rounds;  /* background: points since only background work was left
                               before which it was polled */
    uint32_t chain;         /* the chain of its latest PENDING poll: index + 1 in
                               s->chains; 0: none yet */
    uint32_t chain_prev;    /* the one before it (a loop parks at two awaits in turn) */
    bool on_purpose;        /* its latest poll said it polls on purpose (a poll interval) */
    bool forgotten;         /* its node crashed: never dropped, not a leak */
    bool keep_parked;       /* parked with no timer of its own while timers kept the
                               run alive (check_probe.c, keepers_only) */
    uint8_t node;           /* its node (index in s->nodes); 0: the scenario's own */
} pl__task_info;
_Static_assert(sizeof(pl__task_info) <= 96, "pl__task_info: no padding between its fields");

/* A timer that fires late (PL_DECIDE_TIMER_LATE): between its deadline
 * and its firing the task's own clock check already says "due". Kept in
 * a list per task (pl__task_info.late_head), usually of one. */
typedef struct pl__late_timer {
    pl_time from;           /* deadline */
    pl_time until;          /* firing time */
    uint32_t next;          /* the task's next entry or the free list's, index + 1; 0: none */
} pl__late_timer;

/* How a task's wake came about, for the reports of rescued tasks. */
typedef enum pl__waker_kind {
    PL__WOKEN_NOT = 0,      /* not woken before the run ended */
    PL__WOKEN_BY_TIMER = 1,
    PL__WOKEN_BY_TASK = 2,  /* a task's poll woke it */
    PL__WOKEN_BY_SPURIOUS = 3, /* pollen's injected spurious wake */
    PL__WOKEN_OUTSIDE = 4,  /* outside polls: I/O readiness, a remote wake */
} pl__waker_kind;

/* Following one task after a probe found it could progress (check_probe.c):
 * a re-execution of the run's decisions without that probe, to see what
 * would have woken it and when. */
typedef struct pl__follow {
    bool active;
    uint32_t task;          /* the task followed */
    uint64_t point;         /* probing stops at this timer-quiescent point */
    bool done;              /* its next wake was seen, or the run ended */
    pl__waker_kind how;
    pl_time woken_ns;
    uint32_t by_task;
    uint64_t by_timer;      /* timer seq */
    uint32_t timer_armer;   /* task that armed it (0: outside polls) */
} pl__follow;

/* A PL_BUGGIFY site or a pl_eventually site seen in this run. */
typedef struct pl__site {
    uint64_t key;
    uint8_t enabled;        /* buggify: enabled for this run */
    uint8_t last_ok;        /* eventually: the latest evaluation */
    const char *msg;
    const char *file;       /* NULL: unknown (a buggify site asked without one) */
    int line;
    const char *func;
    uint64_t reached;       /* buggify: evaluations in this run */
    uint64_t fired;         /* buggify: evaluations that fired */
} pl__site;

/* Sites in the order the run first met them, indexed by key. */
typedef struct pl__site_table {
    pl__site *sites;        /* grow.h */
    size_t len;
    size_t cap;
    pl__hashmap index;      /* key -> position in sites */
} pl__site_table;

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
    pl_sim_options opts;

    pl_time now;
    pl_time time_limit_ns;
    uint64_t step;          /* polls so far */
    uint64_t steps_since_progress;
    uint64_t steps_charged; /* polls whose poll cost the clock has taken */
    uint64_t steps_max;
    uint32_t self_wakes_max;

    pl__task_info *tasks;   /* index = task id; written up to tasks_spawned (tasks.c) */
    size_t tasks_cap;
    uint32_t tasks_spawned;
    pl__spawn_kind **kinds; /* the run's spawn kinds, in the order met (tasks.c) */
    size_t kinds_len;
    size_t kinds_cap;
    pl__hashmap kind_index; /* content hash -> index in kinds, past a few kinds */
    const pl__spawn_kind *kind_last; /* the latest spawn's: a loop of spawns hits it */
    uint32_t stale_tasks;   /* tasks whose stale_wakes is not 0 */

    pl_poll_watch watch;    /* handed to every poll (pl_context.watch) */
    /* Async backtraces (backtrace.c): how many futures' polls have not
     * returned (the task's own counts), the PENDING path found so far in
     * this poll, written bottom-up as its futures return (backtrace.h),
     * and the distinct chains of the run (each task names one: a million
     * tasks parked at one await share it). */
    uint32_t depth;
    pl__chain path;         /* its length, and its frames from path_top down */
    uint32_t path_top;      /* the shallowest frame the path is known to go through */
    uint32_t yield_at;      /* the depth of a PL_YIELD before any path, or PL__BT_NO_PATH */
    const pl_await_site *yield_site;
    pl__chain *chains;
    size_t chains_len;
    size_t chains_cap;
    pl__hashmap chain_index; /* content hash -> index in chains */
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
    uint32_t passed_head;   /* the latest schedule decision left FIFO order: the id of
                               the head it passed over; 0: it took the head (or none) */
    bool poll_deviated;     /* this poll's task was picked over the FIFO head */

    pl__site_table buggify;
    pl__site_table eventually;

    /* Quiescence up to timers (check_probe.c). */
    uint64_t points;        /* timer-quiescent points so far */
    uint32_t probe_cursor;  /* where the next point's scan for parked tasks starts */
    uint32_t *armers;       /* task that armed timer #seq (index seq); 0: none */
    size_t armers_cap;
    pl_time *arm_deadlines; /* the deadline timer #seq was armed for (index seq; zeroed) */
    size_t arm_deadlines_cap;
    uint64_t probe_arms[PL__PROBE_ARMS_MAX]; /* timers the current probe poll armed */
    uint32_t probe_arms_len; /* past PL__PROBE_ARMS_MAX: some went unrecorded */
    uint64_t firing_seq;    /* timer whose wake is being delivered; 0: none */
    pl_wait *waits[PL__WAITS_MAX]; /* [i][task id]; NULL until a task declares i + 1 */
    size_t waits_cap[PL__WAITS_MAX];
    pl__late_timer *late;   /* late timers whose firing time has not passed (a
                               disarmed one stays until then: it only costs probes) */
    uint32_t late_len;
    size_t late_cap;
    uint32_t late_free;     /* entries to reuse, index + 1; 0: none */
    bool injecting;         /* a spurious wake is being delivered */
    uint64_t quiet_step;    /* step since which only background work could happen
                               (0: not now); the foreground is judged once every
                               background task ran in two rounds since (between two
                               such points), and no foreground task ran */
    uint32_t quiet_spawned; /* tasks spawned by then */
    uint64_t quiet_last_step; /* step of the latest such point that counted a round */
    pl_time quiet_last_ns;    /* and its virtual time: a round takes time to pass */
    /* Parked foreground tasks left alone while timers keep the run alive
     * (check_probe.c, keepers_only); the tasks' quiet_rounds count the
     * keepers' rounds then, as background_only's never runs at once. */
    uint64_t keep_step;     /* step since which the parked set stayed put; 0: not now */
    uint32_t keep_spawned;  /* tasks spawned by then */
    uint64_t keep_last_step; /* step of the latest point that counted a round */
    pl_time keep_last_ns;    /* and its virtual time */
    pl_time keep_since_ns;   /* virtual time at keep_step */
    pl_time keep_retry_ns;   /* no watch starts before this virtual time */
    bool keep_woken;         /* a watched task was woken since, not by pollen's injection */
    bool follow_wanted;     /* the finding wants a follow-up run (rescue unknown) */
    uint32_t follow_task;
    uint64_t follow_point;
    pl__follow follow;      /* this run is the follow-up of another */
    bool stuck_finding;     /* the finding names stuck tasks: append the scenario's check */

    /* Nodes (node.c): index 0 is the scenario itself; NULL until the
     * first pl_sim_node_add. */
    struct pl__node *nodes;
    uint32_t nodes_len;     /* declared nodes + 1 once nodes exist */
    uint32_t booting;       /* node whose boot function runs; 0: none */
    uint32_t dropping;      /* task whose drop runs outside polls; 0: none */
    struct pl__task_alias *task_names; /* interned "node/task" names (grow.h) */
    size_t task_names_len, task_names_cap;

    /* Why the latest call of pollen's simulator API that returned an
     * error refused (check_run.c): a setup error names it. "" none. */
    char call_error[192];

    pl__threads threads;    /* simulated threads (threads/threads.h) */
    pl__rescue rescue;      /* deadlocks a timer hides (check_rescue.h) */
    pl__nemesis nemesis;    /* paused nodes (nemesis.h) */
    pl__history history;    /* the clients' operations (history.h) */
    pl__premise assume;     /* a failed pl_assume discarded the run (assume.h) */

    bool stopped;
    pl_finding finding;
};

/* A node of a cluster scenario (pollen/sim_node.h; node.c). */
typedef struct pl__node {
    pl_node_def def;
    uint32_t host;          /* IPv4, host order; 0 for the scenario itself */
    bool up;
    uint32_t crashes;
    pl_time restart_at;     /* a decided restart is due then; 0: none */
    struct pl__disk *disk;  /* its own disk; NULL until a file is used */
    struct pl__node_block *blocks; /* pl_node_alloc's, newest first */
    uint32_t blocks_len;
} pl__node;

/* The node the current code runs on: the booting one, else the polled
 * task's, else the dropped task's; 0: the scenario's own. Inline: the
 * network asks at each socket it opens and links without node.c. */
static inline uint32_t pl__node_current(const pl__sim *s)
{
    if (s->nodes == NULL) {
        return 0;
    }
    if (s->booting != 0) {
        return s->booting;
    }
    uint32_t id = s->polling != 0 ? s->polling : s->dropping;
    return id != 0 ? s->tasks[id].node : 0;
}

/* The host of node n (0: none, the scenario's sockets keep loopback). */
static inline uint32_t pl__node_host(const pl__sim *s, uint32_t n)
{
    return n != 0 && n < s->nodes_len ? s->nodes[n].host : 0;
}

/* The disk the current code uses: its node's (s->disk for the scenario).
 * Inline: the disk links without node.c too. */
static inline struct pl__disk **pl__node_disk_slot(pl__sim *s)
{
    uint32_t n = pl__node_current(s);
    return n != 0 ? &s->nodes[n].disk : &s->disk;
}
/* The name of node n ("" for 0). */
const char *pl__node_name(const pl__sim *s, uint32_t n);
/* The name "node2/worker" of a task of node n named `name`, interned for
 * the run (the same pointer for the same pair); `name` itself when there
 * is no memory (node.c). */
const char *pl__node_task_name(pl__sim *s, uint32_t n, const char *name);
/* Every node's disk and decided restart: the earliest pending event. */
pl_time pl__nodes_next_event(const pl__sim *s);
/* At a wait, once the clock moved: every node's disk completions due,
 * the decided restarts due, then a node_crash decision per crashable node
 * that is up (node_crash.c). */
void pl__nodes_deliver(pl__sim *s, pl_time now);
/* Frees the nodes, their disks and their memory (pl__sim_finish). */
void pl__nodes_free(pl__sim *s);

static inline uint32_t pl__sim_choose_fast(pl__sim *s, pl_decision_kind kind, uint32_t n,
                                           uint64_t key)
{
    PL__SIM_ASSERT((uint32_t)kind < PL_DECIDE__COUNT);
    if (pl__dec_consulted(&s->dec, kind, n)) {
        return pl__sim_choose_consulted(s, kind, n, key);
    }
    if (kind == PL_DECIDE_SCHEDULE) {
        s->passed_head = 0; /* production's order: the head was taken */
    }
    return 0;
}

/* The simulator running on this thread (properties reach it this way);
 * pl__sim_init and pl__sim_finish set it (instance.c). */
pl__sim *pl__sim_current(void);
void pl__sim_set_current(pl__sim *s);
/* Sim lifecycle (sim.c). `capture` (NULL: none) notes the decisions of a
 * list source's run (strategy.h). Starts no run: PCT's horizon is already
 * in the spec or in o->pct_horizon. */
struct pl__capture;
int pl__sim_init(pl__sim *s, const pl_scenario *sc, const pl_sim_options *o,
                 struct pl__capture *capture, char *err, size_t err_len);

/* pl_sim_run with a capture, for the shrinker's explanation (run.c). The
 * options must not need PCT's horizon measured. */
int pl__sim_run_captured(const pl_scenario *sc, const pl_sim_options *o,
                         struct pl__capture *capture, pl_sim_result *out);
void pl__sim_finish(pl__sim *s);

/* Quiescence probes (check_probe.c). A timer-quiescent point: nothing is
 * runnable, no I/O delivery or remote wake is in flight, and a timer is
 * armed. Each returns true when it raised a finding. */
bool pl__probe_point(pl__sim *s);
/* A spurious wake (is_poll: a spurious poll) of `t` is about to be
 * injected at a timer-quiescent point: probes it first (an injected wake
 * must not hide a lost one). *probed says whether it polled the task:
 * then that probe was the spurious poll. */
bool pl__probe_before_injection(pl__sim *s, pl_task *t, bool is_poll, bool *probed);
/* The virtual time limit is reached: judges every parked task. */
void pl__probe_time_limit(pl__sim *s);
/* Following a task (s->follow): notes the task's wake. */
void pl__follow_wake(pl__sim *s, uint32_t id, uint32_t running);
/* The finding's message gets what the follow-up run saw; by_name names
 * the waking task or the timer's armer (NULL: none). */
void pl__follow_explain(const pl__follow *f, const char *by_name, pl_time progress_ns,
                        pl_finding *finding);
/* Final quiescence: stale wakers, then probes, then deadlock. */
void pl__oracle_quiescence(pl__sim *s);


/* The name of task `id` of this run, even once it was freed. */
const char *pl__run_name_of(const pl__sim *s, uint32_t id);

/* The task table (tasks.c). reserve makes it hold ids up to `id`: the
 * records past the latest spawned id stay unwritten (on_spawn writes an
 * id's whole record before counting it). 0, PL_EMSGSIZE or PL_ENOMEM
 * (the table is then unchanged). */
int pl__tasks_reserve(pl__sim *s, uint32_t id);
/* The interned kind equal to *key, made on first use; NULL when out of
 * memory. Valid until pl__tasks_free. pl__spawn_kind_fast is the same,
 * the latest spawn's kind tested inline (on_spawn's loop of spawns). */
const pl__spawn_kind *pl__spawn_kind_of(pl__sim *s, const pl__spawn_kind *key);
static inline const pl__spawn_kind *pl__spawn_kind_fast(pl__sim *s, const pl__spawn_kind *key);
/* Frees the table and the kinds (pl__sim_finish). */
void pl__tasks_free(pl__sim *s);

/* The observer's task table, for the checkers and strategies (oracle.c). */
uint32_t pl__oracle_live_clones(const pl__task_info *ti);
uint32_t pl__oracle_clone_holder(const pl__task_info *ti, uint32_t id);
const char *pl__oracle_holder_name(pl__sim *s, uint32_t id);
bool pl__oracle_is_parked(const pl__task_info *ti);
/* Asserts the task table's invariants (PL__SIM_ASSERT, every build): the
 * table covers every spawned id, no poll is in progress, every entry has
 * a kind, a live entry is the task of its id, a task's busy-loop count is within its self-wakes,
 * and stale_tasks counts the entries with stale wakes. O(tasks): once per
 * run, at its end. */
void pl__oracle_check(const pl__sim *s);
/* Consecutive polls of task `id` that woke only itself (0: unknown id). */
uint32_t pl__oracle_self_wakes(const pl__sim *s, uint32_t id);

/* Async backtraces (backtrace.c; the per-poll hooks are backtrace.h's).
 * At a PENDING poll_end the chain found is kept as the task's. */
void pl__bt_parked(pl__sim *s, pl__task_info *ti);
void pl__bt_free(pl__sim *s);
/* ", spawned at outbox.c:120 in main" (or "" when unknown) into buf. */
void pl__bt_spawn_text(const pl__task_info *ti, char *buf, size_t len);
/* "worker (outbox.c:124 in worker_poll) > pl_notified": task `id`'s chain
 * at its latest PENDING poll ("" when none was recorded). */
void pl__bt_chain_text(const pl__sim *s, uint32_t id, char *buf, size_t len);
/* Appends task `id` to the finding's parked tasks (pl_finding.tasks),
 * when `fresh` (the finding was raised by the caller just now). */
void pl__bt_note(pl__sim *s, bool fresh, uint32_t id);
/* The line a finding's message gives a parked task: "\n<indent>parked in:
 * CHAIN" (nothing when no chain was recorded), appended at buf + *used. */
void pl__bt_append(const pl__sim *s, uint32_t id, const char *indent, char *buf, size_t len,
                   size_t *used);
/* For a finding about one task (lost wakeup, stale waker, orphan) raised
 * just now (`fresh`): notes it and appends its chain and spawn site to
 * the message. */
void pl__bt_describe(pl__sim *s, bool fresh, uint32_t id);

static inline char *pl__sim_decision_text(const pl__sim *s) { return s->decision_text; }

/* By pointer: one pl_spawn site passes the same literals every time, and
 * equal text at two addresses only makes two kinds that say the same. */
static inline bool pl__spawn_kind_is(const pl__spawn_kind *k, const pl__spawn_kind *key)
{
    return k->name == key->name && k->root == key->root && k->where == key->where &&
           k->func == key->func;
}

static inline const pl__spawn_kind *pl__spawn_kind_fast(pl__sim *s, const pl__spawn_kind *key)
{
    if (s->kind_last != NULL && pl__spawn_kind_is(s->kind_last, key)) {
        return s->kind_last;
    }
    return pl__spawn_kind_of(s, key);
}

/* The task being polled (NULL: none). */
static inline pl_task *pl__sim_polled(const pl__sim *s)
{
    return s->polling != 0 ? s->tasks[s->polling].task : NULL;
}

/* The observer (oracle.c): records events and the task table, raises
 * nothing, and forwards to the checkers' event hooks. */
extern const pl_observer pl__sim_observer;
/* The poll watch's hooks (oracle.c), installed in s->watch by pl__sim_init. */
void pl__oracle_watch_init(pl__sim *s);

/* ---- Checkers: one file per family, each with init, event hooks and a
 * verdict where it has one. The waker contract's hooks are in
 * check_contract.h (oracle.c alone calls them). Every finding of a run
 * is raised by one of these files. */

/* The wait-condition checker (check_wait.c): a parked task with a declared
 * wait condition (pl_wait_declare in its latest poll) that holds is a
 * lost_wakeup finding. pl__check_waits looks at every parked task,
 * pl__check_wait_of at task `id` only. Each returns true when it raised
 * a finding, and does nothing once one exists. Only at probe points. */
bool pl__check_waits(pl__sim *s);
bool pl__check_wait_of(pl__sim *s, uint32_t id);

/* Budgets inside one poll (check_budget.c): init reads the bounds; the
 * two hooks record a livelock finding and leave the poll through
 * s->escape when it is armed; oracle.c calls them when a bound is
 * crossed. */
void pl__budget_init(pl__sim *s, const pl_sim_options *o);
void pl__budget_sub_polls(pl__sim *s);
void pl__budget_wakes_in_poll(pl__sim *s);

/* Leaks (check_leaks.c): the verdict at the end of a clean run, after the
 * teardown: waker clones alive, tasks still allocated. */
void pl__leaks_verdict(pl__sim *s);

/* Properties (check_props.c): pl_always and pl_eventually are its event
 * hooks (sim.h's macros); the verdict fails the pl_eventually sites whose
 * latest evaluation was false. */
void pl__props_verdict(pl__sim *s);

/* The run's own verdicts (check_run.c). pl__run_judge consults the
 * checkers' verdicts once pl_run returned `rc`: quiescence (PL_EDEADLK),
 * an executor error, properties, then the scenario's check. */
void pl__run_setup_failed(pl__sim *s, int rc);
/* Records why a call of the simulator's API refused ("pl_sim_node_add:
 * host '192.168.0.1' of node 'db' is outside 10.0.0.0/8"), for the
 * setup error that may follow; returns rc, so a refusal reads
 * `return pl__run_call_error(s, PL_EINVAL, "...", ...)`. s may be NULL
 * (no run: nothing to record). */
__attribute__((format(printf, 3, 4))) int pl__run_call_error(pl__sim *s, int rc, const char *fmt,
                                                             ...);
/* what: NULL, or a detail after "simulator out of memory: ". */
void pl__run_out_of_memory(pl__sim *s, const pl_task *t, const char *what);
void pl__run_judge(pl__sim *s, const pl_scenario *sc, void *state, int rc);

/* What runs now, for an asynchronous reader: the CLI's CPU-time budget
 * (isolate/cpu_budget.h) reads it from a signal handler. Kept only once
 * a budget is armed (`on`, set by pl__cpu_budget_arm in a CLI child,
 * which runs one simulation at a time): other programs, whose threads
 * may each run a simulation, never write it. Plain stores on the
 * executor thread; volatile so that every store happens and every read
 * is fresh. `task` is the task being polled (NULL: none); while it is
 * set, the task is alive and its id, poll count and name do not change. */
typedef struct pl__sim_progress {
    bool on;                      /* a budget is armed: the fields below are kept */
    volatile uint64_t run;        /* pl_sim_run calls begun since it was armed */
    volatile uint64_t step;       /* of the poll in progress */
    volatile int64_t time_ns;     /* virtual time at its start */
    pl_task *volatile task;
} pl__sim_progress;

extern pl__sim_progress pl__progress;

/* A poll of t begins. */
static inline void pl__progress_poll(const pl__sim *s, pl_task *t)
{
    if (pl__progress.on) {
        pl__progress.step = s->step;
        pl__progress.time_ns = s->now;
        pl__progress.task = t;
    }
}

/* No poll in progress (one ended, or was abandoned). */
static inline void pl__progress_idle(void)
{
    if (pl__progress.on) {
        pl__progress.task = NULL;
    }
}

/* A run begins. */
static inline void pl__progress_run(void)
{
    if (pl__progress.on) {
        pl__progress.task = NULL;
        pl__progress.run++;
    }
}

/* Site tables (sim.c). The site of `key`, *created saying it is new
 * (zeroed but for its key); NULL when out of memory. The pointer holds
 * until the next lookup. */
pl__site *pl__site_lookup(pl__site_table *t, uint64_t key, bool *created);
void pl__site_table_free(pl__site_table *t);

/* Where a task was spawned, as a run record keeps it. */
typedef struct pl__spawn_site {
    const char *where; /* "file:line" of its pl_spawn (static); NULL: unknown */
    const char *func;
} pl__spawn_site;

/* Result internals, for the CLI (run.c). */
typedef struct pl__run_record {
    pl__dec_record *decisions;
    size_t decisions_len;
    bool decisions_truncated;
    uint64_t *checkpoints;
    size_t checkpoints_len;
    pl__trace_rec *events;
    size_t events_len;
    pl__dec_knobs knobs; /* the run's; as text only when a replay or rerun needs it */
    char scenario[64];
    char *names_blob;       /* "\0"-separated task names, by id (1-based) */
    pl__spawn_site *spawn_sites; /* by id - 1, names_count of them; log-only */
    char *texts;            /* the texts USER events point into (pl__trace_texts) */
    size_t texts_len;
    struct pl__decision_note *notes; /* a crashed run's decision subjects (its crash
                                        ring's), for the shrinker; NULL otherwise */
    size_t notes_len;
    size_t names_len;
    uint32_t names_count;
    /* Coverage: decisions consulted and deviated from 0, per kind, and
     * the PL_BUGGIFY sites the run met, in the order it met them (their
     * strings are the program's literals). */
    uint64_t consulted[PL_DECIDE__COUNT];
    uint64_t deviated[PL_DECIDE__COUNT];
    pl__site *buggify;
    size_t buggify_len;
    char *files_blob;       /* every disk's paths, by node (pl__disk_run_names) */
    char node_names[PL_SIM_NODES_MAX + 1][33]; /* by node index; "" when none */
    size_t files_len;
    uint32_t files_count;
} pl__run_record;

/* The buggify site of `key` in a finished run, or NULL. */
const pl__site *pl__run_buggify_site(const pl__run_record *rec, uint64_t key);

/* A source file's base name: what site keys hash and reports show
 * (instance.c). */
const char *pl__site_base(const char *file);

const pl__run_record *pl__sim_result_record(const pl_sim_result *r);
/* Writes what the node_crash decision at event i of rec did ("node
 * 'server' crashed at 3.000 ms, restarted at 5.000 ms"), v and n its
 * value and range. False for another kind (node_explain.c). */
bool pl__node_explain(char *buf, size_t len, const pl__run_record *rec, size_t i, uint32_t kind,
                      uint32_t v, uint32_t n);
/* The name of task `id` in a finished run, or NULL. */
const char *pl__run_task_name(const pl__run_record *rec, uint32_t id);
/* Where task `id` of the run record `ud` was spawned: its base
 * "file:line" (*func: its function or NULL), or NULL when not known
 * (a pl__trace_spawn_site_fn). */
const char *pl__run_spawn_site(void *ud, uint32_t id, const char **func);

#endif
