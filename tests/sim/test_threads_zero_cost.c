/* tests/sim/test_threads_zero_cost.c: a run without threads is the run
 * it was before simulated threads existed.
 *
 * Every zoo scenario and lesson linked into this binary runs seeds 0..2
 * and its trace hash is compared with threads_zero_cost.txt, written by
 * this same test in a build of the tree without threads (the commit
 * before pollen/thread.h, with this file added). A scenario that spawns
 * threads is not in the list (it did not exist then); a listed scenario
 * missing here fails. POLLEN_ZERO_COST_WRITE=FILE writes the list
 * instead (`name seed hash` per line), for the day behaviour changes on
 * purpose: say why in that commit, as for the golden hashes.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pollen/sim.h>

#include "leakcheck.h"

#ifndef ZERO_COST_LIST
#error "ZERO_COST_LIST: the path of threads_zero_cost.txt"
#endif

enum { SEEDS = 3 };

static uint64_t hash_of(const pl_scenario *sc, uint64_t seed)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = seed;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(sc, &o, &r), 0, "%s seed %" PRIu64 " did not run", sc->name, seed);
    uint64_t h = r.hash;
    pl_sim_result_free(&r);
    return h;
}

/* bug_poll_hang spins inside one poll for good: only the CLI's CPU-time
 * budget ends it (test_cli.c), so it cannot run in-process. */
static bool zoo_or_lesson(const pl_scenario *sc)
{
    return strcmp(sc->name, "bug_poll_hang") != 0 &&
           (strncmp(sc->name, "bug_", 4) == 0 || strncmp(sc->name, "fix_", 4) == 0 ||
            strncmp(sc->name, "t_", 2) != 0);
}

static void write_list(const char *path)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    size_t n = 0;
    const pl_scenario *const *all = pl_scenarios(&n);
    for (size_t i = 0; i < n; i++) {
        if (!zoo_or_lesson(all[i])) {
            continue;
        }
        for (uint64_t seed = 0; seed < SEEDS; seed++) {
            fprintf(f, "%s %" PRIu64 " %016" PRIx64 "\n", all[i]->name, seed,
                    hash_of(all[i], seed));
        }
    }
    fclose(f);
}

LEAK_TEST(threads_zero_cost, hashes_of_runs_without_threads_are_unchanged)
{
    const char *out = getenv("POLLEN_ZERO_COST_WRITE");
    if (out != NULL && out[0] != '\0') {
        write_list(out);
        return;
    }
    FILE *f = fopen(ZERO_COST_LIST, "r");
    cr_assert_not_null(f, "cannot read %s", ZERO_COST_LIST);
    char name[128];
    uint64_t seed, want;
    unsigned checked = 0;
    while (fscanf(f, "%127s %" SCNu64 " %" SCNx64, name, &seed, &want) == 3) {
        const pl_scenario *sc = pl_scenario_find(name);
        cr_assert_not_null(sc, "%s is listed but not linked in", name);
        uint64_t got = hash_of(sc, seed);
        cr_expect_eq(got, want, "%s seed %" PRIu64 ": hash %016" PRIx64 ", was %016" PRIx64,
                     name, seed, got, want);
        checked++;
    }
    fclose(f);
    cr_assert_gt(checked, 60, "only %u runs listed", checked);
}
