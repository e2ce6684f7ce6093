/* pollen/sim.h: the deterministic simulator, scenarios, properties, the CLI.
 *
 * The simulator is a pl_system: the same executor runs on it unchanged,
 * with a virtual clock that jumps to the next deadline when nothing is
 * runnable, an in-memory reactor (pipes, stream and datagram sockets on
 * loopback and on simulated hosts linked by a faulty network:
 * pollen/sim_net.h) and one decision stream from which every
 * nondeterministic choice is drawn. A seed, a replay file or a fuzzer
 * input therefore reproduces a run exactly, down to the trace hash.
 *
 * Oracles watch every poll through the executor's observer hooks and
 * report findings (see pl_finding_kind). A scenario is a program written
 * the way users write their code: a setup that spawns tasks and a check
 * that runs after them.
 *
 * Thread rules. A simulated run lives on the thread that starts it
 * (pl_sim_run, pl_sim_campaign and the functions that run scenarios): its
 * executor, its simulated system, the oracles and the scenario's setup,
 * tasks and check all run there, and the current run is per thread, so
 * different threads may run simulations at the same time without sharing
 * anything. A thread runs one simulation at a time. A scenario must not
 * reach its run from another thread: under the simulator even
 * pl_remote_waker_wake belongs on the run's thread, since a wake from
 * another thread would make the run depend on the OS scheduler. The
 * scenario registry (pl_scenarios, pl_scenario_find) and the finding
 * names are read-only: any thread. pl_main is a whole program (it may
 * fork and install signal handlers): call it from main() only.
 */
#ifndef POLLEN_SIM_H
#define POLLEN_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/pollen.h"
#include "pollen/sim_net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Scenarios -------------------------------------------------------- */

typedef struct pl_scenario {
    const char *name;      /* unique; [a-z0-9_]+ */
    const char *summary;   /* one line for `pollen list` */
    size_t state_size;     /* bytes of zeroed state handed to setup/check */
    /* Spawns the scenario's tasks. Returns 0 or a negative code (a setup
     * error is reported as an assertion finding). */
    int (*setup)(pl_executor *ex, void *state);
    /* Runs after the executor went idle, all tasks having finished.
     * Returns 0, or nonzero after writing why into msg (an assertion
     * finding). May be NULL. */
    int (*check)(pl_executor *ex, void *state, char *msg, size_t msg_len);
    /* Releases what setup kept: task handles (pl_task_release), I/O
     * objects, memory. Runs once at the end of every run, whether setup,
     * the run or check failed, in the same order under the simulator and
     * on the real backend: after pl_executor_cancel_all (every unfinished
     * task cancelled and its future dropped, so no task still uses the
     * state) and before pl_executor_destroy (the executor is alive, so
     * handles may be released). It must not spawn or poll. May be NULL. */
    void (*teardown)(void *state);
    /* Known-bug scenarios name the finding they must produce
     * ("lost_wakeup"); NULL for scenarios that must stay clean. */
    const char *expect;
    pl_time time_limit_ns; /* virtual time budget; 0: 1 hour */
    const char *source_file; /* set by PL_SCENARIO: pl_sometimes sites of this file
                                that a campaign never reaches are reported */
    /* The quiet phase (docs/simulator.md, "A quiet phase and liveness"):
     * 0 (default) none, and the run draws and does exactly what it did
     * without these fields. Otherwise, once the virtual clock reaches
     * quiet_after_ns, no fault is injected any more (the fault kinds of
     * the decision stream are no longer consulted; scheduling, latencies
     * and timer lateness go on), every link between hosts heals, paused
     * nodes resume and crashed nodes restart. quiet_deadline_ns later (0:
     * 1 s), or when the run ends before that, the liveness is judged:
     * every pl_eventually site must hold and `liveness` must pass, or the
     * run is a liveness finding; a run judged at the deadline ends there
     * (its check then runs with tasks still live). Both times must leave
     * the run inside its time limit (pl_sim_run: PL_EINVAL). */
    pl_time quiet_after_ns;
    pl_time quiet_deadline_ns;
    /* What must have happened once faults stopped ("the client finished
     * its 20 requests"): returns 0, or nonzero after writing what never
     * happened into msg (a liveness finding). Judged only with a quiet
     * phase; runs on the run's thread with the tasks still live and must
     * not spawn or poll. May be NULL (pl_eventually alone is judged). */
    int (*liveness)(pl_executor *ex, void *state, char *msg, size_t msg_len);
} pl_scenario;

/* Registers a scenario in the pl_scenarios linker section, so a binary
 * lists every scenario linked into it without a central table:
 *   PL_SCENARIO(my_relay, .name = "my_relay", .setup = relay_setup, ...);
 */
#define PL_SCENARIO(ident, ...)                                             \
    static const pl_scenario ident = {.source_file = __FILE__, __VA_ARGS__}; \
    __attribute__((used, section("pl_scenarios"))) static const pl_scenario \
        *const ident##__registration = &ident

/* Scenarios in a static library. A linker takes an object out of a
 * static library only when something refers to one of its symbols, and
 * nothing refers to a PL_SCENARIO: a library's scenarios are dropped, and
 * pl_main then refuses to run with none. Either link the library whole
 * (meson: `link_whole: lib`; ld: -Wl,--whole-archive lib.a
 * -Wl,--no-whole-archive), or mark each scenario file with
 * PL_SCENARIO_FILE(tag) and name it next to main() with
 * PL_SCENARIO_USE(tag), which refers to the file's symbol so the linker
 * keeps it (a tag is a C identifier, unique in the program):
 *   relay.c:  PL_SCENARIO_FILE(relay);   PL_SCENARIO(relay, ...);
 *   main.c:   PL_SCENARIO_USE(relay);    int main(...) { return pl_main(...); }
 */
