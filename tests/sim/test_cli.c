/* tests/sim/test_cli.c: the `pollen` command line.
 *
 * The pure helpers of cli.h are tested in-process. Everything else runs
 * the built binaries as child processes, the way users and CI do: the
 * `pollen` binary (POLLEN_BIN) and a harness binary with extra scenarios
 * (POLLEN_HARNESS), both set by meson. Each test runs in a fresh
 * temporary directory, so replay files land in its own pollen-out/.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pollen/error.h"

/* ---- Running the binaries ------------------------------------------------ */

typedef struct proc {
    int status; /* exit status, or 128 + signal */
    char *out;  /* stdout, NUL-terminated */
    char *err;  /* stderr */
} proc;

static char *slurp_fd(int fd)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    lseek(fd, 0, SEEK_SET);
    for (ssize_t n; (n = read(fd, buf + len, cap - len - 1)) > 0;) {
        len += (size_t)n;
        if (cap - len < 2) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
    }
    buf[len] = '\0';
    close(fd);
    return buf;
}

static int temp_fd(void)
{
    char path[] = "/tmp/pollen-cli-io-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    return fd;
}

/* Runs the binary named by environment variable `which` with args (NULL
 * terminated) and collects its status and output. */
static proc run_argv(const char *which, const char *const *args)
{
    const char *bin = getenv(which);
    cr_assert_not_null(bin, "%s is not set: run this test through meson", which);
    const char *argv[64] = {bin};
    size_t n = 1;
    for (; args[n - 1] != NULL; n++) {
        cr_assert_lt(n, 63);
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;
    int out = temp_fd(), err = temp_fd();
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    proc p;
    p.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    p.out = slurp_fd(out);
    p.err = slurp_fd(err);
    return p;
}

#define RUN(which, ...) run_argv((which), (const char *const[]){__VA_ARGS__, NULL})
#define POLLEN(...) RUN("POLLEN_BIN", __VA_ARGS__)
#define HARNESS(...) RUN("POLLEN_HARNESS", __VA_ARGS__)

static void proc_free(proc *p)
{
    free(p->out);
    free(p->err);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++) {
        n += *s == '\n';
    }
    return n;
}

