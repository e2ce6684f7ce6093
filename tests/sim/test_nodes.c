/* tests/sim/test_nodes.c: nodes of a cluster scenario, their crash and
 * restart (pollen/sim_node.h).
 *
 * Two nodes: "server" (10.0.0.2) listens on port 80 and keeps a log file
 * on its disk: at each boot it reads the log back, writes "DURA" and
 * syncs it, then writes "LOST" after it without a sync, and serves one
 * connection. "client" (10.0.0.1) connects, sends 4 bytes and reads
 * until the end. The scenario's own chaos task crashes the server at
 * 3 ms and restarts it at 5 ms. Every run's outcome is copied out by the
 * scenario's check; knobs switch off what would move the times. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <pollen/sim.h>
#include <pollen/sim_node.h>

#include "leakcheck.h"
#include "net/net.h"
#include "run_record.h"
#include "sim_internal.h"
#include "trace.h"

TestSuite(nodes, .fini = pl_test_leak_check);

#define QUIET QUIET_FAULTS ",crash_silence=off"
#define QUIET_FAULTS                                                                               \
    "timer_late=off,io_fault=off,disk_latency=off,disk_fault=off,disk_corrupt=off,disk_lose=off,"  \
    "link_latency=off,link_loss=off,link_dup=off,link_reorder=off,link_reset=off,partition=off,"   \
    "clog=off"

/* What the runs saw; reset before each run. */
static struct seen {
    int boots;
    char log[3][16]; /* the log each boot read back */
    ssize_t log_len[3];
    int drops[3];   /* drops of the server's futures, by boot */
    int self_crash; /* pl_sim_node_crash from the node itself */
    int crash_rc, crash_again_rc, restart_rc, restart_again_rc;
    ssize_t client_read;    /* the client's last read */
    bool client_on_host;    /* the client's socket is on 10.0.0.1 */
    uint32_t server_blocks; /* the server's node memory blocks at the check */
    uint32_t forgotten;     /* tasks the crash forgot */
    pl_sim_link_state cs;
    int quiet_read;       /* silent_peer: the timed read's outcome */
    size_t written;       /* silent_peer: bytes the writes took */
    ssize_t write_err;    /* silent_peer: the write that failed */
    pl_time write_from;   /* silent_peer: when the writes began */
    pl_time write_err_at; /* and when one failed */
    /* pl_sim_node_self's name and host seen by: the server's boot, its
     * task, the client's task, the scenario's chaos task (NULL: none) */
    const char *self_boot, *self_store, *self_caller, *self_chaos;
    const char *host_store, *host_caller;
} seen;

/* pl_sim_node_self's name, or NULL. */
static const char *self_name(void)
{
    const pl_node_def *d = pl_sim_node_self();
    return d != NULL ? d->name : NULL;
}

static const char *self_host(void)
{
    const pl_node_def *d = pl_sim_node_self();
    return d != NULL ? d->host : NULL;
}

static bool fail_after_restart; /* the second boot's store task fails an assertion */
static bool wake_stale;         /* chaos wakes and drops a waker into the crashed task */
static pl_waker stale;          /* held by the scenario, into the server's first store task */
static bool crashable;          /* the server is crashable and chaos leaves it alone */
static bool fail_on_restart;    /* the check fails once the server booted twice */
static bool hang;               /* no chaos, no shutdown: server and client wait on each other */
static bool stray_timer;        /* each boot leaves a timer armed in node memory */
static bool silent_peer;        /* the client reads with a timeout, then writes until an error */
static bool fail_on_silence;    /* the check fails when the client's timed read heard nothing */

/* ---- The server ----------------------------------------------------------- */

/* The server's state outside its futures: node memory. */
typedef struct server_mem {
    pl_tcp_listener l;
    pl_dir dir;
} server_mem;

typedef struct store {
    pl_future base;
    server_mem *m;
    int boot;
    pl_file_open open;
    pl_file f;
    pl_file_pread rd;
    pl_file_pwrite wr;
    pl_file_fsync sync;
    pl_tcp_accept acc;
    pl_timeout acc_quiet;
    pl_tcp_stream s;
    uint8_t buf[16];
    pl_io_read srd;
} store;

