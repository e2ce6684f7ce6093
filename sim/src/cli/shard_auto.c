/* sim/src/cli/shard_auto.c: `--shard auto`, the shard K/N a batch
 * engine's environment gives its worker.
 *
 * Each engine numbers its workers in its own variables, some from 0 and
 * some from 1, and some give no count at all; one table says which is
 * which, so the docs, the refusal's list and the code cannot drift. A
 * worker that finds two engines' variables refuses rather than guess (a
 * Slurm task running GNU parallel sees both): POLLEN_SHARD settles it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cli_internal.h"

typedef struct engine {
    const char *name;      /* as the message names it */
    const char *index_var; /* its worker's number */
    const char *count_var; /* how many workers; POLLEN_SHARD_COUNT if the engine has none */
    unsigned base;         /* the first worker's number */
} engine;

#define COUNT_VAR "POLLEN_SHARD_COUNT"

/* Slurm's count is derived from MIN, MAX and STEP (slurm_position). */
static const engine engines[] = {
    {"Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", COUNT_VAR, 0},
    {"Slurm job array", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", 0},
    {"GNU parallel", "PARALLEL_SEQ", COUNT_VAR, 1},
    {"GitLab CI parallel", "CI_NODE_INDEX", "CI_NODE_TOTAL", 1},
    {"CircleCI parallelism", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", 0},
    {"Buildkite parallelism", "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 0},
};
#define NENGINES (sizeof engines / sizeof engines[0])

static bool is_set(pl__cli_env_fn env, const char *name)
{
    const char *v = env(name);
    return v != NULL && v[0] != '\0';
}

/* Reads a variable as a decimal number; false (and why, in said) when it
 * is missing or not one. */
static bool read_number(pl__cli_env_fn env, const engine *e, const char *var, uint64_t *out,
                        char *said, size_t len)
{
    const char *v = env(var);
    if (v == NULL || v[0] == '\0') {
        snprintf(said, len, "%s=%s is set (%s) but %s is not%s", e->index_var, env(e->index_var),
                 e->name, var,
                 strcmp(var, COUNT_VAR) == 0
                     ? ": this engine gives no worker count, so set it to the number of "
                       "workers"
                     : "");
        return false;
    }
    if (pl__cli_parse_u64(v, out) != 0) {
        snprintf(said, len, "%s=%s (%s) is not a decimal number", var, v, e->name);
        return false;
    }
    return true;
}

/* A Slurm task's 1-based position in its array. The array must be a
 * range (--array=A-B or A-B:S): a list such as 1,5,9 has positions no
 * variable tells. */
static bool slurm_position(pl__cli_env_fn env, const engine *e, uint64_t id, uint64_t *k,
                           uint64_t *n, char *said, size_t len)
{
    uint64_t min, max, step = 1;
    if (!read_number(env, e, "SLURM_ARRAY_TASK_MIN", &min, said, len) ||
        !read_number(env, e, "SLURM_ARRAY_TASK_MAX", &max, said, len) ||
        !read_number(env, e, e->count_var, n, said, len)) {
        return false;
    }
    if (is_set(env, "SLURM_ARRAY_TASK_STEP") &&
        !read_number(env, e, "SLURM_ARRAY_TASK_STEP", &step, said, len)) {
        return false;
    }
    if (step == 0 || min > max || id < min || id > max || (id - min) % step != 0 ||
        (max - min) / step + 1 != *n) {
        snprintf(said, len,
                 "SLURM_ARRAY_TASK_ID=%" PRIu64 " in an array of %" PRIu64 " tasks from %" PRIu64
                 " to %" PRIu64 " by %" PRIu64
                 " is not a range's position: submit the array as --array=A-B or A-B:S, not a "
                 "list",
                 id, *n, min, max, step);
        return false;
    }
    *k = (id - min) / step + 1;
    return true;
}

/* The shard engine e gives; false with the reason in said. */
static bool engine_shard(pl__cli_env_fn env, const engine *e, uint32_t *k, uint32_t *n, char *said,
                         size_t len)
{
    uint64_t index, kk, nn;
    if (!read_number(env, e, e->index_var, &index, said, len)) {
        return false;
    }
    bool slurm = strcmp(e->index_var, "SLURM_ARRAY_TASK_ID") == 0;
    if (slurm ? !slurm_position(env, e, index, &kk, &nn, said, len)
              : !read_number(env, e, e->count_var, &nn, said, len)) {
        return false;
    }
    if (!slurm) {
        kk = index - e->base + 1;
    }
    if (index < e->base || kk > nn || nn > PL__CLI_SHARDS_MAX) {
        snprintf(said, len,
                 "%s=%" PRIu64 " with %s=%" PRIu64 " (%s, numbered from %u) is no shard K/N with "
                 "1 <= K <= N <= %u",
                 e->index_var, index, e->count_var, nn, e->name, e->base, PL__CLI_SHARDS_MAX);
        return false;
    }
    *k = (uint32_t)kk;
    *n = (uint32_t)nn;
    snprintf(said, len, "shard %" PRIu32 "/%" PRIu32 " from %s=%" PRIu64 " and %s=%" PRIu64 " (%s)",
             *k, *n, e->index_var, index, e->count_var, nn, e->name);
    return true;
}

/* The variables --shard auto looks for, in order, as one text. */
static void looked_for(char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "POLLEN_SHARD (K/N)");
    for (size_t i = 0; i < NENGINES && used < len; i++) {
        used += (size_t)snprintf(buf + used, len - used, ", %s (%s)", engines[i].index_var,
                                 engines[i].name);
    }
}

int pl__cli_shard_auto(pl__cli_env_fn env, uint32_t *k, uint32_t *n, char *said, size_t len)
{
    PL__CLI_ASSERT(env != NULL && k != NULL && n != NULL && said != NULL && len > 0);
    const char *explicit = env("POLLEN_SHARD");
    if (explicit != NULL && explicit[0] != '\0') {
        if (pl__cli_parse_shard(explicit, k, n) != 0) {
            snprintf(said, len, "POLLEN_SHARD=%s is no shard K/N with 1 <= K <= N <= %u", explicit,
                     PL__CLI_SHARDS_MAX);
            return PL_EINVAL;
        }
        snprintf(said, len, "shard %" PRIu32 "/%" PRIu32 " from POLLEN_SHARD=%s", *k, *n, explicit);
        return 0;
    }
    const engine *found = NULL;
    for (size_t i = 0; i < NENGINES; i++) {
        if (!is_set(env, engines[i].index_var)) {
            continue;
        }
        if (found != NULL) {
            snprintf(said, len,
                     "both %s (%s) and %s (%s) are set: say which shard this is with "
                     "POLLEN_SHARD=K/N",
                     found->index_var, found->name, engines[i].index_var, engines[i].name);
            return PL_EINVAL;
        }
        found = &engines[i];
    }
    if (found == NULL) {
        char list[600];
        looked_for(list, sizeof list);
        snprintf(said, len, "no batch engine's variables are set; looked for %s", list);
        return PL_ENOENT;
    }
    return engine_shard(env, found, k, n, said, len) ? 0 : PL_EINVAL;
}
