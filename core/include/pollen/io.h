/* pollen/io.h: I/O objects and their futures (fds, pipes, TCP, UDP).
 *
 * Everything here is written against the system seam (system.h) only, so
 * the same objects and futures run on the real epoll backend and, unchanged,
 * under the simulator's in-memory network.
 *
 * Objects. An I/O object (pl_io_fd, pl_pipe_reader, pl_tcp_stream, ...) is
 * a small caller-owned value holding a pointer to its registration, a
 * pl_io_source allocated with the executor's allocator. Because the
 * registration does not live inside the object, an object may be copied or
 * moved freely (into a spawned task, out of an accept future); only one copy
 * may be used and closed. An object is open between a successful
 * open/bind/listen/connect/accept and its close; a closed object reads as
 * {NULL}. Close every object before destroying the executor: a registered
 * source keeps pl_run from returning idle.
 *
 * Futures. Each operation is a future (io futures are lazy: creating one
 * does nothing). Its result lives in the future struct and is read after
 * READY: a byte count or a negative PL_E* code. A future borrows its
 * object: the object must stay open until the future is READY or dropped.
 * At most one read-side future (read, accept, recv_from, readable) and one
 * write-side future (write, write_all, connect, send_to, writable) may be
 * pending on an object at a time. Buffers are borrowed and must stay valid
 * until the future is READY or dropped.
 *
 * Readiness is edge-triggered, as in mio and tokio: a future tries its
 * operation; when the system says PL_EAGAIN it clears the source's ready
 * bit, stores the waker of the current poll in the source (replacing the
 * waker of an earlier poll) and returns PL_PENDING. The system wakes that
 * waker when the handle becomes ready again. Dropping a pending future
 * (pl_drop) drops the waker it stored.
 *
 * Threads: every function in this header is for the executor's thread.
 */
#ifndef POLLEN_IO_H
#define POLLEN_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "pollen/executor.h"
#include "pollen/future.h"
#include "pollen/system.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Addresses --------------------------------------------------------- */

/* Longest text pl_addr_format writes, with its terminating NUL:
 * "[" IPv6 "]:" port. */
#define PL_ADDR_STRLEN 56

/* Parses "A.B.C.D:PORT" or "[IPv6]:PORT" (numeric only, no names, port
 * 0..65535) into *out and sets *len to the address length. Returns 0 or
 * PL_EINVAL (NULL or malformed text; *out is then zeroed). Pure: any
 * thread. */
int pl_addr_parse(const char *text, struct sockaddr_storage *out, socklen_t *len);

/* Writes `addr` as text ("127.0.0.1:8080", "[::1]:0") into buf (of size
 * buf_size, PL_ADDR_STRLEN is always enough). Returns 0, PL_EINVAL (not
 * AF_INET/AF_INET6) or PL_EMSGSIZE (buf too small). Pure: any thread. */
int pl_addr_format(const struct sockaddr *addr, char *buf, size_t buf_size);

/* The port of an AF_INET/AF_INET6 address in host order, or PL_EINVAL
 * (NULL or another family). Pure: any thread. */
int pl_addr_port(const struct sockaddr *addr);

/* ---- Futures shared by every byte stream --------------------------------
 * pl_io_read, pl_io_write and pl_io_write_all are the futures returned by
 * pl_io_fd_read, pl_pipe_read, pl_tcp_read and friends. Fields are private
 * except `result` (and `written` for write_all). */

/* Reads once into buf. result: bytes read (> 0), 0 at end of stream (or
 * when len is 0), or a negative PL_E* code (PL_ECONNRESET, PL_EBADF...). */
typedef struct pl_io_read {
    pl_future base;
    pl_io_source *src;  /* borrowed from the object */
    void *buf;          /* borrowed */
    size_t len;
    bool parked;        /* a waker of ours is stored in the source */
    uint8_t reserved[7]; /* private: zero, so no byte is padding */
    ssize_t result;
} pl_io_read;

