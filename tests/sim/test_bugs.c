/* tests/sim/test_bugs.c: the bug zoo proves the oracles.
 *
 * Every file in scenarios/bugs/ holds a buggy future (scenario bug_<name>,
 * whose .expect names the finding it must produce) and its fixed twin
 * (fix_<name>, which must stay clean). For each pair this checks that:
 *  - a campaign over seeds 0..9999 with default options finds the bug,
 *    and the first finding is of the documented kind (the seed range
 *    bounds the work; the wall time is printed, never asserted, so a
 *    loaded machine cannot fail the test);
 *  - that finding's replay file (written under /tmp) reproduces the same
 *    finding and the same trace hash;
 *  - the fixed twin runs clean for 2,000 seeds (POLLEN_ZOO_FIX_SEEDS
 *    sets another count: meson gives 250 under sanitizers, where the
 *    campaigns cover 2,500; 100000 makes a long run by hand).
 * Seeds and time to the first finding go to stderr, one line per bug,
 * for the zoo's table in docs/exploring.md ("The bug zoo").
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pollen/sim.h>

#include "leakcheck.h"
#include "real.h"
#include "shrunk.h"

#define BUG_SEEDS 10000
#define FIX_SEEDS 2000

/* Every pair in the zoo. A registered bug_ or fix_ scenario missing here
 * fails the registry test, so a new pair cannot go untested. */
static const char *const zoo[] = {
    "abort_permit",   "ack_resend",         "atomic_waker",
    "chan_register_late", "checksum",           "deadline_reset",
    "edge_notify",
    "event_clear",    "failover_stick",     "idle_timeout",       "isolated_leader",
    "join_repoll",    "kv_ack",
    "lease_clock",    "lease_pause",        "lease_skew",         "lock_order",
    "log_ack",        "node_register_late", "node_wake_no_flag",
    "notify_waiters_thread",
    "poll_hang",
    "poll_spin",      "pool_done_flag",     "prefetch_leak",      "race_double_drop",   "reaper_orphan",
    "repl_ack",
    "reply_busy",     "resend_twice",       "retry_stale",        "select_first_waker",
    "sem_release",    "signal_drop",        "spin_wait",          "stale_read",
    "stale_reply",
    "ticker_flush",   "ticker_lock",
    "timer_table",    "timer_table_clock",  "timer_table_count",  "timer_table_later",
    "tpc_mpsc",       "tpc_park",
    "wake_by_ref_leak",   "wake_means_ready",
    "wiped_permit",
    "retry_lock",     "sweeper",
};

/* Fixed twins without a bug: programs whose timers are their normal path
 * (timer_paths.c), on which an oracle must stay silent. */
static const char *const fix_only[] = {"idle_select", "shutdown_never", "periodic_work"};

#define ZOO_LEN (sizeof zoo / sizeof zoo[0])

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const pl_scenario *zoo_scenario(const char *prefix, const char *name)
{
    char full[96];
    snprintf(full, sizeof full, "%s_%s", prefix, name);
    const pl_scenario *sc = pl_scenario_find(full);
    cr_assert_not_null(sc, "scenario %s is not linked into the test", full);
    return sc;
}

static uint64_t fix_seeds(void)
{
    const char *env = getenv("POLLEN_ZOO_FIX_SEEDS");
    uint64_t n = env != NULL ? strtoull(env, NULL, 10) : 0;
    return n > 0 ? n : FIX_SEEDS;
}

/* Re-runs the finding's seed, writes its replay file, replays it, and
 * checks that the replay reproduces the finding and the trace hash. */
