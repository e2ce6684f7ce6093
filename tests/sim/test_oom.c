/* Out of memory in the simulator: pl_sim_run of scenarios with timers,
 * with I/O, with a lost wakeup and with a buggify site, and the replay
 * parser, each run again with the N-th allocation failing for every N up
 * to the run's allocation count.
 *
 * The simulator allocates with malloc, calloc and realloc; this binary
 * links with --wrap for the three (tests/failalloc.h), so the N-th call
 * made by pollen (simulator and executor alike) fails. Every failure
 * must end in an error code or a finding that says "out of memory":
 * never a hang, a crash, a leak, or another finding (a lost wakeup must
 * not become a deadlock, a buggify site must not silently switch off).
 * Each sweep tries every N: a run makes at most about a hundred
 * allocations and takes well under a millisecond, so no sampling is
 * needed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <pollen/io.h>
#include <pollen/sim.h>
#include <pollen/sync.h>
#include <pollen/timer.h>

#include "failalloc.h"
#include "leakcheck.h"
#include "replay.h"
#include "run_record.h"
#include "sim_internal.h"

TestSuite(sim_oom, .fini = pl_test_leak_check, .timeout = 300);

/* ---- Scenario: timers ------------------------------------------------ */

enum { TIES = 70 }; /* more than the first heap, task table and batch hold */

typedef struct timers_state {
    int slept;
    int ticks;
    int timed_out;
    pl_notify never;
} timers_state;

/* Two sleeps to deadlines every sleeper shares: batches of equal
 * deadlines, larger than the first batch buffer. */
typedef struct sleeper {
    pl_future base;
    timers_state *st;
    pl_sleep sleep;
} sleeper;

static pl_poll_result sleeper_poll(pl_future *f, pl_context *cx)
{
    sleeper *self = (sleeper *)f;
    PL_ASYNC_BEGIN(self);
    self->sleep = pl_sleep_until(PL_MS);
    PL_AWAIT(cx, &self->sleep);
    self->sleep = pl_sleep_until(2 * PL_MS);
    PL_AWAIT(cx, &self->sleep);
    self->st->slept++;
    PL_ASYNC_END;
}

static void sleeper_drop(pl_future *f) { pl_drop_child(&((sleeper *)f)->sleep.base); }

static const pl_future_vtable sleeper_vt = {"sleeper", sleeper_poll, sleeper_drop};

/* Three interval ticks, then a timeout on a notify nobody signals. */
typedef struct ticker {
    pl_future base;
    timers_state *st;
    pl_interval iv;
    pl_interval_tick tick;
    pl_notified wait;
    pl_timeout timeout;
} ticker;

static pl_poll_result ticker_poll(pl_future *f, pl_context *cx)
{
    ticker *self = (ticker *)f;
    PL_ASYNC_BEGIN(self);
    self->iv = pl_interval_make(PL_MS);
    while (self->st->ticks < 3) {
        self->tick = pl_interval_tick_make(&self->iv);
        PL_AWAIT(cx, &self->tick);
        self->st->ticks++;
    }
    self->wait = pl_notified_make(&self->st->never);
    self->timeout = pl_timeout_make(&self->wait.base, 2 * PL_MS);
    PL_AWAIT(cx, &self->timeout);
    self->st->timed_out = self->timeout.result == PL_ETIMEDOUT;
    PL_ASYNC_END;
}

static void ticker_drop(pl_future *f)
{
    ticker *self = (ticker *)f;
    pl_drop_child(&self->tick.base);
    pl_drop_child(&self->timeout.base);
}

static const pl_future_vtable ticker_vt = {"ticker", ticker_poll, ticker_drop};

static int timers_setup(pl_executor *ex, void *state)
{
    timers_state *st = state;
    pl_notify_init(&st->never);
    for (int i = 0; i < TIES; i++) {
        sleeper s = {.base = PL_FUTURE_INIT(&sleeper_vt), .st = st};
        int rc = PL_SPAWN(ex, s, "sleeper", NULL);
        if (rc != 0) {
            return rc;
        }
    }
    ticker t = {.base = PL_FUTURE_INIT(&ticker_vt), .st = st};
    return PL_SPAWN(ex, t, "ticker", NULL);
}

static int timers_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    timers_state *st = state;
    if (st->slept != TIES || st->ticks != 3 || !st->timed_out) {
        return pl_check_fail(msg, len, "slept %d of %d, %d ticks, timed out: %d", st->slept, TIES,
                             st->ticks, st->timed_out);
    }
    return 0;
}

