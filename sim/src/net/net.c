/* sim/src/net/net.c: the simulator's in-memory network (see net.h).
 *
 * Determinism rules this file keeps: no clock, no randomness and no
 * pointer value reaches behaviour or a trace. Time is the simulator's
 * virtual now, every choice is a pl__sim_choose decision, and everything
 * is ordered by handle, object id or sequence number. Objects refer to
 * each other by pointer only where both sides unlink on close; pending
 * events name their target by object id, so an event whose target is gone
 * simply finds nothing.
 */
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pollen/error.h"
#include "net.h"

enum {
    RING_MIN = 512,       /* first byte buffer of a channel; doubles up to the max */
    HEAP_MIN = 16,
    TABLE_MIN = 16,
    OP_EVENTS_MAX = 2,    /* events any single operation schedules, close aside */
    PORT_LAST = 65535,
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
    uint8_t *buf;         /* ring of cap bytes */
    size_t cap, head, len;
    size_t readable;      /* delivered, not yet read */
    seg *segs;            /* ring of in-flight segments, in write order */
    size_t segs_cap, segs_head, segs_len;
    pl_time last_ns;      /* delivery time of the latest segment */
    ep *reader, *writer;  /* NULL once that side closed */
    bool eof;             /* the FIN arrived */
    bool fin_queued;
    bool reader_gone;     /* writes fail with PL_EPIPE */
    bool writer_blocked;  /* a write said EAGAIN for lack of space */
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
    int handle;         /* -1 while waiting in a listener's backlog */
    ep_kind kind;
    ep_state state;
    int family;
    int error;          /* ST_REFUSED: the connect error */
    bool bound;         /* in the reactor's bound list */
    bool shut_rd, shut_wr;
    uint32_t eagain_owed; /* PL_IO_* directions just given a spurious EAGAIN */
    pl_io_source *src;  /* registration, NULL when none */
    addr local, peer;
    chan *rx, *tx;
    /* Listener: established connections not yet accepted (FIFO). */
    ep *backlog_head, *backlog_tail, *backlog_next;
    size_t backlog_len, backlog_max;
    /* Datagram socket: received datagrams (FIFO). */
    dgram *q_head, *q_tail;
    size_t q_bytes;
    /* Readiness gathered during one pl__reactor_deliver. */
    uint32_t ready_bits;
    bool in_ready;
    ep *ready_next;
};

typedef enum ev_type { EV_SEGMENT, EV_DGRAM, EV_CONNECT, EV_NOTIFY, EV_RESET } ev_type;

typedef struct event {
    pl_time at_ns;
    uint64_t seq;     /* tie-break: scheduling order */
    ev_type type;
    uint32_t target;  /* object id (not EV_DGRAM) */
    uint32_t bits;    /* EV_NOTIFY: PL_IO_* */
    dgram *dg;        /* EV_DGRAM: owned by the event */
} event;

struct pl__reactor {
    pl__sim *sim;
    uint32_t faults;      /* PL__REACTOR_FAULT_* */
    obj **objs;           /* by id; id 0 unused. Ids are never reused, so the
                           * table keeps one NULL per object ever freed */
    size_t objs_len, objs_cap;
    ep **handles;         /* by handle - HANDLE_FIRST; NULL once closed */
    size_t handles_len, handles_cap;
    size_t open_handles;
    ep **bound;           /* bound endpoints in bind order */
    size_t bound_len, bound_cap;
    uint32_t next_port;
    event *heap;          /* min-heap on (at_ns, seq) */
    size_t heap_len, heap_cap;
    uint64_t seq;
    ep *ready_head, *ready_tail;
};

/* ---- Growth ------------------------------------------------------------- */

/* Makes *arr hold at least `need` elements of `size` bytes (doubling). */
static bool reserve(void **arr, size_t *cap, size_t need, size_t size, size_t min)
{
    if (need <= *cap) {
        return true;
    }
    size_t n = *cap > 0 ? *cap : min;
    while (n < need) {
        n *= 2;
    }
    void *p = realloc(*arr, n * size);
    if (p == NULL) {
        return false;
    }
    *arr = p;
    *cap = n;
    return true;
}

#define RESERVE(arr, cap, need, min) reserve((void **)&(arr), &(cap), (need), sizeof *(arr), (min))

/* ---- Objects and handles ------------------------------------------------ */

static bool objs_reserve(pl__reactor *r, size_t k)
{
    size_t base = r->objs_len > 0 ? r->objs_len : 1;
    return RESERVE(r->objs, r->objs_cap, base + k, TABLE_MIN);
}

/* Gives o the next id. The table must have room (objs_reserve). */
static void obj_add(pl__reactor *r, obj *o, obj_type type)
{
    if (r->objs_len == 0) {
        r->objs[0] = NULL;
        r->objs_len = 1;
    }
    o->id = (uint32_t)r->objs_len;
    o->type = type;
    r->objs[r->objs_len++] = o;
}

static obj *obj_get(const pl__reactor *r, uint32_t id, obj_type type)
{
    if (id == 0 || id >= r->objs_len || r->objs[id] == NULL) {
        return NULL;
    }
    return r->objs[id]->type == (uint32_t)type ? r->objs[id] : NULL;
}

static ep *ep_get(const pl__reactor *r, uint32_t id)
{
    return (ep *)obj_get(r, id, OBJ_EP);
}

static chan *chan_get(const pl__reactor *r, uint32_t id)
{
    return (chan *)obj_get(r, id, OBJ_CHAN);
}

static ep *ep_of(const pl__reactor *r, int handle)
{
    if (handle < PL__REACTOR_HANDLE_FIRST) {
        return NULL;
    }
    size_t i = (size_t)(handle - PL__REACTOR_HANDLE_FIRST);
    return i < r->handles_len ? r->handles[i] : NULL;
}

static bool handles_reserve(pl__reactor *r, size_t k)
{
    return RESERVE(r->handles, r->handles_cap, r->handles_len + k, TABLE_MIN);
}

/* Gives e the next handle number. The table must have room. */
static int handle_assign(pl__reactor *r, ep *e)
{
    e->handle = PL__REACTOR_HANDLE_FIRST + (int)r->handles_len;
    r->handles[r->handles_len++] = e;
    r->open_handles++;
    return e->handle;
}

static chan *chan_new(pl__reactor *r)
{
    chan *c = calloc(1, sizeof *c);
    if (c != NULL) {
        obj_add(r, &c->hdr, OBJ_CHAN);
    }
    return c;
}

