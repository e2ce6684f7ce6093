/* sim/src/net/net_impl.h: what the network's files share, and nothing
 * the rest of the simulator may use (that is net.h).
 *
 * Layers, each file calling only the ones above it (no call cycle):
 *   table.c   objects by id, handles, growth
 *   events.c  the delivery heap on (time, seq)
 *   ready.c   readiness gathered per delivery, registration
 *   faults.c  latency and fault decisions, the fault options
 *   label.c   the words naming a message (label.h; reads the world only)
 *   link.c    links between hosts: their state and decisions
 *   addr.c    addresses, the bound table, bind and listen
 *   chan.c    byte channels (pipes and stream directions), resets
 *   stream.c  connections: connect, accept, shutdown, stream I/O
 *   dgram.c   datagrams
 *   net.c     lifecycle, delivery dispatch, the system's entries
 *
 * Determinism rules every file keeps: no clock, no randomness and no
 * pointer value reaches behaviour or a trace. Time is the simulator's
 * virtual now, every choice is a pl__sim_choose decision, and everything
 * is ordered by handle, object id or sequence number. Objects refer to
 * each other by pointer only where both sides unlink on close; pending
 * events name their target by object id, so an event whose target is gone
 * simply finds nothing.
 */
#ifndef POLLEN_SIM_NET_IMPL_H
#define POLLEN_SIM_NET_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net.h"
#include "pollen/error.h"

enum {
    PL__NET_RING_MIN = 512, /* first byte buffer of a channel; doubles up to the max */
    PL__NET_HEAP_MIN = 16,
    PL__NET_TABLE_MIN = 16,
    PL__NET_OP_EVENTS_MAX = 2, /* events any single operation schedules, close aside */
    PL__NET_PORT_LAST = 65535,
};

/* ---- Types -------------------------------------------------------------- */

typedef enum obj_type { OBJ_EP = 1, OBJ_CHAN = 2 } obj_type;

/* First member of every object that pending events may name. */
typedef struct obj {
    uint32_t id;   /* index in the reactor's object table, never reused */
    uint32_t type; /* obj_type */
} obj;

/* A loopback address, compared field by field. */
typedef struct addr {
    uint16_t family; /* AF_INET, AF_INET6; 0 when unset */
    uint16_t port;   /* host order */
    uint8_t ip[16];  /* network order; the first 4 bytes for AF_INET */
} addr;

typedef struct seg {
    uint32_t len; /* bytes, 0 for a FIN */
    uint32_t fin; /* nonzero: end of stream */
} seg;

typedef struct ep ep;

/* One direction of a byte stream. buf holds the unread bytes (the first
 * `readable`) followed by the bytes still in flight, described by segs. */
typedef struct chan {
    obj hdr;
    uint8_t *buf; /* ring of cap bytes */
    size_t cap, head, len;
    size_t readable; /* delivered, not yet read */
    seg *segs;       /* ring of in-flight segments, in write order */
    size_t segs_cap, segs_head, segs_len;
    pl_time last_ns;     /* delivery time of the latest segment */
    ep *reader, *writer; /* NULL once that side closed */
    bool eof;            /* the FIN arrived */
    bool fin_queued;
    bool reader_gone;    /* writes fail with PL_EPIPE */
    bool writer_blocked; /* a write said EAGAIN for lack of space */
    uint32_t link;       /* the link writer -> reader crosses, index + 1; 0: one host */
    bool silent;         /* the reader's node crashed without a word: nothing arrives */
    bool stalled;        /* the head segment waits on a cut or held link, or silence */
    pl_time stalled_ns;  /* since when */
} chan;

typedef struct dgram {
    struct dgram *next;
    addr from, to;
    size_t len;
    uint8_t data[];
} dgram;

typedef enum ep_kind { EP_PIPE_R, EP_PIPE_W, EP_STREAM, EP_DGRAM } ep_kind;

typedef enum ep_state {
    ST_FRESH,
    ST_LISTENING,
    ST_CONNECTING,
    ST_CONNECTED,
    ST_REFUSED, /* connect failed: `error` */
    ST_RESET,
} ep_state;

