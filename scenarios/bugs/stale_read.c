/* Zoo: a replicated register whose follower serves reads from its own
 * copy; a partition loses a replicated write, and reads after it return
 * the old value.
 *
 * The program: a cluster of four nodes (pollen/sim_node.h) speaking UDP.
 * "leader" (10.0.0.1) holds the register (a value and a version) and
 * applies writes and compare-and-sets from clients on port 7000; after
 * each change it answers the client, then sends the new (version, value)
 * to the follower's port 7001 (asynchronous replication, fire and
 * forget). "follower" (10.0.0.2) applies what it receives when its
 * version is newer, and serves the clients' reads on port 7000, which
 * offloads the leader. "c1" (10.0.0.3) and "c2" (10.0.0.4) each make a
 * short sequence of writes, compare-and-sets and reads; each operation
 * waits OP_LIMIT for its answer and is unknown to the client without
 * one (a request or an answer lost or held). Every client operation is
 * recorded in the run's history (pollen/sim_history.h) against the
 * register model: the promise is a linearizable register.
 * The links: datagrams are never duplicated (a duplicate write would be
 * applied twice: the leader does not deduplicate), and the leader's
 * link to the follower only partitions (no loss, hold or jitter of its
 * own), so that a cut of that link is what loses a replicated write.
 *
 * BUG (bug_stale_read): the follower answers a read from its copy. A
 * partition of leader -> follower at the replication of a write loses
 * it; the cut heals, nothing sends the write again, and every read at
 * the follower returns the old value although the write was
 * acknowledged before the read began.
 * Finding: linearizability, listing the acknowledged write and the read
 * that missed it, with their clients and times; the shrunk replay says
 * which send cut the link and for how long.
 * FIX (fix_stale_read): a read at the follower asks the leader for its
 * current (version, value) first (a read index), sending the question
 * again every QUERY_EVERY until the answer comes, and answers with the
 * newer of that and its own copy: the leader's answer was made after
 * the read began, so it holds every write acknowledged before.
 * On the real backend (`--real`) the same setup runs the fault-free path:
 * no link faults, no history.
 */
#include <sys/socket.h>

#include <pollen/sim_history.h>
#include <pollen/sim_node.h>

#include "zoo.h"

#define OP_LIMIT    (20 * PL_MS)  /* a client waits this long for an answer */
#define QUERY_EVERY (2 * PL_MS)   /* the fixed follower asks the leader again */
#define QUERY_TRIES 100           /* then gives the read up (its client did long ago) */
#define IDLE_LEAVE  (300 * PL_MS) /* a server leaves once nothing came for this long */

enum { M_WRITE = 1, M_CAS, M_READ, M_REPLY, M_REPL, M_QUERY, M_ANSWER };

typedef struct msg {
    uint32_t type;
    uint32_t id;      /* a client's operation, or the follower's question */
    int64_t a, b;     /* write: a; cas: a expected, b new; reply: the result */
    int64_t version;  /* replication and answers */
} msg;

typedef struct reg_state {
    bool fixed;
} reg_state;

/* Where a node listens. */
static int addr_of(const char *text, struct sockaddr_storage *out, socklen_t *len)
{
    *len = sizeof *out;
    return pl_addr_parse(text, out, len);
}

/* ---- The leader ----------------------------------------------------------- */

typedef struct leader {
    pl_future base;
    pl_udp_socket sock;
    struct sockaddr_storage follower;
    socklen_t follower_len;
    int64_t value, version;
    msg in, out, repl;
    bool changed;
    pl_udp_recv recv;
    pl_timeout idle;
    pl_udp_send send;
} leader;

/* Applies the request in `in`, writing the answer into `out`. */
static void leader_apply(leader *l)
{
    l->out = (msg){.type = l->in.type == M_QUERY ? M_ANSWER : M_REPLY, .id = l->in.id};
    l->changed = false;
    if (l->in.type == M_WRITE || (l->in.type == M_CAS && l->value == l->in.a)) {
        l->value = l->in.type == M_WRITE ? l->in.a : l->in.b;
        l->version++;
        l->changed = true;
        l->out.a = 1;
    }
    if (l->in.type == M_QUERY) {
        l->out.a = l->value;
        l->out.version = l->version;
    }
    l->repl = (msg){.type = M_REPL, .a = l->value, .version = l->version};
}

