/* tests/sim/test_budget.c: the oracles inside one poll, and orphans at
 * the drop (sim/src/check_budget.c).
 *
 * Tiny scenarios of this file: polls that spin (on a child, on their own
 * waker) caught by the bounds of pl_sim_options and left by the escape;
 * a wide but finite poll the defaults let through; orphans made outside
 * any poll; and drops that must not count as orphans (a cancelled task's
 * own drop, a select's losing branch, teardown after the run). Last, what
 * the CLI's CPU-time budget reads of a run (isolate/cpu_budget.h), kept
 * only while one is armed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "isolate/cpu_budget.h"
#include "isolate/progress.h"
#include "leakcheck.h"
#include "pollen/pollen.h"
#include "pollen/sim.h"
#include "run_record.h"
#include "sim_internal.h"

/* ---- A child that never completes --------------------------------------- */

typedef struct never {
    pl_future base;
    pl_waker *slot; /* where it keeps the latest waker */
} never;

static pl_poll_result never_poll(pl_future *f, pl_context *cx)
{
    pl_waker_slot_set(((never *)f)->slot, &cx->waker);
    return PL_PENDING;
}

static void never_drop(pl_future *f) { pl_waker_slot_clear(((never *)f)->slot); }

static const pl_future_vtable never_vt = {"never", never_poll, never_drop};

typedef struct spin_state {
    pl_waker slot;
    int width;      /* wide_poll: children polled once each */
    bool cancelled; /* the sleeper saw its cancellation */
} spin_state;

/* ---- Spins: on a child, on its own waker ------------------------------- */

typedef struct child_spinner {
    pl_future base;
    never child;
} child_spinner;

static pl_poll_result child_spinner_poll(pl_future *f, pl_context *cx)
{
    child_spinner *self = (child_spinner *)f;
    while (pl_poll(&self->child.base, cx) == PL_PENDING) {
    }
    return PL_READY;
}

static void child_spinner_drop(pl_future *f) { pl_drop_child(&((child_spinner *)f)->child.base); }

static const pl_future_vtable child_spinner_vt = {"child_spinner", child_spinner_poll,
                                                  child_spinner_drop};

/* Spins while its child has a slot, which is always. */
static pl_poll_result self_spinner_poll(pl_future *f, pl_context *cx)
{
    while (((child_spinner *)f)->child.slot != NULL) {
        pl_waker_wake_by_ref(&cx->waker);
    }
    return PL_PENDING;
}

static const pl_future_vtable self_spinner_vt = {"self_spinner", self_spinner_poll, NULL};

/* A task that is parked when the spin is caught: teardown cancels it. */
typedef struct sleeper {
    pl_future base;
    spin_state *st;
    pl_sleep nap;
} sleeper;

static pl_poll_result sleeper_poll(pl_future *f, pl_context *cx)
{
    sleeper *self = (sleeper *)f;
    PL_ASYNC_BEGIN(self);
    self->nap = pl_sleep_for(5 * PL_MS);
    PL_AWAIT(cx, &self->nap);
    PL_ASYNC_END;
}

static void sleeper_drop(pl_future *f)
{
    sleeper *self = (sleeper *)f;
    self->st->cancelled = !pl_future_is_done(&self->nap.base);
    pl_drop_child(&self->nap.base);
}

static const pl_future_vtable sleeper_vt = {"sleeper", sleeper_poll, sleeper_drop};

static int spin_setup(pl_executor *ex, spin_state *st, const pl_future_vtable *vt)
{
    sleeper s = {.base = PL_FUTURE_INIT(&sleeper_vt), .st = st};
    int rc = PL_SPAWN(ex, s, "sleeper", NULL);
    if (rc != 0) {
        return rc;
    }
    child_spinner c = {PL_FUTURE_INIT(vt), {PL_FUTURE_INIT(&never_vt), &st->slot}};
    return PL_SPAWN(ex, c, vt->name, NULL);
}

static int child_spin_setup(pl_executor *ex, void *state)
{
    return spin_setup(ex, state, &child_spinner_vt);
}

static int self_spin_setup(pl_executor *ex, void *state)
{
    return spin_setup(ex, state, &self_spinner_vt);
}

PL_SCENARIO(budget_child_spin, .name = "budget_child_spin", .summary = "spins on a child",
            .state_size = sizeof(spin_state), .setup = child_spin_setup, .expect = "livelock");