static ep *ep_new(pl__reactor *r, ep_kind kind, int family)
{
    ep *e = calloc(1, sizeof *e);
    if (e != NULL) {
        obj_add(r, &e->hdr, OBJ_EP);
        e->handle = -1;
        e->kind = kind;
        e->family = family;
    }
    return e;
}

static void chan_free(pl__reactor *r, chan *c)
{
    r->objs[c->hdr.id] = NULL;
    free(c->buf);
    free(c->segs);
    free(c);
}

static void dgram_list_free(dgram *d)
{
    while (d != NULL) {
        dgram *next = d->next;
        free(d);
        d = next;
    }
}

static void ep_free(pl__reactor *r, ep *e)
{
    r->objs[e->hdr.id] = NULL;
    dgram_list_free(e->q_head);
    free(e);
}

/* ---- Event heap --------------------------------------------------------- */

static bool ev_less(const event *a, const event *b)
{
    return a->at_ns < b->at_ns || (a->at_ns == b->at_ns && a->seq < b->seq);
}

static bool heap_reserve(pl__reactor *r, size_t k)
{
    return RESERVE(r->heap, r->heap_cap, r->heap_len + k, HEAP_MIN);
}

/* Adds an event; room must have been reserved, so this cannot fail and
 * operations never stop halfway. */
static void heap_push(pl__reactor *r, event ev)
{
    ev.seq = r->seq++;
    size_t i = r->heap_len++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!ev_less(&ev, &r->heap[parent])) {
            break;
        }
        r->heap[i] = r->heap[parent];
        i = parent;
    }
    r->heap[i] = ev;
}

static event heap_pop(pl__reactor *r)
{
    event top = r->heap[0];
    event last = r->heap[--r->heap_len];
    size_t n = r->heap_len;
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n) {
            break;
        }
        if (child + 1 < n && ev_less(&r->heap[child + 1], &r->heap[child])) {
            child++;
        }
        if (!ev_less(&r->heap[child], &last)) {
            break;
        }
        r->heap[i] = r->heap[child];
        i = child;
    }
    if (n > 0) {
        r->heap[i] = last;
    }
    return top;
}

/* ---- Decisions ---------------------------------------------------------- */

static pl_time latency(pl__reactor *r, const ep *e)
{
    uint32_t steps = pl__sim_choose(r->sim, PL_DECIDE_IO_LATENCY, PL__REACTOR_LATENCY_STEPS,
                                    e->hdr.id);
    return (pl_time)steps * PL__REACTOR_LATENCY_QUANTUM_NS;
}

typedef enum fault { F_NONE, F_SHORT, F_EAGAIN, F_LOSS, F_RESET } fault;

#define FBIT(f) (1u << (f))

/* Draws one fault among `allowed` (FBIT set), in enum order after
 * "none". No decision is consulted when nothing is allowed. */
static fault pick_fault(pl__reactor *r, const ep *e, uint32_t allowed)
{
    fault opts[5];
    uint32_t n = 0;
    opts[n++] = F_NONE;
    for (int f = F_SHORT; f <= F_RESET; f++) {
        if (allowed & FBIT(f)) {
            opts[n++] = (fault)f;
        }
    }
    if (n == 1) {
        return F_NONE;
    }
    return opts[pl__sim_choose(r->sim, PL_DECIDE_IO_FAULT, n, e->hdr.id)];
}

/* How many of n possible bytes a short operation moves: 1..n-1. */
static size_t short_len(pl__reactor *r, const ep *e, size_t n)
{
    uint32_t span = n - 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(n - 1);
    return 1 + pl__sim_choose(r->sim, PL_DECIDE_IO_FAULT, span, e->hdr.id);
}

/* Whether an operation in direction `bit` that could succeed may draw a
 * spurious EAGAIN. Never twice in a row on one endpoint and direction:
 * the attempt after one is exempt, so even an always-on io_fault knob
 * cannot starve correct code (an accept offered only "none, EAGAIN"
 * would otherwise never succeed). Called only where the operation can
 * succeed, which is what consumes the exemption. */
static uint32_t eagain_fault(const pl__reactor *r, ep *e, uint32_t bit)
{
    if (e->eagain_owed & bit) {
        e->eagain_owed &= ~bit;
        return 0;
    }
    return (r->faults & PL__REACTOR_FAULT_EAGAIN) ? FBIT(F_EAGAIN) : 0;
}

/* Fault classes of the mask that stream reads and writes may draw. */
static uint32_t stream_faults(const pl__reactor *r, ep *e, size_t n, uint32_t bit)
{
    uint32_t short_bit = bit == PL_IO_READABLE ? PL__REACTOR_FAULT_SHORT_READ
                                               : PL__REACTOR_FAULT_SHORT_WRITE;
    uint32_t allowed = eagain_fault(r, e, bit);
    if ((r->faults & short_bit) && n >= 2) {
        allowed |= FBIT(F_SHORT);
    }
    if ((r->faults & PL__REACTOR_FAULT_RESET) && e->kind == EP_STREAM) {
        allowed |= FBIT(F_RESET);
    }
    return allowed;
}

/* Makes e ready for `bits` after a latency (room reserved). */
static void notify_later(pl__reactor *r, ep *e, uint32_t bits, pl_time delay_ns)
{
    heap_push(r, (event){.at_ns = pl__sim_now(r->sim) + delay_ns,
                         .type = EV_NOTIFY,
                         .target = e->hdr.id,
                         .bits = bits});
}

/* A spurious EAGAIN: the operation could have succeeded, so readiness
 * must come back by itself or a correct future would wait forever. */
static ssize_t spurious_eagain(pl__reactor *r, ep *e, uint32_t bit)
{
    e->eagain_owed |= bit;
    notify_later(r, e, bit, latency(r, e));
    return PL_EAGAIN;
}

/* ---- Addresses ---------------------------------------------------------- */

static int addr_parse(const struct sockaddr *sa, socklen_t len, int family, addr *out)
{
    memset(out, 0, sizeof *out);
    if (sa == NULL || sa->sa_family != family) {
        return PL_EINVAL;
    }
    if (family == AF_INET) {
        struct sockaddr_in sin;
        if (len < (socklen_t)sizeof sin) {
            return PL_EINVAL;
        }
        memcpy(&sin, sa, sizeof sin);
        memcpy(out->ip, &sin.sin_addr, 4);
        out->port = ntohs(sin.sin_port);
    } else {
        struct sockaddr_in6 sin6;
        if (len < (socklen_t)sizeof sin6) {
            return PL_EINVAL;
        }
        memcpy(&sin6, sa, sizeof sin6);
        memcpy(out->ip, &sin6.sin6_addr, 16);
        out->port = ntohs(sin6.sin6_port);
    }
    out->family = (uint16_t)family;
    return 0;
}

