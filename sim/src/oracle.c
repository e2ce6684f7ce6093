/* sim/src/oracle.c: the waker-contract oracles.
 *
 * The executor reports every spawn, poll and wake through its observer
 * hooks and counts waker clones in the task header (pl_task_head); this
 * file turns the hooks into trace events and checks the contract at the
 * moment it breaks (orphan, misuse, livelock) or at
 * quiescence (stale wakers, lost wakeups, deadlock) and at the end of a
 * run (leaks, pl_eventually). Only task ids and counters enter the
 * trace: never a pointer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_internal.h"

/* pl__sim_event, inline: the hooks append an event or two per poll and
 * per wake (pl__sim_event stays a function for the reactor, whose unit
 * test links a fake of it). */
static inline void event(pl__sim *s, uint32_t kind, uint32_t task, uint64_t a, uint64_t b)
{
    pl__trace_event(s->trace, s->step, s->now, (pl__trace_kind)kind, task, a, b);
}

/* Task fields the hooks read on every poll and wake, without a call. */
static uint32_t tid(const pl_task *t) { return pl_task_head_of(t)->id; }
static uint32_t tpolls(const pl_task *t) { return pl_task_head_of(t)->polls; }

static pl__task_info *info(pl__sim *s, const pl_task *t) { return &s->tasks[tid(t)]; }

/* The executor counts waker clones in the task; a freed task has none. */
static uint32_t live_clones(const pl__task_info *ti)
{
    return ti->task != NULL ? pl_task_head_of(ti->task)->waker_clones : 0;
}

/* The task polling when the latest clone was made (0: outside polls). */
static uint32_t clone_holder(const pl__task_info *ti, uint32_t id)
{
    if (ti->task != NULL && !pl_task_cloned_elsewhere(ti->task)) {
        return id;
    }
    return ti->clone_holder;
}

static int reserve_task(pl__sim *s, uint32_t id)
{
    if (id < s->tasks_cap) {
        return 0;
    }
    uint32_t cap = s->tasks_cap ? s->tasks_cap : 64;
    while (cap <= id) {
        cap *= 2;
    }
    pl__task_info *tasks = realloc(s->tasks, (size_t)cap * sizeof *tasks);
    if (tasks == NULL) {
        return PL_ENOMEM;
    }
    memset(tasks + s->tasks_cap, 0, (size_t)(cap - s->tasks_cap) * sizeof *tasks);
    s->tasks = tasks;
    s->tasks_cap = cap;
    return 0;
}

/* ---- Hooks ------------------------------------------------------------ */

static void on_spawn(void *ud, pl_task *t)
{
    pl__sim *s = ud;
    uint32_t id = tid(t);
    if (reserve_task(s, id) != 0) {
        pl__sim_finding(s, PL_FINDING_ASSERTION, t, "simulator out of memory");
        return;
    }
    s->tasks[id].task = t;
    s->tasks[id].name = pl_task_name(t);
    s->tasks_spawned = id;
    event(s, PL__EV_SPAWN, id, s->polling, 0);
}

static void on_poll_begin(void *ud, pl_task *t, uint32_t gen, bool probe)
{
    pl__sim *s = ud;
    s->step++;
    s->polling = tid(t);
    s->woken_in_poll = false;
    s->woke_other = false;
    s->sub_polls = 0;
    s->wakes_in_poll = 0;
    pl__progress_poll(s, t);
    if (!probe) {
        info(s, t)->waits_len = 0;
    }
    if (s->stale_tasks > 0) {
        /* Only then can a task have stale wakes to forget: the common
         * poll does not touch its (cold) table entry at all. */
        pl__task_info *ti = info(s, t);
        s->stale_tasks -= ti->stale_wakes > 0;
        ti->stale_wakes = 0;
    }
    event(s, probe ? PL__EV_PROBE : PL__EV_POLL, s->polling, tpolls(t), gen);
    if (++s->steps_since_progress > s->steps_max) {
        pl__sim_finding(s, PL_FINDING_LIVELOCK, t,
                        "%llu polls without virtual time passing and without a task completing",
                        (unsigned long long)s->steps_max);
    }
}

/* PENDING is a promise that someone will wake the task: either it was
 * woken during this very poll, or a clone of its waker is alive. */
