/* tests/sim/test_probes.c: quiescence up to timers (sim/src/check_probe.c).
 *
 * Small scenarios, each with a timer that would rescue or hide a stuck
 * task, show every path of the probes firing on the buggy variant and
 * staying silent on the correct one:
 *  - a mailbox receiver that registers its waker after the item arrived,
 *    rescued by its idle timeout (the rescue probe names the timer) or by
 *    the sender's next item (a decision probe, and a follow-up run names
 *    the waking task);
 *  - the same receiver marked as polling on purpose (a poll interval);
 *  - a foreground task stuck while a background ticker runs;
 *  - the time limit naming the stuck task instead of "task: none";
 *  - pl_run returning once only background tasks are left.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <pollen/sim.h>

#include "leakcheck.h"

/* ---- A mailbox whose receiver can park without re-checking ----------- */

typedef struct mailbox {
    int items;
    pl_waker waiter;
} mailbox;

typedef enum variant {
    CORRECT = 0,  /* registers, then re-checks */
    LATE = 1,     /* registers without re-checking after its flush */
    POLLING = 2,  /* never registers: re-checks every 1 ms, on purpose */
} variant;

typedef struct box_state {
    mailbox box;
    variant v;
    bool second_item;   /* the sender sends again at 50 ms */
    bool idle_timeout;  /* the receiver gives up after 100 ms */
    int received;
    pl_time received_ns;
} box_state;

typedef struct receiver {
    pl_future base;
    box_state *st;
    pl_sleep flush;
    pl_sleep idle;
    pl_sleep tick;
    bool armed;
    bool looked;
} receiver;

/* Returns PENDING and resumes here on the next poll (one line: the
 * resume point is the line number). */
#define PARK()                                                              \
    do {                                                                    \
        pl__co->resume = __LINE__;                                          \
        return PL_PENDING;                                                  \
    case __LINE__:;                                                         \
    } while (0)

static bool take(box_state *st, pl_context *cx)
{
    if (st->box.items == 0) {
        return false;
    }
    st->box.items--;
    st->received++;
    st->received_ns = pl_now(cx->ex);
    return true;
}

static pl_poll_result receiver_poll(pl_future *f, pl_context *cx)
{
    receiver *self = (receiver *)f;
    box_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    self->flush = pl_sleep_for(1 * PL_MS); /* a flush before waiting */
    PL_AWAIT(cx, &self->flush);
    for (;;) {
        if (st->v == POLLING) {
            if (take(st, cx)) {
                break;
            }
            self->tick = pl_sleep_poll_interval(1 * PL_MS);
            PL_AWAIT(cx, &self->tick);
            continue;
        }
        if (!self->armed) {
            self->idle = pl_sleep_for(100 * PL_MS);
            self->armed = true;
        }
        pl_waker_slot_set(&st->box.waiter, &cx->waker);
        if (st->v == LATE && !self->looked) {
            /* The first wait after the flush parks without looking. */
        } else if (take(st, cx)) {
            break;
        }
        self->looked = true;
        if (st->idle_timeout && pl_poll(&self->idle.base, cx) == PL_READY) {
            break;
        }
        PARK();
    }
    pl_waker_slot_clear(&st->box.waiter);
    pl_drop_child(&self->idle.base);
    PL_ASYNC_END;
}

static void receiver_drop(pl_future *f)
{
    receiver *self = (receiver *)f;
    pl_waker_slot_clear(&self->st->box.waiter);
    pl_drop_child(&self->flush.base);
    pl_drop_child(&self->idle.base);
    pl_drop_child(&self->tick.base);
}

static const pl_future_vtable receiver_vt = {"receiver", receiver_poll, receiver_drop};

typedef struct sender {
    pl_future base;
    box_state *st;
    pl_sleep nap;
} sender;

static void send_item(box_state *st)
{
    st->box.items++;
    pl_waker_slot_wake(&st->box.waiter);
}

static pl_poll_result sender_poll(pl_future *f, pl_context *cx)
{
    sender *self = (sender *)f;
    PL_ASYNC_BEGIN(self);
    self->nap = pl_sleep_for(PL_MS / 2); /* lands inside the receiver's flush */
    PL_AWAIT(cx, &self->nap);
    send_item(self->st);
    if (self->st->second_item) {
        self->nap = pl_sleep_for(50 * PL_MS);
        PL_AWAIT(cx, &self->nap);
        send_item(self->st);
    }
    PL_ASYNC_END;
}