static bool addr_is_loopback(const addr *a)
{
    if (a->family == AF_INET) {
        return a->ip[0] == 127;
    }
    static const uint8_t v6_loopback[16] = {[15] = 1};
    return memcmp(a->ip, v6_loopback, 16) == 0;
}

static addr addr_loopback(int family)
{
    addr a = {.family = (uint16_t)family};
    if (family == AF_INET) {
        a.ip[0] = 127;
        a.ip[3] = 1;
    } else {
        a.ip[15] = 1;
    }
    return a;
}

static bool addr_equal(const addr *a, const addr *b)
{
    return a->family == b->family && a->port == b->port && memcmp(a->ip, b->ip, 16) == 0;
}

/* Writes a as a sockaddr into out (truncated to *len) and sets *len to
 * the full length, like getsockname. */
static void addr_write(const addr *a, struct sockaddr *out, socklen_t *len)
{
    if (out == NULL || len == NULL) {
        return;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t full;
    if (a->family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(a->port);
        memcpy(&sin->sin_addr, a->ip, 4);
        full = (socklen_t)sizeof *sin;
    } else {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(a->port);
        memcpy(&sin6->sin6_addr, a->ip, 16);
        full = (socklen_t)sizeof *sin6;
    }
    memcpy(out, &ss, *len < full ? *len : full);
    *len = full;
}

/* ---- Bound endpoints and ports ------------------------------------------ */

static bool same_space(const ep *a, const ep *b)
{
    return (a->kind == EP_DGRAM) == (b->kind == EP_DGRAM);
}

static bool port_in_use(const pl__reactor *r, const ep *e, uint16_t port)
{
    for (size_t i = 0; i < r->bound_len; i++) {
        if (same_space(r->bound[i], e) && r->bound[i]->local.port == port) {
            return true;
        }
    }
    return false;
}

static bool addr_in_use(const pl__reactor *r, const ep *e, const addr *a)
{
    for (size_t i = 0; i < r->bound_len; i++) {
        if (same_space(r->bound[i], e) && addr_equal(&r->bound[i]->local, a)) {
            return true;
        }
    }
    return false;
}

/* The next free ephemeral port in request order, or 0. */
static uint16_t ephemeral_port(pl__reactor *r, const ep *e)
{
    uint32_t span = PORT_LAST - PL__REACTOR_EPHEMERAL_FIRST + 1;
    for (uint32_t tries = 0; tries < span; tries++) {
        uint16_t port = (uint16_t)r->next_port;
        r->next_port = port == PORT_LAST ? PL__REACTOR_EPHEMERAL_FIRST : port + 1u;
        if (!port_in_use(r, e, port)) {
            return port;
        }
    }
    return 0;
}

/* Binds e to a (port 0: ephemeral). */
static int bind_addr(pl__reactor *r, ep *e, addr a)
{
    if (!RESERVE(r->bound, r->bound_cap, r->bound_len + 1, TABLE_MIN)) {
        return PL_ENOMEM;
    }
    if (a.port == 0) {
        a.port = ephemeral_port(r, e);
        if (a.port == 0) {
            return PL_EADDRINUSE;
        }
    } else if (addr_in_use(r, e, &a)) {
        return PL_EADDRINUSE;
    }
    e->local = a;
    e->bound = true;
    r->bound[r->bound_len++] = e;
    return 0;
}

static int autobind(pl__reactor *r, ep *e)
{
    return e->bound ? 0 : bind_addr(r, e, addr_loopback(e->family));
}

static void unbind(pl__reactor *r, ep *e)
{
    if (!e->bound) {
        return;
    }
    for (size_t i = 0; i < r->bound_len; i++) {
        if (r->bound[i] == e) {
            /* Keep bind order: lookups scan it and must stay deterministic. */
            memmove(&r->bound[i], &r->bound[i + 1], (r->bound_len - i - 1) * sizeof *r->bound);
            r->bound_len--;
            break;
        }
    }
    e->bound = false;
}

static ep *find_bound(const pl__reactor *r, const addr *a, bool datagram)
{
    for (size_t i = 0; i < r->bound_len; i++) {
        ep *e = r->bound[i];
        bool listening = e->kind == EP_STREAM && e->state == ST_LISTENING;
        bool match = datagram ? e->kind == EP_DGRAM : listening;
        if (match && addr_equal(&e->local, a)) {
            return e;
        }
    }
    return NULL;
}

/* ---- Channels ----------------------------------------------------------- */

static size_t chan_space(const chan *c)
{
    return PL__REACTOR_STREAM_BUF_MAX - c->len;
}

/* Room for one more in-flight segment; the ring is linearized on growth. */
static bool segs_reserve(chan *c)
{
    if (c->segs_len < c->segs_cap) {
        return true;
    }
    size_t n = c->segs_cap > 0 ? 2 * c->segs_cap : 8;
    seg *segs = malloc(n * sizeof *segs);
    if (segs == NULL) {
        return false;
    }
    for (size_t i = 0; i < c->segs_len; i++) {
        segs[i] = c->segs[(c->segs_head + i) % c->segs_cap];
    }
    free(c->segs);
    c->segs = segs;
    c->segs_cap = n;
    c->segs_head = 0;
    return true;
}

static void segs_push(chan *c, seg s)
{
    c->segs[(c->segs_head + c->segs_len) % c->segs_cap] = s;
    c->segs_len++;
}

static seg segs_pop(chan *c)
{
    seg s = c->segs[c->segs_head];
    c->segs_head = (c->segs_head + 1) % c->segs_cap;
    c->segs_len--;
    return s;
}

/* Room for `more` bytes and one more segment, growing amortized (never
 * per byte): the byte ring doubles from RING_MIN up to the stream max. */
static bool chan_reserve(chan *c, size_t more)
{
    if (!segs_reserve(c)) {
        return false;
    }
    size_t need = c->len + more;
    if (need <= c->cap) {
        return true;
    }
    size_t n = c->cap > 0 ? c->cap : RING_MIN;
    while (n < need) {
        n *= 2;
    }
    uint8_t *buf = malloc(n);
    if (buf == NULL) {
        return false;
    }
    /* Linearize while growing so the ring starts at 0 again. */
    size_t first = c->cap - c->head < c->len ? c->cap - c->head : c->len;
    if (c->len > 0) {
        memcpy(buf, c->buf + c->head, first);
        memcpy(buf + first, c->buf, c->len - first);
    }
    free(c->buf);
    c->buf = buf;
    c->cap = n;
    c->head = 0;
    return true;
}

static void ring_put(chan *c, const uint8_t *src, size_t n)
{
    size_t tail = (c->head + c->len) % c->cap;
    size_t first = c->cap - tail < n ? c->cap - tail : n;
    memcpy(c->buf + tail, src, first);
    memcpy(c->buf, src + first, n - first);
    c->len += n;
}

static void ring_get(chan *c, uint8_t *dst, size_t n)
{
    size_t first = c->cap - c->head < n ? c->cap - c->head : n;
    memcpy(dst, c->buf + c->head, first);
    memcpy(dst + first, c->buf, n - first);
    c->head = (c->head + n) % c->cap;
    c->len -= n;
    c->readable -= n;
}

/* Schedules segment s after everything already in flight on c: a byte
 * stream is never delivered out of order, whatever latencies are drawn.
 * Room in the heap and in c->segs must be reserved. */
static void chan_schedule(pl__reactor *r, chan *c, seg s, const ep *by)
{
    pl_time at_ns = pl__sim_now(r->sim) + latency(r, by);
    if (at_ns < c->last_ns) {
        at_ns = c->last_ns;
    }
    c->last_ns = at_ns;
    segs_push(c, s);
    heap_push(r, (event){.at_ns = at_ns, .type = EV_SEGMENT, .target = c->hdr.id});
}

static bool chan_readable(const chan *c)
{
    return c->readable > 0 || c->eof;
}

static uint32_t chan_write_bits(const chan *c)
{
    if (c->reader_gone) {
        return PL_IO_WRITABLE | PL_IO_ERROR;
    }
    return chan_space(c) > 0 ? PL_IO_WRITABLE : 0;
}

static void chan_release(pl__reactor *r, chan *c)
{
    if (c->reader == NULL && c->writer == NULL) {
        chan_free(r, c);
    }
}

/* The reader closed or shut down: unread and in-flight bytes are gone,
 * and the writer learns it (PL_EPIPE, readiness with PL_IO_ERROR) so a
 * writer parked on a full buffer wakes up. Needs one heap slot. */
static void chan_drop_reader(pl__reactor *r, chan *c, bool tell_writer)
{
    c->reader = NULL;
    if (!c->reader_gone) {
        c->reader_gone = true;
        c->len = c->readable = c->head = 0;
        c->segs_len = c->segs_head = 0;
        if (tell_writer && c->writer != NULL) {
            notify_later(r, c->writer, PL_IO_WRITABLE | PL_IO_ERROR, latency(r, c->writer));
        }
    }
    chan_release(r, c);
}

/* The writer closed or shut down: with fin, the reader sees end of stream
 * after the data in flight. Needs one heap slot and one segment slot. */
static void chan_drop_writer(pl__reactor *r, chan *c, const ep *by, bool fin)
{
    if (fin && !c->fin_queued && !c->reader_gone) {
        c->fin_queued = true;
        chan_schedule(r, c, (seg){.len = 0, .fin = 1}, by);
    }
    c->writer = NULL;
    chan_release(r, c);
}

/* ---- Readiness ---------------------------------------------------------- */

/* What an endpoint is ready for right now: reported at registration, as
 * epoll does for a descriptor added in edge-triggered mode. */
static uint32_t ep_readiness(const ep *e)
{
    const uint32_t all = PL_IO_READABLE | PL_IO_WRITABLE | PL_IO_ERROR;
    switch (e->kind) {
    case EP_PIPE_R:
        return chan_readable(e->rx) ? PL_IO_READABLE : 0;
    case EP_PIPE_W:
        return chan_write_bits(e->tx);
    case EP_DGRAM:
        return PL_IO_WRITABLE | (e->q_head != NULL ? PL_IO_READABLE : 0);
    case EP_STREAM:
        break;
    }
    switch (e->state) {
    case ST_LISTENING:
        return e->backlog_head != NULL ? PL_IO_READABLE : 0;
    case ST_CONNECTED: {
        uint32_t rd = e->shut_rd || chan_readable(e->rx) ? PL_IO_READABLE : 0;
        return rd | (e->shut_wr ? PL_IO_WRITABLE : chan_write_bits(e->tx));
    }
    case ST_REFUSED:
    case ST_RESET:
        return all;
    default:
        return 0;
    }
}

/* Gathers readiness during one delivery; order of first marking. */
static void mark_ready(pl__reactor *r, ep *e, uint32_t bits)
{
    if (e->src == NULL) {
        return; /* registration reports the state when it comes */
    }
    e->ready_bits |= bits;
    if (!e->in_ready) {
        e->in_ready = true;
        e->ready_next = NULL;
        if (r->ready_tail != NULL) {
            r->ready_tail->ready_next = e;
        } else {
            r->ready_head = e;
        }
        r->ready_tail = e;
    }
}

/* Takes the k-th gathered endpoint off the list. */
static ep *ready_take(pl__reactor *r, uint32_t k)
{
    ep *prev = NULL;
    ep *e = r->ready_head;
    for (uint32_t i = 0; i < k; i++) {
        prev = e;
        e = e->ready_next;
    }
    if (prev != NULL) {
        prev->ready_next = e->ready_next;
    } else {
        r->ready_head = e->ready_next;
    }
    if (r->ready_tail == e) {
        r->ready_tail = prev;
    }
    e->ready_next = NULL;
    e->in_ready = false;
    return e;
}

static void ready_unlink(pl__reactor *r, ep *e)
{
    if (!e->in_ready) {
        return;
    }
    uint32_t k = 0;
    for (ep *it = r->ready_head; it != e; it = it->ready_next) {
        k++;
    }
    (void)ready_take(r, k);
}

/* Fires the gathered readiness, simultaneous ones in PL_DECIDE_IO_ORDER
 * order: each step picks among those remaining (0 = first marked). */
static size_t notify_ready(pl__reactor *r)
{
    uint32_t n = 0;
    for (ep *e = r->ready_head; e != NULL; e = e->ready_next) {
        n++;
    }
    size_t fired = 0;
    for (; n > 0; n--) {
        uint32_t k = pl__sim_choose(r->sim, PL_DECIDE_IO_ORDER, n, r->ready_head->hdr.id);
        ep *e = ready_take(r, k);
        uint32_t bits = e->ready_bits;
        e->ready_bits = 0;
        if (e->src != NULL) {
            pl__sim_event(r->sim, PL__EV_IO_READY, 0, e->src->id, bits);
            pl_io_source_ready(e->src, bits);
            fired++;
        }
    }
    return fired;
}

/* ---- Connections -------------------------------------------------------- */

static void backlog_push(ep *l, ep *s)
{
    s->backlog_next = NULL;
    if (l->backlog_tail != NULL) {
        l->backlog_tail->backlog_next = s;
    } else {
        l->backlog_head = s;
    }
    l->backlog_tail = s;
    l->backlog_len++;
}

static ep *backlog_pop(ep *l)
{
    ep *s = l->backlog_head;
    if (s != NULL) {
        l->backlog_head = s->backlog_next;
        if (l->backlog_head == NULL) {
            l->backlog_tail = NULL;
        }
        l->backlog_len--;
        s->backlog_next = NULL;
    }
    return s;
}

static void refuse(pl__reactor *r, ep *c, int err)
{
    c->state = ST_REFUSED;
    c->error = err;
    mark_ready(r, c, PL_IO_READABLE | PL_IO_WRITABLE | PL_IO_ERROR);
}

/* The connection attempt reached listener l: make the server side (no
 * handle until accepted), one channel per direction, and queue it. */
static int establish(pl__reactor *r, ep *l, ep *c)
{
    if (!objs_reserve(r, 3)) {
        return PL_ENOMEM;
    }
    ep *s = ep_new(r, EP_STREAM, c->family);
    chan *up = chan_new(r);
    chan *down = chan_new(r);
    if (s == NULL || up == NULL || down == NULL) {
        if (s != NULL) {
            ep_free(r, s);
        }
        if (up != NULL) {
            chan_free(r, up);
        }
        if (down != NULL) {
            chan_free(r, down);
        }
        return PL_ENOMEM;
    }
    s->state = ST_CONNECTED;
    s->local = l->local;
    s->peer = c->local;
    up->writer = c;
    up->reader = s;
    down->writer = s;
    down->reader = c;
    c->tx = s->rx = up;
    c->rx = s->tx = down;
    c->state = ST_CONNECTED;
    backlog_push(l, s);
    mark_ready(r, c, PL_IO_WRITABLE);
    mark_ready(r, l, PL_IO_READABLE);
    return 0;
}

/* Breaks e's connection: both channels go without a FIN. The peer learns
 * after a latency (tell_peer) through EV_RESET. Needs one heap slot. */
static void reset_conn(pl__reactor *r, ep *e, bool tell_peer)
{
    ep *peer = e->tx != NULL ? e->tx->reader : e->rx != NULL ? e->rx->writer : NULL;
    if (tell_peer && peer != NULL) {
        heap_push(r, (event){.at_ns = pl__sim_now(r->sim) + latency(r, e),
                             .type = EV_RESET,
                             .target = peer->hdr.id});
    }
    if (e->rx != NULL) {
        chan_drop_reader(r, e->rx, false);
        e->rx = NULL;
    }
    if (e->tx != NULL) {
        chan_drop_writer(r, e->tx, e, false);
        e->tx = NULL;
    }
    e->state = ST_RESET;
}

/* ---- Events ------------------------------------------------------------- */

static void ev_segment(pl__reactor *r, uint32_t id)
{
    chan *c = chan_get(r, id);
    if (c == NULL || c->segs_len == 0) {
        return; /* the reader went away and took the data with it */
    }
    seg s = segs_pop(c);
    if (s.fin) {
        c->eof = true;
    } else {
        c->readable += s.len;
    }
    if (c->reader != NULL) {
        mark_ready(r, c->reader, PL_IO_READABLE);
    }
}

static size_t dgram_charge(const dgram *d)
{
    return d->len + PL__REACTOR_DGRAM_OVERHEAD;
}

/* A datagram arrives: whoever is bound to its destination now gets it. */
static void ev_dgram(pl__reactor *r, dgram *d)
{
    ep *to = find_bound(r, &d->to, true);
    if (to == NULL || to->q_bytes + dgram_charge(d) > PL__REACTOR_DGRAM_QUEUE_MAX) {
        free(d);
        return;
    }
    d->next = NULL;
    if (to->q_tail != NULL) {
        to->q_tail->next = d;
    } else {
        to->q_head = d;
    }
    to->q_tail = d;
    to->q_bytes += dgram_charge(d);
    mark_ready(r, to, PL_IO_READABLE);
}

static void ev_connect(pl__reactor *r, uint32_t id)
{
    ep *c = ep_get(r, id);
    if (c == NULL || c->state != ST_CONNECTING) {
        return; /* closed before it got anywhere */
    }
    /* A full backlog refuses rather than retrying, so runs end. */
    ep *l = find_bound(r, &c->peer, false);
    if (l == NULL || l->backlog_len >= l->backlog_max) {
        refuse(r, c, PL_ECONNREFUSED);
        return;
    }
    int rc = establish(r, l, c);
    if (rc < 0) {
        refuse(r, c, rc);
    }
}

static void ev_reset(pl__reactor *r, uint32_t id)
{
    ep *e = ep_get(r, id);
    if (e == NULL || e->state != ST_CONNECTED) {
        return;
    }
    reset_conn(r, e, false);
    mark_ready(r, e, PL_IO_READABLE | PL_IO_WRITABLE | PL_IO_ERROR);
}

static void run_event(pl__reactor *r, event *ev)
{
    switch (ev->type) {
    case EV_SEGMENT:
        ev_segment(r, ev->target);
        break;
    case EV_DGRAM:
        ev_dgram(r, ev->dg);
        break;
    case EV_CONNECT:
        ev_connect(r, ev->target);
        break;
    case EV_NOTIFY: {
        ep *e = ep_get(r, ev->target);
        if (e != NULL) {
            mark_ready(r, e, ev->bits);
        }
        break;
    }
    case EV_RESET:
        ev_reset(r, ev->target);
        break;
    }
}

/* ---- Lifecycle ---------------------------------------------------------- */

int pl__reactor_create(pl__reactor **out, pl__sim *sim)
{
    *out = NULL;
    pl__reactor *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return PL_ENOMEM;
    }
    r->sim = sim;
    r->faults = PL__REACTOR_FAULTS_DEFAULT;
    r->next_port = PL__REACTOR_EPHEMERAL_FIRST;
    *out = r;
    return 0;
}

