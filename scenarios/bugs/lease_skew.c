/* Zoo: a lease that trusts clocks: the successor waits out the lease on
 * its own clock, as if both clocks ran at one rate.
 *
 * The program: a register on two nodes over UDP (pollen/sim_node.h),
 * both declared skewed: each reads its own clock, which the clock_offset
 * and clock_drift decisions may set ahead and make run up to
 * PL_SIM_CLOCK_DRIFT_MAX_PPM fast or slow.
 *   old   (10.0.0.1) leads at first, under a lease of LEASE from its
 *         boot on its own clock: it sends the successor a grant naming
 *         the lease's length, then answers reads (port 7000) with its
 *         value while its clock says the lease holds, and refuses them
 *         after.
 *   new   (10.0.0.2) waits for the grant, then waits for the lease to
 *         run out on its own clock, takes over and writes 1 (the write
 *         is acknowledged: new has it). A client that has not heard of
 *         the change then reads through old.
 * Offsets cancel (each node measures a length on its own clock); rates
 * do not. The promise: a read sees every write acknowledged before it
 * was sent. Without skew, new waits LEASE after the grant arrived, which
 * is after old's lease began, and the read reaches old a link's latency
 * later still: old refuses it.
 *
 * BUG (bug_lease_skew): new waits LEASE on its clock. If old's clock is
 * slow (or new's fast) by more than the two crossings' latency over the
 * lease (1 ms of 500 ms: 0.2%), new takes over while old's clock still
 * says the lease holds: two leaders, and old answers the read from the
 * old value. Finding: assertion (pl_always in the client: "a read sees
 * every write acknowledged before it was sent"); the shrunk replay is one
 * clock_drift decision.
 * FIX (fix_lease_skew): new waits the lease plus a margin for the clocks'
 * drift bound (3 * PL_SIM_CLOCK_DRIFT_MAX_PPM of it): a lease between
 * two clocks is safe only within the bound on how far they can part.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <pollen/io.h>
#include <pollen/sim_node.h>

#include "zoo.h"

#define LEASE    (500 * PL_MS)
#define MARGIN   (LEASE / 1000000 * 3 * PL_SIM_CLOCK_DRIFT_MAX_PPM)
#define GIVE_UP  (2 * PL_S)   /* new's wait for a grant (a lost one ends the run) */
#define ANSWER   (50 * PL_MS) /* the client's wait for old's answer */

enum { M_GRANT = 1, M_READ, M_VALUE, M_REFUSE };

typedef struct msg {
    uint32_t type;
    uint32_t reserved;
    int64_t value;
} msg;

/* The checker's view, outside both nodes. */
typedef struct skew_state {
    bool fixed;
    bool done;       /* new's task ended */
    int64_t acked;   /* the latest acknowledged write */
    int answers;     /* reads old answered with a value */
} skew_state;

static struct sockaddr_in addr_of(int host)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(7000)};
    a.sin_addr.s_addr = htonl(0x0a000000u | (uint32_t)host);
    return a;
}

/* ---- old: the grant, then reads under the lease ---------------------------- */

typedef struct old_mem {
    pl_udp_socket sock;
    pl_time lease_end; /* on old's clock */
    int64_t value;
} old_mem;

typedef struct old_server {
    pl_future base;
    old_mem *m;
    struct sockaddr_in peer;
    msg in, out;
    pl_udp_send send;
    pl_udp_recv recv;
} old_server;

static pl_poll_result old_poll(pl_future *f, pl_context *cx)
{
    old_server *self = (old_server *)f;
    old_mem *m = self->m;
    PL_ASYNC_BEGIN(self);
    self->out = (msg){.type = M_GRANT, .value = LEASE};
    self->send = pl_udp_send_to(&m->sock, &self->out, sizeof self->out,
                                (const struct sockaddr *)&self->peer, sizeof self->peer);
    PL_AWAIT(cx, &self->send);
    for (;;) {
        self->recv = pl_udp_recv_from(&m->sock, &self->in, sizeof self->in);
        PL_AWAIT(cx, &self->recv);
        if (self->recv.result != (ssize_t)sizeof self->in || self->in.type != M_READ) {
            continue;
        }
        /* The lease against old's clock, now: right, for old's clock. */
        bool holds = pl_now(cx->ex) < m->lease_end;
        self->out = (msg){.type = holds ? M_VALUE : M_REFUSE, .value = m->value};
        self->send = pl_udp_send_to(&m->sock, &self->out, sizeof self->out,
                                    (const struct sockaddr *)&self->recv.from,
                                    self->recv.from_len);
        PL_AWAIT(cx, &self->send);
    }
    PL_ASYNC_END;
}

static void old_drop(pl_future *f)
{
    old_server *self = (old_server *)f;
    pl_drop_child(&self->send.base);
    pl_drop_child(&self->recv.base);
}

static const pl_future_vtable old_vt = {"old", old_poll, old_drop};

static int old_boot(pl_executor *ex, void *ud)
{
    (void)ud;
    old_mem *m = pl_node_alloc(sizeof *m);
    if (m == NULL) {
        return PL_ENOMEM;
    }
    memset(m, 0, sizeof *m);
    m->lease_end = pl_now(ex) + LEASE; /* the lease starts before the grant leaves */
    int rc = pl_udp_bind_str(ex, &m->sock, "10.0.0.1:7000");
    if (rc != 0) {
        pl_node_free(m);
        return rc;
    }
    old_server srv = {.base = PL_FUTURE_INIT(&old_vt), .m = m, .peer = addr_of(2)};
    pl_task *t;
    rc = PL_SPAWN(ex, srv, "server", &t);
    if (rc != 0) {
        return rc;
    }
    pl_task_set_background(t, true); /* a server runs as long as its process */
    pl_task_release(t);
    return 0;
}

