/* Zoo: an edge-triggered doorbell and a consumer taking one item per wake.
 *
 * The primitive: `work_queue`, a hand-written FIFO of ints with a
 * doorbell. To save wakes, wq_push rings the doorbell (wakes the stored
 * waker) only on the empty-to-non-empty transition, like EPOLLET: a queue
 * that already holds items is assumed to have a consumer on its way.
 *
 * BUG (bug_edge_notify): the consumer handles one item per wake: each
 * poll takes one item, then stores its waker and returns PENDING,
 * expecting one ring per item. When two pushes happen before it runs,
 * the second finds the queue non-empty and rings nothing (and wakes
 * dedupe anyway), so the consumer parks with an item still queued.
 * Why it is a bug: an edge-triggered notification says "something
 * arrived", not "one thing arrived"; whoever consumes it owes a drain
 * until empty. In production's FIFO order the consumer always runs
 * between two pushes; a schedule that runs the producer twice in a row
 * breaks it.
 * Finding: lost_wakeup. At quiescence the consumer is parked with its
 * waker stored, and a probe poll takes the leftover item.
 * FIX (fix_edge_notify): drain the queue on every poll before parking,
 * so the queue is empty whenever the consumer sleeps and the next push
 * is an edge again.
 */
#include "zoo.h"

enum { ITEMS = 5, RING = 8 };

typedef struct work_queue {
    int ring[RING];
    unsigned head;
    unsigned len;
    pl_waker doorbell; /* the consumer's waker while it waits */
} work_queue;

typedef struct edge_state {
    work_queue q;
    int handled; /* the consumer's totals, published when it is done */
    int sum;
} edge_state;

static void wq_push(work_queue *q, int v)
{
    bool was_empty = q->len == 0;
    pl_always(q->len < RING, "work queue overflow");
    q->ring[(q->head + q->len) % RING] = v;
    q->len++;
    if (was_empty) {
        pl_waker_slot_wake(&q->doorbell); /* ring only on the edge */
    }
}

static bool wq_pop(work_queue *q, int *out)
{
    if (q->len == 0) {
        return false;
    }
    *out = q->ring[q->head];
    q->head = (q->head + 1) % RING;
    q->len--;
    return true;
}

/* ---- The consumer ------------------------------------------------------ */

typedef struct consumer {
    pl_future base;
    edge_state *st;
    int handled;
    int sum;
} consumer;

static void handle(consumer *self, int v)
{
    self->handled++;
    self->sum += v;
}

/* Publishes the totals once every item was handled. */
static pl_poll_result finish_or_park(consumer *self, pl_context *cx)
{
    if (self->handled == ITEMS) {
        self->st->handled = self->handled;
        self->st->sum = self->sum;
        return PL_READY;
    }
    pl_waker_slot_set(&self->st->q.doorbell, &cx->waker);
    return PL_PENDING;
}

static pl_poll_result consumer_poll_buggy(pl_future *f, pl_context *cx)
{
    consumer *self = (consumer *)f;
    int v;
    /* BUG: one item per wake, as if every push rang the doorbell. */
    if (wq_pop(&self->st->q, &v)) {
        handle(self, v);
    }
    return finish_or_park(self, cx);
}

static pl_poll_result consumer_poll_fixed(pl_future *f, pl_context *cx)
{
    consumer *self = (consumer *)f;
    int v;
    /* FIX: drain, so the next push is an empty-to-non-empty edge. */
    while (wq_pop(&self->st->q, &v)) {
        handle(self, v);
    }
    return finish_or_park(self, cx);
}

static void consumer_drop(pl_future *f)
{
    pl_waker_slot_clear(&((consumer *)f)->st->q.doorbell);
}

static const pl_future_vtable consumer_buggy_vt = {"consumer", consumer_poll_buggy,
                                                   consumer_drop};
static const pl_future_vtable consumer_fixed_vt = {"consumer", consumer_poll_fixed,
                                                   consumer_drop};

/* ---- The producer: pushes, yielding in between ------------------------ */

typedef struct producer {
    pl_future base;
    edge_state *st;
    int i;
} producer;

static pl_poll_result producer_poll(pl_future *f, pl_context *cx)
{
    producer *self = (producer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 1; self->i <= ITEMS; self->i++) {
        wq_push(&self->st->q, self->i);
        PL_YIELD(cx); /* let the consumer in: in FIFO order it runs next */
    }
    PL_ASYNC_END;
}

static const pl_future_vtable producer_vt = {"producer", producer_poll, NULL};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, edge_state *st, const pl_future_vtable *vt)
{
    consumer c = {.base = PL_FUTURE_INIT(vt), .st = st};
    producer p = {.base = PL_FUTURE_INIT(&producer_vt), .st = st};
    int rc = PL_SPAWN(ex, c, "consumer", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, p, "producer", NULL);
}

static int setup_buggy(pl_executor *ex, void *state)
{
    return setup(ex, state, &consumer_buggy_vt);
}

static int setup_fixed(pl_executor *ex, void *state)
{
    return setup(ex, state, &consumer_fixed_vt);
}

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    edge_state *st = state;
    int want = ITEMS * (ITEMS + 1) / 2;
    if (st->handled != ITEMS || st->sum != want) {
        return pl_check_fail(msg, len, "handled %d items summing to %d, want %d summing to %d",
                        st->handled, st->sum, ITEMS, want);
    }
    return 0;
}

PL_SCENARIO(bug_edge_notify_sc, .name = "bug_edge_notify",
            .summary = "edge-triggered doorbell, consumer takes one item per wake (lost wakeup)",
            .state_size = sizeof(edge_state), .setup = setup_buggy, .check = check,
            .expect = "lost_wakeup");

PL_SCENARIO(fix_edge_notify_sc, .name = "fix_edge_notify",
            .summary = "edge-triggered doorbell, consumer drains before parking",
            .state_size = sizeof(edge_state), .setup = setup_fixed, .check = check);
