/* tests/sim/test_waits.c: the wait-condition oracle (sim/src/check_probe_wait.c).
 *
 * Each scenario here is small and defined in this file. The oracle must:
 *  - report a parked task whose declared condition holds, here through
 *    pollen's own semaphore inside a hand-written combinator that loses
 *    the semaphore's wake and that a probe poll does not see through;
 *  - stay silent where no condition holds, leaving the deadlock report:
 *    a waiter dropped in the poll that declared it (with a permit stored
 *    since), a waiter queued behind an unmet semaphore head, a waiter
 *    that registered after a notify_waiters.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <pollen/sim.h>

#include "leakcheck.h"

/* ---- pick2: polls only the children whose waker fired ------------------
 * A select of two children that re-polls a child only after that child's
 * own waker fired (as a futures-unordered set does), through a per-child
 * waker forwarding to the task. BUG (forward_by_value false): its wake
 * by value forgets to forward; pl_semaphore's grant wakes by value. */

typedef struct pick2 pick2;

typedef struct pick_slot {
    pick2 *owner;
    int i;
} pick_slot;

struct pick2 {
    pl_future base;
    pl_future *children[2];
    bool woken[2];
    bool forward_by_value;
    pl_waker task; /* the latest poll's waker, woken for the children */
    pick_slot slots[2];
    int index; /* output: the child that finished */
};

static void slot_wake_by_ref(const pl_waker *w)
{
    pick_slot *s = w->data;
    s->owner->woken[s->i] = true;
    pl_waker_wake_by_ref(&s->owner->task);
}

static void slot_wake(pl_waker w)
{
    pick_slot *s = w.data;
    if (s->owner->forward_by_value) {
        slot_wake_by_ref(&w);
    }
}

/* The slots live in the pick2: nothing to count or release. */
static void slot_clone(const pl_waker *w, pl_waker *out) { *out = *w; }

static void slot_drop(pl_waker w) { (void)w; }

static const pl_waker_vtable slot_vtable = {slot_clone, slot_wake, slot_wake_by_ref, slot_drop};

static pl_poll_result pick2_poll(pl_future *f, pl_context *cx)
{
    pick2 *self = (pick2 *)f;
    pl_waker_slot_set(&self->task, &cx->waker);
    for (int i = 0; i < 2; i++) {
        if (!self->woken[i]) {
            continue;
        }
        self->woken[i] = false;
        self->slots[i] = (pick_slot){self, i};
        pl_context sub = *cx;
        sub.waker = (pl_waker){&slot_vtable, &self->slots[i], 0, 0};
        if (pl_poll(self->children[i], &sub) == PL_READY) {
            self->index = i;
            pl_drop_child(self->children[1 - i]);
            pl_waker_slot_clear(&self->task);
            return PL_READY;
        }
    }
    return PL_PENDING;
}

static void pick2_drop(pl_future *f)
{
    pick2 *self = (pick2 *)f;
    pl_drop_child(self->children[0]);
    pl_drop_child(self->children[1]);
    pl_waker_slot_clear(&self->task);
}

static const pl_future_vtable pick2_vtable = {"pick2", pick2_poll, pick2_drop};

/* ---- Scenario: a permit granted into a lost wake ----------------------- */

typedef struct grant_state {
    pl_semaphore sem;
    pl_notify never; /* nobody notifies it: the other branch */
    bool forward_by_value;
    bool acquired;
} grant_state;

typedef struct picker {
    pl_future base;
    grant_state *st;
    pl_semaphore_acquire acq;
    pl_notified idle;
    pick2 pick;
} picker;

static pl_poll_result picker_poll(pl_future *f, pl_context *cx)
{
    picker *self = (picker *)f;
    PL_ASYNC_BEGIN(self);
    self->acq = pl_semaphore_acquire_make(&self->st->sem, 1);
    self->idle = pl_notified_make(&self->st->never);
    self->pick = (pick2){.base = PL_FUTURE_INIT(&pick2_vtable),
                         .children = {&self->acq.base, &self->idle.base},
                         .woken = {true, true},
                         .forward_by_value = self->st->forward_by_value,
                         .task = PL_WAKER_EMPTY};
    PL_AWAIT(cx, &self->pick);
    self->st->acquired = self->pick.index == 0;
    pl_semaphore_release(&self->st->sem, 1);
    PL_ASYNC_END;
}

