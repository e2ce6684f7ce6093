/* tests/bench/threads.c: workload "threads", simulated threads
 * (pollen/thread.h).
 *
 *   switch: two threads hand a token back and forth N times through two
 *           semaphores (A: post(b), wait(a); B: wait(b), post(a)).
 *           Metric: ns_per_roundtrip, and switches_per_s (two thread
 *           switches per round trip). Under the simulator each switch
 *           is a fiber switch and every post and wait a schedule point.
 *   point:  one thread passes N schedule points (PL_SCHED_POINT) while
 *           the other waits on a semaphore: a point where nothing else
 *           can run keeps running without a decision. Metric:
 *           ns_per_point.
 *
 * No task: pl_run returns at once and the threads run to their end (the
 * simulator runs them after pl_run; the real backend's pthreads run
 * meanwhile); the check joins them and closes the region.
 */
#include <stdio.h>

#include <pollen/thread.h>

#include "bench.h"

#define THREADS_N_DEFAULT 200000u

typedef struct th_state {
    pl_thread_sem a, b;
    pl_thread *t1, *t2;
    uint64_t n;
    uint64_t rounds;
    bool points; /* the point workload, not the switch one */
} th_state;

static uint64_t th_n;

static void *switch_a(void *arg)
{
    th_state *st = arg;
    for (uint64_t i = 0; i < st->n; i++) {
        pl_thread_sem_post(&st->b);
        pl_thread_sem_wait(&st->a);
        st->rounds++;
    }
    return NULL;
}

static void *switch_b(void *arg)
{
    th_state *st = arg;
    for (uint64_t i = 0; i < st->n; i++) {
        pl_thread_sem_wait(&st->b);
        pl_thread_sem_post(&st->a);
    }
    return NULL;
}

static void *point_runner(void *arg)
{
    th_state *st = arg;
    for (uint64_t i = 0; i < st->n; i++) {
        PL_SCHED_POINT();
        st->rounds++;
    }
    pl_thread_sem_post(&st->b);
    return NULL;
}

static void *point_waiter(void *arg)
{
    th_state *st = arg;
    pl_thread_sem_wait(&st->b);
    return NULL;
}

static int th_setup(pl_executor *ex, th_state *st, bool points)
{
    st->n = th_n;
    st->points = points;
    int rc = pl_thread_sem_init(&st->a, 0);
    rc = rc != 0 ? rc : pl_thread_sem_init(&st->b, 0);
    if (rc != 0) {
        return rc;
    }
    bench_region_begin(ex);
    if (points) {
        rc = pl_thread_spawn(&st->t2, "waiter", point_waiter, st);
        return rc != 0 ? rc : pl_thread_spawn(&st->t1, "runner", point_runner, st);
    }
    rc = pl_thread_spawn(&st->t1, "a", switch_a, st);
    return rc != 0 ? rc : pl_thread_spawn(&st->t2, "b", switch_b, st);
}

static int switch_setup(pl_executor *ex, void *state) { return th_setup(ex, state, false); }
static int point_setup(pl_executor *ex, void *state) { return th_setup(ex, state, true); }

static int th_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    th_state *st = state;
    if (pl_thread_join(st->t1, NULL) != 0 || pl_thread_join(st->t2, NULL) != 0) {
        snprintf(msg, len, "join failed");
        return 1;
    }
    bench_region_end(ex);
    pl_thread_sem_finish(&st->a);
    pl_thread_sem_finish(&st->b);
    if (st->rounds != st->n) {
        snprintf(msg, len, "rounds %llu, want %llu", (unsigned long long)st->rounds,
                 (unsigned long long)st->n);
        return 1;
    }
    return 0;
}

static const pl_scenario switch_scenario = {
    .name = "threads",
    .summary = "two threads handing a token through semaphores",
    .state_size = sizeof(th_state),
    .setup = switch_setup,
    .check = th_check,
};

static const pl_scenario point_scenario = {
    .name = "threads",
    .summary = "one thread passing schedule points while another waits",
    .state_size = sizeof(th_state),
    .setup = point_setup,
    .check = th_check,
};

int bench_threads(uint64_t n, bool sim)
{
    th_n = n != 0 ? n : THREADS_N_DEFAULT;
    bench_mode mode = {sim, 1, 1000000};
    bench_region r;
    if (bench_execute(&switch_scenario, &mode, &r) != 0) {
        return 1;
    }
    char extra[64];
    snprintf(extra, sizeof extra, "n=%llu", (unsigned long long)th_n);
    double ns = (double)bench_region_ns(&r);
    bench_line("threads", sim, "ns_per_roundtrip", ns / (double)th_n, 1, "ns", extra);
    bench_line("threads", sim, "switches_per_s", 2.0 * (double)th_n / (ns / 1e9), 0, "switches",
               extra);
    bench_work_lines("threads", sim, &r, "roundtrip", th_n);
    uint64_t points = th_n * 10;
    th_n = points;
    if (bench_execute(&point_scenario, &mode, &r) != 0) {
        return 1;
    }
    snprintf(extra, sizeof extra, "n=%llu", (unsigned long long)points);
    bench_line("threads", sim, "ns_per_point", (double)bench_region_ns(&r) / (double)points, 2,
               "ns", extra);
    return 0;
}
