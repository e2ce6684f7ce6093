/* tests/sim/test_cli.c: the `pollen` command line.
 *
 * The pure helpers of cli.h are tested in-process. Everything else runs
 * the built binaries as child processes, the way users and CI do: the
 * `pollen` binary (POLLEN_BIN) and a harness binary with extra scenarios
 * (POLLEN_HARNESS), both set by meson. Each test runs in a fresh
 * temporary directory, so replay files land in its own pollen-out/.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "campaign.h"
#include "child.h"
#include "cli/cli.h"
#include "pollen/error.h"

/* ---- Running the binaries ------------------------------------------------ */

/* When set, children start with this file size limit (RLIMIT_FSIZE) and
 * SIGXFSZ ignored: writes past it fail with EFBIG, as on a full disk. */
static long child_fsize_max = -1;

typedef struct exec_call {
    const char *bin;
    const char *argv[64];
} exec_call;

/* The child's side: the file size limit, then the binary. */
static int exec_body(void *arg)
{
    exec_call *e = arg;
    if (child_fsize_max >= 0) {
        struct rlimit rl = {(rlim_t)child_fsize_max, (rlim_t)child_fsize_max};
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &rl);
    }
    execv(e->bin, (char *const *)e->argv);
    return 127;
}

/* The binary named by environment variable `which`, with args (NULL
 * terminated). */
static exec_call exec_of(const char *which, const char *const *args)
{
    exec_call e = {getenv(which), {NULL}};
    cr_assert_not_null(e.bin, "%s is not set: run this test through meson", which);
    e.argv[0] = e.bin;
    size_t n = 1;
    for (; args[n - 1] != NULL; n++) {
        cr_assert_lt(n, 63);
        e.argv[n] = args[n - 1];
    }
    e.argv[n] = NULL;
    return e;
}

/* Starts the binary with its stdout and stderr on out and err. */
static pid_t spawn_argv(const char *which, const char *const *args, int out, int err)
{
    exec_call e = exec_of(which, args);
    return child_start(exec_body, &e, out, err);
}

/* Runs the binary with stdout on out_fd (or collected when negative)
 * and collects its status and output. */
static child_ran run_argv_to(const char *which, const char *const *args, int out_fd)
{
    exec_call e = exec_of(which, args);
    return child_run(exec_body, &e, out_fd);
}

static child_ran run_argv(const char *which, const char *const *args)
{
    return run_argv_to(which, args, -1);
}

#define RUN(which, ...) run_argv((which), (const char *const[]){__VA_ARGS__, NULL})
#define POLLEN(...) RUN("POLLEN_BIN", __VA_ARGS__)
#define HARNESS(...) RUN("POLLEN_HARNESS", __VA_ARGS__)

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

static void assert_finding(char *path, size_t len);

/* ---- A strict JSON checker, for what tooling reads from --json ---------- */

typedef struct json_in {
    const char *p;
} json_in;

static bool json_value(json_in *j, int depth);

static void json_ws(json_in *j)
{
    j->p += strspn(j->p, " \t\r");
}

static bool json_digits(json_in *j)
{
    size_t n = strspn(j->p, "0123456789");
    j->p += n;
    return n > 0;
}

/* One UTF-8 character at j->p, checked for its lead and continuation
 * bytes (enough to catch raw bytes of user output). */
static bool json_utf8(json_in *j)
{
    const unsigned char *c = (const unsigned char *)j->p;
    size_t n = c[0] < 0x80 ? 1 : (c[0] & 0xe0) == 0xc0 ? 2 : (c[0] & 0xf0) == 0xe0 ? 3
               : (c[0] & 0xf8) == 0xf0 ? 4 : 0;
    for (size_t i = 1; i < n; i++) {
        if ((c[i] & 0xc0) != 0x80) {
            return false;
        }
    }
    j->p += n;
    return n > 0 && c[0] != 0xc0 && c[0] != 0xc1;
}

static bool json_str(json_in *j)
{
    if (*j->p++ != '"') {
        return false;
    }
    while (*j->p != '"') {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20) {
            return false; /* raw control bytes, the NUL included */
        }
        if (c != '\\') {
            if (!json_utf8(j)) {
                return false;
            }
            continue;
        }
        j->p++;
        if (*j->p == 'u') {
            for (int i = 1; i <= 4; i++) {
                if (strchr("0123456789abcdefABCDEF", j->p[i]) == NULL || j->p[i] == '\0') {
                    return false;
                }
            }
            j->p += 5;
        } else if (*j->p != '\0' && strchr("\"\\/bfnrt", *j->p) != NULL) {
            j->p++;
        } else {
            return false;
        }
    }
    j->p++;
    return true;
}

static bool json_number(json_in *j)
{
    j->p += *j->p == '-';
    if (*j->p == '0') {
        j->p++;
    } else if (!json_digits(j)) {
        return false;
    }
    if (*j->p == '.' && (j->p++, !json_digits(j))) {
        return false;
    }
    if (*j->p == 'e' || *j->p == 'E') {
        j->p++;
        j->p += *j->p == '+' || *j->p == '-';
        return json_digits(j);
    }
    return true;
}

/* Object members or array elements up to `close`. */
static bool json_items(json_in *j, char close, int depth)
{
    json_ws(j);
    if (*j->p == close) {
        j->p++;
        return true;
    }
    for (;;) {
        json_ws(j);
        if (close == '}') {
            if (!json_str(j)) {
                return false;
            }
            json_ws(j);
            if (*j->p++ != ':') {
                return false;
            }
        }
        if (!json_value(j, depth + 1)) {
            return false;
        }
        json_ws(j);
        if (*j->p == close) {
            j->p++;
            return true;
        }
        if (*j->p++ != ',') {
            return false;
        }
    }
}

static bool json_value(json_in *j, int depth)
{
    json_ws(j);
    if (depth > 32) {
        return false;
    }
    switch (*j->p) {
    case '{':
    case '[':
        return json_items(j, *j->p++ == '{' ? '}' : ']', depth);
    case '"':
        return json_str(j);
    case 't':
    case 'f':
    case 'n': {
        const char *lits[] = {"true", "false", "null"};
        for (size_t i = 0; i < 3; i++) {
            if (strncmp(j->p, lits[i], strlen(lits[i])) == 0) {
                j->p += strlen(lits[i]);
                return true;
            }
        }
        return false;
    }
    default:
        return json_number(j);
    }
}

/* The last line of text that ends with a newline. */
static const char *last_line(const char *text)
{
    size_t n = strlen(text);
    cr_assert(n > 0 && text[n - 1] == '\n');
    const char *p = text + n - 1;
    while (p > text && p[-1] != '\n') {
        p--;
    }
    return p;
}

/* Checks that text is JSON lines: every line one object, nothing else.
 * Returns the number of lines. */
static size_t check_json_lines(const char *text)
{
    size_t lines = 0;
    cr_assert(text[0] == '\0' || text[strlen(text) - 1] == '\n', "no final newline: %s", text);
    for (const char *line = text; *line != '\0'; lines++) {
        size_t n = strcspn(line, "\n");
        char *copy = strndup(line, n);
        cr_assert_not_null(copy);
        json_in j = {copy};
        bool ok = copy[0] == '{' && json_value(&j, 0);
        json_ws(&j);
        cr_assert(ok && *j.p == '\0', "line %zu is not one JSON object (at byte %td): %.300s",
                  lines + 1, j.p - copy, copy);
        free(copy);
        line += n + 1;
    }
    return lines;
}

Test(cli, json_checker_refuses_what_it_must)
{
    const char *bad[] = {"{", "{\"a\":}", "{\"a\":1,}", "{\"a\":\"x\x01\"}", "{\"a\":01}",
                         "{\"a\":\"\xff\"}", "{\"a\":1}{", "{\"a\":tru}", "[1]", "{\"a\":\"\\x\"}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_in j = {bad[i]};
        bool ok = bad[i][0] == '{' && json_value(&j, 0) && *j.p == '\0';
        cr_assert(!ok, "'%s' accepted", bad[i]);
    }
    json_in j = {"{\"a\":[1,-2.5e3,{\"b\":null}],\"c\":\"\\u001b\xc3\xa9\",\"d\":true}"};
    cr_assert(json_value(&j, 0) && *j.p == '\0');
}

/* No byte of `text` is a terminal control byte (other than newlines). */
static void assert_no_controls(const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c != '\0'; c++) {
        cr_assert(*c >= 0x20 || *c == '\n', "control byte 0x%02x in: %s", *c, text);
    }
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
    /* The whole seed space: 2^64 seeds, one more than a uint64_t counts. */
    cr_assert_eq(pl__cli_parse_seeds("0..18446744073709551615", &lo, &hi), 0);
    cr_assert(lo == 0 && hi == UINT64_MAX);
    cr_assert_eq(pl__cli_parse_seeds("0..0xffffffffffffffff", &lo, &hi), 0);
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
    cr_assert_eq(pl__cli_parse_duration("100ns", &ns), 0);
    cr_assert_eq(ns, 100);
    cr_assert_eq(pl__cli_parse_duration("2.5us", &ns), 0);
    cr_assert_eq(ns, 2500);
    /* frac * unit used to overflow: 0.12345678h read as 75.5 s. */
    cr_assert_eq(pl__cli_parse_duration("0.12345678h", &ns), 0);
    cr_assert_eq(ns, (pl_time)444444408000, "%lld", (long long)ns);
    cr_assert_eq(pl__cli_parse_duration("0.999999999h", &ns), 0);
    cr_assert_eq(ns, (pl_time)3599999996400, "%lld", (long long)ns);
    cr_assert_eq(pl__cli_parse_duration("1.123456789m", &ns), 0);
    cr_assert_eq(ns, (pl_time)67407407340, "%lld", (long long)ns);
    cr_assert_eq(pl__cli_parse_duration("0.123456789ms", &ns), 0);
    cr_assert_eq(ns, 123456, "sub-nanosecond digits are dropped");
    /* The largest accepted duration (10 years of 366 days), to the ns. */
    cr_assert_eq(pl__cli_parse_duration("87840.000000000h", &ns), 0);
    cr_assert_eq(ns, (pl_time)87840 * 3600 * PL_S);
    cr_assert_eq(pl__cli_parse_duration("87840.000000001h", &ns), PL_EINVAL);
    cr_assert_eq(pl__cli_parse_duration("87839.999999999h", &ns), 0);
    cr_assert_eq(ns, (pl_time)87840 * 3600 * PL_S - 3600);
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
            pl__seed_slice s = pl__seed_slice_of(lo, hi, k, shards, j, jobs);
            for (uint64_t i = 0; pl__seed_slice_has(&s, i); i++) {
                uint64_t seed = pl__seed_slice_seed(&s, i);
                cr_assert(seed >= lo && seed <= hi);
                cr_assert_eq((seed - lo) % shards + 1, k, "seed %" PRIu64 " in shard %u", seed, k);
                if (i > 0) {
                    cr_assert_gt(seed, pl__seed_slice_seed(&s, i - 1));
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
            pl__seed_slice s = pl__seed_slice_of(lo, hi, k, 5, j, 3);
            total += s.last + 1;
            cr_assert_leq(pl__seed_slice_seed(&s, s.last), hi);
            cr_assert_gt(pl__seed_slice_seed(&s, s.last), hi - 15);
            cr_assert(!pl__seed_slice_has(&s, s.last + 1));
        }
    }
    cr_assert_eq(total, hi - lo + 1);
}

