/* sim/src/net/chan.c: byte channels, one per pipe and per direction of a
 * connection. Bytes are written into a ring at once and become readable
 * when their segment's delivery event comes; segments are delivered in
 * write order whatever latencies are drawn, and a segment that crosses a
 * cut or held link waits without being passed (link.c). Also the reset of
 * a connection, which drops both of its channels without an end of
 * stream. */
#include <stdlib.h>
#include <string.h>

#include "net_impl.h"

/* The ring's bookkeeping: unread plus in-flight bytes fit the ring and
 * the stream bound; the readable ones are a prefix. */
static void chan_check(const chan *c)
{
    PL__SIM_ASSERT(c->len <= c->cap && c->len <= PL__NET_STREAM_BUF_MAX);
    PL__SIM_ASSERT(c->readable <= c->len);
    PL__SIM_ASSERT(c->segs_len <= c->segs_cap && (c->cap == 0 || c->head < c->cap));
}

/* Room for one more in-flight segment; the ring is linearized on growth. */
bool pl__net_segs_reserve(chan *c)
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
    PL__SIM_ASSERT(c->segs_len < c->segs_cap);
    c->segs[(c->segs_head + c->segs_len) % c->segs_cap] = s;
    c->segs_len++;
}

static seg segs_pop(chan *c)
{
    PL__SIM_ASSERT(c->segs_len > 0);
    seg s = c->segs[c->segs_head];
    c->segs_head = (c->segs_head + 1) % c->segs_cap;
    c->segs_len--;
    return s;
}

/* Room for `more` bytes and one more segment, growing amortized (never
 * per byte): the byte ring doubles from RING_MIN up to the stream max. */
static bool chan_reserve(chan *c, size_t more)
{
    if (!pl__net_segs_reserve(c)) {
        return false;
    }
    size_t need = c->len + more;
    if (need <= c->cap) {
        return true;
    }
    size_t n = c->cap > 0 ? c->cap : PL__NET_RING_MIN;
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
    PL__SIM_ASSERT(c->len + n <= c->cap);
    size_t tail = (c->head + c->len) % c->cap;
    size_t first = c->cap - tail < n ? c->cap - tail : n;
    memcpy(c->buf + tail, src, first);
    memcpy(c->buf, src + first, n - first);
    c->len += n;
    chan_check(c);
}

static void ring_get(chan *c, uint8_t *dst, size_t n)
{
    PL__SIM_ASSERT(n <= c->readable);
    size_t first = c->cap - c->head < n ? c->cap - c->head : n;
    memcpy(dst, c->buf + c->head, first);
    memcpy(dst + first, c->buf, n - first);
    c->head = (c->head + n) % c->cap;
    c->len -= n;
    c->readable -= n;
    chan_check(c);
}

/* Schedules segment s after everything already in flight on c: a byte
 * stream is never delivered out of order, whatever latencies are drawn.
 * Room in the heap and in c->segs must be reserved. */
static void chan_schedule(pl__reactor *r, chan *c, seg s, const ep *by)
{
    pl__label_msg m = s.fin ? PL__LABEL_FIN : PL__LABEL_WRITE;
    pl_time latency = c->link != 0 ? pl__net_link_latency(r, pl__net_link_at(r, c->link), m)
                                   : pl__net_latency(r, by);
    pl_time at_ns = pl__sim_now(r->sim) + latency;
    if (at_ns < c->last_ns) {
        at_ns = c->last_ns;
    }
    c->last_ns = at_ns;
    segs_push(c, s);
    pl__net_heap_push(r, (event){.at_ns = at_ns, .type = EV_SEGMENT, .target = c->hdr.id});
}

static void chan_release(pl__reactor *r, chan *c)
{
    if (c->reader == NULL && c->writer == NULL) {
        pl__net_chan_free(r, c);
    }
}

/* Unread and in-flight bytes are gone, and the writer learns it
 * (PL_EPIPE, readiness with PL_IO_ERROR) so a writer parked on a full
 * buffer wakes up. */
void pl__net_chan_drop_reader(pl__reactor *r, chan *c, bool tell_writer)
{
    c->reader = NULL;
    if (!c->reader_gone) {
        c->reader_gone = true;
        c->len = c->readable = c->head = 0;
        c->segs_len = c->segs_head = 0;
        if (tell_writer && c->writer != NULL) {
            pl__net_notify_later(r, c->writer, PL_IO_WRITABLE | PL_IO_ERROR,
                                 pl__net_latency(r, c->writer));
        }
    }
    chan_release(r, c);
}

