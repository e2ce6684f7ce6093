/* Zoo: a ready flag between two tasks of one node of a cluster, in two
 * flavours of a lost wake. They exist so that findings which list parked
 * tasks come from a cluster: a node's tasks are named "node/task" by the
 * run's node table, which the run frees, and a finding must own every
 * string it carries past the run (a campaign's first finding, a worker's
 * finding sent to the CLI's parent, `--json`).
 *
 * The program: a cluster of two nodes (pollen/sim_node.h). "store"
 * (10.0.0.1) boots two tasks: "loader" fills a table (a few polls of
 * work), then sets a ready flag in node memory and wakes whoever waits
 * for it; "server" waits for the flag, then counts itself done. "peer"
 * (10.0.0.2) boots one task that does unrelated work, so the scheduler
 * interleaves the nodes' tasks. The check: the server ran.
 *
 * BUG (bug_node_register_late): the server checks the flag, then yields
 * once to let the loader's first batch through ("it is loading anyway"),
 * then stores its waker and parks without looking at the flag again (its
 * next poll looks). A loader that finishes between the check and the
 * store wakes nobody.
 * Finding: lost_wakeup, naming "store/server" as parked: a probe poll
 * sees the flag and finishes.
 * FIX (fix_node_register_late): store the waker, then check the flag.
 *
 * BUG (bug_node_wake_no_flag): the loader "saves a write": when a waiter
 * is registered it wakes it instead of setting the flag, and sets the
 * flag only when nobody waits. The woken server finds no flag, registers
 * again and parks for good.
 * Finding: deadlock, naming "store/server" as parked.
 * FIX (fix_node_wake_no_flag): always set the flag, then wake.
 */
#include <pollen/sim_node.h>

#include "zoo.h"

enum { LOAD_BATCHES = 3, PEER_ROUNDS = 4 };

typedef enum flag_bug { FLAG_FIXED, FLAG_REGISTER_LATE, FLAG_WAKE_NO_FLAG } flag_bug;

typedef struct flag_state {
    flag_bug bug;
    bool served; /* the server saw the flag */
} flag_state;

/* The node's memory: freed with the node at the end of the run. */
typedef struct flag_mem {
    bool ready;
    pl_waker waiter;
} flag_mem;

/* ---- The loader: a few polls of work, then the flag ------------------------ */

typedef struct loader {
    pl_future base;
    flag_state *st;
    flag_mem *m;
    int batch;
} loader;

static void loader_publish(loader *v)
{
    if (v->st->bug == FLAG_WAKE_NO_FLAG && pl_waker_is_set(&v->m->waiter)) {
        pl_waker_slot_wake(&v->m->waiter); /* BUG: a wake without the flag */
        return;
    }
    v->m->ready = true;
    pl_waker_slot_wake(&v->m->waiter);
}

static pl_poll_result loader_poll(pl_future *f, pl_context *cx)
{
    loader *v = (loader *)f;
    PL_ASYNC_BEGIN(v);
    for (v->batch = 0; v->batch < LOAD_BATCHES; v->batch++) {
        PL_YIELD(cx);
    }
    loader_publish(v);
    PL_ASYNC_END;
}

static const pl_future_vtable loader_vt = {"loader", loader_poll, NULL};

/* ---- The server: waits for the flag ------------------------------------------ */

typedef struct server {
    pl_future base;
    flag_state *st;
    flag_mem *m;
    bool checked; /* the buggy path: it looked, then yielded; the next poll parks */
} server;

static pl_poll_result server_wait_poll(server *v, pl_context *cx)
{
    if (v->st->bug == FLAG_REGISTER_LATE) {
        if (v->checked) {
            v->checked = false; /* BUG: parks without looking at the flag again */
            pl_waker_slot_set(&v->m->waiter, &cx->waker);
            return PL_PENDING;
        }
        if (v->m->ready) {
            return PL_READY;
        }
        v->checked = true;
        pl_waker_wake_by_ref(&cx->waker); /* let a batch through first */
        return PL_PENDING;
    }
    pl_waker_slot_set(&v->m->waiter, &cx->waker);
    return v->m->ready ? PL_READY : PL_PENDING;
}

