/* tests/sim/test_quiet.c: the quiet phase (pl_scenario.quiet_after_ns,
 * quiet_deadline_ns, liveness) and the liveness finding.
 *
 * A world of three nodes: "a" (10.0.0.1), "b" (10.0.0.2) and "c"
 * (10.0.0.3), each running a background ticker that counts its ticks. The
 * scenario's own chaos task crashes a, pauses b for good and cuts the
 * link b <-> c at 1 ms, then looks at the world at 20 ms, after the quiet
 * phase began at 10 ms. The zoo's failover_stick pair (compiled in) gives
 * a faulty cluster for what is drawn after the quiet point, and the
 * liveness finding to replay and shrink. */
#include <criterion/criterion.h>
#include <string.h>

#include <pollen/io.h>
#include <pollen/sim.h>
#include <pollen/sim_net.h>
#include <pollen/sim_node.h>

#include "leakcheck.h"
#include "quiet.h"
#include "run_record.h"
#include "trace.h"

TestSuite(quiet, .fini = pl_test_leak_check);

static struct plan {
    bool pause_again; /* chaos pauses b again at 15 ms, after the quiet point */
} plan;

static struct seen {
    int boots[4]; /* by node: 1 a, 2 b, 3 c */
    int ticks[4];
    int b_ticks_at_15; /* b's ticks when chaos looked at 15 ms */
    bool looked;       /* chaos looked at 20 ms */
    bool a_up, b_paused, bc_cut;
} seen;

typedef struct ticker {
    pl_future base;
    int node;
    pl_sleep nap;
} ticker;

static pl_poll_result ticker_poll(pl_future *f, pl_context *cx)
{
    ticker *self = (ticker *)f;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->nap = pl_sleep_for(PL_MS);
        PL_AWAIT(cx, &self->nap);
        seen.ticks[self->node]++;
    }
    PL_ASYNC_END;
}

static void ticker_drop(pl_future *f) { pl_drop_child(&((ticker *)f)->nap.base); }

static const pl_future_vtable ticker_vt = {"ticker", ticker_poll, ticker_drop};

static int boot(pl_executor *ex, void *ud)
{
    int node = (int)(intptr_t)ud;
    seen.boots[node]++;
    ticker t = {.base = PL_FUTURE_INIT(&ticker_vt), .node = node};
    pl_task *h = NULL;
    int rc = PL_SPAWN(ex, t, "ticker", &h);
    if (rc == 0) {
        pl_task_set_background(h, true);
        pl_task_release(h);
    }
    return rc;
}

typedef struct chaos {
    pl_future base;
    pl_sleep nap;
} chaos;

static pl_poll_result chaos_poll(pl_future *f, pl_context *cx)
{
    chaos *self = (chaos *)f;
    PL_ASYNC_BEGIN(self);
    self->nap = pl_sleep_for(PL_MS);
    PL_AWAIT(cx, &self->nap);
    cr_assert_eq(pl_sim_node_crash("a"), 0);
    cr_assert_eq(pl_sim_node_pause("b", PL_TIME_NEVER), 0);
    cr_assert_eq(pl_sim_partition("10.0.0.2", "10.0.0.3"), 0);
    self->nap = pl_sleep_for(14 * PL_MS);
    PL_AWAIT(cx, &self->nap);
    seen.b_ticks_at_15 = seen.ticks[2];
    if (plan.pause_again) {
        cr_assert_eq(pl_sim_node_pause("b", PL_TIME_NEVER), 0); /* the scenario's own act */
    }
    self->nap = pl_sleep_for(5 * PL_MS);
    PL_AWAIT(cx, &self->nap);
    pl_sim_link_state ls;
    cr_assert_eq(pl_sim_link_get("10.0.0.2", "10.0.0.3", &ls), 0);
    seen.looked = true;
    seen.a_up = pl_sim_node_is_up("a");
    seen.b_paused = pl_sim_node_is_paused("b");
    seen.bc_cut = ls.cut;
    pl_eventually(seen.ticks[2] > seen.b_ticks_at_15, "b ticks after 15 ms");
    PL_ASYNC_END;
}

static void chaos_drop(pl_future *f) { pl_drop_child(&((chaos *)f)->nap.base); }

static const pl_future_vtable chaos_vt = {"chaos", chaos_poll, chaos_drop};

