/* sim/src/oracle.c: the observer.
 *
 * The executor reports every spawn, poll and wake through its observer
 * hooks and counts waker clones in the task header (pl_task_head); this
 * file turns the hooks into trace events, keeps the task table the
 * checkers read (pl__task_info), and forwards each hook to the checkers'
 * event hooks (check_contract.h, check_budget.c, check_probe.c). It
 * raises no finding itself. Only task ids and counters enter the trace:
 * never a pointer.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backtrace.h"
#include "check_contract.h"
#include "grow.h"
#include "isolate/mirror.h"
#include "isolate/progress.h"
#include "oracle.h"
#include "sim_internal.h"
#include "trace_ring.h"

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

static pl__task_info *info(pl__sim *s, const pl_task *t) { return &s->tasks.info[tid(t)]; }

/* The table grows without zeroing: on_spawn writes an id's whole record,
 * so no byte is written twice and the entries past the latest id are
 * never touched (a million-task run zeroed 128 MB it then overwrote). */
/* Whether task `id` has a record: on_spawn wrote it. A task whose record
 * could not be allocated has none (on_spawn stopped the run). */
static bool has_record(const pl__sim *s, uint32_t id) { return id <= s->tasks.spawned; }

/* ---- Hooks ------------------------------------------------------------ */

/* The spawn and its site in one hook (the executor calls spawn_site right
 * after spawn, and the record's kind needs both). The site is log-only:
 * it names the task in reports, never enters the trace. */
static void on_spawn(void *ud, pl_task *t, const char *where, const char *func)
{
    pl__sim *s = ud;
    uint32_t id = tid(t);
    if (id >= s->tasks.cap && pl__tasks_reserve(s, id) != 0) {
        pl__sim_oom(s, t, NULL);
        return;
    }
    uint32_t node = pl__node_current(s); /* a node's tasks spawn its own */
    pl__spawn_kind key = {pl_task_name(t), ((const pl_future *)pl_task_future(t))->vtable->name,
                          where, func};
    if (node != 0) {
        /* Every report and the record name it "node2/worker" this way. */
        key.name = pl__node_task_name(&s->nodes, node, key.name);
        pl__task_rename(t, key.name);
    }
    const pl__spawn_kind *kind = pl__tasks_kind_fast(&s->tasks, &key);
    if (kind == NULL) {
        pl__sim_oom(s, t, NULL);
        return;
    }
    PL__SIM_ASSERT(id > s->tasks.spawned); /* ids are handed out in increasing order */
    /* Entry 0 (nobody) and the ids whose record could not be allocated
     * read as empty records, as a zeroed table had them. */
    for (uint32_t gap = s->tasks.spawned == 0 ? 0 : s->tasks.spawned + 1; gap < id; gap++) {
        s->tasks.info[gap] = (pl__task_info){.kind = &pl__tasks_kind_none};
    }
    pl__task_info *ti = &s->tasks.info[id];
    memset(ti, 0, sizeof *ti); /* vector stores: a compound literal here compiled to rep stos */
    ti->task = t;
    ti->kind = kind;
    ti->node = (uint8_t)node;
    s->tasks.spawned = id;
    pl__trace_ring *ring = pl__sim_ring();
    if (ring != NULL) {
        pl__ring_name_task(ring, id, key.name);
        if (where != NULL) {
            pl__ring_site_task(ring, id, pl__site_base(where), func);
        }
    }
    event(s, PL__EV_SPAWN, id, s->polling, 0);
}

/* What every poll's beginning resets and notes, after s->step and
 * s->polling moved on to it. */
