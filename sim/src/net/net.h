/* sim/src/net/net.h: the simulated reactor's constants, fault classes and
 * the entries sim_internal.h does not declare.
 *
 * Model (net.c). Handles are small integers from 3 upward, never
 * reused within a run. Objects:
 *   pipes            a read end and a write end sharing one byte channel;
 *   stream sockets   AF_INET / AF_INET6 SOCK_STREAM on loopback addresses
 *                    (127.0.0.0/8, ::1): bind, listen with a backlog,
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
 *     pl__sim_choose(PL_DECIDE_IO_LATENCY, PL__REACTOR_LATENCY_STEPS) *
 *     PL__REACTOR_LATENCY_QUANTUM_NS
 * (0..700 us; choice 0 = no delay, as in production). Byte streams stay in
 * order: a chunk is never delivered before an earlier one of the same
 * direction. Datagrams draw their latencies independently, so they may be
 * reordered.
 *
 * Faults. Each operation that could succeed may draw one
 * PL_DECIDE_IO_FAULT decision among the fault classes enabled in the
 * reactor's mask that apply to it, in this order (choice 0: no fault):
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
 * (a lost reply, a broken connection) and are off by default.
 */
#ifndef POLLEN_SIM_REACTOR_H
#define POLLEN_SIM_REACTOR_H

#include <stdint.h>

#include "sim_internal.h"

/* The first handle number (0, 1, 2 look like stdio in traces). */
#define PL__REACTOR_HANDLE_FIRST 3

/* Latency: choices 0..STEPS-1 of PL_DECIDE_IO_LATENCY, times the quantum. */
#define PL__REACTOR_LATENCY_STEPS 8u
#define PL__REACTOR_LATENCY_QUANTUM_NS (100 * PL_US)

/* Bytes per stream or pipe direction, unread plus in flight: a write past
 * it says PL_EAGAIN until the reader drains. */
#define PL__REACTOR_STREAM_BUF_MAX (64u * 1024u)

/* Largest datagram (PL_EMSGSIZE beyond), and bytes a datagram socket
 * queues before further arrivals are dropped; each queued datagram counts
 * its payload plus the overhead, so empty datagrams are bounded too. */
#define PL__REACTOR_DGRAM_MAX 65507u
#define PL__REACTOR_DGRAM_QUEUE_MAX (64u * 1024u)
#define PL__REACTOR_DGRAM_OVERHEAD 32u

/* Ephemeral ports are handed out from here upward, in request order,
 * wrapping at 65535 and skipping ports in use. */
#define PL__REACTOR_EPHEMERAL_FIRST 40000

/* listen() clamps its backlog to [1, this]. */
#define PL__REACTOR_BACKLOG_MAX 4096

/* Fault classes (a mask). */
enum {
    PL__REACTOR_FAULT_SHORT_READ = 1u << 0,
    PL__REACTOR_FAULT_SHORT_WRITE = 1u << 1,
    PL__REACTOR_FAULT_EAGAIN = 1u << 2,  /* spurious, then re-notified */
    PL__REACTOR_FAULT_LOSS = 1u << 3,    /* datagrams vanish */
    PL__REACTOR_FAULT_RESET = 1u << 4,   /* connections break: PL_ECONNRESET */
};

/* What a new reactor allows: faults correct code must tolerate anyway. */
#define PL__REACTOR_FAULTS_DEFAULT                                                    \
    (PL__REACTOR_FAULT_SHORT_READ | PL__REACTOR_FAULT_SHORT_WRITE |                   \
     PL__REACTOR_FAULT_EAGAIN)

/* Sets / reads the enabled fault classes. Faults still fire only when
 * the decision stream's io_fault knob says so. */
void pl__reactor_set_faults(pl__reactor *r, uint32_t mask);
uint32_t pl__reactor_faults(const pl__reactor *r);

/* The seam's shutdown entry (SHUT_RD, SHUT_WR, SHUT_RDWR) on a connected
 * stream socket: after SHUT_WR the peer reads end of stream once the data
 * in flight is in; after SHUT_RD local reads return 0 and the peer's
 * writes fail with PL_EPIPE, as if the reader had closed. Returns 0,
 * PL_EBADF, PL_EINVAL (bad how, not a stream), PL_ENOTCONN or
 * PL_ENOMEM. */
int pl__reactor_shutdown(pl__reactor *r, int handle, int how);

#endif
