/* Zoo: a TCP client that resends after a broken connection, and a server
 * that applies a request each time it arrives.
 *
 * The protocol: a counter service on host 10.0.0.2 reads 8-byte requests
 * {id, amount} from a connection, adds `amount` to the counter and
 * answers with the id. A client (on 127.0.0.1: TCP clients connect
 * unbound) sends six requests in turn. When its connection breaks
 * (PL_ECONNRESET), or no answer comes within 50 ms, it connects again and
 * sends the same request once more: it cannot know whether the server
 * applied it. The server serves one connection at a time, as a background
 * task; the run ends when the client has all six answers.
 *
 * BUG (bug_resend_twice): the server applies every request it reads.
 * Between two hosts the network breaks connections (link_reset), cuts and
 * clogs the link for up to 128 ms (partition, clog), and delays
 * crossings: when the answer is what got lost or late, the request was
 * applied already, and the client's resend applies it again.
 * Why it is a bug: a resend after a failure is at-least-once delivery;
 * without the request's identity the server turns it into an
 * at-least-once effect. A stream is reliable only while its connection
 * lives.
 * Finding: assertion (pl_always at the server: a request is applied once).
 * FIX (fix_resend_twice): the server remembers the last id it applied
 * (ids grow, one client) and answers a repeated id without applying it.
 */
#include <string.h>
#include <sys/socket.h>

#include "zoo.h"

enum { REQUESTS = 6, BACKLOG = 16 };

#define ANSWER_NS   (50 * PL_MS)
#define RETRY_NS    (2 * PL_MS)
#define SERVER_ADDR "10.0.0.2:9000"

typedef struct req {
    uint32_t id; /* 1.. */
    uint32_t amount;
} req;

typedef struct ctr_state {
    pl_tcp_listener l;
    bool fixed;
    uint32_t last_id; /* the fix: the latest id applied */
    uint64_t counter;
    int applied[REQUESTS + 1];
    int answered;
} ctr_state;

/* ---- The server: one connection at a time, forever ----------------------- */

typedef struct server {
    pl_future base;
    ctr_state *st;
    pl_tcp_accept acc;
    pl_tcp_stream s;
    req r;
    size_t got;
    pl_io_read rd;
    pl_io_write_all wr;
} server;

static void apply(ctr_state *st, const req *r)
{
    if (st->fixed && r->id <= st->last_id) {
        return; /* FIX: a resend of what is applied already */
    }
    st->last_id = r->id;
    st->counter += r->amount;
    if (r->id <= REQUESTS) {
        st->applied[r->id]++;
        pl_always(st->applied[r->id] == 1, "a request is applied once");
    }
}

static pl_poll_result server_poll(pl_future *f, pl_context *cx)
{
    server *self = (server *)f;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->acc = pl_tcp_accept_make(&self->st->l);
        PL_AWAIT(cx, &self->acc);
        if (self->acc.result != 0) {
            continue;
        }
        self->s = pl_tcp_accept_take(&self->acc);
        for (;;) {
            for (self->got = 0; self->got < sizeof self->r; self->got += (size_t)self->rd.result) {
                self->rd =
                    pl_tcp_read(&self->s, (char *)&self->r + self->got, sizeof self->r - self->got);
                PL_AWAIT(cx, &self->rd);
                if (self->rd.result <= 0) {
                    break;
                }
            }
            if (self->got < sizeof self->r) {
                break; /* end of stream or a broken connection */
            }
            apply(self->st, &self->r);
            self->wr = pl_tcp_write_all(&self->s, &self->r.id, sizeof self->r.id);
            PL_AWAIT(cx, &self->wr);
            if (self->wr.result < 0) {
                break;
            }
        }
        pl_tcp_close(&self->s);
    }
    PL_ASYNC_END;
}

static void server_drop(pl_future *f)
{
    server *self = (server *)f;
    pl_drop_child(&self->acc.base);
    pl_drop_child(&self->rd.base);
    pl_drop_child(&self->wr.base);
    pl_tcp_close(&self->s);
}

static const pl_future_vtable server_vt = {"ctr_server", server_poll, server_drop};

/* ---- The client: each request until answered, reconnecting --------------- */

