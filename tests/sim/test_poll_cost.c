/* tests/sim/test_poll_cost.c: busy work can cost virtual time.
 *
 * The virtual clock moves only when no task is runnable, so a task that
 * yields in a loop keeps a sleep from ever completing. With a poll cost
 * (pl_sim_options.poll_cost_ns) every poll moves the clock, timers due
 * meanwhile fire at the next tick, and replay files carry the cost. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "leakcheck.h"
#include "pollen/pollen.h"
#include "pollen/sim.h"
#include "replay.h"

/* ---- The scenario: a yielder and a short sleep -------------------------- */

enum { YIELDS = 1000 };
#define NAP_NS (10 * PL_US)

typedef struct overlap_state {
    int yields;        /* done by the yielder so far */
    int yields_at_nap; /* yields done when the nap ended; -1: it never ended first */
    bool napped;
} overlap_state;

typedef struct yielder {
    pl_future base;
    overlap_state *st;
} yielder;

static pl_poll_result yielder_poll(pl_future *f, pl_context *cx)
{
    yielder *self = (yielder *)f;
    PL_ASYNC_BEGIN(self);
    while (self->st->yields < YIELDS) {
        self->st->yields++;
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable yielder_vt = {"yielder", yielder_poll, NULL};

typedef struct napper {
    pl_future base;
    overlap_state *st;
    pl_sleep nap;
} napper;

static pl_poll_result napper_poll(pl_future *f, pl_context *cx)
{
    napper *self = (napper *)f;
    PL_ASYNC_BEGIN(self);
    self->nap = pl_sleep_for(NAP_NS);
    PL_AWAIT(cx, &self->nap);
    self->st->napped = true;
    self->st->yields_at_nap = self->st->yields;
    PL_ASYNC_END;
}

static void napper_drop(pl_future *f) { pl_drop_child(&((napper *)f)->nap.base); }

static const pl_future_vtable napper_vt = {"napper", napper_poll, napper_drop};

static int overlap_setup(pl_executor *ex, void *state)
{
    yielder y = {PL_FUTURE_INIT(&yielder_vt), state};
    napper n = {.base = PL_FUTURE_INIT(&napper_vt), .st = state};
    int rc = PL_SPAWN(ex, n, "napper", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, y, "yielder", NULL);
}

/* Fails unless the nap ended while the yielder was still busy. */
static int overlap_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const overlap_state *st = state;
    if (!st->napped || st->yields_at_nap >= YIELDS) {
        return pl_check_fail(msg, len, "the 10 us nap ended after all %d yields", YIELDS);
    }
    return 0;
}

PL_SCENARIO(poll_cost_overlap, .name = "poll_cost_overlap",
            .summary = "a 10 us sleep next to a task yielding 1000 times",
            .state_size = sizeof(overlap_state), .setup = overlap_setup, .check = overlap_check);

/* ---- A task that waits for time by yielding ------------------------------ */

typedef struct wait_state {
    bool elapsed; /* the alarm's sleep ended */
    bool seen;    /* the waiter saw it */
    bool no_timer; /* the waiter spins on a flag that nothing sets (a real busy loop) */
} wait_state;

typedef struct alarm_task {
    pl_future base;
    wait_state *st;
    pl_sleep nap;
} alarm_task;

static pl_poll_result alarm_poll(pl_future *f, pl_context *cx)
{
    alarm_task *self = (alarm_task *)f;
    PL_ASYNC_BEGIN(self);
    self->nap = pl_sleep_for(PL_MS);
    PL_AWAIT(cx, &self->nap);
    self->st->elapsed = true;
    PL_ASYNC_END;
}

static void alarm_drop(pl_future *f) { pl_drop_child(&((alarm_task *)f)->nap.base); }

static const pl_future_vtable alarm_vt = {"alarm", alarm_poll, alarm_drop};

/* Yields until the alarm went off: correct in production, where a poll
 * takes time; a livelock while polls cost no virtual time. */
typedef struct time_waiter {
    pl_future base;
    wait_state *st;
} time_waiter;

static pl_poll_result time_waiter_poll(pl_future *f, pl_context *cx)
{
    wait_state *st = ((time_waiter *)f)->st;
    if (!st->elapsed) {
        pl_waker_wake_by_ref(&cx->waker);
        return PL_PENDING;
    }
    st->seen = true;
    return PL_READY;
}

static const pl_future_vtable time_waiter_vt = {"time_waiter", time_waiter_poll, NULL};

static int wait_setup(pl_executor *ex, void *state)
{
    wait_state *st = state;
    time_waiter w = {PL_FUTURE_INIT(&time_waiter_vt), state};
    if (!st->no_timer) {
        alarm_task a = {.base = PL_FUTURE_INIT(&alarm_vt), .st = state};
        int rc = PL_SPAWN(ex, a, "alarm", NULL);
        if (rc != 0) {
            return rc;
        }
    }
    return PL_SPAWN(ex, w, "time_waiter", NULL);
}

static int spin_setup(pl_executor *ex, void *state)
{
    ((wait_state *)state)->no_timer = true;
    return wait_setup(ex, state);
}

PL_SCENARIO(poll_cost_wait, .name = "poll_cost_wait",
            .summary = "a task yields until a 1 ms sleep of another task ended",
            .state_size = sizeof(wait_state), .setup = wait_setup);

PL_SCENARIO(poll_cost_spin, .name = "poll_cost_spin",
            .summary = "a task yields until a flag nothing sets (no timer armed)",
            .state_size = sizeof(wait_state), .setup = spin_setup);

/* ---- Tests ---------------------------------------------------------------- */

/* Late timers would blur the claim (a timer may fire up to 4 ms late). */
static void options(pl_sim_options *o, pl_time cost)
{
    pl_sim_options_default(o);
    o->knobs = "timer_late=off";
    o->poll_cost_ns = cost;
}

LEAK_TEST(poll_cost, sleep_completes_during_busy_work_when_polls_cost_time)
{
    pl_sim_options o;
    options(&o, 100);
    pl_campaign_result r;
    cr_assert_eq(
        pl_sim_campaign(
            &poll_cost_overlap,
            &(pl_campaign_options){.seed_lo = 0, .seed_hi = 199, .sim = &o, .stop_at_first = true},
            &r),
        0);
    cr_assert_eq(r.findings, 0, "seed %llu: %s", (unsigned long long)r.first_seed, r.first.message);
}

LEAK_TEST(poll_cost, without_a_cost_busy_work_starves_the_sleep)
{
    pl_sim_options o;
    options(&o, 0);
    pl_campaign_result r;
    cr_assert_eq(pl_sim_campaign(&poll_cost_overlap,
                                 &(pl_campaign_options){.seed_lo = 0, .seed_hi = 199, .sim = &o},
                                 &r),
                 0);
    cr_assert_eq(r.findings, r.runs, "%llu of %llu seeds let the nap end first",
                 (unsigned long long)(r.runs - r.findings), (unsigned long long)r.runs);
    cr_assert_eq(r.first.kind, PL_FINDING_ASSERTION);
}

/* The clock moved by the cost of the polls and by nothing else: every
 * wait charges the polls since the previous one, and only the last tick's
 * polls (at most the executor's budget of 128) find no wait after them. */
LEAK_TEST(poll_cost, clock_moves_by_the_cost_of_the_polls)
{
    pl_sim_options o;
    options(&o, 100);
    o.knobs = "timer_late=off,schedule=off,timer_order=off,spurious_wake=off,wake_delay=off";
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&poll_cost_overlap, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    cr_assert_gt(r.steps, YIELDS);
    cr_assert_eq(r.time_ns % 100, 0, "%lld ns", (long long)r.time_ns);
    cr_assert_geq(r.time_ns, 100 * (pl_time)(r.steps - 128), "%lld ns after %llu polls",
                  (long long)r.time_ns, (unsigned long long)r.steps);
    cr_assert_leq(r.time_ns, 100 * (pl_time)r.steps);
    pl_sim_result_free(&r);
}

LEAK_TEST(poll_cost, out_of_range_cost_is_rejected)
{
    pl_sim_options o;
    options(&o, PL_SIM_POLL_COST_MAX + 1);
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&poll_cost_overlap, &o, &r), PL_EINVAL);
    cr_assert(strstr(r.finding.message, "poll cost") != NULL, "%s", r.finding.message);
    pl_sim_result_free(&r);
}

