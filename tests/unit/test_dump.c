/* Task dumps and the flight recorder (pollen/dump.h) on the real executor.
 *
 * The dumps are written to memory streams and read back as text: a dump
 * of a task parked in a join of two pending children must show both, and
 * a branch that is READY must not show. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pollen/pollen.h>
#include <pollen/testing.h>

#include "leakcheck.h"
#include "manual_system.h"

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

/* ---- Tasks that finish during the dump ------------------------------------ */

/* Parks without a waker; from its second poll on (the dump's) it cancels
 * *target, which may be itself. */
typedef struct canceller {
    pl_future base;
    pl_task *const *target;
    int polls;
} canceller;

static pl_poll_result canceller_poll(pl_future *f, pl_context *cx)
{
    (void)cx;
    canceller *self = (canceller *)f;
    if (++self->polls >= 2) {
        pl_task_cancel(*self->target);
    }
    return PL_PENDING;
}

static const pl_future_vtable canceller_vtable = {"canceller", canceller_poll, NULL};

static const bool never_open = false;

/* Task #1 a canceller of task #2, a gate that stays shut; both parked. */
static pl_executor *canceller_and_victim(pl_task **victim)
{
    pl_executor *ex;
    cr_assert_eq(pl_executor_create(&ex, NULL), 0);
    canceller c = {PL_FUTURE_INIT(&canceller_vtable), victim, 0};
    cr_assert_eq(PL_SPAWN(ex, c, "canceller", NULL), 0);
    gate g = {PL_FUTURE_INIT(&gate_vtable), &never_open};
    cr_assert_eq(PL_SPAWN(ex, g, "victim", victim), 0);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    return ex;
}

/* Task #1's dump poll cancels task #2, listed unfinished when the dump
 * began: its turn finds it finished, and the dump says so instead of
 * polling it (a poll of it would abort). */
Test(dump, a_task_finished_by_an_earlier_dump_poll_is_not_polled)
{
    pl_task *victim = NULL;
    pl_executor *ex = canceller_and_victim(&victim);
    char *text = dump_of(ex, PL_DUMP_TEXT, 0);
    cr_assert_not_null(strstr(text, "task #1 'canceller'\n  state: parked\n"), "%s", text);
    cr_assert_not_null(strstr(text, "task #2 'victim'\n  state: finished_during_dump; finished "
                                    "during the dump"),
                       "%s", text);
    free(text);
    char *json = dump_of(ex, PL_DUMP_JSON, 0); /* #2 is gone by now */
    cr_assert_not_null(strstr(json, "\"unfinished\":1,"), "%s", json);
    free(json);
    pl_task_release(victim);
    pl_executor_destroy(ex);
}

Test(dump, a_task_finished_during_the_dump_in_json)
{
    pl_task *victim = NULL;
    pl_executor *ex = canceller_and_victim(&victim);
    char *json = dump_of(ex, PL_DUMP_JSON, 0);
    cr_assert_not_null(strstr(json, "\"name\":\"victim\",\"state\":\"finished_during_dump\","
                                    "\"polled_by_dump\":false,"),
                       "%s", json);
    free(json);
    pl_task_release(victim);
    pl_executor_destroy(ex);
}

/* A task that cancels itself in the dump's poll returned PENDING: it is
 * no lost wakeup, and the dump does not call it one. */
Test(dump, a_task_cancelling_itself_in_the_dump_poll_is_no_lost_wakeup)
{
    pl_executor *ex;
    cr_assert_eq(pl_executor_create(&ex, NULL), 0);
    pl_task *self = NULL;
    canceller c = {PL_FUTURE_INIT(&canceller_vtable), &self, 0};
    cr_assert_eq(PL_SPAWN(ex, c, "quitter", &self), 0);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    char *text = dump_of(ex, PL_DUMP_TEXT, 0);
    cr_assert_not_null(strstr(text, "task #1 'quitter'\n  state: cancelled_in_dump; "), "%s", text);
    cr_assert_null(strstr(text, "lost wakeup"), "%s", text);
    free(text);
    cr_assert_eq(pl_executor_live_tasks(ex), 0);
    pl_task_release(self);
    pl_executor_destroy(ex);
}