static void check_replay(const pl_scenario *sc, const pl_sim_options *base, uint64_t seed,
                         pl_finding_kind want)
{
    pl_sim_options o = *base;
    o.source = PL_SIM_SOURCE_SEED;
    o.seed = seed;
    pl_sim_result run;
    cr_assert_eq(pl_sim_run(sc, &o, &run), 0);
    cr_assert_eq(run.finding.kind, want, "%s seed %llu: rerun found %s", sc->name,
                 (unsigned long long)seed, pl_finding_name(run.finding.kind));

    char path[] = "/tmp/pollen-zoo-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "mkstemp failed");
    close(fd);
    cr_assert_eq(pl_sim_write_replay(sc, &o, &run, path), 0);

    pl_sim_result replayed;
    char err[512] = "";
    int rc = pl_sim_replay_file(path, &replayed, err, sizeof err);
    unlink(path);
    cr_assert_eq(rc, 0, "%s seed %llu: replay differs: %s", sc->name, (unsigned long long)seed,
                 err);
    cr_assert_eq(replayed.finding.kind, want);
    cr_assert_eq(replayed.hash, run.hash, "%s: replay hash %016llx, run hash %016llx", sc->name,
                 (unsigned long long)replayed.hash, (unsigned long long)run.hash);
    pl_sim_result_free(&replayed);
    pl_sim_result_free(&run);
}

/* Seeds 0..n-1 with o, stopping at the first finding. */
static pl_campaign_options first_seeds(uint64_t n, const pl_sim_options *o)
{
    pl_campaign_options co;
    pl_campaign_options_default(&co);
    co.seed_hi = n - 1;
    co.sim = o;
    return co;
}

/* The bug scenario must produce its documented finding. */
static void expect_finding(const char *name, const char *knobs)
{
    const pl_scenario *sc = zoo_scenario("bug", name);
    cr_assert_not_null(sc->expect, "%s names no expected finding", sc->name);
    int want = pl_finding_from_name(sc->expect);
    cr_assert(want > 0, "%s expects an unknown finding '%s'", sc->name, sc->expect);

    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = knobs;
    pl_campaign_result cr;
    double t0 = seconds_now();
    pl_campaign_options co = first_seeds(BUG_SEEDS, &o);
    cr_assert_eq(pl_sim_campaign(sc, &co, &cr), 0);
    double dt = seconds_now() - t0;

    cr_assert_eq(cr.findings, 1, "%s: no finding in %d seeds", sc->name, BUG_SEEDS);
    cr_assert_eq(cr.first.kind, (pl_finding_kind)want, "%s: first finding is %s, want %s: %s",
                 sc->name, pl_finding_name(cr.first.kind), sc->expect, cr.first.message);
    fprintf(stderr, "zoo: %-24s %-17s after %5llu seed(s) (seed %llu) in %8.3f ms%s%s\n",
            sc->name, sc->expect, (unsigned long long)cr.runs,
            (unsigned long long)cr.first_seed, dt * 1e3, knobs != NULL ? ", knobs " : "",
            knobs != NULL ? knobs : "");
    check_replay(sc, &o, cr.first_seed, (pl_finding_kind)want);
}

/* The fixed twin must stay clean. */
static void expect_clean(const char *name, const char *knobs, bool rotate)
{
    const pl_scenario *sc = zoo_scenario("fix", name);
    cr_assert_null(sc->expect, "%s is a fixed twin: it must not expect a finding", sc->name);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = knobs;
    o.rotate_wakers = rotate;
    uint64_t seeds = fix_seeds();
    pl_campaign_result cr;
    double t0 = seconds_now();
    pl_campaign_options co = first_seeds(seeds, &o);
    cr_assert_eq(pl_sim_campaign(sc, &co, &cr), 0);
    double dt = seconds_now() - t0;
    cr_assert_eq(cr.findings, 0, "%s: %s at seed %llu: %s", sc->name,
                 pl_finding_name(cr.first.kind), (unsigned long long)cr.first_seed,
                 cr.first.message);
    fprintf(stderr, "zoo: %-24s clean for %llu seeds in %.3f s (%llu distinct traces)%s%s%s\n",
            sc->name, (unsigned long long)cr.runs, dt, (unsigned long long)cr.distinct_hashes,
            knobs != NULL ? ", knobs " : "", knobs != NULL ? knobs : "",
            rotate ? "" : ", no waker rotation");
}