#define PL_SCENARIO_FILE(tag)                  \
    extern const char pl__scenario_file_##tag; \
    const char pl__scenario_file_##tag = 0
#define PL_SCENARIO_USE(tag)                                                \
    extern const char pl__scenario_file_##tag;                              \
    __attribute__((used)) static const char *const pl__scenario_use_##tag = \
        &pl__scenario_file_##tag

/* Every registered scenario, in link order; *count receives how many. */
const pl_scenario *const *pl_scenarios(size_t *count);
const pl_scenario *pl_scenario_find(const char *name);

/* For check(): writes the formatted reason into msg and returns 1, so a
 * check reads `return pl_check_fail(msg, len, "got %d", x);`. */
__attribute__((format(printf, 3, 4))) int pl_check_fail(char *msg, size_t msg_len,
                                                        const char *fmt, ...);

/* ---- Findings --------------------------------------------------------- */

/* The numbering is part of the replay and JSON formats: append only.
 * The process exit status of `pollen run` is 10 + the kind of the first
 * finding (0 when clean, 2 for bad usage, 3 for an internal error). */
typedef enum pl_finding_kind {
    PL_FINDING_NONE = 0,
    PL_FINDING_ORPHAN = 1,           /* PENDING with no live waker clone and no wake */
    PL_FINDING_LOST_WAKEUP = 2,      /* a parked task progresses when probed */
    PL_FINDING_DEADLOCK = 3,         /* parked tasks, no probe progress */
    PL_FINDING_STALE_WAKER = 4,      /* woken only through a superseded waker, then stuck */
    PL_FINDING_POLL_AFTER_READY = 5,
    PL_FINDING_DOUBLE_DROP = 6,
    PL_FINDING_WAKER_LEAK = 7,       /* waker clones never dropped */
    PL_FINDING_TASK_LEAK = 8,        /* tasks never finished or released */
    PL_FINDING_LIVELOCK = 9,         /* busy self-wakes, steps without time or progress, a
                                        poll that spins or never returns */
    PL_FINDING_ASSERTION = 10,       /* pl_always, pl_eventually, pl_sometimes, check() */
    PL_FINDING_NONDETERMINISM = 11,  /* same seed, different trace */
    PL_FINDING_CRASH = 12,           /* user code killed by a signal */
    PL_FINDING_LINEARIZABILITY = 13, /* a client history no order explains, or one too large
                                        to check (pollen/sim_history.h) */
    PL_FINDING_LIVENESS = 14,        /* after the quiet phase's deadline, a pl_eventually
                                        site or the scenario's liveness check still fails */
    PL_FINDING__COUNT
} pl_finding_kind;

const char *pl_finding_name(pl_finding_kind kind);      /* "lost_wakeup" */
int pl_finding_from_name(const char *name);             /* kind or PL_EINVAL */

/* One frame of a parked task's async backtrace: a future whose poll
 * returned PENDING, and where it awaited (the PL_AWAIT or PL_YIELD that
 * returned PENDING): unknown (NULL, 0) for the innermost future and for
 * futures written by hand without the coroutine macros. The strings are
 * the program's own static strings (vtable names, __FILE__, __func__):
 * valid as long as the program runs, in a fork of it too. */
typedef struct pl_finding_frame {
    const char *future;      /* the future's vtable name */
    const char *file;        /* base name of the await's file; NULL: unknown */
    const char *function;    /* the function of the await */
    int line;
} pl_finding_frame;

#define PL_FINDING_FRAMES_MAX 8
#define PL_FINDING_TASKS_MAX 4

/* A node of a parked task's backtrace tree (pl_finding_task.tree): a
 * frame and its depth, 0 for the task's own future; a node's children
 * are the nodes after it one deeper, up to the next node as shallow as
 * it. */
typedef struct pl_finding_node {
    pl_finding_frame frame;
    uint32_t depth;
} pl_finding_node;

/* The tree's nodes kept: the chain's PL_FINDING_FRAMES_MAX and 16 of
 * the other branches, as deep as the chain at most. */
#define PL_FINDING_TREE_MAX 24

#define PL_FINDING_NAME_MAX 64

/* A task a finding names as parked (deadlock, lost wakeup, stale waker,
 * orphan, time limit), with the chain of futures it was parked in at its
 * latest PENDING poll, outermost (the task's own future) first, and the
 * tree of them: a future that polls several children (a join, a select,
 * a timeout) is parked in every one that returned PENDING. `frames` is
 * the tree's first branch, the children polled first (the chain);
 * `tree` is every branch, in pre-order (a future, then each child's
 * subtree, the chain's child first), so a one-branch task's tree is its
 * frames with depths 0, 1, 2... A frame's await site is the await that
 * returned PENDING in it (a coroutine awaits one child at a time); a
 * PL_YIELD names its site on the first branch only. The
 * finding owns the task's name (a node's task is named "node/task" by a
 * table the run frees); the other strings are the program's own static
 * strings, valid in a fork of it too, so a finding may be copied,
 * kept after its run and sent to another process of the same binary. */
typedef struct pl_finding_task {
    uint32_t id;
    uint32_t frames_len;      /* frames kept (at most PL_FINDING_FRAMES_MAX) */
    bool frames_cut;          /* deeper frames were left out */
    char name[PL_FINDING_NAME_MAX]; /* the task's name, cut to fit, NUL-terminated */
    const char *spawn_site;   /* "outbox.c:120": where pl_spawn was called; NULL: unknown */
    const char *spawn_function;
    pl_finding_frame frames[PL_FINDING_FRAMES_MAX];
    uint32_t tree_len;        /* nodes kept (at most PL_FINDING_TREE_MAX) */
    bool tree_cut;            /* deeper or wider nodes were left out */
    uint32_t tree_branches;   /* its leaves kept: more than 1, the task waits on several */
    pl_finding_node tree[PL_FINDING_TREE_MAX];
} pl_finding_task;

