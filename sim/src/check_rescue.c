/* sim/src/check_rescue.c: deadlocks a timer hides (check_rescue.h).
 *
 * The question is counterfactual: had the timer not fired, would the task
 * ever have run? In general that takes a second run with the timer
 * deferred. Where the timer is the last thing that can happen (a
 * timer-quiescent point with one timer armed, no thread or node event
 * pending), the second run is known without running it: nothing at all
 * would run again. So the oracle judges there, in the run itself, and
 * pays nothing elsewhere; with other timers armed it says nothing.
 *
 * A timer that is a task's normal path must not count: an idle loop that
 * times out, a shutdown that never comes, a ticker's next round. So a
 * rescue is reported only with evidence that a wake was lost: a
 * pl_notify_waiters broadcast on the notify the task waits on, made
 * while it was not waiting there (a broadcast keeps nothing for it), and
 * no broadcast since that released it. A task that declared a poll
 * interval, or that missed a broadcast of the very task the timer wakes
 * (a ticker's earlier round: its next one is what the task waits for),
 * is not reported.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_rescue.h"
#include "grow.h"
#include "sim_internal.h"

static double ms(pl_time ns) { return (double)ns / 1e6; }

static uint64_t key_of(const void *primitive) { return (uint64_t)(uintptr_t)primitive; }

/* The task's record, made on demand; NULL when out of memory (the oracle
 * then misses this task, it never guesses). */
static pl__rescue_task *task_of(pl__sim *s, uint32_t id)
{
    pl__rescue *r = &s->rescue;
    if (id >= r->tasks_cap && pl__grow((void **)&r->tasks, &r->tasks_cap, (size_t)id + 1,
                                       sizeof *r->tasks, 8, 0) != 0) {
        return NULL;
    }
    return &r->tasks[id];
}

static const pl__rescue_bcast *latest_bcast(const pl__rescue *r, uint64_t key)
{
    uint32_t i;
    return pl__hashmap_get(&r->bcast_index, key, &i) ? &r->bcasts[i] : NULL;
}

/* A waiter of task `id` parks on `key` (0: still linked where it was). */
static void on_park(pl__sim *s, uint64_t key, pl_task *t)
{
    uint32_t id = pl_task_id(t);
    pl__rescue_task *rt = task_of(s, id);
    if (rt == NULL) {
        return;
    }
    rt->park_polls = pl_task_head_of(t)->polls;
    if (key == 0) {
        return;
    }
    /* A broadcast it missed counts only if it came after the task's
     * previous park: since then it has not been parked, so it links
     * without having waited for anything else (a task that parked in
     * between, to handle what it found, had its chance to look; one that
     * never parked before never waited for anything). What it missed on
     * another notify is not what it waits for now. */
    uint64_t since = s->tasks.info[id].parked_step;
    if (rt->key != key || rt->missed_step <= since) {
        rt->missed_step = 0;
    }
    if (rt->key != key) {
        rt->released = 0;
    }
    rt->key = key;
    rt->linked = true;
    rt->link_step = s->step;
    if (s->rescue.bcast_num == 0) {
        return; /* no broadcast yet (a program of pl_notify_one): nothing missed */
    }
    /* The latest broadcast on this notify, if it did not release the task,
     * is one it missed. */
    const pl__rescue_bcast *b = latest_bcast(&s->rescue, key);
    if (rt->missed_step == 0 && b != NULL && b->num != rt->released && since != 0 &&
        b->step > since && rt->woken_ev > b->ev && /* parked then, not already woken */
        id <= b->spawned && b->by != id) {
        rt->missed_step = b->step;
        rt->missed_ns = b->ns;
        rt->missed_by = b->by;
    }
}

/* The broadcast on `key` ends: every task that links on it, was not
 * released and was parked (a runnable task looks at the state in its next
 * poll) missed it. Broadcasts are rare; the scan is of the tasks that
 * ever linked a waiter. */