static inline void begin_poll(pl__sim *s, pl_task *t, bool probe)
{
    s->woken_in_poll = false;
    s->woke_other = false;
    s->bounds.sub_polls = 0;
    s->firing_seq = 0;
    s->bounds.wakes_in_poll = 0;
    pl__bt_poll_begin(&s->bt);
    pl__progress_poll(s->step, s->now, t);
    if (!probe) {
        pl__task_info *ti = info(s, t);
        ti->waits_len = 0;
        ti->on_purpose = false;
    }
    /* A pick that passed over the FIFO head is the schedule's choice. The
     * head (a lone candidate, a probe) is what production polls next. */
    s->poll_deviated = s->passed_head != 0 && s->passed_head != s->polling;
    s->passed_head = 0;
    if (s->tasks.stale > 0 && !probe) {
        /* Only then can a task have stale wakes to forget: the common
         * poll does not touch its (cold) table entry at all. A probe
         * keeps them: its report links the dropped wake. */
        pl__task_info *ti = info(s, t);
        s->tasks.stale -= ti->stale_wakes > 0;
        ti->stale_wakes = 0;
    }
}

/* A probe, a poll at --break-at's step, or one whose POLL event is kept:
 * out of line, so the common poll (on_poll_begin) saves no registers. */
static __attribute__((noinline)) void poll_begin_rare(pl__sim *s, pl_task *t, uint32_t gen,
                                                      bool probe)
{
    s->step++;
    s->polling = tid(t);
    if (s->step == s->opts.break_at_step) {
        pl__sim_break(s, t);
    }
    begin_poll(s, t, probe);
    event(s, probe ? PL__EV_PROBE : PL__EV_POLL, s->polling, tpolls(t), gen);
    if (!probe) {
        pl__contract_on_poll(s, t);
    }
}

static void on_poll_begin(void *ud, pl_task *t, uint32_t gen, bool probe)
{
    pl__sim *s = ud;
    if (probe || s->step + 1 == s->opts.break_at_step || pl__trace_wants_text(s->trace)) {
        poll_begin_rare(s, t, gen, probe);
        return;
    }
    s->step++;
    s->polling = tid(t);
    begin_poll(s, t, false);
    /* Its POLL event is log-only, and nothing keeps it. */
    pl__contract_on_poll(s, t);
}

/* A poll's end after the backtrace's leave, in full: out of line, for
 * all but the common PENDING and READY (on_poll_end). The backtrace is
 * log-only, so it may come before the event; the contract's findings
 * come after it. */
static __attribute__((noinline)) void poll_end_rest(pl__sim *s, pl_task *t, pl_poll_result r,
                                                    bool probe)
{
    pl__task_info *ti = info(s, t);
    const pl_task_head *h = pl_task_head_of(t);
    if (r == PL_PENDING && !probe) {
        ti->parked_step = s->step;
        ti->parked_ns = s->now;
        pl__bt_park(&s->bt, ti);
    }
    event(s, r == PL_READY ? PL__EV_READY : PL__EV_PENDING, h->id, h->polls, h->gen);
    if (r == PL_PENDING && !probe) {
        pl__contract_on_pending(s, t, ti);
    }
    s->polling = 0;
    pl__progress_idle();
}

/* The common end, a READY or a PENDING parked where it parked before
 * with nothing for the contract to raise, makes its event last: it saves
 * no registers. */
static void on_poll_end(void *ud, pl_task *t, pl_poll_result r, bool probe)
{
    pl__sim *s = ud;
    pl__task_info *ti = info(s, t);
    pl__bt_leave_root(&s->bt, r, ti->kind->root);
    if (r == PL_PENDING && !probe) {
        if (!pl__bt_is_path(&s->bt, ti->chain) || !pl__contract_pending_plain(s, t)) {
            poll_end_rest(s, t, r, probe);
            return;
        }
        ti->parked_step = s->step;
        ti->parked_ns = s->now;
        pl__contract_end_streak(ti);
    }
    s->polling = 0;
    pl__progress_idle();
    const pl_task_head *h = pl_task_head_of(t);
    event(s, r == PL_READY ? PL__EV_READY : PL__EV_PENDING, h->id, h->polls, h->gen);
}

/* Every wake but the common ones (on_wake): a stale one, one during a
 * poll, any while a task is followed or parked tasks are watched
 * (check_probe.c). Out of line, so the common wake saves no registers. */