static pl_poll_result server_poll(pl_future *f, pl_context *cx)
{
    server *v = (server *)f;
    if (server_wait_poll(v, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    pl_waker_slot_clear(&v->m->waiter);
    v->st->served = true;
    return PL_READY;
}

static void server_drop(pl_future *f)
{
    server *v = (server *)f;
    pl_waker_slot_clear(&v->m->waiter);
}

static const pl_future_vtable server_vt = {"server", server_poll, server_drop};

/* ---- The peer: unrelated work on the other node ------------------------------- */

typedef struct peer {
    pl_future base;
    int round;
} peer;

static pl_poll_result peer_poll(pl_future *f, pl_context *cx)
{
    peer *v = (peer *)f;
    PL_ASYNC_BEGIN(v);
    for (v->round = 0; v->round < PEER_ROUNDS; v->round++) {
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable peer_vt = {"peer", peer_poll, NULL};

/* ---- Nodes and scenarios ------------------------------------------------------ */

static int store_boot(pl_executor *ex, void *ud)
{
    flag_mem *m = pl_node_alloc(sizeof *m);
    if (m == NULL) {
        return PL_ENOMEM;
    }
    *m = (flag_mem){.ready = false, .waiter = PL_WAKER_EMPTY};
    server s = {.base = PL_FUTURE_INIT(&server_vt), .st = ud, .m = m};
    loader l = {.base = PL_FUTURE_INIT(&loader_vt), .st = ud, .m = m};
    int rc = PL_SPAWN(ex, s, "server", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, l, "loader", NULL);
}

static int peer_boot(pl_executor *ex, void *ud)
{
    (void)ud;
    peer p = {.base = PL_FUTURE_INIT(&peer_vt)};
    return PL_SPAWN(ex, p, "worker", NULL);
}

static int setup(pl_executor *ex, flag_state *st, flag_bug bug)
{
    st->bug = bug;
    const pl_node_def store = {
        .name = "store", .host = "10.0.0.1", .boot = store_boot, .ud = st};
    const pl_node_def other = {.name = "peer", .host = "10.0.0.2", .boot = peer_boot};
    int rc = pl_sim_node_add(ex, &store);
    return rc != 0 ? rc : pl_sim_node_add(ex, &other);
}

static int setup_late(pl_executor *ex, void *state) { return setup(ex, state, FLAG_REGISTER_LATE); }

static int setup_no_flag(pl_executor *ex, void *state)
{
    return setup(ex, state, FLAG_WAKE_NO_FLAG);
}

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, FLAG_FIXED); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const flag_state *st = state;
    return st->served ? 0 : pl_check_fail(msg, len, "the server never saw the ready flag");
}

PL_SCENARIO(bug_node_register_late_sc, .name = "bug_node_register_late",
            .summary = "a node's server checks a ready flag, yields, then parks without looking "
                       "again (lost_wakeup, parked task named store/server)",
            .state_size = sizeof(flag_state), .setup = setup_late, .check = check,
            .expect = "lost_wakeup");

PL_SCENARIO(fix_node_register_late_sc, .name = "fix_node_register_late",
            .summary = "a node's server stores its waker, then checks the ready flag",
            .state_size = sizeof(flag_state), .setup = setup_fixed, .check = check);

PL_SCENARIO(bug_node_wake_no_flag_sc, .name = "bug_node_wake_no_flag",
            .summary = "a node's loader wakes a registered server instead of setting the flag "
                       "(deadlock, parked task named store/server)",
            .state_size = sizeof(flag_state), .setup = setup_no_flag, .check = check,
            .expect = "deadlock");

PL_SCENARIO(fix_node_wake_no_flag_sc, .name = "fix_node_wake_no_flag",
            .summary = "a node's loader always sets the ready flag, then wakes the server",
            .state_size = sizeof(flag_state), .setup = setup_fixed, .check = check);
