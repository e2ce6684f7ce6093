/* sim/src/check_budget.c: oracles for what happens inside one poll, and
 * for orphans at the drop that makes them.
 *
 * A poll that spins (calls pl_poll on a child that stays PENDING, or
 * wakes itself, over and over) never returns, so no oracle that waits
 * for the poll's end can see it. The watch hooks count both inside the
 * poll; past a bound this file records a livelock finding and leaves the
 * poll with a longjmp to pl_sim_run, which abandons the task. Both
 * bounds count events, never time, so the finding is as deterministic as
 * the rest of the run.
 *
 * A parked task whose last waker clone is dropped by someone else (a
 * reaper, a cancelled branch, code outside any poll) is reported at that
 * drop, naming who dropped it, instead of surfacing much later as a lost
 * wakeup or a deadlock.
 */
#include <stdio.h>

#include "sim_internal.h"

pl__sim_progress pl__progress;

static pl_task *polled_task(const pl__sim *s)
{
    return s->polling != 0 ? s->tasks[s->polling].task : NULL;
}

/* Records the finding, then leaves the poll when pl_sim_run armed the
 * escape. Unarmed (a probe at quiescence), the poll goes on: the finding
 * is kept, and the run stops once the poll returns. */
static void spin_found(pl__sim *s, const char *what, uint64_t count)
{
    pl_task *t = polled_task(s);
    if (t == NULL) {
        return;
    }
    pl__sim_finding(s, PL_FINDING_LIVELOCK, t,
                    "'%s' (#%u) %s %llu times inside one poll (poll #%u, step %llu): it spins "
                    "instead of returning PENDING",
                    pl_task_name(t), pl_task_id(t), what, (unsigned long long)count,
                    pl_task_polls(t), (unsigned long long)s->step);
    if (s->escape != NULL) {
        longjmp(*s->escape, 1);
    }
}

void pl__budget_sub_polls(pl__sim *s) { spin_found(s, "called pl_poll", s->sub_polls_max); }

void pl__budget_wakes_in_poll(pl__sim *s) { spin_found(s, "woke itself", s->wakes_in_poll_max); }

/* Once pl_run has returned, drops are the runner's teardown (and the
 * probes of quiescence, which report what they find themselves). A task
 * woken only through superseded wakers since its poll was woken, just
 * not delivered: the stale_waker oracle says why at quiescence. */
void pl__oracle_orphaned(void *ud, pl_task *t, pl_task *dropper)
{
    pl__sim *s = ud;
    const pl__task_info *ti = &s->tasks[pl_task_id(t)];
    if (s->run_over || ti->stale_wakes > 0) {
        return;
    }
    char by[128];
    if (dropper != NULL) {
        snprintf(by, sizeof by, "by '%s' (#%u) while polling", pl_task_name(dropper),
                 pl_task_id(dropper));
    } else {
        snprintf(by, sizeof by, "outside any poll");
    }
    pl__sim_finding(s, PL_FINDING_ORPHAN, t,
                    "'%s' (#%u) parked at step %llu after poll #%u; the last clone of its "
                    "waker was dropped %s, without a wake: nothing can ever wake it",
                    pl_task_name(t), pl_task_id(t), (unsigned long long)ti->parked_step,
                    pl_task_polls(t), by);
}