static size_t count_of(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(s, needle); p != NULL; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

/* The number after `key` in text ("runs" in "12 runs" is found with key
 * " runs" by scanning back): returns the integer right before `word`. */
static uint64_t number_before(const char *text, const char *word)
{
    const char *p = strstr(text, word);
    cr_assert_not_null(p, "'%s' not in: %s", word, text);
    while (p > text && p[-1] >= '0' && p[-1] <= '9') {
        p--;
    }
    return strtoull(p, NULL, 10);
}

/* The summary line "<scenario>: N runs, ..." of a run's output. */
static const char *summary_of(const char *text, const char *scenario)
{
    char head[128];
    snprintf(head, sizeof head, "\n%s: ", scenario);
    const char *p = text;
    if (strncmp(text, head + 1, strlen(head + 1)) != 0) {
        p = strstr(text, head);
        cr_assert_not_null(p, "no summary of %s in: %s", scenario, text);
        p++;
    }
    return p;
}

/* The word after `name` on the line that starts with it (static buffer):
 * a column of `pollen list`. */
static const char *column_after(const char *text, const char *name)
{
    static char word[64];
    char head[128];
    snprintf(head, sizeof head, "\n%s ", name);
    const char *p = strstr(text, head);
    cr_assert_not_null(p, "no line for %s in: %s", name, text);
    p += strlen(head);
    p += strspn(p, " ");
    snprintf(word, sizeof word, "%.*s", (int)strcspn(p, " \n"), p);
    return word;
}

/* The seed of the first "FINDING ... (seed N)" line. */
static uint64_t finding_seed(const char *text)
{
    const char *p = strstr(text, "FINDING ");
    cr_assert_not_null(p, "no finding in: %s", text);
    p = strstr(p, "(seed ");
    cr_assert_not_null(p);
    return strtoull(p + 6, NULL, 10);
}

/* The path after "  replay: " in a finding block (static buffer). */
static const char *replay_of(const char *text)
{
    static char path[4096];
    const char *p = strstr(text, "  replay: ");
    cr_assert_not_null(p, "no replay line in: %s", text);
    p += strlen("  replay: ");
    size_t n = strcspn(p, " \n");
    snprintf(path, sizeof path, "%.*s", (int)n, p);
    return path;
}

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- A fresh working directory per test -------------------------------- */

static char workdir[64];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void enter_workdir(void)
{
    snprintf(workdir, sizeof workdir, "/tmp/pollen-cli-XXXXXX");
    cr_assert_not_null(mkdtemp(workdir));
    cr_assert_eq(chdir(workdir), 0);
}

static void leave_workdir(void)
{
    if (chdir("/") == 0) {
        nftw(workdir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    }
}

TestSuite(cli, .init = enter_workdir, .fini = leave_workdir, .timeout = 120);

/* ---- Pure helpers ---------------------------------------------------------- */

Test(cli, parse_u64)
{
    uint64_t v;
    cr_assert_eq(pl__cli_parse_u64("0", &v), 0);
    cr_assert_eq(v, 0);
    cr_assert_eq(pl__cli_parse_u64("18446744073709551615", &v), 0);
    cr_assert_eq(v, UINT64_MAX);
    cr_assert_eq(pl__cli_parse_u64("18446744073709551616", &v), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_u64("", &v), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_u64("-1", &v), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_u64("+1", &v), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_u64("12a", &v), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_u64(" 1", &v), PL_EINVAL);
}

Test(cli, parse_seed)
{
    uint64_t v;
    cr_assert_eq(pl__cli_parse_seed("4242", &v), 0);
    cr_assert_eq(v, 4242);
    cr_assert_eq(pl__cli_parse_seed("0x10", &v), 0);
    cr_assert_eq(v, 16);
    cr_assert_eq(pl__cli_parse_seed("0xffffffffffffffff", &v), 0);
    cr_assert_eq(v, UINT64_MAX);
    cr_assert_eq(pl__cli_parse_seed("0x1ffffffffffffffff", &v), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_seed("0x", &v), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_seed("0xg", &v), PL_EINVAL);
    /* A commit hash: its first 16 hex digits. */
    cr_assert_eq(pl__cli_parse_seed("3ad3ecc0123456789abcdef0123456789abcdef0", &v), 0);
    cr_assert_eq(v, UINT64_C(0x3ad3ecc012345678));
    cr_assert_eq(pl__cli_parse_seed("3ad3ecc0123456789abcdef0123456789abcdefz", &v), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_seed("3ad3ecc", &v), PL_EINVAL);
}

Test(cli, parse_seed_ranges)
{
    uint64_t lo, hi;
    cr_assert_eq(pl__cli_parse_seeds("0..999", &lo, &hi), 0);
    cr_assert(lo == 0 && hi == 999);
    cr_assert_eq(pl__cli_parse_seeds("7..7", &lo, &hi), 0);
    cr_assert(lo == 7 && hi == 7);
    cr_assert_eq(pl__cli_parse_seeds("0x10..0x20", &lo, &hi), 0);
    cr_assert(lo == 16 && hi == 32);
    cr_assert_eq(pl__cli_parse_seeds("1..18446744073709551615", &lo, &hi), 0);
    cr_assert(lo == 1 && hi == UINT64_MAX);
    /* 2^64 seeds do not fit in the count. */
    cr_assert_eq(pl__cli_parse_seeds("0..18446744073709551615", &lo, &hi), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_seeds("5..4", &lo, &hi), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_seeds("5", &lo, &hi), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_seeds("..5", &lo, &hi), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_seeds("5..", &lo, &hi), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_seeds("1...5", &lo, &hi), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_seeds("a..b", &lo, &hi), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_seeds("1-5", &lo, &hi), PL_EINVAL);
}

Test(cli, parse_durations)
{
    pl_time ns;
    cr_assert_eq(pl__cli_parse_duration("250ms", &ns), 0);
    cr_assert_eq(ns, 250 * PL_MS);
    cr_assert_eq(pl__cli_parse_duration("60s", &ns), 0);
    cr_assert_eq(ns, 60 * PL_S);
    cr_assert_eq(pl__cli_parse_duration("1.5s", &ns), 0);
    cr_assert_eq(ns, 1500 * PL_MS);
    cr_assert_eq(pl__cli_parse_duration("0.001s", &ns), 0);
    cr_assert_eq(ns, PL_MS);
    cr_assert_eq(pl__cli_parse_duration("10m", &ns), 0);
    cr_assert_eq(ns, 600 * PL_S);
    cr_assert_eq(pl__cli_parse_duration("2h", &ns), 0);
    cr_assert_eq(ns, 7200 * PL_S);
    cr_assert_eq(pl__cli_parse_duration("0.000000001s", &ns), 0);
    cr_assert_eq(ns, 1);
    const char *bad[] = {"", "10", "s", "0s", "0.0ms", "-1s", "1.s", ".5s", "1.5", "5 s",
                         "5sec", "5S", "1.0000000001s", "99999999999999h", "1e3ms"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(pl__cli_parse_duration(bad[i], &ns), PL_EINVAL, "'%s' accepted", bad[i]);
    }
}

Test(cli, parse_shards)
{
    uint32_t k, n;
    cr_assert_eq(pl__cli_parse_shard("1/1", &k, &n), 0);
    cr_assert(k == 1 && n == 1);
    cr_assert_eq(pl__cli_parse_shard("3/4", &k, &n), 0);
    cr_assert(k == 3 && n == 4);
    cr_assert_eq(pl__cli_parse_shard("65536/65536", &k, &n), 0);
    const char *bad[] = {"0/4", "5/4", "1/0", "1/65537", "x/2", "1/", "/2", "1", "1/2/3",
                         "-1/2", "1 /2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(pl__cli_parse_shard(bad[i], &k, &n), PL_EINVAL, "'%s' accepted", bad[i]);
    }
}

/* Every seed of [lo, hi] lands in exactly one (shard, job) slice, in its
 * shard by the documented rule, and slices run in increasing order. */
static void check_cover(uint64_t lo, uint64_t hi, uint32_t shards, uint32_t jobs)
{
    size_t span = (size_t)(hi - lo + 1);
    unsigned char *hits = calloc(span, 1);
    cr_assert_not_null(hits);
    for (uint32_t k = 1; k <= shards; k++) {
        for (uint32_t j = 0; j < jobs; j++) {
            pl__cli_slice s = pl__cli_slice_of(lo, hi, k, shards, j, jobs);
            for (uint64_t i = 0; i < s.count; i++) {
                uint64_t seed = pl__cli_slice_seed(&s, i);
                cr_assert(seed >= lo && seed <= hi);
                cr_assert_eq((seed - lo) % shards + 1, k, "seed %" PRIu64 " in shard %u", seed, k);
                if (i > 0) {
                    cr_assert_gt(seed, pl__cli_slice_seed(&s, i - 1));
                }
                hits[seed - lo]++;
            }
        }
    }
    for (size_t i = 0; i < span; i++) {
        cr_assert_eq(hits[i], 1, "seed %" PRIu64 " covered %d times (range %" PRIu64 "..%" PRIu64
                                 ", %u shards, %u jobs)",
                     lo + i, hits[i], lo, hi, shards, jobs);
    }
    free(hits);
}

Test(cli, shards_and_jobs_cover_a_range_exactly_once)
{
    const uint64_t ranges[][2] = {{0, 0}, {0, 999}, {5, 5}, {3, 17}, {100, 1099}, {7, 8}};
    const uint32_t counts[] = {1, 2, 3, 4, 7, 16, 1000, 1024};
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
        for (size_t a = 0; a < sizeof counts / sizeof counts[0]; a++) {
            for (size_t b = 0; b < 5; b++) {
                check_cover(ranges[r][0], ranges[r][1], counts[a], counts[b]);
            }
        }
    }
}

Test(cli, slices_near_the_top_of_the_seed_space)
{
    /* No overflow: the last seeds below 2^64. */
    uint64_t lo = UINT64_MAX - 9, hi = UINT64_MAX;
    check_cover(lo, hi, 3, 2);
    check_cover(lo, hi, 16, 4);
    /* A huge range: counts add up, the last seed of each slice is <= hi. */
    lo = 1;
    uint64_t total = 0;
    for (uint32_t k = 1; k <= 5; k++) {
        for (uint32_t j = 0; j < 3; j++) {
            pl__cli_slice s = pl__cli_slice_of(lo, hi, k, 5, j, 3);
            total += s.count;
            cr_assert_leq(pl__cli_slice_seed(&s, s.count - 1), hi);
            cr_assert_gt(pl__cli_slice_seed(&s, s.count - 1), hi - 15);
        }
    }
    cr_assert_eq(total, hi - lo + 1);
}

Test(cli, more_shards_than_seeds_leave_empty_slices)
{
    pl__cli_slice s = pl__cli_slice_of(10, 12, 4, 8, 0, 1);
    cr_assert_eq(s.count, 0);
    s = pl__cli_slice_of(10, 12, 3, 8, 0, 1);
    cr_assert_eq(s.count, 1);
    cr_assert_eq(s.first, 12);
    s = pl__cli_slice_of(10, 12, 1, 1, 5, 8);
    cr_assert_eq(s.count, 0);
}

Test(cli, distance_and_quoting)
{
    cr_assert_eq(pl__cli_distance("seed", "seeds", 9), 1);
    cr_assert_eq(pl__cli_distance("sed", "seed", 9), 1);
    cr_assert_eq(pl__cli_distance("json", "json", 9), 0);
    cr_assert_eq(pl__cli_distance("abc", "xyz", 2), 2);
    char buf[64];
    cr_assert_eq(pl__cli_shell_quote("pollen-out/a-seed3.replay", buf, sizeof buf), 25);
    cr_assert_str_eq(buf, "pollen-out/a-seed3.replay");
    pl__cli_shell_quote("my dir/x", buf, sizeof buf);
    cr_assert_str_eq(buf, "'my dir/x'");
    pl__cli_shell_quote("it's", buf, sizeof buf);
    cr_assert_str_eq(buf, "'it'\\''s'");
    pl__cli_shell_quote("", buf, sizeof buf);
    cr_assert_str_eq(buf, "''");
    cr_assert_eq(pl__cli_shell_quote("a b", buf, 3), 5);
    cr_assert_str_eq(buf, "'a");
}

/* ---- Help, usage errors, list -------------------------------------------- */

Test(cli, help_lists_every_command)
{
    const char *forms[][2] = {{"--help", NULL}, {"help", NULL}, {"-h", NULL}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        proc p = POLLEN(forms[i][0]);
        cr_assert_eq(p.status, 0);
        const char *cmds[] = {"list", "run", "replay", "shrink", "help", "version"};
        for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
            cr_assert_not_null(strstr(p.out, cmds[c]), "'%s' missing from: %s", cmds[c], p.out);
        }
        cr_assert_not_null(strstr(p.out, "lost_wakeup (12)"));
        cr_assert_not_null(strstr(p.out, "crash (22)"));
        proc_free(&p);
    }
}

