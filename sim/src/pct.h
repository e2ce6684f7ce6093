/* sim/src/pct.h: PCT's horizon, measured by pct.c before the runs that
 * need it (pl_sim_run, pl_sim_campaign). */
#ifndef POLLEN_SIM_PCT_H
#define POLLEN_SIM_PCT_H

#include "pollen/sim.h"

/* Sets o->pct_horizon when a run of `o` needs it (pct:D without K and no
 * horizon given): measures it with pl_sim_pct_estimate. A campaign calls
 * it once for all its seeds. Returns 0 or the estimate's error. */
int pl__resolve_pct_horizon(const pl_scenario *sc, pl_sim_options *o);

#endif
