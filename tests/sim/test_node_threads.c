/* tests/sim/test_node_threads.c: a node's simulated threads stop with its
 * pause and its crash (pollen/sim_node.h, threads/sched.c).
 *
 * Two nodes, "a" and "b", each boot a thread that ticks: every TICK of
 * pl_thread_sleep it logs the time. A thread of the scenario joins a's
 * first ticker. The scenario's chaos task (thread 0) pauses or crashes
 * "a" at 2 ms, as each test plans, and reads the logs at times inside
 * and after the fault. */
#include <criterion/criterion.h>
#include <string.h>

#include <pollen/sim.h>
#include <pollen/sim_node.h>
#include <pollen/thread.h>

#include "leakcheck.h"
#include "sim_internal.h"

TestSuite(node_threads, .fini = pl_test_leak_check);

#define QUIET                                                                                      \
    "timer_late=off,io_fault=off,io_latency=off,link_latency=off,link_loss=off,link_dup=off,"     \
    "link_reorder=off,partition=off,clog=off,spurious_wake=off"

enum { TICKS = 60, SEEDS = 4 };
#define TICK    (100 * PL_US)
#define FAULT   (2 * PL_MS)
#define PAUSE   (5 * PL_MS)
#define RESTART (4 * PL_MS)

static struct plan {
    pl_time pause_ns; /* chaos pauses "a" at FAULT for so long (0: no pause) */
    bool crash;       /* chaos crashes "a" at FAULT and restarts it at RESTART */
} plan;

/* One ticker's log. [0]: a's first boot, [1]: a's restart, [2]: b's. */
typedef struct tick_log {
    uint32_t id; /* its pl_thread_id */
    bool hold;   /* holds held_lock from its start, never releasing it */
    int n;
    pl_time at[TICKS];
} tick_log;

enum { READS = 4 };

static struct seen {
    tick_log log[3];
    int boots;
    pl_thread *first;   /* a's first ticker, joined by the scenario's joiner */
    pl_thread *sleeper; /* a's first long sleeper, joined by chaos after the crash */
    int join_rc, late_join_rc;
    pl_time joined_at;
    int a_read[READS], b_read[READS]; /* the counts at FAULT, 3 ms, 6 ms, 10 ms */
    bool killed, stack_gone;          /* a's first ticker's record at 3 ms */
} seen;

static const pl_time read_at[READS] = {FAULT, 3 * PL_MS, 6 * PL_MS, 10 * PL_MS};

static pl_thread_mutex held_lock = PL_THREAD_MUTEX_INIT;

/* ---- The nodes --------------------------------------------------------------- */

static void *ticker_main(void *arg)
{
    tick_log *log = arg;
    log->id = pl_thread_id();
    if (log->hold) {
        pl_thread_mutex_lock(&held_lock);
    }
    while (log->n < TICKS) {
        pl_thread_sleep(TICK);
        log->at[log->n++] = pl_thread_now();
    }
    if (log->hold) {
        pl_thread_mutex_unlock(&held_lock);
    }
    return log;
}

static void *sleeper_main(void *arg)
{
    (void)arg;
    pl_thread_sleep(PL_S);
    return NULL;
}

static int a_boot(pl_executor *ex, void *ud)
{
    (void)ex;
    (void)ud;
    if (seen.boots++ > 0) {
        pl_thread *t;
        int rc = pl_thread_spawn(&t, "ticker", ticker_main, &seen.log[1]);
        return rc != 0 ? rc : pl_thread_detach(t);
    }
    seen.log[0].hold = plan.crash;
    int rc = pl_thread_spawn(&seen.first, "ticker", ticker_main, &seen.log[0]);
    if (rc == 0 && plan.crash) {
        rc = pl_thread_spawn(&seen.sleeper, "sleeper", sleeper_main, NULL);
    }
    return rc;
}

static int b_boot(pl_executor *ex, void *ud)
{
    (void)ex;
    (void)ud;
    pl_thread *t;
    int rc = pl_thread_spawn(&t, "ticker", ticker_main, &seen.log[2]);
    return rc != 0 ? rc : pl_thread_detach(t);
}

/* ---- The scenario ------------------------------------------------------------- */

static void *joiner_main(void *arg)
{
    (void)arg;
    void *ret = &seen;
    seen.join_rc = pl_thread_join(seen.first, &ret);
    seen.joined_at = pl_thread_now();
    cr_assert_eq(ret, seen.join_rc == 0 ? (void *)&seen.log[0] : NULL);
    return NULL;
}

typedef struct chaos {
    pl_future base;
    int next;  /* the next read */
    pl_time t; /* the time slept until (kept across the awaits) */
    pl_sleep nap;
} chaos;

static void fault(pl_time now)
{
    if (now == FAULT && plan.pause_ns != 0) {
        cr_assert_eq(pl_sim_node_pause("a", plan.pause_ns), 0);
    }
    if (now == FAULT && plan.crash) {
        cr_assert_eq(pl_sim_node_crash("a"), 0);
    }
    if (now == 3 * PL_MS && plan.crash) {
        pl__sim *s = pl__sim_current();
        const pl__thread_rec *r = s->threads.t[seen.log[0].id];
        seen.killed = r->state == PL__TH_KILLED;
        seen.stack_gone = r->fiber.map == NULL;
        /* Thread 0 joins a killed thread: no wait for good. */
        seen.late_join_rc = pl_thread_join(seen.sleeper, NULL);
    }
    if (now == RESTART && plan.crash) {
        cr_assert_eq(pl_sim_node_restart("a"), 0);
    }
}

