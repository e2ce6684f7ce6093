/* pollen/timer.h: timers, sleep, timeout and interval.
 *
 * Timers fire in (fire time, arming sequence) order: equal deadlines
 * fire in arming order in production, and in an order the simulator
 * decides under simulation. A timer never fires early; under simulation
 * it may fire late by whole lateness quanta.
 */
#ifndef POLLEN_TIMER_H
#define POLLEN_TIMER_H

#include <stdbool.h>
#include <stdint.h>

#include "pollen/executor.h"
#include "pollen/future.h"
#include "pollen/time.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A timer node. Caller-allocated (embedded in a future); must not move
 * while armed. All fields are private to the executor. */
typedef struct pl_timer {
    uint64_t seq;    /* arming order, for the tie-break */
    pl_executor *ex; /* set while armed */
    pl_waker waker;  /* woken (and consumed) when it fires */
    uint32_t state;  /* 0 idle, 1 fired, 2 idle in a sleep not yet polled
                        (PL__TIMER_DURATION); while armed 3 + its group */
    uint32_t slot;   /* while armed, its place in the group's timers */
} pl_timer;

#define PL_TIMER_INIT ((pl_timer){0, NULL, {NULL, NULL, 0, 0}, 0, 0})

/* An idle timer whose sleep holds a duration, not yet a deadline. */
#define PL__TIMER_DURATION 2u

/* Arms `t` to fire at `deadline_ns`, waking a clone of `w`. A deadline
 * before the executor's now (pl_now) is clamped to now, so it fires at the
 * next tick among the timers due now, in arming order; a fire time is
 * never early and never in the past. Under the simulator, lateness is
 * added after the clamp. Re-arming an armed timer moves it
 * and takes a new sequence number. Executor thread only. Returns 0 or
 * PL_ENOMEM (then nothing changed: an armed timer stays as it was). */
int pl_timer_arm(pl_executor *ex, pl_timer *t, pl_time deadline_ns, const pl_waker *w);

/* Replaces the waker an armed timer will wake (keeps its place). */
void pl_timer_set_waker(pl_timer *t, const pl_waker *w);

/* Disarms `t` if armed and drops its waker. Safe on an unarmed timer. */
void pl_timer_disarm(pl_timer *t);

bool pl_timer_is_armed(const pl_timer *t);
/* True once the timer fired since it was last armed. */
bool pl_timer_has_fired(const pl_timer *t);

/* ---- Sleep ------------------------------------------------------------
 * Completes at its deadline. pl_sleep measures the duration from its first
 * poll (futures are lazy); pl_sleep_until takes an absolute deadline. */
typedef struct pl_sleep {
    pl_future base;
    pl_time deadline_ns; /* absolute once polled; before, pl_sleep_for's
                            duration (the timer's state says which) */
    pl_timer timer;
} pl_sleep;

extern const pl_future_vtable pl__sleep_vtable;
static inline pl_sleep pl__sleep_of(const pl_future_vtable *vt, pl_time duration_ns)
{
    pl_sleep s = {PL_FUTURE_INIT(vt), duration_ns < 0 ? 0 : duration_ns, PL_TIMER_INIT};
    s.timer.state = PL__TIMER_DURATION;
    return s;
}
static inline pl_sleep pl_sleep_for(pl_time duration_ns)
{
    return pl__sleep_of(&pl__sleep_vtable, duration_ns);
}
static inline pl_sleep pl_sleep_until(pl_time deadline_ns)
{
    return (pl_sleep){PL_FUTURE_INIT(&pl__sleep_vtable), deadline_ns, PL_TIMER_INIT};
}

/* A sleep that also says its task polls on purpose (pl_poll_interval_declare):
 * for code that checks a condition nothing signals, once per period,
 *     loop { if (cond) break; await pl_sleep_poll_interval(1 * PL_MS); }
 * The simulator then does not report the task for finding the condition
 * before its sleep ends. Otherwise it is pl_sleep_for. */
extern const pl_future_vtable pl__sleep_poll_vtable;
static inline pl_sleep pl_sleep_poll_interval(pl_time duration_ns)
{
    return pl__sleep_of(&pl__sleep_poll_vtable, duration_ns);
}

/* Moves a sleep's deadline (absolute). A deadline already past makes the
 * next poll READY. If the sleep is parked its timer is re-armed, so the
 * task is woken at the new deadline. */
void pl_sleep_reset(pl_sleep *s, pl_time deadline_ns);

/* ---- Timeout ----------------------------------------------------------
 * Polls `inner` (not owned: it lives in the caller's struct) until it is
 * READY (result 0) or the duration passes (result PL_ETIMEDOUT; inner is
 * then dropped). Dropping the timeout drops inner if it did not finish. */
typedef struct pl_timeout {
    pl_future base;
    pl_future *inner;
    pl_sleep sleep;
    int result;
    uint32_t reserved; /* private: zero, so no byte is padding */
} pl_timeout;

pl_timeout pl_timeout_make(pl_future *inner, pl_time duration_ns);

/* ---- Interval ---------------------------------------------------------
 * Ticks every period_ns from its first tick's poll. Each call to
 * pl_interval_tick_make returns a future that completes at the next tick;
 * a tick that comes late
 * delays the ones after it (next = now + period), as tokio's Delay. */
typedef struct pl_interval {
    pl_time period_ns;
    pl_time next_ns;       /* next tick; 0 before the first */
    uint64_t ticks;        /* ticks completed */
} pl_interval;

typedef struct pl_interval_tick {
    pl_future base;
    pl_interval *interval;
    pl_sleep sleep;
} pl_interval_tick;

pl_interval pl_interval_make(pl_time period_ns);
pl_interval_tick pl_interval_tick_make(pl_interval *iv);

#ifdef __cplusplus
}
#endif
#endif
