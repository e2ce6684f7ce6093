/* tests/bench/timers.c: workload 3, N tasks each sleeping d_i.
 *
 * Task i sleeps d_i milliseconds then completes; main spawns all and
 * joins all in order. d_i comes from the specified 64-bit LCG (seed 42),
 * generated before the region. Under the simulator the virtual clock
 * jumps from deadline to deadline; on the real backend the run lasts the
 * longest d_i of wall time, so its figure is bounded by the clock
 * (the specification sets no real-backend goal for it).
 * Metrics: ns_per_timer, rss_per_timer.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#define TIMERS_N_DEFAULT 1000000u

/* The specification's check values for the default N. */
#define TIMERS_SUM_DEFAULT 500460715u

typedef struct timers_state {
    uint64_t n;
    uint16_t *d_ms;    /* input: d_i, generated before the region */
    pl_task **handles; /* input storage */
    uint64_t joined;
    int rc;
} timers_state;

static uint64_t timers_n;
static uint16_t *timers_d; /* shared with setup; owned by bench_timers */

/* d_i = 1 + ((x >> 33) % 1000) after each step of the LCG seeded with 42. */
static uint64_t lcg_durations(uint16_t *d, uint64_t n)
{
    uint64_t x = 42;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        d[i] = (uint16_t)(1 + ((x >> 33) % 1000));
        sum += d[i];
    }
    return sum;
}

/* The first values are fixed by the specification; so is the sum for N = 1e6. */
static int check_durations(const uint16_t *d, uint64_t n, uint64_t sum)
{
    static const uint16_t first[5] = {335, 27, 539, 504, 295};
    for (uint64_t i = 0; i < n && i < 5; i++) {
        if (d[i] != first[i]) {
            bench_fail("timers", "d_%llu = %u, the specification says %u", (unsigned long long)i, d[i],
                       first[i]);
            return -1;
        }
    }
    if (n == TIMERS_N_DEFAULT && sum != TIMERS_SUM_DEFAULT) {
        bench_fail("timers", "sum of d_i = %llu, the specification says %u", (unsigned long long)sum,
                   TIMERS_SUM_DEFAULT);
        return -1;
    }
    return 0;
}

typedef struct sleeper {
    pl_future base;
    pl_sleep sleep;
} sleeper;

static pl_poll_result sleeper_poll(pl_future *f, pl_context *cx)
{
    sleeper *self = (sleeper *)f;
    PL_ASYNC_BEGIN(self);
    PL_AWAIT(cx, &self->sleep);
    PL_ASYNC_END;
}

static const pl_future_vtable sleeper_vtable = {"sleeper", sleeper_poll, NULL};

typedef struct timers_main {
    pl_future base;
    timers_state *st;
    uint64_t i;
    pl_join join;
} timers_main;

static int spawn_sleepers(pl_executor *ex, timers_state *st)
{
    for (uint64_t i = 0; i < st->n; i++) {
        sleeper s = {PL_FUTURE_INIT(&sleeper_vtable), pl_sleep_for(st->d_ms[i] * PL_MS)};
        int rc = PL_SPAWN(ex, s, "sleeper", &st->handles[i]);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static pl_poll_result timers_main_poll(pl_future *f, pl_context *cx)
{
    timers_main *self = (timers_main *)f;
    timers_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    st->rc = spawn_sleepers(cx->ex, st);
    if (st->rc != 0) {
        return PL_READY; /* out of memory: the check reports it */
    }
    for (self->i = 0; self->i < self->st->n; self->i++) {
        self->join = pl_join_make(self->st->handles[self->i]);
        PL_AWAIT(cx, &self->join);
        self->st->joined += self->join.result == 0;
    }
    bench_region_end(cx->ex);
    for (uint64_t i = 0; i < st->n; i++) {
        pl_task_release(st->handles[i]);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable timers_main_vtable = {"main", timers_main_poll, NULL};

static int timers_setup(pl_executor *ex, void *state)
{
    timers_state *st = state;
    st->n = timers_n;
    st->d_ms = timers_d;
    st->handles = calloc(st->n, sizeof *st->handles);
    if (st->handles == NULL) {
        return PL_ENOMEM;
    }
    timers_main m = {.base = PL_FUTURE_INIT(&timers_main_vtable), .st = st};
    bench_region_begin(ex);
    return PL_SPAWN(ex, m, "main", NULL);
}

static int timers_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const timers_state *st = state;
    if (st->rc != 0 || st->joined != st->n) {
        snprintf(msg, len, "%s: joined %llu of %llu tasks", pl_strerror(st->rc),
                 (unsigned long long)st->joined, (unsigned long long)st->n);
        return 1;
    }
    return 0;
}

static void timers_teardown(void *state)
{
    timers_state *st = state;
    free(st->handles);
    st->handles = NULL;
}

static const pl_scenario timers_scenario = {
    .name = "timers",
    .summary = "N tasks sleeping pseudo-random durations",
    .state_size = sizeof(timers_state),
    .setup = timers_setup,
    .check = timers_check,
    .teardown = timers_teardown,
};

static void timers_report(const bench_region *r, bool sim, uint64_t sum)
{
    char extra[128];
    snprintf(extra, sizeof extra, "n=%llu sum=%llu clock_elapsed_ms=%.1f",
             (unsigned long long)timers_n, (unsigned long long)sum,
             (double)(r->now1_ns - r->now0_ns) / (double)PL_MS);
    bench_line("timers", sim, "ns_per_timer", (double)bench_region_ns(r) / (double)timers_n, 1,
               "ns", extra);
    snprintf(extra, sizeof extra, "n=%llu sum=%llu", (unsigned long long)timers_n,
             (unsigned long long)sum);
    bench_line("timers", sim, "rss_per_timer", bench_rss_per(r, timers_n), 1, "B", extra);
}

int bench_timers(uint64_t n, bool sim)
{
    timers_n = n != 0 ? n : TIMERS_N_DEFAULT;
    timers_d = malloc(timers_n * sizeof *timers_d);
    if (timers_d == NULL) {
        bench_fail("timers", "out of memory for the durations");
        return 1;
    }
    uint64_t sum = lcg_durations(timers_d, timers_n);
    int rc = check_durations(timers_d, timers_n, sum);
    /* Virtual time passes at every deadline, so the livelock bound only
     * has to cover the polls of one instant: all N tasks at start. */
    bench_mode mode = {sim, 1, 4 * timers_n + 1000000};
    bench_region r;
    if (rc == 0) {
        rc = bench_execute(&timers_scenario, &mode, &r);
    }
    if (rc == 0) {
        timers_report(&r, sim, sum);
        bench_work_lines("timers", sim, &r, "timer", timers_n);
    }
    free(timers_d);
    timers_d = NULL;
    return rc == 0 ? 0 : 1;
}
