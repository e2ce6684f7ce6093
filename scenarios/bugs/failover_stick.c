/* Zoo: a client that fails over to the backup and never looks back,
 * which only a quiet phase can judge.
 *
 * The program: a service on three nodes (pollen/sim_node.h) over UDP.
 * "primary" (10.0.0.1, isolatable) is the preferred leader and always
 * serves; "backup" (10.0.0.2) serves only while it leads; "client"
 * (10.0.0.3) sends REQUESTS requests, one at a time.
 *   primary  a server task answers every request with OK (port 7000); a
 *            ticker sends the backup a heartbeat every HEARTBEAT from its
 *            own socket (port 7001).
 *   backup   a heartbeat makes it a follower (it refuses requests with
 *            NOT_LEADER); once it has heard none for TAKEOVER, it takes
 *            over and answers OK.
 *   client   sends a request to the node it believes leads and waits
 *            ATTEMPT for the answer naming it; unanswered, it fails over
 *            to the other node; refused, it tries again RETRY later.
 * The network's faults (a lost or late datagram, a partition) and the
 * `node_isolate` decision (the primary cut from every peer for 1 to
 * 128 ms) make requests go unanswered. The promise is liveness: once
 * faults stop, the client finishes. It cannot be judged while faults go
 * on (a primary isolated again and again may fairly keep the client from
 * finishing), so the scenario has a quiet phase: from QUIET_AFTER on no
 * fault is injected and every cut heals, and QUIET_DEADLINE later the
 * liveness check must hold.
 *
 * BUG (bug_failover_stick): the client reads a refusal as "busy, try
 * again" and retries the same node. Failed over to a backup that does
 * not lead (a request to the primary was lost) or that stepped down
 * since (the primary's heartbeats came back), it is refused forever. While
 * faults go on, the next long isolation of the primary makes the backup
 * take over and rescues it, so a run without a quiet phase passes (or,
 * judged at its time limit, fails the fixed twin too); once faults stop,
 * nothing rescues it.
 * Finding: liveness (the scenario's liveness check: the client finished
 * k of REQUESTS requests, request k + 1 refused by the backup ever since);
 * the shrunk replay is one fault that left one request unanswered.
 * FIX (fix_failover_stick): a refusal is a redirect: the client tries the
 * other node, so it finds whichever node leads now.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <pollen/io.h>
#include <pollen/sim_node.h>

#include "zoo.h"

enum { REQUESTS = 10 };

#define HEARTBEAT      (2 * PL_MS)   /* the primary's ticker */
#define TAKEOVER       (20 * PL_MS)  /* the backup's patience */
#define ATTEMPT        (15 * PL_MS)  /* the client's wait for an answer: above a round trip */
#define RETRY          (1 * PL_MS)   /* the client's pause after a refusal */
#define QUIET_AFTER    (150 * PL_MS) /* faults stop */
#define QUIET_DEADLINE (350 * PL_MS) /* then the client must have finished by this much later */

enum { M_REQ = 1, M_OK, M_NOT_LEADER, M_HB };

typedef struct msg {
    uint32_t type;
    uint32_t id; /* a request's number, echoed in its answer */
} msg;

/* The checker's view, outside every node: the nodes share nothing but the
 * network. */
typedef struct stick_state {
    bool fixed;
    int done;          /* requests answered OK */
    int at;            /* the node the client sends to: 1 primary, 2 backup */
    uint32_t refusals; /* refusals of the current request */
    pl_time since;     /* when the current request was first sent */
} stick_state;

static struct sockaddr_in addr_of(int host, uint16_t port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(0x0a000000u | (uint32_t)host);
    return a;
}

/* ---- Replicas --------------------------------------------------------------- */

typedef struct replica_mem {
    pl_udp_socket sock; /* requests, answers, heartbeats (port 7000) */
    pl_udp_socket beat; /* the primary's heartbeats (port 7001): one sender per socket */
    bool primary;
    bool leader;
    pl_time heard; /* backup: the latest heartbeat */
} replica_mem;

