/* sim/src/isolate/guard.h: pl_sim_campaign's guard, the one signal
 * handler the simulator installs in its caller's process.
 *
 * From begin to end, a fatal signal (SIGSEGV, SIGABRT...) first prints
 * the scenario and the seed last given to pl__campaign_guard_seed, then
 * goes to the handler that was there before. Called on the thread that
 * runs the campaign, around its seeds (campaign.c). Campaigns on other
 * threads may hold the guard at the same time: the handlers stay until
 * the last end, and the line names the scenario and seed given last.
 * An end without a begin does nothing. The scenario `sc` must not be
 * NULL and must have a name (asserted), which must outlive the guard:
 * the handler prints it.
 */
#ifndef POLLEN_SIM_ISOLATE_GUARD_H
#define POLLEN_SIM_ISOLATE_GUARD_H

#include <stdint.h>

#include "pollen/sim.h"

void pl__campaign_guard_begin(const pl_scenario *sc);
void pl__campaign_guard_seed(uint64_t seed);
void pl__campaign_guard_end(void);

#endif
