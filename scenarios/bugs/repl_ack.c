/* Zoo: a primary-backup key-value log whose primary acknowledges a put
 * before the backup has it.
 *
 * The program: a cluster of three nodes (pollen/sim_node.h) on pollen's
 * TCP and file futures. "primary" (10.0.0.1, crashable) and "backup"
 * (10.0.0.2) each keep a log of fixed-size records (zoo.h) in file "log"
 * of their own disk, recovered at each boot (records read from the start
 * up to the first one missing or torn). "client" (10.0.0.3) puts
 * 0..PUTS-1 in order on port 7000 of the serving node; a put is a 4-byte
 * sequence number k, stored as record k at offset k * 16 (idempotent),
 * and counts as acknowledged when the answer k arrives. Each connection
 * of the client starts and ends with a read (the word READ), answered
 * with how many records the server's log holds, and judged when the answer
 * arrives.
 *   primary  connects to the backup's port 7001, ships its recovered log
 *            to it (catch-up), then serves: a put is appended, fsynced,
 *            replicated (the backup answers k once it appended and
 *            fsynced record k), then acknowledged. A read is answered once
 *            the backup confirmed it still follows (a PING). Idle, it
 *            pings every HEARTBEAT. A refused connection to the backup
 *            means the backup took over: the primary retires.
 *   backup   follows on port 7001; once it has not heard from the primary
 *            for TAKEOVER, it takes over: it closes port 7001 (fencing the
 *            old primary) and serves clients on port 7000 alone.
 *   client   on a failed connect, read or write, it fails over to the
 *            other node (1 ms later) and puts the first unacknowledged
 *            record again.
 * The `node_crash` decision kills the primary at any wait and restarts it
 * 1 to 8 ms later; the link decisions cut, hold, delay and reset the
 * links. The promise: every acknowledged put survives any crash, restart
 * and partition, and a read sees the latest acknowledged put. The run's
 * history (pollen/sim_history.h, the key-value model, a key per record)
 * holds each put as a write of 1 to key k (unknown when its answer never
 * came) and each answered read of n records as a read of 0 at key n (the
 * first record the server does not have), named after the node that
 * answered: "client@primary" or "client@backup".
 *
 * BUG (bug_repl_ack): the primary acknowledges a put once its own log has
 * it, then replicates it. If the replica never gets there (the link to
 * the backup is cut, or the primary crashes first) and the backup takes
 * over, the put is lost at the failover.
 * Finding: linearizability: on key 0, client@primary's write(0, 1),
 * acknowledged, then client@backup's read of 0 there; the shrunk replay
 * says which link was cut or held (or which node crashed) and when.
 * FIX (fix_repl_ack): replicate, then acknowledge: no answer before the
 * backup's, and any failure drops the client's connection unanswered. A
 * read is answered by the primary once the backup confirmed it still
 * follows (the backup may have taken over and acknowledged puts since).
 * On the real backend (`--real`) the same setup runs the three nodes in
 * one process, their hosts on loopback and their logs in directories of
 * their own (docs/simulator.md, "Cluster scenarios on the real backend"):
 * the fault-free path, whose check also wants every put read back.
 */

#include <pollen/file.h>
#include <pollen/io.h>
#include <pollen/sim_history.h>
#include <pollen/sim_node.h>

#include "zoo.h"

enum { PUTS = 8, REC = ZOO_REC, READ_TRIES = 64, CONNECTS = 400 };

/* Words on the wire besides sequence numbers. */
#define W_READ 0xfffffff0u
#define W_PING 0xfffffff1u

#define GIVE_UP_AT (1 * PL_S)   /* the client and the primary start nothing new then */
#define OP_LIMIT   (30 * PL_MS) /* bounds a connect or an answer */
#define HEARTBEAT  (2 * PL_MS)  /* an idle primary pings this often */
#define TAKEOVER   (20 * PL_MS) /* the backup's patience */
#define IDLE_LEAVE (50 * PL_MS) /* a server leaves once no client came for this long */

/* Where a node listens: the primary's and the backup's client port, the
 * backup's replication port. */
#define AT_PRIMARY "10.0.0.1:7000"
#define AT_BACKUP  "10.0.0.2:7000"
#define AT_FOLLOW  "10.0.0.2:7001"

