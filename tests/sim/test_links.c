/* tests/sim/test_links.c: links between simulated hosts (pollen/sim_net.h).
 *
 * Two workloads cross the link 10.0.0.1 -> 10.0.0.2: datagrams (seq
 * numbers, optionally echoed back) and one TCP-like stream (numbered
 * bytes, checked in order). Each is driven by a table of actions the
 * sender performs before its i-th message (partition, heal, hold...), and
 * each run's outcome is copied out by the scenario's check. Runs use knobs
 * that switch the link kinds off unless a test turns one on, so what a
 * test asserts follows from its actions alone. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/socket.h>

#include <pollen/sim.h>

#include "leakcheck.h"
#include "net/net.h"
#include "run.h"
#include "run_record.h"
#include "shrink.h"
#include "sim_internal.h"
#include "strategy.h"

TestSuite(links, .fini = pl_test_leak_check);

enum { MSGS_MAX = 32, CHUNK = 100 };

typedef enum act {
    ACT_NONE,
    ACT_PARTITION,
    ACT_ONEWAY_AB,
    ACT_ONEWAY_BA,
    ACT_HEAL,
    ACT_HOLD,
    ACT_RELEASE,
} act;

/* What a test asks of the next run. */
static struct cfg {
    int msgs;
    bool echo;
    act acts[MSGS_MAX];
    const char *a;    /* the first host of the actions; NULL: HOST_A */
    bool all_or_fail; /* check(): every datagram must arrive */
    bool loopback;    /* bind 127.0.0.1 and 127.0.0.2: one host, no link */
    bool labels;      /* the sender names datagram 1 by a label, 2 by a note */
} cfg;

/* What the run saw, copied out by check(). */
typedef struct outcome {
    int got[2 * MSGS_MAX]; /* seqs in arrival order at B */
    pl_time got_ns[2 * MSGS_MAX];
    int got_len;
    int echoes;   /* echoes back at A */
    size_t bytes; /* stream bytes the server read, in order */
    bool in_order;
    int srv_err, cli_err; /* the first error each end of the stream saw */
    pl_sim_link_state ab, ba;
} outcome;

static outcome seen;

#define HOST_A "10.0.0.1"
#define HOST_B "10.0.0.2"
/* Timer lateness and spurious EAGAINs would move the times the tests
 * assert; the schedule's kinds stay on. */
#define QUIET "timer_late=off,io_fault=off,"
#define LINK_KINDS_OFF                                                                             \
    "link_latency=off,link_loss=off,link_dup=off,link_reorder=off,link_reset=off,partition=off,"   \
    "clog=off"
#define LINKS_OFF QUIET LINK_KINDS_OFF

static void perform(act what)
{
    const char *a = cfg.a != NULL ? cfg.a : HOST_A;
    int rc = 0;
    switch (what) {
    case ACT_PARTITION:
        rc = pl_sim_partition(a, HOST_B);
        break;
    case ACT_ONEWAY_AB:
        rc = pl_sim_partition_oneway(a, HOST_B);
        break;
    case ACT_ONEWAY_BA:
        rc = pl_sim_partition_oneway(HOST_B, a);
        break;
    case ACT_HEAL:
        rc = pl_sim_heal(a, HOST_B);
        break;
    case ACT_HOLD:
        rc = pl_sim_hold(a, HOST_B);
        break;
    case ACT_RELEASE:
        rc = pl_sim_unhold(HOST_B, a); /* either order names the pair */
        break;
    case ACT_NONE:
        break;
    }
    pl_always(rc == 0, "a link call on two hosts succeeds");
}

/* ---- Datagrams ---------------------------------------------------------- */

typedef struct udp_state {
    pl_udp_socket a, b;
    outcome out;
} udp_state;

static struct sockaddr_storage b_addr;
static socklen_t b_len;

typedef struct udp_tx {
    pl_future base;
    udp_state *st;
    int i;
    pl_udp_send send;
    pl_sleep gap;
} udp_tx;

static pl_poll_result udp_tx_poll(pl_future *f, pl_context *cx)
{
    udp_tx *self = (udp_tx *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < cfg.msgs; self->i++) {
        perform(cfg.acts[self->i]);
        if (cfg.labels && self->i == 1) {
            pl_sim_send_label("seq %d", self->i);
        } else if (cfg.labels && self->i == 2) {
            pl_sim_send_label(NULL);
            pl_trace_note("sending seq %d", self->i);
        }
        self->send = pl_udp_send_to(&self->st->a, &self->i, sizeof self->i,
                                    (const struct sockaddr *)&b_addr, b_len);
        PL_AWAIT(cx, &self->send);
        self->gap = pl_sleep_for(PL_MS);
        PL_AWAIT(cx, &self->gap);
    }
    PL_ASYNC_END;
}

