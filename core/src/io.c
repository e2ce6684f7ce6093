/* core/src/io.c: I/O registrations and the I/O futures.
 *
 * Everything here goes through the system seam: no system call is made in
 * this file, so the simulator runs these futures unchanged. Registrations
 * live on the executor's allocator rather than inside the I/O objects, so
 * objects can be moved (into a spawned task, out of an accept future)
 * without invalidating the pointer the system keeps.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "io_op.h"
#include "recorder.h"
#include "pollen/error.h"
#include "pollen/io.h"

enum { LISTEN_BACKLOG_DEFAULT = 128 };

/* ---- Registration -------------------------------------------------------- */

void pl_io_source_ready(pl_io_source *src, uint32_t bits)
{
    /* A source outside any executor (the simulator's unit tests drive
     * bare sources) has no recorder. */
    if (src->ex != NULL && src->ex->rec != NULL) {
        (void)pl_now(src->ex); /* its wakes' time too */
        pl__rec2(src->ex, PL__REC_IO_READY, 0, src->id, bits);
    }
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

void pl__io_source_forget(pl_io_source *src)
{
    if (src != NULL && src->registered) {
        (void)source_detach(src);
    }
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

int pl__io_source_open(pl_executor *ex, int handle, pl_io_source **out)
{
    return source_open(ex, handle, out);
}

void pl__io_source_close(pl_io_source **srcp) { source_close(srcp); }

void pl__io_handle_close(pl_executor *ex, int handle) { close_handle(ex, handle); }

/* ---- The operation future (io_op.h says how it works) ---------------- */

static const io_op *op_of(const pl_future *f)
{
    return (const io_op *)(const void *)f->vtable;
}

static pl_io_source **src_of(pl_future *f, const io_op *op)
{
    return (pl_io_source **)(void *)((char *)f + op->src_at);
}

static bool *parked_of(pl_future *f, const io_op *op)
{
    return (bool *)((char *)f + op->parked_at);
}

static pl_waker *slot_for(pl_io_source *src, uint32_t bit)
{
    return bit == PL_IO_READABLE ? &src->read_waker : &src->write_waker;
}

/* Releases the waker a finished or dropped future left behind: it must not
 * keep the task alive nor be woken for someone else's event. */
static void unpark(pl_future *f, const io_op *op, pl_io_source *src)
{
    bool *parked = parked_of(f, op);
    if (src != NULL && *parked) {
        pl_waker_slot_clear(slot_for(src, op->bit));
        *parked = false;
    }
}

static pl_poll_result op_complete(pl_future *f, const io_op *op, ssize_t result)
{
    pl_io_source *src = *src_of(f, op);
    unpark(f, op, src);
    if (op->finish != NULL) {
        op->finish(f, src, result);
    } else {
        *(ssize_t *)(void *)((char *)f + op->result_at) = result;
    }
    return PL_READY;
}

pl_poll_result pl__io_op_poll(pl_future *f, pl_context *cx)
{
    const io_op *op = op_of(f);
    if (*src_of(f, op) == NULL) {
        int rc = op->open != NULL ? op->open(f, cx->ex) : PL_EBADF;
        if (rc <= 0) {
            return op_complete(f, op, rc);
        }
    }
    pl_io_source *src = *src_of(f, op);
    ssize_t n = op->attempt(f, src, system_of(src));
    if (n != PL_EAGAIN) {
        return op_complete(f, op, n);
    }
    PL_ASSERT(src->ex == cx->ex);
    src->ready &= ~op->bit;
    pl_waker_slot_set(slot_for(src, op->bit), &cx->waker);
    *parked_of(f, op) = true;
    return PL_PENDING;
}

void pl__io_op_drop(pl_future *f)
{
    const io_op *op = op_of(f);
    unpark(f, op, *src_of(f, op));
    if (op->release != NULL) {
        op->release(f);
    }
}

/* ---- Byte-stream futures ---------------------------------------------------- */

static ssize_t read_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_io_read *self = (pl_io_read *)f;
    return sys->vtable->read(sys->self, src->handle, self->buf, self->len);
}

static const io_op io_read_op = {
    .vtable = IO_OP_VTABLE("pl_io_read"),
    .bit = PL_IO_READABLE,
    IO_OP_FIELDS(pl_io_read),
    .attempt = read_attempt,
    .result_at = offsetof(pl_io_read, result),
};

static pl_io_read io_read_make(pl_io_source *src, void *buf, size_t len)
{
    return (pl_io_read){.base = PL_FUTURE_INIT(&io_read_op.vtable),
                        .src = src,
                        .buf = buf,
                        .len = len};
}

static ssize_t write_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_io_write *self = (pl_io_write *)f;
    return sys->vtable->write(sys->self, src->handle, self->buf, self->len);
}

