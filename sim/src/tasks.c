/* sim/src/tasks.c: the task table (pl__task_info, kept by the observer
 * in oracle.c): its growth and the run's spawn kinds, and reading it for
 * the checkers, the strategies and the run: clones, holders, parked
 * tasks, names, and the table's invariants. Calls nothing of the
 * simulator.
 */
#include <stdlib.h>

#include <xxhash.h>

#include "grow.h"
#include "sim_internal.h"

/* ---- The table ---------------------------------------------------------- */

/* The table grows without zeroing: on_spawn writes an id's whole record,
 * so no byte is written twice and the capacity past the latest id is
 * never touched (a million-task run zeroed 128 MB it then overwrote;
 * realloc's large blocks grow by mremap, whose fresh pages then stay
 * unmapped until a spawn writes them). */
int pl__tasks_reserve(pl__sim *s, uint32_t id)
{
    return pl__grow_append((void **)&s->tasks.info, &s->tasks.cap, (size_t)id + 1,
                           sizeof *s->tasks.info, 64, 0);
}

/* ---- Spawn kinds -------------------------------------------------------- */

const pl__spawn_kind pl__tasks_kind_none = {NULL, NULL, NULL, NULL};

/* Kinds a run finds by a scan, before it indexes them by hash. */
#define KINDS_SCANNED 16

/* The addresses locate a kind in the index only; the kinds' order is
 * the order the run met them, so nothing a run does depends on them. */
static uint64_t kind_hash(const pl__spawn_kind *k) { return XXH3_64bits(k, sizeof *k); }

/* A hash another kind holds leaves the newer one unindexed: it is made
 * again when met again, which costs memory, not truth. So does a full
 * index (out of memory). */
static void kind_index(pl__task_table *t, size_t at)
{
    uint32_t other;
    uint64_t h = kind_hash(t->kinds[at]);
    if (!pl__hashmap_get(&t->kind_index, h, &other)) {
        (void)pl__hashmap_put(&t->kind_index, h, (uint32_t)at);
    }
}

static const pl__spawn_kind *kind_find(const pl__task_table *t, const pl__spawn_kind *key)
{
    if (t->kinds_len <= KINDS_SCANNED) {
        for (size_t i = 0; i < t->kinds_len; i++) {
            if (pl__tasks_kind_is(t->kinds[i], key)) {
                return t->kinds[i];
            }
        }
        return NULL;
    }
    uint32_t at;
    if (pl__hashmap_get(&t->kind_index, kind_hash(key), &at) &&
        pl__tasks_kind_is(t->kinds[at], key)) {
        return t->kinds[at];
    }
    return NULL;
}

static const pl__spawn_kind *kind_add(pl__task_table *t, const pl__spawn_kind *key)
{
    if (t->kinds_len >= UINT32_MAX ||
        pl__grow_append((void **)&t->kinds, &t->kinds_cap, t->kinds_len + 1, sizeof *t->kinds, 16,
                        0) != 0) {
        return NULL;
    }
    pl__spawn_kind *k = malloc(sizeof *k);
    if (k == NULL) {
        return NULL;
    }
    *k = *key;
    t->kinds[t->kinds_len++] = k;
    if (t->kinds_len == KINDS_SCANNED + 1) {
        for (size_t i = 0; i < t->kinds_len; i++) {
            kind_index(t, i); /* from here on, kinds are looked up by hash */
        }
    } else if (t->kinds_len > KINDS_SCANNED) {
        kind_index(t, t->kinds_len - 1);
    }
    return k;
}

const pl__spawn_kind *pl__tasks_kind_of(pl__task_table *t, const pl__spawn_kind *key)
{
    const pl__spawn_kind *k = kind_find(t, key);
    if (k == NULL) {
        k = kind_add(t, key);
    }
    if (k != NULL) {
        t->kind_last = k;
    }
    return k;
}

void pl__tasks_free(pl__sim *s)
{
    free(s->tasks.info);
    s->tasks.info = NULL;
    s->tasks.cap = 0;
    for (size_t i = 0; i < s->tasks.kinds_len; i++) {
        free(s->tasks.kinds[i]);
    }
    free(s->tasks.kinds);
    s->tasks.kinds = NULL;
    s->tasks.kinds_len = 0;
    s->tasks.kinds_cap = 0;
    s->tasks.kind_last = NULL;
    pl__hashmap_free(&s->tasks.kind_index);
}

/* ---- Reading it --------------------------------------------------------- */

/* The executor counts waker clones in the task; a freed task has none. */
uint32_t pl__tasks_live_clones(const pl__task_info *ti)
{
    return ti->task != NULL ? pl_task_head_of(ti->task)->waker_clones : 0;
}

/* The task polling when the latest clone was made (0: outside polls). */
uint32_t pl__tasks_clone_holder(const pl__task_info *ti, uint32_t id)
{
    if (ti->task != NULL && !pl__task_cloned_elsewhere(ti->task)) {
        return id;
    }
    return ti->clone_holder;
}

bool pl__tasks_is_parked(const pl__task_info *ti)
{
    return ti->task != NULL && !pl_task_is_finished(ti->task) &&
           !pl__task_is_scheduled(ti->task);
}

const char *pl__tasks_holder_name(pl__sim *s, uint32_t id)
{
    if (id == 0) {
        return "outside any poll";
    }
    pl_task *h = s->tasks.info[id].task;
    return h != NULL ? pl_task_name(h) : "a finished task";
}

uint32_t pl__tasks_self_wakes(const pl__sim *s, uint32_t id)
{
    return id <= s->tasks.spawned ? s->tasks.info[id].self_wakes : 0;
}

void pl__tasks_check(const pl__sim *s)
{
    PL__SIM_ASSERT(s->tasks.spawned == 0 || s->tasks.spawned < s->tasks.cap);
    PL__SIM_ASSERT(s->probe.late_len <= s->probe.late_cap);
    PL__SIM_ASSERT(s->polling == 0); /* every poll left (or escaped) */
    uint32_t stale = 0;
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        const pl__task_info *ti = &s->tasks.info[id];
        stale += ti->stale_wakes > 0;
        PL__SIM_ASSERT(ti->kind != NULL);
        PL__SIM_ASSERT(ti->task == NULL || pl_task_head_of(ti->task)->id == id);
        PL__SIM_ASSERT(ti->busy_wakes <= ti->self_wakes);
    }
    PL__SIM_ASSERT(stale == s->tasks.stale);
}

const char *pl__tasks_name_of(const pl__sim *s, uint32_t id)
{
    if (id == 0 || id > s->tasks.spawned || s->tasks.info[id].kind->name == NULL) {
        return "?";
    }
    return s->tasks.info[id].kind->name;
}
