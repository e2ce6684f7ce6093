/* Zoo: a non-blocking signal send that drops the signal when the slot is full.
 *
 * The primitive: `signal_slot`, a hand-written one-slot mailbox of
 * control signals for a worker (RELOAD, STOP). The controller must never
 * block on the worker, so it sends with signal_try_send; the worker's
 * loop awaits signal_recv and handles one signal per iteration.
 *
 * BUG (bug_signal_drop): signal_try_send returns without a trace when a
 * signal is already pending ("the worker is about to look anyway"). The
 * controller sends RELOAD, yields once, then sends STOP. In production's
 * FIFO order the woken worker runs before the controller resumes, so the
 * slot is empty again; a schedule that resumes the controller first
 * finds RELOAD still pending and throws STOP away.
 * Why it is a bug: a non-blocking send must either deliver, report the
 * failure to a caller that acts on it, or coalesce; silently dropping a
 * control signal loses a state transition the receiver waits for.
 * Finding: deadlock. The worker handled RELOAD and waits for STOP in
 * signal_recv, its waker stored in the slot; the controller is done; no
 * probe can progress.
 * FIX (fix_signal_drop): signals are bits in a pending set: a send ORs
 * its bit in (coalescing duplicates, never dropping a distinct signal)
 * and the worker takes the whole set at once.
 */
#include "zoo.h"

enum { SIG_RELOAD = 1u << 0, SIG_STOP = 1u << 1 };

typedef struct signal_slot {
    unsigned pending; /* buggy: one signal or 0; fixed: a set of bits */
    pl_waker waker;
    bool fixed;
} signal_slot;

typedef struct signal_state {
    signal_slot slot;
    int reloads;
    int dropped;
    bool stopped;
} signal_state;

/* Returns false when the signal was not delivered. */
static bool signal_try_send(signal_slot *s, unsigned sig)
{
    if (s->fixed) {
        s->pending |= sig; /* FIX: coalesce, never drop */
    } else if (s->pending != 0) {
        return false; /* BUG: full: the signal is dropped */
    } else {
        s->pending = sig;
    }
    pl_waker_slot_wake(&s->waker);
    return true;
}

/* ---- signal_recv: takes what is pending -------------------------------- */

typedef struct signal_recv {
    pl_future base;
    signal_slot *slot;
    unsigned out;
} signal_recv;

static pl_poll_result signal_recv_poll(pl_future *f, pl_context *cx)
{
    signal_recv *self = (signal_recv *)f;
    if (self->slot->pending != 0) {
        self->out = self->slot->pending;
        self->slot->pending = 0;
        return PL_READY;
    }
    pl_waker_slot_set(&self->slot->waker, &cx->waker);
    return PL_PENDING;
}

static void signal_recv_drop(pl_future *f)
{
    pl_waker_slot_clear(&((signal_recv *)f)->slot->waker);
}

static const pl_future_vtable signal_recv_vt = {"signal_recv", signal_recv_poll,
                                                signal_recv_drop};

/* ---- Worker and controller --------------------------------------------- */

typedef struct worker {
    pl_future base;
    signal_state *st;
    signal_recv recv;
} worker;

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *self = (worker *)f;
    PL_ASYNC_BEGIN(self);
    while (!self->st->stopped) {
        self->recv = (signal_recv){PL_FUTURE_INIT(&signal_recv_vt), &self->st->slot, 0};
        PL_AWAIT(cx, &self->recv);
        if (self->recv.out & SIG_RELOAD) {
            self->st->reloads++;
        }
        if (self->recv.out & SIG_STOP) {
            self->st->stopped = true;
        }
    }
    PL_ASYNC_END;
}

static void worker_drop(pl_future *f) { pl_drop_child(&((worker *)f)->recv.base); }

static const pl_future_vtable worker_vt = {"worker", worker_poll, worker_drop};

typedef struct controller {
    pl_future base;
    signal_state *st;
} controller;

static pl_poll_result controller_poll(pl_future *f, pl_context *cx)
{
    controller *self = (controller *)f;
    PL_ASYNC_BEGIN(self);
    self->st->dropped += !signal_try_send(&self->st->slot, SIG_RELOAD);
    PL_YIELD(cx);
    self->st->dropped += !signal_try_send(&self->st->slot, SIG_STOP);
    PL_ASYNC_END;
}

static const pl_future_vtable controller_vt = {"controller", controller_poll, NULL};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, signal_state *st, bool fixed)
{
    st->slot.fixed = fixed;
    worker w = {.base = PL_FUTURE_INIT(&worker_vt), .st = st};
    controller c = {.base = PL_FUTURE_INIT(&controller_vt), .st = st};
    int rc = PL_SPAWN(ex, w, "worker", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, c, "controller", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    signal_state *st = state;
    if (!st->stopped || st->reloads != 1 || st->dropped != 0) {
        return pl_check_fail(msg, len, "stopped=%d reloads=%d dropped=%d, want 1, 1, 0",
                        st->stopped, st->reloads, st->dropped);
    }
    return 0;
}

PL_SCENARIO(bug_signal_drop_sc, .name = "bug_signal_drop",
            .summary = "non-blocking signal send drops the signal when the slot is full",
            .state_size = sizeof(signal_state), .setup = setup_buggy, .check = check,
            .expect = "deadlock");

PL_SCENARIO(fix_signal_drop_sc, .name = "fix_signal_drop",
            .summary = "signals coalesce into a pending set, none is dropped",
            .state_size = sizeof(signal_state), .setup = setup_fixed, .check = check);
