/* Zoo: an AtomicWaker-style signal shared by a producer thread and a
 * polling task (a register/wake race on one waker slot).
 *
 * The primitive: `signal`, a NOTIFIED bit and one waker slot. A producer
 * thread publishes items (an atomic counter) and calls signal_notify
 * after each: it sets NOTIFIED, takes whatever waker is in the slot and
 * wakes it. The consumer task awaits the signal (signal_wait), which
 * consumes NOTIFIED or leaves a remote waker in the slot, then reads the
 * counter, until it saw every item.
 *
 * BUG (bug_atomic_waker): signal_wait consumes NOTIFIED first ("not
 * notified"), then stores its waker, and parks. A notify between the two
 * sets NOTIFIED, finds the slot empty and wakes no one; the task parks
 * with NOTIFIED set and its waker in the slot: the last items are never
 * consumed. The thread_switch decision at the task's exchange (a
 * pl_atomic_* point) puts the producer there.
 * Why it is a bug: the waker must be in the slot before the flag is
 * read; then a notify either comes before the read (the flag says so)
 * or after the store (it takes the waker and wakes it).
 * Finding: lost_wakeup (the probe at quiescence finds NOTIFIED set: the
 * task completes).
 * FIX (fix_atomic_waker): store the waker, then consume NOTIFIED; when it
 * was set, take the waker back (or leave it to the notifier that took
 * it: its wake of a task already past this wait is harmless).
 */
#include <stdatomic.h>

#include <pollen/thread.h>

#include "zoo.h"

enum { SIG_NOTIFIED = 1, ITEMS = 3 };

typedef struct signal {
    _Atomic unsigned state;
    _Atomic(pl_remote_waker *) slot;
} signal;

typedef struct aw_state {
    signal sig;
    _Atomic int items;
    pl_thread *producer;
    int seen;
} aw_state;

static void signal_notify(signal *sg)
{
    pl_atomic_fetch_or(&sg->state, SIG_NOTIFIED);
    pl_remote_waker *rw = pl_atomic_exchange(&sg->slot, NULL);
    if (rw != NULL) {
        pl_remote_waker_wake(rw);
    }
}

static void *producer_main(void *arg)
{
    aw_state *st = arg;
    for (int i = 0; i < ITEMS; i++) {
        pl_atomic_fetch_add(&st->items, 1);
        signal_notify(&st->sig);
    }
    return NULL;
}

typedef struct signal_wait {
    pl_future base;
    signal *sig;
} signal_wait;

/* Takes our waker back from the slot, if the notifier did not. */
static void take_back(signal *sg)
{
    pl_remote_waker *mine = pl_atomic_exchange(&sg->slot, NULL);
    if (mine != NULL) {
        pl_remote_waker_drop(mine);
    }
}

/* Stores a fresh remote waker; 0 or PL_ENOMEM. */
static int store_waker(signal *sg, pl_context *cx)
{
    pl_remote_waker *rw;
    if (pl_remote_waker_create(cx, &rw) != 0) {
        return PL_ENOMEM;
    }
    pl_remote_waker *old = pl_atomic_exchange(&sg->slot, rw);
    if (old != NULL) {
        pl_remote_waker_drop(old);
    }
    return 0;
}

/* Consumes NOTIFIED: true when it was set. */
static bool consume(signal *sg)
{
    return (pl_atomic_fetch_and(&sg->state, ~(unsigned)SIG_NOTIFIED) & SIG_NOTIFIED) != 0;
}

static pl_poll_result wait_poll(pl_future *f, pl_context *cx, bool fixed)
{
    signal *sg = ((signal_wait *)f)->sig;
    if (!fixed && consume(sg)) {
        take_back(sg);
        return PL_READY;
    }
    /* BUG (unfixed): a notify between the consume above and this store
     * found the slot empty and woke no one. */
    if (store_waker(sg, cx) != 0) {
        pl_waker_wake_by_ref(&cx->waker);
        return PL_PENDING;
    }
    if (fixed && consume(sg)) {
        /* FIX: read after the waker is where the notifier looks. */
        take_back(sg);
        return PL_READY;
    }
    return PL_PENDING;
}

static pl_poll_result wait_buggy(pl_future *f, pl_context *cx) { return wait_poll(f, cx, false); }
static pl_poll_result wait_fixed(pl_future *f, pl_context *cx) { return wait_poll(f, cx, true); }

static void wait_drop(pl_future *f) { take_back(((signal_wait *)f)->sig); }

static const pl_future_vtable wait_buggy_vt = {"signal_wait", wait_buggy, wait_drop};
static const pl_future_vtable wait_fixed_vt = {"signal_wait", wait_fixed, wait_drop};

/* ---- The consumer task ------------------------------------------------------ */

typedef struct consumer {
    pl_future base;
    aw_state *st;
    const pl_future_vtable *wait_vt;
    signal_wait wait;
} consumer;

static pl_poll_result consumer_poll(pl_future *f, pl_context *cx)
{
    consumer *self = (consumer *)f;
    PL_ASYNC_BEGIN(self);
    while (self->st->seen < ITEMS) {
        self->wait = (signal_wait){PL_FUTURE_INIT(self->wait_vt), &self->st->sig};
        PL_AWAIT(cx, &self->wait);
        self->st->seen = pl_atomic_load(&self->st->items);
    }
    PL_ASYNC_END;
}

static void consumer_drop(pl_future *f) { pl_drop_child(&((consumer *)f)->wait.base); }

static const pl_future_vtable consumer_vt = {"consumer", consumer_poll, consumer_drop};

/* ---- Scenario ----------------------------------------------------------------- */

static int setup(pl_executor *ex, aw_state *st, const pl_future_vtable *wait_vt)
{
    consumer c = {.base = PL_FUTURE_INIT(&consumer_vt), .st = st, .wait_vt = wait_vt};
    int rc = PL_SPAWN(ex, c, "consumer", NULL);
    if (rc != 0) {
        return rc;
    }
    return pl_thread_spawn(&st->producer, "producer", producer_main, st);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, &wait_buggy_vt); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, &wait_fixed_vt); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    aw_state *st = state;
    if (st->producer != NULL && pl_thread_join(st->producer, NULL) != 0) {
        return pl_check_fail(msg, len, "joining the producer failed");
    }
    st->producer = NULL;
    if (st->seen != ITEMS) {
        return pl_check_fail(msg, len, "the consumer saw %d item(s), want %d", st->seen, ITEMS);
    }
    return 0;
}

PL_SCENARIO(bug_atomic_waker_sc, .name = "bug_atomic_waker",
            .summary = "signal wait consumes NOTIFIED, then stores its waker: a notify between "
                       "them wakes no one (lost wakeup)",
            .state_size = sizeof(aw_state), .setup = setup_buggy, .check = check,
            .expect = "lost_wakeup");

PL_SCENARIO(fix_atomic_waker_sc, .name = "fix_atomic_waker",
            .summary = "signal wait stores its waker, then consumes NOTIFIED",
            .state_size = sizeof(aw_state), .setup = setup_fixed, .check = check);