static pl_poll_result leader_poll(pl_future *f, pl_context *cx)
{
    leader *l = (leader *)f;
    PL_ASYNC_BEGIN(l);
    for (;;) {
        l->recv = pl_udp_recv_from(&l->sock, &l->in, sizeof l->in);
        l->idle = pl_timeout_make(&l->recv.base, IDLE_LEAVE);
        PL_AWAIT(cx, &l->idle);
        if (l->idle.result != 0) {
            break;
        }
        if (l->recv.result != (ssize_t)sizeof l->in ||
            (l->in.type != M_WRITE && l->in.type != M_CAS && l->in.type != M_QUERY)) {
            continue;
        }
        leader_apply(l);
        l->send = pl_udp_send_to(&l->sock, &l->out, sizeof l->out,
                                 (const struct sockaddr *)&l->recv.from, l->recv.from_len);
        PL_AWAIT(cx, &l->send);
        if (l->changed) {
            l->send = pl_udp_send_to(&l->sock, &l->repl, sizeof l->repl,
                                     (const struct sockaddr *)&l->follower, l->follower_len);
            PL_AWAIT(cx, &l->send);
        }
    }
    pl_udp_close(&l->sock);
    PL_ASYNC_END;
}

static void leader_drop(pl_future *f)
{
    leader *l = (leader *)f;
    pl_drop_child(&l->idle.base);
    pl_drop_child(&l->send.base);
    pl_udp_close(&l->sock);
}

static const pl_future_vtable leader_vt = {"leader", leader_poll, leader_drop};

static int leader_boot(pl_executor *ex, void *ud)
{
    (void)ud;
    leader l = {.base = PL_FUTURE_INIT(&leader_vt)};
    int rc = addr_of("10.0.0.2:7001", &l.follower, &l.follower_len);
    rc = rc != 0 ? rc : pl_udp_bind_str(ex, &l.sock, "10.0.0.1:7000");
    if (rc != 0) {
        return rc;
    }
    rc = PL_SPAWN(ex, l, "leader", NULL);
    if (rc != 0) {
        pl_udp_close(&l.sock);
    }
    return rc;
}

/* ---- The follower: replication and reads ---------------------------------- */

/* The follower's copy, shared by its two tasks: node memory. */
typedef struct copy {
    int64_t value, version;
} copy;

typedef struct applier {
    pl_future base;
    copy *c;
    pl_udp_socket sock;
    msg in;
    pl_udp_recv recv;
    pl_timeout idle;
} applier;

static pl_poll_result applier_poll(pl_future *f, pl_context *cx)
{
    applier *a = (applier *)f;
    PL_ASYNC_BEGIN(a);
    for (;;) {
        a->recv = pl_udp_recv_from(&a->sock, &a->in, sizeof a->in);
        a->idle = pl_timeout_make(&a->recv.base, IDLE_LEAVE);
        PL_AWAIT(cx, &a->idle);
        if (a->idle.result != 0) {
            break;
        }
        if (a->recv.result == (ssize_t)sizeof a->in && a->in.type == M_REPL &&
            a->in.version > a->c->version) {
            a->c->value = a->in.a;
            a->c->version = a->in.version;
        }
    }
    pl_udp_close(&a->sock);
    PL_ASYNC_END;
}

static void applier_drop(pl_future *f)
{
    applier *a = (applier *)f;
    pl_drop_child(&a->idle.base);
    pl_udp_close(&a->sock);
}

static const pl_future_vtable applier_vt = {"applier", applier_poll, applier_drop};

typedef struct reader {
    pl_future base;
    const reg_state *st;
    copy *c;
    pl_udp_socket sock;  /* clients' reads, port 7000 */
    pl_udp_socket ask;   /* questions to the leader, port 7002 */
    struct sockaddr_storage leader;
    socklen_t leader_len;
    msg in, q, ans, out;
    struct sockaddr_storage client;
    socklen_t client_len;
    uint32_t asked;      /* questions so far: each read's id */
    int tries;
    bool known;          /* the leader answered this read's question */
    pl_udp_recv recv;
    pl_timeout idle;
    pl_udp_send send;
} reader;

