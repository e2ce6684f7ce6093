/* pollen/sim_history.h: client histories and the linearizability oracle.
 *
 * A scenario records the operations its clients make against the system
 * it tests: each operation's invocation (pl_history_invoke, which returns
 * the operation's id), then how it ended: ok with its result
 * (pl_history_ok), failed for sure, without effect (pl_history_fail), or
 * unknown when the client cannot tell whether it took effect, as after a
 * timeout or a broken connection (pl_history_unknown). An operation
 * still open at the end of the run (its client crashed or gave up) is
 * unknown. Each event is stamped with the run's virtual clock, and the
 * order of the events is the order of the calls.
 *
 * At the end of a run that raised nothing else, the history is checked
 * against a model, a sequential specification written in C (pl_model:
 * an initial state and a step; the states compared by their bytes or by
 * the model's hash and equality): it is linearizable when every
 * operation that completed ok, and any subset of the unknown ones, can
 * be ordered one after the other so that each takes effect at one
 * instant between its invocation and its return and the model accepts
 * that order with the results the clients saw. The search is Wing and
 * Gong's, with Lowe's memoization of (operations linearized, state), one
 * key at a time for a model checked per key. A history that is not
 * linearizable is a finding of kind PL_FINDING_LINEARIZABILITY; its
 * message lists the smallest sub-history of one key the search found
 * still not linearizable (a sub-history none of whose operations can be
 * left out): each operation, its client, its result, its invocation and
 * return times. The finding replays and shrinks as any other.
 *
 * Bounds: a run records at most PL_HISTORY_OPS_MAX operations and one
 * key's check explores at most PL_HISTORY_STEPS_MAX search steps (about
 * a second at most; a history of 1,000 operations by 5 clients takes a
 * few thousand steps, under a millisecond). A
 * history past either bound is not passed: it is a linearizability
 * finding saying the history was too large to check.
 *
 * Outside a simulation (the real backend) every call here does nothing
 * and pl_history_invoke returns 0, so the same client code runs in
 * production.
 *
 * Thread rules: the calls below act on the simulation running on the
 * calling thread: from its setup, its tasks' polls or its check.
 */
#ifndef POLLEN_SIM_HISTORY_H
#define POLLEN_SIM_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Operations one run records. */
#define PL_HISTORY_OPS_MAX 100000u
/* Search steps (an operation tried at a point of the search) one key's
 * check may take; its memo of states seen allocates at most 64 MiB, and a
 * search that would need more stops undecided, as at its step limit. */
#define PL_HISTORY_STEPS_MAX 1000000u
/* Bytes of a model's state. */
#define PL_MODEL_STATE_MAX 64u

/* One operation as a model sees it. What kind, key, in, in2, out and
 * out2 mean is the model's (the shipped models below say). */
typedef struct pl_history_op {
    uint32_t kind;
    bool unknown;  /* the client cannot tell: out and out2 mean nothing, and the
                      step must accept whatever the operation would have
                      returned */
    uint64_t key;  /* the key of a model checked per key; others ignore it */
    int64_t in, in2;   /* arguments */
    int64_t out, out2; /* results (pl_history_ok) */
} pl_history_op;

/* A sequential specification. */
typedef struct pl_model {
    const char *name;   /* "register" */
    size_t state_size;  /* 1..PL_MODEL_STATE_MAX bytes */
    bool per_key;       /* operations on different keys are independent: each key's
                           operations are checked alone (P-compositionality) */
    /* Writes the initial state (state_size bytes, zeroed before). */
    void (*init)(void *state);
    /* Applies op to state in place when op may take effect there and
     * returns true; returns false, state unchanged or not, when its
     * results contradict the state. Deterministic, no side effect. */
    bool (*step)(void *state, const pl_history_op *op);
    /* NULL: states are equal when their bytes are (so step writes every
     * byte it uses, no padding), and hashed over their bytes. */
    uint64_t (*hash)(const void *state);
    bool (*equal)(const void *a, const void *b);
    /* Writes op in words, with its result unless op->unknown:
     * "write(3, 7)", "read(3) -> 7", "cas(0, 1, 2) -> failed". */
    void (*describe)(const pl_history_op *op, char *buf, size_t len);
} pl_model;

/* A register (one value, initially 0; keys ignored):
 *   PL_REG_READ   out = the value read
 *   PL_REG_WRITE  in = the value written
 *   PL_REG_CAS    in = expected, in2 = new; out = 1 when it swapped, 0 when not */
enum { PL_REG_READ = 0, PL_REG_WRITE = 1, PL_REG_CAS = 2 };
extern const pl_model pl_model_register;
/* A key-value map: a register per key (every key's value initially 0),
 * the PL_REG_ operations with op.key, checked per key. */
extern const pl_model pl_model_kv;
/* An append-only log, initially empty (keys ignored):
 *   PL_LOG_APPEND  in = the entry appended
 *   PL_LOG_READ    out = the log's length; out2 = pl_history_log_digest of
 *                  its entries in order
 *   PL_LOG_LEN     out = the log's length (a read that sees only how many) */
enum { PL_LOG_APPEND = 0, PL_LOG_READ = 1, PL_LOG_LEN = 2 };
extern const pl_model pl_model_log;
/* The digest a PL_LOG_READ reports: start with d = 0, then
 * d = pl_history_log_digest(d, entry) for each entry in order. */
int64_t pl_history_log_digest(int64_t d, int64_t entry);

/* Sets the model this run's history is checked against. Call once, from
 * the scenario's setup, before any pl_history_invoke. The model is not
 * copied (static storage). Returns 0; PL_EINVAL for a bad model or a
 * second call; PL_ENOSYS outside a simulation. */
int pl_history_use(const pl_model *model);

/* Records the invocation of an operation by `client` (its name, static
 * storage; NULL: the current node's name, or "scenario"). Returns the
 * operation's id (> 0), or 0 outside a simulation. A run without a model
 * (pl_history_use), or past PL_HISTORY_OPS_MAX operations, returns an id
 * too and raises the linearizability finding at its end. */
uint64_t pl_history_invoke(const char *client, uint32_t kind, uint64_t key, int64_t in,
                           int64_t in2);
/* The operation `id` returned its results. */
void pl_history_ok(uint64_t id, int64_t out, int64_t out2);
/* The operation `id` failed and surely took no effect (left out of the check). */
void pl_history_fail(uint64_t id);
/* The client cannot tell whether operation `id` took effect. */
void pl_history_unknown(uint64_t id);
/* Each of the three: id 0 does nothing; an id already completed, or one
 * this run never returned, is a contract violation (an assertion
 * finding). */

#ifdef __cplusplus
}
#endif
#endif
