/* tests/bench/cluster_tcp.c: the cluster workload's stream exchange.
 *
 * Host h listens on 10.0.0.(h+1):7100 (127.0.0.1:(7101+h) on one host);
 * its sender keeps one TCP stream to each of the four others and writes
 * its messages to them in turn, pausing 1 virtual ms after each round:
 *
 *   sender h:   for k in 0..PER_HOST { to = peer(h, k);
 *                   if no stream to `to`: connect (on failure the message is unsent);
 *                   write_all(msg(h, to, k)) (on failure: close, unsent);
 *                   if k % 4 == 3: sleep 1 ms }
 *               close every stream
 *   acceptor h: loop { accept; spawn a reader for the stream }
 *   reader:     loop { read 64 bytes; check they are one whole message for h }
 *
 * A TCP client connects unbound, so the connecting end is on 127.0.0.1
 * (pollen/sim_net.h): every stream crosses the link 127.0.0.1 -> 10.0.0.x,
 * with its latency, resets, cuts and holds (streams lose nothing while
 * they live, so a message written on a connection that then breaks may
 * be what is missing). On one host nothing crosses a link.
 */
#include <stdio.h>

#include "cluster.h"

#define STREAM_PORT    7100
#define STREAM_BACKLOG 16

typedef struct stream_state {
    uint64_t per_host;
    pl_tcp_listener l[CLUSTER_HOSTS];
    char addr[CLUSTER_HOSTS][32];
    uint64_t sent;     /* messages written whole */
    uint64_t unsent;   /* no connection, or it broke during the write */
    uint64_t received; /* whole messages read */
    uint64_t bad;      /* read for another host, or damaged */
    int rc;
} stream_state;

/* ---- Sender ------------------------------------------------------------- */

typedef struct stream_sender {
    pl_future base;
    stream_state *st;
    uint32_t host;
    uint64_t k;
    uint32_t to;
    bool open[CLUSTER_HOSTS];
    pl_tcp_stream s[CLUSTER_HOSTS]; /* by peer host */
    uint8_t buf[CLUSTER_PAYLOAD];
    pl_tcp_connect conn;
    pl_io_write_all wr;
    pl_sleep pause;
} stream_sender;

static void sender_close_all(stream_sender *self)
{
    for (int h = 0; h < CLUSTER_HOSTS; h++) {
        pl_tcp_close(&self->s[h]);
        self->open[h] = false;
    }
}

static pl_poll_result stream_sender_poll(pl_future *f, pl_context *cx)
{
    stream_sender *self = (stream_sender *)f;
    stream_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    for (self->k = 0; self->k < st->per_host; self->k++) {
        self->to = cluster_peer(self->host, self->k);
        if (!self->open[self->to]) {
            self->conn = pl_tcp_connect_str(st->addr[self->to]);
            PL_AWAIT(cx, &self->conn);
            self->open[self->to] = self->conn.result == 0;
            self->s[self->to] = pl_tcp_connect_take(&self->conn);
        }
        if (self->open[self->to]) {
            cluster_fill_msg(self->buf, self->host, self->to, self->k);
            self->wr = pl_tcp_write_all(&self->s[self->to], self->buf, sizeof self->buf);
            PL_AWAIT(cx, &self->wr);
        }
        if (self->open[self->to] && self->wr.result == CLUSTER_PAYLOAD) {
            st->sent++;
        } else {
            st->unsent++;
            pl_tcp_close(&self->s[self->to]); /* broken: the next turn reconnects */
            self->open[self->to] = false;
        }
        if (self->k % CLUSTER_PEERS == CLUSTER_PEERS - 1) {
            self->pause = pl_sleep_for(CLUSTER_ROUND_NS);
            PL_AWAIT(cx, &self->pause);
        }
    }
    sender_close_all(self); /* the readers see the end of their streams */
    PL_ASYNC_END;
}

static void stream_sender_drop(pl_future *f)
{
    stream_sender *self = (stream_sender *)f;
    pl_drop_child(&self->conn.base);
    pl_drop_child(&self->wr.base);
    pl_drop_child(&self->pause.base);
    sender_close_all(self);
}

static const pl_future_vtable stream_sender_vtable = {"stream_sender", stream_sender_poll,
                                                      stream_sender_drop};

/* ---- Reader ------------------------------------------------------------- */

typedef struct stream_reader {
    pl_future base;
    stream_state *st;
    uint32_t host;
    pl_tcp_stream s;
    size_t got;
    uint8_t buf[CLUSTER_PAYLOAD];
    pl_io_read rd;
} stream_reader;

static pl_poll_result stream_reader_poll(pl_future *f, pl_context *cx)
{
    stream_reader *self = (stream_reader *)f;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        for (self->got = 0; self->got < CLUSTER_PAYLOAD; self->got += (size_t)self->rd.result) {
            self->rd = pl_tcp_read(&self->s, self->buf + self->got, CLUSTER_PAYLOAD - self->got);
            PL_AWAIT(cx, &self->rd);
            if (self->rd.result <= 0) {
                break;
            }
        }
        if (self->got < CLUSTER_PAYLOAD) {
            break; /* end of stream, or broken: a partial message is lost */
        }
        if (cluster_msg_ok(self->buf, self->got, self->host)) {
            self->st->received++;
        } else {
            self->st->bad++;
        }
    }
    pl_tcp_close(&self->s);
    PL_ASYNC_END;
}

