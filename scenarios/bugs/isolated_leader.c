/* Zoo: a leader cut from every peer keeps leading while the others elect
 * another: a split brain that only a whole-node isolation shows.
 *
 * The program: leader election on three nodes (pollen/sim_node.h) over
 * UDP, each a replica of one write log: "n1" (10.0.0.1, isolatable) leads
 * at first in term 1; "n2" (10.0.0.2) and "n3" (10.0.0.3) follow. Each
 * node runs a ticker (every TICK, until RUN) and a server (port 7000).
 *   leader    at each tick accepts its clients' next write (replicated
 *             asynchronously, as a primary that acknowledges on its own
 *             disk) and sends each peer a heartbeat naming its term.
 *   follower  a heartbeat of its term or a newer one makes it follow (it
 *             takes the term, notes the time, acknowledges); one of an
 *             older term is answered with its own, newer, term, and a
 *             leader that hears a newer term steps down. A follower that
 *             has heard no leader for its election timeout (ELECTION,
 *             staggered by node so that two rarely start together) stands
 *             for the next term and asks its peers for their votes.
 *   voter     grants a vote once per term, and only when it has heard no
 *             leader for ELECTION itself (a node that hears its leader
 *             does not help to replace it); a leader grants none.
 *   candidate with a majority (its own vote and one more) it leads, and
 *             accepts its term's first write at once.
 * A partition of one link or a lost heartbeat does nothing: the other
 * follower still hears the leader and refuses its vote. The
 * `node_isolate` decision (n1 cut from both peers, both ways, for 1 to
 * 128 ms at any wait) silences the leader for everyone at once. The
 * promise: one leader at a time, so the terms of accepted writes never
 * go back (a write accepted in an older term after a newer term's is
 * the old leader's, and is lost or forks the log).
 *
 * BUG (bug_isolated_leader): a leader leads until it hears of a newer
 * term. Cut from every peer for longer than an election (128 ms against
 * ELECTION = 90 ms), n1 hears nothing, so it never learns of the term
 * n2 or n3 wins meanwhile, and goes on accepting its clients' writes
 * until the cut heals: two leaders accept writes. Per-link partitions
 * need both of n1's links cut, each both ways, long enough and at
 * overlapping times, by independent decisions: in 10,000 seeds with
 * node_isolate=off the default campaign finds nothing.
 * Finding: assertion (pl_always where a write is accepted: "one leader
 * at a time"); the shrunk replay is the one isolation.
 * FIX (fix_isolated_leader): a leader steps down unless a majority heard
 * it lately (check quorum): it accepts a write only before its lease
 * ends, LEASE after the send time of the latest heartbeat (or vote
 * request) a peer acknowledged. A new leader needs the votes of nodes
 * that heard no leader for ELECTION > LEASE, one of them the peer that
 * acknowledged, so the old lease has ended before the new term begins.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <pollen/io.h>
#include <pollen/sim_node.h>

#include "zoo.h"

enum { NODES = 3, MAJORITY = 2 };

#define TICK     (20 * PL_MS)  /* a leader's heartbeats and writes, a follower's checks */
#define LEASE    (50 * PL_MS)  /* FIX: a leader leads this long past an acknowledged send */
#define ELECTION (90 * PL_MS)  /* the least silence before a node stands or votes */
#define STAGGER  (20 * PL_MS)  /* n2 stands after ELECTION, n3 after one STAGGER more, n1 two */
#define RUN      (300 * PL_MS) /* the tickers stop here */

enum { M_HB = 1, M_ACK, M_VOTE_REQ, M_VOTE };

typedef struct msg {
    uint32_t type;
    uint32_t from;  /* the sender's node number, 1..NODES */
    uint32_t term;
    uint32_t ok;    /* an ack that follows, a granted vote */
    pl_time sent;   /* a heartbeat's (vote request's) send time, echoed back */
} msg;

/* The checker's view, outside every node: the newest term a write was
 * accepted in, and the first write that came after it from an older one. */
