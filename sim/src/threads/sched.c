/* sim/src/threads/sched.c: the thread table and the scheduler of
 * simulated threads.
 *
 * One fiber runs at a time. At a schedule point the running thread keeps
 * going (choice 0, what a thread does in production until something
 * stops it) unless a thread_switch decision sends another runnable
 * thread in; when it blocks, a decision picks who runs next (choice 0:
 * the one runnable the longest). With one thread able to run nothing is
 * consulted, so a run that never spawns a thread draws exactly what it
 * drew before threads existed.
 *
 * Thread 0 runs the executor. In its wait (pl__threads_idle) it is not
 * runnable: the others run until each blocks, sleeps, yields or ends, as
 * they would while production's executor sleeps in epoll_wait; then the
 * executor's wait goes on and the clock may move to the earliest timer
 * or thread deadline (sim.c). When thread 0 itself blocks (a join in
 * setup, a lock in a poll) the clock moves here, to the earliest thread
 * deadline: timers cannot fire while the executor's thread is blocked.
 *
 * A thread belongs to the node its spawner ran on. While that node is
 * paused the thread is never picked, runnable or not; a deadline of its
 * that comes meanwhile makes it runnable for the resume, as a SIGSTOPed
 * process's sleeps end at its SIGCONT. When no executor wait can deliver
 * the resume (thread 0 blocked, or pl_run returned), the clock moves to
 * it here. A crash kills the node's threads where they stand
 * (pl__threads_node_crashed).
 */
#include <errno.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim_internal.h"
#include "grow.h"
#include "threads.h"

pl__thread_rec *pl__threads_self(pl__sim *s) { return s->threads.t[s->threads.current]; }

static void event(pl__sim *s, uint32_t id, uint32_t what, uint32_t other)
{
    pl__sim_event(s, PL__EV_THREAD, 0, id, (uint64_t)what << 32 | other);
}

/* A thread of a paused node: runnable or not, it waits for the resume,
 * as a SIGSTOPed process's threads do. Node 0 (the scenario, and every
 * thread of a run without nodes) is never paused: one compare. */
static bool held(const pl__sim *s, const pl__thread_rec *r)
{
    return r->node != 0 && s->nemesis.paused_until[r->node] != 0;
}

/* ---- Switching ------------------------------------------------------------ */

/* After any switch, on the fiber that now runs. */
static void after_switch(pl__threads *th, uint32_t came_from)
{
    pl__fiber_note_origin(&th->t[came_from]->fiber);
    if (th->ended != 0) {
        pl__fiber_destroy(&th->t[th->ended - 1]->fiber);
        th->ended = 0;
    }
}

static void switch_to(pl__sim *s, uint32_t to, bool ends)
{
    pl__threads *th = &s->threads;
    uint32_t from = th->current;
    PL__SIM_ASSERT(from != to && to < th->len);
    pl__thread_rec *me = th->t[from];
    me->saved_errno = errno;
    me->cur_ex = pl_thread_swap_executor(NULL); /* a fresh fiber starts with none */
    th->current = to;
    th->switches++;
    if (ends) {
        th->ended = from + 1;
    }
    event(s, to, PL__THREAD_EV_SWITCH, from);
    pl__thread_rec *next = th->t[to];
    PL__SIM_ASSERT(!held(s, next) && next->state != PL__TH_KILLED);
    pl__fiber_running(&next->fiber, next->name, to);
    pl__fiber_switch(&me->fiber, &next->fiber, ends);
    PL__SIM_ASSERT(!ends);
    /* Back on this thread: whoever switched here set current. */
    PL__SIM_ASSERT(th->current == from);
    (void)pl_thread_swap_executor(me->cur_ex);
    errno = me->saved_errno;
}

/* Where a switched-to thread resumes inside switch_to, it learns who
 * came; switch_to's caller does not know. Kept in one place: */
static uint32_t came_from_of(pl__threads *th) { return th->came_from; }

