/* sim/src/cli/help.c: the help texts of the commands, and `help`. */
#include "cli_internal.h"

const char pl__cli_help_main[] =
    "usage: {prog} <command> [options]\n"
    "\n"
    "Deterministic simulation testing of pollen scenarios: every run is a\n"
    "function of its seed, and every finding comes with a replay file and a\n"
    "command that reproduces it.\n"
    "\n"
    "commands:\n"
    "  list      list the scenarios linked into this program\n"
    "  run       run scenarios over many seeds and report findings\n"
    "  replay    rerun replay files (or raw fuzzer inputs) and check them\n"
    "  shrink    shrink a replay file to its smallest failing schedule\n"
    "  why       where a replay's failure became inevitable, and which of its\n"
    "            decisions are its cause\n"
    "  merge     the verdict of a sharded campaign from its shards' --json\n"
    "  help      show the help of a command ('{prog} help run')\n"
    "  version   print the version\n"
    "\n"
    "Run '{prog} <command> --help' for the options of a command.\n";

static const char help_list[] =
    "usage: {prog} list [--json]\n"
    "\n"
    "Lists every scenario linked into this program: its name, the finding\n"
    "a known-bug scenario must produce ('-' for scenarios that must stay\n"
    "clean) and a one-line summary.\n"
    "\n"
    "options:\n"
    "  --json        one JSON object per line:\n"
    "                {\"name\":...,\"expect\":...|null,\"summary\":...}\n"
    "  --help, -h    this text\n";

static const char help_run[] =
    "usage: {prog} run SCENARIO... [options]\n"
    "\n"
    "Runs each scenario once per seed under the simulator. SCENARIO is a\n"
    "name, a glob such as 'bugs_*' (quote it) or 'all'. Seeds run in worker\n"
    "processes, so a crash or a hang in user code becomes a finding with its\n"
    "seed. A scenario stops at its first finding; with several jobs the\n"
    "finding reported is still the one with the lowest seed.\n"
    "\n"
    "seeds and schedules:\n"
    "  --seeds A..B         inclusive seed range (default 0..999)\n"
    "  --seed N             one seed: decimal, 0x-hex, or a 40-hex commit hash\n"
    "                       (its first 16 hex digits)\n"
    "  --strategy S         random (default), swarm, pct:D[:K] (depth 1-64) or\n"
    "                       bounded:K (0-64): every schedule with at most K\n"
    "                       deviations from production's order, instead of\n"
    "                       seeds (no --seeds, --jobs, --shard or watchdog)\n"
    "  --knobs TEXT         decision knobs over the defaults, e.g.\n"
    "                       'spurious_poll=on,io_fault=off,schedule=65536'\n"
    "  --poll-cost DURATION virtual time each poll costs (default 0: the clock\n"
    "                       moves only while no task is runnable), e.g. 100ns\n"
    "  --waker-rotation on|off\n"
    "                       off: one waker per task, as in production (default\n"
    "                       on: a new one per poll, to catch stale wakers)\n"
    "  --check-determinism  run every seed twice and compare the trace hashes\n"
    "  --real               instead of simulating, run each scenario once on\n"
    "                       the real backend, nodes on loopback (--time: 60 s)\n"
    "\n"
    "processes and limits:\n"
    "  --jobs N, -j N       worker processes (default: online CPUs, at most 64)\n"
    "  --shard K/N          only shard K of N: seed s when (s - A) mod N = K - 1\n"
    "  --shard auto         K/N from the batch engine's variables (Kubernetes\n"
    "                       Indexed Job, Slurm array, GNU parallel, GitLab,\n"
    "                       CircleCI, Buildkite, or POLLEN_SHARD=K/N), and says\n"
    "                       which it used\n"
    "  --time DURATION      start no seed (no schedule, with bounded:K) after\n"
    "                       this much wall time, and report how far the run got\n"
    "                       (units ms, s, m, h); a seed still running finishes\n"
    "                       or meets the watchdog\n"
    "  --watchdog DURATION  a seed running longer than this (wall time) is\n"
    "                       killed and reported as a livelock (default 10s)\n"
    "  --recycle-seeds N    a worker hands its remaining seeds to a fresh process\n"
    "                       after N seeds (default 10000)...\n"
    "  --worker-rss SIZE    ...or once its peak RSS passes SIZE (default 1GiB;\n"
    "                       units KiB, MiB, GiB, TiB); memory growing seed after\n"
    "                       seed is reported as a leak in user code\n"
    "  --poll-budget DURATION  CPU time one poll may take (default 1s): a poll\n"
    "                       still running then is stopped and reported as a\n"
    "                       livelock with its task, poll and step, in every\n"
    "                       strategy and in the shrink of such a finding\n"
    "\n"
    "output:\n"
    "  --out DIR            directory for replay files (default pollen-out/)\n"
    "  --keep-going         report every finding instead of stopping at the first\n"
    "  --no-shrink          keep the first finding as found (by default it is\n"
    "                       shrunk to its fewest deviations, explained, and saved\n"
    "                       next to it as ...-seed<seed>.shrunk.replay)\n"
    "  --shrink-time DURATION  wall-clock net of that shrink (default 300s)\n"
    "  --json               stdout holds only JSON objects, one per line: each\n"
    "                       finding (user output in \"output\"), warnings, and\n"
    "                       the summary last; the text goes to stderr\n"
    "  --quiet, -q          no progress or summary lines, only findings\n"
    "  --trace              with --seed N and one scenario: print that run's\n"
    "                       event timeline (as 'replay --trace'), clean or not\n"
    "  --chrome-trace OUT.json  with --seed N and one scenario: write its\n"
    "                       Chrome trace-event JSON (open it in Perfetto)\n"
    "  --help, -h           this text\n";

