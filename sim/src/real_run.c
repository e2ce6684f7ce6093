/* sim/src/real_run.c: a scenario's run on the real backend (real.h):
 * the executor on the mapping system, which node each task belongs to,
 * and the end, which releases what the run left.
 */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "grow.h"
#include "real.h"
#include "sim_assert.h"

/* ---- Which node a task belongs to -------------------------------------- */

static uint32_t node_of(const pl__real *r, const pl_task *t)
{
    uint32_t id = pl_task_id(t);
    return id < r->task_node_cap ? r->task_node[id] : 0;
}

/* A task belongs to the node whose code spawned it, as in the simulator,
 * and is named "node/task" the same way. Without memory for the table
 * the task stays the scenario's: its connects come from 127.0.0.1. */
static void on_spawn(void *ud, pl_task *t)
{
    pl__real *r = ud;
    uint32_t n = pl__real_node_current(r);
    uint32_t id = pl_task_id(t);
    if (n == 0) {
        return;
    }
    size_t cap = r->task_node_cap;
    if (pl__grow((void **)&r->task_node, &cap, (size_t)id + 1, 1, 64, UINT32_MAX) != 0) {
        return;
    }
    r->task_node_cap = (uint32_t)cap;
    r->task_node[id] = (uint8_t)n;
    pl__task_rename(t, pl__node_task_name(&r->nodes, n, pl_task_name(t)));
}

static void on_poll_begin(void *ud, pl_task *t, uint32_t gen, bool probe)
{
    (void)gen;
    (void)probe;
    pl__real *r = ud;
    r->polling = node_of(r, t);
}

static void on_poll_end(void *ud, pl_task *t, pl_poll_result res, bool probe)
{
    (void)t;
    (void)res;
    (void)probe;
    ((pl__real *)ud)->polling = 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    (void)remove(path);
    return 0;
}

/* ---- The run ---------------------------------------------------------- */

static int real_begin(pl__real *r)
{
    memset(r, 0, sizeof *r);
    r->claim = -1;
    r->obs = (pl_observer){.version = PL_OBSERVER_VERSION,
                           .spawn = on_spawn,
                           .poll_begin = on_poll_begin,
                           .poll_end = on_poll_end};
    int rc = pl__real_system_init(r);
    if (rc != 0) {
        return rc;
    }
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.system = &r->outer;
    o.observer = &r->obs;
    o.observer_ud = r;
    pl__real_set_current(r); /* the system's entries find the run here */
    rc = pl_executor_create(&r->ex, &o);
    if (rc != 0) {
        pl__real_set_current(NULL);
        pl__real_system_finish(r);
    }
    return rc;
}

/* After the scenario's teardown: the executor first (it closes what the
 * cancelled tasks held), then the system, the nodes, their files. */
static void real_end(pl__real *r)
{
    pl_executor_destroy(r->ex);
    pl__real_system_finish(r);
    pl__real_set_current(NULL);
    pl__nodes_free(&r->nodes);
    free(r->task_node);
    if (r->root[0] != '\0') {
        (void)nftw(r->root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
}

pl_finding_kind pl__real_run(const pl_scenario *sc, char *msg, size_t msg_len)
{
    PL__SIM_ASSERT(pl__real_current() == NULL);
    pl__real r;
    void *state = calloc(1, sc->state_size > 0 ? sc->state_size : 1);
    int rc = state != NULL ? real_begin(&r) : PL_ENOMEM;
    if (rc != 0) {
        free(state);
        snprintf(msg, msg_len, "cannot create the executor: %s", pl_strerror(rc));
        return PL_FINDING_ASSERTION;
    }
    pl_finding_kind kind = PL_FINDING_NONE;
    if ((rc = sc->setup(r.ex, state)) < 0) {
        kind = PL_FINDING_ASSERTION;
        snprintf(msg, msg_len, "setup failed: %s", pl_strerror(rc));
    } else if ((rc = pl_run(r.ex)) < 0) {
        kind = rc == PL_EDEADLK ? PL_FINDING_DEADLOCK : PL_FINDING_ASSERTION;
        snprintf(msg, msg_len, "pl_run failed: %s (%zu tasks left)", pl_strerror(rc),
                 pl_executor_live_tasks(r.ex));
    } else if (sc->check != NULL && sc->check(r.ex, state, msg, msg_len)) {
        kind = PL_FINDING_ASSERTION;
    }
    /* The order of pl_sim_run (pollen/sim.h): no task still points into
     * the state when teardown runs, and the executor is still alive. */
    pl_executor_cancel_all(r.ex);
    if (sc->teardown != NULL) {
        sc->teardown(state);
    }
    pl__real_system_end_run(&r);
    real_end(&r);
    free(state);
    return kind;
}