Test(cli, the_whole_seed_space_splits_without_overflow)
{
    char text[32];
    /* One job, one shard: 2^64 seeds in one slice. */
    pl__seed_slice all = pl__seed_slice_of(0, UINT64_MAX, 1, 1, 0, 1);
    cr_assert(!all.empty && all.first == 0 && all.stride == 1 && all.last == UINT64_MAX);
    cr_assert_eq(pl__seed_slice_seed(&all, all.last), UINT64_MAX);
    pl__seed_slice_count_text(&all, text, sizeof text);
    cr_assert_str_eq(text, "18446744073709551616");
    /* Two jobs: 2^63 seeds each, together all of them. */
    for (uint32_t j = 0; j < 2; j++) {
        pl__seed_slice s = pl__seed_slice_of(0, UINT64_MAX, 1, 1, j, 2);
        cr_assert_eq(s.last, UINT64_MAX / 2);
        cr_assert_eq(pl__seed_slice_seed(&s, s.last), UINT64_MAX - 1 + j);
        pl__seed_slice_count_text(&s, text, sizeof text);
        cr_assert_str_eq(text, "9223372036854775808");
    }
    /* Three shards of 2^64 seeds: 6148914691236517206 + 2 * 6148914691236517205. */
    uint64_t sum = 0;
    for (uint32_t k = 1; k <= 3; k++) {
        pl__seed_slice s = pl__seed_slice_of(0, UINT64_MAX, k, 3, 0, 1);
        cr_assert_leq(pl__seed_slice_seed(&s, s.last), UINT64_MAX);
        cr_assert_gt(pl__seed_slice_seed(&s, s.last), UINT64_MAX - 3);
        sum += s.last + 1;
    }
    cr_assert_eq(sum, 0, "2^64 wraps to 0: %" PRIu64, sum);
    /* What a fresh worker resumes. */
    pl__seed_slice rest = pl__seed_slice_rest(&all, 10);
    cr_assert(rest.first == 10 && rest.last == UINT64_MAX - 10);
    pl__seed_slice one = pl__seed_slice_of(5, 5, 1, 1, 0, 1);
    cr_assert(pl__seed_slice_rest(&one, 1).empty);
    cr_assert(pl__seed_slice_rest(&one, 0).first == 5);
}

Test(cli, parse_sizes)
{
    uint64_t v;
    cr_assert_eq(pl__cli_parse_size("1GiB", &v), 0);
    cr_assert_eq(v, UINT64_C(1) << 30);
    cr_assert_eq(pl__cli_parse_size("512MiB", &v), 0);
    cr_assert_eq(v, UINT64_C(512) << 20);
    cr_assert_eq(pl__cli_parse_size("64KiB", &v), 0);
    cr_assert_eq(v, 65536);
    cr_assert_eq(pl__cli_parse_size("16777215TiB", &v), 0);
    const char *bad[] = {"", "1", "0MiB", "1GB", "1 GiB", "1.5GiB", "GiB", "-1MiB", "1gib",
                         "16777216TiB"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(pl__cli_parse_size(bad[i], &v), PL_EINVAL, "'%s' accepted", bad[i]);
    }
}

Test(cli, escape_control_bytes)
{
    char buf[128];
    cr_assert_eq(pl__cli_escape("plain/path-1.replay", false, buf, sizeof buf), 19);
    cr_assert_str_eq(buf, "plain/path-1.replay");
    pl__cli_escape("a\x1b[2Jb\a\x7f", false, buf, sizeof buf);
    cr_assert_str_eq(buf, "a\\x1b[2Jb\\x07\\x7f");
    pl__cli_escape("two\nlines\tx", false, buf, sizeof buf);
    cr_assert_str_eq(buf, "two\\x0alines\\x09x");
    pl__cli_escape("two\nlines\tx\r", true, buf, sizeof buf);
    cr_assert_str_eq(buf, "two\nlines\tx\\x0d");
    /* UTF-8 stays; C1 controls (8-bit CSI) and broken bytes do not. */
    pl__cli_escape("caf\xc3\xa9 \xe2\x82\xac", false, buf, sizeof buf);
    cr_assert_str_eq(buf, "caf\xc3\xa9 \xe2\x82\xac");
    pl__cli_escape("\x9b" "2J \xc2\x9b \xc0\xaf \xed\xa0\x80 \xe2\x82", false, buf, sizeof buf);
    cr_assert_str_eq(buf, "\\x9b2J \\xc2\\x9b \\xc0\\xaf \\xed\\xa0\\x80 \\xe2\\x82");
    /* Cut like snprintf. */
    cr_assert_eq(pl__cli_escape("\x1b\x1b", false, buf, 5), 8);
    cr_assert_str_eq(buf, "\\x1b");
    cr_assert_eq(pl__cli_utf8_len((const unsigned char *)"\xf4\x8f\xbf\xbf"), 4);
    cr_assert_eq(pl__cli_utf8_len((const unsigned char *)"\xf4\x90\x80\x80"), 0);
}

Test(cli, more_shards_than_seeds_leave_empty_slices)
{
    pl__seed_slice s = pl__seed_slice_of(10, 12, 4, 8, 0, 1);
    cr_assert(s.empty && !pl__seed_slice_has(&s, 0));
    s = pl__seed_slice_of(10, 12, 3, 8, 0, 1);
    cr_assert(!s.empty && s.last == 0);
    cr_assert_eq(s.first, 12);
    s = pl__seed_slice_of(10, 12, 1, 1, 5, 8);
    cr_assert(s.empty);
    char text[32];
    pl__seed_slice_count_text(&s, text, sizeof text);
    cr_assert_str_eq(text, "0");
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
        child_ran p = POLLEN(forms[i][0]);
        cr_assert_eq(p.status, 0);
        const char *cmds[] = {"list", "run", "replay", "shrink", "help", "version"};
        for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
            cr_assert_not_null(strstr(p.out, cmds[c]), "'%s' missing from: %s", cmds[c], p.out);
        }
        cr_assert_not_null(strstr(p.out, "lost_wakeup (12)"));
        cr_assert_not_null(strstr(p.out, "crash (22)"));
        cr_assert_not_null(strstr(p.out, "linearizability (23)"));
        cr_assert_not_null(strstr(p.out, "liveness (24)"));
        child_ran_free(&p);
    }
}

Test(cli, each_command_has_help)
{
    const char *cmds[] = {"list", "run", "replay", "shrink"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        child_ran a = POLLEN(cmds[i], "--help"), b = POLLEN("help", cmds[i]);
        cr_assert_eq(a.status, 0, "%s --help", cmds[i]);
        cr_assert_eq(b.status, 0);
        cr_assert_str_eq(a.out, b.out);
        char usage[64];
        snprintf(usage, sizeof usage, "usage: pollen %s", cmds[i]);
        cr_assert_not_null(strstr(a.out, usage), "%s", a.out);
        cr_assert_str_empty(a.err);
        child_ran_free(&a);
        child_ran_free(&b);
    }
    child_ran p = POLLEN("run", "-h");
    cr_assert_eq(p.status, 0);
    cr_assert_not_null(strstr(p.out, "--seeds A..B"));
    cr_assert_not_null(strstr(p.out, "default 0..999"));
    cr_assert_not_null(strstr(p.out, "pollen-out/"));
    cr_assert_not_null(strstr(p.out, "--check-determinism"));
    /* The debugging options, each where it is accepted. */
    cr_assert_not_null(strstr(p.out, "  --trace              with --seed N and one scenario"));
    cr_assert_not_null(strstr(p.out, "  --chrome-trace OUT.json  with --seed N"));
    cr_assert_not_null(strstr(p.out, "  --waker-rotation on|off\n"));
    cr_assert_null(strstr(p.out, "--break-at"), "run has no --break-at: %s", p.out);
    /* Every kind --knobs accepts is listed with its default, first to last. */
    cr_assert_not_null(strstr(p.out, "decision kinds for --knobs (name=default):\n"
                                     "  schedule=32768 "),
                       "%s", p.out);
    cr_assert_not_null(strstr(p.out, " spurious_poll=off "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, " node_isolate=256"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, " clock_jump=256\n"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, " in that order:\n  s i t l w p d c f j b B q k e x u g L D r "
                                     "R P C K Z T V N I a O F J\n"),
                       "%s", p.out);
    /* Which C library calls a run routes, and where that is documented. */
    cr_assert_not_null(strstr(p.out, "clock_gettime, gettimeofday and time read"), "%s", p.out);
    child_ran_free(&p);
    p = POLLEN("replay", "-h");
    cr_assert_not_null(strstr(p.out, "  --trace                 print the run's event timeline"));
    cr_assert_not_null(strstr(p.out, "  --chrome-trace OUT.json write Chrome trace-event JSON"));
    cr_assert_not_null(strstr(p.out, "  --break-at STEP         raise SIGTRAP as step STEP"));
    cr_assert_not_null(strstr(p.out, "  --waker-rotation on|off\n"));
    child_ran_free(&p);
}

