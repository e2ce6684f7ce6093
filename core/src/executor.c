/* core/src/executor.c: tasks, task wakers, the run loop, remote wakes.
 *
 * A task is one allocation: this header followed by the user's future
 * copy. The ready queue is a FIFO in two parts: under a deciding system
 * its first `window` tasks sit in a small ring (the candidates of a
 * scheduling decision, picked by index), the rest in an intrusive singly
 * linked list through task->next (production uses the list alone), so
 * scheduling never allocates. Reference counting: the
 * executor holds one reference from spawn until the task finishes, each
 * handle and each waker clone holds one more; the memory goes when the
 * count reaches zero.
 */
#include <pthread.h>
#include <stdalign.h>
#include <string.h>

#include "internal.h"
#include "pollen/timer.h"

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
    TASK_ABANDONED = 1u << 7,     /* left mid-poll (pl_executor_abandon_poll): never
                                     polled or dropped again */
};

struct pl_task {
    pl_task_head head;   /* id, polls, gen, waker clones: observers read it inline */
    pl_task *next;       /* ready queue link */
    pl_executor *ex;
    uint32_t refs;
    uint8_t state;       /* enum task_state */
    uint8_t flags;       /* enum task_flag */
    uint16_t reserved;
    uint32_t slot;       /* index in ex->tasks */
    uint32_t size;       /* bytes of the future copy */
    pl_join *joiner;     /* the join future waiting for completion */
    const char *name;
    alignas(16) unsigned char future[];
};

struct pl_remote_waker {
    pl_remote_waker *next;
    pl_task *task;
    uint32_t gen;
    bool wake;           /* false: dropped without waking */
};

struct pl_executor {
    pl_system system;
    bool owns_system;
    bool rotate;
    bool stop;
    uint32_t (*decide)(void *self, pl_decision_kind kind, uint32_t n, uint64_t key);
    const pl_observer *obs;
    void *obs_ud;
    pl_alloc_fn alloc;
    void *alloc_ud;
    uint32_t budget;
    uint32_t window;
    const pl_waker_vtable *waker_vtable; /* fast unless observed or rotating */

    pl_task **win;       /* ring: the first min(ready_len, window) runnable tasks */
    uint32_t win_mask;   /* ring capacity - 1 (a power of two >= window) */
    uint32_t win_head;
    uint32_t win_len;
    uint32_t win_max;    /* window; 0 without decide(): the list alone is FIFO */
    pl_task *ready_head; /* the runnable tasks after the window, FIFO */
    pl_task *ready_tail;
    size_t ready_len;    /* in the window and after it */
    pl_task *running;

    pl_task **tasks;     /* every allocated task, finished or not */
    uint32_t tasks_len;
    uint32_t tasks_cap;
    size_t live;         /* tasks not yet finished */
    size_t live_background; /* of which marked background */
    const pl_poll_watch *watch; /* handed to observed polls; NULL in production */
    uint32_t next_id;

    pl_time now;
    pl__timer_heap timers;
    uint32_t io_ids;
    size_t io_count;

    pthread_mutex_t remote_lock;
    pl_remote_waker *remote_head; /* guarded by remote_lock */
    size_t remote_outstanding;    /* executor thread only */
};

static _Thread_local pl_executor *current_executor;

static const pl_waker_vtable task_waker_vtable;
static const pl_waker_vtable fast_waker_vtable;

pl_executor *pl__current_executor(void) { return current_executor; }

/* ---- Allocation ------------------------------------------------------- */

static void *default_alloc(void *ud, void *ptr, size_t old_size, size_t new_size)
{
    (void)ud;
    (void)old_size;
    if (new_size == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, new_size);
}

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
    opts->timer_late_quantum_ns = PL_MS;
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

/* pthread_mutex_init may fail for lack of resources (EAGAIN, ENOMEM);
 * an executor without its remote-wake lock would race on first use. */
static int init_remote_lock(pl_executor *ex)
{
    int err = pthread_mutex_init(&ex->remote_lock, NULL);
    if (err == 0) {
        return 0;
    }
    return err == ENOMEM ? PL_ENOMEM : PL_EAGAIN;
}

int pl_executor_create(pl_executor **out, const pl_executor_options *opts)
{
    pl_executor_options defaults;
    if (opts == NULL) {
        pl_executor_options_default(&defaults);
        opts = &defaults;
    }
    pl_alloc_fn alloc = opts->alloc != NULL ? opts->alloc : default_alloc;
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
        rc = init_remote_lock(ex);
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
    ex->rotate = opts->rotate_wakers;
    ex->watch = opts->poll_watch;
    ex->waker_vtable = ex->obs == NULL && !ex->rotate ? &fast_waker_vtable : &task_waker_vtable;
    ex->budget = opts->polls_per_tick_max ? opts->polls_per_tick_max : 128;

    ex->timers.late_max = opts->timer_late_max;
    ex->timers.late_quantum_ns = opts->timer_late_quantum_ns;
    ex->now = ex->system.vtable->now(ex->system.self);
    *out = ex;
    return 0;
}

