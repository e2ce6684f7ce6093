/* tests/sim/test_backtrace.c: spawn sites and async backtraces of parked
 * tasks (sim/src/backtrace.c), in the finding's text and its structured
 * pl_finding.tasks.
 *
 * Each scenario records the lines of its awaits and spawns with
 * __LINE__ (AWAIT_AT, SPAWN_AT below), so the expected chains follow the
 * source: a deadlock two coroutines deep, a lost wakeup in a hand-written
 * future, a task stuck at the virtual time limit beside a ticker, a select
 * and a join parked in both of their branches (drawn as a tree).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <pollen/sim.h>

#include "leakcheck.h"

/* PL_AWAIT that first notes its line in `var` (the macro's __LINE__ is
 * the line it is invoked on, as is PL_AWAIT's inside it). */
#define AWAIT_AT(var, cx, child)                                                                   \
    do {                                                                                           \
        (var) = __LINE__;                                                                          \
        PL_AWAIT(cx, child);                                                                       \
    } while (0)

static int spawn_line[4];

#define SPAWN_AT(i, ex, fut, name, handle)                                                         \
    (spawn_line[i] = __LINE__, PL_SPAWN(ex, fut, name, handle))

/* ---- A deadlock two coroutines deep ------------------------------------ */

static int inner_line, outer_line;

typedef struct deep_state {
    pl_notify never; /* nobody notifies it */
} deep_state;

typedef struct inner {
    pl_future base;
    deep_state *st;
    pl_notified wait;
} inner;

