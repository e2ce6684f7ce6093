/* sim/src/assume.h: a run discarded by pl_assume (pollen/sim.h).
 *
 * A failed premise is not a finding: check_props.c marks the run
 * discarded and stops it; from then on pl__sim_finding records nothing,
 * run.c judges nothing (no check, no leak verdict) and the result says
 * discarded, with the premise that failed. One per run, in pl__sim.
 */
#ifndef POLLEN_SIM_ASSUME_H
#define POLLEN_SIM_ASSUME_H

#include <stdbool.h>

typedef struct pl__premise {
    bool discarded;
    char by[192]; /* pl_sim_result.discarded_by */
} pl__premise;

#endif