static pl_poll_result store_poll(pl_future *f, pl_context *cx)
{
    store *self = (store *)f;
    PL_ASYNC_BEGIN(self);
    if (self->boot == 1 && wake_stale) {
        pl_waker_slot_set(&stale, &cx->waker);
    }
    seen.self_crash = pl_sim_node_crash("server");
    seen.self_store = self_name();
    seen.host_store = self_host();
    self->open = pl_file_open_make(&self->m->dir, "log",
                                   PL_FILE_READ | PL_FILE_WRITE | PL_FILE_CREATE, 0644);
    PL_AWAIT(cx, &self->open);
    if (self->open.result != 0) {
        return PL_READY; /* faults of seeded runs */
    }
    self->f = pl_file_open_take(&self->open);
    self->rd = pl_file_read(&self->f, seen.log[self->boot], sizeof seen.log[0] - 1, 0);
    PL_AWAIT(cx, &self->rd);
    seen.log_len[self->boot] = self->rd.result;
    pl_always(!fail_after_restart || self->boot == 1, "the log was read back");
    self->wr = pl_file_write_all(&self->f, "DURA", 4, 0);
    PL_AWAIT(cx, &self->wr);
    self->sync = pl_file_sync(&self->f);
    PL_AWAIT(cx, &self->sync);
    self->sync = pl_dir_sync(&self->m->dir); /* the log's name, durable too */
    PL_AWAIT(cx, &self->sync);
    self->wr = pl_file_write_all(&self->f, "LOST", 4, 4);
    PL_AWAIT(cx, &self->wr);
    self->acc = pl_tcp_accept_make(&self->m->l);
    self->acc_quiet = pl_timeout_make(&self->acc.base, 50 * PL_MS);
    PL_AWAIT(cx, &self->acc_quiet);
    if (self->acc_quiet.result == 0 && self->acc.result == 0) {
        self->s = pl_tcp_accept_take(&self->acc);
        for (;;) {
            self->srd = pl_tcp_read(&self->s, self->buf, sizeof self->buf);
            PL_AWAIT(cx, &self->srd);
            if (self->srd.result <= 0) {
                break;
            }
        }
    }
    pl_tcp_close(&self->s);
    pl_file_close(&self->f);
    PL_ASYNC_END;
}

static void store_drop(pl_future *f)
{
    store *self = (store *)f;
    seen.drops[self->boot]++;
    pl_drop_child(&self->open.base);
    pl_drop_child(&self->rd.base);
    pl_drop_child(&self->wr.base);
    pl_drop_child(&self->sync.base);
    pl_drop_child(&self->acc_quiet.base);
    pl_drop_child(&self->srd.base);
    pl_tcp_close(&self->s);
    pl_file_close(&self->f);
    pl_tcp_listener_close(&self->m->l);
    pl_dir_close(&self->m->dir);
}

static const pl_future_vtable store_vt = {"store", store_poll, store_drop};

/* Arms a timer that lives in node memory with its own waker, and
 * finishes at once: the timer stays armed for a finished task. */
typedef struct arm {
    pl_future base;
    pl_timer *tm;
} arm;

static pl_poll_result arm_poll(pl_future *f, pl_context *cx)
{
    arm *self = (arm *)f;
    cr_assert_eq(pl_timer_arm(cx->ex, self->tm, pl_now(cx->ex) + 10 * PL_MS, &cx->waker), 0);
    return PL_READY;
}

static void arm_drop(pl_future *f) { (void)f; }

static const pl_future_vtable arm_vt = {"arm", arm_poll, arm_drop};

static int spawn_stray_timer(pl_executor *ex)
{
    pl_timer *tm = pl_node_alloc(sizeof *tm);
    if (tm == NULL) {
        return PL_ENOMEM;
    }
    *tm = PL_TIMER_INIT;
    arm a = {.base = PL_FUTURE_INIT(&arm_vt), .tm = tm};
    return PL_SPAWN(ex, a, "arm", NULL);
}