/* With fin, the reader sees end of stream after the data in flight. */
void pl__net_chan_drop_writer(pl__reactor *r, chan *c, const ep *by, bool fin)
{
    if (fin && !c->fin_queued && !c->reader_gone) {
        c->fin_queued = true;
        chan_schedule(r, c, (seg){.len = 0, .fin = 1}, by);
    }
    c->writer = NULL;
    chan_release(r, c);
}

void pl__net_chan_detach(pl__reactor *r, ep *e, bool graceful)
{
    if (e->rx != NULL) {
        pl__net_chan_drop_reader(r, e->rx, graceful);
        e->rx = NULL;
    }
    if (e->tx != NULL) {
        pl__net_chan_drop_writer(r, e->tx, e, graceful);
        e->tx = NULL;
    }
}

/* A connection whose segments waited too long: both ends are reset at
 * once (neither can reach the other to say so), as TCP gives up. */
static void break_conn(pl__reactor *r, chan *c)
{
    ep *ends[2] = {c->writer, c->reader};
    if (ends[0] == NULL && c->reader != NULL && c->reader->tx != NULL) {
        ends[0] = c->reader->tx->reader; /* the writer shut down: it still reads */
    }
    for (int i = 0; i < 2; i++) {
        if (ends[i] != NULL && ends[i]->state == ST_CONNECTED) {
            pl__net_reset_conn(r, ends[i], false);
            pl__net_mark_ready(r, ends[i], PL_IO_READABLE | PL_IO_WRITABLE | PL_IO_ERROR);
        }
    }
}

/* The head segment of c crosses a link: true when it must wait, having
 * either come due again (the popped event's heap slot) when the link
 * opens or break_after_ns is up, or broken the connection. Every event of
 * c delivers c's head segment, so waiting ones keep the stream's order. */
static bool chan_waits(pl__reactor *r, chan *c)
{
    link *l = pl__net_link_at(r, c->link);
    pl_time again;
    switch (pl__net_link_wait(l, pl__sim_now(r->sim), &c->stalled, &c->stalled_ns, &again)) {
    case LINK_GO:
        return false;
    case LINK_GIVE_UP:
        l->count.resets++;
        break_conn(r, c);
        return true;
    case LINK_WAIT:
    default:
        pl__net_heap_push(r, (event){.at_ns = again, .type = EV_SEGMENT, .target = c->hdr.id});
        return true;
    }
}

/* c's reader vanished (pl__net_silence_conn): its head segment waits as
 * on a link that never opens, so the writer gives up after
 * break_after_ns like a TCP retransmitting to a host that is gone. */
static void silent_waits(pl__reactor *r, chan *c)
{
    pl_time now = pl__sim_now(r->sim);
    link *l = c->link != 0 ? pl__net_link_at(r, c->link) : NULL;
    pl_time after = l != NULL ? l->o.break_after_ns : r->faults.link.break_after_ns;
    if (!c->stalled) {
        c->stalled = true;
        c->stalled_ns = now;
    }
    if (now < c->stalled_ns + after) {
        pl__net_heap_push(
            r, (event){.at_ns = c->stalled_ns + after, .type = EV_SEGMENT, .target = c->hdr.id});
        return;
    }
    if (l != NULL) {
        l->count.resets++;
    }
    break_conn(r, c);
}

void pl__net_chan_arrive(pl__reactor *r, uint32_t id)
{
    chan *c = pl__net_chan_get(r, id);
    if (c == NULL || c->segs_len == 0) {
        return; /* the reader went away and took the data with it */
    }
    if (c->silent) {
        silent_waits(r, c);
        return;
    }
    if (c->link != 0 && chan_waits(r, c)) {
        return;
    }
    seg s = segs_pop(c);
    if (s.fin) {
        PL__SIM_ASSERT(c->fin_queued && !c->eof && c->segs_len == 0);
        c->eof = true;
    } else {
        c->readable += s.len;
    }
    chan_check(c);
    if (c->reader != NULL) {
        pl__net_mark_ready(r, c->reader, PL_IO_READABLE);
    }
}

/* Both channels go without a FIN. The peer learns after a latency
 * (tell_peer) through EV_RESET. */
