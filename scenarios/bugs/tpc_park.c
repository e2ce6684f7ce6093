/* Zoo: thread per core, a consumer core whose park misses the producer
 * core's last push (a "sleeping" flag read before the park is announced).
 *
 * The primitive: a cross-core ring with a doorbell, as thread-per-core
 * runtimes build them to save a wake per item. Core 0 (thread 0, the
 * scenario's executor) runs a producer task that pushes ITEMS items, one
 * per millisecond, then closes the ring. Core 1 is a thread
 * (pollen/thread.h) running an executor of its own
 * (pl_thread_executor_create) with a consumer task that sums them. The
 * ring's tail and closed flag are atomics; the consumer parks by leaving
 * a pl_remote_waker in the doorbell slot and raising `sleeping`; the
 * producer rings the doorbell only when it finds `sleeping` raised.
 *
 * BUG (bug_tpc_park): the consumer finds the ring empty and not closed,
 * then announces its park (slot, `sleeping`) and returns PENDING. A push
 * or the close between its check and its announcement finds `sleeping`
 * down and rings nobody; core 1 parks with the item waiting. A later push
 * repairs a missed item (its doorbell wakes the consumer, which drains
 * everything), but nothing repairs a missed close: core 1 is parked in
 * its executor for good, and thread 0 waits to join it. The
 * thread_switch decisions at the atomics put the close there.
 * Why it is a bug: the check must come after the announcement (a
 * store-then-load on each side, sequentially consistent): then either
 * the producer's load of `sleeping` sees the park, or the consumer's
 * re-check sees the push.
 * Finding: deadlock (every thread blocked: thread 0 joining core 1,
 * core 1 parked in its executor).
 * FIX (fix_tpc_park): announce the park, then check again; when
 * something came, lower `sleeping` and take the waker back (a producer
 * that took it first wakes a task that is already running: harmless).
 */
#include <stdatomic.h>

#include <pollen/thread.h>

#include "zoo.h"

enum { ITEMS = 4 };

/* The ring between the cores: written by core 0, read by core 1. */
typedef struct xring {
    int items[ITEMS];
    _Atomic int tail;                 /* items published */
    _Atomic bool closed;
    _Atomic bool sleeping;            /* the consumer waits for the doorbell */
    _Atomic(pl_remote_waker *) slot;  /* the doorbell: the consumer's waker */
} xring;

typedef struct park_state {
    bool fixed;
    xring ring;
    pl_thread *core1;
    int sum;
    int core1_rc;
} park_state;

/* Any thread: takes the waker out of the slot and drops it. */
static void slot_clear(xring *r)
{
    pl_remote_waker *rw = pl_atomic_exchange(&r->slot, NULL);
    if (rw != NULL) {
        pl_remote_waker_drop(rw);
    }
}

/* ---- Core 0: the producer ------------------------------------------------ */

/* Wakes the consumer if it announced its park. */
static void doorbell(xring *r)
{
    if (!pl_atomic_exchange(&r->sleeping, false)) {
        return;
    }
    pl_remote_waker *rw = pl_atomic_exchange(&r->slot, NULL);
    if (rw != NULL) {
        pl_remote_waker_wake(rw);
    }
}

typedef struct producer {
    pl_future base;
    park_state *st;
    int i;
    pl_sleep gap;
} producer;

static pl_poll_result producer_poll(pl_future *f, pl_context *cx)
{
    producer *self = (producer *)f;
    xring *r = &self->st->ring;
    PL_ASYNC_BEGIN(self);
    for (self->i = 1; self->i <= ITEMS; self->i++) {
        self->gap = pl_sleep_for(1 * PL_MS);
        PL_AWAIT(cx, &self->gap);
        int tail = pl_atomic_load(&r->tail);
        r->items[tail] = self->i;
        pl_atomic_store(&r->tail, tail + 1);
        doorbell(r);
    }
    pl_atomic_store(&r->closed, true);
    doorbell(r);
    PL_ASYNC_END;
}

