/* tests/sim/test_shrink.c: the shrinker, its explanation, shrunk files.
 *
 * The scenario is a one-deviation race (a reader polled before the
 * writer) buried in a few hundred decisions of noise from busy tasks, so
 * a random seed that fails hands the shrinker a long list with many
 * non-zero values, of which one matters. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isolate/mirror.h"
#include "leakcheck.h"
#include "pollen/pollen.h"
#include "pollen/sim.h"
#include "replay.h"
#include "run.h"
#include "run_record.h"
#include "shrink.h"
#include "sim_internal.h"
#include "why.h"

/* ---- Scenario --------------------------------------------------------- */

typedef struct noisy_state {
    int written;
    int reader_first;
} noisy_state;

enum { ROLE_WRITER, ROLE_READER, ROLE_NOISE };

typedef struct worker {
    pl_future base;
    noisy_state *s;
    int role;
    int steps;
} worker;

static pl_poll_result worker_poll(pl_future *self, pl_context *cx)
{
    worker *w = (worker *)self;
    if (w->role == ROLE_WRITER) {
        w->s->written = 1;
    } else if (w->role == ROLE_READER) {
        w->s->reader_first = !w->s->written;
    }
    if (--w->steps > 0) {
        pl_waker_wake_by_ref(&cx->waker);
        return PL_PENDING;
    }
    return PL_READY;
}

static const pl_future_vtable worker_vt = {"worker", worker_poll, NULL};

static int spawn_worker(pl_executor *ex, noisy_state *s, int role, int steps, const char *name)
{
    worker w = {PL_FUTURE_INIT(&worker_vt), s, role, steps};
    return PL_SPAWN(ex, w, name, NULL);
}

static int race_setup(pl_executor *ex, void *state, const char *writer, const char *reader)
{
    static const char *const noise[4] = {"noise-1", "noise-2", "noise-3", "noise-4"};
    int rc = spawn_worker(ex, state, ROLE_WRITER, 1, writer);
    rc = rc != 0 ? rc : spawn_worker(ex, state, ROLE_READER, 1, reader);
    for (int i = 0; i < 4 && rc == 0; i++) {
        rc = spawn_worker(ex, state, ROLE_NOISE, 90, noise[i]);
    }
    return rc;
}

static int noisy_setup(pl_executor *ex, void *state)
{
    return race_setup(ex, state, "writer", "reader");
}

/* The same race between two tasks of one name. */
static int twin_setup(pl_executor *ex, void *state)
{
    return race_setup(ex, state, "twin", "twin");
}

static int noisy_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    noisy_state *s = state;
    if (s->reader_first) {
        snprintf(msg, len, "the reader was polled before the writer");
        return 1;
    }
    return 0;
}

PL_SCENARIO(noisy_scenario, .name = "t_noisy_race", .summary = "a race buried in noise",
            .state_size = sizeof(noisy_state), .setup = noisy_setup, .check = noisy_check,
            .expect = "assertion");

PL_SCENARIO(twin_scenario, .name = "t_twin_race", .summary = "the race between namesakes",
            .state_size = sizeof(noisy_state), .setup = twin_setup, .check = noisy_check,
            .expect = "assertion");

/* A failure that needs no decision at all: one task, and a check that
 * always fails. Its record is empty, so the shrinker works on an empty
 * list (a NULL list, a scratch buffer never allocated). */
typedef struct lone_state {
    int ran;
} lone_state;

typedef struct lone_task {
    pl_future base;
    lone_state *s;
} lone_task;

static pl_poll_result lone_poll(pl_future *self, pl_context *cx)
{
    (void)cx;
    ((lone_task *)self)->s->ran = 1;
    return PL_READY;
}

static const pl_future_vtable lone_vt = {"lone", lone_poll, NULL};

static int lone_setup(pl_executor *ex, void *state)
{
    lone_task t = {PL_FUTURE_INIT(&lone_vt), state};
    return PL_SPAWN(ex, t, "lone", NULL);
}

static int lone_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const lone_state *s = state;
    snprintf(msg, len, "the task ran (%d), and that is the bug", s->ran);
    return 1;
}

PL_SCENARIO(lone_scenario, .name = "t_lone_fail", .summary = "fails with no decision",
            .state_size = sizeof(lone_state), .setup = lone_setup, .check = lone_check,
            .expect = "assertion");

/* A run longer than the decision recorder's old cap (1,048,576): a
 * ticker that never stops, until the time limit calls it a livelock.
 * Every sleep it arms asks a timer-lateness decision (about 1.1M in all). */
#define TICK_NS 1000000
#define TICKS   660000

typedef struct ticker {
    pl_future base;
    pl_sleep sleep;
} ticker;

static pl_poll_result ticker_poll(pl_future *f, pl_context *cx)
{
    ticker *t = (ticker *)f;
    for (;;) {
        if (pl_poll(&t->sleep.base, cx) == PL_PENDING) {
            return PL_PENDING;
        }
        t->sleep = pl_sleep_for(TICK_NS);
    }
}

static void ticker_drop(pl_future *f)
{
    ticker *t = (ticker *)f;
    if (!(t->sleep.base.flags & PL_FUTURE_DROPPED)) {
        pl_drop(&t->sleep.base);
    }
}

static const pl_future_vtable ticker_vt = {"ticker", ticker_poll, ticker_drop};

