/* sim/src/isolate/progress.h: what runs now, for an asynchronous reader:
 * the CLI's CPU-time budget (cpu_budget.h) reads it from a signal
 * handler. Kept only once a budget is armed (`on`, set by
 * pl__cpu_budget_arm in a CLI child, which runs one simulation at a
 * time): other programs, whose threads may each run a simulation, never
 * write it. Plain stores on the executor thread; volatile so that every
 * store happens and every read is fresh. `task` is the task being polled
 * (NULL: none); while it is set, the task is alive and its id, poll
 * count and name do not change.
 */
#ifndef POLLEN_SIM_ISOLATE_PROGRESS_H
#define POLLEN_SIM_ISOLATE_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "pollen/executor.h"
#include "pollen/time.h"

typedef struct pl__sim_progress {
    bool on;                  /* a budget is armed: the fields below are kept */
    volatile uint64_t run;    /* pl_sim_run calls begun since it was armed */
    volatile uint64_t step;   /* of the poll in progress */
    volatile int64_t time_ns; /* virtual time at its start */
    pl_task *volatile task;
} pl__sim_progress;

extern pl__sim_progress pl__progress;

/* A poll of t begins at `step`, virtual time `now`. */
static inline void pl__progress_poll(uint64_t step, pl_time now, pl_task *t)
{
    if (pl__progress.on) {
        pl__progress.step = step;
        pl__progress.time_ns = now;
        pl__progress.task = t;
    }
}

/* No poll in progress (one ended, or was abandoned). */
static inline void pl__progress_idle(void)
{
    if (pl__progress.on) {
        pl__progress.task = NULL;
    }
}

/* A run begins. */
static inline void pl__progress_run(void)
{
    if (pl__progress.on) {
        pl__progress.task = NULL;
        pl__progress.run++;
    }
}

#endif