/* Apart from help_run: one string literal of C11 holds 4095 bytes. */
static const char help_run_exit[] =
    "\n"
    "Progress goes to stderr every second on a terminal, every 10 s otherwise.\n"
    "What user code prints on stdout is captured per seed, never mixed into\n"
    "pollen's output; a finding shows its run's last 4 KiB of it.\n"
    "A finding writes DIR/<scenario>-seed<seed>.replay; reproduce it with\n"
    "'{prog} replay FILE'.\n"
    "\n"
    "exit status: 0 no finding, 10 + kind of the first finding (see below),\n"
    "2 bad usage (also: a linked scenario whose name is not [a-z0-9_]+ or\n"
    "whose expected kind does not exist), 3 internal error (such as an\n"
    "unwritable DIR or a full stdout), 4 expected finding not found (a\n"
    "known-bug scenario clean over a whole unsharded range, or an exhausted\n"
    "bounded:K), 5 setup error (a scenario's setup returned an error: SETUP\n"
    "ERROR, no replay, no shrink), 130 interrupted before any finding, 141\n"
    "stdout closed early (a reader such as 'head' went away: the run stops\n"
    "without a summary).\n"
    "A known-bug scenario that produces its expected finding still exits\n"
    "10 + kind: the report is the truth.\n"
    "\n"
    "A clean seed run alone (--seed N) shows its stdout too. Runs whose\n"
    "premise failed (pl_assume) are counted under the summary, with a warning\n"
    "when they are most of the range.\n"
    "\n"
    "the C library in a run: clock_gettime, gettimeofday and time read the\n"
    "virtual clock (wall clocks from 2023-11-14T22:13:20Z); rand, random,\n"
    "getrandom, getentropy and arc4random draw from the run's decisions (kind\n"
    "'random': recorded, replayed, shrunk); outside a run they are the C\n"
    "library's (docs/simulator.md lists what is not routed).\n"
    "\n"
    "coverage: under each summary line, a range's decisions per kind\n"
    "(consulted / deviated from production), its buggify and pl_sometimes\n"
    "sites by file:line with their counts (also in --json's \"coverage\").\n"
    "pl_sometimes is judged over a complete range of two seeds or more:\n"
    "never on one seed, never in a shard ('{prog} merge' judges the shards).\n";