void pl__reactor_destroy(pl__reactor *r)
{
    if (r == NULL) {
        return;
    }
    for (size_t i = 0; i < r->heap_len; i++) {
        if (r->heap[i].type == EV_DGRAM) {
            free(r->heap[i].dg);
        }
    }
    for (size_t id = 1; id < r->objs_len; id++) {
        obj *o = r->objs[id];
        if (o != NULL && o->type == OBJ_EP) {
            ep_free(r, (ep *)o);
        } else if (o != NULL) {
            chan_free(r, (chan *)o);
        }
    }
    free(r->objs);
    free(r->handles);
    free(r->bound);
    free(r->heap);
    free(r);
}

void pl__reactor_set_faults(pl__reactor *r, uint32_t mask)
{
    r->faults = mask;
}

uint32_t pl__reactor_faults(const pl__reactor *r)
{
    return r->faults;
}

pl_time pl__reactor_next_event(const pl__reactor *r)
{
    return r->heap_len > 0 ? r->heap[0].at_ns : PL_TIME_NEVER;
}

size_t pl__reactor_deliver(pl__reactor *r, pl_time now)
{
    while (r->heap_len > 0 && r->heap[0].at_ns <= now) {
        event ev = heap_pop(r);
        run_event(r, &ev);
    }
    return notify_ready(r);
}