static void check_orphan(pl__sim *s, pl_task *t)
{
    if (!s->woken_in_poll && pl_task_head_of(t)->waker_clones == 0) {
        pl__sim_finding(s, PL_FINDING_ORPHAN, t,
                        "'%s' returned PENDING without storing a clone of its waker anywhere: "
                        "nothing can ever wake it",
                        pl_task_name(t));
    }
}

static void check_busy_loop(pl__sim *s, pl_task *t, pl__task_info *ti)
{
    if (s->woken_in_poll && !s->woke_other) {
        if (++ti->self_wakes > s->self_wakes_max) {
            pl__sim_finding(s, PL_FINDING_LIVELOCK, t,
                            "'%s' woke itself %u polls in a row without waking anyone else "
                            "or completing: a busy loop",
                            pl_task_name(t), ti->self_wakes - 1);
        }
    } else {
        ti->self_wakes = 0;
    }
}

static void on_poll_end(void *ud, pl_task *t, pl_poll_result r, bool probe)
{
    pl__sim *s = ud;
    pl__task_info *ti = info(s, t);
    const pl_task_head *h = pl_task_head_of(t);
    event(s, r == PL_READY ? PL__EV_READY : PL__EV_PENDING, h->id, h->polls, h->gen);
    if (r == PL_PENDING && !probe) {
        ti->parked_step = s->step;
        ti->parked_ns = s->now;
        check_orphan(s, t);
        check_busy_loop(s, t, ti);
    }
    s->polling = 0;
    pl__progress.task = NULL;
}

static void on_wake(void *ud, pl_task *t, uint32_t gen, bool by_ref, pl_task *running,
                    pl_wake_outcome outcome)
{
    pl__sim *s = ud;
    uint32_t id = tid(t);
    uint32_t run_id = running != NULL ? tid(running) : 0;
    uint32_t kind = PL__EV_WAKE;
    if (outcome == PL_WAKE_STALE) {
        kind = PL__EV_WAKE_STALE;
        s->stale_tasks += info(s, t)->stale_wakes++ == 0;
        info(s, t)->last_stale_gen = gen;
    } else if (outcome == PL_WAKE_DEDUPED || outcome == PL_WAKE_FINISHED) {
        kind = PL__EV_WAKE_DEDUP;
    }
    if (outcome == PL_WAKE_DURING_POLL && id == s->polling) {
        s->woken_in_poll = true;
        if (++s->wakes_in_poll > s->wakes_in_poll_max) {
            pl__budget_wakes_in_poll(s);
        }
    } else if (outcome == PL_WAKE_SCHEDULED && run_id != 0 && id != run_id) {
        s->woke_other = true;
    }
    (void)by_ref;
    event(s, kind, id, gen, run_id);
}

/* Called for clones made outside the task's own poll only. */
static void on_waker_clone(void *ud, pl_task *t, uint32_t gen)
{
    pl__sim *s = ud;
    (void)gen;
    info(s, t)->clone_holder = s->polling;
}

/* Called only for a drop the executor found no clone for. */
static void on_waker_drop(void *ud, pl_task *t, uint32_t gen)
{
    pl__sim *s = ud;
    (void)gen;
    pl__sim_finding(s, PL_FINDING_DOUBLE_DROP, t,
                    "a waker of '%s' was dropped more times than it was cloned",
                    pl_task_name(t));
}

static void on_timer_arm(void *ud, uint64_t seq, pl_time deadline_ns, pl_time fire_ns)
{
    pl__sim *s = ud;
    (void)deadline_ns;
    event(s, PL__EV_TIMER_ARM, s->polling, seq, (uint64_t)fire_ns);
}

static void on_timer_fire(void *ud, uint64_t seq, pl_time now_ns)
{
    pl__sim *s = ud;
    event(s, PL__EV_TIMER_FIRE, 0, seq, (uint64_t)now_ns);
}

static void on_complete(void *ud, pl_task *t)
{
    pl__sim *s = ud;
    s->steps_since_progress = 0;
    event(s, PL__EV_COMPLETE, tid(t), 0, 0);
}

static void on_drop(void *ud, pl_task *t, bool cancelled)
{
    pl__sim *s = ud;
    event(s, PL__EV_DROP, tid(t), cancelled, 0);
}