static int ticker_setup(pl_executor *ex, void *state)
{
    (void)state;
    ticker t = {PL_FUTURE_INIT(&ticker_vt), pl_sleep_for(TICK_NS)};
    return PL_SPAWN(ex, t, "ticker", NULL);
}

PL_SCENARIO(ticker_scenario, .name = "t_long_ticker", .summary = "ticks until the time limit",
            .setup = ticker_setup, .time_limit_ns = (pl_time)TICKS * TICK_NS, .expect = "livelock");

/* One byte through a pipe, read under a 250 us timeout: a delivery that
 * I/O latency holds back 3 steps of 100 us (the default quantum) or more
 * times the read out. */
typedef struct courier_state {
    bool timed_out;
} courier_state;

typedef struct courier {
    pl_future base;
    courier_state *st;
    pl_pipe_reader r;
    pl_pipe_writer w;
    char byte;
    pl_io_write wr;
    pl_io_read rd;
    pl_timeout limit;
} courier;

static pl_poll_result courier_poll(pl_future *f, pl_context *cx)
{
    courier *c = (courier *)f;
    PL_ASYNC_BEGIN(c);
    if (pl_pipe_open(cx->ex, &c->r, &c->w) != 0) {
        return PL_READY;
    }
    c->wr = pl_pipe_write(&c->w, "x", 1);
    PL_AWAIT(cx, &c->wr);
    c->rd = pl_pipe_read(&c->r, &c->byte, 1);
    c->limit = pl_timeout_make(&c->rd.base, 250 * PL_US);
    PL_AWAIT(cx, &c->limit);
    c->st->timed_out = c->limit.result == PL_ETIMEDOUT;
    pl_pipe_writer_close(&c->w);
    pl_pipe_reader_close(&c->r);
    PL_ASYNC_END;
}

static void courier_drop(pl_future *f)
{
    courier *c = (courier *)f;
    pl_drop_child(&c->limit.base);
    pl_drop_child(&c->wr.base);
    pl_pipe_writer_close(&c->w);
    pl_pipe_reader_close(&c->r);
}

static const pl_future_vtable courier_vt = {"courier", courier_poll, courier_drop};

static int courier_setup(pl_executor *ex, void *state)
{
    courier c;
    memset(&c, 0, sizeof c);
    c.base = PL_FUTURE_INIT(&courier_vt);
    c.st = state;
    return PL_SPAWN(ex, c, "courier", NULL);
}

static int courier_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    if (((courier_state *)state)->timed_out) {
        snprintf(msg, len, "the read timed out");
        return 1;
    }
    return 0;
}

PL_SCENARIO(courier_scenario, .name = "t_courier", .summary = "a read late by I/O latency",
            .state_size = sizeof(courier_state), .setup = courier_setup, .check = courier_check,
            .expect = "assertion");

/* Four bytes through a pipe, read 10 ms later in one read: only a short
 * read (an I/O fault) makes the read return fewer. */
typedef struct sipper_state {
    bool short_read;
} sipper_state;

typedef struct sipper {
    pl_future base;
    sipper_state *st;
    pl_pipe_reader r;
    pl_pipe_writer w;
    char buf[4];
    pl_io_write_all wr;
    pl_sleep gap;
    pl_io_read rd;
} sipper;

static pl_poll_result sipper_poll(pl_future *f, pl_context *cx)
{
    sipper *c = (sipper *)f;
    PL_ASYNC_BEGIN(c);
    if (pl_pipe_open(cx->ex, &c->r, &c->w) != 0) {
        return PL_READY;
    }
    c->wr = pl_pipe_write_all(&c->w, "abcd", 4);
    PL_AWAIT(cx, &c->wr);
    c->gap = pl_sleep_for(10 * PL_MS);
    PL_AWAIT(cx, &c->gap);
    c->rd = pl_pipe_read(&c->r, c->buf, sizeof c->buf);
    PL_AWAIT(cx, &c->rd);
    c->st->short_read = c->rd.result >= 0 && c->rd.result < 4;
    pl_pipe_writer_close(&c->w);
    pl_pipe_reader_close(&c->r);
    PL_ASYNC_END;
}

static void sipper_drop(pl_future *f)
{
    sipper *c = (sipper *)f;
    pl_drop_child(&c->wr.base);
    pl_drop_child(&c->gap.base);
    pl_drop_child(&c->rd.base);
    pl_pipe_writer_close(&c->w);
    pl_pipe_reader_close(&c->r);
}

static const pl_future_vtable sipper_vt = {"sipper", sipper_poll, sipper_drop};

static int sipper_setup(pl_executor *ex, void *state)
{
    sipper c;
    memset(&c, 0, sizeof c);
    c.base = PL_FUTURE_INIT(&sipper_vt);
    c.st = state;
    return PL_SPAWN(ex, c, "sipper", NULL);
}

static int sipper_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    if (((sipper_state *)state)->short_read) {
        snprintf(msg, len, "the read was short");
        return 1;
    }
    return 0;
}

PL_SCENARIO(sipper_scenario, .name = "t_sipper", .summary = "a read cut short by an I/O fault",
            .state_size = sizeof(sipper_state), .setup = sipper_setup, .check = sipper_check,
            .expect = "assertion");

