/* sim/src/net/stream.c: connections of stream sockets. connect starts an
 * attempt that resolves after a latency (established into the listener's
 * backlog, or refused); accept takes from the backlog; shutdown and the
 * connection's state decide what reads and writes return before they
 * reach the channels (chan.c). */
#include <netinet/in.h>
#include <sys/socket.h>

#include "net_impl.h"

/* ---- Backlog ------------------------------------------------------------ */

static void backlog_push(ep *l, ep *s)
{
    PL__SIM_ASSERT(s->handle == -1 && s->state == ST_CONNECTED);
    PL__NET_FIFO_PUSH(l->backlog_head, l->backlog_tail, s, backlog_next);
    l->backlog_len++;
    PL__SIM_ASSERT(l->backlog_len <= l->backlog_max);
}

ep *pl__net_backlog_pop(ep *l)
{
    ep *s = l->backlog_head;
    if (s != NULL) {
        PL__SIM_ASSERT(l->backlog_len > 0);
        l->backlog_head = s->backlog_next;
        if (l->backlog_head == NULL) {
            l->backlog_tail = NULL;
        }
        l->backlog_len--;
        s->backlog_next = NULL;
    }
    PL__SIM_ASSERT((l->backlog_head == NULL) == (l->backlog_len == 0));
    return s;
}

/* ---- Resolution --------------------------------------------------------- */

static void refuse(pl__reactor *r, ep *c, int err)
{
    c->state = ST_REFUSED;
    c->error = err;
    pl__net_mark_ready(r, c, PL_IO_READABLE | PL_IO_WRITABLE | PL_IO_ERROR);
}

/* The connection attempt reached listener l: make the server side (no
 * handle until accepted), one channel per direction, and queue it. */
static int establish(pl__reactor *r, ep *l, ep *c)
{
    int up_link = pl__net_link_index(r, &c->local, &l->local);
    int down_link = pl__net_link_index(r, &l->local, &c->local);
    if (up_link < 0 || down_link < 0 || !pl__net_objs_reserve(r, 3)) {
        return PL_ENOMEM;
    }
    ep *s = pl__net_ep_new(r, EP_STREAM, c->family);
    chan *up = pl__net_chan_new(r);
    chan *down = pl__net_chan_new(r);
    if (s == NULL || up == NULL || down == NULL) {
        pl__net_free_new(r, s, NULL, up, down);
        return PL_ENOMEM;
    }
    s->state = ST_CONNECTED;
    s->local = l->local;
    s->peer = c->local;
    up->link = (uint32_t)up_link;
    down->link = (uint32_t)down_link;
    up->writer = c;
    up->reader = s;
    down->writer = s;
    down->reader = c;
    c->tx = s->rx = up;
    c->rx = s->tx = down;
    c->state = ST_CONNECTED;
    /* Each side reads what the other writes. */
    PL__SIM_ASSERT(c->tx->reader == s && s->tx->reader == c);
    backlog_push(l, s);
    pl__net_mark_ready(r, c, PL_IO_WRITABLE);
    pl__net_mark_ready(r, l, PL_IO_READABLE);
    return 0;
}

/* The attempt crosses a cut or held link: true when it waits (due again,
 * in the popped event's heap slot, when the link opens or break_after_ns
 * is up) or gave up with PL_ETIMEDOUT, as a SYN retried in vain. */
static bool connect_waits(pl__reactor *r, ep *c)
{
    int i = pl__net_link_index(r, &c->local, &c->peer); /* made at the connect */
    if (i == 0) {
        return false;
    }
    PL__SIM_ASSERT(i > 0);
    pl_time again;
    switch (pl__net_link_wait(pl__net_link_at(r, (uint32_t)i), pl__sim_now(r->sim), &c->stalled,
                              &c->stalled_ns, &again)) {
    case LINK_GO:
        return false;
    case LINK_GIVE_UP:
        refuse(r, c, PL_ETIMEDOUT);
        return true;
    case LINK_WAIT:
    default:
        pl__net_heap_push(r, (event){.at_ns = again, .type = EV_CONNECT, .target = c->hdr.id});
        return true;
    }
}

void pl__net_connect_arrive(pl__reactor *r, uint32_t id)
{
    ep *c = pl__net_ep_get(r, id);
    if (c == NULL || c->state != ST_CONNECTING) {
        return; /* closed before it got anywhere */
    }
    if (connect_waits(r, c)) {
        return;
    }
    /* A full backlog refuses rather than retrying, so runs end. */
    ep *l = pl__net_find_bound(r, &c->peer, false);
    if (l == NULL || l->backlog_len >= l->backlog_max) {
        refuse(r, c, PL_ECONNREFUSED);
        return;
    }
    int rc = establish(r, l, c);
    if (rc < 0) {
        refuse(r, c, rc);
    }
}

void pl__net_reset_arrive(pl__reactor *r, uint32_t id)
{
    ep *e = pl__net_ep_get(r, id);
    if (e == NULL || e->state != ST_CONNECTED) {
        return;
    }
    pl__net_reset_conn(r, e, false);
    pl__net_mark_ready(r, e, PL_IO_READABLE | PL_IO_WRITABLE | PL_IO_ERROR);
}

/* ---- Entries ------------------------------------------------------------ */

