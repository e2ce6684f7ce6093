/* tests/bench/fuzz.c: workload 5, libFuzzer exec/s of the outbox target.
 *
 * NOT MEASURED YET. workload 5 is the exec/s libFuzzer reports for the
 * outbox fuzz target (50 items) over 30 s, built with clang, ASan and
 * UBSan: a figure of a separate instrumented build, not of this binary.
 * To wire it in, replace the body below with: find the fuzz target
 * (built with -Dfuzz=true; pass its path on the command line or through
 * the environment), run it with `-max_total_time=30 -print_final_stats=1`
 * in a child process, parse `stat::number_of_executed_units` and
 * `stat::average_exec_per_sec` from its stderr, and print
 *     fuzz pollen/sim execs_per_sec=<value> 1/s items=50 seconds=30
 * with bench_line(). Until then the workload says so and exits with
 * BENCH_EXIT_UNAVAILABLE (77), which `pollen-bench all` reports as skipped.
 */
#include <stdio.h>

#include "bench.h"

int bench_fuzz(uint64_t n, bool sim)
{
    (void)n;
    (void)sim;
    fprintf(stderr, "pollen-bench: fuzz: not measured by pollen-bench yet (workload 5: "
                    "libFuzzer exec/s of the outbox fuzz target, 50 items, 30 s, clang with "
                    "ASan and UBSan); see tests/bench/fuzz.c\n");
    return BENCH_EXIT_UNAVAILABLE;
}
