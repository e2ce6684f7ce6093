/* tests/sim/test_pause.c: a node's process pause (pollen/sim_node.h:
 * pl_sim_node_pause, the node_pause decision kind).
 *
 * One node, "sleeper" (10.0.0.2), runs a ticker that records the virtual
 * time of each tick (every 1 ms) and a listener task parked on a UDP
 * socket that counts the datagrams it reads. The scenario's own chaos
 * task sends it a datagram at 4 ms and, as each test plans, pauses,
 * resumes or crashes the node. The check fails, when planned, if two
 * ticks are more than 5 ms apart (what a long enough pause does). */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pollen/io.h>
#include <pollen/sim.h>
#include <pollen/sim_node.h>

#include "knobs.h"
#include "leakcheck.h"
#include "run_record.h"
#include "sim_internal.h"
#include "trace.h"

TestSuite(pause, .fini = pl_test_leak_check);

#define QUIET                                                                                      \
    "timer_late=off,io_fault=off,io_latency=off,link_latency=off,link_loss=off,link_dup=off,"     \
    "link_reorder=off,partition=off,clog=off,spurious_wake=off"

enum { TICKS = 30 };

static struct plan {
    bool pausable;     /* the node's definition */
    pl_time pause_at;  /* chaos pauses the node then (0: never) */
    pl_time pause_ns;
    pl_time resume_at; /* chaos resumes it then (0: never) */
    pl_time crash_at;  /* chaos crashes it then, and restarts it 1 ms later (0: never) */
    bool fail_on_gap;  /* the check fails if two ticks are over 5 ms apart */
} plan;

static struct seen {
    int ticks;
    pl_time tick_at[4 * TICKS];
    int reads;
    pl_time read_at;
    int boots;
    int pause_rc, pause_again_rc, pause_unknown_rc, pause_zero_rc, resume_rc, resume_again_rc;
    bool paused_seen; /* pl_sim_node_is_paused said so while paused */
    int polls;        /* polls of the node's tasks, whatever made them */
    pl_time polled_at[16 * TICKS];
} seen;

/* Every poll of a node task, a spurious one or a probe's too. */
static void note_poll(pl_context *cx)
{
    if (seen.polls < (int)(sizeof seen.polled_at / sizeof seen.polled_at[0])) {
        seen.polled_at[seen.polls++] = pl_now(cx->ex);
    }
}

/* ---- The node ------------------------------------------------------------------ */

typedef struct ticker {
    pl_future base;
    pl_sleep nap;
} ticker;

static pl_poll_result ticker_poll(pl_future *f, pl_context *cx)
{
    ticker *self = (ticker *)f;
    note_poll(cx);
    PL_ASYNC_BEGIN(self);
    while (seen.ticks < TICKS) {
        self->nap = pl_sleep_for(PL_MS);
        PL_AWAIT(cx, &self->nap);
        seen.tick_at[seen.ticks++] = pl_now(cx->ex);
    }
    PL_ASYNC_END;
}

static void ticker_drop(pl_future *f) { pl_drop_child(&((ticker *)f)->nap.base); }

static const pl_future_vtable ticker_vt = {"ticker", ticker_poll, ticker_drop};

typedef struct listener {
    pl_future base;
    pl_udp_socket *u;
    char buf[8];
    pl_udp_recv recv;
} listener;

static pl_poll_result listener_poll(pl_future *f, pl_context *cx)
{
    listener *self = (listener *)f;
    note_poll(cx);
    PL_ASYNC_BEGIN(self);
    self->recv = pl_udp_recv_from(self->u, self->buf, sizeof self->buf);
    PL_AWAIT(cx, &self->recv);
    seen.reads++;
    seen.read_at = pl_now(cx->ex);
    PL_ASYNC_END;
}

static void listener_drop(pl_future *f) { pl_drop_child(&((listener *)f)->recv.base); }

static const pl_future_vtable listener_vt = {"listener", listener_poll, listener_drop};

static int sleeper_boot(pl_executor *ex, void *ud)
{
    (void)ud;
    seen.boots++;
    pl_udp_socket *u = pl_node_alloc(sizeof *u);
    if (u == NULL) {
        return PL_ENOMEM;
    }
    int rc = pl_udp_bind_str(ex, u, "10.0.0.2:9");
    ticker t = {.base = PL_FUTURE_INIT(&ticker_vt)};
    listener l = {.base = PL_FUTURE_INIT(&listener_vt), .u = u};
    rc = rc != 0 ? rc : PL_SPAWN(ex, t, "ticker", NULL);
    pl_task *h = NULL;
    rc = rc != 0 ? rc : PL_SPAWN(ex, l, "listener", &h);
    if (rc == 0) {
        pl_task_set_background(h, true); /* a restarted one waits for good */
        pl_task_release(h);
    }
    return rc;
}