static void on_bcast_end(pl__sim *s, uint64_t key)
{
    pl__rescue *r = &s->rescue;
    for (size_t id = 1; id < r->tasks_cap && id <= s->tasks.spawned; id++) {
        pl__rescue_task *rt = &r->tasks[id];
        if (rt->key == key && rt->released != r->bcast_num && rt->missed_step == 0 &&
            s->tasks.info[id].task != NULL && id != s->polling &&
            !pl__task_is_scheduled(s->tasks.info[id].task)) {
            rt->missed_step = s->step;
            rt->missed_ns = s->now;
            rt->missed_by = s->polling;
        }
    }
    uint32_t i;
    if (!pl__hashmap_get(&r->bcast_index, key, &i)) {
        if (pl__grow_append((void **)&r->bcasts, &r->bcasts_cap, r->bcasts_len + 1,
                            sizeof *r->bcasts, 8, UINT32_MAX) != 0 ||
            pl__hashmap_put(&r->bcast_index, key, (uint32_t)r->bcasts_len) != 0) {
            return; /* out of memory: a later link does not see this one */
        }
        i = (uint32_t)r->bcasts_len++;
    }
    r->bcasts[i] = (pl__rescue_bcast){r->bcast_num, r->bcast_ev, s->step,
                                      s->now,       s->polling,  s->tasks.spawned};
}

void pl__rescue_signal(void *ud, const void *primitive, pl_signal_event ev, pl_task *t)
{
    pl__sim *s = ud;
    pl__rescue *r = &s->rescue;
    if (s->probe.follow.active) {
        return;
    }
    switch (ev) {
    case PL_SIGNAL_WAITER:
        PL__SIM_ASSERT(t != NULL);
        on_park(s, key_of(primitive), t);
        break;
    case PL_SIGNAL_UNWAIT:
        /* It gave up waiting (a select's other branch, a timeout): it
         * goes on without the broadcast, by its own look at the state. */
        if (t != NULL && pl_task_id(t) < r->tasks_cap) {
            r->tasks[pl_task_id(t)].linked = false;
            r->tasks[pl_task_id(t)].missed_step = 0;
        }
        break;
    case PL_SIGNAL_BROADCAST:
        if (r->tasks == NULL) {
            (void)task_of(s, s->tasks.spawned); /* from now on, wakes are noted */
        }
        if (r->bcast_depth++ == 0) {
            r->bcast_num++;
            r->in_bcast = key_of(primitive);
            r->bcast_ev = ++r->events;
        }
        break;
    case PL_SIGNAL_BROADCAST_END:
        PL__SIM_ASSERT(r->bcast_depth > 0);
        if (--r->bcast_depth == 0) {
            on_bcast_end(s, r->in_bcast);
            r->in_bcast = 0;
        }
        break;
    }
}

void pl__rescue_point(pl__sim *s)
{
    pl__rescue *r = &s->rescue;
    r->doom_seq = 0;
    r->doom_woke = 0;
    if (r->bcast_num == 0 || s->probe.follow.active || s->finding.kind != PL_FINDING_NONE ||
        pl__executor_timer_count(s->ex) != 1 || pl__threads_active(&s->threads)) {
        return;
    }
    uint64_t seq = 0;
    (void)pl__executor_next_timer_task(s->ex, &seq);
    r->doom_seq = seq;
    r->doom_deadline_ns = pl__executor_next_timer(s->ex);
}

/* Task `id` waits on the notify it missed a broadcast of, and nothing
 * since told it. */
static bool lost_wake(const pl__sim *s, uint32_t id, uint32_t rescuer)
{
    const pl__rescue *r = &s->rescue;
    if (id >= r->tasks_cap || id > s->tasks.spawned) {
        return false;
    }
    const pl__rescue_task *rt = &r->tasks[id];
    const pl__task_info *ti = &s->tasks.info[id];
    return rt->linked && rt->missed_step != 0 && rt->link_step >= rt->missed_step &&
           rt->missed_by != id && rt->missed_by != rescuer && ti->task != NULL &&
           !ti->on_purpose && rt->park_polls == pl_task_head_of(ti->task)->polls;
}

/* The timer's task `by` wakes task `id` as a sweeper does: a background
 * task (a ticker, a repair loop) broadcasting on the notify `id` waits
 * on. A foreground task whose timer was its own work (a relay, a write)
 * and who then tells the others is the program's normal flow. */
