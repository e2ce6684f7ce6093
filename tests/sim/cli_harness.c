/* tests/sim/cli_harness.c: a user's own harness binary, as README.md
 * describes it: pl_main over the registered scenarios plus extra ones
 * passed as an argument. test_cli.c runs it to reach the paths the
 * `pollen` binary's scenarios never take: a hang inside a poll, a
 * nondeterministic scenario, a pl_sometimes that is never true, an
 * ordinary finding with a full replay file, a teardown that releases a
 * task handle, and user code that prints.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pollen/sim.h>
#include <pollen/sim_node.h>

#include "cli_selftests.h"

/* ---- selftest_assert (registered): check() fails on some seeds -------- */

typedef struct flipper {
    pl_future base;
    bool *fired;
    int round;
} flipper;

static pl_poll_result flipper_poll(pl_future *f, pl_context *cx)
{
    flipper *self = (flipper *)f;
    PL_ASYNC_BEGIN(self);
    for (self->round = 0; self->round < 8; self->round++) {
        *self->fired = *self->fired || PL_BUGGIFY(cx);
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable flipper_vtable = {"flipper", flipper_poll, NULL};

static int assert_setup(pl_executor *ex, void *state)
{
    flipper fl = {.base = PL_FUTURE_INIT(&flipper_vtable), .fired = state};
    return PL_SPAWN(ex, fl, "flipper", NULL);
}

static int assert_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    if (*(bool *)state) {
        snprintf(msg, len, "a buggify site fired");
        return 1;
    }
    return 0;
}

PL_SCENARIO(selftest_assert_scenario,
            .name = "selftest_assert",
            .summary = "CLI self-test: check() fails when a PL_BUGGIFY fired",
            .state_size = sizeof(bool),
            .setup = assert_setup,
            .check = assert_check,
            .expect = "assertion");

/* ---- selftest_hang (extra): a poll that never returns ------------------- */

typedef struct hanger {
    pl_future base;
} hanger;

/* Volatile: the compiler may not prove the loop endless. */
static volatile bool hang_forever = true;

static pl_poll_result hanger_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    while (hang_forever) {
        sleep(1);
    }
    return PL_PENDING;
}

static const pl_future_vtable hanger_vtable = {"hanger", hanger_poll, NULL};

static int hang_setup(pl_executor *ex, void *state)
{
    (void)state;
    hanger h = {.base = PL_FUTURE_INIT(&hanger_vtable)};
    return PL_SPAWN(ex, h, "hanger", NULL);
}

static const pl_scenario selftest_hang = {
    .name = "selftest_hang",
    .summary = "CLI self-test: a poll that never returns (the watchdog's case)",
    .setup = hang_setup,
    .expect = "livelock",
};

/* ---- selftest_hang_late (extra): the 14th run of a process hangs ------- */

static pl_poll_result quick_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    return PL_READY;
}

static const pl_future_vtable quick_vtable = {"quick", quick_poll, NULL};

/* Runs made by this process: with one job and seeds from 0, the 14th is
 * seed 13, and a resumed campaign's process starts counting again. */
static int hang_late_runs;

static int hang_late_setup(pl_executor *ex, void *state)
{
    if (++hang_late_runs == 14) {
        return hang_setup(ex, state);
    }
    pl_future q = PL_FUTURE_INIT(&quick_vtable);
    return PL_SPAWN(ex, q, "quick", NULL);
}

static const pl_scenario selftest_hang_late = {
    .name = "selftest_hang_late",
    .summary = "CLI self-test: the 14th run of each process never returns from a poll",
    .setup = hang_late_setup,
    .expect = "livelock",
};

/* The same hang, registered: the shrinker finds its scenarios by name in
 * the registry, so a shrink of a hang that sleeps needs one. */
PL_SCENARIO(selftest_sleep_hang_sc, .name = "selftest_sleep_hang",
            .summary = "CLI self-test: a poll that sleeps forever (the shrink's watchdog)",
            .setup = hang_setup, .expect = "livelock");

/* ---- selftest_teardown (extra): teardown releases a task handle -------- */

/* The handle stays in the state until teardown: releasing it needs the
 * executor, so teardown must run before the executor is destroyed, on the
 * real backend as under the simulator. */
static int teardown_setup(pl_executor *ex, void *state)
{
    pl_future q = PL_FUTURE_INIT(&quick_vtable);
    return PL_SPAWN(ex, q, "quick", (pl_task **)state);
}

static void teardown_release(void *state) { pl_task_release(*(pl_task **)state); }

static const pl_scenario selftest_teardown = {
    .name = "selftest_teardown",
    .summary = "CLI self-test: teardown releases a task handle",
    .state_size = sizeof(pl_task *),
    .setup = teardown_setup,
    .teardown = teardown_release,
};

/* ---- selftest_chatter (extra): user code printing to stdout ------------- */

typedef struct chatter {
    pl_future base;
    bool *fired;
    int round;
} chatter;