typedef struct repl_state {
    bool fixed;
    bool faultless;      /* no simulator (the real backend): no history, no faults */
    bool done;           /* the client had every put acknowledged and read back */
    pl_time t0;          /* the run's start: times below are since then */
    int acked;           /* puts acknowledged to the client: 0..acked-1 */
} repl_state;

static pl_time since(const pl_executor *ex, const repl_state *st) { return pl_now(ex) - st->t0; }

/* Names the word a task sends next in the explanations of link decisions
 * (pl_sim_send_label): "put 3", "READ", "PING", or the answer to one. */
static void label(uint32_t word, bool answer)
{
    const char *to = answer ? "answer to " : "";
    if (word == W_READ || word == W_PING) {
        pl_sim_send_label("%s%s", to, word == W_READ ? "READ" : "PING");
    } else {
        pl_sim_send_label("%sput %u", to, (unsigned)word);
    }
}

/* ---- A call: one word out, one word back, under a time limit ------------ */

typedef struct call {
    pl_future base;
    pl_tcp_stream *s;
    pl_io_write_all put;
    pl_io_read get;
    uint8_t msg[4];
    size_t got;
    int result; /* 0, or the write's or read's error (PL_ECONNRESET at the end) */
} call;

static pl_poll_result call_poll(pl_future *f, pl_context *cx)
{
    call *c = (call *)f;
    PL_ASYNC_BEGIN(c);
    label(zoo_get32(c->msg), false);
    c->put = pl_tcp_write_all(c->s, c->msg, 4);
    PL_AWAIT(cx, &c->put);
    c->result = c->put.result < 0 ? (int)c->put.result : 0;
    for (c->got = 0; c->result == 0 && c->got < 4;) {
        c->get = pl_tcp_read(c->s, c->msg + c->got, 4 - c->got);
        PL_AWAIT(cx, &c->get);
        if (c->get.result <= 0) {
            c->result = c->get.result < 0 ? (int)c->get.result : PL_ECONNRESET;
        } else {
            c->got += (size_t)c->get.result;
        }
    }
    PL_ASYNC_END;
}

static void call_drop(pl_future *f)
{
    call *c = (call *)f;
    pl_drop_child(&c->put.base);
    pl_drop_child(&c->get.base);
}

static const pl_future_vtable call_vt = {"call", call_poll, call_drop};

static call call_init(pl_tcp_stream *s, uint32_t word)
{
    call c = {.base = PL_FUTURE_INIT(&call_vt), .s = s};
    zoo_put32(c.msg, word);
    return c;
}

/* The call's answer, or -1 when it failed or timed out. */
static int64_t call_answer(const pl_timeout *t, const call *c)
{
    return t->result == 0 && c->result == 0 ? (int64_t)zoo_get32(c->msg) : -1;
}

/* ---- A replica: recovery, then its role ---------------------------------- */

/* A replica's state outside its future: node memory, freed by a crash. */
typedef struct replica_mem {
    pl_tcp_listener l; /* 7000 for clients (the backup opens it at takeover) */
    pl_tcp_listener f; /* the backup's 7001, for the primary */
    bool has_l;
    bool has_f;
    pl_dir dir;
    pl_file log;
    int count; /* records 0..count-1 are in the log, synced */
} replica_mem;

/* ---- An append: record i written at its place in the log, then synced -- */

typedef struct append {
    pl_future base;
    replica_mem *m;
    int i;
    pl_file_pwrite wr;
    pl_file_fsync sy;
    uint8_t rec[REC];
    bool ok; /* the record is durable; false: refused (out of order) or failed */
} append;

static pl_poll_result append_poll(pl_future *f, pl_context *cx)
{
    append *a = (append *)f;
    PL_ASYNC_BEGIN(a);
    if (a->i < 0 || a->i >= PUTS || a->i > a->m->count) {
        return PL_READY; /* only the next record, or one the log has */
    }
    zoo_record_encode(a->rec, a->i);
    a->wr = pl_file_write_all(&a->m->log, a->rec, REC, (uint64_t)a->i * REC);
    PL_AWAIT(cx, &a->wr);
    if (a->wr.result != REC) {
        return PL_READY;
    }
    a->sy = pl_file_sync(&a->m->log);
    PL_AWAIT(cx, &a->sy);
    a->ok = a->sy.result == 0;
    if (a->ok && a->i + 1 > a->m->count) {
        a->m->count = a->i + 1;
    }
    PL_ASYNC_END;
}