Test(cli, each_command_has_help)
{
    const char *cmds[] = {"list", "run", "replay", "shrink"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        proc a = POLLEN(cmds[i], "--help"), b = POLLEN("help", cmds[i]);
        cr_assert_eq(a.status, 0, "%s --help", cmds[i]);
        cr_assert_eq(b.status, 0);
        cr_assert_str_eq(a.out, b.out);
        char usage[64];
        snprintf(usage, sizeof usage, "usage: pollen %s", cmds[i]);
        cr_assert_not_null(strstr(a.out, usage), "%s", a.out);
        cr_assert_str_empty(a.err);
        proc_free(&a);
        proc_free(&b);
    }
    proc p = POLLEN("run", "-h");
    cr_assert_eq(p.status, 0);
    cr_assert_not_null(strstr(p.out, "--seeds A..B"));
    cr_assert_not_null(strstr(p.out, "default 0..999"));
    cr_assert_not_null(strstr(p.out, "pollen-out/"));
    cr_assert_not_null(strstr(p.out, "--check-determinism"));
    proc_free(&p);
}

Test(cli, no_command_is_a_usage_error)
{
    proc p = POLLEN("--quiet");
    cr_assert_eq(p.status, 2);
    proc_free(&p);
    const char *none[] = {NULL};
    p = run_argv("POLLEN_BIN", none);
    cr_assert_eq(p.status, 2);
    cr_assert_not_null(strstr(p.err, "usage: pollen"));
    proc_free(&p);
}

