/* pollen/observer.h: hooks through which a simulator watches the executor.
 *
 * An observer is a table of optional callbacks given in
 * pl_executor_options. Production passes none: each hook site is one
 * predictable branch on a NULL pointer. Callbacks run on the executor
 * thread, synchronously, and must not re-enter the executor except
 * through the functions at the end of this header.
 *
 * Identity: tasks are named by pl_task_id (1, 2, 3... in spawn order) and
 * wakers by (task id, generation). No pointer value is meant to leave an
 * observer: a simulator hashes ids, never addresses.
 */
#ifndef POLLEN_OBSERVER_H
#define POLLEN_OBSERVER_H

#include <stdbool.h>
#include <stdint.h>

#include "pollen/executor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a wake reached a task (pl_observer.wake). */
typedef enum pl_wake_outcome {
    PL_WAKE_SCHEDULED = 0, /* the task was parked and is now runnable */
    PL_WAKE_DEDUPED = 1,   /* already runnable: nothing queued */
    PL_WAKE_DURING_POLL = 2, /* woken during its own poll: re-polled after it */
    PL_WAKE_FINISHED = 3,  /* the task had finished: no-op */
    PL_WAKE_STALE = 4,     /* through a superseded waker (rotation): not delivered */
} pl_wake_outcome;

/* A contract violation by user code (pl_observer.misuse). */
typedef enum pl_misuse {
    PL_MISUSE_POLL_AFTER_READY = 1,
    PL_MISUSE_DOUBLE_DROP = 2,
} pl_misuse;

/* The task's counters, readable without a call: observers run on every
 * poll and wake, and a call per field read shows in their cost. Read-only
 * outside the executor, and only for tasks of an executor that has an
 * observer or rotates wakers: production tasks keep id and polls alone
 * (gen and waker_clones sit in 16 bytes such executors add before each
 * task). waker_clones counts the live clones of the task's wakers (remote
 * wakers included). */
typedef struct pl_task_head {
    uint32_t gen;          /* pl__task_waker_gen */
    uint32_t waker_clones; /* live waker clones */
    uint32_t id;           /* pl_task_id */
    uint32_t polls;        /* pl_task_polls */
} pl_task_head;

static inline const pl_task_head *pl_task_head_of(const pl_task *t)
{
    return (const pl_task_head *)(const void *)((const unsigned char *)t - 8);
}

/* What a broadcasting primitive tells an observer (pl_observer.signal). */
typedef enum pl_signal_event {
    PL_SIGNAL_WAITER = 1,    /* the task's waiter parks: links on the primitive, or stays
                                linked (primitive NULL: the same as at its link) */
    PL_SIGNAL_UNWAIT = 2,    /* a waiting waiter of the task was dropped (primitive NULL) */
    PL_SIGNAL_BROADCAST = 3, /* a broadcast begins: the wakes until its end release waiters */
    PL_SIGNAL_BROADCAST_END = 4,
} pl_signal_event;

#define PL_OBSERVER_VERSION 4u

/* Every hook is optional (NULL: not called). pl_executor_create refuses
 * an observer whose version is not PL_OBSERVER_VERSION. */