typedef struct pl_finding {
    pl_finding_kind kind;
    uint32_t task_id;        /* 0 when no task is involved */
    char task_name[PL_FINDING_NAME_MAX];
    uint32_t task_polls;     /* polls of that task so far */
    pl_time time_ns;         /* virtual time */
    uint64_t step;           /* polls since the run began */
    char message[1024];      /* what happened, in words */
    uint32_t thread_id;      /* the simulated thread (pollen/thread.h) that raised it, outside
                                any poll; 0 with thread_name "": thread 0 or no threads */
    char thread_name[PL_FINDING_NAME_MAX];
    uint32_t tasks_len;      /* parked tasks described below (the first ones) */
    pl_finding_task tasks[PL_FINDING_TASKS_MAX];
} pl_finding;

/* A scenario whose setup returns an error never runs: the run records an
 * assertion finding whose message starts with PL_SIM_SETUP_FAILED, then
 * the error, then which of the simulator's calls refused and why when
 * one did ("scenario setup failed: invalid argument: pl_sim_node_add:
 * host '192.168.0.5' of node 'db' is outside 10.0.0.0/8"), and
 * pl_finding_is_setup_error tells it from the scenario's own failures. */
#define PL_SIM_SETUP_FAILED "scenario setup failed"
bool pl_finding_is_setup_error(const pl_finding *f);

/* ---- Running one seed ------------------------------------------------- */

typedef enum pl_sim_source {
    PL_SIM_SOURCE_SEED = 0,  /* seeded PRNG */
    PL_SIM_SOURCE_BYTES = 1, /* a byte buffer (libFuzzer input) */
    PL_SIM_SOURCE_LIST = 2,  /* a recorded decision list (replay, shrink) */
    PL_SIM_SOURCE_LIST_BY_KIND = 3, /* the same list, each decision kind reading its
                                       own sub-list: edits of one kind leave the
                                       others aligned (the shrinker's candidates) */
    PL_SIM_SOURCE_PREFIX = 4, /* the list, then past its end the PRNG seeded from
                                 pl_sim_options.prefix_seed (knobs as for
                                 PL_SIM_SOURCE_SEED): a random continuation of a
                                 prefix (`pollen why`) */
} pl_sim_source;

/* Every fault the simulated world injects besides scheduling, in one
 * place. Which classes may fire is said here; how often one fires is the
 * decision stream's (the io_fault, io_latency and timer_late knobs of
 * pl_sim_options.knobs), and each firing is a recorded decision, so runs
 * replay. pl_sim_fault_options_default gives today's behaviour: changing
 * a field changes the runs (and the trace hashes) of every seed. Replay
 * files do not record these options: a replay must be run with the
 * options it was recorded with (the CLI always uses the defaults). */
typedef struct pl_sim_fault_options {
    uint32_t latency_steps;        /* I/O latency is one of 0..latency_steps-1 quanta
                                      (1..PL_SIM_LATENCY_STEPS_MAX; 1: no latency);
                                      default 8 */
    pl_time latency_quantum_ns;    /* one latency step (0..PL_SIM_FAULT_QUANTUM_MAX);
                                      default 100 us */
    bool short_read;               /* reads may return fewer bytes than there are
                                      (default true) */
    bool short_write;              /* writes may take fewer bytes (default true) */
    bool eagain;                   /* spurious PL_EAGAIN on reads, writes, accepts,
                                      datagrams, always followed by readiness (default
                                      true) */
    bool dgram_loss;               /* sendto may lose its datagram (default false:
                                      correct programs compute something else) */
    bool conn_reset;               /* stream reads and writes may break the connection
                                      with PL_ECONNRESET on both ends (default false) */
    uint32_t timer_late_max;       /* a timer may fire up to this many quanta late
                                      (0..PL_SIM_TIMER_LATE_MAX; 0: never); default 4 */
    pl_time timer_late_quantum_ns; /* one lateness step (0..PL_SIM_FAULT_QUANTUM_MAX);
                                      default 1 ms */
    pl_sim_link_options link;      /* every link between two hosts until pl_sim_link_set
                                      changes one (pollen/sim_net.h); default
                                      pl_sim_link_options_default */
} pl_sim_fault_options;

#define PL_SIM_LATENCY_STEPS_MAX 1024u
#define PL_SIM_TIMER_LATE_MAX 1024u
#define PL_SIM_FAULT_QUANTUM_MAX PL_S

/* Fills o with the defaults above. Any thread. */
void pl_sim_fault_options_default(pl_sim_fault_options *o);
/* 0 when every field is in range, else PL_EINVAL with the first bad
 * field and its range written into err (err_len bytes; NULL: none). Any
 * thread. pl_sim_run validates the options it is given the same way. */
int pl_sim_fault_options_validate(const pl_sim_fault_options *o, char *err, size_t err_len);

/* ---- Decision knobs --------------------------------------------------- */

/* How often a run leaves production's choice (FIFO order, no fault, no
 * delay), per kind of decision. A kind that is off always answers
 * production's choice and is never consulted: it draws nothing and is not
 * recorded. A kind that is on leaves production's choice with probability
 * prob / PL_SIM_KNOB_PROB_ONE at each decision the seeded source makes
 * (a byte or list source ignores prob). */
