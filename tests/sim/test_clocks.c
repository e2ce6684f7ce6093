/* tests/sim/test_clocks.c: per-node clocks (pollen/sim_node.h's
 * `skewed`, the clock_offset, clock_drift and clock_jump decision kinds).
 *
 * Two skewed nodes, "a" (10.0.0.1) and "b" (10.0.0.2), and "c"
 * (10.0.0.3), skewed only when a test says so. Each node's task reads
 * its clocks at boot (pl_now, CLOCK_MONOTONIC, CLOCK_REALTIME), sleeps
 * 100 ms on its own clock, and reads them again with the run's true
 * time. The decisions come from a list read by kind, so each test
 * states the clocks it wants. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pollen/sim.h>
#include <pollen/sim_node.h>

#include "leakcheck.h"
#include "run_record.h"
#include "shrunk.h"
#include "sim_internal.h"

TestSuite(clocks, .fini = pl_test_leak_check);

#define NAP (100 * PL_MS)

enum { NODES = 3 };

static struct seen {
    pl_time boot_now[NODES + 1];   /* pl_now at boot */
    pl_time start_mono[NODES + 1]; /* the task's first reads */
    pl_time start_wall[NODES + 1];
    pl_time start_now[NODES + 1];
    pl_time woke_true[NODES + 1]; /* the run's true time at the wake */
    pl_time woke_now[NODES + 1];
    pl_time woke_mono[NODES + 1];
    pl_time woke_wall[NODES + 1];
    pl_time scenario_mono; /* the scenario's own task, at its end */
    pl_time scenario_true;
} seen;

static bool c_skewed;

static pl_time read_clock(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (pl_time)ts.tv_sec * PL_S + (pl_time)ts.tv_nsec;
}

typedef struct napper {
    pl_future base;
    int self;
    pl_sleep nap;
} napper;

static pl_poll_result napper_poll(pl_future *f, pl_context *cx)
{
    napper *self = (napper *)f;
    int n = self->self;
    PL_ASYNC_BEGIN(self);
    seen.start_now[n] = pl_now(cx->ex);
    seen.start_mono[n] = read_clock(CLOCK_MONOTONIC);
    seen.start_wall[n] = read_clock(CLOCK_REALTIME);
    self->nap = pl_sleep_for(NAP);
    PL_AWAIT(cx, &self->nap);
    seen.woke_true[n] = pl__sim_now(pl__sim_current());
    seen.woke_now[n] = pl_now(cx->ex);
    seen.woke_mono[n] = read_clock(CLOCK_MONOTONIC);
    seen.woke_wall[n] = read_clock(CLOCK_REALTIME);
    PL_ASYNC_END;
}

static void napper_drop(pl_future *f) { pl_drop_child(&((napper *)f)->nap.base); }

static const pl_future_vtable napper_vt = {"napper", napper_poll, napper_drop};

static int node_boot(pl_executor *ex, void *ud)
{
    int n = (int)(intptr_t)ud;
    seen.boot_now[n] = pl_now(ex);
    napper t = {.base = PL_FUTURE_INIT(&napper_vt), .self = n};
    return PL_SPAWN(ex, t, "napper", NULL);
}

/* The scenario's own task outlives the nodes' and reads the true clock. */
typedef struct watcher {
    pl_future base;
    pl_sleep nap;
} watcher;

static pl_poll_result watcher_poll(pl_future *f, pl_context *cx)
{
    watcher *self = (watcher *)f;
    PL_ASYNC_BEGIN(self);
    self->nap = pl_sleep_for(2 * NAP);
    PL_AWAIT(cx, &self->nap);
    seen.scenario_mono = read_clock(CLOCK_MONOTONIC);
    seen.scenario_true = pl__sim_now(pl__sim_current());
    PL_ASYNC_END;
}

static void watcher_drop(pl_future *f) { pl_drop_child(&((watcher *)f)->nap.base); }

static const pl_future_vtable watcher_vt = {"watcher", watcher_poll, watcher_drop};

static int clocks_setup(pl_executor *ex, void *state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    const pl_node_def defs[NODES] = {
        {.name = "a", .host = "10.0.0.1", .boot = node_boot, .ud = (void *)1, .skewed = true},
        {.name = "b", .host = "10.0.0.2", .boot = node_boot, .ud = (void *)2, .skewed = true},
        {.name = "c", .host = "10.0.0.3", .boot = node_boot, .ud = (void *)3, .skewed = c_skewed},
    };
    for (int i = 0; i < NODES; i++) {
        int rc = pl_sim_node_add(ex, &defs[i]);
        if (rc != 0) {
            return rc;
        }
    }
    watcher w = {.base = PL_FUTURE_INIT(&watcher_vt)};
    return PL_SPAWN(ex, w, "watcher", NULL);
}

