/* Zoo: a notified listener that gives up wipes the wakeup meant for the next.
 *
 * The primitive: `bell`, a hand-written auto-reset event in the style of
 * the event-listener libraries. bell_ring stores one ring (a permit:
 * rings while one is stored coalesce) and, unless a listener is already
 * on its way to take it, marks the listener at the head of the queue
 * notified and wakes it. Only a notified listener takes the ring, so a
 * spurious poll of another never barges ahead of the one on its way. Its
 * listen future declares what it waits for with pl_wait_declare: "a
 * stored ring while it is first in line".
 * Two listeners: `impatient` gives up at 1 ms (a pl_select whose first
 * branch is its deadline: past it, its caller has moved on, so a late
 * ring is not taken), `patient` waits as long as it takes. A ringer rings
 * at 1 ms and at 2 ms: two rings for two listeners.
 *
 * BUG (bug_wiped_permit): a notified listener dropped before it ran (its
 * deadline won the select) unlinks itself and clears the bell's
 * "listener notified" flag, wiping the wakeup that was scheduled, but
 * does not pass it on: the ring stays stored, `patient` is now first in
 * line and nobody tells it. The ring at 2 ms finds a ring stored and
 * coalesces. Production's order polls `impatient` first at 1 ms (its
 * timer was armed first), which times out a listener not yet notified;
 * the ringer polled first at 1 ms strands the ring.
 * Why it is a bug: a notification handed to one waiter belongs to the
 * waiters, not to the one picked; a picked waiter that leaves without
 * taking it must hand it to the next (pl_notify's drop does).
 * Finding: lost_wakeup, from the wait-condition oracle: `patient` is
 * parked on the bell while the condition it declared holds. A probe poll
 * of it changes nothing (only a notified listener looks at the ring), so
 * without the declaration the finding would be a bare deadlock.
 * FIX (fix_wiped_permit): the drop of a notified listener notifies the
 * next one while a ring is stored (bell_notify_head).
 */
#include "zoo.h"

enum { LISTENERS = 2 };

typedef struct bell {
    bool rung;           /* a ring is stored (the permit) */
    bool notifying;      /* a listener was notified and has not taken it yet */
    zoo_queue listeners; /* bell_listen nodes, FIFO */
    bool fixed;          /* which drop this scenario uses */
} bell;

typedef struct bell_state {
    bell bell;
    int served;
    int gave_up;
    bool patient_served;
} bell_state;

/* ---- bell_listen ------------------------------------------------------- */

enum { LISTEN_INIT = 0, LISTEN_WAITING = 1, LISTEN_NOTIFIED = 2, LISTEN_DONE = 3 };

typedef struct bell_listen {
    pl_future base; /* base.resume holds LISTEN_* */
    bell *bell;
    zoo_node node;
    pl_waker waker;
} bell_listen;

/* Tells the first listener in line that a ring is there for it. */
static void bell_notify_head(bell *b)
{
    if (!b->rung || b->notifying || b->listeners.head == NULL) {
        return;
    }
    bell_listen *l = ZOO_CONTAINER_OF(b->listeners.head, bell_listen, node);
    b->notifying = true;
    l->base.resume = LISTEN_NOTIFIED;
    pl_waker_slot_wake(&l->waker);
}

static void bell_ring(bell *b)
{
    if (b->rung) {
        return; /* coalesce: the stored ring is still to be taken */
    }
    b->rung = true;
    bell_notify_head(b);
}

/* The listener's wait condition: what bell_notify_head would act on.
 * Side-effect free; the subject is the listener, which stays put while
 * its task is parked on it. */
static bool listen_holds(const void *subject, char *why, size_t why_len)
{
    const bell_listen *l = subject;
    const bell *b = l->bell;
    bool waiting = l->base.resume == LISTEN_WAITING || l->base.resume == LISTEN_NOTIFIED;
    if (!waiting || !b->rung || b->listeners.head != &l->node) {
        return false;
    }
    snprintf(why, why_len, "a ring is stored and it is first in line, %s",
             l->base.resume == LISTEN_NOTIFIED ? "notified" : "never notified");
    return true;
}

static pl_poll_result bell_listen_poll(pl_future *f, pl_context *cx)
{
    bell_listen *self = (bell_listen *)f;
    bell *b = self->bell;
    switch (self->base.resume) {
    case LISTEN_INIT:
        if (b->rung && b->listeners.head == NULL) {
            b->rung = false;
            self->base.resume = LISTEN_DONE;
            return PL_READY;
        }
        zoo_queue_push(&b->listeners, &self->node);
        self->base.resume = LISTEN_WAITING;
        break;
    case LISTEN_WAITING:
        break;
    default: /* LISTEN_NOTIFIED: the ring is ours */
        b->rung = false;
        b->notifying = false;
        zoo_queue_remove(&b->listeners, &self->node);
        self->base.resume = LISTEN_DONE;
        return PL_READY;
    }
    pl_waker_slot_set(&self->waker, &cx->waker);
    if (cx->watch != NULL) { /* in production, build nothing */
        pl_wait_declare(cx, &(pl_wait){"bell", "a stored ring while it is first in line", self,
                                       listen_holds, __FILE__, __LINE__});
    }
    return PL_PENDING;
}

