/* Zoo: a log server on a node that crashes, acknowledging a put before
 * it is durable.
 *
 * The program: a cluster of two nodes (pollen/sim_node.h). "server"
 * (10.0.0.1, crashable) keeps a key-value log of fixed-size records
 * (zoo.h) in file "log" of its disk. At each boot it recovers: it reads
 * records from the start (re-reading one whose checksum fails, as a
 * flipped bit on the read path goes away), stops at the first one
 * missing or torn, then serves puts on TCP port 7000, one connection at
 * a time: a put is a 4-byte sequence number k; the server writes record
 * k at offset k * 16 and answers with k. It leaves once no client came
 * for 50 ms. "client" (10.0.0.2) puts 0..PUTS-1 in order; a put counts
 * as acknowledged when its answer arrives. On a reset, an end of stream
 * or a refused connection it reconnects 1 ms later and puts the first
 * unacknowledged record again (a put is idempotent: same offset, same
 * bytes). The `node_crash` decision kills the server at any wait and
 * restarts it 1 to 8 ms later. The promise: every acknowledged put
 * survives the crash (recovery after a restart finds it). The run's
 * history (pollen/sim_history.h, the key-value model, a key per record)
 * holds each put as a write of 1 to key k (unknown when its answer never
 * came), and each recovery as reads of the keys it looked at: 1 for each
 * record it found, 0 for the first one missing.
 *
 * BUG (bug_kv_ack): the server answers as soon as the write returned,
 * then fsyncs. A crash between the answer and the end of the fsync (a
 * slow one: the disk_latency decision; or one that failed with EIO: the
 * disk_fault decision) loses a put the client holds as acknowledged (the
 * crash keeps none of the unsynced bytes by default).
 * Finding: linearizability: on key k, the client's write(k, 1),
 * acknowledged, then the server's recovery reading 0 there; the shrunk
 * replay says when the server crashed and came back, and which fsync was
 * slow.
 * FIX (fix_kv_ack): fsync, then answer; a failed write or fsync (EIO, the
 * disk_fault decision) answers nothing and drops the connection, so the
 * client puts the record again.
 * On the real backend (`--real`) the same setup runs the fault-free path:
 * no crash, no history, the client's puts acknowledged.
 */
#include <pollen/file.h>
#include <pollen/io.h>
#include <pollen/sim_history.h>
#include <pollen/sim_node.h>

#include "zoo.h"

enum { PUTS = 12, REC = ZOO_REC, READ_TRIES = 64, CONNECTS = 200 };

/* The client gives up starting connections then, and bounds each connect
 * and read: the run ends within its time limit whatever the links do. */
#define GIVE_UP_AT (1 * PL_S)
#define OP_LIMIT   (100 * PL_MS)

typedef struct kv_state {
    bool fixed;
    int acked;     /* puts acknowledged to the client: 0..acked-1 */
} kv_state;

/* ---- The server: recovery, then puts ------------------------------------ */

/* The server's state outside its future: node memory, freed by a crash. */
typedef struct server_mem {
    pl_tcp_listener l;
    pl_dir dir;
    pl_file log;
} server_mem;

typedef struct server {
    pl_future base;
    kv_state *st;
    server_mem *m;
    pl_file_open op;
    pl_file_pread rd;
    pl_file_pwrite wr;
    pl_file_fsync sy;
    pl_tcp_accept acc;
    pl_timeout idle;
    pl_tcp_stream s;
    pl_io_read get;
    pl_io_write_all put;
    uint8_t rec[REC];
    uint8_t msg[4];
    size_t got;
    uint64_t reads[PUTS]; /* the recovery's reads, in the history */
    int i;
    int tries;
    bool valid;
    bool end;
} server;

/* Reads the 4-byte message into msg: 0 or the read's error (0 bytes: the
 * end of the stream, PL_ECONNRESET). */
#define READ_MSG(cx, self, sock)                                                                   \
    for ((self)->got = 0; (self)->got < 4;) {                                                      \
        (self)->get = pl_tcp_read(sock, (self)->msg + (self)->got, 4 - (self)->got);               \
        PL_AWAIT(cx, &(self)->get);                                                                \
        if ((self)->get.result <= 0) {                                                             \
            break;                                                                                 \
        }                                                                                          \
        (self)->got += (size_t)(self)->get.result;                                                 \
    }

static void server_close(server *v)
{
    pl_tcp_close(&v->s);
    if (v->m != NULL) {
        pl_file_close(&v->m->log);
        pl_dir_close(&v->m->dir);
        pl_tcp_listener_close(&v->m->l);
        pl_node_free(v->m);
        v->m = NULL;
    }
}

