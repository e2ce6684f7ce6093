/* Zoo: a UDP client that retries and trusts whatever reply comes next.
 *
 * The protocol: a key-value server on host 10.0.0.2 answers "GET k"
 * datagrams with "k = value(k)". A client on host 10.0.0.1 asks for
 * eight keys in turn; UDP may lose a request or its reply, so each
 * attempt waits 5 ms for the reply and the client sends the request again
 * when none came. The server is a background task (a server runs as long
 * as the process does); the run ends when the client has its answers.
 *
 * BUG (bug_stale_reply): the client takes the first datagram that comes
 * back as the answer to the request it is waiting on ("we asked, this is
 * the reply"). Between two hosts the simulated network duplicates,
 * reorders and delays datagrams and cuts or clogs the link for a while
 * (the link_* decision kinds, on by default): the second copy of an
 * earlier reply, or the late reply to an attempt that was given up and
 * retried, arrives while the client waits for the next key, and the
 * client stores the value of the previous key under this one.
 * Why it is a bug: a datagram network promises nothing about order or
 * count; a reply names its request, and only that name says what it
 * answers. On loopback, or with the link kinds off, the bug never shows.
 * Finding: assertion (pl_always: the value stored for a key is that key's
 * value). The shrunk schedule says which reply the link duplicated or
 * held.
 * FIX (fix_stale_reply): the client keeps reading until a reply names the
 * key it asked for, and drops the others.
 */
#include <string.h>
#include <sys/socket.h>

#include "zoo.h"

enum { KEYS = 8 };

#define ATTEMPT_NS  (5 * PL_MS)
#define CLIENT_ADDR "10.0.0.1:7000"
#define SERVER_ADDR "10.0.0.2:7000"

typedef struct msg {
    uint32_t key;
    uint32_t value; /* replies */
} msg;

static uint32_t value_of(uint32_t key) { return key * 7 + 1; }

typedef struct kv_state {
    pl_udp_socket client, server;
    struct sockaddr_storage server_addr;
    socklen_t server_len;
    bool fixed;
    uint32_t got[KEYS];
    int answered;
} kv_state;

/* ---- The server: answers every GET, forever ------------------------------ */

typedef struct server {
    pl_future base;
    kv_state *st;
    msg m;
    pl_udp_recv recv;
    pl_udp_send send;
} server;

static pl_poll_result server_poll(pl_future *f, pl_context *cx)
{
    server *self = (server *)f;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->recv = pl_udp_recv_from(&self->st->server, &self->m, sizeof self->m);
        PL_AWAIT(cx, &self->recv);
        if (self->recv.result != (ssize_t)sizeof self->m) {
            continue;
        }
        self->m.value = value_of(self->m.key);
        self->send = pl_udp_send_to(&self->st->server, &self->m, sizeof self->m,
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

static const pl_future_vtable server_vt = {"kv_server", server_poll, server_drop};

/* ---- The client: one GET per key, retried every 5 ms --------------------- */

typedef struct client {
    pl_future base;
    kv_state *st;
    uint32_t key;
    msg out, in;
    pl_udp_send send;
    pl_udp_recv recv;
    pl_timeout attempt;
} client;

/* Whether the reply just read answers the current key. */
static bool is_answer(const client *self)
{
    if (!self->st->fixed) {
        return true; /* BUG: whatever came back is the answer */
    }
    return self->in.key == self->key; /* FIX: the reply names its request */
}

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *self = (client *)f;
    kv_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    for (self->key = 0; self->key < KEYS; self->key++) {
        for (;;) {
            self->out = (msg){.key = self->key};
            self->send = pl_udp_send_to(&st->client, &self->out, sizeof self->out,
                                        (const struct sockaddr *)&st->server_addr, st->server_len);
            PL_AWAIT(cx, &self->send);
            /* Read until the attempt's deadline or an answer. */
            do {
                self->recv = pl_udp_recv_from(&st->client, &self->in, sizeof self->in);
                self->attempt = pl_timeout_make(&self->recv.base, ATTEMPT_NS);
                PL_AWAIT(cx, &self->attempt);
            } while (self->attempt.result == 0 && !is_answer(self));
            if (self->attempt.result == 0) {
                break;
            }
        }
        st->got[self->key] = self->in.value;
        st->answered++;
        pl_always(self->in.value == value_of(self->key),
                  "the value stored for a key is that key's value");
    }
    PL_ASYNC_END;
}

static void client_drop(pl_future *f)
{
    client *self = (client *)f;
    pl_drop_child(&self->send.base);
    pl_drop_child(&self->attempt.base);
}

static const pl_future_vtable client_vt = {"kv_client", client_poll, client_drop};

static int setup(pl_executor *ex, kv_state *st)
{
    int rc = pl_udp_bind_str(ex, &st->server, SERVER_ADDR);
    if (rc == 0) {
        rc = pl_udp_bind_str(ex, &st->client, CLIENT_ADDR);
    }
    if (rc != 0) {
        return rc;
    }
    st->server_len = sizeof st->server_addr;
    rc = pl_udp_local_addr(&st->server, &st->server_addr, &st->server_len);
    if (rc != 0) {
        return rc;
    }
    server srv = {.base = PL_FUTURE_INIT(&server_vt), .st = st};
    pl_task *t;
    rc = PL_SPAWN(ex, srv, "kv_server", &t);
    if (rc != 0) {
        return rc;
    }
    pl_task_set_background(t, true);
    pl_task_release(t);
    client cl = {.base = PL_FUTURE_INIT(&client_vt), .st = st};
    return PL_SPAWN(ex, cl, "kv_client", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state); }

static int setup_fixed(pl_executor *ex, void *state)
{
    ((kv_state *)state)->fixed = true;
    return setup(ex, state);
}

static int check(pl_executor *ex, void *state, char *msg_, size_t len)
{
    (void)ex;
    kv_state *st = state;
    if (st->answered != KEYS) {
        return pl_check_fail(msg_, len, "%d of %d keys answered", st->answered, KEYS);
    }
    for (uint32_t k = 0; k < KEYS; k++) {
        if (st->got[k] != value_of(k)) {
            return pl_check_fail(msg_, len, "key %u holds %u, want %u", k, st->got[k], value_of(k));
        }
    }
    return 0;
}

static void teardown(void *state)
{
    kv_state *st = state;
    pl_udp_close(&st->client);
    pl_udp_close(&st->server);
}

PL_SCENARIO(bug_stale_reply_sc, .name = "bug_stale_reply",
            .summary = "UDP client retries and takes a duplicated or late reply for the next "
                       "request's (two hosts)",
            .state_size = sizeof(kv_state), .setup = setup_buggy, .check = check,
            .teardown = teardown, .expect = "assertion");

PL_SCENARIO(fix_stale_reply_sc, .name = "fix_stale_reply",
            .summary = "UDP client takes only the reply that names its request",
            .state_size = sizeof(kv_state), .setup = setup_fixed, .check = check,
            .teardown = teardown);