PL_SCENARIO(oom_timers, .name = "oom_timers", .summary = "equal deadlines, interval, timeout",
            .state_size = sizeof(timers_state), .setup = timers_setup, .check = timers_check);

/* ---- Scenario: a pipe ------------------------------------------------ */

enum { CHUNK = 64, CHUNKS = 4 };

typedef struct pipe_state {
    pl_pipe_reader r;
    pl_pipe_writer w;
    unsigned char out[CHUNK];
    unsigned char in[CHUNK];
    size_t read;
    unsigned sum;
    ssize_t error; /* the first I/O error, which the check reports */
} pipe_state;

typedef struct writer {
    pl_future base;
    pipe_state *st;
    int i;
    pl_io_write_all write;
} writer;

static pl_poll_result writer_poll(pl_future *f, pl_context *cx)
{
    writer *self = (writer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < CHUNKS; self->i++) {
        self->write = pl_pipe_write_all(&self->st->w, self->st->out, CHUNK);
        PL_AWAIT(cx, &self->write);
        if (self->write.result != CHUNK) {
            self->st->error = self->write.result;
            break;
        }
    }
    pl_pipe_writer_close(&self->st->w);
    PL_ASYNC_END;
}

static void writer_drop(pl_future *f) { pl_drop_child(&((writer *)f)->write.base); }

static const pl_future_vtable writer_vt = {"writer", writer_poll, writer_drop};

typedef struct reader {
    pl_future base;
    pipe_state *st;
    pl_io_read read;
} reader;

static pl_poll_result reader_poll(pl_future *f, pl_context *cx)
{
    reader *self = (reader *)f;
    pipe_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->read = pl_pipe_read(&st->r, st->in, sizeof st->in);
        PL_AWAIT(cx, &self->read);
        if (self->read.result <= 0) {
            break;
        }
        for (ssize_t i = 0; i < self->read.result; i++) {
            st->sum += st->in[i];
        }
        st->read += (size_t)self->read.result;
    }
    if (self->read.result < 0 && st->error == 0) {
        st->error = self->read.result;
    }
    pl_pipe_reader_close(&st->r);
    PL_ASYNC_END;
}

static void reader_drop(pl_future *f) { pl_drop_child(&((reader *)f)->read.base); }

static const pl_future_vtable reader_vt = {"reader", reader_poll, reader_drop};

static int pipe_setup(pl_executor *ex, void *state)
{
    pipe_state *st = state;
    for (int i = 0; i < CHUNK; i++) {
        st->out[i] = (unsigned char)i;
    }
    int rc = pl_pipe_open(ex, &st->r, &st->w);
    if (rc != 0) {
        return rc;
    }
    writer w = {.base = PL_FUTURE_INIT(&writer_vt), .st = st};
    reader r = {.base = PL_FUTURE_INIT(&reader_vt), .st = st};
    rc = PL_SPAWN(ex, w, "writer", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, r, "reader", NULL);
}

static int pipe_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    pipe_state *st = state;
    unsigned want = CHUNKS * (CHUNK * (CHUNK - 1) / 2);
    if (st->error != 0) {
        return pl_check_fail(msg, len, "I/O failed: %s", pl_strerror((int)st->error));
    }
    if (st->read != (size_t)CHUNKS * CHUNK || st->sum != want) {
        return pl_check_fail(msg, len, "read %zu bytes summing to %u", st->read, st->sum);
    }
    return 0;
}

/* Whatever a stopped run left open. */
static void pipe_teardown(void *state)
{
    pipe_state *st = state;
    pl_pipe_reader_close(&st->r);
    pl_pipe_writer_close(&st->w);
}

PL_SCENARIO(oom_pipe, .name = "oom_pipe", .summary = "a writer and a reader on a pipe",
            .state_size = sizeof(pipe_state), .setup = pipe_setup, .check = pipe_check,
            .teardown = pipe_teardown);

/* The writer closes at once: the reader must see the end of stream. */
typedef struct closer {
    pl_future base;
    pipe_state *st;
} closer;

static pl_poll_result closer_poll(pl_future *f, pl_context *cx)
{
    pl_pipe_writer_close(&((closer *)f)->st->w);
    return PL_READY;
}

static const pl_future_vtable closer_vt = {"closer", closer_poll, NULL};

static int empty_pipe_setup(pl_executor *ex, void *state)
{
    pipe_state *st = state;
    int rc = pl_pipe_open(ex, &st->r, &st->w);
    if (rc != 0) {
        return rc;
    }
    closer c = {.base = PL_FUTURE_INIT(&closer_vt), .st = st};
    reader r = {.base = PL_FUTURE_INIT(&reader_vt), .st = st};
    rc = PL_SPAWN(ex, c, "closer", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, r, "reader", NULL);
}

