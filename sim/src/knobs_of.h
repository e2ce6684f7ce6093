/* sim/src/knobs_of.h: the knobs a run uses, from its options: the one
 * function pl_sim_run (sim.c), pl_sim_knobs_text and the CLI's replay
 * files of runs that never finished all call. */
#ifndef POLLEN_SIM_KNOBS_OF_H
#define POLLEN_SIM_KNOBS_OF_H

#include <stddef.h>

#include "pollen/sim.h"
#include "decide.h"

/* The knobs a run with options o uses: o->knob_values (NULL: the
 * defaults), or those swarm draws from o->seed under the swarm strategy,
 * then the text o->knobs on top. Returns 0, or PL_EINVAL for a bad
 * strategy, knob value or knobs text, or knob_values given to swarm (the
 * reason in err when err_len > 0). */
int pl__sim_knobs_of(const pl_sim_options *o, pl__dec_knobs *k, char *err, size_t err_len);

#endif