PL_SCENARIO(budget_self_spin, .name = "budget_self_spin", .summary = "spins on its waker",
            .state_size = sizeof(spin_state), .setup = self_spin_setup, .expect = "livelock");

/* ---- A wide poll: many children, each once ------------------------------ */

typedef struct yield_once {
    pl_future base;
    bool yielded;
} yield_once;

static pl_poll_result yield_once_poll(pl_future *f, pl_context *cx)
{
    yield_once *y = (yield_once *)f;
    if (y->yielded) {
        return PL_READY;
    }
    y->yielded = true;
    pl_waker_wake_by_ref(&cx->waker);
    return PL_PENDING;
}

static const pl_future_vtable yield_once_vt = {"yield_once", yield_once_poll, NULL};

enum { WIDE = 5000 };

typedef struct wide {
    pl_future base;
    spin_state *st;
    yield_once kids[WIDE];
} wide;

/* Polls every child once per poll, as join_all does: one poll makes
 * WIDE sub-polls and WIDE self-wakes, and the next one finishes. */
static pl_poll_result wide_poll(pl_future *f, pl_context *cx)
{
    wide *self = (wide *)f;
    bool all = true;
    for (int i = 0; i < WIDE; i++) {
        if (!pl_future_is_done(&self->kids[i].base)) {
            all = pl_poll(&self->kids[i].base, cx) == PL_READY && all;
        }
    }
    return all ? PL_READY : PL_PENDING;
}

static const pl_future_vtable wide_vt = {"wide", wide_poll, NULL};

static int wide_setup(pl_executor *ex, void *state)
{
    static wide w; /* large: built in static storage, copied by the spawn */
    memset(&w, 0, sizeof w);
    w.base = PL_FUTURE_INIT(&wide_vt);
    w.st = state;
    for (int i = 0; i < WIDE; i++) {
        w.kids[i].base = PL_FUTURE_INIT(&yield_once_vt);
    }
    return PL_SPAWN(ex, w, "wide", NULL);
}

PL_SCENARIO(budget_wide, .name = "budget_wide", .summary = "5000 children in one poll",
            .state_size = sizeof(spin_state), .setup = wide_setup);

/* ---- Orphans ------------------------------------------------------------ */

/* A remote waker dropped without a wake (a worker thread that gives up
 * on a job): its task is parked with no clone left. */
typedef struct remote_state {
    pl_remote_waker *rw;
    bool done;
} remote_state;

typedef struct remote_wait {
    pl_future base;
    remote_state *st;
} remote_wait;

static pl_poll_result remote_wait_poll(pl_future *f, pl_context *cx)
{
    remote_state *st = ((remote_wait *)f)->st;
    if (st->done) {
        return PL_READY;
    }
    if (st->rw == NULL && pl_remote_waker_create(cx, &st->rw) != 0) {
        return PL_READY;
    }
    return PL_PENDING;
}

static const pl_future_vtable remote_wait_vt = {"remote_wait", remote_wait_poll, NULL};

static pl_poll_result giver_up_poll(pl_future *f, pl_context *cx)
{
    (void)cx;
    remote_state *st = ((remote_wait *)f)->st;
    if (st->rw != NULL) {
        pl_remote_waker_drop(st->rw); /* gives up without waking */
        st->rw = NULL;
    }
    return PL_READY;
}

static const pl_future_vtable giver_up_vt = {"giver_up", giver_up_poll, NULL};

static int remote_setup(pl_executor *ex, void *state)
{
    remote_wait w = {PL_FUTURE_INIT(&remote_wait_vt), state};
    remote_wait g = {PL_FUTURE_INIT(&giver_up_vt), state};
    int rc = PL_SPAWN(ex, w, "remote_wait", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, g, "giver_up", NULL);
}

PL_SCENARIO(budget_remote_orphan, .name = "budget_remote_orphan",
            .summary = "a remote waker dropped unwoken", .state_size = sizeof(remote_state),
            .setup = remote_setup, .expect = "orphan");

/* Drops that are no orphan: a parked task aborted by another (its own
 * drop releases its clone), the losing branch of a select, and background
 * tasks cancelled at teardown, one holding the other's only clone. */
typedef struct quiet_state {
    pl_task *victim;
    pl_waker held; /* the waiter's waker, held by the holder */
    bool waiter_parked;
} quiet_state;

typedef struct aborter {
    pl_future base;
    quiet_state *st;
} aborter;

