/* sim/src/node.h: what node.c and node_crash.c share. */
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

#endif
