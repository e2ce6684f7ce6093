/* tests/sim/test_shard_auto.c: `--shard auto` (sim/src/cli/shard_auto.c)
 * against each batch engine's variables, in-process: the environment is
 * a table the test sets, so no real variable of the machine leaks in.
 * tests/sim/shard_recipes.sh runs the recipes themselves end to end. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "pollen/error.h"

#define MAX_VARS 8

static const char *vars[MAX_VARS][2];

static char *table_env(const char *name)
{
    for (size_t i = 0; i < MAX_VARS && vars[i][0] != NULL; i++) {
        if (strcmp(vars[i][0], name) == 0) {
            return (char *)vars[i][1];
        }
    }
    return NULL;
}

/* Sets the table from "NAME=value" strings, then runs --shard auto. */
static int shard_auto(const char *const *env, uint32_t *k, uint32_t *n, char *said, size_t len)
{
    static char store[MAX_VARS][64];
    memset(vars, 0, sizeof vars);
    for (size_t i = 0; env[i] != NULL; i++) {
        cr_assert_lt(i, MAX_VARS);
        snprintf(store[i], sizeof store[i], "%s", env[i]);
        char *eq = strchr(store[i], '=');
        cr_assert_not_null(eq);
        *eq = '\0';
        vars[i][0] = store[i];
        vars[i][1] = eq + 1;
    }
    return pl__cli_shard_auto(table_env, k, n, said, len);
}

typedef struct good_case {
    const char *env[MAX_VARS];
    uint32_t k, n;
    const char *named; /* the variable the message must name */
} good_case;