/* ---- new: the grant, the lease waited out, the takeover, a read ------------ */

typedef struct new_mem {
    skew_state *st;
    pl_udp_socket sock;
    int64_t value;
} new_mem;

typedef struct successor {
    pl_future base;
    new_mem *m;
    struct sockaddr_in old;
    msg in, out;
    pl_udp_recv recv;
    pl_timeout wait;
    pl_sleep lease;
    pl_udp_send send;
} successor;

/* How long new waits, on its own clock, once the grant is in. */
static pl_time lease_wait(const skew_state *st, pl_time granted)
{
    if (!st->fixed) {
        return granted; /* BUG: old's clock measures the same length */
    }
    return granted + MARGIN; /* FIX: the clocks may part by the drift bound */
}

static pl_poll_result successor_poll(pl_future *f, pl_context *cx)
{
    successor *self = (successor *)f;
    new_mem *m = self->m;
    skew_state *st = m->st;
    PL_ASYNC_BEGIN(self);
    self->recv = pl_udp_recv_from(&m->sock, &self->in, sizeof self->in);
    self->wait = pl_timeout_make(&self->recv.base, GIVE_UP);
    PL_AWAIT(cx, &self->wait);
    if (self->wait.result == 0 && self->recv.result == (ssize_t)sizeof self->in &&
        self->in.type == M_GRANT) { /* else no grant (a lost datagram): no takeover */
        self->lease = pl_sleep_for(lease_wait(st, self->in.value));
        PL_AWAIT(cx, &self->lease);
        m->value = 1; /* new leads: its write is acknowledged */
        st->acked = m->value;
        self->out = (msg){.type = M_READ};
        self->send = pl_udp_send_to(&m->sock, &self->out, sizeof self->out,
                                    (const struct sockaddr *)&self->old, sizeof self->old);
        PL_AWAIT(cx, &self->send);
        self->recv = pl_udp_recv_from(&m->sock, &self->in, sizeof self->in);
        self->wait = pl_timeout_make(&self->recv.base, ANSWER);
        PL_AWAIT(cx, &self->wait);
        if (self->wait.result == 0 && self->recv.result == (ssize_t)sizeof self->in &&
            self->in.type == M_VALUE) {
            st->answers++;
            pl_always(self->in.value >= st->acked,
                      "a read sees every write acknowledged before it was sent (read %lld, "
                      "acknowledged %lld)",
                      (long long)self->in.value, (long long)st->acked);
        }
    }
    st->done = true;
    PL_ASYNC_END;
}

static void successor_drop(pl_future *f)
{
    successor *self = (successor *)f;
    pl_drop_child(&self->wait.base);
    pl_drop_child(&self->recv.base);
    pl_drop_child(&self->lease.base);
    pl_drop_child(&self->send.base);
}

static const pl_future_vtable successor_vt = {"successor", successor_poll, successor_drop};

static int new_boot(pl_executor *ex, void *ud)
{
    new_mem *m = pl_node_alloc(sizeof *m);
    if (m == NULL) {
        return PL_ENOMEM;
    }
    memset(m, 0, sizeof *m);
    m->st = ud;
    int rc = pl_udp_bind_str(ex, &m->sock, "10.0.0.2:7000");
    if (rc != 0) {
        pl_node_free(m);
        return rc;
    }
    successor s = {.base = PL_FUTURE_INIT(&successor_vt), .m = m, .old = addr_of(1)};
    return PL_SPAWN(ex, s, "successor", NULL);
}

/* ---- The scenario ------------------------------------------------------------ */

static int setup(pl_executor *ex, skew_state *st)
{
    const pl_node_def nodes[] = {
        {.name = "old", .host = "10.0.0.1", .boot = old_boot, .ud = st, .skewed = true},
        {.name = "new", .host = "10.0.0.2", .boot = new_boot, .ud = st, .skewed = true},
    };
    return zoo_nodes_add(ex, nodes, sizeof nodes / sizeof nodes[0]);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state); }

static int setup_fixed(pl_executor *ex, void *state)
{
    ((skew_state *)state)->fixed = true;
    return setup(ex, state);
}

static int check(pl_executor *ex, void *state, char *why, size_t len)
{
    (void)ex;
    const skew_state *st = state;
    if (!st->done) {
        return pl_check_fail(why, len, "the successor did not finish");
    }
    return 0;
}

PL_SCENARIO(bug_lease_skew_sc, .name = "bug_lease_skew",
            .summary = "successor waits out a lease on its own clock; a slow leader's clock "
                       "still says the lease holds, two leaders, a stale read",
            .state_size = sizeof(skew_state), .setup = setup_buggy, .check = check,
            .expect = "assertion");

PL_SCENARIO(fix_lease_skew_sc, .name = "fix_lease_skew",
            .summary = "successor waits the lease plus the clocks' drift bound",
            .state_size = sizeof(skew_state), .setup = setup_fixed, .check = check);