static void append_drop(pl_future *f)
{
    append *a = (append *)f;
    pl_drop_child(&a->wr.base);
    pl_drop_child(&a->sy.base);
}

static const pl_future_vtable append_vt = {"append", append_poll, append_drop};

static append append_init(replica_mem *m, int i)
{
    return (append){.base = PL_FUTURE_INIT(&append_vt), .m = m, .i = i};
}

typedef struct replica {
    pl_future base;
    repl_state *st;
    replica_mem *m;
    bool primary;
    pl_file_open op;
    pl_file_pread rd;
    pl_file_fsync sy;
    append app;
    pl_tcp_connect conn;
    pl_tcp_accept acc;
    pl_timeout limit;
    pl_tcp_stream peer; /* the replication connection */
    pl_tcp_stream s;    /* a client's connection */
    call rpc;
    pl_io_read get;
    pl_io_write_all put;
    pl_sleep nap;
    uint8_t rec[REC];
    uint8_t msg[4];
    size_t got;
    int i;
    int tries;
    pl_time idle;
    bool valid;
    bool end;
} replica;

static void replica_close(replica *v)
{
    pl_tcp_close(&v->s);
    pl_tcp_close(&v->peer);
    if (v->m != NULL) {
        pl_file_close(&v->m->log);
        pl_dir_close(&v->m->dir);
        if (v->m->has_l) {
            pl_tcp_listener_close(&v->m->l);
        }
        if (v->m->has_f) {
            pl_tcp_listener_close(&v->m->f);
        }
        pl_node_free(v->m);
        v->m = NULL;
    }
}

/* Reads the 4-byte message into msg; got < 4 after it: the stream ended
 * or failed. One await: a macro holds at most one. */
#define READ_MSG(cx, self, sock)                                                                   \
    for ((self)->got = 0; (self)->got < 4;) {                                                      \
        (self)->get = pl_tcp_read(sock, (self)->msg + (self)->got, 4 - (self)->got);               \
        PL_AWAIT(cx, &(self)->get);                                                                \
        if ((self)->get.result <= 0) {                                                             \
            break;                                                                                 \
        }                                                                                          \
        (self)->got += (size_t)(self)->get.result;                                                 \
    }