static void fiber_main(void *arg)
{
    pl__fiber_started();
    pl__sim *s = pl__sim_current();
    pl__threads *th = &s->threads;
    after_switch(th, came_from_of(th));
    pl__thread_rec *me = arg;
    errno = 0;
    void *ret = me->fn(me->arg);
    pl__threads_exit(s, ret);
}

/* Progress by anyone: the spin oracle's counters restart and the yielded
 * threads may look again. */
static void unyield_all(pl__threads *th)
{
    th->progress++;
    for (uint32_t i = 0; i < th->len; i++) {
        th->t[i]->yielded = false;
    }
}

/* ---- Candidates ------------------------------------------------------------- */

/* The runnable threads other than `except`, yielded ones only when
 * `yielded`, in ready order (oldest first) into th->ids[1..n]. */
static uint32_t candidates(pl__sim *s, uint32_t except, bool yielded)
{
    pl__threads *th = &s->threads;
    uint32_t n = 0;
    for (uint32_t i = 0; i < th->len; i++) {
        pl__thread_rec *r = th->t[i];
        if (i == except || r->state != PL__TH_RUNNABLE || r->yielded != yielded || held(s, r)) {
            continue;
        }
        /* Insertion by ready_seq: a handful of threads. ids[0] is kept
         * for the running thread (a point's choice 0). */
        uint32_t j = ++n;
        while (j > 1 && th->t[th->ids[j - 1]]->ready_seq > r->ready_seq) {
            th->ids[j] = th->ids[j - 1];
            j--;
        }
        th->ids[j] = i;
    }
    return n;
}

/* A thread_switch decision among the threads choices[0..n): what a
 * strategy (PCT) reads through pl__threads_choices while it decides. */
static uint32_t choose(pl__sim *s, const uint32_t *choices, uint32_t n, uint32_t running)
{
    s->threads.choices = choices;
    s->threads.choices_len = n;
    uint32_t v = pl__sim_choose(s, PL_DECIDE_THREAD_SWITCH, n, running);
    s->threads.choices = NULL;
    return v;
}

const uint32_t *pl__threads_choices(const pl__sim *s, uint32_t n)
{
    return s->threads.choices_len == n ? s->threads.choices : NULL;
}

static const char *base_name(const char *file)
{
    return file != NULL ? pl__site_base(file) : "?";
}

/* The shrinker's explanation of a switch decision (when it asks). */
static void explain(pl__sim *s, const pl__thread_rec *me, uint32_t to, bool preempted)
{
    char *text = pl__sim_decision_text(s);
    if (text == NULL) {
        return;
    }
    const pl__thread_rec *t = s->threads.t[to];
    if (preempted) {
        snprintf(text, PL__DECISION_TEXT_MAX,
                 "thread '%s' preempted at %s:%d in %s; '%s' ran instead", me->name,
                 base_name(me->at.file), me->at.line, me->at.func != NULL ? me->at.func : "?",
                 t->name);
    } else {
        snprintf(text, PL__DECISION_TEXT_MAX, "'%s' ran next (not the longest runnable)",
                 t->name);
    }
}

/* ---- The clock ---------------------------------------------------------------- */

pl_time pl__threads_next_wake(const pl__sim *s)
{
    const pl__threads *th = &s->threads;
    pl_time next = PL_TIME_NEVER;
    for (uint32_t i = 0; i < th->len; i++) {
        const pl__thread_rec *r = th->t[i];
        if (r->state == PL__TH_BLOCKED && r->wake_at < next) {
            next = r->wake_at;
        }
    }
    return next;
}

static void unlink_waiter(pl__threads *th, pl__thread_rec *r)
{
    if (r->waits == PL__WAIT_SLEEP || r->waits == PL__WAIT_JOIN || r->obj == 0) {
        return;
    }
    pl__tobj *o = &th->objs[r->obj - 1];
    uint32_t prev = 0;
    for (uint32_t w = o->head; w != 0; prev = w, w = th->t[w - 1]->next_waiter) {
        if (w - 1 != r->id) {
            continue;
        }
        if (prev == 0) {
            o->head = r->next_waiter;
        } else {
            th->t[prev - 1]->next_waiter = r->next_waiter;
        }
        if (o->tail == w) {
            o->tail = prev;
        }
        r->next_waiter = 0;
        return;
    }
}