static void udp_tx_drop(pl_future *f)
{
    udp_tx *self = (udp_tx *)f;
    pl_drop_child(&self->send.base);
    pl_drop_child(&self->gap.base);
}

static const pl_future_vtable udp_tx_vt = {"udp_tx", udp_tx_poll, udp_tx_drop};

/* Receives on one socket until 300 ms pass quietly; at B it notes each
 * seq and, when asked, echoes it to its sender. */
typedef struct udp_rx {
    pl_future base;
    udp_state *st;
    bool at_b;
    int seq;
    pl_udp_recv recv;
    pl_timeout quiet;
    pl_udp_send send;
} udp_rx;

static pl_poll_result udp_rx_poll(pl_future *f, pl_context *cx)
{
    udp_rx *self = (udp_rx *)f;
    outcome *o = &self->st->out;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->recv = pl_udp_recv_from(self->at_b ? &self->st->b : &self->st->a, &self->seq,
                                      sizeof self->seq);
        self->quiet = pl_timeout_make(&self->recv.base, 300 * PL_MS);
        PL_AWAIT(cx, &self->quiet);
        if (self->quiet.result != 0 || self->recv.result < 0) {
            break;
        }
        if (!self->at_b) {
            o->echoes++;
            continue;
        }
        if (o->got_len < 2 * MSGS_MAX) {
            o->got_ns[o->got_len] = pl_now(cx->ex);
            o->got[o->got_len++] = self->seq;
        }
        if (cfg.echo) {
            self->send =
                pl_udp_send_to(&self->st->b, &self->seq, sizeof self->seq,
                               (const struct sockaddr *)&self->recv.from, self->recv.from_len);
            PL_AWAIT(cx, &self->send);
        }
    }
    PL_ASYNC_END;
}

static void udp_rx_drop(pl_future *f)
{
    udp_rx *self = (udp_rx *)f;
    pl_drop_child(&self->quiet.base);
    pl_drop_child(&self->send.base);
}

static const pl_future_vtable udp_rx_vt = {"udp_rx", udp_rx_poll, udp_rx_drop};

static bool slow_link; /* the setup gives 10.0.0.1 -> 2 a 7 ms latency */

static int udp_setup(pl_executor *ex, void *state)
{
    udp_state *st = state;
    if (slow_link) {
        pl_sim_link_options o;
        pl_sim_link_options_default(&o);
        o.latency_ns = 7 * PL_MS;
        if (pl_sim_link_set(HOST_A, HOST_B, &o) != 0) {
            return PL_EINVAL;
        }
    }
    int rc = pl_udp_bind_str(ex, &st->a, cfg.loopback ? "127.0.0.1:5000" : HOST_A ":5000");
    if (rc == 0) {
        rc = pl_udp_bind_str(ex, &st->b, cfg.loopback ? "127.0.0.2:6000" : HOST_B ":6000");
    }
    if (rc != 0) {
        return rc;
    }
    b_len = sizeof b_addr;
    pl_udp_local_addr(&st->b, &b_addr, &b_len);
    udp_tx tx = {.base = PL_FUTURE_INIT(&udp_tx_vt), .st = st};
    udp_rx rb = {.base = PL_FUTURE_INIT(&udp_rx_vt), .st = st, .at_b = true};
    udp_rx ra = {.base = PL_FUTURE_INIT(&udp_rx_vt), .st = st, .at_b = false};
    rc = PL_SPAWN(ex, tx, "udp_tx", NULL);
    if (rc == 0) {
        rc = PL_SPAWN(ex, rb, "udp_rx_b", NULL);
    }
    return rc != 0 ? rc : PL_SPAWN(ex, ra, "udp_rx_a", NULL);
}

static void copy_links(outcome *o)
{
    pl_sim_link_get(HOST_A, HOST_B, &o->ab);
    pl_sim_link_get(HOST_B, HOST_A, &o->ba);
}

static int udp_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    udp_state *st = state;
    copy_links(&st->out);
    seen = st->out;
    if (cfg.all_or_fail && seen.got_len < cfg.msgs) {
        return pl_check_fail(msg, len, "%d of %d datagrams arrived", seen.got_len, cfg.msgs);
    }
    return 0;
}

static void udp_teardown(void *state)
{
    udp_state *st = state;
    pl_udp_close(&st->a);
    pl_udp_close(&st->b);
}

