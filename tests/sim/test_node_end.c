/* tests/sim/test_node_end.c: what the nodes of a cluster scenario still
 * hold when the run ends, and disk explanations with several node disks.
 *
 * Two replicas, "b1" (10.0.0.2) and "b2" (10.0.0.3), each with its own
 * disk. At boot each one listens on port 7000 and opens its "wal"
 * directory, keeping both in node memory; its task writes a record to
 * "wal/0001.tmp", syncs it, renames it to "0001.log" and syncs the
 * directory, keeping the file open in node memory too. Then b2 connects
 * to b1 and both keep the connection. Nothing is closed: the run ends
 * with a listener, a directory, a file and a connection open on each
 * node, as a correct program's do when the run's time is up.
 *
 * The run releases them as a crash would (silently): LeakSanitizer in a
 * loop of in-process runs, as a fuzzer makes them, finds nothing, and
 * `pollen run` reports nothing either. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <pollen/sim.h>
#include <pollen/sim_node.h>

#include "child.h"
#include "disk/disk_impl.h"
#include "fuzz.h"
#include "leakcheck.h"
#include "run_record.h"
#include "sim_internal.h"

TestSuite(node_end, .fini = pl_test_leak_check);

#define QUIET                                                                                      \
    "timer_late=off,io_fault=off,disk_latency=off,disk_fault=off,disk_corrupt=off,disk_lose=off,"  \
    "link_latency=off,link_loss=off,link_dup=off,link_reorder=off,link_reset=off,partition=off,"   \
    "clog=off,crash_silence=off"

/* One replica's view of its run; reset before each run. */
typedef struct replica_seen {
    bool open_at_end;   /* listener, directory, file and connection open */
    pl_time sync_took;  /* the file's fsync, in virtual time */
    int sync_result;    /* the file's fsync */
    int dirsync_result; /* the directory's fsync */
} replica_seen;

static replica_seen seen[3]; /* by replica number, 1 and 2 */

static enum {
    CHECK_NOTHING,
    FAIL_WHEN_B2_SYNC_SLOW,   /* the check fails when b2's file fsync took time */
    FAIL_WHEN_B1_DIRSYNC_EIO, /* ... when b1's directory fsync failed with EIO */
} check_mode;

/* A replica's state outside its futures: node memory. */
typedef struct replica_mem {
    int no; /* 1 or 2 */
    pl_tcp_listener l;
    pl_dir dir;
    pl_file wal;
    pl_tcp_stream peer;
} replica_mem;

typedef struct replica {
    pl_future base;
    replica_mem *m;
    pl_file_open open;
    pl_file_pwrite wr;
    pl_file_fsync sync;
    pl_dir_change mv;
    pl_time t0;
    pl_tcp_accept acc;
    pl_tcp_connect conn;
    pl_timeout quiet;
} replica;

static pl_poll_result replica_poll(pl_future *f, pl_context *cx)
{
    replica *self = (replica *)f;
    replica_mem *m = self->m;
    PL_ASYNC_BEGIN(self);
    self->open =
        pl_file_open_make(&m->dir, "0001.tmp", PL_FILE_READ | PL_FILE_WRITE | PL_FILE_CREATE, 0644);
    PL_AWAIT(cx, &self->open);
    if (self->open.result != 0) {
        return PL_READY;
    }
    m->wal = pl_file_open_take(&self->open);
    self->wr = pl_file_write_all(&m->wal, "rec1", 4, 0);
    PL_AWAIT(cx, &self->wr);
    self->t0 = pl_now(cx->ex);
    self->sync = pl_file_sync(&m->wal);
    PL_AWAIT(cx, &self->sync);
    seen[m->no].sync_result = self->sync.result;
    seen[m->no].sync_took = pl_now(cx->ex) - self->t0;
    self->mv = pl_dir_rename(&m->dir, "0001.tmp", "0001.log");
    PL_AWAIT(cx, &self->mv);
    self->sync = pl_dir_sync(&m->dir);
    PL_AWAIT(cx, &self->sync);
    seen[m->no].dirsync_result = self->sync.result;
    if (m->no == 1) {
        self->acc = pl_tcp_accept_make(&m->l);
        self->quiet = pl_timeout_make(&self->acc.base, 50 * PL_MS);
        PL_AWAIT(cx, &self->quiet);
        if (self->quiet.result == 0 && self->acc.result == 0) {
            m->peer = pl_tcp_accept_take(&self->acc);
        }
    } else {
        self->conn = pl_tcp_connect_str("10.0.0.2:7000");
        PL_AWAIT(cx, &self->conn);
        if (self->conn.result == 0) {
            m->peer = pl_tcp_connect_take(&self->conn);
        }
    }
    seen[m->no].open_at_end =
        m->l.src != NULL && m->dir.src != NULL && m->wal.src != NULL && m->peer.src != NULL;
    PL_ASYNC_END;
}