size_t pl__reactor_open_handles(const pl__reactor *r)
{
    return r->open_handles;
}

int pl__reactor_io_register(pl__reactor *r, pl_io_source *src)
{
    ep *e = ep_of(r, src->handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->src != NULL) {
        return PL_EINVAL; /* one registration per handle, as epoll's EEXIST */
    }
    e->src = src;
    src->ready |= ep_readiness(e);
    return 0;
}

void pl__reactor_io_deregister(pl__reactor *r, pl_io_source *src)
{
    ep *e = ep_of(r, src->handle);
    if (e != NULL && e->src == src) {
        e->src = NULL;
    }
}

/* ---- Creating and closing handles --------------------------------------- */

int pl__reactor_socket(pl__reactor *r, int domain, int type)
{
    type &= ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (domain < 0 || type < 0) {
        return PL_EINVAL;
    }
    if ((domain != AF_INET && domain != AF_INET6) || (type != SOCK_STREAM && type != SOCK_DGRAM)) {
        return PL_ENOSYS;
    }
    if (!objs_reserve(r, 1) || !handles_reserve(r, 1)) {
        return PL_ENOMEM;
    }
    ep *e = ep_new(r, type == SOCK_STREAM ? EP_STREAM : EP_DGRAM, domain);
    if (e == NULL) {
        return PL_ENOMEM;
    }
    return handle_assign(r, e);
}