static void sender_drop(pl_future *f) { pl_drop_child(&((sender *)f)->nap.base); }

static const pl_future_vtable sender_vt = {"sender", sender_poll, sender_drop};

static int box_setup(pl_executor *ex, box_state *st, variant v, bool second, bool idle)
{
    st->v = v;
    st->second_item = second;
    st->idle_timeout = idle;
    receiver r = {.base = PL_FUTURE_INIT(&receiver_vt), .st = st};
    sender s = {.base = PL_FUTURE_INIT(&sender_vt), .st = st};
    int rc = PL_SPAWN(ex, r, "receiver", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, s, "sender", NULL);
}

static int late_idle(pl_executor *ex, void *st) { return box_setup(ex, st, LATE, false, true); }
static int correct_idle(pl_executor *ex, void *st)
{
    return box_setup(ex, st, CORRECT, false, true);
}
static int late_second(pl_executor *ex, void *st) { return box_setup(ex, st, LATE, true, false); }
static int correct_second(pl_executor *ex, void *st)
{
    return box_setup(ex, st, CORRECT, true, false);
}
static int polling(pl_executor *ex, void *st) { return box_setup(ex, st, POLLING, false, false); }

PL_SCENARIO(late_idle_sc, .name = "probe_late_idle", .state_size = sizeof(box_state),
            .setup = late_idle);
PL_SCENARIO(correct_idle_sc, .name = "probe_correct_idle", .state_size = sizeof(box_state),
            .setup = correct_idle);
PL_SCENARIO(late_second_sc, .name = "probe_late_second", .state_size = sizeof(box_state),
            .setup = late_second);
PL_SCENARIO(correct_second_sc, .name = "probe_correct_second",
            .state_size = sizeof(box_state), .setup = correct_second);
PL_SCENARIO(polling_sc, .name = "probe_polling", .state_size = sizeof(box_state),
            .setup = polling);

/* Production's order: every decision kind off but the probe, whose
 * probability is `probe` ("4096", "65536", "off"). One run. */
static void run_zero(const pl_scenario *sc, const char *probe, pl_sim_result *r)
{
    static char knobs[PL_SIM_KNOBS_TEXT_MAX];
    snprintf(knobs, sizeof knobs,
             "schedule=off,io_order=off,timer_order=off,timer_late=off,spurious_wake=off,"
             "spurious_poll=off,wake_delay=off,cancel=off,io_fault=off,io_latency=off,"
             "buggify_site=off,buggify_fire=off,probe=%s",
             probe != NULL ? probe : "4096");
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = knobs;
    cr_assert_eq(pl_sim_run(sc, &o, r), 0, "%s", r->finding.message);
}

LEAK_TEST(probes, rescue_by_the_idle_timer_is_named)
{
    pl_sim_result r;
    run_zero(&late_idle_sc, NULL, &r);
    cr_assert_eq(r.finding.kind, PL_FINDING_LOST_WAKEUP, "%s: %s",
                 pl_finding_name(r.finding.kind), r.finding.message);
    cr_assert_str_eq(r.finding.task_name, "receiver");
    cr_assert(strstr(r.finding.message, "woken only at 101.000 ms, by timer #") != NULL, "%s",
              r.finding.message);
    cr_assert(strstr(r.finding.message, "armed by 'receiver' (#1)") != NULL, "%s",
              r.finding.message);
    cr_assert_eq(r.finding.time_ns, 1 * PL_MS, "found at %lld", (long long)r.finding.time_ns);
    pl_sim_result_free(&r);
}

LEAK_TEST(probes, rescue_by_a_later_wake_is_named_by_a_follow_up_run)
{
    pl_sim_result r;
    run_zero(&late_second_sc, "65536", &r);
    cr_assert_eq(r.finding.kind, PL_FINDING_LOST_WAKEUP, "%s: %s",
                 pl_finding_name(r.finding.kind), r.finding.message);
    cr_assert(strstr(r.finding.message, "without that probe it is woken only at 50.500 ms, by "
                                        "'sender' (#2)") != NULL,
              "%s", r.finding.message);
    pl_sim_result_free(&r);
}