static int setup(pl_executor *ex, void *state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    static const char *const names[] = {"", "a", "b", "c"};
    static const char *const hosts[] = {"", "10.0.0.1", "10.0.0.2", "10.0.0.3"};
    for (int n = 1; n <= 3; n++) {
        pl_node_def def = {
            .name = names[n], .host = hosts[n], .boot = boot, .ud = (void *)(intptr_t)n};
        int rc = pl_sim_node_add(ex, &def);
        if (rc != 0) {
            return rc;
        }
    }
    chaos c = {.base = PL_FUTURE_INIT(&chaos_vt)};
    return PL_SPAWN(ex, c, "chaos", NULL);
}

static pl_scenario world(pl_time quiet_after_ns)
{
    return (pl_scenario){.name = "quiet_world",
                         .setup = setup,
                         .time_limit_ns = PL_S,
                         .quiet_after_ns = quiet_after_ns,
                         .quiet_deadline_ns = 50 * PL_MS};
}

static pl_sim_result run_world(const pl_scenario *sc)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(sc, &o, &r), 0, "%s", r.finding.message);
    return r;
}

/* The quiet point ends the crash, the pause and the cut the scenario made;
 * without a quiet phase they stay. */
LEAK_TEST(quiet, the_quiet_point_restarts_resumes_and_heals)
{
    plan = (struct plan){0};
    pl_scenario sc = world(10 * PL_MS);
    pl_sim_result r = run_world(&sc);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    cr_assert(seen.looked);
    cr_assert(seen.a_up && seen.boots[1] == 2, "a restarted (%d boots)", seen.boots[1]);
    cr_assert(!seen.b_paused && seen.ticks[2] > 0, "b resumed (%d ticks)", seen.ticks[2]);
    cr_assert(!seen.bc_cut, "the link b <-> c healed");
    pl_sim_result_free(&r);

    pl_scenario loud = world(0);
    loud.quiet_deadline_ns = 0;
    r = run_world(&loud);
    cr_assert(seen.looked);
    cr_assert(!seen.a_up && seen.boots[1] == 1 && seen.b_paused && seen.bc_cut);
    cr_assert_eq(seen.ticks[2], seen.b_ticks_at_15);
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION, "without a quiet phase: %s",
                 pl_finding_name(r.finding.kind));
    pl_sim_result_free(&r);
}

/* A pl_eventually still false at the deadline is a liveness finding that
 * names it and when faults stopped. */
LEAK_TEST(quiet, a_false_eventually_is_a_liveness_finding)
{
    plan = (struct plan){.pause_again = true};
    pl_scenario sc = world(10 * PL_MS);
    pl_sim_result r = run_world(&sc);
    cr_assert_eq(r.finding.kind, PL_FINDING_LIVENESS, "%s: %s", pl_finding_name(r.finding.kind),
                 r.finding.message);
    cr_assert_not_null(strstr(r.finding.message, "pl_eventually never became true (faults "
                                                 "stopped at 10.000 ms"),
                       "%s", r.finding.message);
    cr_assert_not_null(strstr(r.finding.message, "b ticks after 15 ms"), "%s", r.finding.message);
    cr_assert_str_eq(pl_finding_name(PL_FINDING_LIVENESS), "liveness");
    cr_assert_eq(pl_finding_from_name("liveness"), PL_FINDING_LIVENESS);
    pl_sim_result_free(&r);
}

LEAK_TEST(quiet, times_outside_the_limit_are_refused)
{
    plan = (struct plan){0};
    pl_scenario sc = world(990 * PL_MS); /* + 50 ms is past the 1 s limit */
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&sc, &o, &r), PL_EINVAL);
    cr_assert_not_null(strstr(r.finding.message, "quiet_after_ns"), "%s", r.finding.message);
    pl_sim_result_free(&r);
    sc.quiet_after_ns = -1;
    cr_assert_eq(pl_sim_run(&sc, &o, &r), PL_EINVAL);
    pl_sim_result_free(&r);
}

/* ---- The zoo's faulty cluster ------------------------------------------------- */

static pl_sim_result run_seed(const pl_scenario *sc, uint64_t seed, bool events)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = seed;
    o.keep_events = events;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(sc, &o, &r), 0, "%s", r.finding.message);
    return r;
}

/* Fault kinds are drawn before the quiet point and never after it;
 * scheduling and latencies go on. The quiet point comes at 5 ms, while
 * the client still works. */