static pl_poll_result inner_poll(pl_future *f, pl_context *cx)
{
    inner *self = (inner *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = pl_notified_make(&self->st->never);
    AWAIT_AT(inner_line, cx, &self->wait);
    PL_ASYNC_END;
}

static void inner_drop(pl_future *f) { pl_drop_child(&((inner *)f)->wait.base); }

static const pl_future_vtable inner_vt = {"inner", inner_poll, inner_drop};

typedef struct outer {
    pl_future base;
    deep_state *st;
    inner in;
} outer;

static pl_poll_result outer_poll(pl_future *f, pl_context *cx)
{
    outer *self = (outer *)f;
    PL_ASYNC_BEGIN(self);
    self->in = (inner){.base = PL_FUTURE_INIT(&inner_vt), .st = self->st};
    AWAIT_AT(outer_line, cx, &self->in);
    PL_ASYNC_END;
}

static void outer_drop(pl_future *f) { pl_drop_child(&((outer *)f)->in.base); }

static const pl_future_vtable outer_vt = {"outer", outer_poll, outer_drop};

static int deep_setup(pl_executor *ex, void *state)
{
    deep_state *st = state;
    pl_notify_init(&st->never);
    outer a = {.base = PL_FUTURE_INIT(&outer_vt), .st = st};
    outer b = {.base = PL_FUTURE_INIT(&outer_vt), .st = st};
    int rc = SPAWN_AT(0, ex, a, "same", NULL);
    return rc != 0 ? rc : SPAWN_AT(1, ex, b, "same", NULL);
}

PL_SCENARIO(bt_deep_sc, .name = "bt_deep", .state_size = sizeof(deep_state),
            .setup = deep_setup);

/* ---- A lost wakeup in a hand-written future ----------------------------- */

static int flag_waiter_line;

typedef struct flag_state {
    bool flag;
} flag_state;

/* Waits for st->flag; keeps a waker clone, which the setter never wakes. */
typedef struct flag_wait {
    pl_future base;
    flag_state *st;
    pl_waker waker;
} flag_wait;

static pl_poll_result flag_wait_poll(pl_future *f, pl_context *cx)
{
    flag_wait *self = (flag_wait *)f;
    if (self->st->flag) {
        pl_waker_slot_clear(&self->waker);
        return PL_READY;
    }
    pl_waker_slot_set(&self->waker, &cx->waker);
    return PL_PENDING;
}

static void flag_wait_drop(pl_future *f) { pl_waker_slot_clear(&((flag_wait *)f)->waker); }

static const pl_future_vtable flag_wait_vt = {"flag_wait", flag_wait_poll, flag_wait_drop};

typedef struct flag_waiter {
    pl_future base;
    flag_state *st;
    flag_wait wait;
} flag_waiter;

static pl_poll_result flag_waiter_poll(pl_future *f, pl_context *cx)
{
    flag_waiter *self = (flag_waiter *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = (flag_wait){PL_FUTURE_INIT(&flag_wait_vt), self->st, PL_WAKER_EMPTY};
    AWAIT_AT(flag_waiter_line, cx, &self->wait);
    PL_ASYNC_END;
}

static void flag_waiter_drop(pl_future *f) { pl_drop_child(&((flag_waiter *)f)->wait.base); }

static const pl_future_vtable flag_waiter_vt = {"flag_waiter", flag_waiter_poll,
                                                flag_waiter_drop};

/* Sets the flag after 1 ms and forgets to wake the waiter. */
typedef struct flag_setter {
    pl_future base;
    flag_state *st;
    pl_sleep gap;
} flag_setter;

static pl_poll_result flag_setter_poll(pl_future *f, pl_context *cx)
{
    flag_setter *self = (flag_setter *)f;
    PL_ASYNC_BEGIN(self);
    self->gap = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->gap);
    self->st->flag = true;
    PL_ASYNC_END;
}

static void flag_setter_drop(pl_future *f) { pl_drop_child(&((flag_setter *)f)->gap.base); }

static const pl_future_vtable flag_setter_vt = {"flag_setter", flag_setter_poll,
                                                flag_setter_drop};

static int flag_setup(pl_executor *ex, void *state)
{
    flag_state *st = state;
    flag_waiter w = {.base = PL_FUTURE_INIT(&flag_waiter_vt), .st = st};
    flag_setter s = {.base = PL_FUTURE_INIT(&flag_setter_vt), .st = st};
    int rc = SPAWN_AT(2, ex, w, "waiter", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, s, "setter", NULL);
}

PL_SCENARIO(bt_flag_sc, .name = "bt_flag", .state_size = sizeof(flag_state), .setup = flag_setup);

/* ---- Stuck at the time limit beside a ticker ---------------------------- */

static int tick_line;

typedef struct tick_state {
    pl_notify never;
} tick_state;

typedef struct ticking {
    pl_future base;
    pl_interval iv;
    pl_interval_tick tick;
} ticking;

static pl_poll_result ticking_poll(pl_future *f, pl_context *cx)
{
    ticking *self = (ticking *)f;
    PL_ASYNC_BEGIN(self);
    self->iv = pl_interval_make(5 * PL_MS);
    for (;;) {
        self->tick = pl_interval_tick_make(&self->iv);
        AWAIT_AT(tick_line, cx, &self->tick);
    }
    PL_ASYNC_END;
}

static void ticking_drop(pl_future *f) { pl_drop_child(&((ticking *)f)->tick.base); }

static const pl_future_vtable ticking_vt = {"ticking", ticking_poll, ticking_drop};

static int tick_setup(pl_executor *ex, void *state)
{
    tick_state *st = state;
    pl_notify_init(&st->never);
    ticking tk = {.base = PL_FUTURE_INIT(&ticking_vt)};
    outer w = {.base = PL_FUTURE_INIT(&outer_vt), .st = (deep_state *)(void *)st};
    int rc = PL_SPAWN(ex, tk, "ticker", NULL);
    return rc != 0 ? rc : SPAWN_AT(3, ex, w, "stuck", NULL);
}

PL_SCENARIO(bt_tick_sc, .name = "bt_tick", .state_size = sizeof(tick_state),
            .setup = tick_setup, .time_limit_ns = 100 * PL_MS);

/* ---- A select parked in both branches ---------------------------------- */

static int picker_line;

/* Selects between `inner` (two futures deep) and a bare pl_notified: both
 * stay PENDING; the chain (frames) is the first branch's, the one the
 * select polled first, however deep it is and though the second one is
 * polled over it, and the tree has both. */
typedef struct picker {
    pl_future base;
    deep_state *st;
    inner first;
    pl_notified second;
    pl_future *branches[2];
    pl_select sel;
} picker;

static pl_poll_result picker_poll(pl_future *f, pl_context *cx)
{
    picker *self = (picker *)f;
    PL_ASYNC_BEGIN(self);
    self->first = (inner){.base = PL_FUTURE_INIT(&inner_vt), .st = self->st};
    self->second = pl_notified_make(&self->st->never);
    self->branches[0] = &self->first.base;
    self->branches[1] = &self->second.base;
    self->sel = pl_select_make(self->branches, 2);
    AWAIT_AT(picker_line, cx, &self->sel);
    PL_ASYNC_END;
}

static void picker_drop(pl_future *f)
{
    picker *self = (picker *)f;
    if (self->base.resume != 0) {
        pl_drop_child(&self->sel.base);
    }
}

static const pl_future_vtable picker_vt = {"picker", picker_poll, picker_drop};

static int picker_setup(pl_executor *ex, void *state)
{
    deep_state *st = state;
    pl_notify_init(&st->never);
    picker p = {.base = PL_FUTURE_INIT(&picker_vt), .st = st};
    return PL_SPAWN(ex, p, "picker", NULL);
}

PL_SCENARIO(bt_select_sc, .name = "bt_select", .state_size = sizeof(deep_state),
            .setup = picker_setup);

/* ---- A join parked in both branches, one losing its wakeup ------------- */

static int joiner_line;

typedef struct joiner_state {
    flag_state flag;
    deep_state deep;
} joiner_state;

/* Joins a flag_waiter (the setter sets its flag and wakes nobody) and an
 * `inner` parked for good: both branches stay PENDING. */
typedef struct joiner {
    pl_future base;
    joiner_state *st;
    flag_waiter left;
    inner right;
    pl_join2 join;
} joiner;

static pl_poll_result joiner_poll(pl_future *f, pl_context *cx)
{
    joiner *self = (joiner *)f;
    PL_ASYNC_BEGIN(self);
    self->left = (flag_waiter){.base = PL_FUTURE_INIT(&flag_waiter_vt), .st = &self->st->flag};
    self->right = (inner){.base = PL_FUTURE_INIT(&inner_vt), .st = &self->st->deep};
    self->join = pl_join2_make(&self->left.base, &self->right.base);
    AWAIT_AT(joiner_line, cx, &self->join);
    PL_ASYNC_END;
}

static void joiner_drop(pl_future *f)
{
    joiner *self = (joiner *)f;
    if (self->base.resume != 0) {
        pl_drop_child(&self->join.base);
    }
}

static const pl_future_vtable joiner_vt = {"joiner", joiner_poll, joiner_drop};

static int joiner_setup(pl_executor *ex, void *state)
{
    joiner_state *st = state;
    pl_notify_init(&st->deep.never);
    joiner j = {.base = PL_FUTURE_INIT(&joiner_vt), .st = st};
    flag_setter s = {.base = PL_FUTURE_INIT(&flag_setter_vt), .st = &st->flag};
    int rc = PL_SPAWN(ex, j, "joiner", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, s, "setter", NULL);
}

PL_SCENARIO(bt_join_sc, .name = "bt_join", .state_size = sizeof(joiner_state),
            .setup = joiner_setup);

/* ---- A join whose second child gives up, and one too wide to keep ----- */

/* Polls a pl_notified (PENDING), then returns READY anyway, dropping it:
 * what it polled leaves the tree with it. */
typedef struct gives_up {
    pl_future base;
    deep_state *st;
    pl_notified wait;
} gives_up;

static pl_poll_result gives_up_poll(pl_future *f, pl_context *cx)
{
    gives_up *self = (gives_up *)f;
    self->wait = pl_notified_make(&self->st->never);
    cr_assert_eq(pl_poll(&self->wait.base, cx), PL_PENDING);
    pl_drop_child(&self->wait.base);
    return PL_READY;
}

static const pl_future_vtable gives_up_vt = {"gives_up", gives_up_poll, NULL};

enum { WIDE = 20 }; /* children of the wide join: more than a tree keeps */

static int fan_two_line, fan_all_line;

/* kind 0: pl_join2(inner, gives_up); kind 1: pl_join_all of WIDE inners. */
typedef struct join_state {
    deep_state deep;
    int kind;
} join_state;

typedef struct fan {
    pl_future base;
    join_state *st;
    inner in[WIDE];
    gives_up quit;
    pl_future *children[WIDE];
    pl_join2 two;
    pl_join_all all;
} fan;

static pl_poll_result fan_poll(pl_future *f, pl_context *cx)
{
    fan *self = (fan *)f;
    PL_ASYNC_BEGIN(self);
    for (int i = 0; i < WIDE; i++) {
        self->in[i] = (inner){.base = PL_FUTURE_INIT(&inner_vt), .st = &self->st->deep};
        self->children[i] = &self->in[i].base;
    }
    if (self->st->kind == 0) {
        self->quit = (gives_up){.base = PL_FUTURE_INIT(&gives_up_vt), .st = &self->st->deep};
        self->two = pl_join2_make(&self->in[0].base, &self->quit.base);
        AWAIT_AT(fan_two_line, cx, &self->two);
    } else {
        self->all = pl_join_all_make(self->children, WIDE);
        AWAIT_AT(fan_all_line, cx, &self->all);
    }
    PL_ASYNC_END;
}

static void fan_drop(pl_future *f)
{
    fan *self = (fan *)f;
    if (self->base.resume != 0) {
        pl_drop_child(self->st->kind == 0 ? &self->two.base : &self->all.base);
    }
}

static const pl_future_vtable fan_vt = {"fan", fan_poll, fan_drop};

static int fan_setup(pl_executor *ex, void *state, int kind)
{
    join_state *st = state;
    pl_notify_init(&st->deep.never);
    st->kind = kind;
    fan f = {.base = PL_FUTURE_INIT(&fan_vt), .st = st};
    return PL_SPAWN(ex, f, "fan", NULL);
}

static int quit_setup(pl_executor *ex, void *state) { return fan_setup(ex, state, 0); }
static int wide_setup(pl_executor *ex, void *state) { return fan_setup(ex, state, 1); }

PL_SCENARIO(bt_quit_sc, .name = "bt_quit", .state_size = sizeof(join_state),
            .setup = quit_setup);
PL_SCENARIO(bt_wide_sc, .name = "bt_wide", .state_size = sizeof(join_state),
            .setup = wide_setup);

/* ---- Checks ------------------------------------------------------------- */

static void run_zero(const pl_scenario *sc, pl_sim_result *r)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.strategy = "bounded:0";
    cr_assert_eq(pl_sim_run(sc, &o, r), 0, "%s", r->finding.message);
}