struct ep {
    obj hdr;
    int handle; /* -1 while waiting in a listener's backlog */
    ep_kind kind;
    ep_state state;
    int family;
    int error;  /* ST_REFUSED: the connect error */
    bool bound; /* in the reactor's bound list */
    bool shut_rd, shut_wr;
    uint32_t eagain_owed; /* PL_IO_* directions just given a spurious EAGAIN */
    pl_io_source *src;    /* registration, NULL when none */
    uint32_t node;        /* the node whose task opened it (sim_node.h); 0: none */
    addr local, peer;
    chan *rx, *tx;
    /* Listener: established connections not yet accepted (FIFO). */
    ep *backlog_head, *backlog_tail, *backlog_next;
    size_t backlog_len, backlog_max;
    /* Datagram socket: received datagrams (FIFO). */
    dgram *q_head, *q_tail;
    size_t q_bytes;
    /* Connecting: the attempt waits on a cut or held link since. */
    bool stalled;
    pl_time stalled_ns;
    /* Readiness gathered during one pl__reactor_deliver. */
    uint32_t ready_bits;
    bool in_ready;
    ep *ready_next;
};

typedef enum ev_type { EV_SEGMENT, EV_DGRAM, EV_CONNECT, EV_NOTIFY, EV_RESET } ev_type;

typedef struct event {
    pl_time at_ns;
    uint64_t seq; /* tie-break: scheduling order */
    ev_type type;
    uint32_t target; /* object id (not EV_DGRAM) */
    uint32_t bits;   /* EV_NOTIFY: PL_IO_* */
    dgram *dg;       /* EV_DGRAM: owned by the event */
} event;

struct pl__reactor {
    pl__sim *sim;
    pl_sim_fault_options faults; /* validated */
    obj **objs;                  /* by id; id 0 unused. Ids are never reused, so the
                                  * table keeps one NULL per object ever freed */
    size_t objs_len, objs_cap;
    ep **handles; /* by handle - HANDLE_FIRST; NULL once closed */
    size_t handles_len, handles_cap;
    size_t open_handles;
    ep **bound; /* bound endpoints in bind order */
    size_t bound_len, bound_cap;
    uint32_t next_port;
    event *heap; /* min-heap on (at_ns, seq) */
    size_t heap_len, heap_cap;
    uint64_t seq;
    ep *ready_head, *ready_tail;
    struct link *links; /* links between hosts, in the order first used; never removed */
    size_t links_len, links_cap;
};

/* The link from -> to between two distinct hosts (link.c). */
typedef struct link {
    uint32_t from, to; /* hosts, IPv4 in host order */
    pl_sim_link_options o;
    pl_time cut_until;  /* cut while now < it; PL_TIME_NEVER: until healed */
    pl_time held_until; /* likewise, held */
    dgram *held_head, *held_tail; /* arrived while held until released */
    pl_sim_link_state count;      /* the counters of pl_sim_link_state */
} link;

/* Appends node to the FIFO list (head, tail) linked through node->next:
 * the backlog, the datagram queue and the ready list keep arrival order. */
#define PL__NET_FIFO_PUSH(head, tail, node, next)                                                  \
    do {                                                                                           \
        (node)->next = NULL;                                                                       \
        if ((tail) != NULL) {                                                                      \
            (tail)->next = (node);                                                                 \
        } else {                                                                                   \
            (head) = (node);                                                                       \
        }                                                                                          \
        (tail) = (node);                                                                           \
    } while (0)

/* The reactor behind a system entry's self (the pl__sim). */
static inline pl__reactor *pl__net_of(void *self)
{
    pl__reactor *r = ((pl__sim *)self)->reactor;
    PL__SIM_ASSERT(r != NULL);
    return r;
}

/* ---- table.c: objects, handles, growth ---------------------------------- */

/* Makes *arr hold at least `need` elements of `size` bytes (doubling). */
bool pl__net_reserve(void **arr, size_t *cap, size_t need, size_t size, size_t min);
#define PL__NET_RESERVE(arr, cap, need, min)                                                       \
    pl__net_reserve((void **)&(arr), &(cap), (need), sizeof *(arr), (min))

/* Room for k more objects / handles; the _new calls below then succeed
 * in the table (they may still fail to allocate the object). */
