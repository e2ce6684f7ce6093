/* pollen/future.h: futures, poll contexts and coroutine macros.
 *
 * A future is a user struct whose first member is a pl_future. The base
 * points at a const vtable {name, poll, drop}. poll(self, cx) returns
 * PL_READY or PL_PENDING and never blocks; the output lives in the
 * future's own struct and is read after READY.
 *
 * Contract (the simulator checks every rule):
 *  - Futures are lazy: initialising one runs none of its code.
 *  - Before returning PL_PENDING, a future makes sure the waker of the
 *    most recent cx will be woken when it can progress: it stores a clone
 *    where the event will fire, or delegates to a child future that does.
 *  - A poll may come without a wake; a correct future tolerates it.
 *  - A future is never polled after READY, nor after it was dropped.
 *    All polls go through pl_poll(), which enforces this.
 *  - pl_drop() runs the vtable's drop at most once; it may be called on a
 *    pending or a completed future. The executor drops a task's future as
 *    soon as it completes or is cancelled; drop releases what the future
 *    holds and leaves plain output fields readable.
 */
#ifndef POLLEN_FUTURE_H
#define POLLEN_FUTURE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/waker.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_poll_result { PL_READY = 0, PL_PENDING = 1 } pl_poll_result;

typedef struct pl_executor pl_executor;
typedef struct pl_task pl_task;
typedef struct pl_future pl_future;

typedef struct pl_poll_watch pl_poll_watch;

/* Where a coroutine macro stands (PL_AWAIT, PL_YIELD): a static object
 * each macro use defines, so that one pointer names the site. */
typedef struct pl_await_site {
    const char *file; /* __FILE__ */
    int line;
    const char *func; /* __func__ */
} pl_await_site;

/* What a poll receives. Read-only for futures; valid only during the
 * poll it was passed to. Clone `waker` to keep it. */
typedef struct pl_context {
    pl_waker waker;     /* wakes the task being polled */
    pl_executor *ex;    /* the executor running the task */
    pl_task *task;      /* the task being polled */
    const pl_poll_watch *watch; /* NULL in production; see pl_poll_watch */
} pl_context;

/* A wait condition: what a parked future waits for, declared with
 * pl_wait_declare just before it returns PL_PENDING. pollen's own
 * primitives declare theirs; user futures may. Under the simulator a
 * parked task whose declared condition holds at a probe point is a
 * finding (it waits for something that is already there, and nobody
 * woke it). The struct is copied; `subject` must stay valid while the
 * task stays parked (the primitive outlives its waiters). */
typedef struct pl_wait {
    const char *object;    /* what is waited on, in words: "semaphore" */
    const char *condition; /* what for, in words: "a permit is free" */
    const void *subject;   /* the primitive, handed to holds() */
    /* True when the condition holds now. Must not change anything; may
     * say how it holds in why (e.g. "2 permits are free"). */
    bool (*holds)(const void *subject, char *why, size_t why_len);
    const char *file;      /* where it was declared (__FILE__, __LINE__) */
    int line;
} pl_wait;

/* Hooks an observed executor attaches to every poll context (the
 * simulator's oracles use them). NULL in production, where each use
 * below is one predictable branch. Called on the executor thread. */
struct pl_poll_watch {
    void *ud;
    /* A pl_poll of a child future `f` begins / ends (nesting gives the
     * chain of futures a task is parked in; the task's own future is
     * bracketed by the observer's poll_begin / poll_end instead). */
    void (*enter)(void *ud, pl_future *f);
    void (*leave)(void *ud, pl_future *f, pl_poll_result r); /* may be NULL */
    /* pl_wait_declare: the future being polled waits for *w. */
    void (*wait)(void *ud, const pl_wait *w);
    /* pl_poll_interval_declare: the task polls on purpose until its next
     * poll (it checks a condition nothing signals, once per tick). */
    void (*on_purpose)(void *ud);
    /* pl_trace_event: a line for the timeline, formatted by the watch
     * only if it keeps one (may be NULL). */
    void (*event)(void *ud, const char *fmt, va_list ap);
    /* A pl_poll made by PL_AWAIT ends: called instead of leave, with the
     * await's site (static storage); the innermost future whose pl_poll
     * has not returned is the one awaiting. For a PL_YIELD, child is NULL
     * and r PL_PENDING (no child was polled). May be NULL (leave is
     * called instead). */
    void (*await)(void *ud, pl_future *child, pl_poll_result r, const pl_await_site *site);
};