static const char help_replay[] =
    "usage: {prog} replay FILE... [options]\n"
    "\n"
    "Reruns each replay file with its recorded decisions and checks that the\n"
    "run produces the same finding and the same trace hash. When the code\n"
    "changed and the run diverges, says where (step, expected, got). Each file\n"
    "runs in a child process, so an expected crash reproduces as a crash.\n"
    "A file that does not start with 'pollen-replay' is a raw libFuzzer input:\n"
    "it needs --scenario and feeds its bytes to the decision stream. A file\n"
    "recording nondeterminism reproduces when two runs of it disagree.\n"
    "\n"
    "options:\n"
    "  --scenario NAME         the scenario of raw fuzzer inputs\n"
    "  --trace                 print the run's event timeline\n"
    "  --chrome-trace OUT.json write Chrome trace-event JSON (open it in\n"
    "                          Perfetto); needs exactly one FILE\n"
    "  --watchdog DURATION     kill a replay running longer (default 10s)\n"
    "  --poll-cost DURATION    run with this poll cost instead of the file's\n"
    "                          (a raw fuzzer input has none: 0)\n"
    "  --waker-rotation on|off\n"
    "                          run with waker rotation on or off instead of\n"
    "                          as the file says (a file without the key: on)\n"
    "  --poll-budget DURATION  stop a poll using more CPU time (default 1s): a\n"
    "                          livelock\n"
    "  --no-fork               run in this process (for a debugger)\n"
    "  --break-at STEP         raise SIGTRAP as step STEP (as findings and\n"
    "                          timelines number them) begins, in this process\n"
    "                          (implies --no-fork): 'gdb --args {prog} replay\n"
    "                          FILE --break-at STEP' stops there\n"
    "  --quiet, -q             only the verdict line per file\n"
    "  --help, -h              this text\n"
    "\n"
    "exit status: 0 every file reproduced (a raw input: produced a finding),\n"
    "1 a run differed from its file, 2 bad usage, 3 unreadable or malformed\n"
    "file or internal error.\n";

static const char help_shrink[] =
    "usage: {prog} shrink FILE [-o OUT] [--time DURATION] [--runs N]\n"
    "                           [--poll-budget DURATION] [--watchdog DURATION]\n"
    "                           [--waker-rotation on|off]\n"
    "\n"
    "Shrinks the failing run of a replay file to the fewest decisions that\n"
    "leave production's order and still produce the same finding (drop the\n"
    "tail, zero whole kinds, delete chunks, zero and lower values, then each\n"
    "departure alone until nothing changes; a finding at the virtual time\n"
    "limit also gets the smallest limit that shows the same stuck tasks),\n"
    "explains them, and writes it as a replay file. The same file always\n"
    "shrinks to the same result. Candidate runs execute in a child process.\n"
    "\n"
    "options:\n"
    "  -o OUT, --output OUT   where to write (default: FILE with '.replay'\n"
    "                         replaced by '.shrunk.replay')\n"
    "  --runs N               budget of candidate runs (default 100000)\n"
    "  --time DURATION        wall-clock safety net (default 300s): a shrink\n"
    "                         it stops says so and may end elsewhere next time\n"
    "  --poll-budget DURATION CPU time one poll may take (default 1s); a\n"
    "                         livelock's candidates each run in a child, and\n"
    "                         one stopped there still fails with livelock\n"
    "  --watchdog DURATION    wall time such a candidate may take (default\n"
    "                         10s): one killed then still fails with livelock\n"
    "  --waker-rotation on|off\n"
    "                         shrink with waker rotation on or off instead of\n"
    "                         as the file says; the shrunk file records it\n"
    "  --help, -h             this text\n"
    "\n"
    "exit status: 0 shrunk, 2 bad usage, 3 unreadable file, a run that does\n"
    "not fail, or a crash while shrinking.\n";

