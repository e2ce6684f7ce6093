/* tests/sim/test_isolate.c: faults of a node's links taken together and
 * the power cut (pollen/sim_node.h: pl_sim_node_isolate, pl_sim_node_split,
 * pl_sim_nodes_heal, pl_sim_power_cut, the node_isolate decision kind).
 *
 * Three nodes, "a" (10.0.0.1), "b" (10.0.0.2) and "c" (10.0.0.3): each
 * sends every other a datagram every 1 ms and records, per sender, the
 * longest gap between two datagrams it received. The scenario's own
 * chaos task acts at 5 ms as each test plans and ends the run at 40 ms.
 * The check fails, when planned, if "a" heard "b" with a gap over 5 ms. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include <pollen/io.h>
#include <pollen/sim.h>
#include <pollen/sim_node.h>

#include "leakcheck.h"
#include "sim_internal.h"
#include "run_record.h"

TestSuite(isolate, .fini = pl_test_leak_check);

#define QUIET                                                                                      \
    "timer_late=off,io_fault=off,io_latency=off,link_latency=off,link_loss=off,link_dup=off,"     \
    "link_reorder=off,partition=off,clog=off,spurious_wake=off"

enum { NODES = 3 };

static struct plan {
    int act;           /* 1 isolate a, 2 split {a, b} | {c}, 3 isolate a until healed at 10 ms,
                          4 power cut */
    bool isolatable;   /* "a"'s definition */
    bool crashable;    /* "a" and "b" */
    bool fail_on_gap;
} plan;

static struct seen {
    pl_time last[NODES + 1][NODES + 1]; /* [to][from]: the latest datagram */
    pl_time gap[NODES + 1][NODES + 1];  /* the longest gap */
    int rc, heal_rc, bad_rc, crashed;
    bool a_up, b_up, c_up;
} seen;

typedef struct peer {
    pl_future base;
    int self;
    pl_udp_socket *u;
    uint8_t byte;
    int to;
    struct sockaddr_in addr;
    pl_udp_send send;
    pl_udp_recv recv;
    pl_sleep nap;
} peer;

static pl_poll_result sender_poll(pl_future *f, pl_context *cx)
{
    peer *self = (peer *)f;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->nap = pl_sleep_for(PL_MS);
        PL_AWAIT(cx, &self->nap);
        for (self->to = 1; self->to <= NODES; self->to++) {
            if (self->to == self->self) {
                continue;
            }
            self->byte = (uint8_t)self->self;
            self->addr = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(9)};
            self->addr.sin_addr.s_addr = htonl(0x0a000000u | (uint32_t)self->to);
            self->send = pl_udp_send_to(self->u, &self->byte, 1, (struct sockaddr *)&self->addr,
                                        sizeof self->addr);
            PL_AWAIT(cx, &self->send);
        }
    }
    PL_ASYNC_END;
}

static pl_poll_result receiver_poll(pl_future *f, pl_context *cx)
{
    peer *self = (peer *)f;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->recv = pl_udp_recv_from(self->u, &self->byte, 1);
        PL_AWAIT(cx, &self->recv);
        if (self->recv.result == 1 && self->byte >= 1 && self->byte <= NODES) {
            pl_time now = pl_now(cx->ex);
            pl_time *last = &seen.last[self->self][self->byte];
            pl_time *gap = &seen.gap[self->self][self->byte];
            *gap = *last != 0 && now - *last > *gap ? now - *last : *gap;
            *last = now;
        }
    }
    PL_ASYNC_END;
}

static void peer_drop(pl_future *f)
{
    peer *self = (peer *)f;
    pl_drop_child(&self->send.base);
    pl_drop_child(&self->recv.base);
    pl_drop_child(&self->nap.base);
}

static const pl_future_vtable sender_vt = {"sender", sender_poll, peer_drop};
static const pl_future_vtable receiver_vt = {"receiver", receiver_poll, peer_drop};

static int spawn_bg(pl_executor *ex, peer *p, const char *name)
{
    pl_task *t;
    int rc = PL_SPAWN(ex, *p, name, &t);
    if (rc == 0) {
        pl_task_set_background(t, true);
        pl_task_release(t);
    }
    return rc;
}

