/* Zoo: a channel receiver that registers its waker after an await.
 *
 * The primitive: `mailbox`, a hand-written single-consumer channel of
 * ints (a ring of 8) with one waker slot. mailbox_send pushes an item and
 * wakes whatever waker the slot holds. The receiver batches: it takes
 * items while there are some, and when the mailbox runs dry it first
 * flushes the batch to its sink (an awaited 1 ms write) and then parks.
 *
 * BUG (bug_chan_register_late): the receiver checks "empty", awaits the
 * flush, and only then stores its waker and returns PENDING, trusting the
 * check it made before the await. A send that lands during the flush
 * finds the slot empty, wakes nobody, and the receiver parks with an item
 * already in the mailbox.
 * Why it is a bug: a check and the registration it relies on must not be
 * separated by an await; at an await anything may happen, including the
 * very event the check looked for. The producer sends every 2 ms and the
 * flush takes 1 ms, so in production's order it never shows; a flush
 * timer that fires late (or an equal-deadline tie) opens the window.
 * Finding: lost_wakeup. At quiescence the receiver is parked, nobody will
 * wake it, and a probe poll takes the item (its state changes).
 * FIX (fix_chan_register_late): register, then check. Each pass of the
 * receive loop stores the waker first and checks the mailbox after, so a
 * send either happens before the check (seen) or after the registration
 * (wakes us). The flush is followed by a fresh pass, never by PENDING.
 */
#include "zoo.h"

enum { ITEMS = 6, RING = 8 };

typedef struct mailbox {
    int ring[RING];
    unsigned head;
    unsigned len;
    pl_waker rx_waker; /* the receiver's waker while it is parked */
} mailbox;

typedef struct chan_state {
    mailbox mb;
    int received;
    int sum;
    int flushed;
} chan_state;

static void mailbox_send(mailbox *mb, int v)
{
    pl_always(mb->len < RING, "mailbox overflow");
    mb->ring[(mb->head + mb->len) % RING] = v;
    mb->len++;
    pl_waker_slot_wake(&mb->rx_waker);
}

static bool mailbox_take(mailbox *mb, int *out)
{
    if (mb->len == 0) {
        return false;
    }
    *out = mb->ring[mb->head];
    mb->head = (mb->head + 1) % RING;
    mb->len--;
    return true;
}

/* ---- The receiver: a hand-written state machine --------------------- */

enum { RX_CHECK = 0, RX_FLUSHING = 1, RX_PARKED = 2 };

typedef struct receiver {
    pl_future base; /* base.resume holds RX_* */
    chan_state *st;
    int batch;      /* items taken since the last flush */
    pl_sleep flush; /* the sink write, while RX_FLUSHING */
} receiver;

/* Takes every item there is; true once all ITEMS arrived. */
static bool take_all(receiver *self)
{
    int v;
    while (mailbox_take(&self->st->mb, &v)) {
        self->st->received++;
        self->st->sum += v;
        self->batch++;
    }
    return self->st->received == ITEMS;
}

static void start_flush(receiver *self)
{
    self->flush = pl_sleep_for(1 * PL_MS);
    self->base.resume = RX_FLUSHING;
}

static void end_flush(receiver *self)
{
    self->st->flushed += self->batch;
    self->batch = 0;
}

static pl_poll_result receiver_poll_buggy(pl_future *f, pl_context *cx)
{
    receiver *self = (receiver *)f;
    for (;;) {
        switch (self->base.resume) {
        case RX_CHECK:
            if (take_all(self)) {
                return PL_READY;
            }
            if (self->batch == 0) {
                /* Nothing to flush: register right away. */
                pl_waker_slot_set(&self->st->mb.rx_waker, &cx->waker);
                self->base.resume = RX_PARKED;
                return PL_PENDING;
            }
            start_flush(self);
            break;
        case RX_FLUSHING:
            if (pl_poll(&self->flush.base, cx) == PL_PENDING) {
                return PL_PENDING;
            }
            end_flush(self);
            /* BUG: "empty" was checked before the await above. */
            pl_waker_slot_set(&self->st->mb.rx_waker, &cx->waker);
            self->base.resume = RX_PARKED;
            return PL_PENDING;
        default: /* RX_PARKED: woken (or polled spuriously): look again */
            self->base.resume = RX_CHECK;
            break;
        }
    }
}

