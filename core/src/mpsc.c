/* core/src/mpsc.c: bounded multi-producer single-consumer channel.
 *
 * Fairness comes from reservations: a freed slot is reserved for the
 * longest-waiting send before that send runs, so nothing polled in the
 * meantime (try_send, a fresh send) can take it. Invariant: sends wait
 * only while len + reserved == capacity.
 */
#include <stdio.h>
#include <string.h>

#include "pollen/sync.h"
#include "waiter.h"

/* pl_mpsc_send state, kept in base.resume. */
enum {
    SEND_INIT = PL_WAITER_INIT,
    SEND_WAITING = PL_WAITER_WAITING, /* linked, waker stored */
    SEND_GRANTED = 2,  /* holds a reserved slot */
    SEND_CLOSED = 3,   /* woken by pl_mpsc_close */
    SEND_DONE = 4,
};

/* pl_mpsc_recv state, kept in base.resume. */
enum { RECV_IDLE = 0, RECV_WAITING = 1 };

static void init_common(pl_mpsc *ch, void *buf, size_t item_size, uint32_t capacity)
{
    ch->buf = buf;
    ch->owner = NULL;
    ch->item_size = item_size;
    ch->capacity = capacity;
    ch->head = 0;
    ch->len = 0;
    ch->reserved = 0;
    ch->senders = 1;
    ch->closed = 0;
    pl_list_init(&ch->send_waiters);
    ch->rx_waker = PL_WAKER_EMPTY;
}

int pl_mpsc_init(pl_mpsc *ch, pl_executor *ex, size_t item_size, uint32_t capacity)
{
    PL_ASSERT(ex != NULL && item_size > 0 && capacity > 0);
    if (item_size > SIZE_MAX / capacity) {
        return PL_EINVAL;
    }
    void *buf = pl_alloc(ex, item_size * capacity);
    if (buf == NULL) {
        return PL_ENOMEM;
    }
    init_common(ch, buf, item_size, capacity);
    ch->owner = ex;
    return 0;
}

void pl_mpsc_init_buffer(pl_mpsc *ch, void *buf, size_t item_size, uint32_t capacity)
{
    PL_ASSERT(buf != NULL && item_size > 0 && capacity > 0);
    init_common(ch, buf, item_size, capacity);
}

void pl_mpsc_finish(pl_mpsc *ch)
{
    PL_ASSERT(pl_list_empty(&ch->send_waiters) && ch->reserved == 0);
    PL_ASSERT(!pl_waker_is_set(&ch->rx_waker));
    if (ch->owner != NULL) {
        pl_free(ch->owner, ch->buf, ch->item_size * ch->capacity);
    }
    ch->buf = NULL;
    ch->owner = NULL;
}

size_t pl_mpsc_len(const pl_mpsc *ch) { return ch->len; }

void pl_mpsc_sender_clone(pl_mpsc *ch)
{
    PL_ASSERT(ch->senders > 0 && ch->senders < UINT32_MAX);
    ch->senders++;
}

void pl_mpsc_sender_drop(pl_mpsc *ch)
{
    PL_ASSERT(ch->senders > 0);
    if (--ch->senders == 0) {
        pl_waker_slot_wake(&ch->rx_waker);
    }
}

/* Reserves free slots for waiting sends, oldest first, and wakes them. */
static void grant_slots(pl_mpsc *ch)
{
    while (ch->len + ch->reserved < ch->capacity) {
        pl_list_node *node = pl_list_pop_front(&ch->send_waiters);
        if (node == NULL) {
            return;
        }
        pl_mpsc_send *s = pl_container_of(node, pl_mpsc_send, node);
        ch->reserved++;
        pl_waiter_choose(&s->base, &s->waker, SEND_GRANTED);
    }
}

void pl_mpsc_close(pl_mpsc *ch)
{
    ch->closed = 1;
    PL_LIST_CONSUME(node, &ch->send_waiters) {
        pl_mpsc_send *s = pl_container_of(node, pl_mpsc_send, node);
        pl_waiter_choose(&s->base, &s->waker, SEND_CLOSED);
    }
    /* A receive pending on an empty buffer can now complete (closed). */
    pl_waker_slot_wake(&ch->rx_waker);
}

static void push_item(pl_mpsc *ch, const void *item)
{
    uint32_t tail = ch->head + ch->len;
    if (tail >= ch->capacity) {
        tail -= ch->capacity;
    }
    memcpy(ch->buf + (size_t)tail * ch->item_size, item, ch->item_size);
    ch->len++;
    pl_waker_slot_wake(&ch->rx_waker);
}

int pl_mpsc_try_send(pl_mpsc *ch, const void *item)
{
    PL_ASSERT(ch->senders > 0);
    if (ch->closed) {
        return PL_ECLOSED;
    }
    if (ch->len + ch->reserved >= ch->capacity) {
        return PL_EAGAIN;
    }
    push_item(ch, item);
    return 0;
}

int pl_mpsc_try_recv(pl_mpsc *ch, void *out)
{
    if (ch->len == 0) {
        return (ch->senders == 0 || ch->closed) ? PL_ECLOSED : PL_EAGAIN;
    }
    memcpy(out, ch->buf + (size_t)ch->head * ch->item_size, ch->item_size);
    ch->head = ch->head + 1 == ch->capacity ? 0 : ch->head + 1;
    ch->len--;
    grant_slots(ch);
    return 0;
}

static pl_poll_result send_finish(pl_mpsc_send *self, int result)
{
    self->result = result;
    self->base.resume = SEND_DONE;
    return PL_READY;
}

static const pl_future_vtable send_vtable;

/* A waiting send is owed a slot exactly when the free unreserved slots
 * reach its place in the FIFO: grant_slots() would serve the sends ahead
 * of it first. Never true while "sends wait only when full" holds. */