/* ---- A dump requested from a signal handler, served by pl_run ---------- */

static pl_executor *signalled;

static void on_usr1(int sig)
{
    (void)sig;
    pl_executor_request_dump(signalled);
}

/* The parked task's leaf. Its first poll hands a remote waker to the
 * killer thread; a later poll before the killer released it is the
 * dump's (nobody woke it), and tells the killer the dump is being
 * written. So the order is fixed whatever the threads' timing: parked,
 * signal, dump, wake, completion. */
typedef struct signal_plot {
    sem_t parked;
    sem_t dumped;
    pl_remote_waker *rw;
    int released; /* set by the killer before it wakes the task */
} signal_plot;

typedef struct remote_leaf {
    pl_future base;
    signal_plot *plot;
    bool armed;
} remote_leaf;

static pl_poll_result remote_leaf_poll(pl_future *f, pl_context *cx)
{
    remote_leaf *self = (remote_leaf *)f;
    if (!self->armed) {
        self->armed = true;
        cr_assert_eq(pl_remote_waker_create(cx, &self->plot->rw), 0);
        sem_post(&self->plot->parked);
        return PL_PENDING;
    }
    if (__atomic_load_n(&self->plot->released, __ATOMIC_ACQUIRE)) {
        return PL_READY;
    }
    sem_post(&self->plot->dumped);
    return PL_PENDING;
}

static const pl_future_vtable remote_leaf_vtable = {"remote", remote_leaf_poll, NULL};

typedef struct parker {
    pl_future base;
    remote_leaf leaf;
} parker;

static pl_poll_result parker_poll(pl_future *f, pl_context *cx)
{
    parker *self = (parker *)f;
    PL_ASYNC_BEGIN(self);
    PL_AWAIT(cx, &self->leaf);
    PL_ASYNC_END;
}

static const pl_future_vtable parker_vtable = {"parker", parker_poll, NULL};

typedef struct killer_arg {
    pthread_t target;
    signal_plot *plot;
} killer_arg;

static void *signal_then_release(void *arg)
{
    killer_arg *k = arg;
    sem_wait(&k->plot->parked);
    pthread_kill(k->target, SIGUSR1);
    sem_wait(&k->plot->dumped);
    __atomic_store_n(&k->plot->released, 1, __ATOMIC_RELEASE);
    pl_remote_waker_wake(k->plot->rw);
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
    signal_plot plot = {.rw = NULL, .released = 0};
    cr_assert_eq(sem_init(&plot.parked, 0, 0), 0);
    cr_assert_eq(sem_init(&plot.dumped, 0, 0), 0);
    parker p;
    memset(&p, 0, sizeof p);
    p.base = PL_FUTURE_INIT(&parker_vtable);
    p.leaf = (remote_leaf){PL_FUTURE_INIT(&remote_leaf_vtable), &plot, false};
    cr_assert_eq(PL_SPAWN(ex, p, "parker", NULL), 0);
    killer_arg k = {pthread_self(), &plot};
    pthread_t killer;
    cr_assert_eq(pthread_create(&killer, NULL, signal_then_release, &k), 0);
    cr_assert_eq(pl_run(ex), 0);
    pthread_join(killer, NULL);
    signal(SIGUSR1, SIG_DFL);
    sem_destroy(&plot.parked);
    sem_destroy(&plot.dumped);
    fclose(out);
    cr_assert_not_null(strstr(buf, "task #1 'parker'\n  state: parked"), "%s", buf);
    cr_assert_not_null(strstr(buf, "    parker (test_dump.c:"), "%s", buf);
    cr_assert_not_null(strstr(buf, "    `- remote\n"), "%s", buf);
    free(buf);
    pl_executor_destroy(ex);
}

/* ---- The flight recorder -------------------------------------------------- */

/* A production executor on the manual clock with a flight recorder of
 * `events` records. */
static pl_executor *recording_executor(manual_system *m, uint32_t events)
{
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.recorder_events = events;
    pl_executor *ex = manual_executor(m, false, &o);
    cr_assert_not_null(ex);
    return ex;
}

/* Runs the executor to its end and reads its recorder's events (64 at
 * most) into ev. */
