/* sim/src/isolate/mirror.h: what a run leaves behind for the process
 * that forked it, should it die: the decisions it consulted (the crash
 * mirror) and its last events (the crash ring, trace_ring.h).
 *
 * Both live in memory the CLI shares with a child (cli/worker.c,
 * cli/cmd_run.c, cli/cmd_replay.c, cpu_budget.c's shrink candidates). The
 * child attaches them before its runs; every run of this process then
 * copies into them (sim.c restarts them as a run begins, instance.c
 * hands them each decision, oracle.c names the tasks). Each entry is
 * stored before its count is bumped, so a run killed by a signal leaves
 * a consistent prefix. Process state, set by the CLI's single-threaded
 * children only: a program that runs simulations on several threads
 * attaches none.
 */
#ifndef POLLEN_SIM_ISOLATE_MIRROR_H
#define POLLEN_SIM_ISOLATE_MIRROR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decide.h"
#include "pollen/system.h"

struct pl__sim;
struct pl__trace_ring;

/* Mirrors every consulted decision of the runs that follow into buf
 * (shared memory): *len restarts at 0 with each run, and each record is
 * stored before *len counts it. Past cap, records are dropped but still
 * counted: *len > cap says the copy is truncated. len NULL turns the
 * mirror off; otherwise buf holds cap records (buf may be NULL only
 * when cap is 0; asserted). */
void pl__sim_record_to(pl__dec_record *buf, size_t cap, volatile uint64_t *len);

/* The crash ring every later run of this process copies its events into
 * (NULL: none); pl__sim_ring gives it back. */
void pl__sim_ring_to(struct pl__trace_ring *ring);
struct pl__trace_ring *pl__sim_ring(void);

/* A run begins (sim.c): the mirror's count starts over, and the ring,
 * emptied, is attached to s's trace (s not NULL). */
void pl__sim_mirror_restart(void);
void pl__sim_ring_restart(struct pl__sim *s);

/* Whether a mirror or a ring is attached: the decision path's one test
 * (instance.c) before it calls pl__mirror_decision. */
extern bool pl__mirror_on;

/* A consulted decision (kind, out of n, chose v; its subject key) into
 * the mirror and the ring, whichever is attached. */
void pl__mirror_decision(pl_decision_kind kind, uint32_t n, uint32_t v, uint64_t key);

#endif
