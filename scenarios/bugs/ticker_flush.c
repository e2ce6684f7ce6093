/* Zoo: a background flusher that tells only one waiting writer its record is durable.
 *
 * The primitive: `journal`, a hand-written write-ahead log. Writers
 * append a record (it gets the next sequence number) and wait until it is
 * durable: while flushed_seq is below their record's they wait on the
 * journal's `flushed` pl_notify. A flusher ticks every 5 ms forever
 * (pl_interval); on a tick with unflushed records it takes the batch,
 * writes and syncs it (an awaited 1 ms), advances flushed_seq and
 * signals `flushed`. The flusher is a background task
 * (pl_task_set_background): the program is done when the writers are,
 * yet the writers depend on it. Three writers append two records each at
 * their own pace.
 *
 * BUG (bug_ticker_flush): the flusher signals with pl_notify_one ("a
 * flush wakes a writer"). When two writers wait on the same batch, one
 * is woken and the other keeps waiting on the notify, although its
 * record is durable; the next flush (if another record ever comes) wakes
 * it, and the last such writer waits forever. Production's pace gives
 * each batch one writer; a writer's timer that fires late, or the
 * flusher's, puts two records into one batch.
 * Why it is a bug: notify_one hands one wake to one waiter, but a flush
 * completes every waiting writer's record; each must be told. (It is the
 * mirror of outbox_broadcast, where notify_waiters left a busy worker
 * without the permit notify_one would have stored.) The ticker hides the
 * hang from every oracle that waits for the executor to go quiet: its
 * timer is always armed, so the run only ends at its virtual time limit.
 * Finding: deadlock. The writer's wake was lost at the signal: it is
 * parked in the notify's queue, a probe poll finds it still waiting there
 * and changes nothing, and the flusher, still ticking, has nothing left
 * to flush. The fixed twin is the other half of the lesson: there a
 * parked writer legitimately waits for the background flusher's next
 * tick, which is not a deadlock.
 * FIX (fix_ticker_flush): signal with pl_notify_waiters: every writer
 * waiting when the batch became durable is woken and checks its own
 * record; one whose record came after the batch waits for the next one.
 */
#include "zoo.h"

enum { WRITERS = 3, RECORDS = 2 };

#define TICK_NS (5 * PL_MS)
#define SYNC_NS (1 * PL_MS)

/* The pause before each append, per writer: one record per batch when
 * every timer is on time. */
static const pl_time append_gap_ms[WRITERS][RECORDS] = {{2, 13}, {7, 13}, {12, 13}};

typedef struct journal {
    uint64_t appended_seq;
    uint64_t flushed_seq;
    pl_notify flushed;
    bool fixed; /* which signal the flusher uses */
} journal;

typedef struct flush_state {
    journal j;
    int durable; /* records whose writer saw them durable */
    uint64_t flushes;
} flush_state;

/* ---- Writer: append, wait until durable, repeat ---------------------- */

typedef struct writer {
    pl_future base;
    flush_state *st;
    int index;
    int r;
    uint64_t seq;
    pl_sleep pause;
    pl_notified flushed;
} writer;

static pl_poll_result writer_poll(pl_future *f, pl_context *cx)
{
    writer *self = (writer *)f;
    journal *j = &self->st->j;
    PL_ASYNC_BEGIN(self);
    for (self->r = 0; self->r < RECORDS; self->r++) {
        self->pause = pl_sleep_for(append_gap_ms[self->index][self->r] * PL_MS);
        PL_AWAIT(cx, &self->pause);
        self->seq = ++j->appended_seq;
        /* The check and the registration (the notified's first poll)
         * happen in one poll: no signal can fall between them. */
        while (j->flushed_seq < self->seq) {
            self->flushed = pl_notified_make(&j->flushed);
            PL_AWAIT(cx, &self->flushed);
        }
        self->st->durable++;
    }
    PL_ASYNC_END;
}

static void writer_drop(pl_future *f)
{
    writer *self = (writer *)f;
    pl_drop_child(&self->pause.base);
    pl_drop_child(&self->flushed.base);
}

static const pl_future_vtable writer_vt = {"writer", writer_poll, writer_drop};

/* ---- The flusher: every tick, sync what was appended ----------------- */

typedef struct flusher {
    pl_future base;
    flush_state *st;
    uint64_t batch_seq;
    pl_interval every;
    pl_interval_tick tick;
    pl_sleep sync;
} flusher;

static void signal_flushed(journal *j)
{
    if (j->fixed) {
        pl_notify_waiters(&j->flushed); /* FIX: every waiting writer checks */
    } else {
        pl_notify_one(&j->flushed); /* BUG: one writer hears of the batch */
    }
}

static pl_poll_result flusher_poll(pl_future *f, pl_context *cx)
{
    flusher *self = (flusher *)f;
    journal *j = &self->st->j;
    PL_ASYNC_BEGIN(self);
    self->every = pl_interval_make(TICK_NS);
    for (;;) {
        self->tick = pl_interval_tick_make(&self->every);
        PL_AWAIT(cx, &self->tick);
        if (j->appended_seq == j->flushed_seq) {
            continue;
        }
        self->batch_seq = j->appended_seq;
        self->sync = pl_sleep_for(SYNC_NS);
        PL_AWAIT(cx, &self->sync);
        j->flushed_seq = self->batch_seq;
        self->st->flushes++;
        signal_flushed(j);
    }
    PL_ASYNC_END;
}

/* Cancelled when the program ends (it is a background task). */
static void flusher_drop(pl_future *f)
{
    flusher *self = (flusher *)f;
    pl_drop_child(&self->tick.base);
    pl_drop_child(&self->sync.base);
}

static const pl_future_vtable flusher_vt = {"flusher", flusher_poll, flusher_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, flush_state *st, bool fixed)
{
    pl_notify_init(&st->j.flushed);
    st->j.fixed = fixed;
    flusher fl = {.base = PL_FUTURE_INIT(&flusher_vt), .st = st};
    pl_task *t;
    int rc = PL_SPAWN(ex, fl, "flusher", &t);
    if (rc != 0) {
        return rc;
    }
    pl_task_set_background(t, true);
    pl_task_release(t);
    for (int i = 0; i < WRITERS && rc == 0; i++) {
        writer w = {.base = PL_FUTURE_INIT(&writer_vt), .st = st, .index = i};
        rc = PL_SPAWN(ex, w, "writer", NULL);
    }
    return rc;
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    flush_state *st = state;
    journal *j = &st->j;
    if (st->durable != WRITERS * RECORDS || j->flushed_seq != j->appended_seq) {
        return pl_check_fail(msg, len,
                             "%d of %d records seen durable by their writers; %llu appended, "
                             "%llu flushed in %llu batch(es)",
                             st->durable, WRITERS * RECORDS, (unsigned long long)j->appended_seq,
                             (unsigned long long)j->flushed_seq, (unsigned long long)st->flushes);
    }
    return 0;
}

PL_SCENARIO(bug_ticker_flush_sc, .name = "bug_ticker_flush",
            .summary = "background flusher signals one of the writers its batch made durable "
                       "(deadlock)",
            .state_size = sizeof(flush_state), .setup = setup_buggy, .check = check,
            .expect = "deadlock", .time_limit_ns = 1 * PL_S);

PL_SCENARIO(fix_ticker_flush_sc, .name = "fix_ticker_flush",
            .summary = "background flusher wakes every writer waiting on the batch",
            .state_size = sizeof(flush_state), .setup = setup_fixed, .check = check,
            .time_limit_ns = 1 * PL_S);
