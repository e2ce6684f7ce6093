/* sim/src/cli/cli_internal.h: what the files of the command line share:
 * exit statuses and defaults, the CLI context, options, IPC messages,
 * workers, campaigns, reports and child processes, and the functions one
 * file defines for the others (all pl__cli_*, internal to libpollen-sim).
 * Only the CLI includes it; the library proper never does. */
#ifndef PL_SIM_CLI_INTERNAL_H
#define PL_SIM_CLI_INTERNAL_H

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
/* Under AddressSanitizer, freed memory sits in a quarantine that keeps
 * the RSS growing for a while: memory growth is read from its allocator
 * instead. */
#if defined(__SANITIZE_ADDRESS__)
#define CLI_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CLI_ASAN 1
#endif
#endif
#ifdef CLI_ASAN
#include <sanitizer/allocator_interface.h>
#endif

#include "pollen/sim.h"
#include "campaign.h"
#include "cli.h"
#include "decide.h"
#include "digits.h"
#include "hashset.h"
#include "isolate/cpu_budget.h"
#include "isolate/crash_stack.h"
#include "isolate/mirror.h"
#include "isolate/ring_read.h"
#include "knobs_of.h"
#include "replay.h"
#include "run.h"
#include "shrink.h"
#include "sim_internal.h"
#include "strategy.h"
#include "trace.h"
#include "trace_ring.h"

#include "sim_assert.h"

/* The CLI's assertion, for its invariants (indices within the buffers
 * it parses, what a header says a caller must pass). On in every build
 * type, as PL__SIM_ASSERT, which it is (NDEBUG, which a release build's
 * b_ndebug sets, drops assert(), never these): a failure prints
 * "pollen: assertion failed: <expression> (<file>:<line>)", the CLI's
 * file and line, and aborts. Never for what a user or a file may get
 * wrong: that is a usage error or a message. */
#define PL__CLI_ASSERT(cond) PL__SIM_ASSERT(cond)

/* Process exit statuses. 10 + pl_finding_kind for findings of `run`. */
enum {
    ST_CLEAN = 0,
    ST_DIFFERS = 1,
    ST_USAGE = 2,
    ST_INTERNAL = 3,
    ST_EXPECT_MISSED = 4, /* a known-bug scenario's expected finding not found */
    ST_SETUP_ERROR = 5,   /* a scenario's setup returned an error: it never ran */
    ST_FINDING_BASE = 10,
    ST_INTERRUPTED = 130,
    ST_OUTPUT_CLOSED = 141, /* 128 + SIGPIPE, what a shell reports for `| head` */
};

#define DEFAULT_SEED_HI 999u
#define DEFAULT_OUT_DIR "pollen-out"
#define DEFAULT_WATCHDOG_NS (10 * PL_S)
/* A shrink's budget is its candidate runs (deterministic); this
 * wall-clock net only stops one whose runs are unusually slow. */
#define DEFAULT_SHRINK_NS (300 * PL_S)
#define DEFAULT_REAL_LIMIT_NS (60 * PL_S)
#define PROGRESS_TTY_MS 1000
#define PROGRESS_PIPE_MS 10000
#define JOBS_DEFAULT_MAX 64u
#define OUTPUT_TAIL_MAX 4096u /* bytes of a seed's stdout shown with its finding */
#define CRASH_TIMELINE_EVENTS 20u /* events of a crashed run shown with its finding */
#define DEFAULT_RECYCLE_SEEDS 10000u
#define DEFAULT_WORKER_RSS (UINT64_C(1) << 30)
#define GROWTH_WINDOW 64u     /* seeds over which memory growth is judged */
#define GROWTH_MIN_BYTES (UINT64_C(64) << 10)

/* ======================================================================
 * Context, messages and option parsing
 * ==================================================================== */

typedef struct cli {
    const char *argv0;       /* as invoked: the program of reproduce lines */
    const char *prog;        /* its basename, escaped, for messages and help */
    char prog_buf[256];
    const pl_scenario **all; /* registered scenarios, then extra ones */
    size_t nall;
} cli;

#define usage_error(c, cmd, ...) pl__cli_usage_hint((c), (cmd), NULL, __VA_ARGS__)