int pl__reactor_pipe(pl__reactor *r, int handles[2])
{
    if (!objs_reserve(r, 3) || !handles_reserve(r, 2)) {
        return PL_ENOMEM;
    }
    chan *c = chan_new(r);
    ep *rd = ep_new(r, EP_PIPE_R, 0);
    ep *wr = ep_new(r, EP_PIPE_W, 0);
    if (c == NULL || rd == NULL || wr == NULL) {
        if (c != NULL) {
            chan_free(r, c);
        }
        if (rd != NULL) {
            ep_free(r, rd);
        }
        if (wr != NULL) {
            ep_free(r, wr);
        }
        return PL_ENOMEM;
    }
    c->reader = rd;
    c->writer = wr;
    rd->rx = c;
    wr->tx = c;
    handles[0] = handle_assign(r, rd);
    handles[1] = handle_assign(r, wr);
    return 0;
}

/* Room for everything closing e schedules: a FIN and a writer
 * notification for it and for each connection waiting in its backlog. */
static bool close_reserve(pl__reactor *r, ep *e)
{
    if (!heap_reserve(r, 2 + 2 * e->backlog_len)) {
        return false;
    }
    if (e->tx != NULL && !segs_reserve(e->tx)) {
        return false;
    }
    for (ep *s = e->backlog_head; s != NULL; s = s->backlog_next) {
        if (s->tx != NULL && !segs_reserve(s->tx)) {
            return false;
        }
    }
    return true;
}

/* Closes e and frees it. Connections still in a listener's backlog are
 * closed as if accepted and closed at once: their clients read end of
 * stream (a reset would need the reset knob). */
static void ep_close(pl__reactor *r, ep *e)
{
    unbind(r, e);
    ready_unlink(r, e);
    if (e->rx != NULL) {
        chan_drop_reader(r, e->rx, true);
        e->rx = NULL;
    }
    if (e->tx != NULL) {
        chan_drop_writer(r, e->tx, e, true);
        e->tx = NULL;
    }
    for (ep *s = backlog_pop(e); s != NULL; s = backlog_pop(e)) {
        ep_close(r, s);
    }
    ep_free(r, e);
}

int pl__reactor_close(pl__reactor *r, int handle)
{
    ep *e = ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (!close_reserve(r, e)) {
        /* A real close always releases the handle, and callers do not
         * retry one: left open, the peer would wait forever for the end
         * of stream and the run would end in a deadlock it never had. */
        pl__sim_finding(r->sim, PL_FINDING_ASSERTION, NULL,
                        "simulator out of memory: closing handle %d", handle);
        return PL_ENOMEM;
    }
    r->handles[handle - PL__REACTOR_HANDLE_FIRST] = NULL;
    r->open_handles--;
    ep_close(r, e);
    return 0;
}

/* ---- Addresses and connections ------------------------------------------ */

static bool is_socket(const ep *e)
{
    return e->kind == EP_STREAM || e->kind == EP_DGRAM;
}

int pl__reactor_bind(pl__reactor *r, int handle, const struct sockaddr *sa, socklen_t len)
{
    ep *e = ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (!is_socket(e) || e->bound || e->state != ST_FRESH) {
        return PL_EINVAL;
    }
    addr a;
    int rc = addr_parse(sa, len, e->family, &a);
    if (rc < 0) {
        return rc;
    }
    if (!addr_is_loopback(&a)) {
        return PL_EADDRNOTAVAIL;
    }
    return bind_addr(r, e, a);
}