/* func NULL: a frame without an await point. */
static void expect_frame(const pl_finding_frame *f, const char *future, int line,
                         const char *func)
{
    cr_assert_str_eq(f->future, future);
    cr_assert_eq(f->line, line, "%s awaited at line %d, want %d", future, f->line, line);
    if (func == NULL) {
        cr_assert_null(f->file);
        cr_assert_null(f->function);
        return;
    }
    cr_assert_str_eq(f->file, "test_backtrace.c");
    cr_assert_str_eq(f->function, func);
}

static void expect_text(const pl_finding *fd, const char *want)
{
    cr_assert_not_null(strstr(fd->message, want), "want <%s> in:\n%s", want, fd->message);
}

LEAK_TEST(backtrace, a_deadlock_names_the_chain_of_each_parked_task)
{
    pl_sim_result r;
    run_zero(&bt_deep_sc, &r);
    const pl_finding *fd = &r.finding;
    cr_assert_eq(fd->kind, PL_FINDING_DEADLOCK, "%s", fd->message);
    cr_assert_eq(fd->tasks_len, 2);
    for (uint32_t i = 0; i < 2; i++) {
        const pl_finding_task *t = &fd->tasks[i];
        cr_assert_eq(t->id, i + 1);
        cr_assert_eq(t->frames_len, 3);
        expect_frame(&t->frames[0], "outer", outer_line, "outer_poll");
        expect_frame(&t->frames[1], "inner", inner_line, "inner_poll");
        expect_frame(&t->frames[2], "pl_notified", 0, NULL);
        char site[64];
        snprintf(site, sizeof site, "test_backtrace.c:%d", spawn_line[i]);
        cr_assert_str_eq(t->spawn_site, site);
        cr_assert_str_eq(t->spawn_function, "deep_setup");
        cr_assert_str_eq(t->name, "same");
    }
    char want[256];
    snprintf(want, sizeof want,
             "parked in: outer (test_backtrace.c:%d in outer_poll) > inner "
             "(test_backtrace.c:%d in inner_poll) > pl_notified",
             outer_line, inner_line);
    expect_text(fd, want);
    snprintf(want, sizeof want, "'same' (#2, spawned at test_backtrace.c:%d in deep_setup)",
             spawn_line[1]);
    expect_text(fd, want);
    pl_sim_result_free(&r);
}

