/* tests/bench/outbox.c: workload 4, the outbox relay (simulator only).
 *
 *   worker:   loop { await signal.notified();
 *                    while (pop(&x)) { relayed++; sum += x; }
 *                    if (done) break; }
 *   listener: start = now();
 *             for k in 1..=ITEMS { sleep_until(start + k*1ms); push(k);
 *                                  signal.notify_one(); }
 *             done = true; signal.notify_waiters();
 *
 * Main spawns 4 workers then the listener and joins all five. One run is
 * ITEMS items (10 s of virtual time); RUNS runs with seeds 1..RUNS.
 * Metrics: ns_per_item = median region / ITEMS, and runs_per_sec = 1 /
 * median whole pl_sim_run (what a campaign achieves: simulator set-up,
 * oracles at the end and the result record included).
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#define OUTBOX_ITEMS_DEFAULT 10000u
#define OUTBOX_RUNS 20
#define OUTBOX_WORKERS 4

typedef struct outbox_state {
    uint64_t *fifo; /* holds every item at most once: never wraps */
    uint64_t head;
    uint64_t tail;
    uint64_t items;
    pl_notify signal;
    bool done;
    uint64_t relayed;
    uint64_t sum;
    int rc;
} outbox_state;

static uint64_t outbox_items;

static void outbox_push(outbox_state *st, uint64_t x) { st->fifo[st->tail++] = x; }

static bool outbox_pop(outbox_state *st, uint64_t *x)
{
    if (st->head == st->tail) {
        return false;
    }
    *x = st->fifo[st->head++];
    return true;
}

typedef struct worker {
    pl_future base;
    outbox_state *st;
    pl_notified wait;
} worker;

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *self = (worker *)f;
    outbox_state *st = self->st;
    uint64_t x;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->wait = pl_notified_make(&self->st->signal);
        PL_AWAIT(cx, &self->wait);
        while (outbox_pop(st, &x)) {
            st->relayed++;
            st->sum += x;
        }
        if (st->done) {
            break;
        }
    }
    PL_ASYNC_END;
}

static const pl_future_vtable worker_vtable = {"worker", worker_poll, NULL};

typedef struct listener {
    pl_future base;
    outbox_state *st;
    pl_time start_ns;
    uint64_t k;
    pl_sleep sleep;
} listener;

static pl_poll_result listener_poll(pl_future *f, pl_context *cx)
{
    listener *self = (listener *)f;
    outbox_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    self->start_ns = pl_now(cx->ex);
    for (self->k = 1; self->k <= self->st->items; self->k++) {
        self->sleep = pl_sleep_until(self->start_ns + (pl_time)self->k * PL_MS);
        PL_AWAIT(cx, &self->sleep);
        outbox_push(st, self->k);
        pl_notify_one(&st->signal);
    }
    st->done = true;
    pl_notify_waiters(&st->signal);
    PL_ASYNC_END;
}

static const pl_future_vtable listener_vtable = {"listener", listener_poll, NULL};

typedef struct outbox_main {
    pl_future base;
    outbox_state *st;
    pl_task *tasks[OUTBOX_WORKERS + 1];
    int i;
    pl_join join;
} outbox_main;

static int spawn_relay(pl_executor *ex, outbox_main *m)
{
    int rc = 0;
    for (int i = 0; i < OUTBOX_WORKERS && rc == 0; i++) {
        worker w = {.base = PL_FUTURE_INIT(&worker_vtable), .st = m->st};
        rc = PL_SPAWN(ex, w, "worker", &m->tasks[i]);
    }
    if (rc == 0) {
        listener l = {.base = PL_FUTURE_INIT(&listener_vtable), .st = m->st};
        rc = PL_SPAWN(ex, l, "listener", &m->tasks[OUTBOX_WORKERS]);
    }
    return rc;
}

