/* tests/manual_system.h: a minimal system for unit tests of the executor.
 *
 * The clock is a variable: wait() jumps it to the deadline, so timers fire
 * without real sleeping, and no I/O exists. `decide`, when set, answers
 * decisions from a script (to test the simulator-facing paths of core)
 * and counts them. Header-only so each test binary gets its own copy.
 */
#ifndef POLLEN_TEST_MANUAL_SYSTEM_H
#define POLLEN_TEST_MANUAL_SYSTEM_H

#include <pollen/executor.h>
#include <pollen/observer.h>
#include <pollen/system.h>

typedef struct manual_system {
    pl_time now_ns;
    unsigned waits;
    const uint32_t *script; /* answers for decide(), in order; then 0 */
    size_t script_len;
    size_t decisions;
    unsigned kinds[PL_DECIDE_BUGGIFY_FIRE + 1]; /* by kind: core asks for no higher one */
} manual_system;

static pl_time manual_now(void *self) { return ((manual_system *)self)->now_ns; }

static int manual_wait(void *self, pl_executor *ex, pl_time deadline_ns)
{
    manual_system *m = self;
    m->waits++;
    if (pl_executor_drain_remote(ex) > 0) {
        return 0;
    }
    if (deadline_ns == PL_TIME_NEVER) {
        return PL_EDEADLK;
    }
    if (deadline_ns > m->now_ns) {
        m->now_ns = deadline_ns;
    }
    return 0;
}

static uint32_t manual_decide(void *self, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    manual_system *m = self;
    (void)key;
    m->kinds[kind]++;
    uint32_t v = m->decisions < m->script_len ? m->script[m->decisions] : 0;
    m->decisions++;
    return v < n ? v : n - 1;
}

static void manual_remote_wake(void *self) { (void)self; }

static const pl_system_vtable manual_vtable = {
    .version = PL_SYSTEM_VERSION,
    .name = "manual",
    .now = manual_now,
    .wait = manual_wait,
    .remote_wake = manual_remote_wake,
};

static const pl_system_vtable manual_deciding_vtable = {
    .version = PL_SYSTEM_VERSION,
    .name = "manual-deciding",
    .now = manual_now,
    .wait = manual_wait,
    .decide = manual_decide,
    .remote_wake = manual_remote_wake,
};

/* Creates an executor over `m`; deciding selects the vtable with decide(). */
static inline pl_executor *manual_executor(manual_system *m, bool deciding,
                                           pl_executor_options *opts)
{
    static pl_system sys;
    sys.vtable = deciding ? &manual_deciding_vtable : &manual_vtable;
    sys.self = m;
    pl_executor_options o;
    if (opts == NULL) {
        pl_executor_options_default(&o);
        opts = &o;
    }
    opts->system = &sys;
    pl_executor *ex = NULL;
    if (pl_executor_create(&ex, opts) != 0) {
        return NULL;
    }
    return ex;
}

#endif
