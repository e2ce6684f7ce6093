/* tests/bench/cluster.c: workload 7, messages between simulated hosts.
 *
 * HOSTS = 5 hosts, 10.0.0.1..10.0.0.5, each with one UDP socket on port
 * 7000 and two tasks:
 *
 *   sender h:   for k in 0..PER_HOST { send_to(peer(h, k % 4), msg(h, k));
 *                                      if k % 4 == 3: sleep 1 ms }
 *   receiver h: loop { recv_from(); check the message is for h; count }
 *
 * so every ordered pair of hosts carries one datagram per virtual ms.
 * Main spawns the receivers (background), then the senders, joins the
 * senders and sleeps DRAIN (1 s of virtual time: more than any latency,
 * reorder or clog the default links draw) so every datagram that was not
 * lost has arrived. The links keep their default options (latency
 * distribution, loss, dup, reorder, partition, clog): their decisions are
 * part of the cost. The same exchange on one host (five sockets on
 * 127.0.0.1, ports 7001..7005) never crosses a link: the ratio of the two
 * is what the link model costs.
 * Metrics, per message sent (N = HOSTS * PER_HOST, default 100000):
 * ns_per_message, decisions_per_message (the lines say hosts=5 or
 * hosts=1), rss_per_message (hosts=5 only, the process's first run: the
 * recorded decisions and the trace, mostly) and link_cost_ratio, ns
 * across hosts over ns on one host.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

#define CLUSTER_MESSAGES_DEFAULT 100000u
#define CLUSTER_HOSTS            5
#define CLUSTER_PEERS            (CLUSTER_HOSTS - 1)
#define CLUSTER_PAYLOAD          64
#define CLUSTER_ROUND_NS         PL_MS
#define CLUSTER_DRAIN_NS         PL_S

/* What a datagram carries, padded with a pattern to CLUSTER_PAYLOAD. */
typedef struct cluster_msg {
    uint32_t from;
    uint32_t to;
    uint64_t seq;
} cluster_msg;

typedef struct cluster_state {
    bool one_host;
    uint64_t per_host;
    pl_udp_socket sock[CLUSTER_HOSTS];
    struct sockaddr_storage addr[CLUSTER_HOSTS];
    socklen_t addr_len[CLUSTER_HOSTS];
    uint64_t sent;     /* send_to futures that said the datagram went out */
    uint64_t received; /* datagrams received intact */
    uint64_t bad;      /* received for another host, or damaged */
    uint64_t errors;   /* send or receive results below zero (io_fault) */
    int rc;
} cluster_state;

/* The run being measured: a scenario has no user pointer. */
static bool cluster_one_host;
static uint64_t cluster_per_host;
static uint64_t cluster_received; /* the run's count, for its lines */

static uint8_t pad_byte(uint64_t seq, size_t i) { return (uint8_t)(seq * 31u + i); }

static void fill_msg(uint8_t *buf, uint32_t from, uint32_t to, uint64_t seq)
{
    cluster_msg m = {from, to, seq};
    memcpy(buf, &m, sizeof m);
    for (size_t i = sizeof m; i < CLUSTER_PAYLOAD; i++) {
        buf[i] = pad_byte(seq, i);
    }
}

static bool msg_ok(const uint8_t *buf, ssize_t len, uint32_t to)
{
    cluster_msg m;
    if (len != CLUSTER_PAYLOAD) {
        return false;
    }
    memcpy(&m, buf, sizeof m);
    if (m.to != to || m.from == to || m.from >= CLUSTER_HOSTS) {
        return false;
    }
    for (size_t i = sizeof m; i < CLUSTER_PAYLOAD; i++) {
        if (buf[i] != pad_byte(m.seq, i)) {
            return false;
        }
    }
    return true;
}

/* ---- Tasks -------------------------------------------------------------- */

typedef struct sender {
    pl_future base;
    cluster_state *st;
    uint32_t host;
    uint64_t k;
    uint8_t buf[CLUSTER_PAYLOAD];
    pl_udp_send send;
    pl_sleep pause;
} sender;

static pl_poll_result sender_poll(pl_future *f, pl_context *cx)
{
    sender *self = (sender *)f;
    cluster_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    for (self->k = 0; self->k < st->per_host; self->k++) {
        /* Peers in turn: the host after this one, then the next... */
        uint32_t to = (self->host + 1u + (uint32_t)(self->k % CLUSTER_PEERS)) % CLUSTER_HOSTS;
        fill_msg(self->buf, self->host, to, self->k);
        self->send = pl_udp_send_to(&st->sock[self->host], self->buf, sizeof self->buf,
                                    (const struct sockaddr *)&st->addr[to], st->addr_len[to]);
        PL_AWAIT(cx, &self->send);
        if (self->send.result == CLUSTER_PAYLOAD) {
            st->sent++;
        } else {
            st->errors++;
        }
        if (self->k % CLUSTER_PEERS == CLUSTER_PEERS - 1) {
            self->pause = pl_sleep_for(CLUSTER_ROUND_NS);
            PL_AWAIT(cx, &self->pause);
        }
    }
    PL_ASYNC_END;
}