static void task_free(pl_task *t);
static void task_cancel(pl_task *t);
static inline void task_release(pl_task *t);
static inline pl_task *ready_take(pl_executor *ex, uint32_t k);

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
    (void)pl__executor_drain_remote(ex);
    while (ex->tasks_len > 0) {
        task_free(ex->tasks[ex->tasks_len - 1]);
    }
    pl_free(ex, ex->tasks, (size_t)ex->tasks_cap * sizeof *ex->tasks);
    pl_free(ex, ex->win, ((size_t)ex->win_mask + 1) * sizeof *ex->win);
    pl__timers_finish(ex, &ex->timers);
    pthread_mutex_destroy(&ex->remote_lock);
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
                task_cancel(t);
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
    current_executor = saved;
}

/* ---- Accessors -------------------------------------------------------- */

pl_time pl_now(const pl_executor *ex) { return ex->now; }
size_t pl_executor_live_tasks(const pl_executor *ex) { return ex->live; }
const pl_system *pl_executor_system(const pl_executor *ex) { return &ex->system; }
const pl_system *pl__executor_system(const pl_executor *ex) { return &ex->system; }
pl__timer_heap *pl__executor_timers(pl_executor *ex) { return &ex->timers; }
uint32_t pl__executor_next_io_id(pl_executor *ex) { return ++ex->io_ids; }
size_t pl_executor_runnable(const pl_executor *ex) { return ex->ready_len; }
size_t pl_executor_timers(const pl_executor *ex) { return ex->timers.len; }
pl_time pl_executor_next_timer(const pl_executor *ex) { return pl__timers_next(&ex->timers); }
void pl_executor_stop(pl_executor *ex) { ex->stop = true; }

