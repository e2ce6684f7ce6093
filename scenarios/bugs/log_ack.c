/* Zoo: a log writer that acknowledges a record before it is durable.
 *
 * The program: a write-ahead log of fixed-size records (zoo.h: a
 * sequence number, a value and an FNV-1a checksum) in file "log" of
 * directory "db". The writer creates the log, syncs the directory (so the file
 * itself survives a crash), then appends RECORDS records one
 * millisecond apart; each one is acknowledged to its client (the
 * `acked` counter) once the writer considers it safe. At CRASH_AT the
 * power goes (pl_sim_disk_crash) and recovery reopens the log the way a
 * restarted server would: it reads records from the start, re-reads one
 * whose checksum fails (a read can return a flipped bit) or whose read
 * failed, and stops at the first record missing or torn (one it cannot
 * read at all stops recovery loudly). The promise: every acknowledged
 * record is recovered.
 *
 * BUG (bug_log_ack): the writer acknowledges a record as soon as its
 * write returns, then fsyncs. A written record is only in the page
 * cache until the fsync completes; a crash in between loses it (the
 * simulated disk keeps none of the unsynced writes by default, or a torn
 * prefix, as the disk_lose decision says). Production's order never
 * shows it on a fast disk: the fsync ends before the next millisecond.
 * A slow fsync (the disk_latency decision) that spans CRASH_AT opens the
 * window. Finding: assertion, from the scenario's check ("3 record(s)
 * acknowledged, recovery found 2: acknowledged record 2 is lost").
 * FIX (fix_log_ack): fsync, then acknowledge; a failed write or fsync
 * (PL_EIO, which the disk_fault decision injects) acknowledges nothing
 * and stops the writer, as a real server would fail the request.
 * On the real backend (`pollen run --real`) there is nothing to crash:
 * both run clean, in directory "db" of the current directory.
 */
#include <pollen/file.h>

#include "zoo.h"

/* RETRIES bounds the writer's directory syncs; READ_TRIES the re-reads
 * of one record, far past what transient faults need (a real server
 * bounds them too: a disk that never answers is a dead disk). */
enum { RECORDS = 8, REC = ZOO_REC, RETRIES = 6, READ_TRIES = 64 };

#define CRASH_AT (3 * PL_MS + 300 * PL_US)

typedef struct log_state {
    bool fixed;
    int acked;       /* records acknowledged to clients: 0..acked-1 */
    int promised;    /* acked when the power went: what recovery must find */
    int recovered;   /* valid records recovery read back from the start */
    bool unreadable; /* recovery gave up on a record it could not read: it
                        fails loudly instead of dropping what follows */
} log_state;

/* ---- The writer --------------------------------------------------------- */

typedef struct writer {
    pl_future base;
    log_state *st;
    pl_dir dir;
    pl_file log;
    pl_file_open op;
    pl_file_pwrite wr;
    pl_file_fsync sy;
    pl_sleep nap;
    uint8_t rec[REC];
    int i;
    int tries;
    bool ready;
} writer;

static pl_poll_result writer_poll(pl_future *f, pl_context *cx)
{
    writer *w = (writer *)f;
    PL_ASYNC_BEGIN(w);
    if (pl_dir_open(cx->ex, &w->dir, "db", true) != 0) {
        return PL_READY;
    }
    w->op = pl_file_open_make(&w->dir, "log",
                              PL_FILE_READ | PL_FILE_WRITE | PL_FILE_CREATE | PL_FILE_TRUNC, 0644);
    PL_AWAIT(cx, &w->op);
    w->log = pl_file_open_take(&w->op);
    /* The new file's entry is durable only once its directory is synced. */
    for (w->tries = 0; w->op.result == 0 && w->tries < RETRIES && !w->ready; w->tries++) {
        w->sy = pl_dir_sync(&w->dir);
        PL_AWAIT(cx, &w->sy);
        w->ready = w->sy.result == 0;
    }
    for (w->i = 0; w->ready && w->i < RECORDS; w->i++) {
        zoo_record_encode(w->rec, w->i);
        w->wr = pl_file_write_all(&w->log, w->rec, REC, (uint64_t)w->i * REC);
        PL_AWAIT(cx, &w->wr);
        if (w->wr.result != REC) {
            break;
        }
        if (!w->st->fixed) {
            w->st->acked = w->i + 1; /* BUG: the record is not durable yet */
        }
        w->sy = pl_file_sync(&w->log);
        PL_AWAIT(cx, &w->sy);
        if (w->sy.result != 0) {
            break;
        }
        w->st->acked = w->i + 1;
        w->nap = pl_sleep_for(PL_MS);
        PL_AWAIT(cx, &w->nap);
    }
    pl_file_close(&w->log);
    pl_dir_close(&w->dir);
    PL_ASYNC_END;
}