static pl_poll_result outbox_main_poll(pl_future *f, pl_context *cx)
{
    outbox_main *self = (outbox_main *)f;
    PL_ASYNC_BEGIN(self);
    self->st->rc = spawn_relay(cx->ex, self);
    if (self->st->rc != 0) {
        return PL_READY; /* out of memory: the check reports it */
    }
    for (self->i = 0; self->i <= OUTBOX_WORKERS; self->i++) {
        self->join = pl_join_make(self->tasks[self->i]);
        PL_AWAIT(cx, &self->join);
    }
    bench_region_end(cx->ex);
    for (int i = 0; i <= OUTBOX_WORKERS; i++) {
        pl_task_release(self->tasks[i]);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable outbox_main_vtable = {"main", outbox_main_poll, NULL};

static int outbox_setup(pl_executor *ex, void *state)
{
    outbox_state *st = state;
    st->items = outbox_items;
    st->fifo = malloc(st->items * sizeof *st->fifo);
    if (st->fifo == NULL) {
        return PL_ENOMEM;
    }
    pl_notify_init(&st->signal);
    outbox_main m = {.base = PL_FUTURE_INIT(&outbox_main_vtable), .st = st};
    bench_region_begin(ex);
    return PL_SPAWN(ex, m, "main", NULL);
}

static int outbox_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const outbox_state *st = state;
    uint64_t want = st->items * (st->items + 1) / 2;
    if (st->rc != 0 || st->relayed != st->items || st->sum != want) {
        snprintf(msg, len, "%s: relayed %llu of %llu items, sum %llu, want %llu",
                 pl_strerror(st->rc), (unsigned long long)st->relayed,
                 (unsigned long long)st->items, (unsigned long long)st->sum,
                 (unsigned long long)want);
        return 1;
    }
    return 0;
}

static void outbox_teardown(void *state)
{
    outbox_state *st = state;
    free(st->fifo);
    st->fifo = NULL;
}

static const pl_scenario outbox_scenario = {
    .name = "outbox",
    .summary = "4 workers relaying one item per virtual ms",
    .state_size = sizeof(outbox_state),
    .setup = outbox_setup,
    .check = outbox_check,
    .teardown = outbox_teardown,
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Median of v[0, n) (sorts v). */
static double median_u64(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_u64);
    return n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2;
}

static void outbox_report(uint64_t *region_ns, uint64_t *whole_ns, uint64_t *virtual_ns)
{
    char extra[128];
    snprintf(extra, sizeof extra, "items=%llu runs=%d virtual_s_per_run=%.3f",
             (unsigned long long)outbox_items, OUTBOX_RUNS,
             median_u64(virtual_ns, OUTBOX_RUNS) / (double)PL_S);
    double region = median_u64(region_ns, OUTBOX_RUNS);
    double whole = median_u64(whole_ns, OUTBOX_RUNS);
    bench_line("outbox", true, "ns_per_item", region / (double)outbox_items, 1, "ns", extra);
    bench_line("outbox", true, "runs_per_sec", 1e9 / whole, 1, "runs/s", extra);
}

int bench_outbox(uint64_t n, bool sim)
{
    if (!sim) {
        bench_fail("outbox", "runs under the simulator only (tests/bench/README.md): add --sim");
        return 1;
    }
    outbox_items = n != 0 ? n : OUTBOX_ITEMS_DEFAULT;
    uint64_t region_ns[OUTBOX_RUNS];
    uint64_t whole_ns[OUTBOX_RUNS];
    uint64_t virtual_ns[OUTBOX_RUNS];
    bench_region all = {0}; /* the work of every run, summed */
    for (int i = 0; i < OUTBOX_RUNS; i++) {
        /* Time passes every item: the bound covers one instant's polls. */
        bench_mode mode = {true, (uint64_t)i + 1, 1000000};
        bench_region r;
        uint64_t t0 = bench_clock_ns();
        if (bench_execute(&outbox_scenario, &mode, &r) != 0) {
            return 1;
        }
        whole_ns[i] = bench_clock_ns() - t0;
        region_ns[i] = bench_region_ns(&r);
        virtual_ns[i] = (uint64_t)(r.now1_ns - r.now0_ns);
        all.polls += r.polls;
        all.events += r.events;
        all.decisions += r.decisions;
    }
    outbox_report(region_ns, whole_ns, virtual_ns);
    bench_work_lines("outbox", true, &all, "item", outbox_items * OUTBOX_RUNS);
    return 0;
}
