/* tests/bench/cluster.h: what the cluster workload's sources share
 * (cluster.c: messages, the main task, the driver; cluster_udp.c and
 * cluster_tcp.c: the two exchanges). tests/bench/README.md, workload 7.
 */
#ifndef POLLEN_BENCH_CLUSTER_H
#define POLLEN_BENCH_CLUSTER_H

#include "bench.h"

#define CLUSTER_HOSTS    5
#define CLUSTER_PEERS    (CLUSTER_HOSTS - 1)
#define CLUSTER_PAYLOAD  64
#define CLUSTER_ROUND_NS PL_MS /* each sender's pause after one message to every peer */
#define CLUSTER_DRAIN_NS PL_S  /* longer than any latency, reorder or clog the links draw */

/* The run being measured (a scenario has no user pointer): set by the
 * driver before a run, read by the setups; `received` is written by the
 * teardowns for the driver's lines. */
typedef struct cluster_config {
    bool one_host;     /* every socket on 127.0.0.1: no link is crossed */
    uint64_t per_host; /* messages each host sends */
    uint64_t received; /* messages the run's receivers counted intact */
} cluster_config;

extern cluster_config cluster_cfg;

/* The peer host h sends its k-th message to: the others in turn. */
uint32_t cluster_peer(uint32_t h, uint64_t k);

/* Writes message (from, to, seq) into buf (CLUSTER_PAYLOAD bytes). */
void cluster_fill_msg(uint8_t *buf, uint32_t from, uint32_t to, uint64_t seq);

/* Whether buf[0, len) is a whole message for host `to`. */
bool cluster_msg_ok(const uint8_t *buf, size_t len, uint32_t to);

/* Host h's address text: "10.0.0.(h+1):port", or on one host
 * "127.0.0.1:(port+1+h)". buf holds 32 bytes. */
void cluster_addr(char *buf, size_t len, uint32_t h, unsigned port);

/* Starts the exchange from a setup: spawns a main task that calls
 * spawn(ex, st, senders) (which spawns the background receivers and the
 * CLUSTER_HOSTS foreground senders, keeping their handles), joins the
 * senders, sleeps CLUSTER_DRAIN_NS and closes the measured region. A
 * spawn error is stored in *rc for the check. Returns 0 or PL_ENOMEM. */
typedef int (*cluster_spawn_fn)(pl_executor *ex, void *st, pl_task **senders);
int cluster_start(pl_executor *ex, void *st, int *rc, cluster_spawn_fn spawn);

extern const pl_scenario cluster_udp_scenario;
extern const pl_scenario cluster_tcp_scenario;

#endif