static void sender_drop(pl_future *f)
{
    sender *self = (sender *)f;
    pl_drop_child(&self->send.base);
    pl_drop_child(&self->pause.base);
}

static const pl_future_vtable sender_vtable = {"sender", sender_poll, sender_drop};

typedef struct receiver {
    pl_future base;
    cluster_state *st;
    uint32_t host;
    uint8_t buf[CLUSTER_PAYLOAD + 1]; /* one more: a longer datagram shows */
    pl_udp_recv recv;
} receiver;

static pl_poll_result receiver_poll(pl_future *f, pl_context *cx)
{
    receiver *self = (receiver *)f;
    cluster_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->recv = pl_udp_recv_from(&st->sock[self->host], self->buf, sizeof self->buf);
        PL_AWAIT(cx, &self->recv);
        if (self->recv.result < 0) {
            st->errors++;
        } else if (msg_ok(self->buf, self->recv.result, self->host)) {
            st->received++;
        } else {
            st->bad++;
        }
    }
    PL_ASYNC_END;
}

static void receiver_drop(pl_future *f) { pl_drop_child(&((receiver *)f)->recv.base); }

static const pl_future_vtable receiver_vtable = {"receiver", receiver_poll, receiver_drop};

typedef struct cluster_main {
    pl_future base;
    cluster_state *st;
    pl_task *senders[CLUSTER_HOSTS];
    int i;
    pl_join join;
    pl_sleep drain;
} cluster_main;

/* Receivers first, so the first datagram finds its reader parked. */
static int spawn_hosts(pl_executor *ex, cluster_main *m)
{
    int rc = 0;
    for (uint32_t h = 0; h < CLUSTER_HOSTS && rc == 0; h++) {
        receiver r = {.base = PL_FUTURE_INIT(&receiver_vtable), .st = m->st, .host = h};
        pl_task *t;
        rc = PL_SPAWN(ex, r, "receiver", &t);
        if (rc == 0) {
            pl_task_set_background(t, true);
            pl_task_release(t);
        }
    }
    for (uint32_t h = 0; h < CLUSTER_HOSTS && rc == 0; h++) {
        sender s = {.base = PL_FUTURE_INIT(&sender_vtable), .st = m->st, .host = h};
        rc = PL_SPAWN(ex, s, "sender", &m->senders[h]);
    }
    return rc;
}

static pl_poll_result cluster_main_poll(pl_future *f, pl_context *cx)
{
    cluster_main *self = (cluster_main *)f;
    PL_ASYNC_BEGIN(self);
    self->st->rc = spawn_hosts(cx->ex, self);
    if (self->st->rc != 0) {
        return PL_READY; /* out of memory: the check reports it */
    }
    for (self->i = 0; self->i < CLUSTER_HOSTS; self->i++) {
        self->join = pl_join_init(self->senders[self->i]);
        PL_AWAIT(cx, &self->join);
        pl_task_release(self->senders[self->i]);
        self->senders[self->i] = NULL;
    }
    self->drain = pl_sleep_for(CLUSTER_DRAIN_NS);
    PL_AWAIT(cx, &self->drain);
    bench_region_end(cx->ex);
    PL_ASYNC_END;
}

static void cluster_main_drop(pl_future *f)
{
    cluster_main *self = (cluster_main *)f;
    pl_drop_child(&self->join.base);
    pl_drop_child(&self->drain.base);
    for (int i = 0; i < CLUSTER_HOSTS; i++) {
        pl_task_release(self->senders[i]);
    }
}

static const pl_future_vtable cluster_main_vtable = {"main", cluster_main_poll, cluster_main_drop};

/* ---- The scenario ------------------------------------------------------- */

/* Host h's address: 10.0.0.(h+1):7000, or 127.0.0.1:(7001+h) on one host. */
static int bind_host(pl_executor *ex, cluster_state *st, uint32_t h)
{
    char text[32];
    if (st->one_host) {
        snprintf(text, sizeof text, "127.0.0.1:%u", 7001u + h);
    } else {
        snprintf(text, sizeof text, "10.0.0.%u:7000", h + 1u);
    }
    int rc = pl_udp_bind_str(ex, &st->sock[h], text);
    if (rc == 0) {
        st->addr_len[h] = sizeof st->addr[h];
        rc = pl_udp_local_addr(&st->sock[h], &st->addr[h], &st->addr_len[h]);
    }
    return rc;
}