static __attribute__((noinline)) void wake_rare(pl__sim *s, pl_task *t, uint32_t gen,
                                                pl_task *running, pl_wake_outcome outcome)
{
    uint32_t id = tid(t);
    uint32_t run_id = running != NULL ? tid(running) : 0;
    uint32_t kind = PL__EV_WAKE;
    if (outcome == PL_WAKE_STALE) {
        kind = PL__EV_WAKE_STALE;
        pl__task_info *ti = info(s, t);
        s->tasks.stale += ti->stale_wakes++ == 0;
        ti->last_stale_gen = gen;
        ti->stale_ns = s->now;
        ti->stale_by = run_id;
    } else if (outcome == PL_WAKE_DEDUPED || outcome == PL_WAKE_FINISHED) {
        kind = PL__EV_WAKE_DEDUP;
    }
    if (outcome == PL_WAKE_DURING_POLL && id == s->polling) {
        s->woken_in_poll = true;
        if (++s->bounds.wakes_in_poll > s->bounds.wakes_in_poll_max) {
            pl__budget_wakes_in_poll(s);
        }
    } else if (outcome == PL_WAKE_SCHEDULED && run_id != 0 && id != run_id) {
        s->woke_other = true;
    }
    if (s->probe.follow.active && outcome == PL_WAKE_SCHEDULED) {
        pl__probe_follow_wake(s, id, run_id); /* it reads firing_seq, and makes no event */
    }
    if (s->probe.keep_step != 0 && outcome == PL_WAKE_SCHEDULED && !s->injecting &&
        info(s, t)->keep_parked) {
        s->probe.keep_woken = true; /* a watched task moves (check_probe.c, keepers_only) */
    }
    s->firing_seq = 0;
    event(s, kind, id, gen, run_id);
}

/* A wake that schedules the task, or finds it runnable or finished, with
 * no task followed: what wake_rare does for those, inline. */
static void on_wake(void *ud, pl_task *t, uint32_t gen, bool by_ref, pl_task *running,
                    pl_wake_outcome outcome)
{
    pl__sim *s = ud;
    (void)by_ref;
    if (s->threads.current != 0) {
        /* Task wakers are single-threaded (threads/check_threads.c). */
        pl__threads_wrong_thread(s, "wakes a task's waker");
    }
    pl__rescue_wake(s, tid(t), running != NULL ? tid(running) : 0, outcome);
    if (outcome == PL_WAKE_STALE || outcome == PL_WAKE_DURING_POLL || s->probe.follow.active ||
        s->probe.keep_step != 0) {
        wake_rare(s, t, gen, running, outcome);
        return;
    }
    uint32_t id = tid(t);
    uint32_t run_id = running != NULL ? tid(running) : 0;
    if (outcome == PL_WAKE_SCHEDULED && run_id != 0 && id != run_id) {
        s->woke_other = true;
    }
    s->firing_seq = 0;
    event(s, outcome == PL_WAKE_SCHEDULED ? PL__EV_WAKE : PL__EV_WAKE_DEDUP, id, gen, run_id);
}

/* Called for clones made outside the task's own poll only. */
static void on_waker_clone(void *ud, pl_task *t, uint32_t gen)
{
    pl__sim *s = ud;
    (void)gen;
    if (s->threads.current != 0) {
        pl__threads_wrong_thread(s, "clones a task's waker");
    }
    info(s, t)->clone_holder = s->polling;
}

/* Called only for a drop the executor found no clone for. */
static void on_waker_drop(void *ud, pl_task *t, uint32_t gen)
{
    pl__sim *s = ud;
    (void)gen;
    pl__contract_on_waker_drop(s, t);
}

/* Who armed timer #seq, and for which deadline: a report names the timer
 * that rescued a task and its author, and a probe that re-arms a timer
 * tells a moved deadline from bookkeeping by it (check_probe.c). Arming
 * numbers are dense, so arrays indexed by them. */
