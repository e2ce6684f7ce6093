/* sim/src/check_contract.h: the waker-contract checker's event hooks.
 *
 * oracle.c (the observer) calls them from the executor's hooks. The
 * checks on every poll are inline, since they run once per poll; what
 * they raise is out of line in check_contract.c. No verdict at the end:
 * each breach is raised at the moment it happens.
 */
#ifndef POLLEN_SIM_CHECK_CONTRACT_H
#define POLLEN_SIM_CHECK_CONTRACT_H

#include "sim_internal.h"

/* Reads the bounds of pl_sim_options (0: the defaults). */
void pl__contract_init(pl__sim *s, const pl_sim_options *o);

/* Raisers behind the inline hooks. */
void pl__contract_no_progress(pl__sim *s, pl_task *t);
void pl__contract_orphan(pl__sim *s, pl_task *t);
void pl__contract_busy_loop(pl__sim *s, pl_task *t, const pl__task_info *ti);

/* A poll of `t` begins (not a probe). Polls the schedule chose over
 * production's order do not count: a strategy starving the task that
 * would make progress is no livelock of the program (the strategies
 * bound that starvation). */
static inline void pl__contract_on_poll(pl__sim *s, pl_task *t)
{
    if (!s->poll_deviated && ++s->steps_since_progress > s->steps_max) {
        pl__contract_no_progress(s, t);
    }
}

/* PENDING is a promise that someone will wake the task: either it was
 * woken during this very poll, or a clone of its waker is alive. */
static inline void pl__contract_check_orphan(pl__sim *s, pl_task *t)
{
    if (!s->woken_in_poll && pl_task_head_of(t)->waker_clones == 0) {
        pl__contract_orphan(s, t);
    }
}

/* A PENDING that was no self-wake ends the task's streak of them. */
static inline void pl__contract_end_streak(pl__task_info *ti)
{
    ti->self_wakes = 0;
    ti->busy_wakes = 0;
}

/* A busy loop is the program's only if production would spin too: a
 * self-woken poll counts toward the limit when FIFO order would have
 * polled this task as well (it was the head, or alone). A task the
 * schedule keeps picking right after it yields, over the task it waits
 * for, is starved by the strategy, not spinning; its deviated polls
 * neither count nor break the streak. self_wakes counts them all, for
 * PCT's spinner rule. */
static inline void pl__contract_check_busy_loop(pl__sim *s, pl_task *t, pl__task_info *ti)
{
    if (s->woken_in_poll && !s->woke_other) {
        ti->self_wakes++;
        if (!s->poll_deviated && ++ti->busy_wakes > s->self_wakes_max) {
            pl__contract_busy_loop(s, t, ti);
        }
    } else {
        pl__contract_end_streak(ti);
    }
}

/* A real poll of `t` returned PENDING. */
static inline void pl__contract_on_pending(pl__sim *s, pl_task *t, pl__task_info *ti)
{
    pl__contract_check_orphan(s, t);
    pl__contract_check_busy_loop(s, t, ti);
}

/* The common PENDING: not woken during its poll, a clone of its waker
 * alive. pl__contract_on_pending then raises nothing and only ends the
 * task's streak of self-wakes (pl__contract_end_streak). */
static inline bool pl__contract_pending_plain(const pl__sim *s, const pl_task *t)
{
    return !s->woken_in_poll && pl_task_head_of(t)->waker_clones != 0;
}

/* The executor found no clone for a waker drop of `t`. */
void pl__contract_on_waker_drop(pl__sim *s, pl_task *t);
/* A future was dropped twice or polled after READY (or after its drop). */
void pl__contract_on_misuse(pl__sim *s, pl_task *running, const char *name, pl_misuse what);
/* The last waker clone of parked `t` was dropped without a wake, by
 * `dropper` (NULL: outside polls). */
void pl__contract_on_orphaned(pl__sim *s, pl_task *t, pl_task *dropper);

#endif