#define PL_SIM_KNOB_PROB_ONE 65536u

typedef struct pl_sim_knob {
    bool enabled;  /* false: never consulted */
    uint32_t prob; /* 0..PL_SIM_KNOB_PROB_ONE: 0 never leaves choice 0, the top always */
} pl_sim_knob;

/* Every kind's knob, named as in the knobs text ("timer_late=0,cancel=off")
 * and in that order; pl_sim_knobs_default's values after each. */
typedef struct pl_sim_knobs {
    pl_sim_knob schedule;      /* which runnable task is polled next: 32768 */
    pl_sim_knob io_order;      /* which of the ready I/O sources fires next: 32768 */
    pl_sim_knob timer_order;   /* which of the due timers fires next: 32768 */
    pl_sim_knob timer_late;    /* a timer fires late (pl_sim_fault_options): 4096 */
    pl_sim_knob spurious_wake; /* a parked task is woken through its waker: 1024 */
    pl_sim_knob spurious_poll; /* a parked task is polled without a wake: off (extra
                                  polls hide lost wakeups) */
    pl_sim_knob wake_delay;    /* a wake from another thread is held back: 8192 */
    pl_sim_knob cancel;        /* an abortable task is cancelled at an await: 1024 */
    pl_sim_knob io_fault;      /* short read or write, EAGAIN, error, loss: 2048 */
    pl_sim_knob io_latency;    /* simulated I/O is delivered later: 4096 */
    pl_sim_knob buggify_site;  /* a PL_BUGGIFY site is enabled for the run: 16384 */
    pl_sim_knob buggify_fire;  /* an enabled site fires: 8192 */
    pl_sim_knob probe;         /* the parked tasks are probed where only a timer can
                                  fire next (lost wakeups): 4096 */
    pl_sim_knob disk_latency;  /* a file operation completes later: 8192 */
    pl_sim_knob disk_fault;    /* EIO, a short read or write: 1024 */
    pl_sim_knob disk_corrupt;  /* a read returns a flipped bit: 1024 */
    pl_sim_knob disk_lose;     /* at a crash, unsynced writes are lost or torn: 32768 */
    pl_sim_knob link_latency;  /* a crossing between hosts takes longer: 16384 */
    pl_sim_knob link_loss;     /* a datagram between hosts is lost: 1024 */
    pl_sim_knob link_dup;      /* a datagram between hosts arrives twice: 512 */
    pl_sim_knob link_reorder;  /* a datagram between hosts is overtaken: 1024 */
    pl_sim_knob link_reset;    /* a stream write between hosts breaks its connection: 128 */
    pl_sim_knob partition;     /* a link is cut for a while: 256 */
    pl_sim_knob clog;          /* a link's traffic is held for a while: 256 */
    pl_sim_knob node_crash;    /* a crashable node crashes at a wait: 256 */
    pl_sim_knob crash_silence; /* a crashed node's peer hears nothing, not a reset: 16384 */
    pl_sim_knob thread_switch; /* another simulated thread runs: 8192 */
    pl_sim_knob cond_spurious; /* a condition-variable wait returns unsignalled: 1024 */
    pl_sim_knob node_pause;    /* a pausable node pauses at a wait: 256 */
    pl_sim_knob node_isolate;  /* an isolatable node is cut from every peer at a wait: 256 */
    pl_sim_knob random;        /* user code's randomness (pollen/random.h, and rand(),
                                  random(), getrandom() in a simulation binary): 65536,
                                  every value uniform; off: every value 0 */
    pl_sim_knob clock_offset;  /* a skewed node's clock starts ahead, at its first boot:
                                  16384 */
    pl_sim_knob clock_drift;   /* a skewed node's clock runs fast or slow: 16384 */
    pl_sim_knob clock_jump;    /* a skewed node's wall clock steps at a wait: 256 */
} pl_sim_knobs;

/* Fills k with the defaults above. Any thread. */
void pl_sim_knobs_default(pl_sim_knobs *k);

typedef struct pl_sim_options {
    pl_sim_source source;
    uint64_t seed;
    const uint8_t *bytes;          /* PL_SIM_SOURCE_BYTES; borrowed */
    size_t bytes_len;
    const void *decisions;         /* PL_SIM_SOURCE_LIST: internal records; borrowed */
    size_t decisions_len;
    const pl_sim_knobs *knob_values; /* borrowed for the call; NULL (default):
                                        pl_sim_knobs_default. The swarm strategy draws
                                        its own (then it must be NULL: PL_EINVAL) */
    const char *knobs;             /* knobs text on top of those ("timer_late=0,
                                      cancel=off", pl_sim_knobs' names; a value is off,
                                      on or 0..65536), and the clock kinds' bounds
                                      (clock_offset_max_ms 0..128, clock_drift_max_ppm
                                      0..12800, clock_jump_max_ms 0..128; defaults the
                                      largest: pollen/sim_node.h); NULL: none */
    const char *strategy;          /* "random" (default), "pct:3", "bounded:2", "swarm" */
    uint64_t steps_without_progress_max; /* livelock: polls with no time passing and no
                                            completion; 0: 1000000 */
    uint32_t self_wakes_max;       /* livelock: consecutive self-woken polls; 0: 10000 */
    pl_time poll_cost_ns;          /* virtual time each poll costs, 0 (default) to
                                      PL_SIM_POLL_COST_MAX: the clock then also moves
                                      while tasks stay runnable (busy work takes time) */
    uint64_t sub_polls_max;        /* livelock: pl_poll calls inside one task poll (a poll
                                      spinning on a child that stays PENDING); 0: 1000000 */
    uint64_t wakes_in_poll_max;    /* livelock: wakes of the polled task by itself inside
                                      one poll (a wake_by_ref loop); 0: 1000000 */
    bool rotate_wakers;            /* fresh waker identity per poll (default true) */
    bool keep_events;              /* keep the event log (timeline, divergence) */
    bool keep_decisions;           /* record decisions (replay files); default true */
    const pl_sim_fault_options *faults; /* borrowed for the call; NULL (default):
                                           pl_sim_fault_options_default */
    uint64_t pct_horizon;          /* pct:D without K: the change-point horizon, as
                                      pl_sim_pct_estimate's steps (measure once, pass it
                                      to every seed); 0: pl_sim_run measures it first */
    uint64_t break_at_step;        /* as step N begins (the step numbers of findings and
                                      timelines), say so on stderr and raise(SIGTRAP): a
                                      debugger stops there; without one the process dies
                                      of it. 0 (default): never */
    pl_time time_limit_ns;         /* the run's virtual time limit; 0 (default): the
                                      scenario's (pl_scenario.time_limit_ns). The shrinker
                                      lowers it for a finding at the limit, and replay
                                      files record it ("time-limit-ns") */
    uint64_t prefix_seed;          /* PL_SIM_SOURCE_PREFIX: seeds the decisions past the
                                      list (`seed` stays the recorded run's, which the
                                      list replays); ignored by the other sources */
} pl_sim_options;

