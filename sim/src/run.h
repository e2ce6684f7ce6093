/* sim/src/run.h: what run.c offers the rest of libpollen-sim and the
 * CLI, so that each of these exists once (the options -> knobs function
 * is knobs_of.h's):
 *  - the world's life cycle, and a run with a capture;
 *  - the build line of replay files (normal and crash replays alike);
 *  - replay file -> run options (pl_sim_replay_file, `pollen replay`,
 *    the shrinker), and the comparison of a rerun with its file. */
#ifndef POLLEN_SIM_RUN_H
#define POLLEN_SIM_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "pollen/sim.h"
#include "decide.h"
#include "replay.h"

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

/* Sets o->pct_horizon when a run of `o` needs it (pct:D without K and no
 * horizon given): measures it with pl_sim_pct_estimate. A campaign calls
 * it once for all its seeds. Returns 0 or the estimate's error. */
int pl__resolve_pct_horizon(const pl_scenario *sc, pl_sim_options *o);

/* The "build" line of replay files: compiler, optimisation, sanitizer.
 * Static storage. */
const char *pl__run_build_id(void);

/* A file without decisions, flagged truncated, was written for a run
 * that never finished by a process that could not record them: it
 * replays from its seed. */
bool pl__replay_seed_only(const pl__replay *rp);

/* The options that rerun replay file rp: its decision list (which holds
 * the strategy's choices already), or its seed and strategy when it is
 * seed-only; its knobs (formatted into knobs, which must outlive o) and
 * poll cost. o borrows rp's decisions and strings. Returns 0 or PL_EINVAL
 * when knobs_len is too short. */
int pl__replay_options(const pl__replay *rp, pl_sim_options *o, char *knobs, size_t knobs_len);

/* Compares run r with the file rp it reran: the same finding, the same
 * trace hash (when the file has one and is not seed-only), no
 * divergence. Returns 0 when it matches, 1 when not (what differs, in
 * err: with r's event log, the window of events where it differs). */
int pl__replay_compare(const pl__replay *rp, const pl_sim_result *r, char *err, size_t err_len);

#endif