/* A task stuck behind a ticker: the waiter sleeps 200 ms, then waits on
 * a bell for a flag nobody sets; a ticker (not background) rings the bell
 * every millisecond, so the waiter is woken, finds nothing and waits
 * again, until the 10 s limit reports it stuck (deadlock at the time
 * limit). From 200 ms on any limit shows it. */
#define STUCK_AFTER_NS (200 * PL_MS)

typedef struct stuck_state {
    pl_notify bell;
    bool ready; /* never set: the bug */
} stuck_state;

typedef struct waiter {
    pl_future base;
    stuck_state *st;
    pl_sleep nap;
    pl_notified wait;
} waiter;

static pl_poll_result waiter_poll(pl_future *f, pl_context *cx)
{
    waiter *w = (waiter *)f;
    PL_ASYNC_BEGIN(w);
    w->nap = pl_sleep_for(STUCK_AFTER_NS);
    PL_AWAIT(cx, &w->nap);
    while (!w->st->ready) {
        w->wait = pl_notified_make(&w->st->bell);
        PL_AWAIT(cx, &w->wait);
    }
    PL_ASYNC_END;
}

static void waiter_drop(pl_future *f)
{
    waiter *w = (waiter *)f;
    pl_drop_child(&w->nap.base);
    pl_drop_child(&w->wait.base);
}

static const pl_future_vtable waiter_vt = {"waiter", waiter_poll, waiter_drop};

typedef struct ringer {
    pl_future base;
    stuck_state *st;
    pl_sleep tick;
} ringer;

static pl_poll_result ringer_poll(pl_future *f, pl_context *cx)
{
    ringer *r = (ringer *)f;
    PL_ASYNC_BEGIN(r);
    for (;;) {
        r->tick = pl_sleep_for(TICK_NS);
        PL_AWAIT(cx, &r->tick);
        pl_notify_waiters(&r->st->bell);
    }
    PL_ASYNC_END;
}

static void ringer_drop(pl_future *f) { pl_drop_child(&((ringer *)f)->tick.base); }

static const pl_future_vtable ringer_vt = {"ringer", ringer_poll, ringer_drop};

static int stuck_setup(pl_executor *ex, void *state)
{
    stuck_state *st = state;
    pl_notify_init(&st->bell);
    waiter w = {.base = PL_FUTURE_INIT(&waiter_vt), .st = st};
    int rc = PL_SPAWN(ex, w, "waiter", NULL);
    ringer t = {.base = PL_FUTURE_INIT(&ringer_vt), .st = st};
    return rc != 0 ? rc : PL_SPAWN(ex, t, "ringer", NULL);
}

PL_SCENARIO(stuck_scenario, .name = "t_stuck_behind_ticker",
            .summary = "a waiter stuck while a ticker runs to the time limit",
            .state_size = sizeof(stuck_state), .setup = stuck_setup,
            .time_limit_ns = 10 * PL_S, .expect = "deadlock");

/* ---- Helpers ---------------------------------------------------------- */

/* A failing random run of sc with at least `min_decisions` decisions. */
static void failing_run_of(const pl_scenario *sc, pl_sim_result *r, size_t min_decisions)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    for (uint64_t seed = 1; seed <= 500; seed++) {
        o.seed = seed;
        cr_assert_eq(pl_sim_run(sc, &o, r), 0);
        if (r->finding.kind == PL_FINDING_ASSERTION && r->decisions >= min_decisions &&
            r->nonzero_decisions >= 50) {
            return;
        }
        pl_sim_result_free(r);
    }
    cr_assert_fail("no noisy failing seed in 1..500");
}

static void failing_run(pl_sim_result *r, size_t min_decisions)
{
    failing_run_of(&noisy_scenario, r, min_decisions);
}

static const pl__dec_record *decisions_of(const pl_sim_result *r, size_t *n)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    cr_assert(rec != NULL);
    *n = rec->decisions_len;
    return rec->decisions;
}

static void shrink_run_of(const pl_scenario *sc, const pl_sim_result *in,
                          pl_sim_shrink_result *out)
{
    size_t n;
    const pl__dec_record *d = decisions_of(in, &n);
    pl_sim_options o;
    pl_sim_options_default(&o);
    cr_assert_eq(pl_sim_shrink(sc, &o, d, n, PL_FINDING_ASSERTION, NULL, out), 0, "%s",
                 out->message);
}

static void shrink_run(const pl_sim_result *in, pl_sim_shrink_result *out)
{
    shrink_run_of(&noisy_scenario, in, out);
}

static void temp_path(char *buf, size_t len, const char *tag)
{
    snprintf(buf, len, "/tmp/pollen-test-%s-%ld.replay", tag, (long)getpid());
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL, "cannot open %s", path);
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* ---- Tests ------------------------------------------------------------ */

