/* sim/src/net/net.c: the network's lifecycle, the delivery of due events,
 * and the system's entries that create, close, read and write handles
 * (dispatched by endpoint kind to chan.c, stream.c and dgram.c). The top
 * layer of the files listed in net_impl.h. */
#include <stdlib.h>
#include <sys/socket.h>

#include "net_impl.h"

/* ---- Lifecycle ---------------------------------------------------------- */

int pl__reactor_create(pl__reactor **out, pl__sim *sim)
{
    *out = NULL;
    pl__reactor *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return PL_ENOMEM;
    }
    r->sim = sim;
    pl__net_faults_of(&sim->opts, &r->faults);
    PL__SIM_ASSERT(pl_sim_fault_options_validate(&r->faults, NULL, 0) == 0);
    r->next_port = PL__NET_EPHEMERAL_FIRST;
    *out = r;
    return 0;
}

void pl__reactor_destroy(pl__reactor *r)
{
    if (r == NULL) {
        return;
    }
    pl__net_heap_free(r);
    pl__net_links_free(r);
    pl__net_table_free(r);
    free(r);
}

void pl__reactor_set_faults(pl__reactor *r, const pl_sim_fault_options *o)
{
    PL__SIM_ASSERT(pl_sim_fault_options_validate(o, NULL, 0) == 0);
    r->faults = *o;
}

const pl_sim_fault_options *pl__reactor_faults(const pl__reactor *r) { return &r->faults; }

size_t pl__reactor_open_handles(const pl__reactor *r) { return r->open_handles; }

/* ---- Delivery ----------------------------------------------------------- */

static void run_event(pl__reactor *r, event *ev)
{
    switch (ev->type) {
    case EV_SEGMENT:
        pl__net_chan_arrive(r, ev->target);
        break;
    case EV_DGRAM:
        pl__net_dgram_arrive(r, ev->dg);
        break;
    case EV_CONNECT:
        pl__net_connect_arrive(r, ev->target);
        break;
    case EV_NOTIFY: {
        ep *e = pl__net_ep_get(r, ev->target);
        if (e != NULL) {
            pl__net_mark_ready(r, e, ev->bits);
        }
        break;
    }
    case EV_RESET:
        pl__net_reset_arrive(r, ev->target);
        break;
    }
}

pl_time pl__reactor_next_event(const pl__reactor *r)
{
    return r->heap_len > 0 ? r->heap[0].at_ns : PL_TIME_NEVER;
}

size_t pl__reactor_deliver(pl__reactor *r, pl_time now)
{
    while (r->heap_len > 0 && r->heap[0].at_ns <= now) {
        event ev = pl__net_heap_pop(r);
        run_event(r, &ev);
    }
    return pl__net_notify_ready(r);
}

/* ---- Creating and closing handles --------------------------------------- */

int pl__net_socket(void *self, int domain, int type)
{
    pl__reactor *r = pl__net_of(self);
    type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (domain < 0 || type < 0) {
        return PL_EINVAL;
    }
    if ((domain != AF_INET && domain != AF_INET6) || (type != SOCK_STREAM && type != SOCK_DGRAM)) {
        return PL_ENOSYS;
    }
    if (!pl__net_objs_reserve(r, 1) || !pl__net_handles_reserve(r, 1)) {
        return PL_ENOMEM;
    }
    ep *e = pl__net_ep_new(r, type == SOCK_STREAM ? EP_STREAM : EP_DGRAM, domain);
    if (e == NULL) {
        return PL_ENOMEM;
    }
    return pl__net_handle_assign(r, e);
}

int pl__net_pipe(void *self, int handles[2])
{
    pl__reactor *r = pl__net_of(self);
    if (!pl__net_objs_reserve(r, 3) || !pl__net_handles_reserve(r, 2)) {
        return PL_ENOMEM;
    }
    chan *c = pl__net_chan_new(r);
    ep *rd = pl__net_ep_new(r, EP_PIPE_R, 0);
    ep *wr = pl__net_ep_new(r, EP_PIPE_W, 0);
    if (c == NULL || rd == NULL || wr == NULL) {
        pl__net_free_new(r, rd, wr, c, NULL);
        return PL_ENOMEM;
    }
    c->reader = rd;
    c->writer = wr;
    rd->rx = c;
    wr->tx = c;
    handles[0] = pl__net_handle_assign(r, rd);
    handles[1] = pl__net_handle_assign(r, wr);
    return 0;
}

