/* core/src/executor.c: create and destroy, polling, the tick and the run loop.
 *
 * Tasks live in task.c, their wakers in waker.c, remote wakes in remote.c
 * and the ready queue in ready.h; this file owns the executor itself and
 * the loop that drives them. The loop has a production path with no hook
 * test at all (poll_fast) beside the observed one.
 */
#include <string.h>

#include "executor_internal.h"
#include "pollen/testing.h"
#include "pollen/thread.h"
#include "pollen/timer.h"
#include "ready.h"
#include "recorder.h"

static _Thread_local pl_executor *current_executor;

pl_executor *pl__current_executor(void) { return current_executor; }

/* pollen/thread.h: fibers share the OS thread's copy, so a thread switch
 * swaps it (the simulator's threads, each with its executor). */
pl_executor *pl_thread_swap_executor(pl_executor *ex)
{
    pl_executor *old = current_executor;
    current_executor = ex;
    return old;
}

/* ---- Allocation ------------------------------------------------------- */

void *pl_alloc(pl_executor *ex, size_t size) { return ex->alloc(ex->alloc_ud, NULL, 0, size); }

void pl_free(pl_executor *ex, void *ptr, size_t size)
{
    if (ptr != NULL) {
        ex->alloc(ex->alloc_ud, ptr, size, 0);
    }
}

/* ---- Options, create, destroy ---------------------------------------- */

void pl_executor_options_default(pl_executor_options *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->polls_per_tick_max = 128;
    opts->schedule_window = 16;
}

void pl_executor_testing_options_default(pl_executor_testing_options *t)
{
    memset(t, 0, sizeof *t);
    t->version = PL_TESTING_VERSION;
    t->timer_late_quantum_ns = PL_MS;
}

/* Hooks and knobs of another version would be read with the wrong layout. */
static bool versions_match(const pl_executor_options *o)
{
    return (o->observer == NULL || o->observer->version == PL_OBSERVER_VERSION) &&
           (o->testing == NULL || o->testing->version == PL_TESTING_VERSION);
}

/* The simulator's knobs; production passes none and keeps the fast paths. */
static void apply_testing(pl_executor *ex, const pl_executor_testing_options *t)
{
    if (t == NULL) {
        return;
    }
    ex->rotate = t->rotate_wakers;
    ex->watch = t->poll_watch;
    ex->timers.late_max = t->timer_late_max;
    ex->timers.late_quantum_ns = t->timer_late_quantum_ns;
}

static int init_system(pl_executor *ex, const pl_executor_options *o)
{
    if (o->system == NULL) {
        int rc = pl__system_default_create_with(&ex->system, ex->alloc, ex->alloc_ud);
        ex->owns_system = rc == 0;
        return rc;
    }
    if (o->system->vtable == NULL || o->system->vtable->version != PL_SYSTEM_VERSION) {
        return PL_EINVAL;
    }
    ex->system = *o->system;
    return 0;
}

static int window_create(pl_executor *ex)
{
    uint32_t cap = 1;
    while (cap < ex->window) {
        if (cap > UINT32_MAX / 2) {
            return PL_ENOMEM;
        }
        cap *= 2;
    }
    ex->win = ex->alloc(ex->alloc_ud, NULL, 0, (size_t)cap * sizeof *ex->win);
    ex->win_mask = cap - 1;
    return ex->win != NULL ? 0 : PL_ENOMEM;
}

