/* sim/src/check_contract.c: the waker-contract checker.
 *
 * Every breach of the contract pollen's executor relies on is raised at
 * the moment it happens, from the hooks oracle.c forwards: a task that
 * returns PENDING with no live clone of its waker (orphan), a parked
 * task whose last clone is dropped by someone else without a wake (an
 * orphan at the drop, named with who dropped it, instead of surfacing
 * much later as a lost wakeup or a deadlock), a waker or a future
 * dropped twice, a future polled after READY, a task that only wakes
 * itself (busy loop) and polls without virtual time passing or a task
 * completing. The counters live in pl__sim (the task table and
 * steps_since_progress); the hot checks are inline in check_contract.h.
 */
#include <stdio.h>
#include <string.h>

#include "check_contract.h"

void pl__contract_init(pl__sim *s, const pl_sim_options *o)
{
    s->steps_max = o->steps_without_progress_max ? o->steps_without_progress_max : 1000000;
    s->self_wakes_max = o->self_wakes_max ? o->self_wakes_max : 10000;
}

/* Polls cost no virtual time by default, so a task that yields in a loop
 * until a deadline passes never sees it pass: with a timer armed, the
 * livelock may be the simulation's, not the program's, and the finding
 * says which option tells the two apart. */
static void hint_poll_cost(pl__sim *s)
{
    pl_time next = pl__executor_next_timer(s->ex);
    if (s->opts.poll_cost_ns != 0 || next == PL_TIME_NEVER) {
        return;
    }
    size_t used = strlen(s->finding.message);
    size_t len = sizeof s->finding.message;
    if (used + 1 >= len) {
        return;
    }
    snprintf(s->finding.message + used, len - used,
             "\n  a timer is armed for %lld.%03lld ms, and polls cost no virtual time: a task "
             "that yields in a loop until time passes never sees it pass. If it waits for "
             "time by design, run with --poll-cost 1us (pl_sim_options.poll_cost_ns): then "
             "every poll moves the clock, and only a real busy loop stays a livelock",
             (long long)(next / PL_MS), (long long)(next % PL_MS / PL_US));
}

void pl__contract_no_progress(pl__sim *s, pl_task *t)
{
    bool fresh = s->finding.kind == PL_FINDING_NONE;
    pl__sim_finding(s, PL_FINDING_LIVELOCK, t,
                    "%llu polls without virtual time passing and without a task completing",
                    (unsigned long long)s->steps_max);
    if (fresh) {
        hint_poll_cost(s);
    }
}

void pl__contract_orphan(pl__sim *s, pl_task *t)
{
    bool fresh = s->finding.kind == PL_FINDING_NONE;
    pl__sim_finding(s, PL_FINDING_ORPHAN, t,
                    "'%s' (#%u) returned PENDING without storing a clone of its waker anywhere: "
                    "nothing can ever wake it",
                    pl_task_name(t), pl_task_id(t));
    pl__bt_describe(s, fresh, pl_task_id(t));
}

void pl__contract_busy_loop(pl__sim *s, pl_task *t, const pl__task_info *ti)
{
    bool fresh = s->finding.kind == PL_FINDING_NONE;
    pl__sim_finding(s, PL_FINDING_LIVELOCK, t,
                    "'%s' woke itself %u polls in a row without waking anyone else "
                    "or completing: a busy loop",
                    pl_task_name(t), ti->busy_wakes - 1);
    if (fresh) {
        hint_poll_cost(s);
    }
}

void pl__contract_on_waker_drop(pl__sim *s, pl_task *t)
{
    pl__sim_finding(s, PL_FINDING_DOUBLE_DROP, t,
                    "a waker of '%s' was dropped more times than it was cloned",
                    pl_task_name(t));
}

void pl__contract_on_misuse(pl__sim *s, pl_task *running, const char *name, pl_misuse what)
{
    if (what == PL_MISUSE_DOUBLE_DROP) {
        pl__sim_finding(s, PL_FINDING_DOUBLE_DROP, running, "future '%s' was dropped twice",
                        name);
    } else {
        pl__sim_finding(s, PL_FINDING_POLL_AFTER_READY, running,
                        "future '%s' was polled after it returned READY (or after its drop)",
                        name);
    }
}

/* Once pl_run has returned, drops are the runner's teardown (and the
 * probes of quiescence, which report what they find themselves). A task
 * woken only through superseded wakers since its poll was woken, just
 * not delivered: the stale_waker oracle says why at quiescence. */
void pl__contract_on_orphaned(pl__sim *s, pl_task *t, pl_task *dropper)
{
    PL__SIM_ASSERT(pl_task_id(t) <= s->tasks.spawned);
    const pl__task_info *ti = &s->tasks.info[pl_task_id(t)];
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
    bool fresh = s->finding.kind == PL_FINDING_NONE;
    pl__sim_finding(s, PL_FINDING_ORPHAN, t,
                    "'%s' (#%u) parked at step %llu after poll #%u; the last clone of its "
                    "waker was dropped %s, without a wake: nothing can ever wake it",
                    pl_task_name(t), pl_task_id(t), (unsigned long long)ti->parked_step,
                    pl_task_polls(t), by);
    pl__bt_describe(s, fresh, pl_task_id(t));
}