typedef struct pl_future_vtable {
    const char *name; /* shown in traces and findings; never NULL */
    pl_poll_result (*poll)(pl_future *self, pl_context *cx);
    void (*drop)(pl_future *self); /* optional: releases what self holds */
} pl_future_vtable;

enum {
    PL_FUTURE_DONE = 1u << 0,    /* poll returned READY */
    PL_FUTURE_DROPPED = 1u << 1, /* pl_drop ran */
};

struct pl_future {
    const pl_future_vtable *vtable;
    uint16_t flags;  /* PL_FUTURE_*; owned by pl_poll and pl_drop */
    uint16_t reserved;
    uint32_t resume; /* coroutine resume point; 0 before the first poll */
};

/* The initialiser for a future's base member. */
#define PL_FUTURE_INIT(vt) ((pl_future){(vt), 0, 0, 0})

/* Reports a broken caller contract (poll after READY or after drop,
 * double drop). Under the simulator this becomes a finding; otherwise it
 * aborts with a message. Internal: called by the inline helpers below. */
void pl__future_misuse(pl_future *f, int what);
enum { PL__MISUSE_POLL_AFTER_READY = 1, PL__MISUSE_DOUBLE_DROP = 2 };

/* pl_poll under a watch: enter, poll, leave. Internal. */
pl_poll_result pl__poll_watched(pl_future *f, pl_context *cx);

/* The same for PL_AWAIT at `site`: its end goes to the watch's await
 * hook. Internal. */
pl_poll_result pl__poll_watched_at(pl_future *f, pl_context *cx, const pl_await_site *site);

/* Polls `f` once. Returns PL_READY (and marks it done) or PL_PENDING.
 * Allowed from within a poll (to poll a child) and from the executor.
 * Polling a done or dropped future is a contract violation. */
static inline pl_poll_result pl_poll(pl_future *f, pl_context *cx)
{
    if (f->flags != 0) {
        pl__future_misuse(f, PL__MISUSE_POLL_AFTER_READY);
        return PL_READY;
    }
    if (cx->watch != NULL) {
        return pl__poll_watched(f, cx);
    }
    pl_poll_result r = f->vtable->poll(f, cx);
    if (r == PL_READY) {
        f->flags |= PL_FUTURE_DONE;
    }
    return r;
}

/* Runs the future's drop once. A second call is a contract violation. */
static inline void pl_drop(pl_future *f)
{
    if (f->flags & PL_FUTURE_DROPPED) {
        pl__future_misuse(f, PL__MISUSE_DOUBLE_DROP);
        return;
    }
    f->flags |= PL_FUTURE_DROPPED;
    if (f->vtable->drop != NULL) {
        f->vtable->drop(f);
    }
}

/* pl_poll for PL_AWAIT: the await's site reaches the watch only, so in
 * production this is pl_poll instruction for instruction (the site's
 * address is materialised in the watched branch alone). Internal. */
static inline pl_poll_result pl__poll_at(pl_future *f, pl_context *cx,
                                         const pl_await_site *site)
{
    if (f->flags != 0) {
        pl__future_misuse(f, PL__MISUSE_POLL_AFTER_READY);
        return PL_READY;
    }
    if (cx->watch != NULL) {
        return pl__poll_watched_at(f, cx, site);
    }
    pl_poll_result r = f->vtable->poll(f, cx);
    if (r == PL_READY) {
        f->flags |= PL_FUTURE_DONE;
    }
    return r;
}

static inline bool pl_future_is_done(const pl_future *f)
{
    return (f->flags & PL_FUTURE_DONE) != 0;
}

