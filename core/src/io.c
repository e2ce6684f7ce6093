/* core/src/io.c: I/O registrations and the I/O futures.
 *
 * Everything here goes through the system seam: no system call is made in
 * this file, so the simulator runs these futures unchanged. Registrations
 * live on the executor's allocator rather than inside the I/O objects, so
 * objects can be moved (into a spawned task, out of an accept future)
 * without invalidating the pointer the system keeps.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "pollen/error.h"
#include "pollen/io.h"

enum { LISTEN_BACKLOG_DEFAULT = 128 };

/* ---- Registration -------------------------------------------------------- */

void pl_io_source_ready(pl_io_source *src, uint32_t bits)
{
    src->ready |= bits;
    if (bits & (PL_IO_READABLE | PL_IO_ERROR)) {
        pl_waker_slot_wake(&src->read_waker);
    }
    if (bits & (PL_IO_WRITABLE | PL_IO_ERROR)) {
        pl_waker_slot_wake(&src->write_waker);
    }
}

static const pl_system *system_of(const pl_io_source *src)
{
    return pl__executor_system(src->ex);
}

/* Registers `handle` and returns the new source in *out. The handle stays
 * the caller's on failure. */
static int source_open(pl_executor *ex, int handle, pl_io_source **out)
{
    *out = NULL;
    if (handle < 0) {
        return PL_EBADF;
    }
    pl_io_source *src = pl_alloc(ex, sizeof *src);
    if (src == NULL) {
        return PL_ENOMEM;
    }
    *src = (pl_io_source){.handle = handle,
                          .read_waker = PL_WAKER_EMPTY,
                          .write_waker = PL_WAKER_EMPTY,
                          .ex = ex};
    /* The id is taken before registering so a simulator can name the
     * source by it from io_register on. */
    src->id = pl__executor_next_io_id(ex);
    const pl_system *sys = pl__executor_system(ex);
    int rc = sys->vtable->io_register(sys->self, src);
    if (rc < 0) {
        pl_free(ex, src, sizeof *src);
        return rc;
    }
    src->registered = 1;
    pl__executor_io_count(ex, +1);
    *out = src;
    return 0;
}

/* Deregisters and frees the source; returns its handle, still open. */
static int source_detach(pl_io_source *src)
{
    PL_ASSERT(src->registered);
    pl_executor *ex = src->ex;
    const pl_system *sys = pl__executor_system(ex);
    sys->vtable->io_deregister(sys->self, src);
    src->registered = 0;
    pl_waker_slot_clear(&src->read_waker);
    pl_waker_slot_clear(&src->write_waker);
    pl__executor_io_count(ex, -1);
    int handle = src->handle;
    pl_free(ex, src, sizeof *src);
    return handle;
}

static void source_close(pl_io_source **srcp)
{
    pl_io_source *src = *srcp;
    if (src == NULL) {
        return;
    }
    const pl_system *sys = system_of(src);
    int handle = source_detach(src);
    (void)sys->vtable->close(sys->self, handle);
    *srcp = NULL;
}

static void close_handle(pl_executor *ex, int handle)
{
    const pl_system *sys = pl__executor_system(ex);
    (void)sys->vtable->close(sys->self, handle);
}

/* ---- Parking ---------------------------------------------------------------
 * The edge-triggered protocol shared by every future below: after EAGAIN,
 * forget the readiness bit and store the current waker (replacing the one
 * of an earlier poll), so the next readiness event wakes this poll's task. */

static pl_waker *slot_for(pl_io_source *src, uint32_t bit)
{
    return bit == PL_IO_READABLE ? &src->read_waker : &src->write_waker;
}

static pl_poll_result park(pl_io_source *src, uint32_t bit, bool *parked, pl_context *cx)
{
    PL_ASSERT(src->ex == cx->ex);
    src->ready &= ~bit;
    pl_waker_slot_set(slot_for(src, bit), &cx->waker);
    *parked = true;
    return PL_PENDING;
}

/* Releases the waker a finished or dropped future left behind: it must not
 * keep the task alive nor be woken for someone else's event. */
static void unpark(pl_io_source *src, uint32_t bit, bool *parked)
{
    if (*parked) {
        pl_waker_slot_clear(slot_for(src, bit));
        *parked = false;
    }
}

/* ---- Byte-stream futures ---------------------------------------------------- */

