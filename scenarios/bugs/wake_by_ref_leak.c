/* Zoo: a gate that wakes by reference and forgets the stored waker.
 *
 * The primitive: `start_gate`, a hand-written barrier that holds workers
 * until the coordinator opens it. Each worker's gate_wait stores a clone
 * of its waker in the gate's slot array; gate_open sets the flag and
 * wakes every slot.
 *
 * BUG (bug_wake_by_ref_leak): gate_open wakes each slot with
 * pl_waker_wake_by_ref and then overwrites the slot with PL_WAKER_EMPTY.
 * wake_by_ref keeps the reference; overwriting the slot forgets it. Every
 * stored clone is leaked: it is never dropped, so the waker's task can
 * never be freed (in pollen a task waker holds a reference to the task's
 * allocation). Everything still works, which is why it goes unnoticed.
 * Why it is a bug: a waker is an owned reference: whoever holds one must
 * either wake it by value (which consumes it) or drop it.
 * Finding: waker_leak, at the end of the run: clones of the workers'
 * wakers were made and never dropped.
 * FIX (fix_wake_by_ref_leak): pl_waker_slot_wake, which moves the waker
 * out of the slot and wakes it by value (consuming the reference).
 */
#include "zoo.h"

enum { WORKERS = 3 };

typedef struct start_gate {
    bool open;
    pl_waker slots[WORKERS];
    bool fixed;
} start_gate;

typedef struct gate_state {
    start_gate gate;
    int started;
} gate_state;

static void gate_open(start_gate *g)
{
    g->open = true;
    for (int i = 0; i < WORKERS; i++) {
        if (!pl_waker_is_set(&g->slots[i])) {
            continue;
        }
        if (g->fixed) {
            pl_waker_slot_wake(&g->slots[i]); /* FIX: wake by value */
        } else {
            pl_waker_wake_by_ref(&g->slots[i]);
            g->slots[i] = PL_WAKER_EMPTY; /* BUG: the reference is lost */
        }
    }
}

/* ---- gate_wait --------------------------------------------------------- */

typedef struct gate_wait {
    pl_future base;
    start_gate *gate;
    int slot;
} gate_wait;

static pl_poll_result gate_wait_poll(pl_future *f, pl_context *cx)
{
    gate_wait *self = (gate_wait *)f;
    if (self->gate->open) {
        return PL_READY;
    }
    pl_waker_slot_set(&self->gate->slots[self->slot], &cx->waker);
    return PL_PENDING;
}

static void gate_wait_drop(pl_future *f)
{
    gate_wait *self = (gate_wait *)f;
    pl_waker_slot_clear(&self->gate->slots[self->slot]);
}

static const pl_future_vtable gate_wait_vt = {"gate_wait", gate_wait_poll, gate_wait_drop};

/* ---- Workers and the coordinator --------------------------------------- */

typedef struct worker {
    pl_future base;
    gate_state *st;
    gate_wait wait;
} worker;

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *self = (worker *)f;
    PL_ASYNC_BEGIN(self);
    PL_AWAIT(cx, &self->wait);
    self->st->started++;
    PL_ASYNC_END;
}

static void worker_drop(pl_future *f) { pl_drop_child(&((worker *)f)->wait.base); }

static const pl_future_vtable worker_vt = {"worker", worker_poll, worker_drop};

typedef struct coordinator {
    pl_future base;
    gate_state *st;
    pl_sleep prepare;
} coordinator;

static pl_poll_result coordinator_poll(pl_future *f, pl_context *cx)
{
    coordinator *self = (coordinator *)f;
    PL_ASYNC_BEGIN(self);
    self->prepare = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->prepare);
    gate_open(&self->st->gate);
    PL_ASYNC_END;
}

static void coordinator_drop(pl_future *f) { pl_drop_child(&((coordinator *)f)->prepare.base); }

static const pl_future_vtable coordinator_vt = {"coordinator", coordinator_poll,
                                                coordinator_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, gate_state *st, bool fixed)
{
    st->gate.fixed = fixed;
    for (int i = 0; i < WORKERS; i++) {
        worker w = {.base = PL_FUTURE_INIT(&worker_vt), .st = st};
        w.wait = (gate_wait){PL_FUTURE_INIT(&gate_wait_vt), &st->gate, i};
        int rc = PL_SPAWN(ex, w, "worker", NULL);
        if (rc != 0) {
            return rc;
        }
    }
    coordinator c = {.base = PL_FUTURE_INIT(&coordinator_vt), .st = st};
    return PL_SPAWN(ex, c, "coordinator", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    gate_state *st = state;
    if (st->started != WORKERS) {
        return pl_check_fail(msg, len, "%d workers started, want %d", st->started, WORKERS);
    }
    return 0;
}

PL_SCENARIO(bug_wake_by_ref_leak_sc, .name = "bug_wake_by_ref_leak",
            .summary = "gate wakes by reference and forgets its wakers (waker leak)",
            .state_size = sizeof(gate_state), .setup = setup_buggy, .check = check,
            .expect = "waker_leak");

PL_SCENARIO(fix_wake_by_ref_leak_sc, .name = "fix_wake_by_ref_leak",
            .summary = "gate wakes its stored wakers by value",
            .state_size = sizeof(gate_state), .setup = setup_fixed, .check = check);