static void producer_drop(pl_future *f)
{
    producer *self = (producer *)f;
    pl_drop_child(&self->gap.base);
}

static const pl_future_vtable producer_vt = {"producer", producer_poll, producer_drop};

/* ---- Core 1: the consumer on its own executor ------------------------------ */

typedef struct consumer {
    pl_future base;
    park_state *st;
    int head;
} consumer;

/* Whether the ring has an item for us or is closed (drained). */
static bool ring_has_news(xring *r, int head)
{
    return head < pl_atomic_load(&r->tail) || pl_atomic_load(&r->closed);
}

/* Leaves a fresh waker in the slot and raises `sleeping`; 0 or PL_ENOMEM. */
static int announce_park(xring *r, pl_context *cx)
{
    pl_remote_waker *rw = NULL;
    if (pl_remote_waker_create(cx, &rw) != 0) {
        return PL_ENOMEM;
    }
    pl_remote_waker *old = pl_atomic_exchange(&r->slot, rw);
    if (old != NULL) {
        pl_remote_waker_drop(old);
    }
    pl_atomic_store(&r->sleeping, true);
    return 0;
}

static pl_poll_result consumer_poll(pl_future *f, pl_context *cx)
{
    consumer *self = (consumer *)f;
    park_state *st = self->st;
    xring *r = &st->ring;
    for (;;) {
        while (self->head < pl_atomic_load(&r->tail)) {
            st->sum += r->items[self->head++];
        }
        if (pl_atomic_load(&r->closed) && self->head == pl_atomic_load(&r->tail)) {
            return PL_READY;
        }
        /* BUG: the emptiness check above came before the announcement. */
        if (announce_park(r, cx) != 0) {
            pl_waker_wake_by_ref(&cx->waker);
            return PL_PENDING;
        }
        if (!st->fixed || !ring_has_news(r, self->head)) {
            return PL_PENDING;
        }
        pl_atomic_store(&r->sleeping, false);
        slot_clear(r);
    }
}

static void consumer_drop(pl_future *f)
{
    consumer *self = (consumer *)f;
    slot_clear(&self->st->ring);
}

static const pl_future_vtable consumer_vt = {"consumer", consumer_poll, consumer_drop};

static void *core1_main(void *arg)
{
    park_state *st = arg;
    pl_executor *ex = NULL;
    int rc = pl_thread_executor_create(&ex);
    if (rc == 0) {
        consumer c = {.base = PL_FUTURE_INIT(&consumer_vt), .st = st};
        rc = PL_SPAWN(ex, c, "consumer", NULL);
    }
    if (rc == 0) {
        rc = pl_run(ex);
    }
    pl_executor_destroy(ex);
    st->core1_rc = rc;
    return NULL;
}

/* ---- Scenario ---------------------------------------------------------------- */

static int setup(pl_executor *ex, park_state *st, bool fixed)
{
    st->fixed = fixed;
    producer p = {.base = PL_FUTURE_INIT(&producer_vt), .st = st};
    int rc = PL_SPAWN(ex, p, "producer", NULL);
    return rc != 0 ? rc : pl_thread_spawn(&st->core1, "core1", core1_main, st);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    park_state *st = state;
    return zoo_core_check(&st->core1, st->core1_rc, st->sum, ITEMS * (ITEMS + 1) / 2, msg, len);
}

PL_SCENARIO(bug_tpc_park_sc, .name = "bug_tpc_park",
            .summary = "thread per core: the consumer core checks the ring, then announces its "
                       "park; the producer core's close in between rings nobody",
            .state_size = sizeof(park_state), .setup = setup_buggy, .check = check,
            .expect = "deadlock");

PL_SCENARIO(fix_tpc_park_sc, .name = "fix_tpc_park",
            .summary = "the consumer core announces its park, then checks the ring again",
            .state_size = sizeof(park_state), .setup = setup_fixed, .check = check);