LEAK_TEST(probes, probe_off_sees_nothing_until_the_end)
{
    pl_sim_result r;
    run_zero(&late_idle_sc, "off", &r);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    pl_sim_result_free(&r);
}

LEAK_TEST(probes, correct_receivers_and_polling_on_purpose_are_clean)
{
    const pl_scenario *clean[] = {&correct_idle_sc, &correct_second_sc, &polling_sc};
    for (size_t i = 0; i < sizeof clean / sizeof clean[0]; i++) {
        pl_sim_options o;
        pl_sim_options_default(&o);
        o.knobs = "probe=65536,spurious_wake=8192";
        pl_campaign_result cr;
        cr_assert_eq(
            pl_sim_campaign(clean[i],
                            &(pl_campaign_options){
                                .seed_lo = 0, .seed_hi = 1999, .sim = &o, .stop_at_first = true},
                            &cr),
            0);
        cr_assert_eq(cr.findings, 0, "%s seed %llu: %s: %s", clean[i]->name,
                     (unsigned long long)cr.first_seed, pl_finding_name(cr.first.kind),
                     cr.first.message);
    }
}

LEAK_TEST(probes, the_buggy_receivers_are_found_by_the_default_campaign)
{
    const pl_scenario *buggy[] = {&late_idle_sc, &late_second_sc};
    for (size_t i = 0; i < sizeof buggy / sizeof buggy[0]; i++) {
        pl_campaign_result cr;
        cr_assert_eq(
            pl_sim_campaign(
                buggy[i],
                &(pl_campaign_options){.seed_lo = 0, .seed_hi = 9999, .stop_at_first = true}, &cr),
            0);
        cr_assert_eq(cr.first.kind, PL_FINDING_LOST_WAKEUP, "%s: %s: %s", buggy[i]->name,
                     pl_finding_name(cr.first.kind), cr.first.message);
    }
}

/* ---- Background work and the time limit -------------------------------- */

typedef struct stuck_state {
    pl_notify never;     /* nobody notifies it */
    bool fixed;          /* the worker does not wait at all */
    uint64_t ticks;
    bool background;
} stuck_state;

typedef struct ticker {
    pl_future base;
    stuck_state *st;
    pl_interval iv;
    pl_interval_tick tick;
} ticker;

static pl_poll_result ticker_poll(pl_future *f, pl_context *cx)
{
    ticker *self = (ticker *)f;
    PL_ASYNC_BEGIN(self);
    self->iv = pl_interval_make(5 * PL_MS);
    for (;;) {
        self->tick = pl_interval_tick_make(&self->iv);
        PL_AWAIT(cx, &self->tick);
        self->st->ticks++;
    }
    PL_ASYNC_END;
}

static void ticker_drop(pl_future *f) { pl_drop_child(&((ticker *)f)->tick.base); }

static const pl_future_vtable ticker_vt = {"ticker", ticker_poll, ticker_drop};

typedef struct waiter {
    pl_future base;
    stuck_state *st;
    pl_notified wait;
} waiter;

static pl_poll_result waiter_poll(pl_future *f, pl_context *cx)
{
    waiter *self = (waiter *)f;
    PL_ASYNC_BEGIN(self);
    if (!self->st->fixed) {
        self->wait = pl_notified_make(&self->st->never);
        PL_AWAIT(cx, &self->wait);
    }
    PL_ASYNC_END;
}

static void waiter_drop(pl_future *f) { pl_drop_child(&((waiter *)f)->wait.base); }

static const pl_future_vtable waiter_vt = {"waiter", waiter_poll, waiter_drop};

static int stuck_setup(pl_executor *ex, stuck_state *st, bool background, bool fixed)
{
    pl_notify_init(&st->never);
    st->fixed = fixed;
    st->background = background;
    ticker tk = {.base = PL_FUTURE_INIT(&ticker_vt), .st = st};
    waiter w = {.base = PL_FUTURE_INIT(&waiter_vt), .st = st};
    pl_task *t;
    int rc = PL_SPAWN(ex, tk, "ticker", &t);
    if (rc != 0) {
        return rc;
    }
    pl_task_set_background(t, background);
    pl_task_release(t);
    return PL_SPAWN(ex, w, "waiter", NULL);
}

