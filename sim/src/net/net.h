/* sim/src/net/net.h: the simulated network, as the rest of the simulator
 * sees it. Its files and their layers are listed in net_impl.h.
 *
 * Model. Handles are small integers from 3 upward, never reused within a
 * run. Objects:
 *   pipes            a read end and a write end sharing one byte channel;
 *   stream sockets   AF_INET / AF_INET6 SOCK_STREAM on host addresses
 *                    (127.0.0.0/8, ::1, and the simulated hosts of
 *                    10.0.0.0/8): bind, listen with a backlog,
 *                    connect (always PL_EINPROGRESS, resolved after a
 *                    latency: established, or PL_ECONNREFUSED through
 *                    connect_result when nothing listens or the backlog
 *                    is full), accept; one byte channel per direction;
 *   datagram sockets SOCK_DGRAM: bind, sendto (delivered to whatever is
 *                    bound to the destination when it arrives, dropped
 *                    silently otherwise), recvfrom with the sender address.
 *
 * Time. Every write, FIN, datagram, connection attempt and readiness
 * re-notification travels with a latency of
 *     pl__sim_choose(PL_DECIDE_IO_LATENCY, latency_steps) * latency_quantum_ns
 * (pl_sim_fault_options; by default 0..700 us, choice 0 = no delay, as in
 * production). Byte streams stay in order: a chunk is never delivered
 * before an earlier one of the same direction. Datagrams draw their
 * latencies independently, so they may be reordered. Traffic between two
 * distinct hosts crosses a link instead (link.c, pollen/sim_net.h): the
 * link's latency replaces this one, and the link kinds add loss,
 * duplication, hold-backs, resets, partitions and clogs.
 *
 * Faults. Each operation that could succeed may draw one
 * PL_DECIDE_IO_FAULT decision among the fault classes the run's
 * pl_sim_fault_options enable that apply to it, in this order (choice 0:
 * no fault):
 *   read, recvfrom on a stream   none, short read, EAGAIN, reset
 *   write                        none, short write, EAGAIN, reset
 *   recvfrom, accept             none, EAGAIN
 *   sendto                       none, EAGAIN, loss
 * A short operation moves 1 + pl__sim_choose(PL_DECIDE_IO_FAULT, n - 1)
 * bytes of the n possible. A spurious EAGAIN schedules a readiness
 * re-notification after a latency, so correct edge-triggered code never
 * loses a wakeup, and the next attempt in the same direction on the same
 * handle cannot draw EAGAIN again (so no knob setting starves correct
 * code). Loss and reset change what correct programs compute
 * (a lost reply, a broken connection) and are off by default. How often
 * a fault fires is the io_fault knob of the decision stream.
 *
 * Threads: everything here runs on the executor's thread, inside the run.
 */
#ifndef POLLEN_SIM_NET_H
#define POLLEN_SIM_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sim_internal.h"

/* The first handle number (0, 1, 2 look like stdio in traces). */
#define PL__NET_HANDLE_FIRST 3

/* Bytes per stream or pipe direction, unread plus in flight: a write past
 * it says PL_EAGAIN until the reader drains. */
#define PL__NET_STREAM_BUF_MAX (64u * 1024u)

/* Largest datagram (PL_EMSGSIZE beyond), and bytes a datagram socket
 * queues before further arrivals are dropped; each queued datagram counts
 * its payload plus the overhead, so empty datagrams are bounded too. */
#define PL__NET_DGRAM_MAX       65507u
#define PL__NET_DGRAM_QUEUE_MAX (64u * 1024u)
#define PL__NET_DGRAM_OVERHEAD  32u

/* Ephemeral ports are handed out from here upward, in request order,
 * wrapping at 65535 and skipping ports in use. */
#define PL__NET_EPHEMERAL_FIRST 40000

/* listen() clamps its backlog to [1, this]. */
#define PL__NET_BACKLOG_MAX 4096

/* ---- Lifecycle and delivery (net.c) ------------------------------------ */