size_t pl_executor_runnable_ids(const pl_executor *ex, uint32_t *ids, size_t max)
{
    size_t n = 0;
    for (uint32_t i = 0; i < ex->win_len && n < max; i++) {
        ids[n++] = ex->win[(ex->win_head + i) & ex->win_mask]->head.id;
    }
    for (const pl_task *t = ex->ready_head; t != NULL && n < max; t = t->next) {
        ids[n++] = t->head.id;
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

void *pl_task_future(pl_task *t) { return t->future; }
bool pl_task_is_finished(const pl_task *t) { return t->state >= TASK_DONE; }
bool pl_task_is_cancelled(const pl_task *t) { return t->state == TASK_CANCELLED; }
uint32_t pl_task_id(const pl_task *t) { return t->head.id; }
uint32_t pl_task_polls(const pl_task *t) { return t->head.polls; }
uint32_t pl_task_waker_gen(const pl_task *t) { return t->head.gen; }
bool pl_task_cloned_elsewhere(const pl_task *t) { return t->flags & TASK_CLONED_ELSEWHERE; }
size_t pl_task_future_size(const pl_task *t) { return t->size; }

bool pl_task_is_scheduled(const pl_task *t)
{
    return t->state == TASK_SCHEDULED || t->state == TASK_RUNNING;
}

const char *pl_task_name(const pl_task *t)
{
    if (t->name != NULL) {
        return t->name;
    }
    return ((const pl_future *)(const void *)t->future)->vtable->name;
}

void pl_task_set_background(pl_task *t, bool background)
{
    bool was = (t->flags & TASK_BACKGROUND) != 0;
    if (was == background) {
        return;
    }
    t->flags = (uint8_t)(background ? t->flags | TASK_BACKGROUND : t->flags & ~TASK_BACKGROUND);
    if (t->state < TASK_DONE) {
        PL_ASSERT(background || t->ex->live_background > 0);
        t->ex->live_background = background ? t->ex->live_background + 1
                                             : t->ex->live_background - 1;
    }
}

bool pl_task_is_background(const pl_task *t) { return (t->flags & TASK_BACKGROUND) != 0; }

size_t pl_executor_live_background(const pl_executor *ex) { return ex->live_background; }

void pl_task_set_abortable(pl_task *t, bool abortable)
{
    t->flags = (uint8_t)(abortable ? t->flags | TASK_ABORTABLE : t->flags & ~TASK_ABORTABLE);
}

/* ---- Ready queue ------------------------------------------------------ */

static inline pl_task **win_at(pl_executor *ex, uint32_t i)
{
    return &ex->win[(ex->win_head + i) & ex->win_mask];
}

/* The list after the window is used only once the window is full, so the
 * window always holds the first min(ready_len, window) tasks in order. */
static inline void ready_push(pl_executor *ex, pl_task *t)
{
    PL_ASSERT(!(t->flags & TASK_QUEUED));
    t->flags |= TASK_QUEUED;
    ex->ready_len++;
    if (ex->ready_head == NULL && ex->win_len < ex->win_max) {
        *win_at(ex, ex->win_len++) = t;
        return;
    }
    t->next = NULL;
    if (ex->ready_tail != NULL) {
        ex->ready_tail->next = t;
    } else {
        ex->ready_head = t;
    }
    ex->ready_tail = t;
}

/* Without decisions the queue is the list alone: popping its head reads
 * the link of a task about to be polled anyway, and fetching the next
 * head now overlaps that task's miss with this poll. */
static inline pl_task *list_take(pl_executor *ex)
{
    pl_task *t = ex->ready_head;
    ex->ready_head = t->next;
    if (ex->ready_head == NULL) {
        ex->ready_tail = NULL;
    } else {
        PL_PREFETCH(ex->ready_head);
    }
    ex->ready_len--;
    t->flags &= (uint8_t)~TASK_QUEUED;
    return t;
}

/* Removes the k-th runnable task (k < win_len; 0: the head). The ones
 * before it move up a place, and the list's head refills the window: a
 * pick reads no task but the one it takes and the one that moves in,
 * where walking a linked list to the k-th would miss the cache k times. */
static inline pl_task *ready_take(pl_executor *ex, uint32_t k)
{
    if (ex->win_len == 0) {
        return list_take(ex);
    }
    PL_ASSERT(k < ex->win_len);
    pl_task *t = *win_at(ex, k);
    for (uint32_t j = k; j > 0; j--) {
        *win_at(ex, j) = *win_at(ex, j - 1);
    }
    ex->win_head = (ex->win_head + 1) & ex->win_mask;
    ex->win_len--;
    pl_task *next = ex->ready_head;
    if (next != NULL) {
        /* Walking the list is a chain of dependent loads through cold
         * task headers: fetch the new head now, a poll before the next
         * refill reads its link, and the future of the task moving in. */
        ex->ready_head = next->next;
        if (ex->ready_head == NULL) {
            ex->ready_tail = NULL;
        } else {
            PL_PREFETCH(ex->ready_head);
        }
        PL_PREFETCH(next->future);
        *win_at(ex, ex->win_len++) = next;
    }
    ex->ready_len--;
    t->flags &= (uint8_t)~TASK_QUEUED;
    return t;
}

/* FIFO in production. With a decide() hook the system picks among the
 * first `window` runnable tasks, so a pick costs O(window) however many
 * tasks are runnable. */
static pl_task *ready_pop(pl_executor *ex)
{
    if (ex->decide == NULL || ex->ready_len <= 1) {
        return ready_take(ex, 0);
    }
    uint32_t n = ex->win_len;
    uint32_t k = pl__executor_decide(ex, PL_DECIDE_SCHEDULE, n, (*win_at(ex, 0))->head.id);
    return ready_take(ex, k);
}

/* ---- Task lifetime ---------------------------------------------------- */

static size_t task_alloc_size(uint32_t size) { return sizeof(pl_task) + size; }

/* Drops the task's future unless that already happened. Completion and
 * cancellation both drop at once, as Rust does: what a finished future
 * holds (wakers, handles, buffers) is released without waiting for the
 * last reference, and plain output fields stay readable afterwards. */
static void task_drop_future(pl_task *t, bool cancelled)
{
    pl_executor *ex = t->ex;
    pl_future *f = (pl_future *)(void *)t->future;
    if ((f->flags & PL_FUTURE_DROPPED) || (t->flags & TASK_ABANDONED)) {
        return;
    }
    if (ex->obs != NULL && ex->obs->drop != NULL) {
        ex->obs->drop(ex->obs_ud, t, cancelled);
    }
    /* The drop releases the task's own waker clones: that is no orphan. */
    t->flags |= TASK_DROPPING;
    pl_drop(f);
    t->flags &= (uint8_t)~TASK_DROPPING;
}

static void task_free(pl_task *t)
{
    pl_executor *ex = t->ex;
    task_drop_future(t, true);
    if (ex->obs != NULL && ex->obs->free != NULL) {
        ex->obs->free(ex->obs_ud, t);
    }
    pl_task *last = ex->tasks[--ex->tasks_len];
    ex->tasks[t->slot] = last;
    last->slot = t->slot;
    pl_free(ex, t, task_alloc_size(t->size));
}

static inline void task_release(pl_task *t)
{
    PL_ASSERT(t->refs > 0);
    if (--t->refs == 0) {
        task_free(t);
    }
}

static int tasks_reserve(pl_executor *ex)
{
    if (ex->tasks_len < ex->tasks_cap) {
        return 0;
    }
    uint32_t cap = ex->tasks_cap ? ex->tasks_cap * 2 : 64;
    pl_task **items = ex->alloc(ex->alloc_ud, ex->tasks, (size_t)ex->tasks_cap * sizeof *items,
                                (size_t)cap * sizeof *items);
    if (items == NULL) {
        return PL_ENOMEM;
    }
    ex->tasks = items;
    ex->tasks_cap = cap;
    return 0;
}

int pl_spawn(pl_executor *ex, const pl_future *fut, size_t size, const char *name,
             pl_task **handle)
{
    PL_ASSERT(fut != NULL && fut->vtable != NULL && fut->flags == 0);
    PL_ASSERT(size >= sizeof(pl_future) && size <= UINT32_MAX - sizeof(pl_task));
    if (tasks_reserve(ex) != 0) {
        return PL_ENOMEM;
    }
    pl_task *t = pl_alloc(ex, task_alloc_size((uint32_t)size));
    if (t == NULL) {
        return PL_ENOMEM;
    }
    memset(t, 0, sizeof *t);
    memcpy(t->future, fut, size);
    t->ex = ex;
    t->refs = handle != NULL ? 2 : 1;
    t->head.id = ++ex->next_id;
    t->size = (uint32_t)size;
    t->name = name;
    t->slot = ex->tasks_len;
    ex->tasks[ex->tasks_len++] = t;
    ex->live++;
    t->state = TASK_SCHEDULED;
    t->flags = TASK_CLONED_ELSEWHERE; /* no clone yet: nobody made the latest */
    if (ex->obs != NULL && ex->obs->spawn != NULL) {
        ex->obs->spawn(ex->obs_ud, t);
    }
    ready_push(ex, t);
    if (handle != NULL) {
        *handle = t;
    }
    return 0;
}

pl_task *pl_task_ref(pl_task *t)
{
    t->refs++;
    return t;
}

void pl_task_release(pl_task *t)
{
    if (t != NULL) {
        task_release(t);
    }
}

static void wake_joiner(pl_task *t)
{
    pl_join *j = t->joiner;
    if (j != NULL) {
        t->joiner = NULL;
        pl_waker_slot_wake(&j->waker);
    }
}

/* The executor's reference goes when the task finishes. */
static void task_finish(pl_task *t, uint8_t state)
{
    pl_executor *ex = t->ex;
    t->state = state;
    PL_ASSERT(ex->live > 0);
    ex->live--;
    if (t->flags & TASK_BACKGROUND) {
        PL_ASSERT(ex->live_background > 0);
        ex->live_background--;
    }
    wake_joiner(t);
    if (!(t->flags & TASK_QUEUED)) {
        task_release(t);
    }
}

static void task_cancel(pl_task *t)
{
    task_drop_future(t, true);
    task_finish(t, TASK_CANCELLED);
}

void pl_task_abort(pl_task *t)
{
    if (t->state >= TASK_DONE) {
        return;
    }
    if (t->state == TASK_RUNNING) {
        t->flags |= TASK_ABORT_IN_POLL;
        return;
    }
    task_cancel(t);
}

/* ---- Task wakers ------------------------------------------------------ */

static pl_waker task_waker(pl_task *t)
{
    return (pl_waker){t->ex->waker_vtable, t, t->head.gen, 0};
}

static void notify_wake(pl_executor *ex, pl_task *t, uint32_t gen, bool by_ref,
                        pl_wake_outcome outcome)
{
    if (ex->obs != NULL && ex->obs->wake != NULL) {
        ex->obs->wake(ex->obs_ud, t, gen, by_ref, ex->running, outcome);
    }
}

/* The one place a task becomes runnable: dedupes, defers wakes during the
 * task's own poll, ignores finished tasks and (under rotation) wakers a
 * later poll superseded. */
static void task_wake(pl_task *t, uint32_t gen, bool by_ref)
{
    pl_executor *ex = t->ex;
    pl_wake_outcome outcome;
    if (t->state >= TASK_DONE) {
        outcome = PL_WAKE_FINISHED;
    } else if (ex->rotate && gen != t->head.gen) {
        outcome = PL_WAKE_STALE;
    } else if (t->state == TASK_IDLE) {
        t->state = TASK_SCHEDULED;
        ready_push(ex, t);
        outcome = PL_WAKE_SCHEDULED;
    } else if (t->state == TASK_RUNNING) {
        t->flags |= TASK_WOKEN_IN_POLL;
        outcome = PL_WAKE_DURING_POLL;
    } else {
        outcome = PL_WAKE_DEDUPED;
    }
    if (ex->obs != NULL) {
        notify_wake(ex, t, gen, by_ref, outcome);
    }
}

/* Counts the clone in the task (hot: refs sits next to it) instead of a
 * hook call per clone; the observer hears only of clones made outside the
 * task's own poll, the rare case where it wants to know who made them. */
static void count_clone(pl_executor *ex, pl_task *t, uint32_t gen)
{
    t->head.waker_clones++;
    if (ex->running == t) {
        t->flags &= (uint8_t)~TASK_CLONED_ELSEWHERE;
        return;
    }
    t->flags |= TASK_CLONED_ELSEWHERE;
    if (ex->obs != NULL && ex->obs->waker_clone != NULL) {
        ex->obs->waker_clone(ex->obs_ud, t, gen);
    }
}

/* A parked task whose last waker clone goes without a wake can never be
 * woken again. Its own poll and its own drop are not that: the poll may
 * still store a new clone or wake itself, the drop ends the task. A
 * consuming wake schedules the task before it drops the clone. Out of
 * line: the drop path stays as short as it was. */
PL_COLD static void notify_orphan(pl_executor *ex, pl_task *t)
{
    if (!(t->flags & (TASK_DROPPING | TASK_ABANDONED)) && ex->obs != NULL &&
        ex->obs->orphaned != NULL) {
        ex->obs->orphaned(ex->obs_ud, t, ex->running);
    }
}

static inline void count_drop(pl_executor *ex, pl_task *t, uint32_t gen)
{
    if (t->head.waker_clones > 0) {
        if (--t->head.waker_clones == 0 && t->state == TASK_IDLE) {
            notify_orphan(ex, t);
        }
    } else if (ex->obs != NULL && ex->obs->waker_drop != NULL) {
        ex->obs->waker_drop(ex->obs_ud, t, gen);
    }
}

static void task_waker_clone(const pl_waker *w, pl_waker *out)
{
    pl_task *t = w->data;
    t->refs++;
    count_clone(t->ex, t, w->gen);
    out->vtable = w->vtable;
    out->data = t;
    out->gen = w->gen;
    out->reserved = 0;
}

static void task_waker_drop(pl_waker w)
{
    pl_task *t = w.data;
    count_drop(t->ex, t, w.gen);
    task_release(t);
}

static void task_waker_wake_by_ref(const pl_waker *w) { task_wake(w->data, w->gen, true); }

static void task_waker_wake(pl_waker w)
{
    task_wake(w.data, w.gen, false);
    task_waker_drop(w);
}

static const pl_waker_vtable task_waker_vtable = {
    task_waker_clone,
    task_waker_wake,
    task_waker_wake_by_ref,
    task_waker_drop,
};

/* Production wakers: with no observer and no rotation there is nothing
 * to report and no identity to check, so the hot path is a state test,
 * a queue push and a reference count. */
static void fast_waker_clone(const pl_waker *w, pl_waker *out)
{
    pl_task *t = w->data;
    t->refs++;
    /* Field by field from narrow loads: the context's waker was just
     * written field by field, and one wide reload of it would stall on
     * store forwarding. No rotation here: gen is always 0. */
    out->vtable = &fast_waker_vtable;
    out->data = t;
    out->gen = 0;
    out->reserved = 0;
}

static void fast_waker_wake_by_ref(const pl_waker *w)
{
    pl_task *t = w->data;
    if (t->state == TASK_IDLE) {
        t->state = TASK_SCHEDULED;
        ready_push(t->ex, t);
    } else if (t->state == TASK_RUNNING) {
        t->flags |= TASK_WOKEN_IN_POLL;
    }
}

static void fast_waker_drop(pl_waker w) { task_release(w.data); }

static void fast_waker_wake(pl_waker w)
{
    fast_waker_wake_by_ref(&w);
    task_release(w.data);
}

static const pl_waker_vtable fast_waker_vtable = {
    fast_waker_clone,
    fast_waker_wake,
    fast_waker_wake_by_ref,
    fast_waker_drop,
};

void pl_executor_wake_task(pl_executor *ex, pl_task *t)
{
    PL_ASSERT(t->ex == ex);
    task_wake(t, t->head.gen, true);
}

/* ---- Noop waker ------------------------------------------------------- */

static void noop_clone(const pl_waker *w, pl_waker *out) { *out = *w; }
static void noop_wake(pl_waker w) { (void)w; }
static void noop_wake_by_ref(const pl_waker *w) { (void)w; }

static const pl_waker_vtable noop_vtable = {noop_clone, noop_wake, noop_wake_by_ref, noop_wake};

pl_waker pl_waker_noop(void) { return (pl_waker){&noop_vtable, NULL, 0, 0}; }

/* ---- Polling ---------------------------------------------------------- */

/* The task's own future: pl_poll without the watch's enter/leave, which
 * the observer's poll_begin/poll_end already bracket. */
static inline pl_poll_result poll_root(pl_future *f, pl_context *cx)
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

static pl_poll_result poll_task(pl_executor *ex, pl_task *t, bool probe)
{
    pl_context cx = {task_waker(t), ex, t, ex->watch};
    pl_task *outer = ex->running;
    uint8_t prior = t->state;
    t->state = TASK_RUNNING;
    t->head.polls++;
    ex->running = t;
    if (ex->obs != NULL && ex->obs->poll_begin != NULL) {
        ex->obs->poll_begin(ex->obs_ud, t, t->head.gen, probe);
    }
    pl_poll_result r = poll_root((pl_future *)(void *)t->future, &cx);
    ex->running = outer;
    if (ex->obs != NULL && ex->obs->poll_end != NULL) {
        ex->obs->poll_end(ex->obs_ud, t, r, probe);
    }
    if (r == PL_READY) {
        if (ex->obs != NULL && ex->obs->complete != NULL) {
            ex->obs->complete(ex->obs_ud, t);
        }
        task_drop_future(t, false);
        task_finish(t, TASK_DONE);
    } else if (t->flags & TASK_ABORT_IN_POLL) {
        task_cancel(t);
    } else if (t->flags & TASK_WOKEN_IN_POLL) {
        t->flags &= (uint8_t)~TASK_WOKEN_IN_POLL;
        t->state = TASK_SCHEDULED;
        ready_push(ex, t);
    } else {
        t->state = prior == TASK_SCHEDULED ? TASK_IDLE : prior;
    }
    return r;
}

static void run_one(pl_executor *ex, pl_task *t)
{
    if (t->state == TASK_CANCELLED) {
        /* Aborted while queued: the queue kept the executor's reference. */
        task_release(t);
        return;
    }
    if ((t->flags & TASK_ABORTABLE) && ex->decide != NULL &&
        pl__executor_decide(ex, PL_DECIDE_CANCEL, 2, t->head.id) != 0) {
        task_cancel(t);
        return;
    }
    if (ex->rotate) {
        t->head.gen++;
    }
    poll_task(ex, t, false);
}

pl_poll_result pl_executor_probe(pl_executor *ex, pl_task *t)
{
    PL_ASSERT(t->ex == ex && t->state == TASK_IDLE && !(t->flags & TASK_ABANDONED));
    return poll_task(ex, t, true);
}

/* The poll was left by a longjmp: nothing after the future's poll call
 * ran. The future's bytes are whatever the spin left, so neither its poll
 * nor its drop may run again; the extra reference keeps its memory (which
 * wait lists may still point into) until pl_executor_destroy frees it by
 * force. */
void pl_executor_abandon_poll(pl_executor *ex)
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

/* Polls up to the budget; returns how many tasks ran. */
/* Production: no observer, no decisions, no rotation. The same steps as
 * run_one + poll_task minus every hook test, with the waker built from a
 * constant vtable. */
static inline void poll_fast(pl_executor *ex, pl_task *t)
{
    if (t->state == TASK_CANCELLED) {
        task_release(t);
        return;
    }
    pl_context cx = {{&fast_waker_vtable, t, t->head.gen, 0}, ex, t, NULL};
    t->state = TASK_RUNNING;
    t->head.polls++;
    ex->running = t;
    pl_future *f = (pl_future *)(void *)t->future;
    pl_poll_result r = pl_poll(f, &cx);
    ex->running = NULL;
    if (r == PL_READY) {
        task_drop_future(t, false);
        task_finish(t, TASK_DONE);
    } else if (t->flags & (TASK_ABORT_IN_POLL | TASK_WOKEN_IN_POLL)) {
        if (t->flags & TASK_ABORT_IN_POLL) {
            task_cancel(t);
        } else {
            t->flags &= (uint8_t)~TASK_WOKEN_IN_POLL;
            t->state = TASK_SCHEDULED;
            ready_push(ex, t);
        }
    } else {
        t->state = TASK_IDLE;
    }
}

static uint32_t run_ready_fast(pl_executor *ex)
{
    uint32_t n = 0;
    uint32_t budget = ex->budget;
    while (ex->ready_len != 0 && n < budget && !ex->stop) {
        poll_fast(ex, ready_take(ex, 0));
        n++;
    }
    return n;
}

static uint32_t run_ready(pl_executor *ex)
{
    if (ex->waker_vtable == &fast_waker_vtable && ex->decide == NULL) {
        return run_ready_fast(ex);
    }
    uint32_t n = 0;
    while (ex->ready_len != 0 && n < ex->budget && !ex->stop) {
        run_one(ex, ready_pop(ex));
        n++;
    }
    return n;
}

/* ---- The run loop ----------------------------------------------------- */

static bool is_idle(const pl_executor *ex)
{
    return ex->ready_len == 0 && ex->timers.len == 0 && ex->io_count == 0 &&
           ex->remote_outstanding == 0;
}

/* One tick: timers, a budget of polls, then I/O (blocking only when
 * nothing is runnable). Returns 1 to go on, 0 when idle, or an error. */
static int tick(pl_executor *ex, const pl_task *until)
{
    const pl_system_vtable *sys = ex->system.vtable;
    ex->now = sys->now(ex->system.self);
    pl__timers_fire_due(ex, &ex->timers, ex->now);
    run_ready(ex);
    if (ex->stop || (until != NULL && until->state >= TASK_DONE)) {
        return 1;
    }
    if (ex->ready_len != 0) {
        /* Budget spent: collect I/O without blocking, unless nothing
         * outside the executor could have happened (the common case of a
         * pure compute or notify workload: no syscall at all). */
        if (ex->io_count == 0 && ex->remote_outstanding == 0 && ex->decide == NULL) {
            return 1;
        }
        int rc = sys->wait(ex->system.self, ex, ex->now);
        return rc < 0 ? rc : 1;
    }
    if (is_idle(ex)) {
        return 0;
    }
    int rc = sys->wait(ex->system.self, ex, pl__timers_next(&ex->timers));
    return rc < 0 ? rc : 1;
}

static int run_loop(pl_executor *ex, pl_task *until)
{
    PL_ASSERT(ex->running == NULL);
    pl_executor *saved = current_executor;
    current_executor = ex;
    int rc;
    for (;;) {
        if (ex->stop) {
            ex->stop = false;
            rc = PL_ECANCELED;
            break;
        }
        if (until != NULL && until->state >= TASK_DONE) {
            rc = 0;
            break;
        }
        if (ex->live_background > 0 && ex->live == ex->live_background && ex->ready_len == 0 &&
            until == NULL) {
            rc = 0; /* only background work is left, all of it parked */
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
    int rc = pl_spawn(ex, fut, size, NULL, &t);
    if (rc != 0) {
        return rc;
    }
    rc = run_loop(ex, t);
    if (t->state == TASK_DONE) {
        memcpy(fut, t->future, size);
        rc = 0;
    } else {
        pl_task_abort(t);
        if (rc == 0) {
            rc = PL_EDEADLK;
        }
    }
    task_release(t);
    return rc;
}

/* ---- Join ------------------------------------------------------------- */

/* The declared wait condition of a join (sync.h). base.resume is 1 once
 * a poll registered the join: only a pending, registered join may read
 * its task, whose handle the caller keeps while the join is pending. */
static bool join_holds(const void *subject, char *why, size_t why_len)
{
    const pl_join *j = subject;
    if (j->base.vtable != &pl__join_vtable || j->base.flags != 0 || j->base.resume != 1 ||
        j->task->state < TASK_DONE) {
        return false;
    }
    snprintf(why, why_len, "'%s' (#%u) %s", pl_task_name(j->task), j->task->head.id,
             j->task->state == TASK_DONE ? "completed" : "was cancelled");
    return true;
}

static pl_poll_result join_poll(pl_future *f, pl_context *cx)
{
    pl_join *j = (pl_join *)f;
    pl_task *t = j->task;
    if (t->state >= TASK_DONE) {
        j->result = t->state == TASK_DONE ? 0 : PL_ECANCELED;
        if (t->joiner == j) {
            t->joiner = NULL;
        }
        pl_waker_slot_clear(&j->waker);
        j->base.resume = 0;
        return PL_READY;
    }
    PL_ASSERT(t->joiner == NULL || t->joiner == j);
    t->joiner = j;
    pl_waker_slot_set(&j->waker, &cx->waker);
    j->base.resume = 1;
    if (cx->watch != NULL) { /* production: do not even build the pl_wait */
        pl_wait_declare(cx,
                        &(pl_wait){"join", "the task finished", j, join_holds, __FILE__, __LINE__});
    }
    return PL_PENDING;
}

static void join_drop(pl_future *f)
{
    pl_join *j = (pl_join *)f;
    /* A completed join has let go of the task, whose handle may be gone:
     * only a pending one is still linked to it. */
    if (!pl_future_is_done(f) && j->task->joiner == j) {
        j->task->joiner = NULL;
    }
    pl_waker_slot_clear(&j->waker);
}

const pl_future_vtable pl__join_vtable = {"join", join_poll, join_drop};

/* ---- Timers seen from the simulator ---------------------------------- */

pl_task *pl__executor_waker_task(const pl_executor *ex, const pl_waker *w)
{
    if (w->vtable != &task_waker_vtable && w->vtable != &fast_waker_vtable) {
        return NULL;
    }
    pl_task *t = w->data;
    return t->ex == ex ? t : NULL;
}

static pl_task *timer_task(const pl_executor *ex, const pl_timer *tm)
{
    return pl__executor_waker_task(ex, &tm->waker);
}

pl_task *pl_executor_next_timer_task(const pl_executor *ex, uint64_t *seq)
{
    if (ex->timers.len == 0) {
        return NULL;
    }
    *seq = ex->timers.items[0].seq;
    return timer_task(ex, ex->timers.items[0].t);
}

size_t pl_executor_timer_task_ids(const pl_executor *ex, uint32_t *ids, size_t max)
{
    size_t n = 0;
    for (uint32_t i = 0; i < ex->timers.len && n < max; i++) {
        const pl_task *t = timer_task(ex, ex->timers.items[i].t);
        ids[n++] = t != NULL ? t->head.id : 0;
    }
    return n;
}

bool pl_executor_timers_wake_foreground(const pl_executor *ex)
{
    for (uint32_t i = 0; i < ex->timers.len; i++) {
        const pl_task *t = timer_task(ex, ex->timers.items[i].t);
        if (t == NULL || (t->state < TASK_DONE && !(t->flags & TASK_BACKGROUND))) {
            return true;
        }
    }
    return false;
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
    w->leave(w->ud, f, r);
    return r;
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
uint64_t pl_site_key(const char *file, int line)
{
    const char *base = strrchr(file, '/');
    base = base != NULL ? base + 1 : file;
    uint64_t h = 1469598103934665603ull;
    for (const char *p = base; *p != '\0'; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    }
    return (h ^ (uint64_t)(uint32_t)line) * 1099511628211ull;
}

bool pl__buggify(pl_context *cx, const char *file, int line)
{
    pl_executor *ex = cx->ex;
    if (ex->decide == NULL) {
        return false;
    }
    return pl__executor_decide(ex, PL_DECIDE_BUGGIFY_FIRE, 2, pl_site_key(file, line)) != 0;
}

/* ---- Remote wakers ---------------------------------------------------- */

int pl_remote_waker_create(pl_context *cx, pl_remote_waker **out)
{
    pl_executor *ex = cx->ex;
    pl_remote_waker *rw = pl_alloc(ex, sizeof *rw);
    if (rw == NULL) {
        return PL_ENOMEM;
    }
    pl_task *t = cx->task;
    rw->next = NULL;
    rw->task = pl_task_ref(t);
    rw->gen = cx->waker.gen;
    rw->wake = true;
    ex->remote_outstanding++;
    /* To the oracles a remote waker is one more live clone of the waker. */
    if (ex->waker_vtable == &task_waker_vtable) {
        count_clone(ex, t, rw->gen);
    }
    *out = rw;
    return 0;
}

static void remote_push(pl_remote_waker *rw, bool wake)
{
    pl_executor *ex = rw->task->ex;
    rw->wake = wake;
    pthread_mutex_lock(&ex->remote_lock);
    rw->next = ex->remote_head;
    ex->remote_head = rw;
    pthread_mutex_unlock(&ex->remote_lock);
    ex->system.vtable->remote_wake(ex->system.self);
}

void pl_remote_waker_wake(pl_remote_waker *rw) { remote_push(rw, true); }
void pl_remote_waker_drop(pl_remote_waker *rw) { remote_push(rw, false); }

static size_t deliver_remote(pl_executor *ex, pl_remote_waker *list)
{
    /* The list is LIFO; reverse it so wakes are delivered in push order. */
    pl_remote_waker *fifo = NULL;
    while (list != NULL) {
        pl_remote_waker *next = list->next;
        list->next = fifo;
        fifo = list;
        list = next;
    }
    size_t n = 0;
    while (fifo != NULL) {
        pl_remote_waker *rw = fifo;
        fifo = rw->next;
        if (rw->wake) {
            task_wake(rw->task, rw->gen, false);
        }
        if (ex->waker_vtable == &task_waker_vtable) {
            count_drop(ex, rw->task, rw->gen);
        }
        task_release(rw->task);
        pl_free(ex, rw, sizeof *rw);
        PL_ASSERT(ex->remote_outstanding > 0);
        ex->remote_outstanding--;
        n++;
    }
    return n;
}

size_t pl__executor_drain_remote(pl_executor *ex)
{
    pthread_mutex_lock(&ex->remote_lock);
    pl_remote_waker *list = ex->remote_head;
    ex->remote_head = NULL;
    pthread_mutex_unlock(&ex->remote_lock);
    return deliver_remote(ex, list);
}