static int stuck_bg(pl_executor *ex, void *st) { return stuck_setup(ex, st, true, false); }
static int stuck_fg(pl_executor *ex, void *st) { return stuck_setup(ex, st, false, false); }
static int fine_bg(pl_executor *ex, void *st) { return stuck_setup(ex, st, true, true); }
static int fine_fg(pl_executor *ex, void *st) { return stuck_setup(ex, st, false, true); }

PL_SCENARIO(stuck_bg_sc, .name = "probe_stuck_bg", .state_size = sizeof(stuck_state),
            .setup = stuck_bg, .time_limit_ns = 1 * PL_S);
PL_SCENARIO(stuck_fg_sc, .name = "probe_stuck_fg", .state_size = sizeof(stuck_state),
            .setup = stuck_fg, .time_limit_ns = 1 * PL_S);
PL_SCENARIO(fine_bg_sc, .name = "probe_fine_bg", .state_size = sizeof(stuck_state),
            .setup = fine_bg, .time_limit_ns = 1 * PL_S);
PL_SCENARIO(fine_fg_sc, .name = "probe_fine_fg", .state_size = sizeof(stuck_state),
            .setup = fine_fg, .time_limit_ns = 1 * PL_S);

LEAK_TEST(background, a_foreground_deadlock_is_found_while_the_ticker_runs)
{
    pl_sim_result r;
    run_zero(&stuck_bg_sc, NULL, &r);
    cr_assert_eq(r.finding.kind, PL_FINDING_DEADLOCK, "%s: %s", pl_finding_name(r.finding.kind),
                 r.finding.message);
    cr_assert_str_eq(r.finding.task_name, "waiter");
    cr_assert(strstr(r.finding.message, "still running: 'ticker' (#1)") != NULL, "%s",
              r.finding.message);
    cr_assert_lt(r.time_ns, 20 * PL_MS, "judged at %lld ns", (long long)r.time_ns);
    pl_sim_result_free(&r);
}

/* A foreground ticker keeps the run alive as well: the waiter, parked
 * with no timer and untouched while the ticker ran its rounds, is judged
 * long before the time limit, and the report names what keeps the run
 * alive (the ticker and its next timer). */
LEAK_TEST(background, a_deadlock_behind_a_foreground_ticker_is_found_before_the_time_limit)
{
    pl_sim_result r;
    run_zero(&stuck_fg_sc, NULL, &r);
    cr_assert_eq(r.finding.kind, PL_FINDING_DEADLOCK, "%s: %s", pl_finding_name(r.finding.kind),
                 r.finding.message);
    cr_assert_str_eq(r.finding.task_name, "waiter");
    cr_assert(strstr(r.finding.message, "while only timers kept the run alive (running: "
                                        "'ticker' (#1, 8 rounds); next, timer #") != NULL,
              "%s", r.finding.message);
    cr_assert(strstr(r.finding.message, "armed by 'ticker' (#1) wakes 'ticker' (#1)") != NULL,
              "%s", r.finding.message);
    cr_assert(strstr(r.finding.message, "'waiter' (#2, spawned at test_probes.c:") != NULL, "%s",
              r.finding.message);
    cr_assert_lt(r.time_ns, 100 * PL_MS, "judged at %lld ns", (long long)r.time_ns);
    pl_sim_result_free(&r);
}

LEAK_TEST(background, a_ticker_alone_at_the_time_limit_is_a_livelock_that_says_what_to_do)
{
    pl_sim_result r;
    run_zero(&fine_fg_sc, NULL, &r);
    cr_assert_eq(r.finding.kind, PL_FINDING_LIVELOCK, "%s", r.finding.message);
    cr_assert_str_eq(r.finding.task_name, "ticker");
    cr_assert(strstr(r.finding.message, "pl_task_set_background") != NULL, "%s",
              r.finding.message);
    pl_sim_result_free(&r);
}

LEAK_TEST(background, the_fixed_server_with_a_background_ticker_is_clean)
{
    pl_campaign_result cr;
    cr_assert_eq(
        pl_sim_campaign(&fine_bg_sc,
                        &(pl_campaign_options){.seed_lo = 0, .seed_hi = 999, .stop_at_first = true},
                        &cr),
        0);
    cr_assert_eq(cr.findings, 0, "seed %llu: %s", (unsigned long long)cr.first_seed,
                 cr.first.message);
}