/* Writes once from buf; may write less than len (a partial write). result:
 * bytes written (> 0 unless len is 0) or a negative PL_E* code (PL_EPIPE
 * when the peer is gone: no SIGPIPE is raised). */
typedef struct pl_io_write {
    pl_future base;
    pl_io_source *src;
    const void *buf;
    size_t len;
    bool parked;
    uint8_t reserved[7]; /* private: zero, so no byte is padding */
    ssize_t result;
} pl_io_write;

/* Writes all len bytes, across as many partial writes as it takes.
 * result: len, or a negative PL_E* code; `written` says how many bytes
 * went out before an error. */
typedef struct pl_io_write_all {
    pl_future base;
    pl_io_source *src;
    const void *buf;
    size_t len;
    size_t written;
    bool parked;
    uint8_t reserved[7]; /* private: zero, so no byte is padding */
    ssize_t result;
} pl_io_write_all;

/* ---- Generic registered fd ----------------------------------------------
 * Wraps a handle the caller already has (an fd under the real backend, set
 * O_NONBLOCK by the caller) so futures can wait for its readiness. */
typedef struct pl_io_fd {
    pl_io_source *src; /* NULL when closed */
} pl_io_fd;

/* Registers `handle` with ex's system and makes *io own it: pl_io_fd_close
 * closes it. Returns 0, PL_EBADF (a negative or invalid handle), PL_ENOMEM,
 * or the system's registration error; on error *io is {NULL} and the
 * handle is left open and still owned by the caller. */
int pl_io_fd_open(pl_executor *ex, pl_io_fd *io, int handle);

/* Deregisters, drops any stored waker and closes the handle. No future
 * may be pending on it. NULL or an already closed object is allowed. */
void pl_io_fd_close(pl_io_fd *io);

/* Deregisters and hands the handle back to the caller without closing it.
 * Returns the handle, or PL_EBADF when io is not open. */
int pl_io_fd_take(pl_io_fd *io);

/* The handle, or PL_EBADF when io is not open. */
int pl_io_fd_handle(const pl_io_fd *io);

/* Completes once the handle is readable (or writable) or in error.
 * result: 0; the bits seen are in `ready`. After READY, do the operation
 * on the handle yourself; when it says EAGAIN, call pl_io_fd_clear_ready
 * with the bit before waiting again (edge-triggered readiness). */
typedef struct pl_io_ready {
    pl_future base;
    pl_io_source *src;
    uint32_t interest;  /* PL_IO_READABLE or PL_IO_WRITABLE */
    bool parked;
    uint8_t reserved[3]; /* private: zero, so no byte is padding */
    uint32_t ready;     /* PL_IO_* bits seen, after READY */
    int result;
} pl_io_ready;

pl_io_ready pl_io_fd_readable(pl_io_fd *io);
pl_io_ready pl_io_fd_writable(pl_io_fd *io);

/* Forgets readiness bits (PL_IO_READABLE / PL_IO_WRITABLE / PL_IO_ERROR)
 * after an operation on the handle said EAGAIN. */
void pl_io_fd_clear_ready(pl_io_fd *io, uint32_t bits);

/* Byte-stream futures on the wrapped handle, through the system's read and
 * write operations. */
pl_io_read pl_io_fd_read(pl_io_fd *io, void *buf, size_t len);
pl_io_write pl_io_fd_write(pl_io_fd *io, const void *buf, size_t len);
pl_io_write_all pl_io_fd_write_all(pl_io_fd *io, const void *buf, size_t len);

/* ---- Pipes -------------------------------------------------------------- */
typedef struct pl_pipe_reader {
    pl_io_source *src;
} pl_pipe_reader;

typedef struct pl_pipe_writer {
    pl_io_source *src;
} pl_pipe_writer;

