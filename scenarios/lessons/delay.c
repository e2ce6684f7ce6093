/* Lesson: a hand-written future, the Delay state machine.
 *
 * pl_sleep already exists; this is how one would write it, to see what
 * the coroutine macros and the library futures do underneath. A task
 * awaits Delay(5 ms) three times, and the check verifies that at least
 * 15 ms passed (virtual time in the simulator, real time on epoll). A
 * heartbeat task beats every millisecond meanwhile.
 *
 * What it teaches, the whole waker contract in one small future:
 *  - Lazy: delay_init only stores the duration; the deadline is taken
 *    at the first poll.
 *  - Before returning PL_PENDING, make sure someone will wake the waker
 *    of this very poll: the first poll arms a timer with a clone of it.
 *  - Polls may come without a wake (spurious): a later poll checks the
 *    clock, and if it is not time yet, it re-stores the newest waker.
 *    Under the simulator every poll hands out a fresh waker identity;
 *    keeping the first one would be a stale waker. (Try it: delete the
 *    pl_timer_set_waker call and `pollen run delay` reports stale_waker
 *    within a few dozen seeds.)
 *  - Drop releases what the future holds: an armed timer holds a waker
 *    clone, so drop disarms it.
 */
#include <pollen/sim.h>


enum { DELAYS = 3, BEATS = 15 };
#define DELAY_NS (5 * PL_MS)

/* ---- The Delay future --------------------------------------------------- */

typedef enum delay_phase {
    DELAY_INIT,    /* not polled yet: no deadline, no timer */
    DELAY_WAITING, /* deadline known, timer armed (or fired) */
} delay_phase;

typedef struct delay {
    pl_future base;
    delay_phase phase;
    pl_time duration_ns;
    pl_time deadline_ns; /* set by the first poll */
    pl_timer timer;      /* must not move while armed: it is in the heap */
} delay;

/* Arms the timer to wake (a clone of) this poll's waker at the deadline. */
static void arm_or_retry(delay *self, pl_context *cx)
{
    if (pl_timer_arm(cx->ex, &self->timer, self->deadline_ns, &cx->waker) != 0) {
        /* No memory for the timer heap: ask to be polled again and retry
         * then, rather than park with nobody to wake us. */
        pl_waker_wake_by_ref(&cx->waker);
    }
}

static pl_poll_result delay_poll(pl_future *f, pl_context *cx)
{
    delay *self = (delay *)f;
    pl_time now = pl_now(cx->ex);
    switch (self->phase) {
    case DELAY_INIT:
        /* First poll: the clock starts now, not when delay_init ran. */
        self->deadline_ns = now + self->duration_ns;
        self->phase = DELAY_WAITING;
        if (now >= self->deadline_ns) {
            return PL_READY; /* Delay(0): nothing to wait for */
        }
        arm_or_retry(self, cx);
        return PL_PENDING;
    case DELAY_WAITING:
        if (now >= self->deadline_ns) {
            /* Done. The timer may not have fired yet (under the
             * simulator timers fire late, and a poll may come first), so
             * disarm it: that drops the waker clone it holds. */
            pl_timer_disarm(&self->timer);
            return PL_READY;
        }
        if (!pl_timer_is_armed(&self->timer)) {
            arm_or_retry(self, cx); /* the first arm failed (timers never fire early) */
            return PL_PENDING;
        }
        /* Too early: a spurious poll, or a wake meant for someone else.
         * Keep waiting, but with this poll's waker, the only one the
         * contract says must be woken. */
        pl_timer_set_waker(&self->timer, &cx->waker);
        return PL_PENDING;
    }
    return PL_READY; /* not reached: every phase returns above */
}

/* Disarming an unarmed timer is allowed, so drop need not know the phase. */
static void delay_drop(pl_future *f) { pl_timer_disarm(&((delay *)f)->timer); }

static const pl_future_vtable delay_vtable = {"delay", delay_poll, delay_drop};