typedef struct opt_spec {
    const char *name;  /* long form without the dashes */
    char short_name;   /* 0: none */
    const char *arg;   /* placeholder of the value ("A..B"); NULL: a flag */
} opt_spec;

#define OPTS_MAX 32

typedef struct opts_iter {
    const cli *c;
    const char *cmd;
    const opt_spec *specs; /* ends with a NULL name; at most OPTS_MAX */
    int argc;
    char **argv;
    int i;
    bool positional_only;  /* after "--" */
    const char *given[OPTS_MAX]; /* the value each option got; NULL: not yet */
} opts_iter;

enum { OPT_END = -1, OPT_POSITIONAL = -2, OPT_ERROR = -3 };

/* Text from a file or the command line, escaped for the terminal
 * (pl__cli_escape), by value so that one printf can take several. */
typedef struct safe_buf {
    char s[PATH_MAX + 1024];
} safe_buf;

/* ---- User output -------------------------------------------------------
 * User code runs in child processes whose stdout (fd 1) is a capture
 * file, never pollen's stdout: under --json that channel carries pollen's
 * JSON lines alone. A worker empties its file after each seed, so the
 * file holds the current seed's output; its tail goes with a finding. */

/* The tail of one seed's stdout. */
typedef struct output_tail {
    uint64_t bytes;               /* written in all */
    char text[OUTPUT_TAIL_MAX];   /* the last of them, NUL-terminated */
} output_tail;

/* ======================================================================
 * `run`: options
 * ==================================================================== */

typedef struct run_opts {
    char **patterns;        /* scenario names, globs, 'all' */
    size_t npatterns;
    uint64_t seed_lo, seed_hi; /* inclusive */
    pl_time time_ns;        /* wall-time cap; 0: none */
    pl_time watchdog_ns;    /* per-seed wall-time cap */
    const char *strategy;   /* never NULL */
    const char *knobs;      /* NULL: the defaults */
    pl_time poll_cost_ns;   /* --poll-cost; 0: none */
    bool rotation_off;      /* --waker-rotation off */
    uint32_t jobs;
    uint32_t shard_k, shard_n;
    char shard_from[400];   /* --shard auto: which variables gave it; "" otherwise */
    char out_dir[PATH_MAX]; /* no trailing slash */
    bool json, check_det, real, keep_going, quiet, no_shrink;
    bool trace;             /* --trace: print the one seed's timeline */
    const char *chrome;     /* --chrome-trace OUT.json; NULL: none */
    bool bounded;           /* --strategy bounded:K: enumerate, no seeds */
    uint32_t bound_k;
    uint32_t pct_depth;     /* --strategy pct:D: D, for the guarantee; 0: not PCT */
    uint64_t pct_horizon;   /* pct:D without K: measured once per scenario; 0: unknown */
    pl_time shrink_ns;      /* --shrink-time: the auto-shrink's budget */
    uint64_t recycle_seeds; /* a worker hands its seeds on after this many */
    uint64_t worker_rss;    /* ... or once its peak RSS passes this (bytes) */
    bool tty;               /* stderr is a terminal: progress every second */
    int64_t deadline_ms;    /* now_ms() when --time runs out; INT64_MAX: never */
    FILE *text;             /* findings and summaries: stdout, stderr under --json */
} run_opts;

enum run_opt {
    R_SEEDS, R_SEED, R_TIME, R_STRATEGY, R_KNOBS, R_JOBS, R_SHARD, R_OUT, R_JSON,
    R_CHECK_DET, R_REAL, R_KEEP_GOING, R_QUIET, R_WATCHDOG, R_NO_SHRINK, R_SHRINK_TIME,
    R_RECYCLE_SEEDS, R_WORKER_RSS, R_HELP, R_POLL_COST, R_POLL_BUDGET, R_TRACE,
    R_CHROME_TRACE, R_ROTATION, R__COUNT
};

_Static_assert(R__COUNT <= OPTS_MAX, "opts_iter remembers at most OPTS_MAX options");

/* ======================================================================
 * `run`: workers (child processes; they run user code)
 * ==================================================================== */