int pl_executor_create(pl_executor **out, const pl_executor_options *opts)
{
    pl_executor_options defaults;
    if (opts == NULL) {
        pl_executor_options_default(&defaults);
        opts = &defaults;
    }
    if (!versions_match(opts)) {
        return PL_EINVAL;
    }
    pl_alloc_fn alloc = opts->alloc != NULL ? opts->alloc : pl__libc_alloc;
    pl_executor *ex = alloc(opts->alloc_ud, NULL, 0, sizeof *ex);
    if (ex == NULL) {
        return PL_ENOMEM;
    }
    memset(ex, 0, sizeof *ex);
    ex->alloc = alloc;
    ex->alloc_ud = opts->alloc_ud;
    ex->window = opts->schedule_window ? opts->schedule_window : 16;
    int rc = window_create(ex);
    if (rc == 0) {
        rc = init_system(ex, opts);
    }
    if (rc == 0) {
        rc = pl__remote_init(ex);
    }
    if (rc == 0 && opts->recorder_events > 0) {
        rc = pl__recorder_create(ex, opts->recorder_events);
        if (rc != 0) {
            pl__remote_fini(ex);
        }
    }
    if (rc != 0) {
        if (ex->owns_system) {
            pl_system_default_destroy(&ex->system);
        }
        pl_free(ex, ex->win, ((size_t)ex->win_mask + 1) * sizeof *ex->win);
        alloc(opts->alloc_ud, ex, sizeof *ex, 0);
        return rc;
    }
    ex->decide = ex->system.vtable->decide;
    ex->win_max = ex->decide != NULL ? ex->window : 0;
    ex->obs = opts->observer;
    ex->obs_ud = opts->observer_ud;
    apply_testing(ex, opts->testing);
    bool production = ex->obs == NULL && !ex->rotate && ex->decide == NULL;
    ex->waker_vtable = !production          ? &pl__task_waker_vtable
                       : opts->count_wakers ? &pl__counted_waker_vtable
                                            : &pl__fast_waker_vtable;
    /* A recorder keeps the production waker (run_ready_rec finds who woke
     * whom in the queue) and its task_track before each task; a counting
     * waker keeps its counts in the task_watch. */
    ex->watch_bytes = ex->rec != NULL                                   ? sizeof(task_track)
                      : ex->waker_vtable != &pl__fast_waker_vtable ? sizeof(task_watch)
                                                                        : 0;
    pl__arena_init(&ex->arena, opts->alloc == NULL && ex->obs == NULL && ex->decide == NULL &&
                                   !ex->rotate);
    ex->budget = opts->polls_per_tick_max ? opts->polls_per_tick_max : 128;
    ex->now = ex->system.vtable->now(ex->system.self);
    *out = ex;
    return 0;
}

void pl_executor_destroy(pl_executor *ex)
{
    if (ex == NULL) {
        return;
    }
    pl_executor *saved = current_executor;
    current_executor = ex;
    /* Whatever is still referenced after the cancellations is freed by
     * force: the executor owns every task's memory. */
    pl_executor_cancel_all(ex);
    (void)pl_executor_drain_remote(ex);
    while (ex->tasks_len > 0) {
        pl__task_free(ex->tasks[ex->tasks_len - 1]);
    }
    pl__arena_fini(&ex->arena);
    pl_free(ex, ex->tasks, (size_t)ex->tasks_cap * sizeof *ex->tasks);
    pl_free(ex, ex->win, ((size_t)ex->win_mask + 1) * sizeof *ex->win);
    pl__timers_finish(ex, &ex->timers);
    pl__remote_fini(ex);
    pl__recorder_destroy(ex);
    if (ex->owns_system) {
        pl_system_default_destroy(&ex->system);
    }
    current_executor = saved == ex ? NULL : saved;
    ex->alloc(ex->alloc_ud, ex, sizeof *ex, 0);
}