#define ZOO_PAIR(name)                                                      \
    LEAK_TEST(bugs, name)                                                   \
    {                                                                       \
        expect_finding(#name, NULL);                                        \
    }                                                                       \
    LEAK_TEST(fixes, name)                                                  \
    {                                                                       \
        expect_clean(#name, NULL, true);                                    \
    }

ZOO_PAIR(abort_permit)
ZOO_PAIR(atomic_waker)
ZOO_PAIR(chan_register_late)
ZOO_PAIR(checksum)
ZOO_PAIR(deadline_reset)
ZOO_PAIR(edge_notify)
ZOO_PAIR(event_clear)
ZOO_PAIR(failover_stick)
ZOO_PAIR(idle_timeout)
ZOO_PAIR(isolated_leader)
ZOO_PAIR(join_repoll)
ZOO_PAIR(kv_ack)
ZOO_PAIR(lease_clock)
ZOO_PAIR(lease_pause)
ZOO_PAIR(lease_skew)
ZOO_PAIR(lock_order)
ZOO_PAIR(log_ack)
ZOO_PAIR(node_register_late)
ZOO_PAIR(node_wake_no_flag)
ZOO_PAIR(notify_waiters_thread)
ZOO_PAIR(poll_spin)
ZOO_PAIR(pool_done_flag)
ZOO_PAIR(prefetch_leak)
ZOO_PAIR(race_double_drop)
ZOO_PAIR(reaper_orphan)
ZOO_PAIR(repl_ack)
ZOO_PAIR(reply_busy)
ZOO_PAIR(resend_twice)
ZOO_PAIR(retry_stale)
ZOO_PAIR(select_first_waker)
ZOO_PAIR(sem_release)
ZOO_PAIR(signal_drop)
ZOO_PAIR(spin_wait)
ZOO_PAIR(stale_read)
ZOO_PAIR(stale_reply)
ZOO_PAIR(ticker_flush)
ZOO_PAIR(ticker_lock)
ZOO_PAIR(tpc_mpsc)
ZOO_PAIR(tpc_park)
ZOO_PAIR(timer_table)
ZOO_PAIR(timer_table_clock)
ZOO_PAIR(timer_table_count)
ZOO_PAIR(timer_table_later)
ZOO_PAIR(wake_by_ref_leak)
ZOO_PAIR(wake_means_ready)
ZOO_PAIR(wiped_permit)
ZOO_PAIR(ack_resend)
ZOO_PAIR(retry_lock)
ZOO_PAIR(sweeper)

/* Timers that are a task's normal path (timer_paths.c): fixed twins
 * only, on which the oracle of deadlocks a timer hides stays silent. */
LEAK_TEST(fixes, idle_select)
{
    expect_clean("idle_select", NULL, true);
}

LEAK_TEST(fixes, shutdown_never)
{
    expect_clean("shutdown_never", NULL, true);
}

LEAK_TEST(fixes, periodic_work)
{
    expect_clean("periodic_work", NULL, true);
}

/* A deadlock a timer hides names the lost broadcast, the timer, who
 * armed it where, and the sweeper it rescued the task through. */
static void expect_rescue_named(const char *name, const char *const *want, size_t n)
{
    const pl_scenario *sc = zoo_scenario("bug", name);
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_campaign_result cr;
    pl_campaign_options co = first_seeds(BUG_SEEDS, &o);
    cr_assert_eq(pl_sim_campaign(sc, &co, &cr), 0);
    cr_assert_eq(cr.first.kind, PL_FINDING_DEADLOCK, "%s", cr.first.message);
    for (size_t i = 0; i < n; i++) {
        cr_assert_not_null(strstr(cr.first.message, want[i]), "%s: no \"%s\" in: %s", name,
                           want[i], cr.first.message);
    }
}

LEAK_TEST(bugs, ack_resend_names_the_rescuing_timer)
{
    static const char *const want[] = {
        "'client' (#1) is stuck for good but for a timer",
        "pl_notify_waiters broadcast by 'server' (#2)",
        "armed by 'client' (#1), parked in: client (ack_resend.c:",
        "a deadlock the timer hides",
    };
    expect_rescue_named("ack_resend", want, sizeof want / sizeof want[0]);
}

LEAK_TEST(bugs, sweeper_names_the_sweeper)
{
    static const char *const want[] = {
        "'worker' (#1) is stuck for good but for a timer",
        "broadcast by 'producer' (#2)",
        "armed by 'sweeper' (#3)",
        "through 'sweeper' (#3), which it woke",
    };
    expect_rescue_named("sweeper", want, sizeof want / sizeof want[0]);
}

/* The split brain needs a whole-node isolation: per-link partitions
 * would have to cut both of the leader's links, both ways, at
 * overlapping times. Seeds that find it with the node_isolate decision
 * find nothing without it, and the first finding shrinks to the one
 * isolation, said in one line. */
enum { ISOLATION_SEEDS = 300 };

LEAK_TEST(bugs, isolated_leader_needs_an_isolation)
{
    const pl_scenario *sc = zoo_scenario("bug", "isolated_leader");
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = "node_isolate=off";
    pl_campaign_result cr;
    pl_campaign_options co = first_seeds(ISOLATION_SEEDS, &o);
    cr_assert_eq(pl_sim_campaign(sc, &co, &cr), 0);
    cr_assert_eq(cr.findings, 0, "without isolations, seed %llu: %s",
                 (unsigned long long)cr.first_seed, cr.first.message);
    cr_assert_eq(cr.runs, ISOLATION_SEEDS);

    o.knobs = NULL;
    co = first_seeds(ISOLATION_SEEDS, &o);
    cr_assert_eq(pl_sim_campaign(sc, &co, &cr), 0);
    cr_assert_eq(cr.first.kind, PL_FINDING_ASSERTION, "no split brain in %d seeds",
                 ISOLATION_SEEDS);
    o.seed = cr.first_seed;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(sc, &o, &r), 0);
    expect_shrunk(sc, &o, &r, 1, "node 'n1' cut from every peer at ");
    pl_sim_result_free(&r);
}

/* The cluster pairs also run on the real backend, as `pollen run --real`
 * runs them (sim/src/real.h): the same setup boots their nodes on one
 * real executor, their hosts on loopback and their files in directories
 * of their own, and the fault-free path keeps the promise (repl_ack's
 * check there also wants every put acknowledged and read back). */
static void expect_real_clean(const char *prefix, const char *name)
{
    char msg[512] = "";
    cr_assert_eq(pl__real_run(zoo_scenario(prefix, name), msg, sizeof msg), PL_FINDING_NONE,
                 "%s_%s: %s", prefix, name, msg);
}

LEAK_TEST(bugs, repl_ack_runs_on_the_real_backend)
{
    expect_real_clean("fix", "repl_ack");
    expect_real_clean("bug", "repl_ack");
}

LEAK_TEST(bugs, cluster_pairs_run_on_the_real_backend)
{
    static const char *const pairs[] = {"kv_ack", "stale_read", "lease_pause", "failover_stick"};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        expect_real_clean("fix", pairs[i]);
    }
}

