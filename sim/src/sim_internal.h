/* sim/src/sim_internal.h: what the simulator's modules share.
 *
 * One pl__sim exists per run. It is the pl_system the executor runs on
 * (its vtable is in sim.c), owns the decision stream, the trace and the
 * reactor, and is the executor's observer (oracle.c).
 */
#ifndef POLLEN_SIM_INTERNAL_H
#define POLLEN_SIM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim.h"
#include "pollen/observer.h"
#include "decide.h"
#include "trace.h"

typedef struct pl__sim pl__sim;
typedef struct pl__reactor pl__reactor;

/* ---- For the reactor and the oracles --------------------------------- */

/* Virtual now. */
pl_time pl__sim_now(const pl__sim *s);

/* A decision from the run's stream (0 = what production does). */
uint32_t pl__sim_choose(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key);

/* Appends a trace event (kind from trace.h; task id 0 when none). */
void pl__sim_event(pl__sim *s, uint32_t kind, uint32_t task, uint64_t a, uint64_t b);

/* Records a finding (the first one wins) and stops the run. */
void pl__sim_finding(pl__sim *s, pl_finding_kind kind, const pl_task *t, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- The reactor: in-memory I/O (reactor.c) ---------------------------
 * Simulated pipes, stream sockets (listen/accept/connect on loopback
 * addresses) and datagram sockets. Handles are small integers owned by
 * the reactor. Data written travels with a latency and faults drawn from
 * the decision stream and becomes readable at a virtual time; the sim's
 * wait() asks for the next delivery time and advances the clock. */
int pl__reactor_create(pl__reactor **out, pl__sim *sim);
void pl__reactor_destroy(pl__reactor *r);
/* Earliest pending delivery, or PL_TIME_NEVER. */
pl_time pl__reactor_next_event(const pl__reactor *r);
/* Delivers everything due at or before `now`: readiness through
 * pl_io_source_ready, simultaneous ones in PL_DECIDE_IO_ORDER order.
 * Returns how many sources were made ready. */
size_t pl__reactor_deliver(pl__reactor *r, pl_time now);
/* Handles still open (reported as leaks at the end of a run). */
size_t pl__reactor_open_handles(const pl__reactor *r);

/* The seam's I/O entries (same meaning as in pollen/system.h). */
int pl__reactor_io_register(pl__reactor *r, pl_io_source *src);
void pl__reactor_io_deregister(pl__reactor *r, pl_io_source *src);
int pl__reactor_socket(pl__reactor *r, int domain, int type);
int pl__reactor_pipe(pl__reactor *r, int handles[2]);
int pl__reactor_close(pl__reactor *r, int handle);
int pl__reactor_bind(pl__reactor *r, int handle, const struct sockaddr *addr, socklen_t len);
int pl__reactor_listen(pl__reactor *r, int handle, int backlog);
int pl__reactor_accept(pl__reactor *r, int handle, struct sockaddr *addr, socklen_t *len);
int pl__reactor_connect(pl__reactor *r, int handle, const struct sockaddr *addr,
                        socklen_t len);
int pl__reactor_connect_result(pl__reactor *r, int handle);
int pl__reactor_local_addr(pl__reactor *r, int handle, struct sockaddr *addr, socklen_t *len);
ssize_t pl__reactor_read(pl__reactor *r, int handle, void *buf, size_t len);
ssize_t pl__reactor_write(pl__reactor *r, int handle, const void *buf, size_t len);
ssize_t pl__reactor_sendto(pl__reactor *r, int handle, const void *buf, size_t len,
                           const struct sockaddr *addr, socklen_t addr_len);
ssize_t pl__reactor_recvfrom(pl__reactor *r, int handle, void *buf, size_t len,
                             struct sockaddr *addr, socklen_t *addr_len);

#endif