PL_SCENARIO(udp_pair, .name = "test_links_udp", .summary = "datagrams over 10.0.0.1 -> 2",
            .state_size = sizeof(udp_state), .setup = udp_setup, .check = udp_check,
            .teardown = udp_teardown);

/* Runs a scenario with `knobs` on seed 0 and returns its finding kind. */
static pl_finding_kind run(const pl_scenario *sc, const char *knobs, uint64_t seed,
                           pl_sim_result *keep)
{
    memset(&seen, 0, sizeof seen);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = knobs;
    o.seed = seed;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(sc, &o, &r), 0, "%s", r.finding.message);
    pl_finding_kind k = r.finding.kind;
    cr_assert_eq(k, PL_FINDING_NONE, "%s: %s", pl_finding_name(k), r.finding.message);
    if (keep != NULL) {
        *keep = r;
    } else {
        pl_sim_result_free(&r);
    }
    return k;
}

static void udp_plan(int msgs, bool echo)
{
    memset(&cfg, 0, sizeof cfg);
    cfg.msgs = msgs;
    cfg.echo = echo;
}

static void expect_got(const int *want, int n)
{
    cr_assert_eq(seen.got_len, n, "got %d datagrams, want %d", seen.got_len, n);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(seen.got[i], want[i], "arrival %d: seq %d, want %d", i, seen.got[i], want[i]);
    }
}

Test(links, partition_loses_datagrams_until_healed)
{
    udp_plan(10, false);
    cfg.acts[3] = ACT_PARTITION;
    cfg.acts[6] = ACT_HEAL;
    run(&udp_pair, LINKS_OFF, 0, NULL);
    /* Seq 2 (sent at 2 ms) lands at 2.5 ms, before the cut at 3 ms; 3..5
     * arrive on a cut link; 6 leaves after the heal. */
    static const int want[] = {0, 1, 2, 6, 7, 8, 9};
    expect_got(want, 7);
    cr_assert_eq(seen.ab.dgrams_sent, 10);
    cr_assert_eq(seen.ab.dgrams_lost, 3);
    cr_assert_eq(seen.ab.partitions, 1);
    cr_assert_eq(seen.ba.partitions, 1, "both ways");
    cr_assert(!seen.ab.cut && !seen.ba.cut, "healed");
}

Test(links, oneway_partition_cuts_one_direction)
{
    udp_plan(10, true);
    cfg.acts[3] = ACT_ONEWAY_AB;
    cfg.acts[6] = ACT_HEAL;
    run(&udp_pair, LINKS_OFF, 0, NULL);
    static const int want[] = {0, 1, 2, 6, 7, 8, 9};
    expect_got(want, 7);
    cr_assert_eq(seen.echoes, 7, "every seq B got is echoed back");
    cr_assert_eq(seen.ba.partitions, 0);

    cfg.acts[3] = ACT_ONEWAY_BA;
    run(&udp_pair, LINKS_OFF, 0, NULL);
    static const int all[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    expect_got(all, 10);
    cr_assert_eq(seen.echoes, 7, "the echoes of 3..5 cross the cut way");
    cr_assert_eq(seen.ba.dgrams_lost, 3);
}

Test(links, hold_keeps_datagrams_until_release)
{
    udp_plan(10, false);
    cfg.acts[3] = ACT_HOLD;
    cfg.acts[6] = ACT_RELEASE;
    run(&udp_pair, LINKS_OFF, 0, NULL);
    static const int all[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    expect_got(all, 10);
    cr_assert_eq(seen.ab.dgrams_lost, 0);
    /* 3, 4 and 5 waited for the release at 6 ms. */
    cr_assert_eq(seen.got_ns[3], 6 * PL_MS, "%lld", (long long)seen.got_ns[3]);
    cr_assert_eq(seen.got_ns[5], 6 * PL_MS);
    cr_assert_eq(seen.got_ns[2], 2 * PL_MS + 500 * PL_US, "the default base latency");
}

/* ---- The link kinds, one at a time ------------------------------------- */

static char knobs_buf[512];

/* The link kinds off but `kind`, which leaves 0 with probability `prob`. */
static const char *only_at(const char *kind, uint32_t prob)
{
    static const char *const kinds[] = {"link_latency", "link_loss", "link_dup", "link_reorder",
                                        "link_reset",   "partition", "clog"};
    size_t used = (size_t)snprintf(knobs_buf, sizeof knobs_buf, "%s", QUIET);
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        bool on = strcmp(kinds[i], kind) == 0;
        used += (size_t)snprintf(knobs_buf + used, sizeof knobs_buf - used, "%s=", kinds[i]);
        used += (size_t)(on ? snprintf(knobs_buf + used, sizeof knobs_buf - used, "%u", prob)
                            : snprintf(knobs_buf + used, sizeof knobs_buf - used, "off"));
        if (i + 1 < sizeof kinds / sizeof kinds[0]) {
            knobs_buf[used++] = ',';
        }
    }
    return knobs_buf;
}

static const char *only(const char *kind) { return only_at(kind, 65536); }

static uint64_t nonzero_of(const pl_sim_result *r, uint32_t kind)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    uint64_t n = 0;
    for (size_t i = 0; i < rec->decisions_len; i++) {
        n += rec->decisions[i].kind == kind && rec->decisions[i].value != 0;
    }
    return n;
}

