/* sim/src/shrink.h: the shrinker's entry points for `pollen shrink` and
 * for the auto-shrink of `pollen run`. The shrinking itself is
 * pl_sim_shrink (pollen/sim.h). */
#ifndef POLLEN_SIM_SHRINK_H
#define POLLEN_SIM_SHRINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pollen/sim.h"

/* Shrinks the failure recorded in replay file `in` to its smallest
 * decision list that still produces the same finding, and writes the
 * result as a replay file to `out` (NULL: pl__shrink_default_out), with
 * the explanation as '#' comments at its top. Default limits (100000
 * candidate runs, no wall-clock net). Returns 0, or a negative PL_E* code with the reason in err
 * (NUL-terminated, at most err_len bytes). */
int pl__shrink_file(const char *in, const char *out, char *err, size_t err_len);

/* The same with explicit limits (NULL: defaults) and the outcome in *res
 * (always free it with pl_sim_shrink_result_free). */
int pl__shrink_file_ex(const char *in, const char *out, const pl_sim_shrink_limits *limits,
                       pl_sim_shrink_result *res, char *err, size_t err_len);

/* Waker rotation for pl__shrink_file_rotation: the file's, off, on. */
typedef enum pl__rotation { PL__ROTATION_FILE, PL__ROTATION_OFF, PL__ROTATION_ON } pl__rotation;

/* Runs one candidate of a livelock or crash shrink: like pl_sim_run,
 * plus *hung when the run never returned (the result then has the
 * finding and the consulted decisions only, no events). A run whose
 * process died is a crash finding with the decisions it consulted, and,
 * when o->keep_events, its events from a crash ring (trace_ring.h).
 * isolate/cpu_budget.h has the one that runs each in a child process. */
typedef int (*pl__shrink_runner_fn)(const pl_scenario *sc, const pl_sim_options *o,
                                    pl_sim_result *r, bool *hung);

/* pl_sim_shrink (pollen/sim.h), with the livelock and crash candidates
 * run through `runner` (NULL: pl_sim_run, in this process; a crash is
 * then not shrunk, PL_EINVAL). A livelock may be a poll that never
 * returns and a crash candidate kills its process, which only a run in
 * another process survives; other findings always run in-process. */
int pl__shrink_with(const pl_scenario *sc, const pl_sim_options *base, const void *decisions,
                    size_t n, pl_finding_kind kind, const pl_sim_shrink_limits *limits,
                    pl__shrink_runner_fn runner, pl_sim_shrink_result *out);

/* pl__shrink_file_ex whose runs rotate wakers as `rotation` says (the
 * shrunk file records it: `shrink --waker-rotation`), and whose livelock
 * and crash candidates run through `runner` (NULL: in this process, as
 * pl__shrink_with says). */
int pl__shrink_file_rotation(const char *in, const char *out, const pl_sim_shrink_limits *limits,
                             pl__rotation rotation, pl__shrink_runner_fn runner,
                             pl_sim_shrink_result *res, char *err, size_t err_len);

/* Reads replay file `in` for a run of its own (shrink, why): parses it
 * into *rp (pl__replay_free it, also on failure), finds its scenario
 * (*sc) and its finding (*kind, > 0), and fills *o with the options the
 * file's run had (pl__replay_options, into `knobs` of knobs_len bytes),
 * with a list source and no decisions yet. Returns 0, or a negative PL_E*
 * code with the reason in err: unreadable or malformed (PL_EFORMAT...),
 * a scenario not linked in (PL_EFORMAT), no finding (PL_EINVAL). */
struct pl__replay;
int pl__shrink_load(const char *in, struct pl__replay *rp, const pl_scenario **sc, int *kind,
                    pl_sim_options *o, char *knobs, size_t knobs_len, char *err, size_t err_len);

/* The default output path: `in` with a trailing ".replay" replaced by
 * ".shrunk.replay", or ".shrunk.replay" appended. Returns the length of
 * the full result like snprintf. */
int pl__shrink_default_out(const char *in, char *buf, size_t len);

/* Prints before/after counts, the budget note, the explanation (each line
 * indented by `indent`) and where the shrunk replay went (out, may be
 * NULL). */
void pl__shrink_print(FILE *f, const pl_sim_shrink_result *res, const char *out,
                      const char *indent);

/* The shrunk run's explanation (shrink_explain.c): a malloc'd text, or
 * NULL when out of memory: a line per non-default decision, and one per
 * loss of a crash (the disk's notes in the log, disk.h), in the order of
 * the run. pl__shrink_explain needs the run's event log,
 * the capture of its decisions and the run's options (for the fault
 * options' latency quantum; NULL: the defaults); pl__shrink_explain_hung
 * is for a run that never returned (no timeline). */
struct pl__capture;
char *pl__shrink_explain(const pl_sim_result *run, const struct pl__capture *cap,
                         const pl_sim_options *o);
char *pl__shrink_explain_hung(const pl_sim_result *run);

/* The line of the explanation for decision `index` of the run (counted
 * as the list counts them: consulted decisions), without its newline,
 * also when it is production's own choice ("step 12 (0.000 ms):
 * schedule: polled 'relay' in FIFO order ..."); *event is its decision
 * event's index in the run's event log. Needs the run's events and, for
 * task names, its capture (may be NULL). A malloc'd text, or NULL: no
 * such decision in the event log, or out of memory. */
char *pl__shrink_explain_one(const pl_sim_result *run, const struct pl__capture *cap,
                             const pl_sim_options *o, uint64_t index, size_t *event);

#endif