int pl__net_accept(void *self, int handle, struct sockaddr *sa, socklen_t *len)
{
    pl__reactor *r = pl__net_of(self);
    ep *l = pl__net_ep_of(r, handle);
    if (l == NULL) {
        return PL_EBADF;
    }
    if (l->kind != EP_STREAM || l->state != ST_LISTENING) {
        return PL_EINVAL;
    }
    if (l->backlog_head == NULL) {
        return PL_EAGAIN;
    }
    if (!pl__net_heap_reserve(r, PL__NET_OP_EVENTS_MAX) || !pl__net_handles_reserve(r, 1)) {
        return PL_ENOMEM;
    }
    if (pl__net_pick_fault(r, l, pl__net_eagain_fault(r, l, PL_IO_READABLE)) == F_EAGAIN) {
        return (int)pl__net_spurious_eagain(r, l, PL_IO_READABLE);
    }
    ep *s = pl__net_backlog_pop(l);
    pl__net_addr_write(&s->peer, sa, len);
    return pl__net_handle_assign(r, s);
}

int pl__net_connect(void *self, int handle, const struct sockaddr *sa, socklen_t len)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->kind == EP_DGRAM) {
        return PL_ENOSYS; /* connected datagram sockets are not modelled */
    }
    if (e->kind != EP_STREAM || e->state != ST_FRESH) {
        return PL_EINVAL;
    }
    addr to;
    int rc = pl__net_addr_parse(sa, len, e->family, &to);
    if (rc < 0) {
        return rc;
    }
    if (!pl__net_heap_reserve(r, PL__NET_OP_EVENTS_MAX)) {
        return PL_ENOMEM;
    }
    rc = pl__net_autobind(r, e);
    if (rc < 0) {
        return rc;
    }
    int li = pl__net_link_index(r, &e->local, &to);
    if (li < 0) {
        return li;
    }
    pl_time latency;
    if (li > 0) {
        link *l = pl__net_link_at(r, (uint32_t)li);
        pl__net_link_on_send(r, l, PL__LABEL_CONNECT);
        latency = pl__net_link_latency(r, l, PL__LABEL_CONNECT);
    } else {
        latency = pl__net_latency(r, e);
    }
    e->peer = to;
    e->state = ST_CONNECTING;
    pl_time at_ns = pl__sim_now(r->sim) + latency;
    pl__net_heap_push(r, (event){.at_ns = at_ns, .type = EV_CONNECT, .target = e->hdr.id});
    return PL_EINPROGRESS;
}

int pl__net_connect_result(void *self, int handle)
{
    ep *e = pl__net_ep_of(pl__net_of(self), handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->kind != EP_STREAM) {
        return PL_EINVAL;
    }
    switch (e->state) {
    case ST_CONNECTED:
        return 0;
    case ST_REFUSED:
        return e->error;
    case ST_RESET:
        return PL_ECONNRESET;
    case ST_CONNECTING:
        return PL_EINPROGRESS;
    default:
        return PL_ENOTCONN;
    }
}

int pl__net_shutdown(void *self, int handle, int how)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->kind != EP_STREAM || (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)) {
        return PL_EINVAL;
    }
    if (e->state != ST_CONNECTED) {
        return PL_ENOTCONN;
    }
    if (!pl__net_heap_reserve(r, 3) || (e->tx != NULL && !pl__net_segs_reserve(e->tx))) {
        return PL_ENOMEM;
    }
    uint32_t bits = 0;
    if (how != SHUT_WR && !e->shut_rd) {
        e->shut_rd = true;
        pl__net_chan_drop_reader(r, e->rx, true);
        e->rx = NULL;
        bits |= PL_IO_READABLE;
    }
    if (how != SHUT_RD && !e->shut_wr) {
        e->shut_wr = true;
        pl__net_chan_drop_writer(r, e->tx, e, true);
        e->tx = NULL;
        bits |= PL_IO_WRITABLE;
    }
    /* Reads now return 0 and writes PL_EPIPE: tell a parked future. The
     * effect is local, so it takes no latency. */
    if (bits != 0) {
        pl__net_notify_later(r, e, bits, 0);
    }
    return 0;
}

/* ---- Reads and writes --------------------------------------------------- */

/* Errors of a stream socket that is not (or no longer) connected. */
static ssize_t stream_state_error(const ep *e)
{
    switch (e->state) {
    case ST_CONNECTING:
        return PL_EAGAIN; /* connecting: readiness comes with the outcome */
    case ST_REFUSED:
        return e->error;
    case ST_RESET:
        return PL_ECONNRESET;
    default:
        return PL_ENOTCONN;
    }
}

ssize_t pl__net_stream_read(pl__reactor *r, ep *e, void *buf, size_t len)
{
    if (e->state != ST_CONNECTED) {
        return stream_state_error(e);
    }
    return e->shut_rd ? 0 : pl__net_chan_read(r, e, e->rx, buf, len);
}

ssize_t pl__net_stream_write(pl__reactor *r, ep *e, const void *buf, size_t len)
{
    if (e->state != ST_CONNECTED) {
        return stream_state_error(e);
    }
    return e->shut_wr ? PL_EPIPE : pl__net_chan_write(r, e, e->tx, buf, len);
}