typedef struct client {
    pl_future base;
    ctr_state *st;
    uint32_t id;
    bool connected;
    pl_tcp_connect conn;
    pl_tcp_stream s;
    req r;
    uint32_t answer;
    size_t got;
    pl_io_write_all wr;
    pl_io_read rd;
    pl_timeout wait;
    pl_sleep pause;
} client;

/* The latest read of the answer brought bytes in time. */
static bool read_in_time(const client *self)
{
    return self->wait.result == 0 && self->rd.result > 0;
}

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *self = (client *)f;
    PL_ASYNC_BEGIN(self);
    for (self->id = 1; self->id <= REQUESTS; self->id++) {
        for (;;) {
            if (!self->connected) {
                self->conn = pl_tcp_connect_str(SERVER_ADDR);
                PL_AWAIT(cx, &self->conn);
                if (self->conn.result != 0) {
                    self->pause = pl_sleep_for(RETRY_NS);
                    PL_AWAIT(cx, &self->pause);
                    continue;
                }
                self->s = pl_tcp_connect_take(&self->conn);
                self->connected = true;
            }
            self->r = (req){.id = self->id, .amount = 10u + self->id};
            self->wr = pl_tcp_write_all(&self->s, &self->r, sizeof self->r);
            PL_AWAIT(cx, &self->wr);
            self->got = 0;
            while (self->wr.result >= 0 && self->got < sizeof self->answer) {
                self->rd = pl_tcp_read(&self->s, (char *)&self->answer + self->got,
                                       sizeof self->answer - self->got);
                self->wait = pl_timeout_make(&self->rd.base, ANSWER_NS);
                PL_AWAIT(cx, &self->wait);
                if (!read_in_time(self)) {
                    break;
                }
                self->got += (size_t)self->rd.result;
            }
            if (self->got == sizeof self->answer && self->answer == self->id) {
                break;
            }
            pl_tcp_close(&self->s); /* broken or silent: start over */
            self->connected = false;
        }
        self->st->answered++;
    }
    pl_tcp_close(&self->s);
    PL_ASYNC_END;
}

static void client_drop(pl_future *f)
{
    client *self = (client *)f;
    pl_drop_child(&self->conn.base);
    pl_drop_child(&self->wr.base);
    pl_drop_child(&self->wait.base);
    pl_drop_child(&self->pause.base);
    pl_tcp_close(&self->s);
}

static const pl_future_vtable client_vt = {"ctr_client", client_poll, client_drop};

static int setup(pl_executor *ex, ctr_state *st)
{
    int rc = pl_tcp_listen_str(ex, &st->l, SERVER_ADDR, BACKLOG);
    if (rc != 0) {
        return rc;
    }
    server srv = {.base = PL_FUTURE_INIT(&server_vt), .st = st};
    pl_task *t;
    rc = PL_SPAWN(ex, srv, "ctr_server", &t);
    if (rc != 0) {
        return rc;
    }
    pl_task_set_background(t, true);
    pl_task_release(t);
    client cl = {.base = PL_FUTURE_INIT(&client_vt), .st = st};
    return PL_SPAWN(ex, cl, "ctr_client", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state); }

static int setup_fixed(pl_executor *ex, void *state)
{
    ((ctr_state *)state)->fixed = true;
    return setup(ex, state);
}

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    ctr_state *st = state;
    uint64_t want = 0;
    for (uint32_t id = 1; id <= REQUESTS; id++) {
        want += 10u + id;
    }
    if (st->answered != REQUESTS || st->counter != want) {
        return pl_check_fail(msg, len, "%d of %d answered, counter %llu, want %llu", st->answered,
                             REQUESTS, (unsigned long long)st->counter, (unsigned long long)want);
    }
    return 0;
}

static void teardown(void *state) { pl_tcp_listener_close(&((ctr_state *)state)->l); }

PL_SCENARIO(bug_resend_twice_sc, .name = "bug_resend_twice",
            .summary = "TCP client resends after a broken or silent connection; the server "
                       "applies the request twice (two hosts)",
            .state_size = sizeof(ctr_state), .setup = setup_buggy, .check = check,
            .teardown = teardown, .expect = "assertion");

PL_SCENARIO(fix_resend_twice_sc, .name = "fix_resend_twice",
            .summary = "the server answers a resent request without applying it again",
            .state_size = sizeof(ctr_state), .setup = setup_fixed, .check = check,
            .teardown = teardown);