void pl__threads_clock_moved(pl__sim *s)
{
    pl__threads *th = &s->threads;
    th->progress++;
    for (uint32_t i = 0; i < th->len; i++) {
        pl__thread_rec *r = th->t[i];
        r->yielded = false;
        if (r->state == PL__TH_BLOCKED && r->wake_at <= s->now) {
            unlink_waiter(th, r);
            r->timed_out = r->waits != PL__WAIT_SLEEP;
            r->wake_at = PL_TIME_NEVER;
            r->ready_seq = ++th->seq;
            r->state = PL__TH_RUNNABLE;
            event(s, i, PL__THREAD_EV_READY, 1);
        }
    }
}

/* The earliest resume of a paused node one of whose threads waits to
 * run; PL_TIME_NEVER: none (a pause for the rest of the run is one). */
static pl_time next_resume(const pl__sim *s)
{
    const pl__threads *th = &s->threads;
    pl_time next = PL_TIME_NEVER;
    for (uint32_t i = 1; i < th->len; i++) {
        const pl__thread_rec *r = th->t[i];
        if (r->state == PL__TH_RUNNABLE && held(s, r) &&
            s->nemesis.paused_until[r->node] < next) {
            next = s->nemesis.paused_until[r->node];
        }
    }
    return next;
}

/* True when a thread waits for its node's resume (next_resume's set, a
 * pause for good included). */
static bool any_held(const pl__sim *s)
{
    const pl__threads *th = &s->threads;
    for (uint32_t i = 1; i < th->len; i++) {
        if (th->t[i]->state == PL__TH_RUNNABLE && held(s, th->t[i])) {
            return true;
        }
    }
    return false;
}

/* The executor's thread is blocked, or pl_run returned: only a thread
 * deadline, or the resume of a node whose threads wait to run, can move
 * time (no executor wait delivers that resume now: it is delivered
 * here). False when there is none (or it lies past the time limit). */
static bool advance_to_deadline(pl__sim *s)
{
    pl_time next = pl__threads_next_wake(s);
    pl_time resume = next_resume(s);
    next = resume < next ? resume : next;
    if (next == PL_TIME_NEVER || next > s->time_limit_ns) {
        return false;
    }
    if (next > s->now) {
        pl__trace_event(s->trace, s->step, next, PL__EV_CLOCK, 0, (uint64_t)next,
                        (uint64_t)s->now);
        s->now = next;
        s->steps_since_progress = 0;
    }
    for (uint32_t n = 1; resume != PL_TIME_NEVER && n < s->nodes.len; n++) {
        pl_time until = s->nemesis.paused_until[n];
        if (until != 0 && until <= s->now) {
            pl__node_pause_end(s, n, true);
        }
    }
    pl__threads_clock_moved(s);
    return true;
}

/* ---- Running the next thread ------------------------------------------------ */

/* The run stopped (a finding): a thread other than 0 leaves for good. */
static _Noreturn void leave_for_good(pl__sim *s)
{
    pl__threads *th = &s->threads;
    pl__thread_rec *me = th->t[th->current];
    PL__SIM_ASSERT(me->id != 0);
    if (me->state != PL__TH_DONE) {
        me->state = PL__TH_STOPPED;
        th->live--;
    }
    th->came_from = me->id;
    switch_to(s, 0, true);
    abort();
}

/* The running thread cannot go on (blocked, ended, or yielding): picks
 * the next one. Returns when the running thread was chosen again, or
 * when it may go on itself (yielding, or the run stopped). */