static const pl_scenario clocks_sc = {.name = "clocks", .setup = clocks_setup};

/* The first t >= 0 whose reading t + offset + t * ppm / 10^6 (toward
 * zero) reaches `local`, by bisection: independent of node_clock.c's
 * inverse. */
static pl_time reading(pl_time t, pl_time offset, int32_t ppm)
{
    cr_assert_lt(t, PL_S * 1000, "t * ppm fits 64 bits"); /* the tests' times are short */
    return t + offset + t * ppm / 1000000;
}

static pl_time first_reaching(pl_time local, pl_time offset, int32_t ppm)
{
    pl_time lo = 0, hi = 2 * local;
    while (lo < hi) {
        pl_time mid = lo + (hi - lo) / 2;
        if (reading(mid, offset, ppm) >= local) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return lo;
}

/* Every kind off but the clock kinds (so the list below is all there is)
 * and a run with no poll cost (the wake is the timer's exact time). */
static void options_of(pl_sim_options *o, const pl__dec_record *list, size_t n)
{
    pl_sim_options_default(o);
    o->source = PL_SIM_SOURCE_LIST_BY_KIND;
    o->decisions = list;
    o->decisions_len = n;
    o->poll_cost_ns = 0;
}

static pl_sim_result run_list(const pl__dec_record *list, size_t n)
{
    pl_sim_options o;
    options_of(&o, list, n);
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&clocks_sc, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    return r;
}

#define O(v)                                                                                       \
    {                                                                                              \
        (uint32_t) PL_DECIDE_CLOCK_OFFSET, 1 + PL_SIM_CLOCK_STEPS, (v)                             \
    }
#define F(v)                                                                                       \
    {                                                                                              \
        (uint32_t) PL_DECIDE_CLOCK_DRIFT, 1 + 2 * PL_SIM_CLOCK_STEPS, (v)                          \
    }
#define J(v)                                                                                       \
    {                                                                                              \
        (uint32_t) PL_DECIDE_CLOCK_JUMP, 1 + 2 * PL_SIM_CLOCK_STEPS, (v)                           \
    }

/* a: 4 ms ahead, 6400 ppm fast (v 13: 100 << 6); b: no offset, 6400 ppm
 * slow (v 14). */
static const pl__dec_record skews[] = {O(3), F(13), O(0), F(14)};

LEAK_TEST(clocks, a_node_reads_its_own_clock)
{
    c_skewed = false;
    pl_sim_result r = run_list(skews, 4);
    /* At boot (true time 0): a is 4 ms ahead, b and c read the run's 0. */
    cr_assert_eq(seen.boot_now[1], 4 * PL_MS);
    cr_assert_eq(seen.boot_now[2], 0);
    cr_assert_eq(seen.boot_now[3], 0);
    /* The C library's monotonic clock is the same clock as pl_now. */
    for (int n = 1; n <= NODES; n++) {
        cr_assert_eq(seen.start_mono[n], seen.start_now[n], "node %d", n);
        cr_assert_eq(seen.woke_mono[n], seen.woke_now[n], "node %d", n);
    }
    /* The scenario's own task reads the true clock. */
    cr_assert_eq(seen.scenario_mono, seen.scenario_true);
    cr_assert_eq(seen.scenario_true, 2 * NAP);
    pl_sim_result_free(&r);
}

LEAK_TEST(clocks, timers_fire_when_the_nodes_clock_reaches_them)
{
    c_skewed = false;
    pl_sim_result r = run_list(skews, 4);
    /* a's sleep of 100 ms on a clock 0.64 % fast ends before 100 ms of
     * true time, b's on a clock as slow after, c's at 100 ms: each at the
     * first nanosecond its own clock reads the deadline. */
    pl_time a_due = first_reaching(seen.start_now[1] + NAP, 4 * PL_MS, 6400);
    pl_time b_due = first_reaching(seen.start_now[2] + NAP, 0, -6400);
    cr_assert_eq(seen.woke_true[1], a_due, "%lld", (long long)seen.woke_true[1]);
    cr_assert_eq(seen.woke_true[2], b_due, "%lld", (long long)seen.woke_true[2]);
    cr_assert_eq(seen.woke_true[3], NAP);
    cr_assert_lt(a_due, NAP - 600 * PL_US);
    cr_assert_gt(b_due, NAP + 600 * PL_US);
    /* Never early: the clock read at the wake has reached the deadline. */
    cr_assert_geq(seen.woke_now[1], seen.start_now[1] + NAP);
    cr_assert_geq(seen.woke_now[2], seen.start_now[2] + NAP);
    cr_assert_eq(seen.woke_now[1], reading(a_due, 4 * PL_MS, 6400));
    pl_sim_result_free(&r);
}

LEAK_TEST(clocks, only_the_wall_clock_jumps)
{
    c_skewed = false;
    /* The first jump decision is a's at the first wait: +1 ms (v 1); the
     * second b's: -2 ms (v 4). */
    static const pl__dec_record list[] = {O(0), F(0), O(0), F(0), J(1), J(4)};
    pl_sim_result r = run_list(list, 6);
    pl_time epoch_a = seen.start_wall[1] - seen.start_mono[1];
    cr_assert_eq(seen.woke_wall[1] - seen.woke_mono[1], epoch_a + PL_MS);
    cr_assert_eq(seen.woke_wall[2] - seen.woke_mono[2], epoch_a - 2 * PL_MS);
    cr_assert_eq(seen.woke_wall[3] - seen.woke_mono[3], epoch_a);
    /* The monotonic clocks and the timers did not move. */
    cr_assert_eq(seen.woke_true[1], NAP);
    cr_assert_eq(seen.woke_true[2], NAP);
    cr_assert_eq(seen.woke_mono[1], NAP);
    pl_sim_result_free(&r);
}

/* Only skewed nodes consult the clock kinds: "c" draws nothing until it
 * is declared skewed, then two at boot. */
LEAK_TEST(clocks, nodes_not_skewed_draw_nothing)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = "clock_offset=65536,clock_drift=65536,clock_jump=65536";
    o.seed = 7;
    for (int skewed = 0; skewed <= 1; skewed++) {
        c_skewed = skewed != 0;
        pl_sim_result r;
        cr_assert_eq(pl_sim_run(&clocks_sc, &o, &r), 0);
        const pl__run_record *rec = pl__sim_result_record(&r);
        cr_assert_eq(rec->consulted[PL_DECIDE_CLOCK_OFFSET], 2u + (uint64_t)skewed);
        cr_assert_eq(rec->consulted[PL_DECIDE_CLOCK_DRIFT], 2u + (uint64_t)skewed);
        cr_assert_gt(rec->consulted[PL_DECIDE_CLOCK_JUMP], 0);
        pl_sim_result_free(&r);
    }
}