LEAK_TEST(shrink, reduces_a_noisy_failure_to_its_cause)
{
    pl_sim_result r;
    failing_run(&r, 300);
    pl_sim_shrink_result s;
    shrink_run(&r, &s);
    cr_assert_eq(s.decisions_before, pl__sim_result_record(&r)->decisions_len);
    cr_assert(s.nonzero_before >= 50);
    cr_assert(s.nonzero_after >= 1 && s.nonzero_after <= 2, "%zu non-zero", s.nonzero_after);
    cr_assert(s.decisions_after <= 3, "%zu decisions", s.decisions_after);
    cr_assert(!s.budget_hit);
    /* The shrunk list fails alone, with the same kind. */
    size_t n;
    const pl__dec_record *d = decisions_of(&s.run, &n);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.source = PL_SIM_SOURCE_LIST;
    o.decisions = d;
    o.decisions_len = s.decisions_after;
    pl_sim_result again;
    cr_assert_eq(pl_sim_run(&noisy_scenario, &o, &again), 0);
    cr_assert_eq(again.finding.kind, PL_FINDING_ASSERTION);
    cr_assert_eq(again.hash, s.run.hash);
    pl_sim_result_free(&again);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}

LEAK_TEST(shrink, is_stable)
{
    pl_sim_result r;
    failing_run(&r, 200);
    pl_sim_shrink_result once, twice;
    shrink_run(&r, &once);
    shrink_run(&once.run, &twice);
    cr_assert_eq(twice.decisions_after, once.decisions_after);
    size_t n1, n2;
    const pl__dec_record *a = decisions_of(&once.run, &n1);
    const pl__dec_record *b = decisions_of(&twice.run, &n2);
    cr_assert(memcmp(a, b, once.decisions_after * sizeof *a) == 0);
    cr_assert_eq(once.run.hash, twice.run.hash);
    cr_assert_str_eq(once.explanation, twice.explanation);
    pl_sim_shrink_result_free(&once);
    pl_sim_shrink_result_free(&twice);
    pl_sim_result_free(&r);
}

LEAK_TEST(shrink, explanation_names_the_tasks)
{
    pl_sim_result r;
    failing_run(&r, 200);
    pl_sim_shrink_result s;
    shrink_run(&r, &s);
    cr_assert(s.explanation != NULL);
    cr_assert(strstr(s.explanation, "schedule: polled 'reader' before 'writer'") != NULL, "%s",
              s.explanation);
    cr_assert(strstr(s.explanation, "step 0 (0.000 ms)") != NULL, "%s", s.explanation);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}

/* Namesakes print with their ids: "'twin' before 'twin'" says nothing. */
LEAK_TEST(shrink, explanation_tells_namesakes_apart_by_id)
{
    pl_sim_result r;
    failing_run_of(&twin_scenario, &r, 200);
    pl_sim_shrink_result s;
    shrink_run_of(&twin_scenario, &r, &s);
    cr_assert(s.explanation != NULL);
    cr_assert(strstr(s.explanation, "schedule: polled 'twin' (#2) before 'twin' (#1)") != NULL,
              "%s", s.explanation);
    cr_assert(strstr(s.explanation, "'noise-1' (#") == NULL, "%s", s.explanation);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}

/* A failing seed of sc in 1..500, whatever its number of decisions. */
static void any_failing_run(const pl_scenario *sc, pl_sim_result *r)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    for (uint64_t seed = 1; seed <= 500; seed++) {
        o.seed = seed;
        cr_assert_eq(pl_sim_run(sc, &o, r), 0);
        if (r->finding.kind == PL_FINDING_ASSERTION) {
            return;
        }
        pl_sim_result_free(r);
    }
    cr_assert_fail("no seed of %s in 1..500 fails", sc->name);
}

/* I/O latency is told in the run's time: 3 steps of 100 us is 0.300 ms. */
LEAK_TEST(shrink, explanation_says_how_late_a_delivery_is)
{
    pl_sim_result r;
    any_failing_run(&courier_scenario, &r);
    pl_sim_shrink_result s;
    shrink_run_of(&courier_scenario, &r, &s);
    cr_assert(strstr(s.explanation, "I/O latency: a delivery on endpoint #") != NULL, "%s",
              s.explanation);
    cr_assert(strstr(s.explanation, "arrives 0.300 ms late: 3 latency steps of 0.100 ms") != NULL,
              "%s", s.explanation);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}

/* A fault decision says which fault, on which endpoint. */
LEAK_TEST(shrink, explanation_names_the_fault_and_the_endpoint)
{
    pl_sim_result r;
    any_failing_run(&sipper_scenario, &r);
    pl_sim_shrink_result s;
    shrink_run_of(&sipper_scenario, &r, &s);
    cr_assert(strstr(s.explanation, "I/O fault: a short transfer on pipe (read end) (endpoint #") !=
                  NULL,
              "%s", s.explanation);
    cr_assert(strstr(s.explanation, "); moves 1 of 4 bytes\n") != NULL, "%s", s.explanation);
    cr_assert(strstr(s.explanation, "got fault choice") == NULL, "%s", s.explanation);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}

LEAK_TEST(shrink, refuses_a_list_that_does_not_fail)
{
    pl_sim_shrink_result s;
    int rc = pl_sim_shrink(&noisy_scenario, NULL, NULL, 0, PL_FINDING_ASSERTION, NULL, &s);
    cr_assert_eq(rc, PL_EINVAL);
    cr_assert(strstr(s.message, "do not reproduce assertion") != NULL, "%s", s.message);
    pl_sim_shrink_result_free(&s);
}

