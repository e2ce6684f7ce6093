/* Zoo: a receiver that parks after a flush without looking again, rescued by its idle timeout.
 *
 * The primitive: `mailbox`, a hand-written single-consumer channel of
 * item numbers (a ring of 8) with one waker slot; mailbox_send pushes an
 * item and wakes whatever waker the slot holds. A connection reader
 * receives items with `mailbox_recv`, racing it against an idle timeout
 * in pl_select(recv, sleep 100 ms): when the peer is quiet for 100 ms the
 * reader sends it a keepalive and waits again. The reader buffers what it
 * received and, when the mailbox runs dry, flushes the buffer (an awaited
 * 1 ms write) before it parks. The peer sends nine items in three bursts
 * (2 or 3 ms apart) separated by 150 ms pauses.
 *
 * BUG (bug_idle_timeout): mailbox_recv checks "empty", awaits the flush,
 * then stores its waker and returns PENDING without looking again. An
 * item sent during the flush finds the slot empty, wakes nobody, and sits
 * in the mailbox. This is chan_register_late's bug, but nothing gets
 * stuck: the next send wakes the reader, and the last item of a burst is
 * picked up when the idle timeout re-polls the select, up to 99 ms late.
 * Why it is a bug: a check and the registration it relies on must not be
 * separated by an await. The timeout hides it from every oracle that
 * waits for the executor to go quiet (it never does while a timer is
 * armed): all nine items arrive, only late. Production's order never
 * shows it (the flush ends before the next send); a flush timer that
 * fires late, or an equal-deadline tie, opens the window.
 * Finding: lost_wakeup. At a point where nothing is runnable and only a
 * timer can fire next, the reader is parked with an item in its mailbox,
 * and a probe poll takes it. Judged only after the run, the scenario's
 * own latency check fails ("item 5 waited 98 ms").
 * FIX (fix_idle_timeout): register, then check: after the flush a fresh
 * pass stores the waker and looks at the mailbox again, so a send lands
 * either before the look (seen) or after the registration (wakes us).
 */
#include "zoo.h"

enum { ITEMS = 9, RING = 8 };

#define IDLE_TIMEOUT_NS (100 * PL_MS)
#define FLUSH_NS        (1 * PL_MS)
#define LATENCY_MAX_NS  (50 * PL_MS)

/* The gap before each send: three bursts of three, 150 ms apart. */
static const pl_time send_gap_ms[ITEMS] = {1, 2, 3, 150, 3, 2, 150, 2, 2};

typedef struct mailbox {
    int ring[RING];
    unsigned head;
    unsigned len;
    pl_waker rx_waker; /* the receiver's waker while it is parked */
} mailbox;

typedef struct idle_state {
    mailbox mb;
    pl_time sent_ns[ITEMS];
    pl_time received_ns[ITEMS];
    int received;
    int out_of_order;
    int keepalives;
} idle_state;

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

/* ---- mailbox_recv: one item, flushing the reader's buffer first ------- */

enum { RECV_CHECK = 0, RECV_FLUSHING = 1, RECV_PARKED = 2 };

typedef struct mailbox_recv {
    pl_future base; /* base.resume holds RECV_* */
    mailbox *mb;
    int *unflushed; /* the reader's buffered items, flushed before parking */
    pl_sleep flush; /* the buffer's write, while RECV_FLUSHING */
    int item;       /* output */
} mailbox_recv;

/* Takes an item if there is one. A receive that completes forgets its
 * waker: a later send must not wake a reader that stopped listening. */
static bool recv_take(mailbox_recv *self)
{
    if (!mailbox_take(self->mb, &self->item)) {
        return false;
    }
    pl_waker_slot_clear(&self->mb->rx_waker);
    return true;
}

/* The reader does not listen while it flushes: a registration left in
 * the slot would go stale at the flush's next poll. The code after the
 * flush decides how to listen again. */
