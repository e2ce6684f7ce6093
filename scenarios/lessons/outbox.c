/* Lesson: the outbox relay, and the lost wakeup of notify_waiters.
 *
 * A listener receives ITEMS items, one per millisecond, pushes each into
 * a FIFO outbox and signals a notify. Four relay workers wait on the
 * notify, take every queued item into a local batch and relay the batch
 * downstream, which takes a while (1 to 3 ms, longer now and then). The
 * run is done when every item was relayed exactly once.
 *
 *     worker:   loop {
 *                   if relayed == ITEMS: break
 *                   await signal.notified()
 *                   batch = take every queued item
 *                   await relay(batch)               <- busy, not waiting
 *                   relayed += len(batch); sum += items
 *                   if relayed == ITEMS: signal.notify_waiters(); break
 *               }
 *     listener: for k in 1..=ITEMS { sleep_until(start + k ms); push(k); signal(); }
 *
 * Two scenarios differ only in how the listener signals:
 *
 *  outbox            pl_notify_one. With no waiter, the notification is
 *                    kept as a permit. A push made while every worker is
 *                    busy relaying leaves the permit, and the next worker
 *                    to wait takes it at once, with the item.
 *  outbox_broadcast  pl_notify_waiters. It wakes the workers waiting now
 *                    and keeps nothing. A push made while every worker is
 *                    busy relaying wakes nobody: the item waits for the
 *                    next push to wake someone. After the last push there
 *                    is no next push, so it stays stranded; the workers
 *                    finish their relays and park on the notify, forever.
 *
 * The broadcast bug needs all four workers busy at the moment of the last
 * push. In production's order that never happens here (relays of 1 to 3
 * ms overlap at most three at a time), so tests on the real backend pass.
 * The simulator finds it by trying schedules: timers that fire late,
 * equal deadlines in another order, and the buggify site in relay_time()
 * (a slow downstream) make four relays overlap. With the default options
 * about one seed in a hundred strands the last item; the first is seed 28.
 *
 * Which finding: every task is parked and a probe poll of each makes no
 * progress (a worker's notified is simply still waiting: the broadcast
 * that could have woken it went to nobody and left no trace). That is the
 * simulator's `deadlock`. A `lost_wakeup` would need a parked task that
 * could make progress if only it were polled; here polling changes
 * nothing, the notification itself was lost.
 */
#include <stdbool.h>
#include <stdint.h>

#include <pollen/sim.h>


enum {
    ITEMS = 50, /* the benchmark runs the same relay with its own count */
    WORKERS = 4,
};

typedef struct outbox_state {
    bool broadcast;        /* which scenario: how the listener signals */
    pl_notify signal;      /* "the outbox has items" */
    uint64_t queue[ITEMS]; /* the outbox: a FIFO; each item is pushed once */
    uint32_t head;         /* next item to take */
    uint32_t tail;         /* next free slot */
    uint64_t relayed;      /* items relayed so far */
    uint64_t sum;          /* of the relayed items: each relayed exactly once? */
} outbox_state;

/* ---- The outbox --------------------------------------------------------- */

static void outbox_push(outbox_state *st, uint64_t item)
{
    st->queue[st->tail++] = item; /* tail < ITEMS: the listener pushes ITEMS items */
}

static uint32_t outbox_take_all(outbox_state *st, uint64_t *batch)
{
    uint32_t n = 0;
    while (st->head < st->tail) {
        batch[n++] = st->queue[st->head++];
    }
    return n;
}

/* ---- A relay worker ----------------------------------------------------- */

typedef struct worker {
    pl_future base;
    outbox_state *st;
    pl_notified wait;
    pl_sleep relay;        /* relaying the batch downstream */
    uint64_t batch[ITEMS]; /* taken from the outbox, being relayed */
    uint32_t batch_len;
} worker;

/* How long relaying a batch takes: 1 to 3 ms, picked from the batch so
 * every run is deterministic, and 5 ms more when the buggify site fires
 * (a slow downstream: rare in a run, never in production). */
static pl_time relay_time(const worker *self, pl_context *cx)
{
    pl_time t = (pl_time)(1 + self->batch[0] % 3) * PL_MS;
    if (PL_BUGGIFY(cx)) {
        t += 5 * PL_MS;
    }
    return t;
}

