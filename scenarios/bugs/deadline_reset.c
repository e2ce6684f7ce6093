/* Zoo: an idle timer reset to a deadline already past that does not re-arm.
 *
 * The primitive: `idle_timer`, a hand-written wrapper around pl_timer for
 * a connection's idle timeout. A watchdog task awaits `idle_expired` and
 * closes the connection when it completes. The connection's loop pushes
 * the deadline to start + 10 ms after each request; when the peer says
 * goodbye, it flushes (an awaited 1 ms write) and then sets the deadline
 * to goodbye + 2 ms, a short linger. The wrapper keeps the waiter's
 * latest waker so it can re-arm the timer for it.
 *
 * BUG (bug_deadline_reset): idle_timer_reset re-arms the timer only for a
 * deadline in the future. For one already due it just disarms the timer:
 * "the next poll will see that it expired". But the watchdog is parked;
 * no poll is coming, because the only thing that would have woken it was
 * the timer just disarmed. The flush takes 1 ms, so in production's
 * order the linger deadline is still 1 ms ahead at the reset; a flush
 * timer that fires late (1 ms or more) makes it due.
 * Why it is a bug: moving a deadline must keep the promise the parked
 * waiter relies on: its waker will be woken once the deadline passes,
 * including when it has already passed. Deadlines computed from an
 * earlier timestamp (a message's arrival, a request's start) are behind
 * `now` whenever the work in between ran long.
 * Finding: lost_wakeup. At quiescence the watchdog is parked with its
 * waker stored in the wrapper, and a probe poll sees the deadline behind
 * `now` and completes.
 * FIX (fix_deadline_reset): always re-arm when a waiter is registered;
 * pl_timer_arm clamps a past deadline to now, so the timer fires on the
 * next tick and wakes the watchdog (this is what pl_sleep_reset does).
 */
#include "zoo.h"

enum { REQUESTS = 3 };

#define IDLE_NS (10 * PL_MS)
#define LINGER_NS (2 * PL_MS)

typedef struct idle_timer {
    pl_executor *ex;
    pl_time deadline_ns;
    pl_timer timer;
    pl_waker waker; /* the waiter's latest waker, to re-arm with */
    bool fixed;     /* which reset this scenario uses */
} idle_timer;

typedef struct idle_state {
    idle_timer idle;
    bool closed;
    int served;
} idle_state;

static void idle_timer_reset_buggy(idle_timer *t, pl_time deadline_ns)
{
    t->deadline_ns = deadline_ns;
    if (!pl_waker_is_set(&t->waker)) {
        return; /* nobody waits yet: the first poll arms */
    }
    if (deadline_ns > pl_now(t->ex)) {
        if (pl_timer_arm(t->ex, &t->timer, deadline_ns, &t->waker) != 0) {
            pl_waker_wake_by_ref(&t->waker);
        }
    } else {
        pl_timer_disarm(&t->timer); /* BUG: "the next poll will see it" */
    }
}

static void idle_timer_reset_fixed(idle_timer *t, pl_time deadline_ns)
{
    t->deadline_ns = deadline_ns;
    if (!pl_waker_is_set(&t->waker)) {
        return;
    }
    /* FIX: re-arm even when due: the timer fires next tick and wakes. */
    if (pl_timer_arm(t->ex, &t->timer, deadline_ns, &t->waker) != 0) {
        pl_waker_wake_by_ref(&t->waker); /* no memory: let the waiter poll */
    }
}

static void idle_timer_reset(idle_timer *t, pl_time deadline_ns)
{
    if (t->fixed) {
        idle_timer_reset_fixed(t, deadline_ns);
    } else {
        idle_timer_reset_buggy(t, deadline_ns);
    }
}

/* ---- idle_expired: completes once the deadline has passed ------------- */

typedef struct idle_expired {
    pl_future base;
    idle_timer *t;
} idle_expired;

