/* sim/src/sim.c: the simulated system: virtual clock, wait, decisions
 * (the pl_system vtable of the world). The run (run.c) makes the world
 * and installs the judges this file calls at its moments.
 *
 * Everything nondeterministic the executor asks for comes from here, and
 * here only from the decision stream: the clock moves only when wait()
 * jumps it to the next deadline or delivery, and choice 0 of every
 * decision is what production would do. The services every module calls
 * (decisions, events, findings) are instance.c's, below this file.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk/disk.h"
#include "net/net.h"
#include "sim_internal.h"

/* ---- The system vtable ------------------------------------------------ */

static pl_time sim_now(void *self) { return ((pl__sim *)self)->now; }

/* A buggify site is enabled or not once per run, then fires per call. */
static uint32_t decide_buggify(pl__sim *s, uint64_t key)
{
    bool created;
    pl__site *site = pl__site_lookup(&s->buggify, key, &created);
    if (site == NULL) {
        /* Answering 0 alone would turn the site off unnoticed: the run
         * would pass for one that tested it. Say so and stop the run. */
        char what[256];
        const pl_source_site *at = pl__executor_buggify_site(s->ex);
        if (at != NULL) {
            snprintf(what, sizeof what, "no room for buggify site %s:%d (%s)",
                     pl__site_base(at->file), at->line, at->func);
        } else {
            snprintf(what, sizeof what, "no room for buggify site %016llx",
                     (unsigned long long)key);
        }
        pl__sim_oom(s, pl__sim_polled(s), what);
        return 0;
    }
    if (created) {
        /* Where the site is written, for explanations and coverage. */
        const pl_source_site *at = pl__executor_buggify_site(s->ex);
        if (at != NULL) {
            site->file = at->file;
            site->line = at->line;
            site->func = at->func;
        }
        site->enabled = pl__sim_choose_fast(s, PL_DECIDE_BUGGIFY_SITE, 2, key) != 0;
    }
    uint32_t fire = site->enabled ? pl__sim_choose_fast(s, PL_DECIDE_BUGGIFY_FIRE, 2, key) : 0;
    site->reached++;
    site->fired += fire != 0;
    return fire;
}

static uint32_t sim_decide(void *self, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    pl__sim *s = self;
    if (kind == PL_DECIDE_BUGGIFY_FIRE) {
        return decide_buggify(s, key);
    }
    return pl__sim_choose_fast(s, kind, n, key);
}

static void sim_remote_wake(void *self) { ((pl__sim *)self)->remote_pending = true; }

/* Task `id` if it is parked, else NULL. */
static pl_task *parked_task(pl__sim *s, uint32_t id)
{
    if (id == 0 || id > s->tasks.spawned) {
        return NULL;
    }
    pl__task_info *ti = &s->tasks.info[id];
    return pl__tasks_is_parked(ti) ? ti->task : NULL;
}

/* Faults of the scheduler itself: a wake nobody asked for, or a poll
 * without a wake. A decision names a task id (0: none); a task that is
 * not parked makes it a no-op. That costs O(1) per wait, where picking
 * among the parked tasks would mean a scan of every task. Never at
 * quiescence: an extra poll there would hide exactly the lost wakeups
 * the probes look for. */
static void inject_spurious(pl__sim *s, bool at_point)
{
    uint32_t n = s->tasks.spawned + 1;
    if (pl_executor_live_tasks(s->ex) == pl__executor_runnable_count(s->ex) || n < 2) {
        return;
    }
    /* At a timer-quiescent point an injected wake or poll that lets a
     * long-parked task progress is evidence that its real wake was lost:
     * the task is probed first, and reported if it progresses. */
    bool probed = false;
    pl_task *t = parked_task(s, pl__sim_choose_fast(s, PL_DECIDE_SPURIOUS_WAKE, n, 0));
    if (t != NULL) {
        if (at_point && s->judges->before_injection(s, t, false, &probed)) {
            return;
        }
        s->injecting = true;
        pl__executor_wake_task(s->ex, t);
        s->injecting = false;
        return;
    }
    t = parked_task(s, pl__sim_choose_fast(s, PL_DECIDE_SPURIOUS_POLL, n, 0));
    if (t != NULL && !pl__sim_pollable_parked(s, &s->tasks.info[pl_task_id(t)])) {
        return; /* a paused node's task: held, never polled (a wake only queues it aside) */
    }
    if (t == NULL || (at_point && s->judges->before_injection(s, t, true, &probed)) || probed) {
        return; /* a probe that changed nothing was the spurious poll */
    }
    s->polling_probe = true;
    pl__executor_probe(s->ex, t);
    s->polling_probe = false;
}

/* Remote wakes may be held back one wait at a time (delivery latency),
 * but never past the point where nothing else could happen. */
static void deliver_remote(pl__sim *s, bool nothing_else)
{
    if (!s->remote_pending) {
        return;
    }
    if (!nothing_else && pl__sim_choose_fast(s, PL_DECIDE_WAKE_DELAY, 2, 0) != 0) {
        return;
    }
    s->remote_pending = false;
    pl_executor_drain_remote(s->ex);
}

static void advance_clock(pl__sim *s, pl_time to)
{
    if (to > s->now) {
        pl__trace_event(s->trace, s->step, to, PL__EV_CLOCK, 0, (uint64_t)to, (uint64_t)s->now);
        s->now = to;
        s->steps_since_progress = 0;
        if (pl__threads_active(&s->threads)) {
            pl__threads_clock_moved(s);
        }
    }
}

/* Busy work costs virtual time: the polls since the last wait move the
 * clock by poll_cost_ns each. The executor reads the clock once per tick,
 * so a timer that came due meanwhile fires at the next tick. */
