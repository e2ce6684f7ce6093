/* sim/src/node.h: the nodes of a cluster scenario (pollen/sim_node.h):
 * their state, embedded in the world as pl__sim.nodes, and what node.c,
 * node_crash.c and node_explain.c offer. The node the current code runs
 * on is the world's question (pl__node_current, sim_internal.h).
 */
#ifndef POLLEN_SIM_NODE_INTERNAL_H
#define POLLEN_SIM_NODE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim_node.h"

typedef struct pl__sim pl__sim;
struct pl__disk;
struct pl__run_record;

/* A node of a cluster scenario. */
typedef struct pl__node {
    pl_node_def def;
    uint32_t host; /* IPv4, host order; 0 for the scenario itself */
    bool up;
    uint32_t crashes;
    pl_time restart_at;            /* a decided restart is due then; 0: none */
    struct pl__disk *disk;         /* its own disk; NULL until a file is used */
    struct pl__node_block *blocks; /* pl_node_alloc's, newest first */
    uint32_t blocks_len;
} pl__node;

/* The nodes of a run (pl__sim.nodes): index 0 is the scenario itself;
 * list is NULL until the first pl_sim_node_add. */
typedef struct pl__nodes {
    pl__node *list;
    uint32_t len;                      /* declared nodes + 1 once nodes exist */
    uint32_t booting;                  /* node whose boot function runs; 0: none */
    uint32_t dropping;                 /* task whose drop runs outside polls; 0: none */
    struct pl__task_alias *task_names; /* interned "node/task" names (grow.h) */
    size_t task_names_len, task_names_cap;
} pl__nodes;

/* The host of node n (0: none, the scenario's sockets keep loopback).
 * Inline: the network asks at each socket it opens and links without
 * node.c. */
static inline uint32_t pl__node_host(const pl__nodes *ns, uint32_t n)
{
    return n != 0 && n < ns->len ? ns->list[n].host : 0;
}

/* The name of node n ("" for 0). */
static inline const char *pl__node_name(const pl__nodes *ns, uint32_t n)
{
    return n != 0 && n < ns->len ? ns->list[n].def.name : "";
}

/* The name "node2/worker" of a task of node n named `name`, interned for
 * the run (the same pointer for the same pair); `name` itself when there
 * is no memory. */
const char *pl__node_task_name(pl__nodes *ns, uint32_t n, const char *name);
/* The node named `name` of run s (NULL s, name or no such node: NULL). */
pl__node *pl__node_find(pl__sim *s, const char *name);
/* The same in a table of nodes (NULL ns: NULL). */
pl__node *pl__nodes_find(pl__nodes *ns, const char *name);
/* Checks a definition for pl_sim_node_add against the nodes ns declared
 * so far: 0 and its host (IPv4, host order) in *host, or PL_EINVAL /
 * PL_ENOSPC and the rule it broke in err (len bytes; NULL: not written). */
int pl__nodes_check(char *err, size_t len, pl__nodes *ns, const pl_node_def *def,
                    uint32_t *host);
/* Appends a checked definition to ns (its table made at the first), not
 * booted yet. NULL: no memory. */
pl__node *pl__nodes_declare(pl__nodes *ns, const pl_node_def *def, uint32_t host);
/* Runs the node's boot function with its tasks, sockets and disk as the
 * current node's; up on success. Returns what boot returned. */
int pl__node_boot(pl__sim *s, pl__node *node);
/* Frees every pl_node_alloc block of the node. */
void pl__node_blocks_free(pl__node *node);
/* Every node's disk and decided restart: the earliest pending event. */
pl_time pl__nodes_next_event(const pl__sim *s);
/* At a wait, once the clock moved: every node's disk completions due,
 * the decided restarts due, then a node_crash decision per crashable node
 * that is up (node_crash.c). */
void pl__nodes_deliver(pl__sim *s, pl_time now);
/* At the end of a run, once the tasks were cancelled and the scenario
 * torn down (run.c), before the leak verdict: deregisters every I/O
 * source still registered, the nodes' and the scenario's, as a crash
 * does, dropping the wakers they hold. Draws no decision and emits no
 * trace event (the run's hash stays what it was). The handles stay open
 * until pl__sim_finish frees the network and the disks. */
void pl__nodes_end_run(pl__sim *s);
/* Frees the nodes, their disks and their memory (pl__sim_finish, and the
 * real backend's run, real.c). */
void pl__nodes_free(pl__nodes *ns);
/* Writes what the node_crash decision at event i of rec did ("node
 * 'server' crashed at 3.000 ms, restarted at 5.000 ms"), v and n its
 * value and range. False for another kind (node_explain.c). */
bool pl__node_explain(char *buf, size_t len, const struct pl__run_record *rec, size_t i,
                      uint32_t kind, uint32_t v, uint32_t n);

#endif