static pl_poll_result replica_poll(pl_future *f, pl_context *cx)
{
    replica *v = (replica *)f;
    PL_ASYNC_BEGIN(v);
    /* ---- Recovery: the log's valid prefix. */
    v->op =
        pl_file_open_make(&v->m->dir, "log", PL_FILE_READ | PL_FILE_WRITE | PL_FILE_CREATE, 0644);
    PL_AWAIT(cx, &v->op);
    if (v->op.result != 0) {
        goto out;
    }
    v->m->log = pl_file_open_take(&v->op);
    v->sy = pl_dir_sync(&v->m->dir); /* the log's entry is durable once its directory is */
    PL_AWAIT(cx, &v->sy);
    if (v->sy.result != 0) {
        goto out;
    }
    for (v->i = 0, v->end = false; !v->end; v->i++) {
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
    v->m->count = v->i - 1;
    if (v->primary) {
        pl_sometimes(v->m->count > 0, "the primary boots again on a log with records");
        goto connect;
    }

    /* ---- The backup follows until the primary is silent for TAKEOVER. */
    for (;;) {
        v->acc = pl_tcp_accept_make(&v->m->f);
        v->limit = pl_timeout_make(&v->acc.base, TAKEOVER);
        PL_AWAIT(cx, &v->limit);
        if (v->limit.result != 0 || v->acc.result != 0) {
            break;
        }
        v->peer = pl_tcp_accept_take(&v->acc);
        for (;;) {
            for (v->got = 0; v->got < 4;) {
                v->get = pl_tcp_read(&v->peer, v->msg + v->got, 4 - v->got);
                v->limit = pl_timeout_make(&v->get.base, TAKEOVER);
                PL_AWAIT(cx, &v->limit);
                if (v->limit.result != 0) {
                    goto takeover;
                }
                if (v->get.result <= 0) {
                    break;
                }
                v->got += (size_t)v->get.result;
            }
            if (v->got < 4) {
                break;
            }
            v->i = (int)zoo_get32(v->msg);
            label(zoo_get32(v->msg), true);
            if (zoo_get32(v->msg) != W_PING) {
                v->app = append_init(v->m, v->i);
                PL_AWAIT(cx, &v->app);
                if (!v->app.ok) {
                    break;
                }
            }
            v->put = pl_tcp_write_all(&v->peer, v->msg, 4);
            PL_AWAIT(cx, &v->put);
            if (v->put.result < 0) {
                break;
            }
        }
        pl_tcp_close(&v->peer);
    }
takeover:
    /* Fence the old primary: no replica of it is taken from now on. */
    pl_tcp_close(&v->peer);
    pl_tcp_listener_close(&v->m->f);
    v->m->has_f = false;
    pl_sometimes(v->st->acked > 0 && v->st->acked < PUTS,
                 "the backup takes over between acknowledged puts");
    if (pl_tcp_listen_str(cx->ex, &v->m->l, AT_BACKUP, 4) != 0) {
        goto out;
    }
    v->m->has_l = true;
    goto serve;

    /* ---- The primary: connect to the backup, ship the log, serve. */
connect:
    while (since(cx->ex, v->st) < GIVE_UP_AT) {
        v->conn = pl_tcp_connect_str(AT_FOLLOW);
        v->limit = pl_timeout_make(&v->conn.base, OP_LIMIT);
        PL_AWAIT(cx, &v->limit);
        if (v->limit.result == 0 && v->conn.result == PL_ECONNREFUSED) {
            goto out; /* the backup took over: retire */
        }
        if (v->limit.result == 0 && v->conn.result == 0) {
            v->peer = pl_tcp_connect_take(&v->conn);
            for (v->i = 0; v->i < v->m->count; v->i++) {
                v->rpc = call_init(&v->peer, (uint32_t)v->i);
                v->limit = pl_timeout_make(&v->rpc.base, OP_LIMIT);
                PL_AWAIT(cx, &v->limit);
                if (call_answer(&v->limit, &v->rpc) != v->i) {
                    break;
                }
            }
            if (v->i == v->m->count) {
                goto serve;
            }
            pl_tcp_close(&v->peer);
        }
        v->nap = pl_sleep_for(PL_MS);
        PL_AWAIT(cx, &v->nap);
    }
    goto out;

    /* ---- Serving clients: the primary, or the backup once it took over. */
serve:
    for (v->idle = 0; v->idle < IDLE_LEAVE;) {
        v->acc = pl_tcp_accept_make(&v->m->l);
        v->limit = pl_timeout_make(&v->acc.base, v->primary ? HEARTBEAT : IDLE_LEAVE);
        PL_AWAIT(cx, &v->limit);
        if (v->limit.result != 0 && v->primary) {
            v->idle += HEARTBEAT;
            v->rpc = call_init(&v->peer, W_PING);
            v->limit = pl_timeout_make(&v->rpc.base, OP_LIMIT);
            PL_AWAIT(cx, &v->limit);
            if (call_answer(&v->limit, &v->rpc) != (int64_t)W_PING) {
                pl_tcp_close(&v->peer);
                goto connect;
            }
            continue;
        }
        if (v->limit.result != 0 || v->acc.result != 0) {
            break;
        }
        v->idle = 0;
        v->s = pl_tcp_accept_take(&v->acc);
        for (;;) {
            READ_MSG(cx, v, &v->s);
            if (v->got < 4) {
                break;
            }
            if (zoo_get32(v->msg) == W_READ) {
                if (v->primary) {
                    /* Answer only while the backup still follows. */
                    v->rpc = call_init(&v->peer, W_PING);
                    v->limit = pl_timeout_make(&v->rpc.base, OP_LIMIT);
                    PL_AWAIT(cx, &v->limit);
                    if (call_answer(&v->limit, &v->rpc) != (int64_t)W_PING) {
                        goto lost_backup;
                    }
                }
                label(W_READ, true); /* the ping above labelled its own */
                zoo_put32(v->msg, (uint32_t)v->m->count);
            } else {
                v->i = (int)zoo_get32(v->msg);
                v->app = append_init(v->m, v->i);
                PL_AWAIT(cx, &v->app);
                if (!v->app.ok) {
                    break;
                }
                label((uint32_t)v->i, true);
                if (v->primary && !v->st->fixed) {
                    /* BUG: the backup does not have it yet. */
                    v->put = pl_tcp_write_all(&v->s, v->msg, 4);
                    PL_AWAIT(cx, &v->put);
                }
                if (v->primary) {
                    v->rpc = call_init(&v->peer, (uint32_t)v->i);
                    v->limit = pl_timeout_make(&v->rpc.base, OP_LIMIT);
                    PL_AWAIT(cx, &v->limit);
                    if (call_answer(&v->limit, &v->rpc) != v->i) {
                        goto lost_backup;
                    }
                    if (!v->st->fixed) {
                        continue;
                    }
                    label((uint32_t)v->i, true); /* the replication labelled its own */
                }
            }
            v->put = pl_tcp_write_all(&v->s, v->msg, 4);
            PL_AWAIT(cx, &v->put);
            if (v->put.result < 0) {
                break;
            }
        }
        pl_tcp_close(&v->s);
    }
    goto out;
lost_backup:
    /* The client's request stays unanswered; find the backup again. */
    pl_tcp_close(&v->s);
    pl_tcp_close(&v->peer);
    goto connect;
out:
    replica_close(v);
    PL_ASYNC_END;
}

static void replica_drop(pl_future *f)
{
    replica *v = (replica *)f;
    pl_drop_child(&v->op.base);
    pl_drop_child(&v->rd.base);
    pl_drop_child(&v->sy.base);
    pl_drop_child(&v->app.base);
    pl_drop_child(&v->limit.base);
    pl_drop_child(&v->get.base);
    pl_drop_child(&v->put.base);
    pl_drop_child(&v->nap.base);
    replica_close(v);
}

static const pl_future_vtable replica_vt = {"replica", replica_poll, replica_drop};

static int replica_boot(pl_executor *ex, repl_state *st, bool primary)
{
    replica_mem *m = pl_node_alloc(sizeof *m);
    if (m == NULL) {
        return PL_ENOMEM;
    }
    memset(m, 0, sizeof *m);
    int rc = primary ? pl_tcp_listen_str(ex, &m->l, AT_PRIMARY, 4)
                     : pl_tcp_listen_str(ex, &m->f, AT_FOLLOW, 4);
    m->has_l = primary && rc == 0;
    m->has_f = !primary && rc == 0;
    if (rc == 0) {
        rc = pl_dir_open(ex, &m->dir, "db", true);
    }
    if (rc != 0) {
        if (m->has_l) {
            pl_tcp_listener_close(&m->l);
        }
        if (m->has_f) {
            pl_tcp_listener_close(&m->f);
        }
        pl_node_free(m);
        return rc;
    }
    replica v = {.base = PL_FUTURE_INIT(&replica_vt), .st = st, .m = m, .primary = primary};
    return PL_SPAWN(ex, v, primary ? "primary" : "backup", NULL);
}

static int primary_boot(pl_executor *ex, void *ud) { return replica_boot(ex, ud, true); }

static int backup_boot(pl_executor *ex, void *ud) { return replica_boot(ex, ud, false); }

/* ---- The client ----------------------------------------------------------- */

typedef struct client {
    pl_future base;
    repl_state *st;
    pl_timeout limit;
    pl_tcp_connect conn;
    pl_tcp_stream s;
    call rpc;
    pl_sleep nap;
    int64_t answer;
    uint32_t word;
    int connects;
    bool first;
    bool at_backup; /* the node it talks to */
    bool done;      /* every put acknowledged, and read back */
    uint64_t op[PUTS]; /* the call in flight in the history: a put's write is op[0];
                          a read's reads of keys 0..PUTS-1 */
} client;

/* The call in c->word begins, in the history. */
static void history_call(client *c)
{
    const char *who = c->at_backup ? "client@backup" : "client@primary";
    if (c->word != W_READ) {
        c->op[0] = pl_history_invoke(who, PL_REG_WRITE, c->word, 1, 0);
        return;
    }
    for (int k = 0; k < PUTS; k++) {
        c->op[k] = pl_history_invoke(who, PL_REG_READ, (uint64_t)k, 0, 0);
    }
}

/* It ended: `answer` is the put's sequence number or the count a read
 * saw, -1 for none. A read answered n says record n is missing (the rest
 * of its answer says nothing of a single key); a read without an answer
 * says nothing. A put without its answer may have taken effect. */
static void history_end(client *c, int64_t answer)
{
    if (c->word != W_READ) {
        if (answer == (int64_t)c->word) {
            pl_history_ok(c->op[0], 0, 0);
        } else {
            pl_history_unknown(c->op[0]);
        }
        return;
    }
    for (int k = 0; k < PUTS; k++) {
        if (k == answer) {
            pl_history_ok(c->op[k], 0, 0);
        } else {
            pl_history_fail(c->op[k]);
        }
    }
}

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *c = (client *)f;
    PL_ASYNC_BEGIN(c);
    for (c->connects = 0; !c->done && c->connects < CONNECTS && since(cx->ex, c->st) < GIVE_UP_AT;
         c->connects++) {
        c->conn = pl_tcp_connect_str(c->at_backup ? AT_BACKUP : AT_PRIMARY);
        c->limit = pl_timeout_make(&c->conn.base, OP_LIMIT);
        PL_AWAIT(cx, &c->limit);
        if (c->limit.result == 0 && c->conn.result == 0) {
            c->s = pl_tcp_connect_take(&c->conn);
            /* A read first (the server judges what it answers), the puts,
             * a read last. */
            for (c->first = true;;) {
                c->word = c->first || c->st->acked == PUTS ? W_READ : (uint32_t)c->st->acked;
                c->rpc = call_init(&c->s, c->word);
                c->limit = pl_timeout_make(&c->rpc.base, OP_LIMIT);
                history_call(c);
                PL_AWAIT(cx, &c->limit);
                c->answer = call_answer(&c->limit, &c->rpc);
                history_end(c, c->answer);
                if (c->answer < 0) {
                    break;
                }
                if (c->word != W_READ) {
                    if (c->answer != c->st->acked) {
                        break;
                    }
                    c->st->acked++;
                } else {
                    if (!c->first) {
                        pl_sometimes(c->at_backup, "every put is read back from the backup");
                        c->done = c->st->done = true;
                        break;
                    }
                }
                c->first = false;
            }
            pl_tcp_close(&c->s);
        }
        if (!c->done) {
            c->at_backup = !c->at_backup; /* fail over */
            c->nap = pl_sleep_for(PL_MS);
            PL_AWAIT(cx, &c->nap);
        }
    }
    PL_ASYNC_END;
}