static void charge_polls(pl__sim *s)
{
    pl_time cost = s->opts.poll_cost_ns;
    PL__SIM_ASSERT(s->steps_charged <= s->step);
    if (cost > 0 && s->step > s->steps_charged) {
        advance_clock(s, s->now + (pl_time)(s->step - s->steps_charged) * cost);
        s->steps_charged = s->step;
    }
}

/* The time limit names the stuck tasks (the run's judges). */
static int time_limit_reached(pl__sim *s)
{
    s->judges->time_limit(s);
    return 0;
}

static int sim_wait(void *self, pl_executor *ex, pl_time deadline_ns)
{
    pl__sim *s = self;
    (void)ex;
    size_t background = pl_executor_live_background(s->ex);
    if (s->stopped || (background > 0 && pl_executor_live_tasks(s->ex) == background &&
                       pl__executor_runnable_count(s->ex) == 0)) {
        return 0; /* only background work is left, all parked: pl_run returns */
    }
    s->firing_seq = 0;
    charge_polls(s);
    if (s->now > s->time_limit_ns) {
        return time_limit_reached(s);
    }
    if (s->now >= s->quiet.at && pl__quiet_reached(s)) {
        return 0; /* the liveness was judged at the quiet phase's deadline */
    }
    /* The executor's thread waits: the other threads run meanwhile
     * (threads/sched.c); a thread's deadline is an event like I/O. */
    pl_time thread_next = PL_TIME_NEVER;
    if (pl__threads_active(&s->threads)) {
        pl__threads_idle(s);
        if (s->stopped) {
            return 0;
        }
        thread_next = pl__threads_next_wake(s);
    }
    bool runnable = pl__executor_runnable_count(s->ex) > 0;
    pl_time io_next = s->reactor != NULL ? pl__reactor_next_event(s->reactor) : PL_TIME_NEVER;
    pl_time disk_next = pl__nodes_next_event(s);
    io_next = disk_next < io_next ? disk_next : io_next;
    io_next = thread_next < io_next ? thread_next : io_next;
    pl_time next = io_next < deadline_ns ? io_next : deadline_ns;
    /* The quiet phase's start comes in any case (it ends what keeps the
     * run stuck); its deadline only while something else may happen. */
    if (s->quiet.at < next && (!s->quiet.begun || next != PL_TIME_NEVER)) {
        next = s->quiet.at;
    }
    if (!runnable && next == PL_TIME_NEVER && !s->remote_pending) {
        return PL_EDEADLK; /* quiescence: the runner takes over */
    }
    deliver_remote(s, !runnable && next == PL_TIME_NEVER);
    /* Quiescent up to timers: only a timer can fire next. The parked
     * tasks are judged here, before the clock jumps (the run's judges). */
    bool at_point = !runnable && io_next == PL_TIME_NEVER && !s->remote_pending &&
                    deadline_ns != PL_TIME_NEVER && deadline_ns > s->now &&
                    deadline_ns <= s->time_limit_ns && deadline_ns <= s->quiet.at;
    if (at_point && s->judges->point(s)) {
        return 0;
    }
    /* Spurious wakes come before the clock moves: a task woken after the
     * jump would already see its deadline and never show that it kept a
     * stale waker. */
    inject_spurious(s, at_point);
    if (s->stopped) {
        return 0;
    }
    if (pl__executor_runnable_count(s->ex) > 0) {
        runnable = true;
    }
    if (!runnable && next != PL_TIME_NEVER) {
        if (next > s->time_limit_ns) {
            return time_limit_reached(s);
        }
        advance_clock(s, next);
    }
    if (s->now >= s->quiet.at && pl__quiet_reached(s)) {
        return 0;
    }
    if (s->reactor != NULL) {
        pl__reactor_deliver(s->reactor, s->now);
    }
    pl__nodes_deliver(s, s->now);
    return 0;
}

/* Handles are the network's or the disk's, told apart by number. */
static int sim_io_register(void *self, pl_io_source *src)
{
    return pl__disk_owns(src->handle) ? pl__disk_io_register(self, src)
                                      : pl__net_io_register(self, src);
}

static void sim_io_deregister(void *self, pl_io_source *src)
{
    if (pl__disk_owns(src->handle)) {
        pl__disk_io_deregister(self, src);
    } else {
        pl__net_io_deregister(self, src);
    }
}

static int sim_close(void *self, int handle)
{
    return pl__disk_owns(handle) ? pl__disk_close(self, handle) : pl__net_close(self, handle);
}

const pl_system_vtable pl__sim_vtable = {
    .version = PL_SYSTEM_VERSION,
    .name = "sim",
    .now = sim_now,
    .wait = sim_wait,
    .decide = sim_decide,
    .remote_wake = sim_remote_wake,
    .io_register = sim_io_register,
    .io_deregister = sim_io_deregister,
    .socket = pl__net_socket,
    .pipe = pl__net_pipe,
    .close = sim_close,
    .bind = pl__net_bind,
    .listen = pl__net_listen,
    .accept = pl__net_accept,
    .connect = pl__net_connect,
    .connect_result = pl__net_connect_result,
    .local_addr = pl__net_local_addr,
    .read = pl__net_read,
    .write = pl__net_write,
    .sendto = pl__net_sendto,
    .recvfrom = pl__net_recvfrom,
    .shutdown = pl__net_shutdown,
    .dir_open = pl__disk_dir_open,
    .file_open = pl__disk_file_open,
    .file_read = pl__disk_file_read,
    .file_write = pl__disk_file_write,
    .file_sync = pl__disk_file_sync,
    .file_size = pl__disk_file_size,
    .dir_rename = pl__disk_dir_rename,
    .dir_unlink = pl__disk_dir_unlink,
    .dir_list = pl__disk_dir_list,
};