static size_t run_and_read(pl_executor *ex, pl_recorder_event ev[64])
{
    cr_assert_eq(pl_run(ex), 0);
    return pl_executor_recorder_events(ex, ev, 64);
}

/* A record per event, 16 bytes, with no time of its own: a clock record
 * dates those after it when the clock reading changed, and a poll's
 * record names the task it woke (its wake and its result share the
 * record's number). On a hand-driven clock, so the records are known. */
Test(dump, recorder_keeps_events_and_sites)
{
    manual_system m = {.now_ns = 5 * PL_MS};
    pl_executor *ex = recording_executor(&m, 5); /* rounded up to 8: the ring wraps below */
    shared sh;
    spawn_join(ex, &sh);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    pl_recorder_event ev[16];
    size_t n = pl_executor_recorder_events(ex, ev, 16);
    /* clock 5 ms, spawn, spawn, pending #1, pending #2: four events, five
     * records, nothing lost. */
    cr_assert_eq(n, 4);
    cr_assert_str_eq(ev[0].kind, "spawn");
    cr_assert_eq(ev[0].task, 1);
    cr_assert_eq(ev[0].seq, 2);
    cr_assert_eq(ev[0].time_ns, 5 * PL_MS);
    cr_assert_str_eq(ev[2].kind, "pending");
    cr_assert_eq(ev[3].task, 2);
    cr_assert_eq(ev[3].a, 1); /* its first poll */
    cr_assert_eq(ev[3].seq, 5);
    cr_assert_eq(ev[3].time_ns, 5 * PL_MS);

    /* The notify wakes the child outside any poll (no record: a wake is
     * seen in the queue after the poll that made it); the dump at 7 ms
     * probes the parent (a clock record first); the run completes the
     * child, whose join wakes the parent (one record), and polls the
     * parent: nine records, past the ring's 8. */
    m.now_ns = 7 * PL_MS;
    pl_notify_one(&sh.b);
    char *text = dump_of(ex, PL_DUMP_TEXT, 0);
    cr_assert_not_null(strstr(text, "task #2 'parent' spawned at test_dump.c:"), "%s", text);
    cr_assert_not_null(strstr(text, "in spawn_join\n  state: parked for 2.000 ms"), "%s", text);
    cr_assert_not_null(strstr(text, "task #1 'child' spawned at test_dump.c:"), "%s", text);
    cr_assert_not_null(strstr(text, "\n  state: runnable\n"), "%s", text);
    /* The production waker counts no clones, recorder or not. */
    cr_assert_null(strstr(text, "waker clones"), "%s", text);
    cr_assert_not_null(strstr(text, "flight recorder, the latest last:\n"), "%s", text);
    cr_assert_not_null(strstr(text, "  7      7.000ms probe        task#2       poll=2\n"), "%s",
                       text);
    free(text);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    n = pl_executor_recorder_events(ex, ev, 16);
    cr_assert_eq(n, 8);
    /* The oldest record, the clock's, was overwritten: what it dated has
     * no time now. */
    const char *kinds[] = {"spawn", "spawn", "pending", "pending", "probe", "wake", "ready",
                           "pending"};
    const uint32_t tasks[] = {1, 2, 1, 2, 2, 2, 1, 2};
    const uint64_t seqs[] = {2, 3, 4, 5, 7, 8, 8, 9};
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(ev[i].kind, kinds[i], "event %zu", i);
        cr_assert_eq(ev[i].task, tasks[i], "event %zu", i);
        cr_assert_eq(ev[i].seq, seqs[i], "event %zu", i);
        cr_assert_eq(ev[i].time_ns, i < 4 ? -1 : 7 * PL_MS, "event %zu", i);
    }
    cr_assert_eq(ev[5].b, 1); /* the parent was woken by the child's poll */
    cr_assert_eq(ev[6].a, 2);
    cr_assert_eq(ev[7].a, 3);
    /* The latest max, oldest first. */
    cr_assert_eq(pl_executor_recorder_events(ex, ev, 3), 3);
    cr_assert_str_eq(ev[0].kind, "wake");
    cr_assert_str_eq(ev[2].kind, "pending");

    /* The crash handler's writer: one line per kept event, the lines of
     * the dump's tail (the dump's probe first: the ring then stays). */
    char *tail = dump_of(ex, PL_DUMP_TEXT, 0);
    cr_assert_not_null(strstr(tail, "  (2 earlier records not kept)\n"), "%s", tail);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    cr_assert_eq(pl_executor_recorder_write(ex, fds[1]), 0);
    close(fds[1]);
    char lines[4096];
    ssize_t got = read(fds[0], lines, sizeof lines - 1);
    close(fds[0]);
    cr_assert_gt(got, 0);
    lines[got] = '\0';
    cr_assert_eq(count_of(lines, "\n"), 8, "%s", lines);
    cr_assert_not_null(strstr(lines, "ms wake         task#2       by=#1\n"), "%s", lines);
    cr_assert_not_null(strstr(lines, "     ?.???ms pending      task#2       poll=1\n"), "%s",
                       lines);
    for (char *line = strtok(lines, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char indented[256];
        snprintf(indented, sizeof indented, "\n  %s\n", line);
        cr_assert_not_null(strstr(tail, indented), "'%s' not in:\n%s", line, tail);
    }
    free(tail);
    teardown(ex, &sh);
}