/* Creates the network of `sim`, with sim->opts.faults (NULL: the
 * defaults), which must be valid (pl_sim_fault_options_validate).
 * Returns 0 or PL_ENOMEM. */
int pl__reactor_create(pl__reactor **out, pl__sim *sim);
/* Frees everything, open handles and pending events included. NULL: no-op. */
void pl__reactor_destroy(pl__reactor *r);
/* Earliest pending delivery, or PL_TIME_NEVER. */
pl_time pl__reactor_next_event(const pl__reactor *r);
/* Delivers everything due at or before `now`: readiness through
 * pl_io_source_ready, simultaneous ones in PL_DECIDE_IO_ORDER order.
 * Returns how many sources were made ready. */
size_t pl__reactor_deliver(pl__reactor *r, pl_time now);
/* Handles still open. */
size_t pl__reactor_open_handles(const pl__reactor *r);
/* Ends every cut and hold of every link between hosts, as the quiet
 * phase does (quiet.c): the datagrams an open-ended hold kept arrive now,
 * in their order. 0, or PL_ENOMEM with the holds left in force and the
 * cuts healed. */
int pl__net_links_heal(pl__reactor *r);
/* Replaces the fault options (tests change them inside a run); o must be
 * valid. */
void pl__reactor_set_faults(pl__reactor *r, const pl_sim_fault_options *o);
const pl_sim_fault_options *pl__reactor_faults(const pl__reactor *r);

/* The shrinker's words for a non-zero decision of a link kind drawn at
 * `at` (explain.c): writes one line without a newline into buf and
 * returns true, or returns false for any other kind. what: the words
 * link.c wrote for the message the decision struck while the run
 * explained (the decision's text, label.h): for latency "<message> was
 * held 0.400 ms more", for the other kinds "<message>"; NULL or "": the
 * line names the link alone. */
bool pl__net_explain(char *buf, size_t len, uint32_t kind, uint64_t key, uint32_t v, uint32_t n,
                     pl_time at, const char *what);

/* The fault options a run uses: o->faults, or the defaults when NULL. */
void pl__net_faults_of(const pl_sim_options *o, pl_sim_fault_options *out);

/* ---- The system's I/O entries -------------------------------------------
 * Same signatures and meaning as in pollen/system.h: `self` is the
 * pl__sim whose reactor serves the call, so sim.c's vtable points at
 * these directly. */
int pl__net_io_register(void *self, pl_io_source *src);
void pl__net_io_deregister(void *self, pl_io_source *src);
int pl__net_socket(void *self, int domain, int type);
int pl__net_pipe(void *self, int handles[2]);
int pl__net_close(void *self, int handle);
int pl__net_bind(void *self, int handle, const struct sockaddr *addr, socklen_t len);
int pl__net_listen(void *self, int handle, int backlog);
int pl__net_accept(void *self, int handle, struct sockaddr *addr, socklen_t *len);
int pl__net_connect(void *self, int handle, const struct sockaddr *addr, socklen_t len);
int pl__net_connect_result(void *self, int handle);
int pl__net_local_addr(void *self, int handle, struct sockaddr *addr, socklen_t *len);
ssize_t pl__net_read(void *self, int handle, void *buf, size_t len);
ssize_t pl__net_write(void *self, int handle, const void *buf, size_t len);
ssize_t pl__net_sendto(void *self, int handle, const void *buf, size_t len,
                       const struct sockaddr *addr, socklen_t addr_len);
ssize_t pl__net_recvfrom(void *self, int handle, void *buf, size_t len, struct sockaddr *addr,
                         socklen_t *addr_len);
/* shutdown (SHUT_RD, SHUT_WR, SHUT_RDWR) on a connected stream socket:
 * after SHUT_WR the peer reads end of stream once the data in flight is
 * in; after SHUT_RD local reads return 0 and the peer's writes fail with
 * PL_EPIPE, as if the reader had closed. Returns 0, PL_EBADF, PL_EINVAL
 * (bad how, not a stream), PL_ENOTCONN or PL_ENOMEM. */
int pl__net_shutdown(void *self, int handle, int how);

#endif