static void picker_drop(pl_future *f) { pl_drop_child(&((picker *)f)->pick.base); }

static const pl_future_vtable picker_vtable = {"picker", picker_poll, picker_drop};

typedef struct releaser {
    pl_future base;
    grant_state *st;
    pl_sleep gap;
} releaser;

static pl_poll_result releaser_poll(pl_future *f, pl_context *cx)
{
    releaser *self = (releaser *)f;
    PL_ASYNC_BEGIN(self);
    self->gap = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->gap);
    pl_semaphore_release(&self->st->sem, 1);
    PL_ASYNC_END;
}

static void releaser_drop(pl_future *f) { pl_drop_child(&((releaser *)f)->gap.base); }

static const pl_future_vtable releaser_vtable = {"releaser", releaser_poll, releaser_drop};

static int grant_setup(pl_executor *ex, grant_state *st, bool forward_by_value)
{
    pl_semaphore_init(&st->sem, 0);
    pl_notify_init(&st->never);
    st->forward_by_value = forward_by_value;
    picker p = {.base = PL_FUTURE_INIT(&picker_vtable), .st = st};
    releaser r = {.base = PL_FUTURE_INIT(&releaser_vtable), .st = st};
    int rc = PL_SPAWN(ex, p, "picker", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, r, "releaser", NULL);
}

static int grant_lost_setup(pl_executor *ex, void *state) { return grant_setup(ex, state, false); }

static int grant_kept_setup(pl_executor *ex, void *state) { return grant_setup(ex, state, true); }

static int grant_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    grant_state *st = state;
    if (!st->acquired || pl_semaphore_available(&st->sem) != 1) {
        return pl_check_fail(msg, len, "acquired: %d, %zu permit(s) free, want 1 and 1",
                             st->acquired, pl_semaphore_available(&st->sem));
    }
    return 0;
}

PL_SCENARIO(waits_grant_lost_sc, .name = "waits_grant_lost",
            .summary = "a combinator loses the semaphore's wake by value",
            .state_size = sizeof(grant_state), .setup = grant_lost_setup, .check = grant_check,
            .expect = "lost_wakeup");

PL_SCENARIO(waits_grant_kept_sc, .name = "waits_grant_kept",
            .summary = "the same combinator forwarding every wake",
            .state_size = sizeof(grant_state), .setup = grant_kept_setup, .check = grant_check);

/* ---- Scenario: a waiter dropped in the poll that declared it ------------ */

typedef struct switch_state {
    pl_notify first;
    pl_notify second; /* nobody notifies it */
} switch_state;

typedef struct switcher {
    pl_future base;
    switch_state *st;
    pl_notified a;
    pl_notified b;
} switcher;

/* Waits on `first` for one poll only, then on `second`: the first waiter
 * declared its wait and was dropped in the same poll. */
static pl_poll_result switcher_poll(pl_future *f, pl_context *cx)
{
    switcher *self = (switcher *)f;
    PL_ASYNC_BEGIN(self);
    self->a = pl_notified_make(&self->st->first);
    if (pl_poll(&self->a.base, cx) == PL_PENDING) {
        pl_drop(&self->a.base);
    }
    self->b = pl_notified_make(&self->st->second);
    PL_AWAIT(cx, &self->b);
    PL_ASYNC_END;
}

static void switcher_drop(pl_future *f)
{
    switcher *self = (switcher *)f;
    pl_drop_child(&self->a.base);
    pl_drop_child(&self->b.base);
}

static const pl_future_vtable switcher_vtable = {"switcher", switcher_poll, switcher_drop};

/* Stores a permit in `first` once the switcher has let go of it. */
typedef struct late_notifier {
    pl_future base;
    switch_state *st;
} late_notifier;

static pl_poll_result late_notifier_poll(pl_future *f, pl_context *cx)
{
    late_notifier *self = (late_notifier *)f;
    PL_ASYNC_BEGIN(self);
    PL_YIELD(cx);
    pl_notify_one(&self->st->first);
    PL_ASYNC_END;
}