static void note_armer(pl__sim *s, uint64_t seq, pl_time deadline_ns)
{
    if (s->polling_probe) {
        if (s->probe.arms_len < PL__PROBE_ARMS_MAX) {
            s->probe.arms[s->probe.arms_len] = seq;
        }
        s->probe.arms_len++;
    }
    if (seq >= s->probe.armers_cap &&
        (seq >= SIZE_MAX || pl__grow((void **)&s->probe.armers, &s->probe.armers_cap,
                                     (size_t)seq + 1, sizeof *s->probe.armers, 256, 0) != 0)) {
        return; /* the report then says "armed outside any poll" */
    }
    s->probe.armers[seq] = s->polling;
    if (seq >= s->probe.arm_deadlines_cap &&
        pl__grow((void **)&s->probe.arm_deadlines, &s->probe.arm_deadlines_cap, (size_t)seq + 1,
                 sizeof *s->probe.arm_deadlines, 256, 0) != 0) {
        return; /* a probe then excuses no re-arm of this timer */
    }
    s->probe.arm_deadlines[seq] = deadline_ns;
}

static void note_late(pl__sim *s, uint32_t task, pl_time from, pl_time until)
{
    pl__task_info *ti = &s->tasks.info[task];
    if (s->probe.late_free != 0) {
        uint32_t i = s->probe.late_free - 1;
        s->probe.late_free = s->probe.late[i].next;
        s->probe.late[i] = (pl__late_timer){from, until, ti->late_head};
        ti->late_head = i + 1;
        return;
    }
    if (pl__grow_append((void **)&s->probe.late, &s->probe.late_cap, (size_t)s->probe.late_len + 1,
                        sizeof *s->probe.late, 16, 0) != 0) {
        /* Without the record a probe in the window could report the
         * simulated lateness as a lost wake: stop rather than guess. */
        pl__sim_oom(s, NULL, NULL);
        return;
    }
    s->probe.late[s->probe.late_len] = (pl__late_timer){from, until, ti->late_head};
    ti->late_head = ++s->probe.late_len;
}

static void on_timer_arm(void *ud, uint64_t seq, pl_time deadline_ns, pl_time fire_ns,
                         pl_task *wakes)
{
    pl__sim *s = ud;
    event(s, PL__EV_TIMER_ARM, s->polling, seq, (uint64_t)fire_ns);
    note_armer(s, seq, deadline_ns);
    if (fire_ns > deadline_ns && wakes != NULL) {
        /* A late timer: between its deadline and its firing the task's
         * own clock check says "due" although nothing woke it yet; that is
         * the lateness being simulated, not a lost wake (check_probe.c). */
        note_late(s, tid(wakes), deadline_ns, fire_ns);
    }
}

static void on_timer_fire(void *ud, uint64_t seq, pl_time now_ns)
{
    pl__sim *s = ud;
    event(s, PL__EV_TIMER_FIRE, 0, seq, (uint64_t)now_ns);
    s->firing_seq = seq;
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
    /* A drop outside polls closes on its task's node (none without a record). */
    s->nodes.dropping = has_record(s, tid(t)) ? tid(t) : 0;
    event(s, PL__EV_DROP, tid(t), cancelled, 0);
}

static void on_free(void *ud, pl_task *t)
{
    pl__sim *s = ud;
    if (!has_record(s, tid(t))) {
        /* Spawned when its table entry could not be allocated: on_spawn
         * reported that and stopped the run, so it was never polled and
         * has no entry to clear. */
        return;
    }
    pl__task_info *ti = info(s, t);
    ti->task = NULL;
    if (s->tasks.stale > 0) {
        /* Only then can it have stale wakes: the common free writes one
         * word of its record and reads none (a miss per task at a
         * million). */
        s->tasks.stale -= ti->stale_wakes > 0;
        ti->stale_wakes = 0;
    }
}

static void on_misuse(void *ud, pl_task *running, const char *name, pl_misuse what)
{
    pl__contract_on_misuse(ud, running, name, what);
}

static void on_orphaned(void *ud, pl_task *t, pl_task *dropper)
{
    pl__contract_on_orphaned(ud, t, dropper);
}