void pl_sim_options_default(pl_sim_options *o);

/* Whether clock_gettime, gettimeofday and time read a run's virtual time
 * inside a run (true, the default; docs/simulator.md) or the real
 * clocks. Returns the previous setting. Process-wide, and safe to call
 * from a signal handler: a handler that must read the real clock while
 * it interrupts a run (libFuzzer's timeout, which fuzz/fuzz_scenario.c
 * wraps so) turns routing off around its own reads and back on. */
bool pl_sim_route_clocks(bool on);

/* The largest poll_cost_ns pl_sim_run accepts (PL_EINVAL above it). */
#define PL_SIM_POLL_COST_MAX PL_S

typedef struct pl_sim_result {
    pl_finding finding;            /* kind PL_FINDING_NONE when clean */
    uint64_t hash;                 /* XXH3-64 of the trace */
    uint64_t steps;                /* polls */
    uint64_t events;
    pl_time time_ns;               /* virtual time at the end */
    uint32_t tasks;                /* tasks spawned */
    uint64_t decisions;            /* decisions consulted */
    uint64_t nonzero_decisions;    /* decisions that left production's order */
    bool diverged;                 /* list source: the run asked for other decisions */
    char divergence[256];          /* where, in words */
    bool discarded;                /* a pl_assume failed: no finding, not judged */
    char discarded_by[192];        /* "pl_assume(n > 0) failed (gen.c:12, in make)" */
    void *internal;                /* decisions and events; pl_sim_result_free */
} pl_sim_result;

/* Runs `sc` once. Returns 0 when the run happened (look at
 * out->finding), or a negative code for bad options (PL_EINVAL, with the
 * reason in out->finding.message) or PL_ENOMEM. Always call
 * pl_sim_result_free afterwards.
 * A poll that hits sub_polls_max or wakes_in_poll_max is left with a
 * longjmp after the livelock finding is recorded: the spinning task's
 * future is abandoned mid-poll, so its drop never runs (what it holds
 * stays held; its memory is freed with the executor). A poll that loops
 * without calling pl_poll or waking itself cannot be caught in-process:
 * the CLI's CPU-time budget (--poll-budget) catches it. */
int pl_sim_run(const pl_scenario *sc, const pl_sim_options *opts, pl_sim_result *out);
void pl_sim_result_free(pl_sim_result *r);

/* Writes a replay file for a finished run (see the format in
 * sim/src/replay.h). Returns 0 or a negative code. */
int pl_sim_write_replay(const pl_scenario *sc, const pl_sim_options *opts,
                        const pl_sim_result *r, const char *path);

/* Replays a file: reads it, runs its scenario with its decisions, and
 * compares. Returns 0 when the run matched (same hash, same finding),
 * PL_EFORMAT/PL_EVERSION/PL_ENOENT for a bad file (reason in err), or 1
 * when the run differed (where, in err). out receives the run. */
int pl_sim_replay_file(const char *path, pl_sim_result *out, char *err, size_t err_len);

/* ---- The simulated disk ------------------------------------------------
 * Under the simulator the file futures (pollen/file.h) run on an
 * in-memory file system, one per simulation, created at the run's first
 * pl_dir_open and freed with the run. Written data is visible at once and
 * durable only after a sync of the file; a created, renamed or unlinked
 * entry only after a sync of its directory. docs/simulator.md, "Files and
 * the simulated disk", has the whole model and the decision kinds
 * (disk_latency, disk_fault, disk_corrupt, disk_lose). */

/* Bytes one disk holds: durable bytes, unsynced writes (each plus 64
 * bytes) and names. A write past it fails with PL_ENOSPC. */
#define PL_SIM_DISK_BYTES_MAX ((uint64_t)64 << 20)
/* Files and directories one disk holds (PL_ENOSPC beyond). */
#define PL_SIM_DISK_FILES_MAX 4096u
/* Open file and directory handles (PL_EMFILE beyond). */
#define PL_SIM_DISK_HANDLES_MAX 1024u
/* A delayed file operation completes 1 to PL_SIM_DISK_LATENCY_STEPS - 1
 * quanta later (the disk_latency decision; 0: at once). */
#define PL_SIM_DISK_LATENCY_STEPS 16u
#define PL_SIM_DISK_LATENCY_QUANTUM_NS (250 * PL_US)