LEAK_TEST(backtrace, a_lost_wakeup_names_where_the_task_awaits)
{
    pl_sim_result r;
    run_zero(&bt_flag_sc, &r);
    const pl_finding *fd = &r.finding;
    cr_assert_eq(fd->kind, PL_FINDING_LOST_WAKEUP, "%s: %s", pl_finding_name(fd->kind),
                 fd->message);
    cr_assert_eq(fd->tasks_len, 1);
    cr_assert_eq(fd->tasks[0].frames_len, 2);
    expect_frame(&fd->tasks[0].frames[0], "flag_waiter", flag_waiter_line, "flag_waiter_poll");
    expect_frame(&fd->tasks[0].frames[1], "flag_wait", 0, NULL);
    char want[256];
    snprintf(want, sizeof want,
             "parked in: flag_waiter (test_backtrace.c:%d in flag_waiter_poll) > flag_wait",
             flag_waiter_line);
    expect_text(fd, want);
    snprintf(want, sizeof want, "'waiter' (#1) was spawned at test_backtrace.c:%d in flag_setup",
             spawn_line[2]);
    expect_text(fd, want);
    pl_sim_result_free(&r);
}

/* Found before the time limit (the watch of tasks parked behind a
 * ticker): the stuck task's chain, and the ticker that kept the run
 * alive, with the timer it armed next. */