static bool sweeps(const pl__sim *s, uint32_t id, uint32_t by)
{
    const pl__rescue *r = &s->rescue;
    return r->bcast_depth > 0 && id < r->tasks_cap && r->in_bcast == r->tasks[id].key &&
           pl_task_is_background(s->tasks.info[by].task);
}

static void report(pl__sim *s, uint32_t id, uint32_t via)
{
    const pl__rescue *r = &s->rescue;
    const pl__rescue_task *rt = &r->tasks[id];
    uint32_t armer = r->doom_seq < s->probe.armers_cap ? s->probe.armers[r->doom_seq] : 0;
    char by[112] = "outside any task";
    if (rt->missed_by != 0) {
        snprintf(by, sizeof by, "by '%s' (#%u)", pl__tasks_name_of(s, rt->missed_by),
                 rt->missed_by);
    }
    char armed[400] = "outside any poll";
    if (armer != 0) {
        char chain[300];
        pl__bt_chain_text(s, armer, chain, sizeof chain);
        snprintf(armed, sizeof armed, "by '%s' (#%u)%s%s", pl__tasks_name_of(s, armer), armer,
                 chain[0] != '\0' ? ", parked in: " : "", chain);
    }
    char through[112] = "";
    if (via != 0) {
        snprintf(through, sizeof through, ", through '%s' (#%u), which it woke",
                 pl__tasks_name_of(s, via), via);
    }
    bool fresh = s->finding.kind == PL_FINDING_NONE;
    pl__sim_finding(s, PL_FINDING_DEADLOCK, s->tasks.info[id].task,
                    "'%s' (#%u) is stuck for good but for a timer: it waits on a notify whose "
                    "pl_notify_waiters broadcast %s at %.3f ms found it not waiting (a "
                    "broadcast keeps nothing), and only timer #%" PRIu64 " (deadline %.3f ms, "
                    "armed %s) was left to run. It fired at %.3f ms and rescued it%s, %.3f ms "
                    "after the lost broadcast; without that timer nothing would ever run "
                    "again: a deadlock the timer hides",
                    pl__tasks_name_of(s, id), id, by, ms(rt->missed_ns), r->doom_seq,
                    ms(r->doom_deadline_ns), armed, ms(s->now), through,
                    ms(s->now - rt->missed_ns));
    pl__bt_describe(s, fresh, id);
}

void pl__rescue_wake(pl__sim *s, uint32_t id, uint32_t running, pl_wake_outcome outcome)
{
    pl__rescue *r = &s->rescue;
    /* Before the run's first broadcast nothing was missed and nothing is
     * released: a program that never broadcasts pays this test per wake. */
    if (r->bcast_num == 0 || s->probe.follow.active) {
        return;
    }
    /* The rescue first: a sweeper's broadcast that rescues the task also
     * releases it, below. */
    if (r->doom_seq != 0 && outcome == PL_WAKE_SCHEDULED && s->finding.kind == PL_FINDING_NONE) {
        uint32_t armer = r->doom_seq < s->probe.armers_cap ? s->probe.armers[r->doom_seq] : 0;
        if (s->firing_seq == r->doom_seq && running == 0) {
            if (lost_wake(s, id, armer)) {
                report(s, id, 0);
            } else if (r->doom_woke == 0) {
                r->doom_woke = id;
            }
        } else if (running != 0 && running == r->doom_woke && s->polling == running &&
                   !s->polling_probe && sweeps(s, id, running) && lost_wake(s, id, running)) {
            report(s, id, running);
        }
    }
    pl__rescue_task *rt = task_of(s, id);
    if (rt == NULL) {
        return;
    }
    if (outcome == PL_WAKE_SCHEDULED) {
        rt->woken_ev = ++r->events;
    }
    if (r->bcast_depth > 0) {
        rt->released = r->bcast_num; /* a waiter of it was released */
        rt->missed_step = 0;
        rt->linked = false;
    }
}

void pl__rescue_free(pl__sim *s)
{
    pl__rescue *r = &s->rescue;
    free(r->tasks);
    free(r->bcasts);
    pl__hashmap_free(&r->bcast_index);
    *r = (pl__rescue){0};
}
