/* Zoo: an RPC reply future that takes every poll after the first as "woken".
 *
 * The primitive: `rpc_call`, a hand-written request/reply pair. The
 * caller task sends a request and awaits `reply_recv`; a backend task
 * works on it for a few 1 ms steps, writes the reply into the call and
 * wakes the caller's stored waker.
 *
 * BUG (bug_wake_means_ready): reply_recv registers its waker on the first
 * poll and returns READY on any later poll: "we are only polled again
 * when the backend woke us, so the reply is there". The executor makes no
 * such promise: a poll can come without a wake (a select sibling woke the
 * task, a remote waker fired twice, a scheduler polls spuriously). The
 * simulator injects spurious wakes with a small probability; one landing
 * while the backend works makes the caller read a reply that is not
 * there.
 * Why it is a bug: a poll means "check your state", never "your event
 * happened"; a correct future tolerates any number of extra polls.
 * Finding: assertion. The caller states pl_always(reply present) after
 * the await, and the scenario check compares the reply too.
 * FIX (fix_wake_means_ready): reply_recv checks the call's `done` field
 * on every poll and refreshes its waker while it is not set.
 */
#include "zoo.h"

enum { BACKEND_STEPS = 12 };

typedef struct rpc_call {
    int request;
    int reply;
    bool done;
    pl_waker waker;
} rpc_call;

typedef struct rpc_state {
    rpc_call call;
    int caller_got;
} rpc_state;

static void rpc_complete(rpc_call *c, int reply)
{
    c->reply = reply;
    c->done = true;
    pl_waker_slot_wake(&c->waker);
}

/* ---- reply_recv -------------------------------------------------------- */

typedef struct reply_recv {
    pl_future base; /* base.resume: 1 once registered (buggy version) */
    rpc_call *call;
} reply_recv;

static pl_poll_result reply_recv_poll_buggy(pl_future *f, pl_context *cx)
{
    reply_recv *self = (reply_recv *)f;
    if (self->base.resume == 0) {
        pl_waker_slot_set(&self->call->waker, &cx->waker);
        self->base.resume = 1;
        return PL_PENDING;
    }
    return PL_READY; /* BUG: "polled again, so the backend woke us" */
}

static pl_poll_result reply_recv_poll_fixed(pl_future *f, pl_context *cx)
{
    reply_recv *self = (reply_recv *)f;
    if (self->call->done) { /* FIX: look at the state itself */
        return PL_READY;
    }
    pl_waker_slot_set(&self->call->waker, &cx->waker);
    return PL_PENDING;
}

static void reply_recv_drop(pl_future *f) { pl_waker_slot_clear(&((reply_recv *)f)->call->waker); }

static const pl_future_vtable reply_recv_buggy_vt = {"reply_recv", reply_recv_poll_buggy,
                                                     reply_recv_drop};
static const pl_future_vtable reply_recv_fixed_vt = {"reply_recv", reply_recv_poll_fixed,
                                                     reply_recv_drop};

/* ---- Caller and backend ------------------------------------------------ */

typedef struct caller {
    pl_future base;
    rpc_state *st;
    const pl_future_vtable *recv_vt;
    reply_recv recv;
} caller;

static pl_poll_result caller_poll(pl_future *f, pl_context *cx)
{
    caller *self = (caller *)f;
    PL_ASYNC_BEGIN(self);
    self->st->call.request = 20;
    self->recv = (reply_recv){PL_FUTURE_INIT(self->recv_vt), &self->st->call};
    PL_AWAIT(cx, &self->recv);
    pl_always(self->st->call.done, "the RPC reply is present once reply_recv is READY");
    self->st->caller_got = self->st->call.reply;
    PL_ASYNC_END;
}

static void caller_drop(pl_future *f) { pl_drop_child(&((caller *)f)->recv.base); }

static const pl_future_vtable caller_vt = {"caller", caller_poll, caller_drop};

typedef struct backend {
    pl_future base;
    rpc_state *st;
    int i;
    pl_sleep step;
} backend;

static pl_poll_result backend_poll(pl_future *f, pl_context *cx)
{
    backend *self = (backend *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < BACKEND_STEPS; self->i++) {
        self->step = pl_sleep_for(1 * PL_MS); /* one stage of the work */
        PL_AWAIT(cx, &self->step);
    }
    rpc_complete(&self->st->call, self->st->call.request + 22);
    PL_ASYNC_END;
}

static void backend_drop(pl_future *f) { pl_drop_child(&((backend *)f)->step.base); }

static const pl_future_vtable backend_vt = {"backend", backend_poll, backend_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, rpc_state *st, const pl_future_vtable *recv_vt)
{
    caller c = {.base = PL_FUTURE_INIT(&caller_vt), .st = st, .recv_vt = recv_vt};
    backend b = {.base = PL_FUTURE_INIT(&backend_vt), .st = st};
    int rc = PL_SPAWN(ex, c, "caller", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, b, "backend", NULL);
}

static int setup_buggy(pl_executor *ex, void *state)
{
    return setup(ex, state, &reply_recv_buggy_vt);
}

static int setup_fixed(pl_executor *ex, void *state)
{
    return setup(ex, state, &reply_recv_fixed_vt);
}

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    rpc_state *st = state;
    if (st->caller_got != 42) {
        return pl_check_fail(msg, len, "the caller got reply %d, want 42", st->caller_got);
    }
    return 0;
}

PL_SCENARIO(bug_wake_means_ready_sc, .name = "bug_wake_means_ready",
            .summary = "reply future treats any later poll as the wake (spurious-poll intolerant)",
            .state_size = sizeof(rpc_state), .setup = setup_buggy, .check = check,
            .expect = "assertion");

PL_SCENARIO(fix_wake_means_ready_sc, .name = "fix_wake_means_ready",
            .summary = "reply future checks the reply on every poll",
            .state_size = sizeof(rpc_state), .setup = setup_fixed, .check = check);