/* ---- Bookkeeping is not progress -------------------------------------
 * A consumer takes one item per poll from a box, counting what it took in
 * its future, with an idle timeout armed. A sender puts three items in at
 * 10, 20 and 30 ms. */

typedef struct tally_state {
    int items;
    pl_waker consumer;
    bool skip_wake;   /* the sender does not wake the consumer at 20 ms (the bug) */
    bool count_polls; /* the consumer also counts its polls (bookkeeping) */
} tally_state;

typedef struct tally {
    pl_future base;
    tally_state *st;
    pl_sleep idle;
    uint32_t polls;
    uint32_t taken;
} tally;

static pl_poll_result tally_poll(pl_future *f, pl_context *cx)
{
    tally *t = (tally *)f;
    t->polls += t->st->count_polls;
    if (t->st->items > 0) {
        t->st->items--;
        t->taken++;
    }
    if (t->taken == 3 || pl_poll(&t->idle.base, cx) == PL_READY) {
        pl_drop_child(&t->idle.base);
        pl_waker_slot_clear(&t->st->consumer);
        return PL_READY;
    }
    pl_waker_slot_set(&t->st->consumer, &cx->waker);
    return PL_PENDING;
}

static void tally_drop(pl_future *f)
{
    tally *t = (tally *)f;
    pl_drop_child(&t->idle.base);
    pl_waker_slot_clear(&t->st->consumer);
}

static const pl_future_vtable tally_vt = {"tally", tally_poll, tally_drop};

typedef struct putter {
    pl_future base;
    tally_state *st;
    int i;
    pl_sleep gap;
} putter;

static pl_poll_result putter_poll(pl_future *f, pl_context *cx)
{
    putter *p = (putter *)f;
    PL_ASYNC_BEGIN(p);
    for (p->i = 0; p->i < 3; p->i++) {
        p->gap = pl_sleep_for(10 * PL_MS);
        PL_AWAIT(cx, &p->gap);
        p->st->items++;
        if (!(p->st->skip_wake && p->i == 1) && pl_waker_is_set(&p->st->consumer)) {
            pl_waker_wake_by_ref(&p->st->consumer);
        }
    }
    PL_ASYNC_END;
}

static void putter_drop(pl_future *f) { pl_drop_child(&((putter *)f)->gap.base); }

static const pl_future_vtable putter_vt = {"putter", putter_poll, putter_drop};

static int tally_setup(pl_executor *ex, tally_state *st, bool skip_wake, bool count_polls)
{
    st->consumer = PL_WAKER_EMPTY;
    st->skip_wake = skip_wake;
    st->count_polls = count_polls;
    tally t = {.base = PL_FUTURE_INIT(&tally_vt), .st = st, .idle = pl_sleep_for(100 * PL_MS)};
    putter p = {.base = PL_FUTURE_INIT(&putter_vt), .st = st};
    int rc = PL_SPAWN(ex, t, "tally", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, p, "putter", NULL);
}

static int tally_lost(pl_executor *ex, void *st) { return tally_setup(ex, st, true, false); }
static int tally_polls(pl_executor *ex, void *st) { return tally_setup(ex, st, false, true); }

PL_SCENARIO(tally_lost_sc, .name = "probe_tally_lost", .state_size = sizeof(tally_state),
            .setup = tally_lost);
PL_SCENARIO(tally_polls_sc, .name = "probe_tally_polls", .state_size = sizeof(tally_state),
            .setup = tally_polls);

/* A counter the probe moved by one because an item was there: a second
 * look finds no item and leaves it, so it is progress. */
LEAK_TEST(bookkeeping, a_counter_moved_by_an_event_is_progress)
{
    pl_sim_result r;
    run_zero(&tally_lost_sc, "65536", &r);
    cr_assert_eq(r.finding.kind, PL_FINDING_LOST_WAKEUP, "%s: %s",
                 pl_finding_name(r.finding.kind), r.finding.message);
    cr_assert_str_eq(r.finding.task_name, "tally");
    cr_assert(strstr(r.finding.message, "changed its state") != NULL, "%s", r.finding.message);
    pl_sim_result_free(&r);
}

