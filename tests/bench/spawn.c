/* tests/bench/spawn.c: workload 2, N tasks parked on a gate.
 *
 * Each task: parked += 1; while (!open) await gate; return.
 * Main: spawn N keeping N handles; yield until parked == N; open = true;
 * notify_waiters(); join every handle in spawn order.
 * Metrics: ns_per_task, rss_per_task.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#define SPAWN_N_DEFAULT 1000000u

typedef struct gate {
    bool open;
    uint64_t parked;
    pl_notify notify; /* broadcast with pl_notify_waiters */
} gate;

typedef struct spawn_state {
    gate gate;
    uint64_t n;
    pl_task **handles; /* input storage, allocated before the region */
    uint64_t joined;
    int rc;
} spawn_state;

static uint64_t spawn_n;

typedef struct gate_task {
    pl_future base;
    gate *gate;
    pl_notified wait;
} gate_task;

static pl_poll_result gate_task_poll(pl_future *f, pl_context *cx)
{
    gate_task *self = (gate_task *)f;
    PL_ASYNC_BEGIN(self);
    self->gate->parked++;
    while (!self->gate->open) {
        self->wait = pl_notified_make(&self->gate->notify);
        PL_AWAIT(cx, &self->wait);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable gate_task_vtable = {"gated", gate_task_poll, NULL};

typedef struct spawn_main {
    pl_future base;
    spawn_state *st;
    uint64_t i;
    pl_join join;
} spawn_main;

static int spawn_all(pl_executor *ex, spawn_state *st)
{
    for (uint64_t i = 0; i < st->n; i++) {
        gate_task t = {.base = PL_FUTURE_INIT(&gate_task_vtable), .gate = &st->gate};
        int rc = PL_SPAWN(ex, t, "gated", &st->handles[i]);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static pl_poll_result spawn_main_poll(pl_future *f, pl_context *cx)
{
    spawn_main *self = (spawn_main *)f;
    spawn_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    st->rc = spawn_all(cx->ex, st);
    if (st->rc != 0) {
        return PL_READY; /* out of memory: the check reports it */
    }
    while (st->gate.parked < st->n) {
        PL_YIELD(cx);
    }
    st->gate.open = true;
    pl_notify_waiters(&st->gate.notify);
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

static const pl_future_vtable spawn_main_vtable = {"main", spawn_main_poll, NULL};

static int spawn_setup(pl_executor *ex, void *state)
{
    spawn_state *st = state;
    pl_notify_init(&st->gate.notify);
    st->n = spawn_n;
    st->handles = calloc(st->n, sizeof *st->handles);
    if (st->handles == NULL) {
        return PL_ENOMEM;
    }
    spawn_main m = {.base = PL_FUTURE_INIT(&spawn_main_vtable), .st = st};
    bench_region_begin(ex);
    return PL_SPAWN(ex, m, "main", NULL);
}

static int spawn_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const spawn_state *st = state;
    if (st->rc != 0 || st->joined != st->n) {
        snprintf(msg, len, "%s: joined %llu of %llu tasks", pl_strerror(st->rc),
                 (unsigned long long)st->joined, (unsigned long long)st->n);
        return 1;
    }
    return 0;
}

static void spawn_teardown(void *state)
{
    spawn_state *st = state;
    free(st->handles);
    st->handles = NULL;
}

static const pl_scenario spawn_scenario = {
    .name = "spawn",
    .summary = "N tasks parked on a gate, then released and joined",
    .state_size = sizeof(spawn_state),
    .setup = spawn_setup,
    .check = spawn_check,
    .teardown = spawn_teardown,
};

int bench_spawn(uint64_t n, bool sim)
{
    spawn_n = n != 0 ? n : SPAWN_N_DEFAULT;
    /* About two polls per task, main's yields and spurious wakes on top. */
    bench_mode mode = {sim, 1, 4 * spawn_n + 1000000};
    bench_region r;
    if (bench_execute(&spawn_scenario, &mode, &r) != 0) {
        return 1;
    }
    char extra[64];
    snprintf(extra, sizeof extra, "n=%llu", (unsigned long long)spawn_n);
    bench_line("spawn", sim, "ns_per_task", (double)bench_region_ns(&r) / (double)spawn_n, 1,
               "ns", extra);
    bench_line("spawn", sim, "rss_per_task", bench_rss_per(&r, spawn_n), 1, "B", extra);
    bench_work_lines("spawn", sim, &r, "task", spawn_n);
    return 0;
}
