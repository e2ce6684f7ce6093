/* pollen/sim_net.h: links between simulated hosts, and the calls scenario
 * code uses to cut, heal, hold and tune them (included by pollen/sim.h).
 *
 * Hosts. A host is an IPv4 address: 10.0.0.0/8 (10.0.0.1, 10.0.0.2, ...)
 * or loopback, 127.0.0.0/8 being one host. A socket is on the host of its
 * address: bind it there (port 0 for an ephemeral port); a socket that
 * sends or connects unbound is on 127.0.0.1. IPv6 has only ::1, one host.
 *
 * Links. A link is an ordered pair of distinct hosts (from, to): traffic
 * within one host never crosses a link and is modelled as before (the
 * io_latency and io_fault decisions only). Each crossing of a link:
 *   latency    latency_ns, plus an extra drawn by PL_DECIDE_LINK_LATENCY
 *              (knob link_latency): bucket v of jitter_steps, v = 0 no
 *              extra, else jitter_quantum_ns * 2^(v-1). The random source
 *              leaves 0 with the knob's probability and then picks v
 *              uniformly, so the extra is log-uniform: a long tail. A
 *              stream's bytes still arrive in order.
 *   loss       a datagram is lost (link_loss);
 *   dup        a datagram arrives twice, each copy with its own latency
 *              (link_dup);
 *   reorder    a datagram is held back by reorder_ns, so later ones
 *              overtake it (link_reorder);
 *   reset      a stream write breaks its connection: the write and every
 *              later operation on either end say PL_ECONNRESET, the peer
 *              after a latency (link_reset);
 *   partition  at a send on an open link, the link is cut for
 *              2^(k-1) ms (PL_SIM_LINK_FAULT_QUANTUM_NS), k = 1..
 *              fault_steps, one way (that link only) or both ways
 *              (partition);
 *   clog       at a send on an open link, its traffic is held for
 *              2^(k-1) ms, k = 1..fault_steps (clog).
 * What a cut or a hold does, judged when the traffic arrives:
 *   datagrams  arriving on a cut link are lost; on a held link they wait
 *              and arrive when the hold ends (pl_sim_unhold, or the
 *              clog's end), in the order they arrived;
 *   streams    a TCP-like connection loses and reorders nothing: its
 *              segments (and connection attempts) wait on a cut or held
 *              link and arrive in order once it is open again. When they
 *              have waited break_after_ns, the connection breaks: both
 *              ends read and write PL_ECONNRESET (a connection attempt
 *              fails with PL_ETIMEDOUT), as TCP gives up retransmitting.
 * Every fault class is a flag of the link's options (which classes may
 * fire there); how often one fires is its knob; each firing is a recorded
 * decision, so a run replays and shrinks. The link kinds are on by
 * default: a scenario that puts sockets on two hosts asks for a faulty
 * network; one whose sockets share a host never consults them.
 *
 * Thread rules: the calls below act on the simulation running on the
 * calling thread: call them from its setup, tasks or check.
 */
#ifndef POLLEN_SIM_NET_PUBLIC_H
#define POLLEN_SIM_NET_PUBLIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The unit of partition and clog durations drawn by decisions. */
#define PL_SIM_LINK_FAULT_QUANTUM_NS PL_MS
#define PL_SIM_LINK_STEPS_MAX        16u

/* How one link behaves. Every link starts with the run's default
 * (pl_sim_fault_options.link); pl_sim_link_set replaces one link's. */
typedef struct pl_sim_link_options {
    pl_time latency_ns;        /* base one-way delay (0..PL_S); default 500 us */
    pl_time jitter_quantum_ns; /* the extra's unit (0..PL_S); default 100 us */
    uint32_t jitter_steps;     /* link_latency buckets (1..PL_SIM_LINK_STEPS_MAX; 1: no
                                  extra); default 8, so at most 6.4 ms extra */
    bool loss;                 /* datagrams may be lost (default true) */
    bool dup;                  /* datagrams may be duplicated (default true) */
    bool reorder;              /* datagrams may be held back (default true) */
    pl_time reorder_ns;        /* how long (0..PL_S); default 2 ms */
    bool reset;                /* stream writes may break their connection (default true) */
    bool partition;            /* decisions may cut the link (default true) */
    bool clog;                 /* decisions may hold the link's traffic (default true) */
    uint32_t fault_steps;      /* partitions and clogs last 2^(k-1) ms, k = 1..fault_steps
                                  (1..PL_SIM_LINK_STEPS_MAX); default 8: up to 128 ms */
    pl_time break_after_ns;    /* a stream segment that waited this long on a cut or held
                                  link breaks its connection (1..3600 s); default 100 ms */
} pl_sim_link_options;