/* The one exception to ZOO_PAIR: bug_poll_hang loops inside a poll
 * without calling anything the simulator sees, which no in-process
 * oracle can interrupt, so its campaign would hang this suite. The CLI's
 * CPU-time budget finds it (tests/sim/test_cli.c,
 * zoo_poll_hang_is_caught_by_the_poll_budget); its fixed twin runs here. */
LEAK_TEST(fixes, poll_hang)
{
    expect_clean("poll_hang", NULL, true);
}

/* The simulator's own cancellations (the `cancel` decision, on by
 * default) find the lost permit too, and the fix survives them. */
LEAK_TEST(bugs, abort_permit_by_cancel_decision)
{
    expect_finding("abort_permit", "cancel=on");
}

LEAK_TEST(fixes, abort_permit_by_cancel_decision)
{
    expect_clean("abort_permit", "cancel=on", true);
}

/* The wait-condition oracle says what the parked listener waits for and
 * that it already holds; without the declaration this is a bare deadlock
 * (a probe poll of the listener changes nothing). */
LEAK_TEST(bugs, wiped_permit_names_the_declared_condition)
{
    const pl_scenario *sc = zoo_scenario("bug", "wiped_permit");
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_campaign_result cr;
    pl_campaign_options co = first_seeds(BUG_SEEDS, &o);
    cr_assert_eq(pl_sim_campaign(sc, &co, &cr), 0);
    cr_assert_eq(cr.first.kind, PL_FINDING_LOST_WAKEUP, "%s", cr.first.message);
    cr_assert_not_null(strstr(cr.first.message, "'patient' (#2) parked on bell (wiped_permit.c:"),
                       "%s", cr.first.message);
    cr_assert_not_null(strstr(cr.first.message, "while a ring is stored and it is first in line, "
                                                "never notified"),
                       "%s", cr.first.message);
}