static pl_poll_result io_read_poll(pl_future *f, pl_context *cx)
{
    pl_io_read *self = (pl_io_read *)f;
    pl_io_source *src = self->src;
    if (src == NULL) {
        self->result = PL_EBADF;
        return PL_READY;
    }
    const pl_system *sys = system_of(src);
    ssize_t n = sys->vtable->read(sys->self, src->handle, self->buf, self->len);
    if (n == PL_EAGAIN) {
        return park(src, PL_IO_READABLE, &self->parked, cx);
    }
    unpark(src, PL_IO_READABLE, &self->parked);
    self->result = n;
    return PL_READY;
}

static void io_read_drop(pl_future *f)
{
    pl_io_read *self = (pl_io_read *)f;
    if (self->src != NULL) {
        unpark(self->src, PL_IO_READABLE, &self->parked);
    }
}

static const pl_future_vtable io_read_vtable = {"pl_io_read", io_read_poll, io_read_drop};

static pl_io_read io_read_make(pl_io_source *src, void *buf, size_t len)
{
    return (pl_io_read){.base = PL_FUTURE_INIT(&io_read_vtable),
                        .src = src,
                        .buf = buf,
                        .len = len};
}

static pl_poll_result io_write_poll(pl_future *f, pl_context *cx)
{
    pl_io_write *self = (pl_io_write *)f;
    pl_io_source *src = self->src;
    if (src == NULL) {
        self->result = PL_EBADF;
        return PL_READY;
    }
    const pl_system *sys = system_of(src);
    ssize_t n = sys->vtable->write(sys->self, src->handle, self->buf, self->len);
    if (n == PL_EAGAIN) {
        return park(src, PL_IO_WRITABLE, &self->parked, cx);
    }
    unpark(src, PL_IO_WRITABLE, &self->parked);
    self->result = n;
    return PL_READY;
}

static void io_write_drop(pl_future *f)
{
    pl_io_write *self = (pl_io_write *)f;
    if (self->src != NULL) {
        unpark(self->src, PL_IO_WRITABLE, &self->parked);
    }
}

static const pl_future_vtable io_write_vtable = {"pl_io_write", io_write_poll, io_write_drop};

static pl_io_write io_write_make(pl_io_source *src, const void *buf, size_t len)
{
    return (pl_io_write){.base = PL_FUTURE_INIT(&io_write_vtable),
                         .src = src,
                         .buf = buf,
                         .len = len};
}

static pl_poll_result write_all_finish(pl_io_write_all *self, ssize_t result)
{
    unpark(self->src, PL_IO_WRITABLE, &self->parked);
    self->result = result;
    return PL_READY;
}

static pl_poll_result io_write_all_poll(pl_future *f, pl_context *cx)
{
    pl_io_write_all *self = (pl_io_write_all *)f;
    pl_io_source *src = self->src;
    if (src == NULL) {
        self->result = PL_EBADF;
        return PL_READY;
    }
    const pl_system *sys = system_of(src);
    while (self->written < self->len) {
        const char *from = (const char *)self->buf + self->written;
        ssize_t n = sys->vtable->write(sys->self, src->handle, from, self->len - self->written);
        if (n == PL_EAGAIN) {
            return park(src, PL_IO_WRITABLE, &self->parked, cx);
        }
        if (n < 0) {
            return write_all_finish(self, n);
        }
        /* A zero-byte write of a non-empty buffer would spin forever. */
        if (n == 0) {
            return write_all_finish(self, PL_EIO);
        }
        self->written += (size_t)n;
    }
    return write_all_finish(self, (ssize_t)self->written);
}

static void io_write_all_drop(pl_future *f)
{
    pl_io_write_all *self = (pl_io_write_all *)f;
    if (self->src != NULL) {
        unpark(self->src, PL_IO_WRITABLE, &self->parked);
    }
}

static const pl_future_vtable io_write_all_vtable = {"pl_io_write_all", io_write_all_poll,
                                                     io_write_all_drop};

static pl_io_write_all io_write_all_make(pl_io_source *src, const void *buf, size_t len)
{
    return (pl_io_write_all){.base = PL_FUTURE_INIT(&io_write_all_vtable),
                             .src = src,
                             .buf = buf,
                             .len = len};
}

/* ---- Generic fd ------------------------------------------------------------- */

int pl_io_fd_open(pl_executor *ex, pl_io_fd *io, int handle)
{
    return source_open(ex, handle, &io->src);
}