typedef struct split_state {
    bool fixed;
    uint32_t top_term;
    uint32_t top_node;
    uint32_t writes;
} split_state;

static struct sockaddr_in addr_of(uint32_t node, uint16_t port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(0x0a000000u | node);
    return a;
}

/* ---- A node's state, shared by its ticker and its server ---------------- */

typedef struct node_mem {
    split_state *st;
    pl_udp_socket sock; /* the server's: requests in, answers out (port 7000) */
    pl_udp_socket out;  /* the ticker's sends (port 7001): one sender per socket */
    uint32_t self;
    uint32_t term;
    uint32_t voted;     /* the latest term it voted in */
    uint32_t votes;     /* a candidate's voters, bit n for node n */
    uint32_t voters;    /* how many */
    bool leader;
    bool candidate;
    pl_time heard;      /* the latest heartbeat of a leader it follows (or vote it gave) */
    pl_time stood;      /* a candidate's vote requests' send time */
    pl_time lease_end;  /* FIX: a leader accepts writes before it */
} node_mem;

static pl_time election_timeout(const node_mem *m)
{
    return ELECTION + (pl_time)((m->self + NODES - 2) % NODES) * STAGGER;
}

/* A leader accepts its clients' next write: the checker sees it. */
static void accept_write(node_mem *m)
{
    split_state *st = m->st;
    st->writes++;
    pl_always(m->term >= st->top_term,
              "one leader at a time: n%u accepted a write in term %u after n%u accepted one in "
              "term %u",
              m->self, m->term, st->top_node, st->top_term);
    if (m->term > st->top_term) {
        st->top_term = m->term;
        st->top_node = m->self;
    }
}

/* A newer term heard: follow it, a leader or candidate no more. */
static void take_term(node_mem *m, uint32_t term, pl_time now)
{
    m->term = term;
    m->leader = false;
    m->candidate = false;
    m->heard = now;
}

/* Whether a leader may still accept writes, at a tick. */
static bool leads(node_mem *m, pl_time now)
{
    if (!m->leader || !m->st->fixed) {
        return m->leader; /* BUG: leads until it hears of a newer term */
    }
    if (now >= m->lease_end) {
        take_term(m, m->term, now); /* FIX: no majority heard it lately: step down */
    }
    return m->leader;
}

/* ---- Sending one message to several peers ----------------------------------- */

typedef struct fanout {
    pl_future base;
    pl_udp_socket *sock;
    msg out;
    uint32_t dests; /* bit n: send to node n */
    uint32_t peer;
    struct sockaddr_in to;
    pl_udp_send send;
} fanout;

static pl_poll_result fanout_poll(pl_future *f, pl_context *cx)
{
    fanout *self = (fanout *)f;
    PL_ASYNC_BEGIN(self);
    for (self->peer = 1; self->peer <= NODES; self->peer++) {
        if ((self->dests >> self->peer & 1u) == 0) {
            continue;
        }
        self->to = addr_of(self->peer, 7000);
        self->send = pl_udp_send_to(self->sock, &self->out, sizeof self->out,
                                    (const struct sockaddr *)&self->to, sizeof self->to);
        PL_AWAIT(cx, &self->send);
    }
    PL_ASYNC_END;
}

static void fanout_drop(pl_future *f) { pl_drop_child(&((fanout *)f)->send.base); }

static const pl_future_vtable fanout_vt = {"split_fanout", fanout_poll, fanout_drop};

/* Sends `out` from `sock` to each node of `dests` in turn (none: done). */
static fanout fanout_make(pl_udp_socket *sock, msg out, uint32_t dests)
{
    return (fanout){.base = PL_FUTURE_INIT(&fanout_vt), .sock = sock, .out = out,
                    .dests = out.type != 0 ? dests : 0};
}

/* Every node but `self`. */
static uint32_t peers_of(uint32_t self) { return ((1u << (NODES + 1)) - 2u) & ~(1u << self); }

/* ---- The server: every message a node receives ---------------------------- */