enum msg_type {
    MSG_START = 1,   /* a seed starts (the crash and watchdog bookkeeping) */
    MSG_DONE = 2,    /* payload: the trace hash */
    MSG_FINDING = 3, /* payload: msg_finding */
    MSG_SITES = 4,   /* payload: hits, reached per pl_sometimes site */
    MSG_ERROR = 5,   /* payload: text; the worker exits ST_INTERNAL */
    MSG_RECYCLE = 6, /* payload: msg_recycle; the worker exits, seeds left */
    MSG_GROWTH = 7,  /* payload: msg_growth; memory grew steadily */
    MSG_OUTPUT = 8,  /* payload: output_tail; a clean seed's stdout (run --seed N) */
    MSG_COVER = 16,  /* payload: pl__cli_cover_pack's; decisions per kind, buggify sites */
    MSG_SITE_LAST = 17, /* seed: a pl_sometimes site's index; payload: its latest false
                           message, from a worker that never saw it true */
};

/* Messages are raw structs: parent and workers are the same binary. */
typedef struct msg_head {
    uint32_t type;
    uint32_t len; /* payload bytes after the head */
    uint64_t seed;
} msg_head;

typedef struct msg_finding {
    uint64_t hash;
    pl_finding finding;
    char replay[PATH_MAX];   /* "" when not written */
    char replay_error[256];  /* why not */
    output_tail output;      /* the seed's stdout */
} msg_finding;

typedef enum recycle_reason { RECYCLE_NONE, RECYCLE_SEEDS, RECYCLE_RSS } recycle_reason;

typedef struct msg_recycle {
    uint32_t reason;         /* recycle_reason */
    uint64_t rss;            /* the worker's peak RSS, bytes */
    uint64_t seed;           /* the last seed it ran */
} msg_recycle;

typedef struct msg_growth {
    uint64_t first_seed, last_seed; /* the seeds over which it grew */
    uint64_t seeds;                 /* how many of them */
    uint64_t bytes;                 /* grown in all */
} msg_growth;

/* Decisions of a worker, in memory shared with the parent: they survive
 * the child's crash, and the poll budget's report. */
typedef struct shared_rec {
    pl__hang hang;           /* the poll budget's report (isolate/cpu_budget.h) */
    pl__trace_ring ring;     /* a rerun's last events (trace_ring.h) */
    pl__crash_stack stack;   /* a rerun's native stack, should it crash */
    volatile uint64_t len;   /* entries written (may exceed cap) */
    uint64_t cap;
    pl__dec_record recs[];
} shared_rec;

/* What one worker process does. */
typedef struct job {
    const run_opts *o;
    const pl_scenario *sc;
    pl__seed_slice slice;
    bool rerun;      /* reruns one seed whose worker died */
    shared_rec *rec; /* where a rerun records its decisions; may be NULL */
    int out_fd;      /* the capture file that becomes its stdout */
} job;

/* A worker's watch on its memory, over windows of GROWTH_WINDOW seeds. */
typedef struct growth {
    uint64_t start;          /* memory at the window's start */
    uint64_t prev;           /* after the previous seed */
    uint64_t first_seed;     /* the window's first seed */
    uint32_t seeds, grew;    /* seeds in the window; those that grew memory */
    bool warned;
} growth;

/* ======================================================================
 * `run`: findings as the parent reports them
 * ==================================================================== */

typedef struct report {
    const pl_scenario *sc;
    bool has_seed;            /* false: about the whole campaign (pl_sometimes) */
    uint64_t seed;
    bool positioned;          /* task, poll, time and step are known */
    bool real;                /* from --real */
    char origin[64];          /* without a seed: "real backend", "bounded:2, ..." */
    pl_finding f;
    char replay[PATH_MAX];    /* "" when none was written */
    char note[320];           /* why there is no replay, or what it lacks */
    char reproduce[PATH_MAX + PL_SIM_KNOBS_TEXT_MAX + 512];
    char shrunk[PATH_MAX];    /* the shrunk replay, "" when none */
    char shrunk_reproduce[PATH_MAX + PL_SIM_KNOBS_TEXT_MAX + 512];
    char shrink_text[8192];   /* the shrinker's account, lines indented */
    char timeline[8192];      /* a crashed run's last events, lines indented; "" none */
    char timeline_json[8192]; /* the same events as a JSON array; "" none */
    char native[4096];        /* a crashed run's native stack, lines indented; "" none */
    char native_json[8192];   /* the same frames as a JSON array; "" none */
    char unknown[160];        /* unpositioned: why the task is not known; "" the usual */
    char original[512];       /* shrunk: the line saying what the original run was */
    bool has_original;        /* shrunk: f is the shrunk run's, these the original's */
    uint64_t original_step;
    pl_time original_time_ns;
    size_t original_decisions;
    output_tail output;       /* what the run wrote to stdout */
} report;

