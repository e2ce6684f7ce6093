/* pollen/sim_node.h: nodes of a cluster scenario, their crash and restart.
 *
 * A node is one simulated process: a name, a host address and a boot
 * function that spawns its tasks. Every node runs on the run's one
 * executor, clock and decision stream, so the scheduler's decisions
 * interleave the nodes' tasks like any others. What belongs to a node:
 *
 *   tasks    the ones its boot function spawns, and every task a task of
 *            the node spawns. Reports, findings and the trace's names
 *            call them "node2/worker" (the scenario's own tasks keep
 *            their plain names).
 *   sockets  the ones its tasks open. One that connects or sends unbound
 *            is on the node's host instead of 127.0.0.1, so the links of
 *            pollen/sim_net.h apply between nodes. Bind to the node's
 *            host address (or leave the socket unbound).
 *   disk     one simulated disk per node (pollen/file.h): the files its
 *            tasks open. The scenario's own tasks keep the run's disk.
 *   memory   pl_node_alloc's blocks, made by its tasks.
 *   threads  the simulated threads its code spawns (pollen/thread.h):
 *            what they open and the clock they read are the node's, and
 *            they stop with it (its crash and its pause, below).
 *
 * Crash (pl_sim_node_crash): the node stops as a killed process does.
 * Its tasks are forgotten (no drop of their futures runs; a join of one
 * sees PL_ECANCELED), its sockets are closed without a FIN (peers of its
 * connections read PL_ECONNRESET after a latency, or, by the
 * crash_silence decision per connection, hear nothing: what they write
 * fills the window and waits, as for a host that is gone, until the
 * link's break_after_ns breaks the connection; datagrams to it are
 * lost), its disk crashes (unsynced writes lost by decision, as
 * pl_sim_disk_crash) and its pl_node_alloc blocks are freed. Its
 * threads are killed where they stand: they never run again, their
 * stacks are released, a mutex one held stays locked (it is the node's
 * and dies with it: finishing it is no misuse), and a join of one,
 * waiting at the crash or made later, returns PL_ECANCELED. The leak
 * oracles do not count what the crash discarded. Restart
 * (pl_sim_node_restart) calls the boot function again (the threads of
 * its previous life stay dead); the disk keeps what was durable.
 *
 * End of the run: what a node (or the scenario) still holds open, a
 * listener, a connection, a directory, a file, is released silently, as
 * at a crash but deciding nothing: a correct program may end that way,
 * so it is no finding, and nothing of it leaks.
 *
 * Rules for the program: nodes share nothing but the network. A node's
 * tasks must not hold wakers, handles or memory of another node (a crash
 * would leave them pointing at what it discarded); a node's own state
 * outside its futures goes in pl_node_alloc blocks, or it leaks at a
 * crash.
 *
 * The real backend (`pollen run --real`): the same calls boot the nodes
 * on one real executor, their hosts 10.a.b.c on loopback addresses
 * 127.X.b.c (mapped both ways: code sees 10.a.b.c), their relative paths
 * in a directory of their own removed at the end; the fault calls below
 * return PL_ENOSYS and the node flags draw nothing. docs/simulator.md,
 * "Cluster scenarios on the real backend".
 *
 * Threads: everything here runs on the simulation's thread, inside the
 * run (a scenario's setup, or its tasks' polls).
 */
#ifndef POLLEN_SIM_NODE_H
#define POLLEN_SIM_NODE_H

#include <stdbool.h>
#include <stddef.h>

#include "pollen/executor.h"
#include "pollen/time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nodes one run may declare. */
#define PL_SIM_NODES_MAX 16

