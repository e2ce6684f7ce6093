/* Zoo: timers that are a task's normal path, not a rescue (three fixed twins, no bug).
 *
 * The oracle of deadlocks a timer hides (a task waits on a notify whose
 * broadcast it missed, and the one timer left rescues it) must stay
 * silent where the timer is simply what the task waits for. These three
 * programs time out, tick and idle on purpose; each has only a fixed
 * twin:
 *
 * fix_idle_select: a worker waits in pl_select(notified, 4 ms idle
 *   timeout): a job's broadcast wakes it, the timeout counts an idle
 *   period; it exits after three idle periods in a row once the producer
 *   is done. The jobs come while it waits (linked), so no broadcast is
 *   missed, and its idle timeouts, the only timers left at the end, are
 *   its normal path.
 * fix_shutdown_never: a service waits in pl_select(notified(shutdown),
 *   5 ms housekeeping tick) and exits after five rounds of housekeeping;
 *   nobody ever broadcasts the shutdown. A timer wakes it every time,
 *   and nothing was ever sent to it.
 * fix_periodic_work: a ticker produces a batch every 5 ms and broadcasts
 *   it; a consumer takes every batch and spends 6 ms on each, so the
 *   ticker's broadcasts regularly come while it is busy (not waiting).
 *   It links, then looks, so it misses no batch: a broadcast it missed
 *   announced a batch it then found, and the next one it waits for is
 *   the ticker's next round (the oracle does not count a broadcast
 *   missed from the very task whose timer then wakes the waiter).
 */
#include "zoo.h"

/* ---- fix_idle_select --------------------------------------------------- */

enum { IDLE_JOBS = 3, IDLE_ROUNDS = 3 };

#define IDLE_NS (4 * PL_MS)

static const pl_time idle_push_ms[IDLE_JOBS] = {1, 10, 11};

typedef struct idle_state {
    pl_notify work;
    int pushed;
    int taken;
    int idle_rounds;
    bool producer_done;
} idle_state;

typedef struct idle_producer {
    pl_future base;
    idle_state *st;
    int i;
    pl_sleep gap;
} idle_producer;

static pl_poll_result idle_producer_poll(pl_future *f, pl_context *cx)
{
    idle_producer *self = (idle_producer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < IDLE_JOBS; self->i++) {
        self->gap = pl_sleep_until(idle_push_ms[self->i] * PL_MS);
        PL_AWAIT(cx, &self->gap);
        self->st->pushed++;
        pl_notify_waiters(&self->st->work);
    }
    self->st->producer_done = true;
    PL_ASYNC_END;
}

static void idle_producer_drop(pl_future *f) { pl_drop_child(&((idle_producer *)f)->gap.base); }

static const pl_future_vtable idle_producer_vt = {"producer", idle_producer_poll,
                                                  idle_producer_drop};

typedef struct idle_worker {
    pl_future base;
    idle_state *st;
    int quiet; /* idle periods in a row */
    pl_notified work;
    pl_sleep idle;
    pl_future *children[2];
    pl_select sel;
} idle_worker;

static pl_poll_result idle_worker_poll(pl_future *f, pl_context *cx)
{
    idle_worker *self = (idle_worker *)f;
    idle_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    while (!(st->producer_done && st->taken == st->pushed && self->quiet >= IDLE_ROUNDS)) {
        if (st->pushed > st->taken) {
            st->taken++;
            self->quiet = 0;
            continue;
        }
        /* The look above and the select's link happen in one poll. */
        self->work = pl_notified_make(&st->work);
        self->idle = pl_sleep_for(IDLE_NS);
        self->children[0] = &self->work.base;
        self->children[1] = &self->idle.base;
        self->sel = pl_select_make(self->children, 2);
        PL_AWAIT(cx, &self->sel);
        if (self->sel.index == 1) {
            st->idle_rounds++;
            self->quiet++;
        }
    }
    PL_ASYNC_END;
}

static void idle_worker_drop(pl_future *f) { pl_drop_child(&((idle_worker *)f)->sel.base); }

static const pl_future_vtable idle_worker_vt = {"worker", idle_worker_poll, idle_worker_drop};

static int idle_setup(pl_executor *ex, void *state)
{
    idle_state *st = state;
    pl_notify_init(&st->work);
    idle_worker w = {.base = PL_FUTURE_INIT(&idle_worker_vt), .st = st};
    idle_producer p = {.base = PL_FUTURE_INIT(&idle_producer_vt), .st = st};
    int rc = PL_SPAWN(ex, w, "worker", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, p, "producer", NULL);
}

static int idle_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    idle_state *st = state;
    if (st->taken != IDLE_JOBS || st->idle_rounds < IDLE_ROUNDS) {
        return pl_check_fail(msg, len, "took %d of %d jobs, %d idle periods", st->taken,
                             IDLE_JOBS, st->idle_rounds);
    }
    return 0;
}

PL_SCENARIO(fix_idle_select_sc, .name = "fix_idle_select",
            .summary = "worker in a select of a notify and an idle timeout; the timeouts are "
                       "its normal path",
            .state_size = sizeof(idle_state), .setup = idle_setup, .check = idle_check,
            .time_limit_ns = 1 * PL_S);

/* ---- fix_shutdown_never ------------------------------------------------ */

enum { HOUSEKEEPING_ROUNDS = 5 };

#define HOUSEKEEPING_NS (5 * PL_MS)