/* A timer's fire is a record and a second one for its lateness: both
 * read back as one event, and a poll that woke two tasks reads as a
 * wake of each before its pending. */
typedef struct two_waker {
    pl_future base;
    pl_notify *a;
    pl_notify *b;
    pl_sleep sleep;
} two_waker;

static pl_poll_result two_waker_poll(pl_future *f, pl_context *cx)
{
    two_waker *self = (two_waker *)f;
    PL_ASYNC_BEGIN(self);
    self->sleep = pl_sleep_for(3 * PL_MS);
    PL_AWAIT(cx, &self->sleep);
    pl_notify_one(self->a);
    pl_notify_one(self->b);
    PL_ASYNC_END;
}

static const pl_future_vtable two_waker_vtable = {"two_waker", two_waker_poll, NULL};

Test(dump, recorder_reads_a_timer_s_lateness_and_a_poll_s_wakes)
{
    manual_system m = {.now_ns = 0};
    pl_executor *ex = recording_executor(&m, 64);
    shared sa, sb; /* two children wait on their b */
    pl_notify_init(&sa.b);
    pl_notify_init(&sb.b);
    two_waker w = {.base = PL_FUTURE_INIT(&two_waker_vtable), .a = &sa.b, .b = &sb.b};
    child_fut wa = {.base = PL_FUTURE_INIT(&child_vtable), .sh = &sa};
    child_fut wb = {.base = PL_FUTURE_INIT(&child_vtable), .sh = &sb};
    cr_assert_eq(PL_SPAWN(ex, w, "two_waker", NULL), 0);
    cr_assert_eq(PL_SPAWN(ex, wa, "a", NULL), 0);
    cr_assert_eq(PL_SPAWN(ex, wb, "b", NULL), 0);
    pl_recorder_event ev[64];
    size_t n = run_and_read(ex, ev);
    size_t fire = n;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(ev[i].kind, "timer_fire") == 0) {
            fire = i;
        }
    }
    cr_assert_lt(fire + 4, n, "no timer_fire and the poll after it");
    cr_assert_eq(ev[fire].task, 1);
    cr_assert_eq(ev[fire].time_ns, 3 * PL_MS);
    cr_assert_eq(ev[fire].b, 0); /* not late: the manual clock jumps to the deadline */
    const char *kinds[] = {"wake", "wake", "ready"};
    const uint32_t tasks[] = {2, 3, 1};
    for (size_t i = 0; i < 3; i++) {
        cr_assert_str_eq(ev[fire + 1 + i].kind, kinds[i], "event %zu", i);
        cr_assert_eq(ev[fire + 1 + i].task, tasks[i], "event %zu", i);
        cr_assert_eq(ev[fire + 1 + i].time_ns, 3 * PL_MS, "event %zu", i);
    }
    cr_assert_eq(ev[fire + 1].b, 1);
    cr_assert_eq(ev[fire + 2].b, 1);
    pl_executor_destroy(ex);
}

/* ---- Counted waker clones (count_wakers) ---------------------------------- */