static void run_next(pl__sim *s, bool ends)
{
    pl__threads *th = &s->threads;
    pl__thread_rec *me = th->t[th->current];
    for (;;) {
        if (s->stopped) {
            if (me->id != 0) {
                leave_for_good(s);
            }
            return;
        }
        uint32_t n = candidates(s, me->id, false);
        uint32_t to;
        if (n > 0) {
            uint32_t v = n > 1 ? choose(s, th->ids + 1, n, me->id) : 0;
            to = th->ids[1 + v];
            if (v != 0) {
                explain(s, me, to, false);
            }
        } else if (th->t[0]->state == PL__TH_IDLE && me->id != 0) {
            to = 0; /* the executor's wait goes on */
        } else if (me->state == PL__TH_RUNNABLE &&
                   (!me->yielded || candidates(s, me->id, true) == 0)) {
            return; /* no one else to run, or only yielded threads behind a running one */
        } else if ((n = candidates(s, me->id, true)) > 0) {
            /* A yielding thread with only yielded threads beside it hands
             * over to them in turn: two threads each yielding until the
             * other stores would otherwise leave one spinning forever
             * while the other never runs (a livelock of the simulation,
             * not of the program). */
            for (uint32_t i = 0; i < n; i++) {
                th->t[th->ids[1 + i]]->yielded = false;
            }
            to = th->ids[1];
        } else if (advance_to_deadline(s)) {
            if (me->state == PL__TH_RUNNABLE) {
                return; /* its own deadline came first */
            }
            continue;
        } else {
            pl__threads_deadlock(s, me->id == 0 ? "while the executor's thread waits"
                                                 : "with no thread left to run");
            continue; /* stopped now */
        }
        th->came_from = me->id;
        switch_to(s, to, ends);
        after_switch(th, came_from_of(th));
        if (me->state == PL__TH_RUNNABLE || s->stopped) {
            if (s->stopped && me->id != 0) {
                leave_for_good(s);
            }
            return;
        }
    }
}

bool pl__threads_block(pl__sim *s)
{
    pl__threads *th = &s->threads;
    pl__thread_rec *me = th->t[th->current];
    PL__SIM_ASSERT(me->state == PL__TH_BLOCKED);
    event(s, me->id, PL__THREAD_EV_BLOCK, me->waits);
    run_next(s, false);
    if (!s->stopped) {
        PL__SIM_ASSERT(me->state == PL__TH_RUNNABLE);
        return true;
    }
    /* Stopped while blocked: thread 0 leaves the poll the way the
     * budget oracle does; outside pl_run the call returns. */
    if (me->state == PL__TH_BLOCKED) {
        unlink_waiter(th, me);
        me->state = PL__TH_RUNNABLE;
        me->wake_at = PL_TIME_NEVER;
    }
    if (s->escape != NULL) {
        longjmp(*s->escape, 1);
    }
    return false;
}

void pl__threads_ready(pl__sim *s, uint32_t id)
{
    pl__threads *th = &s->threads;
    pl__thread_rec *r = th->t[id];
    PL__SIM_ASSERT(r->state == PL__TH_BLOCKED);
    r->state = PL__TH_RUNNABLE;
    r->wake_at = PL_TIME_NEVER;
    r->timed_out = false;
    r->ready_seq = ++th->seq;
    unyield_all(th);
    event(s, id, PL__THREAD_EV_READY, 0);
}

uint32_t pl__threads_pick_waiter(pl__sim *s, uint32_t n)
{
    return n > 1 ? pl__sim_choose(s, PL_DECIDE_THREAD_SWITCH, n, s->threads.current) : 0;
}

/* ---- Points ----------------------------------------------------------------- */