typedef struct pl_node_def {
    const char *name; /* [a-z0-9_]+, unique in the run; static storage */
    const char *host; /* its host address, "10.0.0.2" (10.0.0.0/8), one per node */
    /* Spawns the node's tasks (at pl_sim_node_add and at each restart).
     * Returns 0, or a negative code that fails the add or the restart. */
    int (*boot)(pl_executor *ex, void *ud);
    void *ud; /* handed to boot; outlives the run (not node memory) */
    /* The node_crash decision kind may crash it at any wait of the run and
     * restart it 1 to 8 ms later (PL_SIM_NODE_RESTART_QUANTUM_NS each). */
    bool crashable;
    /* The node_pause decision kind may pause it at any wait of the run for
     * 1 to 128 ms (PL_SIM_NODE_PAUSE_QUANTUM_NS << v, v decided below
     * PL_SIM_NODE_PAUSE_STEPS), as pl_sim_node_pause does. */
    bool pausable;
    /* The node_isolate decision kind may cut it from every other node (all
     * links of its host, both ways) at any wait for 1 to 128 ms
     * (PL_SIM_NODE_ISOLATE_QUANTUM_NS << v, v decided below
     * PL_SIM_NODE_ISOLATE_STEPS), as pl_sim_node_isolate does. */
    bool isolatable;
    /* The node reads its own clock, not the run's: the clock_offset and
     * clock_drift decision kinds set it ahead by 1 to 128 ms and make it
     * run up to PL_SIM_CLOCK_DRIFT_MAX_PPM fast or slow, once, at the
     * node's first boot; the clock_jump kind may step its wall clock 1 to
     * 128 ms forward or back at any wait. Its tasks' pl_now, their timers
     * and the C library's clocks they read (a simulation binary's
     * clock_gettime, gettimeofday, time) follow it; the run's order stays
     * the one true timeline. Only the wall clocks jump (CLOCK_REALTIME,
     * gettimeofday, time, as NTP or an operator steps them): pl_now and
     * CLOCK_MONOTONIC never do, so armed timers stay where they are.
     * docs/simulator.md, "Per-node clocks". */
    bool skewed;
} pl_node_def;

/* One step of a decided restart delay. */
#define PL_SIM_NODE_RESTART_QUANTUM_NS PL_MS
#define PL_SIM_NODE_RESTART_STEPS      8
/* The shortest decided pause, and how many doublings of it there are. */
#define PL_SIM_NODE_PAUSE_QUANTUM_NS   PL_MS
#define PL_SIM_NODE_PAUSE_STEPS        8
/* The shortest decided isolation, and how many doublings of it there are
 * (the pause's values, so that a replay of either reads the same). */
#define PL_SIM_NODE_ISOLATE_QUANTUM_NS PL_MS
#define PL_SIM_NODE_ISOLATE_STEPS      8
/* A skewed node's clock (pl_node_def.skewed): its offset is
 * PL_SIM_CLOCK_OFFSET_QUANTUM_NS << k, its drift PL_SIM_CLOCK_DRIFT_QUANTUM_PPM
 * << k parts per million fast or slow, a jump of its wall clock
 * PL_SIM_CLOCK_JUMP_QUANTUM_NS << k forward or back, k decided below
 * PL_SIM_CLOCK_STEPS; 0 (production) is no skew. The run's knobs may
 * bound them tighter (pl_sim_options.knobs: clock_offset_max_ms,
 * clock_drift_max_ppm, clock_jump_max_ms, whose defaults are the _MAX
 * values below): a decision then draws only the steps k whose size is
 * within the bound, so step k means the same size under every bound. A
 * protocol that trusts clocks only within bounds takes the _MAX values
 * as its bounds, which hold under every knob (a lease's margin: two
 * clocks part by at most 2 * PL_SIM_CLOCK_DRIFT_MAX_PPM of the time they
 * measure). */
#define PL_SIM_CLOCK_STEPS              8
#define PL_SIM_CLOCK_OFFSET_QUANTUM_NS  PL_MS
#define PL_SIM_CLOCK_DRIFT_QUANTUM_PPM  100
#define PL_SIM_CLOCK_JUMP_QUANTUM_NS    PL_MS
#define PL_SIM_CLOCK_OFFSET_MAX_NS      (PL_SIM_CLOCK_OFFSET_QUANTUM_NS << (PL_SIM_CLOCK_STEPS - 1))
#define PL_SIM_CLOCK_DRIFT_MAX_PPM      (PL_SIM_CLOCK_DRIFT_QUANTUM_PPM << (PL_SIM_CLOCK_STEPS - 1))
#define PL_SIM_CLOCK_JUMP_MAX_NS        (PL_SIM_CLOCK_JUMP_QUANTUM_NS << (PL_SIM_CLOCK_STEPS - 1))

/* Declares a node and boots it. From a scenario's setup (or its tasks).
 * The definition is copied. Returns 0; PL_EINVAL (neither a simulation
 * nor a real run of `pollen run --real` running, a bad or taken name or
 * host, no boot; on the real backend also a host sharing its last two
 * bytes with another node's), PL_ENOSPC (PL_SIM_NODES_MAX nodes),
 * PL_ENOMEM, or what boot returned (the node then stays declared and
 * down: pl_sim_node_restart may boot it again). */
int pl_sim_node_add(pl_executor *ex, const pl_node_def *def);

