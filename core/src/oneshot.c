/* core/src/oneshot.c: one value, one sender, one receiver. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "pollen/sync.h"

/* pl_oneshot.state bits. */
enum {
    ONESHOT_SENT = 1u << 0,       /* a value is (or was) in the storage */
    ONESHOT_TAKEN = 1u << 1,      /* the receiver took it */
    ONESHOT_TX_DROPPED = 1u << 2,
    ONESHOT_RX_DROPPED = 1u << 3,
};

void pl_oneshot_init(pl_oneshot *os, void *storage, size_t item_size)
{
    PL_ASSERT(storage != NULL && item_size > 0);
    *os = (pl_oneshot){storage, item_size, 0, 0, PL_WAKER_EMPTY};
}

int pl_oneshot_send(pl_oneshot *os, const void *value)
{
    PL_ASSERT((os->state & (ONESHOT_SENT | ONESHOT_TX_DROPPED)) == 0);
    if (os->state & ONESHOT_RX_DROPPED) {
        return PL_ECLOSED;
    }
    memcpy(os->storage, value, os->item_size);
    os->state |= ONESHOT_SENT;
    pl_waker_slot_wake(&os->rx_waker);
    return 0;
}

void pl_oneshot_sender_drop(pl_oneshot *os)
{
    PL_ASSERT((os->state & ONESHOT_TX_DROPPED) == 0);
    os->state |= ONESHOT_TX_DROPPED;
    if ((os->state & ONESHOT_SENT) == 0) {
        pl_waker_slot_wake(&os->rx_waker);
    }
}

void pl_oneshot_receiver_drop(pl_oneshot *os)
{
    PL_ASSERT((os->state & ONESHOT_RX_DROPPED) == 0);
    /* A stored waker means a receive is still pending: it would dangle. */
    PL_ASSERT(!pl_waker_is_set(&os->rx_waker));
    os->state |= ONESHOT_RX_DROPPED;
}

bool pl_oneshot_is_closed(const pl_oneshot *os) { return (os->state & ONESHOT_RX_DROPPED) != 0; }

int pl_oneshot_try_recv(pl_oneshot *os)
{
    PL_ASSERT((os->state & ONESHOT_RX_DROPPED) == 0);
    if ((os->state & (ONESHOT_SENT | ONESHOT_TAKEN)) == ONESHOT_SENT) {
        os->state |= ONESHOT_TAKEN;
        return 0;
    }
    if (os->state & (ONESHOT_TAKEN | ONESHOT_TX_DROPPED)) {
        return PL_ECLOSED;
    }
    return PL_EAGAIN;
}

static const pl_future_vtable recv_vtable;

/* The declared wait condition (sync.h): what would let
 * pl_oneshot_try_recv return something other than PL_EAGAIN. The subject
 * is the receive, so a dropped or rebuilt one reads as not waiting. */
static bool recv_holds(const void *subject, char *why, size_t why_len)
{
    const pl_oneshot_recv *self = subject;
    if (self->base.vtable != &recv_vtable || self->base.flags != 0 || self->base.resume == 0) {
        return false;
    }
    uint32_t state = self->os->state;
    if ((state & (ONESHOT_SENT | ONESHOT_TAKEN)) == ONESHOT_SENT) {
        snprintf(why, why_len, "a value was sent");
    } else if (state & ONESHOT_TAKEN) {
        snprintf(why, why_len, "the value was already taken");
    } else if (state & ONESHOT_TX_DROPPED) {
        snprintf(why, why_len, "the sender is gone");
    } else {
        return false;
    }
    return true;
}

static pl_poll_result recv_poll(pl_future *f, pl_context *cx)
{
    pl_oneshot_recv *self = (pl_oneshot_recv *)f;
    pl_oneshot *os = self->os;
    int rc = pl_oneshot_try_recv(os);
    if (rc == PL_EAGAIN) {
        pl_waker_slot_set(&os->rx_waker, &cx->waker);
        self->base.resume = 1;
        PL_WAIT_DECLARE(cx, "oneshot", "a value sent or the sender gone", self, recv_holds);
        return PL_PENDING;
    }
    /* Completed on a poll that came before the waker fired (or without
     * one): release the clone now, a READY future holds nothing. */
    pl_waker_slot_clear(&os->rx_waker);
    self->base.resume = 0;
    self->result = rc;
    return PL_READY;
}

static void recv_drop(pl_future *f)
{
    pl_oneshot_recv *self = (pl_oneshot_recv *)f;
    if (self->base.resume != 0) {
        pl_waker_slot_clear(&self->os->rx_waker);
        self->base.resume = 0;
    }
}

static const pl_future_vtable recv_vtable = {
    .name = "pl_oneshot_recv",
    .poll = recv_poll,
    .drop = recv_drop,
};

pl_oneshot_recv pl_oneshot_recv_make(pl_oneshot *os)
{
    return (pl_oneshot_recv){PL_FUTURE_INIT(&recv_vtable), os, 0, 0};
}