void pl_io_fd_close(pl_io_fd *io)
{
    if (io != NULL) {
        source_close(&io->src);
    }
}

int pl_io_fd_release(pl_io_fd *io)
{
    if (io == NULL || io->src == NULL) {
        return -1;
    }
    int handle = source_detach(io->src);
    io->src = NULL;
    return handle;
}

int pl_io_fd_handle(const pl_io_fd *io)
{
    return io->src != NULL ? io->src->handle : -1;
}

static uint32_t interest_slot_bit(uint32_t interest)
{
    return interest == PL_IO_READABLE ? PL_IO_READABLE : PL_IO_WRITABLE;
}

static pl_poll_result io_ready_poll(pl_future *f, pl_context *cx)
{
    pl_io_ready *self = (pl_io_ready *)f;
    pl_io_source *src = self->src;
    if (src == NULL) {
        self->result = PL_EBADF;
        return PL_READY;
    }
    uint32_t bit = interest_slot_bit(self->interest);
    if ((src->ready & (bit | PL_IO_ERROR)) == 0) {
        /* Unlike park(), keep the bits: only the caller's EAGAIN clears them. */
        PL_ASSERT(src->ex == cx->ex);
        pl_waker_slot_set(slot_for(src, bit), &cx->waker);
        self->parked = true;
        return PL_PENDING;
    }
    unpark(src, bit, &self->parked);
    self->ready = src->ready;
    self->result = 0;
    return PL_READY;
}

static void io_ready_drop(pl_future *f)
{
    pl_io_ready *self = (pl_io_ready *)f;
    if (self->src != NULL) {
        unpark(self->src, interest_slot_bit(self->interest), &self->parked);
    }
}

static const pl_future_vtable io_ready_vtable = {"pl_io_ready", io_ready_poll, io_ready_drop};

static pl_io_ready io_ready_make(pl_io_fd *io, uint32_t interest)
{
    return (pl_io_ready){.base = PL_FUTURE_INIT(&io_ready_vtable),
                         .src = io->src,
                         .interest = interest};
}

pl_io_ready pl_io_fd_readable(pl_io_fd *io)
{
    return io_ready_make(io, PL_IO_READABLE);
}

pl_io_ready pl_io_fd_writable(pl_io_fd *io)
{
    return io_ready_make(io, PL_IO_WRITABLE);
}

void pl_io_fd_clear_ready(pl_io_fd *io, uint32_t bits)
{
    if (io->src != NULL) {
        io->src->ready &= ~bits;
    }
}

pl_io_read pl_io_fd_read(pl_io_fd *io, void *buf, size_t len)
{
    return io_read_make(io->src, buf, len);
}

pl_io_write pl_io_fd_write(pl_io_fd *io, const void *buf, size_t len)
{
    return io_write_make(io->src, buf, len);
}

pl_io_write_all pl_io_fd_write_all(pl_io_fd *io, const void *buf, size_t len)
{
    return io_write_all_make(io->src, buf, len);
}

/* ---- Pipes -------------------------------------------------------------------- */

int pl_pipe_open(pl_executor *ex, pl_pipe_reader *r, pl_pipe_writer *w)
{
    r->src = NULL;
    w->src = NULL;
    const pl_system *sys = pl__executor_system(ex);
    int handles[2];
    int rc = sys->vtable->pipe(sys->self, handles);
    if (rc < 0) {
        return rc;
    }
    rc = source_open(ex, handles[0], &r->src);
    if (rc < 0) {
        close_handle(ex, handles[0]);
        close_handle(ex, handles[1]);
        return rc;
    }
    rc = source_open(ex, handles[1], &w->src);
    if (rc < 0) {
        source_close(&r->src);
        close_handle(ex, handles[1]);
        return rc;
    }
    return 0;
}

pl_io_read pl_pipe_read(pl_pipe_reader *r, void *buf, size_t len)
{
    return io_read_make(r->src, buf, len);
}

pl_io_write pl_pipe_write(pl_pipe_writer *w, const void *buf, size_t len)
{
    return io_write_make(w->src, buf, len);
}

pl_io_write_all pl_pipe_write_all(pl_pipe_writer *w, const void *buf, size_t len)
{
    return io_write_all_make(w->src, buf, len);
}

void pl_pipe_reader_close(pl_pipe_reader *r)
{
    if (r != NULL) {
        source_close(&r->src);
    }
}