static int empty_pipe_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    pipe_state *st = state;
    if (st->error != 0 || st->read != 0) {
        return pl_check_fail(msg, len, "read %zu bytes, error: %s", st->read,
                             pl_strerror((int)st->error));
    }
    return 0;
}

PL_SCENARIO(oom_pipe_empty, .name = "oom_pipe_empty", .summary = "a pipe closed unwritten",
            .state_size = sizeof(pipe_state), .setup = empty_pipe_setup, .check = empty_pipe_check,
            .teardown = pipe_teardown);

/* ---- Scenario: TCP echo ----------------------------------------------- */

enum { ECHO = 48 };

typedef struct echo_state {
    pl_tcp_listener listener;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    pl_tcp_stream served; /* the server's end, once accepted */
    pl_tcp_stream client; /* the client's end, once connected */
    unsigned char msg[ECHO];
    unsigned char got[ECHO];
    size_t got_len;
    int server_error;
    int client_error;
} echo_state;

/* Accepts one connection, reads until end of stream, echoes it back. */
typedef struct echo_server {
    pl_future base;
    echo_state *st;
    unsigned char buf[ECHO];
    size_t len;
    pl_tcp_accept accept;
    pl_timeout timeout;
    pl_io_read read;
    pl_io_write_all write;
} echo_server;

static pl_poll_result echo_server_poll(pl_future *f, pl_context *cx)
{
    echo_server *self = (echo_server *)f;
    echo_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    /* Bounded: a client that failed to connect must not leave the server
     * waiting forever, which would be a true deadlock of this program. */
    self->accept = pl_tcp_accept_make(&st->listener);
    self->timeout = pl_timeout_make(&self->accept.base, 100 * PL_MS);
    PL_AWAIT(cx, &self->timeout);
    pl_tcp_listener_close(&st->listener);
    if (self->timeout.result != 0 || self->accept.result != 0) {
        st->server_error = self->timeout.result != 0 ? self->timeout.result : self->accept.result;
        return PL_READY;
    }
    st->served = pl_tcp_accept_take(&self->accept);
    for (;;) {
        self->read = pl_tcp_read(&st->served, self->buf + self->len, ECHO - self->len);
        PL_AWAIT(cx, &self->read);
        if (self->read.result <= 0 || (self->len += (size_t)self->read.result) == ECHO) {
            break;
        }
    }
    if (self->read.result < 0) {
        st->server_error = (int)self->read.result;
    } else {
        self->write = pl_tcp_write_all(&st->served, self->buf, self->len);
        PL_AWAIT(cx, &self->write);
        st->server_error = self->write.result < 0 ? (int)self->write.result : 0;
    }
    pl_tcp_close(&st->served);
    PL_ASYNC_END;
}

static void echo_server_drop(pl_future *f)
{
    echo_server *self = (echo_server *)f;
    pl_drop_child(&self->timeout.base);
    pl_drop_child(&self->read.base);
    pl_drop_child(&self->write.base);
}

static const pl_future_vtable echo_server_vt = {"echo_server", echo_server_poll, echo_server_drop};

/* Connects, sends the message, shuts its side down, reads the echo. */
typedef struct echo_client {
    pl_future base;
    echo_state *st;
    pl_tcp_connect connect;
    pl_io_write_all write;
    pl_io_read read;
} echo_client;

static pl_poll_result echo_client_poll(pl_future *f, pl_context *cx)
{
    echo_client *self = (echo_client *)f;
    echo_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    self->connect = pl_tcp_connect_make((const struct sockaddr *)&st->addr, st->addr_len);
    PL_AWAIT(cx, &self->connect);
    if (self->connect.result != 0) {
        st->client_error = self->connect.result;
        return PL_READY;
    }
    st->client = pl_tcp_connect_take(&self->connect);
    self->write = pl_tcp_write_all(&st->client, st->msg, ECHO);
    PL_AWAIT(cx, &self->write);
    st->client_error =
        self->write.result < 0 ? (int)self->write.result : pl_tcp_shutdown(&st->client, SHUT_WR);
    while (st->client_error == 0 && st->got_len < ECHO) {
        self->read = pl_tcp_read(&st->client, st->got + st->got_len, ECHO - st->got_len);
        PL_AWAIT(cx, &self->read);
        if (self->read.result <= 0) {
            st->client_error = (int)self->read.result;
            break;
        }
        st->got_len += (size_t)self->read.result;
    }
    pl_tcp_close(&st->client);
    PL_ASYNC_END;
}