/* Each case: arguments, then a fragment the one-line error must hold. */
typedef struct usage_case {
    const char *args[8];
    const char *says;
} usage_case;

static const usage_case usage_cases[] = {
    {{"bogus"}, "unknown command 'bogus'"},
    {{"runn"}, "did you mean 'run'?"},
    {{"run"}, "which scenarios?"},
    {{"run", "selftest_clean", "--sed", "3"}, "unknown option '--sed' (did you mean '--seed'?)"},
    {{"run", "selftest_clean", "--frobnicate"}, "unknown option '--frobnicate'"},
    {{"run", "selftest_clean", "-x"}, "unknown option '-x'"},
    {{"run", "selftest_clean", "--seeds"}, "option '--seeds' needs a value (A..B)"},
    {{"run", "selftest_clean", "--seeds", "--json"}, "option '--seeds' needs a value"},
    {{"run", "selftest_clean", "--seeds", "9..1"}, "bad value for '--seeds': '9..1'"},
    {{"run", "selftest_clean", "--seed", "x"}, "bad value for '--seed': 'x'"},
    {{"run", "selftest_clean", "--jobs", "0"}, "bad value for '--jobs': '0'"},
    {{"run", "selftest_clean", "-j", "lots"}, "bad value for '--jobs': 'lots'"},
    {{"run", "selftest_clean", "--time", "10"}, "bad value for '--time': '10'"},
    {{"run", "selftest_clean", "--watchdog", "0s"}, "bad value for '--watchdog': '0s'"},
    {{"run", "selftest_clean", "--shard", "0/3"}, "bad value for '--shard': '0/3'"},
    {{"run", "selftest_clean", "--strategy", "pct:0"}, "bad value for '--strategy': bad "
                                                       "strategy 'pct:0'"},
    {{"run", "selftest_clean", "--strategy", "bounded:2", "--seeds", "0..9"},
     "'--seeds' has no effect with '--strategy bounded:2'"},
    {{"run", "selftest_clean", "--knobs", "sched=1"}, "bad value for '--knobs'"},
    {{"run", "selftest_clean", "--json=yes"}, "option '--json' takes no value"},
    {{"run", "selftest_clean", "--seed", "1", "--seeds", "1..2"}, "exclude each other"},
    {{"run", "selftest_clean", "--real", "--seed", "1"}, "'--seed' has no effect with '--real'"},
    {{"run", "selftest_clen"}, "no scenario matches 'selftest_clen' (did you mean "
                               "'selftest_clean'?)"},
    {{"run", "nothing_*"}, "no scenario matches 'nothing_*'"},
    {{"replay"}, "which file?"},
    {{"replay", "--chrome-trace", "t.json", "a", "b"}, "exactly one FILE"},
    {{"replay", "--scenario", "nope", "f"}, "no scenario matches 'nope'"},
    {{"shrink"}, "which file?"},
    {{"shrink", "a", "b"}, "one FILE at a time"},
    {{"shrink", "-o"}, "option '--output' needs a value"},
    {{"list", "--long"}, "unknown option '--long'"},
    {{"help", "nope"}, "unknown command 'nope'"},
};

Test(cli, usage_errors_exit_2_with_one_line)
{
    for (size_t i = 0; i < sizeof usage_cases / sizeof usage_cases[0]; i++) {
        const usage_case *uc = &usage_cases[i];
        const char *args[9];
        size_t n = 0;
        for (; uc->args[n] != NULL; n++) {
            args[n] = uc->args[n];
        }
        args[n] = NULL;
        proc p = run_argv("POLLEN_BIN", args);
        cr_assert_eq(p.status, 2, "case %zu (%s): status %d, stderr: %s", i, uc->says, p.status,
                     p.err);
        cr_assert_not_null(strstr(p.err, uc->says), "case %zu: '%s' not in: %s", i, uc->says,
                           p.err);
        cr_assert_eq(count_lines(p.err), 1, "case %zu: not one line: %s", i, p.err);
        cr_assert(strstr(p.err, "--help") != NULL || strstr(p.err, "pollen list") != NULL,
                  "case %zu: no hint: %s", i, p.err);
        cr_assert_str_empty(p.out, "case %zu", i);
        proc_free(&p);
    }
}

