/* tests/bench/fuzz.c: workload 5, libFuzzer exec/s of the outbox target.
 *
 * The figure belongs to another build: the outbox fuzz target of a clang
 * build with -Dfuzz=true (ASan and UBSan, tests/bench/README.md), not to
 * this binary. POLLEN_FUZZ_TARGET names it; without it the workload says
 * how to build one and exits BENCH_EXIT_UNAVAILABLE (skipped by `all`).
 * The target runs N seconds (default 30) in a child, from a copy of the
 * seed corpus in a fresh directory (libFuzzer writes the inputs it keeps
 * into its first corpus directory: the source tree stays untouched), and
 * its final statistics (-print_final_stats=1) give the line
 *     fuzz pollen/sim execs_per_sec=4160 1/s seconds=30 runs=124800
 * A target that reports a finding fails the workload: the outbox lesson
 * is clean, so a finding means a broken build.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define FUZZ_SECONDS_DEFAULT 30u

/* The seed corpus, from meson: the source tree's fuzz/corpus/outbox. */
#ifndef BENCH_FUZZ_CORPUS
#error "BENCH_FUZZ_CORPUS must name the outbox target's seed corpus"
#endif

/* The value of libFuzzer's "stat::<name>: <value>" in the log, or -1. */
static double final_stat(const char *log, const char *name)
{
    FILE *f = fopen(log, "r");
    if (f == NULL) {
        return -1;
    }
    char line[256];
    char want[64];
    snprintf(want, sizeof want, "stat::%s:", name);
    double v = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, want, strlen(want)) == 0) {
            v = strtod(line + strlen(want), NULL);
        }
    }
    fclose(f);
    return v;
}

static int fuzz_measure(const char *target, uint64_t seconds, const char *dir)
{
    char cmd[2048];
    char log[256];
    snprintf(log, sizeof log, "%s/fuzz.log", dir);
    snprintf(cmd, sizeof cmd,
             "mkdir '%s/corpus' && cp '%s'/* '%s/corpus/' && "
             "'%s' '%s/corpus' -max_total_time=%llu -print_final_stats=1 "
             "-artifact_prefix='%s/' >'%s' 2>&1",
             dir, BENCH_FUZZ_CORPUS, dir, target, dir, (unsigned long long)seconds, dir, log);
    int status = system(cmd);
    double rate = final_stat(log, "average_exec_per_sec");
    double runs = final_stat(log, "number_of_executed_units");
    bool ok = status == 0 && rate >= 0 && runs >= 0;
    if (ok) {
        char extra[96];
        snprintf(extra, sizeof extra, "seconds=%llu runs=%.0f", (unsigned long long)seconds,
                 runs);
        bench_line("fuzz", true, "execs_per_sec", rate, 0, "1/s", extra);
    } else {
        bench_fail("fuzz", "%s exited %d%s; the end of its output:", target,
                   WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                   rate < 0 ? " without final statistics" : " (a finding?)");
        snprintf(cmd, sizeof cmd, "tail -n 20 '%s' >&2", log);
        int shown = system(cmd); /* best effort: the failure is reported either way */
        (void)shown;
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 && ok ? 0 : 1;
}

int bench_fuzz(uint64_t n, bool sim)
{
    (void)sim; /* always the simulator: the target is a simulation */
    const char *target = getenv("POLLEN_FUZZ_TARGET");
    if (target == NULL || access(target, X_OK) != 0) {
        fprintf(stderr,
                "pollen-bench: fuzz: set POLLEN_FUZZ_TARGET to the outbox fuzz target of a "
                "clang build: CC=clang CXX=clang++ meson setup build-fuzz -Dfuzz=true "
                "-Dtests=disabled -Dbench=false -Db_sanitize=address,undefined "
                "-Db_lundef=false && meson compile -C build-fuzz, then "
                "POLLEN_FUZZ_TARGET=build-fuzz/fuzz/fuzz_outbox%s\n",
                target != NULL ? " (the one given is not an executable)" : "");
        return BENCH_EXIT_UNAVAILABLE;
    }
    if (strchr(target, '\'') != NULL) {
        bench_fail("fuzz", "the target's path may not contain a quote: %s", target);
        return 1;
    }
    char dir[] = "/tmp/pollen-bench-fuzz-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        bench_fail("fuzz", "no temporary directory");
        return 1;
    }
    return fuzz_measure(target, n != 0 ? n : FUZZ_SECONDS_DEFAULT, dir);
}