/* Two waker clones kept outside the task, and when to finish. */
typedef struct two_slots {
    pl_waker w1;
    pl_waker w2;
    bool done;
} two_slots;

typedef struct holder {
    pl_future base;
    two_slots *s;
} holder;

static pl_poll_result holder_poll(pl_future *f, pl_context *cx)
{
    holder *self = (holder *)f;
    if (self->base.resume == 0) {
        self->base.resume = 1;
        pl_waker_clone_into(&self->s->w1, &cx->waker);
        pl_waker_clone_into(&self->s->w2, &cx->waker);
        return PL_PENDING;
    }
    return self->s->done ? PL_READY : PL_PENDING;
}

static const pl_future_vtable holder_vtable = {"holder", holder_poll, NULL};

/* A production executor created with count_wakers counts each task's live
 * waker clones (the fast waker keeps only a reference count): the dump
 * shows the two a task holds, one after a wake consumed the other, with
 * the flight recorder or without (its loop keeps the counting waker). */
Test(dump, count_wakers_shows_a_task_s_clones)
{
    for (int with_recorder = 0; with_recorder < 2; with_recorder++) {
        pl_executor_options o;
        pl_executor_options_default(&o);
        o.count_wakers = true;
        o.recorder_events = with_recorder ? 64 : 0;
        pl_executor *ex;
        cr_assert_eq(pl_executor_create(&ex, &o), 0);
        two_slots s = {.done = false};
        holder h = {PL_FUTURE_INIT(&holder_vtable), &s};
        cr_assert_eq(PL_SPAWN(ex, h, "holder", NULL), 0);
        cr_assert_eq(pl_run(ex), PL_EDEADLK);
        /* References: the executor's, the clones', and the dump's own. */
        char *text = dump_of(ex, PL_DUMP_TEXT, 0);
        cr_assert_not_null(strstr(text, "references 4, waker clones 2\n"), "%s", text);
        free(text);
        char *json = dump_of(ex, PL_DUMP_JSON, 0);
        cr_assert_not_null(strstr(json, "\"waker_clones\":2,"), "%s", json);
        free(json);
        pl_waker_slot_wake(&s.w1);
        text = dump_of(ex, PL_DUMP_TEXT, 0);
        cr_assert_not_null(strstr(text, "state: runnable\n"), "%s", text);
        cr_assert_not_null(strstr(text, "references 3, waker clones 1\n"), "%s", text);
        free(text);
        s.done = true;
        cr_assert_eq(pl_run(ex), 0);
        if (with_recorder) {
            pl_recorder_event ev[64];
            size_t n = pl_executor_recorder_events(ex, ev, 64);
            cr_assert_gt(n, 0);
            cr_assert_str_eq(ev[n - 1].kind, "ready");
            cr_assert_eq(ev[n - 1].a, 4); /* the two dumps probed it: polls 2 and 3 */
        }
        pl_waker_slot_clear(&s.w2); /* the last reference: the task goes */
        pl_executor_destroy(ex);
    }
}

/* The ring's capacity is a power of two held in 32 bits: a larger count
 * is refused, not silently shrunk. */
Test(dump, recorder_events_above_2_31_are_invalid)
{
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.recorder_events = (UINT32_C(1) << 31) + 1;
    pl_executor *ex = NULL;
    cr_assert_eq(pl_executor_create(&ex, &o), PL_EINVAL);
    cr_assert_null(ex);
}

/* A notifier that wakes the child from inside its poll. */
typedef struct notifier {
    pl_future base;
    pl_notify *b;
} notifier;

static pl_poll_result notifier_poll(pl_future *f, pl_context *cx)
{
    (void)cx;
    pl_notify_one(((notifier *)f)->b);
    return PL_READY;
}

static const pl_future_vtable notifier_vtable = {"notifier", notifier_poll, NULL};

/* A poll that began with other tasks queued: the task it woke is linked
 * after the queue's tail, not at its head, and its record names that
 * one. Spawned in the order y, x, z: y parks on its notify, x (queued
 * before z) wakes it and finishes, z finishes waking nobody. */