/* Drops the operations only: what node memory holds stays open. */
static void replica_drop(pl_future *f)
{
    replica *self = (replica *)f;
    pl_drop_child(&self->open.base);
    pl_drop_child(&self->wr.base);
    pl_drop_child(&self->sync.base);
    pl_drop_child(&self->mv.base);
    pl_drop_child(&self->quiet.base);
    pl_drop_child(&self->conn.base);
}

static const pl_future_vtable replica_vt = {"replica", replica_poll, replica_drop};

static int boot(pl_executor *ex, int no, const char *listen)
{
    replica_mem *m = pl_node_alloc(sizeof *m);
    if (m == NULL) {
        return PL_ENOMEM;
    }
    memset(m, 0, sizeof *m);
    m->no = no;
    int rc = pl_tcp_listen_str(ex, &m->l, listen, 4);
    if (rc == 0) {
        rc = pl_dir_open(ex, &m->dir, "wal", true);
    }
    if (rc != 0) {
        return rc;
    }
    replica r = {.base = PL_FUTURE_INIT(&replica_vt), .m = m};
    return PL_SPAWN(ex, r, "replica", NULL);
}

static int b1_boot(pl_executor *ex, void *ud)
{
    (void)ud;
    return boot(ex, 1, "10.0.0.2:7000");
}

static int b2_boot(pl_executor *ex, void *ud)
{
    (void)ud;
    return boot(ex, 2, "10.0.0.3:7000");
}

static int cluster_setup(pl_executor *ex, void *state)
{
    (void)state;
    static const pl_node_def b1 = {.name = "b1", .host = "10.0.0.2", .boot = b1_boot};
    static const pl_node_def b2 = {.name = "b2", .host = "10.0.0.3", .boot = b2_boot};
    int rc = pl_sim_node_add(ex, &b1);
    return rc != 0 ? rc : pl_sim_node_add(ex, &b2);
}

static int cluster_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex, (void)state;
    if (check_mode == FAIL_WHEN_B2_SYNC_SLOW && seen[2].sync_took > 0) {
        return pl_check_fail(msg, len, "b2's fsync took %lld ns", (long long)seen[2].sync_took);
    }
    if (check_mode == FAIL_WHEN_B1_DIRSYNC_EIO && seen[1].dirsync_result == PL_EIO) {
        return pl_check_fail(msg, len, "b1's directory fsync failed");
    }
    return 0;
}

PL_SCENARIO(cluster, .name = "test_node_end_cluster",
            .summary = "two replicas that leave a listener, a WAL and a connection open",
            .setup = cluster_setup, .check = cluster_check);

static pl_sim_result run(const char *knobs, uint64_t seed)
{
    memset(seen, 0, sizeof seen);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = knobs;
    o.seed = seed;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&cluster, &o, &r), 0, "%s", r.finding.message);
    return r;
}

static void run_clean(const char *knobs, uint64_t seed)
{
    pl_sim_result r = run(knobs, seed);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "seed %llu: %s: %s", (unsigned long long)seed,
                 pl_finding_name(r.finding.kind), r.finding.message);
    pl_sim_result_free(&r);
}

/* ---- What is open at the end goes with the run --------------------------- */

/* A fuzzer's loop: many runs in one process, then LeakSanitizer's check
 * (LEAK_TEST; under ASan, where this test means something). */