static void echo_client_drop(pl_future *f)
{
    echo_client *self = (echo_client *)f;
    pl_drop_child(&self->connect.base);
    pl_drop_child(&self->write.base);
    pl_drop_child(&self->read.base);
}

static const pl_future_vtable echo_client_vt = {"echo_client", echo_client_poll, echo_client_drop};

static int echo_setup(pl_executor *ex, void *state)
{
    echo_state *st = state;
    for (int i = 0; i < ECHO; i++) {
        st->msg[i] = (unsigned char)(3 * i + 1);
    }
    int rc = pl_tcp_listen_str(ex, &st->listener, "127.0.0.1:0", 0);
    if (rc == 0) {
        st->addr_len = sizeof st->addr;
        rc = pl_tcp_listener_local_addr(&st->listener, &st->addr, &st->addr_len);
    }
    if (rc != 0) {
        return rc;
    }
    echo_server srv = {.base = PL_FUTURE_INIT(&echo_server_vt), .st = st};
    echo_client cli = {.base = PL_FUTURE_INIT(&echo_client_vt), .st = st};
    rc = PL_SPAWN(ex, srv, "echo_server", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, cli, "echo_client", NULL);
}

static int echo_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    echo_state *st = state;
    if (st->server_error != 0 || st->client_error != 0) {
        return pl_check_fail(msg, len, "server: %s, client: %s", pl_strerror(st->server_error),
                             pl_strerror(st->client_error));
    }
    if (st->got_len != ECHO || memcmp(st->got, st->msg, ECHO) != 0) {
        return pl_check_fail(msg, len, "the echo came back as %zu bytes", st->got_len);
    }
    return 0;
}

static void echo_teardown(void *state)
{
    echo_state *st = state;
    pl_tcp_listener_close(&st->listener);
    pl_tcp_close(&st->served);
    pl_tcp_close(&st->client);
}

PL_SCENARIO(oom_echo, .name = "oom_echo", .summary = "a TCP echo", .state_size = sizeof(echo_state),
            .setup = echo_setup, .check = echo_check, .teardown = echo_teardown);

/* ---- Scenario: UDP datagrams ------------------------------------------ */

enum { DGRAMS = 4, DGRAM = 16 };

typedef struct udp_state {
    pl_udp_socket tx;
    pl_udp_socket rx;
    struct sockaddr_storage rx_addr;
    socklen_t rx_addr_len;
    unsigned char out[DGRAM];
    int received;
    int error;
} udp_state;

typedef struct udp_sender {
    pl_future base;
    udp_state *st;
    int i;
    pl_udp_send send;
} udp_sender;

static pl_poll_result udp_sender_poll(pl_future *f, pl_context *cx)
{
    udp_sender *self = (udp_sender *)f;
    udp_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < DGRAMS; self->i++) {
        self->send = pl_udp_send_to(&st->tx, st->out, DGRAM, (const struct sockaddr *)&st->rx_addr,
                                    st->rx_addr_len);
        PL_AWAIT(cx, &self->send);
        if (self->send.result != DGRAM) {
            st->error = self->send.result < 0 ? (int)self->send.result : PL_EMSGSIZE;
            break;
        }
    }
    pl_udp_close(&st->tx);
    PL_ASYNC_END;
}

static void udp_sender_drop(pl_future *f) { pl_drop_child(&((udp_sender *)f)->send.base); }

static const pl_future_vtable udp_sender_vt = {"udp_sender", udp_sender_poll, udp_sender_drop};

/* Receives until every datagram came or a quiet 50 ms passed. */
typedef struct udp_receiver {
    pl_future base;
    udp_state *st;
    unsigned char buf[DGRAM];
    pl_udp_recv recv;
    pl_timeout timeout;
} udp_receiver;

static pl_poll_result udp_receiver_poll(pl_future *f, pl_context *cx)
{
    udp_receiver *self = (udp_receiver *)f;
    udp_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    while (st->received < DGRAMS) {
        self->recv = pl_udp_recv_from(&st->rx, self->buf, sizeof self->buf);
        self->timeout = pl_timeout_make(&self->recv.base, 50 * PL_MS);
        PL_AWAIT(cx, &self->timeout);
        if (self->timeout.result != 0 || self->recv.result < 0) {
            if (st->error == 0) {
                st->error =
                    self->timeout.result != 0 ? self->timeout.result : (int)self->recv.result;
            }
            break;
        }
        st->received++;
    }
    pl_udp_close(&st->rx);
    PL_ASYNC_END;
}

static void udp_receiver_drop(pl_future *f) { pl_drop_child(&((udp_receiver *)f)->timeout.base); }

