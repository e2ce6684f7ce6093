/* sim/src/node.h: what node.c and node_crash.c share, and the end of a
 * run's release that run.c calls. */
#ifndef POLLEN_SIM_NODE_INTERNAL_H
#define POLLEN_SIM_NODE_INTERNAL_H

#include "sim_internal.h"

/* The node named `name` of run s (NULL s, name or no such node: NULL). */
pl__node *pl__node_find(pl__sim *s, const char *name);
/* Runs the node's boot function with its tasks, sockets and disk as the
 * current node's; up on success. Returns what boot returned. */
int pl__node_boot(pl__sim *s, pl__node *node);
/* Frees every pl_node_alloc block of the node. */
void pl__node_blocks_free(pl__node *node);
/* At the end of a run, once the tasks were cancelled and the scenario
 * torn down (run.c), before the leak verdict: deregisters every I/O
 * source still registered, the nodes' and the scenario's, as a crash
 * does, dropping the wakers they hold. Draws no decision and emits no
 * trace event (the run's hash stays what it was). The handles stay open
 * until pl__sim_finish frees the network and the disks. */
void pl__nodes_end_run(pl__sim *s);

#endif