LEAK_TEST(shrink, run_budget_is_respected)
{
    pl_sim_result r;
    failing_run(&r, 200);
    size_t n;
    const pl__dec_record *d = decisions_of(&r, &n);
    pl_sim_shrink_limits lim = {.runs_max = 5};
    pl_sim_shrink_result s;
    cr_assert_eq(pl_sim_shrink(&noisy_scenario, NULL, d, n, PL_FINDING_ASSERTION, &lim, &s), 0);
    cr_assert(s.budget_hit);
    cr_assert(s.runs <= 6, "%llu runs", (unsigned long long)s.runs); /* + the final run */
    cr_assert_eq(s.run.finding.kind, PL_FINDING_ASSERTION, "a cut shrink still fails");
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}

/* A failing run of seed 1 written to a fresh replay file at `in`. */
static void failing_replay(pl_sim_result *r, const char *tag, char *in, size_t len)
{
    failing_run(r, 200);
    temp_path(in, len, tag);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = 1;
    cr_assert_eq(pl_sim_write_replay(&noisy_scenario, &o, r, in), 0);
}

LEAK_TEST(shrink, file_round_trip)
{
    pl_sim_result r;
    char in[256], out[256];
    failing_replay(&r, "in", in, sizeof in);
    pl__shrink_default_out(in, out, sizeof out);
    char err[512] = "";
    pl_sim_shrink_result s;
    cr_assert_eq(pl__shrink_file_ex(in, NULL, NULL, &s, err, sizeof err), 0, "%s", err);
    char *text = slurp(out);
    cr_assert(strncmp(text, "pollen-replay 2\n# shrunk-from ", 30) == 0, "%s", text);
    cr_assert(strstr(text, "'reader'") != NULL);
    free(text);
    pl_sim_result re;
    cr_assert_eq(pl_sim_replay_file(out, &re, err, sizeof err), 0, "%s", err);
    cr_assert_eq(re.finding.kind, PL_FINDING_ASSERTION);
    cr_assert_eq(re.hash, s.run.hash);
    pl_sim_result_free(&re);
    /* The plain entry point writes the same file. */
    remove(out);
    cr_assert_eq(pl__shrink_file(in, out, err, sizeof err), 0, "%s", err);
    cr_assert_eq(pl_sim_replay_file(out, &re, err, sizeof err), 0, "%s", err);
    pl_sim_result_free(&re);
    /* Knobs that do not fit the caller's buffer are an error, said. */
    pl__replay rp;
    const pl_scenario *sc = NULL;
    int kind = 0;
    pl_sim_options lo;
    char tiny[8];
    err[0] = '\0';
    cr_assert_eq(pl__shrink_load(in, &rp, &sc, &kind, &lo, tiny, sizeof tiny, err, sizeof err),
                 PL_EINVAL);
    cr_assert(strstr(err, "knobs") != NULL, "%s", err);
    pl__replay_free(&rp);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
    remove(in);
    remove(out);
}

LEAK_TEST(shrink, file_errors_are_explained)
{
    char err[512] = "";
    pl_sim_shrink_result s;
    int rc = pl__shrink_file_ex("/nonexistent/x.replay", NULL, NULL, &s, err, sizeof err);
    cr_assert(rc < 0);
    cr_assert(err[0] != '\0');
    pl_sim_shrink_result_free(&s);
    /* A clean run's replay has nothing to shrink. */
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.source = PL_SIM_SOURCE_LIST;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&noisy_scenario, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE);
    char in[256];
    temp_path(in, sizeof in, "clean");
    cr_assert_eq(pl_sim_write_replay(&noisy_scenario, &o, &r, in), 0);
    rc = pl__shrink_file_ex(in, NULL, NULL, &s, err, sizeof err);
    cr_assert_eq(rc, PL_EINVAL);
    cr_assert(strstr(err, "nothing to shrink") != NULL, "%s", err);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
    remove(in);
}

/* `pollen why` in this process, on a shrunk replay: every departure's
 * twin passes, the point of no return is found and named, and a second
 * analysis gives the same answer (its continuations are seeded from the
 * file). */
LEAK_TEST(shrink, why_names_the_point_of_no_return_and_the_twins)
{
    pl_sim_result r;
    char in[256], out[256];
    failing_replay(&r, "why", in, sizeof in);
    pl__shrink_default_out(in, out, sizeof out);
    char err[512] = "";
    cr_assert_eq(pl__shrink_file(in, out, err, sizeof err), 0, "%s", err);
    pl__why_result *a = calloc(2, sizeof *a);
    cr_assert(a != NULL);
    cr_assert_eq(pl__why_file(out, 0, NULL, NULL, NULL, &a[0], err, sizeof err), 0, "%s", err);
    cr_assert_eq(pl__why_file(out, 0, NULL, NULL, NULL, &a[1], err, sizeof err), 0, "%s", err);
    cr_assert_eq(a[0].finding.kind, PL_FINDING_ASSERTION);
    cr_assert_eq(a[0].runs, PL__WHY_RUNS_DEFAULT);
    cr_assert(a[0].departures > 0 && a[0].twins_len == a[0].departures);
    for (size_t i = 0; i < a[0].twins_len; i++) {
        cr_assert_eq(a[0].twins[i].outcome, PL_FINDING_NONE, "twin of decision %llu",
                     (unsigned long long)a[0].twins[i].d.index);
    }
    cr_assert(a[0].found);
    cr_assert(a[0].probes_len >= 2 && a[0].probes[a[0].probes_len - 1].k == a[0].decisions);
    if (!a[0].inevitable_at_start) {
        cr_assert_eq(a[0].decisive.index, a[0].point - 1);
        cr_assert(a[0].decisive.has_step && a[0].decisive.text[0] != '\0');
        cr_assert_lt(a[0].before.failed * 100, a[0].before.runs * PL__WHY_INEVITABLE);
    }
    cr_assert_eq(a[0].point, a[1].point);
    cr_assert_eq(a[0].probes_len, a[1].probes_len);
    for (size_t i = 0; i < a[0].probes_len; i++) {
        cr_assert_eq(a[0].probes[i].k, a[1].probes[i].k);
        cr_assert_eq(a[0].probes[i].failed, a[1].probes[i].failed);
    }
    /* A file that cannot be read is an error that says why. */
    err[0] = '\0';
    cr_assert(pl__why_file("/nonexistent/x.replay", 0, NULL, NULL, NULL, &a[1], err, sizeof err) <
              0);
    cr_assert(strstr(err, "/nonexistent/x.replay") != NULL, "%s", err);
    free(a);
    pl_sim_result_free(&r);
    remove(in);
    remove(out);
}