static pl_poll_result receiver_poll_fixed(pl_future *f, pl_context *cx)
{
    receiver *self = (receiver *)f;
    for (;;) {
        switch (self->base.resume) {
        case RX_CHECK:
            /* FIX: register first, then check: no send can fall between. */
            pl_waker_slot_set(&self->st->mb.rx_waker, &cx->waker);
            if (take_all(self)) {
                return PL_READY;
            }
            if (self->batch == 0) {
                return PL_PENDING;
            }
            start_flush(self);
            break;
        default: /* RX_FLUSHING */
            if (pl_poll(&self->flush.base, cx) == PL_PENDING) {
                return PL_PENDING;
            }
            end_flush(self);
            self->base.resume = RX_CHECK; /* a fresh pass, not PENDING */
            break;
        }
    }
}

/* Releases the waker in the mailbox and a flush in progress. */
static void receiver_drop(pl_future *f)
{
    receiver *self = (receiver *)f;
    pl_waker_slot_clear(&self->st->mb.rx_waker);
    pl_drop_child(&self->flush.base);
}

static const pl_future_vtable receiver_buggy_vt = {"receiver", receiver_poll_buggy,
                                                   receiver_drop};
static const pl_future_vtable receiver_fixed_vt = {"receiver", receiver_poll_fixed,
                                                   receiver_drop};

/* ---- The producer: a coroutine sending every 2 ms -------------------- */

typedef struct producer {
    pl_future base;
    chan_state *st;
    int i;
    pl_sleep gap;
} producer;

static pl_poll_result producer_poll(pl_future *f, pl_context *cx)
{
    producer *self = (producer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 1; self->i <= ITEMS; self->i++) {
        mailbox_send(&self->st->mb, self->i);
        self->gap = pl_sleep_for(2 * PL_MS);
        PL_AWAIT(cx, &self->gap);
    }
    PL_ASYNC_END;
}

static void producer_drop(pl_future *f) { pl_drop_child(&((producer *)f)->gap.base); }

static const pl_future_vtable producer_vt = {"producer", producer_poll, producer_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, chan_state *st, const pl_future_vtable *rx_vt)
{
    receiver rx = {.base = PL_FUTURE_INIT(rx_vt), .st = st};
    producer tx = {.base = PL_FUTURE_INIT(&producer_vt), .st = st};
    int rc = PL_SPAWN(ex, rx, "receiver", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, tx, "producer", NULL);
}

static int setup_buggy(pl_executor *ex, void *state)
{
    return setup(ex, state, &receiver_buggy_vt);
}

static int setup_fixed(pl_executor *ex, void *state)
{
    return setup(ex, state, &receiver_fixed_vt);
}

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    chan_state *st = state;
    int want = ITEMS * (ITEMS + 1) / 2;
    if (st->received != ITEMS || st->sum != want) {
        return pl_check_fail(msg, len, "received %d items summing to %d, want %d summing to %d",
                        st->received, st->sum, ITEMS, want);
    }
    return 0;
}

PL_SCENARIO(bug_chan_register_late_sc, .name = "bug_chan_register_late",
            .summary = "channel receiver registers its waker after an await (lost wakeup)",
            .state_size = sizeof(chan_state), .setup = setup_buggy, .check = check,
            .expect = "lost_wakeup");

PL_SCENARIO(fix_chan_register_late_sc, .name = "fix_chan_register_late",
            .summary = "channel receiver registers, then checks",
            .state_size = sizeof(chan_state), .setup = setup_fixed, .check = check);