/* The knobs' bounds limit what the clock kinds draw: with every clock
 * decision taken, each draws only the steps within its bound (offsets of
 * 1 to 4 ms, drifts of 100 to 400 ppm, jumps of 1 to 2 ms), and the
 * largest of them too; at the defaults, all of PL_SIM_CLOCK_STEPS. */
static void expect_clock_choices(const char *knobs, uint32_t offset_n, uint32_t drift_n,
                                 uint32_t jump_n)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = knobs;
    uint32_t most[3] = {0, 0, 0};
    for (uint64_t seed = 0; seed < 40; seed++) {
        o.seed = seed;
        pl_sim_result r;
        cr_assert_eq(pl_sim_run(&clocks_sc, &o, &r), 0);
        const pl__run_record *rec = pl__sim_result_record(&r);
        for (size_t i = 0; i < rec->decisions_len; i++) {
            const pl__dec_record *d = &rec->decisions[i];
            int at = d->kind == PL_DECIDE_CLOCK_OFFSET ? 0
                     : d->kind == PL_DECIDE_CLOCK_DRIFT ? 1
                     : d->kind == PL_DECIDE_CLOCK_JUMP  ? 2
                                                        : -1;
            if (at >= 0) {
                uint32_t want_n = at == 0 ? offset_n : at == 1 ? drift_n : jump_n;
                cr_assert_eq(d->n, want_n, "%s: kind %u drew from %u", knobs, d->kind, d->n);
                most[at] = d->value > most[at] ? d->value : most[at];
            }
        }
        pl_sim_result_free(&r);
    }
    cr_assert_eq(most[0], offset_n - 1, "%s: the largest offset never drawn", knobs);
    cr_assert_geq(most[1] + 2, drift_n, "%s: the largest drift never drawn", knobs);
    cr_assert_geq(most[2] + 2, jump_n, "%s: the largest jump never drawn", knobs);
}

