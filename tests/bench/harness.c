/* tests/bench/harness.c: clocks, memory, one run on either backend. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"
#include "pollen/sim.h"

/* The region of the run in progress. A scenario has no user pointer, and
 * the region is marked from inside setup and a task, hence one global. */
static bench_region current;

/* The specification (tests/bench/README.md) times the wall clock; --cpu
 * switches to this process's CPU time, which a machine busy with other
 * work inflates far less. */
static clockid_t clock_id = CLOCK_MONOTONIC;

void bench_use_cpu_clock(void) { clock_id = CLOCK_PROCESS_CPUTIME_ID; }

/* The region is marked inside a simulated run, where clock_gettime reads
 * the run's virtual time (docs/simulator.md): routing is turned off for
 * the one read, so the figure is the real clock's and the workload's own
 * reads stay routed. */
uint64_t bench_clock_ns(void)
{
    struct timespec ts;
    bool routed = pl_sim_route_clocks(false);
    clock_gettime(clock_id, &ts);
    (void)pl_sim_route_clocks(routed);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The peak resident size of this process image: VmHWM, the high-water
 * mark of its own address space. ru_maxrss is not that: Linux carries it
 * over exec from the process that forked us, so under a parent bigger
 * than a small workload's whole growth (compare.py's Python) a region's
 * growth read as 0. getrusage stays the fallback without /proc. */
static size_t maxrss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    unsigned long kb = 0;
    bool found = false;
    while (f != NULL && !found && fgets(line, sizeof line, f) != NULL) {
        found = sscanf(line, "VmHWM: %lu kB", &kb) == 1;
    }
    if (f != NULL) {
        fclose(f);
    }
    if (found) {
        return (size_t)kb * 1024u;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (size_t)ru.ru_maxrss * 1024u;
}

void bench_region_begin(pl_executor *ex)
{
    memset(&current, 0, sizeof current);
    current.rss0 = maxrss_bytes();
    current.now0_ns = pl_now(ex);
    current.begun = true;
    current.wall0_ns = bench_clock_ns();
}

void bench_region_end(pl_executor *ex)
{
    current.wall1_ns = bench_clock_ns();
    current.now1_ns = pl_now(ex);
    current.rss1 = maxrss_bytes();
    current.ended = true;
}

uint64_t bench_region_ns(const bench_region *r) { return r->wall1_ns - r->wall0_ns; }

double bench_rss_per(const bench_region *r, uint64_t n)
{
    size_t grown = r->rss1 > r->rss0 ? r->rss1 - r->rss0 : 0;
    return (double)grown / (double)n;
}

void bench_fail(const char *workload, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pollen-bench: %s: ", workload);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void bench_line(const char *workload, bool sim, const char *metric, double value,
                int decimals, const char *unit, const char *extra)
{
    printf("%s %s %s=%.*f %s%s%s%s\n", workload, sim ? "pollen/sim" : "pollen", metric,
           decimals, value, unit, extra[0] != '\0' ? " " : "", extra,
           clock_id == CLOCK_MONOTONIC ? "" : " clock=cpu");
    fflush(stdout);
}

void bench_work_lines(const char *workload, bool sim, const bench_region *r, const char *unit,
                      uint64_t n)
{
    if (!sim) {
        return;
    }
    const struct {
        const char *what;
        uint64_t count;
    } work[] = {{"polls", r->polls}, {"events", r->events}, {"decisions", r->decisions}};
    char metric[64];
    char extra[32];
    snprintf(extra, sizeof extra, "n=%llu", (unsigned long long)n);
    for (size_t i = 0; i < sizeof work / sizeof work[0]; i++) {
        snprintf(metric, sizeof metric, "%s_per_%s", work[i].what, unit);
        bench_line(workload, true, metric, (double)work[i].count / (double)n, 2, work[i].what,
                   extra);
    }
}

/* ---- One run ------------------------------------------------------------ */

static int check_state(const pl_scenario *sc, pl_executor *ex, void *state)
{
    char msg[512] = "";
    if (sc->check != NULL && sc->check(ex, state, msg, sizeof msg) != 0) {
        bench_fail(sc->name, "check failed: %s", msg);
        return -1;
    }
    return 0;
}

/* POLLEN_BENCH_RECORDER=N runs the real workloads with a flight
 * recorder of N records, POLLEN_BENCH_COUNT_WAKERS=1 with counted waker
 * clones (pollen/dump.h), to measure what they cost. */
static void real_options(pl_executor_options *o)
{
    pl_executor_options_default(o);
    const char *rec = getenv("POLLEN_BENCH_RECORDER");
    if (rec != NULL) {
        o->recorder_events = (uint32_t)strtoul(rec, NULL, 10);
    }
    const char *count = getenv("POLLEN_BENCH_COUNT_WAKERS");
    o->count_wakers = count != NULL && strcmp(count, "1") == 0;
}

/* The production path: the real backend, no observer. */
static int execute_real(const pl_scenario *sc)
{
    void *state = calloc(1, sc->state_size);
    pl_executor *ex = NULL;
    pl_executor_options o;
    real_options(&o);
    int rc = state != NULL ? pl_executor_create(&ex, &o) : PL_ENOMEM;
    if (rc == 0) {
        rc = sc->setup(ex, state);
    }
    if (rc == 0) {
        rc = pl_run(ex);
    }
    if (rc != 0) {
        bench_fail(sc->name, "%s", pl_strerror(rc));
    } else {
        rc = check_state(sc, ex, state);
    }
    pl_executor_destroy(ex);
    if (state != NULL && sc->teardown != NULL) {
        sc->teardown(state);
    }
    free(state);
    return rc != 0 ? -1 : 0;
}

/* The simulator as users run it: default options (random strategy, waker
 * rotation, every decision kind at its default), decisions recorded. Only
 * the livelock bound is raised, to what the workload legitimately needs. */
static int execute_sim(const pl_scenario *sc, const bench_mode *mode)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = mode->seed;
    o.steps_without_progress_max = mode->steps_max;
    o.keep_decisions = true;
    pl_sim_result r;
    int rc = pl_sim_run(sc, &o, &r);
    current.decisions = rc == 0 ? r.decisions : 0;
    current.polls = rc == 0 ? r.steps : 0;
    current.events = rc == 0 ? r.events : 0;
    if (rc != 0) {
        bench_fail(sc->name, "the simulator did not start: %s (%s)", pl_strerror(rc),
                   r.finding.message);
    } else if (r.finding.kind != PL_FINDING_NONE) {
        bench_fail(sc->name, "seed %llu: finding %s in task '%s': %s",
                   (unsigned long long)mode->seed, pl_finding_name(r.finding.kind),
                   r.finding.task_name, r.finding.message);
        rc = -1;
    }
    pl_sim_result_free(&r);
    return rc != 0 ? -1 : 0;
}

int bench_execute(const pl_scenario *sc, const bench_mode *mode, bench_region *out)
{
    memset(&current, 0, sizeof current);
    int rc = mode->sim ? execute_sim(sc, mode) : execute_real(sc);
    *out = current;
    if (rc == 0 && !(current.begun && current.ended)) {
        bench_fail(sc->name, "the measured region was not closed");
        rc = -1;
    }
    return rc;
}