void pl_executor_cancel_all(pl_executor *ex)
{
    PL_ASSERT(ex->running == NULL);
    pl_executor *saved = current_executor;
    current_executor = ex;
    /* Cancelling drops futures, which releases the wakers and handles they
     * hold. A drop can free other tasks and reorder the array, hence the
     * passes until one finds nothing left to cancel. */
    bool cancelled = true;
    while (cancelled) {
        cancelled = false;
        for (uint32_t i = 0; i < ex->tasks_len; i++) {
            pl_task *t = ex->tasks[i];
            if (t->state < TASK_DONE) {
                t->refs++;
                pl__task_cancel(t);
                task_release(t);
                cancelled = true;
            }
        }
    }
    /* Cancelled tasks still queued (pl_run returns with background work
     * runnable) hold the queue's reference, which run_one would release:
     * release it here, or they outlive their cancellation. */
    while (ex->ready_len > 0) {
        pl_task *t = ready_take(ex, 0);
        PL_ASSERT(t->state == TASK_CANCELLED);
        task_release(t);
    }
    while (ex->held_head != NULL) {
        pl_task *t = ex->held_head;
        take_aside(ex, t);
        t->held = TASK_FREE;
        PL_ASSERT(t->state == TASK_CANCELLED);
        task_release(t);
    }
    current_executor = saved;
}

/* ---- Accessors -------------------------------------------------------- */

/* A tick with nothing to fire and no decisions leaves the clock unread
 * (tick): the first to ask reads it. The executor is never a const
 * object, only seen through a const pointer here. */
pl_time pl__executor_now(const pl_executor *ex)
{
    if (ex->now_stale) {
        pl_executor *self = (pl_executor *)(uintptr_t)ex;
        self->now = ex->system.vtable->now(ex->system.self);
        self->now_stale = false;
    }
    return ex->now;
}

/* The executor keeps one timeline; a clock map (a simulator's skewed
 * nodes) only changes what the code that asks reads of it. */
pl_time pl_now(const pl_executor *ex)
{
    pl_time now = pl__executor_now(ex);
    return ex->clock == NULL ? now : ex->clock->local(ex->clock->ud, now);
}

void pl__executor_set_clock_map(pl_executor *ex, const pl_clock_map *map)
{
    PL_ASSERT(map == NULL || (map->local != NULL && map->deadline != NULL));
    ex->clock = map;
}

pl_time pl__executor_deadline_of(const pl_executor *ex, pl_time local_ns)
{
    return ex->clock == NULL ? local_ns : ex->clock->deadline(ex->clock->ud, local_ns);
}
size_t pl_executor_live_tasks(const pl_executor *ex) { return ex->live; }
const pl_system *pl_executor_system(const pl_executor *ex) { return &ex->system; }
const pl_system *pl__executor_system(const pl_executor *ex) { return &ex->system; }
pl__timer_heap *pl__executor_timers(pl_executor *ex) { return &ex->timers; }
uint32_t pl__executor_next_io_id(pl_executor *ex) { return ++ex->io_ids; }
size_t pl__executor_runnable_count(const pl_executor *ex) { return ex->ready_len; }
size_t pl__executor_timer_count(const pl_executor *ex) { return ex->timers.len; }
pl_time pl__executor_next_timer(const pl_executor *ex) { return pl__timers_next(&ex->timers); }
void pl_executor_stop(pl_executor *ex)
{
    pl__interrupt_set(ex, PL__INTERRUPT_STOP);
}

/* The interrupt byte, tested between polls (executor_internal.h). */
static inline uint8_t interrupted(const pl_executor *ex)
{
    return __atomic_load_n(&ex->interrupt, __ATOMIC_RELAXED);
}

size_t pl__executor_runnable_ids(const pl_executor *ex, uint32_t *ids, size_t max)
{
    size_t n = 0;
    for (uint32_t i = 0; i < ex->win_len && n < max; i++) {
        ids[n++] = ex->win[(ex->win_head + i) & ex->win_mask]->id;
    }
    for (const pl_task *t = ex->ready_head; t != NULL && n < max; t = t->next) {
        ids[n++] = t->id;
    }
    return n;
}

void pl__executor_io_count(pl_executor *ex, int delta)
{
    PL_ASSERT(delta > 0 || ex->io_count > 0);
    ex->io_count = (size_t)((ptrdiff_t)ex->io_count + delta);
}

uint32_t pl__executor_decide(pl_executor *ex, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    if (ex->decide == NULL || n <= 1) {
        return 0;
    }
    uint32_t v = ex->decide(ex->system.self, kind, n, key);
    PL_ASSERT(v < n);
    return v;
}