LEAK_TEST(clocks, the_bounds_limit_what_is_drawn)
{
    c_skewed = true;
    expect_clock_choices("clock_offset=65536,clock_drift=65536,clock_jump=65536", 9, 17, 17);
    expect_clock_choices("clock_offset=65536,clock_drift=65536,clock_jump=65536,"
                         "clock_offset_max_ms=4,clock_drift_max_ppm=400,clock_jump_max_ms=3",
                         4, 7, 5);
}

/* A tighter drift bound never draws past it: lease_skew's stale read
 * needs the clocks to part by more than 0.2 % of the lease, which two
 * drifts of 800 ppm cannot, so seeds that find it find nothing then. */
LEAK_TEST(clocks, a_drift_bound_below_the_lease_margin_hides_the_stale_lease)
{
    const pl_scenario *sc = pl_scenario_find("bug_lease_skew");
    cr_assert_not_null(sc);
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_campaign_options co;
    pl_campaign_options_default(&co);
    co.seed_hi = 299;
    co.sim = &o;
    pl_campaign_result cr;
    cr_assert_eq(pl_sim_campaign(sc, &co, &cr), 0);
    cr_assert_eq(cr.first.kind, PL_FINDING_ASSERTION, "no stale read in 300 seeds");
    o.knobs = "clock_drift_max_ppm=800";
    cr_assert_eq(pl_sim_campaign(sc, &co, &cr), 0);
    cr_assert_eq(cr.findings, 0, "seed %llu: %s", (unsigned long long)cr.first_seed,
                 cr.first.message);
    cr_assert_eq(cr.runs, 300);
}

/* A seeded run with every clock decision taken replays from its record
 * to the same trace hash and the same readings. */
LEAK_TEST(clocks, a_skewed_run_replays)
{
    c_skewed = true;
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = "clock_offset=65536,clock_drift=65536,clock_jump=8192";
    o.seed = 3;
    pl_sim_result first;
    cr_assert_eq(pl_sim_run(&clocks_sc, &o, &first), 0);
    struct seen before = seen;
    const pl__run_record *rec = pl__sim_result_record(&first);
    cr_assert_gt(rec->deviated[PL_DECIDE_CLOCK_DRIFT], 0);
    o.source = PL_SIM_SOURCE_LIST;
    o.decisions = rec->decisions;
    o.decisions_len = rec->decisions_len;
    pl_sim_result again;
    cr_assert_eq(pl_sim_run(&clocks_sc, &o, &again), 0);
    cr_assert_eq(again.hash, first.hash);
    cr_assert_eq(memcmp(&before, &seen, sizeof seen), 0);
    pl_sim_result_free(&again);
    pl_sim_result_free(&first);
}

/* A replay file records a bound that is set and its replay draws from
 * the same steps: a reader that dropped the bound would offer 17 drifts
 * where the file's decisions say 7, and the replay would differ. */
LEAK_TEST(clocks, a_bounded_run_replays_from_its_file)
{
    const pl_scenario *sc = pl_scenario_find("bug_lease_skew");
    cr_assert_not_null(sc);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = "clock_drift=65536,clock_jump=8192,clock_drift_max_ppm=400,clock_jump_max_ms=2";
    o.seed = 5;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(sc, &o, &r), 0, "%s", r.finding.message);
    const pl__run_record *rec = pl__sim_result_record(&r);
    size_t drifts = 0;
    for (size_t i = 0; i < rec->decisions_len; i++) {
        const pl__dec_record *d = &rec->decisions[i];
        drifts += d->kind == PL_DECIDE_CLOCK_DRIFT && d->value != 0;
        cr_assert(d->kind != PL_DECIDE_CLOCK_DRIFT || d->n == 7, "drift from %u", d->n);
        cr_assert(d->kind != PL_DECIDE_CLOCK_JUMP || d->n == 5, "jump from %u", d->n);
    }
    cr_assert_gt(drifts, 0);
    char path[] = "/tmp/pollen-clocks-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(pl_sim_write_replay(sc, &o, &r, path), 0);
    char text[4096] = "";
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    pl_sim_result again;
    char err[512] = "";
    int rc = pl_sim_replay_file(path, &again, err, sizeof err);
    unlink(path);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_not_null(strstr(text, ",clock_drift_max_ppm=400,clock_jump_max_ms=2"), "%s", text);
    cr_assert_eq(again.hash, r.hash);
    pl_sim_result_free(&again);
    pl_sim_result_free(&r);
}

/* The zoo's lease between skewed clocks: a seed that finds the stale
 * read shrinks to the decisive drift, said in one line. */
