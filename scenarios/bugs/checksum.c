/* Zoo: a snapshot loader that trusts the bytes a read returns.
 *
 * The program: a snapshot of RECORDS fixed-size records (zoo.h: a
 * sequence number, a value and an FNV-1a checksum), written and synced
 * by a saver, then loaded back by a loader that sums the values. The
 * scenario's check compares the sum with what was saved.
 *
 * BUG (bug_checksum): the loader reads each record and takes its value
 * without looking at the checksum the saver stored for exactly this
 * purpose. A disk, a controller or a cable can hand back a flipped bit
 * (the disk_corrupt decision: one bit of what one read returns); the
 * loader then computes with a value nobody wrote. Production's order
 * never shows it: every read returns what was written.
 * Finding: assertion, from the scenario's check ("loaded sum 16104,
 * saved 16120").
 * FIX (fix_checksum): verify each record's checksum and sequence number
 * and read it again when they do not match (or the read failed); the
 * flip is in what one read returned, not in the stored bytes.
 */
#include <pollen/file.h>

#include "zoo.h"

enum { RECORDS = 16, REC = ZOO_REC, TRIES = 64 };

typedef struct snap_state {
    bool fixed;
    bool saved; /* the saver wrote and synced every record */
    int loaded; /* records the loader took */
    long saved_sum;
    long loaded_sum;
} snap_state;

typedef struct snapper {
    pl_future base;
    snap_state *st;
    pl_dir dir;
    pl_file file;
    pl_file_open op;
    pl_file_pwrite wr;
    pl_file_fsync sy;
    pl_file_pread rd;
    uint8_t rec[REC];
    int i;
    int tries;
    size_t got;
    bool valid;
} snapper;

/* Saves every record (one write, one sync); false when the disk failed. */
static bool save_ok(snapper *s) { return s->wr.result == REC * RECORDS && s->sy.result == 0; }

static pl_poll_result snapper_poll(pl_future *f, pl_context *cx)
{
    snapper *s = (snapper *)f;
    static uint8_t image[REC * RECORDS];
    PL_ASYNC_BEGIN(s);
    if (pl_dir_open(cx->ex, &s->dir, "snap", true) != 0) {
        return PL_READY;
    }
    s->op =
        pl_file_open_make(&s->dir, "state", PL_FILE_READ | PL_FILE_WRITE | PL_FILE_CREATE, 0644);
    PL_AWAIT(cx, &s->op);
    s->file = pl_file_open_take(&s->op);
    for (int i = 0; i < RECORDS; i++) {
        zoo_record_encode(image + i * REC, i);
        s->st->saved_sum += 1000 + i;
    }
    s->wr = pl_file_write_all(&s->file, image, sizeof image, 0);
    PL_AWAIT(cx, &s->wr);
    s->sy = pl_file_sync(&s->file);
    PL_AWAIT(cx, &s->sy);
    s->st->saved = s->op.result == 0 && save_ok(s);
    for (s->i = 0; s->st->saved && s->i < RECORDS; s->i++) {
        s->valid = false;
        for (s->tries = 0; !s->valid && s->tries < TRIES; s->tries++) {
            for (s->got = 0; s->got < REC;) {
                s->rd = pl_file_read(&s->file, s->rec + s->got, REC - s->got,
                                     (uint64_t)s->i * REC + s->got);
                PL_AWAIT(cx, &s->rd);
                if (s->rd.result <= 0) {
                    break;
                }
                s->got += (size_t)s->rd.result;
            }
            /* BUG: the buggy loader takes any complete record. */
            s->valid = s->got == REC && (!s->st->fixed || zoo_record_ok(s->rec, s->i));
        }
        if (!s->valid) {
            break;
        }
        s->st->loaded_sum += (long)zoo_get32(s->rec + 4);
        s->st->loaded++;
    }
    pl_file_close(&s->file);
    pl_dir_close(&s->dir);
    PL_ASYNC_END;
}

static void snapper_drop(pl_future *f)
{
    snapper *s = (snapper *)f;
    pl_drop_child(&s->op.base);
    pl_drop_child(&s->wr.base);
    pl_drop_child(&s->sy.base);
    pl_drop_child(&s->rd.base);
    pl_file_close(&s->file);
    pl_dir_close(&s->dir);
}

static const pl_future_vtable snapper_vt = {"snapper", snapper_poll, snapper_drop};

static int setup(pl_executor *ex, snap_state *st, bool fixed)
{
    st->fixed = fixed;
    snapper s = {.base = PL_FUTURE_INIT(&snapper_vt), .st = st};
    return PL_SPAWN(ex, s, "snapper", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

/* A snapshot the disk refused to save, or a loader that gave up on an
 * unreadable record, fails loudly: neither loses data silently. */
static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    snap_state *st = state;
    if (st->saved && st->loaded == RECORDS && st->loaded_sum != st->saved_sum) {
        return pl_check_fail(msg, len, "loaded sum %ld, saved %ld", st->loaded_sum, st->saved_sum);
    }
    return 0;
}

PL_SCENARIO(bug_checksum_sc, .name = "bug_checksum",
            .summary = "snapshot loader uses what a read returned without its checksum "
                       "(assertion)",
            .state_size = sizeof(snap_state), .setup = setup_buggy, .check = check,
            .expect = "assertion", .time_limit_ns = 1 * PL_S);

PL_SCENARIO(fix_checksum_sc, .name = "fix_checksum",
            .summary = "snapshot loader verifies each record's checksum and reads it again",
            .state_size = sizeof(snap_state), .setup = setup_fixed, .check = check,
            .time_limit_ns = 1 * PL_S);