static bool waiting_send_fits(const pl_mpsc_send *self, char *why, size_t why_len)
{
    const pl_mpsc *ch = self->ch;
    if (ch->len + ch->reserved >= ch->capacity) {
        return false;
    }
    uint32_t room = ch->capacity - ch->len - ch->reserved;
    uint32_t ahead = 0;
    const pl_list_node *list = &ch->send_waiters;
    for (const pl_list_node *node = list->next; node != list && ahead < room; node = node->next) {
        if (node == &self->node) {
            snprintf(why, why_len, "%u slot(s) are free, %u send(s) ahead of it", room, ahead);
            return true;
        }
        ahead++;
    }
    return false;
}

/* The declared wait condition of a send (sync.h). The subject is the send
 * future, so a dropped or rebuilt one reads as not waiting without
 * touching the channel. */
static bool send_holds(const void *subject, char *why, size_t why_len)
{
    const pl_mpsc_send *self = subject;
    if (self->base.vtable != &send_vtable || self->base.flags != 0) {
        return false;
    }
    switch (self->base.resume) {
    case SEND_GRANTED:
        snprintf(why, why_len, "a slot was reserved for it");
        return true;
    case SEND_CLOSED:
        snprintf(why, why_len, "the receiver closed the channel");
        return true;
    case SEND_WAITING:
        return waiting_send_fits(self, why, why_len);
    default:
        return false;
    }
}

static pl_poll_result send_poll(pl_future *f, pl_context *cx)
{
    pl_mpsc_send *self = (pl_mpsc_send *)f;
    pl_mpsc *ch = self->ch;
    switch (self->base.resume) {
    case SEND_INIT: {
        int rc = pl_mpsc_try_send(ch, self->item);
        if (rc != PL_EAGAIN) {
            return send_finish(self, rc);
        }
        break;
    }
    case SEND_WAITING:
        break;
    case SEND_GRANTED:
        ch->reserved--;
        if (ch->closed) {
            return send_finish(self, PL_ECLOSED);
        }
        push_item(ch, self->item);
        return send_finish(self, 0);
    default:
        PL_ASSERT(self->base.resume == SEND_CLOSED);
        return send_finish(self, PL_ECLOSED);
    }
    pl_waiter_park(&self->base, &ch->send_waiters, &self->node, &self->waker, cx);
    PL_WAIT_DECLARE(cx, "channel", "room for its item or the receiver gone", self, send_holds);
    return PL_PENDING;
}

static void send_drop(pl_future *f)
{
    pl_mpsc_send *self = (pl_mpsc_send *)f;
    pl_mpsc *ch = self->ch;
    if (self->base.resume == SEND_WAITING) {
        pl_waiter_unlink(&self->node, &self->waker);
    } else if (self->base.resume == SEND_GRANTED) {
        /* The slot was held for us; give it to whoever waits next. */
        ch->reserved--;
        grant_slots(ch);
    }
    self->base.resume = SEND_DONE;
}

static const pl_future_vtable send_vtable = {
    .name = "pl_mpsc_send",
    .poll = send_poll,
    .drop = send_drop,
};

pl_mpsc_send pl_mpsc_send_make(pl_mpsc *ch, const void *item)
{
    return (pl_mpsc_send){
        .base = PL_FUTURE_INIT(&send_vtable),
        .ch = ch,
        .item = item,
        .node = {NULL, NULL},
        .waker = PL_WAKER_EMPTY,
        .result = 0,
    };
}

static const pl_future_vtable recv_vtable;

/* The declared wait condition of the receive (sync.h): what would let
 * pl_mpsc_try_recv return something other than PL_EAGAIN. */
static bool recv_holds(const void *subject, char *why, size_t why_len)
{
    const pl_mpsc_recv *self = subject;
    if (self->base.vtable != &recv_vtable || self->base.flags != 0 ||
        self->base.resume != RECV_WAITING) {
        return false;
    }
    const pl_mpsc *ch = self->ch;
    if (ch->len > 0) {
        snprintf(why, why_len, "%u item(s) are queued", ch->len);
    } else if (ch->senders == 0) {
        snprintf(why, why_len, "every sender is gone");
    } else if (ch->closed) {
        snprintf(why, why_len, "the channel was closed");
    } else {
        return false;
    }
    return true;
}

static pl_poll_result recv_poll(pl_future *f, pl_context *cx)
{
    pl_mpsc_recv *self = (pl_mpsc_recv *)f;
    pl_mpsc *ch = self->ch;
    int rc = pl_mpsc_try_recv(ch, self->out);
    if (rc == PL_EAGAIN) {
        pl_waker_slot_set(&ch->rx_waker, &cx->waker);
        self->base.resume = RECV_WAITING;
        PL_WAIT_DECLARE(cx, "channel", "an item queued or every sender gone", self, recv_holds);
        return PL_PENDING;
    }
    pl_waker_slot_clear(&ch->rx_waker);
    self->base.resume = RECV_IDLE;
    self->result = rc;
    return PL_READY;
}

static void recv_drop(pl_future *f)
{
    pl_mpsc_recv *self = (pl_mpsc_recv *)f;
    if (self->base.resume == RECV_WAITING) {
        pl_waker_slot_clear(&self->ch->rx_waker);
        self->base.resume = RECV_IDLE;
    }
}

static const pl_future_vtable recv_vtable = {
    .name = "pl_mpsc_recv",
    .poll = recv_poll,
    .drop = recv_drop,
};

pl_mpsc_recv pl_mpsc_recv_make(pl_mpsc *ch, void *out)
{
    return (pl_mpsc_recv){PL_FUTURE_INIT(&recv_vtable), ch, out, 0, 0};
}