typedef struct service_state {
    pl_notify shutdown; /* never broadcast */
    int rounds;
} service_state;

typedef struct service {
    pl_future base;
    service_state *st;
    pl_interval every;
    pl_interval_tick tick;
    pl_notified shutdown;
    pl_future *children[2];
    pl_select sel;
} service;

static pl_poll_result service_poll(pl_future *f, pl_context *cx)
{
    service *self = (service *)f;
    PL_ASYNC_BEGIN(self);
    self->every = pl_interval_make(HOUSEKEEPING_NS);
    while (self->st->rounds < HOUSEKEEPING_ROUNDS) {
        self->shutdown = pl_notified_make(&self->st->shutdown);
        self->tick = pl_interval_tick_make(&self->every);
        self->children[0] = &self->shutdown.base;
        self->children[1] = &self->tick.base;
        self->sel = pl_select_make(self->children, 2);
        PL_AWAIT(cx, &self->sel);
        if (self->sel.index == 0) {
            break;
        }
        self->st->rounds++;
    }
    PL_ASYNC_END;
}

static void service_drop(pl_future *f) { pl_drop_child(&((service *)f)->sel.base); }

static const pl_future_vtable service_vt = {"service", service_poll, service_drop};

static int service_setup(pl_executor *ex, void *state)
{
    service_state *st = state;
    pl_notify_init(&st->shutdown);
    service sv = {.base = PL_FUTURE_INIT(&service_vt), .st = st};
    return PL_SPAWN(ex, sv, "service", NULL);
}

static int service_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    service_state *st = state;
    if (st->rounds != HOUSEKEEPING_ROUNDS) {
        return pl_check_fail(msg, len, "%d of %d housekeeping rounds", st->rounds,
                             HOUSEKEEPING_ROUNDS);
    }
    return 0;
}

PL_SCENARIO(fix_shutdown_never_sc, .name = "fix_shutdown_never",
            .summary = "service waits for a shutdown that never comes, with a housekeeping tick",
            .state_size = sizeof(service_state), .setup = service_setup,
            .check = service_check, .time_limit_ns = 1 * PL_S);

/* ---- fix_periodic_work ------------------------------------------------- */

enum { BATCHES = 4 };

#define PERIOD_NS (5 * PL_MS)
#define PROCESS_NS (6 * PL_MS)

typedef struct periodic_state {
    pl_notify ready;
    int produced;
    int consumed;
} periodic_state;

typedef struct ticker {
    pl_future base;
    periodic_state *st;
    pl_interval every;
    pl_interval_tick tick;
} ticker;

static pl_poll_result ticker_poll(pl_future *f, pl_context *cx)
{
    ticker *self = (ticker *)f;
    PL_ASYNC_BEGIN(self);
    self->every = pl_interval_make(PERIOD_NS);
    while (self->st->produced < BATCHES) {
        self->tick = pl_interval_tick_make(&self->every);
        PL_AWAIT(cx, &self->tick);
        self->st->produced++;
        pl_notify_waiters(&self->st->ready);
    }
    PL_ASYNC_END;
}

static void ticker_drop(pl_future *f) { pl_drop_child(&((ticker *)f)->tick.base); }

static const pl_future_vtable ticker_vt = {"ticker", ticker_poll, ticker_drop};

typedef struct consumer {
    pl_future base;
    periodic_state *st;
    pl_notified ready;
    pl_sleep process;
} consumer;

static pl_poll_result consumer_poll(pl_future *f, pl_context *cx)
{
    consumer *self = (consumer *)f;
    periodic_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    while (st->consumed < BATCHES) {
        /* Link, then look. */
        self->ready = pl_notified_make(&st->ready);
        if (pl_poll(&self->ready.base, cx) == PL_PENDING && st->produced == st->consumed) {
            PL_AWAIT(cx, &self->ready);
            continue;
        }
        pl_drop(&self->ready.base);
        if (st->produced > st->consumed) {
            st->consumed++;
            self->process = pl_sleep_for(PROCESS_NS);
            PL_AWAIT(cx, &self->process);
        }
    }
    PL_ASYNC_END;
}

static void consumer_drop(pl_future *f)
{
    consumer *self = (consumer *)f;
    pl_drop_child(&self->ready.base);
    pl_drop_child(&self->process.base);
}

static const pl_future_vtable consumer_vt = {"consumer", consumer_poll, consumer_drop};

static int periodic_setup(pl_executor *ex, void *state)
{
    periodic_state *st = state;
    pl_notify_init(&st->ready);
    consumer c = {.base = PL_FUTURE_INIT(&consumer_vt), .st = st};
    ticker t = {.base = PL_FUTURE_INIT(&ticker_vt), .st = st};
    int rc = PL_SPAWN(ex, c, "consumer", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, t, "ticker", NULL);
}

static int periodic_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    periodic_state *st = state;
    if (st->consumed != BATCHES) {
        return pl_check_fail(msg, len, "consumed %d of %d batches", st->consumed, BATCHES);
    }
    return 0;
}

PL_SCENARIO(fix_periodic_work_sc, .name = "fix_periodic_work",
            .summary = "ticker broadcasts a batch every 5 ms; a busy consumer links, then looks",
            .state_size = sizeof(periodic_state), .setup = periodic_setup,
            .check = periodic_check, .time_limit_ns = 1 * PL_S);