void pl__threads_point(pl__sim *s, const pl_thread_site *site, unsigned what)
{
    pl__threads *th = &s->threads;
    if (!pl__threads_active(th)) {
        return;
    }
    pl__thread_rec *me = th->t[th->current];
    if (site != NULL && site->file != NULL) {
        me->at = *site;
    }
    if (s->stopped) {
        if (me->id != 0) {
            leave_for_good(s);
        }
        return;
    }
    if (what != PL_THREAD_POINT_READ) {
        unyield_all(th);
    }
    if (th->progress != me->progress_seen) {
        me->progress_seen = th->progress;
        me->spin = 0;
    } else if (++me->spin > PL__THREAD_SPIN_MAX) {
        pl__threads_livelock(s);
        if (me->id != 0) {
            leave_for_good(s);
        }
        return;
    }
    uint32_t n = candidates(s, me->id, false);
    if (n == 0) {
        return;
    }
    th->ids[0] = me->id;
    uint32_t v = choose(s, th->ids, n + 1, me->id);
    if (v == 0) {
        return;
    }
    uint32_t to = th->ids[v];
    explain(s, me, to, true);
    me->ready_seq = ++th->seq;
    th->came_from = me->id;
    switch_to(s, to, false);
    after_switch(th, came_from_of(th));
    if (s->stopped && me->id != 0) {
        leave_for_good(s);
    }
}

void pl__threads_yield(pl__sim *s, const pl_thread_site *site)
{
    pl__threads *th = &s->threads;
    if (!pl__threads_active(th)) {
        return;
    }
    pl__thread_rec *me = th->t[th->current];
    pl__threads_point(s, site, PL_THREAD_POINT_READ);
    /* Waiting for someone else: stand aside until there is progress. */
    me->yielded = true;
    me->ready_seq = ++th->seq;
    run_next(s, false);
    me->yielded = false;
}

/* ---- Thread 0 in the executor's wait ----------------------------------------- */

void pl__threads_idle(pl__sim *s)
{
    pl__threads *th = &s->threads;
    if (!pl__threads_active(th) || s->stopped) {
        return;
    }
    PL__SIM_ASSERT(th->current == 0);
    pl__thread_rec *me = th->t[0];
    /* A yielded thread looks once more at each wait of the executor:
     * what it waits for may have been stored right after its look. */
    for (uint32_t i = 1; i < th->len; i++) {
        th->t[i]->yielded = false;
    }
    me->state = PL__TH_IDLE;
    while (!s->stopped) {
        uint32_t n = candidates(s, 0, false);
        if (n == 0) {
            break;
        }
        uint32_t v = n > 1 ? choose(s, th->ids + 1, n, 0) : 0;
        th->came_from = 0;
        switch_to(s, th->ids[1 + v], false);
        after_switch(th, came_from_of(th));
    }
    me->state = PL__TH_RUNNABLE;
}

void pl__threads_finish_run(pl__sim *s)
{
    pl__threads *th = &s->threads;
    while (pl__threads_active(th) && !s->stopped) {
        pl__threads_idle(s);
        if (!pl__threads_active(th) || s->stopped) {
            return;
        }
        uint32_t yielded = candidates(s, 0, true);
        for (uint32_t i = 0; i < yielded; i++) {
            th->t[th->ids[1 + i]]->yielded = false;
        }
        if (yielded == 0 && !advance_to_deadline(s)) {
            if (any_held(s)) {
                return; /* a node paused past the end: its threads stay stopped */
            }
            pl__threads_deadlock(s, "after pl_run returned");
        }
    }
}

/* ---- Spawn and exit ------------------------------------------------------------- */

/* Thread 0's record: the OS thread's own stack, no fiber to make. */
int pl__threads_ensure_main(pl__sim *s)
{
    pl__threads *th = &s->threads;
    if (th->len > 0) {
        return 0;
    }
    th->t = calloc(8, sizeof *th->t);
    th->ids = calloc(8 + 1, sizeof *th->ids);
    pl__thread_rec *r = calloc(1, sizeof *r);
    if (th->t == NULL || th->ids == NULL || r == NULL) {
        free(th->t);
        free(th->ids);
        free(r);
        th->t = NULL;
        th->ids = NULL;
        return PL_ENOMEM;
    }
    th->cap = 8;
    snprintf(r->name, sizeof r->name, "main");
    r->state = PL__TH_RUNNABLE;
    r->wake_at = PL_TIME_NEVER;
    th->t[0] = r;
    th->len = 1;
    th->live = 1;
    return 0;
}