static int server_boot(pl_executor *ex, void *ud)
{
    (void)ud;
    server_mem *m = pl_node_alloc(sizeof *m);
    if (m == NULL) {
        return PL_ENOMEM;
    }
    memset(m, 0, sizeof *m);
    if (stray_timer && spawn_stray_timer(ex) != 0) {
        return PL_ENOMEM;
    }
    int rc = pl_tcp_listen_str(ex, &m->l, "10.0.0.2:80", 4);
    if (rc == 0) {
        rc = pl_dir_open(ex, &m->dir, "/data", true);
    }
    if (rc != 0) {
        return rc;
    }
    /* This run's boot (1, then 2 for every restart): runs of the shrinker
     * leave `seen` as it is. */
    uint32_t crashes = pl__sim_current()->nodes.list[1].crashes;
    seen.boots++;
    seen.self_boot = self_name();
    store st = {.base = PL_FUTURE_INIT(&store_vt), .m = m, .boot = crashes > 0 ? 2 : 1};
    return PL_SPAWN(ex, st, "store", NULL);
}

/* ---- The client ----------------------------------------------------------- */

typedef struct caller {
    pl_future base;
    pl_tcp_connect conn;
    pl_tcp_stream s;
    pl_io_write_all wr;
    uint8_t buf[16];
    pl_io_read rd;
    pl_sleep linger;
    pl_io_read qrd; /* silent_peer: */
    pl_timeout quiet;
    pl_io_write fill;
} caller;

static uint8_t filler[4096];

static pl_poll_result caller_poll(pl_future *f, pl_context *cx)
{
    caller *self = (caller *)f;
    PL_ASYNC_BEGIN(self);
    seen.self_caller = self_name();
    seen.host_caller = self_host();
    self->conn = pl_tcp_connect_str("10.0.0.2:80");
    PL_AWAIT(cx, &self->conn);
    if (self->conn.result != 0) {
        seen.client_read = self->conn.result; /* faults of seeded runs */
        return PL_READY;
    }
    self->s = pl_tcp_connect_take(&self->conn);
    struct sockaddr_storage a;
    socklen_t len = sizeof a;
    cr_assert_eq(pl_tcp_local_addr(&self->s, &a, &len), 0);
    const uint8_t *ip = (const uint8_t *)&((const struct sockaddr_in *)&a)->sin_addr;
    seen.client_on_host = ip[0] == 10 && ip[3] == 1;
    self->wr = pl_tcp_write_all(&self->s, "ping", 4);
    PL_AWAIT(cx, &self->wr);
    if (crashable) {
        pl_tcp_shutdown(&self->s, SHUT_WR); /* no chaos task: the exchange ends */
    }
    if (silent_peer) {
        /* The server crashes at 3 ms: a reset ends this read, silence does not. */
        self->qrd = pl_tcp_read(&self->s, self->buf, sizeof self->buf);
        self->quiet = pl_timeout_make(&self->qrd.base, 20 * PL_MS);
        PL_AWAIT(cx, &self->quiet);
        seen.quiet_read = self->quiet.result != 0 ? self->quiet.result : (int)self->qrd.result;
        seen.write_from = pl_now(cx->ex);
        for (;;) {
            self->fill = pl_tcp_write(&self->s, filler, sizeof filler);
            PL_AWAIT(cx, &self->fill);
            if (self->fill.result < 0) {
                seen.write_err = self->fill.result;
                seen.write_err_at = pl_now(cx->ex);
                break;
            }
            seen.written += (size_t)self->fill.result;
        }
    }
    for (;;) {
        self->rd = pl_tcp_read(&self->s, self->buf, sizeof self->buf);
        PL_AWAIT(cx, &self->rd);
        if (self->rd.result <= 0) {
            seen.client_read = self->rd.result;
            break;
        }
    }
    pl_tcp_close(&self->s);
    /* The run goes on a while: a decided restart comes 1 to 8 ms late. */
    self->linger = pl_sleep_for(20 * PL_MS);
    PL_AWAIT(cx, &self->linger);
    PL_ASYNC_END;
}

static void caller_drop(pl_future *f)
{
    caller *self = (caller *)f;
    pl_drop_child(&self->linger.base);
    pl_drop_child(&self->conn.base);
    pl_drop_child(&self->wr.base);
    pl_drop_child(&self->rd.base);
    pl_drop_child(&self->quiet.base);
    pl_drop_child(&self->fill.base);
    pl_tcp_close(&self->s);
}

static const pl_future_vtable caller_vt = {"caller", caller_poll, caller_drop};

static int client_boot(pl_executor *ex, void *ud)
{
    (void)ud;
    caller c = {.base = PL_FUTURE_INIT(&caller_vt)};
    return PL_SPAWN(ex, c, "caller", NULL);
}