static void bell_listen_drop(pl_future *f)
{
    bell_listen *self = (bell_listen *)f;
    bell *b = self->bell;
    if (self->base.resume == LISTEN_WAITING) {
        zoo_queue_remove(&b->listeners, &self->node);
        pl_waker_slot_clear(&self->waker);
    } else if (self->base.resume == LISTEN_NOTIFIED) {
        zoo_queue_remove(&b->listeners, &self->node);
        b->notifying = false; /* BUG (when !fixed): the scheduled wakeup is gone */
        if (b->fixed) {
            bell_notify_head(b); /* FIX: the ring goes to the next in line */
        }
    }
    self->base.resume = LISTEN_DONE;
}

static const pl_future_vtable bell_listen_vt = {"bell_listen", bell_listen_poll, bell_listen_drop};

static bell_listen bell_listen_init(bell *b)
{
    return (bell_listen){
        .base = PL_FUTURE_INIT(&bell_listen_vt), .bell = b, .waker = PL_WAKER_EMPTY};
}

/* ---- Listeners --------------------------------------------------------- */

typedef struct impatient {
    pl_future base;
    bell_state *st;
    pl_sleep deadline;
    bell_listen listen;
    pl_future *branches[2]; /* deadline first: past it, a ring is not taken */
    pl_select sel;
} impatient;

static pl_poll_result impatient_poll(pl_future *f, pl_context *cx)
{
    impatient *self = (impatient *)f;
    PL_ASYNC_BEGIN(self);
    self->deadline = pl_sleep_for(1 * PL_MS);
    self->listen = bell_listen_init(&self->st->bell);
    self->branches[0] = &self->deadline.base;
    self->branches[1] = &self->listen.base;
    self->sel = pl_select_make(self->branches, 2);
    PL_AWAIT(cx, &self->sel);
    if (self->sel.index == 0) {
        self->st->gave_up++;
    } else {
        self->st->served++;
    }
    PL_ASYNC_END;
}

static void impatient_drop(pl_future *f)
{
    impatient *self = (impatient *)f;
    pl_drop_child(&self->sel.base);
}

static const pl_future_vtable impatient_vt = {"impatient", impatient_poll, impatient_drop};

typedef struct patient {
    pl_future base;
    bell_state *st;
    bell_listen listen;
} patient;

static pl_poll_result patient_poll(pl_future *f, pl_context *cx)
{
    patient *self = (patient *)f;
    PL_ASYNC_BEGIN(self);
    self->listen = bell_listen_init(&self->st->bell);
    PL_AWAIT(cx, &self->listen);
    self->st->served++;
    self->st->patient_served = true;
    PL_ASYNC_END;
}

static void patient_drop(pl_future *f) { pl_drop_child(&((patient *)f)->listen.base); }

static const pl_future_vtable patient_vt = {"patient", patient_poll, patient_drop};

/* ---- The ringer: one ring at 1 ms, one at 2 ms ------------------------- */

typedef struct ringer {
    pl_future base;
    bell_state *st;
    int i;
    pl_sleep gap;
} ringer;

static pl_poll_result ringer_poll(pl_future *f, pl_context *cx)
{
    ringer *self = (ringer *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < LISTENERS; self->i++) {
        self->gap = pl_sleep_for(1 * PL_MS);
        PL_AWAIT(cx, &self->gap);
        bell_ring(&self->st->bell);
    }
    PL_ASYNC_END;
}

static void ringer_drop(pl_future *f) { pl_drop_child(&((ringer *)f)->gap.base); }

static const pl_future_vtable ringer_vt = {"ringer", ringer_poll, ringer_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, bell_state *st, bool fixed)
{
    st->bell.fixed = fixed;
    impatient i = {.base = PL_FUTURE_INIT(&impatient_vt), .st = st};
    patient p = {.base = PL_FUTURE_INIT(&patient_vt), .st = st};
    ringer r = {.base = PL_FUTURE_INIT(&ringer_vt), .st = st};
    int rc = PL_SPAWN(ex, i, "impatient", NULL);
    if (rc == 0) {
        rc = PL_SPAWN(ex, p, "patient", NULL);
    }
    return rc != 0 ? rc : PL_SPAWN(ex, r, "ringer", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    bell_state *st = state;
    if (!st->patient_served || st->served + st->gave_up != LISTENERS) {
        return pl_check_fail(msg, len,
                             "patient served: %d; %d listener(s) served and %d gave up, want "
                             "%d in all (ring stored: %d)",
                             st->patient_served, st->served, st->gave_up, LISTENERS, st->bell.rung);
    }
    if (st->bell.listeners.head != NULL || st->bell.notifying) {
        return pl_check_fail(msg, len, "the bell ends with listeners queued or notified");
    }
    return 0;
}

PL_SCENARIO(bug_wiped_permit_sc, .name = "bug_wiped_permit",
            .summary = "notified listener that gives up wipes the scheduled wakeup (lost_wakeup)",
            .state_size = sizeof(bell_state), .setup = setup_buggy, .check = check,
            .expect = "lost_wakeup");

PL_SCENARIO(fix_wiped_permit_sc, .name = "fix_wiped_permit",
            .summary = "a notified listener that gives up passes the ring on",
            .state_size = sizeof(bell_state), .setup = setup_fixed, .check = check);