/* Fills o with the defaults above. Any thread. */
void pl_sim_link_options_default(pl_sim_link_options *o);
/* 0, or PL_EINVAL with the first bad field and its range in err (err_len
 * bytes; NULL: none). Any thread. */
int pl_sim_link_options_validate(const pl_sim_link_options *o, char *err, size_t err_len);

/* A link's state, as pl_sim_link_get reports it. */
typedef struct pl_sim_link_state {
    bool cut;              /* traffic from -> to is cut now */
    bool held;             /* traffic from -> to is held now */
    pl_time cut_until_ns;  /* when the cut heals by itself; PL_TIME_NEVER: when
                              healed (pl_sim_heal); 0: not cut */
    pl_time held_until_ns; /* likewise for the hold (pl_sim_unhold) */
    uint64_t dgrams_sent;  /* datagrams sent over the link */
    uint64_t dgrams_lost;  /* lost by link_loss or on a cut link */
    uint64_t dgrams_held;  /* kept now for pl_sim_unhold (a clog re-sends its own) */
    uint64_t partitions;   /* cuts so far, by decision or by call */
    uint64_t resets;       /* connections broken (link_reset, break_after_ns) */
    pl_sim_link_options options;
} pl_sim_link_state;

/* The calls below name hosts by address text ("10.0.0.1"). Each returns
 * 0; PL_EINVAL when a host is not a host address (dotted IPv4 in
 * 10.0.0.0/8 or 127.0.0.0/8), both name the same host (no link), or the
 * options or the output are NULL or bad; PL_ENOSYS when no simulation
 * runs on this thread (the real backend has no links to cut); or
 * PL_ENOMEM. A call's effect on traffic is judged when that traffic
 * arrives: a cut loses the datagrams in flight too. */

/* Cuts a -> b and b -> a until pl_sim_heal. */
int pl_sim_partition(const char *a, const char *b);
/* Cuts from -> to only, until pl_sim_heal: replies still get through. */
int pl_sim_partition_oneway(const char *from, const char *to);
/* Ends every cut of a -> b and b -> a (a call's or a decision's). */
int pl_sim_heal(const char *a, const char *b);
/* Holds the traffic of a -> b and b -> a until pl_sim_unhold. */
int pl_sim_hold(const char *a, const char *b);
/* Ends the holds of a -> b and b -> a: held datagrams arrive now, in
 * order, and waiting stream segments go on. */
int pl_sim_unhold(const char *a, const char *b);
/* Replaces the options of from -> to (copied; valid options only). */
int pl_sim_link_set(const char *from, const char *to, const pl_sim_link_options *o);
/* Fills *out with the state of from -> to (a link nothing used yet has
 * the run's default options and zero counters). */
int pl_sim_link_get(const char *from, const char *to, pl_sim_link_state *out);

/* Names the messages the calling task sends from now on in the
 * explanations of link decisions (a shrunk schedule, `pollen why`), with
 * the printf-style text of fmt: "link latency: the 'VoteResponse term 6'
 * from node 'n2' to node 'n1' (10.0.0.2 -> 10.0.0.1) was held 3.200 ms
 * more". The label stays the task's until its next call; NULL or "" takes
 * it away. It names datagrams and stream writes, not connection attempts
 * or the end of a stream. A task without a label is named with its
 * latest trace note (pl_trace_event, pl_trace_note) instead, "a stream
 * write of 'primary' (after its note 'replicating put 3')", and else by
 * its name alone. At most 47 bytes are kept (a longer label ends in
 * "..."). Words only: a label changes no decision, trace or hash. Only a
 * run that explains its decisions keeps it, so elsewhere the call costs a
 * branch and formats nothing (its arguments are still evaluated). From a
 * task's poll; elsewhere, and outside a simulation (the real backend),
 * it does nothing. */
__attribute__((format(printf, 1, 2))) void pl_sim_send_label(const char *fmt, ...);

#ifdef __cplusplus
}
#endif
#endif