static delay delay_init(pl_time duration_ns)
{
    return (delay){
        .base = PL_FUTURE_INIT(&delay_vtable),
        .phase = DELAY_INIT,
        .duration_ns = duration_ns,
        .timer = PL_TIMER_INIT,
    };
}

/* ---- A task awaiting it three times ------------------------------------- */

typedef struct delay_state {
    pl_time elapsed_ns; /* measured by the napper */
    int delays_done;
    int beats; /* counted by the heartbeat */
} delay_state;

typedef struct napper {
    pl_future base;
    delay_state *st;
    pl_time start_ns;
    int i;
    delay nap;
} napper;

static pl_poll_result napper_poll(pl_future *f, pl_context *cx)
{
    napper *self = (napper *)f;
    PL_ASYNC_BEGIN(self);
    self->start_ns = pl_now(cx->ex);
    for (self->i = 0; self->i < DELAYS; self->i++) {
        self->nap = delay_init(DELAY_NS);
        PL_AWAIT(cx, &self->nap);
        self->st->delays_done++;
    }
    self->st->elapsed_ns = pl_now(cx->ex) - self->start_ns;
    PL_ASYNC_END;
}

static void napper_drop(pl_future *f) { pl_drop_child(&((napper *)f)->nap.base); }

static const pl_future_vtable napper_vtable = {"napper", napper_poll, napper_drop};

/* ---- A heartbeat, the rest of the program ------------------------------ */

/* Beats every millisecond while the napper sleeps. Besides standing for
 * whatever else a real program does meanwhile, it moves the clock in
 * small steps: the simulator injects spurious wakes and polls when the
 * clock moves, so with a heartbeat some land while a Delay is still
 * waiting, which is exactly the case the waker refresh is for. Alone, a
 * sleeper's only event is its own deadline. */
typedef struct heartbeat {
    pl_future base;
    delay_state *st;
    pl_sleep beat;
} heartbeat;

static pl_poll_result heartbeat_poll(pl_future *f, pl_context *cx)
{
    heartbeat *self = (heartbeat *)f;
    PL_ASYNC_BEGIN(self);
    while (self->st->beats < BEATS) {
        self->beat = pl_sleep_for(1 * PL_MS);
        PL_AWAIT(cx, &self->beat);
        self->st->beats++;
    }
    PL_ASYNC_END;
}

static void heartbeat_drop(pl_future *f) { pl_drop_child(&((heartbeat *)f)->beat.base); }

static const pl_future_vtable heartbeat_vtable = {"heartbeat", heartbeat_poll, heartbeat_drop};

/* ---- The scenario ------------------------------------------------------- */

static int delay_setup(pl_executor *ex, void *state)
{
    napper n = {.base = PL_FUTURE_INIT(&napper_vtable), .st = state};
    heartbeat h = {.base = PL_FUTURE_INIT(&heartbeat_vtable), .st = state};
    int rc = PL_SPAWN(ex, n, "napper", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, h, "heartbeat", NULL);
}

static int delay_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const delay_state *st = state;
    if (st->delays_done != DELAYS) {
        return pl_check_fail(msg, len, "%d of %d delays completed", st->delays_done, DELAYS);
    }
    if (st->beats != BEATS) {
        return pl_check_fail(msg, len, "%d of %d heartbeats", st->beats, BEATS);
    }
    if (st->elapsed_ns < DELAYS * DELAY_NS) {
        return pl_check_fail(msg, len, "%d delays of %lld ms took only %lld ns", DELAYS,
                            (long long)(DELAY_NS / PL_MS), (long long)st->elapsed_ns);
    }
    return 0;
}

PL_SCENARIO(delay_scenario, .name = "delay",
            .summary = "lesson: a hand-written Delay future (timer, waker refresh), awaited 3x",
            .state_size = sizeof(delay_state), .setup = delay_setup, .check = delay_check);
