/* sim/src/net/dgram.c: datagrams. A datagram travels as an event that
 * owns it; on arrival it goes to whatever is bound to its destination
 * then, or is dropped, as UDP on loopback does. Each draws its own
 * latency, so datagrams may be reordered. */
#include <stdlib.h>
#include <string.h>

#include "net_impl.h"

static size_t dgram_charge(const dgram *d) { return d->len + PL__NET_DGRAM_OVERHEAD; }

void pl__net_dgram_arrive(pl__reactor *r, dgram *d)
{
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
    pl__net_heap_push(
        r,
        (event){.at_ns = pl__sim_now(r->sim) + pl__net_latency(r, e), .type = EV_DGRAM, .dg = d});
    return (ssize_t)len;
}
