/* sim/src/why.h: the point of no return of a replay's finding, and the
 * passing twin of each of its departures (`pollen why`).
 *
 * The point of no return: the replayed run consults N decisions. For a
 * prefix of k of them, PL_SIM_SOURCE_PREFIX runs continue it with random
 * decisions (the run's knobs, each continuation's PRNG seeded from the
 * replay's seed, k and its number: the answer is the same every time),
 * and the share that end in the replay's finding estimates how likely the
 * failure is once those k decisions were made. k = 0 is a fresh random
 * run, k = N the replay itself. A bisect between the longest prefix seen
 * below PL__WHY_INEVITABLE and the shortest seen at or above it finds
 * where the share jumps: the decision that completes that prefix is the
 * decisive one, after which the failure is (nearly) certain whatever
 * comes next. The bisect assumes the share grows with k; where it does
 * not, it still ends at a k whose share jumps from below to above the
 * threshold. When k = 0 is already at the threshold (a bug most random
 * runs hit), there is nothing to bisect.
 *
 * The passing twin: each decision of the file's list that leaves
 * production's order (value not 0) is set back to 0, the rest kept (each
 * kind reads its own sub-list, as the shrinker's candidates do), and the
 * run repeated: a twin that passes shows that this departure is a cause.
 *
 * Runs execute the user's code: a livelock or crash candidate runs
 * through `runner` (shrink.h's pl__shrink_runner_fn; the CLI gives one
 * that runs each in a child process), as the shrinker's do. Every run
 * stops at the replay's limits (virtual time, livelock bounds). Starts no
 * thread and reads no clock: the result depends on the file alone.
 */
#ifndef POLLEN_SIM_WHY_H
#define POLLEN_SIM_WHY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim.h"
#include "shrink.h"

#define PL__WHY_RUNS_DEFAULT 10u /* continuations per prefix */
#define PL__WHY_RUNS_MAX     1000u
#define PL__WHY_PROBES_MAX   68 /* 0, N and a bisect of up to 2^64 decisions */
#define PL__WHY_TWINS_MAX    32 /* departures given a twin (the first ones) */
#define PL__WHY_TASKS_MAX    4  /* tasks a decision involves, and the finding's */
#define PL__WHY_TEXT_MAX     512

/* A prefix is past the point of no return when at least this share of
 * its continuations fail (percent). */
#define PL__WHY_INEVITABLE 90u

/* One probed prefix: its first k decisions, and how many of its
 * continuations ended in the finding. */
typedef struct pl__why_probe {
    uint64_t k;
    uint32_t failed;
    uint32_t runs;
} pl__why_probe;

/* One decision of the replayed run. */
typedef struct pl__why_decision {
    uint64_t index; /* position among the run's consulted decisions */
    uint32_t kind;  /* pl_decision_kind */
    uint32_t n;
    uint32_t value; /* 0: production's choice */
    bool has_step;  /* false: the run has no timeline (it never returned) */
    uint64_t step;
    pl_time time_ns;
    uint32_t task;               /* the task its event names (running, or the owner of the
                                    timer it delays); 0: none */
    char text[PL__WHY_TEXT_MAX]; /* the shrinker's line for it */
} pl__why_decision;

typedef struct pl__why_twin {
    pl__why_decision d;
    pl_finding_kind outcome; /* of the run with d set to 0: PL_FINDING_NONE passes */
    bool hung;               /* that run never returned (a livelock) */
} pl__why_twin;

/* A task the decisive decision involves: polled by it, passed over, or
 * the task its event names. */
typedef struct pl__why_task {
    uint32_t id;
    char name[PL_FINDING_NAME_MAX];
    const char *role; /* "polled", "passed over", "its subject" (the task the
                         decision event names), "the finding's task": static */
    bool parked;      /* the finding names it parked: `parked_as` holds its
                         backtrace there */
    pl_finding_task parked_as;
} pl__why_task;

/* Everything `pollen why` says: plain data (static strings of the
 * program aside, as pl_finding), so it may cross to another process of
 * the same binary. */
typedef struct pl__why_result {
    pl_finding finding; /* the replayed run's */
    uint64_t seed;
    uint64_t decisions;                       /* consulted by the replayed run */
    uint32_t runs;                            /* continuations per prefix */
    uint64_t runs_total;                      /* every run made, twins included */
    pl__why_probe probes[PL__WHY_PROBES_MAX]; /* by k, ascending */
    size_t probes_len;
    bool inevitable_at_start;  /* k = 0 already fails as often: nothing to bisect */
    bool found;                /* a point of no return: `point`, `before`, `after` */
    uint64_t point;            /* the shortest such prefix (its length) */
    pl__why_probe before;      /* the longest prefix below the threshold (k = point - 1
                                  after a whole bisect) */
    pl__why_probe after;       /* the prefix `point` */
    pl__why_decision decisive; /* decision point - 1 */
    pl__why_task tasks[PL__WHY_TASKS_MAX];
    size_t tasks_len;
    size_t departures; /* non-zero decisions of the file's list */
    bool has_last_departure;
    uint64_t last_departure; /* the index of the list's last non-zero decision */
    pl__why_twin twins[PL__WHY_TWINS_MAX];
    size_t twins_len; /* twins tried: min(departures, PL__WHY_TWINS_MAX), fewer
                         when stopped */
    /* The progress callback asked to stop (a time limit): the bisect ended
     * where it was, found is false and before/after bracket the point
     * (bracketed: both were measured); twins not tried yet were not. */
    bool stopped;
    bool bracketed;
} pl__why_result;

/* Called after each probed prefix, with the bisect's bounds (a progress
 * line), and after each twin with p NULL. Returns false to stop the
 * analysis there (out->stopped). May be NULL. */
typedef bool (*pl__why_progress_fn)(void *ud, const pl__why_probe *p, uint64_t lo, uint64_t hi);

/* Analyses replay file `path` (which must record a finding) with `runs`
 * continuations per prefix (1..PL__WHY_RUNS_MAX; 0: PL__WHY_RUNS_DEFAULT)
 * into *out. runner: as pl__shrink_with's (NULL: in this process; a
 * crash is then refused, PL_EINVAL). Returns 0, or a negative PL_E* code
 * with the reason in err (NUL-terminated, err_len > 0): the file
 * unreadable or without a finding, or its run not reproducing it. */
int pl__why_file(const char *path, uint32_t runs, pl__shrink_runner_fn runner,
                 pl__why_progress_fn progress, void *ud, pl__why_result *out, char *err,
                 size_t err_len);

#endif