const pl_observer *pl__executor_observer(const pl_executor *ex, void **ud)
{
    *ud = ex->obs_ud;
    return ex->obs;
}

/* ---- Polling ---------------------------------------------------------- */

/* An observed poll's record (a PENDING, a READY or a probe's; the
 * checking waker recorded its wakes as they came), and the time a parked
 * task parked. A probe (a dump's poll among them) is spurious: the task
 * was parked before it and stays parked since then, so its park time
 * stays. Before the task's state changes: a READY or a cancellation may
 * free it. */
static void record_poll(pl_executor *ex, pl_task *t, pl_poll_result r, bool probe)
{
    (void)pl_now(ex);
    pl__rec(ex, probe ? PL__REC_PROBE : (uint32_t)r, t->id, t->polls);
    if (r == PL_PENDING && !probe) {
        task_track_of(t)->parked_ns = ex->now;
    }
}

static pl_poll_result poll_task(pl_executor *ex, pl_task *t, bool probe,
                                const pl_poll_watch *watch)
{
    pl_context cx = {task_waker(t), ex, t, watch};
    pl_task *outer = ex->running;
    uint8_t prior = t->state;
    t->state = TASK_RUNNING;
    t->polls++;
    ex->running = t;
    if (ex->obs != NULL && ex->obs->poll_begin != NULL) {
        ex->obs->poll_begin(ex->obs_ud, t, task_gen(t), probe);
    }
    pl_poll_result r = pl__poll_root((pl_future *)(void *)t->future, &cx);
    ex->running = outer;
    if (ex->obs != NULL && ex->obs->poll_end != NULL) {
        ex->obs->poll_end(ex->obs_ud, t, r, probe);
    }
    if (ex->rec != NULL) {
        record_poll(ex, t, r, probe);
    }
    if (r == PL_READY) {
        if (ex->obs != NULL && ex->obs->complete != NULL) {
            ex->obs->complete(ex->obs_ud, t);
        }
        pl__task_drop_future(t, false);
        pl__task_finish(t, TASK_DONE);
    } else if (t->flags & TASK_ABORT_IN_POLL) {
        pl__task_cancel(t);
    } else if (t->flags & TASK_WOKEN_IN_POLL) {
        t->flags &= (uint8_t)~TASK_WOKEN_IN_POLL;
        t->state = TASK_SCHEDULED;
        ready_push(ex, t);
    } else {
        t->state = prior == TASK_SCHEDULED ? TASK_IDLE : prior;
    }
    return r;
}

void pl__executor_hold_task(pl_executor *ex, pl_task *t, bool hold)
{
    PL_ASSERT(t->ex == ex && ex->running != t);
    if (hold) {
        if (t->held == TASK_FREE) {
            t->held = TASK_HOLD;
        }
        return;
    }
    if (t->held == TASK_ASIDE) {
        take_aside(ex, t);
        ready_push(ex, t);
    }
    t->held = TASK_FREE;
}


static void run_one(pl_executor *ex, pl_task *t)
{
    if (t->state == TASK_CANCELLED) {
        /* Aborted while queued: the queue kept the executor's reference. */
        task_release(t);
        return;
    }
    if (t->held != TASK_FREE) {
        set_aside(ex, t);
        return;
    }
    if ((t->flags & TASK_ABORTABLE) && ex->decide != NULL &&
        pl__executor_decide(ex, PL_DECIDE_CANCEL, 2, t->id) != 0) {
        pl__task_cancel(t);
        return;
    }
    if (ex->rotate) {
        task_watch_of(t)->gen++;
    }
    poll_task(ex, t, false, ex->watch);
}

pl_poll_result pl__executor_probe(pl_executor *ex, pl_task *t)
{
    PL_ASSERT(t->ex == ex && t->state == TASK_IDLE && !(t->flags & TASK_ABANDONED));
    return poll_task(ex, t, true, ex->watch);
}