/* ---- The scenario --------------------------------------------------------- */

typedef struct chaos {
    pl_future base;
    pl_sleep gap;
} chaos;

static pl_poll_result chaos_poll(pl_future *f, pl_context *cx)
{
    chaos *self = (chaos *)f;
    PL_ASYNC_BEGIN(self);
    seen.self_chaos = self_name();
    if (crashable || hang) {
        return PL_READY; /* node_crash decisions do it, or nothing does */
    }
    self->gap = pl_sleep_for(3 * PL_MS);
    PL_AWAIT(cx, &self->gap);
    seen.crash_rc = pl_sim_node_crash("server");
    seen.crash_again_rc = pl_sim_node_crash("server");
    /* A waker into the forgotten task: waking and dropping it is harmless. */
    pl_waker_slot_wake(&stale);
    self->gap = pl_sleep_for(2 * PL_MS);
    PL_AWAIT(cx, &self->gap);
    seen.restart_rc = pl_sim_node_restart("server");
    seen.restart_again_rc = pl_sim_node_restart("server");
    PL_ASYNC_END;
}

static void chaos_drop(pl_future *f) { pl_drop_child(&((chaos *)f)->gap.base); }

static const pl_future_vtable chaos_vt = {"chaos", chaos_poll, chaos_drop};

static int cluster_setup(pl_executor *ex, void *state)
{
    (void)state;
    static const pl_node_def server = {.name = "server", .host = "10.0.0.2", .boot = server_boot};
    static const pl_node_def client = {.name = "client", .host = "10.0.0.1", .boot = client_boot};
    static const pl_node_def crashy = {
        .name = "server", .host = "10.0.0.2", .boot = server_boot, .crashable = true};
    int rc = pl_sim_node_add(ex, crashable ? &crashy : &server);
    if (rc == 0) {
        rc = pl_sim_node_add(ex, &client);
    }
    chaos c = {.base = PL_FUTURE_INIT(&chaos_vt)};
    return rc != 0 ? rc : PL_SPAWN(ex, c, "chaos", NULL);
}

static int cluster_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex, (void)state;
    pl__sim *s = pl__sim_current();
    seen.server_blocks = s->nodes.list[1].blocks_len;
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        seen.forgotten += s->tasks.info[id].forgotten;
    }
    pl_sim_link_get("10.0.0.1", "10.0.0.2", &seen.cs);
    if (fail_on_silence && seen.quiet_read == PL_ETIMEDOUT) {
        return pl_check_fail(msg, len, "the client heard nothing of the crash");
    }
    if (fail_on_restart && s->nodes.list[1].crashes > 0) {
        return pl_check_fail(msg, len, "the server crashed %u times", s->nodes.list[1].crashes);
    }
    return 0;
}

PL_SCENARIO(cluster, .name = "test_nodes_cluster", .summary = "a server crashes and restarts",
            .setup = cluster_setup, .check = cluster_check);

static pl_sim_result run(const char *knobs, uint64_t seed, bool keep_events)
{
    memset(&seen, 0, sizeof seen);
    stale = (pl_waker){0};
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = knobs;
    o.seed = seed;
    o.keep_events = keep_events;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&cluster, &o, &r), 0, "%s", r.finding.message);
    return r;
}

static void expect_clean(pl_sim_result *r)
{
    cr_assert_eq(r->finding.kind, PL_FINDING_NONE, "%s: %s (%s)", pl_finding_name(r->finding.kind),
                 r->finding.message, r->finding.task_name);
}

/* ---- Tests ---------------------------------------------------------------- */

static void plan(bool stale_waker, bool fail_restarted, bool decided)
{
    wake_stale = stale_waker;
    fail_after_restart = fail_restarted;
    crashable = decided;
    fail_on_restart = decided;
    hang = false;
    stray_timer = false;
    silent_peer = false;
    fail_on_silence = false;
}