static void run_only(const char *kind, uint32_t k)
{
    pl_sim_result r;
    run(&udp_pair, only(kind), 0, &r);
    cr_assert_gt(nonzero_of(&r, k), 0, "%s fired", kind);
    pl_sim_result_free(&r);
}

Test(links, each_datagram_kind_fires)
{
    udp_plan(10, false);
    run_only("link_latency", PL_DECIDE_LINK_LATENCY);
    cr_assert_geq(seen.got_ns[0], 600 * PL_US, "base plus at least one jitter quantum");
    run_only("link_loss", PL_DECIDE_LINK_LOSS);
    cr_assert_eq(seen.got_len, 0);
    cr_assert_eq(seen.ab.dgrams_lost, 10);
    run_only("link_dup", PL_DECIDE_LINK_DUP);
    cr_assert_eq(seen.got_len, 20);
    run_only("link_reorder", PL_DECIDE_LINK_REORDER);
    cr_assert_eq(seen.got_len, 10);
    cr_assert_eq(seen.got_ns[0], 2500 * PL_US, "held back by reorder_ns");
    run_only("partition", PL_DECIDE_PARTITION);
    cr_assert_gt(seen.ab.partitions, 0);
    cr_assert_lt(seen.got_len, 10);
    run_only("clog", PL_DECIDE_CLOG);
    cr_assert_eq(seen.got_len, 10, "a clog delays, it loses nothing");
    cr_assert_geq(seen.got_ns[0], PL_MS);
}

Test(links, reordering_by_decision_swaps_datagrams)
{
    udp_plan(10, false);
    bool swapped = false;
    for (uint64_t seed = 0; seed < 20 && !swapped; seed++) {
        run(&udp_pair, only_at("link_reorder", 32768), seed, NULL);
        cr_assert_eq(seen.got_len, 10);
        for (int i = 1; i < seen.got_len; i++) {
            swapped |= seen.got[i] < seen.got[i - 1];
        }
    }
    cr_assert(swapped, "some seed delivers a later datagram first");
}

Test(links, explanations_name_the_link)
{
    uint64_t key = (uint64_t)0x0a000001 << 32 | 0x0a000002;
    char buf[160];
    /* fault_steps 8: n = 17; 10 is one-way with k = 2 (2 ms). */
    cr_assert(pl__net_explain(buf, sizeof buf, PL_DECIDE_PARTITION, key, 10, 17, 3 * PL_MS, NULL));
    cr_assert_str_eq(buf, "partition: link 10.0.0.1 -> 10.0.0.2 cut at 3.000 ms (one-way), "
                          "healed at 5.000 ms");
    cr_assert(pl__net_explain(buf, sizeof buf, PL_DECIDE_PARTITION, key, 4, 17, 3 * PL_MS, NULL));
    cr_assert_str_eq(buf, "partition: link 10.0.0.1 <-> 10.0.0.2 cut at 3.000 ms (both ways), "
                          "healed at 11.000 ms");
    cr_assert(pl__net_explain(buf, sizeof buf, PL_DECIDE_CLOG, key, 1, 9, PL_MS, NULL));
    cr_assert_str_eq(buf, "clog: link 10.0.0.1 -> 10.0.0.2 held its traffic at 1.000 ms, "
                          "released at 2.000 ms");
    static const struct {
        uint32_t kind;
        const char *start;
    } kinds[] = {
        {PL_DECIDE_LINK_LATENCY, "link latency: a crossing of 10.0.0.1 -> 10.0.0.2"},
        {PL_DECIDE_LINK_LOSS, "link loss: a datagram on 10.0.0.1 -> 10.0.0.2 was lost"},
        {PL_DECIDE_LINK_DUP, "link dup: "},
        {PL_DECIDE_LINK_REORDER, "link reorder: "},
        {PL_DECIDE_LINK_RESET, "link reset: "},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        cr_assert(pl__net_explain(buf, sizeof buf, kinds[i].kind, key, 1, 8, 0, NULL));
        cr_assert_eq(strncmp(buf, kinds[i].start, strlen(kinds[i].start)), 0, "%s", buf);
    }
    cr_assert(!pl__net_explain(buf, sizeof buf, PL_DECIDE_IO_FAULT, key, 1, 2, 0, NULL));
}