static int reserve(pl__threads *th)
{
    if (th->len < th->cap) {
        return 0;
    }
    uint32_t cap = th->cap * 2;
    pl__thread_rec **t = realloc(th->t, cap * sizeof *t);
    if (t == NULL) {
        return PL_ENOMEM;
    }
    th->t = t;
    uint32_t *ids = realloc(th->ids, (cap + 1) * sizeof *ids);
    if (ids == NULL) {
        return PL_ENOMEM;
    }
    th->ids = ids;
    th->cap = cap;
    return 0;
}

int pl__threads_spawn(pl__sim *s, const char *name, pl_thread_fn fn, void *arg,
                      const pl_thread_site *site, uint32_t *id)
{
    pl__threads *th = &s->threads;
    if (pl__threads_ensure_main(s) != 0 || reserve(th) != 0) {
        return PL_ENOMEM;
    }
    pl__thread_rec *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return PL_ENOMEM;
    }
    if (pl__fiber_create(&r->fiber, PL__THREAD_STACK_BYTES, fiber_main, r) != 0) {
        free(r);
        return PL_ENOMEM;
    }
    r->id = th->len;
    r->fn = fn;
    r->arg = arg;
    r->spawned = *site;
    r->at = *site;
    r->wake_at = PL_TIME_NEVER;
    r->state = PL__TH_RUNNABLE;
    r->ready_seq = ++th->seq;
    r->node = pl__node_current(s);
    snprintf(r->name, sizeof r->name, "%s", name != NULL ? name : "thread");
    th->t[th->len++] = r;
    th->live++;
    th->progress++;
    event(s, r->id, PL__THREAD_EV_SPAWN, th->current);
    *id = r->id;
    return 0;
}

_Noreturn void pl__threads_exit(pl__sim *s, void *ret)
{
    pl__threads *th = &s->threads;
    pl__thread_rec *me = th->t[th->current];
    PL__SIM_ASSERT(me->id != 0);
    me->ret = ret;
    me->state = PL__TH_DONE;
    th->live--;
    th->progress++;
    event(s, me->id, PL__THREAD_EV_EXIT, 0);
    if (me->joiner != 0) {
        pl__threads_ready(s, me->joiner - 1);
    }
    run_next(s, true);
    /* run_next with nothing left to run raised a deadlock and returned
     * with the run stopped: leave anyway. */
    leave_for_good(s);
}

/* ---- A node's crash ----------------------------------------------------------- */

static bool ended(const pl__thread_rec *r)
{
    return r->state == PL__TH_DONE || r->state == PL__TH_STOPPED || r->state == PL__TH_KILLED;
}

void pl__threads_node_crashed(pl__sim *s, uint32_t n)
{
    pl__threads *th = &s->threads;
    bool killed = false;
    for (uint32_t i = 1; i < th->len; i++) {
        pl__thread_rec *r = th->t[i];
        if (r->node != n || ended(r)) {
            continue;
        }
        PL__SIM_ASSERT(i != th->current); /* a crash comes from outside the node */
        if (r->state == PL__TH_BLOCKED && r->waits == PL__WAIT_JOIN) {
            th->t[r->obj]->joiner = 0; /* its target's exit wakes no one */
        } else if (r->state == PL__TH_BLOCKED) {
            unlink_waiter(th, r); /* a release must not hand anything to it */
        }
        r->state = PL__TH_KILLED;
        r->wake_at = PL_TIME_NEVER;
        r->yielded = false;
        th->live--;
        /* Parked, never to be switched to: its stack goes now, as the
         * kernel's goes with a killed process (the simulator's own
         * records stay until the run ends). */
        pl__fiber_destroy(&r->fiber);
        event(s, i, PL__THREAD_EV_EXIT, 1);
        killed = true;
    }
    if (!killed) {
        return;
    }
    th->progress++;
    /* Joins of a killed thread by the living end now (op_join reads
     * PL_ECANCELED); the node's own joiners died with it. */
    for (uint32_t i = 0; i < th->len; i++) {
        pl__thread_rec *r = th->t[i];
        if (r->state == PL__TH_BLOCKED && r->waits == PL__WAIT_JOIN &&
            th->t[r->obj]->state == PL__TH_KILLED) {
            th->t[r->obj]->joiner = 0;
            pl__threads_ready(s, i);
        }
    }
}

