/* core/src/task.c: spawning tasks, their lifetime, abort and join.
 *
 * A task is one allocation: its header followed by the user's future
 * copy. Reference counting: the executor holds one reference from spawn
 * until the task finishes, each handle and each waker clone holds one
 * more; the memory goes when the count reaches zero.
 */
#include <stddef.h>
#include <string.h>

#include "executor_internal.h"
#include "pollen/timer.h"
#include "ready.h"
#include "recorder.h"

/* ---- Accessors -------------------------------------------------------- */

void *pl_task_future(pl_task *t) { return t->future; }
bool pl_task_is_finished(const pl_task *t) { return t->state >= TASK_DONE; }
bool pl_task_is_cancelled(const pl_task *t) { return t->state == TASK_CANCELLED; }
uint32_t pl_task_id(const pl_task *t) { return t->id; }
uint32_t pl_task_polls(const pl_task *t) { return t->polls; }
uint32_t pl__task_waker_gen(const pl_task *t) { return task_gen(t); }
bool pl__task_cloned_elsewhere(const pl_task *t) { return t->flags & TASK_CLONED_ELSEWHERE; }
size_t pl__task_future_size(const pl_task *t) { return t->size; }

bool pl__task_is_scheduled(const pl_task *t)
{
    return t->state == TASK_SCHEDULED || t->state == TASK_RUNNING;
}

/* The name's slot holds the joiner while a join is registered. */
static const char **name_slot(pl_task *t)
{
    return t->joined ? &t->who.joiner->task_name : &t->who.name;
}

