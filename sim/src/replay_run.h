/* sim/src/replay_run.h: what replay_run.c offers the rest of
 * libpollen-sim and the CLI, so that each of these exists once:
 *  - the build line of replay files (normal and crash replays alike);
 *  - replay file -> run options (pl_sim_replay_file, `pollen replay`,
 *    the shrinker), and the comparison of a rerun with its file. */
#ifndef POLLEN_SIM_REPLAY_RUN_H
#define POLLEN_SIM_REPLAY_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "pollen/sim.h"
#include "replay.h"

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
