/* Zoo: a leader that serves reads on a lease and, woken from a pause,
 * believes it still leads.
 *
 * The program: a replicated register on three nodes (pollen/sim_node.h)
 * over UDP. "primary" (10.0.0.1, pausable) leads at first; "backup"
 * (10.0.0.2) follows; "client" (10.0.0.3) runs a writer and a reader.
 *   primary  a server task answers requests as they come (port 7000); a
 *            ticker sends the backup, from its own socket, a heartbeat with the register's value every
 *            HEARTBEAT and keeps the lease: each heartbeat the backup
 *            acknowledges extends it to the heartbeat's send time plus
 *            LEASE. A write is acknowledged once a heartbeat carrying it
 *            was acknowledged (the backup has it). When the lease runs
 *            out, the ticker steps the primary down: it refuses requests
 *            from then on.
 *   backup   takes every heartbeat's value and acknowledges it; once it
 *            has heard none for TAKEOVER (twice LEASE), it takes over and
 *            serves alone (it ignores the old primary from then on).
 *   client   the writer writes 1, 2, ... in turn at the node it believes
 *            leads, and fails over to the other node when a write is
 *            refused or unanswered for ATTEMPT. The reader sends a read to
 *            the node it believes leads every READ_EVERY without waiting
 *            (the replies name their request), and fails over only when
 *            refused.
 * The `node_pause` decision stops the primary (all its tasks and timers)
 * for 1 to 128 ms at any wait, as a GC pause or SIGSTOP does. The
 * promise: a read sees every write acknowledged before it was sent.
 *
 * BUG (bug_lease_pause): the server answers a read when its `leader`
 * flag says so, and the flag is the ticker's: the lease is checked once
 * per tick. Paused for longer than TAKEOVER, the primary misses the
 * backup's takeover and the writes the backup acknowledged since; when
 * it resumes, the server runs first and answers the reads queued during
 * the pause from the old value, before the ticker sees the lease is long
 * gone. Without a pause the ticker steps the primary down LEASE after the
 * last acknowledged heartbeat, TAKEOVER - LEASE before the backup takes
 * over, so partitions, held links and slow ticks never show it.
 * Finding: assertion (pl_always in the reader: "a read sees every write
 * acknowledged before it was sent"); the shrunk replay is the one pause.
 * FIX (fix_lease_pause): the server checks the lease against the clock
 * when it answers (now < lease end), not a flag computed before: a lease
 * is a promise about time, and only the clock says how much has passed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <pollen/io.h>
#include <pollen/sim_node.h>

#include "zoo.h"

enum { WRITES = 16, READS = 24 };

#define HEARTBEAT  (1 * PL_MS)   /* the primary's ticker */
#define LEASE      (10 * PL_MS)  /* a read lease past an acknowledged heartbeat's send time */
#define TAKEOVER   (20 * PL_MS)  /* the backup's patience */
#define ATTEMPT    (3 * PL_MS)   /* the writer's wait for an answer */
#define READ_EVERY (2 * PL_MS)   /* the reader's pace */
#define DRAIN      (150 * PL_MS) /* the reader's wait for late answers after its last read */

enum { M_PUT = 1, M_GET, M_HB, M_HB_ACK, M_OK, M_VALUE, M_REFUSE };

typedef struct msg {
    uint32_t type;
    uint32_t id;    /* a client's request number, echoed in the answer */
    int64_t value;
    pl_time sent;   /* a heartbeat's send time, echoed in its ack */
} msg;

/* The checker's view: the writer's acknowledgements and what the reads
 * saw. It outlives every node; the nodes share nothing but the network. */
typedef struct lease_state {
    bool fixed;
    int64_t acked;         /* the latest acknowledged write */
    int64_t want[READS + 1]; /* per read: acked when it was sent */
    bool replied[READS + 1];
    int answered;
    int64_t stale_seen;    /* the first stale read: what it returned */
    int64_t stale_want;    /* and what it should have seen at least */
    pl_time stale_at;
} lease_state;

static struct sockaddr_in addr_of(int host, uint16_t port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(0x0a000000u | (uint32_t)host);
    return a;
}

/* ---- Replicas --------------------------------------------------------------- */

typedef struct replica_mem {
    lease_state *st;
    pl_udp_socket sock;  /* requests, answers, heartbeat acks (port 7000) */
    pl_udp_socket beat;  /* the primary's heartbeats (port 7001): one sender per socket */
    bool primary;
    bool leader;
    int64_t value;
    pl_time lease_end;  /* primary: reads and writes are served before it */
    pl_time heard;      /* backup: the latest heartbeat */
    bool pending;       /* primary: a write waits for the backup */
    msg pend;
    struct sockaddr_storage pend_from;
    socklen_t pend_len;
} replica_mem;

