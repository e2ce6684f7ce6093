/* Zoo: thread per core, two executors exchanging items through a
 * pl_mpsc (one executor's park misses the other's push).
 *
 * The primitive: a channel between two cores. Core 0 (thread 0, the
 * scenario's executor) runs a producer task that sends ITEMS items, one
 * per millisecond. Core 1 is a thread (pollen/thread.h) running an
 * executor of its own (pl_thread_executor_create) with a consumer task
 * that sums them.
 *
 * BUG (bug_tpc_mpsc): the channel is a pl_mpsc shared by both cores. A
 * pl_mpsc is single-threaded: its send wakes the receiver's waker, a
 * task waker of core 1's executor, from core 0's thread. Core 1's
 * executor is parked in its wait, which only a remote wake ends: the
 * wake puts the consumer in a ready queue nobody looks at, core 1 sleeps
 * on, and the items pile up. In production it is also a data race on the
 * channel and on core 1's ready queue.
 * Why it is a bug: a task waker (and every pollen/sync.h primitive)
 * belongs to its executor's thread; across threads a wake must go through
 * a pl_remote_waker, which makes the other executor's wait return.
 * Finding: assertion (a task's waker woken from a thread other than its
 * executor's; the same run would end as a deadlock, core 1 parked in its
 * executor for good).
 * FIX (fix_tpc_mpsc): a queue under a pl_thread_mutex; the consumer
 * stores a pl_remote_waker under the lock when it finds the queue empty,
 * and the producer takes it (under the lock) after each push and wakes
 * it.
 */
#include <pollen/thread.h>

#include "zoo.h"

enum { ITEMS = 5 };

/* The fixed channel: a locked queue and the receiver's remote waker. */
typedef struct xchan {
    pl_thread_mutex lock;
    int items[ITEMS];
    int head, tail;
    bool closed;
    pl_remote_waker *receiver;
} xchan;

typedef struct tpc_state {
    bool fixed;
    pl_mpsc ch;       /* the buggy channel */
    uint64_t slots[ITEMS];
    xchan x;          /* the fixed one */
    pl_thread *core1;
    int sum;
    int core1_rc;
} tpc_state;

/* ---- Core 0: the producer ------------------------------------------------ */

typedef struct producer {
    pl_future base;
    tpc_state *st;
    int i;
    uint64_t value;
    pl_sleep gap;
    pl_mpsc_send send;
} producer;

static void xchan_push(xchan *x, int v, bool close)
{
    pl_thread_mutex_lock(&x->lock);
    if (close) {
        x->closed = true;
    } else {
        x->items[x->tail++] = v;
    }
    pl_remote_waker *rw = x->receiver;
    x->receiver = NULL;
    pl_thread_mutex_unlock(&x->lock);
    if (rw != NULL) {
        pl_remote_waker_wake(rw);
    }
}

static pl_poll_result producer_poll(pl_future *f, pl_context *cx)
{
    producer *self = (producer *)f;
    tpc_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    for (self->i = 1; self->i <= ITEMS; self->i++) {
        self->gap = pl_sleep_for(1 * PL_MS);
        PL_AWAIT(cx, &self->gap);
        if (st->fixed) {
            xchan_push(&st->x, self->i, false);
        } else {
            self->value = (uint64_t)self->i;
            self->send = pl_mpsc_send_make(&st->ch, &self->value);
            PL_AWAIT(cx, &self->send); /* BUG: wakes core 1's task from core 0 */
        }
    }
    if (st->fixed) {
        xchan_push(&st->x, 0, true);
    } else {
        pl_mpsc_sender_drop(&st->ch);
    }
    PL_ASYNC_END;
}

static void producer_drop(pl_future *f)
{
    producer *self = (producer *)f;
    pl_drop_child(&self->gap.base);
    pl_drop_child(&self->send.base);
}

static const pl_future_vtable producer_vt = {"producer", producer_poll, producer_drop};

/* ---- Core 1: the consumer on its own executor ------------------------------ */