/* 72 KiB per run, more than a pipe holds: long stretches without a
 * newline, lines that look like pollen's JSON, a control byte, and no
 * newline at the end. */
static void chatter_say(int round)
{
    for (int i = 0; i < 9 * 1024 / 32; i++) {
        fputs("0123456789abcdef0123456789abcdef", stdout);
    }
    printf(" round %d\n{\"kind\":\"not pollen's\",", round);
}

static pl_poll_result chatter_poll(pl_future *f, pl_context *cx)
{
    chatter *self = (chatter *)f;
    PL_ASYNC_BEGIN(self);
    for (self->round = 0; self->round < 8; self->round++) {
        *self->fired = *self->fired || PL_BUGGIFY(cx);
        chatter_say(self->round);
        PL_YIELD(cx);
    }
    fputs("\x1b[31mthe last words, no newline", stdout);
    PL_ASYNC_END;
}

static const pl_future_vtable chatter_vtable = {"chatter", chatter_poll, NULL};

static int chatter_setup(pl_executor *ex, void *state)
{
    chatter c = {.base = PL_FUTURE_INIT(&chatter_vtable), .fired = state};
    return PL_SPAWN(ex, c, "chatter", NULL);
}

static const pl_scenario selftest_chatter = {
    .name = "selftest_chatter",
    .summary = "CLI self-test: prints 72 KiB to stdout per run; check() fails when a "
               "PL_BUGGIFY fired",
    .state_size = sizeof(bool),
    .setup = chatter_setup,
    .check = assert_check,
    .expect = "assertion",
};

/* ---- selftest_leak (extra): user code keeps 1 MiB per run ---------------- */

enum { LEAK_BYTES = 1 << 20 };

/* The blocks stay reachable through this list, so LeakSanitizer at exit
 * does not count them: the leak is across runs, not lost memory. */
static void *leaked_blocks;

static int leak_setup(pl_executor *ex, void *state)
{
    (void)state;
    void **block = malloc(LEAK_BYTES);
    if (block == NULL) {
        return PL_ENOMEM;
    }
    memset(block, 0xab, LEAK_BYTES); /* touched: it counts in the RSS */
    *block = leaked_blocks;
    leaked_blocks = block;
    pl_future q = PL_FUTURE_INIT(&quick_vtable);
    return PL_SPAWN(ex, q, "quick", NULL);
}

static const pl_scenario selftest_leak = {
    .name = "selftest_leak",
    .summary = "CLI self-test: every run keeps 1 MiB that no run frees",
    .setup = leak_setup,
};

/* ---- selftest_oom (extra): the 6th run of a process is SIGKILLed -------- */

/* What the OOM killer does to a worker grown by earlier seeds: the seed
 * it happens to run is innocent, and run alone it passes. */
static int oom_runs;

static int oom_setup(pl_executor *ex, void *state)
{
    (void)state;
    if (++oom_runs == 6) {
        raise(SIGKILL);
    }
    pl_future q = PL_FUTURE_INIT(&quick_vtable);
    return PL_SPAWN(ex, q, "quick", NULL);
}

static const pl_scenario selftest_oom = {
    .name = "selftest_oom",
    .summary = "CLI self-test: the 6th run of each process is killed as the OOM killer would",
    .setup = oom_setup,
};

/* ---- selftest_runs (extra): fails in a process that ran > 20 seeds ------ */

static int runs_in_process;

static int runs_setup(pl_executor *ex, void *state)
{
    (void)state;
    runs_in_process++;
    pl_future q = PL_FUTURE_INIT(&quick_vtable);
    return PL_SPAWN(ex, q, "quick", NULL);
}

static int runs_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    (void)state;
    if (runs_in_process > 20) {
        snprintf(msg, len, "this process ran %d seeds", runs_in_process);
        return 1;
    }
    return 0;
}

static const pl_scenario selftest_runs = {
    .name = "selftest_runs",
    .summary = "CLI self-test: check() fails in a process past its 20th run",
    .setup = runs_setup,
    .check = runs_check,
};

/* ---- selftest_join_tree (registered): a join parked in two branches ---
 * `why` names the task its decisive decision polled and draws where that
 * task is parked: here both branches of a join. The setter runs first in
 * production's order; a schedule decision that polls the joiner first
 * parks its flag branch with no waker, and the setter then wakes nobody
 * (the sleep branch only rescues it 10 ms later: a lost wakeup). */

typedef struct tree_state {
    bool flag;
} tree_state;

typedef struct flag_wait {
    pl_future base;
    const tree_state *st;
} flag_wait;

static pl_poll_result flag_wait_poll(pl_future *f, pl_context *cx)
{
    (void)cx;
    return ((flag_wait *)f)->st->flag ? PL_READY : PL_PENDING; /* registers nothing */
}

static const pl_future_vtable flag_wait_vtable = {"flag_wait", flag_wait_poll, NULL};

typedef struct tree_joiner {
    pl_future base;
    tree_state *st;
    flag_wait left;
    pl_sleep right;
    pl_join2 join;
} tree_joiner;