static void client_drop(pl_future *f)
{
    client *c = (client *)f;
    pl_drop_child(&c->limit.base);
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
 * The state outlives every node: it is the checker's view of the cluster
 * (the client's acknowledgements, what the reads saw), not memory the
 * nodes share. The backup boots first, so the primary finds it. */

static int setup(pl_executor *ex, repl_state *st, bool fixed)
{
    st->fixed = fixed;
    st->t0 = pl_now(ex);
    int rc = pl_history_use(&pl_model_kv);
    st->faultless = rc == PL_ENOSYS; /* the real backend keeps no history */
    if (rc != 0 && !st->faultless) {
        return rc;
    }
    const pl_node_def defs[] = {
        {.name = "backup", .host = "10.0.0.2", .boot = backup_boot, .ud = st},
        {.name = "primary", .host = "10.0.0.1", .boot = primary_boot, .ud = st, .crashable = true},
        {.name = "client", .host = "10.0.0.3", .boot = client_boot, .ud = st},
    };
    return zoo_nodes_add(ex, defs, sizeof defs / sizeof defs[0]);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

/* On the real backend the history records nothing: the fault-free path
 * must still have every put acknowledged and read back. */
static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    repl_state *st = state;
    if (st->faultless && !st->done) {
        return pl_check_fail(msg, len,
                             "on the real backend the client had %d of %d put(s) "
                             "acknowledged and did not read them back",
                             st->acked, PUTS);
    }
    return 0;
}

PL_SCENARIO(bug_repl_ack_sc, .name = "bug_repl_ack",
            .summary = "primary-backup log: the primary acknowledges a put before the backup "
                       "has it; the failover loses it (linearizability)",
            .state_size = sizeof(repl_state), .setup = setup_buggy, .check = check,
            .expect = "linearizability", .time_limit_ns = 2 * PL_S);

PL_SCENARIO(fix_repl_ack_sc, .name = "fix_repl_ack",
            .summary = "primary-backup log: the primary acknowledges a put once the backup "
                       "has it",
            .state_size = sizeof(repl_state), .setup = setup_fixed, .check = check,
            .time_limit_ns = 2 * PL_S);
