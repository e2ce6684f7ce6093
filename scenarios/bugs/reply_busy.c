/* Zoo: a reply slot whose "busy" path returns PENDING without a waker.
 *
 * The primitive: `reply_slot`, a hand-written one-shot reply from a
 * server to a client: {busy, filled, value, waker}. The server marks the
 * slot busy while it computes the reply (an awaited 1 ms), then fills it
 * and wakes the stored waker. The client awaits reply_wait.
 *
 * BUG (bug_reply_busy): reply_wait has a shortcut: when the server is
 * already busy with the reply "it will be here in a moment", so it
 * returns PENDING without storing its waker. Nothing else holds a waker
 * of the client: when the client asks while the server is busy, nothing
 * can ever wake it. The client asks 1 ms after it starts and the server
 * turns busy 1 ms after it starts; the client was spawned first, so in
 * production's order it always asks first and registers. A different
 * timer or scheduling order makes it ask second.
 * Why it is a bug: PENDING is a promise that the waker of this poll will
 * be woken when the future can progress. "Soon" is not a waker.
 * Finding: orphan, at that very PENDING: the client was not woken during
 * the poll and no clone of its waker is alive anywhere.
 * FIX (fix_reply_busy): every PENDING path stores the waker; the busy
 * shortcut goes.
 */
#include "zoo.h"

typedef struct reply_slot {
    bool busy;
    bool filled;
    int value;
    pl_waker waker;
} reply_slot;

typedef struct reply_state {
    reply_slot slot;
    int client_got;
} reply_state;

static void reply_fill(reply_slot *s, int value)
{
    s->value = value;
    s->filled = true;
    s->busy = false;
    pl_waker_slot_wake(&s->waker);
}

/* ---- reply_wait -------------------------------------------------------- */

typedef struct reply_wait {
    pl_future base;
    reply_slot *slot;
    int value; /* output */
} reply_wait;

static pl_poll_result reply_wait_poll_buggy(pl_future *f, pl_context *cx)
{
    reply_wait *self = (reply_wait *)f;
    if (self->slot->filled) {
        self->value = self->slot->value;
        return PL_READY;
    }
    if (self->slot->busy) {
        return PL_PENDING; /* BUG: "almost there", but nobody will wake us */
    }
    pl_waker_slot_set(&self->slot->waker, &cx->waker);
    return PL_PENDING;
}

static pl_poll_result reply_wait_poll_fixed(pl_future *f, pl_context *cx)
{
    reply_wait *self = (reply_wait *)f;
    if (self->slot->filled) {
        self->value = self->slot->value;
        return PL_READY;
    }
    pl_waker_slot_set(&self->slot->waker, &cx->waker); /* FIX: on every path */
    return PL_PENDING;
}

static void reply_wait_drop(pl_future *f) { pl_waker_slot_clear(&((reply_wait *)f)->slot->waker); }

static const pl_future_vtable reply_wait_buggy_vt = {"reply_wait", reply_wait_poll_buggy,
                                                     reply_wait_drop};
static const pl_future_vtable reply_wait_fixed_vt = {"reply_wait", reply_wait_poll_fixed,
                                                     reply_wait_drop};

/* ---- Client: waits 1 ms, then awaits the reply ------------------------ */

typedef struct client {
    pl_future base;
    reply_state *st;
    const pl_future_vtable *wait_vt;
    pl_sleep think;
    reply_wait reply;
} client;

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *self = (client *)f;
    PL_ASYNC_BEGIN(self);
    self->think = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->think);
    self->reply = (reply_wait){PL_FUTURE_INIT(self->wait_vt), &self->st->slot, 0};
    PL_AWAIT(cx, &self->reply);
    self->st->client_got = self->reply.value;
    PL_ASYNC_END;
}

static void client_drop(pl_future *f)
{
    client *self = (client *)f;
    pl_drop_child(&self->think.base);
    pl_drop_child(&self->reply.base);
}

static const pl_future_vtable client_vt = {"client", client_poll, client_drop};

/* ---- Server: receives at 1 ms, computes for 1 ms, replies ------------- */

typedef struct server {
    pl_future base;
    reply_state *st;
    pl_sleep wait;
} server;

static pl_poll_result server_poll(pl_future *f, pl_context *cx)
{
    server *self = (server *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->wait);
    self->st->slot.busy = true;
    self->wait = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->wait);
    reply_fill(&self->st->slot, 42);
    PL_ASYNC_END;
}

static void server_drop(pl_future *f) { pl_drop_child(&((server *)f)->wait.base); }

static const pl_future_vtable server_vt = {"server", server_poll, server_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, reply_state *st, const pl_future_vtable *wait_vt)
{
    client c = {.base = PL_FUTURE_INIT(&client_vt), .st = st, .wait_vt = wait_vt};
    server s = {.base = PL_FUTURE_INIT(&server_vt), .st = st};
    int rc = PL_SPAWN(ex, c, "client", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, s, "server", NULL);
}

static int setup_buggy(pl_executor *ex, void *state)
{
    return setup(ex, state, &reply_wait_buggy_vt);
}

static int setup_fixed(pl_executor *ex, void *state)
{
    return setup(ex, state, &reply_wait_fixed_vt);
}

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    reply_state *st = state;
    if (st->client_got != 42) {
        return pl_check_fail(msg, len, "the client got %d, want 42", st->client_got);
    }
    return 0;
}

PL_SCENARIO(bug_reply_busy_sc, .name = "bug_reply_busy",
            .summary = "reply wait returns PENDING without a waker while busy (orphan)",
            .state_size = sizeof(reply_state), .setup = setup_buggy, .check = check,
            .expect = "orphan");

PL_SCENARIO(fix_reply_busy_sc, .name = "fix_reply_busy",
            .summary = "reply wait stores its waker on every PENDING path",
            .state_size = sizeof(reply_state), .setup = setup_fixed, .check = check);