Test(cli, no_command_is_a_usage_error)
{
    child_ran p = POLLEN("--quiet");
    cr_assert_eq(p.status, 2);
    child_ran_free(&p);
    const char *none[] = {NULL};
    p = run_argv("POLLEN_BIN", none);
    cr_assert_eq(p.status, 2);
    cr_assert_not_null(strstr(p.err, "usage: pollen"));
    child_ran_free(&p);
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
    {{"run", "selftest_clean", "--trace"}, "'--trace' traces one run: give one seed"},
    {{"run", "selftest_clean", "--seeds", "0..9", "--chrome-trace", "t.json"},
     "'--chrome-trace' traces one run: give one seed"},
    {{"run", "selftest_clean", "selftest_assert", "--seed", "1", "--trace"},
     "name exactly one scenario"},
    {{"run", "selftest_*", "--seed", "1", "--trace"}, "the patterns select"},
    {{"run", "selftest_clean", "--real", "--trace"}, "not with '--real'"},
    {{"replay"}, "which file?"},
    {{"replay", "f", "--break-at", "0"}, "bad value for '--break-at': '0'"},
    {{"replay", "f", "--poll-cost", "5"}, "bad value for '--poll-cost': '5'"},
    {{"replay", "--chrome-trace", "t.json", "a", "b"}, "exactly one FILE"},
    {{"replay", "--scenario", "nope", "f"}, "no scenario matches 'nope'"},
    {{"shrink"}, "which file?"},
    {{"shrink", "a", "b"}, "one FILE at a time"},
    {{"shrink", "-o"}, "option '--output' needs a value"},
    {{"list", "--long"}, "unknown option '--long'"},
    {{"run", "selftest_clean", "--seeds", "0..9", "--seeds", "0..99"},
     "option '--seeds' given twice ('0..9', then '0..99'): give it once"},
    {{"run", "selftest_clean", "--seed", "1", "--seed=2"}, "option '--seed' given twice"},
    {{"run", "selftest_clean", "-j", "2", "--jobs", "3"}, "option '--jobs' given twice"},
    {{"replay", "--scenario", "a", "--scenario", "b", "f"}, "option '--scenario' given twice"},
    {{"shrink", "f", "-o", "a", "-o", "b"}, "option '--output' given twice"},
    {{"run", "selftest_clean", "--worker-rss", "1GB"}, "bad value for '--worker-rss': '1GB'"},
    {{"run", "selftest_clean", "--recycle-seeds", "0"}, "bad value for '--recycle-seeds': '0'"},
    {{"run", "selftest_clean", "--real", "--worker-rss", "1GiB"},
     "'--worker-rss' has no effect with '--real'"},
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
        child_ran p = run_argv("POLLEN_BIN", args);
        cr_assert_eq(p.status, 2, "case %zu (%s): status %d, stderr: %s", i, uc->says, p.status,
                     p.err);
        cr_assert_not_null(strstr(p.err, uc->says), "case %zu: '%s' not in: %s", i, uc->says,
                           p.err);
        cr_assert_eq(count_lines(p.err), 1, "case %zu: not one line: %s", i, p.err);
        cr_assert(strstr(p.err, "--help") != NULL || strstr(p.err, "pollen list") != NULL,
                  "case %zu: no hint: %s", i, p.err);
        cr_assert_str_empty(p.out, "case %zu", i);
        child_ran_free(&p);
    }
}

Test(cli, list_shows_names_expectations_and_summaries)
{
    child_ran p = POLLEN("list");
    cr_assert_eq(p.status, 0);
    cr_assert_not_null(strstr(p.out, "SCENARIO"));
    cr_assert_str_eq(column_after(p.out, "selftest_clean"), "-", "%s", p.out);
    cr_assert_str_eq(column_after(p.out, "selftest_crash"), "crash", "%s", p.out);
    cr_assert_not_null(strstr(p.out, "sleeps 1 ms"));
    child_ran_free(&p);
    p = POLLEN("list", "--json");
    cr_assert_eq(p.status, 0);
    cr_assert_not_null(strstr(p.out, "{\"name\":\"selftest_crash\",\"expect\":\"crash\","
                                     "\"summary\":\""));
    cr_assert_not_null(strstr(p.out, "{\"name\":\"selftest_clean\",\"expect\":null,"));
    child_ran_free(&p);
    /* A harness binary lists its extra scenarios too. */
    p = HARNESS("list");
    cr_assert_eq(p.status, 0);
    cr_assert_not_null(strstr(p.out, "selftest_hang"));
    cr_assert_not_null(strstr(p.out, "selftest_assert"));
    cr_assert_not_null(strstr(p.out, "selftest_clean"));
    child_ran_free(&p);
}

Test(cli, version)
{
    child_ran p = POLLEN("version");
    cr_assert_eq(p.status, 0);
    cr_assert_str_eq(p.out, "pollen 0.1.0\n");
    child_ran_free(&p);
}

/* ---- run ------------------------------------------------------------------- */

Test(cli, clean_run_exits_0_with_a_summary)
{
    child_ran p = POLLEN("run", "selftest_clean", "--seeds", "0..49", "-j", "2");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "selftest_clean: 50 runs, 0 findings, "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "distinct schedules"));
    cr_assert(!file_exists("pollen-out"), "a clean run writes no output directory");
    child_ran_free(&p);
}