static const pl_future_vtable late_notifier_vtable = {"late_notifier", late_notifier_poll, NULL};

static int switch_setup(pl_executor *ex, void *state)
{
    switch_state *st = state;
    pl_notify_init(&st->first);
    pl_notify_init(&st->second);
    switcher s = {.base = PL_FUTURE_INIT(&switcher_vtable), .st = st};
    late_notifier n = {.base = PL_FUTURE_INIT(&late_notifier_vtable), .st = st};
    int rc = PL_SPAWN(ex, s, "switcher", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, n, "late_notifier", NULL);
}

PL_SCENARIO(waits_dropped_waiter_sc, .name = "waits_dropped_waiter",
            .summary = "a waiter dropped in its declaring poll, a permit stored later",
            .state_size = sizeof(switch_state), .setup = switch_setup, .expect = "deadlock");

/* ---- Scenario: a small acquire behind an unmet head --------------------- */

typedef struct fifo_state {
    pl_semaphore sem; /* one permit, never released */
} fifo_state;

typedef struct acquirer {
    pl_future base;
    fifo_state *st;
    size_t n;
    pl_semaphore_acquire acq;
} acquirer;

static pl_poll_result acquirer_poll(pl_future *f, pl_context *cx)
{
    acquirer *self = (acquirer *)f;
    PL_ASYNC_BEGIN(self);
    self->acq = pl_semaphore_acquire_make(&self->st->sem, self->n);
    PL_AWAIT(cx, &self->acq);
    PL_ASYNC_END;
}

static void acquirer_drop(pl_future *f) { pl_drop_child(&((acquirer *)f)->acq.base); }

static const pl_future_vtable acquirer_vtable = {"acquirer", acquirer_poll, acquirer_drop};

static int fifo_setup(pl_executor *ex, void *state)
{
    fifo_state *st = state;
    pl_semaphore_init(&st->sem, 1);
    acquirer big = {.base = PL_FUTURE_INIT(&acquirer_vtable), .st = st, .n = 2};
    acquirer small = {.base = PL_FUTURE_INIT(&acquirer_vtable), .st = st, .n = 1};
    int rc = PL_SPAWN(ex, big, "big", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, small, "small", NULL);
}

PL_SCENARIO(waits_behind_head_sc, .name = "waits_behind_head",
            .summary = "acquire(1) queued behind acquire(2) with one permit free",
            .state_size = sizeof(fifo_state), .setup = fifo_setup, .expect = "deadlock");

/* ---- Scenario: a waiter that registers after a broadcast --------------- */

typedef struct cast_state {
    pl_notify n;
    bool cast;
} cast_state;

typedef struct listener {
    pl_future base;
    cast_state *st;
    pl_notified wait;
} listener;

static pl_poll_result listener_poll(pl_future *f, pl_context *cx)
{
    listener *self = (listener *)f;
    PL_ASYNC_BEGIN(self);
    while (!self->st->cast) {
        PL_YIELD(cx);
    }
    self->wait = pl_notified_make(&self->st->n);
    PL_AWAIT(cx, &self->wait);
    PL_ASYNC_END;
}

static void listener_drop(pl_future *f) { pl_drop_child(&((listener *)f)->wait.base); }

static const pl_future_vtable listener_vtable = {"listener", listener_poll, listener_drop};

typedef struct caster {
    pl_future base;
    cast_state *st;
} caster;

static pl_poll_result caster_poll(pl_future *f, pl_context *cx)
{
    caster *self = (caster *)f;
    (void)cx;
    pl_notify_waiters(&self->st->n);
    self->st->cast = true;
    return PL_READY;
}

static const pl_future_vtable caster_vtable = {"caster", caster_poll, NULL};

static int cast_setup(pl_executor *ex, void *state)
{
    cast_state *st = state;
    pl_notify_init(&st->n);
    listener l = {.base = PL_FUTURE_INIT(&listener_vtable), .st = st};
    caster c = {.base = PL_FUTURE_INIT(&caster_vtable), .st = st};
    int rc = PL_SPAWN(ex, l, "listener", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, c, "caster", NULL);
}