bool pl__net_objs_reserve(pl__reactor *r, size_t k);
bool pl__net_handles_reserve(pl__reactor *r, size_t k);
/* Live endpoint or channel of that id, or NULL (gone, or another type). */
ep *pl__net_ep_get(const pl__reactor *r, uint32_t id);
chan *pl__net_chan_get(const pl__reactor *r, uint32_t id);
/* The endpoint behind an open handle, or NULL. */
ep *pl__net_ep_of(const pl__reactor *r, int handle);
/* Gives e the next handle number (room reserved); returns it. */
int pl__net_handle_assign(pl__reactor *r, ep *e);
/* Takes e's handle out of the table (the close of an open handle). */
void pl__net_handle_release(pl__reactor *r, ep *e);
chan *pl__net_chan_new(pl__reactor *r);
ep *pl__net_ep_new(pl__reactor *r, ep_kind kind, int family);
void pl__net_chan_free(pl__reactor *r, chan *c);
void pl__net_ep_free(pl__reactor *r, ep *e);
/* Frees the objects of an operation that could not allocate them all
 * (NULL ones are skipped). */
void pl__net_free_new(pl__reactor *r, ep *e1, ep *e2, chan *c1, chan *c2);
/* Frees every object left (the reactor's teardown). */
void pl__net_table_free(pl__reactor *r);

/* ---- events.c: the delivery heap ---------------------------------------- */

/* Room for k more events: operations reserve first, so a push cannot
 * fail and no operation stops halfway. */
bool pl__net_heap_reserve(pl__reactor *r, size_t k);
/* Adds an event (room reserved); its seq is the scheduling order. */
void pl__net_heap_push(pl__reactor *r, event ev);
/* Removes the earliest (at_ns, seq) event; the heap must not be empty. */
event pl__net_heap_pop(pl__reactor *r);
/* Makes e ready for `bits` after delay_ns (room reserved). */
void pl__net_notify_later(pl__reactor *r, ep *e, uint32_t bits, pl_time delay_ns);
/* Frees the datagrams pending events own (the reactor's teardown). */
void pl__net_heap_free(pl__reactor *r);

/* ---- ready.c: readiness ------------------------------------------------- */

/* Gathers readiness during one delivery; order of first marking. Does
 * nothing for an unregistered endpoint (registration reports the state). */
void pl__net_mark_ready(pl__reactor *r, ep *e, uint32_t bits);
/* Takes e off the gathered list (it is being closed). */
void pl__net_ready_unlink(pl__reactor *r, ep *e);
/* Fires the gathered readiness, simultaneous ones in PL_DECIDE_IO_ORDER
 * order. Returns how many sources were made ready. */
size_t pl__net_notify_ready(pl__reactor *r);

/* ---- faults.c: decisions ------------------------------------------------ */

typedef enum fault { F_NONE, F_SHORT, F_EAGAIN, F_LOSS, F_RESET } fault;

#define PL__NET_FBIT(f) (1u << (f))

/* A latency drawn for an operation of e. */
pl_time pl__net_latency(pl__reactor *r, const ep *e);
/* Draws one fault among `allowed` (PL__NET_FBIT set), in enum order after
 * "none". No decision is consulted when nothing is allowed. */
fault pl__net_pick_fault(pl__reactor *r, const ep *e, uint32_t allowed);
/* How many of n >= 2 possible bytes a short operation moves: 1..n-1. */
size_t pl__net_short_len(pl__reactor *r, const ep *e, size_t n);
/* PL__NET_FBIT(F_EAGAIN) when an operation in direction `bit` that could
 * succeed may draw a spurious EAGAIN; consumes the exemption after one. */
uint32_t pl__net_eagain_fault(const pl__reactor *r, ep *e, uint32_t bit);
/* "10.0.0.1:5000 <-> 10.0.0.3:41234": a connection, e's end first. */
void pl__net_conn_text(const ep *e, char *buf, size_t len);
/* The faults stream or pipe reads and writes of n bytes may draw. */
uint32_t pl__net_stream_faults(const pl__reactor *r, ep *e, size_t n, uint32_t bit);
/* The faults a sendto may draw. */
uint32_t pl__net_send_faults(const pl__reactor *r, ep *e);
/* A spurious EAGAIN: schedules the re-notification (one heap slot) and
 * returns PL_EAGAIN. */