void pl__net_reset_conn(pl__reactor *r, ep *e, bool tell_peer)
{
    ep *peer = e->tx != NULL ? e->tx->reader : e->rx != NULL ? e->rx->writer : NULL;
    if (tell_peer && peer != NULL) {
        pl__net_heap_push(r, (event){.at_ns = pl__sim_now(r->sim) + pl__net_latency(r, e),
                                     .type = EV_RESET,
                                     .target = peer->hdr.id});
    }
    pl__net_chan_detach(r, e, false);
    e->state = ST_RESET;
}

void pl__net_silence_conn(pl__reactor *r, ep *e)
{
    chan *rx = e->rx, *tx = e->tx;
    e->rx = e->tx = NULL;
    if (rx != NULL) {
        /* Not reader_gone: that would tell the writer (PL_EPIPE). */
        rx->reader = NULL;
        rx->silent = true;
        chan_release(r, rx);
    }
    if (tx != NULL) {
        pl__net_chan_drop_writer(r, tx, e, false);
    }
    e->state = ST_RESET;
}

/* ---- Reading and writing ------------------------------------------------ */

/* Draws the fault of a read or write of *n bytes in direction `bit`: 0
 * with *n possibly shortened, or the error the operation returns. */
static ssize_t stream_fault(pl__reactor *r, ep *e, uint32_t bit, size_t *n)
{
    switch (pl__net_pick_fault(r, e, pl__net_stream_faults(r, e, *n, bit))) {
    case F_SHORT:
        *n = pl__net_short_len(r, e, *n);
        return 0;
    case F_EAGAIN:
        return pl__net_spurious_eagain(r, e, bit);
    case F_RESET:
        pl__net_reset_conn(r, e, true);
        return PL_ECONNRESET;
    default:
        return 0;
    }
}

/* A write that crosses a link: the link may cut or clog itself, or break
 * the connection (one heap slot: the peer hears after a latency). */
static bool link_resets(pl__reactor *r, ep *e, link *l)
{
    pl__net_link_on_send(r, l, PL__LABEL_WRITE);
    if (!pl__net_link_reset(r, l)) {
        return false;
    }
    l->count.resets++;
    pl__net_reset_conn(r, e, true);
    return true;
}

ssize_t pl__net_chan_read(pl__reactor *r, ep *e, chan *c, void *buf, size_t len)
{
    PL__SIM_ASSERT(c != NULL && c->reader == e);
    if (len == 0) {
        return 0;
    }
    if (c->readable == 0) {
        return c->eof ? 0 : PL_EAGAIN;
    }
    if (!pl__net_heap_reserve(r, PL__NET_OP_EVENTS_MAX)) {
        return PL_ENOMEM;
    }
    size_t n = len < c->readable ? len : c->readable;
    ssize_t rc = stream_fault(r, e, PL_IO_READABLE, &n);
    if (rc < 0) {
        return rc;
    }
    ring_get(c, buf, n);
    /* The window reopens for a writer that hit the limit; it hears so
     * after a latency, like a window update travelling back. */
    if (c->writer_blocked && c->writer != NULL) {
        c->writer_blocked = false;
        pl__net_notify_later(r, c->writer, PL_IO_WRITABLE, pl__net_latency(r, c->writer));
    }
    return (ssize_t)n;
}

ssize_t pl__net_chan_write(pl__reactor *r, ep *e, chan *c, const void *buf, size_t len)
{
    PL__SIM_ASSERT(c != NULL && c->writer == e);
    if (c->reader_gone) {
        return PL_EPIPE;
    }
    if (len == 0) {
        return 0;
    }
    size_t space = pl__net_chan_space(c);
    if (space == 0) {
        c->writer_blocked = true; /* the next read that makes room notifies */
        return PL_EAGAIN;
    }
    size_t n = len < space ? len : space;
    if (!pl__net_heap_reserve(r, PL__NET_OP_EVENTS_MAX) || !chan_reserve(c, n)) {
        return PL_ENOMEM;
    }
    ssize_t rc = stream_fault(r, e, PL_IO_WRITABLE, &n);
    if (rc < 0) {
        return rc;
    }
    if (c->link != 0 && link_resets(r, e, pl__net_link_at(r, c->link))) {
        return PL_ECONNRESET;
    }
    ring_put(c, buf, n);
    chan_schedule(r, c, (seg){.len = (uint32_t)n, .fin = 0}, e);
    return (ssize_t)n;
}