pl_poll_result pl__executor_poll_watched(pl_executor *ex, pl_task *t, const pl_poll_watch *watch)
{
    PL_ASSERT(t->ex == ex && t->state == TASK_IDLE && !(t->flags & TASK_ABANDONED));
    return poll_task(ex, t, true, watch);
}

/* The poll was left by a longjmp: nothing after the future's poll call
 * ran. The future's bytes are whatever the spin left, so neither its poll
 * nor its drop may run again; the extra reference keeps its memory (which
 * wait lists may still point into) until pl_executor_destroy frees it by
 * force. */
void pl__executor_abandon_poll(pl_executor *ex)
{
    pl_task *t = ex->running;
    PL_ASSERT(t != NULL && t->state == TASK_RUNNING);
    t->flags |= TASK_ABANDONED;
    t->flags &= (uint8_t)~(TASK_WOKEN_IN_POLL | TASK_ABORT_IN_POLL);
    t->refs++;
    ex->running = NULL;
    if (current_executor == ex) {
        current_executor = NULL;
    }
}

/* A poll that woke more than one task (rare): a wake record for each but
 * the last, which its poll's record names. Returns the last. */
static PL_COLD const pl_task *record_more_wakes(pl__recorder *rec, const pl_task *w, uint32_t by)
{
    for (; w->next != NULL; w = w->next) {
        pl__rec_put(rec, PL__REC_WAKE, w->id, by);
    }
    return w;
}

/* A fast poll's record: its result and the last task it woke in one
 * record, the others it woke in a wake record each before it. The fast
 * waker appends each task it wakes to the list (itself included, and a
 * joiner its completion woke), so they are the ones after the tail the
 * poll began with: `link` is that tail's next, or the list's head when it
 * was empty. That tail is queued still: nothing but the loop takes from
 * the list. The batch is dated already (run_ready_rec). */
static inline void record_fast_poll(pl_executor *ex, pl_task *const *link, uint64_t id_polls,
                                    pl_poll_result r)
{
    pl__recorder *rec = &ex->recorder;
    const pl_task *w = *link;
    uint32_t woke = 0;
    if (w != NULL) {
        if (w->next != NULL) {
            w = record_more_wakes(rec, w, (uint32_t)id_polls);
        }
        woke = w->id;
    }
    pl__rec_event *e = pl__rec_take(rec);
    memcpy(e, &id_polls, sizeof id_polls);
    e->kind = (uint32_t)r;
    e->hi = woke;
}

/* Production: no observer, no decisions, no rotation. The same steps as
 * run_one + poll_task minus every hook test. `cx` is the batch's context
 * (run_ready_fast): futures only read a context, so a poll rewrites just
 * the two words that name its task, not the whole struct.
 *
 * Always inline: its two loops each get their own copy, the production
 * one with no recorder test (a call here cost the ping-pong 10%). With
 * `rec`, `link` is where the poll's first wake will be linked, which the
 * take found (list_take_linked); NULL otherwise. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline void poll_fast(pl_executor *ex, pl_task *t, pl_context *cx, const bool rec,
                             pl_task *const *link)
{
    if (t->state == TASK_CANCELLED) {
        task_release(t);
        return;
    }
    cx->waker.data = t;
    cx->task = t;
    t->state = TASK_RUNNING;
    t->polls++;
    ex->running = t;
    /* No watch in production (cx->watch is NULL), and the context is in
     * memory across the call: poll_root spares reloading it to test. */
    pl_poll_result r = pl__poll_root((pl_future *)(void *)t->future, cx);
    ex->running = NULL;
    uint64_t id_polls = 0; /* the task's {id, polls}, as its record begins (recorder.h) */
    if (rec) {
        memcpy(&id_polls, t, sizeof id_polls);
        /* Before a READY or a cancellation may free t; a READY's is unread. */
        task_track_of(t)->parked_ns = ex->now;
    }
    if (r == PL_READY) {
        pl__task_drop_future(t, false);
        pl__task_finish(t, TASK_DONE);
    } else if (t->flags & (TASK_ABORT_IN_POLL | TASK_WOKEN_IN_POLL)) {
        if (t->flags & TASK_ABORT_IN_POLL) {
            pl__task_cancel(t);
        } else {
            t->flags &= (uint8_t)~TASK_WOKEN_IN_POLL;
            t->state = TASK_SCHEDULED;
            list_push(ex, t);
        }
    } else {
        t->state = TASK_IDLE;
    }
    if (rec) {
        record_fast_poll(ex, link, id_polls, r);
    }
}