PL_SCENARIO(waits_after_broadcast_sc, .name = "waits_after_broadcast",
            .summary = "a waiter registered after notify_waiters is owed nothing",
            .state_size = sizeof(cast_state), .setup = cast_setup, .expect = "deadlock");

/* ---- Scenario: two declarations, sites alike ----------------------------
 * The simulator keeps a task's first and second declarations in tables of
 * their own. The task declares two waits per poll from sites alike (the
 * same file, two at line 5 that differ in their object only, one at line
 * 21), and the one that holds is its latest poll's first: the report must
 * name that site, not the earlier poll's nor the second declaration. */

typedef struct two_state {
    bool open; /* set by the opener, who wakes nobody */
    uint32_t polls;
} two_state;

static bool never_holds(const void *subject, char *why, size_t why_len)
{
    (void)subject;
    (void)why;
    (void)why_len;
    return false;
}

static bool open_holds(const void *subject, char *why, size_t why_len)
{
    (void)why;
    (void)why_len;
    return ((const two_state *)subject)->open;
}

static const pl_wait first_gate = {"first gate", "never", NULL, never_holds, "gates.c", 5};
static const pl_wait first_gate_again = {"first gate again", "open",    NULL,
                                         open_holds,         "gates.c", 5};
static const pl_wait second_gate = {"second gate", "never", NULL, never_holds, "gates.c", 21};

typedef struct two_sites {
    pl_future base;
    two_state *st;
    pl_waker waker; /* held, never woken: the task parks for good */
} two_sites;

static void declare(pl_context *cx, const pl_wait *site, two_state *st)
{
    pl_wait w = *site;
    w.subject = st;
    pl_wait_declare(cx, &w);
}

/* Poll 1 declares the first and second gates and yields; later polls
 * declare the first gate again (same line, another object) and the
 * second, and park. */
static pl_poll_result two_sites_poll(pl_future *f, pl_context *cx)
{
    two_sites *self = (two_sites *)f;
    pl_waker_slot_set(&self->waker, &cx->waker);
    if (self->st->polls++ == 0) {
        declare(cx, &first_gate, self->st);
        declare(cx, &second_gate, self->st);
        pl_waker_wake_by_ref(&cx->waker);
        return PL_PENDING;
    }
    declare(cx, &first_gate_again, self->st);
    declare(cx, &second_gate, self->st);
    return PL_PENDING;
}

static void two_sites_drop(pl_future *f) { pl_waker_slot_clear(&((two_sites *)f)->waker); }

static const pl_future_vtable two_sites_vtable = {"two_sites", two_sites_poll, two_sites_drop};

typedef struct opener {
    pl_future base;
    two_state *st;
} opener;

static pl_poll_result opener_poll(pl_future *f, pl_context *cx)
{
    opener *self = (opener *)f;
    PL_ASYNC_BEGIN(self);
    PL_YIELD(cx);
    PL_YIELD(cx);
    self->st->open = true;
    PL_ASYNC_END;
}

static const pl_future_vtable opener_vtable = {"opener", opener_poll, NULL};

static int two_sites_setup(pl_executor *ex, void *state)
{
    two_state *st = state;
    two_sites t = {.base = PL_FUTURE_INIT(&two_sites_vtable), .st = st, .waker = PL_WAKER_EMPTY};
    opener o = {.base = PL_FUTURE_INIT(&opener_vtable), .st = st};
    int rc = PL_SPAWN(ex, t, "two_sites", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, o, "opener", NULL);
}

PL_SCENARIO(waits_two_sites_sc, .name = "waits_two_sites",
            .summary = "a wait declared at a site sharing a line and a cache slot with others",
            .state_size = sizeof(two_state), .setup = two_sites_setup, .expect = "lost_wakeup");

/* ---- Tests -------------------------------------------------------------- */

static const pl_scenario *scenario(const char *name)
{
    const pl_scenario *sc = pl_scenario_find(name);
    cr_assert_not_null(sc, "scenario %s is not linked into the test", name);
    return sc;
}

