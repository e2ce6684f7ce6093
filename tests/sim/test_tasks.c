/* tests/sim/test_tasks.c: the simulator's task table (sim/src/tasks.c).
 *
 * A task's record points at its spawn kind (name, root future, spawn
 * site), interned for the run: the tasks of one site share one, past the
 * scan of the first kinds too (the hash index), and every task still
 * reads its own name and site, in the run and in its record.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <pollen/sim.h>

#include "leakcheck.h"
#include "run_record.h"
#include "sim_internal.h"

enum { WORKERS = 200, NAMED = 40 };

/* Literals, so that each name is one pointer: NAMED kinds at one site. */
static const char *const names[NAMED] = {
    "n00", "n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09",
    "n10", "n11", "n12", "n13", "n14", "n15", "n16", "n17", "n18", "n19",
    "n20", "n21", "n22", "n23", "n24", "n25", "n26", "n27", "n28", "n29",
    "n30", "n31", "n32", "n33", "n34", "n35", "n36", "n37", "n38", "n39",
};

static int worker_line, named_line;

typedef struct noop {
    pl_future base;
} noop;

static pl_poll_result noop_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    return PL_READY;
}

static const pl_future_vtable noop_vt = {"noop", noop_poll, NULL};
static const pl_future_vtable other_vt = {"other", noop_poll, NULL};

/* WORKERS tasks at one site, then every name twice at another, then one
 * task through pl_spawn_at with no site. */
static int kinds_setup(pl_executor *ex, void *state)
{
    (void)state;
    int rc = 0;
    for (int i = 0; i < WORKERS && rc == 0; i++) {
        noop t = {.base = PL_FUTURE_INIT(&noop_vt)};
        worker_line = __LINE__ + 1;
        rc = PL_SPAWN(ex, t, "worker", NULL);
    }
    for (int i = 0; i < 2 * NAMED && rc == 0; i++) {
        noop t = {.base = PL_FUTURE_INIT(&other_vt)};
        named_line = __LINE__ + 1;
        rc = PL_SPAWN(ex, t, names[i % NAMED], NULL);
    }
    noop t = {.base = PL_FUTURE_INIT(&noop_vt)};
    return rc != 0 ? rc : pl_spawn_at(ex, &t.base, sizeof t, "anonymous", NULL, NULL, NULL);
}

enum { FIRST_NAMED = WORKERS + 1, ANONYMOUS = WORKERS + 2 * NAMED + 1 };

/* The kind a task of id `id` must have, in words, or NULL when right. */
static const char *kind_wrong(const pl__sim *s, uint32_t id)
{
    const pl__spawn_kind *k = s->tasks.info[id].kind;
    if (id <= WORKERS) {
        return k == s->tasks.info[1].kind && strcmp(k->name, "worker") == 0 &&
                       strcmp(k->root, "noop") == 0 && k->where != NULL
                   ? NULL
                   : "a worker's kind is not the first worker's";
    }
    if (id < ANONYMOUS) {
        uint32_t first = FIRST_NAMED + (id - FIRST_NAMED) % NAMED;
        return k == s->tasks.info[first].kind && k->name == names[(id - FIRST_NAMED) % NAMED] &&
                       strcmp(k->root, "other") == 0 && k != s->tasks.info[1].kind
                   ? NULL
                   : "a named task's kind is not its name's";
    }
    return k->where == NULL && k->func == NULL && strcmp(k->name, "anonymous") == 0
               ? NULL
               : "a task without a site has one";
}

/* Runs inside the simulator: the table as the oracles read it. */
static int kinds_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    (void)state;
    const pl__sim *s = pl__sim_current();
    if (s->tasks.spawned != ANONYMOUS || s->tasks.kinds_len != 2 + NAMED) {
        snprintf(msg, len, "%u tasks, %zu kinds", s->tasks.spawned, s->tasks.kinds_len);
        return 1;
    }
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        const char *wrong = kind_wrong(s, id);
        if (wrong != NULL) {
            snprintf(msg, len, "task %u: %s", id, wrong);
            return 1;
        }
    }
    return 0;
}

static const pl_scenario kinds_sc = {
    .name = "task_kinds",
    .summary = "tasks at two sites, one of them with many names",
    .setup = kinds_setup,
    .check = kinds_check,
};

TestSuite(tasks, .timeout = 60);

LEAK_TEST(tasks, the_tasks_of_one_site_share_a_kind_past_the_scanned_ones)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&kinds_sc, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    pl_sim_result_free(&r);
}

LEAK_TEST(tasks, every_task_keeps_its_name_and_site_in_the_record)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&kinds_sc, &o, &r), 0);
    const pl__run_record *rec = pl__sim_result_record(&r);
    char worker_at[32], named_at[32];
    snprintf(worker_at, sizeof worker_at, "test_tasks.c:%d", worker_line);
    snprintf(named_at, sizeof named_at, "test_tasks.c:%d", named_line);
    for (uint32_t id = 1; id <= ANONYMOUS; id++) {
        const char *func = NULL;
        const char *at = pl__run_spawn_site((void *)rec, id, &func);
        const char *name = pl__run_task_name(rec, id);
        cr_assert_not_null(name, "task %u", id);
        if (id <= WORKERS) {
            cr_assert_str_eq(name, "worker");
            cr_assert_str_eq(at, worker_at);
            cr_assert_str_eq(func, "kinds_setup");
        } else if (id < ANONYMOUS) {
            cr_assert_str_eq(name, names[(id - FIRST_NAMED) % NAMED]);
            cr_assert_str_eq(at, named_at);
        } else {
            cr_assert_str_eq(name, "anonymous");
            cr_assert_null(at);
        }
    }
    pl_sim_result_free(&r);
}

/* What a spawn costs the table: a million-task run holds a million. */
LEAK_TEST(tasks, a_record_is_96_bytes)
{
    cr_assert_leq(sizeof(pl__task_info), 96);
    cr_assert_leq(sizeof(pl__spawn_kind), 32);
}