/* Room for everything closing e schedules: a FIN and a writer
 * notification for it and for each connection waiting in its backlog. */
static bool close_reserve(pl__reactor *r, ep *e)
{
    if (!pl__net_heap_reserve(r, 2 + 2 * e->backlog_len)) {
        return false;
    }
    if (e->tx != NULL && !pl__net_segs_reserve(e->tx)) {
        return false;
    }
    for (ep *s = e->backlog_head; s != NULL; s = s->backlog_next) {
        if (s->tx != NULL && !pl__net_segs_reserve(s->tx)) {
            return false;
        }
    }
    return true;
}

/* Closes e and frees it. Connections still in a listener's backlog are
 * closed as if accepted and closed at once: their clients read end of
 * stream (a reset would need the reset fault). */
static void ep_close(pl__reactor *r, ep *e)
{
    pl__net_unbind(r, e);
    pl__net_ready_unlink(r, e);
    pl__net_chan_detach(r, e, true);
    for (ep *s = pl__net_backlog_pop(e); s != NULL; s = pl__net_backlog_pop(e)) {
        ep_close(r, s);
    }
    pl__net_ep_free(r, e);
}

int pl__net_close(void *self, int handle)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (!close_reserve(r, e)) {
        /* A real close always releases the handle, and callers do not
         * retry one: left open, the peer would wait forever for the end
         * of stream and the run would end in a deadlock it never had. */
        pl__sim_finding(r->sim, PL_FINDING_ASSERTION, NULL,
                        "simulator out of memory: closing handle %d", handle);
        return PL_ENOMEM;
    }
    pl__net_handle_release(r, e);
    ep_close(r, e);
    return 0;
}

/* ---- Data --------------------------------------------------------------- */

ssize_t pl__net_read(void *self, int handle, void *buf, size_t len)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    switch (e->kind) {
    case EP_PIPE_R:
        return pl__net_chan_read(r, e, e->rx, buf, len);
    case EP_STREAM:
        return pl__net_stream_read(r, e, buf, len);
    case EP_DGRAM:
        return pl__net_dgram_recv(r, e, buf, len, NULL, NULL);
    default:
        return PL_EBADF; /* the write end of a pipe */
    }
}

ssize_t pl__net_write(void *self, int handle, const void *buf, size_t len)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    switch (e->kind) {
    case EP_PIPE_W:
        return pl__net_chan_write(r, e, e->tx, buf, len);
    case EP_STREAM:
        return pl__net_stream_write(r, e, buf, len);
    case EP_DGRAM:
        return PL_ENOTCONN; /* no default destination: use sendto */
    default:
        return PL_EBADF; /* the read end of a pipe */
    }
}

ssize_t pl__net_sendto(void *self, int handle, const void *buf, size_t len,
                       const struct sockaddr *addr_, socklen_t addr_len)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    switch (e->kind) {
    case EP_DGRAM:
        return pl__net_dgram_send(r, e, buf, len, addr_, addr_len);
    case EP_STREAM:
        return pl__net_stream_write(r, e, buf, len); /* a connected stream ignores the address */
    default:
        return PL_EINVAL; /* not a socket */
    }
}

ssize_t pl__net_recvfrom(void *self, int handle, void *buf, size_t len, struct sockaddr *addr_,
                         socklen_t *addr_len)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->kind == EP_DGRAM) {
        return pl__net_dgram_recv(r, e, buf, len, addr_, addr_len);
    }
    if (e->kind != EP_STREAM) {
        return PL_EINVAL; /* not a socket */
    }
    ssize_t n = pl__net_stream_read(r, e, buf, len);
    if (n >= 0 && addr_len != NULL) {
        *addr_len = 0; /* streams report no sender, as Linux does */
    }
    return n;
}