Test(cli, list_shows_names_expectations_and_summaries)
{
    proc p = POLLEN("list");
    cr_assert_eq(p.status, 0);
    cr_assert_not_null(strstr(p.out, "SCENARIO"));
    cr_assert_str_eq(column_after(p.out, "selftest_clean"), "-", "%s", p.out);
    cr_assert_str_eq(column_after(p.out, "selftest_crash"), "crash", "%s", p.out);
    cr_assert_not_null(strstr(p.out, "sleeps 1 ms"));
    proc_free(&p);
    p = POLLEN("list", "--json");
    cr_assert_eq(p.status, 0);
    cr_assert_not_null(strstr(p.out, "{\"name\":\"selftest_crash\",\"expect\":\"crash\","
                                     "\"summary\":\""));
    cr_assert_not_null(strstr(p.out, "{\"name\":\"selftest_clean\",\"expect\":null,"));
    proc_free(&p);
    /* A harness binary lists its extra scenarios too. */
    p = HARNESS("list");
    cr_assert_eq(p.status, 0);
    cr_assert_not_null(strstr(p.out, "selftest_hang"));
    cr_assert_not_null(strstr(p.out, "selftest_assert"));
    cr_assert_not_null(strstr(p.out, "selftest_clean"));
    proc_free(&p);
}

Test(cli, version)
{
    proc p = POLLEN("version");
    cr_assert_eq(p.status, 0);
    cr_assert_str_eq(p.out, "pollen 0.1.0\n");
    proc_free(&p);
}

/* ---- run ------------------------------------------------------------------- */

Test(cli, clean_run_exits_0_with_a_summary)
{
    proc p = POLLEN("run", "selftest_clean", "--seeds", "0..49", "-j", "2");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "selftest_clean: 50 runs, 0 findings, "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "distinct schedules"));
    cr_assert(!file_exists("pollen-out"), "a clean run writes no output directory");
    proc_free(&p);
}

Test(cli, crash_is_isolated_reported_and_replayable)
{
    proc p = POLLEN("run", "selftest_crash", "--seeds", "0..199", "-j", "2");
    cr_assert_eq(p.status, 10 + 12, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING crash in selftest_crash (seed "), "%s", p.out);
    /* Under AddressSanitizer its SEGV handler reports and exits 1. */
    cr_assert(strstr(p.out, "was killed by SIGSEGV") != NULL ||
                  strstr(p.out, "exited with status 1") != NULL,
              "%s", p.out);
    cr_assert_not_null(strstr(p.out, "expected: yes"));
    cr_assert_eq(count_of(p.out, "FINDING"), 1, "stops at the first finding: %s", p.out);
    uint64_t seed = finding_seed(p.out);
    char path[256], line[512];
    snprintf(path, sizeof path, "pollen-out/selftest_crash-seed%" PRIu64 ".replay", seed);
    cr_assert_str_eq(replay_of(p.out), path);
    cr_assert(file_exists(path));
    snprintf(line, sizeof line, "  reproduce: %s replay %s\n", getenv("POLLEN_BIN"), path);
    cr_assert_not_null(strstr(p.out, line), "%s", p.out);
    proc_free(&p);

    p = POLLEN("replay", path);
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "reproduced: crash"), "%s", p.out);
    proc_free(&p);
}

Test(cli, first_finding_does_not_depend_on_jobs)
{
    proc one = POLLEN("run", "selftest_crash", "-j", "1", "--quiet");
    proc many = POLLEN("run", "selftest_crash", "-j", "4", "--quiet");
    cr_assert_eq(one.status, 22);
    cr_assert_eq(many.status, 22);
    cr_assert_eq(finding_seed(one.out), finding_seed(many.out));
    cr_assert_str_eq(one.out, many.out);
    /* --quiet: the finding only, no summary. */
    cr_assert_null(strstr(one.out, "runs,"));
    proc_free(&one);
    proc_free(&many);
}

Test(cli, keep_going_reports_every_crash)
{
    proc p = POLLEN("run", "selftest_crash", "--seeds", "0..59", "--keep-going", "-j", "3");
    cr_assert_eq(p.status, 22);
    const char *summary = summary_of(p.out, "selftest_crash");
    uint64_t findings = number_before(summary, " finding");
    cr_assert_gt(findings, 1, "%s", p.out);
    cr_assert_eq(count_of(p.out, "FINDING crash"), findings);
    /* Every seed ran despite the crashes: crashed workers were replaced. */
    cr_assert_eq(number_before(summary, " runs"), 60, "%s", p.out);
    proc_free(&p);
}

Test(cli, json_lines_on_stdout_text_on_stderr)
{
    proc p = POLLEN("run", "selftest_crash", "selftest_clean", "--seeds", "0..99", "--json");
    cr_assert_eq(p.status, 22);
    cr_assert_eq(count_lines(p.out), 2, "one finding and the summary: %s", p.out);
    const char *head = "{\"kind\":\"crash\",\"scenario\":\"selftest_crash\",\"seed\":";
    cr_assert_eq(strncmp(p.out, head, strlen(head)), 0, "%s", p.out);
    cr_assert_not_null(strstr(p.out, "\"replay\":\"pollen-out/selftest_crash-seed"));
    cr_assert_not_null(strstr(p.out, "\"reproduce\":\""));
    cr_assert_not_null(strstr(p.out, "\n{\"summary\":{\"exit\":22,"));
    cr_assert_not_null(strstr(p.out, "{\"scenario\":\"selftest_clean\",\"ran\":true,\"seeds\":100,"
                                     "\"runs\":100,\"findings\":0,"));
    cr_assert_not_null(strstr(p.err, "FINDING crash in selftest_crash"));
    cr_assert_not_null(strstr(p.err, "selftest_clean: 100 runs"));
    proc_free(&p);
}