LEAK_TEST(node_end, what_nodes_leave_open_is_released_when_the_run_ends)
{
    check_mode = CHECK_NOTHING;
    for (uint64_t seed = 0; seed < 8; seed++) {
        run_clean(QUIET, seed);
        cr_assert(seen[1].open_at_end && seen[2].open_at_end,
                  "the scenario must end with everything open on both replicas");
    }
}

/* The same with every kind of decision on (faults may close things
 * early or leave them half open): no leak either way. */
LEAK_TEST(node_end, seeded_runs_with_every_kind_release_too)
{
    check_mode = CHECK_NOTHING;
    for (uint64_t seed = 0; seed < 24; seed++) {
        pl_sim_result r = run(NULL, seed);
        cr_assert(r.finding.kind != PL_FINDING_TASK_LEAK && r.finding.kind != PL_FINDING_WAKER_LEAK,
                  "seed %llu: %s", (unsigned long long)seed, r.finding.message);
        pl_sim_result_free(&r);
    }
}

/* The fuzz target's own entry point (fuzz/fuzz_scenario.c, built into
 * this test for the cluster), called input after input in one process as
 * libFuzzer calls it; a finding would abort. The inputs are decision
 * streams: production's order (all zeros, any length), then streams that
 * move the schedule, delay I/O and the disk, and fault them. */
LEAK_TEST(node_end, the_fuzz_target_loop_leaks_nothing)
{
    check_mode = CHECK_NOTHING;
    char name[] = "test_sim_node_end";
    char *args[] = {name, NULL};
    char **argv = args;
    int argc = 1;
    cr_assert_eq(LLVMFuzzerInitialize(&argc, &argv), 0);
    uint8_t in[96];
    for (size_t i = 0; i < 12; i++) {
        for (size_t j = 0; j < sizeof in; j++) {
            in[j] = i < 4 ? 0 : (uint8_t)((j * 7 + i * 13) % (i + 1));
        }
        cr_assert_eq(LLVMFuzzerTestOneInput(in, i < 4 ? i * 8 : sizeof in), 0);
    }
}

/* `pollen run` over the same scenario says what the in-process loop says:
 * nothing was left behind. */
LEAK_TEST(node_end, pollen_run_gives_the_same_verdict)
{
    check_mode = CHECK_NOTHING;
    const char *args[] = {"run", "test_node_end_cluster", "--seeds", "0..7", "--knobs",
                          QUIET, "--no-shrink",           NULL};
    child_ran r = child_pl_main(args, NULL, -1);
    cr_assert_eq(r.status, 0, "exit %d\nstdout:\n%s\nstderr:\n%s", r.status, r.out, r.err);
    cr_assert_null(strstr(r.out, "leak"), "%s", r.out);
    child_ran_free(&r);
}

/* ---- Disk explanations name the node and the path ------------------------ */

/* Shrinks the run of seed `seed` under `knobs` to its finding and
 * returns the explanation (free it). */
static char *explain(const char *knobs, uint64_t seed)
{
    pl_sim_result r = run(knobs, seed);
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION, "seed %llu: %s", (unsigned long long)seed,
                 pl_finding_name(r.finding.kind));
    const pl__run_record *rec = pl__sim_result_record(&r);
    pl_sim_options base;
    pl_sim_options_default(&base);
    base.knobs = knobs;
    pl_sim_shrink_result s;
    cr_assert_eq(pl_sim_shrink(&cluster, &base, rec->decisions, rec->decisions_len,
                               PL_FINDING_ASSERTION, NULL, &s),
                 0, "%s", s.message);
    cr_assert_not_null(s.explanation);
    char *text = strdup(s.explanation);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
    return text;
}

LEAK_TEST(node_end, a_slow_fsync_names_the_node_and_the_latest_path)
{
    check_mode = FAIL_WHEN_B2_SYNC_SLOW;
    char *text = explain("disk_latency=65536,disk_fault=off,disk_corrupt=off,disk_lose=off,"
                         "io_fault=off,link_loss=off,link_reset=off,partition=off,clog=off",
                         0);
    /* The file was 0001.tmp when it was synced; its latest name is 0001.log. */
    cr_assert_not_null(strstr(text, "disk: node 'b2': fsync of 'wal/0001.log' took "), "%s", text);
    cr_assert_null(strstr(text, "file #"), "%s", text);
    cr_assert_null(strstr(text, "'b1'"), "only b2's sync matters:\n%s", text);
    free(text);
    check_mode = CHECK_NOTHING;
}

