/* tests/bench/cluster.c: workload 7, messages between simulated hosts.
 *
 * HOSTS = 5 hosts, 10.0.0.1..10.0.0.5. Each host's sender sends its
 * messages (64 bytes: from, to, seq and a pattern) to the other four in
 * turn and pauses 1 virtual ms after each round, so every ordered pair
 * carries one message per virtual ms; each host's background receivers
 * count the whole messages for it. Main joins the senders and sleeps
 * DRAIN so every message not lost has arrived; the region ends there.
 * Two exchanges: UDP datagrams (cluster_udp.c), and one TCP stream per
 * ordered pair (cluster_tcp.c). The links keep their default options:
 * their decisions are part of the cost. Each exchange also runs on one
 * host (every socket on 127.0.0.1), which crosses no link: the ratio is
 * what the link model costs. Seed 1 for all.
 * Metrics per message sent (N = HOSTS * PER_HOST, default 100000):
 * ns_per_message and decisions_per_message (UDP; stream_ns_per_message
 * and stream_decisions_per_message for TCP), the lines saying hosts=5 or
 * hosts=1; rss_per_message for the first run only (ru_maxrss is a
 * high-water mark); link_cost_ratio and stream_link_cost_ratio, ns across
 * hosts over ns on one host.
 */
#include <stdio.h>
#include <string.h>

#include "cluster.h"

#define CLUSTER_MESSAGES_DEFAULT 100000u

cluster_config cluster_cfg;

uint32_t cluster_peer(uint32_t h, uint64_t k)
{
    return (h + 1u + (uint32_t)(k % CLUSTER_PEERS)) % CLUSTER_HOSTS;
}

static uint8_t pad_byte(uint64_t seq, size_t i) { return (uint8_t)(seq * 31u + i); }

/* What a message starts with; a pattern pads it to CLUSTER_PAYLOAD. */
typedef struct cluster_msg {
    uint32_t from;
    uint32_t to;
    uint64_t seq;
} cluster_msg;

void cluster_fill_msg(uint8_t *buf, uint32_t from, uint32_t to, uint64_t seq)
{
    cluster_msg m = {from, to, seq};
    memcpy(buf, &m, sizeof m);
    for (size_t i = sizeof m; i < CLUSTER_PAYLOAD; i++) {
        buf[i] = pad_byte(seq, i);
    }
}

bool cluster_msg_ok(const uint8_t *buf, size_t len, uint32_t to)
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

void cluster_addr(char *buf, size_t len, uint32_t h, unsigned port)
{
    if (cluster_cfg.one_host) {
        snprintf(buf, len, "127.0.0.1:%u", port + 1u + h);
    } else {
        snprintf(buf, len, "10.0.0.%u:%u", h + 1u, port);
    }
}

/* ---- The main task ------------------------------------------------------ */

typedef struct cluster_main {
    pl_future base;
    void *st;
    int *rc;
    cluster_spawn_fn spawn;
    pl_task *senders[CLUSTER_HOSTS];
    int i;
    pl_join join;
    pl_sleep drain;
} cluster_main;

static pl_poll_result cluster_main_poll(pl_future *f, pl_context *cx)
{
    cluster_main *self = (cluster_main *)f;
    PL_ASYNC_BEGIN(self);
    *self->rc = self->spawn(cx->ex, self->st, self->senders);
    if (*self->rc != 0) {
        return PL_READY; /* out of memory: the check reports it */
    }
    for (self->i = 0; self->i < CLUSTER_HOSTS; self->i++) {
        self->join = pl_join_make(self->senders[self->i]);
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

int cluster_start(pl_executor *ex, void *st, int *rc, cluster_spawn_fn spawn)
{
    cluster_main m = {
        .base = PL_FUTURE_INIT(&cluster_main_vtable), .st = st, .rc = rc, .spawn = spawn};
    bench_region_begin(ex);
    return PL_SPAWN(ex, m, "main", NULL);
}

/* ---- The driver --------------------------------------------------------- */

/* Runs one exchange once, across hosts or on one, and prints its lines
 * (metrics prefixed by `prefix`). */
static int cluster_run(const pl_scenario *sc, const char *prefix, bool one_host, bool first,
                       double *ns_per_message)
{
    cluster_cfg.one_host = one_host;
    cluster_cfg.received = 0;
    /* Time passes every round: the bound covers one instant's polls. */
    bench_mode mode = {true, 1, 1000000};
    bench_region r;
    if (bench_execute(sc, &mode, &r) != 0) {
        return 1;
    }
    uint64_t messages = cluster_cfg.per_host * CLUSTER_HOSTS;
    char extra[160];
    char metric[64];
    snprintf(extra, sizeof extra, "messages=%llu hosts=%d payload=%d delivered=%llu virtual_s=%.3f",
             (unsigned long long)messages, one_host ? 1 : CLUSTER_HOSTS, CLUSTER_PAYLOAD,
             (unsigned long long)cluster_cfg.received,
             (double)(r.now1_ns - r.now0_ns) / (double)PL_S);
    *ns_per_message = (double)bench_region_ns(&r) / (double)messages;
    snprintf(metric, sizeof metric, "%sns_per_message", prefix);
    bench_line("cluster", true, metric, *ns_per_message, 1, "ns", extra);
    if (first) {
        bench_line("cluster", true, "rss_per_message", bench_rss_per(&r, messages), 1, "B", extra);
    }
    snprintf(metric, sizeof metric, "%sdecisions_per_message", prefix);
    bench_line("cluster", true, metric, (double)r.decisions / (double)messages, 2, "decisions",
               extra);
    return 0;
}

/* Both runs of one exchange, then their ratio. */
static int cluster_pair(const pl_scenario *sc, const char *prefix, bool first)
{
    double across = 0;
    double one = 0;
    if (cluster_run(sc, prefix, false, first, &across) != 0 ||
        cluster_run(sc, prefix, true, false, &one) != 0) {
        return 1;
    }
    char extra[64];
    char metric[64];
    snprintf(extra, sizeof extra, "messages=%llu",
             (unsigned long long)(cluster_cfg.per_host * CLUSTER_HOSTS));
    snprintf(metric, sizeof metric, "%slink_cost_ratio", prefix);
    bench_line("cluster", true, metric, across / (one > 0 ? one : 1), 2, "x", extra);
    return 0;
}

int bench_cluster(uint64_t n, bool sim)
{
    if (!sim) {
        bench_fail("cluster", "runs under the simulator only (tests/bench/README.md): add --sim");
        return 1;
    }
    uint64_t messages = n != 0 ? n : CLUSTER_MESSAGES_DEFAULT;
    cluster_cfg.per_host = (messages + CLUSTER_HOSTS - 1) / CLUSTER_HOSTS;
    if (cluster_pair(&cluster_udp_scenario, "", true) != 0) {
        return 1;
    }
    return cluster_pair(&cluster_tcp_scenario, "stream_", false);
}