LEAK_TEST(backtrace, a_deadlock_behind_a_ticker_names_the_chain_and_the_ticker)
{
    pl_sim_result r;
    run_zero(&bt_tick_sc, &r);
    const pl_finding *fd = &r.finding;
    cr_assert_eq(fd->kind, PL_FINDING_DEADLOCK, "%s: %s", pl_finding_name(fd->kind),
                 fd->message);
    cr_assert_lt(fd->time_ns, 100 * PL_MS, "%s", fd->message);
    expect_text(fd, "while only timers kept the run alive (running: 'ticker' (#1, ");
    expect_text(fd, "armed by 'ticker' (#1) wakes 'ticker' (#1)");
    char want[256];
    snprintf(want, sizeof want,
             "parked in: outer (test_backtrace.c:%d in outer_poll) > inner "
             "(test_backtrace.c:%d in inner_poll) > pl_notified",
             outer_line, inner_line);
    expect_text(fd, want);
    snprintf(want, sizeof want, "'stuck' (#2, spawned at test_backtrace.c:%d in tick_setup)",
             spawn_line[3]);
    expect_text(fd, want);
    pl_sim_result_free(&r);
}

/* The tree's node i: its frame and depth. */
static void expect_node(const pl_finding_task *t, uint32_t i, uint32_t depth, const char *future,
                        int line, const char *func)
{
    cr_assert_lt(i, t->tree_len);
    cr_assert_eq(t->tree[i].depth, depth, "node %u (%s) at depth %u, want %u", i, future,
                 t->tree[i].depth, depth);
    expect_frame(&t->tree[i].frame, future, line, func);
}

