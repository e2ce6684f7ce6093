/* sim/src/net/dgram.c: datagrams. A datagram travels as an event that
 * owns it; on arrival it goes to whatever is bound to its destination
 * then, or is dropped, as UDP on loopback does. Each draws its own
 * latency, so datagrams may be reordered. Between two hosts the link
 * decides too (link.c): loss, a copy, a hold-back at the send; at
 * arrival a cut link loses it and a held one keeps it. */
#include <stdlib.h>
#include <string.h>

#include "net_impl.h"

static size_t dgram_charge(const dgram *d) { return d->len + PL__NET_DGRAM_OVERHEAD; }

/* The link's say at arrival: true when d is dealt with (lost, kept, or
 * due again when a timed hold ends; one heap slot, the popped event's). */
static bool link_stops(pl__reactor *r, dgram *d)
{
    uint32_t a = pl__net_host(&d->from);
    uint32_t b = pl__net_host(&d->to);
    if (a == b) {
        return false;
    }
    int i = pl__net_link_index(r, &d->from, &d->to); /* made at the send */
    PL__SIM_ASSERT(i > 0);
    link *l = pl__net_link_at(r, (uint32_t)i);
    pl_time now = pl__sim_now(r->sim);
    if (pl__net_link_cut(l, now)) {
        l->count.dgrams_lost++;
        free(d);
        return true;
    }
    pl_time open = pl__net_link_open_at(l, now);
    if (open == now) {
        return false;
    }
    if (open == PL_TIME_NEVER) {
        pl__net_link_keep(l, d);
    } else {
        pl__net_heap_push(r, (event){.at_ns = open, .type = EV_DGRAM, .dg = d});
    }
    return true;
}

void pl__net_dgram_arrive(pl__reactor *r, dgram *d)
{
    if (link_stops(r, d)) {
        return;
    }
    ep *to = pl__net_find_bound(r, &d->to, true);
    if (to == NULL || to->q_bytes + dgram_charge(d) > PL__NET_DGRAM_QUEUE_MAX) {
        free(d);
        return;
    }
    PL__NET_FIFO_PUSH(to->q_head, to->q_tail, d, next);
    to->q_bytes += dgram_charge(d);
    PL__SIM_ASSERT(to->q_bytes <= PL__NET_DGRAM_QUEUE_MAX);
    pl__net_mark_ready(r, to, PL_IO_READABLE);
}

ssize_t pl__net_dgram_recv(pl__reactor *r, ep *e, void *buf, size_t len, struct sockaddr *sa,
                           socklen_t *sa_len)
{
    if (e->q_head == NULL) {
        return PL_EAGAIN;
    }
    if (!pl__net_heap_reserve(r, PL__NET_OP_EVENTS_MAX)) {
        return PL_ENOMEM;
    }
    if (pl__net_pick_fault(r, e, pl__net_eagain_fault(r, e, PL_IO_READABLE)) == F_EAGAIN) {
        return pl__net_spurious_eagain(r, e, PL_IO_READABLE);
    }
    dgram *d = e->q_head;
    e->q_head = d->next;
    if (e->q_head == NULL) {
        e->q_tail = NULL;
    }
    PL__SIM_ASSERT(e->q_bytes >= dgram_charge(d));
    e->q_bytes -= dgram_charge(d);
    PL__SIM_ASSERT((e->q_head == NULL) == (e->q_bytes == 0));
    /* A longer datagram is truncated, as recvfrom(2) does. */
    size_t n = len < d->len ? len : d->len;
    if (n > 0) { /* buf may be NULL with len 0 */
        memcpy(buf, d->data, n);
    }
    pl__net_addr_write(&d->from, sa, sa_len);
    free(d);
    return (ssize_t)n;
}

/* A datagram between two hosts (two heap slots reserved): the link may
 * cut or clog itself, lose d, hold it back, or send a copy. A copy that
 * cannot be allocated is simply not sent: duplication is a fault anyway. */
static ssize_t link_send(pl__reactor *r, link *l, dgram *d)
{
    ssize_t len = (ssize_t)d->len;
    pl_time now = pl__sim_now(r->sim);
    l->count.dgrams_sent++;
    pl__net_link_on_send(r, l, PL__LABEL_DGRAM);
    if (pl__net_link_lose(r, l)) {
        l->count.dgrams_lost++;
        free(d);
        return len;
    }
    pl_time at = now + pl__net_link_latency(r, l, PL__LABEL_DGRAM);
    if (pl__net_link_reorder(r, l)) {
        at += l->o.reorder_ns;
    }
    if (pl__net_link_dup(r, l)) {
        dgram *copy = malloc(sizeof *copy + d->len);
        if (copy != NULL) {
            memcpy(copy, d, sizeof *copy + d->len);
            pl_time copy_at = now + pl__net_link_latency(r, l, PL__LABEL_DGRAM);
            pl__net_heap_push(r, (event){.at_ns = copy_at, .type = EV_DGRAM, .dg = copy});
        }
    }
    pl__net_heap_push(r, (event){.at_ns = at, .type = EV_DGRAM, .dg = d});
    return len;
}

ssize_t pl__net_dgram_send(pl__reactor *r, ep *e, const void *buf, size_t len,
                           const struct sockaddr *sa, socklen_t sa_len)
{
    addr to;
    int rc = pl__net_addr_parse(sa, sa_len, e->family, &to);
    if (rc < 0) {
        return rc;
    }
    if (len > PL__NET_DGRAM_MAX) {
        return PL_EMSGSIZE;
    }
    if (!pl__net_heap_reserve(r, PL__NET_OP_EVENTS_MAX)) {
        return PL_ENOMEM;
    }
    rc = pl__net_autobind(r, e); /* the sender needs an address to be answered at */
    if (rc < 0) {
        return rc;
    }
    int li = pl__net_link_index(r, &e->local, &to);
    if (li < 0) {
        return li;
    }
    dgram *d = malloc(sizeof *d + len);
    if (d == NULL) {
        return PL_ENOMEM;
    }
    fault f = pl__net_pick_fault(r, e, pl__net_send_faults(r, e));
    if (f != F_NONE) {
        free(d);
        return f == F_EAGAIN ? pl__net_spurious_eagain(r, e, PL_IO_WRITABLE) : (ssize_t)len;
    }
    *d = (dgram){.from = e->local, .to = to, .len = len};
    if (len > 0) { /* an empty datagram may come from a NULL buf */
        memcpy(d->data, buf, len);
    }
    if (li > 0) {
        return link_send(r, pl__net_link_at(r, (uint32_t)li), d);
    }
    pl__net_heap_push(
        r,
        (event){.at_ns = pl__sim_now(r->sim) + pl__net_latency(r, e), .type = EV_DGRAM, .dg = d});
    return (ssize_t)len;
}