LEAK_TEST(clocks, a_stale_lease_shrinks_to_one_drift)
{
    const pl_scenario *sc = pl_scenario_find("bug_lease_skew");
    cr_assert_not_null(sc);
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_sim_result r = {0};
    bool found = false;
    for (uint64_t seed = 0; seed < 500 && !found; seed++) {
        o.seed = seed;
        cr_assert_eq(pl_sim_run(sc, &o, &r), 0);
        found = r.finding.kind == PL_FINDING_ASSERTION;
        if (!found) {
            pl_sim_result_free(&r);
        }
    }
    cr_assert(found, "no stale read in 500 seeds");
    expect_shrunk(sc, &o, &r, 1, "clock runs ");
    pl_sim_result_free(&r);
}

/* ---- A skewed node's simulated threads read its clock ------------------ */

static struct thread_seen {
    pl_time start_now;  /* pl_thread_now at the thread's start */
    pl_time start_mono; /* clock_gettime(CLOCK_MONOTONIC) then */
    pl_time start_true;
    pl_time slept_true; /* the run's true time when pl_thread_sleep(NAP) returned */
    pl_time slept_now;
    pl_time timed_out_true; /* when a NAP-long timed wait on a semaphore gave up */
    int timed_rc;
} th_seen[2]; /* [0]: the scenario's thread, [1]: node a's */

static void *clock_thread_main(void *arg)
{
    struct thread_seen *t = arg;
    t->start_now = pl_thread_now();
    t->start_mono = read_clock(CLOCK_MONOTONIC);
    t->start_true = pl__sim_now(pl__sim_current());
    pl_thread_sleep(NAP);
    t->slept_true = pl__sim_now(pl__sim_current());
    t->slept_now = pl_thread_now();
    pl_thread_sem sem;
    cr_assert_eq(pl_thread_sem_init(&sem, 0), 0);
    t->timed_rc = pl_thread_sem_wait_until(&sem, t->slept_now + NAP);
    t->timed_out_true = pl__sim_now(pl__sim_current());
    pl_thread_sem_finish(&sem);
    return NULL;
}

static int spawn_clock_thread(struct thread_seen *t)
{
    pl_thread *th;
    int rc = pl_thread_spawn(&th, "clock", clock_thread_main, t);
    return rc != 0 ? rc : pl_thread_detach(th);
}

static int thread_node_boot(pl_executor *ex, void *ud)
{
    (void)ex;
    (void)ud;
    return spawn_clock_thread(&th_seen[1]);
}

static int thread_clocks_setup(pl_executor *ex, void *state)
{
    (void)state;
    memset(th_seen, 0, sizeof th_seen);
    const pl_node_def a = {
        .name = "a", .host = "10.0.0.1", .boot = thread_node_boot, .skewed = true};
    int rc = pl_sim_node_add(ex, &a);
    return rc != 0 ? rc : spawn_clock_thread(&th_seen[0]);
}

static const pl_scenario thread_clocks_sc = {.name = "thread_clocks",
                                             .setup = thread_clocks_setup};

/* A thread a node's code spawned reads the node's clock (pl_thread_now
 * and the C library's, one clock), and its sleeps and timed waits end
 * when that clock reaches their deadlines; the scenario's thread reads
 * the true clock. */
LEAK_TEST(clocks, a_nodes_threads_read_its_clock)
{
    pl_sim_options o;
    options_of(&o, skews, 2); /* a: 4 ms ahead, 6400 ppm fast */
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&thread_clocks_sc, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    const struct thread_seen *a = &th_seen[1], *plain = &th_seen[0];
    cr_assert_eq(a->start_now, reading(a->start_true, 4 * PL_MS, 6400));
    cr_assert_eq(a->start_mono, a->start_now);
    pl_time due = first_reaching(a->start_now + NAP, 4 * PL_MS, 6400);
    cr_assert_eq(a->slept_true, due, "%lld", (long long)a->slept_true);
    cr_assert_lt(a->slept_true - a->start_true, NAP - 600 * PL_US);
    cr_assert_eq(a->slept_now, reading(a->slept_true, 4 * PL_MS, 6400));
    cr_assert_eq(a->timed_rc, PL_ETIMEDOUT);
    cr_assert_eq(a->timed_out_true, first_reaching(a->slept_now + NAP, 4 * PL_MS, 6400));
    /* The scenario's own thread: the run's clock. */
    cr_assert_eq(plain->start_now, plain->start_true);
    cr_assert_eq(plain->slept_true, plain->start_true + NAP);
    cr_assert_eq(plain->timed_out_true, plain->slept_true + NAP);
    pl_sim_result_free(&r);
}