void pl_pipe_writer_close(pl_pipe_writer *w)
{
    if (w != NULL) {
        source_close(&w->src);
    }
}

/* ---- Sockets: shared setup ------------------------------------------------------ */

static bool addr_valid(const struct sockaddr *addr, socklen_t len)
{
    if (addr == NULL) {
        return false;
    }
    if (addr->sa_family == AF_INET) {
        return len >= (socklen_t)sizeof(struct sockaddr_in);
    }
    if (addr->sa_family == AF_INET6) {
        return len >= (socklen_t)sizeof(struct sockaddr_in6);
    }
    return false;
}

/* socket + bind (+ listen when backlog > 0) + register, all or nothing. */
static int bound_socket(pl_executor *ex, int type, const struct sockaddr *addr, socklen_t len,
                        int backlog, pl_io_source **out)
{
    *out = NULL;
    if (!addr_valid(addr, len)) {
        return PL_EINVAL;
    }
    const pl_system *sys = pl__executor_system(ex);
    int handle = sys->vtable->socket(sys->self, addr->sa_family, type);
    if (handle < 0) {
        return handle;
    }
    int rc = sys->vtable->bind(sys->self, handle, addr, len);
    if (rc == 0 && backlog > 0) {
        rc = sys->vtable->listen(sys->self, handle, backlog);
    }
    if (rc == 0) {
        rc = source_open(ex, handle, out);
    }
    if (rc < 0) {
        close_handle(ex, handle);
    }
    return rc;
}

static int source_local_addr(const pl_io_source *src, struct sockaddr_storage *addr,
                             socklen_t *len)
{
    if (src == NULL) {
        return PL_EBADF;
    }
    const pl_system *sys = system_of(src);
    *len = (socklen_t)sizeof *addr;
    return sys->vtable->local_addr(sys->self, src->handle, (struct sockaddr *)addr, len);
}

/* ---- TCP listener and accept ----------------------------------------------------- */

int pl_tcp_listen(pl_executor *ex, pl_tcp_listener *l, const struct sockaddr *addr,
                  socklen_t len, int backlog)
{
    int n = backlog > 0 ? backlog : LISTEN_BACKLOG_DEFAULT;
    return bound_socket(ex, SOCK_STREAM, addr, len, n, &l->src);
}

int pl_tcp_listen_str(pl_executor *ex, pl_tcp_listener *l, const char *addr, int backlog)
{
    l->src = NULL;
    struct sockaddr_storage ss;
    socklen_t len;
    int rc = pl_addr_parse(addr, &ss, &len);
    if (rc < 0) {
        return rc;
    }
    return pl_tcp_listen(ex, l, (const struct sockaddr *)&ss, len, backlog);
}

int pl_tcp_listener_local_addr(const pl_tcp_listener *l, struct sockaddr_storage *addr,
                               socklen_t *len)
{
    return source_local_addr(l->src, addr, len);
}

void pl_tcp_listener_close(pl_tcp_listener *l)
{
    if (l != NULL) {
        source_close(&l->src);
    }
}

static pl_poll_result accept_poll(pl_future *f, pl_context *cx)
{
    pl_tcp_accept *self = (pl_tcp_accept *)f;
    pl_io_source *src = self->src;
    if (src == NULL) {
        self->result = PL_EBADF;
        return PL_READY;
    }
    const pl_system *sys = system_of(src);
    self->peer_len = (socklen_t)sizeof self->peer;
    int handle = sys->vtable->accept(sys->self, src->handle, (struct sockaddr *)&self->peer,
                                     &self->peer_len);
    if (handle == PL_EAGAIN) {
        return park(src, PL_IO_READABLE, &self->parked, cx);
    }
    unpark(src, PL_IO_READABLE, &self->parked);
    self->result = handle < 0 ? handle : source_open(src->ex, handle, &self->stream.src);
    if (handle >= 0 && self->result < 0) {
        close_handle(src->ex, handle);
    }
    return PL_READY;
}

static void accept_drop(pl_future *f)
{
    pl_tcp_accept *self = (pl_tcp_accept *)f;
    if (self->src != NULL) {
        unpark(self->src, PL_IO_READABLE, &self->parked);
    }
    pl_tcp_close(&self->stream);
}

static const pl_future_vtable accept_vtable = {"pl_tcp_accept", accept_poll, accept_drop};

pl_tcp_accept pl_tcp_accept_init(pl_tcp_listener *l)
{
    return (pl_tcp_accept){.base = PL_FUTURE_INIT(&accept_vtable), .src = l->src};
}

