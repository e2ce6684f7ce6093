/* core/src/executor_internal.h: the executor's, tasks' and wakers' shared state.
 *
 * executor.c (create, destroy, polling, the tick and the run loop),
 * task.c (spawn, lifetime, abort, join), waker.c (task wakers, clone
 * counting, the noop waker) and remote.c (remote wakers, the drain) all
 * work on these structs. What the hot paths call across those files is
 * static inline here (or in ready.h), so splitting the files costs no
 * call on a poll, a wake or a clone.
 */
#ifndef POLLEN_EXECUTOR_INTERNAL_H
#define POLLEN_EXECUTOR_INTERNAL_H

#include <pthread.h>
#include <stdalign.h>
#include <stdbool.h>

#include "internal.h"
#include "task_arena.h"

enum task_state {
    TASK_IDLE = 0,      /* parked: waits for a wake */
    TASK_SCHEDULED = 1, /* in the ready queue */
    TASK_RUNNING = 2,   /* being polled */
    TASK_DONE = 3,      /* completed */
    TASK_CANCELLED = 4, /* aborted; may still sit in the ready queue */
};

enum task_flag {
    TASK_WOKEN_IN_POLL = 1u << 0, /* woken during its own poll */
    TASK_ABORTABLE = 1u << 1,     /* the simulator may cancel it when woken */
    TASK_ABORT_IN_POLL = 1u << 2, /* aborted during its own poll */
    TASK_QUEUED = 1u << 3,        /* linked in the ready queue */
    TASK_CLONED_ELSEWHERE = 1u << 4, /* latest waker clone made outside its own poll */
    TASK_BACKGROUND = 1u << 5,    /* does not keep pl_run going (pl_task_set_background) */
    TASK_DROPPING = 1u << 6,      /* its future's drop is running */
    TASK_ABANDONED = 1u << 7,     /* left mid-poll (pl__executor_abandon_poll): never
                                     polled or dropped again */
};

/* A task a simulator holds (pl__executor_hold_task: its node is paused). */
enum task_hold {
    TASK_FREE = 0,   /* polled when picked */
    TASK_HOLD = 1,   /* not polled: set aside when picked */
    TASK_ASIDE = 2,  /* held and set aside, in ex->held_head's list (keeps TASK_QUEUED
                        and the queue's reference) */
};

/* What only observed or rotating executors keep, in the 16 bytes before
 * the task header (production tasks do not carry them). With the header's
 * first 8 bytes they make the public pl_task_head {gen, waker_clones, id,
 * polls}, read by observers at pl_task_head_of. */
typedef struct task_watch {
    uint64_t unused;       /* keeps the header, and so the future, 16-aligned */
    uint32_t gen;          /* pl__task_waker_gen */
    uint32_t waker_clones; /* live waker clones */
} task_watch;

/* What a recording executor (a flight recorder, pollen/dump.h) keeps
 * besides the watch, before it: watch_bytes is then sizeof(task_track). */
typedef struct task_track {
    const char *where;   /* spawn site "file:line"; NULL: unknown */
    const char *func;
    pl_time parked_ns;   /* when its latest poll returned PENDING */
    uint64_t unused;     /* keeps the future 16-aligned */
    task_watch watch;
} task_track;

/* 48 bytes: the joiner shares the name's slot while a join is registered
 * (the join keeps the name meanwhile), so neither costs a production task
 * its own 8 bytes. */
struct pl_task {
    uint32_t id;         /* pl_task_id; with the watch: pl_task_head */
    uint32_t polls;      /* pl_task_polls */
    pl_task *next;       /* ready queue link */
    pl_executor *ex;
    uint32_t refs;
    uint8_t state;       /* enum task_state */
    uint8_t flags;       /* enum task_flag */
    uint8_t joined;      /* 1: who.joiner is set (and holds the name) */
    uint8_t held;        /* enum task_hold (pl__executor_hold_task) */
    uint32_t slot;       /* index in ex->tasks */
    uint32_t size;       /* bytes of the future copy */
    union {
        const char *name; /* joined == 0 */
        pl_join *joiner;  /* joined == 1: the join waiting for completion */
    } who;
    alignas(16) unsigned char future[];
};

struct pl_remote_waker {
    pl_remote_waker *next;
    pl_task *task;
    uint32_t gen;
    bool wake;           /* false: dropped without waking */
};

/* pl_executor.interrupt: what run_loop must do between two polls. One
 * byte tested where the stop flag was, so a dump request costs the
 * production loop nothing until it is made. */
enum {
    PL__INTERRUPT_STOP = 1u << 0, /* pl_executor_stop */
    PL__INTERRUPT_DUMP = 1u << 1, /* pl_executor_request_dump (any thread, signals) */
};