/* ---- Objects ------------------------------------------------------------------ */

static _Atomic uint64_t runs_so_far;

uint64_t pl__threads_run(pl__sim *s)
{
    pl__threads *th = &s->threads;
    if (th->run == 0) {
        /* Unique per run in this process, whichever OS thread runs it. */
        th->run = atomic_fetch_add(&runs_so_far, 1) + 1;
    }
    return th->run;
}

uint32_t pl__threads_obj(pl__sim *s, uint64_t *run, uint32_t *id, uint8_t kind, uint32_t value)
{
    pl__threads *th = &s->threads;
    (void)pl__threads_run(s);
    if (*run == th->run && *id != 0 && *id <= th->objs_len) {
        PL__SIM_ASSERT(th->objs[*id - 1].kind == kind);
        return *id;
    }
    if (th->objs_len == th->objs_cap) {
        uint32_t cap = th->objs_cap != 0 ? th->objs_cap * 2 : 8;
        pl__tobj *o = realloc(th->objs, cap * sizeof *o);
        if (o == NULL) {
            return 0;
        }
        th->objs = o;
        th->objs_cap = cap;
    }
    th->objs[th->objs_len++] = (pl__tobj){.kind = kind, .value = value};
    *run = th->run;
    *id = th->objs_len;
    return *id;
}

void pl__threads_enqueue(pl__sim *s, uint32_t obj, pl__thread_rec *r)
{
    pl__threads *th = &s->threads;
    pl__tobj *o = &th->objs[obj - 1];
    r->obj = obj;
    r->next_waiter = 0;
    if (o->tail != 0) {
        th->t[o->tail - 1]->next_waiter = r->id + 1;
    } else {
        o->head = r->id + 1;
    }
    o->tail = r->id + 1;
}

uint32_t pl__threads_waiters(const pl__sim *s, uint32_t obj)
{
    const pl__threads *th = &s->threads;
    uint32_t n = 0;
    for (uint32_t w = th->objs[obj - 1].head; w != 0; w = th->t[w - 1]->next_waiter) {
        n++;
    }
    return n;
}

/* Takes the k-th waiter (0: the head) off obj's queue; its id. */
uint32_t pl__threads_dequeue(pl__sim *s, uint32_t obj, uint32_t k)
{
    pl__threads *th = &s->threads;
    uint32_t w = th->objs[obj - 1].head;
    for (uint32_t i = 0; i < k && w != 0; i++) {
        w = th->t[w - 1]->next_waiter;
    }
    PL__SIM_ASSERT(w != 0);
    pl__thread_rec *r = th->t[w - 1];
    unlink_waiter(th, r);
    return r->id;
}

/* ---- Life cycle ------------------------------------------------------------- */

void pl__threads_free(pl__sim *s)
{
    pl__threads *th = &s->threads;
    pl_thread_ops_install(NULL, NULL);
    for (uint32_t i = 0; i < th->len; i++) {
        pl__thread_rec *r = th->t[i];
        /* The running fiber is thread 0 here: every other is parked. */
        PL__SIM_ASSERT(i != th->current || i == 0);
        pl__fiber_destroy(&r->fiber);
        free(r->handle);
        free(r);
    }
    free(th->t);
    free(th->ids);
    free(th->objs);
    struct pl__tpc *executors = th->executors;
    memset(th, 0, sizeof *th);
    th->executors = executors;
}