LEAK_TEST(nodes, crash_forgets_tasks_and_restart_reads_the_durable_log)
{
    plan(true, false, false);
    pl_sim_result r = run(QUIET, 0, false);
    expect_clean(&r);
    /* No node is crashable: the kind is never consulted. */
    cr_assert_eq(pl__sim_result_record(&r)->consulted[PL_DECIDE_NODE_CRASH], 0);
    cr_assert_eq(seen.boots, 2);
    cr_assert_eq(seen.crash_rc, 0);
    cr_assert_eq(seen.crash_again_rc, PL_EEXIST);
    cr_assert_eq(seen.restart_rc, 0);
    cr_assert_eq(seen.restart_again_rc, PL_EEXIST);
    cr_assert_eq(seen.self_crash, PL_EINVAL, "a node cannot crash itself");
    /* No drop of the first boot's future ran; the second's ran at the end. */
    cr_assert_eq(seen.drops[1], 0);
    cr_assert_eq(seen.drops[2], 1);
    cr_assert_eq(seen.forgotten, 1);
    /* The first boot found an empty log; the second only what was synced. */
    cr_assert_eq(seen.log_len[1], 0);
    cr_assert_eq(seen.log_len[2], 4, "read back %zd bytes", seen.log_len[2]);
    cr_assert_eq(memcmp(seen.log[2], "DURA", 4), 0);
    /* The crash freed the first boot's node memory. */
    cr_assert_eq(seen.server_blocks, 1);
    pl_sim_result_free(&r);
}

LEAK_TEST(nodes, peers_see_a_reset_and_sockets_are_on_the_node_host)
{
    plan(false, false, false);
    pl_sim_result r = run(QUIET, 0, false);
    expect_clean(&r);
    cr_assert_eq(seen.client_read, PL_ECONNRESET, "the client read %zd", seen.client_read);
    cr_assert(seen.client_on_host, "the client's socket is not on 10.0.0.1");
    cr_assert_eq(seen.cs.resets, 0, "the reset came from the crash, not the link");
    pl_sim_result_free(&r);
}

/* Each node's code, its boot too, is told its own name and host; the
 * scenario's own task, and code outside any run, none. */
LEAK_TEST(nodes, node_self_names_the_running_node)
{
    plan(false, false, false);
    cr_assert_null(pl_sim_node_self(), "outside a run");
    pl_sim_result r = run(QUIET, 0, false);
    expect_clean(&r);
    cr_assert_str_eq(seen.self_boot, "server");
    cr_assert_str_eq(seen.self_store, "server");
    cr_assert_str_eq(seen.host_store, "10.0.0.2");
    cr_assert_str_eq(seen.self_caller, "client");
    cr_assert_str_eq(seen.host_caller, "10.0.0.1");
    cr_assert_null(seen.self_chaos, "the scenario's own task is on no node");
    pl_sim_result_free(&r);
}

/* crash_silence decides 0: the peer reads ECONNRESET, as with the kind off. */
LEAK_TEST(nodes, crash_silence_zero_resets_the_peer)
{
    plan(false, false, false);
    silent_peer = true;
    pl_sim_result r = run(QUIET_FAULTS ",crash_silence=0", 0, false);
    expect_clean(&r);
    cr_assert_eq(pl__sim_result_record(&r)->consulted[PL_DECIDE_CRASH_SILENCE], 1);
    cr_assert_eq(seen.quiet_read, PL_ECONNRESET, "the client read %d", seen.quiet_read);
    cr_assert_eq(seen.write_err, PL_ECONNRESET);
    cr_assert_eq(seen.written, 0);
    pl_sim_result_free(&r);
}

/* crash_silence decides 1: no data, no end, no error reach the client;
 * its writes fill the window, then wait until the link gives up. */
LEAK_TEST(nodes, crash_silence_one_leaves_the_peer_to_its_timers_and_the_link)
{
    plan(false, false, false);
    silent_peer = true;
    pl_sim_result r = run(QUIET_FAULTS ",crash_silence=65536", 0, false);
    expect_clean(&r);
    const pl__run_record *rec = pl__sim_result_record(&r);
    cr_assert_eq(rec->consulted[PL_DECIDE_CRASH_SILENCE], 1);
    cr_assert_eq(rec->deviated[PL_DECIDE_CRASH_SILENCE], 1);
    cr_assert_eq(seen.quiet_read, PL_ETIMEDOUT, "the client read %d", seen.quiet_read);
    cr_assert_eq(seen.written, PL__NET_STREAM_BUF_MAX, "took %zu bytes", seen.written);
    cr_assert_eq(seen.write_err, PL_ECONNRESET, "the write said %zd", seen.write_err);
    pl_sim_link_options lo;
    pl_sim_link_options_default(&lo);
    pl_time waited = seen.write_err_at - seen.write_from;
    cr_assert(waited >= lo.break_after_ns && waited < lo.break_after_ns + 10 * PL_MS,
              "broke after %lld ns", (long long)waited);
    cr_assert_eq(seen.cs.resets, 1, "the link's give-up rule broke it");
    pl_sim_result_free(&r);
}