/* A one-branch task's tree is its chain, and its message the chain's
 * line (the tests above): no tree drawn. */
LEAK_TEST(backtrace, a_one_branch_tree_is_the_chain)
{
    pl_sim_result r;
    run_zero(&bt_deep_sc, &r);
    const pl_finding_task *t = &r.finding.tasks[0];
    cr_assert_eq(t->tree_len, 3);
    cr_assert_eq(t->tree_branches, 1);
    cr_assert(!t->tree_cut);
    expect_node(t, 0, 0, "outer", outer_line, "outer_poll");
    expect_node(t, 1, 1, "inner", inner_line, "inner_poll");
    expect_node(t, 2, 2, "pl_notified", 0, NULL);
    cr_assert_null(strstr(r.finding.message, "`- "), "%s", r.finding.message);
    pl_sim_result_free(&r);
}

/* A join whose two children are both PENDING: the finding about its
 * task draws both branches, each with its await, and keeps the tree
 * in pre-order; frames stay the first branch. */
LEAK_TEST(backtrace, a_join_shows_both_pending_branches)
{
    pl_sim_result r;
    run_zero(&bt_join_sc, &r);
    const pl_finding *fd = &r.finding;
    cr_assert_eq(fd->kind, PL_FINDING_LOST_WAKEUP, "%s: %s", pl_finding_name(fd->kind),
                 fd->message);
    cr_assert_eq(fd->tasks_len, 1);
    const pl_finding_task *t = &fd->tasks[0];
    cr_assert_eq(t->frames_len, 4);
    expect_frame(&t->frames[0], "joiner", joiner_line, "joiner_poll");
    expect_frame(&t->frames[1], "pl_join2", 0, NULL);
    expect_frame(&t->frames[2], "flag_waiter", flag_waiter_line, "flag_waiter_poll");
    expect_frame(&t->frames[3], "flag_wait", 0, NULL);
    cr_assert_eq(t->tree_len, 6);
    cr_assert_eq(t->tree_branches, 2);
    cr_assert(!t->tree_cut);
    expect_node(t, 0, 0, "joiner", joiner_line, "joiner_poll");
    expect_node(t, 1, 1, "pl_join2", 0, NULL);
    expect_node(t, 2, 2, "flag_waiter", flag_waiter_line, "flag_waiter_poll");
    expect_node(t, 3, 3, "flag_wait", 0, NULL);
    expect_node(t, 4, 2, "inner", inner_line, "inner_poll");
    expect_node(t, 5, 3, "pl_notified", 0, NULL);
    char want[512];
    snprintf(want, sizeof want,
             "\n  parked in:\n"
             "    joiner (test_backtrace.c:%d in joiner_poll)\n"
             "    `- pl_join2\n"
             "       +- flag_waiter (test_backtrace.c:%d in flag_waiter_poll)\n"
             "       |  `- flag_wait\n"
             "       `- inner (test_backtrace.c:%d in inner_poll)\n"
             "          `- pl_notified\n",
             joiner_line, flag_waiter_line, inner_line);
    expect_text(fd, want);
    pl_sim_result_free(&r);
}