Test(cli, shards_split_the_runs)
{
    uint64_t total = 0;
    const char *shards[] = {"1/3", "2/3", "3/3"};
    for (size_t i = 0; i < 3; i++) {
        proc p = POLLEN("run", "selftest_clean", "--seeds", "10..109", "--shard", shards[i]);
        cr_assert_eq(p.status, 0);
        total += number_before(summary_of(p.out, "selftest_clean"), " runs");
        proc_free(&p);
    }
    cr_assert_eq(total, 100);
}

Test(cli, time_limit_stops_cleanly)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    proc p = POLLEN("run", "selftest_clean", "--seeds", "0..100000000000", "--time", "300ms");
    clock_gettime(CLOCK_MONOTONIC, &b);
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "stopped by --time after "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "every seed below "), "%s", p.out);
    cr_assert_lt(b.tv_sec - a.tv_sec, 10);
    proc_free(&p);
}

Test(cli, unwritable_output_is_an_internal_error)
{
    FILE *f = fopen("not-a-dir", "w");
    cr_assert_not_null(f);
    fclose(f);
    proc p = POLLEN("run", "selftest_crash", "--out", "not-a-dir/sub");
    cr_assert_eq(p.status, 3, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "replay: none (cannot write"), "%s", p.out);
    proc_free(&p);
}

Test(cli, check_determinism_passes_on_a_deterministic_scenario)
{
    proc p = POLLEN("run", "selftest_clean", "--seeds", "0..19", "--check-determinism");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "20 runs (each twice)"), "%s", p.out);
    proc_free(&p);
}

Test(cli, real_backend_runs_each_scenario_once)
{
    proc p = POLLEN("run", "selftest_*", "--real");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "selftest_clean: real backend ok"), "%s", p.out);
    /* BUGGIFY never fires in production. */
    cr_assert_not_null(strstr(p.out, "selftest_crash: real backend ok"), "%s", p.out);
    proc_free(&p);
}

/* ---- The harness: watchdog, nondeterminism, pl_sometimes, full replays ---- */

Test(cli, watchdog_reports_a_stuck_poll_as_livelock)
{
    proc p = HARNESS("run", "selftest_hang", "--seed", "5", "--watchdog", "300ms");
    cr_assert_eq(p.status, 10 + 9, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING livelock in selftest_hang (seed 5)"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "made no progress for 300 ms"), "%s", p.out);
    const char *path = replay_of(p.out);
    cr_assert(file_exists(path));
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    proc_free(&p);

    p = HARNESS("replay", copy, "--watchdog", "300ms");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "reproduced: livelock"), "%s", p.out);
    proc_free(&p);
}

/* A poll that sleeps uses no CPU: the poll budget never fires, and a
 * livelock's shrink candidates are killed by the shrink's own watchdog,
 * which still counts as failing with livelock. */
Test(cli, shrink_of_a_sleeping_hang_completes)
{
    proc p = HARNESS("run", "selftest_sleep_hang", "--seed", "2", "--watchdog", "300ms");
    cr_assert_eq(p.status, 10 + 9, "%s%s", p.out, p.err);
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", replay_of(p.out));
    proc_free(&p);
    p = HARNESS("shrink", copy, "--watchdog", "300ms", "-o", "sleep.shrunk.replay");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "shrunk livelock: "), "%s", p.out);
    cr_assert(file_exists("sleep.shrunk.replay"));
    proc_free(&p);
}

/* bug_poll_hang busy-waits inside one poll: nothing the simulator counts
 * moves, so only the CPU-time budget of the worker sees it. The message
 * says which budget fired (the wall-clock watchdog says "made no
 * progress"), and the finding is positioned, replayable and shrinkable:
 * every candidate of its shrink runs in a child under the same budget. */
Test(cli, zoo_poll_hang_is_caught_by_the_poll_budget)
{
    proc p = POLLEN("run", "bug_poll_hang", "--seeds", "0..3", "-j", "1", "--poll-budget",
                    "200ms", "--shrink-time", "20s");
    cr_assert_eq(p.status, 10 + 9, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING livelock in bug_poll_hang (seed 0)"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "  task: worker (#1), poll 1, "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "'worker' (#1) ran for 200 ms of CPU time inside one poll "
                                     "(poll #1, step "),
                       "%s", p.out);
    cr_assert_null(strstr(p.out, "made no progress"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "  shrunk livelock: "), "%s", p.out);
    const char *path = replay_of(p.out);
    cr_assert(file_exists(path));
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    proc_free(&p);

    p = POLLEN("replay", copy, "--poll-budget", "200ms");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "reproduced: livelock (the replay process ran for 200 ms "
                                     "of CPU time inside one poll"),
                       "%s", p.out);
    proc_free(&p);

    p = POLLEN("shrink", copy, "--poll-budget", "200ms", "-o", "hang.shrunk.replay");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "shrunk livelock: "), "%s", p.out);
    cr_assert(file_exists("hang.shrunk.replay"));
    proc_free(&p);
}

/* Bounded exploration runs in one child: the budget stops a poll there
 * too, and --time no longer turns a hang into a clean exit. */