/* For a parent's drop: drops a child future unless it was never
 * initialised (a zeroed field has no vtable) or was already dropped.
 * A parent cancelled while suspended in an await must drop the child it
 * awaits, because that child holds a clone of the task's waker (in a
 * timer, a wait list, an I/O source); forgetting it is a waker leak. */
static inline void pl_drop_child(pl_future *child)
{
    if (child->vtable != NULL && (child->flags & PL_FUTURE_DROPPED) == 0) {
        pl_drop(child);
    }
}

/* Declares what the future being polled waits for (see pl_wait). Free
 * in production. Call it from a poll that is about to return PENDING;
 * a later poll of the same task forgets it. Several may be declared (a
 * select waits for any of its branches). */
static inline void pl_wait_declare(pl_context *cx, const pl_wait *w)
{
    if (cx->watch != NULL) {
        cx->watch->wait(cx->watch->ud, w);
    }
}

/* pl_wait_declare for the usual case, with the pl_wait built only under a
 * watch, so that in production a PENDING pays one branch; the site is
 * where the macro stands. `subject` is handed to `holds`. */
#define PL_WAIT_DECLARE(cx, object, condition, subject, holds)                    \
    do {                                                                          \
        if ((cx)->watch != NULL) {                                                \
            pl_wait_declare((cx), &(pl_wait){(object), (condition), (subject),    \
                                             (holds), __FILE__, __LINE__});       \
        }                                                                         \
    } while (0)

/* Declares that the task being polled polls on purpose: it checks a
 * condition that nothing signals and comes back after a timer (a poll
 * interval). Under the simulator such a task is not probed for lost
 * wakeups while timers can still wake it: a probe would find the
 * condition before its own timer does, by design. Free in production.
 * pl_sleep_poll_interval (timer.h) is the usual way to say it. */
static inline void pl_poll_interval_declare(pl_context *cx)
{
    if (cx->watch != NULL) {
        cx->watch->on_purpose(cx->watch->ud);
    }
}

/* Reports an await point to the watch (PL_YIELD under a watch only).
 * Internal. */
void pl__await_point(pl_context *cx, const pl_await_site *site);

/* Buggify: a fault-injection point in user code. In production it is
 * always false. Under the simulator each site (file basename and line) is
 * enabled per run with one probability and then fires with another, so
 * rare paths (a retry, a slow branch) get exercised. The site's identity
 * (its decision key) is the file's base name and line; the function only
 * names it in reports (pl__executor_buggify_site). */
bool pl__buggify(pl_context *cx, const char *file, int line, const char *func);
#define PL_BUGGIFY(cx) pl__buggify((cx), __FILE__, __LINE__, __func__)

/* ---- Trace events ----------------------------------------------------
 * PL_TRACE_EVENT(cx, fmt, ...) adds a printf-formatted line to the
 * simulator's timeline (`--trace`) and to the Chrome trace (an instant
 * on the polled task's track), from inside a poll:
 *
 *     PL_TRACE_EVENT(cx, "sent %zu bytes to %s", n, peer);
 *
 * Log-only: an event never enters the trace hash or changes a run, so
 * adding or removing one keeps every replay file valid. At most
 * PL_TRACE_EVENT_MAX - 1 bytes of the text are kept (the rest is cut,
 * the kept part ending in "..."); a newline becomes a space.
 *
 * Free in production: the macro is one predictable branch on the poll
 * watch, NULL there, and neither evaluates its arguments nor formats.
 * Under the simulator the text is formatted only when the run keeps its
 * timeline (--trace, --chrome-trace, replays, a crash's ring); so do not
 * put side effects in the arguments. pl_trace_event is the same as a
 * function (its arguments are always evaluated). */
#define PL_TRACE_EVENT_MAX 160

#if defined(__GNUC__) || defined(__clang__)
#define PL__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PL__PRINTF(f, a)
#endif

void pl_trace_event(pl_context *cx, const char *fmt, ...) PL__PRINTF(2, 3);