/* Stops the analysis at its `stop_at`-th progress call. */
static bool stop_at_call(void *ud, const pl__why_probe *p, uint64_t lo, uint64_t hi)
{
    (void)p;
    (void)lo;
    (void)hi;
    int *left = ud;
    return --*left > 0;
}

/* A stopped analysis (`why --time`) keeps what it measured: stopped in
 * the bisect, the point is bracketed by two measured prefixes and no
 * twin is tried; stopped after the bisect, the point is found and the
 * twins stop where they were. */
LEAK_TEST(shrink, why_stopped_keeps_what_it_measured)
{
    pl_sim_result r;
    char in[256], out[256];
    failing_replay(&r, "why_stop", in, sizeof in);
    pl__shrink_default_out(in, out, sizeof out);
    char err[512] = "";
    pl__why_result *a = calloc(2, sizeof *a);
    cr_assert(a != NULL);
    cr_assert_eq(pl__why_file(in, 0, NULL, NULL, NULL, &a[0], err, sizeof err), 0, "%s", err);
    cr_assert(!a[0].stopped && !a[0].bracketed && a[0].found);
    cr_assert(!a[0].inevitable_at_start && a[0].probes_len >= 4, "a bisect to stop inside");
    int left = 3; /* k = 0, k = N, one bisect step */
    cr_assert_eq(pl__why_file(in, 0, NULL, stop_at_call, &left, &a[1], err, sizeof err), 0, "%s",
                 err);
    cr_assert(a[1].stopped && a[1].bracketed && !a[1].found);
    cr_assert_eq(a[1].probes_len, 3);
    cr_assert_lt(a[1].before.k + 1, a[1].after.k);
    cr_assert_lt(a[1].before.failed * 100, a[1].before.runs * PL__WHY_INEVITABLE);
    cr_assert_geq(a[1].after.failed * 100, a[1].after.runs * PL__WHY_INEVITABLE);
    cr_assert(a[1].before.k <= a[0].point - 1 && a[0].point <= a[1].after.k);
    cr_assert_eq(a[1].twins_len, 0);
    cr_assert_eq(a[1].departures, a[0].departures);
    /* Stopped at the first twin: the point is whole, one twin tried. */
    left = (int)a[0].probes_len + 1;
    cr_assert_eq(pl__why_file(in, 0, NULL, stop_at_call, &left, &a[1], err, sizeof err), 0, "%s",
                 err);
    cr_assert(a[1].stopped && a[1].found && !a[1].bracketed);
    cr_assert_eq(a[1].point, a[0].point);
    cr_assert_eq(a[1].twins_len, a[0].departures > 0 ? 1u : 0u);
    free(a);
    pl_sim_result_free(&r);
    remove(in);
}

LEAK_TEST(shrink, default_output_path)
{
    char buf[128];
    pl__shrink_default_out("out/a_1.replay", buf, sizeof buf);
    cr_assert_str_eq(buf, "out/a_1.shrunk.replay");
    pl__shrink_default_out("crash-abc", buf, sizeof buf);
    cr_assert_str_eq(buf, "crash-abc.shrunk.replay");
}

/* A finding with no decision (production's own schedule fails): the
 * shrinker has nothing to remove and must say so, not fail. */
LEAK_TEST(shrink, a_finding_with_no_decisions)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&lone_scenario, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION);
    size_t n;
    decisions_of(&r, &n);
    cr_assert_eq(n, 0, "%zu decisions", n);
    pl_sim_shrink_result s;
    cr_assert_eq(pl_sim_shrink(&lone_scenario, &o, NULL, 0, PL_FINDING_ASSERTION, NULL, &s), 0,
                 "%s", s.message);
    cr_assert_eq(s.decisions_after, 0);
    cr_assert_eq(s.run.finding.kind, PL_FINDING_ASSERTION);
    cr_assert(strstr(s.explanation, "production schedule itself fails") != NULL, "%s",
              s.explanation);
    pl_sim_shrink_result_free(&s);
    /* Through a replay file, as `pollen shrink` does. */
    char in[256], out[256], err[512] = "";
    temp_path(in, sizeof in, "lone");
    pl__shrink_default_out(in, out, sizeof out);
    cr_assert_eq(pl_sim_write_replay(&lone_scenario, &o, &r, in), 0);
    cr_assert_eq(pl__shrink_file_ex(in, NULL, NULL, &s, err, sizeof err), 0, "%s", err);
    pl_sim_result re;
    cr_assert_eq(pl_sim_replay_file(out, &re, err, sizeof err), 0, "%s", err);
    cr_assert_eq(re.finding.kind, PL_FINDING_ASSERTION);
    pl_sim_result_free(&re);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
    remove(in);
    remove(out);
}