static msg on_heartbeat(node_mem *m, const msg *in, pl_time now)
{
    if (in->term < m->term) {
        return (msg){.type = M_ACK, .term = m->term}; /* stale: tell it the newer term */
    }
    take_term(m, in->term, now);
    return (msg){.type = M_ACK, .term = m->term, .ok = 1, .sent = in->sent};
}

static void on_ack(node_mem *m, const msg *in, pl_time now)
{
    if (in->term > m->term) {
        take_term(m, in->term, now); /* a newer leader exists: step down */
        return;
    }
    if (m->leader && in->term == m->term && in->ok && in->sent + LEASE > m->lease_end) {
        m->lease_end = in->sent + LEASE;
    }
}

static msg on_vote_request(node_mem *m, const msg *in, pl_time now)
{
    bool silent = now - m->heard >= ELECTION;
    if (m->leader || !silent || in->term <= m->term || in->term <= m->voted) {
        return (msg){0}; /* refused: no answer */
    }
    take_term(m, in->term, now);
    m->voted = in->term;
    return (msg){.type = M_VOTE, .term = in->term, .ok = 1, .sent = in->sent};
}

/* A granted vote; with a majority the candidate leads, and announces it
 * to every peer at once (a heartbeat). */
static msg on_vote(node_mem *m, const msg *in, pl_time now)
{
    if (!m->candidate || in->term != m->term || !in->ok || (m->votes >> in->from & 1u) != 0) {
        return (msg){0};
    }
    m->votes |= 1u << in->from;
    if (++m->voters < MAJORITY) {
        return (msg){0};
    }
    m->candidate = false;
    m->leader = true;
    m->lease_end = m->stood + LEASE; /* its voters heard no leader since then */
    accept_write(m);                 /* the term's first entry */
    return (msg){.type = M_HB, .term = m->term, .sent = now};
}

/* What the node answers to `in` (type 0: nothing), and to whom: bit n
 * of *to for node n. */
static msg handle(node_mem *m, const msg *in, pl_time now, uint32_t *to)
{
    *to = 1u << in->from;
    switch (in->type) {
    case M_HB:
        return on_heartbeat(m, in, now);
    case M_ACK:
        on_ack(m, in, now);
        break;
    case M_VOTE_REQ:
        return on_vote_request(m, in, now);
    case M_VOTE:
        *to = peers_of(m->self);
        return on_vote(m, in, now);
    default:
        break;
    }
    return (msg){0};
}

typedef struct server {
    pl_future base;
    node_mem *m;
    msg in;
    pl_udp_recv recv;
    fanout answer;
} server;

static pl_poll_result server_poll(pl_future *f, pl_context *cx)
{
    server *self = (server *)f;
    node_mem *m = self->m;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->recv = pl_udp_recv_from(&m->sock, &self->in, sizeof self->in);
        PL_AWAIT(cx, &self->recv);
        if (self->recv.result != (ssize_t)sizeof self->in || self->in.from == 0 ||
            self->in.from > NODES) {
            continue;
        }
        uint32_t to;
        msg out = handle(m, &self->in, pl_now(cx->ex), &to);
        out.from = m->self;
        self->answer = fanout_make(&m->sock, out, to);
        PL_AWAIT(cx, &self->answer);
    }
    PL_ASYNC_END;
}

static void server_drop(pl_future *f)
{
    server *self = (server *)f;
    pl_drop_child(&self->recv.base);
    pl_drop_child(&self->answer.base);
}

static const pl_future_vtable server_vt = {"split_server", server_poll, server_drop};

/* ---- The ticker: heartbeats and writes, or an election -------------------- */

/* What the ticker sends its peers this tick (type 0: nothing). */
static msg tick(node_mem *m, pl_time now)
{
    if (leads(m, now)) {
        accept_write(m);
        return (msg){.type = M_HB, .from = m->self, .term = m->term, .sent = now};
    }
    if (now - m->heard < election_timeout(m)) {
        return (msg){0};
    }
    /* Silent for its timeout (a failed candidacy included): stand. */
    m->term++;
    m->voted = m->term;
    m->candidate = true;
    m->votes = 1u << m->self;
    m->voters = 1;
    m->heard = now;
    m->stood = now;
    return (msg){.type = M_VOTE_REQ, .from = m->self, .term = m->term, .sent = now};
}

