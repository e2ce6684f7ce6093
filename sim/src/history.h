/* sim/src/history.h: the run's client history (pollen/sim_history.h),
 * as history.c records it and check_history.c judges it.
 *
 * One pl__history per run, embedded in struct pl__sim and zeroed with
 * it; pl__history_free releases it in pl__sim_finish. Nothing here draws
 * a decision or emits a trace event: recording a history changes no
 * run's trace hash.
 */
#ifndef POLLEN_SIM_HISTORY_INTERNAL_H
#define POLLEN_SIM_HISTORY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim_history.h"
#include "pollen/time.h"

/* How an operation ended. */
typedef enum pl__op_status {
    PL__OP_OPEN = 0,    /* invoked, not completed yet: unknown at the end */
    PL__OP_OK = 1,
    PL__OP_FAIL = 2,
    PL__OP_UNKNOWN = 3,
} pl__op_status;

/* One recorded operation. The sequence numbers order every invocation
 * and return of the run (one counter); times are for the report. */
typedef struct pl__history_rec {
    pl_history_op op;
    const char *client;
    pl_time invoke_ns;
    pl_time return_ns;
    uint64_t invoke_seq;
    uint64_t return_seq;
    pl__op_status status;
} pl__history_rec;

typedef struct pl__history {
    const pl_model *model;  /* NULL: no pl_history_use */
    pl__history_rec *ops;   /* by id - 1 (grow.h) */
    size_t len;
    size_t cap;
    uint64_t seq;           /* events so far */
    uint64_t dropped;       /* invocations past PL_HISTORY_OPS_MAX, or without memory */
    bool no_memory;         /* one of those was for want of memory */
} pl__history;

/* Releases the records (pl__sim_finish); the history is zeroed. */
void pl__history_free(pl__history *h);

#endif