/* The flight recorder's ring (recorder.h), kept in the executor: a poll's
 * record then finds its slot without a load of where the recorder is.
 * The ring is walked by a pointer rather than indexed by a count: the
 * hot path loads, bumps and stores one word, and tests the end. */
typedef struct pl__rec_event pl__rec_event;
typedef struct pl__recorder {
    pl__rec_event *at;   /* the next record goes here */
    pl__rec_event *end;  /* ring + capacity */
    pl__rec_event *ring;
    uint64_t laps;       /* times `at` went round: laps * capacity + (at - ring) written */
    pl_time clock_ns;    /* the latest clock record's time (none yet: PL_TIME_NEVER) */
} pl__recorder;

/* The interrupt byte's writers: atomic read-modify-writes (lock-free, so
 * a signal handler or another thread may set a bit). Its reader, the
 * loop on the executor's thread, loads it with a relaxed atomic load
 * (executor.c's interrupted()): a plain load racing another thread's
 * write is a data race. That costs one instruction per poll (gcc does not
 * fold an atomic load into the compare: callgrind, pollen-bench pingpong
 * 200000, 357.0 instructions per round trip against 359.1). */
#define pl__interrupt_set(ex, bits) __atomic_fetch_or(&(ex)->interrupt, (bits), __ATOMIC_RELAXED)
#define pl__interrupt_take(ex) __atomic_exchange_n(&(ex)->interrupt, 0, __ATOMIC_RELAXED)

struct pl_executor {
    pl_system system;
    bool owns_system;
    bool rotate;
    uint8_t interrupt;   /* PL__INTERRUPT_*: written only through pl__interrupt_set/take */
    uint8_t watch_bytes; /* before each task: sizeof(task_track) with a recorder,
                            else sizeof(task_watch) with the checking or the
                            counting waker, else 0 */
    bool now_stale;      /* now not read this tick: pl_now reads it when asked */
    uint32_t (*decide)(void *self, pl_decision_kind kind, uint32_t n, uint64_t key);
    const pl_observer *obs;
    void *obs_ud;
    pl_alloc_fn alloc;
    void *alloc_ud;
    uint32_t budget;
    uint32_t window;
    const pl_waker_vtable *waker_vtable; /* checking when observed, rotating or deciding;
                                            else counting (count_wakers) or fast */

    pl_task **win;       /* ring: the first min(ready_len, window) runnable tasks */
    uint32_t win_mask;   /* ring capacity - 1 (a power of two >= window) */
    uint32_t win_head;
    uint32_t win_len;
    uint32_t win_max;    /* window; 0 without decide(): the list alone is FIFO */
    pl_task *ready_head; /* the runnable tasks after the window, FIFO */
    pl_task *ready_tail;
    size_t ready_len;    /* in the window and after it */
    pl_task *held_head;  /* runnable tasks set aside while held (TASK_ASIDE), FIFO */
    pl_task *held_tail;
    size_t held_len;
    pl_task *running;
    pl__recorder recorder; /* beside the loop's lines; in use when rec is set */

    pl__task_arena arena; /* task blocks (task_arena.h) */
    pl_task **tasks;     /* every allocated task, finished or not */
    uint32_t tasks_len;
    uint32_t tasks_cap;
    size_t live;         /* tasks not yet finished */
    size_t live_background; /* of which marked background */
    const pl_poll_watch *watch; /* handed to observed polls; NULL in production */
    uint32_t next_id;

    pl_time now;
    const pl_clock_map *clock; /* per-task clocks (observer.h); NULL: the one clock */
    pl__timer_heap timers;
    uint32_t io_ids;
    size_t io_count;

    pl__recorder *rec;   /* &recorder with a flight recorder; NULL: none (recorder.h) */
    FILE *dump_out;      /* where a requested dump goes; NULL: stderr */
    uint8_t dump_format; /* pl_dump_format */

    pthread_mutex_t remote_lock;
    pl_remote_waker *remote_head; /* guarded by remote_lock */
    size_t remote_outstanding;    /* executor thread only */
};

/* ---- Task lifetime (task.c) ------------------------------------------- */

/* Drops the task's future unless that already happened (completion and
 * cancellation both drop at once, as Rust does). */
PL_INTERNAL void pl__task_drop_future(pl_task *t, bool cancelled);

/* Marks the task finished (TASK_DONE or TASK_CANCELLED), wakes its joiner
 * and lets go of the executor's reference unless the queue holds it. */
PL_INTERNAL void pl__task_finish(pl_task *t, uint8_t state);

/* Drops the future and finishes the task as cancelled. */
PL_INTERNAL void pl__task_cancel(pl_task *t);