/* A run of about 1.1M decisions (past the recorder's old cap, where the
 * record was cut and the replay differed) is recorded whole, replays
 * exactly, and its shrunk replay replays exactly too. */
LEAK_TEST(shrink, a_long_run_replays_and_its_shrunk_replay_too)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = 7;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&ticker_scenario, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_LIVELOCK, "%s", r.finding.message);
    const pl__run_record *rec = pl__sim_result_record(&r);
    cr_assert(!rec->decisions_truncated);
    cr_assert_eq(rec->decisions_len, r.decisions);
    cr_assert_gt(rec->decisions_len, (size_t)1 << 20, "%zu decisions", rec->decisions_len);
    char in[256], out[256], err[512] = "";
    temp_path(in, sizeof in, "long");
    pl__shrink_default_out(in, out, sizeof out);
    cr_assert_eq(pl_sim_write_replay(&ticker_scenario, &o, &r, in), 0);
    pl_sim_result re;
    cr_assert_eq(pl_sim_replay_file(in, &re, err, sizeof err), 0, "%s", err);
    cr_assert_eq(re.hash, r.hash);
    pl_sim_result_free(&re);
    /* One candidate (half the list) leaves a long list with non-default
     * decisions in it, the case whose shrunk file used to differ. */
    pl_sim_shrink_limits lim = {.runs_max = 1};
    pl_sim_shrink_result s;
    cr_assert_eq(pl__shrink_file_ex(in, NULL, &lim, &s, err, sizeof err), 0, "%s", err);
    cr_assert_gt(s.nonzero_after, 0);
    cr_assert_eq(pl_sim_replay_file(out, &re, err, sizeof err), 0, "%s", err);
    cr_assert_eq(re.finding.kind, PL_FINDING_LIVELOCK);
    cr_assert_eq(re.hash, s.run.hash);
    pl_sim_result_free(&re);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
    remove(in);
    remove(out);
}

/* The crash mirror (shared memory the CLI reads after a worker died)
 * keeps the first `cap` decisions and counts the rest, so a replay file
 * written from it says it is truncated. */
LEAK_TEST(shrink, the_crash_mirror_counts_what_it_drops)
{
    pl__dec_record buf[8];
    volatile uint64_t len = 0;
    pl__sim_record_to(buf, 8, &len);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = 3;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&noisy_scenario, &o, &r), 0);
    pl__sim_record_to(NULL, 0, NULL);
    size_t n;
    const pl__dec_record *d = decisions_of(&r, &n);
    cr_assert_gt(n, 8);
    cr_assert_eq(len, n, "%llu mirrored, %zu consulted", (unsigned long long)len, n);
    cr_assert(memcmp(buf, d, sizeof buf) == 0);
    pl_sim_result_free(&r);
}

/* A truncated record is only a prefix of its run: no shrunk replay file
 * is written from one (it would replay something else). */
LEAK_TEST(shrink, no_shrunk_replay_from_a_truncated_record)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = 3;
    o.keep_decisions = false; /* records nothing: truncated at 0 */
    pl_sim_shrink_result s;
    memset(&s, 0, sizeof s);
    cr_assert_eq(pl_sim_run(&noisy_scenario, &o, &s.run), 0);
    cr_assert(pl__sim_result_record(&s.run)->decisions_truncated);
    char out[256];
    temp_path(out, sizeof out, "trunc");
    cr_assert_eq(pl_sim_write_shrunk_replay(&noisy_scenario, &o, &s, out), PL_EINVAL);
    cr_assert_eq(access(out, F_OK), -1, "nothing written");
    pl_sim_shrink_result_free(&s);
}

/* The same replay file shrinks to the same bytes every time: the budget
 * is candidate runs, and nothing else decides where a shrink ends. */
LEAK_TEST(shrink, the_same_file_shrinks_to_the_same_bytes)
{
    pl_sim_result r;
    failing_run(&r, 300);
    char in[256], a[256], b[256], err[512] = "";
    temp_path(in, sizeof in, "det-in");
    temp_path(a, sizeof a, "det-a");
    temp_path(b, sizeof b, "det-b");
    pl_sim_options o;
    pl_sim_options_default(&o);
    cr_assert_eq(pl_sim_write_replay(&noisy_scenario, &o, &r, in), 0);
    pl_sim_shrink_result s1, s2;
    cr_assert_eq(pl__shrink_file_ex(in, a, NULL, &s1, err, sizeof err), 0, "%s", err);
    cr_assert_eq(pl__shrink_file_ex(in, b, NULL, &s2, err, sizeof err), 0, "%s", err);
    cr_assert(!s1.budget_hit && !s1.clock_hit);
    cr_assert_eq(s1.runs, s2.runs);
    char *ta = slurp(a), *tb = slurp(b);
    cr_assert_str_eq(ta, tb);
    free(ta);
    free(tb);
    pl_sim_shrink_result_free(&s1);
    pl_sim_shrink_result_free(&s2);
    pl_sim_result_free(&r);
    remove(in);
    remove(a);
    remove(b);
}