/* Polls up to the budget; returns how many tasks ran. Without decide()
 * the window stays empty, so the queue is its list alone. `vt` is the
 * production waker, fast or counting: both push a task they wake on the
 * list and nothing else. Always inline, so each loop below is its own
 * copy with its constants folded. */
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
static inline uint32_t run_ready_list(pl_executor *ex, const pl_waker_vtable *vt, const bool rec)
{
    pl_context cx = {{vt, NULL, 0, 0}, ex, NULL, NULL};
    uint32_t n = 0;
    uint32_t budget = ex->budget;
    PL_ASSERT(ex->win_max == 0);
    /* The list's head is the emptiness test, and the take reuses it. */
    while (ex->ready_head != NULL && n < budget && !interrupted(ex)) {
        poll_fast(ex, list_take(ex), &cx, rec, NULL);
        n++;
    }
    return n;
}

/* Production's: the fast waker, no recorder. */
static uint32_t run_ready_fast(pl_executor *ex)
{
    return run_ready_list(ex, &pl__fast_waker_vtable, false);
}

/* With a flight recorder: its own copy, out of line, so that the
 * production loop keeps no test of it. */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static uint32_t run_ready_rec(pl_executor *ex)
{
    PL_ASSERT(ex->rec != NULL);
    (void)pl_now(ex); /* the batch's time (recorder.h) */
    pl__rec_date(ex);
    pl_context cx = {{ex->waker_vtable, NULL, 0, 0}, ex, NULL, NULL};
    PL_ASSERT(ex->win_max == 0);
    /* run_ready_list's loop, counting the budget down: one register for
     * the count and the budget, which the record's values need. */
    uint32_t left = ex->budget;
    while (ex->ready_head != NULL && left != 0 && !interrupted(ex)) {
        pl_task *const *link; /* the take knows it from its emptiness test */
        pl_task *t = list_take_linked(ex, &link);
        poll_fast(ex, t, &cx, true, link);
        left--;
    }
    return ex->budget - left;
}

/* With the counting waker and no recorder (count_wakers). */
#if defined(__GNUC__)
__attribute__((noinline))
#endif
static uint32_t run_ready_counted(pl_executor *ex)
{
    return run_ready_list(ex, &pl__counted_waker_vtable, false);
}

static uint32_t run_ready(pl_executor *ex)
{
    /* No watch bytes: production, the fast waker and no recorder. */
    if (ex->watch_bytes == 0) {
        return run_ready_fast(ex);
    }
    if (ex->waker_vtable != &pl__task_waker_vtable) {
        return ex->rec != NULL ? run_ready_rec(ex) : run_ready_counted(ex);
    }
    uint32_t n = 0;
    while (ex->ready_len != 0 && n < ex->budget && !interrupted(ex)) {
        run_one(ex, ready_pop(ex));
        n++;
    }
    return n;
}

/* ---- The run loop ----------------------------------------------------- */

static bool is_idle(const pl_executor *ex)
{
    return ex->ready_len == 0 && ex->timers.len == 0 && ex->io_count == 0 &&
           ex->remote_outstanding == 0 && ex->held_len == 0;
}

/* Only background work is left, all of it parked: pl_run returns. */
static bool background_only(const pl_executor *ex, const pl_task *until)
{
    return ex->live_background > 0 && ex->live == ex->live_background && ex->ready_len == 0 &&
           until == NULL;
}