/* ---- The scenario's chaos -------------------------------------------------------- */

typedef struct chaos {
    pl_future base;
    pl_udp_socket u;
    pl_udp_send send;
    pl_sleep nap;
} chaos;

static pl_poll_result chaos_poll(pl_future *f, pl_context *cx)
{
    chaos *self = (chaos *)f;
    PL_ASYNC_BEGIN(self);
    /* Every event in time order; each a sleep to its time. */
    for (;;) {
        pl_time now = pl_now(cx->ex);
        if (plan.pause_at != 0 && now == plan.pause_at) {
            seen.pause_rc = pl_sim_node_pause("sleeper", plan.pause_ns);
            seen.pause_again_rc = pl_sim_node_pause("sleeper", plan.pause_ns);
            seen.pause_unknown_rc = pl_sim_node_pause("nobody", plan.pause_ns);
            seen.pause_zero_rc = pl_sim_node_pause("sleeper", 0);
            seen.paused_seen = pl_sim_node_is_paused("sleeper");
        }
        if (now == 4 * PL_MS) {
            static const char ping[4] = "ping";
            struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(9)};
            to.sin_addr.s_addr = htonl(0x0a000002u);
            self->send = pl_udp_send_to(&self->u, ping, sizeof ping, (struct sockaddr *)&to,
                                        sizeof to);
            PL_AWAIT(cx, &self->send);
        }
        if (plan.resume_at != 0 && pl_now(cx->ex) == plan.resume_at) {
            seen.resume_rc = pl_sim_node_resume("sleeper");
            seen.resume_again_rc = pl_sim_node_resume("sleeper");
        }
        if (plan.crash_at != 0 && pl_now(cx->ex) == plan.crash_at) {
            cr_assert_eq(pl_sim_node_crash("sleeper"), 0);
            cr_assert(!pl_sim_node_is_paused("sleeper"), "a crash ends the pause");
        }
        if (plan.crash_at != 0 && pl_now(cx->ex) == plan.crash_at + PL_MS) {
            cr_assert_eq(pl_sim_node_restart("sleeper"), 0);
        }
        if (pl_now(cx->ex) >= 40 * PL_MS) {
            break;
        }
        self->nap = pl_sleep_for(PL_MS);
        PL_AWAIT(cx, &self->nap);
    }
    PL_ASYNC_END;
}

static void chaos_drop(pl_future *f)
{
    chaos *self = (chaos *)f;
    pl_drop_child(&self->send.base);
    pl_drop_child(&self->nap.base);
    pl_udp_close(&self->u);
}

static const pl_future_vtable chaos_vt = {"chaos", chaos_poll, chaos_drop};

static int setup(pl_executor *ex, void *state)
{
    (void)state;
    memset(&seen, 0, sizeof seen); /* every run's, the shrinker's too */
    pl_node_def def = {.name = "sleeper", .host = "10.0.0.2", .boot = sleeper_boot,
                       .pausable = plan.pausable};
    int rc = pl_sim_node_add(ex, &def);
    chaos c = {.base = PL_FUTURE_INIT(&chaos_vt)};
    rc = rc != 0 ? rc : pl_udp_bind_str(ex, &c.u, "10.0.0.1:9");
    return rc != 0 ? rc : PL_SPAWN(ex, c, "chaos", NULL);
}

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    (void)state;
    for (int i = 1; plan.fail_on_gap && i < seen.ticks; i++) {
        if (seen.tick_at[i] - seen.tick_at[i - 1] > 5 * PL_MS) {
            return pl_check_fail(msg, len, "ticks %d and %d are %lld ns apart", i - 1, i,
                                 (long long)(seen.tick_at[i] - seen.tick_at[i - 1]));
        }
    }
    return 0;
}

/* Registered: a replay file names it. */
PL_SCENARIO(sleeper, .name = "test_pause_sleeper",
            .summary = "a ticking node paused, resumed, crashed", .setup = setup, .check = check);

static pl_sim_result run(const char *knobs, uint64_t seed, bool keep_events)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = knobs;
    o.seed = seed;
    o.keep_events = keep_events;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&sleeper, &o, &r), 0, "%s", r.finding.message);
    return r;
}

static void expect_clean(const pl_sim_result *r)
{
    cr_assert_eq(r->finding.kind, PL_FINDING_NONE, "%s: %s", pl_finding_name(r->finding.kind),
                 r->finding.message);
}

/* The tick recorded first at or after t (or -1). */
static int tick_from(pl_time t)
{
    for (int i = 0; i < seen.ticks; i++) {
        if (seen.tick_at[i] >= t) {
            return i;
        }
    }
    return -1;
}

/* ---- Tests ------------------------------------------------------------------------- */