static int peer_boot(pl_executor *ex, void *ud)
{
    int self = (int)(intptr_t)ud;
    pl_udp_socket *u = pl_node_alloc(sizeof *u);
    if (u == NULL) {
        return PL_ENOMEM;
    }
    char at[32];
    snprintf(at, sizeof at, "10.0.0.%d:9", self);
    int rc = pl_udp_bind_str(ex, u, at);
    peer s = {.base = PL_FUTURE_INIT(&sender_vt), .self = self, .u = u};
    peer r = {.base = PL_FUTURE_INIT(&receiver_vt), .self = self, .u = u};
    rc = rc != 0 ? rc : spawn_bg(ex, &s, "sender");
    return rc != 0 ? rc : spawn_bg(ex, &r, "receiver");
}

typedef struct chaos {
    pl_future base;
    pl_sleep nap;
} chaos;

static void act(void)
{
    static const char *const ab[] = {"a", "b"};
    switch (plan.act) {
    case 1: seen.rc = pl_sim_node_isolate("a", 10 * PL_MS); break;
    case 2: seen.rc = pl_sim_node_split(ab, 2, 10 * PL_MS); break;
    case 3: seen.rc = pl_sim_node_isolate("a", PL_TIME_NEVER); break;
    case 4: seen.crashed = pl_sim_power_cut(); break;
    default: break;
    }
    seen.bad_rc = pl_sim_node_isolate("nobody", PL_MS);
}

static pl_poll_result chaos_poll(pl_future *f, pl_context *cx)
{
    chaos *self = (chaos *)f;
    PL_ASYNC_BEGIN(self);
    self->nap = pl_sleep_for(5 * PL_MS);
    PL_AWAIT(cx, &self->nap);
    act();
    self->nap = pl_sleep_for(5 * PL_MS);
    PL_AWAIT(cx, &self->nap);
    if (plan.act == 3) {
        seen.heal_rc = pl_sim_nodes_heal();
    }
    seen.a_up = pl_sim_node_is_up("a");
    seen.b_up = pl_sim_node_is_up("b");
    seen.c_up = pl_sim_node_is_up("c");
    self->nap = pl_sleep_for(30 * PL_MS);
    PL_AWAIT(cx, &self->nap);
    PL_ASYNC_END;
}

static void chaos_drop(pl_future *f) { pl_drop_child(&((chaos *)f)->nap.base); }

static const pl_future_vtable chaos_vt = {"chaos", chaos_poll, chaos_drop};

static int setup(pl_executor *ex, void *state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    const pl_node_def defs[NODES] = {
        {.name = "a", .host = "10.0.0.1", .boot = peer_boot, .ud = (void *)(intptr_t)1,
         .isolatable = plan.isolatable, .crashable = plan.crashable},
        {.name = "b", .host = "10.0.0.2", .boot = peer_boot, .ud = (void *)(intptr_t)2,
         .crashable = plan.crashable},
        {.name = "c", .host = "10.0.0.3", .boot = peer_boot, .ud = (void *)(intptr_t)3},
    };
    for (int i = 0; i < NODES; i++) {
        int rc = pl_sim_node_add(ex, &defs[i]);
        if (rc != 0) {
            return rc;
        }
    }
    chaos c = {.base = PL_FUTURE_INIT(&chaos_vt)};
    return PL_SPAWN(ex, c, "chaos", NULL);
}

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    (void)state;
    if (plan.fail_on_gap && seen.gap[1][2] > 5 * PL_MS) {
        return pl_check_fail(msg, len, "a heard nothing from b for %lld ns",
                             (long long)seen.gap[1][2]);
    }
    return 0;
}

static const pl_scenario trio = {
    .name = "test_isolate_trio",
    .summary = "three nodes pinging each other, isolated, split, cut off",
    .setup = setup,
    .check = check,
};

static pl_sim_result run(const char *knobs, uint64_t seed)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = knobs;
    o.seed = seed;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&trio, &o, &r), 0, "%s", r.finding.message);
    return r;
}

static void expect_clean(const pl_sim_result *r)
{
    cr_assert_eq(r->finding.kind, PL_FINDING_NONE, "%s: %s", pl_finding_name(r->finding.kind),
                 r->finding.message);
}

/* The gap over the 10 ms cut: the last datagram at 5 ms at the latest,
 * the next at 15 ms at the earliest. */
