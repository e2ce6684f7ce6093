/* core/src/sleep.c: the futures on timers (timer.c): sleep, timeout and
 * interval. */
#include <string.h>

#include "internal.h"
#include "pollen/timer.h"

/* ---- Sleep ------------------------------------------------------------ */

static pl_poll_result sleep_poll(pl_future *f, pl_context *cx)
{
    pl_sleep *s = (pl_sleep *)f;
    pl_time now = pl_now(cx->ex);
    if (s->timer.state == PL__TIMER_DURATION) {
        /* Lazy: the duration counts from the first poll. */
        s->deadline_ns = pl__time_add(now, s->deadline_ns);
        s->timer.state = PL__TIMER_IDLE;
    }
    if (now >= s->deadline_ns || s->timer.state == PL__TIMER_FIRED) {
        pl_timer_disarm(&s->timer);
        return PL_READY;
    }
    if (!pl__timer_armed(&s->timer)) {
        if (pl_timer_arm(cx->ex, &s->timer, s->deadline_ns, &cx->waker) != 0) {
            /* Out of memory for the heap: poll again soon rather than
             * hang; the next attempt may succeed. */
            pl_waker_wake_by_ref(&cx->waker);
        }
        return PL_PENDING;
    }
    pl_timer_set_waker(&s->timer, &cx->waker);
    return PL_PENDING;
}

static void sleep_drop(pl_future *f) { pl_timer_disarm(&((pl_sleep *)f)->timer); }

const pl_future_vtable pl__sleep_vtable = {"sleep", sleep_poll, sleep_drop};

static pl_poll_result sleep_poll_interval_poll(pl_future *f, pl_context *cx)
{
    pl_poll_result r = sleep_poll(f, cx);
    if (r == PL_PENDING) {
        pl_poll_interval_declare(cx);
    }
    return r;
}

const pl_future_vtable pl__sleep_poll_vtable = {"poll_interval", sleep_poll_interval_poll,
                                                sleep_drop};

void pl_sleep_reset(pl_sleep *s, pl_time deadline_ns)
{
    s->deadline_ns = deadline_ns;
    if (pl__timer_armed(&s->timer)) {
        if (pl_timer_arm(s->timer.ex, &s->timer, deadline_ns, &s->timer.waker) != 0) {
            /* Out of memory: armed at the old deadline, it could fire
             * early and complete the sleep. Wake its task instead, whose
             * next poll arms it again (as sleep_poll does). */
            pl_waker_slot_wake(&s->timer.waker);
            pl_timer_disarm(&s->timer);
        }
    } else {
        s->timer.state = PL__TIMER_IDLE; /* fired, or a duration not yet polled */
    }
}

/* ---- Timeout ---------------------------------------------------------- */

static pl_poll_result timeout_poll(pl_future *f, pl_context *cx)
{
    pl_timeout *t = (pl_timeout *)f;
    if (pl_poll(t->inner, cx) == PL_READY) {
        t->result = 0;
        pl_drop_child(&t->sleep.base);
        return PL_READY;
    }
    if (pl_poll(&t->sleep.base, cx) == PL_READY) {
        t->result = PL_ETIMEDOUT;
        pl_drop_child(t->inner);
        pl_drop_child(&t->sleep.base);
        return PL_READY;
    }
    return PL_PENDING;
}

static void timeout_drop(pl_future *f)
{
    pl_timeout *t = (pl_timeout *)f;
    if (!pl_future_is_done(t->inner)) {
        pl_drop_child(t->inner);
    }
    pl_drop_child(&t->sleep.base);
}

static const pl_future_vtable timeout_vtable = {"timeout", timeout_poll, timeout_drop};

pl_timeout pl_timeout_make(pl_future *inner, pl_time duration_ns)
{
    return (pl_timeout){PL_FUTURE_INIT(&timeout_vtable), inner, pl_sleep_for(duration_ns), 0, 0};
}

/* ---- Interval --------------------------------------------------------- */

pl_interval pl_interval_make(pl_time period_ns)
{
    return (pl_interval){period_ns > 0 ? period_ns : 1, 0, 0};
}

static pl_poll_result interval_tick_poll(pl_future *f, pl_context *cx)
{
    pl_interval_tick *it = (pl_interval_tick *)f;
    pl_interval *iv = it->interval;
    pl_time now = pl_now(cx->ex);
    if (it->sleep.base.vtable == NULL) {
        /* The first tick completes at once, as tokio's does. */
        it->sleep = pl_sleep_until(iv->ticks == 0 ? now : iv->next_ns);
    }
    if (pl_poll(&it->sleep.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    pl_drop_child(&it->sleep.base);
    pl_time next = pl__time_add(it->sleep.deadline_ns, iv->period_ns);
    iv->next_ns = next > now ? next : pl__time_add(now, iv->period_ns);
    iv->ticks++;
    return PL_READY;
}

static void interval_tick_drop(pl_future *f)
{
    pl_interval_tick *it = (pl_interval_tick *)f;
    if (it->sleep.base.vtable != NULL) {
        pl_drop_child(&it->sleep.base);
    }
}

static const pl_future_vtable interval_tick_vtable = {"interval", interval_tick_poll,
                                                      interval_tick_drop};

pl_interval_tick pl_interval_tick_make(pl_interval *iv)
{
    pl_interval_tick it;
    memset(&it, 0, sizeof it);
    it.base = PL_FUTURE_INIT(&interval_tick_vtable);
    it.interval = iv;
    return it;
}