/* A poll counter moves on every poll, the second look too: bookkeeping. */
LEAK_TEST(bookkeeping, a_poll_counter_is_not_progress)
{
    pl_sim_result r;
    run_zero(&tally_polls_sc, "65536", &r);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s: %s", pl_finding_name(r.finding.kind),
                 r.finding.message);
    pl_sim_result_free(&r);
    pl_campaign_result cr;
    cr_assert_eq(pl_sim_campaign(
                     &tally_polls_sc,
                     &(pl_campaign_options){.seed_lo = 0, .seed_hi = 1999, .stop_at_first = true},
                     &cr),
                 0);
    cr_assert_eq(cr.findings, 0, "seed %llu: %s", (unsigned long long)cr.first_seed,
                 cr.first.message);
}

/* ---- A ticker that does wake the waiter, after a few rounds ----------
 * The horizon of the watch (check_probe.c, keepers_only): a waiter with
 * no timeout that a foreground ticker notifies on its fifth round is not
 * a deadlock. */

typedef struct late_state {
    pl_notify bell;
    int rounds;
} late_state;

typedef struct late_ticker {
    pl_future base;
    late_state *st;
    pl_interval iv;
    pl_interval_tick tick;
} late_ticker;

static pl_poll_result late_ticker_poll(pl_future *f, pl_context *cx)
{
    late_ticker *t = (late_ticker *)f;
    PL_ASYNC_BEGIN(t);
    t->iv = pl_interval_make(5 * PL_MS);
    for (t->st->rounds = 0; t->st->rounds < 5; t->st->rounds++) {
        t->tick = pl_interval_tick_make(&t->iv);
        PL_AWAIT(cx, &t->tick);
    }
    pl_notify_waiters(&t->st->bell);
    PL_ASYNC_END;
}

static void late_ticker_drop(pl_future *f) { pl_drop_child(&((late_ticker *)f)->tick.base); }

static const pl_future_vtable late_ticker_vt = {"late_ticker", late_ticker_poll,
                                                late_ticker_drop};

typedef struct bell_waiter {
    pl_future base;
    late_state *st;
    pl_notified wait;
} bell_waiter;

static pl_poll_result bell_waiter_poll(pl_future *f, pl_context *cx)
{
    bell_waiter *w = (bell_waiter *)f;
    PL_ASYNC_BEGIN(w);
    w->wait = pl_notified_make(&w->st->bell);
    PL_AWAIT(cx, &w->wait);
    PL_ASYNC_END;
}

static void bell_waiter_drop(pl_future *f) { pl_drop_child(&((bell_waiter *)f)->wait.base); }

static const pl_future_vtable bell_waiter_vt = {"bell_waiter", bell_waiter_poll,
                                                bell_waiter_drop};

static int late_setup(pl_executor *ex, void *state)
{
    late_state *st = state;
    pl_notify_init(&st->bell);
    bell_waiter w = {.base = PL_FUTURE_INIT(&bell_waiter_vt), .st = st};
    late_ticker t = {.base = PL_FUTURE_INIT(&late_ticker_vt), .st = st};
    int rc = PL_SPAWN(ex, w, "bell_waiter", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, t, "late_ticker", NULL);
}

PL_SCENARIO(late_bell_sc, .name = "probe_late_bell", .state_size = sizeof(late_state),
            .setup = late_setup, .time_limit_ns = 1 * PL_S);

LEAK_TEST(background, a_waiter_a_ticker_wakes_within_the_horizon_is_clean)
{
    pl_campaign_result cr;
    cr_assert_eq(pl_sim_campaign(
                     &late_bell_sc,
                     &(pl_campaign_options){.seed_lo = 0, .seed_hi = 1999, .stop_at_first = true},
                     &cr),
                 0);
    cr_assert_eq(cr.findings, 0, "seed %llu: %s", (unsigned long long)cr.first_seed,
                 cr.first.message);
}

/* Production: pl_run returns once only background work is left, and
 * destroying the executor cancels the ticker. */
LEAK_TEST(background, pl_run_returns_when_only_background_tasks_are_left)
{
    pl_executor *ex;
    cr_assert_eq(pl_executor_create(&ex, NULL), 0);
    stuck_state st = {0};
    cr_assert_eq(fine_bg(ex, &st), 0);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(pl_executor_live_tasks(ex), 1, "the ticker is still alive");
    cr_assert_eq(pl_executor_live_background(ex), 1);
    pl_executor_destroy(ex);
}