static pl_poll_result tree_joiner_poll(pl_future *f, pl_context *cx)
{
    tree_joiner *self = (tree_joiner *)f;
    PL_ASYNC_BEGIN(self);
    self->left = (flag_wait){.base = PL_FUTURE_INIT(&flag_wait_vtable), .st = self->st};
    self->right = pl_sleep_for(10 * PL_MS);
    self->join = pl_join2_make(&self->left.base, &self->right.base);
    PL_AWAIT(cx, &self->join);
    PL_ASYNC_END;
}

static void tree_joiner_drop(pl_future *f)
{
    tree_joiner *self = (tree_joiner *)f;
    if (self->base.resume != 0) {
        pl_drop_child(&self->join.base);
    }
}

static const pl_future_vtable tree_joiner_vtable = {"tree_joiner", tree_joiner_poll,
                                                    tree_joiner_drop};

typedef struct tree_setter {
    pl_future base;
    bool *flag;
} tree_setter;

static pl_poll_result tree_setter_poll(pl_future *f, pl_context *cx)
{
    (void)cx;
    *((tree_setter *)f)->flag = true; /* and wakes nobody */
    return PL_READY;
}

static const pl_future_vtable tree_setter_vtable = {"tree_setter", tree_setter_poll, NULL};

static int tree_setup(pl_executor *ex, void *state)
{
    tree_state *st = state;
    tree_setter s = {.base = PL_FUTURE_INIT(&tree_setter_vtable), .flag = &st->flag};
    tree_joiner j = {.base = PL_FUTURE_INIT(&tree_joiner_vtable), .st = st};
    int rc = PL_SPAWN(ex, s, "setter", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, j, "joiner", NULL);
}

PL_SCENARIO(selftest_join_tree_sc, .name = "selftest_join_tree",
            .summary = "CLI self-test: a join parked in two branches loses one's wakeup",
            .state_size = sizeof(tree_state), .setup = tree_setup, .expect = "lost_wakeup");

/* ---- Only under POLLEN_HARNESS_CASE: scenarios a normal run must not
 * meet, since two of them stop pl_main before any command runs. -------- */

static int failing_setup(pl_executor *ex, void *state)
{
    (void)ex;
    (void)state;
    return PL_EINVAL;
}

static int quick_setup(pl_executor *ex, void *state)
{
    (void)state;
    pl_future q = PL_FUTURE_INIT(&quick_vtable);
    return PL_SPAWN(ex, q, "quick", NULL);
}

static const pl_scenario case_bad_expect = {
    .name = "selftest_bad_expect",
    .summary = "CLI self-test: expects a finding kind that does not exist",
    .expect = "lost_wakeups",
    .setup = quick_setup,
};

static const pl_scenario case_bad_name = {
    .name = "Selftest-Bad",
    .summary = "CLI self-test: a name that is not [a-z0-9_]+",
    .setup = quick_setup,
};

static const pl_scenario case_setup_error = {
    .name = "selftest_setup_error",
    .summary = "CLI self-test: setup returns PL_EINVAL",
    .setup = failing_setup,
};

static int noop_boot(pl_executor *ex, void *ud)
{
    (void)ex;
    (void)ud;
    return 0;
}

/* A node on a host outside 10.0.0.0/8: pl_sim_node_add refuses it. */
static int bad_host_setup(pl_executor *ex, void *state)
{
    (void)state;
    const pl_node_def db = {.name = "db", .host = "192.168.0.5", .boot = noop_boot};
    return pl_sim_node_add(ex, &db);
}

static const pl_scenario case_bad_host = {
    .name = "selftest_bad_host",
    .summary = "CLI self-test: a node on a host outside 10.0.0.0/8",
    .setup = bad_host_setup,
};

static const pl_scenario case_missed = {
    .name = "selftest_missed",
    .summary = "CLI self-test: a known-bug scenario whose bug is gone (always clean)",
    .expect = "deadlock",
    .setup = quick_setup,
};

/* The scenario POLLEN_HARNESS_CASE names, or NULL. */
static const pl_scenario *harness_case(void)
{
    static const pl_scenario *const cases[] = {&case_bad_expect, &case_bad_name,
                                               &case_setup_error, &case_bad_host, &case_missed};
    static const char *const names[] = {"bad_expect", "bad_name", "setup_error", "bad_host",
                                        "missed"};
    const char *want = getenv("POLLEN_HARNESS_CASE");
    for (size_t i = 0; want != NULL && i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(want, names[i]) == 0) {
            return cases[i];
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    static const pl_scenario *extra[] = {&selftest_hang,      &selftest_hang_late,
                                         &selftest_nondet,    &selftest_sometimes,
                                         &selftest_teardown,  &selftest_chatter,
                                         &selftest_leak,      &selftest_runs,
                                         &selftest_oom,       &selftest_premise,
                                         NULL,                NULL};
    extra[sizeof extra / sizeof extra[0] - 2] = harness_case();
    return pl_main(argc, argv, extra);
}