/* Crashes the node named `name` (above). From scenario code outside the
 * node: the polled task must not be one of the node's. Returns 0;
 * PL_EINVAL (no such node, or called from the node itself), PL_EEXIST
 * (it is down), PL_ENOSYS (no simulation: the real backend; so do the
 * restart, pause, resume, isolate, split, heal and power cut below). */
int pl_sim_node_crash(const char *name);

/* Boots a crashed node again. Returns 0; PL_EINVAL (no such node),
 * PL_EEXIST (it is up), or what boot returned. */
int pl_sim_node_restart(const char *name);

/* True while the node named `name` exists and is up (on the real
 * backend: declared, and its boot succeeded). */
bool pl_sim_node_is_up(const char *name);

/* Pauses the node named `name` for length_ns of virtual time, as a GC
 * pause, SIGSTOP or a stalled VM: none of its tasks is polled until then;
 * its timers fire and its sockets receive meanwhile, and what they make
 * runnable runs once it resumes, in the order it became runnable. None
 * of its threads runs either; their sleeps and timed waits that come due
 * meanwhile end at the resume (threads of other nodes and thread 0 run
 * on; a node paused past the end of the run keeps its threads stopped,
 * no deadlock). Its peers see a node that answers nothing (connections
 * stay open). A crash
 * ends a pause. length_ns PL_TIME_NEVER (or any length reaching past it)
 * pauses it until the end of the run or pl_sim_node_resume. From scenario
 * code outside the node. Returns 0; PL_EINVAL
 * (no such node, called from the node itself, length_ns <= 0), PL_ENOENT
 * (it is down), PL_EEXIST (it is paused already). */
int pl_sim_node_pause(const char *name, pl_time length_ns);

/* Resumes a paused node now. Returns 0; PL_EINVAL (no such node, called
 * from the node itself), PL_ENOENT (it is down), PL_EEXIST (it is not
 * paused). */
int pl_sim_node_resume(const char *name);

/* True while the node named `name` exists and is paused. */
bool pl_sim_node_is_paused(const char *name);

/* Cuts the node named `name` from every other node for length_ns: every
 * link between its host and theirs, both ways (pollen/sim_net.h's cut:
 * datagrams on it are lost, streams wait, then break after the link's
 * break_after_ns), as Jepsen's isolation nemesis. PL_TIME_NEVER: until
 * healed. Returns 0; PL_EINVAL (no simulation, no such node, the only
 * node, length_ns <= 0), PL_ENOMEM. */
int pl_sim_node_isolate(const char *name, pl_time length_ns);

/* Splits the cluster in two: every link between a node named in
 * names[0, n) and a node not named is cut, both ways, for length_ns (a
 * majority/minority split when the names are fewer than half). Returns
 * 0; PL_EINVAL (an unknown name, no node named, or every node),
 * PL_ENOMEM. */
int pl_sim_node_split(const char *const *names, size_t n, pl_time length_ns);

/* Heals every link between two nodes (isolations, splits, and the
 * partition decisions' cuts between nodes alike). Returns 0, PL_EINVAL
 * (no simulation) or PL_ENOMEM. */
int pl_sim_nodes_heal(void);

/* A power cut: crashes every crashable node that is up, at once, as
 * pl_sim_node_crash does for each (their disks lose their unsynced writes
 * together, as decided per file). From scenario code outside those nodes.
 * Returns how many crashed, or PL_EINVAL (no simulation, or called from
 * a crashable node). */
int pl_sim_power_cut(void);

/* The node the calling code runs on (the polled task's, the boot
 * function's, or the dropped future's task's): its definition as
 * pl_sim_node_add copied it, so ->name and ->host name it, for a trace
 * event, a log line or a node's own address. Owned by the run: valid
 * until the run ends. NULL outside any node (the scenario's own tasks and
 * setup), and outside a simulation or a real run of `pollen run --real`. */
const pl_node_def *pl_sim_node_self(void);

/* Memory of the current node (the one of the polled task, or of the boot
 * function running): freed by pl_node_free, by the node's crash, or at the
 * end of the run. Outside any node it belongs to the scenario, freed at
 * the end of the run. Aligned as malloc's. NULL: no memory (or neither a
 * simulation nor a real run of `pollen run --real` running). */
void *pl_node_alloc(size_t size);
/* Frees a pl_node_alloc block (NULL: no-op). Any node may free it. */
void pl_node_free(void *p);

#ifdef __cplusplus
}
#endif

#endif