int pl__reactor_listen(pl__reactor *r, int handle, int backlog)
{
    ep *e = ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->kind != EP_STREAM || (e->state != ST_FRESH && e->state != ST_LISTENING)) {
        return PL_EINVAL;
    }
    int rc = autobind(r, e);
    if (rc < 0) {
        return rc;
    }
    e->backlog_max = backlog < 1 ? 1 : (size_t)backlog;
    if (e->backlog_max > PL__REACTOR_BACKLOG_MAX) {
        e->backlog_max = PL__REACTOR_BACKLOG_MAX;
    }
    e->state = ST_LISTENING;
    return 0;
}

int pl__reactor_accept(pl__reactor *r, int handle, struct sockaddr *sa, socklen_t *len)
{
    ep *l = ep_of(r, handle);
    if (l == NULL) {
        return PL_EBADF;
    }
    if (l->kind != EP_STREAM || l->state != ST_LISTENING) {
        return PL_EINVAL;
    }
    if (l->backlog_head == NULL) {
        return PL_EAGAIN;
    }
    if (!heap_reserve(r, OP_EVENTS_MAX) || !handles_reserve(r, 1)) {
        return PL_ENOMEM;
    }
    if (pick_fault(r, l, eagain_fault(r, l, PL_IO_READABLE)) == F_EAGAIN) {
        return (int)spurious_eagain(r, l, PL_IO_READABLE);
    }
    ep *s = backlog_pop(l);
    addr_write(&s->peer, sa, len);
    return handle_assign(r, s);
}

int pl__reactor_connect(pl__reactor *r, int handle, const struct sockaddr *sa, socklen_t len)
{
    ep *e = ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->kind == EP_DGRAM) {
        return PL_ENOSYS; /* connected datagram sockets are not modelled */
    }
    if (e->kind != EP_STREAM || e->state != ST_FRESH) {
        return PL_EINVAL;
    }
    addr to;
    int rc = addr_parse(sa, len, e->family, &to);
    if (rc < 0) {
        return rc;
    }
    if (!addr_is_loopback(&to)) {
        return PL_EADDRNOTAVAIL; /* nothing but loopback exists here */
    }
    if (!heap_reserve(r, OP_EVENTS_MAX)) {
        return PL_ENOMEM;
    }
    rc = autobind(r, e);
    if (rc < 0) {
        return rc;
    }
    e->peer = to;
    e->state = ST_CONNECTING;
    heap_push(r, (event){.at_ns = pl__sim_now(r->sim) + latency(r, e),
                         .type = EV_CONNECT,
                         .target = e->hdr.id});
    return PL_EINPROGRESS;
}

int pl__reactor_connect_result(pl__reactor *r, int handle)
{
    ep *e = ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->kind != EP_STREAM) {
        return PL_EINVAL;
    }
    switch (e->state) {
    case ST_CONNECTED:
        return 0;
    case ST_REFUSED:
        return e->error;
    case ST_RESET:
        return PL_ECONNRESET;
    case ST_CONNECTING:
        return PL_EINPROGRESS;
    default:
        return PL_ENOTCONN;
    }
}

int pl__reactor_local_addr(pl__reactor *r, int handle, struct sockaddr *sa, socklen_t *len)
{
    ep *e = ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (!is_socket(e)) {
        return PL_EINVAL;
    }
    /* Unbound sockets report the wildcard address with port 0. */
    addr any = {.family = (uint16_t)e->family};
    addr_write(e->local.family != 0 ? &e->local : &any, sa, len);
    return 0;
}

int pl__reactor_shutdown(pl__reactor *r, int handle, int how)
{
    ep *e = ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->kind != EP_STREAM || (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)) {
        return PL_EINVAL;
    }
    if (e->state != ST_CONNECTED) {
        return PL_ENOTCONN;
    }
    if (!heap_reserve(r, 3) || (e->tx != NULL && !segs_reserve(e->tx))) {
        return PL_ENOMEM;
    }
    uint32_t bits = 0;
    if (how != SHUT_WR && !e->shut_rd) {
        e->shut_rd = true;
        chan_drop_reader(r, e->rx, true);
        e->rx = NULL;
        bits |= PL_IO_READABLE;
    }
    if (how != SHUT_RD && !e->shut_wr) {
        e->shut_wr = true;
        chan_drop_writer(r, e->tx, e, true);
        e->tx = NULL;
        bits |= PL_IO_WRITABLE;
    }
    /* Reads now return 0 and writes PL_EPIPE: tell a parked future. The
     * effect is local, so it takes no latency. */
    if (bits != 0) {
        notify_later(r, e, bits, 0);
    }
    return 0;
}

/* ---- Byte streams ------------------------------------------------------- */

static ssize_t chan_read(pl__reactor *r, ep *e, chan *c, void *buf, size_t len)
{
    if (len == 0) {
        return 0;
    }
    if (c->readable == 0) {
        return c->eof ? 0 : PL_EAGAIN;
    }
    if (!heap_reserve(r, OP_EVENTS_MAX)) {
        return PL_ENOMEM;
    }
    size_t n = len < c->readable ? len : c->readable;
    switch (pick_fault(r, e, stream_faults(r, e, n, PL_IO_READABLE))) {
    case F_SHORT:
        n = short_len(r, e, n);
        break;
    case F_EAGAIN:
        return spurious_eagain(r, e, PL_IO_READABLE);
    case F_RESET:
        reset_conn(r, e, true);
        return PL_ECONNRESET;
    default:
        break;
    }
    ring_get(c, buf, n);
    /* The window reopens for a writer that hit the limit; it hears so
     * after a latency, like a window update travelling back. */
    if (c->writer_blocked && c->writer != NULL) {
        c->writer_blocked = false;
        notify_later(r, c->writer, PL_IO_WRITABLE, latency(r, c->writer));
    }
    return (ssize_t)n;
}

static ssize_t chan_write(pl__reactor *r, ep *e, chan *c, const void *buf, size_t len)
{
    if (c->reader_gone) {
        return PL_EPIPE;
    }
    if (len == 0) {
        return 0;
    }
    size_t space = chan_space(c);
    if (space == 0) {
        c->writer_blocked = true; /* the next read that makes room notifies */
        return PL_EAGAIN;
    }
    size_t n = len < space ? len : space;
    if (!heap_reserve(r, OP_EVENTS_MAX) || !chan_reserve(c, n)) {
        return PL_ENOMEM;
    }
    switch (pick_fault(r, e, stream_faults(r, e, n, PL_IO_WRITABLE))) {
    case F_SHORT:
        n = short_len(r, e, n);
        break;
    case F_EAGAIN:
        return spurious_eagain(r, e, PL_IO_WRITABLE);
    case F_RESET:
        reset_conn(r, e, true);
        return PL_ECONNRESET;
    default:
        break;
    }
    ring_put(c, buf, n);
    chan_schedule(r, c, (seg){.len = (uint32_t)n, .fin = 0}, e);
    return (ssize_t)n;
}