LEAK_TEST(pause, a_paused_node_runs_nothing_until_it_resumes)
{
    plan = (struct plan){.pause_at = 2 * PL_MS, .pause_ns = 10 * PL_MS};
    pl_sim_result r = run(QUIET, 0, false);
    expect_clean(&r);
    cr_assert_eq(seen.pause_rc, 0);
    cr_assert_eq(seen.pause_again_rc, PL_EEXIST);
    cr_assert_eq(seen.pause_unknown_rc, PL_EINVAL);
    cr_assert_eq(seen.pause_zero_rc, PL_EINVAL);
    cr_assert(seen.paused_seen);
    /* Ticks at 1 and 2 ms, none while paused, the overdue one at 12 ms. */
    int k = tick_from(2 * PL_MS + 1);
    cr_assert(k > 0);
    cr_assert_eq(seen.tick_at[k], 12 * PL_MS, "first tick after the pause at %lld",
                 (long long)seen.tick_at[k]);
    cr_assert_eq(seen.tick_at[k + 1], 13 * PL_MS);
    /* The datagram sent at 4 ms waited in the socket; read at the resume. */
    cr_assert_eq(seen.reads, 1);
    cr_assert_eq(seen.read_at, 12 * PL_MS);
    /* No node is pausable: the decision kind is never consulted. */
    cr_assert_eq(pl__sim_result_record(&r)->consulted[PL_DECIDE_NODE_PAUSE], 0);
    pl_sim_result_free(&r);
}

LEAK_TEST(pause, resume_ends_the_pause_early)
{
    plan = (struct plan){.pause_at = 2 * PL_MS, .pause_ns = 100 * PL_MS, .resume_at = 6 * PL_MS};
    pl_sim_result r = run(QUIET, 0, false);
    expect_clean(&r);
    cr_assert_eq(seen.resume_rc, 0);
    cr_assert_eq(seen.resume_again_rc, PL_EEXIST);
    int k = tick_from(2 * PL_MS + 1);
    cr_assert_eq(seen.tick_at[k], 6 * PL_MS, "first tick after the resume at %lld",
                 (long long)seen.tick_at[k]);
    cr_assert_eq(seen.read_at, 6 * PL_MS);
    pl_sim_result_free(&r);
}

/* PL_TIME_NEVER pauses until the resume (now + length would overflow). */
LEAK_TEST(pause, a_pause_of_never_lasts_until_the_resume)
{
    plan = (struct plan){.pause_at = 2 * PL_MS, .pause_ns = PL_TIME_NEVER, .resume_at = 9 * PL_MS};
    pl_sim_result r = run(QUIET, 0, false);
    expect_clean(&r);
    cr_assert_eq(seen.pause_rc, 0);
    cr_assert_eq(seen.resume_rc, 0);
    int k = tick_from(2 * PL_MS + 1);
    cr_assert_eq(seen.tick_at[k], 9 * PL_MS, "first tick after the resume at %lld",
                 (long long)seen.tick_at[k]);
    pl_sim_result_free(&r);
}

LEAK_TEST(pause, a_crash_ends_the_pause_and_the_restart_runs)
{
    plan = (struct plan){.pause_at = 2 * PL_MS, .pause_ns = 100 * PL_MS, .crash_at = 5 * PL_MS};
    pl_sim_result r = run(QUIET, 0, false);
    expect_clean(&r);
    cr_assert_eq(seen.boots, 2);
    /* The restarted ticker ticks from 7 ms (boot at 6 ms). */
    int k = tick_from(2 * PL_MS + 1);
    cr_assert_eq(seen.tick_at[k], 7 * PL_MS, "first tick after the restart at %lld",
                 (long long)seen.tick_at[k]);
    pl_sim_result_free(&r);
}

/* None of a paused node's tasks is polled until it resumes: not by a
 * spurious poll, not by a lost-wakeup probe, both at their most eager. */
LEAK_TEST(pause, spurious_polls_and_probes_leave_a_paused_node_alone)
{
    plan = (struct plan){.pause_at = 2 * PL_MS, .pause_ns = 10 * PL_MS};
    for (uint64_t seed = 0; seed < 8; seed++) {
        pl_sim_result r = run(QUIET ",spurious_poll=65536,probe=65536", seed, false);
        expect_clean(&r);
        cr_assert_eq(seen.pause_rc, 0);
        for (int i = 0; i < seen.polls; i++) {
            cr_assert(seen.polled_at[i] <= 2 * PL_MS || seen.polled_at[i] >= 12 * PL_MS,
                      "seed %llu: a task of the paused node polled at %lld ns",
                      (unsigned long long)seed, (long long)seen.polled_at[i]);
        }
        cr_assert_gt(pl__sim_result_record(&r)->consulted[PL_DECIDE_SPURIOUS_POLL], 0);
        pl_sim_result_free(&r);
    }
}