typedef struct consumer {
    pl_future base;
    tpc_state *st;
    uint64_t value;
    pl_mpsc_recv recv;
} consumer;

/* The fixed receive: an item, the end, or PENDING with a remote waker
 * stored under the lock (so a push after the check finds it). */
static pl_poll_result xchan_recv(xchan *x, pl_context *cx, int *out, bool *end)
{
    pl_remote_waker *rw = NULL;
    if (pl_remote_waker_create(cx, &rw) != 0) {
        pl_waker_wake_by_ref(&cx->waker);
        return PL_PENDING;
    }
    pl_thread_mutex_lock(&x->lock);
    pl_poll_result r = PL_READY;
    *end = false;
    if (x->head < x->tail) {
        *out = x->items[x->head++];
    } else if (x->closed) {
        *end = true;
    } else {
        pl_remote_waker *old = x->receiver;
        x->receiver = rw;
        rw = old;
        r = PL_PENDING;
    }
    pl_thread_mutex_unlock(&x->lock);
    if (rw != NULL) {
        pl_remote_waker_drop(rw);
    }
    return r;
}

static pl_poll_result consumer_poll(pl_future *f, pl_context *cx)
{
    consumer *self = (consumer *)f;
    tpc_state *st = self->st;
    if (st->fixed) {
        for (;;) {
            int v = 0;
            bool end = false;
            if (xchan_recv(&st->x, cx, &v, &end) == PL_PENDING) {
                return PL_PENDING;
            }
            if (end) {
                return PL_READY;
            }
            st->sum += v;
        }
    }
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->recv = pl_mpsc_recv_make(&st->ch, &self->value);
        PL_AWAIT(cx, &self->recv);
        if (self->recv.result != 0) {
            break; /* closed */
        }
        st->sum += (int)self->value;
    }
    PL_ASYNC_END;
}

static void consumer_drop(pl_future *f)
{
    consumer *self = (consumer *)f;
    if (self->st->fixed) {
        pl_thread_mutex_lock(&self->st->x.lock);
        pl_remote_waker *rw = self->st->x.receiver;
        self->st->x.receiver = NULL;
        pl_thread_mutex_unlock(&self->st->x.lock);
        if (rw != NULL) {
            pl_remote_waker_drop(rw);
        }
        return;
    }
    pl_drop_child(&self->recv.base);
}

static const pl_future_vtable consumer_vt = {"consumer", consumer_poll, consumer_drop};

static void *core1_main(void *arg)
{
    tpc_state *st = arg;
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

static int setup(pl_executor *ex, tpc_state *st, bool fixed)
{
    st->fixed = fixed;
    pl_mpsc_init_buffer(&st->ch, st->slots, sizeof st->slots[0], ITEMS);
    int rc = pl_thread_mutex_init(&st->x.lock);
    if (rc != 0) {
        return rc;
    }
    producer p = {.base = PL_FUTURE_INIT(&producer_vt), .st = st};
    rc = PL_SPAWN(ex, p, "producer", NULL);
    return rc != 0 ? rc : pl_thread_spawn(&st->core1, "core1", core1_main, st);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    tpc_state *st = state;
    return zoo_core_check(&st->core1, st->core1_rc, st->sum, ITEMS * (ITEMS + 1) / 2, msg, len);
}

PL_SCENARIO(bug_tpc_mpsc_sc, .name = "bug_tpc_mpsc",
            .summary = "two executors on two threads share a pl_mpsc: core 0's send wakes a "
                       "task of core 1's parked executor with a task waker",
            .state_size = sizeof(tpc_state), .setup = setup_buggy, .check = check,
            .expect = "assertion");

PL_SCENARIO(fix_tpc_mpsc_sc, .name = "fix_tpc_mpsc",
            .summary = "a locked queue between the cores; the receiver's remote waker wakes "
                       "core 1's executor",
            .state_size = sizeof(tpc_state), .setup = setup_fixed, .check = check);
