/* tests/bench/bench.h: what the pollen-bench sources share.
 *
 * A workload is a pl_scenario: its setup spawns a main task and its check
 * verifies the result. The same scenario runs on the real backend or
 * under the simulator (impl "pollen" or "pollen/sim"), so both modes
 * time exactly the same user code. The measured region follows
 * tests/bench/README.md: it begins in setup, just before the first spawn, and
 * ends when the main task has seen every task complete.
 */
#ifndef POLLEN_BENCH_H
#define POLLEN_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim.h"

/* Exit status of a workload that pollen-bench does not measure (yet). */
#define BENCH_EXIT_UNAVAILABLE 77

/* One run's measured region. */
typedef struct bench_region {
    uint64_t wall0_ns; /* CLOCK_MONOTONIC just before the first spawn */
    uint64_t wall1_ns; /* when every task was seen complete */
    size_t rss0;       /* ru_maxrss in bytes after setup (the baseline) */
    size_t rss1;       /* ru_maxrss in bytes after the region */
    pl_time now0_ns;   /* the executor's clock (virtual under the sim) */
    pl_time now1_ns;
    uint64_t decisions; /* sim: decisions the run consulted (and recorded) */
    uint64_t polls;     /* sim: polls of the whole run (the result's steps) */
    uint64_t events;    /* sim: trace events of the whole run (each one hashed) */
    bool begun;
    bool ended;
} bench_region;

/* The region's clock in nanoseconds: CLOCK_MONOTONIC, or the process's
 * CPU time after bench_use_cpu_clock (lines then say clock=cpu). */
uint64_t bench_clock_ns(void);
void bench_use_cpu_clock(void);

/* Marks the region: begin in setup right before the first spawn, end in
 * the main task once it has joined everything. */
void bench_region_begin(pl_executor *ex);
void bench_region_end(pl_executor *ex);

/* How one run is executed. */
typedef struct bench_mode {
    bool sim;                 /* false: the real epoll backend */
    uint64_t seed;            /* sim: the run's seed */
    uint64_t steps_max;       /* sim: livelock bound, polls without time or completion */
} bench_mode;

/* Runs `sc` once in `mode` and returns its region in *out. Under the
 * simulator the run has every oracle on and records its decisions, as
 * users run it; any finding fails the run. Returns 0, or -1 after
 * printing why. */
int bench_execute(const pl_scenario *sc, const bench_mode *mode, bench_region *out);

/* Under the simulator, prints what the run did per unit of work (`unit`
 * names it: "item", "task", ...): polls_per_<unit>, events_per_<unit>
 * and decisions_per_<unit>, counted over the whole run. They say what a
 * nanosecond figure pays for; nothing is printed for the real backend. */
void bench_work_lines(const char *workload, bool sim, const bench_region *r, const char *unit,
                      uint64_t n);

/* Prints one result line: "<workload> <impl> <metric>=<value> <unit> <extra>". */
void bench_line(const char *workload, bool sim, const char *metric, double value,
                int decimals, const char *unit, const char *extra);

/* (peak - baseline) / n, in bytes. */
double bench_rss_per(const bench_region *r, uint64_t n);

/* Elapsed nanoseconds of a region. */
uint64_t bench_region_ns(const bench_region *r);

/* Prints an error about `workload` to stderr (printf format). */
void bench_fail(const char *workload, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The workloads: each runs once in this process and prints its lines.
 * n is the workload's size (0: its default). Returns 0, 1 on failure or
 * BENCH_EXIT_UNAVAILABLE. */
int bench_pingpong(uint64_t n, bool sim);
int bench_spawn(uint64_t n, bool sim);
int bench_timers(uint64_t n, bool sim);
int bench_outbox(uint64_t n, bool sim);
int bench_fuzz(uint64_t n, bool sim);
int bench_campaign(uint64_t n, bool sim); /* n: seeds; always under the simulator */
int bench_cluster(uint64_t n, bool sim);  /* n: messages in total */
int bench_threads(uint64_t n, bool sim);  /* n: round trips; 10 n points */

#endif
