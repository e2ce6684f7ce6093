/* sim/src/nemesis.h: faults that strike whole nodes of a cluster scenario
 * rather than one link or one send: a process pause (node_pause.c), a
 * node cut from every peer and a split in two sides (node_isolate.c), a
 * power cut of every crashable node (node_crash.c), and a clock of its
 * own, ahead, drifting and jumping (node_clock.c).
 *
 * A paused node's tasks are held (pl__executor_hold_task) and its threads
 * are never scheduled (threads/sched.c): none runs, its timers fire and
 * its sockets receive as before, and what they make runnable waits until
 * the node resumes, as under a GC pause, SIGSTOP or a stalled VM. Its
 * peers time out and move on; the node wakes believing what it
 * believed. A pause is a decision kind (node_pause, per node
 * declared .pausable, at each wait) or the scenario's call
 * (pl_sim_node_pause).
 *
 * The state lives in struct pl__sim as one member, `nemesis`; everything
 * runs on the simulation's thread.
 */
#ifndef POLLEN_SIM_NEMESIS_H
#define POLLEN_SIM_NEMESIS_H

#include <stdbool.h>
#include <stdint.h>

#include "pollen/observer.h"
#include "pollen/sim_node.h"
#include "pollen/time.h"

/* Per run, indexed by node (0, the scenario itself, is never paused). */
typedef struct pl__nemesis {
    pl_time paused_until[PL_SIM_NODES_MAX + 1]; /* resume time; 0: not paused */
    uint32_t pauses[PL_SIM_NODES_MAX + 1];      /* pauses so far (decision keys) */
    pl_time isolated_until[PL_SIM_NODES_MAX + 1]; /* a decided isolation's end */
    uint32_t isolations[PL_SIM_NODES_MAX + 1];  /* decided isolations so far */
    /* Skewed nodes' clocks (node_clock.c): reading = t + offset + t * drift
     * / 10^6 at true time t, plus the wall clock's jumps so far. */
    pl_time clock_offset_ns[PL_SIM_NODES_MAX + 1];
    int32_t clock_drift_ppm[PL_SIM_NODES_MAX + 1];
    uint32_t clock_jumps[PL_SIM_NODES_MAX + 1];  /* decided jumps so far (decision keys) */
    pl_time wall_jump_ns[PL_SIM_NODES_MAX + 1];  /* the wall clock's jumps, summed */
    bool clock_drawn[PL_SIM_NODES_MAX + 1];      /* offset and drift decided (first boot) */
    pl_clock_map clock_map; /* the executor's, once a skewed node booted; zero: none */
} pl__nemesis;

struct pl__sim;

/* At a wait, once the clock moved (pl__nodes_deliver): the pauses due to
 * end resume, then each pausable node that is up and running draws a
 * node_pause decision. */
void pl__node_pause_deliver(struct pl__sim *s, pl_time now);

/* Ends node n's pause, if it is paused (at its resume, or at its crash):
 * its held tasks are released, those that were picked meanwhile queued at
 * the back. Emits the resume's trace event when `traced`. */
void pl__node_pause_end(struct pl__sim *s, uint32_t n, bool traced);

/* At a wait, after the pauses: each isolatable node that is up and not
 * isolated draws a node_isolate decision. */
void pl__node_isolate_deliver(struct pl__sim *s);

/* At node n's first boot, when it is declared skewed: draws its clock's
 * clock_offset and clock_drift decisions and sets the executor's clock
 * map (pl__executor_set_clock_map) if it is not set yet. Later boots
 * keep the clock (a restarted process, the same machine). */
void pl__node_clock_boot(struct pl__sim *s, uint32_t n);

/* At a wait, after the isolations: each skewed node that is up draws a
 * clock_jump decision. */
void pl__node_clock_deliver(struct pl__sim *s);

/* What node n's clock reads at true time t: its monotonic clock, or its
 * wall clock's offset from the epoch when `wall` (jumps included). Node
 * 0 and nodes not skewed read t. */
pl_time pl__node_clock_read(const struct pl__sim *s, uint32_t n, pl_time t, bool wall);

/* The earliest true time at which node n's monotonic clock reads at
 * least local_ns: when a deadline on that clock comes (never early).
 * Node 0, nodes not skewed and deadlines beyond any run's limit
 * (PL_TIME_NEVER among them) are their own true time. */
pl_time pl__node_clock_due(const struct pl__sim *s, uint32_t n, pl_time local_ns);

#endif