/* A run that explains names each lost datagram by what its sender said
 * before it: nothing (its task's name), a label, then a trace note once
 * the label is gone. The words change nothing: the explaining run, its
 * list replayed, has the first run's hash. */
Test(links, explanations_name_the_message)
{
    udp_plan(3, false);
    cfg.labels = true;
    pl_sim_result first;
    run(&udp_pair, only("link_loss"), 0, &first);
    cr_assert_eq(seen.got_len, 0, "every datagram is lost");
    const pl__run_record *rec = pl__sim_result_record(&first);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = only("link_loss");
    o.source = PL_SIM_SOURCE_LIST;
    o.decisions = rec->decisions;
    o.decisions_len = rec->decisions_len;
    o.keep_events = true;
    pl__capture cap = {0};
    pl_sim_result r;
    cr_assert_eq(pl__sim_run_captured(&udp_pair, &o, &cap, &r), 0);
    cr_assert_eq(r.hash, first.hash, "labels and notes change no run");
    char *text = pl__shrink_explain(&r, &cap, &o);
    cr_assert_not_null(text);
    static const char *const lines[] = {
        "link loss: a datagram of 'udp_tx' from 10.0.0.1 to 10.0.0.2 was lost\n",
        "link loss: the 'seq 1' from 10.0.0.1 to 10.0.0.2 was lost\n",
        "link loss: a datagram of 'udp_tx' (after its note 'sending seq 2') from 10.0.0.1 to "
        "10.0.0.2 was lost\n",
    };
    const char *at = text;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        const char *line = strstr(at, lines[i]);
        cr_assert_not_null(line, "no line '%s' in order in:\n%s", lines[i], text);
        at = line + strlen(lines[i]);
    }
    free(text);
    free(cap.notes);
    pl_sim_result_free(&r);
    pl_sim_result_free(&first);
}

/* ---- A stream ----------------------------------------------------------- */

/* Byte k of the stream is k % 251: a lost, doubled or reordered segment
 * shows at once. */
typedef struct tcp_state {
    pl_tcp_listener l;
    outcome out;
} tcp_state;

typedef struct tcp_srv {
    pl_future base;
    tcp_state *st;
    pl_tcp_accept acc;
    pl_timeout acc_quiet;
    pl_tcp_stream s;
    uint8_t buf[512];
    pl_io_read rd;
} tcp_srv;

static pl_poll_result tcp_srv_poll(pl_future *f, pl_context *cx)
{
    tcp_srv *self = (tcp_srv *)f;
    outcome *o = &self->st->out;
    PL_ASYNC_BEGIN(self);
    o->in_order = true;
    /* A connection attempt may time out on a cut link: then nobody comes. */
    self->acc = pl_tcp_accept_make(&self->st->l);
    self->acc_quiet = pl_timeout_make(&self->acc.base, PL_S);
    PL_AWAIT(cx, &self->acc_quiet);
    if (self->acc_quiet.result != 0 || self->acc.result != 0) {
        o->srv_err = self->acc_quiet.result != 0 ? self->acc_quiet.result : self->acc.result;
        return PL_READY;
    }
    self->s = pl_tcp_accept_take(&self->acc);
    for (;;) {
        self->rd = pl_tcp_read(&self->s, self->buf, sizeof self->buf);
        PL_AWAIT(cx, &self->rd);
        if (self->rd.result <= 0) {
            o->srv_err = (int)self->rd.result;
            break;
        }
        for (ssize_t i = 0; i < self->rd.result; i++) {
            o->in_order &= self->buf[i] == (uint8_t)((o->bytes + (size_t)i) % 251);
        }
        o->bytes += (size_t)self->rd.result;
    }
    pl_tcp_close(&self->s);
    PL_ASYNC_END;
}

static void tcp_srv_drop(pl_future *f)
{
    tcp_srv *self = (tcp_srv *)f;
    pl_drop_child(&self->acc_quiet.base);
    pl_drop_child(&self->rd.base);
    pl_tcp_close(&self->s);
}

static const pl_future_vtable tcp_srv_vt = {"tcp_srv", tcp_srv_poll, tcp_srv_drop};

/* Connects from 127.0.0.1, writes cfg.msgs chunks 1 ms apart (acting
 * before each), shuts its side down and reads until the end or an error. */