Test(cli, crash_is_isolated_reported_and_replayable)
{
    child_ran p = POLLEN("run", "selftest_crash", "--seeds", "0..199", "-j", "2");
    cr_assert_eq(p.status, 10 + 12, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING crash in selftest_crash (seed "), "%s", p.out);
    /* Under AddressSanitizer its SEGV handler reports and exits 1. */
    cr_assert(strstr(p.out, "was killed by SIGSEGV") != NULL ||
                  strstr(p.out, "exited with status 1") != NULL,
              "%s", p.out);
    cr_assert_not_null(strstr(p.out, "expected: yes"));
    /* The task line says why it names no task (or names the crashed one). */
    cr_assert(strstr(p.out, "  task: not known: the run's process died before it could report "
                            "which task it was polling") != NULL ||
                  strstr(p.out, "  task: crasher") != NULL,
              "%s", p.out);
    cr_assert_null(strstr(p.out, "task: unknown"), "%s", p.out);
    /* What the crashing run printed last, though it never ended its line. */
    cr_assert_not_null(strstr(p.out, "    | crasher: raising SIGSEGV in round "), "%s", p.out);
    cr_assert_eq(count_of(p.out, "FINDING"), 1, "stops at the first finding: %s", p.out);
    uint64_t seed = finding_seed(p.out);
    char path[256], line[512];
    snprintf(path, sizeof path, "pollen-out/selftest_crash-seed%" PRIu64 ".replay", seed);
    cr_assert_str_eq(replay_of(p.out), path);
    cr_assert(file_exists(path));
    snprintf(line, sizeof line, "  reproduce: %s replay %s\n", getenv("POLLEN_BIN"), path);
    cr_assert_not_null(strstr(p.out, line), "%s", p.out);
    child_ran_free(&p);

    p = POLLEN("replay", path);
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "reproduced: crash"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, first_finding_does_not_depend_on_jobs)
{
    /* Not shrunk: the shrink's account says how long it took. */
    child_ran one = POLLEN("run", "selftest_crash", "-j", "1", "--quiet", "--no-shrink");
    child_ran many = POLLEN("run", "selftest_crash", "-j", "4", "--quiet", "--no-shrink");
    cr_assert_eq(one.status, 22);
    cr_assert_eq(many.status, 22);
    cr_assert_eq(finding_seed(one.out), finding_seed(many.out));
    cr_assert_str_eq(one.out, many.out);
    /* --quiet: the finding only, no summary. */
    cr_assert_null(strstr(one.out, "runs,"));
    child_ran_free(&one);
    child_ran_free(&many);
}

Test(cli, keep_going_reports_every_crash)
{
    child_ran p = POLLEN("run", "selftest_crash", "--seeds", "0..59", "--keep-going", "-j", "3");
    cr_assert_eq(p.status, 22);
    const char *summary = summary_of(p.out, "selftest_crash");
    uint64_t findings = number_before(summary, " finding");
    cr_assert_gt(findings, 1, "%s", p.out);
    cr_assert_eq(count_of(p.out, "FINDING crash"), findings);
    /* Every seed ran despite the crashes: crashed workers were replaced. */
    cr_assert_eq(number_before(summary, " runs"), 60, "%s", p.out);
    child_ran_free(&p);
}

Test(cli, json_lines_on_stdout_text_on_stderr)
{
    child_ran p = POLLEN("run", "selftest_crash", "selftest_clean", "--seeds", "0..99", "--json");
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
    child_ran_free(&p);
}

Test(cli, user_stdout_never_reaches_the_json_channel)
{
    child_ran p = HARNESS("run", "selftest_chatter", "--seeds", "0..24", "-j", "2", "--keep-going",
                     "--json", "--no-shrink");
    cr_assert_eq(p.status, 20, "%s", p.err);
    size_t lines = check_json_lines(p.out);
    uint64_t findings = number_before(summary_of(p.err, "selftest_chatter"), " finding");
    cr_assert_gt(findings, 1, "%s", p.err);
    cr_assert_eq(lines, findings + 1, "the findings, then the summary: %s", p.out);
    cr_assert_eq(strncmp(last_line(p.out), "{\"summary\":{", 12), 0, "%s", p.out);
    cr_assert_eq(count_of(p.out, "{\"summary\":"), 1);
    /* The output goes with each finding, escaped. */
    cr_assert_eq(count_of(p.out, "\"output_bytes\":74015"), findings, "%s", p.out);
    cr_assert_eq(count_of(p.out, "\\u001b[31mthe last words, no newline\",\"output_bytes\""),
                 findings, "%s", p.out);
    cr_assert_eq(count_of(p.err, "  stdout of the run (74015 bytes), the last 4095:\n"), findings,
                 "%s", p.err);
    cr_assert_not_null(strstr(p.err, "    | {\"kind\":\"not pollen's\",\\x1b[31mthe last words"),
                       "%s", p.err);
    assert_no_controls(p.err);
    child_ran_free(&p);
}

Test(cli, user_stdout_is_shown_under_its_finding_in_text_mode)
{
    child_ran p = HARNESS("run", "selftest_chatter", "--seeds", "0..99", "-j", "2", "--no-shrink");
    cr_assert_eq(p.status, 20, "%s%s", p.out, p.err);
    /* Every line of user output is inside a finding, marked as such. */
    for (const char *l = p.out; (l = strstr(l, "0123456789abcdef")) != NULL; l++) {
        const char *start = l;
        while (start > p.out && start[-1] != '\n') {
            start--;
        }
        cr_assert_eq(strncmp(start, "    | ", 6), 0, "unmarked user output: %.100s", start);
        l = strchr(l, '\n');
        cr_assert_not_null(l);
    }
    cr_assert_not_null(strstr(p.out, "    | ...0123456789abcdef"), "%s", p.out);
    cr_assert_null(strstr(p.out, "\n{\"kind\":\"not pollen's\""), "%s", p.out);
    child_ran_free(&p);
    /* The real backend's child prints too. */
    p = HARNESS("run", "selftest_chatter", "--real", "--json");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_eq(check_json_lines(p.out), 1, "%s", p.out);
    child_ran_free(&p);
}

/* True when some replay file in dir records a crash. */
static bool crash_replay_in(const char *dir)
{
    DIR *d = opendir(dir);
    bool found = false;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int fd = open(path, O_RDONLY);
        if (fd >= 0 && e->d_name[0] != '.') {
            char *text = child_slurp(fd);
            found = found || strstr(text, "\nfinding crash\n") != NULL;
            free(text);
        } else if (fd >= 0) {
            close(fd);
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return found;
}

Test(cli, a_closed_stdout_stops_the_run_quietly)
{
    /* As `| head -c 0` and `| head -c 100` do: the reader goes away. */
    const size_t reads[] = {0, 100};
    for (size_t r = 0; r < sizeof reads / sizeof reads[0]; r++) {
        int fds[2], err = child_temp_fd();
        cr_assert_eq(pipe(fds), 0);
        fcntl(fds[0], F_SETFD, FD_CLOEXEC); /* the reader is this test alone */
        const char *args[] = {"run", "selftest_chatter", "--seeds", "0..199", "-j", "2",
                              "--keep-going", "--json", "--no-shrink", NULL};
        pid_t pid = spawn_argv("POLLEN_HARNESS", args, fds[1], err);
        close(fds[1]);
        char buf[100];
        for (size_t got = 0; got < reads[r];) {
            ssize_t n = read(fds[0], buf + got, reads[r] - got);
            cr_assert_gt(n, 0);
            got += (size_t)n;
        }
        close(fds[0]);
        int status = child_wait(pid);
        char *text = child_slurp(err);
        cr_assert_eq(status, 141, "after %zu bytes: status %d: %s", reads[r], status, text);
        cr_assert_null(strstr(text, "FINDING crash"), "%s", text);
        cr_assert_null(strstr(text, "SIGPIPE"), "%s", text);
        cr_assert_null(strstr(text, "error"), "%s", text);
        free(text);
        cr_assert(!crash_replay_in("pollen-out"), "a worker died of SIGPIPE as a 'crash'");
    }
}

Test(cli, a_full_stdout_is_an_error)
{
    int full = open("/dev/full", O_WRONLY);
    if (full < 0) {
        cr_skip_test("no /dev/full here");
    }
    const char *args[] = {"run", "selftest_crash", "--json", "--no-shrink", NULL};
    child_ran p = run_argv_to("POLLEN_BIN", args, full);
    close(full);
    cr_assert_eq(p.status, 3, "%s", p.err);
    cr_assert_not_null(strstr(p.err, "cannot write to stdout: No space left on device"), "%s",
                       p.err);
    child_ran_free(&p);
}

Test(cli, time_running_out_still_judges_a_hanging_seed)
{
    child_ran p = HARNESS("run", "selftest_hang_late", "--seeds", "0..99", "-j", "1", "--watchdog",
                     "1s", "--time", "500ms");
    cr_assert_eq(p.status, 19, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING livelock in selftest_hang_late (seed 13)"), "%s",
                       p.out);
    cr_assert_not_null(strstr(p.out, "made no progress for 1 s"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "not run again alone"), "%s", p.out);
    /* Which of the two, and how to get the task. */
    char want[512];
    snprintf(want, sizeof want,
             "  task: not known: the seed was not run again alone (--time had "
             "run out); to find it: %s replay pollen-out/selftest_hang_late-seed13.replay "
             "--trace\n",
             getenv("POLLEN_HARNESS"));
    cr_assert_not_null(strstr(p.out, want), "%s", p.out);
    cr_assert(file_exists("pollen-out/selftest_hang_late-seed13.replay"));
    child_ran_free(&p);
    /* Keep going: the summary resumes past the hanging seed... */
    p = HARNESS("run", "selftest_hang_late", "--seeds", "0..99", "-j", "1", "--watchdog", "1s",
                "--time", "500ms", "--keep-going", "--json");
    cr_assert_eq(p.status, 19, "%s%s", p.out, p.err);
    cr_assert_eq(check_json_lines(p.out), 2, "%s", p.out);
    cr_assert_not_null(strstr(p.out, "{\"kind\":\"livelock\",\"scenario\":\"selftest_hang_late\","
                                     "\"seed\":13,"),
                       "%s", p.out);
    cr_assert_not_null(strstr(p.out, "\"complete\":false,\"resume_seed\":14,"), "%s", p.out);
    child_ran_free(&p);
    /* ...and resuming there does not stall. */
    p = HARNESS("run", "selftest_hang_late", "--seeds", "14..20", "-j", "1", "--watchdog", "1s",
                "--time", "500ms", "--json");
    /* Complete, and its known bug (seed 13) is not in it: exit 4. */
    cr_assert_eq(p.status, 4, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "\"runs\":7,"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "\"complete\":true,"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, memory_growing_seed_after_seed_is_reported)
{
    child_ran p = HARNESS("run", "selftest_leak", "--seeds", "0..99", "-j", "1");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "warning: selftest_leak: worker memory grew by 1.0 MiB per "
                                     "seed over seeds 1..64 (64 runs in one process): user code "
                                     "leaks memory across runs"),
                       "%s", p.out);
    cr_assert_eq(count_of(p.out, "warning:"), 1, "once per campaign: %s", p.out);
    child_ran_free(&p);
    p = HARNESS("run", "selftest_leak", "--seeds", "0..199", "-j", "2", "--json");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_eq(check_json_lines(p.out), 2, "%s", p.out);
    cr_assert_eq(strncmp(p.out,
                         "{\"warning\":\"memory_growth\",\"scenario\":\"selftest_leak\","
                         "\"first_seed\":",
                         60),
                 0, "%s", p.out);
    child_ran_free(&p);
    /* Memory that is freed, or used once, is no leak. */
    p = HARNESS("run", "selftest_chatter", "selftest_assert", "--seeds", "0..199", "-j", "1",
                "--keep-going", "--no-shrink");
    cr_assert_null(strstr(p.out, "warning:"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, workers_hand_their_seeds_to_fresh_processes)
{
    /* selftest_runs fails in a process past its 20th run. */
    child_ran p = HARNESS("run", "selftest_runs", "--seeds", "0..99", "-j", "2", "--recycle-seeds",
                     "20");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "selftest_runs: 100 runs, 0 findings"), "%s", p.out);
    child_ran_free(&p);
    p = HARNESS("run", "selftest_runs", "--seeds", "0..99", "-j", "2", "--recycle-seeds", "21",
                "--no-shrink");
    cr_assert_eq(p.status, 20, "%s%s", p.out, p.err);
    cr_assert_eq(finding_seed(p.out), 40, "%s", p.out); /* the 21st seed of job 0 */
    child_ran_free(&p);
    /* Past --worker-rss, after the seed that crossed it. */
    p = HARNESS("run", "selftest_leak", "--seeds", "0..99", "-j", "1", "--worker-rss", "32MiB");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "note: selftest_leak: a worker grew to "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, " of RSS (--worker-rss 32.0 MiB) by seed "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "selftest_leak: 100 runs, 0 findings"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, a_kill_from_outside_is_not_pinned_on_its_seed)
{
    child_ran p = HARNESS("run", "selftest_oom", "--seeds", "0..9", "-j", "1", "--no-shrink");
    cr_assert_eq(p.status, 22, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING crash in selftest_oom (seed 5)"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "was killed by SIGKILL (Killed) while running this seed: "
                                     "pollen did not send it; the kernel's OOM killer does"),
                       "%s", p.out);
    cr_assert_not_null(strstr(p.out, "run again alone, the seed did not fail"), "%s", p.out);
    char want[512];
    snprintf(want, sizeof want,
             "  task: not known: the seed did not fail when run again alone; "
             "to find it: %s replay pollen-out/selftest_oom-seed5.replay --trace\n",
             getenv("POLLEN_HARNESS"));
    cr_assert_not_null(strstr(p.out, want), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, shards_split_the_runs)
{
    uint64_t total = 0;
    const char *shards[] = {"1/3", "2/3", "3/3"};
    for (size_t i = 0; i < 3; i++) {
        child_ran p = POLLEN("run", "selftest_clean", "--seeds", "10..109", "--shard", shards[i]);
        cr_assert_eq(p.status, 0);
        total += number_before(summary_of(p.out, "selftest_clean"), " runs");
        child_ran_free(&p);
    }
    cr_assert_eq(total, 100);
}

Test(cli, time_limit_stops_cleanly)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    child_ran p = POLLEN("run", "selftest_clean", "--seeds", "0..100000000000", "--time", "300ms");
    clock_gettime(CLOCK_MONOTONIC, &b);
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "stopped by --time after "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "every seed below "), "%s", p.out);
    cr_assert_lt(b.tv_sec - a.tv_sec, 10);
    child_ran_free(&p);
}

/* bounded:K stopped by --time stops itself between two schedules and
 * says how far it got (the parent does not kill it with nothing said). */