static const char help_why[] =
    "usage: {prog} why FILE [--runs N] [--time DURATION] [--json] [--quiet]\n"
    "                        [--poll-budget DURATION] [--watchdog DURATION]\n"
    "\n"
    "Says at which decision the failure of a replay file became inevitable,\n"
    "and which of its decisions cause it. The point of no return: the run\n"
    "keeps its first k decisions and continues with random ones (the file's\n"
    "knobs); the share of continuations that fail the same way is measured\n"
    "for k = 0, for the whole run, and by bisection in between, down to the\n"
    "decision with which it reaches 90%: that decision, its step and the\n"
    "tasks it involves (with their backtraces where the failure surfaced)\n"
    "are printed. The passing twins: each decision of the file that leaves\n"
    "production's order is set back to production's choice, the rest kept,\n"
    "and the run repeated: a twin that passes shows that decision is a\n"
    "cause. Use it on a shrunk replay ('{prog} shrink'), whose departures\n"
    "are few. The continuations are seeded from the file's seed: the same\n"
    "file always gives the same answer. Runs execute in a child process.\n"
    "\n"
    "options:\n"
    "  --runs N               continuations per prefix (default 10, at most\n"
    "                         1000)\n"
    "  --time DURATION        stop after it with what is known (default 300s):\n"
    "                         the point bracketed between two measured\n"
    "                         prefixes, the twins tried so far\n"
    "  --json                 one JSON object: probes [{k, failed, runs}],\n"
    "                         point_of_no_return {k, decision, tasks, ...},\n"
    "                         stopped, bracket {before, after} (when stopped\n"
    "                         first), departures, last_departure, twins\n"
    "                         [{decision, passes, finding}]\n"
    "  --quiet, -q            no progress lines on stderr (they appear after\n"
    "                         the first second)\n"
    "  --poll-budget DURATION CPU time one poll may take (default 1s); a\n"
    "                         livelock's runs each run in a child\n"
    "  --watchdog DURATION    wall time such a run may take (default 10s)\n"
    "  --help, -h             this text\n"
    "\n"
    "exit status: 0 analysed, 2 bad usage, 3 unreadable file, a file\n"
    "without a finding or whose run does not reproduce it, or a crash.\n";

static const char help_merge[] =
    "usage: {prog} merge FILE... [--quiet]\n"
    "\n"
    "Gives the verdict of a campaign run in shards ('{prog} run ... --shard\n"
    "K/N --json > FILE', one per CI job) from the shards' outputs: the\n"
    "verdict and the exit status one '{prog} run' over the whole range gives.\n"
    "A shard sees part of the range, so it never judges pl_sometimes; merge\n"
    "adds every site's counts up and fails the sites never true over the\n"
    "union (and those of a scenario's own file never reached). It prints\n"
    "the lowest-seed finding (its message and reproduce line from its shard),\n"
    "each scenario's runs, decisions per kind, buggify and pl_sometimes sites\n"
    "with their counts added up, and the distinct schedules as a range (a\n"
    "schedule two shards share counts once in a single run). It runs no seed.\n"
    "\n"
    "The files must be the N shards of one campaign, each once: the same\n"
    "seeds, strategy, knobs, poll cost, checks and scenarios; anything else\n"
    "(a shard twice, a missing shard, another campaign's shard, a file with\n"
    "no summary line) is refused, naming the file and what is wrong.\n"
    "\n"
    "options:\n"
    "  --quiet, -q   only the findings\n"
    "  --help, -h    this text\n"
    "\n"
    "exit status: 0 clean, 10 + kind of the first finding (as 'run'), 4 a\n"
    "known-bug scenario's expected finding not found, 5 a setup error, 2 bad\n"
    "usage or bad input (the error names the file), 3 internal error.\n";

