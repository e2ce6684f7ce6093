/* tests/bench/cluster_udp.c: the cluster workload's UDP exchange.
 *
 * Host h has one UDP socket (10.0.0.(h+1):7000, or 127.0.0.1:(7001+h) on
 * one host) and two tasks:
 *
 *   sender h:   for k in 0..PER_HOST { send_to(peer(h, k), msg(h, peer, k));
 *                                      if k % 4 == 3: sleep 1 ms }
 *   receiver h: loop { recv_from(); check it is whole and for h; count }
 *
 * Between hosts the links lose, duplicate and hold datagrams, so the
 * check accepts between half and twice the messages sent.
 */
#include <stdio.h>
#include <string.h>

#include "cluster.h"

typedef struct cluster_state {
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
        uint32_t to = cluster_peer(self->host, self->k);
        cluster_fill_msg(self->buf, self->host, to, self->k);
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
        } else if (cluster_msg_ok(self->buf, (size_t)self->recv.result, self->host)) {
            st->received++;
        } else {
            st->bad++;
        }
    }
    PL_ASYNC_END;
}

static void receiver_drop(pl_future *f) { pl_drop_child(&((receiver *)f)->recv.base); }

static const pl_future_vtable receiver_vtable = {"receiver", receiver_poll, receiver_drop};

/* Receivers first, so the first datagram finds its reader parked. */
static int spawn_hosts(pl_executor *ex, void *state, pl_task **senders)
{
    cluster_state *st = state;
    int rc = 0;
    for (uint32_t h = 0; h < CLUSTER_HOSTS && rc == 0; h++) {
        receiver r = {.base = PL_FUTURE_INIT(&receiver_vtable), .st = st, .host = h};
        pl_task *t;
        rc = PL_SPAWN(ex, r, "receiver", &t);
        if (rc == 0) {
            pl_task_set_background(t, true);
            pl_task_release(t);
        }
    }
    for (uint32_t h = 0; h < CLUSTER_HOSTS && rc == 0; h++) {
        sender s = {.base = PL_FUTURE_INIT(&sender_vtable), .st = st, .host = h};
        rc = PL_SPAWN(ex, s, "sender", &senders[h]);
    }
    return rc;
}

/* ---- The scenario ------------------------------------------------------- */

static int bind_host(pl_executor *ex, cluster_state *st, uint32_t h)
{
    char text[32];
    cluster_addr(text, sizeof text, h, 7000);
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
    st->per_host = cluster_cfg.per_host;
    for (uint32_t h = 0; h < CLUSTER_HOSTS; h++) {
        int rc = bind_host(ex, st, h);
        if (rc != 0) {
            return rc;
        }
    }
    return cluster_start(ex, st, &st->rc, spawn_hosts);
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
    cluster_cfg.received = st->received;
    for (int h = 0; h < CLUSTER_HOSTS; h++) {
        pl_udp_close(&st->sock[h]);
    }
}

const pl_scenario cluster_udp_scenario = {
    .name = "cluster_udp",
    .summary = "5 hosts exchanging UDP datagrams, one per pair per virtual ms",
    .state_size = sizeof(cluster_state),
    .setup = cluster_setup,
    .check = cluster_check,
    .teardown = cluster_teardown,
};