/* ======================================================================
 * `run`: the parent's side of a campaign
 * ==================================================================== */

typedef enum kill_reason { KILL_NONE, KILL_STOP, KILL_WATCHDOG } kill_reason;

typedef struct worker {
    pid_t pid;               /* 0: free slot */
    int fd;                  /* read end of its pipe */
    int out_fd;              /* its stdout's capture file */
    output_tail tail;        /* once reaped: what that file held */
    pl__seed_slice slice;
    uint64_t started;        /* seeds of the slice started */
    bool running;            /* a seed started and not finished */
    uint64_t seed;           /* the seed started last */
    int64_t heard_ms;        /* last message: the watchdog's clock */
    kill_reason killed;
    bool reported;           /* it sent a finding */
    msg_recycle recycle;     /* why it handed its seeds on (reason 0: it did not) */
    bool rerun;              /* reruns one seed whose worker died */
    shared_rec *rec;         /* rerun: its decisions (NULL when mmap failed) */
    pl_finding_kind cause;   /* rerun: how the first run of the seed ended */
    char cause_text[160];
    uint8_t *buf;            /* received bytes not parsed yet */
    size_t len, cap;
} worker;

typedef struct campaign {
    const cli *c;
    const run_opts *o;
    const pl_scenario *sc;
    pl__seed_slice shard;    /* the seeds of this shard */
    char total[24];          /* how many, in decimal (2^64 does not fit a uint64_t) */
    uint64_t done;           /* seeds finished */
    uint64_t findings;       /* findings reported */
    uint64_t setup_errors;   /* seeds whose setup failed: not findings */
    uint64_t limit;          /* lowest seed with a finding; UINT64_MAX: none */
    report *first;           /* the lowest-seed finding */
    pl__campaign_tally tally; /* distinct schedules, pl_sometimes counters */
    uint32_t sites_expected; /* seed workers started */
    uint32_t sites_received; /* seed workers that finished their slice */
    uint32_t cover_received; /* of those, whose coverage arrived */
    worker *w;
    size_t nw;
    int64_t start_ms, end_ms, progress_ms;
    bool progress_shown;     /* a tty progress line needs clearing */
    uint64_t resume_seed;    /* the lowest seed a stopped worker left unjudged */
    bool stopped;            /* by --time or Ctrl-C */
    bool stopping;           /* --time ran out: no seed starts any more */
    bool growth_warned, rss_noted; /* once per campaign */
    bool error;
} campaign;

/* ======================================================================
 * Coverage of a campaign (cover.c): what `run` prints and writes under
 * --json, and what `merge` reads back and adds up. Plain text fields, no
 * pointer into the program: merge may run in another binary.
 * ==================================================================== */

typedef struct cover_kind {
    char name[32];          /* pl__dec_kind_name */
    uint64_t consulted, deviated;
} cover_kind;

typedef struct cover_sometimes {
    char msg[256], file[256], func[64];
    int32_t line;
    bool own;               /* written in the scenario's own file */
    uint64_t reached, hits;
    char last[PL__SOMETIMES_LAST]; /* its latest false message; "" unknown */
} cover_sometimes;

#define COVER_KINDS_MAX 64

typedef struct cover {
    cover_kind kinds[COVER_KINDS_MAX];
    size_t nkinds;
    pl__cover_buggify *buggify;
    size_t nbuggify;
    cover_sometimes *sometimes; /* sites reached, or of the scenario's own file */
    size_t nsometimes;
    char not_judged[160];   /* why the pl_sometimes verdict was not given; "": it was */
} cover;

/* What became of a seed whose worker died or hung on it. */
typedef enum lost_how {
    LOST_REPRODUCED,     /* its rerun alone failed the same way: w is the rerun */
    LOST_NOT_REPRODUCED, /* its rerun alone did not fail */
    LOST_NOT_RERUN,      /* --time had run out: judged on the first run alone */
} lost_how;