Test(shard_auto, each_engine_gives_its_1_based_shard)
{
    static const good_case cases[] = {
        {{"POLLEN_SHARD=3/4", NULL}, 3, 4, "POLLEN_SHARD=3/4"},
        /* POLLEN_SHARD settles an engine's variables. */
        {{"POLLEN_SHARD=1/2", "SLURM_ARRAY_TASK_ID=9", NULL}, 1, 2, "POLLEN_SHARD"},
        {{"JOB_COMPLETION_INDEX=0", "POLLEN_SHARD_COUNT=4", NULL}, 1, 4, "JOB_COMPLETION_INDEX=0"},
        {{"JOB_COMPLETION_INDEX=3", "POLLEN_SHARD_COUNT=4", NULL}, 4, 4, "Kubernetes"},
        {{"SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=3",
          "SLURM_ARRAY_TASK_COUNT=4", NULL},
         1,
         4,
         "SLURM_ARRAY_TASK_ID=0"},
        /* --array=1-4: the task numbered 1 is the first shard. */
        {{"SLURM_ARRAY_TASK_ID=4", "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_MAX=4",
          "SLURM_ARRAY_TASK_COUNT=4", NULL},
         4,
         4,
         "Slurm"},
        /* --array=10-22:4 is 10, 14, 18, 22. */
        {{"SLURM_ARRAY_TASK_ID=18", "SLURM_ARRAY_TASK_MIN=10", "SLURM_ARRAY_TASK_MAX=22",
          "SLURM_ARRAY_TASK_COUNT=4", "SLURM_ARRAY_TASK_STEP=4", NULL},
         3,
         4,
         "SLURM_ARRAY_TASK_ID=18"},
        {{"PARALLEL_SEQ=1", "POLLEN_SHARD_COUNT=3", NULL}, 1, 3, "GNU parallel"},
        {{"PARALLEL_SEQ=3", "POLLEN_SHARD_COUNT=3", NULL}, 3, 3, "PARALLEL_SEQ=3"},
        {{"CI_NODE_INDEX=2", "CI_NODE_TOTAL=5", NULL}, 2, 5, "CI_NODE_TOTAL=5"},
        {{"CIRCLE_NODE_INDEX=0", "CIRCLE_NODE_TOTAL=2", NULL}, 1, 2, "CircleCI"},
        {{"BUILDKITE_PARALLEL_JOB=5", "BUILDKITE_PARALLEL_JOB_COUNT=6", NULL}, 6, 6, "Buildkite"},
        /* An engine's count of 1 is one unsharded worker. */
        {{"CI_NODE_INDEX=1", "CI_NODE_TOTAL=1", NULL}, 1, 1, "GitLab"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t k = 0, n = 0;
        char said[400];
        cr_assert_eq(shard_auto(cases[i].env, &k, &n, said, sizeof said), 0, "case %zu: %s", i,
                     said);
        cr_assert(k == cases[i].k && n == cases[i].n, "case %zu: %u/%u, expected %u/%u", i, k, n,
                  cases[i].k, cases[i].n);
        cr_assert_not_null(strstr(said, cases[i].named), "case %zu: '%s' lacks '%s'", i, said,
                           cases[i].named);
    }
}

/* Over a whole Slurm array of each shape, the tasks are the shards 1..N,
 * each once. */
Test(shard_auto, a_slurm_array_covers_every_shard_once)
{
    static const unsigned shapes[][3] = {{0, 7, 1}, {1, 8, 1}, {5, 5, 1}, {3, 27, 6}, {0, 0, 3}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        unsigned min = shapes[s][0], max = shapes[s][1], step = shapes[s][2];
        unsigned count = (max - min) / step + 1;
        unsigned seen[16] = {0};
        for (unsigned id = min; id <= max; id += step) {
            char e[5][40];
            snprintf(e[0], sizeof e[0], "SLURM_ARRAY_TASK_ID=%u", id);
            snprintf(e[1], sizeof e[1], "SLURM_ARRAY_TASK_MIN=%u", min);
            snprintf(e[2], sizeof e[2], "SLURM_ARRAY_TASK_MAX=%u", max);
            snprintf(e[3], sizeof e[3], "SLURM_ARRAY_TASK_COUNT=%u", count);
            snprintf(e[4], sizeof e[4], "SLURM_ARRAY_TASK_STEP=%u", step);
            const char *env[] = {e[0], e[1], e[2], e[3], e[4], NULL};
            uint32_t k, n;
            char said[400];
            cr_assert_eq(shard_auto(env, &k, &n, said, sizeof said), 0, "%s", said);
            cr_assert_eq(n, count);
            cr_assert(k >= 1 && k <= n && k < 16);
            seen[k]++;
        }
        for (unsigned k = 1; k <= count; k++) {
            cr_assert_eq(seen[k], 1, "shape %zu: shard %u given %u times", s, k, seen[k]);
        }
    }
}

typedef struct bad_case {
    const char *env[MAX_VARS];
    int rc;
    const char *why; /* the message must say this */
} bad_case;

Test(shard_auto, refuses_with_the_reason)
{
    static const bad_case cases[] = {
        {{NULL}, PL_ENOENT, "looked for POLLEN_SHARD (K/N), JOB_COMPLETION_INDEX"},
        {{NULL}, PL_ENOENT, "SLURM_ARRAY_TASK_ID (Slurm job array), PARALLEL_SEQ (GNU parallel)"},
        /* An empty variable is an unset one. */
        {{"JOB_COMPLETION_INDEX=", NULL}, PL_ENOENT, "looked for"},
        {{"JOB_COMPLETION_INDEX=1", NULL}, PL_EINVAL, "POLLEN_SHARD_COUNT is not"},
        {{"PARALLEL_SEQ=2", NULL}, PL_EINVAL, "gives no worker count"},
        {{"JOB_COMPLETION_INDEX=4", "POLLEN_SHARD_COUNT=4", NULL}, PL_EINVAL, "no shard K/N"},
        {{"PARALLEL_SEQ=0", "POLLEN_SHARD_COUNT=4", NULL}, PL_EINVAL, "numbered from 1"},
        {{"CI_NODE_INDEX=1", "CI_NODE_TOTAL=0", NULL}, PL_EINVAL, "no shard K/N"},
        {{"CIRCLE_NODE_INDEX=0", "CIRCLE_NODE_TOTAL=70000", NULL}, PL_EINVAL, "N <= 65536"},
        {{"CI_NODE_INDEX=x", "CI_NODE_TOTAL=2", NULL}, PL_EINVAL, "CI_NODE_INDEX=x"},
        {{"CI_NODE_INDEX=1", "CI_NODE_TOTAL=-2", NULL}, PL_EINVAL, "not a decimal number"},
        {{"POLLEN_SHARD=5/4", NULL}, PL_EINVAL, "POLLEN_SHARD=5/4 is no shard"},
        {{"SLURM_ARRAY_TASK_ID=1", "PARALLEL_SEQ=1", NULL}, PL_EINVAL, "POLLEN_SHARD=K/N"},
        {{"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT=2", NULL},
         PL_EINVAL,
         "SLURM_ARRAY_TASK_MIN is not"},
        /* --array=1,5,9: positions no variable tells. */
        {{"SLURM_ARRAY_TASK_ID=5", "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_MAX=9",
          "SLURM_ARRAY_TASK_COUNT=3", NULL},
         PL_EINVAL,
         "not a list"},
        {{"SLURM_ARRAY_TASK_ID=6", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=8",
          "SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_STEP=4", NULL},
         PL_EINVAL,
         "by 4"},
        {{"SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_TASK_MIN=0", "SLURM_ARRAY_TASK_MAX=8",
          "SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_STEP=0", NULL},
         PL_EINVAL,
         "range's position"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t k = 0, n = 0;
        char said[400];
        int rc = shard_auto(cases[i].env, &k, &n, said, sizeof said);
        cr_assert_eq(rc, cases[i].rc, "case %zu: %d (%s)", i, rc, said);
        cr_assert_not_null(strstr(said, cases[i].why), "case %zu: '%s' lacks '%s'", i, said,
                           cases[i].why);
    }
}