static void stream_reader_drop(pl_future *f)
{
    stream_reader *self = (stream_reader *)f;
    pl_drop_child(&self->rd.base);
    pl_tcp_close(&self->s);
}

static const pl_future_vtable stream_reader_vtable = {"stream_reader", stream_reader_poll,
                                                      stream_reader_drop};

/* ---- Acceptor ----------------------------------------------------------- */

typedef struct stream_acceptor {
    pl_future base;
    stream_state *st;
    uint32_t host;
    pl_tcp_accept acc;
} stream_acceptor;

static int spawn_background(pl_executor *ex, const pl_future *fut, size_t size, const char *name)
{
    pl_task *t;
    int rc = pl_spawn(ex, fut, size, name, &t);
    if (rc == 0) {
        pl_task_set_background(t, true);
        pl_task_release(t);
    }
    return rc;
}

static pl_poll_result stream_acceptor_poll(pl_future *f, pl_context *cx)
{
    stream_acceptor *self = (stream_acceptor *)f;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->acc = pl_tcp_accept_make(&self->st->l[self->host]);
        PL_AWAIT(cx, &self->acc);
        if (self->acc.result == 0) {
            stream_reader r = {.base = PL_FUTURE_INIT(&stream_reader_vtable),
                               .st = self->st,
                               .host = self->host,
                               .s = pl_tcp_accept_take(&self->acc)};
            int rc = spawn_background(cx->ex, &r.base, sizeof r, "stream_reader");
            if (rc != 0) {
                pl_tcp_close(&r.s);
                self->st->rc = rc; /* out of memory: the check reports it */
            }
        }
    }
    PL_ASYNC_END;
}

static void stream_acceptor_drop(pl_future *f) { pl_drop_child(&((stream_acceptor *)f)->acc.base); }

static const pl_future_vtable stream_acceptor_vtable = {"stream_acceptor", stream_acceptor_poll,
                                                        stream_acceptor_drop};

/* ---- The scenario ------------------------------------------------------- */

/* Acceptors first, so the first connection finds its listener served. */
static int spawn_hosts(pl_executor *ex, void *state, pl_task **senders)
{
    stream_state *st = state;
    int rc = 0;
    for (uint32_t h = 0; h < CLUSTER_HOSTS && rc == 0; h++) {
        stream_acceptor a = {.base = PL_FUTURE_INIT(&stream_acceptor_vtable), .st = st, .host = h};
        rc = spawn_background(ex, &a.base, sizeof a, "stream_acceptor");
    }
    for (uint32_t h = 0; h < CLUSTER_HOSTS && rc == 0; h++) {
        stream_sender s = {.base = PL_FUTURE_INIT(&stream_sender_vtable), .st = st, .host = h};
        rc = PL_SPAWN(ex, s, "stream_sender", &senders[h]);
    }
    return rc;
}

static int stream_setup(pl_executor *ex, void *state)
{
    stream_state *st = state;
    st->per_host = cluster_cfg.per_host;
    for (uint32_t h = 0; h < CLUSTER_HOSTS; h++) {
        cluster_addr(st->addr[h], sizeof st->addr[h], h, STREAM_PORT);
        int rc = pl_tcp_listen_str(ex, &st->l[h], st->addr[h], STREAM_BACKLOG);
        if (rc != 0) {
            return rc;
        }
    }
    return cluster_start(ex, st, &st->rc, spawn_hosts);
}

/* Every message was written or counted unsent, none arrived damaged or at
 * the wrong host, a stream duplicated nothing, and at least half arrived
 * (the default knobs break far fewer connections). */
static int stream_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const stream_state *st = state;
    uint64_t want = st->per_host * CLUSTER_HOSTS;
    if (st->rc != 0 || st->sent + st->unsent != want || st->bad != 0 || st->received > st->sent ||
        st->received < want / 2) {
        return pl_check_fail(msg, len,
                             "%s: sent %llu of %llu (%llu unsent), received %llu, "
                             "%llu damaged",
                             pl_strerror(st->rc), (unsigned long long)st->sent,
                             (unsigned long long)want, (unsigned long long)st->unsent,
                             (unsigned long long)st->received, (unsigned long long)st->bad);
    }
    return 0;
}

static void stream_teardown(void *state)
{
    stream_state *st = state;
    cluster_cfg.received = st->received;
    for (int h = 0; h < CLUSTER_HOSTS; h++) {
        pl_tcp_listener_close(&st->l[h]);
    }
}

const pl_scenario cluster_tcp_scenario = {
    .name = "cluster_tcp",
    .summary = "5 hosts writing messages on one TCP stream per ordered pair",
    .state_size = sizeof(stream_state),
    .setup = stream_setup,
    .check = stream_check,
    .teardown = stream_teardown,
};