/* A replay file records the cost, and replaying it reproduces the run. */
LEAK_TEST(poll_cost, replay_reproduces_a_run_with_a_cost)
{
    char path[] = "/tmp/pollen-poll-cost-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    pl_sim_options o;
    options(&o, 250);
    o.seed = 7;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&poll_cost_overlap, &o, &r), 0);
    cr_assert_eq(pl_sim_write_replay(&poll_cost_overlap, &o, &r, path), 0);

    pl__replay file;
    char err[256] = "";
    cr_assert_eq(pl__replay_parse_file(path, &file, err, sizeof err), 0, "%s", err);
    cr_assert_eq(file.poll_cost_ns, 250);
    pl__replay_free(&file);

    pl_sim_result again;
    int rc = pl_sim_replay_file(path, &again, err, sizeof err);
    cr_assert_eq(rc, 0, "rc %d: %s", rc, err);
    cr_assert_eq(again.hash, r.hash);
    cr_assert_eq(again.time_ns, r.time_ns);
    pl_sim_result_free(&again);
    pl_sim_result_free(&r);
    unlink(path);
}

/* Files written before the key existed read as cost 0; a bad value is a
 * format error naming the line. */
LEAK_TEST(poll_cost, replay_key_defaults_to_zero_and_is_checked)
{
    static const char old[] = "pollen-replay 1\nseed 3\ndecisions 0\nend\n";
    pl__replay r;
    char err[256] = "";
    cr_assert_eq(pl__replay_parse_buffer(old, strlen(old), &r, err, sizeof err), 0, "%s", err);
    cr_assert_eq(r.poll_cost_ns, 0);
    pl__replay_free(&r);

    static const char bad[] =
        "pollen-replay 1\nseed 3\npoll-cost-ns 2000000000\ndecisions 0\nend\n";
    cr_assert_eq(pl__replay_parse_buffer(bad, strlen(bad), &r, err, sizeof err), PL_EFORMAT);
    cr_assert(strncmp(err, "line 3: ", 8) == 0, "%s", err);
    pl__replay_free(&r);
}