static void on_free(void *ud, pl_task *t)
{
    pl__sim *s = ud;
    pl__task_info *ti = info(s, t);
    ti->task = NULL;
    s->stale_tasks -= ti->stale_wakes > 0;
    ti->stale_wakes = 0;
}

static void on_misuse(void *ud, pl_task *running, const char *name, pl_misuse what)
{
    pl__sim *s = ud;
    if (what == PL_MISUSE_DOUBLE_DROP) {
        pl__sim_finding(s, PL_FINDING_DOUBLE_DROP, running, "future '%s' was dropped twice",
                        name);
    } else {
        pl__sim_finding(s, PL_FINDING_POLL_AFTER_READY, running,
                        "future '%s' was polled after it returned READY (or after its drop)",
                        name);
    }
}

/* ---- The poll watch --------------------------------------------------- */

static void on_enter(void *ud, pl_future *f)
{
    pl__sim *s = ud;
    (void)f;
    s->poll_depth++;
    if (++s->sub_polls > s->sub_polls_max) {
        pl__budget_sub_polls(s);
    }
}

static void on_leave(void *ud, pl_future *f, pl_poll_result r)
{
    pl__sim *s = ud;
    (void)f;
    (void)r;
    s->poll_depth--;
}

/* A declaration outlives the poll that made it: the task stays parked on
 * it until its next poll, which forgets it (on_poll_begin). */
static void on_wait(void *ud, const pl_wait *w)
{
    pl__sim *s = ud;
    if (s->polling == 0 || s->polling_probe) {
        return; /* a probe's declarations would double those of the real poll */
    }
    pl__task_info *ti = &s->tasks[s->polling];
    if (ti->waits_len < PL__WAITS_MAX) {
        ti->waits[ti->waits_len] = *w;
    }
    ti->waits_len++;
}

void pl__oracle_watch_init(pl__sim *s)
{
    s->watch = (pl_poll_watch){s, on_enter, on_leave, on_wait};
}

const pl_observer pl__sim_observer = {
    .spawn = on_spawn,
    .poll_begin = on_poll_begin,
    .poll_end = on_poll_end,
    .wake = on_wake,
    .waker_clone = on_waker_clone,
    .waker_drop = on_waker_drop,
    .timer_arm = on_timer_arm,
    .timer_fire = on_timer_fire,
    .complete = on_complete,
    .drop = on_drop,
    .free = on_free,
    .misuse = on_misuse,
    .orphaned = pl__oracle_orphaned,
};

/* ---- Quiescence ------------------------------------------------------- */

static bool is_parked(const pl__task_info *ti)
{
    return ti->task != NULL && !pl_task_is_finished(ti->task) &&
           !pl_task_is_scheduled(ti->task);
}

static const char *holder_name(pl__sim *s, uint32_t id)
{
    if (id == 0) {
        return "outside any poll";
    }
    pl_task *h = s->tasks[id].task;
    return h != NULL ? pl_task_name(h) : "a finished task";
}

/* A task woken only through wakers a later poll superseded is stuck
 * because of where it stored its waker, not because of who woke it. */
static bool find_stale(pl__sim *s)
{
    for (uint32_t id = 1; id <= s->tasks_spawned; id++) {
        pl__task_info *ti = &s->tasks[id];
        if (is_parked(ti) && ti->stale_wakes > 0) {
            pl__sim_finding(
                s, PL_FINDING_STALE_WAKER, ti->task,
                "'%s' was woken %u time(s) only through the waker of its poll #%u, which its "
                "later polls superseded; it kept a stale waker (compare with "
                "pl_waker_will_wake and store the newest), so it is stuck since step %llu",
                pl_task_name(ti->task), ti->stale_wakes, ti->last_stale_gen,
                (unsigned long long)ti->parked_step);
            return true;
        }
    }
    return false;
}

/* One probe poll. Progress means the task could have run: it completed,
 * woke a task (itself included), or its state bytes changed. */