/* Errors of a stream socket that is not (or no longer) connected. */
static ssize_t stream_state_error(const ep *e)
{
    switch (e->state) {
    case ST_CONNECTING:
        return PL_EAGAIN; /* connecting: readiness comes with the outcome */
    case ST_REFUSED:
        return e->error;
    case ST_RESET:
        return PL_ECONNRESET;
    default:
        return PL_ENOTCONN;
    }
}

static ssize_t stream_read(pl__reactor *r, ep *e, void *buf, size_t len)
{
    if (e->state != ST_CONNECTED) {
        return stream_state_error(e);
    }
    return e->shut_rd ? 0 : chan_read(r, e, e->rx, buf, len);
}

static ssize_t stream_write(pl__reactor *r, ep *e, const void *buf, size_t len)
{
    if (e->state != ST_CONNECTED) {
        return stream_state_error(e);
    }
    return e->shut_wr ? PL_EPIPE : chan_write(r, e, e->tx, buf, len);
}

/* ---- Datagrams ---------------------------------------------------------- */

static ssize_t dgram_recv(pl__reactor *r, ep *e, void *buf, size_t len, struct sockaddr *sa,
                          socklen_t *sa_len)
{
    if (e->q_head == NULL) {
        return PL_EAGAIN;
    }
    if (!heap_reserve(r, OP_EVENTS_MAX)) {
        return PL_ENOMEM;
    }
    if (pick_fault(r, e, eagain_fault(r, e, PL_IO_READABLE)) == F_EAGAIN) {
        return spurious_eagain(r, e, PL_IO_READABLE);
    }
    dgram *d = e->q_head;
    e->q_head = d->next;
    if (e->q_head == NULL) {
        e->q_tail = NULL;
    }
    e->q_bytes -= dgram_charge(d);
    /* A longer datagram is truncated, as recvfrom(2) does. */
    size_t n = len < d->len ? len : d->len;
    if (n > 0) { /* buf may be NULL with len 0 */
        memcpy(buf, d->data, n);
    }
    addr_write(&d->from, sa, sa_len);
    free(d);
    return (ssize_t)n;
}

static ssize_t dgram_send(pl__reactor *r, ep *e, const void *buf, size_t len,
                          const struct sockaddr *sa, socklen_t sa_len)
{
    addr to;
    int rc = addr_parse(sa, sa_len, e->family, &to);
    if (rc < 0) {
        return rc;
    }
    if (!addr_is_loopback(&to)) {
        return PL_EADDRNOTAVAIL;
    }
    if (len > PL__REACTOR_DGRAM_MAX) {
        return PL_EMSGSIZE;
    }
    if (!heap_reserve(r, OP_EVENTS_MAX)) {
        return PL_ENOMEM;
    }
    rc = autobind(r, e); /* the sender needs an address to be answered at */
    if (rc < 0) {
        return rc;
    }
    dgram *d = malloc(sizeof *d + len);
    if (d == NULL) {
        return PL_ENOMEM;
    }
    uint32_t allowed = eagain_fault(r, e, PL_IO_WRITABLE);
    if (r->faults & PL__REACTOR_FAULT_LOSS) {
        allowed |= FBIT(F_LOSS);
    }
    fault f = pick_fault(r, e, allowed);
    if (f != F_NONE) {
        free(d);
        return f == F_EAGAIN ? spurious_eagain(r, e, PL_IO_WRITABLE) : (ssize_t)len;
    }
    *d = (dgram){.from = e->local, .to = to, .len = len};
    if (len > 0) { /* an empty datagram may come from a NULL buf */
        memcpy(d->data, buf, len);
    }
    heap_push(r, (event){.at_ns = pl__sim_now(r->sim) + latency(r, e),
                         .type = EV_DGRAM,
                         .dg = d});
    return (ssize_t)len;
}

/* ---- The seam's data entries -------------------------------------------- */

ssize_t pl__reactor_read(pl__reactor *r, int handle, void *buf, size_t len)
{
    ep *e = ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    switch (e->kind) {
    case EP_PIPE_R:
        return chan_read(r, e, e->rx, buf, len);
    case EP_STREAM:
        return stream_read(r, e, buf, len);
    case EP_DGRAM:
        return dgram_recv(r, e, buf, len, NULL, NULL);
    default:
        return PL_EBADF; /* the write end of a pipe */
    }
}

ssize_t pl__reactor_write(pl__reactor *r, int handle, const void *buf, size_t len)
{
    ep *e = ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    switch (e->kind) {
    case EP_PIPE_W:
        return chan_write(r, e, e->tx, buf, len);
    case EP_STREAM:
        return stream_write(r, e, buf, len);
    case EP_DGRAM:
        return PL_ENOTCONN; /* no default destination: use sendto */
    default:
        return PL_EBADF; /* the read end of a pipe */
    }
}

ssize_t pl__reactor_sendto(pl__reactor *r, int handle, const void *buf, size_t len,
                           const struct sockaddr *addr_, socklen_t addr_len)
{
    ep *e = ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    switch (e->kind) {
    case EP_DGRAM:
        return dgram_send(r, e, buf, len, addr_, addr_len);
    case EP_STREAM:
        return stream_write(r, e, buf, len); /* a connected stream ignores the address */
    default:
        return PL_EINVAL; /* not a socket */
    }
}

ssize_t pl__reactor_recvfrom(pl__reactor *r, int handle, void *buf, size_t len,
                             struct sockaddr *addr_, socklen_t *addr_len)
{
    ep *e = ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->kind == EP_DGRAM) {
        return dgram_recv(r, e, buf, len, addr_, addr_len);
    }
    if (e->kind != EP_STREAM) {
        return PL_EINVAL; /* not a socket */
    }
    ssize_t n = stream_read(r, e, buf, len);
    if (n >= 0 && addr_len != NULL) {
        *addr_len = 0; /* streams report no sender, as Linux does */
    }
    return n;
}