Test(cli, bounded_exploration_is_protected_by_the_poll_budget)
{
    proc p = POLLEN("run", "bug_poll_hang", "--strategy", "bounded:1", "--poll-budget", "200ms",
                    "--time", "60s");
    cr_assert_eq(p.status, 10 + 9, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING livelock in bug_poll_hang (one of the schedules "
                                     "explored)"),
                       "%s", p.out);
    cr_assert_not_null(strstr(p.out, "ran for 200 ms of CPU time inside one poll"), "%s", p.out);
    proc_free(&p);
}

Test(cli, check_determinism_catches_outside_state)
{
    proc p = HARNESS("run", "selftest_nondet", "--seeds", "0..3", "--check-determinism", "-j",
                     "1");
    cr_assert_eq(p.status, 10 + 11, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING nondeterminism in selftest_nondet (seed 0)"),
                       "%s", p.out);
    cr_assert_not_null(strstr(p.out, "two different traces"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "first difference at event"), "%s", p.out);
    char path[4096];
    snprintf(path, sizeof path, "%s", replay_of(p.out));
    proc_free(&p);
    /* Its replay reproduces when two runs of the file disagree. */
    p = HARNESS("replay", path);
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "reproduced: nondeterminism, two runs gave hashes"), "%s",
                       p.out);
    proc_free(&p);
}

Test(cli, sometimes_never_reached_is_an_assertion)
{
    proc p = HARNESS("run", "selftest_unreached", "--seeds", "0..4");
    cr_assert_eq(p.status, 20, "%s", p.out); /* 10 + assertion */
    cr_assert_not_null(strstr(p.out, "pl_sometimes(\"the rare branch runs\")"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "never even reached"), "%s", p.out);
    proc_free(&p);
    /* The other scenarios of the harness do not answer for this site. */
    p = HARNESS("run", "selftest_assert", "--seeds", "0..0");
    cr_assert_null(strstr(p.out, "the rare branch runs"), "%s", p.out);
    proc_free(&p);
}

Test(cli, sometimes_never_true_is_an_assertion)
{
    proc p = HARNESS("run", "selftest_sometimes", "--seeds", "0..9", "-j", "2");
    cr_assert_eq(p.status, 10 + 10, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING assertion in selftest_sometimes (seeds 0..9)"),
                       "%s", p.out);
    cr_assert_not_null(strstr(p.out, "pl_sometimes(\"the impossible happens\")"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "evaluated 10 times"), "%s", p.out);
    proc_free(&p);
    /* A shard sees part of the campaign: a note, not a finding. */
    p = HARNESS("run", "selftest_sometimes", "--seeds", "0..9", "--shard", "1/2");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "note: selftest_sometimes: pl_sometimes"), "%s", p.out);
    proc_free(&p);
}

/* Runs selftest_assert until a finding; returns its replay path. */
static void assert_finding(char *path, size_t len)
{
    proc p = HARNESS("run", "selftest_assert", "--seeds", "0..199");
    cr_assert_eq(p.status, 10 + 10, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING assertion in selftest_assert (seed "), "%s",
                       p.out);
    cr_assert_not_null(strstr(p.out, "a buggify site fired"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "  task: "), "%s", p.out);
    snprintf(path, len, "%s", replay_of(p.out));
    proc_free(&p);
}

Test(cli, replay_reproduces_a_finding_with_its_hash)
{
    char path[4096];
    assert_finding(path, sizeof path);
    proc p = HARNESS("replay", path);
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "expects assertion"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "FINDING assertion in selftest_assert"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "reproduced: assertion, hash "), "%s", p.out);
    proc_free(&p);

    p = HARNESS("replay", "--quiet", path, path);
    cr_assert_eq(p.status, 0);
    cr_assert_eq(count_lines(p.out), 2, "%s", p.out);
    proc_free(&p);
}

Test(cli, replay_traces)
{
    char path[4096];
    assert_finding(path, sizeof path);
    proc p = HARNESS("replay", path, "--trace", "--chrome-trace", "trace.json");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, " poll "), "a timeline: %s", p.out);
    cr_assert_not_null(strstr(p.out, "flipper"), "%s", p.out);
    proc_free(&p);
    FILE *f = fopen("trace.json", "r");
    cr_assert_not_null(f);
    char head[2] = "";
    cr_assert_eq(fread(head, 1, 1, f), 1);
    fclose(f);
    cr_assert_eq(head[0], '[');
}

Test(cli, replay_says_where_a_changed_file_differs)
{
    char path[4096];
    assert_finding(path, sizeof path);
    /* Another scenario under the same decisions: the run differs. */
    proc p = HARNESS("replay", path, "--scenario", "selftest_clean");
    cr_assert_eq(p.status, 1, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "DIFFERS: expected assertion, got no finding"), "%s",
                       p.out);
    proc_free(&p);
    /* A wrong hash in the file. */
    FILE *f = fopen(path, "r+");
    cr_assert_not_null(f);
    char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    char *h = strstr(text, "\nhash ");
    cr_assert_not_null(h);
    h[6] = h[6] == '0' ? '1' : '0';
    rewind(f);
    fwrite(text, 1, n, f);
    fclose(f);
    p = HARNESS("replay", path);
    cr_assert_eq(p.status, 1, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "DIFFERS: "), "%s", p.out);
    proc_free(&p);
}

