/* Lesson: the Handle state machine, read-then-store over a TCP socket.
 *
 * A tiny key/value server. It accepts one TCP connection on 127.0.0.1
 * (port 0: the system picks one, read back with
 * pl_tcp_listener_local_addr) and runs one Handle future per request:
 *
 *     READING   read bytes until a whole line "SET key value\n" is in
 *     STORING   lock the table (a pl_mutex), store the pair, unlock
 *     REPLYING  write "OK\n" (or "ERR\n" for a malformed line)
 *
 * A client task connects, sends two requests back to back, reads both
 * replies and closes; the server sees end of stream and closes too.
 *
 * What it teaches:
 *  - A hand-written state machine over child futures: each phase owns
 *    one child (a read, a lock, a write), polls it, and moves on when it
 *    is READY. The enum says which child is live, which drop relies on.
 *  - Byte streams have no message boundaries. A read may return half a
 *    line (a short read) or both requests at once, so the bytes read
 *    past a line are kept in the connection, for the next Handle.
 *  - The same code runs over real loopback sockets (epoll) and over the
 *    simulator's in-memory sockets, which add short reads and writes,
 *    spurious EAGAIN and latency.
 *  - Everything opened is closed: a listener or stream left open keeps
 *    the executor from going idle.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <pollen/sim.h>


enum {
    TABLE_MAX = 8,    /* key/value pairs */
    KEY_MAX = 16,     /* bytes of a key or a value, with its NUL */
    REQUEST_MAX = 64, /* bytes of a request line, with its '\n' */
    REQUESTS = 2,
};

static const char *const requests[REQUESTS] = {"SET alpha 1\n", "SET beta 22\n"};
static const char replies_want[] = "OK\nOK\n";

/* ---- The key/value table ------------------------------------------------ */

typedef struct kv_entry {
    char key[KEY_MAX];
    char value[KEY_MAX];
} kv_entry;

/* The mutex guards the entries. With one connection it is always free,
 * but a Handle cannot know that: handles of other connections, spawned
 * as other tasks, would share the table. */
typedef struct kv_table {
    pl_mutex lock;
    kv_entry entries[TABLE_MAX];
    int len;
} kv_table;

static const char *kv_get(const kv_table *t, const char *key)
{
    for (int i = 0; i < t->len; i++) {
        if (strcmp(t->entries[i].key, key) == 0) {
            return t->entries[i].value;
        }
    }
    return NULL;
}

/* Applies "SET key value" (without its '\n'). Returns 0, or -1 for a
 * malformed line or a full table. Caller holds the lock. */
static int kv_apply(kv_table *t, const char *line)
{
    char key[KEY_MAX];
    char value[KEY_MAX];
    /* %15s: KEY_MAX - 1 bytes at most, so the NUL always fits. */
    if (sscanf(line, "SET %15s %15s", key, value) != 2) {
        return -1;
    }
    int i = 0;
    while (i < t->len && strcmp(t->entries[i].key, key) != 0) {
        i++;
    }
    if (i == TABLE_MAX) {
        return -1;
    }
    if (i == t->len) {
        t->len++;
    }
    memcpy(t->entries[i].key, key, sizeof key);
    memcpy(t->entries[i].value, value, sizeof value);
    return 0;
}

/* ---- A connection: its stream and the bytes read but not yet parsed ----- */

typedef struct conn {
    pl_tcp_stream stream;
    char buf[REQUEST_MAX];
    size_t len;
} conn;

/* Moves the first whole line out of the buffer into `line` (without its
 * '\n', NUL-terminated) and keeps what follows it. False if no '\n' yet. */
static bool conn_take_line(conn *c, char line[REQUEST_MAX])
{
    const char *nl = memchr(c->buf, '\n', c->len);
    if (nl == NULL) {
        return false;
    }
    size_t n = (size_t)(nl - c->buf); /* < REQUEST_MAX: the line fits */
    memcpy(line, c->buf, n);
    line[n] = '\0';
    c->len -= n + 1;
    memmove(c->buf, nl + 1, c->len);
    return true;
}

/* ---- The Handle future -------------------------------------------------- */

typedef enum handle_phase {
    HANDLE_READING,  /* `read` may be in flight */
    HANDLE_STORING,  /* `lock` is waiting for the table */
    HANDLE_REPLYING, /* `write` is in flight */
    HANDLE_DONE,
} handle_phase;

typedef struct handle {
    pl_future base;
    handle_phase phase;
    conn *c;                /* borrowed from the server */
    kv_table *table;        /* borrowed */
    char line[REQUEST_MAX]; /* the request being handled */
    const char *reply;
    bool reading; /* `read` was started and is not READY yet */
    pl_io_read read;
    pl_mutex_lock lock;
    pl_io_write_all write;
    int result; /* 1: served a request, 0: the peer closed, < 0: error */
} handle;

/* Each phase step returns PL_PENDING when its child is, or PL_READY
 * after moving self->phase on. */