static int cluster_setup(pl_executor *ex, void *state)
{
    cluster_state *st = state;
    st->one_host = cluster_one_host;
    st->per_host = cluster_per_host;
    for (uint32_t h = 0; h < CLUSTER_HOSTS; h++) {
        int rc = bind_host(ex, st, h);
        if (rc != 0) {
            return rc;
        }
    }
    cluster_main m = {.base = PL_FUTURE_INIT(&cluster_main_vtable), .st = st};
    bench_region_begin(ex);
    return PL_SPAWN(ex, m, "main", NULL);
}

/* Every message sent went out whole, none arrived damaged or at the wrong
 * host, and the network delivered: between hosts some are lost (loss,
 * cuts) and some arrive twice (dup), so neither count equals `sent`; at
 * most every one twice, and at least half (the default knobs lose far
 * fewer). */
static int cluster_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const cluster_state *st = state;
    uint64_t want = st->per_host * CLUSTER_HOSTS;
    if (st->rc != 0 || st->sent + st->errors != want || st->bad != 0 ||
        st->received < st->sent / 2 || st->received > 2 * st->sent) {
        return pl_check_fail(msg, len,
                             "%s: sent %llu of %llu (%llu errors), received %llu, "
                             "%llu damaged",
                             pl_strerror(st->rc), (unsigned long long)st->sent,
                             (unsigned long long)want, (unsigned long long)st->errors,
                             (unsigned long long)st->received, (unsigned long long)st->bad);
    }
    return 0;
}

static void cluster_teardown(void *state)
{
    cluster_state *st = state;
    cluster_received = st->received;
    for (int h = 0; h < CLUSTER_HOSTS; h++) {
        pl_udp_close(&st->sock[h]);
    }
}

static const pl_scenario cluster_scenario = {
    .name = "cluster",
    .summary = "5 hosts exchanging UDP datagrams, one per pair per virtual ms",
    .state_size = sizeof(cluster_state),
    .setup = cluster_setup,
    .check = cluster_check,
    .teardown = cluster_teardown,
};

/* Runs the exchange once, across hosts or on one, and prints its lines. */
static int cluster_run(bool one_host, uint64_t messages, double *ns_per_message)
{
    cluster_one_host = one_host;
    /* Time passes every round: the bound covers one instant's polls. */
    bench_mode mode = {true, 1, 1000000};
    bench_region r;
    if (bench_execute(&cluster_scenario, &mode, &r) != 0) {
        return 1;
    }
    char extra[160];
    snprintf(extra, sizeof extra, "messages=%llu hosts=%d payload=%d delivered=%llu virtual_s=%.3f",
             (unsigned long long)messages, one_host ? 1 : CLUSTER_HOSTS, CLUSTER_PAYLOAD,
             (unsigned long long)cluster_received, (double)(r.now1_ns - r.now0_ns) / (double)PL_S);
    *ns_per_message = (double)bench_region_ns(&r) / (double)messages;
    bench_line("cluster", true, "ns_per_message", *ns_per_message, 1, "ns", extra);
    if (!one_host) {
        /* ru_maxrss is a high-water mark: only the process's first run has
         * its own (the one-host run comes second). */
        bench_line("cluster", true, "rss_per_message", bench_rss_per(&r, messages), 1, "B", extra);
    }
    bench_line("cluster", true, "decisions_per_message", (double)r.decisions / (double)messages, 2,
               "decisions", extra);
    return 0;
}

int bench_cluster(uint64_t n, bool sim)
{
    if (!sim) {
        bench_fail("cluster", "runs under the simulator only (tests/bench/README.md): add --sim");
        return 1;
    }
    uint64_t messages = n != 0 ? n : CLUSTER_MESSAGES_DEFAULT;
    cluster_per_host = (messages + CLUSTER_HOSTS - 1) / CLUSTER_HOSTS;
    messages = cluster_per_host * CLUSTER_HOSTS;
    double across = 0;
    double one = 0;
    if (cluster_run(false, messages, &across) != 0 || cluster_run(true, messages, &one) != 0) {
        return 1;
    }
    char extra[64];
    snprintf(extra, sizeof extra, "messages=%llu", (unsigned long long)messages);
    bench_line("cluster", true, "link_cost_ratio", across / (one > 0 ? one : 1), 2, "x", extra);
    return 0;
}