/* Production's order (every decision 0): no spurious poll re-polls the
 * picker, whose pick2 would then poll (and declare) nothing. */
LEAK_TEST(waits, a_granted_permit_lost_in_a_combinator_is_named)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.strategy = "bounded:0";
    pl_campaign_result cr;
    cr_assert_eq(pl_sim_campaign(scenario("waits_grant_lost"),
                                 &(pl_campaign_options){
                                     .seed_lo = 0, .seed_hi = 0, .sim = &o, .stop_at_first = true},
                                 &cr),
                 0);
    cr_assert_eq(cr.first.kind, PL_FINDING_LOST_WAKEUP, "%s: %s", pl_finding_name(cr.first.kind),
                 cr.first.message);
    cr_assert_not_null(strstr(cr.first.message, "'picker' (#1) parked on semaphore (semaphore.c:"),
                       "%s", cr.first.message);
    cr_assert_not_null(strstr(cr.first.message, "while its 1 permit(s) were granted to it"), "%s",
                       cr.first.message);
    cr_assert_not_null(strstr(cr.first.message, "waker clones alive: 1"), "%s", cr.first.message);
}

LEAK_TEST(waits, the_same_combinator_forwarding_its_wakes_is_clean)
{
    pl_campaign_result cr;
    cr_assert_eq(pl_sim_campaign(
                     scenario("waits_grant_kept"),
                     &(pl_campaign_options){.seed_lo = 0, .seed_hi = 1999, .stop_at_first = true},
                     &cr),
                 0);
    cr_assert_eq(cr.findings, 0, "seed %llu: %s: %s", (unsigned long long)cr.first_seed,
                 pl_finding_name(cr.first.kind), cr.first.message);
}

/* Every seed of `name` ends in a deadlock or cleanly, never in a
 * lost_wakeup; at least one deadlocks. */
static void expect_no_false_alarm(const char *name, uint64_t seeds)
{
    const pl_scenario *sc = scenario(name);
    uint64_t deadlocks = 0;
    for (uint64_t seed = 0; seed < seeds; seed++) {
        pl_sim_options o;
        pl_sim_options_default(&o);
        o.source = PL_SIM_SOURCE_SEED;
        o.seed = seed;
        pl_sim_result run;
        cr_assert_eq(pl_sim_run(sc, &o, &run), 0);
        pl_finding_kind kind = run.finding.kind;
        cr_assert(kind == PL_FINDING_NONE || kind == PL_FINDING_DEADLOCK, "%s seed %llu: %s: %s",
                  name, (unsigned long long)seed, pl_finding_name(kind), run.finding.message);
        deadlocks += kind == PL_FINDING_DEADLOCK;
        pl_sim_result_free(&run);
    }
    cr_assert_gt(deadlocks, 0, "%s never deadlocked", name);
}

LEAK_TEST(waits, a_waiter_dropped_in_its_declaring_poll_is_not_reported)
{
    expect_no_false_alarm("waits_dropped_waiter", 500);
}

LEAK_TEST(waits, an_acquire_behind_an_unmet_head_is_not_reported)
{
    expect_no_false_alarm("waits_behind_head", 500);
}

LEAK_TEST(waits, a_waiter_registered_after_a_broadcast_is_not_reported)
{
    expect_no_false_alarm("waits_after_broadcast", 500);
}

LEAK_TEST(waits, a_declaration_names_its_own_site_among_sites_alike)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.strategy = "bounded:0";
    pl_campaign_result cr;
    cr_assert_eq(pl_sim_campaign(scenario("waits_two_sites"),
                                 &(pl_campaign_options){
                                     .seed_lo = 0, .seed_hi = 0, .sim = &o, .stop_at_first = true},
                                 &cr),
                 0);
    cr_assert_eq(cr.first.kind, PL_FINDING_LOST_WAKEUP, "%s: %s", pl_finding_name(cr.first.kind),
                 cr.first.message);
    cr_assert_not_null(strstr(cr.first.message, "parked on first gate again (gates.c:5) while "
                                                "open holds"),
                       "%s", cr.first.message);
}