typedef struct tcp_cli {
    pl_future base;
    tcp_state *st;
    pl_tcp_connect conn;
    pl_tcp_stream s;
    int i;
    uint8_t buf[CHUNK];
    pl_io_write_all wr;
    pl_io_read rd;
    pl_sleep gap;
} tcp_cli;

static pl_poll_result tcp_cli_poll(pl_future *f, pl_context *cx)
{
    tcp_cli *self = (tcp_cli *)f;
    outcome *o = &self->st->out;
    PL_ASYNC_BEGIN(self);
    self->conn = pl_tcp_connect_str(HOST_B ":80");
    PL_AWAIT(cx, &self->conn);
    if (self->conn.result != 0) {
        o->cli_err = self->conn.result;
        return PL_READY;
    }
    self->s = pl_tcp_connect_take(&self->conn);
    for (self->i = 0; self->i < cfg.msgs; self->i++) {
        perform(cfg.acts[self->i]);
        for (int k = 0; k < CHUNK; k++) {
            self->buf[k] = (uint8_t)(((size_t)self->i * CHUNK + (size_t)k) % 251);
        }
        self->wr = pl_tcp_write_all(&self->s, self->buf, CHUNK);
        PL_AWAIT(cx, &self->wr);
        if (self->wr.result < 0) {
            o->cli_err = (int)self->wr.result;
            break;
        }
        self->gap = pl_sleep_for(PL_MS);
        PL_AWAIT(cx, &self->gap);
    }
    if (o->cli_err == 0) {
        pl_tcp_shutdown(&self->s, SHUT_WR);
        self->rd = pl_tcp_read(&self->s, self->buf, sizeof self->buf);
        PL_AWAIT(cx, &self->rd);
        o->cli_err = (int)self->rd.result;
    }
    pl_tcp_close(&self->s);
    PL_ASYNC_END;
}

static void tcp_cli_drop(pl_future *f)
{
    tcp_cli *self = (tcp_cli *)f;
    pl_drop_child(&self->conn.base);
    pl_drop_child(&self->wr.base);
    pl_drop_child(&self->rd.base);
    pl_drop_child(&self->gap.base);
    pl_tcp_close(&self->s);
}

static const pl_future_vtable tcp_cli_vt = {"tcp_cli", tcp_cli_poll, tcp_cli_drop};

static bool setup_cut; /* the setup cuts the stream's link before it connects */

static int tcp_setup(pl_executor *ex, void *state)
{
    tcp_state *st = state;
    if (setup_cut && pl_sim_partition("127.0.0.1", HOST_B) != 0) {
        return PL_EINVAL;
    }
    int rc = pl_tcp_listen_str(ex, &st->l, HOST_B ":80", 4);
    if (rc != 0) {
        return rc;
    }
    tcp_srv srv = {.base = PL_FUTURE_INIT(&tcp_srv_vt), .st = st};
    tcp_cli cli = {.base = PL_FUTURE_INIT(&tcp_cli_vt), .st = st};
    rc = PL_SPAWN(ex, srv, "tcp_srv", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, cli, "tcp_cli", NULL);
}

static int tcp_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex, (void)msg, (void)len;
    tcp_state *st = state;
    pl_sim_link_get("127.0.0.1", HOST_B, &st->out.ab);
    pl_sim_link_get(HOST_B, "127.0.0.1", &st->out.ba);
    seen = st->out;
    return 0;
}

static void tcp_teardown(void *state) { pl_tcp_listener_close(&((tcp_state *)state)->l); }

PL_SCENARIO(tcp_pair, .name = "test_links_tcp", .summary = "a stream 127.0.0.1 -> 10.0.0.2",
            .state_size = sizeof(tcp_state), .setup = tcp_setup, .check = tcp_check,
            .teardown = tcp_teardown);

static void tcp_plan(act at5, act at15)
{
    memset(&cfg, 0, sizeof cfg);
    cfg.msgs = 20;
    cfg.a = "127.0.0.1";
    cfg.acts[5] = at5;
    cfg.acts[15] = at15;
}