LEAK_TEST(quiet, no_fault_is_drawn_after_the_quiet_point)
{
    const pl_scenario *fix = pl_scenario_find("fix_failover_stick");
    cr_assert_not_null(fix);
    pl_scenario early = *fix;
    early.quiet_after_ns = 5 * PL_MS;
    const pl_scenario *sc = &early;
    uint64_t faults_before = 0, after = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        pl_sim_result r = run_seed(sc, seed, true);
        const pl__run_record *rec = r.internal;
        for (size_t i = 0; i < rec->events_len; i++) {
            const pl__trace_rec *e = &rec->events[i];
            if (e->kind != PL__EV_DECISION) {
                continue;
            }
            bool fault = pl__quiet_is_fault((uint32_t)e->a);
            if (e->time_ns >= sc->quiet_after_ns) {
                cr_assert(!fault, "seed %llu: a %s decision at %lld ns", (unsigned long long)seed,
                          pl__dec_kind_name((uint32_t)e->a), (long long)e->time_ns);
                after++;
            } else {
                faults_before += fault;
            }
        }
        pl_sim_result_free(&r);
    }
    cr_assert_gt(faults_before, 0);
    cr_assert_gt(after, 0, "decisions go on after the quiet point (scheduling, latencies)");
}

/* A quiet phase that has not begun draws and does nothing: a run over
 * before the quiet point is the run without one, hash for hash. */
LEAK_TEST(quiet, a_run_over_before_the_quiet_point_is_unchanged)
{
    const pl_scenario *sc = pl_scenario_find("fix_failover_stick");
    pl_scenario loud = *sc;
    loud.quiet_after_ns = 0;
    loud.quiet_deadline_ns = 0;
    int compared = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        pl_sim_result a = run_seed(sc, seed, false);
        pl_sim_result b = run_seed(&loud, seed, false);
        if (a.time_ns < sc->quiet_after_ns) {
            cr_assert_eq(a.hash, b.hash, "seed %llu", (unsigned long long)seed);
            cr_assert_eq(a.decisions, b.decisions);
            compared++;
        }
        pl_sim_result_free(&a);
        pl_sim_result_free(&b);
    }
    cr_assert_gt(compared, 0);
}

/* The bug's liveness finding replays from its decisions and shrinks to a
 * few departures, the fault that started it. */
LEAK_TEST(quiet, the_liveness_finding_replays_and_shrinks)
{
    const pl_scenario *sc = pl_scenario_find("bug_failover_stick");
    cr_assert_not_null(sc);
    pl_sim_result r = {0};
    uint64_t seed = 0;
    for (; seed < 200; seed++) {
        r = run_seed(sc, seed, false);
        if (r.finding.kind != PL_FINDING_NONE) {
            break;
        }
        pl_sim_result_free(&r);
    }
    cr_assert_eq(r.finding.kind, PL_FINDING_LIVENESS, "%s", r.finding.message);
    cr_assert_not_null(strstr(r.finding.message, "the client finished"), "%s", r.finding.message);
    const pl__run_record *rec = r.internal;
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = seed;
    o.source = PL_SIM_SOURCE_LIST;
    o.decisions = rec->decisions;
    o.decisions_len = rec->decisions_len;
    pl_sim_result again;
    cr_assert_eq(pl_sim_run(sc, &o, &again), 0);
    cr_assert_eq(again.finding.kind, PL_FINDING_LIVENESS);
    cr_assert_eq(again.hash, r.hash, "the replay is the run");
    cr_assert_not(again.diverged, "%s", again.divergence);
    pl_sim_result_free(&again);

    pl_sim_options base;
    pl_sim_options_default(&base);
    base.seed = seed;
    pl_sim_shrink_result sr;
    cr_assert_eq(pl_sim_shrink(sc, &base, rec->decisions, rec->decisions_len, PL_FINDING_LIVENESS,
                               NULL, &sr),
                 0, "%s", sr.message);
    cr_assert_eq(sr.run.finding.kind, PL_FINDING_LIVENESS);
    cr_assert_leq(sr.nonzero_after, 3, "%zu departures left", sr.nonzero_after);
    cr_assert_gt(sr.nonzero_after, 0, "without a fault the client finishes");
    pl_sim_shrink_result_free(&sr);
    pl_sim_result_free(&r);
}
