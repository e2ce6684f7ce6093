/* pollen/testing.h: executor knobs for simulators and tests.
 *
 * Each knob changes what the executor does so that a simulator can
 * explore and check a program: a new waker identity per poll (wakes
 * through a superseded waker are reported and withheld), timers that may
 * fire late, a watch on every poll. Applications never set them: they
 * pass no testing options (pl_executor_options.testing = NULL) and run
 * the production paths. The struct is versioned like the system vtable
 * and the observer: pl_executor_create refuses another version.
 *
 * Thread rules: read once, by pl_executor_create; the poll watch must
 * outlive the executor.
 */
#ifndef POLLEN_TESTING_H
#define POLLEN_TESTING_H

#include <stdbool.h>
#include <stdint.h>

#include "pollen/future.h"
#include "pollen/time.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_TESTING_VERSION 2u

typedef struct pl_executor_testing_options {
    uint32_t version;              /* PL_TESTING_VERSION */
    uint32_t timer_late_max;       /* n of PL_DECIDE_TIMER_LATE decisions; 0: never asked */
    pl_time timer_late_quantum_ns; /* one lateness step */
    bool rotate_wakers;            /* fresh waker identity per poll; wakes through a
                                      superseded waker are reported, not delivered */
    const pl_poll_watch *poll_watch; /* handed to every poll context (pl_context.watch) */
} pl_executor_testing_options;

/* Fills every field with its default: this version, no lateness (with a
 * 1 ms quantum), no rotation, no watch. */
void pl_executor_testing_options_default(pl_executor_testing_options *t);

#ifdef __cplusplus
}
#endif
#endif
