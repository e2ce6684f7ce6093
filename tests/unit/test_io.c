/* I/O futures on the real backend: TCP echo and large transfers over
 * loopback, EOF, refused connections, UDP, pipes, the generic fd wrapper,
 * waker replacement and release, addresses and bad arguments. Every test
 * also checks that no file descriptor outlives its executor. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pollen/error.h>
#include <pollen/executor.h>
#include <pollen/testing.h>
#include <pollen/io.h>
#include <pollen/timer.h>

#include "leakcheck.h"

TestSuite(io, .fini = pl_test_leak_check, .timeout = 60);

/* ---- Helpers -------------------------------------------------------------- */

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    int n = 0;
    while (readdir(d) != NULL) {
        n++;
    }
    closedir(d);
    return n;
}

static pl_executor *new_executor(bool rotate)
{
    pl_executor_options o;
    pl_executor_options_default(&o);
    pl_executor_testing_options to;
    pl_executor_testing_options_default(&to);
    to.rotate_wakers = rotate;
    o.testing = &to;
    pl_executor *ex = NULL;
    cr_assert_eq(pl_executor_create(&ex, &o), 0);
    return ex;
}

static void spawn(pl_executor *ex, const pl_future *f, size_t size, pl_task **handle)
{
    cr_assert_eq(pl_spawn(ex, f, size, NULL, handle), 0);
}

static uint8_t pattern_byte(size_t i)
{
    return (uint8_t)((i * 7u + 3u) ^ (i >> 13));
}

static void fill_pattern(uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = pattern_byte(i);
    }
}

/* A listener on 127.0.0.1 with an ephemeral port; its address in *addr. */
static void listen_loopback(pl_executor *ex, pl_tcp_listener *l, struct sockaddr_storage *addr,
                            socklen_t *len)
{
    cr_assert_eq(pl_tcp_listen_str(ex, l, "127.0.0.1:0", 0), 0);
    cr_assert_eq(pl_tcp_listener_local_addr(l, addr, len), 0);
    cr_assert_gt(pl_addr_port((struct sockaddr *)addr), 0);
}

/* Polls `inner` (which stays in the test's frame) to READY, then closes
 * up to two objects. A registered object keeps the executor from going
 * idle, so a test that waits for one future must close what it opened
 * from inside the run. */
typedef void (*close_fn)(void *obj);

typedef struct then_close {
    pl_future base;
    pl_future *inner;
    close_fn fn[2];
    void *obj[2];
} then_close;