Test(cli, bounded_stopped_by_time_says_how_far_it_got)
{
    child_ran p = POLLEN("run", "outbox", "--strategy", "bounded:3", "--time", "300ms");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "outbox: bounded:3, "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, " runs, "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "; stopped by --time at "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, " ran clean), every schedule with fewer ran clean, over "),
                       "%s", p.out);
    cr_assert_null(strstr(p.out, "before the exploration finished"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, the_whole_seed_space_is_a_valid_range)
{
    child_ran p = POLLEN("run", "selftest_clean", "--seeds", "0..18446744073709551615", "--time",
                         "300ms", "-j", "2", "--json");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, " of 18446744073709551616 seeds, every seed below "), "%s",
                       p.err);
    cr_assert_not_null(strstr(p.out, "\"seeds\":\"0..18446744073709551615\""), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "\"seeds\":18446744073709551616,"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, names_from_files_and_arguments_are_escaped)
{
    const char *name = "evil\x1b[2J\a.replay";
    FILE *f = fopen(name, "w");
    cr_assert_not_null(f);
    fputs("pollen-replay 1\nscenario bad\x1b]0;title\a\nseed 1\ndecisions 0\nend\n", f);
    fclose(f);
    child_ran p = POLLEN("replay", name);
    cr_assert_eq(p.status, 3, "%s%s", p.out, p.err);
    assert_no_controls(p.err);
    cr_assert_not_null(strstr(p.err, "evil\\x1b[2J\\x07.replay"), "%s", p.err);
    cr_assert_not_null(strstr(p.err, "scenario 'bad\\x1b]0;title\\x07' is not linked"), "%s",
                       p.err);
    child_ran_free(&p);
    p = POLLEN("run", "no\x1b[31mpe");
    cr_assert_eq(p.status, 2);
    assert_no_controls(p.err);
    cr_assert_not_null(strstr(p.err, "no scenario matches 'no\\x1b[31mpe'"), "%s", p.err);
    child_ran_free(&p);
    p = POLLEN("run", "selftest_clean", "--seeds", "1..\a");
    cr_assert_eq(p.status, 2);
    assert_no_controls(p.err);
    child_ran_free(&p);
    /* The --out directory shows in the finding's replay and reproduce lines. */
    p = POLLEN("run", "selftest_crash", "--out", "out\x1b[1m", "--no-shrink");
    cr_assert_eq(p.status, 22, "%s%s", p.out, p.err);
    assert_no_controls(p.out);
    cr_assert_not_null(strstr(p.out, "  replay: out\\x1b[1m/selftest_crash-seed"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, a_directory_is_reported_as_one)
{
    cr_assert_eq(mkdir("adir", 0777), 0);
    child_ran p = POLLEN("replay", "adir");
    cr_assert_eq(p.status, 3, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "cannot read 'adir': it is a directory, not a file"), "%s",
                       p.err);
    child_ran_free(&p);
    p = POLLEN("shrink", "adir");
    cr_assert_eq(p.status, 3, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "it is a directory, not a file"), "%s", p.err);
    child_ran_free(&p);
    char path[4096];
    assert_finding(path, sizeof path);
    p = HARNESS("shrink", path, "-o", "adir");
    cr_assert_eq(p.status, 3, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "cannot write 'adir': is a directory"), "%s", p.err);
    child_ran_free(&p);
}

Test(cli, a_failed_replay_write_names_its_cause)
{
    /* Pipes are not limited by RLIMIT_FSIZE: the report gets through. */
    int out[2], err[2];
    cr_assert_eq(pipe(out), 0);
    cr_assert_eq(pipe(err), 0);
    fcntl(out[0], F_SETFD, FD_CLOEXEC);
    fcntl(err[0], F_SETFD, FD_CLOEXEC);
    child_fsize_max = 64;
    const char *args[] = {"run", "selftest_crash", "--no-shrink", NULL};
    pid_t pid = spawn_argv("POLLEN_BIN", args, out[1], err[1]);
    child_fsize_max = -1;
    close(out[1]);
    close(err[1]);
    int status = child_wait(pid);
    char *text = child_slurp(out[0]), *etext = child_slurp(err[0]);
    cr_assert_eq(status, 3, "%s%s", text, etext);
    cr_assert_not_null(strstr(text, "replay: none (cannot write pollen-out/selftest_crash-seed"),
                       "%s", text);
    cr_assert_not_null(strstr(text, ".replay: File too large)"), "not 'Input/output error': %s",
                       text);
    free(text);
    free(etext);
}

Test(cli, unwritable_output_is_an_internal_error)
{
    FILE *f = fopen("not-a-dir", "w");
    cr_assert_not_null(f);
    fclose(f);
    child_ran p = POLLEN("run", "selftest_crash", "--out", "not-a-dir/sub");
    cr_assert_eq(p.status, 3, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "replay: none (cannot write"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, check_determinism_passes_on_a_deterministic_scenario)
{
    child_ran p = POLLEN("run", "selftest_clean", "--seeds", "0..19", "--check-determinism");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "20 runs (each twice)"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, real_backend_runs_each_scenario_once)
{
    child_ran p = POLLEN("run", "selftest_*", "--real");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "selftest_clean: real backend ok"), "%s", p.out);
    /* BUGGIFY never fires in production. */
    cr_assert_not_null(strstr(p.out, "selftest_crash: real backend ok"), "%s", p.out);
    child_ran_free(&p);
}

/* ---- The harness: watchdog, nondeterminism, pl_sometimes, full replays ---- */

Test(cli, watchdog_reports_a_stuck_poll_as_livelock)
{
    child_ran p = HARNESS("run", "selftest_hang", "--seed", "5", "--watchdog", "300ms");
    cr_assert_eq(p.status, 10 + 9, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING livelock in selftest_hang (seed 5)"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "made no progress for 300 ms"), "%s", p.out);
    const char *path = replay_of(p.out);
    cr_assert(file_exists(path));
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    child_ran_free(&p);

    p = HARNESS("replay", copy, "--watchdog", "300ms");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "reproduced: livelock"), "%s", p.out);
    child_ran_free(&p);
}

/* A poll that sleeps uses no CPU: the poll budget never fires, and a
 * livelock's shrink candidates are killed by the shrink's own watchdog,
 * which still counts as failing with livelock. */
Test(cli, shrink_of_a_sleeping_hang_completes)
{
    child_ran p = HARNESS("run", "selftest_sleep_hang", "--seed", "2", "--watchdog", "300ms");
    cr_assert_eq(p.status, 10 + 9, "%s%s", p.out, p.err);
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", replay_of(p.out));
    child_ran_free(&p);
    p = HARNESS("shrink", copy, "--watchdog", "300ms", "-o", "sleep.shrunk.replay");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "shrunk livelock: "), "%s", p.out);
    cr_assert(file_exists("sleep.shrunk.replay"));
    child_ran_free(&p);
}

/* bug_poll_hang busy-waits inside one poll: nothing the simulator counts
 * moves, so only the CPU-time budget of the worker sees it. The message
 * says which budget fired (the wall-clock watchdog says "made no
 * progress"), and the finding is positioned, replayable and shrinkable:
 * every candidate of its shrink runs in a child under the same budget. */
Test(cli, zoo_poll_hang_is_caught_by_the_poll_budget)
{
    child_ran p = POLLEN("run", "bug_poll_hang", "--seeds", "0..3", "-j", "1", "--poll-budget",
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
    child_ran_free(&p);

    p = POLLEN("replay", copy, "--poll-budget", "200ms");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "reproduced: livelock (the replay process ran for 200 ms "
                                     "of CPU time inside one poll"),
                       "%s", p.out);
    child_ran_free(&p);

    p = POLLEN("shrink", copy, "--poll-budget", "200ms", "-o", "hang.shrunk.replay");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "shrunk livelock: "), "%s", p.out);
    cr_assert(file_exists("hang.shrunk.replay"));
    child_ran_free(&p);
}

/* Bounded exploration runs in one child: the budget stops a poll there
 * too, and --time no longer turns a hang into a clean exit. */
Test(cli, bounded_exploration_is_protected_by_the_poll_budget)
{
    child_ran p = POLLEN("run", "bug_poll_hang", "--strategy", "bounded:1", "--poll-budget",
                         "200ms", "--time", "60s");
    cr_assert_eq(p.status, 10 + 9, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING livelock in bug_poll_hang (one of the schedules "
                                     "explored)"),
                       "%s", p.out);
    cr_assert_not_null(strstr(p.out, "ran for 200 ms of CPU time inside one poll"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, check_determinism_catches_outside_state)
{
    child_ran p = HARNESS("run", "selftest_nondet", "--seeds", "0..3", "--check-determinism", "-j",
                     "1");
    cr_assert_eq(p.status, 10 + 11, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING nondeterminism in selftest_nondet (seed 0)"), "%s",
                       p.out);
    cr_assert_not_null(strstr(p.out, "two different traces"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "first difference at event"), "%s", p.out);
    char path[4096];
    snprintf(path, sizeof path, "%s", replay_of(p.out));
    child_ran_free(&p);
    /* Its replay reproduces when two runs of the file disagree. */
    p = HARNESS("replay", path);
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "reproduced: nondeterminism, two runs gave hashes"), "%s",
                       p.out);
    child_ran_free(&p);
}

Test(cli, sometimes_never_reached_is_an_assertion)
{
    child_ran p = HARNESS("run", "selftest_unreached", "--seeds", "0..4");
    cr_assert_eq(p.status, 20, "%s", p.out); /* 10 + assertion */
    cr_assert_not_null(strstr(p.out, "pl_sometimes(\"the rare branch runs\")"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "never even reached"), "%s", p.out);
    child_ran_free(&p);
    /* The other scenarios of the harness do not answer for this site. */
    p = HARNESS("run", "selftest_assert", "--seeds", "0..0");
    cr_assert_null(strstr(p.out, "the rare branch runs"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, sometimes_never_true_is_an_assertion)
{
    child_ran p = HARNESS("run", "selftest_sometimes", "--seeds", "0..9", "-j", "2");
    cr_assert_eq(p.status, 10 + 10, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING assertion in selftest_sometimes (seeds 0..9)"),
                       "%s", p.out);
    cr_assert_not_null(strstr(p.out, "pl_sometimes(\"the impossible happens\")"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "evaluated 10 times"), "%s", p.out);
    child_ran_free(&p);
    /* Workers that hand their seeds on still count every evaluation. */
    p = HARNESS("run", "selftest_sometimes", "--seeds", "0..9", "-j", "2", "--recycle-seeds", "3");
    cr_assert_eq(p.status, 10 + 10, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "evaluated 10 times"), "%s", p.out);
    child_ran_free(&p);
    /* A shard sees part of the campaign: not judged, merge judges it. */
    p = HARNESS("run", "selftest_sometimes", "--seeds", "0..9", "--shard", "1/2");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "pl_sometimes: not judged: shard 1/2 of seeds 0..9"), "%s",
                       p.out);
    child_ran_free(&p);
}