static pl_poll_result aborter_poll(pl_future *f, pl_context *cx)
{
    (void)cx;
    quiet_state *st = ((aborter *)f)->st;
    pl_task_cancel(st->victim);
    pl_task_release(st->victim);
    st->victim = NULL;
    return PL_READY;
}

static const pl_future_vtable aborter_vt = {"aborter", aborter_poll, NULL};

typedef struct racer {
    pl_future base;
    pl_sleep fast, slow;
    pl_future *kids[2];
    pl_select race;
} racer;

static pl_poll_result racer_poll(pl_future *f, pl_context *cx)
{
    racer *self = (racer *)f;
    PL_ASYNC_BEGIN(self);
    self->fast = pl_sleep_for(1 * PL_MS);
    self->slow = pl_sleep_for(5 * PL_MS);
    self->kids[0] = &self->fast.base;
    self->kids[1] = &self->slow.base;
    self->race = pl_select_make(self->kids, 2);
    PL_AWAIT(cx, &self->race);
    PL_ASYNC_END;
}

static void racer_drop(pl_future *f)
{
    racer *self = (racer *)f;
    if (!pl_future_is_done(&self->race.base)) {
        pl_drop_child(&self->race.base); /* drops the unfinished sleeps */
    }
    pl_drop_child(&self->fast.base);
    pl_drop_child(&self->slow.base);
}

static const pl_future_vtable racer_vt = {"racer", racer_poll, racer_drop};

/* Background: parks forever on a waker slot of the state. */
typedef struct waiter {
    pl_future base;
    quiet_state *st;
} waiter;

static pl_poll_result waiter_poll(pl_future *f, pl_context *cx)
{
    quiet_state *st = ((waiter *)f)->st;
    pl_waker_slot_set(&st->held, &cx->waker);
    st->waiter_parked = true;
    return PL_PENDING;
}

static void waiter_drop(pl_future *f) { (void)f; }

static const pl_future_vtable waiter_vt = {"waiter", waiter_poll, waiter_drop};

/* Background: its drop releases the waiter's only clone. */
typedef struct holder {
    pl_future base;
    quiet_state *st;
    pl_sleep nap;
} holder;

static pl_poll_result holder_poll(pl_future *f, pl_context *cx)
{
    holder *self = (holder *)f;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->nap = pl_sleep_for(1 * PL_MS);
        PL_AWAIT(cx, &self->nap);
    }
    PL_ASYNC_END;
}

static void holder_drop(pl_future *f)
{
    holder *self = (holder *)f;
    pl_drop_child(&self->nap.base);
    pl_waker_slot_clear(&self->st->held);
}

static const pl_future_vtable holder_vt = {"holder", holder_poll, holder_drop};

static int quiet_setup(pl_executor *ex, void *state)
{
    quiet_state *st = state;
    pl_task *t;
    holder h = {.base = PL_FUTURE_INIT(&holder_vt), .st = st};
    waiter w = {.base = PL_FUTURE_INIT(&waiter_vt), .st = st};
    sleeper victim = {.base = PL_FUTURE_INIT(&sleeper_vt)};
    static spin_state victim_state;
    victim.st = &victim_state;
    racer r = {.base = PL_FUTURE_INIT(&racer_vt)};
    aborter a = {PL_FUTURE_INIT(&aborter_vt), st};
    int rc = PL_SPAWN(ex, h, "holder", &t);
    if (rc == 0) {
        pl_task_set_background(t, true);
        pl_task_release(t);
        rc = PL_SPAWN(ex, w, "waiter", &t);
    }
    if (rc == 0) {
        pl_task_set_background(t, true);
        pl_task_release(t);
        rc = PL_SPAWN(ex, victim, "victim", &st->victim);
    }
    if (rc == 0) {
        rc = PL_SPAWN(ex, r, "racer", NULL);
    }
    return rc == 0 ? PL_SPAWN(ex, a, "aborter", NULL) : rc;
}

static int quiet_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    quiet_state *st = state;
    if (!st->waiter_parked || st->victim != NULL) {
        return pl_check_fail(msg, len, "waiter parked %d, victim aborted %d", st->waiter_parked,
                             st->victim == NULL);
    }
    return 0;
}

PL_SCENARIO(budget_quiet_drops, .name = "budget_quiet_drops", .summary = "drops that are no orphan",
            .state_size = sizeof(quiet_state), .setup = quiet_setup, .check = quiet_check);

/* A waiter that keeps the waker of its first poll only, and a notifier
 * that wakes it through that stale waker, consuming the last clone: a
 * stale_waker, not an orphan (the wake came, rotation withheld it). */