static const io_op io_write_op = {
    .vtable = IO_OP_VTABLE("pl_io_write"),
    .bit = PL_IO_WRITABLE,
    IO_OP_FIELDS(pl_io_write),
    .attempt = write_attempt,
    .result_at = offsetof(pl_io_write, result),
};

static pl_io_write io_write_make(pl_io_source *src, const void *buf, size_t len)
{
    return (pl_io_write){.base = PL_FUTURE_INIT(&io_write_op.vtable),
                         .src = src,
                         .buf = buf,
                         .len = len};
}

/* Writes until the buffer is gone; progress survives a PL_EAGAIN. */
static ssize_t write_all_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_io_write_all *self = (pl_io_write_all *)f;
    while (self->written < self->len) {
        const char *from = (const char *)self->buf + self->written;
        ssize_t n = sys->vtable->write(sys->self, src->handle, from, self->len - self->written);
        if (n < 0) {
            return n;
        }
        /* A zero-byte write of a non-empty buffer would spin forever. */
        if (n == 0) {
            return PL_EIO;
        }
        self->written += (size_t)n;
    }
    return (ssize_t)self->written;
}

static const io_op io_write_all_op = {
    .vtable = IO_OP_VTABLE("pl_io_write_all"),
    .bit = PL_IO_WRITABLE,
    IO_OP_FIELDS(pl_io_write_all),
    .attempt = write_all_attempt,
    .result_at = offsetof(pl_io_write_all, result),
};