struct pl_observer {
    uint32_t version; /* PL_OBSERVER_VERSION */
    void (*spawn)(void *ud, pl_task *t);
    /* `probe` is true for polls made by pl__executor_probe. */
    void (*poll_begin)(void *ud, pl_task *t, uint32_t gen, bool probe);
    void (*poll_end)(void *ud, pl_task *t, pl_poll_result r, bool probe);
    /* `waker_task` names the task a waker points to; `by_ref` tells
     * wake_by_ref from a consuming wake; `running` is the task being
     * polled at the moment of the wake (NULL outside polls). */
    void (*wake)(void *ud, pl_task *waker_task, uint32_t gen, bool by_ref,
                 pl_task *running, pl_wake_outcome outcome);
    /* The executor counts waker clones itself (pl_task_head.waker_clones),
     * so these two are not called for every clone and drop: waker_clone
     * only for a clone made outside the task's own poll (when it reports
     * who made the latest clone, pl__task_cloned_elsewhere tells whether
     * that was someone else), waker_drop only for a drop with no clone
     * counted (dropped more often than cloned). */
    void (*waker_clone)(void *ud, pl_task *t, uint32_t gen);
    void (*waker_drop)(void *ud, pl_task *t, uint32_t gen);
    /* seq: the timer's arming number; fire_ns includes any lateness;
     * `wakes` is the task its waker wakes (NULL: not a task waker). */
    void (*timer_arm)(void *ud, uint64_t seq, pl_time deadline_ns, pl_time fire_ns,
                      pl_task *wakes);
    void (*timer_fire)(void *ud, uint64_t seq, pl_time now_ns);
    void (*complete)(void *ud, pl_task *t);
    /* The task's future is dropped: cancelled, or released after completion. */
    void (*drop)(void *ud, pl_task *t, bool cancelled);
    /* The task's memory is about to be freed. */
    void (*free)(void *ud, pl_task *t);
    void (*misuse)(void *ud, pl_task *running, const char *future_name, pl_misuse what);
    /* The last live clone of a parked task's wakers was just dropped and
     * nothing woke the task: nothing can ever wake it again. `dropper` is
     * the task being polled at the drop (NULL outside polls). Not called
     * for drops during the task's own poll (it may store a new clone) or
     * its own drop (cancellation, teardown), nor after a consuming wake
     * (the task is runnable first). Observed executors only. */
    void (*orphaned)(void *ud, pl_task *t, pl_task *dropper);
    /* Right after `spawn`: where the task was spawned, "file:line" and
     * the calling function (static strings from pl_spawn_at; NULL when
     * unknown, as for pl_block_on's task or pl_spawn_at with NULLs). */
    void (*spawn_site)(void *ud, pl_task *t, const char *where, const char *func);
    /* pl_notify's waiters and broadcasts (pl_notify_waiters, which keeps
     * nothing for a task not waiting): `primitive` is the notify, an
     * identity to compare, never to read; `t` the waiter's task (NULL
     * for the broadcasts, and when unknown). A broadcast made outside
     * pl_run and pl_block_on is not reported. */
    void (*signal)(void *ud, const void *primitive, pl_signal_event ev, pl_task *t);
};

/* ---- For simulators: reaching into the executor -------------------
 * Internal (pl__): the simulator's reach-ins, not user API. */

/* The generation of the waker handed to the task's latest poll. */
uint32_t pl__task_waker_gen(const pl_task *t);

/* True when the latest clone of the task's waker was made outside its own
 * poll (or no clone was made yet); false when the task made it while
 * being polled. Observed executors only. */
bool pl__task_cloned_elsewhere(const pl_task *t);

/* The identity of a source site (PL_BUGGIFY, properties): a hash of the
 * file's base name and the line, the same in every build of the same
 * source. PL_DECIDE_BUGGIFY_FIRE decisions carry it as their key. */
uint64_t pl__site_key(const char *file, int line);

/* Where a PL_BUGGIFY site is written: __FILE__, __LINE__, __func__ of
 * the macro's use (string literals: they live as long as the program). */
typedef struct pl_source_site {
    const char *file;
    int line;
    const char *func;
} pl_source_site;

/* During a system's decide() of kind PL_DECIDE_BUGGIFY_FIRE: the site
 * asking (its key is the decision's key); NULL at any other time.
 * Executor thread only, from inside that decide(). */
const pl_source_site *pl__executor_buggify_site(const pl_executor *ex);

/* Size of the task's future copy (pl_task_future gives its bytes). */
size_t pl__task_future_size(const pl_task *t);

/* True while the task is runnable (queued) or being polled. */
bool pl__task_is_scheduled(const pl_task *t);

/* Polls a parked task once, outside the schedule, handing it the waker
 * of its latest poll (no rotation), as a probe. Returns the poll's
 * result; a READY completes the task as usual. */
pl_poll_result pl__executor_probe(pl_executor *ex, pl_task *t);

/* Abandons the poll in progress, for a simulator that left it with a
 * longjmp from one of its hooks (a spin inside one poll that will never
 * return): ex->running is reset and that task is marked so that its
 * future is never polled or dropped again, since its bytes are mid-poll.
 * Its drop never runs: what it holds (waker clones, list nodes in its
 * memory) stays as it is, and its memory stays allocated until
 * pl_executor_destroy frees it by force. pl_executor_cancel_all still
 * finishes it (joiners see PL_ECANCELED). Call it right after the
 * longjmp, on the executor thread, before any other executor call; the
 * executor is then fit only for pl_executor_cancel_all and
 * pl_executor_destroy. */
void pl__executor_abandon_poll(pl_executor *ex);