static pl_poll_result chaos_poll(pl_future *f, pl_context *cx)
{
    chaos *self = (chaos *)f;
    PL_ASYNC_BEGIN(self);
    for (self->t = FAULT; self->t <= read_at[READS - 1]; self->t += PL_MS) {
        self->nap = pl_sleep_until(self->t);
        PL_AWAIT(cx, &self->nap);
        fault(self->t);
        if (self->next < READS && read_at[self->next] == self->t) {
            seen.a_read[self->next] = seen.log[0].n;
            seen.b_read[self->next] = seen.log[2].n;
            self->next++;
        }
    }
    PL_ASYNC_END;
}

static void chaos_drop(pl_future *f) { pl_drop_child(&((chaos *)f)->nap.base); }

static const pl_future_vtable chaos_vt = {"chaos", chaos_poll, chaos_drop};

static int setup(pl_executor *ex, void *state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    pl_node_def a = {.name = "a", .host = "10.0.0.1", .boot = a_boot};
    pl_node_def b = {.name = "b", .host = "10.0.0.2", .boot = b_boot};
    int rc = pl_sim_node_add(ex, &a);
    rc = rc != 0 ? rc : pl_sim_node_add(ex, &b);
    pl_thread *joiner;
    rc = rc != 0 ? rc : pl_thread_spawn(&joiner, "joiner", joiner_main, NULL);
    rc = rc != 0 ? rc : pl_thread_detach(joiner);
    chaos c = {.base = PL_FUTURE_INIT(&chaos_vt)};
    return rc != 0 ? rc : PL_SPAWN(ex, c, "chaos", NULL);
}

/* A mutex a killed thread held died with its node: finishing it is no
 * misuse. */
static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    (void)state;
    (void)msg;
    (void)len;
    pl_thread_mutex_finish(&held_lock);
    return 0;
}

static const pl_scenario node_threads_sc = {
    .name = "node_threads", .setup = setup, .check = check};

static void run(uint64_t seed)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = QUIET;
    o.seed = seed;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&node_threads_sc, &o, &r), 0, "%s", r.finding.message);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "seed %llu: %s: %s", (unsigned long long)seed,
                 pl_finding_name(r.finding.kind), r.finding.message);
    pl_sim_result_free(&r);
}

/* The first tick of log at or after t (TICKS: none). */
static int tick_from(const tick_log *log, pl_time t)
{
    int i = 0;
    while (i < log->n && log->at[i] < t) {
        i++;
    }
    return i;
}

/* ---- Tests ------------------------------------------------------------------- */

/* While "a" is paused its thread does not tick; its sleep that fell due
 * meanwhile ends at the resume, and it ticks on to its end. b's thread
 * and the scenario's task run all along. */
LEAK_TEST(node_threads, a_paused_nodes_thread_waits_for_the_resume)
{
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        plan = (struct plan){.pause_ns = PAUSE};
        run(seed);
        const tick_log *a = &seen.log[0];
        int at_fault = seen.a_read[0];
        cr_assert_gt(at_fault, 0);
        cr_assert_eq(seen.a_read[1], at_fault, "a ticked while paused (3 ms)");
        cr_assert_eq(seen.a_read[2], at_fault, "a ticked while paused (6 ms)");
        cr_assert_gt(seen.a_read[3], at_fault, "a never resumed");
        cr_assert_gt(seen.b_read[2], seen.b_read[0], "b stopped with a");
        int first = tick_from(a, FAULT + 1);
        cr_assert_eq(a->at[first], FAULT + PAUSE, "the due sleep ended at %lld, not the resume",
                     (long long)a->at[first]);
        cr_assert_eq(a->n, TICKS);
        cr_assert_eq(seen.join_rc, 0);
        cr_assert_eq(seen.log[2].n, TICKS);
    }
}

/* A crash kills a's threads where they stand: they never tick again,
 * their stacks go, joins of them end with PL_ECANCELED (one waiting then,
 * one made later), the mutex one held dies with the node, and the
 * restarted node's new thread runs. */
LEAK_TEST(node_threads, a_crashed_nodes_threads_never_run_again)
{
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        plan = (struct plan){.crash = true};
        run(seed);
        int at_fault = seen.a_read[0];
        cr_assert_gt(at_fault, 0);
        cr_assert_eq(seen.log[0].n, at_fault, "a's killed thread ticked after the crash");
        cr_assert(seen.killed);
        cr_assert(seen.stack_gone, "the killed thread's stack was kept");
        cr_assert_eq(seen.join_rc, PL_ECANCELED);
        cr_assert_eq(seen.joined_at, FAULT);
        cr_assert_eq(seen.late_join_rc, PL_ECANCELED);
        cr_assert_gt(seen.b_read[1], seen.b_read[0], "b stopped with a");
        cr_assert_eq(seen.log[2].n, TICKS);
        cr_assert_eq(seen.boots, 2);
        cr_assert_eq(seen.log[1].n, TICKS, "the restarted node's thread did not run");
        cr_assert_geq(seen.log[1].at[0], RESTART + TICK);
    }
}

/* A node paused past the run's end keeps its threads stopped: no
 * deadlock finding (a process stopped for good is killed with the run). */
LEAK_TEST(node_threads, a_pause_past_the_end_is_no_deadlock)
{
    plan = (struct plan){.pause_ns = PL_TIME_NEVER};
    run(0);
    cr_assert_eq(seen.log[0].n, seen.a_read[0]);
    cr_assert_eq(seen.log[2].n, TICKS);
}