static pl_poll_result reader_poll(pl_future *f, pl_context *cx)
{
    reader *r = (reader *)f;
    PL_ASYNC_BEGIN(r);
    for (;;) {
        r->recv = pl_udp_recv_from(&r->sock, &r->in, sizeof r->in);
        r->idle = pl_timeout_make(&r->recv.base, IDLE_LEAVE);
        PL_AWAIT(cx, &r->idle);
        if (r->idle.result != 0) {
            break;
        }
        if (r->recv.result != (ssize_t)sizeof r->in || r->in.type != M_READ) {
            continue;
        }
        r->client = r->recv.from;
        r->client_len = r->recv.from_len;
        r->out = (msg){.type = M_REPLY, .id = r->in.id};
        if (r->st->fixed) {
            /* FIX: a read index. The leader's answer to a question asked
             * after the read began holds every write acknowledged before. */
            r->q = (msg){.type = M_QUERY, .id = ++r->asked};
            for (r->tries = 0, r->known = false; !r->known && r->tries < QUERY_TRIES;
                 r->tries++) {
                r->send = pl_udp_send_to(&r->ask, &r->q, sizeof r->q,
                                         (const struct sockaddr *)&r->leader, r->leader_len);
                PL_AWAIT(cx, &r->send);
                do {
                    r->recv = pl_udp_recv_from(&r->ask, &r->ans, sizeof r->ans);
                    r->idle = pl_timeout_make(&r->recv.base, QUERY_EVERY);
                    PL_AWAIT(cx, &r->idle);
                    r->known = r->idle.result == 0 && r->recv.result == (ssize_t)sizeof r->ans &&
                               r->ans.type == M_ANSWER && r->ans.id == r->q.id;
                } while (r->idle.result == 0 && !r->known);
            }
            if (!r->known) {
                continue; /* no answer from the leader: the read is not answered */
            }
            if (r->ans.version > r->c->version) {
                r->c->value = r->ans.a;
                r->c->version = r->ans.version;
            }
        }
        /* BUG (without the read index): the copy may miss acknowledged writes. */
        r->out.a = r->c->value;
        r->send = pl_udp_send_to(&r->sock, &r->out, sizeof r->out,
                                 (const struct sockaddr *)&r->client, r->client_len);
        PL_AWAIT(cx, &r->send);
    }
    pl_udp_close(&r->sock);
    pl_udp_close(&r->ask);
    PL_ASYNC_END;
}

static void reader_drop(pl_future *f)
{
    reader *r = (reader *)f;
    pl_drop_child(&r->idle.base);
    pl_drop_child(&r->send.base);
    pl_udp_close(&r->sock);
    pl_udp_close(&r->ask);
}

static const pl_future_vtable reader_vt = {"reader", reader_poll, reader_drop};

static int follower_boot(pl_executor *ex, void *ud)
{
    copy *c = pl_node_alloc(sizeof *c);
    if (c == NULL) {
        return PL_ENOMEM;
    }
    *c = (copy){0};
    applier a = {.base = PL_FUTURE_INIT(&applier_vt), .c = c};
    reader r = {.base = PL_FUTURE_INIT(&reader_vt), .st = ud, .c = c};
    int rc = addr_of("10.0.0.1:7000", &r.leader, &r.leader_len);
    rc = rc != 0 ? rc : pl_udp_bind_str(ex, &a.sock, "10.0.0.2:7001");
    rc = rc != 0 ? rc : pl_udp_bind_str(ex, &r.sock, "10.0.0.2:7000");
    rc = rc != 0 ? rc : pl_udp_bind_str(ex, &r.ask, "10.0.0.2:7002");
    rc = rc != 0 ? rc : PL_SPAWN(ex, a, "applier", NULL);
    if (rc != 0) {
        pl_udp_close(&a.sock);
    }
    rc = rc != 0 ? rc : PL_SPAWN(ex, r, "reader", NULL);
    if (rc != 0) {
        pl_udp_close(&r.sock);
        pl_udp_close(&r.ask);
    }
    return rc;
}

/* ---- The clients ------------------------------------------------------------ */

/* A client's operations: to the leader (writes, compare-and-sets) or to
 * the follower (reads). Values are the client's own (base + n), so a
 * read names the write it saw. */
typedef struct step {
    uint32_t type;
    int a, b;
} step;

static const step steps[] = {
    {M_WRITE, 1, 0}, {M_READ, 0, 0}, {M_CAS, 1, 2},  {M_READ, 0, 0},
    {M_WRITE, 3, 0}, {M_READ, 0, 0}, {M_READ, 0, 0},
};
enum { STEPS = sizeof steps / sizeof steps[0] };

typedef struct client {
    pl_future base;
    pl_udp_socket sock;
    struct sockaddr_storage to[2]; /* the leader, the follower */
    socklen_t to_len[2];
    int64_t base_value;
    int i;
    uint64_t op;   /* the history's id of the operation in flight */
    msg out, in;
    bool answered;
    pl_udp_send send;
    pl_udp_recv recv;
    pl_timeout limit;
} client;