static const pl_future_vtable udp_receiver_vt = {"udp_receiver", udp_receiver_poll,
                                                 udp_receiver_drop};

static int udp_setup_on(pl_executor *ex, udp_state *st, const char *rx, const char *tx)
{
    int rc = pl_udp_bind_str(ex, &st->rx, rx);
    if (rc == 0) {
        st->rx_addr_len = sizeof st->rx_addr;
        rc = pl_udp_local_addr(&st->rx, &st->rx_addr, &st->rx_addr_len);
    }
    if (rc == 0) {
        rc = pl_udp_bind_str(ex, &st->tx, tx);
    }
    if (rc != 0) {
        return rc;
    }
    udp_sender snd = {.base = PL_FUTURE_INIT(&udp_sender_vt), .st = st};
    udp_receiver rcv = {.base = PL_FUTURE_INIT(&udp_receiver_vt), .st = st};
    rc = PL_SPAWN(ex, rcv, "udp_receiver", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, snd, "udp_sender", NULL);
}

static int udp_setup(pl_executor *ex, void *state)
{
    return udp_setup_on(ex, state, "127.0.0.1:0", "127.0.0.1:0");
}

/* The same across the link 10.0.0.1 -> 10.0.0.2 (its table, its copies). */
static int udp_hosts_setup(pl_executor *ex, void *state)
{
    return udp_setup_on(ex, state, "10.0.0.2:0", "10.0.0.1:0");
}

static int udp_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    udp_state *st = state;
    if (st->error != 0 || st->received != DGRAMS) {
        return pl_check_fail(msg, len, "received %d of %d datagrams: %s", st->received, DGRAMS,
                             pl_strerror(st->error));
    }
    return 0;
}

static void udp_teardown(void *state)
{
    udp_state *st = state;
    pl_udp_close(&st->tx);
    pl_udp_close(&st->rx);
}

PL_SCENARIO(oom_udp, .name = "oom_udp", .summary = "datagrams between two sockets",
            .state_size = sizeof(udp_state), .setup = udp_setup, .check = udp_check,
            .teardown = udp_teardown);
PL_SCENARIO(oom_udp_hosts, .name = "oom_udp_hosts", .summary = "datagrams between two hosts",
            .state_size = sizeof(udp_state), .setup = udp_hosts_setup, .check = udp_check,
            .teardown = udp_teardown);

/* ---- Scenario: a lost wakeup ----------------------------------------- */

/* The setter sets the flag after a sleep and forgets to wake the waiter,
 * which stored its waker and parks: at quiescence a probe finds that the
 * waiter could run, a lost wakeup at every seed. */
typedef struct flag_state {
    bool set;
    pl_waker waiter;
} flag_state;

typedef struct flag_waiter {
    pl_future base;
    flag_state *st;
} flag_waiter;

static pl_poll_result flag_waiter_poll(pl_future *f, pl_context *cx)
{
    flag_waiter *self = (flag_waiter *)f;
    if (self->st->set) {
        pl_waker_slot_clear(&self->st->waiter);
        return PL_READY;
    }
    pl_waker_slot_set(&self->st->waiter, &cx->waker);
    return PL_PENDING;
}

static void flag_waiter_drop(pl_future *f) { pl_waker_slot_clear(&((flag_waiter *)f)->st->waiter); }

static const pl_future_vtable flag_waiter_vt = {"flag_waiter", flag_waiter_poll, flag_waiter_drop};

typedef struct flag_setter {
    pl_future base;
    flag_state *st;
    pl_sleep sleep;
} flag_setter;

