/* pollen/executor.h: the single-threaded executor, tasks and joins.
 *
 * One tick (the whole scheduling policy, see docs/design.md):
 *   1. fire due timers (now is read once per tick);
 *   2. poll runnable tasks in FIFO order, at most polls_per_tick_max;
 *   3. if nothing is runnable, wait for I/O until the next deadline,
 *      otherwise only collect ready I/O without blocking;
 *   4. repeat until idle.
 * Under a system with a decide() hook (the simulator) step 2 asks which
 * of the first schedule_window runnable tasks goes next, and equal timer
 * deadlines are ordered by decisions too.
 *
 * Thread rules: every function here is for the executor's thread, except
 * pl_remote_waker_wake / pl_remote_waker_drop, which any thread may call.
 */
#ifndef POLLEN_EXECUTOR_H
#define POLLEN_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/error.h"
#include "pollen/future.h"
#include "pollen/system.h"
#include "pollen/time.h"
#include "pollen/waker.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_observer pl_observer;
typedef struct pl_executor_testing_options pl_executor_testing_options;

/* Lua-style allocator: new_size 0 frees (returns NULL); otherwise returns
 * a block of new_size bytes (or NULL when out of memory). */
typedef void *(*pl_alloc_fn)(void *ud, void *ptr, size_t old_size, size_t new_size);

typedef struct pl_executor_options {
    const pl_system *system;      /* NULL: the executor creates and owns the real backend */
    const pl_observer *observer;  /* NULL in production: hooks cost nothing */
    void *observer_ud;
    pl_alloc_fn alloc;            /* NULL: malloc/realloc/free, and task blocks
                                     of up to 512 bytes from the executor's own
                                     chunks (mmap, 64 KB growing to 2 MB),
                                     kept for reuse until pl_executor_destroy */
    void *alloc_ud;
    uint32_t polls_per_tick_max;  /* polls between two I/O checks; 0: 128 */
    uint32_t schedule_window;     /* runnable tasks offered to decide(SCHEDULE); 0: 16.
                                     The executor keeps an array of that many task
                                     pointers (rounded up to a power of two) */
    const pl_executor_testing_options *testing; /* NULL in production: simulator
                                                   knobs (pollen/testing.h) */
    uint32_t recorder_events;     /* 0 (the default): no flight recorder. Otherwise
                                     the executor keeps its last recorder_events
                                     scheduling records of 16 bytes (rounded up
                                     to a power of two; a poll and the task it
                                     woke are one), and each task's spawn site
                                     and park time, for pollen/dump.h. More than
                                     2^31: PL_EINVAL. Its cost is in
                                     docs/performance.md */
    bool count_wakers;            /* false (the default): a production executor's
                                     waker is a reference count alone. true: each
                                     task's live waker clones are counted, for
                                     pollen/dump.h (its wakes and clones then go
                                     through a call each, and each task is 16
                                     bytes larger; no effect on an observed,
                                     rotating or deciding executor, whose waker
                                     counts them already). Its cost is in
                                     docs/performance.md */
    uint8_t reserved[3];          /* 0 (pl_executor_options_default): names the
                                     padding, whose bytes must be defined */
} pl_executor_options;

/* Fills every field with its default. */
void pl_executor_options_default(pl_executor_options *opts);

/* Creates an executor. opts may be NULL (defaults). Returns 0, PL_ENOMEM,
 * PL_EINVAL (a system, an observer or testing options of another
 * version, or recorder_events above 2^31), PL_EAGAIN (no resources for
 * the executor's lock), or the real backend's error; on failure nothing
 * stays allocated. Every allocation of the executor goes through
 * opts->alloc, including the real backend it creates when opts->system
 * is NULL. */
int pl_executor_create(pl_executor **out, const pl_executor_options *opts);

/* Destroys an executor; NULL is allowed. Live tasks are cancelled first
 * (their futures dropped), so task handles must be released before. */
void pl_executor_destroy(pl_executor *ex);

/* Spawns a task running a copy of the `size` bytes at `fut` (a future
 * struct whose first member is a pl_future, not yet polled). One
 * allocation holds the task and the copy. `name` (static storage, may be
 * NULL: the vtable's name is used) names the task in traces. When
 * `handle` is not NULL it receives a counted reference the caller must
 * release with pl_task_release (or hand to pl_join_make). `where` is
 * "file:line" and `func` the calling function (static strings, as the
 * pl_spawn macro passes them; either may be NULL: unknown). An observer
 * sees them (pl_observer.spawn_site) and an executor with a flight
 * recorder keeps them for its dumps (pollen/dump.h); any other pays for
 * two constant arguments and stores nothing in the task. Returns 0 or
 * PL_ENOMEM. Allowed from inside a poll. */
int pl_spawn_at(pl_executor *ex, const pl_future *fut, size_t size, const char *name,
                pl_task **handle, const char *where, const char *func);

#define PL__STR2(x) #x
#define PL__STR(x) PL__STR2(x)
/* "file.c:120", a string literal: the call site as one constant pointer.
 * A helper that spawns on its caller's behalf takes `where` and `func`
 * and passes them to pl_spawn_at, behind a macro that gives it PL_WHERE
 * and __func__ (README, "Testing your own futures"): the task is then
 * named after its caller's line, not the helper's. */
#define PL_WHERE __FILE__ ":" PL__STR(__LINE__)

/* pl_spawn_at with the caller's site: the way to spawn. */
#define pl_spawn(ex, fut, size, name, handle)                               \
    pl_spawn_at((ex), (fut), (size), (name), (handle), PL_WHERE, __func__)