/* Crashes the disk of the run on this thread, as a power cut does: every
 * directory is back to its entries as of its latest sync, files no
 * durable entry names are gone, each remaining file keeps its synced
 * bytes plus the unsynced writes the disk_lose decision lets survive
 * (none, all, or a torn prefix), and every file or directory handle
 * opened before the crash fails with PL_EIO from then on (close it; open
 * the directory again to recover). Call from scenario code inside the
 * run (a poll). Returns how many files lost unsynced writes (0 also when
 * no file was ever opened), or PL_EINVAL outside a simulated run. */
int pl_sim_disk_crash(void);

/* ---- Campaigns (Criterion tests and CI call these) ---------------------- */

typedef struct pl_campaign_result {
    uint64_t runs;
    uint64_t clean;
    uint64_t findings;             /* runs with a finding, plus failed pl_sometimes sites */
    uint64_t first_seed;           /* seed of the first finding (0 without a seed) */
    pl_finding first;              /* the first finding */
    uint64_t distinct_hashes;      /* distinct trace hashes seen (up to 4,194,304 tracked) */
    bool first_has_seed;           /* false: the first finding is about the whole range
                                      (a pl_sometimes site never true, or never reached) */
    bool isolated;                 /* false: the seeds ran in this process, so a crash
                                      in user code ends it (after printing the seed to
                                      stderr) and a hang hangs it; `pollen run` isolates
                                      each seed */
    bool sometimes_judged;         /* the pl_sometimes verdict was given (see below) */
    uint32_t sometimes_sites;      /* sites judged: reached, or written in sc's own file */
    uint32_t sometimes_failed;     /* of those, never true (each one of `findings`) */
    uint64_t discarded;            /* runs a pl_assume discarded (each one of `clean`) */
} pl_campaign_result;

/* A campaign: seeds [seed_lo, seed_hi] of one scenario, in this process,
 * in increasing order (out->isolated is false). A seed that crashes kills
 * the process: while the campaign runs, a handler of the fatal signals
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS) first writes
 * the scenario, the seed and the command that reruns it isolated to
 * stderr, then passes the signal on to the handler installed before (a
 * sanitizer's, the default). A hang is not caught here: give the test a
 * timeout, and run the range with `run` for its watchdog. The CLI's
 * `run` gives the same findings for the same range: each seed judged
 * alike (the determinism check when asked), then, when the range ran to
 * its end (no stop at a finding) and holds at least two seeds, every
 * pl_sometimes site reached and never true, and every site of the
 * scenario's own file never reached, is an assertion finding without a
 * seed. A single seed is never judged on pl_sometimes (sometimes_judged
 * false). Fill with pl_campaign_options_default, then set what differs. */
typedef struct pl_campaign_options {
    uint64_t seed_lo, seed_hi;     /* inclusive; default 0..999 */
    const pl_sim_options *sim;     /* NULL: the defaults; source and seed are set per run */
    bool stop_at_first;            /* default true: stop at the first finding */
    bool check_determinism;        /* run each seed twice: traces that differ are a
                                      nondeterminism finding (`run --check-determinism`) */
} pl_campaign_options;

void pl_campaign_options_default(pl_campaign_options *o);

/* Runs the campaign o describes. Its pl_sometimes verdict sums its own
 * runs' counts, whatever other threads run. Returns 0 (findings in out)
 * or a negative code from pl_sim_run (bad options: PL_EINVAL) or
 * PL_ENOMEM. */
int pl_sim_campaign(const pl_scenario *sc, const pl_campaign_options *o, pl_campaign_result *out);

/* ---- Exploration strategies ------------------------------------------- */
/* The `strategy` option: "random" (default), "swarm", "pct:D" (1 <= D <=
 * 64, optionally "pct:D:K" with an explicit horizon K) or "bounded:K" (0
 * <= K <= 64). pl_sim_run rejects anything else with PL_EINVAL and the
 * reason in the finding's message. Details in sim/src/strategy.h. */

/* PCT's bound (Burckhardt et al., ASPLOS 2010): one run finds a bug of
 * depth `depth` with probability at least 1 / (tasks * steps^(depth-1)),
 * tasks and steps being the most tasks and schedule decisions of a run.
 * Returns 0.0 when depth or tasks is 0; steps 0 counts as 1. */
double pl_sim_pct_guarantee(uint32_t depth, uint32_t tasks, uint64_t steps);

/* Measures what PCT uses as n and k for `sc`: the most tasks spawned and
 * schedule decisions made by its production run (every decision 0) and
 * by 8 PCT runs (seeds 0..7, depth from opts->strategy when it is pct:D,
 * else 3, change points over the production run's steps, opts' knobs).
 * k is also PCT's default change-point horizon (pl_sim_options.pct_horizon).
 * Runs the scenario 9 times, every call: a caller running many seeds
 * measures once and passes k on. opts may be NULL. Returns 0 or a negative code. */
int pl_sim_pct_estimate(const pl_scenario *sc, const pl_sim_options *opts, uint32_t *tasks,
                        uint64_t *steps);

/* Writes the decision knobs a run with `opts` uses (for "swarm", those
 * drawn from opts->seed; then opts->knobs on top) as
 * "schedule=32768,io_order=off,..." into buf, truncated to len - 1
 * bytes like snprintf; a clock bound not at its default follows the
 * kinds (",clock_drift_max_ppm=800"). PL_SIM_KNOBS_TEXT_MAX bytes hold
 * every kind at its longest and every bound ("name=65536" each; knobs.c
 * asserts it at compile time, so a new kind that would not fit fails
 * the build). Returns 0, or
 * PL_EINVAL for a bad strategy or knobs text. opts may be NULL
 * (defaults). */
