/* sim/src/tasks.h: the task table, what the observer (oracle.c) keeps of
 * every task of a run, indexed by task id; tasks.c grows it, interns the
 * run's spawn kinds and reads it for the checkers, the strategies and
 * the run. The world embeds one pl__task_table (pl__sim.tasks).
 */
#ifndef POLLEN_SIM_TASKS_H
#define POLLEN_SIM_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashset.h"
#include "pollen/observer.h"

typedef struct pl__sim pl__sim;

/* What a task's spawn said of it, interned for the run: the tasks of
 * one pl_spawn site share one, so a task's record holds a pointer where
 * it held these four. Never moves once made; freed with the run. */
typedef struct pl__spawn_kind {
    const char *name;  /* static storage, as pl_task_name returned it (a node's
                          "node/task" is interned by node.c) */
    const char *root;  /* its future's vtable name (the chain's first frame) */
    const char *where; /* "file:line" of its pl_spawn (static); NULL: unknown */
    const char *func;
} pl__spawn_kind;

/* The kind of a record without a spawn (entry 0, a task whose record
 * could not be allocated): every field NULL. */
extern const pl__spawn_kind pl__tasks_kind_none;

/* What the oracles know of one task, indexed by task id. */
typedef struct pl__task_info {
    /* Pointers, then 8-byte counts, then 4-byte ones, then bytes: no
     * padding (96 bytes; one per task the run ever spawned). */
    pl_task *task;              /* NULL once freed; never hashed */
    const pl__spawn_kind *kind; /* name, root and spawn site; never NULL */
    uint64_t parked_step;       /* step of its latest PENDING */
    pl_time parked_ns;
    uint64_t probed_step;  /* s->step after its latest probe: nothing changed since */
    pl_time stale_ns;      /* its latest wake through a superseded waker */
    uint32_t clone_holder; /* task polling when the latest clone was made outside
                              the task's own poll; 0: none (see clone_holder()) */
    uint32_t self_wakes;   /* consecutive polls that woke only themselves */
    uint32_t busy_wakes;   /* of those, the polls production's FIFO order made too:
                              what the busy-loop oracle counts */
    uint32_t stale_wakes;  /* wakes through superseded wakers since the last poll */
    uint32_t last_stale_gen;
    uint32_t waits_len;    /* declared in the latest poll (in s->probe.waits[id]); more
                              than PL__WAITS_MAX keeps the first ones */
    uint32_t stale_by;     /* task polling then (0: outside polls) */
    uint32_t late_head;    /* its late timers (s->probe.late), index + 1; 0: none */
    uint32_t quiet_rounds; /* background: points since only background work was left
                              before which it was polled */
    uint32_t chain;        /* the chain of its latest PENDING poll: index + 1 in
                              s->bt.chains; 0: none yet */
    uint32_t chain_prev;   /* the one before it (a loop parks at two awaits in turn) */
    bool on_purpose;       /* its latest poll said it polls on purpose (a poll interval) */
    bool forgotten;        /* its node crashed: never dropped, not a leak */
    bool keep_parked;      /* parked with no timer of its own while timers kept the
                              run alive (check_probe.c, keepers_only) */
    uint8_t node;          /* its node (index in s->nodes.list); 0: the scenario's own */
} pl__task_info;
_Static_assert(sizeof(pl__task_info) <= 96, "pl__task_info: no padding between its fields");

/* The table and the run's spawn kinds (pl__sim.tasks). */
typedef struct pl__task_table {
    pl__task_info *info; /* index = task id; written up to spawned */
    size_t cap;
    uint32_t spawned;
    uint32_t stale;         /* tasks whose stale_wakes is not 0 */
    pl__spawn_kind **kinds; /* the run's spawn kinds, in the order met */
    size_t kinds_len;
    size_t kinds_cap;
    pl__hashmap kind_index;          /* content hash -> index in kinds, past a few kinds */
    const pl__spawn_kind *kind_last; /* the latest spawn's: a loop of spawns hits it */
} pl__task_table;

/* Makes the table hold ids up to `id`: the records past the latest
 * spawned id stay unwritten (on_spawn writes an id's whole record before
 * counting it). 0, PL_EMSGSIZE or PL_ENOMEM (the table is then
 * unchanged). */
int pl__tasks_reserve(pl__sim *s, uint32_t id);
/* The interned kind equal to *key, made on first use; NULL when out of
 * memory. Valid until pl__tasks_free. pl__tasks_kind_fast is the same,
 * the latest spawn's kind tested inline (on_spawn's loop of spawns). */
const pl__spawn_kind *pl__tasks_kind_of(pl__task_table *t, const pl__spawn_kind *key);
/* Frees the table and the kinds (pl__sim_finish). */
void pl__tasks_free(pl__sim *s);

/* Reading the table, for the checkers and strategies. */
uint32_t pl__tasks_live_clones(const pl__task_info *ti);
uint32_t pl__tasks_clone_holder(const pl__task_info *ti, uint32_t id);
const char *pl__tasks_holder_name(pl__sim *s, uint32_t id);
bool pl__tasks_is_parked(const pl__task_info *ti);
/* Consecutive polls of task `id` that woke only itself (0: unknown id). */
uint32_t pl__tasks_self_wakes(const pl__sim *s, uint32_t id);
/* The name of task `id` of this run, even once it was freed. */
const char *pl__tasks_name_of(const pl__sim *s, uint32_t id);
/* Asserts the table's invariants (PL__SIM_ASSERT, every build): it
 * covers every spawned id, no poll is in progress, every entry has a
 * kind, a live entry is the task of its id, a task's busy-loop count is
 * within its self-wakes, and `stale` counts the entries with stale
 * wakes. O(tasks): once per run, at its end. */
void pl__tasks_check(const pl__sim *s);

/* By pointer: one pl_spawn site passes the same literals every time, and
 * equal text at two addresses only makes two kinds that say the same. */
static inline bool pl__tasks_kind_is(const pl__spawn_kind *k, const pl__spawn_kind *key)
{
    return k->name == key->name && k->root == key->root && k->where == key->where &&
           k->func == key->func;
}

static inline const pl__spawn_kind *pl__tasks_kind_fast(pl__task_table *t,
                                                        const pl__spawn_kind *key)
{
    if (t->kind_last != NULL && pl__tasks_kind_is(t->kind_last, key)) {
        return t->kind_last;
    }
    return pl__tasks_kind_of(t, key);
}

#endif