/* The simulator's cancellations of granted jobs lose the lock as the
 * watchdog's aborts do, and the fix survives them. */
LEAK_TEST(bugs, ticker_lock_by_cancel_decision)
{
    expect_finding("ticker_lock", "cancel=on");
}

LEAK_TEST(fixes, ticker_lock_by_cancel_decision)
{
    expect_clean("ticker_lock", "cancel=on", true);
}

/* Without waker rotation (production's executor) a stale waker is
 * harmless, which is why only the rotating simulator sees it. */
static void expect_invisible_without_rotation(const char *name)
{
    const pl_scenario *sc = zoo_scenario("bug", name);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.rotate_wakers = false;
    pl_campaign_result cr;
    pl_campaign_options co = first_seeds(FIX_SEEDS, &o);
    cr_assert_eq(pl_sim_campaign(sc, &co, &cr), 0);
    cr_assert_eq(cr.findings, 0, "%s without rotation: %s", sc->name, cr.first.message);
}

LEAK_TEST(bugs, select_first_waker_invisible_without_rotation)
{
    expect_invisible_without_rotation("select_first_waker");
}

LEAK_TEST(bugs, retry_stale_invisible_without_rotation)
{
    expect_invisible_without_rotation("retry_stale");
}

static bool in_zoo(const char *name)
{
    for (size_t i = 0; i < ZOO_LEN; i++) {
        if (strcmp(zoo[i], name) == 0) {
            return true;
        }
    }
    return false;
}

static bool is_fix_only(const char *name)
{
    for (size_t i = 0; i < sizeof fix_only / sizeof fix_only[0]; i++) {
        if (strcmp(fix_only[i], name) == 0) {
            return true;
        }
    }
    return false;
}

/* Every registered bug_/fix_ scenario belongs to a tested pair, every bug
 * names a known finding and every fix expects none. */
Test(zoo, registry)
{
    size_t n;
    const pl_scenario *const *all = pl_scenarios(&n);
    size_t bugs = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name = all[i]->name;
        bool bug = strncmp(name, "bug_", 4) == 0;
        bool fix = strncmp(name, "fix_", 4) == 0;
        if (!bug && !fix) {
            continue;
        }
        cr_assert(in_zoo(name + 4) || (fix && is_fix_only(name + 4)),
                  "%s is not in the zoo table of test_bugs.c", name);
        if (bug) {
            bugs++;
            cr_assert(all[i]->expect != NULL && pl_finding_from_name(all[i]->expect) > 0,
                      "%s must name a known finding in .expect", name);
        } else {
            cr_assert_null(all[i]->expect, "%s must not expect a finding", name);
        }
    }
    cr_assert_eq(bugs, ZOO_LEN, "%zu bug scenarios registered, %zu in the table", bugs,
                 (size_t)ZOO_LEN);
    for (size_t i = 0; i < ZOO_LEN; i++) {
        zoo_scenario("bug", zoo[i]);
        zoo_scenario("fix", zoo[i]);
    }
}

/* Finding names round-trip, and an unknown name is an error code, as
 * everywhere in pollen's API, not a bare -1. */
LEAK_TEST(bugs, finding_names_round_trip)
{
    for (int k = 0; k < PL_FINDING__COUNT; k++) {
        cr_assert_eq(pl_finding_from_name(pl_finding_name((pl_finding_kind)k)), k);
    }
    cr_assert_eq(pl_finding_from_name("no_such_finding"), PL_EINVAL);
}