#define PL_SIM_KNOBS_TEXT_MAX 1024
int pl_sim_knobs_text(const pl_sim_options *opts, char *buf, size_t len);

typedef struct pl_sim_bounded_result {
    uint64_t runs;          /* executions, re-runs of shallower schedules included */
    uint64_t schedules;     /* distinct schedules run (counted once each) */
    uint64_t discarded;     /* of those, the ones a pl_assume discarded: no
                               finding, yet not checked either */
    uint32_t levels_done;   /* every schedule with fewer than this many
                               non-zero decisions ran clean */
    uint64_t level_schedules; /* schedules of level levels_done that ran clean
                               before a stop (the level reached) */
    bool exhausted;         /* every schedule with at most k non-zero decisions ran
                               without a finding (discarded ones included) */
    bool budget_hit;        /* stopped at limits->runs_max */
    bool clock_hit;         /* stopped by limits->time_ns */
    bool truncated;         /* a run outgrew the decision recorder: not exhaustive */
    pl_finding finding;     /* the first finding; kind PL_FINDING_NONE when none */
    uint32_t deviations;    /* non-zero decisions of the failing schedule */
    pl_sim_result run;      /* the failing run (zeroed when none); write it with
                               pl_sim_write_replay */
} pl_sim_bounded_result;

/* What may stop a bounded exploration before it ends. runs_max is
 * deterministic; time_ns is a wall-clock net (`run --time`), read between
 * runs, so a stop by it may fall on another run from one exploration to
 * the next. */
typedef struct pl_sim_bounded_limits {
    uint64_t runs_max; /* executions; 0: no limit */
    pl_time time_ns;   /* wall clock from the call; 0: no limit */
} pl_sim_bounded_limits;

/* Bounded systematic exploration: runs every schedule of `sc` that leaves
 * production's order (decision value 0) in at most k decisions, fewest
 * first (all zero, then each single deviation, then pairs, ...), each
 * deviation any value of any consulted decision of the run, in a fixed
 * order. Runs use a list source built from opts (NULL: defaults; its
 * knobs say which kinds are consulted, so they bound the space). Stops at
 * the first finding, when the space is exhausted, or at a limit (limits
 * may be NULL: none; budget_hit or clock_hit says which, levels_done and
 * level_schedules how far it got). Returns 0 (look at out) or a negative
 * code; always call pl_sim_bounded_result_free afterwards. */
int pl_sim_explore_bounded(const pl_scenario *sc, uint32_t k, const pl_sim_bounded_limits *limits,
                           const pl_sim_options *opts, pl_sim_bounded_result *out);
void pl_sim_bounded_result_free(pl_sim_bounded_result *r);

/* ---- Shrinking --------------------------------------------------------- */

/* The budget of a shrink is its candidate runs, so a shrink is
 * deterministic: the same input shrinks to the same list in the same
 * number of runs on every machine. time_ns is a safety net only (a
 * scenario whose runs are slow): when it stops a shrink the result says
 * so (clock_hit) and may differ from one shrink to the next. */
typedef struct pl_sim_shrink_limits {
    pl_time time_ns;   /* wall-clock safety net; 0: none */
    uint64_t runs_max; /* candidate runs; 0: 100000 */
} pl_sim_shrink_limits;

typedef struct pl_sim_shrink_result {
    pl_finding_kind kind;       /* the finding kept */
    size_t decisions_before;    /* length of the input list */
    size_t nonzero_before;
    size_t decisions_after;     /* length of the shrunk list */
    size_t nonzero_after;
    uint64_t runs;              /* runs spent */
    pl_time elapsed_ns;         /* wall-clock time spent */
    bool budget_hit;            /* a limit stopped it: smaller may exist */
    bool clock_hit;             /* that limit was the wall-clock safety net */
    pl_time limit_before;       /* a finding at the virtual time limit: the limit */
    pl_time limit_after;        /* the smallest that shows the same stuck tasks (the
                                   shrunk run's); both 0 for other findings */
    pl_sim_result run;          /* the shrunk list's run, events kept; its
                                   record holds the shrunk decisions */
    char *explanation;          /* owned: one line per non-zero decision,
                                   '\n'-terminated, in words */
    char message[256];          /* why it failed, when it returns an error */
} pl_sim_shrink_result;

/* Shrinks a decision list (internal records, as pl_sim_options.decisions)
 * that makes `sc` produce a finding of `kind` to the smallest list it can
 * find that still does, smallest meaning fewest non-zero decisions
 * (departures from production's order), then shortest, then smallest
 * value by value: drop the tail, zero whole decision kinds, keep only the
 * last departures, delete chunks, zero chunks, lower values; then each
 * departure alone (the others moved to the moment of the run they were
 * made at), two traded for one, and the bulk passes again, until a whole
 * round changes nothing or the run budget is spent. A finding at the
 * virtual time limit keeps its stuck tasks and gets the smallest limit
 * (whole ms) that still shows them (limit_after; written to the shrunk
 * replay). `base` gives the run's other options (seed, strategy and knobs
 * of the original run: they decide which kinds are consulted); its
 * source and decisions are ignored. limits may be NULL (100000 runs, no
 * wall clock). The result is deterministic (a function of the input and
 * runs_max) unless limits->time_ns stops it (clock_hit). Returns 0;
 * PL_EINVAL when the input does not produce a finding of `kind` (reason
 * in out->message), or for kind PL_FINDING_CRASH (a crash is shrunk with
 * its candidates in child processes: `pollen shrink`, or `run`'s own
 * shrink); or another negative code. Always call
 * pl_sim_shrink_result_free. */