/* Forgets a task that is not being polled, as a process kill would: it
 * finishes as cancelled (a joiner sees PL_ECANCELED) without its drop,
 * leaves the ready queue, and the timers that would wake it are disarmed.
 * Its memory stays allocated until pl_executor_destroy frees it by force:
 * wakers held elsewhere stay safe to wake (a finished task ignores them)
 * and to drop. What its future owned outside its own bytes is the
 * caller's to free. A finished task only has the timers that would wake
 * it disarmed. The simulator's node crash calls it; executor thread
 * only, outside the task's own poll. */
void pl__executor_forget_task(pl_executor *ex, pl_task *t);

/* Holds a task (hold true), as a paused process's: while held it is never
 * polled; a wake still makes it runnable, and once picked from the ready
 * queue it waits aside (not counted by pl__executor_runnable_count; the
 * run loop is not idle meanwhile) until released (hold false), which
 * queues it again at the back. A held task can be cancelled or forgotten as any
 * other: set aside, it keeps the queue's reference until its release or
 * pl_executor_cancel_all. The simulator's node pause calls it; executor
 * thread only, outside the task's own poll. */
void pl__executor_hold_task(pl_executor *ex, pl_task *t, bool hold);

/* Deregisters and frees an I/O source whose owner was forgotten
 * (pl__executor_forget_task): its wakers are dropped, its handle stays
 * open for the caller to close, and the forgotten future's pointer to it
 * dangles (that future never runs again). NULL: no-op. */
void pl__io_source_forget(pl_io_source *src);

/* Per-task clocks, for a simulator whose processes each read their own
 * clock (pollen/sim_node.h's skewed nodes) while the executor keeps one
 * timeline. local(ud, now_ns): what the code running now (the polled
 * task, or the caller outside polls) reads at executor time now_ns;
 * pl_now returns it. deadline(ud, local_ns): the earliest executor time
 * at which that code's clock reads local_ns or later (PL_TIME_NEVER for
 * PL_TIME_NEVER); pl_timer_arm maps its deadline through it, so a timer
 * fires when its armer's clock reaches the deadline, never earlier. Both
 * must be non-decreasing in their argument and deterministic. */
typedef struct pl_clock_map {
    pl_time (*local)(void *ud, pl_time now_ns);
    pl_time (*deadline)(void *ud, pl_time local_ns);
    void *ud;
} pl_clock_map;

/* Sets the executor's clock map (NULL: none, every caller reads the
 * executor's clock). The map is borrowed: it must outlive its use.
 * Timers armed before keep their executor times. Executor thread only,
 * outside a poll or from the simulator's hooks. */
void pl__executor_set_clock_map(pl_executor *ex, const pl_clock_map *map);

/* Renames the task: pl_task_name returns `name` from now on (storage that
 * outlives the task). The simulator names a node's tasks "node2/worker". */
void pl__task_rename(pl_task *t, const char *name);

/* Wakes a parked task as if through its current waker. */
void pl__executor_wake_task(pl_executor *ex, pl_task *t);

/* Number of runnable tasks and of armed timers. */
size_t pl__executor_runnable_count(const pl_executor *ex);
size_t pl__executor_timer_count(const pl_executor *ex);

/* Writes the ids of the first `max` runnable tasks in queue order (the
 * candidates of the next PL_DECIDE_SCHEDULE decision are the first
 * min(runnable, schedule_window) of them). Returns how many it wrote. */
size_t pl__executor_runnable_ids(const pl_executor *ex, uint32_t *ids, size_t max);

/* The earliest armed timer's firing time, or PL_TIME_NEVER. */
pl_time pl__executor_next_timer(const pl_executor *ex);

/* The task the earliest armed timer will wake (NULL: no timer, or its
 * waker is not a task waker of this executor); *seq receives the
 * timer's arming number when a timer is armed. */
pl_task *pl__executor_next_timer_task(const pl_executor *ex, uint64_t *seq);

/* Writes, for the first `max` armed timers (heap order), the id of the
 * task each would wake (0: not a task waker). Returns how many. */
size_t pl__executor_timer_task_ids(const pl_executor *ex, uint32_t *ids, size_t max);

/* True when some armed timer would wake a live foreground task (or a
 * waker that is not a task's: it may lead anywhere). O(timers). */
bool pl__executor_timers_wake_foreground(const pl_executor *ex);

#ifdef __cplusplus
}
#endif
#endif