static pl_poll_result server_poll(pl_future *f, pl_context *cx)
{
    server *v = (server *)f;
    PL_ASYNC_BEGIN(v);
    v->op =
        pl_file_open_make(&v->m->dir, "log", PL_FILE_READ | PL_FILE_WRITE | PL_FILE_CREATE, 0644);
    PL_AWAIT(cx, &v->op);
    if (v->op.result != 0) {
        server_close(v);
        return PL_READY;
    }
    v->m->log = pl_file_open_take(&v->op);
    /* The log's entry is durable only once its directory is synced. */
    v->sy = pl_dir_sync(&v->m->dir);
    PL_AWAIT(cx, &v->sy);
    if (v->sy.result != 0) {
        server_close(v);
        return PL_READY;
    }
    for (v->i = 0; v->i < PUTS; v->i++) {
        v->reads[v->i] = pl_history_invoke(NULL, PL_REG_READ, (uint64_t)v->i, 0, 0);
    }
    for (v->i = 0; !v->end; v->i++) {
        v->valid = false;
        for (v->tries = 0; !v->valid && !v->end && v->tries < READ_TRIES; v->tries++) {
            for (v->got = 0; v->got < REC;) {
                v->rd = pl_file_read(&v->m->log, v->rec + v->got, REC - v->got,
                                     (uint64_t)v->i * REC + v->got);
                PL_AWAIT(cx, &v->rd);
                if (v->rd.result <= 0) {
                    break;
                }
                v->got += (size_t)v->rd.result;
            }
            v->end = v->got < REC && v->rd.result == 0; /* the end, or a torn record */
            v->valid = v->got == REC && zoo_record_ok(v->rec, v->i);
        }
        v->end |= !v->valid;
    }
    /* What the recovery saw: records 0..i-2, and none at i-1. */
    for (int k = 0; k < PUTS; k++) {
        if (k < v->i) {
            pl_history_ok(v->reads[k], k < v->i - 1, 0);
        } else {
            pl_history_fail(v->reads[k]); /* not looked at */
        }
    }
    for (;;) {
        v->acc = pl_tcp_accept_make(&v->m->l);
        v->idle = pl_timeout_make(&v->acc.base, 50 * PL_MS);
        PL_AWAIT(cx, &v->idle);
        if (v->idle.result != 0 || v->acc.result != 0) {
            break;
        }
        v->s = pl_tcp_accept_take(&v->acc);
        for (;;) {
            READ_MSG(cx, v, &v->s);
            if (v->got < 4) {
                break;
            }
            v->i = (int)zoo_get32(v->msg);
            if (v->i < 0 || v->i >= PUTS) {
                break;
            }
            zoo_record_encode(v->rec, v->i);
            v->wr = pl_file_write_all(&v->m->log, v->rec, REC, (uint64_t)v->i * REC);
            PL_AWAIT(cx, &v->wr);
            if (v->wr.result != REC) {
                break;
            }
            if (!v->st->fixed) {
                /* BUG: the record is not durable yet. */
                v->put = pl_tcp_write_all(&v->s, v->msg, 4);
                PL_AWAIT(cx, &v->put);
            }
            v->sy = pl_file_sync(&v->m->log);
            PL_AWAIT(cx, &v->sy);
            if (v->sy.result != 0) {
                break;
            }
            if (v->st->fixed) {
                v->put = pl_tcp_write_all(&v->s, v->msg, 4);
                PL_AWAIT(cx, &v->put);
            }
            if (v->put.result < 0) {
                break;
            }
        }
        pl_tcp_close(&v->s);
    }
    server_close(v);
    PL_ASYNC_END;
}

static void server_drop(pl_future *f)
{
    server *v = (server *)f;
    pl_drop_child(&v->op.base);
    pl_drop_child(&v->rd.base);
    pl_drop_child(&v->wr.base);
    pl_drop_child(&v->sy.base);
    pl_drop_child(&v->idle.base);
    pl_drop_child(&v->get.base);
    pl_drop_child(&v->put.base);
    server_close(v);
}

static const pl_future_vtable server_vt = {"server", server_poll, server_drop};

static int server_boot(pl_executor *ex, void *ud)
{
    kv_state *st = ud;
    server_mem *m = pl_node_alloc(sizeof *m);
    if (m == NULL) {
        return PL_ENOMEM;
    }
    memset(m, 0, sizeof *m);
    int rc = pl_tcp_listen_str(ex, &m->l, "10.0.0.1:7000", 4);
    if (rc == 0) {
        rc = pl_dir_open(ex, &m->dir, "db", true);
    }
    if (rc != 0) {
        pl_tcp_listener_close(&m->l);
        pl_node_free(m);
        return rc;
    }
    server v = {.base = PL_FUTURE_INIT(&server_vt), .st = st, .m = m};
    return PL_SPAWN(ex, v, "server", NULL);
}

