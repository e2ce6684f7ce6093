/* sim/src/check_history.h: the linearizability checker
 * (pollen/sim_history.h) and its verdict on a run's history.
 *
 * pl__lin_check is Wing and Gong's search as Lowe improved it: the
 * invocations and returns of one key's operations in one list, in order;
 * an invocation whose operation the model accepts in the current state
 * is linearized (its entries leave the list) unless the pair (set of
 * operations linearized, state) was seen before, in which case nothing
 * new can follow from it; a return reached before its operation was
 * linearized undoes the latest linearization and tries the next
 * candidate. An unknown operation's return comes after every other
 * event, and the search succeeds once every operation that returned ok
 * is linearized: an unknown one took effect where the search placed it,
 * or never. Deterministic: a step budget, not a clock, bounds it.
 */
#ifndef POLLEN_SIM_CHECK_HISTORY_H
#define POLLEN_SIM_CHECK_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim_history.h"

typedef struct pl__sim pl__sim;

/* One operation as the search sees it: where its invocation and its
 * return fall among the key's events (ret UINT64_MAX and op.unknown:
 * unknown; distinct values otherwise, call < ret). */
typedef struct pl__lin_op {
    pl_history_op op;
    uint64_t call;
    uint64_t ret;
} pl__lin_op;

/* Bytes the memo of one search may allocate (its records and its hash
 * table, as their doubling capacities take them): past them the search
 * stops undecided, as at its step budget. */
#define PL__LIN_MEMO_BYTES ((size_t)64 << 20)

typedef enum pl__lin_verdict {
    PL__LIN_OK = 0,     /* linearizable */
    PL__LIN_BAD = 1,    /* not linearizable */
    PL__LIN_BUDGET = 2, /* steps_max steps, or PL__LIN_MEMO_BYTES of memo, did not decide */
    PL__LIN_NOMEM = 3,
} pl__lin_verdict;

/* Checks ops[0..n) against m, as one key. *steps (may be NULL)
 * receives the steps taken. */
pl__lin_verdict pl__lin_check(const pl_model *m, const pl__lin_op *ops, size_t n,
                              uint64_t steps_max, uint64_t *steps);

/* ops is not linearizable: finds the operations that make it so. Each
 * operation that returned ok in turn is relaxed, made unknown (it may
 * have taken effect at any point after its invocation, with any result,
 * or not at all), and stays relaxed when the history is still not
 * linearizable. keep[i] receives whether operation i was kept: the kept
 * ones, with their results, admit no order whatever the others did, and
 * none of them can be relaxed. (Leaving an operation out instead would
 * strand a read of the value it wrote, and the smallest such
 * sub-history would be that read alone, which explains nothing.) True
 * when it got there within steps_max steps in all; false when the
 * budget or memory cut it short, the kept ones still admitting no
 * order. */
bool pl__lin_minimize(const pl_model *m, const pl__lin_op *ops, size_t n, bool *keep,
                      uint64_t steps_max);

/* At the end of a run that raised nothing else: checks s->history, and
 * raises a linearizability finding for a history that is not
 * linearizable, was cut at PL_HISTORY_OPS_MAX or outgrew the search's
 * budget, or was recorded without a model. */
void pl__history_verdict(pl__sim *s);

#endif
