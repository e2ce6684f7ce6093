/* sim/src/isolate/cpu_budget.h: the CPU-time budget of one poll, for the
 * CLI's child processes (worker, replay, shrink, bounded exploration).
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
 *
 * Process state: the budget, the handler and the candidate runner's
 * shared pages are the process's, for the CLI's single-threaded
 * processes only. The simulator keeps pl__progress current only while a
 * budget is armed (pl__cpu_budget_arm), so other programs pay nothing.
 */
#ifndef POLLEN_SIM_ISOLATE_CPU_BUDGET_H
#define POLLEN_SIM_ISOLATE_CPU_BUDGET_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "pollen/sim.h"
#include "shrink.h"

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
 * off (never negative: asserted). Set by the command line before any
 * child starts. */
void pl__cpu_budget_set(pl_time budget_ns);
pl_time pl__cpu_budget_get(void);

/* The wall time a livelock shrink's candidate may run before it is
 * killed and counts as a livelock: a poll that sleeps uses no CPU. */
#define PL__CANDIDATE_WATCHDOG_DEFAULT_NS (10 * PL_S)
void pl__cpu_budget_set_watchdog(pl_time ns);

/* A zeroed record in anonymous shared memory, for one child at a time.
 * NULL when mmap failed (the child then runs without a budget). */
pl__hang *pl__hang_map(void);
void pl__hang_unmap(pl__hang *h);

/* In a child: arms the budget (pl__cpu_budget_get) with its report going
 * to *h, and has the simulator keep pl__progress current from now on.
 * No-op when h is NULL or the budget is 0. */
void pl__cpu_budget_arm(pl__hang *h);

/* In the parent, after waitpid: true when the budget stopped the child
 * (h NULL: never). */
bool pl__hang_ended(const pl__hang *h, int status);

/* The livelock finding of a stopped poll (h and f not NULL, h->hung set:
 * asserted). */
void pl__hang_finding(const pl__hang *h, pl_finding *f);

/* "1 s", "250 ms": the budget as the messages say it (ns >= 0, buf of
 * len > 0 bytes: asserted). */
void pl__cpu_budget_text(pl_time ns, char *buf, size_t len);

/* Describes a wait status: "was killed by SIGSEGV (Segmentation fault)",
 * "exited with status 1". */
void pl__wait_status_text(int status, char *buf, size_t len);

/* The shrinker's runner (shrink.h) that runs each candidate in a child
 * under the budget, so a candidate that hangs counts as still failing
 * with livelock, and one that dies as a crash (the final run's events
 * kept in a crash ring, trace_ring.h). `pollen shrink` passes it to
 * pl__shrink_file_rotation. Forks: for a single-threaded process. */
int pl__cpu_budget_run_candidate(const pl_scenario *sc, const pl_sim_options *o,
                                 pl_sim_result *r, bool *hung);

#endif