/* Creates a pipe and registers both ends. The caller owns both and closes
 * each with its close function. Closing the writer makes the reader see
 * end of stream (result 0) once the buffered bytes are read; writing after
 * the reader closed gives PL_EPIPE. Returns 0, PL_EMFILE, PL_ENOMEM or a
 * system error; on error both are {NULL}. */
int pl_pipe_open(pl_executor *ex, pl_pipe_reader *r, pl_pipe_writer *w);

pl_io_read pl_pipe_read(pl_pipe_reader *r, void *buf, size_t len);
pl_io_write pl_pipe_write(pl_pipe_writer *w, const void *buf, size_t len);
pl_io_write_all pl_pipe_write_all(pl_pipe_writer *w, const void *buf, size_t len);

/* Deregister, drop stored wakers and close. NULL or closed is allowed;
 * no future may be pending on the end being closed. */
void pl_pipe_reader_close(pl_pipe_reader *r);
void pl_pipe_writer_close(pl_pipe_writer *w);

/* ---- TCP ---------------------------------------------------------------- */
typedef struct pl_tcp_listener {
    pl_io_source *src;
} pl_tcp_listener;

typedef struct pl_tcp_stream {
    pl_io_source *src;
} pl_tcp_stream;

/* Opens a listening socket bound to addr (port 0: an ephemeral port, see
 * pl_tcp_listener_local_addr) with the given backlog (<= 0: 128). The
 * caller owns *l. Returns 0, PL_EADDRINUSE, PL_EADDRNOTAVAIL, PL_EINVAL
 * (NULL or unsupported address), PL_ENOMEM or another system error; on
 * error *l is {NULL}. */
int pl_tcp_listen(pl_executor *ex, pl_tcp_listener *l, const struct sockaddr *addr,
                  socklen_t len, int backlog);

/* pl_tcp_listen with an address parsed by pl_addr_parse ("127.0.0.1:0"). */
int pl_tcp_listen_str(pl_executor *ex, pl_tcp_listener *l, const char *addr, int backlog);

/* The bound address (with the actual port). Returns 0 or a PL_E* code. */
int pl_tcp_listener_local_addr(const pl_tcp_listener *l, struct sockaddr_storage *addr,
                               socklen_t *len);

/* Deregisters, drops a stored waker and closes. NULL or closed is
 * allowed; no accept may be pending on it. */
void pl_tcp_listener_close(pl_tcp_listener *l);

/* Accepts one connection. result: 0, with the new open stream in `stream`
 * and the peer address in `peer`/`peer_len`, or a negative PL_E* code
 * (PL_EMFILE, PL_ENOMEM...). The accepted stream belongs to the future
 * until moved out with pl_tcp_accept_take; dropping the future closes a
 * stream that was not taken. */
typedef struct pl_tcp_accept {
    pl_future base;
    pl_io_source *src;  /* the listener's */
    bool parked;
    uint8_t reserved[3]; /* private: zero, so no byte is padding */
    int result;
    pl_tcp_stream stream;
    struct sockaddr_storage peer;
    socklen_t peer_len;
    uint32_t reserved2; /* private: zero */
} pl_tcp_accept;

pl_tcp_accept pl_tcp_accept_make(pl_tcp_listener *l);

/* Moves the accepted stream out (the future then holds {NULL}). Call it
 * from the poll that saw READY: the executor drops a task's future when it
 * completes, so an accept run directly by pl_spawn or pl_block_on has its
 * stream closed by then (and `stream` reads {NULL}). */
pl_tcp_stream pl_tcp_accept_take(pl_tcp_accept *a);

/* Connects to addr (copied) on the executor that polls it. result: 0 with
 * the open stream in `stream`, or a negative PL_E* code (PL_ECONNREFUSED,
 * PL_ETIMEDOUT, PL_EINVAL for a NULL or unsupported address...). The
 * stream belongs to the future until moved out with pl_tcp_connect_take;
 * dropping the future closes a pending or untaken connection. */