/* A wall-clock net that stops a shrink says so: that result alone may
 * differ from one shrink to the next. */
LEAK_TEST(shrink, a_shrink_stopped_by_the_clock_says_so)
{
    pl_sim_result r;
    failing_run(&r, 300);
    char in[256], out[256], err[512] = "";
    temp_path(in, sizeof in, "clock-in");
    temp_path(out, sizeof out, "clock-out");
    pl_sim_options o;
    pl_sim_options_default(&o);
    cr_assert_eq(pl_sim_write_replay(&noisy_scenario, &o, &r, in), 0);
    pl_sim_shrink_limits lim = {.time_ns = 1};
    pl_sim_shrink_result s;
    cr_assert_eq(pl__shrink_file_ex(in, out, &lim, &s, err, sizeof err), 0, "%s", err);
    cr_assert(s.clock_hit && s.budget_hit);
    char *text = slurp(out);
    cr_assert(strstr(text, "wall-clock safety net (not reproducible)") != NULL, "%s", text);
    free(text);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
    remove(in);
    remove(out);
}

/* A deadlock found at the virtual time limit shrinks the limit too: the
 * smallest whole millisecond that still shows the same stuck task, which
 * the shrunk replay records and replays. */
LEAK_TEST(shrink, a_finding_at_the_time_limit_shrinks_the_limit)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = 3;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&stuck_scenario, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_DEADLOCK, "%s", r.finding.message);
    cr_assert(strncmp(r.finding.message, "virtual time limit of 10.000 s", 30) == 0, "%s",
              r.finding.message);
    cr_assert_gt(r.nonzero_decisions, 0);
    char in[256], out[256], err[512] = "";
    temp_path(in, sizeof in, "limit");
    pl__shrink_default_out(in, out, sizeof out);
    cr_assert_eq(pl_sim_write_replay(&stuck_scenario, &o, &r, in), 0);
    pl_sim_shrink_result s;
    cr_assert_eq(pl__shrink_file_ex(in, NULL, NULL, &s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(s.limit_before, 10 * PL_S);
    cr_assert_eq(s.limit_after, STUCK_AFTER_NS, "%lld ns", (long long)s.limit_after);
    cr_assert_eq(s.nonzero_after, 0);
    cr_assert(strstr(s.run.finding.message, "virtual time limit of 0.200 s") != NULL, "%s",
              s.run.finding.message);
    cr_assert(strstr(s.run.finding.message, "1 task(s) parked that no timer will wake") != NULL,
              "%s", s.run.finding.message);
    cr_assert_str_eq(s.run.finding.task_name, "waiter");
    char *text = slurp(out);
    cr_assert(strstr(text, "\ntime-limit-ns 200000000\n") != NULL, "%s", text);
    cr_assert(strstr(text, "# virtual time limit shrunk from 10.000 s to 0.200 s") != NULL, "%s",
              text);
    free(text);
    pl_sim_result re;
    cr_assert_eq(pl_sim_replay_file(out, &re, err, sizeof err), 0, "%s", err);
    cr_assert_eq(re.finding.kind, PL_FINDING_DEADLOCK);
    cr_assert_eq(re.hash, s.run.hash);
    cr_assert_lt(re.steps, r.steps / 20, "%llu steps", (unsigned long long)re.steps);
    pl_sim_result_free(&re);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
    remove(in);
    remove(out);
}

/* The replay key that carries a shrunk limit: read back as written,
 * refused when 0 or not a number, absent (0: the scenario's) otherwise. */
LEAK_TEST(shrink, the_time_limit_key_round_trips)
{
    static const char good[] = "pollen-replay 2\nseed 3\ntime-limit-ns 250000000\n"
                               "decisions 0\nend\n";
    char err[256] = "";
    pl__replay rp;
    cr_assert_eq(pl__replay_parse_buffer(good, sizeof good - 1, &rp, err, sizeof err), 0, "%s",
                 err);
    cr_assert_eq(rp.time_limit_ns, 250 * PL_MS);
    pl_sim_options o;
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    pl__replay_options(&rp, &o, knobs, sizeof knobs);
    cr_assert_eq(o.time_limit_ns, 250 * PL_MS);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(pl__replay_write(f, &rp), 0);
    fclose(f);
    cr_assert(strstr(text, "\ntime-limit-ns 250000000\n") != NULL, "%s", text);
    free(text);
    pl__replay_free(&rp);
    static const char zero[] = "pollen-replay 2\nseed 3\ntime-limit-ns 0\ndecisions 0\nend\n";
    cr_assert_eq(pl__replay_parse_buffer(zero, sizeof zero - 1, &rp, err, sizeof err),
                 PL_EFORMAT);
    cr_assert(strstr(err, "time-limit-ns <1 to") != NULL, "%s", err);
    pl__replay_free(&rp);
    static const char none[] = "pollen-replay 2\nseed 3\ndecisions 0\nend\n";
    cr_assert_eq(pl__replay_parse_buffer(none, sizeof none - 1, &rp, err, sizeof err), 0);
    cr_assert_eq(rp.time_limit_ns, 0);
    pl__replay_free(&rp);
}