/* ---- The client ----------------------------------------------------------- */

typedef struct client {
    pl_future base;
    kv_state *st;
    pl_timeout limit; /* around a connect or a read: a held link may hold it long */
    pl_tcp_connect conn;
    pl_tcp_stream s;
    pl_io_write_all put;
    pl_io_read get;
    pl_sleep nap;
    uint8_t msg[4];
    size_t got;
    uint64_t op; /* the put in flight, in the history */
    int connects;
} client;

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *c = (client *)f;
    PL_ASYNC_BEGIN(c);
    for (c->connects = 0;
         c->st->acked < PUTS && c->connects < CONNECTS && pl_now(cx->ex) < GIVE_UP_AT;
         c->connects++) {
        c->conn = pl_tcp_connect_str("10.0.0.1:7000");
        c->limit = pl_timeout_make(&c->conn.base, OP_LIMIT);
        PL_AWAIT(cx, &c->limit);
        if (c->limit.result == 0 && c->conn.result == 0) {
            c->s = pl_tcp_connect_take(&c->conn);
            while (c->st->acked < PUTS) {
                zoo_put32(c->msg, (uint32_t)c->st->acked);
                c->op = pl_history_invoke(NULL, PL_REG_WRITE, (uint64_t)c->st->acked, 1, 0);
                c->put = pl_tcp_write_all(&c->s, c->msg, 4);
                PL_AWAIT(cx, &c->put);
                if (c->put.result < 0) {
                    pl_history_unknown(c->op);
                    break;
                }
                for (c->got = 0; c->got < 4;) {
                    c->get = pl_tcp_read(&c->s, c->msg + c->got, 4 - c->got);
                    c->limit = pl_timeout_make(&c->get.base, OP_LIMIT);
                    PL_AWAIT(cx, &c->limit);
                    if (c->limit.result != 0 || c->get.result <= 0) {
                        break;
                    }
                    c->got += (size_t)c->get.result;
                }
                if (c->got < 4 || (int)zoo_get32(c->msg) != c->st->acked) {
                    pl_history_unknown(c->op);
                    break;
                }
                pl_history_ok(c->op, 0, 0);
                c->st->acked++;
            }
            pl_tcp_close(&c->s);
        }
        c->nap = pl_sleep_for(PL_MS);
        PL_AWAIT(cx, &c->nap);
    }
    PL_ASYNC_END;
}

static void client_drop(pl_future *f)
{
    client *c = (client *)f;
    pl_drop_child(&c->limit.base);
    pl_drop_child(&c->put.base);
    pl_drop_child(&c->nap.base);
    pl_tcp_close(&c->s);
}

static const pl_future_vtable client_vt = {"client", client_poll, client_drop};

static int client_boot(pl_executor *ex, void *ud)
{
    client c = {.base = PL_FUTURE_INIT(&client_vt), .st = ud};
    return PL_SPAWN(ex, c, "client", NULL);
}

/* ---- Scenario --------------------------------------------------------------
 * The state outlives every node: it is the client's count of
 * acknowledged puts, which it keeps across its reconnections, not memory
 * the nodes share; the history is the checker's view. */

static int setup(pl_executor *ex, kv_state *st, bool fixed)
{
    st->fixed = fixed;
    int rc = pl_history_use(&pl_model_kv);
    if (rc != 0 && rc != PL_ENOSYS) { /* PL_ENOSYS: the real backend keeps no history */
        return rc;
    }
    const pl_node_def server_def = {
        .name = "server", .host = "10.0.0.1", .boot = server_boot, .ud = st, .crashable = true};
    const pl_node_def client_def = {
        .name = "client", .host = "10.0.0.2", .boot = client_boot, .ud = st};
    rc = pl_sim_node_add(ex, &server_def);
    return rc != 0 ? rc : pl_sim_node_add(ex, &client_def);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

PL_SCENARIO(bug_kv_ack_sc, .name = "bug_kv_ack",
            .summary = "log server on a crashing node answers a put before its fsync; the crash "
                       "loses it (linearizability)",
            .state_size = sizeof(kv_state), .setup = setup_buggy, .expect = "linearizability",
            .time_limit_ns = 2 * PL_S);

PL_SCENARIO(fix_kv_ack_sc, .name = "fix_kv_ack",
            .summary = "log server on a crashing node answers a put once its fsync returned",
            .state_size = sizeof(kv_state), .setup = setup_fixed, .time_limit_ns = 2 * PL_S);
