/* sim/src/check_budget.h: the checker of what happens inside one poll
 * (check_budget.c): a poll that calls pl_poll or wakes itself past a
 * bound is a livelock. Its state is pl__bounds (pl__sim.bounds): the
 * observer (oracle.c) counts in it and calls the raisers past a bound.
 */
#ifndef POLLEN_SIM_CHECK_BUDGET_H
#define POLLEN_SIM_CHECK_BUDGET_H

#include <stdint.h>

#include "pollen/sim.h"

typedef struct pl__sim pl__sim;

typedef struct pl__bounds {
    uint64_t sub_polls; /* pl_poll calls inside the current task poll */
    uint64_t sub_polls_max;
    uint64_t wakes_in_poll; /* self-wakes inside the current task poll */
    uint64_t wakes_in_poll_max;
} pl__bounds;

/* Reads the bounds of the options (pl__sim_init). */
void pl__budget_init(pl__bounds *b, const pl_sim_options *o);
/* Record a livelock finding and leave the poll through s->escape when it
 * is armed (unarmed, a probe's poll goes on and the run stops after it). */
void pl__budget_sub_polls(pl__sim *s);
void pl__budget_wakes_in_poll(pl__sim *s);

#endif