/* Whether the node may answer a client now. */
static bool serves(const replica_mem *m, pl_time now)
{
    if (!m->leader || !m->primary) {
        return m->leader;
    }
    if (!m->st->fixed) {
        return true; /* BUG: the ticker's flag, as of its latest tick */
    }
    return now < m->lease_end; /* FIX: the lease, against the clock now */
}

/* What the server answers to `in` (type 0: nothing). */
static msg handle(replica_mem *m, const msg *in, pl_time now, bool *to_pending)
{
    msg out = {.id = in->id};
    *to_pending = false;
    switch (in->type) {
    case M_GET:
        out.type = serves(m, now) ? M_VALUE : M_REFUSE;
        out.value = m->value;
        break;
    case M_PUT:
        if (!serves(m, now)) {
            out.type = M_REFUSE;
            break;
        }
        m->value = in->value > m->value ? in->value : m->value;
        out.type = m->primary ? 0 : M_OK; /* the primary answers once replicated */
        m->pending = m->primary;
        m->pend = *in;
        break;
    case M_HB:
        if (!m->primary && !m->leader) {
            m->heard = now;
            m->value = in->value > m->value ? in->value : m->value;
            out = (msg){.type = M_HB_ACK, .value = m->value, .sent = in->sent};
        }
        break;
    case M_HB_ACK:
        if (m->primary && in->sent + LEASE > m->lease_end) {
            m->lease_end = in->sent + LEASE;
        }
        if (m->primary && m->pending && in->value >= m->pend.value) {
            m->pending = false;
            *to_pending = true;
            out = (msg){.type = M_OK, .id = m->pend.id};
        }
        break;
    default:
        break;
    }
    return out;
}

typedef struct server {
    pl_future base;
    replica_mem *m;
    msg in, out;
    bool to_pending;
    struct sockaddr_in primary;
    pl_udp_recv recv;
    pl_udp_send send;
} server;

static pl_poll_result server_poll(pl_future *f, pl_context *cx)
{
    server *self = (server *)f;
    replica_mem *m = self->m;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->recv = pl_udp_recv_from(&m->sock, &self->in, sizeof self->in);
        PL_AWAIT(cx, &self->recv);
        if (self->recv.result != (ssize_t)sizeof self->in) {
            continue;
        }
        if (self->in.type == M_PUT && m->primary) {
            m->pend_from = self->recv.from;
            m->pend_len = self->recv.from_len;
        }
        self->out = handle(m, &self->in, pl_now(cx->ex), &self->to_pending);
        if (self->out.type == 0) {
            continue;
        }
        if (self->to_pending) {
            self->send = pl_udp_send_to(&m->sock, &self->out, sizeof self->out,
                                        (const struct sockaddr *)&m->pend_from, m->pend_len);
        } else if (self->out.type == M_HB_ACK) {
            self->primary = addr_of(1, 7000);
            self->send = pl_udp_send_to(&m->sock, &self->out, sizeof self->out,
                                        (const struct sockaddr *)&self->primary,
                                        sizeof self->primary);
        } else {
            self->send = pl_udp_send_to(&m->sock, &self->out, sizeof self->out,
                                        (const struct sockaddr *)&self->recv.from,
                                        self->recv.from_len);
        }
        PL_AWAIT(cx, &self->send);
    }
    PL_ASYNC_END;
}

static void server_drop(pl_future *f)
{
    server *self = (server *)f;
    pl_drop_child(&self->recv.base);
    pl_drop_child(&self->send.base);
}

static const pl_future_vtable server_vt = {"lease_server", server_poll, server_drop};

/* The primary's heartbeats and lease, the backup's patience. */
typedef struct ticker {
    pl_future base;
    replica_mem *m;
    struct sockaddr_in backup;
    msg hb;
    pl_sleep nap;
    pl_udp_send send;
} ticker;

static pl_poll_result ticker_poll(pl_future *f, pl_context *cx)
{
    ticker *self = (ticker *)f;
    replica_mem *m = self->m;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->nap = pl_sleep_for(HEARTBEAT);
        PL_AWAIT(cx, &self->nap);
        if (!m->primary) {
            if (!m->leader && pl_now(cx->ex) - m->heard > TAKEOVER) {
                m->leader = true;
            }
            continue;
        }
        if (m->leader && pl_now(cx->ex) >= m->lease_end) {
            m->leader = false; /* the lease ran out: step down for good */
        }
        if (!m->leader) {
            continue;
        }
        self->hb = (msg){.type = M_HB, .value = m->value, .sent = pl_now(cx->ex)};
        self->send = pl_udp_send_to(&m->beat, &self->hb, sizeof self->hb,
                                    (const struct sockaddr *)&self->backup, sizeof self->backup);
        PL_AWAIT(cx, &self->send);
    }
    PL_ASYNC_END;
}