typedef struct stale_state {
    pl_waker slot;
} stale_state;

typedef struct first_only {
    pl_future base;
    stale_state *st;
    int polls;
} first_only;

static pl_poll_result first_only_poll(pl_future *f, pl_context *cx)
{
    first_only *self = (first_only *)f;
    if (self->polls++ == 0) {
        pl_waker_slot_set(&self->st->slot, &cx->waker);
        pl_waker_wake_by_ref(&cx->waker); /* polled again, with a new waker */
    }
    return PL_PENDING;
}

static const pl_future_vtable first_only_vt = {"first_only", first_only_poll, NULL};

typedef struct stale_notifier {
    pl_future base;
    stale_state *st;
    pl_sleep nap;
} stale_notifier;

static pl_poll_result stale_notifier_poll(pl_future *f, pl_context *cx)
{
    stale_notifier *self = (stale_notifier *)f;
    PL_ASYNC_BEGIN(self);
    self->nap = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->nap);
    pl_waker_slot_wake(&self->st->slot);
    PL_ASYNC_END;
}

static const pl_future_vtable stale_notifier_vt = {"stale_notifier", stale_notifier_poll, NULL};

static int stale_setup(pl_executor *ex, void *state)
{
    first_only w = {PL_FUTURE_INIT(&first_only_vt), state, 0};
    stale_notifier n = {.base = PL_FUTURE_INIT(&stale_notifier_vt), .st = state};
    int rc = PL_SPAWN(ex, w, "first_only", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, n, "stale_notifier", NULL);
}

PL_SCENARIO(budget_stale_last_clone, .name = "budget_stale_last_clone",
            .summary = "the last clone goes in a stale wake", .state_size = sizeof(stale_state),
            .setup = stale_setup, .expect = "stale_waker");

/* ---- Tests -------------------------------------------------------------- */

static pl_sim_result run_seed(const char *name, const pl_sim_options *base, uint64_t seed)
{
    const pl_scenario *sc = pl_scenario_find(name);
    cr_assert_not_null(sc, "%s is not linked in", name);
    pl_sim_options o;
    if (base != NULL) {
        o = *base;
    } else {
        pl_sim_options_default(&o);
    }
    o.seed = seed;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(sc, &o, &r), 0);
    return r;
}

TestSuite(budget, .timeout = 120);

LEAK_TEST(budget, a_poll_spinning_on_a_child_is_left_and_named)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.sub_polls_max = 1000;
    pl_sim_result r = run_seed("budget_child_spin", &o, 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_LIVELOCK, "%s", r.finding.message);
    cr_assert_str_eq(r.finding.task_name, "child_spinner");
    cr_assert_not_null(strstr(r.finding.message, "'child_spinner' (#2) called pl_poll 1000 "
                                                 "times inside one poll (poll #1, step "),
                       "%s", r.finding.message);
    pl_sim_result_free(&r);
}

LEAK_TEST(budget, a_poll_waking_itself_in_a_loop_is_left_and_named)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.wakes_in_poll_max = 1000;
    pl_sim_result r = run_seed("budget_self_spin", &o, 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_LIVELOCK, "%s", r.finding.message);
    cr_assert_not_null(strstr(r.finding.message, "'self_spinner' (#2) woke itself 1000 times "
                                                 "inside one poll"),
                       "%s", r.finding.message);
    pl_sim_result_free(&r);
}

/* The defaults catch both (a million each), and the finding is the same
 * on every run: it counts events, not time. */
LEAK_TEST(budget, default_bounds_are_deterministic)
{
    pl_sim_result a = run_seed("budget_self_spin", NULL, 3);
    pl_sim_result b = run_seed("budget_self_spin", NULL, 3);
    cr_assert_eq(a.finding.kind, PL_FINDING_LIVELOCK);
    cr_assert_not_null(strstr(a.finding.message, "woke itself 1000000 times"), "%s",
                       a.finding.message);
    cr_assert_eq(a.hash, b.hash);
    cr_assert_str_eq(a.finding.message, b.finding.message);
    pl_sim_result_free(&a);
    pl_sim_result_free(&b);
    a = run_seed("budget_child_spin", NULL, 3);
    cr_assert_eq(a.finding.kind, PL_FINDING_LIVELOCK);
    cr_assert_not_null(strstr(a.finding.message, "called pl_poll 1000000 times"), "%s",
                       a.finding.message);
    pl_sim_result_free(&a);
}

