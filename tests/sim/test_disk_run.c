/* tests/sim/test_disk_run.c: the file futures on the simulated disk,
 * inside whole runs: a delayed file operation lets other tasks run, a
 * disk finding replays exactly from its decisions, pl_sim_disk_crash is
 * refused outside a run, and a run that leaves files open and writes
 * unsynced frees them (leak-free under ASan). The zoo pair log_ack
 * (test_bugs.c) and its committed replay cover the crash end to end.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <pollen/file.h>
#include <pollen/sim.h>

#include "leakcheck.h"
#include "run_record.h"
#include "sim_internal.h"

/* ---- A writer next to a ticker ------------------------------------------ */

typedef struct slow_state {
    int ticks;             /* the ticker's ticks so far */
    int ticks_during_sync; /* ticks between the start and the end of the fsync */
    int sync_result;
    bool done;
    bool leave_open; /* end without closing or syncing anything */
} slow_state;

typedef struct writer {
    pl_future base;
    slow_state *st;
    pl_dir dir;
    pl_file file;
    pl_file_open op;
    pl_file_pwrite wr;
    pl_file_fsync sy;
    int ticks_before;
} writer;

static pl_poll_result writer_poll(pl_future *f, pl_context *cx)
{
    writer *w = (writer *)f;
    PL_ASYNC_BEGIN(w);
    cr_assert_eq(pl_dir_open(cx->ex, &w->dir, "d", true), 0);
    w->op = pl_file_open_make(&w->dir, "f", PL_FILE_WRITE | PL_FILE_CREATE, 0600);
    PL_AWAIT(cx, &w->op);
    w->file = pl_file_open_take(&w->op);
    w->wr = pl_file_write_all(&w->file, "record", 6, 0);
    PL_AWAIT(cx, &w->wr);
    w->ticks_before = w->st->ticks;
    w->sy = pl_file_sync(&w->file);
    PL_AWAIT(cx, &w->sy);
    w->st->ticks_during_sync = w->st->ticks - w->ticks_before;
    w->st->sync_result = w->sy.result;
    w->st->done = true;
    if (!w->st->leave_open) {
        pl_file_close(&w->file);
        pl_dir_close(&w->dir);
    }
    PL_ASYNC_END;
}

static void writer_drop(pl_future *f)
{
    writer *w = (writer *)f;
    pl_drop_child(&w->op.base);
    pl_drop_child(&w->wr.base);
    pl_drop_child(&w->sy.base);
    pl_file_close(&w->file);
    pl_dir_close(&w->dir);
}

static const pl_future_vtable writer_vt = {"writer", writer_poll, writer_drop};

typedef struct ticker {
    pl_future base;
    slow_state *st;
    pl_sleep nap;
} ticker;

static pl_poll_result ticker_poll(pl_future *f, pl_context *cx)
{
    ticker *t = (ticker *)f;
    PL_ASYNC_BEGIN(t);
    while (!t->st->done && t->st->ticks < 1000) {
        t->nap = pl_sleep_for(100 * PL_US);
        PL_AWAIT(cx, &t->nap);
        t->st->ticks++;
    }
    PL_ASYNC_END;
}

static void ticker_drop(pl_future *f) { pl_drop_child(&((ticker *)f)->nap.base); }

static const pl_future_vtable ticker_vt = {"ticker", ticker_poll, ticker_drop};

static slow_state last; /* the state of the latest run, copied by check */

static int slow_setup(pl_executor *ex, void *state)
{
    slow_state *st = state;
    st->leave_open = last.leave_open;
    writer w = {.base = PL_FUTURE_INIT(&writer_vt), .st = st};
    ticker t = {.base = PL_FUTURE_INIT(&ticker_vt), .st = st};
    int rc = PL_SPAWN(ex, w, "writer", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, t, "ticker", NULL);
}

static int slow_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    (void)msg;
    (void)len;
    last = *(slow_state *)state;
    return 0;
}

PL_SCENARIO(slow_sc, .name = "test_disk_slow", .summary = "a write and a sync next to a ticker",
            .state_size = sizeof(slow_state), .setup = slow_setup, .check = slow_check,
            .time_limit_ns = PL_S);

static pl_sim_result run_slow(const char *knobs, uint64_t seed)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = seed;
    o.knobs = knobs;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&slow_sc, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    cr_assert(last.done);
    return r;
}

LEAK_TEST(disk_run, a_slow_sync_lets_other_tasks_run)
{
    last = (slow_state){0};
    pl_sim_result r = run_slow("disk_latency=off,disk_fault=off,disk_corrupt=off", 0);
    cr_assert_eq(last.ticks_during_sync, 0, "an undelayed sync completes in its first poll");
    cr_assert_eq(last.sync_result, 0);
    /* The record keeps the file's path for the shrinker's explanation:
     * the scenario's disk (node 0), its directory, its file. */
    const pl__run_record *rec = pl__sim_result_record(&r);
    cr_assert_eq(rec->files_count, 3);
    cr_assert_str_eq(rec->files_blob, "@0:1:1:");
    cr_assert_str_eq(rec->files_blob + 8, "d");
    cr_assert_str_eq(rec->files_blob + 10, "d/f");
    pl_sim_result_free(&r);
    /* Every operation delayed: the sync takes 1 to 15 quanta of 250 us,
     * and the ticker's 100 us naps run meanwhile. */
    int most = 0;
    for (uint64_t seed = 0; seed < 20; seed++) {
        r = run_slow("disk_latency=65536,disk_fault=off,disk_corrupt=off", seed);
        cr_assert_eq(last.sync_result, 0);
        most = last.ticks_during_sync > most ? last.ticks_during_sync : most;
        pl_sim_result_free(&r);
    }
    cr_assert_gt(most, 0, "no tick ran while a delayed sync was in flight");
}

LEAK_TEST(disk_run, a_run_that_leaves_files_open_frees_them)
{
    last = (slow_state){.leave_open = true};
    pl_sim_result r = run_slow("disk_latency=32768", 3);
    cr_assert(last.done);
    pl_sim_result_free(&r);
    last.leave_open = false;
}

LEAK_TEST(disk_run, runs_with_disk_decisions_replay_exactly)
{
    last = (slow_state){0};
    const char *knobs = "disk_latency=32768,disk_fault=16384,disk_corrupt=16384";
    for (uint64_t seed = 0; seed < 10; seed++) {
        pl_sim_options o;
        pl_sim_options_default(&o);
        o.seed = seed;
        o.knobs = knobs;
        pl_sim_result a;
        cr_assert_eq(pl_sim_run(&slow_sc, &o, &a), 0);
        const pl__run_record *rec = pl__sim_result_record(&a);
        o.source = PL_SIM_SOURCE_LIST;
        o.decisions = rec->decisions;
        o.decisions_len = rec->decisions_len;
        pl_sim_result b;
        cr_assert_eq(pl_sim_run(&slow_sc, &o, &b), 0);
        cr_assert_eq(a.hash, b.hash, "seed %llu", (unsigned long long)seed);
        cr_assert_eq(a.finding.kind, b.finding.kind);
        cr_assert_not(b.diverged);
        pl_sim_result_free(&a);
        pl_sim_result_free(&b);
    }
}

Test(disk_run, crash_outside_a_run_is_refused) { cr_assert_eq(pl_sim_disk_crash(), PL_EINVAL); }