/* Runs selftest_assert until a finding; returns its replay path. */
static void assert_finding(char *path, size_t len)
{
    child_ran p = HARNESS("run", "selftest_assert", "--seeds", "0..199");
    cr_assert_eq(p.status, 10 + 10, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING assertion in selftest_assert (seed "), "%s",
                       p.out);
    cr_assert_not_null(strstr(p.out, "a buggify site fired"), "%s", p.out);
    /* Raised by the scenario's check: the task line says so, not "none". */
    cr_assert_not_null(strstr(p.out, "  task: no task was running: the finding was raised by "
                                     "the run's end checks"),
                       "%s", p.out);
    snprintf(path, len, "%s", replay_of(p.out));
    child_ran_free(&p);
}

/* The "build ..." line of a replay file, without its newline. */
static void build_line_of(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[1024];
    buf[0] = '\0';
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "build ", 6) == 0) {
            snprintf(buf, len, "%.*s", (int)strcspn(line, "\n"), line);
            break;
        }
    }
    fclose(f);
    cr_assert_neq(buf[0], '\0', "no build line in %s", path);
}

/* A crash's replay is written by the parent, a finding's by the run's
 * worker through the library: both name the build alike. */
Test(cli, crash_and_finding_replays_record_the_same_build)
{
    char finding[4096], a[1024], b[1024];
    assert_finding(finding, sizeof finding);
    build_line_of(finding, a, sizeof a);
    child_ran p = HARNESS("run", "selftest_crash", "--seeds", "0..199", "-j", "1", "--no-shrink");
    cr_assert_eq(p.status, 10 + 12, "%s%s", p.out, p.err);
    build_line_of(replay_of(p.out), b, sizeof b);
    child_ran_free(&p);
    cr_assert_str_eq(a, b);
}

Test(cli, replay_reproduces_a_finding_with_its_hash)
{
    char path[4096];
    assert_finding(path, sizeof path);
    child_ran p = HARNESS("replay", path);
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "expects assertion"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "FINDING assertion in selftest_assert"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "reproduced: assertion, hash "), "%s", p.out);
    child_ran_free(&p);

    p = HARNESS("replay", "--quiet", path, path);
    cr_assert_eq(p.status, 0);
    cr_assert_eq(count_lines(p.out), 2, "%s", p.out);
    child_ran_free(&p);
}

Test(cli, replay_traces)
{
    char path[4096];
    assert_finding(path, sizeof path);
    child_ran p = HARNESS("replay", path, "--trace", "--chrome-trace", "trace.json");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, " poll "), "a timeline: %s", p.out);
    cr_assert_not_null(strstr(p.out, "flipper"), "%s", p.out);
    child_ran_free(&p);
    FILE *f = fopen("trace.json", "r");
    cr_assert_not_null(f);
    char head[2] = "";
    cr_assert_eq(fread(head, 1, 1, f), 1);
    fclose(f);
    cr_assert_eq(head[0], '[');
}

/* The timeline of `text` from its first " spawn " line on. */
static const char *timeline_of(const char *text)
{
    const char *p = strstr(text, " spawn ");
    cr_assert_not_null(p, "no timeline in: %s", text);
    while (p > text && p[-1] != '\n') {
        p--;
    }
    return p;
}

Test(cli, run_traces_one_seed_as_replay_does)
{
    char path[4096];
    child_ran a = HARNESS("run", "selftest_assert", "--seeds", "0..199", "--no-shrink");
    uint64_t seed = finding_seed(a.out);
    snprintf(path, sizeof path, "%s", replay_of(a.out));
    child_ran_free(&a);
    char seed_text[32];
    snprintf(seed_text, sizeof seed_text, "%" PRIu64, seed);
    child_ran r = HARNESS("replay", path, "--trace");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    child_ran p = HARNESS("run", "selftest_assert", "--seed", seed_text, "--trace", "--no-shrink",
                     "--chrome-trace", "run.json");
    cr_assert_eq(p.status, 10 + PL_FINDING_ASSERTION, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING assertion"), "%s", p.out);
    /* The same function prints both: the same lines, to the end. */
    const char *want = timeline_of(r.out);
    const char *got = timeline_of(p.out);
    cr_assert_eq(strncmp(got, want, strlen(want)), 0, "run:\n%s\nreplay:\n%s", got, want);
    cr_assert_not_null(strstr(p.out, "chrome trace: run.json"), "%s", p.out);
    FILE *f = fopen("run.json", "r");
    cr_assert_not_null(f);
    char head[2] = "";
    cr_assert_eq(fread(head, 1, 1, f), 1);
    fclose(f);
    cr_assert_eq(head[0], '[');
    child_ran_free(&p);
    child_ran_free(&r);

    /* A clean seed has a timeline too. */
    p = HARNESS("run", "selftest_clean", "--seed", "5", "--trace");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(timeline_of(p.out), " complete "), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, run_trace_of_a_crashing_seed_reports_the_crash)
{
    child_ran p = HARNESS("run", "selftest_crash", "--seeds", "0..50", "--no-shrink", "-q");
    uint64_t seed = finding_seed(p.out);
    child_ran_free(&p);
    char seed_text[32];
    snprintf(seed_text, sizeof seed_text, "%" PRIu64, seed);
    p = HARNESS("run", "selftest_crash", "--seed", seed_text, "--trace", "--no-shrink");
    cr_assert_eq(p.status, 10 + PL_FINDING_CRASH, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING crash"), "%s", p.out);
    /* Killed by SIGSEGV, or exited 1 when a sanitizer caught it; the
     * timeline up to the crash all the same (its crash ring). */
    cr_assert_not_null(strstr(p.out, ": the traced run's process "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "  the traced run's process died in 'crasher' (#1), poll "),
                       "%s", p.out);
    /* The crash ring keeps spawn sites too. */
    cr_assert_not_null(strstr(p.out, " spawn        crasher#1    parent=- at selftest.c:"), "%s",
                       p.out);
    child_ran_free(&p);
}

Test(cli, replay_breaks_at_a_step_with_sigtrap)
{
    char path[4096];
    assert_finding(path, sizeof path);
    struct rlimit no_core = {0, 0};
    cr_assert_eq(setrlimit(RLIMIT_CORE, &no_core), 0);
    child_ran t = HARNESS("replay", path, "--trace");
    cr_assert_eq(t.status, 0, "%s%s", t.out, t.err);
    /* The task the timeline polls at step 4 and when (its line
     * "       4    TIMEms poll         NAME#ID ..."). */
    const char *line = strstr(t.out, "\n       4 ");
    cr_assert_not_null(line, "%s", t.out);
    char time[32];
    cr_assert_eq(sscanf(line, " %*u %31[0-9.]ms", time), 1, "%s", line);
    line = strstr(line, " poll ");
    cr_assert_not_null(line);
    char name[64];
    unsigned id;
    cr_assert_eq(sscanf(line, " poll %63[^#]#%u", name, &id), 2, "%s", line);

    child_ran p = HARNESS("replay", path, "--break-at", "4");
    cr_assert_eq(p.status, 128 + SIGTRAP, "%s%s", p.out, p.err);
    char want[160];
    snprintf(want, sizeof want, "pollen: break at step 4: '%s' (#%u) is polled next, at %s ms\n",
             name, id, time);
    cr_assert_not_null(strstr(p.err, want), "%s", p.err);
    /* Stopped there: no verdict. */
    cr_assert_null(strstr(p.out, "reproduced"), "%s", p.out);
    child_ran_free(&p);

    /* Past the run's end: the replay finishes and says so. */
    uint64_t steps = number_before(strstr(t.out, ", step ") + 7, "\n");
    char past[32];
    snprintf(past, sizeof past, "%" PRIu64, steps + 1);
    p = HARNESS("replay", path, "--break-at", past);
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    snprintf(want, sizeof want, "--break-at %" PRIu64 ": never reached: the run ended at step "
             "%" PRIu64, steps + 1, steps);
    cr_assert_not_null(strstr(p.out, want), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "reproduced: assertion"), "%s", p.out);
    child_ran_free(&p);
    child_ran_free(&t);
}

Test(cli, a_scenario_expecting_no_such_kind_or_badly_named_is_refused)
{
    cr_assert_eq(setenv("POLLEN_HARNESS_CASE", "bad_expect", 1), 0);
    child_ran p = HARNESS("list");
    cr_assert_eq(p.status, 2, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "scenario 'selftest_bad_expect' expects 'lost_wakeups', "
                                     "which is no finding kind; did you mean 'lost_wakeup'?"),
                       "%s", p.err);
    child_ran_free(&p);
    cr_assert_eq(setenv("POLLEN_HARNESS_CASE", "bad_name", 1), 0);
    p = HARNESS("run", "selftest_clean", "--seed", "1");
    cr_assert_eq(p.status, 2, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "scenario name 'Selftest-Bad' is not [a-z0-9_]+"), "%s",
                       p.err);
    cr_assert_eq(p.out[0], '\0', "nothing ran: %s", p.out);
    child_ran_free(&p);
}

/* `why` on a finding whose task is parked in both branches of a join:
 * the finding's task is among those involved, drawn as a tree with both
 * branches in the text and nested in the JSON; and `why --time`. */