static bool probe(pl__sim *s, pl__task_info *ti)
{
    size_t size = pl_task_future_size(ti->task);
    unsigned char *before = malloc(size);
    if (before == NULL) {
        return false;
    }
    /* Our own reference keeps the task alive through the report: a probe
     * that completes a task nobody holds a handle to frees it. */
    pl_task *t = pl_task_ref(ti->task);
    memcpy(before, pl_task_future(t), size);
    uint64_t parked_step = ti->parked_step;
    pl_time parked_ns = ti->parked_ns;
    uint32_t polls = tpolls(t);
    /* Read before the probe: a probe that completes drops the future, and
     * with it the clones the report is about (and a spawn during the probe
     * may move s->tasks, so ti is not used afterwards). */
    uint32_t clones = live_clones(ti);
    uint32_t holder = clone_holder(ti, tid(t));
    pl_poll_result r = pl_executor_probe(s->ex, t);
    bool changed = r == PL_READY || memcmp(before, pl_task_future(t), size) != 0;
    bool woke = s->woken_in_poll || s->woke_other;
    free(before);
    if (changed || woke) {
        const char *how = r == PL_READY ? "completed" : woke ? "woke a task" : "changed its state";
        pl__sim_finding(
            s, PL_FINDING_LOST_WAKEUP, t,
            "'%s' parked at step %llu (%.3f ms) after poll #%u and was never woken, "
            "yet a probe poll at quiescence %s: the event it waited for had happened. "
            "Its waker clones alive: %u (latest made %s%s)",
            pl_task_name(t), (unsigned long long)parked_step, (double)parked_ns / 1e6, polls, how,
            clones, holder == tid(t) ? "by itself" : "while polling ",
            holder == tid(t) ? "" : holder_name(s, holder));
    }
    pl_task_release(t);
    return changed || woke;
}

static void report_deadlock(pl__sim *s)
{
    char list[768];
    size_t used = 0;
    size_t parked = 0;
    const pl_task *first = NULL;
    for (uint32_t id = 1; id <= s->tasks_spawned; id++) {
        pl__task_info *ti = &s->tasks[id];
        if (!is_parked(ti)) {
            continue;
        }
        first = first != NULL ? first : ti->task;
        parked++;
        if (used < sizeof list - 1) {
            int n = snprintf(list + used, sizeof list - used,
                             "\n    '%s' (#%u) parked since step %llu, waker clones: %u "
                             "(latest made while polling %s)",
                             pl_task_name(ti->task), id, (unsigned long long)ti->parked_step,
                             live_clones(ti), holder_name(s, clone_holder(ti, id)));
            used += n > 0 ? (size_t)n : 0;
        }
    }
    if (used >= sizeof list) {
        used = sizeof list - 1;
    }
    list[used] = '\0';
    pl__sim_finding(s, PL_FINDING_DEADLOCK, first,
                    "%zu task(s) parked forever and no probe made progress:%s", parked, list);
}

void pl__oracle_quiescence(pl__sim *s)
{
    if (s->finding.kind != PL_FINDING_NONE || find_stale(s)) {
        return;
    }
    for (uint32_t id = 1; id <= s->tasks_spawned; id++) {
        pl__task_info *ti = &s->tasks[id];
        s->polling_probe = true;
        bool progress = is_parked(ti) && probe(s, ti);
        s->polling_probe = false;
        if (progress) {
            return;
        }
    }
    report_deadlock(s);
}

/* ---- End of run ------------------------------------------------------- */

void pl__oracle_eventually(pl__sim *s)
{
    for (size_t i = 0; i < s->eventually.cap && s->finding.kind == PL_FINDING_NONE; i++) {
        pl__site *site = &s->eventually.slots[i];
        if (site->used && !site->last_ok) {
            pl__sim_finding(s, PL_FINDING_ASSERTION, NULL,
                            "pl_eventually never became true: %s (%s:%d)", site->msg, site->file,
                            site->line);
        }
    }
}

void pl__oracle_leaks(pl__sim *s)
{
    for (uint32_t id = 1; id <= s->tasks_spawned && s->finding.kind == PL_FINDING_NONE; id++) {
        pl__task_info *ti = &s->tasks[id];
        if (live_clones(ti) > 0) {
            pl__sim_finding(s, PL_FINDING_WAKER_LEAK, ti->task,
                            "%u clone(s) of the waker of task #%u were never dropped (latest "
                            "made while polling %s)",
                            live_clones(ti), id, holder_name(s, clone_holder(ti, id)));
        } else if (ti->task != NULL) {
            pl__sim_finding(s, PL_FINDING_TASK_LEAK, ti->task,
                            "task '%s' (#%u) is still allocated at the end of the run: a handle "
                            "was never released (pl_task_release)",
                            pl_task_name(ti->task), id);
        }
    }
}