/* ======================================================================
 * `run --real` and `--strategy bounded:K`: one child per scenario
 * ==================================================================== */

/* How a child that writes one fixed-size result ended. */
typedef struct child_end {
    int status;     /* wait status */
    bool complete;  /* the whole result arrived */
    bool timed_out; /* killed at the deadline or on Ctrl-C */
    bool hung;      /* stopped by the poll budget: see `hang` */
    pl_finding hang;
    double seconds; /* wall time */
    output_tail output; /* what it wrote to stdout (when captured) */
} child_end;

typedef void (*child_fn)(const void *ctx, void *result);

/* Where a child's stdout goes. */
typedef enum child_out {
    OUT_DISCARD,    /* /dev/null: the shrinker's thousands of candidate runs */
    OUT_CAPTURE,    /* a capture file, buffered: many runs */
    OUT_CAPTURE_ALL /* a capture file, unbuffered: one run whose crash must not lose it */
} child_out;

/* ---- Shared between the files of the command line ---------------------- */


/* options.c */
extern volatile sig_atomic_t pl__cli_interrupted;
extern int pl__cli_stdout_errno;
void pl__cli_flush_out(FILE *f);
void pl__cli_on_interrupt(int sig);
int64_t pl__cli_now_ms(void);
void pl__cli_put_message(FILE *f, const char *fmt, va_list ap);
int pl__cli_usage_hint(const cli *c, const char *cmd, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int pl__cli_internal_error(const cli *c, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int pl__cli_opts_next(opts_iter *it, const char **value);
int pl__cli_opt_number(const opts_iter *it, int idx, const char *v, uint64_t lo, uint64_t hi,
                       uint64_t *out);
int pl__cli_opt_duration(const opts_iter *it, int idx, const char *v, pl_time *out);
int pl__cli_opt_poll_cost(const opts_iter *it, int idx, const char *v, pl_time *out);
/* --waker-rotation on|off: *off receives whether rotation is off. */
int pl__cli_opt_rotation(const opts_iter *it, int idx, const char *v, bool *off);
int pl__cli_opt_poll_budget(const opts_iter *it, int idx, const char *v);
int pl__cli_opt_candidate_watchdog(const opts_iter *it, int idx, const char *v);

/* report.c */
void pl__cli_textf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
safe_buf pl__cli_safe_text(const char *text);
void pl__cli_json_string(FILE *f, const char *s);
/* A parked task as JSON: {task_id, task, spawned_at, frames, frames_cut,
 * tree, tree_cut} (frames outermost first, the tree's first branch; tree
 * nested, each node's "children" a list; null without a backtrace), as a
 * finding's "parked" array holds them. */
void pl__cli_task_json(FILE *f, const pl_finding_task *t);
void pl__cli_describe_status(int status, char *buf, size_t len);
int pl__cli_make_dirs(const char *dir);
int pl__cli_write_all(int fd, const void *buf, size_t len);

/* child.c */
int pl__cli_capture_file(void);
void pl__cli_capture_stdout(int fd, bool unbuffered);
void pl__cli_read_tail(int fd, output_tail *t);
/* Prints the tail of what a run wrote to stdout, indented, its control
 * bytes escaped, "..." where it was cut; nothing when it wrote nothing. */
void pl__cli_print_output(FILE *f, const output_tail *t);
void pl__cli_end_seed_output(output_tail *t);

/* help.c */
extern const char pl__cli_help_main[];
void pl__cli_put_text(FILE *f, const char *text, const char *prog);
int pl__cli_show_help(const cli *c, const char *cmd);

/* cmd_list.c */
int pl__cli_catalogue_init(cli *c, const pl_scenario *const *extra);
const pl_scenario *pl__cli_catalogue_find(const cli *c, const char *name);
int pl__cli_no_such_scenario(const cli *c, const char *cmd, const char *pattern);
int pl__cli_select_scenarios(const cli *c, const char *cmd, char **pats, size_t npats,
                             const pl_scenario **sel, size_t *nsel);
int pl__cli_cmd_list(cli *c, int argc, char **argv);

/* options.c */
int pl__cli_run_opts_parse(const cli *c, int argc, char **argv, run_opts *o);
void pl__cli_sim_options(const run_opts *o, uint64_t seed, pl_sim_options *so);
const char *pl__cli_error_text(int rc);

/* worker.c */
shared_rec *pl__cli_shared_rec_create(void);
void pl__cli_shared_rec_destroy(shared_rec *r);
int pl__cli_replay_path(const run_opts *o, const pl_scenario *sc, uint64_t seed, char *buf,
                        size_t len);
void pl__cli_worker_main(const job *jb, int fd);

/* report.c */
void pl__cli_make_reproduce(const cli *c, const run_opts *o, report *rp);
void pl__cli_print_finding_head(FILE *f, const run_opts *o, const report *rp);
void pl__cli_print_report(const run_opts *o, const report *rp);
void pl__cli_knobs_for(const run_opts *o, uint64_t seed, pl__dec_knobs *k);
int pl__cli_write_lost_replay(const run_opts *o, report *rp, const shared_rec *rec,
                              const char *seed_only_note);

/* supervisor.c */
void pl__cli_kill_worker(worker *w, kill_reason why);
void pl__cli_note_unfinished(campaign *cp, pl__seed_slice rest);
void pl__cli_stop_worker(campaign *cp, worker *w);
void pl__cli_lower_limit(campaign *cp, uint64_t seed);
void pl__cli_accept_report(campaign *cp, report *rp);
void pl__cli_clear_progress(campaign *cp);
void pl__cli_progress(campaign *cp);
worker *pl__cli_spawn_seed_worker(campaign *cp, pl__seed_slice slice);
void pl__cli_spawn_rerun(campaign *cp, uint64_t seed, pl_finding_kind cause, const char *text);
void pl__cli_format_duration(pl_time ns, char *buf, size_t len);
void pl__cli_lost_text(const campaign *cp, const worker *w, int status, char *buf, size_t len);
report *pl__cli_new_report(campaign *cp, uint64_t seed);
void pl__cli_lost_report(campaign *cp, const worker *w, pl_finding_kind kind, const char *text,
                         lost_how how);
void pl__cli_worker_recycled(campaign *cp, const worker *w);
void pl__cli_parse_messages(campaign *cp, worker *w);

/* loop.c */
void pl__cli_campaign_loop(campaign *cp);

/* child.c */
int pl__cli_run_in_child(child_fn fn, const void *ctx, void *result, size_t size,
                         int64_t deadline_ms, child_out where, child_end *end);
pl_finding_kind pl__cli_child_lost(const child_end *end, const char *what, char *buf, size_t len);
int pl__cli_report_once(const cli *c, const run_opts *o, report *rp);

/* cmd_shrink.c */
void pl__cli_shrink_report(const cli *c, const run_opts *o, report *rp);

/* crash.c */
/* Positions a crash report where its crash ring ends (the poll the run
 * died in), says so in its message, and keeps the ring's last
 * CRASH_TIMELINE_EVENTS events in rp->timeline. */
void pl__cli_crash_timeline(report *rp, const pl__trace_ring *ring);
/* The last `max` of the n events ev as a JSON array of {step, time_ns,
 * event, task, task_id, text} (text: what the timeline line shows after
 * the task), into buf. The earliest are left out until it fits: buf is
 * always a whole array, or "" when not even one event fits. */
void pl__cli_timeline_json(char *buf, size_t len, const pl__trace_rec *ev, size_t n, size_t max,
                           const pl__trace_namer *nm);
/* After process `who` died running a run with a crash ring: where (the
 * poll it died in), then its events on `out`: all the ring kept as
 * --trace / --chrome-trace, else the last CRASH_TIMELINE_EVENTS. Nothing
 * when the ring is NULL or empty. */
void pl__cli_print_crash_events(const cli *c, const char *cmd, FILE *out, const char *who,
                                bool trace, const char *chrome, bool quiet,
                                const pl__trace_ring *ring);
/* crash_stack.c */
/* A crashed child's native stack (st NULL or empty: "") as "<head>
 * (<signal>):" and one indented line per frame, into buf. */
void pl__cli_crash_stack_text(const pl__crash_stack *st, const char *head, char *buf, size_t len);
/* The same frames as a JSON array of {pc, function, file, line, object,
 * offset} into buf; "" when there is no stack or it does not fit. */
void pl__cli_crash_stack_json(const pl__crash_stack *st, char *buf, size_t len);

/* The line of a shrunk finding that says what the original run was. */
void pl__cli_original_line(char *buf, size_t len, const report *rp, const pl_finding *orig,
                           size_t decisions);

/* cover.c. pack: the slice's tally as a MSG_COVER payload (malloc'd,
 * NULL when out of memory); unpack adds one to t (PL_EFORMAT for a
 * payload of another shape, PL_ENOMEM). */
void *pl__cli_cover_pack(const pl__campaign_tally *t, size_t *len);
int pl__cli_cover_unpack(pl__campaign_tally *t, const void *payload, size_t len);
/* The campaign's coverage; not_judged says why its pl_sometimes verdict
 * was not given ("" when it was). Returns 0 or PL_ENOMEM. */
int pl__cli_cover_of(const campaign *cp, const char *not_judged, cover *cv);
/* Adds `from` to `into` (kinds by name, buggify sites by key, sometimes
 * sites by file, line and message). Returns 0 or PL_ENOMEM. */
int pl__cli_cover_add(cover *into, const cover *from);
void pl__cli_cover_free(cover *cv);
/* The coverage block under a campaign's summary line, and the JSON
 * object of --json ("coverage":{...}). */
void pl__cli_cover_text(FILE *f, const cover *cv, uint64_t runs);
void pl__cli_cover_json(FILE *f, const cover *cv);
/* "  discarded: D of R runs (...)" under a campaign's summary line, and a
 * warning when they are most of its runs; nothing when D is 0. `run` and
 * `merge` print it alike. */
void pl__cli_discarded_text(FILE *f, uint64_t discarded, uint64_t runs);
/* The verdict on the sometimes sites of a complete range: each failed
 * site as a finding (calls fn), the count returned. */
size_t pl__cli_cover_verdict(const cover *cv, void (*fn)(void *ud, const pl_finding *f),
                             void *ud);

/* json_read.c: a JSON value tree (merge reads `run --json` back). */
enum { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR, JV_OBJ };

typedef struct jval {
    int type;           /* JV_* */
    bool b;             /* JV_BOOL */
    char *text;         /* JV_STR unescaped, JV_NUM as written */
    struct jval *items; /* JV_ARR elements, JV_OBJ values */
    char **keys;        /* JV_OBJ keys */
    size_t n;
} jval;

/* Parses text (one value, nothing after it) into out. Returns 0, or
 * PL_EFORMAT with what and where in err. Free out with pl__cli_json_free. */
int pl__cli_json_parse(const char *text, size_t len, jval *out, char *err, size_t err_len);
void pl__cli_json_free(jval *v);
/* The member `key` of an object (NULL when absent or not an object). */
const jval *pl__cli_json_get(const jval *obj, const char *key);
/* A non-negative integer, a string, a boolean; false / NULL when v is
 * not one. */
bool pl__cli_json_u64(const jval *v, uint64_t *out);
const char *pl__cli_json_str(const jval *v);
bool pl__cli_json_bool(const jval *v, bool *out);

/* cmd_merge.c */
int pl__cli_cmd_merge(cli *c, int argc, char **argv);

/* cmd_run.c */
int pl__cli_cmd_run(cli *c, int argc, char **argv);

/* cmd_run_pct.c: PCT's horizon for every seed of sc's campaign (0: not
 * PCT without K, or unknown), and the guarantee line after `runs` runs. */
uint64_t pl__cli_pct_horizon_of(const run_opts *o, const pl_scenario *sc);
void pl__cli_pct_guarantee_line(const run_opts *o, const pl_scenario *sc, uint64_t runs);

/* cmd_replay.c */
int pl__cli_cmd_replay(cli *c, int argc, char **argv);
int pl__cli_write_trace(const cli *c, const char *cmd, FILE *text, const char *chrome,
                        bool quiet, const char *what, const pl_sim_result *r);
/* The same for events named by nm (a crash ring's, trace_ring.h). */
int pl__cli_write_events(const cli *c, const char *cmd, FILE *text, const char *chrome,
                         bool quiet, const char *what, const pl__trace_rec *ev, size_t n,
                         const pl__trace_namer *nm);

/* cmd_shrink.c */
int pl__cli_cmd_shrink(cli *c, int argc, char **argv);

/* cmd_why.c */
int pl__cli_cmd_why(cli *c, int argc, char **argv);

#endif
