/* Zoo: a client that waits for an ack already broadcast; its ack timeout re-sends.
 *
 * The protocol: a client sends numbered requests to a server task, one
 * at a time. The server (a background task) applies each request in
 * 1 ms, advances acked_seq and broadcasts on `acked` with
 * pl_notify_waiters. The client writes each request to its own log
 * (an awaited 2 ms) after sending it, then waits for the ack; if none
 * comes within 20 ms it re-sends (the server acks a re-sent request
 * again).
 *
 * BUG (bug_ack_resend): after its log write the client waits for the ack
 * without looking at acked_seq first ("the ack cannot have come yet, we
 * only just sent"). The server is faster than the log: its broadcast
 * comes while the client is not waiting, and a broadcast keeps nothing
 * for a task that was not waiting. The client waits for an ack that will
 * never come again, until its ack timeout re-sends; every request
 * finishes 20 ms late.
 * Why it is a bug: pl_notify_waiters wakes only the waiters linked at
 * that moment. Whoever waits for a broadcast must be linked before the
 * state it waits for can change, or look at the state after linking.
 * Finding: deadlock, one the ack timeout hides. Nothing stays parked and
 * a probe poll of the client changes nothing (its notified was never
 * released), so no other oracle sees it; the client waits on the notify
 * whose broadcast it missed, its ack timeout is the only timer left, and
 * without it nothing would ever run again.
 * FIX (fix_ack_resend): look at acked_seq before each wait; the wait (a
 * select of the notified and the ack timeout) links in the same poll as
 * that look, so no broadcast can fall between them.
 */
#include "zoo.h"

enum { REQUESTS = 3 };

#define APPLY_NS (1 * PL_MS)
#define LOG_NS (2 * PL_MS)
#define ACK_TIMEOUT_NS (20 * PL_MS)

typedef struct ack_state {
    pl_notify request;  /* a request is pending (pl_notify_one keeps a permit) */
    pl_notify acked;    /* broadcast: the server applied up to acked_seq */
    uint64_t sent_seq;
    uint64_t acked_seq;
    int resends;
    int done;           /* requests the client saw acknowledged */
    bool fixed;
} ack_state;

/* ---- Server: apply the latest request, broadcast its ack --------------- */

typedef struct server {
    pl_future base;
    ack_state *st;
    pl_notified request;
    pl_sleep apply;
} server;

static pl_poll_result server_poll(pl_future *f, pl_context *cx)
{
    server *self = (server *)f;
    ack_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->request = pl_notified_make(&st->request);
        PL_AWAIT(cx, &self->request);
        self->apply = pl_sleep_for(APPLY_NS);
        PL_AWAIT(cx, &self->apply);
        st->acked_seq = st->sent_seq;
        pl_notify_waiters(&st->acked);
    }
    PL_ASYNC_END;
}

/* Cancelled when the program ends (it is a background task). */
static void server_drop(pl_future *f)
{
    server *self = (server *)f;
    pl_drop_child(&self->request.base);
    pl_drop_child(&self->apply.base);
}

static const pl_future_vtable server_vt = {"server", server_poll, server_drop};

/* ---- Client: send, log, wait for the ack or re-send -------------------- */

typedef struct client {
    pl_future base;
    ack_state *st;
    uint64_t seq;
    pl_sleep log;
    pl_notified ack;
    pl_sleep timeout;
    pl_future *children[2];
    pl_select wait;
} client;

/* One wait for the ack, bounded by the ack timeout. */
static void start_wait(client *self)
{
    self->ack = pl_notified_make(&self->st->acked);
    self->timeout = pl_sleep_for(ACK_TIMEOUT_NS);
    self->children[0] = &self->ack.base;
    self->children[1] = &self->timeout.base;
    self->wait = pl_select_make(self->children, 2);
}

static void resend(client *self)
{
    self->st->resends++;
    pl_notify_one(&self->st->request);
}

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *self = (client *)f;
    ack_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    for (self->seq = 1; self->seq <= REQUESTS; self->seq++) {
        st->sent_seq = self->seq;
        pl_notify_one(&st->request);
        self->log = pl_sleep_for(LOG_NS);
        PL_AWAIT(cx, &self->log);
        if (st->fixed) {
            /* FIX: look, then wait; both in one poll. */
            while (st->acked_seq < self->seq) {
                start_wait(self);
                PL_AWAIT(cx, &self->wait);
                if (self->wait.index == 1) {
                    resend(self);
                }
            }
        } else {
            /* BUG: wait first, as if the ack could not have come yet. */
            do {
                start_wait(self);
                PL_AWAIT(cx, &self->wait);
                if (self->wait.index == 1) {
                    resend(self);
                }
            } while (st->acked_seq < self->seq);
        }
        st->done++;
    }
    PL_ASYNC_END;
}

static void client_drop(pl_future *f)
{
    client *self = (client *)f;
    pl_drop_child(&self->log.base);
    pl_drop_child(&self->wait.base);
}

static const pl_future_vtable client_vt = {"client", client_poll, client_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, ack_state *st, bool fixed)
{
    pl_notify_init(&st->request);
    pl_notify_init(&st->acked);
    st->fixed = fixed;
    client c = {.base = PL_FUTURE_INIT(&client_vt), .st = st};
    int rc = PL_SPAWN(ex, c, "client", NULL);
    if (rc != 0) {
        return rc;
    }
    server s = {.base = PL_FUTURE_INIT(&server_vt), .st = st};
    pl_task *t;
    rc = PL_SPAWN(ex, s, "server", &t);
    if (rc != 0) {
        return rc;
    }
    pl_task_set_background(t, true);
    pl_task_release(t);
    return 0;
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    ack_state *st = state;
    if (st->done != REQUESTS || st->acked_seq != REQUESTS) {
        return pl_check_fail(msg, len, "%d of %d requests acknowledged (acked_seq %llu)",
                             st->done, REQUESTS, (unsigned long long)st->acked_seq);
    }
    return 0;
}

PL_SCENARIO(bug_ack_resend_sc, .name = "bug_ack_resend",
            .summary = "client waits for an ack broadcast while it was logging; its ack timeout "
                       "re-sends (deadlock a timer hides)",
            .state_size = sizeof(ack_state), .setup = setup_buggy, .check = check,
            .expect = "deadlock", .time_limit_ns = 1 * PL_S);

PL_SCENARIO(fix_ack_resend_sc, .name = "fix_ack_resend",
            .summary = "client looks at the acked sequence, then waits, in one poll",
            .state_size = sizeof(ack_state), .setup = setup_fixed, .check = check,
            .time_limit_ns = 1 * PL_S);