static pl_poll_result idle_expired_poll(pl_future *f, pl_context *cx)
{
    idle_timer *t = ((idle_expired *)f)->t;
    if (pl_now(cx->ex) >= t->deadline_ns) {
        pl_timer_disarm(&t->timer);
        pl_waker_slot_clear(&t->waker);
        return PL_READY;
    }
    pl_waker_slot_set(&t->waker, &cx->waker);
    if (pl_timer_is_armed(&t->timer)) {
        pl_timer_set_waker(&t->timer, &cx->waker);
        return PL_PENDING;
    }
    if (pl_timer_arm(cx->ex, &t->timer, t->deadline_ns, &cx->waker) != 0) {
        pl_waker_wake_by_ref(&cx->waker); /* no memory for the heap: retry */
    }
    return PL_PENDING;
}

static void idle_expired_drop(pl_future *f)
{
    idle_timer *t = ((idle_expired *)f)->t;
    pl_timer_disarm(&t->timer);
    pl_waker_slot_clear(&t->waker);
}

static const pl_future_vtable idle_expired_vt = {"idle_expired", idle_expired_poll,
                                                 idle_expired_drop};

/* ---- Watchdog: closes the connection when idle ------------------------ */

typedef struct watchdog {
    pl_future base;
    idle_state *st;
    idle_expired wait;
} watchdog;

static pl_poll_result watchdog_poll(pl_future *f, pl_context *cx)
{
    watchdog *self = (watchdog *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = (idle_expired){PL_FUTURE_INIT(&idle_expired_vt), &self->st->idle};
    PL_AWAIT(cx, &self->wait);
    self->st->closed = true;
    PL_ASYNC_END;
}

static void watchdog_drop(pl_future *f) { pl_drop_child(&((watchdog *)f)->wait.base); }

static const pl_future_vtable watchdog_vt = {"watchdog", watchdog_poll, watchdog_drop};

/* ---- The connection: requests, then a goodbye ------------------------ */

typedef struct conn {
    pl_future base;
    idle_state *st;
    int i;
    pl_time start_ns;
    pl_sleep work;
} conn;

static pl_poll_result conn_poll(pl_future *f, pl_context *cx)
{
    conn *self = (conn *)f;
    idle_timer *idle = &self->st->idle;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < REQUESTS; self->i++) {
        self->start_ns = pl_now(cx->ex);
        self->work = pl_sleep_for(1 * PL_MS); /* serve one request */
        PL_AWAIT(cx, &self->work);
        self->st->served++;
        idle_timer_reset(idle, self->start_ns + IDLE_NS);
    }
    self->start_ns = pl_now(cx->ex); /* the goodbye arrives */
    self->work = pl_sleep_for(1 * PL_MS); /* flush what is queued */
    PL_AWAIT(cx, &self->work);
    idle_timer_reset(idle, self->start_ns + LINGER_NS);
    PL_ASYNC_END;
}

static void conn_drop(pl_future *f) { pl_drop_child(&((conn *)f)->work.base); }

static const pl_future_vtable conn_vt = {"conn", conn_poll, conn_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, idle_state *st, bool fixed)
{
    st->idle = (idle_timer){.ex = ex, .deadline_ns = pl_now(ex) + IDLE_NS,
                            .timer = PL_TIMER_INIT, .waker = PL_WAKER_EMPTY, .fixed = fixed};
    watchdog w = {.base = PL_FUTURE_INIT(&watchdog_vt), .st = st};
    conn c = {.base = PL_FUTURE_INIT(&conn_vt), .st = st};
    int rc = PL_SPAWN(ex, w, "watchdog", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, c, "conn", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    idle_state *st = state;
    if (!st->closed || st->served != REQUESTS) {
        return pl_check_fail(msg, len, "closed=%d after %d requests, want 1 after %d", st->closed,
                        st->served, REQUESTS);
    }
    return 0;
}

PL_SCENARIO(bug_deadline_reset_sc, .name = "bug_deadline_reset",
            .summary = "idle timer reset to a past deadline is not re-armed (lost wakeup)",
            .state_size = sizeof(idle_state), .setup = setup_buggy, .check = check,
            .expect = "lost_wakeup");

PL_SCENARIO(fix_deadline_reset_sc, .name = "fix_deadline_reset",
            .summary = "idle timer reset always re-arms (past deadlines fire next tick)",
            .state_size = sizeof(idle_state), .setup = setup_fixed, .check = check);
