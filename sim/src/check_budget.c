/* sim/src/check_budget.c: the checker for what happens inside one poll.
 *
 * A poll that spins (calls pl_poll on a child that stays PENDING, or
 * wakes itself, over and over) never returns, so no oracle that waits
 * for the poll's end can see it. The watch hooks count both inside the
 * poll; past a bound this file records a livelock finding and leaves the
 * poll with a longjmp to pl_sim_run, which abandons the task. Both
 * bounds count events, never time, so the finding is as deterministic as
 * the rest of the run. Init reads the bounds; the event hooks are the
 * two raisers below (oracle.c counts, and calls them past a bound); no
 * verdict at the end.
 */
#include <stdio.h>

#include "check_budget.h"
#include "sim_internal.h"

void pl__budget_init(pl__bounds *b, const pl_sim_options *o)
{
    b->sub_polls_max = o->sub_polls_max ? o->sub_polls_max : 1000000;
    b->wakes_in_poll_max = o->wakes_in_poll_max ? o->wakes_in_poll_max : 1000000;
}

/* Records the finding, then leaves the poll when pl_sim_run armed the
 * escape. Unarmed (a probe at quiescence), the poll goes on: the finding
 * is kept, and the run stops once the poll returns. */
static void spin_found(pl__sim *s, const char *what, uint64_t count)
{
    PL__SIM_ASSERT(s->polling != 0); /* the watch counts inside task polls only */
    pl_task *t = pl__sim_polled(s);
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

void pl__budget_sub_polls(pl__sim *s) { spin_found(s, "called pl_poll", s->bounds.sub_polls_max); }

void pl__budget_wakes_in_poll(pl__sim *s)
{
    spin_found(s, "woke itself", s->bounds.wakes_in_poll_max);
}