/* A finding that needs the silence shrinks to it, said with addresses. */
LEAK_TEST(nodes, crash_silence_shrinks_to_the_connection_that_went_silent)
{
    plan(false, false, false);
    silent_peer = true;
    fail_on_silence = true;
    pl_sim_result r = run(QUIET_FAULTS ",crash_silence=65536", 0, false);
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION, "%s", pl_finding_name(r.finding.kind));
    const pl__run_record *rec = pl__sim_result_record(&r);
    pl_sim_options base;
    pl_sim_options_default(&base);
    base.knobs = QUIET_FAULTS ",crash_silence=65536";
    pl_sim_shrink_result s;
    cr_assert_eq(pl_sim_shrink(&cluster, &base, rec->decisions, rec->decisions_len,
                               PL_FINDING_ASSERTION, NULL, &s),
                 0, "%s", s.message);
    cr_assert_not_null(s.explanation);
    cr_assert_not_null(strstr(s.explanation, "node crash: the connection 10.0.0.2:80 <-> "
                                             "10.0.0.1:"),
                       "%s", s.explanation);
    cr_assert_not_null(strstr(s.explanation, " went silent (no reset reached the peer)"), "%s",
                       s.explanation);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}

LEAK_TEST(nodes, trace_and_findings_name_the_node)
{
    plan(false, true, false);
    pl_sim_result r = run(QUIET, 0, true);
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION, "%s", pl_finding_name(r.finding.kind));
    cr_assert_str_eq(r.finding.task_name, "server/store");
    const pl__run_record *rec = pl__sim_result_record(&r);
    bool named = false;
    for (uint32_t id = 1; id <= rec->names_count; id++) {
        const char *n = pl__run_task_name(rec, id);
        named |= strcmp(n, "client/caller") == 0;
        cr_assert(strcmp(n, "store") != 0 && strcmp(n, "caller") != 0, "task %u is %s", id, n);
    }
    cr_assert(named);
    int crashes = 0, restarts = 0;
    for (size_t i = 0; i < rec->events_len; i++) {
        if (rec->events[i].kind == PL__EV_NODE) {
            cr_assert_eq(rec->events[i].a, 1); /* the server is node 1 */
            crashes += rec->events[i].b == 0;
            restarts += rec->events[i].b == 1;
        }
    }
    cr_assert_eq(crashes, 1);
    cr_assert_eq(restarts, 1);
    pl_sim_result_free(&r);
}

LEAK_TEST(nodes, seeded_runs_with_every_kind_replay_exactly)
{
    plan(true, false, false);
    for (uint64_t seed = 1; seed <= 40; seed++) {
        pl_sim_result a = run(NULL, seed, false);
        struct seen first = seen;
        pl_sim_result b = run(NULL, seed, false);
        cr_assert_eq(a.hash, b.hash, "seed %llu", (unsigned long long)seed);
        cr_assert_eq(a.finding.kind, b.finding.kind);
        cr_assert_eq(first.drops[1], 0, "seed %llu dropped a crashed future",
                     (unsigned long long)seed);
        cr_assert(a.finding.kind != PL_FINDING_TASK_LEAK && a.finding.kind != PL_FINDING_WAKER_LEAK,
                  "seed %llu: %s", (unsigned long long)seed, a.finding.message);
        pl_sim_result_free(&a);
        pl_sim_result_free(&b);
    }
}