Test(dump, recorder_names_the_task_woken_behind_the_queue)
{
    manual_system m = {.now_ns = 0};
    pl_executor *ex = recording_executor(&m, 64);
    pl_recorder_event ev[64];
    shared sh;
    pl_notify_init(&sh.b);
    bool open = true;
    child_fut y = {.base = PL_FUTURE_INIT(&child_vtable), .sh = &sh};
    notifier x = {.base = PL_FUTURE_INIT(&notifier_vtable), .b = &sh.b};
    gate z = {.base = PL_FUTURE_INIT(&gate_vtable), .open = &open};
    cr_assert_eq(PL_SPAWN(ex, y, "y", NULL), 0);
    cr_assert_eq(PL_SPAWN(ex, x, "x", NULL), 0);
    cr_assert_eq(PL_SPAWN(ex, z, "z", NULL), 0);
    size_t n = run_and_read(ex, ev);
    const char *kinds[] = {"spawn", "spawn", "spawn", "pending", "wake", "ready", "ready", "ready"};
    const uint32_t tasks[] = {1, 2, 3, 1, 1, 2, 3, 1};
    cr_assert_eq(n, 8);
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(ev[i].kind, kinds[i], "event %zu", i);
        cr_assert_eq(ev[i].task, tasks[i], "event %zu", i);
    }
    cr_assert_eq(ev[4].b, 2, "woken by x");
    pl_executor_destroy(ex);
}

/* Under the checking waker (here: rotating wakers, as the simulator's)
 * the recorder sees a poll's wakes too, before the poll's ready. */
Test(dump, recorder_sees_a_poll_s_wakes_under_the_checking_waker)
{
    manual_system m = {.now_ns = 0};
    pl_executor_testing_options t;
    pl_executor_testing_options_default(&t);
    t.rotate_wakers = true;
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.recorder_events = 64;
    o.testing = &t;
    pl_executor *ex = manual_executor(&m, false, &o);
    cr_assert_not_null(ex);
    shared sh;
    spawn_join(ex, &sh);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    notifier n = {PL_FUTURE_INIT(&notifier_vtable), &sh.b};
    cr_assert_eq(PL_SPAWN(ex, n, "notifier", NULL), 0);
    cr_assert_eq(pl_run(ex), PL_EDEADLK); /* the parent's gate stays shut */
    pl_recorder_event ev[64];
    size_t len = pl_executor_recorder_events(ex, ev, 64);
    size_t wake = len, ready = len;
    for (size_t i = 0; i < len; i++) {
        if (strcmp(ev[i].kind, "wake") == 0 && ev[i].task == 1 && ev[i].b == 3) {
            wake = i;
        }
        if (strcmp(ev[i].kind, "ready") == 0 && ev[i].task == 3 && ready == len) {
            ready = i;
        }
    }
    cr_assert_lt(wake, len, "no wake of #1 by #3");
    cr_assert_lt(ready, len, "no ready of #3");
    cr_assert_lt(wake, ready);
    teardown(ex, &sh);
}

/* "parked for" counts from the task's last real PENDING to the dump's
 * time: the dump reads the clock afresh (the executor's cached one is as
 * old as the last tick), and its own poll (a probe) leaves the park time
 * alone, so a second dump counts from the same park. */
Test(dump, parked_for_counts_from_the_park_to_the_dump)
{
    manual_system m = {.now_ns = 1000 * PL_MS};
    pl_executor *ex = recording_executor(&m, 16);
    shared sh;
    spawn_join(ex, &sh);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    m.now_ns += 250 * PL_MS;
    char *text = dump_of(ex, PL_DUMP_TEXT, 0);
    cr_assert_not_null(strstr(text, "pollen task dump at 1250.000 ms"), "%s", text);
    cr_assert_eq(count_of(text, "state: parked for 250.000 ms\n"), 2, "%s", text);
    free(text);
    m.now_ns += 150 * PL_MS;
    char *json = dump_of(ex, PL_DUMP_JSON, 0);
    cr_assert_not_null(strstr(json, "{\"time_ns\":1400000000,"), "%s", json);
    cr_assert_eq(count_of(json, "\"parked_since_ns\":1000000000,"), 2, "%s", json);
    free(json);
    teardown(ex, &sh);
}