static void ticker_drop(pl_future *f)
{
    ticker *self = (ticker *)f;
    pl_drop_child(&self->nap.base);
    pl_drop_child(&self->send.base);
}

static const pl_future_vtable ticker_vt = {"lease_ticker", ticker_poll, ticker_drop};

/* A server runs as long as its process: a background task. */
static void background(pl_task *t)
{
    pl_task_set_background(t, true);
    pl_task_release(t);
}

static int replica_boot(pl_executor *ex, lease_state *st, bool primary)
{
    replica_mem *m = pl_node_alloc(sizeof *m);
    if (m == NULL) {
        return PL_ENOMEM;
    }
    memset(m, 0, sizeof *m);
    m->st = st;
    m->primary = primary;
    m->leader = primary;
    m->lease_end = pl_now(ex) + LEASE;
    m->heard = pl_now(ex);
    int rc = pl_udp_bind_str(ex, &m->sock, primary ? "10.0.0.1:7000" : "10.0.0.2:7000");
    if (rc == 0 && primary) {
        rc = pl_udp_bind_str(ex, &m->beat, "10.0.0.1:7001");
    }
    if (rc != 0) {
        pl_udp_close(&m->sock);
        pl_node_free(m);
        return rc;
    }
    server srv = {.base = PL_FUTURE_INIT(&server_vt), .m = m};
    ticker tick = {.base = PL_FUTURE_INIT(&ticker_vt), .m = m, .backup = addr_of(2, 7000)};
    pl_task *t;
    rc = PL_SPAWN(ex, srv, "server", &t);
    if (rc != 0) {
        return rc;
    }
    background(t);
    rc = PL_SPAWN(ex, tick, "ticker", &t);
    if (rc == 0) {
        background(t);
    }
    return rc;
}

static int primary_boot(pl_executor *ex, void *ud) { return replica_boot(ex, ud, true); }

static int backup_boot(pl_executor *ex, void *ud) { return replica_boot(ex, ud, false); }

/* ---- The client --------------------------------------------------------------- */

typedef struct writer {
    pl_future base;
    lease_state *st;
    pl_udp_socket sock;
    int at;            /* 1: the primary, 2: the backup */
    struct sockaddr_in to;
    msg out, in;
    pl_udp_send send;
    pl_udp_recv recv;
    pl_timeout attempt;
    pl_sleep nap;
} writer;

static pl_poll_result writer_poll(pl_future *f, pl_context *cx)
{
    writer *self = (writer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->out.value = 1; self->out.value <= WRITES; self->out.value++) {
        for (;;) {
            self->out.type = M_PUT;
            self->out.id = (uint32_t)self->out.value;
            self->to = addr_of(self->at, 7000);
            self->send = pl_udp_send_to(&self->sock, &self->out, sizeof self->out,
                                        (const struct sockaddr *)&self->to, sizeof self->to);
            PL_AWAIT(cx, &self->send);
            do {
                self->recv = pl_udp_recv_from(&self->sock, &self->in, sizeof self->in);
                self->attempt = pl_timeout_make(&self->recv.base, ATTEMPT);
                PL_AWAIT(cx, &self->attempt);
            } while (self->attempt.result == 0 && self->in.id != self->out.id);
            if (self->attempt.result == 0 && self->in.type == M_OK) {
                break;
            }
            self->at = 3 - self->at; /* refused or unanswered: fail over */
            self->nap = pl_sleep_for(PL_MS);
            PL_AWAIT(cx, &self->nap);
        }
        self->st->acked = self->out.value;
        self->nap = pl_sleep_for(PL_MS);
        PL_AWAIT(cx, &self->nap);
    }
    PL_ASYNC_END;
}

static void writer_drop(pl_future *f)
{
    writer *self = (writer *)f;
    pl_drop_child(&self->send.base);
    pl_drop_child(&self->attempt.base);
    pl_drop_child(&self->nap.base);
}

static const pl_future_vtable writer_vt = {"lease_writer", writer_poll, writer_drop};

typedef struct reader {
    pl_future base;
    lease_state *st;
    pl_udp_socket sock;
    int at;
    uint32_t id;       /* reads sent */
    uint32_t replies;  /* reads answered or refused */
    pl_time until;     /* the current wait's end */
    struct sockaddr_in to;
    msg out, in;
    pl_udp_send send;
    pl_udp_recv recv;
    pl_timeout wait;
} reader;