LEAK_TEST(node_end, a_failed_directory_fsync_names_the_node_and_the_directory)
{
    check_mode = FAIL_WHEN_B1_DIRSYNC_EIO;
    const char *knobs = "disk_fault=65536,disk_latency=off,disk_corrupt=off,disk_lose=off,"
                        "io_fault=off,link_loss=off,link_reset=off,partition=off,clog=off";
    /* A seed whose file operations got through to the directory's fsync. */
    uint64_t seed = 0;
    for (; seed < 200; seed++) {
        pl_sim_result r = run(knobs, seed);
        bool found = r.finding.kind == PL_FINDING_ASSERTION;
        pl_sim_result_free(&r);
        if (found) {
            break;
        }
    }
    cr_assert_lt(seed, 200, "no seed failed b1's directory fsync");
    char *text = explain(knobs, seed);
    cr_assert_not_null(strstr(text, "disk: node 'b1': fsync of directory 'wal' failed with EIO"),
                       "%s", text);
    cr_assert_null(strstr(text, "directory #"), "%s", text);
    free(text);
    check_mode = CHECK_NOTHING;
}

/* The record's names, by node: each line finds its node's section. */
Test(node_end, run_names_are_read_by_the_node_the_key_names)
{
    static const char names[] = "@0:1:1:\0db\0db/x\0"
                                "@1:1:1:b1\0wal\0wal/0001.log\0"
                                "@2:1:2:b2\0wal\0wal/0001.log\0wal/0002.log";
    const uint32_t count = 3 + 3 + 4;
    const uint64_t b2 = (uint64_t)2 << 31;
    char what[400];
    cr_assert(pl__disk_explain_run(what, sizeof what, PL_DECIDE_DISK_LATENCY,
                                   pl__disk_key(PL__DISK_OP_SYNC, 0, 2, 0) | b2, 1, 16, names,
                                   count));
    cr_assert_str_eq(what, "disk: node 'b2': fsync of 'wal/0002.log' took 0.250 ms");
    cr_assert(pl__disk_explain_run(what, sizeof what, PL_DECIDE_DISK_FAULT,
                                   pl__disk_key(PL__DISK_OP_DIRSYNC, 0, 1, 0) | b2, 1, 2, names,
                                   count));
    cr_assert_str_eq(what, "disk: node 'b2': fsync of directory 'wal' failed with EIO");
    cr_assert(pl__disk_explain_run(what, sizeof what, PL_DECIDE_DISK_LOSE,
                                   pl__disk_key(PL__DISK_OP_CRASH, 1, 1, 0) | (uint64_t)1 << 31, 2,
                                   4, names, count));
    cr_assert_str_eq(what, "disk: node 'b1': the crash tore 'wal/0001.log''s unsynced writes "
                           "after 2 of 4 bytes");
    cr_assert(pl__disk_explain_run(what, sizeof what, PL_DECIDE_DISK_LATENCY,
                                   pl__disk_key(PL__DISK_OP_WRITE, 0, 1, 8), 2, 16, names, count));
    cr_assert_str_eq(what, "disk: write of 'db/x' at offset 8 took 0.500 ms",
                     "the scenario's own disk names no node");
    cr_assert(pl__disk_explain_run(what, sizeof what, PL_DECIDE_DISK_LATENCY,
                                   pl__disk_key(PL__DISK_OP_SYNC, 0, 3, 0) | b2, 1, 16, names,
                                   count));
    cr_assert_str_eq(what, "disk: node 'b2': fsync of file #3 took 0.250 ms", "no such file");
    /* A cut record: no section is trusted past the count. */
    cr_assert(pl__disk_explain_run(what, sizeof what, PL_DECIDE_DISK_LATENCY,
                                   pl__disk_key(PL__DISK_OP_SYNC, 0, 2, 0) | b2, 1, 16, names,
                                   count - 1));
    cr_assert_str_eq(what, "disk: node #2: fsync of file #2 took 0.250 ms");
}
