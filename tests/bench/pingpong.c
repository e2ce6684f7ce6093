/* tests/bench/pingpong.c: workload 1, two tasks bouncing notifications.
 *
 *   ping: N times { B.notify_one(); await A.notified(); }
 *   pong: N times { await B.notified(); A.notify_one(); }
 *
 * Main spawns both and joins both. Metric: ns_per_roundtrip.
 */
#include <stdio.h>

#include "bench.h"

#define PINGPONG_N_DEFAULT 2000000u

typedef struct pp_state {
    pl_notify a;
    pl_notify b;
    uint64_t n;
    uint64_t ping_rounds; /* completed rounds, checked at the end */
    uint64_t pong_rounds;
} pp_state;

static uint64_t pp_n; /* the run's N: setup reads it */

/* One side of the exchange: `give` is notified, `take` awaited (ping), or
 * the other way round (pong: await first). */
typedef struct pp_side {
    pl_future base;
    pp_state *st;
    uint64_t i;
    pl_notified wait;
} pp_side;

static pl_poll_result ping_poll(pl_future *f, pl_context *cx)
{
    pp_side *self = (pp_side *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < self->st->n; self->i++) {
        pl_notify_one(&self->st->b);
        self->wait = pl_notified_make(&self->st->a);
        PL_AWAIT(cx, &self->wait);
        self->st->ping_rounds++;
    }
    PL_ASYNC_END;
}

static pl_poll_result pong_poll(pl_future *f, pl_context *cx)
{
    pp_side *self = (pp_side *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < self->st->n; self->i++) {
        self->wait = pl_notified_make(&self->st->b);
        PL_AWAIT(cx, &self->wait);
        pl_notify_one(&self->st->a);
        self->st->pong_rounds++;
    }
    PL_ASYNC_END;
}

static const pl_future_vtable ping_vtable = {"ping", ping_poll, NULL};
static const pl_future_vtable pong_vtable = {"pong", pong_poll, NULL};

typedef struct pp_main {
    pl_future base;
    pp_state *st;
    pl_task *ping;
    pl_task *pong;
    pl_join join;
    int rc;
} pp_main;

static int spawn_side(pl_executor *ex, pp_state *st, const pl_future_vtable *vt,
                      pl_task **handle)
{
    pp_side side = {.base = PL_FUTURE_INIT(vt), .st = st};
    return PL_SPAWN(ex, side, vt->name, handle);
}

static pl_poll_result pp_main_poll(pl_future *f, pl_context *cx)
{
    pp_main *self = (pp_main *)f;
    PL_ASYNC_BEGIN(self);
    self->rc = spawn_side(cx->ex, self->st, &ping_vtable, &self->ping);
    if (self->rc == 0) {
        self->rc = spawn_side(cx->ex, self->st, &pong_vtable, &self->pong);
    }
    if (self->rc != 0) {
        return PL_READY; /* out of memory: the check reports it */
    }
    self->join = pl_join_make(self->ping);
    PL_AWAIT(cx, &self->join);
    self->join = pl_join_make(self->pong);
    PL_AWAIT(cx, &self->join);
    bench_region_end(cx->ex);
    pl_task_release(self->ping);
    pl_task_release(self->pong);
    PL_ASYNC_END;
}

static const pl_future_vtable pp_main_vtable = {"main", pp_main_poll, NULL};

static int pp_setup(pl_executor *ex, void *state)
{
    pp_state *st = state;
    pl_notify_init(&st->a);
    pl_notify_init(&st->b);
    st->n = pp_n;
    pp_main m = {.base = PL_FUTURE_INIT(&pp_main_vtable), .st = st};
    bench_region_begin(ex);
    return PL_SPAWN(ex, m, "main", NULL);
}

static int pp_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const pp_state *st = state;
    if (st->ping_rounds != st->n || st->pong_rounds != st->n) {
        snprintf(msg, len, "rounds: ping %llu, pong %llu, want %llu",
                 (unsigned long long)st->ping_rounds, (unsigned long long)st->pong_rounds,
                 (unsigned long long)st->n);
        return 1;
    }
    return 0;
}

static const pl_scenario pp_scenario = {
    .name = "pingpong",
    .summary = "two tasks bouncing notify_one",
    .state_size = sizeof(pp_state),
    .setup = pp_setup,
    .check = pp_check,
};

int bench_pingpong(uint64_t n, bool sim)
{
    pp_n = n != 0 ? n : PINGPONG_N_DEFAULT;
    /* Two polls per round trip with no virtual time passing: the livelock
     * bound must allow them, with room for spurious wakes. */
    bench_mode mode = {sim, 1, 4 * pp_n + 1000000};
    bench_region r;
    if (bench_execute(&pp_scenario, &mode, &r) != 0) {
        return 1;
    }
    char extra[64];
    snprintf(extra, sizeof extra, "n=%llu", (unsigned long long)pp_n);
    bench_line("pingpong", sim, "ns_per_roundtrip", (double)bench_region_ns(&r) / (double)pp_n,
               1, "ns", extra);
    bench_work_lines("pingpong", sim, &r, "roundtrip", pp_n);
    return 0;
}