typedef struct ticker {
    pl_future base;
    node_mem *m;
    pl_time next;
    pl_sleep nap;
    fanout sends;
} ticker;

static pl_poll_result ticker_poll(pl_future *f, pl_context *cx)
{
    ticker *self = (ticker *)f;
    node_mem *m = self->m;
    PL_ASYNC_BEGIN(self);
    for (self->next = pl_now(cx->ex); self->next < RUN; self->next += TICK) {
        self->nap = pl_sleep_until(self->next);
        PL_AWAIT(cx, &self->nap);
        self->sends = fanout_make(&m->out, tick(m, pl_now(cx->ex)), peers_of(m->self));
        PL_AWAIT(cx, &self->sends);
    }
    PL_ASYNC_END;
}

static void ticker_drop(pl_future *f)
{
    ticker *self = (ticker *)f;
    pl_drop_child(&self->nap.base);
    pl_drop_child(&self->sends.base);
}

static const pl_future_vtable ticker_vt = {"split_ticker", ticker_poll, ticker_drop};

/* ---- Nodes and the scenario ----------------------------------------------- */

static int node_boot(pl_executor *ex, split_state *st, uint32_t self)
{
    node_mem *m = pl_node_alloc(sizeof *m);
    if (m == NULL) {
        return PL_ENOMEM;
    }
    memset(m, 0, sizeof *m);
    m->st = st;
    m->self = self;
    m->term = 1;
    m->voted = 1;
    m->leader = self == 1;
    m->heard = pl_now(ex);
    m->lease_end = pl_now(ex) + LEASE;
    struct sockaddr_in a = addr_of(self, 7000);
    int rc = pl_udp_bind(ex, &m->sock, (const struct sockaddr *)&a, sizeof a);
    a.sin_port = htons(7001);
    rc = rc != 0 ? rc : pl_udp_bind(ex, &m->out, (const struct sockaddr *)&a, sizeof a);
    if (rc != 0) {
        pl_udp_close(&m->sock);
        pl_node_free(m);
        return rc;
    }
    server srv = {.base = PL_FUTURE_INIT(&server_vt), .m = m};
    ticker tk = {.base = PL_FUTURE_INIT(&ticker_vt), .m = m};
    rc = zoo_spawn_background(ex, &srv.base, sizeof srv, "server");
    return rc != 0 ? rc : PL_SPAWN(ex, tk, "ticker", NULL);
}

static int n1_boot(pl_executor *ex, void *ud) { return node_boot(ex, ud, 1); }

static int n2_boot(pl_executor *ex, void *ud) { return node_boot(ex, ud, 2); }

static int n3_boot(pl_executor *ex, void *ud) { return node_boot(ex, ud, 3); }

static int setup(pl_executor *ex, split_state *st, bool fixed)
{
    st->fixed = fixed;
    st->top_term = 1;
    st->top_node = 1;
    const pl_node_def defs[] = {
        {.name = "n1", .host = "10.0.0.1", .boot = n1_boot, .ud = st, .isolatable = true},
        {.name = "n2", .host = "10.0.0.2", .boot = n2_boot, .ud = st},
        {.name = "n3", .host = "10.0.0.3", .boot = n3_boot, .ud = st},
    };
    return zoo_nodes_add(ex, defs, sizeof defs / sizeof defs[0]);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

PL_SCENARIO(bug_isolated_leader_sc, .name = "bug_isolated_leader",
            .summary = "a leader cut from every peer never hears of the next term and keeps "
                       "accepting writes: two leaders (only a node isolation shows it)",
            .state_size = sizeof(split_state), .setup = setup_buggy, .expect = "assertion");

PL_SCENARIO(fix_isolated_leader_sc, .name = "fix_isolated_leader",
            .summary = "a leader steps down when no majority acknowledged it within its lease",
            .state_size = sizeof(split_state), .setup = setup_fixed);
