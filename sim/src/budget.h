/* sim/src/budget.h: the CPU-time budget of one poll, for the CLI's child
 * processes (worker, replay, shrink, bounded exploration).
 *
 * A poll that loops without calling pl_poll or waking itself (a
 * `for (;;) {}` waiting for a flag) moves nothing the simulator counts,
 * so only time can tell. A child arms a periodic CPU-time timer; its
 * handler sees the simulator's step (pl__progress) stay the same inside
 * one poll for longer than the budget, writes what it knows into a
 * record in memory shared with the parent and exits with
 * PL__ST_POLL_BUDGET. The parent turns the record into a livelock
 * finding. CPU time, not wall time: a loaded machine slows the run, not
 * the verdict. The parent's wall-clock watchdog stays as the backstop
 * (a poll that sleeps uses no CPU).
 */
#ifndef POLLEN_SIM_BUDGET_H
#define POLLEN_SIM_BUDGET_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "pollen/sim.h"

/* The exit status of a child the budget stopped (the record says so too:
 * user code may exit with any status). */
#define PL__ST_POLL_BUDGET 4

#define PL__POLL_BUDGET_DEFAULT_NS PL_S

/* What the handler knows of the poll it stopped. In shared memory;
 * `hung` is written last. */
typedef struct pl__hang {
    volatile sig_atomic_t hung;
    uint32_t task_id;
    uint32_t task_polls;
    uint64_t step;
    int64_t time_ns;
    int64_t budget_ns;
    char task_name[64];
} pl__hang;

/* The budget of this process and of the children it forks; 0 turns it
 * off. Set by the command line before any child starts. */
void pl__budget_set(pl_time budget_ns);
pl_time pl__budget_get(void);

/* The wall time a livelock shrink's candidate may run before it is
 * killed and counts as a livelock: a poll that sleeps uses no CPU. */
#define PL__CANDIDATE_WATCHDOG_DEFAULT_NS (10 * PL_S)
void pl__budget_set_watchdog(pl_time ns);

/* A zeroed record in anonymous shared memory, for one child at a time.
 * NULL when mmap failed (the child then runs without a budget). */
pl__hang *pl__hang_map(void);
void pl__hang_unmap(pl__hang *h);

/* In a child: arms the budget (pl__budget_get) with its report going to
 * *h. No-op when h is NULL or the budget is 0. */
void pl__budget_arm(pl__hang *h);

/* In the parent, after waitpid: true when the budget stopped the child. */
bool pl__hang_ended(const pl__hang *h, int status);

/* The livelock finding of a stopped poll. */
void pl__hang_finding(const pl__hang *h, pl_finding *f);

/* "1 s", "250 ms": the budget as the messages say it. */
void pl__budget_text(pl_time ns, char *buf, size_t len);

/* Describes a wait status: "was killed by SIGSEGV (Segmentation fault)",
 * "exited with status 1". */
void pl__wait_status_text(int status, char *buf, size_t len);

/* Makes this process's livelock and crash shrinks run every candidate in
 * a child under the budget (pl__shrink_set_runner), so a candidate that
 * hangs counts as still failing with livelock, and one that dies as a
 * crash (the final run's events kept in a crash ring, trace_ring.h). */
void pl__budget_shrink_in_children(void);

#endif
