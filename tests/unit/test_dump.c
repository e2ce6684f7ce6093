/* Task dumps and the flight recorder (pollen/dump.h) on the real executor.
 *
 * The dumps are written to memory streams and read back as text: a dump
 * of a task parked in a join of two pending children must show both, and
 * a branch that is READY must not show. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pollen/pollen.h>

#include "leakcheck.h"

TestSuite(dump, .fini = pl_test_leak_check);

/* ---- Futures: a task parked in a join of a gate and another task -------- */

/* A leaf that is READY once *open, and never keeps a waker: opening it
 * wakes nobody (what a lost wakeup looks like). */
typedef struct gate {
    pl_future base;
    const bool *open;
} gate;

static pl_poll_result gate_poll(pl_future *f, pl_context *cx)
{
    (void)cx;
    return *((gate *)f)->open ? PL_READY : PL_PENDING;
}

static const pl_future_vtable gate_vtable = {"gate", gate_poll, NULL};

typedef struct shared {
    bool open;
    pl_notify b;
    pl_task *child;
} shared;

typedef struct child_fut {
    pl_future base;
    shared *sh;
    pl_notified wait;
} child_fut;

static pl_poll_result child_poll(pl_future *f, pl_context *cx)
{
    child_fut *self = (child_fut *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = pl_notified_make(&self->sh->b);
    PL_AWAIT(cx, &self->wait);
    PL_ASYNC_END;
}

static const pl_future_vtable child_vtable = {"child", child_poll, NULL};

typedef struct parent_fut {
    pl_future base;
    shared *sh;
    gate gate;
    pl_join join;
    pl_join2 both;
} parent_fut;

static pl_poll_result parent_poll(pl_future *f, pl_context *cx)
{
    parent_fut *self = (parent_fut *)f;
    PL_ASYNC_BEGIN(self);
    self->gate = (gate){PL_FUTURE_INIT(&gate_vtable), &self->sh->open};
    self->join = pl_join_make(self->sh->child);
    self->both = pl_join2_make(&self->gate.base, &self->join.base);
    PL_AWAIT(cx, &self->both);
    PL_ASYNC_END;
}

static void parent_drop(pl_future *f)
{
    parent_fut *self = (parent_fut *)f;
    if (self->base.resume != 0 && !pl_future_is_done(&self->both.base)) {
        pl_drop(&self->both.base);
    }
}

static const pl_future_vtable parent_vtable = {"parent", parent_poll, parent_drop};

/* Spawns the child and the parent joining it; both park at once. */
static void spawn_join(pl_executor *ex, shared *sh)
{
    sh->open = false;
    pl_notify_init(&sh->b);
    child_fut c;
    memset(&c, 0, sizeof c);
    c.base = PL_FUTURE_INIT(&child_vtable);
    c.sh = sh;
    cr_assert_eq(PL_SPAWN(ex, c, "child", &sh->child), 0);
    parent_fut p;
    memset(&p, 0, sizeof p);
    p.base = PL_FUTURE_INIT(&parent_vtable);
    p.sh = sh;
    cr_assert_eq(PL_SPAWN(ex, p, "parent", NULL), 0);
}

/* The dump as a string (the caller frees it). */
static char *dump_of(pl_executor *ex, pl_dump_format format, int expect_rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    cr_assert_not_null(out);
    cr_assert_eq(pl_executor_dump(ex, out, format), expect_rc);
    fclose(out);
    return buf;
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(hay, needle); p != NULL; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

static void teardown(pl_executor *ex, shared *sh)
{
    pl_task_release(sh->child);
    pl_executor_destroy(ex);
}

Test(dump, parked_join_shows_both_branches)
{
    pl_executor *ex;
    cr_assert_eq(pl_executor_create(&ex, NULL), 0);
    shared sh;
    spawn_join(ex, &sh);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    char *text = dump_of(ex, PL_DUMP_TEXT, 0);
    cr_assert_not_null(strstr(text, "2 unfinished tasks"), "%s", text);
    cr_assert_not_null(strstr(text, "task #2 'parent'"), "%s", text);
    /* The parent's tree: its await, the join2, and both pending children. */
    cr_assert_not_null(strstr(text, "    parent (test_dump.c:"), "%s", text);
    cr_assert_not_null(strstr(text, "    `- pl_join2\n"), "%s", text);
    cr_assert_not_null(strstr(text, "       +- gate\n"), "%s", text);
    cr_assert_not_null(strstr(text, "       `- join [waits on join: the task finished]"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "    child (test_dump.c:"), "%s", text);
    cr_assert_not_null(strstr(text, "    `- pl_notified [waits on notify: "), "%s", text);
    /* No recorder: no spawn sites or park times, and no clone counts. */
    cr_assert_null(strstr(text, "spawned at"), "%s", text);
    cr_assert_null(strstr(text, "waker clones"), "%s", text);
    free(text);

    char *json = dump_of(ex, PL_DUMP_JSON, 0);
    cr_assert_not_null(strstr(json, "\"future\":\"pl_join2\",\"await\":null,\"waits_on\":null,"
                                    "\"condition\":null,\"children\":[{\"future\":\"gate\""),
                       "%s", json);
    cr_assert_not_null(strstr(json, "},{\"future\":\"join\""), "%s", json);
    cr_assert_eq(count_of(json, "\"state\":\"parked\""), 2, "%s", json);
    cr_assert_not_null(strstr(json, "\"recorder\":null}\n"), "%s", json);
    free(json);
    teardown(ex, &sh);
}

/* A branch that is READY at the dump's poll leaves the tree; the dump's
 * poll is a real one, so the parent moves on (its join stays). */
Test(dump, ready_branch_leaves_the_tree)
{
    pl_executor *ex;
    cr_assert_eq(pl_executor_create(&ex, NULL), 0);
    shared sh;
    spawn_join(ex, &sh);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    sh.open = true; /* nobody is woken: the dump's poll finds the gate READY */
    char *text = dump_of(ex, PL_DUMP_TEXT, 0);
    cr_assert_null(strstr(text, "gate"), "%s", text);
    cr_assert_not_null(strstr(text, "    `- pl_join2\n       `- join"), "%s", text);
    free(text);
    teardown(ex, &sh);
}

/* A parked task that could go on but was never woken completes in the
 * dump's poll, and the dump says so. */
Test(dump, unwoken_ready_task_completes_in_the_dump)
{
    pl_executor *ex;
    cr_assert_eq(pl_executor_create(&ex, NULL), 0);
    bool open = false;
    gate g = {PL_FUTURE_INIT(&gate_vtable), &open};
    cr_assert_eq(PL_SPAWN(ex, g, "gated", NULL), 0);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    open = true;
    char *text = dump_of(ex, PL_DUMP_TEXT, 0);
    cr_assert_not_null(strstr(text, "task #1 'gated'\n  state: completed_in_dump; the dump's poll "
                                    "returned READY"),
                       "%s", text);
    free(text);
    cr_assert_eq(pl_executor_live_tasks(ex), 0);
    pl_executor_destroy(ex);
}

/* ---- A dump requested from a signal handler, served by pl_run ---------- */

static pl_executor *signalled;

static void on_usr1(int sig)
{
    (void)sig;
    pl_executor_request_dump(signalled);
}

typedef struct sleeper {
    pl_future base;
    pl_sleep sleep;
} sleeper;

static pl_poll_result sleeper_poll(pl_future *f, pl_context *cx)
{
    sleeper *self = (sleeper *)f;
    PL_ASYNC_BEGIN(self);
    self->sleep = pl_sleep_for(300 * PL_MS);
    PL_AWAIT(cx, &self->sleep);
    PL_ASYNC_END;
}

static const pl_future_vtable sleeper_vtable = {"sleeper", sleeper_poll, NULL};

static void *kill_soon(void *arg)
{
    usleep(50 * 1000);
    pthread_kill(*(pthread_t *)arg, SIGUSR1);
    return NULL;
}

Test(dump, signal_requests_a_dump_served_while_blocked)
{
    pl_executor *ex;
    cr_assert_eq(pl_executor_create(&ex, NULL), 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    pl_executor_set_dump_output(ex, out, PL_DUMP_TEXT);
    signalled = ex;
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    sleeper s;
    memset(&s, 0, sizeof s);
    s.base = PL_FUTURE_INIT(&sleeper_vtable);
    cr_assert_eq(PL_SPAWN(ex, s, "sleeper", NULL), 0);
    pthread_t self = pthread_self();
    pthread_t killer;
    cr_assert_eq(pthread_create(&killer, NULL, kill_soon, &self), 0);
    cr_assert_eq(pl_run(ex), 0);
    pthread_join(killer, NULL);
    signal(SIGUSR1, SIG_DFL);
    fclose(out);
    cr_assert_not_null(strstr(buf, "task #1 'sleeper'\n  state: parked"), "%s", buf);
    cr_assert_not_null(strstr(buf, "    sleeper (test_dump.c:"), "%s", buf);
    cr_assert_not_null(strstr(buf, "    `- sleep\n"), "%s", buf);
    free(buf);
    pl_executor_destroy(ex);
}

/* ---- The flight recorder -------------------------------------------------- */

Test(dump, recorder_keeps_events_and_sites)
{
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.recorder_events = 3; /* rounded up to 4: the ring wraps below */
    pl_executor *ex;
    cr_assert_eq(pl_executor_create(&ex, &o), 0);
    shared sh;
    spawn_join(ex, &sh);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    pl_recorder_event ev[16];
    size_t n = pl_executor_recorder_events(ex, ev, 16);
    /* spawn, spawn, pending #1, pending #2: four events, nothing lost. */
    cr_assert_eq(n, 4);
    cr_assert_str_eq(ev[0].kind, "spawn");
    cr_assert_eq(ev[0].task, 1);
    cr_assert_str_eq(ev[2].kind, "pending");
    cr_assert_eq(ev[3].task, 2);
    cr_assert_eq(ev[3].a, 1); /* its first poll */
    cr_assert_eq(ev[3].seq, 4);

    /* The notify wakes the child outside any poll (no event: a wake is
     * seen in the queue after the poll that made it); the dump probes the
     * parent; the run completes the child, whose join wakes the parent,
     * and polls the parent: four events more, past the ring's 4. */
    pl_notify_one(&sh.b);
    char *text = dump_of(ex, PL_DUMP_TEXT, 0);
    cr_assert_not_null(strstr(text, "task #2 'parent' spawned at test_dump.c:"), "%s", text);
    cr_assert_not_null(strstr(text, "in spawn_join\n  state: parked for "), "%s", text);
    cr_assert_not_null(strstr(text, "task #1 'child' spawned at test_dump.c:"), "%s", text);
    cr_assert_not_null(strstr(text, "\n  state: runnable\n"), "%s", text);
    /* The production waker counts no clones, recorder or not. */
    cr_assert_null(strstr(text, "waker clones"), "%s", text);
    cr_assert_not_null(strstr(text, "flight recorder, the latest last:\n"), "%s", text);
    cr_assert_not_null(strstr(text, "ms probe        task#2       poll=2\n"), "%s", text);
    free(text);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    n = pl_executor_recorder_events(ex, ev, 16);
    cr_assert_eq(n, 4);
    cr_assert_eq(ev[0].seq, 5); /* the oldest four were overwritten */
    const char *kinds[] = {"probe", "wake", "ready", "pending"};
    const uint32_t tasks[] = {2, 2, 1, 2};
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(ev[i].kind, kinds[i], "event %zu", i);
        cr_assert_eq(ev[i].task, tasks[i], "event %zu", i);
    }
    cr_assert_eq(ev[1].b, 1); /* the parent was woken by the child's poll */

    /* The crash handler's writer: one line per kept event. */
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    cr_assert_eq(pl_executor_recorder_write(ex, fds[1]), 0);
    close(fds[1]);
    char lines[4096];
    ssize_t got = read(fds[0], lines, sizeof lines - 1);
    close(fds[0]);
    cr_assert_gt(got, 0);
    lines[got] = '\0';
    cr_assert_eq(count_of(lines, "\n"), 4, "%s", lines);
    cr_assert_not_null(strstr(lines, "ms wake task#2 by=#1\n"), "%s", lines);
    teardown(ex, &sh);
}