/* Judges an answer when it arrives: a read sees every write acknowledged
 * before it was sent. */
static void judge(reader *self, pl_time now)
{
    lease_state *st = self->st;
    const msg *in = &self->in;
    if (in->id == 0 || in->id > self->id) {
        return;
    }
    if (!st->replied[in->id]) {
        st->replied[in->id] = true;
        self->replies++;
    }
    if (in->type == M_REFUSE && in->id == self->id) {
        self->at = 3 - self->at; /* redirected: the other node leads */
        return;
    }
    if (in->type != M_VALUE) {
        return;
    }
    st->answered++;
    if (in->value < st->want[in->id] && st->stale_want == 0) {
        st->stale_seen = in->value;
        st->stale_want = st->want[in->id];
        st->stale_at = now;
    }
    pl_always(in->value >= st->want[in->id],
              "a read sees every write acknowledged before it was sent");
}

static pl_poll_result reader_poll(pl_future *f, pl_context *cx)
{
    reader *self = (reader *)f;
    PL_ASYNC_BEGIN(self);
    while (self->id < READS || (self->replies < READS && pl_now(cx->ex) < self->until)) {
        if (self->id < READS && pl_now(cx->ex) >= self->until) {
            self->id++;
            self->st->want[self->id] = self->st->acked;
            self->out = (msg){.type = M_GET, .id = self->id};
            self->to = addr_of(self->at, 7000);
            self->send = pl_udp_send_to(&self->sock, &self->out, sizeof self->out,
                                        (const struct sockaddr *)&self->to, sizeof self->to);
            PL_AWAIT(cx, &self->send);
            self->until = pl_now(cx->ex) + (self->id < READS ? READ_EVERY : DRAIN);
        }
        self->recv = pl_udp_recv_from(&self->sock, &self->in, sizeof self->in);
        self->wait = pl_timeout_make(&self->recv.base, self->until - pl_now(cx->ex));
        PL_AWAIT(cx, &self->wait);
        if (self->wait.result == 0 && self->recv.result == (ssize_t)sizeof self->in) {
            judge(self, pl_now(cx->ex));
        }
    }
    PL_ASYNC_END;
}

static void reader_drop(pl_future *f)
{
    reader *self = (reader *)f;
    pl_drop_child(&self->send.base);
    pl_drop_child(&self->wait.base);
}

static const pl_future_vtable reader_vt = {"lease_reader", reader_poll, reader_drop};

static int client_boot(pl_executor *ex, void *ud)
{
    writer w = {.base = PL_FUTURE_INIT(&writer_vt), .st = ud, .at = 1};
    reader r = {.base = PL_FUTURE_INIT(&reader_vt), .st = ud, .at = 1};
    int rc = pl_udp_bind_str(ex, &w.sock, "10.0.0.3:7001");
    rc = rc != 0 ? rc : pl_udp_bind_str(ex, &r.sock, "10.0.0.3:7002");
    rc = rc != 0 ? rc : PL_SPAWN(ex, w, "writer", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, r, "reader", NULL);
}

/* ---- Scenario ----------------------------------------------------------------- */

static int setup(pl_executor *ex, lease_state *st, bool fixed)
{
    st->fixed = fixed;
    const pl_node_def defs[] = {
        {.name = "backup", .host = "10.0.0.2", .boot = backup_boot, .ud = st},
        {.name = "primary", .host = "10.0.0.1", .boot = primary_boot, .ud = st, .pausable = true},
        {.name = "client", .host = "10.0.0.3", .boot = client_boot, .ud = st},
    };
    return zoo_nodes_add(ex, defs, sizeof defs / sizeof defs[0]);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg_, size_t len)
{
    (void)ex;
    const lease_state *st = state;
    if (st->stale_want != 0) {
        return pl_check_fail(msg_, len,
                             "a read answered at %.3f ms returned %lld, but write %lld was "
                             "acknowledged before the read was sent",
                             (double)st->stale_at / 1e6, (long long)st->stale_seen,
                             (long long)st->stale_want);
    }
    return 0;
}

PL_SCENARIO(bug_lease_pause_sc, .name = "bug_lease_pause",
            .summary = "leader answers reads on a lease flag its ticker keeps; paused past the "
                       "backup's takeover, it answers stale reads when it wakes",
            .state_size = sizeof(lease_state), .setup = setup_buggy, .check = check,
            .expect = "assertion");

PL_SCENARIO(fix_lease_pause_sc, .name = "fix_lease_pause",
            .summary = "leader checks its lease against the clock when it answers a read",
            .state_size = sizeof(lease_state), .setup = setup_fixed, .check = check);