static void writer_drop(pl_future *f)
{
    writer *w = (writer *)f;
    pl_drop_child(&w->op.base);
    pl_drop_child(&w->wr.base);
    pl_drop_child(&w->sy.base);
    pl_drop_child(&w->nap.base);
    pl_file_close(&w->log);
    pl_dir_close(&w->dir);
}

static const pl_future_vtable writer_vt = {"writer", writer_poll, writer_drop};

/* ---- The crash and the recovery --------------------------------------- */

typedef struct recovery {
    pl_future base;
    log_state *st;
    pl_sleep nap;
    pl_dir dir;
    pl_file log;
    pl_file_open op;
    pl_file_pread rd;
    uint8_t rec[REC];
    size_t got;
    int i;
    int tries;
    bool valid;
    bool end;
} recovery;

static pl_poll_result recovery_poll(pl_future *f, pl_context *cx)
{
    recovery *r = (recovery *)f;
    PL_ASYNC_BEGIN(r);
    r->nap = pl_sleep_until(CRASH_AT);
    PL_AWAIT(cx, &r->nap);
    /* On the real backend there is nothing to crash (PL_EINVAL): the
     * recovery then reads a log nothing happened to. */
    r->st->promised = r->st->acked;
    (void)pl_sim_disk_crash();
    if (pl_dir_open(cx->ex, &r->dir, "db", false) != 0) {
        return PL_READY; /* the writer never got to create it */
    }
    r->op = pl_file_open_make(&r->dir, "log", PL_FILE_READ, 0);
    PL_AWAIT(cx, &r->op);
    r->log = pl_file_open_take(&r->op);
    for (r->i = 0; r->op.result == 0 && r->i < RECORDS && !r->end; r->i++) {
        r->valid = false;
        for (r->tries = 0; !r->valid && !r->end && r->tries < READ_TRIES; r->tries++) {
            /* A short read is not the end: read on until the record is in. */
            for (r->got = 0; r->got < REC;) {
                r->rd = pl_file_read(&r->log, r->rec + r->got, REC - r->got,
                                     (uint64_t)r->i * REC + r->got);
                PL_AWAIT(cx, &r->rd);
                if (r->rd.result <= 0) {
                    break;
                }
                r->got += (size_t)r->rd.result;
            }
            r->end = r->got < REC && r->rd.result == 0; /* end of the log, or torn */
            r->valid = r->got == REC && zoo_record_ok(r->rec, r->i);
        }
        if (!r->valid) {
            r->st->unreadable = !r->end;
            break;
        }
        r->st->recovered = r->i + 1;
    }
    pl_file_close(&r->log);
    pl_dir_close(&r->dir);
    PL_ASYNC_END;
}

static void recovery_drop(pl_future *f)
{
    recovery *r = (recovery *)f;
    pl_drop_child(&r->nap.base);
    pl_drop_child(&r->op.base);
    pl_drop_child(&r->rd.base);
    pl_file_close(&r->log);
    pl_dir_close(&r->dir);
}

static const pl_future_vtable recovery_vt = {"recovery", recovery_poll, recovery_drop};

/* ---- Scenario ----------------------------------------------------------- */

static int setup(pl_executor *ex, log_state *st, bool fixed)
{
    st->fixed = fixed;
    writer w = {.base = PL_FUTURE_INIT(&writer_vt), .st = st};
    int rc = PL_SPAWN(ex, w, "writer", NULL);
    if (rc != 0) {
        return rc;
    }
    recovery r = {.base = PL_FUTURE_INIT(&recovery_vt), .st = st};
    return PL_SPAWN(ex, r, "recovery", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    log_state *st = state;
    if (st->recovered < st->promised && !st->unreadable) {
        return pl_check_fail(msg, len,
                             "%d record(s) acknowledged, recovery found %d: acknowledged "
                             "record %d is lost",
                             st->promised, st->recovered, st->recovered);
    }
    return 0;
}

PL_SCENARIO(bug_log_ack_sc, .name = "bug_log_ack",
            .summary = "log writer acknowledges a record before its fsync; a crash loses it "
                       "(assertion)",
            .state_size = sizeof(log_state), .setup = setup_buggy, .check = check,
            .expect = "assertion", .time_limit_ns = 1 * PL_S);

PL_SCENARIO(fix_log_ack_sc, .name = "fix_log_ack",
            .summary = "log writer acknowledges a record once its fsync returned",
            .state_size = sizeof(log_state), .setup = setup_fixed, .check = check,
            .time_limit_ns = 1 * PL_S);