/* Frees the task's memory (dropping its future first if need be). */
PL_INTERNAL void pl__task_free(pl_task *t);

static inline void task_release(pl_task *t)
{
    PL_ASSERT(t->refs > 0);
    if (--t->refs == 0) {
        pl__task_free(t);
    }
}

/* ---- Task wakers (waker.c) -------------------------------------------- */

/* The checking vtable (observed or rotating executors), the production
 * one (no hook, no identity check), and the production one that counts
 * clones (count_wakers: the fast one's steps, through calls). */
PL_INTERNAL extern const pl_waker_vtable pl__task_waker_vtable;
PL_INTERNAL extern const pl_waker_vtable pl__fast_waker_vtable;
PL_INTERNAL extern const pl_waker_vtable pl__counted_waker_vtable;

/* True when the executor's wakers count their clones in the task_watch
 * (the checking waker, the counting one). */
static inline bool pl__counts_clones(const pl_executor *ex)
{
    return ex->waker_vtable != &pl__fast_waker_vtable;
}

/* Executors without the fast waker only (ex->watch_bytes != 0). */
static inline task_watch *task_watch_of(const pl_task *t)
{
    return (task_watch *)(void *)((unsigned char *)(uintptr_t)t - sizeof(task_watch));
}

/* Recording executors only (ex->rec != NULL). */
static inline task_track *task_track_of(const pl_task *t)
{
    return (task_track *)(void *)((unsigned char *)(uintptr_t)t - sizeof(task_track));
}

/* Production tasks have no watch: their waker generation is always 0. */
static inline uint32_t task_gen(const pl_task *t)
{
    return t->ex->watch_bytes != 0 ? task_watch_of(t)->gen : 0;
}

static inline pl_waker task_waker(pl_task *t)
{
    return (pl_waker){t->ex->waker_vtable, t, task_gen(t), 0};
}

/* The one place a task becomes runnable through a checked waker: dedupes,
 * defers wakes during the task's own poll, ignores finished tasks and
 * (under rotation) superseded wakers, and tells the observer. */
PL_INTERNAL void pl__task_wake(pl_task *t, uint32_t gen, bool by_ref);

/* Counts a clone of the task's waker (observed executors). */
PL_INTERNAL void pl__task_count_clone(pl_executor *ex, pl_task *t, uint32_t gen);

/* The observer's orphan hook, for the last clone of a parked task's waker
 * going without a wake. Out of line: the drop path stays short. */
PL_INTERNAL void pl__task_notify_orphan(pl_executor *ex, pl_task *t);

/* Counts a drop of the task's waker (observed executors). */
static inline void count_drop(pl_executor *ex, pl_task *t, uint32_t gen)
{
    task_watch *w = task_watch_of(t);
    if (w->waker_clones > 0) {
        if (--w->waker_clones == 0 && t->state == TASK_IDLE) {
            pl__task_notify_orphan(ex, t);
        }
    } else if (ex->obs != NULL && ex->obs->waker_drop != NULL) {
        ex->obs->waker_drop(ex->obs_ud, t, gen);
    }
}

/* ---- Polling (executor.c) ------------------------------------------------ */

/* The task's own future: pl_poll without the watch's enter/leave, which
 * the observer's poll_begin/poll_end (or the dump's tree) bracket. */
static inline pl_poll_result pl__poll_root(pl_future *f, pl_context *cx)
{
    if (f->flags != 0) {
        pl__future_misuse(f, PL__MISUSE_POLL_AFTER_READY);
        return PL_READY;
    }
    pl_poll_result r = f->vtable->poll(f, cx);
    if (r == PL_READY) {
        f->flags |= PL_FUTURE_DONE;
    }
    return r;
}

/* Polls parked task t once under `watch` (dump.c's tree), as
 * pl__executor_probe does: a READY completes it, a wake in the poll makes
 * it runnable. */
PL_INTERNAL pl_poll_result pl__executor_poll_watched(pl_executor *ex, pl_task *t,
                                                     const pl_poll_watch *watch);

/* ---- Task dumps (dump.c) -------------------------------------------------- */

/* Serves a pl_executor_request_dump: run_loop calls it between polls. */
PL_INTERNAL void pl__dump_serve(pl_executor *ex);

/* ---- Remote wakers (remote.c) ----------------------------------------- */

/* Sets up and tears down the lock other threads push remote wakes under.
 * pl__remote_init returns 0, PL_ENOMEM or PL_EAGAIN. */
PL_INTERNAL int pl__remote_init(pl_executor *ex);
PL_INTERNAL void pl__remote_fini(pl_executor *ex);

#endif