static bool cut_for_ten(int to, int from)
{
    return seen.gap[to][from] >= 10 * PL_MS && seen.gap[to][from] <= 11 * PL_MS;
}

LEAK_TEST(isolate, an_isolated_node_hears_and_reaches_nobody)
{
    plan = (struct plan){.act = 1};
    pl_sim_result r = run(QUIET, 0);
    expect_clean(&r);
    cr_assert_eq(seen.rc, 0);
    cr_assert_eq(seen.bad_rc, PL_EINVAL);
    cr_assert(cut_for_ten(1, 2) && cut_for_ten(1, 3), "a heard b after %lld, c after %lld",
              (long long)seen.gap[1][2], (long long)seen.gap[1][3]);
    cr_assert(cut_for_ten(2, 1) && cut_for_ten(3, 1));
    cr_assert_eq(seen.gap[2][3], PL_MS, "b and c still hear each other every 1 ms");
    cr_assert_eq(pl__sim_result_record(&r)->consulted[PL_DECIDE_NODE_ISOLATE], 0);
    pl_sim_result_free(&r);
}

LEAK_TEST(isolate, a_split_cuts_only_between_the_sides)
{
    plan = (struct plan){.act = 2};
    pl_sim_result r = run(QUIET, 0);
    expect_clean(&r);
    cr_assert_eq(seen.rc, 0);
    cr_assert_eq(seen.gap[1][2], PL_MS, "a and b are on one side");
    cr_assert(cut_for_ten(1, 3) && cut_for_ten(3, 2) && cut_for_ten(2, 3));
    pl_sim_result_free(&r);
}

LEAK_TEST(isolate, heal_ends_an_isolation_until_healed)
{
    plan = (struct plan){.act = 3};
    pl_sim_result r = run(QUIET, 0);
    expect_clean(&r);
    cr_assert_eq(seen.heal_rc, 0);
    cr_assert(seen.gap[1][2] >= 5 * PL_MS && seen.gap[1][2] <= 6 * PL_MS, "gap %lld",
              (long long)seen.gap[1][2]);
    pl_sim_result_free(&r);
}

LEAK_TEST(isolate, a_power_cut_crashes_every_crashable_node_at_once)
{
    plan = (struct plan){.act = 4, .crashable = true};
    pl_sim_result r = run(QUIET ",node_crash=off", 0);
    expect_clean(&r);
    cr_assert_eq(seen.crashed, 2);
    cr_assert(!seen.a_up && !seen.b_up && seen.c_up);
    pl_sim_result_free(&r);
}

/* The decision kind: only isolatable nodes draw; a finding that needs an
 * isolation shrinks to it, in one line. */
LEAK_TEST(isolate, the_decision_isolates_isolatable_nodes_and_shrinks)
{
    plan = (struct plan){.fail_on_gap = true};
    pl_sim_result off = run(QUIET ",node_isolate=off", 1);
    pl_sim_result on = run(QUIET ",node_isolate=65536", 1);
    expect_clean(&on);
    cr_assert_eq(off.hash, on.hash, "a node that is not isolatable changed the run");
    pl_sim_result_free(&off);
    pl_sim_result_free(&on);
    plan.isolatable = true;
    pl_sim_result r = run(QUIET ",node_isolate=4096", 1);
    for (uint64_t seed = 2; r.finding.kind == PL_FINDING_NONE && seed < 64; seed++) {
        pl_sim_result_free(&r);
        r = run(QUIET ",node_isolate=4096", seed);
    }
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION, "%s", pl_finding_name(r.finding.kind));
    const pl__run_record *rec = pl__sim_result_record(&r);
    pl_sim_options base;
    pl_sim_options_default(&base);
    base.knobs = QUIET ",node_isolate=4096";
    pl_sim_shrink_result s;
    cr_assert_eq(pl_sim_shrink(&trio, &base, rec->decisions, rec->decisions_len,
                               PL_FINDING_ASSERTION, NULL, &s),
                 0, "%s", s.message);
    cr_assert_not_null(strstr(s.explanation, "node 'a' cut from every peer at "), "%s",
                       s.explanation);
    cr_assert_not_null(strstr(s.explanation, " for 8 ms"), "%s", s.explanation);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}