Test(cli, why_draws_the_finding_task_parked_in_a_join)
{
    child_ran p = HARNESS("run", "selftest_join_tree", "--seeds", "0..99");
    cr_assert_eq(p.status, 12, "%s%s", p.out, p.err);
    char shrunk[4096];
    const char *replay = replay_of(p.out);
    size_t stem = strlen(replay) - strlen(".replay");
    snprintf(shrunk, sizeof shrunk, "%.*s.shrunk.replay", (int)stem, replay);
    child_ran_free(&p);
    p = HARNESS("why", shrunk, "--quiet");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "    'joiner' (#2), the finding's task, spawned at "
                                     "cli_harness.c:"),
                       "%s", p.out);
    const char *tree = strstr(p.out, "        tree_joiner (cli_harness.c:");
    cr_assert_not_null(tree, "%s", p.out);
    cr_assert_not_null(strstr(tree, " in tree_joiner_poll)\n"
                                    "        `- pl_join2\n"
                                    "           +- flag_wait\n"
                                    "           `- sleep\n"),
                       "%s", p.out);
    child_ran_free(&p);
    p = HARNESS("why", shrunk, "--quiet", "--json");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_eq(check_json_lines(p.out), 1, "%s", p.out);
    cr_assert_not_null(strstr(p.out, "\"role\":\"the finding's task\""), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "\"stopped\":false,"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "\"future\":\"pl_join2\",\"file\":null,\"line\":null,"
                                     "\"children\":[{\"function\":\"flag_wait\",\"future\":"
                                     "\"flag_wait\",\"file\":null,\"line\":null,\"children\":[]},"
                                     "{\"function\":\"sleep\""),
                       "%s", p.out);
    child_ran_free(&p);
    /* --time shorter than a millisecond stops after the first prefix: the
     * analysis says so and still exits 0 with what it measured. */
    p = HARNESS("why", shrunk, "--quiet", "--time", "1us");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "    k=0   "), "%s", p.out);
    cr_assert_null(strstr(p.out, "    k=3   "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "  point of no return: not measured (--time ran out)\n"),
                       "%s", p.out);
    cr_assert_not_null(strstr(p.out, "(the first 0 of 2 departures: --time ran out)"), "%s",
                       p.out);
    child_ran_free(&p);
}

Test(cli, a_known_bug_not_found_exits_4)
{
    cr_assert_eq(setenv("POLLEN_HARNESS_CASE", "missed", 1), 0);
    child_ran p = HARNESS("run", "selftest_missed", "--seeds", "0..19");
    cr_assert_eq(p.status, 4, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "expected deadlock, not found"), "%s", p.out);
    child_ran_free(&p);
    p = HARNESS("run", "selftest_missed", "--strategy", "bounded:1");
    cr_assert_eq(p.status, 4, "%s%s", p.out, p.err);
    child_ran_free(&p);
    /* One shard sees part of the range only: no verdict there. */
    p = HARNESS("run", "selftest_missed", "--seeds", "0..19", "--shard", "1/2");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    child_ran_free(&p);
    /* A clean scenario without .expect stays 0. */
    p = HARNESS("run", "selftest_clean", "--seeds", "0..19");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    child_ran_free(&p);
}

Test(cli, a_setup_error_has_its_own_status_and_no_replay_or_shrink)
{
    cr_assert_eq(setenv("POLLEN_HARNESS_CASE", "setup_error", 1), 0);
    child_ran p = HARNESS("run", "selftest_setup_error", "--seeds", "0..9");
    cr_assert_eq(p.status, 5, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "SETUP ERROR in selftest_setup_error (seed 0)"), "%s",
                       p.out);
    cr_assert_not_null(strstr(p.out, "scenario setup failed: "), "%s", p.out);
    cr_assert_null(strstr(p.out, "FINDING"), "%s", p.out);
    cr_assert_null(strstr(p.out, "shrunk"), "%s", p.out);
    cr_assert_null(strstr(p.out, ".replay"), "%s", p.out);
    struct stat st;
    cr_assert_neq(stat("pollen-out/selftest_setup_error-seed0.replay", &st), 0);
    child_ran_free(&p);
    p = HARNESS("run", "selftest_setup_error", "--strategy", "bounded:1");
    cr_assert_eq(p.status, 5, "%s%s", p.out, p.err);
    child_ran_free(&p);
}

/* A setup error says which call refused and why, prints no task line
 * (nothing ran), and the summary counts it apart from the findings. */
Test(cli, a_setup_error_names_the_call_that_refused)
{
    cr_assert_eq(setenv("POLLEN_HARNESS_CASE", "bad_host", 1), 0);
    child_ran p = HARNESS("run", "selftest_bad_host", "--seeds", "0..9");
    cr_assert_eq(p.status, 5, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "scenario setup failed: invalid argument: pl_sim_node_add: "
                                     "host '192.168.0.5' of node 'db' is outside 10.0.0.0/8"),
                       "%s", p.out);
    cr_assert_null(strstr(p.out, "no task was running"), "%s", p.out);
    cr_assert_null(strstr(p.out, "task:"), "%s", p.out);
    const char *summary = strstr(p.out, "\nselftest_bad_host: ");
    cr_assert_not_null(summary, "%s", p.out);
    cr_assert_not_null(strstr(summary, " run"), "%s", p.out);
    cr_assert_not_null(strstr(summary, ", 0 findings,"), "%s", p.out);
    cr_assert_not_null(strstr(summary, "; 1 setup error (the scenario never ran)"), "%s", p.out);
    child_ran_free(&p);
    p = HARNESS("run", "selftest_bad_host", "--seeds", "0..9", "--json");
    cr_assert_eq(p.status, 5, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "\"setup_error\":true"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "\"findings\":0,"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "\"setup_errors\":1,"), "%s", p.out);
    child_ran_free(&p);
    /* A setup that fails on its own says so, not a call's reason. */
    cr_assert_eq(setenv("POLLEN_HARNESS_CASE", "setup_error", 1), 0);
    p = HARNESS("run", "selftest_setup_error", "--seeds", "0..9");
    cr_assert_not_null(
        strstr(p.out, "scenario setup failed: invalid argument (returned by the scenario's setup)"),
        "%s", p.out);
    child_ran_free(&p);
}

/* A long shrink account is cut after a whole line and says how many
 * lines were left out and where they all are. */
Test(cli, a_long_account_is_cut_at_a_line)
{
    char text[8192] = "";
    size_t used = 0;
    for (int i = 0; i < 100; i++) {
        used += (size_t)snprintf(text + used, sizeof text - used,
                                 "    step %d: schedule: polled 'worker%02d' first\n", i, i);
    }
    char dst[512];
    pl__cli_cut_lines(dst, sizeof dst, text, "  ", "out/x.shrunk.replay");
    cr_assert_lt(strlen(dst), sizeof dst);
    const char *closing = strstr(dst, "  ... ");
    cr_assert_not_null(closing, "%s", dst);
    cr_assert(closing == dst || closing[-1] == '\n', "%s", dst); /* after a whole line */
    cr_assert_eq(strncmp(dst, text, (size_t)(closing - dst)), 0);
    unsigned more = 0, total = 0;
    cr_assert_eq(sscanf(closing, "  ... %u more of %u lines", &more, &total), 2, "%s", closing);
    cr_assert_eq(total, 100u);
    size_t shown = 0;
    for (const char *p = dst; p < closing; p++) {
        shown += *p == '\n';
    }
    cr_assert_eq(more, 100u - shown);
    cr_assert_not_null(strstr(closing, "out/x.shrunk.replay holds them all in its header\n"));
    /* Text that fits is copied whole. */
    pl__cli_cut_lines(dst, sizeof dst, "a\nb\n", "  ", "r");
    cr_assert_str_eq(dst, "a\nb\n");
}

static int cut_into_nothing(void *arg)
{
    (void)arg;
    char dst[1];
    pl__cli_cut_lines(dst, 0, "a\n", "  ", "r");
    return 0;
}

/* A precondition cli.h states (dst_len > 0) is asserted in every build
 * type: the expression and the CLI's file and line on stderr, then
 * abort. */
Test(cli, a_broken_precondition_names_itself_and_aborts)
{
    child_ran d = child_run(cut_into_nothing, NULL, -1);
    cr_assert_eq(d.status, 128 + SIGABRT, "%d: %s", d.status, d.err);
    cr_assert_not_null(strstr(d.err, "pollen: assertion failed: "), "%s", d.err);
    cr_assert_not_null(strstr(d.err, "dst_len > 0"), "%s", d.err);
    cr_assert_not_null(strstr(d.err, "cli/text.c:"), "%s", d.err);
    child_ran_free(&d);
}

Test(cli, replay_says_where_a_changed_file_differs)
{
    char path[4096];
    assert_finding(path, sizeof path);
    /* Another scenario under the same decisions: the run differs. */
    child_ran p = HARNESS("replay", path, "--scenario", "selftest_clean");
    cr_assert_eq(p.status, 1, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "DIFFERS: expected assertion, got no finding"), "%s",
                       p.out);
    child_ran_free(&p);
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
    child_ran_free(&p);
}

Test(cli, bad_replay_files_exit_3)
{
    FILE *f = fopen("broken.replay", "w");
    cr_assert_not_null(f);
    fputs("pollen-replay 1\nseed banana\n", f);
    fclose(f);
    child_ran p = POLLEN("replay", "broken.replay");
    cr_assert_eq(p.status, 3, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "broken.replay"), "%s", p.err);
    child_ran_free(&p);
    p = POLLEN("replay", "missing.replay");
    cr_assert_eq(p.status, 3);
    cr_assert_not_null(strstr(p.err, "cannot open 'missing.replay'"), "%s", p.err);
    child_ran_free(&p);
    f = fopen("nameless.replay", "w");
    cr_assert_not_null(f);
    fputs("pollen-replay 1\nseed 1\ndecisions 0\nend\n", f);
    fclose(f);
    p = POLLEN("replay", "nameless.replay");
    cr_assert_eq(p.status, 3, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "nameless.replay names no scenario; pass --scenario NAME"),
                       "%s", p.err);
    child_ran_free(&p);
}

