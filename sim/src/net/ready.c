/* sim/src/net/ready.c: readiness. One delivery gathers the endpoints it
 * made ready, in the order they were first marked, and then fires them in
 * PL_DECIDE_IO_ORDER order; registration reports what an endpoint is
 * ready for at once, as epoll does for a descriptor added in
 * edge-triggered mode. */
#include "net_impl.h"

/* What an endpoint is ready for right now. */
static uint32_t ep_readiness(const ep *e)
{
    const uint32_t all = PL_IO_READABLE | PL_IO_WRITABLE | PL_IO_ERROR;
    switch (e->kind) {
    case EP_PIPE_R:
        return pl__net_chan_readable(e->rx) ? PL_IO_READABLE : 0;
    case EP_PIPE_W:
        return pl__net_chan_write_bits(e->tx);
    case EP_DGRAM:
        return PL_IO_WRITABLE | (e->q_head != NULL ? PL_IO_READABLE : 0);
    case EP_STREAM:
        break;
    }
    switch (e->state) {
    case ST_LISTENING:
        return e->backlog_head != NULL ? PL_IO_READABLE : 0;
    case ST_CONNECTED: {
        uint32_t rd = e->shut_rd || pl__net_chan_readable(e->rx) ? PL_IO_READABLE : 0;
        return rd | (e->shut_wr ? PL_IO_WRITABLE : pl__net_chan_write_bits(e->tx));
    }
    case ST_REFUSED:
    case ST_RESET:
        return all;
    default:
        return 0;
    }
}

void pl__net_mark_ready(pl__reactor *r, ep *e, uint32_t bits)
{
    if (e->src == NULL) {
        return; /* registration reports the state when it comes */
    }
    e->ready_bits |= bits;
    if (!e->in_ready) {
        e->in_ready = true;
        PL__NET_FIFO_PUSH(r->ready_head, r->ready_tail, e, ready_next);
    }
    PL__SIM_ASSERT(r->ready_head != NULL && r->ready_tail->ready_next == NULL);
}

/* Takes the k-th gathered endpoint off the list. */
static ep *ready_take(pl__reactor *r, uint32_t k)
{
    ep *prev = NULL;
    ep *e = r->ready_head;
    for (uint32_t i = 0; i < k; i++) {
        PL__SIM_ASSERT(e != NULL);
        prev = e;
        e = e->ready_next;
    }
    PL__SIM_ASSERT(e != NULL && e->in_ready);
    if (prev != NULL) {
        prev->ready_next = e->ready_next;
    } else {
        r->ready_head = e->ready_next;
    }
    if (r->ready_tail == e) {
        r->ready_tail = prev;
    }
    e->ready_next = NULL;
    e->in_ready = false;
    PL__SIM_ASSERT((r->ready_head == NULL) == (r->ready_tail == NULL));
    return e;
}

void pl__net_ready_unlink(pl__reactor *r, ep *e)
{
    if (!e->in_ready) {
        return;
    }
    uint32_t k = 0;
    for (ep *it = r->ready_head; it != e; it = it->ready_next) {
        k++;
    }
    (void)ready_take(r, k);
}

size_t pl__net_notify_ready(pl__reactor *r)
{
    uint32_t n = 0;
    for (ep *e = r->ready_head; e != NULL; e = e->ready_next) {
        n++;
    }
    size_t fired = 0;
    for (; n > 0; n--) {
        uint32_t k = pl__sim_choose(r->sim, PL_DECIDE_IO_ORDER, n, r->ready_head->hdr.id);
        ep *e = ready_take(r, k);
        uint32_t bits = e->ready_bits;
        e->ready_bits = 0;
        if (e->src != NULL) {
            pl__sim_event(r->sim, PL__EV_IO_READY, 0, e->src->id, bits);
            pl_io_source_ready(e->src, bits);
            fired++;
        }
    }
    PL__SIM_ASSERT(r->ready_head == NULL && r->ready_tail == NULL);
    return fired;
}

int pl__net_io_register(void *self, pl_io_source *src)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, src->handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->src != NULL) {
        return PL_EINVAL; /* one registration per handle, as epoll's EEXIST */
    }
    e->src = src;
    src->ready |= ep_readiness(e);
    return 0;
}

void pl__net_io_deregister(void *self, pl_io_source *src)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, src->handle);
    if (e != NULL && e->src == src) {
        e->src = NULL;
    }
}