LEAK_TEST(nodes, node_crash_decision_fires_replays_and_shrinks)
{
    plan(false, false, true);
    pl_sim_result r = {0};
    uint64_t seed = 1;
    for (; seed <= 500; seed++) {
        r = run(QUIET, seed, false);
        if (r.finding.kind != PL_FINDING_NONE) {
            break;
        }
        cr_assert_eq(seen.boots, 1, "seed %llu restarted without a finding",
                     (unsigned long long)seed);
        cr_assert_gt(pl__sim_result_record(&r)->consulted[PL_DECIDE_NODE_CRASH], 0);
        pl_sim_result_free(&r);
    }
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION, "seed %llu: %s", (unsigned long long)seed,
                 r.finding.message);
    const pl__run_record *rec = pl__sim_result_record(&r);
    cr_assert_gt(rec->deviated[PL_DECIDE_NODE_CRASH], 0);
    cr_assert_eq(seen.drops[1], 0, "the decided crash ran a drop");
    cr_assert_eq(memcmp(seen.log[2], "DURA", 4), 0, "the restart read %zd bytes", seen.log_len[2]);
    /* The recorded decisions replay the run exactly. */
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = QUIET;
    o.source = PL_SIM_SOURCE_LIST;
    o.decisions = rec->decisions;
    o.decisions_len = rec->decisions_len;
    pl_sim_result again;
    memset(&seen, 0, sizeof seen);
    cr_assert_eq(pl_sim_run(&cluster, &o, &again), 0);
    cr_assert_eq(again.hash, r.hash);
    cr_assert(!again.diverged, "%s", again.divergence);
    pl_sim_result_free(&again);
    /* The shrunk run says which node crashed, when, and when it came back. */
    pl_sim_options base;
    pl_sim_options_default(&base);
    base.knobs = QUIET;
    base.seed = seed;
    pl_sim_shrink_result s;
    cr_assert_eq(pl_sim_shrink(&cluster, &base, rec->decisions, rec->decisions_len,
                               PL_FINDING_ASSERTION, NULL, &s),
                 0, "%s", s.message);
    cr_assert_not_null(s.explanation);
    const char *line = strstr(s.explanation, "node 'server' crashed at ");
    cr_assert_not_null(line, "%s", s.explanation);
    double at, back;
    cr_assert_eq(sscanf(line, "node 'server' crashed at %lf ms, restarted at %lf ms", &at, &back),
                 2, "%s", s.explanation);
    cr_assert(back - at >= 0.999 && back - at <= 8.001, "%s", s.explanation);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}

LEAK_TEST(nodes, parked_task_lines_name_the_node)
{
    plan(false, false, false);
    hang = true;
    pl_sim_result r = run(QUIET, 0, false);
    cr_assert_eq(r.finding.kind, PL_FINDING_DEADLOCK, "%s", pl_finding_name(r.finding.kind));
    cr_assert_not_null(strstr(r.finding.message, "'server/store' (#"), "%s", r.finding.message);
    cr_assert_not_null(strstr(r.finding.message, "'client/caller' (#"), "%s", r.finding.message);
    pl_sim_result_free(&r);
}

/* The first boot's timer is armed in memory the crash frees, for a task
 * that already finished: the crash disarms it (ASan: no use after free
 * when it would have fired at 10 ms). */
LEAK_TEST(nodes, crash_disarms_timers_in_node_memory)
{
    plan(false, false, false);
    stray_timer = true;
    pl_sim_result r = run(QUIET, 0, false);
    expect_clean(&r);
    cr_assert_eq(seen.boots, 2);
    cr_assert_eq(seen.forgotten, 2, "the store and the finished arm task");
    cr_assert_eq(seen.server_blocks, 2, "the second boot's state and timer");
    pl_sim_result_free(&r);
}

/* ---- Declaring nodes ------------------------------------------------------ */

static int add_rc[8];
static int node_free_ok;

static int empty_boot(pl_executor *ex, void *ud)
{
    (void)ex, (void)ud;
    /* Node memory made and freed by the node itself. */
    void *p = pl_node_alloc(32);
    node_free_ok =
        p != NULL &&
        pl__sim_current()->nodes.list[pl__node_current(pl__sim_current())].blocks_len == 1;
    pl_node_free(p);
    return 0;
}

static int failing_boot(pl_executor *ex, void *ud)
{
    (void)ex, (void)ud;
    return PL_EIO;
}