Test(cli, raw_fuzzer_inputs_need_a_scenario)
{
    FILE *f = fopen("crash-123", "w");
    cr_assert_not_null(f);
    fputs("\x01\x02\x03\x04", f);
    fclose(f);
    child_ran p = POLLEN("replay", "crash-123");
    cr_assert_eq(p.status, 2);
    cr_assert_not_null(strstr(p.err, "--scenario"), "%s", p.err);
    child_ran_free(&p);
    /* A clean scenario: the input reproduces no failure. */
    p = POLLEN("replay", "crash-123", "--scenario", "selftest_clean");
    cr_assert_eq(p.status, 1, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "raw fuzzer input, 4 bytes"), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "no finding"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, first_finding_is_shrunk_unless_told_not_to)
{
    child_ran p = HARNESS("run", "selftest_assert", "--seeds", "0..199", "--json");
    cr_assert_eq(p.status, 20, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "  shrunk assertion: "), "%s", p.err);
    cr_assert_not_null(strstr(p.err, "  reproduce shrunk: "), "%s", p.err);
    cr_assert_not_null(strstr(p.out, ".shrunk.replay\""), "%s", p.out);
    child_ran_free(&p);
    p = HARNESS("run", "selftest_assert", "--seeds", "0..199", "--no-shrink", "--json");
    cr_assert_eq(p.status, 20);
    cr_assert_null(strstr(p.err, "shrunk"), "%s", p.err);
    cr_assert_not_null(strstr(p.out, "\"shrunk\":null"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, bounded_strategy_enumerates_schedules)
{
    child_ran p = POLLEN("run", "selftest_clean", "--strategy", "bounded:2");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "selftest_clean: bounded:2, "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "verified: all "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, " explored, no finding, over decision kinds schedule, "
                                     "io_order, timer_order, timer_late, spurious_wake, "
                                     "wake_delay, cancel, io_fault, io_latency, buggify_site, "
                                     "buggify_fire, probe, disk_latency, disk_fault, "
                                     "disk_corrupt, disk_lose, link_latency, link_loss, "
                                     "link_dup, link_reorder, link_reset, partition, clog, "
                                     "node_crash, crash_silence, thread_switch, "
                                     "cond_spurious, node_pause, node_isolate, "
                                     "random (3 values a draw), clock_offset, clock_drift, "
                                     "clock_jump; "
                                     "not explored: spurious_poll (off)\n"),
                       "%s", p.out);
    child_ran_free(&p);
    /* The claim names the kinds its knobs left off. */
    p = POLLEN("run", "selftest_clean", "--strategy", "bounded:2", "--knobs",
               "cancel=off,io_fault=off");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "; not explored: spurious_poll (off), cancel (off), "
                                     "io_fault (off)\n"),
                       "%s", p.out);
    child_ran_free(&p);
    /* The default campaign explores cancellation of abortable tasks: with
     * the ordering kinds off, one cancellation finds the lost permit, and
     * only with cancel off too is nothing found. */
    p = POLLEN("run", "bug_abort_permit", "--strategy", "bounded:1", "--knobs",
               "schedule=off,timer_order=off", "--no-shrink");
    cr_assert_eq(p.status, 13, "%s%s", p.out, p.err);
    child_ran_free(&p);
    p = POLLEN("run", "bug_abort_permit", "--strategy", "bounded:1", "--knobs",
               "schedule=off,timer_order=off,cancel=off", "--no-shrink");
    /* Exhausted without its expected bug: the known-bug status. */
    cr_assert_eq(p.status, 4, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "not explored: schedule (off), timer_order (off), "
                                     "spurious_poll (off), cancel (off)\n"),
                       "%s", p.out);
    child_ran_free(&p);
    /* A buggify site must be enabled, then fire: two deviations. */
    p = HARNESS("run", "selftest_assert", "--strategy", "bounded:2", "--no-shrink");
    cr_assert_eq(p.status, 20, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING assertion in selftest_assert (schedule with 2 "
                                     "deviations)"),
                       "%s", p.out);
    cr_assert(file_exists("pollen-out/selftest_assert-bounded2.replay"));
    child_ran_free(&p);
    p = HARNESS("replay", "pollen-out/selftest_assert-bounded2.replay");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    child_ran_free(&p);
    /* A crash inside the exploration still comes out as a finding. */
    p = POLLEN("run", "selftest_crash", "--strategy", "bounded:2");
    cr_assert_eq(p.status, 22, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "run selftest_crash --strategy bounded:2"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, real_backend_hang_is_a_livelock)
{
    child_ran p = HARNESS("run", "selftest_hang", "--real", "--time", "300ms");
    cr_assert_eq(p.status, 19, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "FINDING livelock in selftest_hang (real backend)"), "%s",
                       p.out);
    cr_assert_not_null(strstr(p.out, "reproduce: "), "%s", p.out);
    child_ran_free(&p);
}

/* Teardown runs after the tasks are cancelled and before the executor is
 * destroyed, in both modes: releasing a task handle there is clean (it
 * crashed on the real backend, which destroyed the executor first). */
Test(cli, teardown_may_release_a_handle_in_both_modes)
{
    child_ran p = HARNESS("run", "selftest_teardown", "--seeds", "0..9");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "selftest_teardown: 10 runs"), "%s", p.out);
    child_ran_free(&p);
    p = HARNESS("run", "selftest_teardown", "--real");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "selftest_teardown: real backend ok"), "%s", p.out);
    child_ran_free(&p);
}

Test(cli, shrink_writes_a_smaller_replay)
{
    char path[4096];
    assert_finding(path, sizeof path);
    child_ran p = HARNESS("shrink", path, "-o", "small.replay");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "shrunk assertion: "), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "reproduce: "), "%s", p.out);
    cr_assert(file_exists("small.replay"));
    child_ran_free(&p);
    p = HARNESS("replay", "small.replay");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    child_ran_free(&p);
    p = POLLEN("shrink", "missing.replay");
    cr_assert_eq(p.status, 3);
    cr_assert_not_null(strstr(p.err, "missing.replay"), "%s", p.err);
    child_ran_free(&p);
}

/* --poll-cost reaches the run and its replay file, and the file alone
 * reproduces the run (replaying it at another cost does not). */
Test(cli, poll_cost_is_recorded_and_replayed)
{
    child_ran p = POLLEN("run", "bug_spin_wait", "--seed", "3", "--poll-cost", "50ns", "--no-shrink");
    cr_assert_eq(p.status, 19, "%s%s", p.out, p.err);
    char path[4096];
    snprintf(path, sizeof path, "%s", replay_of(p.out));
    child_ran_free(&p);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[256];
    bool found = false;
    while (fgets(line, sizeof line, f) != NULL) {
        found = found || strcmp(line, "poll-cost-ns 50\n") == 0;
    }
    fclose(f);
    cr_assert(found, "%s has no poll-cost-ns line", path);
    p = POLLEN("replay", path);
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    child_ran_free(&p);
    p = POLLEN("replay", path, "--poll-cost", "0");
    cr_assert_eq(p.status, 1, "%s%s", p.out, p.err);
    child_ran_free(&p);
    p = POLLEN("run", "bug_spin_wait", "--poll-cost", "2s");
    cr_assert_eq(p.status, 2, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "--poll-cost"), "%s", p.err);
    child_ran_free(&p);
}

Test(cli, strategies_say_what_they_promise)
{
    child_ran p = POLLEN("run", "selftest_clean", "--seeds", "0..9", "--strategy", "pct:2");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "selftest_clean: pct:2 guarantee: each run finds a "
                                     "scheduling bug of depth 2 within the first k schedule "
                                     "steps with probability >= 1/(n*k^1) = "),
                       "%s", p.out);
    cr_assert_not_null(strstr(p.out, ", the longest of the production run and 8 PCT runs); "),
                       "%s", p.out);
    cr_assert_not_null(strstr(p.out, "PCT orders schedule decisions only: every other decision "
                                     "kind was drawn at random, with no such bound"),
                       "%s", p.out);
    /* One task: every run finds a depth-1 bug, so missing has probability
     * 0, which (1-p)^runs underflows to; the claim is not "<= 0". */
    cr_assert_not_null(strstr(p.out, "all 10 runs miss such a bug with probability < 1e-300."),
                       "%s", p.out);
    child_ran_free(&p);
    p = POLLEN("run", "fix_abort_permit", "--seeds", "0..99", "--strategy", "pct:3:50");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "(n = 4 tasks, k = 50 schedule steps, as given); all 100 "
                                     "runs miss such a bug with probability <= "),
                       "%s", p.out);
    child_ran_free(&p);
    p = HARNESS("run", "selftest_assert", "--seeds", "0..199", "--strategy", "swarm",
                "--shrink-time", "2s");
    cr_assert_eq(p.status, 20, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "  swarm knobs: schedule="), "%s", p.out);
    cr_assert_not_null(strstr(p.out, "  shrunk assertion: "), "%s", p.out);
    child_ran_free(&p);
    p = POLLEN("run", "selftest_clean", "--shrink-time", "0s");
    cr_assert_eq(p.status, 2, "%s%s", p.out, p.err);
    child_ran_free(&p);
}

/* --waker-rotation off runs as production does (one waker per task):
 * the stale waker of bug_retry_stale is then no finding, in run, replay
 * and shrink alike; a bad value is a usage error. */
Test(cli, waker_rotation_off_in_run_replay_and_shrink)
{
    child_ran p = POLLEN("run", "bug_retry_stale", "--seed", "0", "--no-shrink");
    cr_assert_eq(p.status, 10 + 4, "%s%s", p.out, p.err);
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", replay_of(p.out));
    child_ran_free(&p);

    p = POLLEN("run", "bug_retry_stale", "--seed", "0", "--waker-rotation", "off");
    cr_assert_eq(p.status, 4, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "expected stale_waker, not found"), "%s", p.out);
    child_ran_free(&p);

    p = POLLEN("replay", copy, "--waker-rotation=off");
    cr_assert_eq(p.status, 1, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.out, "DIFFERS: expected stale_waker, got no finding"), "%s",
                       p.out);
    child_ran_free(&p);
    p = POLLEN("replay", copy, "--waker-rotation=on");
    cr_assert_eq(p.status, 0, "%s%s", p.out, p.err);
    child_ran_free(&p);

    p = POLLEN("shrink", copy, "--waker-rotation", "off", "-o", "rot.shrunk.replay");
    cr_assert_eq(p.status, 3, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "do not reproduce stale_waker"), "%s", p.err);
    child_ran_free(&p);

    p = POLLEN("run", "bug_retry_stale", "--waker-rotation", "maybe");
    cr_assert_eq(p.status, 2, "%s%s", p.out, p.err);
    cr_assert_not_null(strstr(p.err, "bad value for '--waker-rotation': 'maybe'"), "%s", p.err);
    child_ran_free(&p);
}