static void worker_done_relaying(worker *self)
{
    outbox_state *st = self->st;
    for (uint32_t i = 0; i < self->batch_len; i++) {
        st->sum += self->batch[i];
    }
    st->relayed += self->batch_len;
    self->batch_len = 0;
}

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *self = (worker *)f;
    outbox_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    while (st->relayed < ITEMS) {
        self->wait = pl_notified_make(&st->signal);
        PL_AWAIT(cx, &self->wait);
        self->batch_len = outbox_take_all(st, self->batch);
        if (self->batch_len == 0) {
            continue; /* another worker took them first */
        }
        /* While this await is pending the worker is busy, not waiting on
         * the signal: whatever is signalled meanwhile must not be lost. */
        self->relay = pl_sleep_for(relay_time(self, cx));
        PL_AWAIT(cx, &self->relay);
        worker_done_relaying(self);
        if (st->relayed == ITEMS) {
            /* The last relay: release the idle workers so they see the
             * count and stop. Every other worker is idle now (all items
             * are relayed): waiting, which the broadcast releases, or
             * already woken and about to check the count. */
            pl_notify_waiters(&st->signal);
        }
    }
    PL_ASYNC_END;
}

static void worker_drop(pl_future *f)
{
    worker *self = (worker *)f;
    pl_drop_child(&self->wait.base);
    pl_drop_child(&self->relay.base);
}

static const pl_future_vtable worker_vtable = {"worker", worker_poll, worker_drop};

/* ---- The listener ------------------------------------------------------- */

typedef struct listener {
    pl_future base;
    outbox_state *st;
    pl_time start_ns;
    uint64_t k;
    pl_sleep tick;
} listener;

static void signal_push(outbox_state *st)
{
    if (st->broadcast) {
        pl_notify_waiters(&st->signal); /* the bug: a busy worker misses it */
    } else {
        pl_notify_one(&st->signal); /* kept as a permit if nobody waits */
    }
}

static pl_poll_result listener_poll(pl_future *f, pl_context *cx)
{
    listener *self = (listener *)f;
    PL_ASYNC_BEGIN(self);
    self->start_ns = pl_now(cx->ex);
    for (self->k = 1; self->k <= ITEMS; self->k++) {
        /* Absolute deadlines: a late tick does not delay the later ones. */
        self->tick = pl_sleep_until(self->start_ns + (pl_time)self->k * PL_MS);
        PL_AWAIT(cx, &self->tick);
        outbox_push(self->st, self->k);
        signal_push(self->st);
    }
    PL_ASYNC_END;
}

static void listener_drop(pl_future *f) { pl_drop_child(&((listener *)f)->tick.base); }

static const pl_future_vtable listener_vtable = {"listener", listener_poll, listener_drop};

/* ---- The scenarios ------------------------------------------------------ */

static int outbox_spawn(pl_executor *ex, outbox_state *st)
{
    pl_notify_init(&st->signal);
    /* Workers first, so they wait on the signal before the first push.
     * Distinct names make findings and traces easier to read. */
    static const char *const names[WORKERS] = {"worker1", "worker2", "worker3", "worker4"};
    for (int i = 0; i < WORKERS; i++) {
        worker w = {.base = PL_FUTURE_INIT(&worker_vtable), .st = st};
        int rc = PL_SPAWN(ex, w, names[i], NULL);
        if (rc != 0) {
            return rc;
        }
    }
    listener l = {.base = PL_FUTURE_INIT(&listener_vtable), .st = st};
    return PL_SPAWN(ex, l, "listener", NULL);
}

static int outbox_setup(pl_executor *ex, void *state)
{
    outbox_state *st = state;
    st->broadcast = false;
    return outbox_spawn(ex, st);
}

static int outbox_broadcast_setup(pl_executor *ex, void *state)
{
    outbox_state *st = state;
    st->broadcast = true;
    return outbox_spawn(ex, st);
}

static int outbox_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const outbox_state *st = state;
    const uint64_t want_sum = (uint64_t)ITEMS * (ITEMS + 1) / 2;
    if (st->relayed != ITEMS || st->sum != want_sum) {
        return pl_check_fail(msg, len,
                            "relayed %llu of %d items (sum %llu, want %llu); %u stranded in "
                            "the outbox",
                            (unsigned long long)st->relayed, ITEMS, (unsigned long long)st->sum,
                            (unsigned long long)want_sum, st->tail - st->head);
    }
    return 0;
}

PL_SCENARIO(outbox_scenario, .name = "outbox",
            .summary = "outbox relay, 4 workers, signalled with notify_one (correct)",
            .state_size = sizeof(outbox_state), .setup = outbox_setup, .check = outbox_check);

PL_SCENARIO(outbox_broadcast_scenario, .name = "outbox_broadcast",
            .summary = "outbox relay signalled with notify_waiters: a busy worker misses it",
            .state_size = sizeof(outbox_state), .setup = outbox_broadcast_setup,
            .check = outbox_check, .expect = "deadlock");