const char *pl_task_name(const pl_task *t)
{
    const char *name = *name_slot((pl_task *)(uintptr_t)t);
    if (name != NULL) {
        return name;
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

void pl__task_rename(pl_task *t, const char *name) { *name_slot(t) = name; }

bool pl_task_is_background(const pl_task *t) { return (t->flags & TASK_BACKGROUND) != 0; }

size_t pl_executor_live_background(const pl_executor *ex) { return ex->live_background; }

void pl_task_set_abortable(pl_task *t, bool abortable)
{
    t->flags = (uint8_t)(abortable ? t->flags | TASK_ABORTABLE : t->flags & ~TASK_ABORTABLE);
}

/* ---- Task lifetime ---------------------------------------------------- */

_Static_assert(sizeof(pl_task) == 48, "the production task header is 48 bytes");
_Static_assert(sizeof(task_watch) % 16 == 0 && sizeof(task_watch) <= UINT8_MAX,
               "the watch keeps the future 16-aligned");
_Static_assert(offsetof(task_watch, gen) + offsetof(pl_task_head, id) == sizeof(task_watch) &&
                   offsetof(pl_task_head, gen) == 0 && offsetof(pl_task_head, waker_clones) == 4 &&
                   offsetof(pl_task_head, polls) == offsetof(pl_task_head, id) + 4 &&
                   offsetof(pl_task, id) == 0 && offsetof(pl_task, polls) == 4,
               "pl_task_head is the watch's tail and the header's first 8 bytes");

/* The watch (observed or rotating executors) comes before the header. */
static size_t task_alloc_size(const pl_executor *ex, uint32_t size)
{
    return ex->watch_bytes + sizeof(pl_task) + size;
}

/* A production executor with the default allocator carves blocks from
 * its arena; any other allocates each through its allocator hook. */
static void *task_block_alloc(pl_executor *ex, size_t bytes)
{
    if (pl__arena_holds(&ex->arena, bytes)) {
        return pl__arena_alloc(&ex->arena, bytes);
    }
    return pl_alloc(ex, bytes);
}

static void task_block_free(pl_executor *ex, void *block, size_t bytes)
{
    if (pl__arena_holds(&ex->arena, bytes)) {
        pl__arena_free(&ex->arena, block, bytes);
        return;
    }
    pl_free(ex, block, bytes);
}

/* Drops the task's future unless that already happened. Completion and
 * cancellation both drop at once, as Rust does: what a finished future
 * holds (wakers, handles, buffers) is released without waiting for the
 * last reference, and plain output fields stay readable afterwards. */
void pl__task_drop_future(pl_task *t, bool cancelled)
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

void pl__task_free(pl_task *t)
{
    pl_executor *ex = t->ex;
    pl__task_drop_future(t, true);
    if (ex->obs != NULL && ex->obs->free != NULL) {
        ex->obs->free(ex->obs_ud, t);
    }
    pl_task *last = ex->tasks[--ex->tasks_len];
    ex->tasks[t->slot] = last;
    last->slot = t->slot;
    task_block_free(ex, (unsigned char *)t - ex->watch_bytes, task_alloc_size(ex, t->size));
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

/* A recording executor keeps the spawn site and records the spawn. */
static void spawn_recorded(pl_executor *ex, pl_task *t, const char *where, const char *func)
{
    task_track *k = task_track_of(t);
    k->where = where;
    k->func = func;
    k->parked_ns = 0;
    pl__rec(ex, PL__REC_SPAWN, t->id, ex->running != NULL ? ex->running->id : 0);
}

/* Production (no watch: no observer, no recorder) never comes here. */
static void spawn_observed(pl_executor *ex, pl_task *t, const char *where, const char *func)
{
    memset(task_watch_of(t), 0, sizeof(task_watch));
    if (ex->rec != NULL) {
        spawn_recorded(ex, t, where, func);
    }
    if (ex->obs == NULL) {
        return;
    }
    if (ex->obs->spawn != NULL) {
        ex->obs->spawn(ex->obs_ud, t);
    }
    if (ex->obs->spawn_site != NULL) {
        ex->obs->spawn_site(ex->obs_ud, t, where, func);
    }
}

int pl_spawn_at(pl_executor *ex, const pl_future *fut, size_t size, const char *name,
                pl_task **handle, const char *where, const char *func)
{
    PL_ASSERT(fut != NULL && fut->vtable != NULL && fut->flags == 0);
    PL_ASSERT(size >= sizeof(pl_future) && size <= UINT32_MAX - sizeof(pl_task));
    if (tasks_reserve(ex) != 0) {
        return PL_ENOMEM;
    }
    unsigned char *block = task_block_alloc(ex, task_alloc_size(ex, (uint32_t)size));
    if (block == NULL) {
        return PL_ENOMEM;
    }
    pl_task *t = (pl_task *)(void *)(block + ex->watch_bytes);
    /* Every field once: the block's old contents are never read. */
    *t = (pl_task){
        .id = ++ex->next_id,
        .ex = ex,
        .refs = handle != NULL ? 2 : 1,
        .state = TASK_SCHEDULED,
        .flags = TASK_CLONED_ELSEWHERE, /* no clone yet: nobody made the latest */
        .slot = ex->tasks_len,
        .size = (uint32_t)size,
        .who.name = name,
    };
    memcpy(t->future, fut, size);
    ex->tasks[ex->tasks_len++] = t;
    ex->live++;
    if (ex->watch_bytes != 0) {
        spawn_observed(ex, t, where, func);
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

/* The join registers in the name's slot and keeps the name meanwhile. */
static void joiner_set(pl_task *t, pl_join *j)
{
    j->task_name = t->who.name;
    t->who.joiner = j;
    t->joined = 1;
}

static void joiner_clear(pl_task *t)
{
    t->who.name = t->who.joiner->task_name;
    t->joined = 0;
}

static pl_join *joiner_of(const pl_task *t) { return t->joined ? t->who.joiner : NULL; }

static void wake_joiner(pl_task *t)
{
    pl_join *j = joiner_of(t);
    if (j != NULL) {
        joiner_clear(t);
        pl_waker_slot_wake(&j->waker);
    }
}

/* The executor's reference goes when the task finishes. */
void pl__task_finish(pl_task *t, uint8_t state)
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

void pl__task_cancel(pl_task *t)
{
    pl__task_drop_future(t, true);
    pl__task_finish(t, TASK_CANCELLED);
}

void pl_task_cancel(pl_task *t)
{
    if (t->state >= TASK_DONE) {
        return;
    }
    if (t->state == TASK_RUNNING) {
        t->flags |= TASK_ABORT_IN_POLL;
        return;
    }
    pl__task_cancel(t);
}

/* ---- Forgetting (a simulated process kill) ------------------------------ */

void pl__executor_forget_task(pl_executor *ex, pl_task *t)
{
    PL_ASSERT(t->ex == ex && ex->running != t);
    if (t->state >= TASK_DONE) {
        pl__timers_disarm_task(ex, t); /* armed in memory the caller is about to free */
        return;
    }
    /* Never polled or dropped again (and no orphan report for the clones
     * the disarms drop); the extra reference keeps its bytes (which wakers
     * elsewhere and wait lists may name) until pl_executor_destroy, so a
     * stale wake finds a finished task. */
    t->flags |= TASK_ABANDONED;
    t->refs++;
    pl__timers_disarm_task(ex, t);
    pl__task_finish(t, TASK_CANCELLED);
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
    snprintf(why, why_len, "'%s' (#%u) %s", pl_task_name(j->task), j->task->id,
             j->task->state == TASK_DONE ? "completed" : "was cancelled");
    return true;
}

static pl_poll_result join_poll(pl_future *f, pl_context *cx)
{
    pl_join *j = (pl_join *)f;
    pl_task *t = j->task;
    if (t->state >= TASK_DONE) {
        j->result = t->state == TASK_DONE ? 0 : PL_ECANCELED;
        if (joiner_of(t) == j) {
            joiner_clear(t);
        }
        pl_waker_slot_clear(&j->waker);
        j->base.resume = 0;
        return PL_READY;
    }
    PL_ASSERT(joiner_of(t) == NULL || joiner_of(t) == j);
    if (joiner_of(t) == NULL) {
        joiner_set(t, j);
    }
    pl_waker_slot_set(&j->waker, &cx->waker);
    j->base.resume = 1;
    PL_WAIT_DECLARE(cx, "join", "the task finished", j, join_holds);
    return PL_PENDING;
}

static void join_drop(pl_future *f)
{
    pl_join *j = (pl_join *)f;
    /* A completed join has let go of the task, whose handle may be gone:
     * only a pending one is still linked to it. */
    if (!pl_future_is_done(f) && joiner_of(j->task) == j) {
        joiner_clear(j->task);
    }
    pl_waker_slot_clear(&j->waker);
}

const pl_future_vtable pl__join_vtable = {"join", join_poll, join_drop};