LEAK_TEST(budget, a_wide_finite_poll_passes_the_defaults)
{
    pl_campaign_result cr;
    const pl_scenario *sc = pl_scenario_find("budget_wide");
    cr_assert_eq(
        pl_sim_campaign(
            sc, &(pl_campaign_options){.seed_lo = 0, .seed_hi = 19, .stop_at_first = true}, &cr),
        0);
    cr_assert_eq(cr.findings, 0, "%s", cr.first.message);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.sub_polls_max = WIDE / 2;
    pl_sim_result r = run_seed("budget_wide", &o, 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_LIVELOCK, "the knob bites: %s", r.finding.message);
    pl_sim_result_free(&r);
}

/* The shrinker reruns an escaped run many times in-process. */
LEAK_TEST(budget, a_spin_shrinks_in_process)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.sub_polls_max = 1000;
    pl_sim_result r = run_seed("budget_child_spin", &o, 7);
    cr_assert_eq(r.finding.kind, PL_FINDING_LIVELOCK);
    const pl__run_record *rec = pl__sim_result_record(&r);
    pl_sim_shrink_result sr;
    cr_assert_eq(pl_sim_shrink(pl_scenario_find("budget_child_spin"), &o, rec->decisions,
                               rec->decisions_len, PL_FINDING_LIVELOCK, NULL, &sr),
                 0, "%s", sr.message);
    cr_assert_eq(sr.run.finding.kind, PL_FINDING_LIVELOCK);
    cr_assert_eq(sr.nonzero_after, 0, "the production schedule spins too");
    pl_sim_shrink_result_free(&sr);
    pl_sim_result_free(&r);
}

LEAK_TEST(budget, a_remote_waker_dropped_unwoken_is_an_orphan_outside_any_poll)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.source = PL_SIM_SOURCE_LIST; /* no decisions: production's order */
    pl_sim_result r = run_seed("budget_remote_orphan", &o, 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_ORPHAN, "%s", r.finding.message);
    cr_assert_str_eq(r.finding.task_name, "remote_wait");
    cr_assert_not_null(strstr(r.finding.message, "waker was dropped outside any poll, without "
                                                 "a wake"),
                       "%s", r.finding.message);
    pl_sim_result_free(&r);
}

LEAK_TEST(budget, aborts_select_losers_and_teardown_are_no_orphans)
{
    pl_campaign_result cr;
    const pl_scenario *sc = pl_scenario_find("budget_quiet_drops");
    cr_assert_eq(
        pl_sim_campaign(
            sc, &(pl_campaign_options){.seed_lo = 0, .seed_hi = 1999, .stop_at_first = true}, &cr),
        0);
    cr_assert_eq(cr.findings, 0, "seed %llu: %s: %s", (unsigned long long)cr.first_seed,
                 pl_finding_name(cr.first.kind), cr.first.message);
}

LEAK_TEST(budget, a_stale_wake_consuming_the_last_clone_is_a_stale_waker)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.source = PL_SIM_SOURCE_LIST; /* production's order, under rotation */
    pl_sim_result r = run_seed("budget_stale_last_clone", &o, 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_STALE_WAKER, "%s: %s", pl_finding_name(r.finding.kind),
                 r.finding.message);
    pl_sim_result_free(&r);
}

/* What the CPU-time budget's handler reads (pl__progress) is written
 * only once a budget is armed in the process: a program whose threads
 * each run a simulation never writes it. */
LEAK_TEST(budget, progress_is_kept_only_under_an_armed_budget)
{
    pl_sim_result r = run_seed("budget_wide", NULL, 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    pl_sim_result_free(&r);
    cr_assert_eq(pl__progress.run, 0, "written without a budget");
    cr_assert_eq(pl__progress.step, 0, "written without a budget");
    pl__hang *h = pl__hang_map();
    cr_assert_not_null(h);
    pl__cpu_budget_arm(h);
    r = run_seed("budget_wide", NULL, 0);
    pl_sim_result_free(&r);
    r = run_seed("budget_wide", NULL, 1);
    pl_sim_result_free(&r);
    cr_assert_eq(pl__progress.run, 2, "two runs under the budget");
    cr_assert_null(pl__progress.task, "no poll in progress after a run");
    cr_assert(!h->hung);
    /* The budget stays armed until the test's process ends; its handler
     * stops only a poll in progress, and none is. */
}