static int declare_setup(pl_executor *ex, void *state)
{
    (void)state;
    const pl_node_def ok = {.name = "a", .host = "10.0.0.1", .boot = empty_boot};
    const pl_node_def bad_name = {.name = "B-1", .host = "10.0.0.2", .boot = empty_boot};
    const pl_node_def same_name = {.name = "a", .host = "10.0.0.3", .boot = empty_boot};
    const pl_node_def same_host = {.name = "b", .host = "10.0.0.1", .boot = empty_boot};
    const pl_node_def loopback = {.name = "c", .host = "127.0.0.1", .boot = empty_boot};
    const pl_node_def no_boot = {.name = "d", .host = "10.0.0.4"};
    const pl_node_def fails = {.name = "e", .host = "10.0.0.5", .boot = failing_boot};
    const pl_node_def *defs[] = {&ok,       &bad_name, &same_name, &same_host,
                                 &loopback, &no_boot,  &fails};
    for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++) {
        add_rc[i] = pl_sim_node_add(ex, defs[i]);
    }
    add_rc[7] = pl_sim_node_restart("nobody");
    return 0;
}

PL_SCENARIO(declare, .name = "test_nodes_declare", .summary = "pl_sim_node_add's checks",
            .setup = declare_setup);

LEAK_TEST(nodes, node_add_checks_its_definition)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&declare, &o, &r), 0);
    expect_clean(&r);
    static const int want[] = {0,         PL_EINVAL, PL_EINVAL, PL_EINVAL,
                               PL_EINVAL, PL_EINVAL, PL_EIO,    PL_EINVAL};
    for (size_t i = 0; i < 8; i++) {
        cr_assert_eq(add_rc[i], want[i], "definition %zu: %d", i, add_rc[i]);
    }
    cr_assert(node_free_ok);
    /* Outside a run there is nothing to add to. */
    const pl_node_def ok = {.name = "a", .host = "10.0.0.1", .boot = empty_boot};
    cr_assert_eq(pl_sim_node_add(NULL, &ok), PL_EINVAL);
    cr_assert(!pl_sim_node_is_up("a"));
    pl_sim_result_free(&r);
}

/* ---- --break-at on a node's task ------------------------------------------ */

static void ignore_trap(int sig) { (void)sig; }

/* What the run with break_at_step = step wrote to stderr, its SIGTRAP
 * caught (the line a debugger's user reads before it stops). */
static char *break_line(uint64_t step)
{
    memset(&seen, 0, sizeof seen);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = QUIET;
    o.break_at_step = step;
    struct sigaction sa = {.sa_handler = ignore_trap}, old;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGTRAP, &sa, &old), 0);
    FILE *tmp = tmpfile();
    cr_assert_not_null(tmp);
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    cr_assert_geq(saved, 0);
    cr_assert_geq(dup2(fileno(tmp), STDERR_FILENO), 0);
    pl_sim_result r;
    int rc = pl_sim_run(&cluster, &o, &r);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    sigaction(SIGTRAP, &old, NULL);
    cr_assert_eq(rc, 0);
    pl_sim_result_free(&r);
    static char text[512];
    rewind(tmp);
    size_t n = fread(text, 1, sizeof text - 1, tmp);
    text[n] = '\0';
    fclose(tmp);
    return text;
}

LEAK_TEST(nodes, break_at_names_a_node_task_as_findings_do)
{
    plan(false, false, false);
    pl_sim_result r = run(QUIET, 0, true);
    const pl__run_record *rec = pl__sim_result_record(&r);
    /* The first poll of a node's task after time began to pass. */
    const pl__trace_rec *e = NULL;
    for (size_t i = 0; e == NULL && i < rec->events_len; i++) {
        const pl__trace_rec *c = &rec->events[i];
        const char *name = pl__run_task_name(rec, c->task);
        if (c->kind == PL__EV_POLL && c->time_ns > 0 && name != NULL && strchr(name, '/')) {
            e = c;
        }
    }
    cr_assert_not_null(e);
    char want[256];
    snprintf(want, sizeof want,
             "pollen: break at step %" PRIu64 ": '%s' (#%" PRIu32 ") is polled next, at %" PRId64
             ".%03" PRId64 " ms\n",
             e->step, pl__run_task_name(rec, e->task), e->task, e->time_ns / PL_MS,
             e->time_ns % PL_MS / PL_US);
    uint64_t step = e->step;
    pl_sim_result_free(&r);
    const char *text = break_line(step);
    cr_assert_str_eq(text, want);
}