pl_tcp_stream pl_tcp_accept_take(pl_tcp_accept *a)
{
    pl_tcp_stream s = a->stream;
    a->stream.src = NULL;
    return s;
}

/* ---- TCP connect ----------------------------------------------------------------- */

/* First poll: socket, connect, register. Returns 0 when connected, 1 when
 * the connection completes later, or a PL_E* code. */
static int connect_start(pl_tcp_connect *self, pl_executor *ex)
{
    const struct sockaddr *addr = (const struct sockaddr *)&self->addr;
    if (!addr_valid(addr, self->addr_len)) {
        return PL_EINVAL;
    }
    const pl_system *sys = pl__executor_system(ex);
    int handle = sys->vtable->socket(sys->self, addr->sa_family, SOCK_STREAM);
    if (handle < 0) {
        return handle;
    }
    int rc = sys->vtable->connect(sys->self, handle, addr, self->addr_len);
    /* Registering after connect() means the readiness epoll reports is the
     * connection's, never that of the fresh unconnected socket. */
    if (rc == 0 || rc == PL_EINPROGRESS) {
        int reg = source_open(ex, handle, &self->stream.src);
        rc = reg < 0 ? reg : rc;
    }
    if (rc < 0 && rc != PL_EINPROGRESS) {
        close_handle(ex, handle);
        return rc;
    }
    return rc == 0 ? 0 : 1;
}

static pl_poll_result connect_finish(pl_tcp_connect *self, int result)
{
    if (self->stream.src != NULL) {
        unpark(self->stream.src, PL_IO_WRITABLE, &self->parked);
    }
    if (result < 0) {
        pl_tcp_close(&self->stream);
    }
    self->result = result;
    return PL_READY;
}

static pl_poll_result connect_poll(pl_future *f, pl_context *cx)
{
    pl_tcp_connect *self = (pl_tcp_connect *)f;
    if (self->stream.src == NULL) {
        int rc = connect_start(self, cx->ex);
        if (rc <= 0) {
            return connect_finish(self, rc);
        }
    }
    pl_io_source *src = self->stream.src;
    /* SO_ERROR reads 0 while the handshake is still running, so only ask
     * once the socket reported writable or in error. */
    if ((src->ready & (PL_IO_WRITABLE | PL_IO_ERROR)) == 0) {
        PL_ASSERT(src->ex == cx->ex);
        pl_waker_slot_set(&src->write_waker, &cx->waker);
        self->parked = true;
        return PL_PENDING;
    }
    const pl_system *sys = system_of(src);
    return connect_finish(self, sys->vtable->connect_result(sys->self, src->handle));
}

static void connect_drop(pl_future *f)
{
    pl_tcp_connect *self = (pl_tcp_connect *)f;
    if (self->stream.src != NULL) {
        unpark(self->stream.src, PL_IO_WRITABLE, &self->parked);
    }
    pl_tcp_close(&self->stream);
}

static const pl_future_vtable connect_vtable = {"pl_tcp_connect", connect_poll, connect_drop};

pl_tcp_connect pl_tcp_connect_init(const struct sockaddr *addr, socklen_t len)
{
    pl_tcp_connect c = {.base = PL_FUTURE_INIT(&connect_vtable)};
    if (addr_valid(addr, len) && len <= (socklen_t)sizeof c.addr) {
        memcpy(&c.addr, addr, len);
        c.addr_len = len;
    }
    return c;
}

pl_tcp_connect pl_tcp_connect_str(const char *addr)
{
    struct sockaddr_storage ss;
    socklen_t len = 0;
    if (pl_addr_parse(addr, &ss, &len) < 0) {
        return pl_tcp_connect_init(NULL, 0);
    }
    return pl_tcp_connect_init((const struct sockaddr *)&ss, len);
}

pl_tcp_stream pl_tcp_connect_take(pl_tcp_connect *c)
{
    pl_tcp_stream s = c->stream;
    c->stream.src = NULL;
    return s;
}

/* ---- TCP stream ------------------------------------------------------------------- */

pl_io_read pl_tcp_read(pl_tcp_stream *s, void *buf, size_t len)
{
    return io_read_make(s->src, buf, len);
}

pl_io_write pl_tcp_write(pl_tcp_stream *s, const void *buf, size_t len)
{
    return io_write_make(s->src, buf, len);
}