/* Writes text with every "{prog}" replaced by the program's name. */
void pl__cli_put_text(FILE *f, const char *text, const char *prog)
{
    static const char token[] = "{prog}";
    for (const char *p = text; *p != '\0';) {
        const char *t = strstr(p, token);
        size_t n = t != NULL ? (size_t)(t - p) : strlen(p);
        fwrite(p, 1, n, f);
        p += n;
        if (t != NULL) {
            fputs(prog, f);
            p += sizeof token - 1;
        }
    }
}

/* The finding kinds and their exit statuses, from the library's names. */
static void put_exit_kinds(FILE *f)
{
    fputs("\nfinding kinds (exit status):", f);
    for (int k = 1; k < PL_FINDING__COUNT; k++) {
        fprintf(f, "%s%s (%d)", k % 4 == 1 ? "\n  " : ", ", pl_finding_name((pl_finding_kind)k),
                ST_FINDING_BASE + k);
    }
    fputc('\n', f);
}

/* Every decision kind --knobs can name, with its default (parts per 65536
 * of leaving production's choice, or off), from the library's table: the
 * kinds grow with the simulator, so the help never lists them by hand. */
static void put_knob_defaults(FILE *f)
{
    char text[PL_SIM_KNOBS_TEXT_MAX];
    if (pl_sim_knobs_text(NULL, text, sizeof text) != 0) {
        return;
    }
    fputs("\ndecision kinds for --knobs (name=default):", f);
    size_t col = 80;
    for (char *k = strtok(text, ","); k != NULL; k = strtok(NULL, ",")) {
        size_t len = strlen(k);
        if (col + len + 2 > 78) {
            fputs("\n ", f);
            col = 1;
        }
        fprintf(f, " %s", k);
        col += len + 1;
    }
    /* A replay file's decisions name their kinds by letter. */
    fputs("\ntheir letters in replay files, in that order:\n ", f);
    for (uint32_t kind = 0; kind < PL_DECIDE__COUNT; kind++) {
        char c = pl__dec_kind_letter(kind);
        if (c != 0) {
            fprintf(f, " %c", c);
        }
    }
    fputs("\nclock_offset, clock_drift and clock_jump act on nodes declared .skewed only\n"
          "(docs/simulator.md, \"Cluster scenarios\", Per-node clocks); these --knobs\n"
          "bound how far they go (name=default, the largest):\n ",
          f);
    for (uint32_t b = 0; b < PL__DEC_BOUNDS; b++) {
        fprintf(f, " %s=%" PRIu32, pl__dec_bound_name(b), pl__dec_bound_default(b));
    }
    fputc('\n', f);
}

int pl__cli_show_help(const cli *c, const char *cmd)
{
    const char *text = pl__cli_help_main;
    if (cmd != NULL && strcmp(cmd, "list") == 0) {
        text = help_list;
    } else if (cmd != NULL && strcmp(cmd, "run") == 0) {
        text = help_run;
    } else if (cmd != NULL && strcmp(cmd, "replay") == 0) {
        text = help_replay;
    } else if (cmd != NULL && strcmp(cmd, "shrink") == 0) {
        text = help_shrink;
    } else if (cmd != NULL && strcmp(cmd, "merge") == 0) {
        text = help_merge;
    } else if (cmd != NULL && strcmp(cmd, "why") == 0) {
        text = help_why;
    } else if (cmd != NULL && strcmp(cmd, "help") != 0 && strcmp(cmd, "version") != 0) {
        char hint[96];
        snprintf(hint, sizeof hint, "'%s --help' lists the commands", c->prog);
        return pl__cli_usage_hint(c, "help", hint, "unknown command '%s'", cmd);
    }
    pl__cli_put_text(stdout, text, c->prog);
    if (text == help_run) {
        put_knob_defaults(stdout);
        pl__cli_put_text(stdout, help_run_exit, c->prog);
    }
    if (text == help_run || text == help_merge || text == pl__cli_help_main) {
        put_exit_kinds(stdout);
    }
    return fflush(stdout) == 0 ? ST_CLEAN : ST_INTERNAL;
}
