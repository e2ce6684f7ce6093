/* sim/src/tasks.c: reading the task table (pl__task_info, kept by the
 * observer in oracle.c) for the checkers, the strategies and the run:
 * clones, holders, parked tasks, names, and the table's invariants.
 * Calls nothing of the simulator.
 */
#include "sim_internal.h"

/* The executor counts waker clones in the task; a freed task has none. */
uint32_t pl__oracle_live_clones(const pl__task_info *ti)
{
    return ti->task != NULL ? pl_task_head_of(ti->task)->waker_clones : 0;
}

/* The task polling when the latest clone was made (0: outside polls). */
uint32_t pl__oracle_clone_holder(const pl__task_info *ti, uint32_t id)
{
    if (ti->task != NULL && !pl_task_cloned_elsewhere(ti->task)) {
        return id;
    }
    return ti->clone_holder;
}

bool pl__oracle_is_parked(const pl__task_info *ti)
{
    return ti->task != NULL && !pl_task_is_finished(ti->task) &&
           !pl_task_is_scheduled(ti->task);
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
        PL__SIM_ASSERT(ti->task == NULL || pl_task_head_of(ti->task)->id == id);
        PL__SIM_ASSERT(ti->busy_wakes <= ti->self_wakes);
    }
    PL__SIM_ASSERT(stale == s->stale_tasks);
}

const char *pl__run_name_of(const pl__sim *s, uint32_t id)
{
    if (id == 0 || id > s->tasks_spawned || s->tasks[id].name == NULL) {
        return "?";
    }
    return s->tasks[id].name;
}