pl_io_write_all pl_tcp_write_all(pl_tcp_stream *s, const void *buf, size_t len)
{
    return io_write_all_make(s->src, buf, len);
}

int pl_tcp_local_addr(const pl_tcp_stream *s, struct sockaddr_storage *addr, socklen_t *len)
{
    return source_local_addr(s->src, addr, len);
}

int pl_tcp_shutdown(pl_tcp_stream *s, int how)
{
    if (s->src == NULL) {
        return PL_EBADF;
    }
    const pl_system *sys = system_of(s->src);
    if (sys->vtable->shutdown == NULL) {
        return PL_ENOSYS;
    }
    return sys->vtable->shutdown(sys->self, s->src->handle, how);
}

void pl_tcp_close(pl_tcp_stream *s)
{
    if (s != NULL) {
        source_close(&s->src);
    }
}

/* ---- UDP -------------------------------------------------------------------------- */

int pl_udp_bind(pl_executor *ex, pl_udp_socket *u, const struct sockaddr *addr, socklen_t len)
{
    return bound_socket(ex, SOCK_DGRAM, addr, len, 0, &u->src);
}

int pl_udp_bind_str(pl_executor *ex, pl_udp_socket *u, const char *addr)
{
    u->src = NULL;
    struct sockaddr_storage ss;
    socklen_t len;
    int rc = pl_addr_parse(addr, &ss, &len);
    if (rc < 0) {
        return rc;
    }
    return pl_udp_bind(ex, u, (const struct sockaddr *)&ss, len);
}

int pl_udp_local_addr(const pl_udp_socket *u, struct sockaddr_storage *addr, socklen_t *len)
{
    return source_local_addr(u->src, addr, len);
}

void pl_udp_close(pl_udp_socket *u)
{
    if (u != NULL) {
        source_close(&u->src);
    }
}

static pl_poll_result udp_send_poll(pl_future *f, pl_context *cx)
{
    pl_udp_send *self = (pl_udp_send *)f;
    pl_io_source *src = self->src;
    if (src == NULL || self->addr_len == 0) {
        self->result = src == NULL ? PL_EBADF : PL_EINVAL;
        return PL_READY;
    }
    const pl_system *sys = system_of(src);
    ssize_t n = sys->vtable->sendto(sys->self, src->handle, self->buf, self->len,
                                    (const struct sockaddr *)&self->addr, self->addr_len);
    if (n == PL_EAGAIN) {
        return park(src, PL_IO_WRITABLE, &self->parked, cx);
    }
    unpark(src, PL_IO_WRITABLE, &self->parked);
    self->result = n;
    return PL_READY;
}

static void udp_send_drop(pl_future *f)
{
    pl_udp_send *self = (pl_udp_send *)f;
    if (self->src != NULL) {
        unpark(self->src, PL_IO_WRITABLE, &self->parked);
    }
}

static const pl_future_vtable udp_send_vtable = {"pl_udp_send", udp_send_poll, udp_send_drop};

pl_udp_send pl_udp_send_to(pl_udp_socket *u, const void *buf, size_t len,
                           const struct sockaddr *addr, socklen_t addr_len)
{
    pl_udp_send s = {.base = PL_FUTURE_INIT(&udp_send_vtable),
                     .src = u->src,
                     .buf = buf,
                     .len = len};
    if (addr_valid(addr, addr_len) && addr_len <= (socklen_t)sizeof s.addr) {
        memcpy(&s.addr, addr, addr_len);
        s.addr_len = addr_len;
    }
    return s;
}

static pl_poll_result udp_recv_poll(pl_future *f, pl_context *cx)
{
    pl_udp_recv *self = (pl_udp_recv *)f;
    pl_io_source *src = self->src;
    if (src == NULL) {
        self->result = PL_EBADF;
        return PL_READY;
    }
    const pl_system *sys = system_of(src);
    self->from_len = (socklen_t)sizeof self->from;
    ssize_t n = sys->vtable->recvfrom(sys->self, src->handle, self->buf, self->len,
                                      (struct sockaddr *)&self->from, &self->from_len);
    if (n == PL_EAGAIN) {
        return park(src, PL_IO_READABLE, &self->parked, cx);
    }
    unpark(src, PL_IO_READABLE, &self->parked);
    self->result = n;
    return PL_READY;
}