/* ---- The poll watch --------------------------------------------------- */

static void on_enter(void *ud, pl_future *f)
{
    pl__sim *s = ud;
    (void)f;
    pl__bt_enter(&s->bt);
    if (++s->bounds.sub_polls > s->bounds.sub_polls_max) {
        pl__budget_sub_polls(s);
    }
}

static void on_leave(void *ud, pl_future *f, pl_poll_result r)
{
    pl__bt_leave(&((pl__sim *)ud)->bt, r, f->vtable->name);
}

/* A poll by PL_AWAIT ended (child NULL: a PL_YIELD, no poll). */
static void on_await(void *ud, pl_future *child, pl_poll_result r, const pl_await_site *site)
{
    pl__bt_await(&((pl__sim *)ud)->bt, child, r, site);
}

/* on_wait when table i does not reach the polling task yet: grows it,
 * then records. Out of line and called last, so the common declaration
 * saves no registers. */
static __attribute__((noinline)) void wait_grow(pl__sim *s, pl__task_info *ti, uint32_t i,
                                                const pl_wait *w)
{
    if (pl__grow((void **)&s->probe.waits[i], &s->probe.waits_cap[i], (size_t)s->polling + 1,
                 sizeof *s->probe.waits[i], 64, 0) != 0) {
        /* Without the record the task's condition goes unchecked:
         * stop rather than judge it without. */
        pl__sim_oom(s, NULL, NULL);
        return;
    }
    s->probe.waits[i][s->polling] = *w;
    ti->waits_len++;
}

/* A declaration outlives the poll that made it: the task stays parked on
 * it until its next poll, which forgets it (on_poll_begin). */
static void on_wait(void *ud, const pl_wait *w)
{
    pl__sim *s = ud;
    if (s->polling == 0 || s->polling_probe) {
        return; /* a probe's declarations would double those of the real poll */
    }
    pl__task_info *ti = &s->tasks.info[s->polling];
    uint32_t i = ti->waits_len;
    if (i < PL__WAITS_MAX) {
        if (s->polling >= s->probe.waits_cap[i]) {
            wait_grow(s, ti, i, w);
            return;
        }
        s->probe.waits[i][s->polling] = *w;
    }
    ti->waits_len++;
}

static void on_purpose(void *ud)
{
    pl__sim *s = ud;
    if (s->polling != 0 && !s->polling_probe) {
        s->tasks.info[s->polling].on_purpose = true;
    }
}

/* PL_TRACE_EVENT: formatted only when something keeps it, cut to
 * PL_TRACE_EVENT_MAX - 1 bytes ("..." at the end of a cut text), one line
 * (newlines become spaces). Log-only, so it never changes the run. */
static void on_event(void *ud, const char *fmt, va_list ap)
{
    pl__sim *s = ud;
    if (!pl__trace_wants_text(s->trace)) {
        return;
    }
    char text[PL_TRACE_EVENT_MAX];
    int n = vsnprintf(text, sizeof text, fmt, ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof text ? (size_t)n : sizeof text - 1;
    if (n >= (int)sizeof text) {
        memcpy(text + len - 3, "...", 3);
    }
    for (size_t i = 0; i < len; i++) {
        text[i] = text[i] == '\n' || text[i] == '\r' ? ' ' : text[i];
    }
    pl__trace_user(s->trace, s->step, s->now, s->polling, text, len);
    pl__label_note(s, s->polling, text, len); /* names the task's next messages */
}

void pl__oracle_watch_init(pl__sim *s)
{
    s->watch = (pl_poll_watch){s, on_enter, on_leave, on_wait, on_purpose, on_event, on_await};
}

const pl_observer pl__sim_observer = {
    .version = PL_OBSERVER_VERSION,
    .spawn = NULL, /* on_spawn is the spawn_site hook, which follows it */
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
    .orphaned = on_orphaned,
    .spawn_site = on_spawn,
    .signal = pl__rescue_signal,
};
