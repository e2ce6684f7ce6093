/* tests/sim/test_pthread_runs.c: many runs of one pthread program in one
 * process, through the library (no CLI worker, which leaves with _exit
 * before LeakSanitizer looks).
 *
 *   test_pthread_runs SEEDS EXPECT
 *
 * Linked with a program of scenarios/pthread/ and the shim's library
 * without its main.c: runs the scenario "main" for seeds 0..SEEDS-1, each
 * seed twice in a row, and fails when a run's finding is not EXPECT
 * ("none" or a finding name), when the two runs of a seed differ (the
 * program's globals or the shim's state leaking from one run into the
 * next), or, under LeakSanitizer, when anything is left allocated after
 * the runs: each run frees what it made. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pollen/sim.h"

#if defined(__SANITIZE_ADDRESS__)
#define PL_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PL_TEST_LSAN 1
#endif
#endif
#ifdef PL_TEST_LSAN
#include <sanitizer/lsan_interface.h>
#endif

void pl__spt_program_start(const char *argv0);

static int run_seed(const pl_scenario *sc, uint64_t seed, pl_sim_result *out)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = seed;
    return pl_sim_run(sc, &o, out);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s SEEDS none|FINDING\n", argv[0]);
        return 2;
    }
    pl__spt_program_start(argv[0]);
    uint64_t seeds = strtoull(argv[1], NULL, 10);
    int expect = strcmp(argv[2], "none") == 0 ? PL_FINDING_NONE : pl_finding_from_name(argv[2]);
    const pl_scenario *sc = pl_scenario_find("main");
    if (sc == NULL || expect < 0) {
        fprintf(stderr, "no scenario 'main' or no finding '%s'\n", argv[2]);
        return 2;
    }
    int failed = 0;
    for (uint64_t seed = 0; seed < seeds && !failed; seed++) {
        pl_sim_result a, b;
        if (run_seed(sc, seed, &a) != 0 || run_seed(sc, seed, &b) != 0) {
            fprintf(stderr, "seed %llu: pl_sim_run failed\n", (unsigned long long)seed);
            return 1;
        }
        if (expect == PL_FINDING_NONE && a.finding.kind != PL_FINDING_NONE) {
            fprintf(stderr, "seed %llu: %s: %s\n", (unsigned long long)seed,
                    pl_finding_name(a.finding.kind), a.finding.message);
            failed = 1;
        }
        if (a.hash != b.hash || a.finding.kind != b.finding.kind) {
            fprintf(stderr, "seed %llu: two runs differ (hash %016llx, %016llx)\n",
                    (unsigned long long)seed, (unsigned long long)a.hash,
                    (unsigned long long)b.hash);
            failed = 1;
        }
        if (expect != PL_FINDING_NONE && a.finding.kind == (pl_finding_kind)expect) {
            expect = -1; /* seen: later seeds may be clean */
        }
        pl_sim_result_free(&a);
        pl_sim_result_free(&b);
    }
    if (expect > 0) {
        fprintf(stderr, "no seed produced %s\n", argv[2]);
        failed = 1;
    }
#ifdef PL_TEST_LSAN
    if (__lsan_do_recoverable_leak_check() != 0) {
        fprintf(stderr, "memory left allocated after the runs (report above)\n");
        failed = 1;
    }
#endif
    printf("%s: %llu seeds, each twice: %s\n", argv[0], (unsigned long long)seeds,
           failed ? "FAILED" : "ok");
    return failed;
}