LEAK_TEST(backtrace, a_select_shows_both_parked_branches)
{
    pl_sim_result r;
    run_zero(&bt_select_sc, &r);
    const pl_finding *fd = &r.finding;
    cr_assert_eq(fd->kind, PL_FINDING_DEADLOCK, "%s", fd->message);
    cr_assert_eq(fd->tasks_len, 1);
    const pl_finding_task *t = &fd->tasks[0];
    cr_assert_eq(t->frames_len, 4);
    expect_frame(&t->frames[0], "picker", picker_line, "picker_poll");
    expect_frame(&t->frames[1], "pl_select", 0, NULL);
    expect_frame(&t->frames[2], "inner", inner_line, "inner_poll");
    expect_frame(&t->frames[3], "pl_notified", 0, NULL);
    cr_assert_eq(t->tree_len, 5);
    cr_assert_eq(t->tree_branches, 2);
    expect_node(t, 4, 2, "pl_notified", 0, NULL);
    char want[512];
    snprintf(want, sizeof want,
             "\n      parked in:\n"
             "        picker (test_backtrace.c:%d in picker_poll)\n"
             "        `- pl_select\n"
             "           +- inner (test_backtrace.c:%d in inner_poll)\n"
             "           |  `- pl_notified\n"
             "           `- pl_notified",
             picker_line, inner_line);
    expect_text(fd, want);
    pl_sim_result_free(&r);
}

/* A branch whose future returned READY is not parked: the join's task
 * is left with one branch, and the one-line chain. */
LEAK_TEST(backtrace, a_branch_that_completed_leaves_the_tree)
{
    pl_sim_result r;
    run_zero(&bt_quit_sc, &r);
    const pl_finding *fd = &r.finding;
    cr_assert_eq(fd->kind, PL_FINDING_DEADLOCK, "%s", fd->message);
    const pl_finding_task *t = &fd->tasks[0];
    cr_assert_eq(t->tree_branches, 1);
    cr_assert_eq(t->tree_len, 4);
    expect_node(t, 3, 3, "pl_notified", 0, NULL);
    char want[256];
    snprintf(want, sizeof want,
             "parked in: fan (test_backtrace.c:%d in fan_poll) > pl_join2 > inner "
             "(test_backtrace.c:%d in inner_poll) > pl_notified",
             fan_two_line, inner_line);
    expect_text(fd, want);
    cr_assert_null(strstr(fd->message, "gives_up"), "%s", fd->message);
    pl_sim_result_free(&r);
}

/* A join of WIDE parked children: the chain and the first 8 other
 * branches (16 futures) are kept, each child whole, and the tree says
 * the rest is left out. */
LEAK_TEST(backtrace, a_tree_too_wide_keeps_whole_branches_and_says_so)
{
    pl_sim_result r;
    run_zero(&bt_wide_sc, &r);
    const pl_finding *fd = &r.finding;
    cr_assert_eq(fd->kind, PL_FINDING_DEADLOCK, "%s", fd->message);
    const pl_finding_task *t = &fd->tasks[0];
    cr_assert(t->tree_cut);
    cr_assert(!t->frames_cut);
    cr_assert_eq(t->tree_len, 4 + 16);
    cr_assert_eq(t->tree_branches, 9);
    expect_node(t, 0, 0, "fan", fan_all_line, "fan_poll");
    expect_node(t, 1, 1, "pl_join_all", 0, NULL);
    for (uint32_t i = 2; i < t->tree_len; i += 2) {
        expect_node(t, i, 2, "inner", inner_line, "inner_poll");
        expect_node(t, i + 1, 3, "pl_notified", 0, NULL);
    }
    expect_text(fd, "(deeper or wider than kept: the rest is left out)");
    pl_sim_result_free(&r);
}