typedef struct pl_tcp_connect {
    pl_future base;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    bool parked;
    uint8_t reserved[3]; /* private: zero, so no byte is padding */
    int result;
    uint32_t reserved2;    /* private: zero */
    pl_tcp_stream stream;  /* connecting, then the connected stream */
} pl_tcp_connect;

pl_tcp_connect pl_tcp_connect_make(const struct sockaddr *addr, socklen_t len);

/* pl_tcp_connect_make with an address parsed by pl_addr_parse; a bad
 * string makes the future complete with PL_EINVAL. */
pl_tcp_connect pl_tcp_connect_str(const char *addr);

/* Moves the connected stream out, as pl_tcp_accept_take. */
pl_tcp_stream pl_tcp_connect_take(pl_tcp_connect *c);

/* Stream futures. Read result 0 means the peer shut down its write side
 * (end of stream). */
pl_io_read pl_tcp_read(pl_tcp_stream *s, void *buf, size_t len);
pl_io_write pl_tcp_write(pl_tcp_stream *s, const void *buf, size_t len);
pl_io_write_all pl_tcp_write_all(pl_tcp_stream *s, const void *buf, size_t len);

/* The stream's local address (the peer's is in the accept future). */
int pl_tcp_local_addr(const pl_tcp_stream *s, struct sockaddr_storage *addr, socklen_t *len);

/* Shuts down a direction (SHUT_RD, SHUT_WR or SHUT_RDWR) without closing:
 * after SHUT_WR the peer reads end of stream. Returns 0, PL_ENOTCONN,
 * PL_ENOSYS (the system has no shutdown) or another PL_E* code. */
int pl_tcp_shutdown(pl_tcp_stream *s, int how);

/* Deregisters, drops stored wakers and closes. NULL or closed is
 * allowed; no future may be pending on it. */
void pl_tcp_close(pl_tcp_stream *s);

/* ---- UDP ---------------------------------------------------------------- */
typedef struct pl_udp_socket {
    pl_io_source *src;
} pl_udp_socket;

/* Opens a datagram socket bound to addr (port 0: ephemeral). Returns 0 or
 * a PL_E* code as pl_tcp_listen; on error *u is {NULL}. */
int pl_udp_bind(pl_executor *ex, pl_udp_socket *u, const struct sockaddr *addr,
                socklen_t len);
int pl_udp_bind_str(pl_executor *ex, pl_udp_socket *u, const char *addr);

int pl_udp_local_addr(const pl_udp_socket *u, struct sockaddr_storage *addr,
                      socklen_t *len);

/* Deregisters, drops stored wakers and closes. NULL or closed is
 * allowed; no future may be pending on it. */
void pl_udp_close(pl_udp_socket *u);

/* Sends one datagram to addr (copied). result: bytes sent or a negative
 * PL_E* code (PL_EMSGSIZE, PL_EINVAL...). */
typedef struct pl_udp_send {
    pl_future base;
    pl_io_source *src;
    const void *buf;
    size_t len;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    bool parked;
    uint8_t reserved[3]; /* private: zero, so no byte is padding */
    ssize_t result;
} pl_udp_send;

pl_udp_send pl_udp_send_to(pl_udp_socket *u, const void *buf, size_t len,
                           const struct sockaddr *addr, socklen_t addr_len);

/* Receives one datagram into buf (a longer one is truncated). result:
 * bytes received or a negative PL_E* code; the sender is in from/from_len. */
typedef struct pl_udp_recv {
    pl_future base;
    pl_io_source *src;
    void *buf;
    size_t len;
    bool parked;
    uint8_t reserved[7]; /* private: zero, so no byte is padding */
    ssize_t result;
    struct sockaddr_storage from;
    socklen_t from_len;
    uint32_t reserved2; /* private: zero */
} pl_udp_recv;

pl_udp_recv pl_udp_recv_from(pl_udp_socket *u, void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
