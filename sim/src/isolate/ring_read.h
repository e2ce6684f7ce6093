/* sim/src/isolate/ring_read.h: the crash ring (trace_ring.h) from the
 * outside: mapping it in memory a child process shares with its parent,
 * and reading it once the child is gone (its events in order, their
 * names, the poll the run died in, a record the shrinker explains).
 *
 * Called by the CLI's parent processes, by the shrinker's candidate
 * runner (cpu_budget.c) and by tests; never on a run's path. Every
 * reader takes a ring that is not NULL (asserted) and only reads it.
 */
#ifndef POLLEN_SIM_ISOLATE_RING_READ_H
#define POLLEN_SIM_ISOLATE_RING_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pollen/sim.h"
#include "trace_ring.h"

/* A zeroed ring in anonymous shared memory, or NULL (then runs go
 * without one). pl__ring_unmap accepts NULL. */
pl__trace_ring *pl__ring_map(void);
void pl__ring_unmap(pl__trace_ring *r);

/* The kept events in order (*n of them, *lost = how many older ones the
 * ring no longer holds), malloc'd; NULL with *n == 0 when empty or out
 * of memory. */
pl__trace_rec *pl__ring_events(const pl__trace_ring *r, size_t *n, uint64_t *lost);

/* The namer of the ring's events (ud: the ring). */
pl__trace_namer pl__ring_namer(const pl__trace_ring *r);

/* Positions a crash finding where the ring ends: the task whose poll
 * never returned (its id, name and poll number) at that poll's step and
 * virtual time, or no task at the last event's step and time when the
 * run died outside any poll. Returns whether the ring held any event
 * (false: f is untouched). */
bool pl__ring_position(const pl__trace_ring *r, pl_finding *f);

/* "in 'crasher' (#1), poll 4, step 5, virtual time 0.000 ms" or
 * "outside any poll, after step 5, virtual time 0.000 ms". */
void pl__ring_where(const pl_finding *f, char *buf, size_t len);

/* Gives a crashed run's record (sim_internal.h) the ring's events, task
 * names and user texts, as a finished run's record has them, so the
 * shrinker explains it and the timeline prints alike. Leaves the events
 * out when the ring lost the run's start (an explanation counts the
 * decisions from the first), and the decisions' subjects as capture
 * notes (rec->notes) when it kept them all. Returns 0 or PL_ENOMEM
 * (record unchanged). */
struct pl__run_record;
int pl__ring_to_record(const pl__trace_ring *r, struct pl__run_record *rec);

/* Writes the last `max` kept events as timeline lines (max 0: all
 * kept), each line prefixed by `indent`, after a line saying how many
 * older ones are not shown. Returns 0 or PL_EIO / PL_ENOMEM. */
int pl__ring_write_text(FILE *f, const pl__trace_ring *r, size_t max, const char *indent);

#endif
