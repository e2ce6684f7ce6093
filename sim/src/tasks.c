/* sim/src/tasks.c: the task table (pl__task_info, kept by the observer
 * in oracle.c): its growth and the run's spawn kinds, and reading it for
 * the checkers, the strategies and the run: clones, holders, parked
 * tasks, names, and the table's invariants. Calls nothing of the
 * simulator.
 */
#include <stdlib.h>

#include <xxhash.h>

#include "sim_internal.h"

/* ---- The table ---------------------------------------------------------- */

/* The table grows without zeroing: on_spawn writes an id's whole record,
 * so no byte is written twice and the capacity past the latest id is
 * never touched (a million-task run zeroed 128 MB it then overwrote;
 * realloc's large blocks grow by mremap, whose fresh pages then stay
 * unmapped until a spawn writes them). */
int pl__tasks_reserve(pl__sim *s, uint32_t id)
{
    return pl__grow_append((void **)&s->tasks, &s->tasks_cap, (size_t)id + 1, sizeof *s->tasks,
                           64, 0);
}

/* ---- Spawn kinds -------------------------------------------------------- */

const pl__spawn_kind pl__spawn_kind_none = {NULL, NULL, NULL, NULL};

/* Kinds a run finds by a scan, before it indexes them by hash. */
#define KINDS_SCANNED 16

/* The addresses locate a kind in the index only; the kinds' order is
 * the order the run met them, so nothing a run does depends on them. */
static uint64_t kind_hash(const pl__spawn_kind *k) { return XXH3_64bits(k, sizeof *k); }

/* A hash another kind holds leaves the newer one unindexed: it is made
 * again when met again, which costs memory, not truth. So does a full
 * index (out of memory). */
static void kind_index(pl__sim *s, size_t at)
{
    uint32_t other;
    uint64_t h = kind_hash(s->kinds[at]);
    if (!pl__hashmap_get(&s->kind_index, h, &other)) {
        (void)pl__hashmap_put(&s->kind_index, h, (uint32_t)at);
    }
}

static const pl__spawn_kind *kind_find(const pl__sim *s, const pl__spawn_kind *key)
{
    if (s->kinds_len <= KINDS_SCANNED) {
        for (size_t i = 0; i < s->kinds_len; i++) {
            if (pl__spawn_kind_is(s->kinds[i], key)) {
                return s->kinds[i];
            }
        }
        return NULL;
    }
    uint32_t at;
    if (pl__hashmap_get(&s->kind_index, kind_hash(key), &at) &&
        pl__spawn_kind_is(s->kinds[at], key)) {
        return s->kinds[at];
    }
    return NULL;
}

static const pl__spawn_kind *kind_add(pl__sim *s, const pl__spawn_kind *key)
{
    if (s->kinds_len >= UINT32_MAX ||
        pl__grow_append((void **)&s->kinds, &s->kinds_cap, s->kinds_len + 1, sizeof *s->kinds,
                        16, 0) != 0) {
        return NULL;
    }
    pl__spawn_kind *k = malloc(sizeof *k);
    if (k == NULL) {
        return NULL;
    }
    *k = *key;
    s->kinds[s->kinds_len++] = k;
    if (s->kinds_len == KINDS_SCANNED + 1) {
        for (size_t i = 0; i < s->kinds_len; i++) {
            kind_index(s, i); /* from here on, kinds are looked up by hash */
        }
    } else if (s->kinds_len > KINDS_SCANNED) {
        kind_index(s, s->kinds_len - 1);
    }
    return k;
}

const pl__spawn_kind *pl__spawn_kind_of(pl__sim *s, const pl__spawn_kind *key)
{
    const pl__spawn_kind *k = kind_find(s, key);
    if (k == NULL) {
        k = kind_add(s, key);
    }
    if (k != NULL) {
        s->kind_last = k;
    }
    return k;
}

void pl__tasks_free(pl__sim *s)
{
    free(s->tasks);
    s->tasks = NULL;
    s->tasks_cap = 0;
    for (size_t i = 0; i < s->kinds_len; i++) {
        free(s->kinds[i]);
    }
    free(s->kinds);
    s->kinds = NULL;
    s->kinds_len = 0;
    s->kinds_cap = 0;
    s->kind_last = NULL;
    pl__hashmap_free(&s->kind_index);
}

/* ---- Reading it --------------------------------------------------------- */

/* The executor counts waker clones in the task; a freed task has none. */
uint32_t pl__oracle_live_clones(const pl__task_info *ti)
{
    return ti->task != NULL ? pl_task_head_of(ti->task)->waker_clones : 0;
}

/* The task polling when the latest clone was made (0: outside polls). */
uint32_t pl__oracle_clone_holder(const pl__task_info *ti, uint32_t id)
{
    if (ti->task != NULL && !pl__task_cloned_elsewhere(ti->task)) {
        return id;
    }
    return ti->clone_holder;
}

bool pl__oracle_is_parked(const pl__task_info *ti)
{
    return ti->task != NULL && !pl_task_is_finished(ti->task) &&
           !pl__task_is_scheduled(ti->task);
}

const char *pl__oracle_holder_name(pl__sim *s, uint32_t id)
{
    if (id == 0) {
        return "outside any poll";
    }
    pl_task *h = s->tasks[id].task;
    return h != NULL ? pl_task_name(h) : "a finished task";
}

uint32_t pl__oracle_self_wakes(const pl__sim *s, uint32_t id)
{
    return id <= s->tasks_spawned ? s->tasks[id].self_wakes : 0;
}

void pl__oracle_check(const pl__sim *s)
{
    PL__SIM_ASSERT(s->tasks_spawned == 0 || s->tasks_spawned < s->tasks_cap);
    PL__SIM_ASSERT(s->late_len <= s->late_cap);
    PL__SIM_ASSERT(s->polling == 0); /* every poll left (or escaped) */
    uint32_t stale = 0;
    for (uint32_t id = 1; id <= s->tasks_spawned; id++) {
        const pl__task_info *ti = &s->tasks[id];
        stale += ti->stale_wakes > 0;
        PL__SIM_ASSERT(ti->kind != NULL);
        PL__SIM_ASSERT(ti->task == NULL || pl_task_head_of(ti->task)->id == id);
        PL__SIM_ASSERT(ti->busy_wakes <= ti->self_wakes);
    }
    PL__SIM_ASSERT(stale == s->stale_tasks);
}

const char *pl__run_name_of(const pl__sim *s, uint32_t id)
{
    if (id == 0 || id > s->tasks_spawned || s->tasks[id].kind->name == NULL) {
        return "?";
    }
    return s->tasks[id].kind->name;
}