int pl_sim_shrink(const pl_scenario *sc, const pl_sim_options *base, const void *decisions,
                  size_t n, pl_finding_kind kind, const pl_sim_shrink_limits *limits,
                  pl_sim_shrink_result *out);
void pl_sim_shrink_result_free(pl_sim_shrink_result *r);

/* Writes the shrunk run as a replay file with the explanation as '#'
 * comment lines at the top and a "shrunk-from N decisions" note. `base`
 * as given to pl_sim_shrink (its seed and strategy are recorded). Returns
 * 0 or a negative code. */
int pl_sim_write_shrunk_replay(const pl_scenario *sc, const pl_sim_options *base,
                               const pl_sim_shrink_result *r, const char *path);

/* ---- Properties ------------------------------------------------------- */
/* Usable in any code. Under the simulator they become findings; in
 * production pl_always aborts with its message when false and the others
 * cost a branch. */

/* Must hold every time it is evaluated. The message is a printf format
 * and its arguments, so a finding can carry the values that broke it:
 *
 *     pl_always(got == claimed, "recovered %d, claimed %d", got, claimed);
 *
 * They are evaluated and formatted only when the property fails: a
 * holding pl_always costs the test of cond alone. A message that is not
 * a literal goes through "%s". An expression of type void. */
#define pl_always(cond, ...)                                                 \
    ((cond) ? (void)0 : pl__always_failed(__FILE__, __LINE__, __func__, __VA_ARGS__))
/* Must have been true the last time it was evaluated, by quiescence (an
 * assertion finding); in a scenario with a quiet phase, by its deadline
 * (a liveness finding: pl_scenario.quiet_after_ns). */
#define pl_eventually(cond, msg)                                            \
    pl__eventually((cond) != 0, (msg), __FILE__, __LINE__, __func__)
/* Must be true at least once across a campaign of at least two seeds (a
 * single seed is never judged on it). Each site places itself in the
 * pl_sometimes linker section, so a site that is never even reached is
 * reported too. The message is a printf format and its arguments, like
 * pl_always's: the format names the site (in coverage, and across
 * shards), and a site that fails says what its arguments were the last
 * time it was false ("... and never true (last: acked 0 of 8)"). They
 * are evaluated and formatted only on a false evaluation while the site
 * has not been true in the run: once true, it costs a call. Each run
 * counts its own evaluations (in its result's record), and a campaign
 * sums its runs', so runs on two threads count apart; outside a run it
 * counts nothing. */
/* The section is read as an array of these, so the stride must be the
 * size: a compiler may align a static object of 40 bytes to 32, never
 * one whose type asks for 64. */
#ifdef __cplusplus
#define PL__SITE_ALIGN alignas(64)
#else
#define PL__SITE_ALIGN _Alignas(64)
#endif
typedef struct pl__sometimes_site {
    PL__SITE_ALIGN const char *msg;
    const char *file;
    int line;
    const char *func; /* the function the site is written in */
} pl__sometimes_site;
#define PL__SOMETIMES_LAST 160

/* The first of a macro's arguments (the format), pedantic-clean when it
 * is the only one. */
#define PL__FIRST(...)     PL__FIRST_(__VA_ARGS__, 0)
#define PL__FIRST_(a, ...) a

#define pl_sometimes(cond, ...)                                                         \
    do {                                                                                \
        __attribute__((used, section("pl_sometimes"))) static pl__sometimes_site       \
            pl__sometimes_here = {PL__FIRST(__VA_ARGS__), __FILE__, __LINE__, __func__}; \
        if (pl__sometimes(&pl__sometimes_here, (cond) != 0)) {                          \
            pl__sometimes_missed(&pl__sometimes_here, __VA_ARGS__);                     \
        }                                                                               \
    } while (0)

/* The run's premise: when cond is false the run is discarded, neither
 * clean nor a finding (a generated workload the scenario does not test,
 * an input out of the range it checks). The run stops there, no oracle
 * and no check judges it, it never gives a replay file or a shrink, and
 * pl_sim_result.discarded says so; campaigns count discarded runs
 * (pl_campaign_result.discarded) and `pollen run` warns when they are
 * most of its runs. Outside a run (production) it does nothing. */
#define pl_assume(cond) pl__assume((cond) != 0, #cond, __FILE__, __LINE__, __func__)

void pl__always_failed(const char *file, int line, const char *func, const char *fmt, ...)
    PL__PRINTF(4, 5);
void pl__assume(bool ok, const char *expr, const char *file, int line, const char *func);
void pl__eventually(bool ok, const char *msg, const char *file, int line, const char *func);
/* Counts an evaluation of `site` in the current run. True when its
 * message is wanted: false, and the site not yet true in the run. */
bool pl__sometimes(const pl__sometimes_site *site, bool ok);
/* Keeps the formatted message of such an evaluation as the run's last
 * one for the site. */
void pl__sometimes_missed(const pl__sometimes_site *site, const char *fmt, ...) PL__PRINTF(2, 3);

/* Every pl_sometimes site linked into the program; *count receives how
 * many. Campaigns report those never true. */
pl__sometimes_site *pl__sometimes_sites(size_t *count);

/* ---- The CLI ---------------------------------------------------------- */

/* The `pollen` command over every registered scenario plus `extra` (a
 * NULL-terminated array, may be NULL). Users link their scenarios with
 * libpollen-sim and call this from main(). Returns the exit status. With
 * no scenario at all (registered or extra), every command but help and
 * version fails with status 2 and says how to link a static library's
 * scenarios (see PL_SCENARIO_USE). */
int pl_main(int argc, char **argv, const pl_scenario *const *extra);

#ifdef __cplusplus
}
#endif
#endif