Test(cli, bad_replay_files_exit_3)
{
    FILE *f = fopen("broken.replay", "w");
    cr_assert_not_null(f);
    fputs("pollen-replay 1\nseed banana\n", f);
    fclose(f);
    proc p = POLLEN("replay", "broken.replay");
    cr_assert_eq(p.status, 3, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "broken.replay"), "%s", p.err);
    proc_free(&p);
    p = POLLEN("replay", "missing.replay");
    cr_assert_eq(p.status, 3);
    cr_assert_not_null(strstr(p.err, "cannot open 'missing.replay'"), "%s", p.err);
    proc_free(&p);
    f = fopen("nameless.replay", "w");
    cr_assert_not_null(f);
    fputs("pollen-replay 1\nseed 1\ndecisions 0\nend\n", f);
    fclose(f);
    p = POLLEN("replay", "nameless.replay");
    cr_assert_eq(p.status, 3, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "nameless.replay names no scenario; pass --scenario NAME"),
                       "%s", p.err);
    proc_free(&p);
}

Test(cli, raw_fuzzer_inputs_need_a_scenario)
{
    FILE *f = fopen("crash-123", "w");
    cr_assert_not_null(f);
    fputs("\x01\x02\x03\x04", f);
    fclose(f);
    proc p = POLLEN("replay", "crash-123");
    cr_assert_eq(p.status, 2);
    cr_assert_not_null(strstr(p.err, "--scenario"), "%s", p.err);
    proc_free(&p);
    /* A clean scenario: the input reproduces no failure. */
    p = POLLEN("replay", "crash-123", "--scenario", "selftest_clean");
    cr_assert_eq(p.status, 1, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "raw fuzzer input, 4 bytes"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "no finding"), "%s", p.out);
    proc_free(&p);
}

Test(cli, first_finding_is_shrunk_unless_told_not_to)
{
    proc p = HARNESS("run", "selftest_assert", "--seeds", "0..199", "--json");
    cr_assert_eq(p.status, 20, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "  shrunk assertion: "), "%s", p.err);
    cr_assert_not_null(strstr(p.err, "  reproduce shrunk: "), "%s", p.err);
    cr_assert_not_null(strstr(p.out, ".shrunk.replay\""), "%s", p.out);
    proc_free(&p);
    p = HARNESS("run", "selftest_assert", "--seeds", "0..199", "--no-shrink", "--json");
    cr_assert_eq(p.status, 20);
    cr_assert_null(strstr(p.err, "shrunk"), "%s", p.err);
    cr_assert_not_null(strstr(p.out, "\"shrunk\":null"), "%s", p.out);
    proc_free(&p);
}

Test(cli, bounded_strategy_enumerates_schedules)
{
    proc p = POLLEN("run", "selftest_clean", "--strategy", "bounded:2");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "selftest_clean: bounded:2, "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "verified: all "), "%s", p.out);
    proc_free(&p);
    /* A buggify site must be enabled, then fire: two deviations. */
    p = HARNESS("run", "selftest_assert", "--strategy", "bounded:2", "--no-shrink");
    cr_assert_eq(p.status, 20, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING assertion in selftest_assert (schedule with 2 "
                                     "deviations)"),
                       "%s", p.out);
    cr_assert(file_exists("pollen-out/selftest_assert-bounded2.replay"));
    proc_free(&p);
    p = HARNESS("replay", "pollen-out/selftest_assert-bounded2.replay");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    proc_free(&p);
    /* A crash inside the exploration still comes out as a finding. */
    p = POLLEN("run", "selftest_crash", "--strategy", "bounded:2");
    cr_assert_eq(p.status, 22, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "run selftest_crash --strategy bounded:2"), "%s", p.out);
    proc_free(&p);
}

Test(cli, real_backend_hang_is_a_livelock)
{
    proc p = HARNESS("run", "selftest_hang", "--real", "--time", "300ms");
    cr_assert_eq(p.status, 19, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING livelock in selftest_hang (real backend)"), "%s",
                       p.out);
    cr_assert_not_null(strstr(p.out, "reproduce: "), "%s", p.out);
    proc_free(&p);
}

Test(cli, shrink_writes_a_smaller_replay)
{
    char path[4096];
    assert_finding(path, sizeof path);
    proc p = HARNESS("shrink", path, "-o", "small.replay");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "shrunk assertion: "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "reproduce: "), "%s", p.out);
    cr_assert(file_exists("small.replay"));
    proc_free(&p);
    p = HARNESS("replay", "small.replay");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    proc_free(&p);
    p = POLLEN("shrink", "missing.replay");
    cr_assert_eq(p.status, 3);
    cr_assert_not_null(strstr(p.err, "missing.replay"), "%s", p.err);
    proc_free(&p);
}

Test(cli, strategies_say_what_they_promise)
{
    proc p = POLLEN("run", "selftest_clean", "--seeds", "0..9", "--strategy", "pct:2");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "selftest_clean: pct:2 guarantee: each run finds a bug "
                                     "of depth 2 with probability >= 1/(n*k^1) = "),
                       "%s", p.out);
    proc_free(&p);
    p = HARNESS("run", "selftest_assert", "--seeds", "0..199", "--strategy", "swarm",
                "--shrink-time", "2s");
    cr_assert_eq(p.status, 20, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "  swarm knobs: schedule="), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "  shrunk assertion: "), "%s", p.out);
    proc_free(&p);
    p = POLLEN("run", "selftest_clean", "--shrink-time", "0s");
    cr_assert_eq(p.status, 2, "%s%s", p.out, p.err);
    proc_free(&p);
}
