/* Zoo: a poll that spins on a child future instead of returning PENDING.
 *
 * The primitive: `mailbox`, a one-message slot with a waker, and its
 * receive future `mail_recv` (READY once a message is in the slot;
 * otherwise it stores the waker and is PENDING). A courier task puts a
 * message in after a 1 ms delay; a reader task awaits it.
 *
 * BUG (bug_poll_spin): the reader "waits" by polling the receive future
 * in a loop until it is READY: "the message arrives any moment now, and
 * returning PENDING costs a round trip through the executor". The courier
 * can only deliver once the reader's poll returns, so the loop never
 * ends: the executor thread is stuck inside one poll, everything else
 * starves, and in production it burns a core forever.
 * Why it is a bug: a poll must never wait. A PENDING child means "not
 * now, I will wake you": the parent returns PENDING too and lets the
 * wake bring it back.
 * Finding: livelock, caught inside the poll by the sub-poll bound (the
 * reader called pl_poll a million times within one poll), which leaves
 * the spinning poll and names it; deterministic, in-process.
 * FIX (fix_poll_spin): the reader awaits the receive with PL_AWAIT,
 * which returns PENDING after the child registered the waker.
 */
#include "zoo.h"

#include <pollen/timer.h>

typedef struct mailbox {
    bool full;
    int message;
    pl_waker waker; /* the receiver's */
} mailbox;

typedef struct spin_state {
    mailbox box;
    bool fixed;
    int got;
} spin_state;

typedef struct mail_recv {
    pl_future base;
    mailbox *box;
    int message; /* output */
} mail_recv;

static pl_poll_result mail_recv_poll(pl_future *f, pl_context *cx)
{
    mail_recv *r = (mail_recv *)f;
    if (r->box->full) {
        r->message = r->box->message;
        r->box->full = false;
        pl_waker_slot_clear(&r->box->waker);
        return PL_READY;
    }
    pl_waker_slot_set(&r->box->waker, &cx->waker);
    return PL_PENDING;
}

static void mail_recv_drop(pl_future *f) { pl_waker_slot_clear(&((mail_recv *)f)->box->waker); }

static const pl_future_vtable mail_recv_vt = {"mail_recv", mail_recv_poll, mail_recv_drop};

static void mail_put(mailbox *box, int message)
{
    box->message = message;
    box->full = true;
    pl_waker_slot_wake(&box->waker);
}

/* ---- Reader and courier -------------------------------------------------- */

typedef struct reader {
    pl_future base;
    spin_state *st;
    mail_recv recv;
} reader;

static pl_poll_result reader_poll(pl_future *f, pl_context *cx)
{
    reader *self = (reader *)f;
    PL_ASYNC_BEGIN(self);
    self->recv = (mail_recv){PL_FUTURE_INIT(&mail_recv_vt), &self->st->box, 0};
    if (self->st->fixed) {
        PL_AWAIT(cx, &self->recv); /* FIX: PENDING until the courier's wake */
    } else {
        while (pl_poll(&self->recv.base, cx) == PL_PENDING) {
            /* BUG: "any moment now" */
        }
    }
    self->st->got = self->recv.message;
    PL_ASYNC_END;
}

static void reader_drop(pl_future *f) { pl_drop_child(&((reader *)f)->recv.base); }

static const pl_future_vtable reader_vt = {"reader", reader_poll, reader_drop};

typedef struct courier {
    pl_future base;
    spin_state *st;
    pl_sleep trip;
} courier;

static pl_poll_result courier_poll(pl_future *f, pl_context *cx)
{
    courier *self = (courier *)f;
    PL_ASYNC_BEGIN(self);
    self->trip = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->trip);
    mail_put(&self->st->box, 42);
    PL_ASYNC_END;
}

static void courier_drop(pl_future *f) { pl_drop_child(&((courier *)f)->trip.base); }

static const pl_future_vtable courier_vt = {"courier", courier_poll, courier_drop};

/* ---- Scenario ------------------------------------------------------------ */

static int setup(pl_executor *ex, spin_state *st, bool fixed)
{
    st->fixed = fixed;
    reader r = {.base = PL_FUTURE_INIT(&reader_vt), .st = st};
    courier c = {.base = PL_FUTURE_INIT(&courier_vt), .st = st};
    int rc = PL_SPAWN(ex, r, "reader", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, c, "courier", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    spin_state *st = state;
    if (st->got != 42) {
        return pl_check_fail(msg, len, "the reader got %d, want 42", st->got);
    }
    return 0;
}

PL_SCENARIO(bug_poll_spin_sc, .name = "bug_poll_spin",
            .summary = "a poll spins calling pl_poll on a PENDING child (livelock)",
            .state_size = sizeof(spin_state), .setup = setup_buggy, .check = check,
            .expect = "livelock");

PL_SCENARIO(fix_poll_spin_sc, .name = "fix_poll_spin",
            .summary = "a poll returns PENDING when its child is PENDING",
            .state_size = sizeof(spin_state), .setup = setup_fixed, .check = check);