ssize_t pl__net_spurious_eagain(pl__reactor *r, ep *e, uint32_t bit);

/* ---- link.c: links between hosts ---------------------------------------- */

/* The host of an address: its IPv4 address in host order, 127.0.0.1 for
 * all of 127.0.0.0/8, 0 for IPv6 (::1 is the one IPv6 host). */
uint32_t pl__net_host(const addr *a);
/* The link from -> to, index + 1 (created with the run's default options,
 * with its reverse), 0 when both are on one host, or PL_ENOMEM. */
int pl__net_link_index(pl__reactor *r, const addr *from, const addr *to);
/* The link of an index + 1 from pl__net_link_index (not 0). */
link *pl__net_link_at(const pl__reactor *r, uint32_t index);
/* A crossing's latency: base plus the link_latency extra. m: what
 * crosses, for the explanation's words (label.h), as below. */
pl_time pl__net_link_latency(pl__reactor *r, link *l, pl__label_msg m);
/* A send of m on l: on an open link, draws the partition and clog
 * decisions. */
void pl__net_link_on_send(pl__reactor *r, link *l, pl__label_msg m);
/* Whether a datagram on l is lost, duplicated, held back (decisions). */
bool pl__net_link_lose(pl__reactor *r, link *l);
bool pl__net_link_dup(pl__reactor *r, link *l);
bool pl__net_link_reorder(pl__reactor *r, link *l);
/* Whether a stream write on l breaks its connection (a decision). */
bool pl__net_link_reset(pl__reactor *r, link *l);
/* Cut or held at now. */
bool pl__net_link_cut(const link *l, pl_time now);
bool pl__net_link_held(const link *l, pl_time now);
/* When l is neither cut nor held (now when open; PL_TIME_NEVER when that
 * waits for a call). */
pl_time pl__net_link_open_at(const link *l, pl_time now);
/* What a stream crossing due now on l does (a segment, a connection
 * attempt), waiting since *since when *waiting: LINK_GO on an open link
 * (clearing *waiting); LINK_WAIT with *again, when to look again (the
 * link opens, or break_after_ns is up); LINK_GIVE_UP once it waited
 * break_after_ns. */
typedef enum link_verdict { LINK_GO, LINK_WAIT, LINK_GIVE_UP } link_verdict;
link_verdict pl__net_link_wait(const link *l, pl_time now, bool *waiting, pl_time *since,
                               pl_time *again);
/* Keeps d until the link's hold is released. */
void pl__net_link_keep(link *l, dgram *d);
/* The entries behind pollen/sim_net.h, on hosts (pl__net_host values).
 * 0, PL_EINVAL (from == to) or PL_ENOMEM. */
int pl__net_link_partition(pl__reactor *r, uint32_t from, uint32_t to, bool both);
int pl__net_link_heal(pl__reactor *r, uint32_t a, uint32_t b);
/* Cuts a <-> b both ways until `until` (a longer cut already there stays):
 * a node's isolation (node_isolate.c). 0 or PL_EINVAL / PL_ENOMEM. */
int pl__net_link_cut_pair(pl__reactor *r, uint32_t a, uint32_t b, pl_time until);
int pl__net_link_hold(pl__reactor *r, uint32_t a, uint32_t b);
int pl__net_link_release(pl__reactor *r, uint32_t a, uint32_t b);
int pl__net_link_set(pl__reactor *r, uint32_t from, uint32_t to, const pl_sim_link_options *o);
int pl__net_link_get(const pl__reactor *r, uint32_t from, uint32_t to, pl_sim_link_state *out);
/* Frees the held datagrams and the table (the reactor's teardown). */
void pl__net_links_free(pl__reactor *r);

/* ---- addr.c: addresses and binding -------------------------------------- */

/* Parses a sockaddr of `family` that must be a host's address (loopback,
 * or IPv4 in 10.0.0.0/8): 0, PL_EINVAL (malformed, other family) or
 * PL_EADDRNOTAVAIL (nothing else exists here). */