#define PL_TRACE_EVENT(cx, ...)                                             \
    do {                                                                    \
        if ((cx)->watch != NULL) {                                          \
            pl_trace_event((cx), __VA_ARGS__);                              \
        }                                                                   \
    } while (0)

/* The same line from a plain function called inside a poll, with no
 * context at hand (a codec, a state machine's step, a log helper): it
 * goes on the task being polled by the executor running on this thread.
 * Outside a poll, and on an executor without a watch (production), it
 * does nothing and formats nothing; its arguments are evaluated (it is a
 * function). Any thread. */
void pl_trace_note(const char *fmt, ...) PL__PRINTF(1, 2);

/* ---- Coroutine macros ----------------------------------------------
 * Linear async code in the style of protothreads: the preprocessor turns
 * it into the same state machine one would write by hand.
 *
 *   static pl_poll_result two_steps_poll(pl_future *f, pl_context *cx) {
 *       two_steps *self = (two_steps *)f;
 *       PL_ASYNC_BEGIN(self);
 *       self->sleep = pl_sleep_for(10 * PL_MS);
 *       PL_AWAIT(cx, &self->sleep);
 *       self->out = 42;
 *       PL_ASYNC_END;
 *   }
 *
 * Rules: locals do not survive an await (keep state in the struct); at
 * most one PL_AWAIT / PL_YIELD per source line; no awaits inside a
 * nested switch. `self` must point to the struct whose first member is
 * the pl_future.
 *
 * Under a poll watch (the simulator) an await that returns PL_PENDING
 * reports where it stands (file, line, function) so that a parked task's
 * async backtrace names the awaits it is parked in. PL_AWAIT pays nothing
 * for it in production: the site rides on pl_poll's own watch branch
 * (pl__poll_at). PL_YIELD, which wakes itself anyway, pays one branch. */
#if defined(__GNUC__) && (defined(__clang__) || __GNUC__ >= 7)
#define PL__FALLTHROUGH __attribute__((fallthrough))
#else
#define PL__FALLTHROUGH ((void)0)
#endif

/* The site of the macro that expands this: a static const object (its
 * initialiser is an address constant, __func__ included). */
#define PL__AWAIT_SITE                                                      \
    static const pl_await_site pl__await_here = {__FILE__, __LINE__, __func__}

#define PL__AWAIT_POINT(cx)                                                 \
    do {                                                                    \
        PL__AWAIT_SITE;                                                     \
        if ((cx)->watch != NULL) {                                          \
            pl__await_point((cx), &pl__await_here);                         \
        }                                                                   \
    } while (0)

#define PL_ASYNC_BEGIN(self)                                                \
    pl_future *pl__co = (pl_future *)(self);                                \
    switch (pl__co->resume) {                                               \
    case 0:

/* Polls `child` (a pointer to a future struct) until it is READY,
 * returning PL_PENDING from the enclosing poll meanwhile. */
#define PL_AWAIT(cx, child)                                                 \
    do {                                                                    \
        pl__co->resume = __LINE__;                                          \
        PL__FALLTHROUGH;                                                    \
    case __LINE__: {                                                        \
        PL__AWAIT_SITE;                                                     \
        if (pl__poll_at((pl_future *)(child), (cx), &pl__await_here) ==     \
            PL_PENDING) {                                                   \
            return PL_PENDING;                                              \
        }                                                                   \
    }                                                                       \
    } while (0)

/* Gives other tasks a turn: wakes itself and returns PL_PENDING once. */
#define PL_YIELD(cx)                                                        \
    do {                                                                    \
        pl__co->resume = __LINE__;                                          \
        pl_waker_wake_by_ref(&(cx)->waker);                                 \
        PL__AWAIT_POINT(cx);                                                \
        return PL_PENDING;                                                  \
    case __LINE__:;                                                         \
    } while (0)

#define PL_ASYNC_END                                                        \
    }                                                                       \
    return PL_READY

#ifdef __cplusplus
}
#endif
#endif