static void udp_recv_drop(pl_future *f)
{
    pl_udp_recv *self = (pl_udp_recv *)f;
    if (self->src != NULL) {
        unpark(self->src, PL_IO_READABLE, &self->parked);
    }
}

static const pl_future_vtable udp_recv_vtable = {"pl_udp_recv", udp_recv_poll, udp_recv_drop};

pl_udp_recv pl_udp_recv_from(pl_udp_socket *u, void *buf, size_t len)
{
    return (pl_udp_recv){.base = PL_FUTURE_INIT(&udp_recv_vtable),
                         .src = u->src,
                         .buf = buf,
                         .len = len};
}

/* ---- Addresses -------------------------------------------------------------------- */

/* Parses a decimal port 0..65535 that ends the string. */
static int parse_port(const char *p, in_port_t *out)
{
    unsigned long port = 0;
    size_t digits = 0;
    for (; p[digits] >= '0' && p[digits] <= '9'; digits++) {
        if (digits == 5) {
            return PL_EINVAL;
        }
        port = port * 10 + (unsigned long)(p[digits] - '0');
    }
    if (digits == 0 || p[digits] != '\0' || port > 65535) {
        return PL_EINVAL;
    }
    *out = htons((in_port_t)port);
    return 0;
}

/* Copies text[0, n) into a NUL-terminated host buffer of size cap. */
static bool copy_host(char *host, size_t cap, const char *text, size_t n)
{
    if (n == 0 || n >= cap) {
        return false;
    }
    memcpy(host, text, n);
    host[n] = '\0';
    return true;
}

static int parse_v6(const char *text, struct sockaddr_storage *out, socklen_t *len)
{
    const char *rbracket = strchr(text, ']');
    char host[INET6_ADDRSTRLEN];
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;
    if (rbracket == NULL || rbracket[1] != ':' ||
        !copy_host(host, sizeof host, text + 1, (size_t)(rbracket - text - 1)) ||
        inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1 ||
        parse_port(rbracket + 2, &sin6->sin6_port) < 0) {
        return PL_EINVAL;
    }
    sin6->sin6_family = AF_INET6;
    *len = (socklen_t)sizeof *sin6;
    return 0;
}

static int parse_v4(const char *text, struct sockaddr_storage *out, socklen_t *len)
{
    const char *colon = strchr(text, ':');
    char host[INET_ADDRSTRLEN];
    struct sockaddr_in *sin = (struct sockaddr_in *)out;
    if (colon == NULL || !copy_host(host, sizeof host, text, (size_t)(colon - text)) ||
        inet_pton(AF_INET, host, &sin->sin_addr) != 1 ||
        parse_port(colon + 1, &sin->sin_port) < 0) {
        return PL_EINVAL;
    }
    sin->sin_family = AF_INET;
    *len = (socklen_t)sizeof *sin;
    return 0;
}

int pl_addr_parse(const char *text, struct sockaddr_storage *out, socklen_t *len)
{
    memset(out, 0, sizeof *out);
    *len = 0;
    if (text == NULL) {
        return PL_EINVAL;
    }
    int rc = text[0] == '[' ? parse_v6(text, out, len) : parse_v4(text, out, len);
    if (rc < 0) {
        memset(out, 0, sizeof *out);
        *len = 0;
    }
    return rc;
}

int pl_addr_format(const struct sockaddr *addr, char *buf, size_t buf_size)
{
    char host[INET6_ADDRSTRLEN];
    int n;
    if (addr == NULL) {
        return PL_EINVAL;
    }
    if (addr->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)addr;
        inet_ntop(AF_INET, &sin->sin_addr, host, sizeof host);
        n = snprintf(buf, buf_size, "%s:%u", host, (unsigned)ntohs(sin->sin_port));
    } else if (addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)(const void *)addr;
        inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof host);
        n = snprintf(buf, buf_size, "[%s]:%u", host, (unsigned)ntohs(sin6->sin6_port));
    } else {
        return PL_EINVAL;
    }
    return n < 0 || (size_t)n >= buf_size ? PL_EMSGSIZE : 0;
}

int pl_addr_port(const struct sockaddr *addr)
{
    if (addr == NULL) {
        return -1;
    }
    if (addr->sa_family == AF_INET) {
        return ntohs(((const struct sockaddr_in *)(const void *)addr)->sin_port);
    }
    if (addr->sa_family == AF_INET6) {
        return ntohs(((const struct sockaddr_in6 *)(const void *)addr)->sin6_port);
    }
    return -1;
}