typedef struct server {
    pl_future base;
    replica_mem *m;
    msg in, out;
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
        if (self->in.type == M_HB) {
            m->heard = pl_now(cx->ex);
            m->leader = m->primary; /* the primary is back: the backup follows */
            continue;
        }
        if (self->in.type != M_REQ) {
            continue;
        }
        self->out = (msg){.type = m->leader ? M_OK : M_NOT_LEADER, .id = self->in.id};
        self->send = pl_udp_send_to(&m->sock, &self->out, sizeof self->out,
                                    (const struct sockaddr *)&self->recv.from, self->recv.from_len);
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

static const pl_future_vtable server_vt = {"stick_server", server_poll, server_drop};

/* The primary's heartbeats, the backup's patience. */
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
        self->hb = (msg){.type = M_HB};
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

static const pl_future_vtable ticker_vt = {"stick_ticker", ticker_poll, ticker_drop};

static int replica_boot(pl_executor *ex, bool primary)
{
    replica_mem *m = pl_node_alloc(sizeof *m);
    if (m == NULL) {
        return PL_ENOMEM;
    }
    memset(m, 0, sizeof *m);
    m->primary = primary;
    m->leader = primary;
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
    rc = zoo_spawn_background(ex, &srv.base, sizeof srv, "server");
    return rc != 0 ? rc : zoo_spawn_background(ex, &tick.base, sizeof tick, "ticker");
}

static int primary_boot(pl_executor *ex, void *ud)
{
    (void)ud;
    return replica_boot(ex, true);
}

static int backup_boot(pl_executor *ex, void *ud)
{
    (void)ud;
    return replica_boot(ex, false);
}

/* ---- The client --------------------------------------------------------------- */

typedef struct client {
    pl_future base;
    stick_state *st;
    pl_udp_socket sock;
    struct sockaddr_in to;
    msg out, in;
    pl_udp_send send;
    pl_udp_recv recv;
    pl_timeout attempt;
    pl_sleep nap;
} client;

/* After an attempt that got no OK: where the next one goes. */
static void after_miss(client *self, bool answered)
{
    stick_state *st = self->st;
    if (!answered) {
        st->at = 3 - st->at; /* unanswered: the node is down, fail over */
        return;
    }
    st->refusals++;
    if (st->fixed) {
        st->at = 3 - st->at; /* FIX: refused, the other node leads */
    }
    /* BUG: refused, the same node again ("it is busy") */
}

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *self = (client *)f;
    stick_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    while (st->done < REQUESTS) {
        self->out = (msg){.type = M_REQ, .id = (uint32_t)st->done + 1};
        self->to = addr_of(st->at, 7000);
        self->send = pl_udp_send_to(&self->sock, &self->out, sizeof self->out,
                                    (const struct sockaddr *)&self->to, sizeof self->to);
        PL_AWAIT(cx, &self->send);
        do {
            self->recv = pl_udp_recv_from(&self->sock, &self->in, sizeof self->in);
            self->attempt = pl_timeout_make(&self->recv.base, ATTEMPT);
            PL_AWAIT(cx, &self->attempt);
        } while (self->attempt.result == 0 && self->in.id != self->out.id);
        if (self->attempt.result == 0 && self->in.type == M_OK) {
            st->done++;
            st->refusals = 0;
            st->since = pl_now(cx->ex);
            continue;
        }
        after_miss(self, self->attempt.result == 0);
        self->nap = pl_sleep_for(RETRY);
        PL_AWAIT(cx, &self->nap);
    }
    PL_ASYNC_END;
}

static void client_drop(pl_future *f)
{
    client *self = (client *)f;
    pl_drop_child(&self->send.base);
    pl_drop_child(&self->attempt.base);
    pl_drop_child(&self->nap.base);
}

static const pl_future_vtable client_vt = {"stick_client", client_poll, client_drop};

static int client_boot(pl_executor *ex, void *ud)
{
    client c = {.base = PL_FUTURE_INIT(&client_vt), .st = ud};
    int rc = pl_udp_bind_str(ex, &c.sock, "10.0.0.3:7001");
    return rc != 0 ? rc : PL_SPAWN(ex, c, "client", NULL);
}

/* ---- Scenario ----------------------------------------------------------------- */

static int setup(pl_executor *ex, stick_state *st, bool fixed)
{
    st->fixed = fixed;
    st->at = 1;
    const pl_node_def defs[] = {
        {.name = "primary", .host = "10.0.0.1", .boot = primary_boot, .isolatable = true},
        {.name = "backup", .host = "10.0.0.2", .boot = backup_boot},
        {.name = "client", .host = "10.0.0.3", .boot = client_boot, .ud = st},
    };
    return zoo_nodes_add(ex, defs, sizeof defs / sizeof defs[0]);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

/* What must have happened once faults stopped: every request answered. */
static int liveness(pl_executor *ex, void *state, char *msg_, size_t len)
{
    (void)ex;
    const stick_state *st = state;
    if (st->done == REQUESTS) {
        return 0;
    }
    return pl_check_fail(msg_, len,
                         "the client finished %d of %d requests: request %d, pending since "
                         "%.3f ms, was never answered OK (%u refusals from %s, and it kept "
                         "sending there)",
                         st->done, REQUESTS, st->done + 1, (double)st->since / 1e6, st->refusals,
                         st->at == 1 ? "primary" : "backup");
}

PL_SCENARIO(bug_failover_stick_sc, .name = "bug_failover_stick",
            .summary = "client fails over on a timeout but retries a node that refuses it; once "
                       "faults stop nothing rescues it (liveness, quiet phase)",
            .state_size = sizeof(stick_state), .setup = setup_buggy, .expect = "liveness",
            .time_limit_ns = PL_S, .quiet_after_ns = QUIET_AFTER,
            .quiet_deadline_ns = QUIET_DEADLINE, .liveness = liveness);

PL_SCENARIO(fix_failover_stick_sc, .name = "fix_failover_stick",
            .summary = "client reads a refusal as a redirect and tries the other node",
            .state_size = sizeof(stick_state), .setup = setup_fixed, .time_limit_ns = PL_S,
            .quiet_after_ns = QUIET_AFTER, .quiet_deadline_ns = QUIET_DEADLINE,
            .liveness = liveness);