Test(links, stream_keeps_order_across_partition_and_heal)
{
    /* Cut at 5 ms, healed at 15 ms: well within break_after_ns (100 ms). */
    static const act cuts[] = {ACT_PARTITION, ACT_ONEWAY_AB, ACT_ONEWAY_BA, ACT_HOLD};
    static const act ends[] = {ACT_HEAL, ACT_HEAL, ACT_HEAL, ACT_RELEASE};
    for (size_t i = 0; i < 4; i++) {
        tcp_plan(cuts[i], ends[i]);
        run(&tcp_pair, LINKS_OFF, 0, NULL);
        cr_assert_eq(seen.bytes, 20u * CHUNK, "case %zu: %zu bytes", i, seen.bytes);
        cr_assert(seen.in_order, "case %zu", i);
        cr_assert_eq(seen.srv_err, 0, "case %zu: end of stream", i);
        cr_assert_eq(seen.cli_err, 0, "case %zu: end of stream", i);
        cr_assert_eq(seen.ab.resets, 0);
    }
    /* With the link kinds on, over seeds: whatever the decisions (but
     * resets, which break on purpose), the bytes come in order. */
    uint64_t cut_and_whole = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        tcp_plan(ACT_NONE, ACT_NONE);
        run(&tcp_pair, QUIET "link_reset=off,partition=16384,clog=16384", seed, NULL);
        cr_assert(seen.in_order, "seed %llu", (unsigned long long)seed);
        cut_and_whole += seen.ab.partitions > 0 && seen.bytes == 20u * CHUNK;
        if (seen.ab.resets + seen.ba.resets == 0 && seen.cli_err != PL_ETIMEDOUT) {
            cr_assert_eq(seen.bytes, 20u * CHUNK, "seed %llu", (unsigned long long)seed);
        }
    }
    cr_assert_gt(cut_and_whole, 0, "some seed cut the link and the stream survived it");
}

Test(links, long_partition_breaks_the_stream_at_both_ends)
{
    tcp_plan(ACT_PARTITION, ACT_NONE);
    run(&tcp_pair, LINKS_OFF, 0, NULL);
    cr_assert_lt(seen.bytes, 20u * CHUNK);
    cr_assert(seen.in_order, "what arrived before the break is whole");
    cr_assert_eq(seen.srv_err, PL_ECONNRESET);
    cr_assert_eq(seen.cli_err, PL_ECONNRESET);
    cr_assert_eq(seen.ab.resets + seen.ba.resets, 1);
}

Test(links, reset_decision_is_seen_by_both_ends)
{
    tcp_plan(ACT_NONE, ACT_NONE);
    pl_sim_result r;
    run(&tcp_pair, only("link_reset"), 0, &r);
    cr_assert_gt(nonzero_of(&r, PL_DECIDE_LINK_RESET), 0);
    pl_sim_result_free(&r);
    cr_assert_eq(seen.bytes, 0u, "the first write broke the connection");
    cr_assert_eq(seen.cli_err, PL_ECONNRESET);
    cr_assert_eq(seen.srv_err, PL_ECONNRESET);
    cr_assert_eq(seen.ab.resets, 1);
}

Test(links, connect_on_a_cut_link_times_out)
{
    tcp_plan(ACT_NONE, ACT_NONE);
    cfg.msgs = 0;
    /* Cut from the setup on: the attempt waits break_after_ns, then fails. */
    cfg.acts[0] = ACT_NONE;
    setup_cut = true;
    run(&tcp_pair, LINKS_OFF, 0, NULL);
    setup_cut = false;
    cr_assert_eq(seen.cli_err, PL_ETIMEDOUT);
}

/* ---- Errors ------------------------------------------------------------- */

static int errors_setup(pl_executor *ex, void *state)
{
    (void)ex, (void)state;
    pl_always(pl_sim_partition("192.168.0.1", HOST_B) == PL_EINVAL, "not a host");
    pl_always(pl_sim_partition("10.0.0.1:80", HOST_B) == PL_EINVAL, "a port is not a host");
    pl_always(pl_sim_heal(NULL, HOST_B) == PL_EINVAL, "NULL");
    pl_always(pl_sim_hold(HOST_A, HOST_A) == PL_EINVAL, "one host has no link");
    pl_always(pl_sim_unhold("127.0.0.1", "127.0.0.9") == PL_EINVAL, "loopback is one host");
    pl_sim_link_options o;
    pl_sim_link_options_default(&o);
    o.jitter_steps = 0;
    pl_always(pl_sim_link_set(HOST_A, HOST_B, &o) == PL_EINVAL, "bad options");
    pl_always(pl_sim_link_set(HOST_A, HOST_B, NULL) == PL_EINVAL, "no options");
    pl_sim_link_state st;
    pl_always(pl_sim_link_get(HOST_A, HOST_B, &st) == 0 && !st.cut && st.dgrams_sent == 0,
              "an unused link is open");
    o.jitter_steps = 1;
    o.latency_ns = 7 * PL_MS;
    pl_always(pl_sim_link_set(HOST_A, HOST_B, &o) == 0, "good options");
    pl_always(pl_sim_link_get(HOST_A, HOST_B, &st) == 0 && st.options.latency_ns == 7 * PL_MS,
              "set options are read back");
    pl_always(pl_sim_link_get(HOST_B, HOST_A, &st) == 0 && st.options.latency_ns == 500 * PL_US,
              "the other way keeps the default");
    pl_always(pl_sim_partition_oneway(HOST_A, HOST_B) == 0, "cut");
    pl_always(pl_sim_link_get(HOST_A, HOST_B, &st) == 0 && st.cut &&
                  st.cut_until_ns == PL_TIME_NEVER,
              "cut until healed");
    pl_always(pl_sim_link_get(HOST_B, HOST_A, &st) == 0 && !st.cut, "one way only");
    return 0;
}

