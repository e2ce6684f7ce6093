/* Zoo: an auto-reset event cleared by its waiter at the end of its handler.
 *
 * The primitive: `event`, a hand-written manual-reset event (a flag and
 * one waker slot): event_set raises the flag and wakes the waiter;
 * event_wait is READY while the flag is up. A producer appends jobs to a
 * queue and sets the event; the consumer waits for the event, drains the
 * queue, acknowledges the batch (an awaited 1 ms write), and resets the
 * event for the next round.
 *
 * BUG (bug_event_clear): the consumer clears the flag at the end of its
 * round, after the awaited acknowledgement. A job pushed during that
 * await sets a flag that is already up (nobody to wake), and the clear
 * that follows erases the only trace of it: the consumer waits for a set
 * that already happened. The producer pushes every 2 ms and the ack
 * takes 1 ms, so production's order never shows it; an ack timer firing
 * late lets a push slip in between.
 * Why it is a bug: the flag is the notification; clearing it after
 * having looked at the queue, with an await in between, discards
 * notifications for work that arrived after the look. Consume the flag
 * before looking at what it announces.
 * Finding: deadlock. The consumer is parked in event_wait with its waker
 * stored in the event, the flag is down, the producer is done: no probe
 * can progress (the job sits in a queue event_wait does not look at).
 * FIX (fix_event_clear): clear the flag right after waking, before
 * draining; a push during the round then leaves the flag up and the next
 * event_wait returns at once.
 */
#include "zoo.h"

enum { JOBS = 5, RING = 8 };

typedef struct event {
    bool set;
    pl_waker waker;
} event;

typedef struct event_state {
    event ev;
    int jobs[RING];
    unsigned head;
    unsigned len;
    int handled;
    int acks;
} event_state;

static void event_set(event *e)
{
    e->set = true;
    pl_waker_slot_wake(&e->waker);
}

typedef struct event_wait {
    pl_future base;
    event *ev;
} event_wait;

static pl_poll_result event_wait_poll(pl_future *f, pl_context *cx)
{
    event *e = ((event_wait *)f)->ev;
    if (e->set) {
        return PL_READY;
    }
    pl_waker_slot_set(&e->waker, &cx->waker);
    return PL_PENDING;
}

static void event_wait_drop(pl_future *f) { pl_waker_slot_clear(&((event_wait *)f)->ev->waker); }

static const pl_future_vtable event_wait_vt = {"event_wait", event_wait_poll, event_wait_drop};

/* ---- Consumer ---------------------------------------------------------- */

typedef struct consumer {
    pl_future base;
    event_state *st;
    bool fixed;
    event_wait wait;
    pl_sleep ack;
} consumer;

static void drain(event_state *st)
{
    while (st->len > 0) {
        st->head = (st->head + 1) % RING;
        st->len--;
        st->handled++;
    }
}

static pl_poll_result consumer_poll(pl_future *f, pl_context *cx)
{
    consumer *self = (consumer *)f;
    event_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    while (st->handled < JOBS) {
        self->wait = (event_wait){PL_FUTURE_INIT(&event_wait_vt), &st->ev};
        PL_AWAIT(cx, &self->wait);
        if (self->fixed) {
            st->ev.set = false; /* FIX: consume the flag, then look */
        }
        drain(st);
        self->ack = pl_sleep_for(1 * PL_MS);
        PL_AWAIT(cx, &self->ack);
        st->acks++;
        if (!self->fixed) {
            st->ev.set = false; /* BUG: erases sets made during the ack */
        }
    }
    PL_ASYNC_END;
}

static void consumer_drop(pl_future *f)
{
    consumer *self = (consumer *)f;
    pl_drop_child(&self->wait.base);
    pl_drop_child(&self->ack.base);
}

static const pl_future_vtable consumer_vt = {"consumer", consumer_poll, consumer_drop};

/* ---- Producer: a job every 2 ms ---------------------------------------- */

typedef struct producer {
    pl_future base;
    event_state *st;
    int i;
    pl_sleep gap;
} producer;

static void push_job(event_state *st, int job)
{
    pl_always(st->len < RING, "job queue overflow");
    st->jobs[(st->head + st->len) % RING] = job;
    st->len++;
    event_set(&st->ev);
}

static pl_poll_result producer_poll(pl_future *f, pl_context *cx)
{
    producer *self = (producer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < JOBS; self->i++) {
        push_job(self->st, self->i);
        self->gap = pl_sleep_for(2 * PL_MS);
        PL_AWAIT(cx, &self->gap);
    }
    PL_ASYNC_END;
}

static void producer_drop(pl_future *f) { pl_drop_child(&((producer *)f)->gap.base); }

static const pl_future_vtable producer_vt = {"producer", producer_poll, producer_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, event_state *st, bool fixed)
{
    consumer c = {.base = PL_FUTURE_INIT(&consumer_vt), .st = st, .fixed = fixed};
    producer p = {.base = PL_FUTURE_INIT(&producer_vt), .st = st};
    int rc = PL_SPAWN(ex, c, "consumer", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, p, "producer", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    event_state *st = state;
    if (st->handled != JOBS || st->len != 0) {
        return pl_check_fail(msg, len, "%d jobs handled, %u left queued, want %d and 0", st->handled,
                        st->len, JOBS);
    }
    return 0;
}

PL_SCENARIO(bug_event_clear_sc, .name = "bug_event_clear",
            .summary = "event waiter clears the flag after its round; a set in between is lost",
            .state_size = sizeof(event_state), .setup = setup_buggy, .check = check,
            .expect = "deadlock");

PL_SCENARIO(fix_event_clear_sc, .name = "fix_event_clear",
            .summary = "event waiter consumes the flag before draining",
            .state_size = sizeof(event_state), .setup = setup_fixed, .check = check);