int pl__net_addr_parse(const struct sockaddr *sa, socklen_t len, int family, addr *out);
/* Writes a as a sockaddr into out (truncated to *len) and sets *len to
 * the full length, like getsockname. NULL out or len: nothing. */
void pl__net_addr_write(const addr *a, struct sockaddr *out, socklen_t *len);
/* Binds e to its family's loopback address with an ephemeral port unless
 * already bound: 0, PL_ENOMEM or PL_EADDRINUSE. */
int pl__net_autobind(pl__reactor *r, ep *e);
void pl__net_unbind(pl__reactor *r, ep *e);
/* The datagram socket (datagram) or listening stream socket bound to a. */
ep *pl__net_find_bound(const pl__reactor *r, const addr *a, bool datagram);

/* ---- chan.c: byte channels ---------------------------------------------- */

static inline bool pl__net_chan_readable(const chan *c) { return c->readable > 0 || c->eof; }

static inline size_t pl__net_chan_space(const chan *c)
{
    PL__SIM_ASSERT(c->len <= PL__NET_STREAM_BUF_MAX);
    return PL__NET_STREAM_BUF_MAX - c->len;
}

static inline uint32_t pl__net_chan_write_bits(const chan *c)
{
    if (c->reader_gone) {
        return PL_IO_WRITABLE | PL_IO_ERROR;
    }
    return pl__net_chan_space(c) > 0 ? PL_IO_WRITABLE : 0;
}

/* Room for one more in-flight segment. */
bool pl__net_segs_reserve(chan *c);
/* Reads from / writes to a channel for endpoint e (faults drawn). */
ssize_t pl__net_chan_read(pl__reactor *r, ep *e, chan *c, void *buf, size_t len);
ssize_t pl__net_chan_write(pl__reactor *r, ep *e, chan *c, const void *buf, size_t len);
/* The reader closed or shut down (one heap slot). */
void pl__net_chan_drop_reader(pl__reactor *r, chan *c, bool tell_writer);
/* The writer closed or shut down; fin queues end of stream (one heap
 * slot, one segment slot). */
void pl__net_chan_drop_writer(pl__reactor *r, chan *c, const ep *by, bool fin);
/* Drops both of e's channels: graceful, as a close (the writer hears, the
 * reader gets end of stream: two heap slots and a segment slot), or not,
 * as a reset. */
void pl__net_chan_detach(pl__reactor *r, ep *e, bool graceful);
/* An EV_SEGMENT for channel `id` is due. */
void pl__net_chan_arrive(pl__reactor *r, uint32_t id);
/* Breaks e's connection (one heap slot when tell_peer). */
void pl__net_reset_conn(pl__reactor *r, ep *e, bool tell_peer);
/* e's node vanished (a crash decided silent): e leaves the connection
 * with no reset and no end of stream. The peer still gets what was in
 * flight to it, then nothing; its writes fill the window and then wait,
 * and its segments wait as on a cut link until break_after_ns breaks the
 * connection for it. Schedules nothing. */
void pl__net_silence_conn(pl__reactor *r, ep *e);

/* ---- stream.c: connections ---------------------------------------------- */

ep *pl__net_backlog_pop(ep *l);
/* EV_CONNECT / EV_RESET for endpoint `id` are due. */
void pl__net_connect_arrive(pl__reactor *r, uint32_t id);
void pl__net_reset_arrive(pl__reactor *r, uint32_t id);
ssize_t pl__net_stream_read(pl__reactor *r, ep *e, void *buf, size_t len);
ssize_t pl__net_stream_write(pl__reactor *r, ep *e, const void *buf, size_t len);

/* ---- dgram.c: datagrams ------------------------------------------------- */

/* An EV_DGRAM is due: d goes to whoever is bound to its destination now,
 * or is freed. */
void pl__net_dgram_arrive(pl__reactor *r, dgram *d);
ssize_t pl__net_dgram_recv(pl__reactor *r, ep *e, void *buf, size_t len, struct sockaddr *sa,
                           socklen_t *sa_len);
ssize_t pl__net_dgram_send(pl__reactor *r, ep *e, const void *buf, size_t len,
                           const struct sockaddr *sa, socklen_t sa_len);

#endif