static pl_poll_result flag_setter_poll(pl_future *f, pl_context *cx)
{
    flag_setter *self = (flag_setter *)f;
    if (pl_poll(&self->sleep.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    self->st->set = true; /* BUG: no pl_waker_slot_wake(&st->waiter) */
    return PL_READY;
}

static void flag_setter_drop(pl_future *f) { pl_drop_child(&((flag_setter *)f)->sleep.base); }

static const pl_future_vtable flag_setter_vt = {"flag_setter", flag_setter_poll, flag_setter_drop};

static int flag_setup(pl_executor *ex, void *state)
{
    flag_state *st = state;
    flag_waiter w = {.base = PL_FUTURE_INIT(&flag_waiter_vt), .st = st};
    flag_setter s = {
        .base = PL_FUTURE_INIT(&flag_setter_vt), .st = st, .sleep = pl_sleep_for(PL_MS)};
    int rc = PL_SPAWN(ex, w, "flag_waiter", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, s, "flag_setter", NULL);
}

static void flag_teardown(void *state) { pl_waker_slot_clear(&((flag_state *)state)->waiter); }

PL_SCENARIO(oom_lost_wakeup, .name = "oom_lost_wakeup", .summary = "a set flag nobody signals",
            .state_size = sizeof(flag_state), .setup = flag_setup, .teardown = flag_teardown,
            .expect = "lost_wakeup");

/* ---- Scenario: a buggify site ---------------------------------------- */

/* Run with buggify sites always enabled and always firing: the check
 * fails if the site ever answered false. */
enum { BUGGIFY_CALLS = 3 };

typedef struct bug_state {
    int fired;
} bug_state;

typedef struct bugger {
    pl_future base;
    bug_state *st;
    int calls;
} bugger;

static pl_poll_result bugger_poll(pl_future *f, pl_context *cx)
{
    bugger *self = (bugger *)f;
    if (self->calls == BUGGIFY_CALLS) {
        return PL_READY;
    }
    self->calls++;
    self->st->fired += PL_BUGGIFY(cx);
    pl_waker_wake_by_ref(&cx->waker);
    return PL_PENDING;
}

static const pl_future_vtable bugger_vt = {"bugger", bugger_poll, NULL};

static int bug_setup(pl_executor *ex, void *state)
{
    bugger b = {.base = PL_FUTURE_INIT(&bugger_vt), .st = state};
    return PL_SPAWN(ex, b, "bugger", NULL);
}

static int bug_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    bug_state *st = state;
    if (st->fired != BUGGIFY_CALLS) {
        return pl_check_fail(msg, len, "buggify fired %d of %d times", st->fired, BUGGIFY_CALLS);
    }
    return 0;
}

PL_SCENARIO(oom_buggify, .name = "oom_buggify", .summary = "a buggify site always on",
            .state_size = sizeof(bug_state), .setup = bug_setup, .check = bug_check);

static const char *const always_buggify = "buggify_site=65536,buggify_fire=65536";

/* ---- Scenario: a pl_eventually that never holds ---------------------- */

/* Its site must be remembered to be reported: a site the simulator had
 * no memory for must not make the run pass. */
static pl_poll_result hopeful_poll(pl_future *f, pl_context *cx)
{
    pl_eventually(false, "the hopeful task's wish");
    return PL_READY;
}

static const pl_future_vtable hopeful_vt = {"hopeful", hopeful_poll, NULL};

static int hopeful_setup(pl_executor *ex, void *state)
{
    pl_future h = PL_FUTURE_INIT(&hopeful_vt);
    return pl_spawn(ex, &h, sizeof h, "hopeful", NULL);
}

PL_SCENARIO(oom_eventually, .name = "oom_eventually", .summary = "a wish never granted",
            .setup = hopeful_setup, .expect = "assertion");

/* ---- The sweep over pl_sim_run ---------------------------------------- */

/* One run's setting and the finding it must produce without failures. */
typedef struct run_spec {
    const char *scenario;
    uint64_t seed;
    const char *strategy; /* NULL: random */
    const char *knobs;    /* NULL: the defaults */
    pl_finding_kind want;
    bool persistent; /* every allocation from the N-th on fails, not only it */
} run_spec;

static void sim_options(pl_sim_options *o, const run_spec *spec)
{
    pl_sim_options_default(o);
    o->seed = spec->seed;
    if (spec->strategy != NULL) {
        o->strategy = spec->strategy;
    }
    o->knobs = spec->knobs;
    o->keep_events = true; /* the event log's growth fails too */
    /* A hang shows up as a livelock finding within a second, not as a
     * test that never ends. */
    o->steps_without_progress_max = 20000;
}

/* Runs the scenario with allocation n failing (0: none); returns the
 * allocations the run made. An outcome other than spec->want, an
 * out-of-memory error or an out-of-memory finding fails the test. */
static uint64_t run_failing(const pl_scenario *sc, const run_spec *spec, uint64_t n)
{
    pl_sim_options o;
    sim_options(&o, spec);
    pl_sim_result r;
    failalloc_arm(n, spec->persistent);
    int rc = pl_sim_run(sc, &o, &r);
    uint64_t calls = failalloc_disarm();
    bool failed = failalloc.failed > 0;
    pl_finding_kind got = r.finding.kind;
    bool oom = got == PL_FINDING_ASSERTION && strstr(r.finding.message, "out of memory");
    char message[sizeof r.finding.message];
    snprintf(message, sizeof message, "%s", r.finding.message);
    /* Replays and the shrinker read the record: it holds every decision
     * of the run, says it does not, or is missing (they handle NULL). */
    const pl__run_record *rec = pl__sim_result_record(&r);
    bool record_whole =
        rec == NULL || rec->decisions_truncated || rec->decisions_len == r.decisions;
    pl_sim_result_free(&r);
    cr_assert(record_whole, "%s, allocation %llu failing: the run's record lost its decisions",
              sc->name, (unsigned long long)n);
    cr_assert(rc == 0 || (rc == PL_ENOMEM && failed), "%s, allocation %llu failing: %s", sc->name,
              (unsigned long long)n, pl_err_name(rc));
    if (rc == 0) {
        cr_assert(got == spec->want || (failed && oom),
                  "%s, allocation %llu failing: finding %s, want %s or out of memory: %s", sc->name,
                  (unsigned long long)n, pl_finding_name(got), pl_finding_name(spec->want),
                  message);
    }
    return calls;
}

static void sweep(const run_spec *spec)
{
    const pl_scenario *sc = pl_scenario_find(spec->scenario);
    cr_assert_not_null(sc);
    uint64_t total = run_failing(sc, spec, 0);
    cr_assert_gt(total, 10,
                 "%s made %llu allocations: the allocation wrappers are not linked in "
                 "(the sweep needs static pollen libraries)",
                 sc->name, (unsigned long long)total);
    for (uint64_t n = 1; n <= total; n++) {
        run_failing(sc, spec, n);
    }
}

LEAK_TEST(sim_oom, timers)
{
    sweep(&(run_spec){"oom_timers", 3, NULL, NULL, PL_FINDING_NONE, false});
}

LEAK_TEST(sim_oom, timers_pct)
{
    sweep(&(run_spec){"oom_timers", 3, "pct:3", NULL, PL_FINDING_NONE, false});
}

LEAK_TEST(sim_oom, timers_swarm)
{
    sweep(&(run_spec){"oom_timers", 9, "swarm", NULL, PL_FINDING_NONE, false});
}

LEAK_TEST(sim_oom, pipe) { sweep(&(run_spec){"oom_pipe", 5, NULL, NULL, PL_FINDING_NONE, false}); }

LEAK_TEST(sim_oom, pipe_closed_unwritten)
{
    sweep(&(run_spec){"oom_pipe_empty", 5, NULL, NULL, PL_FINDING_NONE, false});
}

LEAK_TEST(sim_oom, tcp_echo)
{
    sweep(&(run_spec){"oom_echo", 6, NULL, NULL, PL_FINDING_NONE, false});
}

/* No I/O faults: a lost datagram is not what this sweep is about. */
LEAK_TEST(sim_oom, udp)
{
    sweep(&(run_spec){"oom_udp", 8, NULL, "io_fault=off", PL_FINDING_NONE, false});
    sweep(&(run_spec){"oom_udp_hosts", 8, NULL, "io_fault=off,link_loss=off,partition=off",
                      PL_FINDING_NONE, false});
}

/* oom_disk.c's scenario. */
LEAK_TEST(sim_oom, disk)
{
    sweep(&(run_spec){"oom_disk", 2, NULL, "disk_lose=65536", PL_FINDING_NONE, false});
    sweep(&(run_spec){"oom_disk", 2, NULL, "disk_lose=65536", PL_FINDING_NONE, true});
}

LEAK_TEST(sim_oom, lost_wakeup_stays_a_lost_wakeup)
{
    sweep(&(run_spec){"oom_lost_wakeup", 1, NULL, NULL, PL_FINDING_LOST_WAKEUP, false});
}

LEAK_TEST(sim_oom, buggify_site_never_silently_off)
{
    sweep(&(run_spec){"oom_buggify", 2, NULL, always_buggify, PL_FINDING_NONE, false});
}

LEAK_TEST(sim_oom, eventually_site_never_silently_dropped)
{
    sweep(&(run_spec){"oom_eventually", 4, NULL, NULL, PL_FINDING_ASSERTION, false});
}

/* Memory gone for good from the N-th allocation on: cleanup paths must
 * not need memory either. Scenarios with timers are left out: a sleep
 * whose timer cannot be armed retries at every poll (sleep_poll), which
 * under memory that never returns is a busy loop the simulator reports
 * as a livelock. */
LEAK_TEST(sim_oom, memory_gone_pipe)
{
    sweep(&(run_spec){"oom_pipe", 5, NULL, NULL, PL_FINDING_NONE, true});
    sweep(&(run_spec){"oom_pipe_empty", 5, NULL, NULL, PL_FINDING_NONE, true});
}

LEAK_TEST(sim_oom, memory_gone_sites)
{
    sweep(&(run_spec){"oom_buggify", 2, NULL, always_buggify, PL_FINDING_NONE, true});
    sweep(&(run_spec){"oom_eventually", 4, NULL, NULL, PL_FINDING_ASSERTION, true});
}

/* ---- The sweep over the replay parser --------------------------------- */

/* A valid replay text with every allocating part: text fields, knobs,
 * checkpoints, decisions and an unknown key (a note). */
static char *replay_text(size_t *len)
{
    static uint64_t cps[3] = {0x1111111111111111u, 0x2222222222222222u, 0x3333333333333333u};
    static pl__dec_record decs[300];
    for (size_t i = 0; i < 300; i++) {
        decs[i] = (pl__dec_record){(uint32_t)(i % 3), 3, (uint32_t)(i % 2)};
    }
    pl__replay rp;
    pl__replay_init(&rp);
    rp.pollen_version = (char *)"0.1.0";
    rp.build = (char *)"test build";
    rp.scenario = (char *)"oom_timers";
    rp.seed = 7;
    rp.strategy = (char *)"random";
    rp.has_knobs = true;
    pl__dec_knobs_default(&rp.knobs);
    rp.finding = (char *)"lost_wakeup";
    rp.message = (char *)"line one\n\tline two";
    rp.steps = 10;
    rp.events = 20;
    rp.has_hash = true;
    rp.hash = 0x0123456789abcdefu;
    rp.checkpoints = cps;
    rp.checkpoints_len = 3;
    rp.decisions = decs;
    rp.decisions_len = 300;
    char *body = NULL;
    size_t body_len = 0;
    FILE *f = open_memstream(&body, &body_len);
    cr_assert_not_null(f);
    cr_assert_eq(pl__replay_write(f, &rp), 0);
    cr_assert_eq(fclose(f), 0);
    /* An unknown key right after the version line. */
    const char *nl = memchr(body, '\n', body_len);
    cr_assert_not_null(nl);
    size_t head = (size_t)(nl - body) + 1;
    const char extra[] = "x-from-the-future 1\n";
    char *text = malloc(body_len + sizeof extra);
    cr_assert_not_null(text);
    memcpy(text, body, head);
    memcpy(text + head, extra, sizeof extra - 1);
    memcpy(text + head + sizeof extra - 1, body + head, body_len - head);
    *len = body_len + sizeof extra - 1;
    free(body);
    return text;
}

static void assert_same_replay(const pl__replay *a, const pl__replay *b, uint64_t n)
{
    cr_assert_str_eq(a->scenario, b->scenario, "allocation %llu failing", (unsigned long long)n);
    cr_assert_str_eq(a->message, b->message);
    cr_assert_str_eq(a->build, b->build);
    cr_assert_str_eq(a->notes, b->notes);
    cr_assert_eq(a->hash, b->hash);
    cr_assert_eq(a->checkpoints_len, b->checkpoints_len);
    cr_assert_eq(memcmp(a->checkpoints, b->checkpoints, a->checkpoints_len * sizeof(uint64_t)), 0);
    cr_assert_eq(a->decisions_len, b->decisions_len);
    cr_assert_eq(memcmp(a->decisions, b->decisions, a->decisions_len * sizeof *a->decisions), 0);
    cr_assert(pl__dec_knobs_equal(&a->knobs, &b->knobs));
}

static void replay_sweep(bool persistent)
{
    size_t len;
    char *text = replay_text(&len);
    char err[256];
    pl__replay want;
    failalloc_arm(0, false);
    int rc = pl__replay_parse_buffer(text, len, &want, err, sizeof err);
    uint64_t total = failalloc_disarm();
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_not_null(want.notes);
    cr_assert_gt(total, 3, "the allocation wrappers are not linked in");
    for (uint64_t n = 1; n <= total; n++) {
        pl__replay got;
        failalloc_arm(n, persistent);
        rc = pl__replay_parse_buffer(text, len, &got, err, sizeof err);
        failalloc_disarm();
        cr_assert(rc == 0 || rc == PL_ENOMEM, "allocation %llu failing: %s (%s)",
                  (unsigned long long)n, pl_err_name(rc), err);
        if (rc == 0) {
            assert_same_replay(&got, &want, n);
        } else {
            cr_assert_null(got.decisions);
            cr_assert_null(got.scenario);
        }
        pl__replay_free(&got);
    }
    pl__replay_free(&want);
    free(text);
}

LEAK_TEST(sim_oom, replay_parser) { replay_sweep(false); }

LEAK_TEST(sim_oom, replay_parser_memory_gone) { replay_sweep(true); }