/* A livelock while a timer is armed names the option that tells a task
 * waiting for time from a busy loop; with it the same program passes. */
LEAK_TEST(poll_cost, a_livelock_with_a_timer_armed_names_the_option)
{
    pl_sim_options o;
    options(&o, 0);
    pl_campaign_result r;
    cr_assert_eq(pl_sim_campaign(&poll_cost_wait,
                                 &(pl_campaign_options){.seed_lo = 0, .seed_hi = 9, .sim = &o}, &r),
                 0);
    cr_assert_eq(r.findings, r.runs);
    cr_assert_eq(r.first.kind, PL_FINDING_LIVELOCK, "%s", r.first.message);
    cr_assert_not_null(strstr(r.first.message, "a timer is armed for 1.000 ms"), "%s",
                       r.first.message);
    cr_assert_not_null(strstr(r.first.message, "--poll-cost 1us"), "%s", r.first.message);
    options(&o, PL_US);
    cr_assert_eq(pl_sim_campaign(&poll_cost_wait,
                                 &(pl_campaign_options){
                                     .seed_lo = 0, .seed_hi = 99, .sim = &o, .stop_at_first = true},
                                 &r),
                 0);
    cr_assert_eq(r.findings, 0, "seed %llu: %s", (unsigned long long)r.first_seed, r.first.message);
}

/* No timer armed: a busy loop whatever polls cost, and no hint. */
LEAK_TEST(poll_cost, a_livelock_without_a_timer_gives_no_hint)
{
    pl_sim_options o;
    options(&o, 0);
    pl_campaign_result r;
    cr_assert_eq(pl_sim_campaign(&poll_cost_spin,
                                 &(pl_campaign_options){.seed_lo = 0, .seed_hi = 9, .sim = &o}, &r),
                 0);
    cr_assert_eq(r.first.kind, PL_FINDING_LIVELOCK, "%s", r.first.message);
    cr_assert_null(strstr(r.first.message, "--poll-cost"), "%s", r.first.message);
}