/* pl_spawn for a future struct lvalue. */
#define PL_SPAWN(ex, fut, name, handle)                                     \
    pl_spawn((ex), (const pl_future *)&(fut), sizeof(fut), (name), (handle))

/* Marks a task abortable: under the simulator, a decision may cancel it
 * while it is woken but not yet polled, to exercise drop paths. */
void pl_task_set_abortable(pl_task *t, bool abortable);

/* Marks a task background (a ticker, an accept loop, a metrics flusher):
 * work that runs for as long as the program does and that the rest of
 * the program never waits for. Background tasks do not keep pl_run from
 * returning: it returns 0 once every foreground task has finished, and
 * pl_executor_destroy (or pl_executor_cancel_all) cancels the background
 * tasks still alive. Under the simulator the foreground tasks are judged
 * (probed for lost wakeups and deadlocks) as soon as nothing but
 * background work can happen, while the background tasks still run; so
 * mark a task background only if no foreground task ever waits for it.
 * Allowed any time on the executor thread, from a poll too. */
void pl_task_set_background(pl_task *t, bool background);
bool pl_task_is_background(const pl_task *t);

pl_task *pl_task_ref(pl_task *t);   /* another reference to the same task */
void pl_task_release(pl_task *t);   /* NULL is allowed */

/* The task's copy of the future. A finished task's future has been
 * dropped (at completion or cancellation, as in Rust): its plain output
 * fields stay readable until the last reference is released. */
void *pl_task_future(pl_task *t);

bool pl_task_is_finished(const pl_task *t); /* completed or cancelled */
bool pl_task_is_cancelled(const pl_task *t);
uint32_t pl_task_id(const pl_task *t);      /* 1, 2, 3... in spawn order */
const char *pl_task_name(const pl_task *t);
uint32_t pl_task_polls(const pl_task *t);   /* polls so far */

/* Cancels a task: its future is dropped now (or right after its current
 * poll when it aborts itself) and joiners see PL_ECANCELED. No-op on a
 * finished task. */
void pl_task_cancel(pl_task *t);

/* The future of a task's completion. Borrows the handle, which must stay
 * valid while the join is pending (a completed join no longer touches
 * it); one join per task at a time. After READY, `result` is 0
 * (completed: read pl_task_future) or PL_ECANCELED. While pending it
 * declares object "join", condition "the task finished" (sync.h's wait
 * conditions; base.resume is 1 while it is registered). */
typedef struct pl_join {
    pl_future base;
    pl_task *task;
    pl_waker waker;
    int result;
    uint32_t reserved;     /* private: zero, so no byte is padding */
    const char *task_name; /* private: the task's name while registered */
} pl_join;

extern const pl_future_vtable pl__join_vtable;
static inline pl_join pl_join_make(pl_task *t)
{
    /* Field by field, not a compound literal: gcc -O2 then stores straight
     * into the caller's struct instead of building a copy on the stack
     * (8 instructions fewer per join). */
    pl_join j;
    j.base = PL_FUTURE_INIT(&pl__join_vtable);
    j.task = t;
    j.waker = PL_WAKER_EMPTY;
    j.result = 0;
    j.reserved = 0;
    j.task_name = NULL;
    return j;
}

/* Runs until idle: no runnable task, no armed timer, no registered I/O
 * source and no outstanding remote waker; or, when background tasks
 * exist, until every foreground task has finished (pl_task_set_background).
 * Returns 0 when every (foreground) task finished, PL_EDEADLK when tasks
 * remain that nothing can wake, PL_ECANCELED after pl_executor_stop, or a
 * system error. Executor thread, not from a poll. */
int pl_run(pl_executor *ex);

/* Spawns a copy of `fut`, runs until it completes, then copies the
 * completed (and already dropped) future back over `fut` so its output
 * fields can be read; do not pl_drop it again. Returns 0, or pl_run's
 * error when the future cannot complete (the copy is then cancelled).
 * Not from a poll. */
int pl_block_on(pl_executor *ex, pl_future *fut, size_t size);
#define PL_BLOCK_ON(ex, fut) pl_block_on((ex), (pl_future *)&(fut), sizeof(fut))

/* Cancels every unfinished task (their futures are dropped, joiners see
 * PL_ECANCELED). Handles stay valid until released. Not from a poll. */
void pl_executor_cancel_all(pl_executor *ex);

/* Makes pl_run return PL_ECANCELED after the current poll. */
void pl_executor_stop(pl_executor *ex);

/* The executor's now: read from the system at most once per tick, at
 * its start when a timer is armed or the system decides, else when first
 * asked during the tick. Under the simulator, a task of a node declared
 * skewed reads its node's clock (pollen/sim_node.h), and its timers'
 * deadlines are on that clock too. */
pl_time pl_now(const pl_executor *ex);

size_t pl_executor_live_tasks(const pl_executor *ex);
size_t pl_executor_live_background(const pl_executor *ex); /* of those, background */
const pl_system *pl_executor_system(const pl_executor *ex);

/* Allocation through the executor's allocator. */
void *pl_alloc(pl_executor *ex, size_t size);
void pl_free(pl_executor *ex, void *ptr, size_t size);

/* A thread-safe, single-use waker for completing work on another thread.
 * Create it on the executor thread from a poll; the task stays alive and
 * the executor stays busy until it is woken or dropped, exactly once,
 * from any thread. Returns 0 or PL_ENOMEM. */
typedef struct pl_remote_waker pl_remote_waker;
int pl_remote_waker_create(pl_context *cx, pl_remote_waker **out);
void pl_remote_waker_wake(pl_remote_waker *rw);
void pl_remote_waker_drop(pl_remote_waker *rw);

#ifdef __cplusplus
}
#endif
#endif