PL_SCENARIO(errors, .name = "test_links_errors", .summary = "the link calls' errors",
            .setup = errors_setup);

Test(links, calls_check_their_arguments)
{
    cr_assert_eq(pl_sim_partition(HOST_A, HOST_B), PL_ENOSYS, "no simulation on this thread");
    cr_assert_eq(pl_sim_link_get(HOST_A, HOST_B, &seen.ab), PL_ENOSYS);
    run(&errors, NULL, 0, NULL);
    pl_sim_link_options o;
    pl_sim_link_options_default(&o);
    char err[128];
    o.break_after_ns = 0;
    cr_assert_eq(pl_sim_link_options_validate(&o, err, sizeof err), PL_EINVAL);
    cr_assert_str_eq(err, "link options: break_after_ns 0 is outside 1..3600000000000");
}

/* Delays set per link apply to that link: a stream over a slow link takes
 * its latency per crossing. */
Test(links, set_link_latency_is_used)
{
    udp_plan(3, false);
    cfg.acts[0] = ACT_NONE;
    slow_link = true;
    run(&udp_pair, LINKS_OFF, 0, NULL);
    slow_link = false;
    cr_assert_eq(seen.got_len, 3);
    cr_assert_eq(seen.got_ns[0], 7 * PL_MS);
}

/* A finding caused by a cut shrinks to the partition, and the shrinker
 * says which link was cut, when, which way, and when it healed. */
Test(links, shrunk_partition_explains_itself)
{
    udp_plan(10, false);
    cfg.all_or_fail = true;
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = only_at("partition", 8192);
    pl_sim_result r = {0};
    uint64_t seed = 0;
    for (; seed < 200; seed++) {
        o.seed = seed;
        cr_assert_eq(pl_sim_run(&udp_pair, &o, &r), 0);
        if (r.finding.kind != PL_FINDING_NONE) {
            break;
        }
        pl_sim_result_free(&r);
    }
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION, "no seed lost a datagram");
    const pl__run_record *rec = pl__sim_result_record(&r);
    pl_sim_shrink_result sh;
    cr_assert_eq(pl_sim_shrink(&udp_pair, &o, rec->decisions, rec->decisions_len,
                               PL_FINDING_ASSERTION, NULL, &sh),
                 0, "%s", sh.message);
    cr_assert_eq(sh.nonzero_after, 1, "%s", sh.explanation);
    cr_assert_not_null(strstr(sh.explanation, "partition: link 10.0.0."), "%s", sh.explanation);
    cr_assert_not_null(strstr(sh.explanation, ", healed at "), "%s", sh.explanation);
    pl_sim_shrink_result_free(&sh);
    pl_sim_result_free(&r);
    cfg.all_or_fail = false;
}

/* Inside one host nothing crosses a link: with every link kind always on,
 * no link decision is asked and the run is the one without them. */
Test(links, one_host_is_untouched)
{
    udp_plan(10, true);
    cfg.loopback = true;
    pl_sim_result with, without;
    run(&udp_pair,
        "link_latency=65536,link_loss=65536,link_dup=65536,link_reorder=65536,"
        "link_reset=65536,partition=65536,clog=65536",
        3, &with);
    cr_assert_eq(seen.got_len, 10);
    cr_assert_eq(seen.echoes, 10);
    run(&udp_pair, LINK_KINDS_OFF, 3, &without);
    cfg.loopback = false;
    for (uint32_t k = PL_DECIDE_LINK_LATENCY; k <= PL_DECIDE_CLOG; k++) {
        const pl__run_record *rec = pl__sim_result_record(&with);
        for (size_t i = 0; i < rec->decisions_len; i++) {
            cr_assert_neq(rec->decisions[i].kind, k, "%s asked", pl__dec_kind_name(k));
        }
    }
    cr_assert_eq(with.hash, without.hash, "the same run");
    pl_sim_result_free(&with);
    pl_sim_result_free(&without);
}