/* The decision kind: a pausable node pauses at a wait; a node that is
 * not pausable draws nothing, so its run is the one with the kind off. */
LEAK_TEST(pause, the_decision_pauses_only_pausable_nodes)
{
    plan = (struct plan){.fail_on_gap = true};
    pl_sim_result off = run(QUIET ",node_pause=off", 3, false);
    expect_clean(&off);
    pl_sim_result on = run(QUIET ",node_pause=65536", 3, false);
    expect_clean(&on);
    cr_assert_eq(off.hash, on.hash, "a node that is not pausable changed the run");
    cr_assert_eq(pl__sim_result_record(&on)->consulted[PL_DECIDE_NODE_PAUSE], 0);
    pl_sim_result_free(&off);
    pl_sim_result_free(&on);
    plan.pausable = true;
    pl_sim_result r = run(QUIET ",node_pause=16384", 3, true);
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION, "%s", pl_finding_name(r.finding.kind));
    const pl__run_record *rec = pl__sim_result_record(&r);
    cr_assert_gt(rec->deviated[PL_DECIDE_NODE_PAUSE], 0);
    int pauses = 0, resumes = 0;
    for (size_t i = 0; i < rec->events_len; i++) {
        if (rec->events[i].kind == PL__EV_NODE) {
            pauses += rec->events[i].b == PL__NODE_EV_PAUSE;
            resumes += rec->events[i].b == PL__NODE_EV_RESUME;
        }
    }
    cr_assert_gt(pauses, 0);
    cr_assert(resumes == pauses || resumes == pauses - 1, "%d pauses, %d resumes", pauses,
              resumes);
    pl_sim_result_free(&r);
}

/* A finding that needs a pause shrinks to one, said in one line. */
LEAK_TEST(pause, a_pause_shrinks_to_one_line)
{
    plan = (struct plan){.pausable = true, .fail_on_gap = true};
    pl_sim_result r = run(QUIET ",node_pause=4096", 1, false);
    for (uint64_t seed = 2; r.finding.kind == PL_FINDING_NONE && seed < 64; seed++) {
        pl_sim_result_free(&r);
        r = run(QUIET ",node_pause=4096", seed, false);
    }
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION, "%s", pl_finding_name(r.finding.kind));
    const pl__run_record *rec = pl__sim_result_record(&r);
    pl_sim_options base;
    pl_sim_options_default(&base);
    base.knobs = QUIET ",node_pause=4096";
    pl_sim_shrink_result s;
    cr_assert_eq(pl_sim_shrink(&sleeper, &base, rec->decisions, rec->decisions_len,
                               PL_FINDING_ASSERTION, NULL, &s),
                 0, "%s", s.message);
    cr_assert_not_null(s.explanation);
    cr_assert_not_null(strstr(s.explanation, "node 'sleeper' paused at "), "%s", s.explanation);
    /* The gap needs more than 5 ms: the shrinker keeps the shortest, 8 ms. */
    cr_assert_not_null(strstr(s.explanation, " for 8.000 ms (resumed at "), "%s", s.explanation);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}

/* Every kind at 65535: the longest knobs text there is (over 511 bytes
 * since the node kinds came) runs, and its replay file reads back and
 * reruns the same run. */
LEAK_TEST(pause, every_knob_at_its_longest_runs_and_replays)
{
    char knobs[PL_SIM_KNOBS_TEXT_MAX];
    size_t used = 0;
    for (uint32_t k = 0; k < PL_DECIDE__COUNT; k++) {
        if (pl__dec_kind_name(k) != NULL) {
            used += (size_t)snprintf(knobs + used, sizeof knobs - used, "%s%s=65535",
                                     used > 0 ? "," : "", pl__dec_kind_name(k));
            cr_assert_lt(used, sizeof knobs);
        }
    }
    cr_assert_gt(used, 511);
    plan = (struct plan){.pausable = true, .pause_at = 2 * PL_MS, .pause_ns = 3 * PL_MS};
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = knobs;
    o.seed = 1;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&sleeper, &o, &r), 0, "%s", r.finding.message);
    char text[PL_SIM_KNOBS_TEXT_MAX];
    cr_assert_eq(pl_sim_knobs_text(&o, text, sizeof text), 0);
    cr_assert_str_eq(text, knobs);
    char path[] = "/tmp/pollen-pause-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(pl_sim_write_replay(&sleeper, &o, &r, path), 0);
    pl_sim_result again;
    char err[512] = "";
    int rc = pl_sim_replay_file(path, &again, err, sizeof err);
    unlink(path);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_eq(again.hash, r.hash);
    pl_sim_result_free(&again);
    pl_sim_result_free(&r);
}