static pl_poll_result handle_reading(handle *self, pl_context *cx)
{
    for (;;) {
        if (conn_take_line(self->c, self->line)) {
            self->lock = pl_mutex_lock_make(&self->table->lock);
            self->phase = HANDLE_STORING;
            return PL_READY;
        }
        if (self->c->len == sizeof self->c->buf) {
            self->result = PL_EMSGSIZE; /* a line longer than we accept */
            self->phase = HANDLE_DONE;
            return PL_READY;
        }
        if (!self->reading) {
            conn *c = self->c;
            self->read = pl_tcp_read(&c->stream, c->buf + c->len, sizeof c->buf - c->len);
            self->reading = true;
        }
        /* The read stores our waker in the socket when no bytes are in. */
        if (pl_poll(&self->read.base, cx) == PL_PENDING) {
            return PL_PENDING;
        }
        self->reading = false;
        if (self->read.result <= 0) {
            /* 0: end of stream before a whole line; < 0: an error. */
            self->result = (int)self->read.result;
            self->phase = HANDLE_DONE;
            return PL_READY;
        }
        self->c->len += (size_t)self->read.result; /* maybe a partial line */
    }
}

static pl_poll_result handle_storing(handle *self, pl_context *cx)
{
    if (pl_poll(&self->lock.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    /* READY means we hold the lock; nothing awaits until the unlock. */
    self->reply = kv_apply(self->table, self->line) == 0 ? "OK\n" : "ERR\n";
    pl_mutex_unlock(&self->table->lock);
    self->write = pl_tcp_write_all(&self->c->stream, self->reply, strlen(self->reply));
    self->phase = HANDLE_REPLYING;
    return PL_READY;
}

static pl_poll_result handle_replying(handle *self, pl_context *cx)
{
    /* write_all goes on across partial writes until every byte is out. */
    if (pl_poll(&self->write.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    self->result = self->write.result < 0 ? (int)self->write.result : 1;
    self->phase = HANDLE_DONE;
    return PL_READY;
}

static pl_poll_result handle_poll(pl_future *f, pl_context *cx)
{
    handle *self = (handle *)f;
    while (self->phase != HANDLE_DONE) {
        pl_poll_result r = PL_READY;
        switch (self->phase) {
        case HANDLE_READING:
            r = handle_reading(self, cx);
            break;
        case HANDLE_STORING:
            r = handle_storing(self, cx);
            break;
        case HANDLE_REPLYING:
            r = handle_replying(self, cx);
            break;
        case HANDLE_DONE:
            break;
        }
        if (r == PL_PENDING) {
            return PL_PENDING;
        }
    }
    return PL_READY;
}

/* Dropped midway, the live child holds our waker (in the socket or in
 * the mutex's queue); a lock handed to us but not yet seen is passed on
 * by its drop. The phase says which child is live. */
static void handle_drop(pl_future *f)
{
    handle *self = (handle *)f;
    switch (self->phase) {
    case HANDLE_READING:
        if (self->reading) {
            pl_drop(&self->read.base);
        }
        break;
    case HANDLE_STORING:
        pl_drop(&self->lock.base);
        break;
    case HANDLE_REPLYING:
        pl_drop(&self->write.base);
        break;
    case HANDLE_DONE:
        break;
    }
}

static const pl_future_vtable handle_vtable = {"handle", handle_poll, handle_drop};

static handle handle_init(conn *c, kv_table *table)
{
    return (handle){
        .base = PL_FUTURE_INIT(&handle_vtable),
        .phase = HANDLE_READING,
        .c = c,
        .table = table,
    };
}

/* ---- Scenario state ----------------------------------------------------- */

typedef struct kv_state {
    pl_tcp_listener listener;
    struct sockaddr_storage addr; /* where the listener is bound */
    socklen_t addr_len;
    kv_table table;
    int served; /* requests the server answered */
    int server_error;
    int client_error;
    char replies[32]; /* what the client read */
    size_t replies_len;
} kv_state;

/* ---- The server task: one connection, one Handle per request ------------ */

typedef struct server {
    pl_future base;
    kv_state *st;
    pl_tcp_accept accept;
    conn c;
    handle h;
} server;

static pl_poll_result server_poll(pl_future *f, pl_context *cx)
{
    server *self = (server *)f;
    PL_ASYNC_BEGIN(self);
    self->accept = pl_tcp_accept_make(&self->st->listener);
    PL_AWAIT(cx, &self->accept);
    /* One connection is all this lesson serves: stop listening. */
    pl_tcp_listener_close(&self->st->listener);
    if (self->accept.result < 0) {
        self->st->server_error = self->accept.result;
        return PL_READY;
    }
    /* Take the stream in the poll that saw READY: the accept future owns
     * it until then, and would close it when dropped. */
    self->c.stream = pl_tcp_accept_take(&self->accept);
    for (;;) {
        self->h = handle_init(&self->c, &self->st->table);
        PL_AWAIT(cx, &self->h);
        if (self->h.result <= 0) {
            break;
        }
        self->st->served++;
    }
    self->st->server_error = self->h.result; /* 0 when the client closed */
    pl_tcp_close(&self->c.stream);
    PL_ASYNC_END;
}

/* Children first (they borrow the stream), then the stream. */
static void server_drop(pl_future *f)
{
    server *self = (server *)f;
    pl_drop_child(&self->h.base);
    pl_drop_child(&self->accept.base);
    pl_tcp_close(&self->c.stream);
}

static const pl_future_vtable server_vtable = {"server", server_poll, server_drop};

/* ---- The client task ---------------------------------------------------- */

typedef struct client {
    pl_future base;
    kv_state *st;
    pl_tcp_connect connect;
    pl_tcp_stream stream;
    pl_io_write_all write;
    pl_io_read read;
    int i;
} client;

static bool client_has_all_replies(const kv_state *st)
{
    int lines = 0;
    for (size_t i = 0; i < st->replies_len; i++) {
        lines += st->replies[i] == '\n';
    }
    return lines >= REQUESTS;
}

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *self = (client *)f;
    kv_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    self->connect = pl_tcp_connect_make((struct sockaddr *)&st->addr, st->addr_len);
    PL_AWAIT(cx, &self->connect);
    if (self->connect.result < 0) {
        st->client_error = self->connect.result;
        return PL_READY;
    }
    self->stream = pl_tcp_connect_take(&self->connect);
    /* Both requests go out before any reply is read (pipelining): the
     * server may well read them in a single read. */
    for (self->i = 0; self->i < REQUESTS; self->i++) {
        const char *req = requests[self->i];
        self->write = pl_tcp_write_all(&self->stream, req, strlen(req));
        PL_AWAIT(cx, &self->write);
        if (self->write.result < 0) {
            st->client_error = (int)self->write.result;
            break;
        }
    }
    while (st->client_error == 0 && !client_has_all_replies(st)) {
        self->read = pl_tcp_read(&self->stream, st->replies + st->replies_len,
                                 sizeof st->replies - 1 - st->replies_len);
        PL_AWAIT(cx, &self->read);
        if (self->read.result <= 0) {
            st->client_error = self->read.result < 0 ? (int)self->read.result : PL_ECONNRESET;
            break;
        }
        st->replies_len += (size_t)self->read.result;
    }
    /* Closing makes the server's next read see end of stream. */
    pl_tcp_close(&self->stream);
    PL_ASYNC_END;
}

static void client_drop(pl_future *f)
{
    client *self = (client *)f;
    pl_drop_child(&self->read.base);
    pl_drop_child(&self->write.base);
    pl_drop_child(&self->connect.base);
    pl_tcp_close(&self->stream);
}

static const pl_future_vtable client_vtable = {"client", client_poll, client_drop};

/* ---- The scenario ------------------------------------------------------- */

static int kv_setup(pl_executor *ex, void *state)
{
    kv_state *st = state;
    pl_mutex_init(&st->table.lock);
    /* Port 0: an ephemeral port, so parallel runs never collide. */
    int rc = pl_tcp_listen_str(ex, &st->listener, "127.0.0.1:0", 0);
    if (rc == 0) {
        st->addr_len = sizeof st->addr;
        rc = pl_tcp_listener_local_addr(&st->listener, &st->addr, &st->addr_len);
    }
    if (rc != 0) {
        return rc; /* teardown closes the listener */
    }
    server s = {.base = PL_FUTURE_INIT(&server_vtable), .st = st};
    client c = {.base = PL_FUTURE_INIT(&client_vtable), .st = st};
    rc = PL_SPAWN(ex, s, "server", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, c, "client", NULL);
}

static int kv_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const kv_state *st = state;
    if (st->server_error != 0 || st->client_error != 0) {
        return pl_check_fail(msg, len, "server: %s, client: %s", pl_err_name(st->server_error),
                            pl_err_name(st->client_error));
    }
    if (st->served != REQUESTS || strcmp(st->replies, replies_want) != 0) {
        return pl_check_fail(msg, len, "served %d requests, client read \"%.*s\"", st->served,
                            (int)st->replies_len, st->replies);
    }
    const char *alpha = kv_get(&st->table, "alpha");
    const char *beta = kv_get(&st->table, "beta");
    if (st->table.len != 2 || alpha == NULL || strcmp(alpha, "1") != 0 || beta == NULL ||
        strcmp(beta, "22") != 0) {
        return pl_check_fail(msg, len, "table has %d entries: alpha=%s beta=%s", st->table.len,
                            alpha ? alpha : "(none)", beta ? beta : "(none)");
    }
    return 0;
}

/* The server closes the listener after its accept; this covers runs that
 * ended earlier (closing a closed listener is allowed). */
static void kv_teardown(void *state) { pl_tcp_listener_close(&((kv_state *)state)->listener); }

PL_SCENARIO(handle_scenario, .name = "handle",
            .summary = "lesson: Handle state machine (read, store under a mutex, reply) over TCP",
            .state_size = sizeof(kv_state), .setup = kv_setup, .check = kv_check,
            .teardown = kv_teardown);
