/* sim/src/real.h: a cluster scenario on the real backend (`pollen run
 * --real`): its nodes booted on the one real executor, their hosts on
 * loopback, their files in directories of their own.
 *
 * A real run (pl__real_run) creates its executor on a system that wraps
 * the real one (real_system.c) and with an observer that tells which
 * node each task belongs to. pl_sim_node_add, pl_sim_node_self,
 * pl_node_alloc and the node fault calls (node*.c) ask pl__real_current
 * when no simulation runs. Nothing of it exists outside a real run:
 * production executors (created by pl_executor_create with their own
 * options) never see it, and pl_sim_node_add refuses them as before.
 *
 * Hosts: node host 10.a.b.c is 127.X.b.c on the machine, X (1 to 254)
 * held by the run for its life (a datagram socket bound to
 * 127.X.255.255:65535), so runs in parallel never share an address. The
 * system maps every address it is handed (bind, connect, sendto) and
 * hands back (accept, recvfrom, local_addr) between the two; a node's
 * unbound socket is bound to its own host before it connects or sends,
 * and a node's bind to 0.0.0.0 is a bind to its host, so peers see where
 * it is.
 *
 * End: what the run still holds open once its tasks are cancelled and the
 * scenario torn down (a server's socket in node memory, a file) is
 * released as the simulator does at the end of a run and as a process's
 * exit does: deregistered and closed, silently.
 *
 * Files: a node's relative paths are under a directory of its own,
 * "$TMPDIR/pollen-real-XXXXXX/<node>" (P_tmpdir without TMPDIR), removed
 * with everything in it at the end of the run. The scenario's own tasks
 * keep the process's working directory.
 */
#ifndef POLLEN_SIM_REAL_H
#define POLLEN_SIM_REAL_H

#include <stddef.h>
#include <stdint.h>

#include "node.h"
#include "pollen/observer.h"
#include "pollen/sim.h"
#include "pollen/system.h"

/* A real run's nodes and machinery. */
typedef struct pl__real {
    pl__nodes nodes;     /* node 0: the scenario itself */
    uint8_t *task_node;  /* the node of task id i (0: the scenario's) */
    uint32_t task_node_cap;
    uint32_t polling;    /* the node of the task being polled; 0: none */
    pl_executor *ex;
    pl_observer obs;
    pl_system inner;     /* the real backend */
    pl_system_vtable vtable; /* the real one's, seven entries mapped (real_system.c) */
    pl_system outer;     /* that vtable on the real one's instance */
    pl_io_source **sources; /* registered now, in registration order (grow.h) */
    size_t sources_len, sources_cap;
    int claim;           /* the socket holding 127.X; -1: none */
    uint8_t net;         /* X */
    char root[128];      /* the run's parent of node directories; "": none yet */
} pl__real;

/* real_run.c: the scenario's run on the real backend: setup, pl_run, check, then
 * cancel every task, teardown, destroy the executor, free the nodes and
 * remove their directories. Writes the outcome: PL_FINDING_NONE, or an
 * assertion (a failed setup, run or check: msg says which) or a
 * deadlock (pl_run's PL_EDEADLK). From the thread that runs it; one real
 * run at a time per process. */
pl_finding_kind pl__real_run(const pl_scenario *sc, char *msg, size_t msg_len);

/* The real run in progress on this process, or NULL; real_run.c sets it
 * for the run's life. */
pl__real *pl__real_current(void);
void pl__real_set_current(pl__real *r);

/* The node the current code runs on: the booting one, else the polled
 * task's; 0: the scenario's own. */
uint32_t pl__real_node_current(const pl__real *r);

/* A fault call (pl_sim_node_crash, ...) outside a simulation: says once
 * per run on stderr, in a real run, that the simulator alone injects it.
 * Returns PL_ENOSYS. */
int pl__real_refuse(const char *call);

/* The node directory of node n, made at its first use: 0 and the path in
 * buf, or a PL_E* code. */
int pl__real_node_dir(pl__real *r, uint32_t n, char *buf, size_t len);

/* real_system.c: sets up r->inner, r->outer and the host claim (0, or the
 * real backend's or the claim's PL_E* code), and undoes it. */
int pl__real_system_init(pl__real *r);
void pl__real_system_finish(pl__real *r);
/* Deregisters and closes every I/O source still registered (above, End).
 * Executor thread, no task running, the executor alive. */
void pl__real_system_end_run(pl__real *r);

#endif