static void start_flush(mailbox_recv *self)
{
    pl_waker_slot_clear(&self->mb->rx_waker);
    self->flush = pl_sleep_for(FLUSH_NS);
    self->base.resume = RECV_FLUSHING;
}

static pl_poll_result mailbox_recv_poll_buggy(pl_future *f, pl_context *cx)
{
    mailbox_recv *self = (mailbox_recv *)f;
    for (;;) {
        switch (self->base.resume) {
        case RECV_CHECK:
            if (recv_take(self)) {
                return PL_READY;
            }
            if (*self->unflushed == 0) {
                /* Nothing to flush: register right away. */
                pl_waker_slot_set(&self->mb->rx_waker, &cx->waker);
                self->base.resume = RECV_PARKED;
                return PL_PENDING;
            }
            start_flush(self);
            break;
        case RECV_FLUSHING:
            if (pl_poll(&self->flush.base, cx) == PL_PENDING) {
                return PL_PENDING;
            }
            *self->unflushed = 0;
            /* BUG: "empty" was checked before the await above. */
            pl_waker_slot_set(&self->mb->rx_waker, &cx->waker);
            self->base.resume = RECV_PARKED;
            return PL_PENDING;
        default: /* RECV_PARKED: woken (or polled spuriously): look again */
            self->base.resume = RECV_CHECK;
            break;
        }
    }
}

static pl_poll_result mailbox_recv_poll_fixed(pl_future *f, pl_context *cx)
{
    mailbox_recv *self = (mailbox_recv *)f;
    for (;;) {
        switch (self->base.resume) {
        case RECV_CHECK:
            /* FIX: register first, then check: no send can fall between. */
            pl_waker_slot_set(&self->mb->rx_waker, &cx->waker);
            if (recv_take(self)) {
                return PL_READY;
            }
            if (*self->unflushed == 0) {
                return PL_PENDING;
            }
            start_flush(self);
            break;
        default: /* RECV_FLUSHING */
            if (pl_poll(&self->flush.base, cx) == PL_PENDING) {
                return PL_PENDING;
            }
            *self->unflushed = 0;
            self->base.resume = RECV_CHECK; /* a fresh pass, not PENDING */
            break;
        }
    }
}

/* Dropped by the select when the idle timeout wins: forget the waker, and
 * abandon a flush in progress (the buffer stays unflushed for the next
 * receive). */
static void mailbox_recv_drop(pl_future *f)
{
    mailbox_recv *self = (mailbox_recv *)f;
    pl_waker_slot_clear(&self->mb->rx_waker);
    pl_drop_child(&self->flush.base);
}

static const pl_future_vtable mailbox_recv_buggy_vt = {"mailbox_recv", mailbox_recv_poll_buggy,
                                                       mailbox_recv_drop};
static const pl_future_vtable mailbox_recv_fixed_vt = {"mailbox_recv", mailbox_recv_poll_fixed,
                                                       mailbox_recv_drop};

/* ---- The reader: select(recv, idle timeout) until every item came ----- */

typedef struct reader {
    pl_future base;
    idle_state *st;
    const pl_future_vtable *recv_vt;
    int unflushed;
    mailbox_recv recv;
    pl_sleep idle;
    pl_future *children[2];
    pl_select sel;
} reader;

static void reader_start_round(reader *self)
{
    self->recv = (mailbox_recv){
        .base = PL_FUTURE_INIT(self->recv_vt), .mb = &self->st->mb, .unflushed = &self->unflushed};
    self->idle = pl_sleep_for(IDLE_TIMEOUT_NS);
    self->children[0] = &self->recv.base;
    self->children[1] = &self->idle.base;
    self->sel = pl_select_make(self->children, 2);
}

static void reader_got(reader *self, pl_context *cx)
{
    idle_state *st = self->st;
    int item = self->recv.item;
    st->out_of_order += item != st->received;
    if (item >= 0 && item < ITEMS) {
        st->received_ns[item] = pl_now(cx->ex);
    }
    st->received++;
    self->unflushed++;
}