static void client_begin(client *c)
{
    const step *s = &steps[c->i];
    int64_t a = s->a != 0 ? c->base_value + s->a : 0;
    int64_t b = s->b != 0 ? c->base_value + s->b : 0;
    c->out = (msg){.type = s->type, .id = (uint32_t)c->i + 1, .a = a, .b = b};
    uint32_t kind = s->type == M_WRITE ? PL_REG_WRITE : s->type == M_CAS ? PL_REG_CAS : PL_REG_READ;
    c->op = pl_history_invoke(NULL, kind, 0, a, b);
}

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *c = (client *)f;
    PL_ASYNC_BEGIN(c);
    for (c->i = 0; c->i < STEPS; c->i++) {
        client_begin(c);
        c->send = pl_udp_send_to(&c->sock, &c->out, sizeof c->out,
                                 (const struct sockaddr *)&c->to[c->out.type == M_READ],
                                 c->to_len[c->out.type == M_READ]);
        PL_AWAIT(cx, &c->send);
        /* Answers to earlier operations, late, are read and dropped. */
        do {
            c->recv = pl_udp_recv_from(&c->sock, &c->in, sizeof c->in);
            c->limit = pl_timeout_make(&c->recv.base, OP_LIMIT);
            PL_AWAIT(cx, &c->limit);
            c->answered = c->limit.result == 0 && c->recv.result == (ssize_t)sizeof c->in &&
                          c->in.type == M_REPLY && c->in.id == c->out.id;
        } while (c->limit.result == 0 && !c->answered);
        if (c->answered) {
            pl_history_ok(c->op, c->in.a, 0);
        } else {
            pl_history_unknown(c->op);
        }
    }
    pl_udp_close(&c->sock);
    PL_ASYNC_END;
}

static void client_drop(pl_future *f)
{
    client *c = (client *)f;
    pl_drop_child(&c->send.base);
    pl_drop_child(&c->limit.base);
    pl_udp_close(&c->sock);
}

static const pl_future_vtable client_vt = {"client", client_poll, client_drop};

/* ud: the client's host address, "10.0.0.3:7000". */
static int client_boot(pl_executor *ex, void *ud)
{
    const char *at = ud;
    client c = {.base = PL_FUTURE_INIT(&client_vt), .base_value = at[7] == '3' ? 100 : 200};
    int rc = addr_of("10.0.0.1:7000", &c.to[0], &c.to_len[0]);
    rc = rc != 0 ? rc : addr_of("10.0.0.2:7000", &c.to[1], &c.to_len[1]);
    rc = rc != 0 ? rc : pl_udp_bind_str(ex, &c.sock, at);
    if (rc != 0) {
        return rc;
    }
    rc = PL_SPAWN(ex, c, "client", NULL);
    if (rc != 0) {
        pl_udp_close(&c.sock);
    }
    return rc;
}

/* ---- Scenario -------------------------------------------------------------- */

static const char *const hosts[] = {"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"};
enum { HOSTS = sizeof hosts / sizeof hosts[0] };

/* No duplicates anywhere; leader -> follower partitions only. */
static int links(void)
{
    for (int i = 0; i < HOSTS; i++) {
        for (int j = 0; j < HOSTS; j++) {
            if (i == j) {
                continue;
            }
            pl_sim_link_options o;
            pl_sim_link_options_default(&o);
            o.dup = false;
            if (i == 0 && j == 1) {
                o.loss = false;
                o.reorder = false;
                o.clog = false;
                o.jitter_steps = 1;
            }
            int rc = pl_sim_link_set(hosts[i], hosts[j], &o);
            if (rc != 0) {
                return rc;
            }
        }
    }
    return 0;
}

static int setup(pl_executor *ex, reg_state *st, bool fixed)
{
    st->fixed = fixed;
    /* PL_ENOSYS: the real backend, which keeps no history and has no
     * links to set; the scenario runs there as it is. */
    int rc = pl_history_use(&pl_model_register);
    rc = rc != 0 ? rc : links();
    if (rc != 0 && rc != PL_ENOSYS) {
        return rc;
    }
    static char c1_at[] = "10.0.0.3:7000";
    static char c2_at[] = "10.0.0.4:7000";
    const pl_node_def defs[] = {
        {.name = "leader", .host = "10.0.0.1", .boot = leader_boot},
        {.name = "follower", .host = "10.0.0.2", .boot = follower_boot, .ud = st},
        {.name = "c1", .host = "10.0.0.3", .boot = client_boot, .ud = c1_at},
        {.name = "c2", .host = "10.0.0.4", .boot = client_boot, .ud = c2_at},
    };
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        rc = pl_sim_node_add(ex, &defs[i]);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

PL_SCENARIO(bug_stale_read_sc, .name = "bug_stale_read",
            .summary = "replicated register: the follower reads its own copy; a partition loses "
                       "a write and later reads miss it (linearizability)",
            .state_size = sizeof(reg_state), .setup = setup_buggy, .expect = "linearizability",
            .time_limit_ns = 2 * PL_S);

PL_SCENARIO(fix_stale_read_sc, .name = "fix_stale_read",
            .summary = "replicated register: the follower asks the leader before it answers a read",
            .state_size = sizeof(reg_state), .setup = setup_fixed, .time_limit_ns = 2 * PL_S);
