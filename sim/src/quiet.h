/* sim/src/quiet.h: the quiet phase of a scenario that opts in
 * (pl_scenario.quiet_after_ns; docs/simulator.md, "A quiet phase and
 * liveness"): from its start no fault kind of the decision stream is
 * consulted and every fault in force ends, and at its deadline the run's
 * judges (pl__sim_judges.quiet_end) judge the liveness.
 *
 * The state is pl__quiet, embedded in the world as pl__sim.quiet, zeroed
 * by pl__sim_init and set up by pl__quiet_init. Everything runs on the
 * simulation's thread.
 */
#ifndef POLLEN_SIM_QUIET_H
#define POLLEN_SIM_QUIET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim.h"

typedef struct pl__sim pl__sim;

typedef struct pl__quiet {
    /* The next quiet moment the world waits for: the start, then the
     * deadline; PL_TIME_NEVER when there is none (no quiet phase, or the
     * liveness was judged). sim.c compares it with the clock at each
     * wait, so a run without a quiet phase pays one compare. */
    pl_time at;
    pl_time start_ns;    /* 0: the scenario has no quiet phase */
    pl_time deadline_ns; /* the absolute time of the judgement */
    bool begun;          /* the start was reached: faults are muted */
    bool judged;         /* the liveness was judged (at the deadline or the end) */
    uint64_t muted;      /* bit k: fault kind k was enabled and is muted */
    void *state;         /* the scenario's state, for its liveness check */
} pl__quiet;

/* Sets up s->quiet from the scenario's fields (none: at = PL_TIME_NEVER).
 * PL_EINVAL, with the reason in err, when a time is negative or the
 * deadline is not inside the run's time limit. */
int pl__quiet_init(pl__sim *s, const pl_scenario *sc, char *err, size_t err_len);

/* At a wait, once the clock reached s->quiet.at: at the start, mutes the
 * fault kinds, heals every link, resumes the paused nodes and restarts
 * the crashed ones (returns false: the run goes on); at the deadline,
 * calls the judges' quiet_end and ends the run (returns true). */
bool pl__quiet_reached(pl__sim *s);

/* Whether pl_decision_kind k is one the quiet phase mutes. */
bool pl__quiet_is_fault(uint32_t kind);

/* Gives the stream back the knobs the run began with, so the run record
 * (and a replay of it) has the fault kinds on: the replay mutes them at
 * the same moment. Call once the run is over, before its record. */
void pl__quiet_unmute(pl__sim *s);

/* A sentence on when faults stopped and when the liveness was judged
 * (" (faults stopped at 100.000 ms, judged at 300.000 ms)"), for the
 * liveness finding's message. */
void pl__quiet_when(const pl__sim *s, char *buf, size_t len);

#endif