/* One tick: timers, a budget of polls, then I/O (blocking only when
 * nothing is runnable). Returns 1 to go on, 0 when idle, or an error. */
static int tick(pl_executor *ex, const pl_task *until)
{
    const pl_system_vtable *sys = ex->system.vtable;
    if (ex->timers.len == 0 && ex->decide == NULL) {
        /* Nothing to fire: the clock is read only if a poll asks (pl_now).
         * A read was 5% of a real ping-pong's time, once per tick. A
         * deciding system's clock is read every tick, as it always was. */
        ex->now_stale = true;
    } else {
        ex->now = sys->now(ex->system.self);
        ex->now_stale = false;
        pl__timers_fire_due(ex, &ex->timers, ex->now);
    }
    run_ready(ex);
    if (interrupted(ex) || (until != NULL && until->state >= TASK_DONE)) {
        return 1;
    }
    if (ex->ready_len != 0) {
        /* Budget spent: collect I/O without blocking, unless nothing
         * outside the executor could have happened (the common case of a
         * pure compute or notify workload: no syscall at all). */
        if (ex->io_count == 0 && ex->remote_outstanding == 0 && ex->decide == NULL) {
            return 1;
        }
        /* A stale now is in the past too: the wait does not block. */
        int rc = sys->wait(ex->system.self, ex, ex->now);
        return rc < 0 ? rc : 1;
    }
    if (is_idle(ex)) {
        return 0;
    }
    if (background_only(ex, until) && ex->decide == NULL) {
        /* The last foreground task finished in this tick: run_loop returns
         * rather than block for background work's I/O, which may never
         * come. A deciding system (the simulator) keeps its wait, so its
         * runs stay what they were. */
        return 1;
    }
    int rc = sys->wait(ex->system.self, ex, pl__timers_next(&ex->timers));
    return rc < 0 ? rc : 1;
}

/* A requested dump is written here, between two polls; returns true
 * when pl_executor_stop asks run_loop to return. */
static PL_COLD bool serve_interrupt(pl_executor *ex)
{
    uint8_t interrupt = pl__interrupt_take(ex);
    if (interrupt & PL__INTERRUPT_DUMP) {
        pl__dump_serve(ex);
    }
    return (interrupt & PL__INTERRUPT_STOP) != 0;
}

static int run_loop(pl_executor *ex, pl_task *until)
{
    PL_ASSERT(ex->running == NULL);
    pl_executor *saved = current_executor;
    current_executor = ex;
    int rc;
    for (;;) {
        if (interrupted(ex) != 0 && serve_interrupt(ex)) {
            rc = PL_ECANCELED;
            break;
        }
        if (until != NULL && until->state >= TASK_DONE) {
            rc = 0;
            break;
        }
        if (background_only(ex, until)) {
            rc = 0;
            break;
        }
        rc = tick(ex, until);
        if (rc <= 0) {
            break;
        }
    }
    current_executor = saved;
    if (rc == 0 && ex->live > ex->live_background && (until == NULL || until->state < TASK_DONE)) {
        rc = PL_EDEADLK;
    }
    if (rc == PL_EDEADLK && ex->live == ex->live_background) {
        rc = 0;
    }
    return rc;
}

int pl_run(pl_executor *ex) { return run_loop(ex, NULL); }

int pl_block_on(pl_executor *ex, pl_future *fut, size_t size)
{
    pl_task *t;
    int rc = pl_spawn_at(ex, fut, size, NULL, &t, NULL, NULL);
    if (rc != 0) {
        return rc;
    }
    rc = run_loop(ex, t);
    if (t->state == TASK_DONE) {
        memcpy(fut, t->future, size);
        rc = 0;
    } else {
        pl_task_cancel(t);
        if (rc == 0) {
            rc = PL_EDEADLK;
        }
    }
    task_release(t);
    return rc;
}

/* ---- Watched polls ---------------------------------------------------- */