static pl_poll_result reader_poll(pl_future *f, pl_context *cx)
{
    reader *self = (reader *)f;
    PL_ASYNC_BEGIN(self);
    while (self->st->received < ITEMS) {
        reader_start_round(self);
        PL_AWAIT(cx, &self->sel);
        if (self->sel.index == 0) {
            reader_got(self, cx);
        } else {
            self->st->keepalives++; /* quiet for 100 ms: ping the peer */
        }
    }
    PL_ASYNC_END;
}

/* Dropping a pending select drops its unfinished children. */
static void reader_drop(pl_future *f) { pl_drop_child(&((reader *)f)->sel.base); }

static const pl_future_vtable reader_vt = {"reader", reader_poll, reader_drop};

/* ---- The peer: bursts of sends ---------------------------------------- */

typedef struct peer {
    pl_future base;
    idle_state *st;
    int i;
    pl_sleep gap;
} peer;

static pl_poll_result peer_poll(pl_future *f, pl_context *cx)
{
    peer *self = (peer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < ITEMS; self->i++) {
        self->gap = pl_sleep_for(send_gap_ms[self->i] * PL_MS);
        PL_AWAIT(cx, &self->gap);
        self->st->sent_ns[self->i] = pl_now(cx->ex);
        mailbox_send(&self->st->mb, self->i);
    }
    PL_ASYNC_END;
}

static void peer_drop(pl_future *f) { pl_drop_child(&((peer *)f)->gap.base); }

static const pl_future_vtable peer_vt = {"peer", peer_poll, peer_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, idle_state *st, const pl_future_vtable *recv_vt)
{
    reader r = {.base = PL_FUTURE_INIT(&reader_vt), .st = st, .recv_vt = recv_vt};
    peer p = {.base = PL_FUTURE_INIT(&peer_vt), .st = st};
    int rc = PL_SPAWN(ex, r, "reader", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, p, "peer", NULL);
}

static int setup_buggy(pl_executor *ex, void *state)
{
    return setup(ex, state, &mailbox_recv_buggy_vt);
}

static int setup_fixed(pl_executor *ex, void *state)
{
    return setup(ex, state, &mailbox_recv_fixed_vt);
}

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    idle_state *st = state;
    if (st->received != ITEMS || st->out_of_order != 0) {
        return pl_check_fail(msg, len, "received %d items (want %d), %d out of order", st->received,
                             ITEMS, st->out_of_order);
    }
    int worst = 0;
    pl_time wait = -1;
    for (int i = 0; i < ITEMS; i++) {
        if (st->received_ns[i] - st->sent_ns[i] > wait) {
            worst = i;
            wait = st->received_ns[i] - st->sent_ns[i];
        }
    }
    if (wait > LATENCY_MAX_NS) {
        return pl_check_fail(msg, len,
                             "item %d waited %.3f ms in the mailbox (sent at %.3f ms, received "
                             "at %.3f ms); the bound is %.0f ms",
                             worst, (double)wait / 1e6, (double)st->sent_ns[worst] / 1e6,
                             (double)st->received_ns[worst] / 1e6, (double)LATENCY_MAX_NS / 1e6);
    }
    return 0;
}

PL_SCENARIO(bug_idle_timeout_sc, .name = "bug_idle_timeout",
            .summary = "receiver parks after a flush without looking again; the idle timeout "
                       "rescues it late (lost wakeup)",
            .state_size = sizeof(idle_state), .setup = setup_buggy, .check = check,
            .expect = "lost_wakeup");

PL_SCENARIO(fix_idle_timeout_sc, .name = "fix_idle_timeout",
            .summary = "receiver registers, then checks, after every flush",
            .state_size = sizeof(idle_state), .setup = setup_fixed, .check = check);