static pl_io_write_all io_write_all_make(pl_io_source *src, const void *buf, size_t len)
{
    return (pl_io_write_all){.base = PL_FUTURE_INIT(&io_write_all_op.vtable),
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

int pl_io_fd_take(pl_io_fd *io)
{
    if (io == NULL || io->src == NULL) {
        return PL_EBADF;
    }
    int handle = source_detach(io->src);
    io->src = NULL;
    return handle;
}

int pl_io_fd_handle(const pl_io_fd *io)
{
    return io->src != NULL ? io->src->handle : PL_EBADF;
}

/* Readiness alone: the bit is already clear whenever it parks, so the
 * shared protocol keeps the bits the caller's own EAGAIN must clear. */
static ssize_t ready_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    (void)sys;
    const io_op *op = op_of(f);
    return (src->ready & (op->bit | PL_IO_ERROR)) != 0 ? 0 : PL_EAGAIN;
}

static void ready_finish(pl_future *f, pl_io_source *src, ssize_t result)
{
    pl_io_ready *self = (pl_io_ready *)f;
    if (result == 0) {
        self->ready = src->ready;
    }
    self->result = (int)result;
}

static const io_op io_readable_op = {
    .vtable = IO_OP_VTABLE("pl_io_ready"),
    .bit = PL_IO_READABLE,
    IO_OP_FIELDS(pl_io_ready),
    .attempt = ready_attempt,
    .finish = ready_finish,
};
static const io_op io_writable_op = {
    .vtable = IO_OP_VTABLE("pl_io_ready"),
    .bit = PL_IO_WRITABLE,
    IO_OP_FIELDS(pl_io_ready),
    .attempt = ready_attempt,
    .finish = ready_finish,
};

static pl_io_ready io_ready_make(pl_io_fd *io, uint32_t interest)
{
    const io_op *op = interest == PL_IO_READABLE ? &io_readable_op : &io_writable_op;
    return (pl_io_ready){.base = PL_FUTURE_INIT(&op->vtable),
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

static ssize_t accept_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_tcp_accept *self = (pl_tcp_accept *)f;
    self->peer_len = (socklen_t)sizeof self->peer;
    return sys->vtable->accept(sys->self, src->handle, (struct sockaddr *)&self->peer,
                               &self->peer_len);
}

/* Registers the accepted handle; one that cannot be registered is closed. */
static void accept_finish(pl_future *f, pl_io_source *src, ssize_t handle)
{
    pl_tcp_accept *self = (pl_tcp_accept *)f;
    if (handle < 0) {
        self->result = (int)handle;
        return;
    }
    self->result = source_open(src->ex, (int)handle, &self->stream.src);
    if (self->result < 0) {
        close_handle(src->ex, (int)handle);
    }
}

static void accept_release(pl_future *f) { pl_tcp_close(&((pl_tcp_accept *)f)->stream); }

static const io_op accept_op = {
    .vtable = IO_OP_VTABLE("pl_tcp_accept"),
    .bit = PL_IO_READABLE,
    IO_OP_FIELDS(pl_tcp_accept),
    .attempt = accept_attempt,
    .finish = accept_finish,
    .release = accept_release,
};

pl_tcp_accept pl_tcp_accept_make(pl_tcp_listener *l)
{
    return (pl_tcp_accept){.base = PL_FUTURE_INIT(&accept_op.vtable), .src = l->src};
}

pl_tcp_stream pl_tcp_accept_take(pl_tcp_accept *a)
{
    pl_tcp_stream s = a->stream;
    a->stream.src = NULL;
    return s;
}

/* ---- TCP connect ----------------------------------------------------------------- */

/* The future's own registration, at its first poll: socket, connect,
 * register. Returns 0 when connected at once, 1 when the connection
 * completes later, or a PL_E* code. */
static int connect_open(pl_future *f, pl_executor *ex)
{
    pl_tcp_connect *self = (pl_tcp_connect *)f;
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

/* SO_ERROR reads 0 while the handshake is still running, so only ask once
 * the socket reported writable or in error. */
static ssize_t connect_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    (void)f;
    if ((src->ready & (PL_IO_WRITABLE | PL_IO_ERROR)) == 0) {
        return PL_EAGAIN;
    }
    return sys->vtable->connect_result(sys->self, src->handle);
}

static void connect_finish(pl_future *f, pl_io_source *src, ssize_t result)
{
    (void)src;
    pl_tcp_connect *self = (pl_tcp_connect *)f;
    if (result < 0) {
        pl_tcp_close(&self->stream);
    }
    self->result = (int)result;
}

static void connect_release(pl_future *f) { pl_tcp_close(&((pl_tcp_connect *)f)->stream); }

/* Its source is the stream it creates. */
static const io_op connect_op = {
    .vtable = IO_OP_VTABLE("pl_tcp_connect"),
    .bit = PL_IO_WRITABLE,
    .src_at = offsetof(pl_tcp_connect, stream) + offsetof(pl_tcp_stream, src),
    .parked_at = offsetof(pl_tcp_connect, parked),
    .open = connect_open,
    .attempt = connect_attempt,
    .finish = connect_finish,
    .release = connect_release,
};

pl_tcp_connect pl_tcp_connect_make(const struct sockaddr *addr, socklen_t len)
{
    pl_tcp_connect c = {.base = PL_FUTURE_INIT(&connect_op.vtable)};
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
        return pl_tcp_connect_make(NULL, 0);
    }
    return pl_tcp_connect_make((const struct sockaddr *)&ss, len);
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

static ssize_t udp_send_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_udp_send *self = (pl_udp_send *)f;
    if (self->addr_len == 0) {
        return PL_EINVAL;
    }
    return sys->vtable->sendto(sys->self, src->handle, self->buf, self->len,
                               (const struct sockaddr *)&self->addr, self->addr_len);
}

static const io_op udp_send_op = {
    .vtable = IO_OP_VTABLE("pl_udp_send"),
    .bit = PL_IO_WRITABLE,
    IO_OP_FIELDS(pl_udp_send),
    .attempt = udp_send_attempt,
    .result_at = offsetof(pl_udp_send, result),
};

pl_udp_send pl_udp_send_to(pl_udp_socket *u, const void *buf, size_t len,
                           const struct sockaddr *addr, socklen_t addr_len)
{
    pl_udp_send s = {.base = PL_FUTURE_INIT(&udp_send_op.vtable),
                     .src = u->src,
                     .buf = buf,
                     .len = len};
    if (addr_valid(addr, addr_len) && addr_len <= (socklen_t)sizeof s.addr) {
        memcpy(&s.addr, addr, addr_len);
        s.addr_len = addr_len;
    }
    return s;
}

static ssize_t udp_recv_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_udp_recv *self = (pl_udp_recv *)f;
    self->from_len = (socklen_t)sizeof self->from;
    return sys->vtable->recvfrom(sys->self, src->handle, self->buf, self->len,
                                 (struct sockaddr *)&self->from, &self->from_len);
}

static const io_op udp_recv_op = {
    .vtable = IO_OP_VTABLE("pl_udp_recv"),
    .bit = PL_IO_READABLE,
    IO_OP_FIELDS(pl_udp_recv),
    .attempt = udp_recv_attempt,
    .result_at = offsetof(pl_udp_recv, result),
};

pl_udp_recv pl_udp_recv_from(pl_udp_socket *u, void *buf, size_t len)
{
    return (pl_udp_recv){.base = PL_FUTURE_INIT(&udp_recv_op.vtable),
                         .src = u->src,
                         .buf = buf,
                         .len = len};
}