static pl_poll_result then_close_poll(pl_future *f, pl_context *cx)
{
    then_close *self = (then_close *)f;
    if (pl_poll(self->inner, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    for (int i = 0; i < 2; i++) {
        if (self->fn[i] != NULL) {
            self->fn[i](self->obj[i]);
        }
    }
    return PL_READY;
}

static const pl_future_vtable then_close_vt = {"then_close", then_close_poll, NULL};

static void close_reader(void *r)
{
    pl_pipe_reader_close(r);
}

static void close_writer(void *w)
{
    pl_pipe_writer_close(w);
}

static void close_udp(void *u)
{
    pl_udp_close(u);
}

/* ---- TCP echo --------------------------------------------------------------- */

/* Accepts one connection, closes the listener, echoes until EOF. */
typedef struct echo_server {
    pl_future base;
    pl_tcp_listener *listener;
    pl_tcp_accept accept;
    pl_tcp_stream stream;
    pl_io_read rd;
    pl_io_write_all wr;
    uint8_t buf[1024];
    size_t echoed;
    int error;
} echo_server;

static pl_poll_result echo_server_poll(pl_future *f, pl_context *cx)
{
    echo_server *self = (echo_server *)f;
    PL_ASYNC_BEGIN(self);
    self->accept = pl_tcp_accept_make(self->listener);
    PL_AWAIT(cx, &self->accept);
    pl_tcp_listener_close(self->listener);
    self->error = self->accept.result;
    if (self->error < 0) {
        return PL_READY;
    }
    cr_assert_gt(pl_addr_port((struct sockaddr *)&self->accept.peer), 0);
    self->stream = pl_tcp_accept_take(&self->accept);
    for (;;) {
        self->rd = pl_tcp_read(&self->stream, self->buf, sizeof self->buf);
        PL_AWAIT(cx, &self->rd);
        if (self->rd.result <= 0) {
            self->error = (int)self->rd.result;
            break;
        }
        self->wr = pl_tcp_write_all(&self->stream, self->buf, (size_t)self->rd.result);
        PL_AWAIT(cx, &self->wr);
        if (self->wr.result < 0) {
            self->error = (int)self->wr.result;
            break;
        }
        self->echoed += (size_t)self->wr.result;
    }
    pl_tcp_close(&self->stream);
    PL_ASYNC_END;
}

static void echo_server_drop(pl_future *f)
{
    pl_tcp_close(&((echo_server *)f)->stream);
}

static const pl_future_vtable echo_server_vt = {"echo_server", echo_server_poll,
                                                echo_server_drop};

/* Connects, sends msg, shuts down its write side, reads until EOF. */
typedef struct echo_client {
    pl_future base;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    const char *msg;
    pl_tcp_connect conn;
    pl_tcp_stream stream;
    pl_io_write_all wr;
    pl_io_read rd;
    char got[1024];
    size_t got_len;
    int error;
} echo_client;

static pl_poll_result echo_client_poll(pl_future *f, pl_context *cx)
{
    echo_client *self = (echo_client *)f;
    PL_ASYNC_BEGIN(self);
    self->conn = pl_tcp_connect_make((struct sockaddr *)&self->addr, self->addr_len);
    PL_AWAIT(cx, &self->conn);
    self->error = self->conn.result;
    if (self->error < 0) {
        return PL_READY;
    }
    self->stream = pl_tcp_connect_take(&self->conn);
    self->wr = pl_tcp_write_all(&self->stream, self->msg, strlen(self->msg));
    PL_AWAIT(cx, &self->wr);
    cr_assert_eq(self->wr.result, (ssize_t)strlen(self->msg));
    cr_assert_eq(pl_tcp_shutdown(&self->stream, SHUT_WR), 0);
    for (;;) {
        self->rd = pl_tcp_read(&self->stream, self->got + self->got_len,
                               sizeof self->got - 1 - self->got_len);
        PL_AWAIT(cx, &self->rd);
        if (self->rd.result <= 0) {
            self->error = (int)self->rd.result;
            break;
        }
        self->got_len += (size_t)self->rd.result;
    }
    pl_tcp_close(&self->stream);
    PL_ASYNC_END;
}

static void echo_client_drop(pl_future *f)
{
    pl_tcp_close(&((echo_client *)f)->stream);
}

static const pl_future_vtable echo_client_vt = {"echo_client", echo_client_poll,
                                                echo_client_drop};

static void run_echo(bool rotate)
{
    int fds = count_fds();
    pl_executor *ex = new_executor(rotate);
    pl_tcp_listener listener;
    echo_client c = {.base = PL_FUTURE_INIT(&echo_client_vt), .msg = "hello, pollen"};
    listen_loopback(ex, &listener, &c.addr, &c.addr_len);
    echo_server s = {.base = PL_FUTURE_INIT(&echo_server_vt), .listener = &listener};
    pl_task *ts;
    pl_task *tc;
    spawn(ex, &s.base, sizeof s, &ts);
    spawn(ex, &c.base, sizeof c, &tc);
    cr_assert_eq(pl_run(ex), 0);
    echo_server *sr = pl_task_future(ts);
    echo_client *cr = pl_task_future(tc);
    cr_assert_eq(sr->error, 0, "server: %s", pl_err_name(sr->error));
    cr_assert_eq(cr->error, 0, "client: %s", pl_err_name(cr->error));
    cr_assert_eq(sr->echoed, strlen(c.msg));
    cr_assert_eq(cr->got_len, strlen(c.msg));
    cr_assert_str_eq(cr->got, c.msg);
    cr_assert_null(listener.src, "the server closed the listener");
    pl_task_release(ts);
    pl_task_release(tc);
    pl_executor_destroy(ex);
    cr_assert_eq(count_fds(), fds);
}

Test(io, tcp_echo_over_loopback)
{
    run_echo(false);
}

Test(io, tcp_echo_with_rotated_wakers)
{
    run_echo(true);
}

Test(io, tcp_echo_over_ipv6_loopback_when_available)
{
    int probe = socket(AF_INET6, SOCK_STREAM, 0);
    if (probe < 0) {
        cr_skip_test("no IPv6");
    }
    close(probe);
    pl_executor *ex = new_executor(false);
    pl_tcp_listener listener;
    int rc = pl_tcp_listen_str(ex, &listener, "[::1]:0", 4);
    if (rc == PL_EADDRNOTAVAIL) {
        pl_executor_destroy(ex);
        cr_skip_test("no ::1");
    }
    cr_assert_eq(rc, 0, "%s", pl_err_name(rc));
    echo_client c = {.base = PL_FUTURE_INIT(&echo_client_vt), .msg = "v6"};
    cr_assert_eq(pl_tcp_listener_local_addr(&listener, &c.addr, &c.addr_len), 0);
    char text[PL_ADDR_STRLEN];
    cr_assert_eq(pl_addr_format((struct sockaddr *)&c.addr, text, sizeof text), 0);
    cr_assert_eq(strncmp(text, "[::1]:", 6), 0, "%s", text);
    echo_server s = {.base = PL_FUTURE_INIT(&echo_server_vt), .listener = &listener};
    pl_task *tc;
    spawn(ex, &s.base, sizeof s, NULL);
    spawn(ex, &c.base, sizeof c, &tc);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_str_eq(((echo_client *)pl_task_future(tc))->got, "v6");
    pl_task_release(tc);
    pl_executor_destroy(ex);
}

/* ---- Large transfer with partial writes ----------------------------------------- */

enum { BIG_LEN = 16 << 20 };

/* Accepts one connection and reads until EOF, checking every byte. */
typedef struct sink {
    pl_future base;
    pl_tcp_listener *listener;
    pl_tcp_accept accept;
    pl_tcp_stream stream;
    pl_io_read rd;
    uint8_t buf[65536];
    size_t total;
    size_t mismatches;
    int error;
} sink;

static pl_poll_result sink_poll(pl_future *f, pl_context *cx)
{
    sink *self = (sink *)f;
    PL_ASYNC_BEGIN(self);
    self->accept = pl_tcp_accept_make(self->listener);
    PL_AWAIT(cx, &self->accept);
    pl_tcp_listener_close(self->listener);
    cr_assert_eq(self->accept.result, 0);
    self->stream = pl_tcp_accept_take(&self->accept);
    for (;;) {
        self->rd = pl_tcp_read(&self->stream, self->buf, sizeof self->buf);
        PL_AWAIT(cx, &self->rd);
        if (self->rd.result <= 0) {
            self->error = (int)self->rd.result;
            break;
        }
        for (ssize_t i = 0; i < self->rd.result; i++) {
            self->mismatches += self->buf[i] != pattern_byte(self->total + (size_t)i);
        }
        self->total += (size_t)self->rd.result;
    }
    pl_tcp_close(&self->stream);
    PL_ASYNC_END;
}

static void sink_drop(pl_future *f)
{
    pl_tcp_close(&((sink *)f)->stream);
}

static const pl_future_vtable sink_vt = {"sink", sink_poll, sink_drop};

/* Sends `len` pattern bytes with single writes (use_all false, counting the
 * partial ones) or one write_all, then closes. */
typedef struct source {
    pl_future base;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    const uint8_t *data;
    size_t len;
    bool use_all;
    pl_tcp_connect conn;
    pl_tcp_stream stream;
    pl_io_write wr;
    pl_io_write_all wr_all;
    size_t sent;
    unsigned partial_writes;
    unsigned writes;
} source;

static pl_poll_result source_poll(pl_future *f, pl_context *cx)
{
    source *self = (source *)f;
    PL_ASYNC_BEGIN(self);
    self->conn = pl_tcp_connect_make((struct sockaddr *)&self->addr, self->addr_len);
    PL_AWAIT(cx, &self->conn);
    cr_assert_eq(self->conn.result, 0);
    self->stream = pl_tcp_connect_take(&self->conn);
    if (self->use_all) {
        self->wr_all = pl_tcp_write_all(&self->stream, self->data, self->len);
        PL_AWAIT(cx, &self->wr_all);
        cr_assert_eq(self->wr_all.result, (ssize_t)self->len);
        cr_assert_eq(self->wr_all.written, self->len);
        self->sent = self->len;
    }
    while (self->sent < self->len) {
        self->wr = pl_tcp_write(&self->stream, self->data + self->sent, self->len - self->sent);
        PL_AWAIT(cx, &self->wr);
        cr_assert_gt(self->wr.result, 0, "%s", pl_err_name((int)self->wr.result));
        self->writes++;
        self->partial_writes += (size_t)self->wr.result < self->len - self->sent;
        self->sent += (size_t)self->wr.result;
    }
    pl_tcp_close(&self->stream);
    PL_ASYNC_END;
}

static void source_drop(pl_future *f)
{
    pl_tcp_close(&((source *)f)->stream);
}

static const pl_future_vtable source_vt = {"source", source_poll, source_drop};

static void run_transfer(bool use_all)
{
    int fds = count_fds();
    uint8_t *data = malloc(BIG_LEN);
    cr_assert_not_null(data);
    fill_pattern(data, BIG_LEN);
    pl_executor *ex = new_executor(false);
    pl_tcp_listener listener;
    source src = {.base = PL_FUTURE_INIT(&source_vt), .data = data, .len = BIG_LEN,
                  .use_all = use_all};
    listen_loopback(ex, &listener, &src.addr, &src.addr_len);
    sink *snk = calloc(1, sizeof *snk);
    cr_assert_not_null(snk);
    *snk = (sink){.base = PL_FUTURE_INIT(&sink_vt), .listener = &listener};
    pl_task *tsink;
    pl_task *tsrc;
    spawn(ex, &snk->base, sizeof *snk, &tsink);
    spawn(ex, &src.base, sizeof src, &tsrc);
    free(snk);
    cr_assert_eq(pl_run(ex), 0);
    sink *so = pl_task_future(tsink);
    source *sc = pl_task_future(tsrc);
    cr_assert_eq(so->error, 0);
    cr_assert_eq(so->total, (size_t)BIG_LEN);
    cr_assert_eq(so->mismatches, 0);
    cr_assert_eq(sc->sent, (size_t)BIG_LEN);
    if (!use_all) {
        /* 16 MiB never fits a loopback socket buffer in one write. */
        cr_assert_gt(sc->partial_writes, 0);
        cr_assert_gt(sc->writes, 1);
    }
    pl_task_release(tsink);
    pl_task_release(tsrc);
    pl_executor_destroy(ex);
    free(data);
    cr_assert_eq(count_fds(), fds);
}

Test(io, tcp_large_transfer_with_partial_writes)
{
    run_transfer(false);
}

Test(io, tcp_large_transfer_with_write_all)
{
    run_transfer(true);
}

/* ---- EOF and errors ------------------------------------------------------------- */

/* Accepts and closes at once. */
typedef struct closer {
    pl_future base;
    pl_tcp_listener *listener;
    pl_tcp_accept accept;
} closer;

static pl_poll_result closer_poll(pl_future *f, pl_context *cx)
{
    closer *self = (closer *)f;
    PL_ASYNC_BEGIN(self);
    self->accept = pl_tcp_accept_make(self->listener);
    PL_AWAIT(cx, &self->accept);
    pl_tcp_listener_close(self->listener);
    cr_assert_eq(self->accept.result, 0);
    /* Not taken: dropping the accept future closes the stream. */
    pl_drop(&self->accept.base);
    PL_ASYNC_END;
}

static const pl_future_vtable closer_vt = {"closer", closer_poll, NULL};

Test(io, tcp_read_sees_eof_when_the_peer_closes)
{
    int fds = count_fds();
    pl_executor *ex = new_executor(false);
    pl_tcp_listener listener;
    echo_client c = {.base = PL_FUTURE_INIT(&echo_client_vt), .msg = ""};
    listen_loopback(ex, &listener, &c.addr, &c.addr_len);
    closer s = {.base = PL_FUTURE_INIT(&closer_vt), .listener = &listener};
    pl_task *tc;
    spawn(ex, &s.base, sizeof s, NULL);
    spawn(ex, &c.base, sizeof c, &tc);
    cr_assert_eq(pl_run(ex), 0);
    echo_client *cr = pl_task_future(tc);
    cr_assert_eq(cr->error, 0, "EOF is a 0 result, got %s", pl_err_name(cr->error));
    cr_assert_eq(cr->got_len, 0);
    pl_task_release(tc);
    pl_executor_destroy(ex);
    cr_assert_eq(count_fds(), fds);
}

Test(io, tcp_connect_refused)
{
    int fds = count_fds();
    pl_executor *ex = new_executor(false);
    /* Take an ephemeral port and give it back: nothing listens there now. */
    pl_tcp_listener listener;
    struct sockaddr_storage addr;
    socklen_t len;
    listen_loopback(ex, &listener, &addr, &len);
    pl_tcp_listener_close(&listener);
    pl_tcp_connect c = pl_tcp_connect_make((struct sockaddr *)&addr, len);
    cr_assert_eq(PL_BLOCK_ON(ex, c), 0);
    cr_assert_eq(c.result, PL_ECONNREFUSED, "got %s", pl_err_name(c.result));
    cr_assert_null(c.stream.src, "a failed connect closes its socket");
    pl_executor_destroy(ex);
    cr_assert_eq(count_fds(), fds);
}

Test(io, tcp_listen_twice_on_one_port_is_addr_in_use)
{
    pl_executor *ex = new_executor(false);
    pl_tcp_listener a;
    pl_tcp_listener b;
    struct sockaddr_storage addr;
    socklen_t len;
    listen_loopback(ex, &a, &addr, &len);
    cr_assert_eq(pl_tcp_listen(ex, &b, (struct sockaddr *)&addr, len, 0), PL_EADDRINUSE);
    cr_assert_null(b.src);
    pl_tcp_listener_close(&a);
    pl_tcp_listener_close(&b);
    pl_executor_destroy(ex);
}

/* ---- UDP ------------------------------------------------------------------------ */

/* ping: send "ping" to peer, await "pong". pong: await a datagram, answer
 * "pong" to its sender. Each closes its socket when done. */
typedef struct udp_peer {
    pl_future base;
    pl_udp_socket *sock;
    bool is_pinger;
    struct sockaddr_storage peer;
    socklen_t peer_len;
    pl_udp_send send;
    pl_udp_recv recv;
    char buf[64];
    int from_port;
} udp_peer;

static pl_poll_result udp_peer_poll(pl_future *f, pl_context *cx)
{
    udp_peer *self = (udp_peer *)f;
    PL_ASYNC_BEGIN(self);
    if (self->is_pinger) {
        self->send = pl_udp_send_to(self->sock, "ping", 4, (struct sockaddr *)&self->peer,
                                    self->peer_len);
        PL_AWAIT(cx, &self->send);
        cr_assert_eq(self->send.result, 4, "%s", pl_err_name((int)self->send.result));
    }
    self->recv = pl_udp_recv_from(self->sock, self->buf, sizeof self->buf - 1);
    PL_AWAIT(cx, &self->recv);
    cr_assert_eq(self->recv.result, 4, "%s", pl_err_name((int)self->recv.result));
    self->from_port = pl_addr_port((struct sockaddr *)&self->recv.from);
    if (!self->is_pinger) {
        cr_assert_str_eq(self->buf, "ping");
        self->send = pl_udp_send_to(self->sock, "pong", 4, (struct sockaddr *)&self->recv.from,
                                    self->recv.from_len);
        PL_AWAIT(cx, &self->send);
        cr_assert_eq(self->send.result, 4);
    } else {
        cr_assert_str_eq(self->buf, "pong");
    }
    pl_udp_close(self->sock);
    PL_ASYNC_END;
}

static const pl_future_vtable udp_peer_vt = {"udp_peer", udp_peer_poll, NULL};

Test(io, udp_send_and_recv_over_loopback)
{
    int fds = count_fds();
    pl_executor *ex = new_executor(false);
    pl_udp_socket a;
    pl_udp_socket b;
    cr_assert_eq(pl_udp_bind_str(ex, &a, "127.0.0.1:0"), 0);
    cr_assert_eq(pl_udp_bind_str(ex, &b, "127.0.0.1:0"), 0);
    udp_peer pinger = {.base = PL_FUTURE_INIT(&udp_peer_vt), .sock = &a, .is_pinger = true};
    udp_peer ponger = {.base = PL_FUTURE_INIT(&udp_peer_vt), .sock = &b};
    cr_assert_eq(pl_udp_local_addr(&b, &pinger.peer, &pinger.peer_len), 0);
    struct sockaddr_storage a_addr;
    socklen_t a_len;
    cr_assert_eq(pl_udp_local_addr(&a, &a_addr, &a_len), 0);
    pl_task *tp;
    pl_task *tq;
    /* The receiver is spawned first so it parks before anything is sent. */
    spawn(ex, &ponger.base, sizeof ponger, &tq);
    spawn(ex, &pinger.base, sizeof pinger, &tp);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(((udp_peer *)pl_task_future(tq))->from_port,
                 pl_addr_port((struct sockaddr *)&a_addr));
    cr_assert_eq(((udp_peer *)pl_task_future(tp))->from_port,
                 pl_addr_port((struct sockaddr *)&pinger.peer));
    cr_assert_null(a.src);
    cr_assert_null(b.src);
    pl_task_release(tp);
    pl_task_release(tq);
    pl_executor_destroy(ex);
    cr_assert_eq(count_fds(), fds);
}

/* ---- Pipes ---------------------------------------------------------------------- */

enum { PIPE_BIG_LEN = 1 << 20 };

/* Writes `len` pattern bytes with write_all, then closes the writer. */
typedef struct pipe_writer_task {
    pl_future base;
    pl_pipe_writer *w;
    const uint8_t *data;
    size_t len;
    pl_io_write_all wr;
} pipe_writer_task;

static pl_poll_result pipe_writer_poll(pl_future *f, pl_context *cx)
{
    pipe_writer_task *self = (pipe_writer_task *)f;
    PL_ASYNC_BEGIN(self);
    self->wr = pl_pipe_write_all(self->w, self->data, self->len);
    PL_AWAIT(cx, &self->wr);
    cr_assert_eq(self->wr.result, (ssize_t)self->len);
    pl_pipe_writer_close(self->w);
    PL_ASYNC_END;
}

static const pl_future_vtable pipe_writer_vt = {"pipe_writer", pipe_writer_poll, NULL};

/* Reads until EOF, checking the pattern, then closes the reader. */
typedef struct pipe_reader_task {
    pl_future base;
    pl_pipe_reader *r;
    pl_io_read rd;
    uint8_t buf[4096];
    size_t total;
    size_t mismatches;
    unsigned reads;
    ssize_t last;
} pipe_reader_task;

static pl_poll_result pipe_reader_poll(pl_future *f, pl_context *cx)
{
    pipe_reader_task *self = (pipe_reader_task *)f;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->rd = pl_pipe_read(self->r, self->buf, sizeof self->buf);
        PL_AWAIT(cx, &self->rd);
        self->last = self->rd.result;
        if (self->rd.result <= 0) {
            break;
        }
        self->reads++;
        for (ssize_t i = 0; i < self->rd.result; i++) {
            self->mismatches += self->buf[i] != pattern_byte(self->total + (size_t)i);
        }
        self->total += (size_t)self->rd.result;
    }
    pl_pipe_reader_close(self->r);
    PL_ASYNC_END;
}

static const pl_future_vtable pipe_reader_vt = {"pipe_reader", pipe_reader_poll, NULL};

static void run_pipe(size_t len)
{
    int fds = count_fds();
    uint8_t *data = malloc(len + 1);
    cr_assert_not_null(data);
    fill_pattern(data, len);
    pl_executor *ex = new_executor(false);
    pl_pipe_reader r;
    pl_pipe_writer w;
    cr_assert_eq(pl_pipe_open(ex, &r, &w), 0);
    pipe_reader_task rt = {.base = PL_FUTURE_INIT(&pipe_reader_vt), .r = &r};
    pipe_writer_task wt = {.base = PL_FUTURE_INIT(&pipe_writer_vt), .w = &w, .data = data,
                           .len = len};
    pl_task *trd;
    spawn(ex, &rt.base, sizeof rt, &trd);
    spawn(ex, &wt.base, sizeof wt, NULL);
    cr_assert_eq(pl_run(ex), 0);
    pipe_reader_task *ro = pl_task_future(trd);
    cr_assert_eq(ro->last, 0, "EOF after the writer closed, got %zd", ro->last);
    cr_assert_eq(ro->total, len);
    cr_assert_eq(ro->mismatches, 0);
    pl_task_release(trd);
    pl_executor_destroy(ex);
    free(data);
    cr_assert_eq(count_fds(), fds);
}

Test(io, pipe_read_write_then_eof)
{
    run_pipe(5);
}

Test(io, pipe_large_transfer_parks_the_writer)
{
    /* 1 MiB through a 64 KiB pipe: the writer must wait for the reader. */
    run_pipe(PIPE_BIG_LEN);
}

Test(io, pipe_write_after_reader_closed_is_epipe_without_sigpipe)
{
    int fds = count_fds();
    pl_executor *ex = new_executor(false);
    pl_pipe_reader r;
    pl_pipe_writer w;
    cr_assert_eq(pl_pipe_open(ex, &r, &w), 0);
    pl_pipe_reader_close(&r);
    cr_assert_null(r.src);
    pl_io_write wr = pl_pipe_write(&w, "x", 1);
    then_close tc = {PL_FUTURE_INIT(&then_close_vt), &wr.base, {close_writer, NULL}, {&w, NULL}};
    cr_assert_eq(PL_BLOCK_ON(ex, tc), 0);
    cr_assert_eq(wr.result, PL_EPIPE, "got %s", pl_err_name((int)wr.result));
    cr_assert_null(w.src);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    cr_assert_eq(sigismember(&pending, SIGPIPE), 0, "no SIGPIPE left pending");
    pl_executor_destroy(ex);
    cr_assert_eq(count_fds(), fds);
}

/* ---- Background work parked on I/O ------------------------------------------ */

/* A server's loop: reads a pipe nobody writes, for as long as it lives. */
typedef struct idle_reader {
    pl_future base;
    pl_pipe_reader *r;
    pl_io_read rd;
    uint8_t buf[8];
} idle_reader;

static pl_poll_result idle_reader_poll(pl_future *f, pl_context *cx)
{
    idle_reader *self = (idle_reader *)f;
    PL_ASYNC_BEGIN(self);
    self->rd = pl_pipe_read(self->r, self->buf, sizeof self->buf);
    PL_AWAIT(cx, &self->rd);
    PL_ASYNC_END;
}

static void idle_reader_drop(pl_future *f) { pl_drop_child(&((idle_reader *)f)->rd.base); }

static const pl_future_vtable idle_reader_vt = {"idle_reader", idle_reader_poll,
                                                idle_reader_drop};

/* The program's one piece of foreground work: it yields past a tick's
 * poll budget, so it ends in a later tick than the one whose I/O check
 * collected the pipe's first readiness (the writer's): nothing is left
 * to wake a wait. */
typedef struct yield_past_tick {
    pl_future base;
    int yields;
} yield_past_tick;

static pl_poll_result yield_past_tick_poll(pl_future *f, pl_context *cx)
{
    yield_past_tick *self = (yield_past_tick *)f;
    if (self->yields-- > 0) {
        pl_waker_wake_by_ref(&cx->waker);
        return PL_PENDING;
    }
    return PL_READY;
}

static const pl_future_vtable yield_past_tick_vt = {"yield_past_tick", yield_past_tick_poll,
                                                    NULL};

/* pl_run returns once the last foreground task finished, even when that
 * happens in a tick whose background work then waits on I/O that never
 * comes (it used to block in the system's wait for good). */
Test(io, run_returns_when_only_background_io_waits_are_left)
{
    int fds = count_fds();
    pl_executor *ex = new_executor(false);
    pl_pipe_reader r;
    pl_pipe_writer w;
    cr_assert_eq(pl_pipe_open(ex, &r, &w), 0);
    idle_reader ir = {.base = PL_FUTURE_INIT(&idle_reader_vt), .r = &r};
    yield_past_tick fg = {.base = PL_FUTURE_INIT(&yield_past_tick_vt), .yields = 300};
    pl_task *bg;
    spawn(ex, &ir.base, sizeof ir, &bg);
    pl_task_set_background(bg, true);
    spawn(ex, &fg.base, sizeof fg, NULL);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_not(pl_task_is_finished(bg), "the background reader still waits");
    pl_executor_cancel_all(ex);
    pl_task_release(bg);
    pl_pipe_reader_close(&r);
    pl_pipe_writer_close(&w);
    pl_executor_destroy(ex);
    cr_assert_eq(count_fds(), fds);
}

/* ---- Waker replacement and release ------------------------------------------------ */

/* Reads a pipe while a short sleep re-polls the task: with rotated wakers
 * the read must replace the waker it stored on the first poll, or the data
 * arriving later would wake a superseded waker and be lost. */
typedef struct rotating_reader {
    pl_future base;
    pl_pipe_reader *r;
    pl_sleep nap;
    pl_io_read rd;
    pl_timeout guard;
    bool started;
    bool napped;
    char buf[8];
    int polls;
} rotating_reader;

static pl_poll_result rotating_reader_poll(pl_future *f, pl_context *cx)
{
    rotating_reader *self = (rotating_reader *)f;
    self->polls++;
    if (!self->started) {
        self->started = true;
        self->rd = pl_pipe_read(self->r, self->buf, sizeof self->buf);
        self->guard = pl_timeout_make(&self->rd.base, 5 * PL_S);
        self->nap = pl_sleep_for(10 * PL_MS);
    }
    if (!self->napped && pl_poll(&self->nap.base, cx) == PL_READY) {
        self->napped = true;
    }
    if (pl_poll(&self->guard.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    if (!self->napped) {
        pl_drop(&self->nap.base);
    }
    pl_pipe_reader_close(self->r);
    return PL_READY;
}

static const pl_future_vtable rotating_reader_vt = {"rotating_reader", rotating_reader_poll,
                                                    NULL};

/* Sleeps, then writes one byte and closes the writer. */
typedef struct late_writer {
    pl_future base;
    pl_pipe_writer *w;
    pl_sleep nap;
    pl_io_write wr;
} late_writer;

static pl_poll_result late_writer_poll(pl_future *f, pl_context *cx)
{
    late_writer *self = (late_writer *)f;
    PL_ASYNC_BEGIN(self);
    self->nap = pl_sleep_for(60 * PL_MS);
    PL_AWAIT(cx, &self->nap);
    self->wr = pl_pipe_write(self->w, "z", 1);
    PL_AWAIT(cx, &self->wr);
    cr_assert_eq(self->wr.result, 1);
    pl_pipe_writer_close(self->w);
    PL_ASYNC_END;
}

static const pl_future_vtable late_writer_vt = {"late_writer", late_writer_poll, NULL};

Test(io, a_repolled_read_replaces_its_rotated_waker)
{
    pl_executor *ex = new_executor(true);
    pl_pipe_reader r;
    pl_pipe_writer w;
    cr_assert_eq(pl_pipe_open(ex, &r, &w), 0);
    rotating_reader rr = {.base = PL_FUTURE_INIT(&rotating_reader_vt), .r = &r};
    late_writer lw = {.base = PL_FUTURE_INIT(&late_writer_vt), .w = &w};
    pl_task *t;
    spawn(ex, &rr.base, sizeof rr, &t);
    spawn(ex, &lw.base, sizeof lw, NULL);
    cr_assert_eq(pl_run(ex), 0);
    rotating_reader *ro = pl_task_future(t);
    cr_assert(ro->napped);
    cr_assert_eq(ro->guard.result, 0, "the read was never woken: %s",
                 pl_err_name(ro->guard.result));
    cr_assert_eq(ro->rd.result, 1);
    cr_assert_eq(ro->buf[0], 'z');
    cr_assert_geq(ro->polls, 3, "first poll, the nap, the data");
    pl_task_release(t);
    pl_executor_destroy(ex);
}

/* A read that times out is dropped and must take its waker out of the
 * source, or the task would be kept alive by the registration. */
typedef struct timed_read {
    pl_future base;
    pl_pipe_reader *r;
    pl_io_read rd;
    pl_timeout guard;
    bool started;
    char buf[8];
    bool slot_was_set;
    bool slot_is_set;
} timed_read;

static pl_poll_result timed_read_poll(pl_future *f, pl_context *cx)
{
    timed_read *self = (timed_read *)f;
    if (!self->started) {
        self->started = true;
        self->rd = pl_pipe_read(self->r, self->buf, sizeof self->buf);
        self->guard = pl_timeout_make(&self->rd.base, 20 * PL_MS);
    }
    if (pl_poll(&self->guard.base, cx) == PL_PENDING) {
        self->slot_was_set |= pl_waker_is_set(&self->r->src->read_waker);
        return PL_PENDING;
    }
    self->slot_is_set = pl_waker_is_set(&self->r->src->read_waker);
    return PL_READY;
}

static const pl_future_vtable timed_read_vt = {"timed_read", timed_read_poll, NULL};

Test(io, a_dropped_read_releases_its_waker)
{
    int fds = count_fds();
    pl_executor *ex = new_executor(false);
    pl_pipe_reader r;
    pl_pipe_writer w;
    cr_assert_eq(pl_pipe_open(ex, &r, &w), 0);
    timed_read tr = {.base = PL_FUTURE_INIT(&timed_read_vt), .r = &r};
    then_close tc = {PL_FUTURE_INIT(&then_close_vt), &tr.base, {close_reader, close_writer},
                     {&r, &w}};
    cr_assert_eq(PL_BLOCK_ON(ex, tc), 0);
    cr_assert_eq(tr.guard.result, PL_ETIMEDOUT);
    cr_assert(tr.slot_was_set, "the pending read stored a waker");
    cr_assert_not(tr.slot_is_set, "dropping the read released it");
    pl_executor_destroy(ex);
    cr_assert_eq(count_fds(), fds);
}

/* ---- Generic fd ------------------------------------------------------------------ */

typedef struct fd_waiter {
    pl_future base;
    pl_io_fd *io;
    pl_io_ready ready;
    char buf[16];
    ssize_t n;
    int released;
} fd_waiter;

static pl_poll_result fd_waiter_poll(pl_future *f, pl_context *cx)
{
    fd_waiter *self = (fd_waiter *)f;
    PL_ASYNC_BEGIN(self);
    self->ready = pl_io_fd_readable(self->io);
    PL_AWAIT(cx, &self->ready);
    cr_assert(self->ready.ready & PL_IO_READABLE);
    /* The caller does the operation itself, on its own fd. */
    self->n = read(pl_io_fd_handle(self->io), self->buf, sizeof self->buf);
    cr_assert_eq(read(pl_io_fd_handle(self->io), self->buf, 1), -1);
    pl_io_fd_clear_ready(self->io, PL_IO_READABLE);
    /* Nothing is pending any more, and the next wait must park again. */
    self->ready = pl_io_fd_readable(self->io);
    cr_assert_eq(pl_poll(&self->ready.base, cx), PL_PENDING);
    pl_drop(&self->ready.base);
    cr_assert_not(pl_waker_is_set(&self->io->src->read_waker));
    self->released = pl_io_fd_take(self->io);
    PL_ASYNC_END;
}

static const pl_future_vtable fd_waiter_vt = {"fd_waiter", fd_waiter_poll, NULL};

Test(io, io_fd_readiness_on_a_wrapped_socketpair)
{
    int fds = count_fds();
    pl_executor *ex = new_executor(false);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    pl_io_fd io;
    cr_assert_eq(pl_io_fd_open(ex, &io, sv[0]), 0);
    cr_assert_eq(pl_io_fd_handle(&io), sv[0]);
    cr_assert_eq(write(sv[1], "abc", 3), 3);
    fd_waiter fw = {.base = PL_FUTURE_INIT(&fd_waiter_vt), .io = &io};
    cr_assert_eq(PL_BLOCK_ON(ex, fw), 0);
    cr_assert_eq(fw.n, 3);
    cr_assert_eq(memcmp(fw.buf, "abc", 3), 0);
    cr_assert_eq(fw.released, sv[0], "release hands the fd back");
    cr_assert_eq(pl_io_fd_handle(&io), PL_EBADF);
    cr_assert_eq(pl_run(ex), 0, "nothing registered any more");
    pl_executor_destroy(ex);
    cr_assert_eq(fcntl(sv[0], F_GETFD), FD_CLOEXEC, "still open after release");
    close(sv[0]);
    close(sv[1]);
    cr_assert_eq(count_fds(), fds);
}

Test(io, io_fd_close_closes_the_handle)
{
    pl_executor *ex = new_executor(false);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    pl_io_fd io;
    cr_assert_eq(pl_io_fd_open(ex, &io, sv[0]), 0);
    pl_io_fd_close(&io);
    cr_assert_null(io.src);
    cr_assert_eq(fcntl(sv[0], F_GETFD), -1, "closed by pl_io_fd_close");
    pl_io_fd_close(&io);
    cr_assert_eq(pl_io_fd_take(&io), PL_EBADF);
    close(sv[1]);
    cr_assert_eq(pl_run(ex), 0);
    pl_executor_destroy(ex);
}

/* ---- Bad arguments --------------------------------------------------------------- */

Test(io, bad_fds_are_ebadf)
{
    pl_executor *ex = new_executor(false);
    pl_io_fd io;
    cr_assert_eq(pl_io_fd_open(ex, &io, -1), PL_EBADF);
    cr_assert_null(io.src);
    /* A number no fd uses. */
    int unused = dup(0);
    cr_assert_geq(unused, 0);
    close(unused);
    cr_assert_eq(pl_io_fd_open(ex, &io, unused), PL_EBADF);
    cr_assert_null(io.src);
    /* Futures on a closed object complete with PL_EBADF. */
    pl_tcp_stream closed = {NULL};
    char buf[4];
    pl_io_read rd = pl_tcp_read(&closed, buf, sizeof buf);
    cr_assert_eq(PL_BLOCK_ON(ex, rd), 0);
    cr_assert_eq(rd.result, PL_EBADF);
    pl_io_write_all wa = pl_tcp_write_all(&closed, buf, sizeof buf);
    cr_assert_eq(PL_BLOCK_ON(ex, wa), 0);
    cr_assert_eq(wa.result, PL_EBADF);
    cr_assert_eq(pl_tcp_shutdown(&closed, SHUT_WR), PL_EBADF);
    struct sockaddr_storage ss;
    socklen_t len;
    cr_assert_eq(pl_tcp_local_addr(&closed, &ss, &len), PL_EBADF);
    pl_tcp_close(&closed);
    pl_tcp_close(NULL);
    cr_assert_eq(pl_run(ex), 0);
    pl_executor_destroy(ex);
}

Test(io, bad_address_strings_are_einval)
{
    const char *bad[] = {"",          "127.0.0.1",     "127.0.0.1:",  "127.0.0.1:65536",
                         "1.2.3:80",  "1.2.3.4.5:80",  "localhost:80", "127.0.0.1:8x",
                         ":80",       "127.0.0.1:-1",  "[::1]",        "[::1]:",
                         "[::1:80",   "[::1]80",       "[zz]:1",       "[]:1",
                         "::1:80",    "127.0.0.1:123456"};
    struct sockaddr_storage ss;
    socklen_t len = 99;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(pl_addr_parse(bad[i], &ss, &len), PL_EINVAL, "accepted \"%s\"", bad[i]);
        cr_assert_eq(len, 0);
    }
    cr_assert_eq(pl_addr_parse(NULL, &ss, &len), PL_EINVAL);

    pl_executor *ex = new_executor(false);
    pl_tcp_listener l;
    cr_assert_eq(pl_tcp_listen_str(ex, &l, "nope", 0), PL_EINVAL);
    cr_assert_null(l.src);
    cr_assert_eq(pl_tcp_listen(ex, &l, NULL, 0, 0), PL_EINVAL);
    pl_udp_socket u;
    cr_assert_eq(pl_udp_bind_str(ex, &u, "[::1"), PL_EINVAL);
    cr_assert_null(u.src);
    pl_tcp_connect c = pl_tcp_connect_str("256.0.0.1:80");
    cr_assert_eq(PL_BLOCK_ON(ex, c), 0);
    cr_assert_eq(c.result, PL_EINVAL);
    /* A datagram to no address. */
    cr_assert_eq(pl_udp_bind_str(ex, &u, "127.0.0.1:0"), 0);
    pl_udp_send s = pl_udp_send_to(&u, "x", 1, NULL, 0);
    then_close tc = {PL_FUTURE_INIT(&then_close_vt), &s.base, {close_udp, NULL}, {&u, NULL}};
    cr_assert_eq(PL_BLOCK_ON(ex, tc), 0);
    cr_assert_eq(s.result, PL_EINVAL);
    cr_assert_eq(pl_run(ex), 0);
    pl_executor_destroy(ex);
}

Test(io, address_parse_and_format_round_trip)
{
    const char *good[] = {"127.0.0.1:8080", "0.0.0.0:0", "255.255.255.255:65535", "[::1]:0",
                          "[::]:443", "[fe80::1:2]:9"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        struct sockaddr_storage ss;
        socklen_t len;
        cr_assert_eq(pl_addr_parse(good[i], &ss, &len), 0, "rejected \"%s\"", good[i]);
        char text[PL_ADDR_STRLEN];
        cr_assert_eq(pl_addr_format((struct sockaddr *)&ss, text, sizeof text), 0);
        cr_assert_str_eq(text, good[i]);
    }
    struct sockaddr_storage ss;
    socklen_t len;
    cr_assert_eq(pl_addr_parse("10.1.2.3:8080", &ss, &len), 0);
    cr_assert_eq(ss.ss_family, AF_INET);
    cr_assert_eq(len, sizeof(struct sockaddr_in));
    cr_assert_eq(pl_addr_port((struct sockaddr *)&ss), 8080);
    cr_assert_eq(pl_addr_parse("[::1]:65535", &ss, &len), 0);
    cr_assert_eq(ss.ss_family, AF_INET6);
    cr_assert_eq(len, sizeof(struct sockaddr_in6));
    cr_assert_eq(pl_addr_port((struct sockaddr *)&ss), 65535);
    char small[8];
    cr_assert_eq(pl_addr_format((struct sockaddr *)&ss, small, sizeof small), PL_EMSGSIZE);
    ss.ss_family = AF_UNIX;
    cr_assert_eq(pl_addr_format((struct sockaddr *)&ss, small, sizeof small), PL_EINVAL);
    cr_assert_eq(pl_addr_port((struct sockaddr *)&ss), PL_EINVAL);
    cr_assert_eq(pl_addr_port(NULL), PL_EINVAL);
}