pl_poll_result pl__poll_watched(pl_future *f, pl_context *cx)
{
    const pl_poll_watch *w = cx->watch;
    w->enter(w->ud, f);
    pl_poll_result r = f->vtable->poll(f, cx);
    if (r == PL_READY) {
        f->flags |= PL_FUTURE_DONE;
    }
    if (w->leave != NULL) {
        w->leave(w->ud, f, r);
    }
    return r;
}

/* One hook call after the poll, not two: a watched PENDING is on the
 * simulator's path of every parked task. */
pl_poll_result pl__poll_watched_at(pl_future *f, pl_context *cx, const pl_await_site *site)
{
    const pl_poll_watch *w = cx->watch;
    if (w->await == NULL) {
        return pl__poll_watched(f, cx);
    }
    w->enter(w->ud, f);
    pl_poll_result r = f->vtable->poll(f, cx);
    if (r == PL_READY) {
        f->flags |= PL_FUTURE_DONE;
    }
    w->await(w->ud, f, r, site);
    return r;
}

void pl__await_point(pl_context *cx, const pl_await_site *site)
{
    const pl_poll_watch *w = cx->watch;
    if (w->await != NULL) {
        w->await(w->ud, NULL, PL_PENDING, site);
    }
}

/* ---- Misuse and buggify ----------------------------------------------- */

void pl__future_misuse(pl_future *f, int what)
{
    pl_executor *ex = current_executor;
    if (ex != NULL && ex->obs != NULL && ex->obs->misuse != NULL) {
        ex->obs->misuse(ex->obs_ud, ex->running, f->vtable->name, (pl_misuse)what);
        return;
    }
    fprintf(stderr, "pollen: future '%s': %s\n", f->vtable->name,
            what == PL__MISUSE_DOUBLE_DROP ? "dropped twice" : "polled after READY");
    fflush(stderr);
    abort();
}

/* A site's key must be the same in every build of the same source, so it
 * hashes the file's base name and line, never an address. */
uint64_t pl__site_key(const char *file, int line)
{
    const char *base = strrchr(file, '/');
    base = base != NULL ? base + 1 : file;
    uint64_t h = 1469598103934665603ull;
    for (const char *p = base; *p != '\0'; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    }
    return (h ^ (uint64_t)(uint32_t)line) * 1099511628211ull;
}

void pl_trace_event(pl_context *cx, const char *fmt, ...)
{
    const pl_poll_watch *w = cx->watch;
    if (w == NULL || w->event == NULL) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    w->event(w->ud, fmt, ap);
    va_end(ap);
}

/* The watch of a poll is the executor's own (poll_task hands ex->watch to
 * every poll but a dump's, whose watch records no events), so the running
 * executor and its task are all a note needs. */
void pl_trace_note(const char *fmt, ...)
{
    const pl_executor *ex = current_executor;
    if (ex == NULL || ex->running == NULL || ex->watch == NULL || ex->watch->event == NULL) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    ex->watch->event(ex->watch->ud, fmt, ap);
    va_end(ap);
}

/* The site of the buggify decision in progress, for the system's decide()
 * to name it (the decision itself carries only the key). Production never
 * gets past the decide == NULL test, so it never stores one. */
static _Thread_local const pl_source_site *buggify_site;
static _Thread_local const pl_executor *buggify_ex;

const pl_source_site *pl__executor_buggify_site(const pl_executor *ex)
{
    return ex == buggify_ex ? buggify_site : NULL;
}

bool pl__buggify(pl_context *cx, const char *file, int line, const char *func)
{
    pl_executor *ex = cx->ex;
    if (ex->decide == NULL) {
        return false;
    }
    pl_source_site site = {file, line, func};
    const pl_source_site *saved = buggify_site;
    const pl_executor *saved_ex = buggify_ex;
    buggify_site = &site;
    buggify_ex = ex;
    bool fire = pl__executor_decide(ex, PL_DECIDE_BUGGIFY_FIRE, 2, pl__site_key(file, line)) != 0;
    buggify_site = saved;
    buggify_ex = saved_ex;
    return fire;
}
