/* sim/src/run.h: what run.c offers the rest of libpollen-sim and the
 * CLI: the world's life cycle, and a run with a capture. PCT's horizon
 * (pct.h) and the replay files' helpers (replay_run.h) come along, for
 * the callers that start runs (the options -> knobs function is
 * knobs_of.h's). */
#ifndef POLLEN_SIM_RUN_H
#define POLLEN_SIM_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "decide.h"
#include "pollen/sim.h"
#include "pct.h"
#include "replay_run.h"

typedef struct pl__sim pl__sim;
struct pl__capture;

/* The world's life cycle: pl__sim_init makes the world of one run (its
 * decisions, strategy, trace, network, executor and observer, the
 * checkers' state and the judges the world calls); `capture` (NULL: none)
 * notes the decisions of a list source's run (strategy.h). Starts no
 * run: PCT's horizon is already in the spec or in o->pct_horizon. 0, or
 * PL_EINVAL (why in err) or PL_ENOMEM. pl__sim_finish frees it all. */
int pl__sim_init(pl__sim *s, const pl_scenario *sc, const pl_sim_options *o,
                 struct pl__capture *capture, char *err, size_t err_len);
void pl__sim_finish(pl__sim *s);

/* pl_sim_run with a capture, for the shrinker's explanation. The
 * options must not need PCT's horizon measured. */
int pl__sim_run_captured(const pl_scenario *sc, const pl_sim_options *o,
                         struct pl__capture *capture, pl_sim_result *out);

#endif
