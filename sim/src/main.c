/* sim/src/main.c: pl_main, the `pollen` command line.
 *
 * Commands: list, run, replay, shrink (plus help and version). The
 * simulator itself is deterministic and single-process; this file is the
 * one place that deals with processes, pipes, signals and wall time, so
 * that a crash or a hang in user code costs a finding, never the whole
 * campaign.
 *
 * Process model of `run`: the parent forks --jobs workers per scenario.
 * Each worker owns an arithmetic progression of seeds (cli.h), runs them
 * in increasing order in-process with pl_sim_run, writes replay files for
 * its findings and reports every step to the parent over a pipe as small
 * binary messages ("starting seed S", "done S with hash H", a finding,
 * pl_sometimes counters at the end). The parent never runs user code: it
 * polls the pipes, applies the watchdog and --time, prints progress and
 * findings, and reruns a seed alone in a fresh child when a worker died
 * on it, so the crash is reported with the decisions that led to it.
 *
 * A worker's stdout is a capture file, not the parent's: the parent's
 * stdout carries pollen's output alone (under --json, its JSON lines),
 * and what user code printed goes with the finding of its seed. A worker
 * hands its remaining seeds to a fresh process after --recycle-seeds
 * seeds or past --worker-rss, and says when its memory grows seed after
 * seed. When --time runs out no seed starts, but a running one finishes
 * or meets the watchdog: a hang is judged, not left for every resumed
 * campaign to stall on. Workers ignore SIGPIPE like the parent, which
 * ends the run quietly when its stdout is closed.
 *
 * Stopping at the first finding stays deterministic with several jobs:
 * the parent keeps the lowest finding seed L and stops only workers that
 * start a seed above L. Every worker runs its seeds in increasing order,
 * so all seeds below L still run and the reported finding is the one a
 * single job would have reported.
 */
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
#include "budget.h"
#include "cli.h"
#include "decide.h"
#include "digits.h"
#include "hashset.h"
#include "replay.h"
#include "shrink.h"
#include "sim_internal.h"
#include "strategy.h"
#include "trace.h"


/* Process exit statuses. 10 + pl_finding_kind for findings of `run`. */
enum {
    ST_CLEAN = 0,
    ST_DIFFERS = 1,
    ST_USAGE = 2,
    ST_INTERNAL = 3,
    ST_FINDING_BASE = 10,
    ST_INTERRUPTED = 130,
    ST_OUTPUT_CLOSED = 141, /* 128 + SIGPIPE, what a shell reports for `| head` */
};

#define DEFAULT_SEED_HI 999u
#define DEFAULT_OUT_DIR "pollen-out"
#define DEFAULT_WATCHDOG_NS (10 * PL_S)
#define DEFAULT_SHRINK_NS (10 * PL_S)
#define DEFAULT_REAL_LIMIT_NS (60 * PL_S)
#define PROGRESS_TTY_MS 1000
#define PROGRESS_PIPE_MS 10000
#define JOBS_DEFAULT_MAX 64u
#define OUTPUT_TAIL_MAX 4096u /* bytes of a seed's stdout shown with its finding */
#define DEFAULT_RECYCLE_SEEDS 10000u
#define DEFAULT_WORKER_RSS (UINT64_C(1) << 30)
#define GROWTH_WINDOW 64u     /* seeds over which memory growth is judged */
#define GROWTH_MIN_BYTES (UINT64_C(64) << 10)

/* ======================================================================
 * Pure helpers (declared in cli.h, unit-tested)
 * ==================================================================== */

int pl__cli_parse_u64(const char *text, uint64_t *out)
{
    if (text == NULL || !parse_decimal(text, strlen(text), out)) {
        return PL_EINVAL;
    }
    return 0;
}

int pl__cli_parse_seed(const char *text, uint64_t *out)
{
    if (text == NULL) {
        return PL_EINVAL;
    }
    size_t len = strlen(text);
    if (len == 40) {
        for (size_t i = 0; i < len; i++) {
            if (hex_digit(text[i]) < 0) {
                return PL_EINVAL;
            }
        }
        return parse_hex(text, 16, out) ? 0 : PL_EINVAL;
    }
    if (len > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        return parse_hex(text + 2, len - 2, out) ? 0 : PL_EINVAL;
    }
    return pl__cli_parse_u64(text, out);
}

/* Splits text at the first `sep`: what precedes it is copied into left
 * (NUL-terminated, so it can be parsed on its own), *right points after
 * it. False when sep is missing or the left part does not fit. */
static bool split_at(const char *text, const char *sep, char *left, size_t left_size,
                     const char **right)
{
    const char *at = text != NULL ? strstr(text, sep) : NULL;
    if (at == NULL || (size_t)(at - text) >= left_size) {
        return false;
    }
    memcpy(left, text, (size_t)(at - text));
    left[at - text] = '\0';
    *right = at + strlen(sep);
    return true;
}

int pl__cli_parse_seeds(const char *text, uint64_t *lo, uint64_t *hi)
{
    char left[64];
    const char *right;
    uint64_t a, b;
    if (!split_at(text, "..", left, sizeof left, &right) || pl__cli_parse_seed(left, &a) != 0 ||
        pl__cli_parse_seed(right, &b) != 0) {
        return PL_EINVAL;
    }
    if (a > b) {
        return PL_EINVAL;
    }
    *lo = a;
    *hi = b;
    return 0;
}

static pl_time unit_ns(const char *unit)
{
    static const struct {
        const char *name;
        pl_time ns;
    } units[] = {{"ns", 1},   {"us", PL_US},    {"ms", PL_MS},
                 {"s", PL_S}, {"m", 60 * PL_S}, {"h", 3600 * PL_S}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].name) == 0) {
            return units[i].ns;
        }
    }
    return 0;
}

int pl__cli_parse_duration(const char *text, pl_time *out_ns)
{
    const pl_time max_ns = (pl_time)10 * 366 * 24 * 3600 * PL_S;
    const char *p = text;
    uint64_t whole = 0, frac = 0, frac_scale = 1;
    if (p == NULL || *p < '0' || *p > '9') {
        return PL_EINVAL;
    }
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > (uint64_t)max_ns / 10) {
            return PL_EINVAL;
        }
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9') {
            return PL_EINVAL;
        }
        for (; *p >= '0' && *p <= '9'; p++) {
            if (frac_scale == 1000000000u) {
                return PL_EINVAL;
            }
            frac = frac * 10 + (uint64_t)(*p - '0');
            frac_scale *= 10;
        }
    }
    pl_time unit = unit_ns(p);
    if (unit == 0 || whole > (uint64_t)(max_ns / unit)) {
        return PL_EINVAL;
    }
    /* frac * unit overflows 64 bits (9 digits of hours reach 3.6e21), so
     * split unit = hi * frac_scale + lo: frac * hi < unit and
     * frac * lo < frac_scale^2 <= 1e18 both fit, and the sum is exactly
     * floor(frac * unit / frac_scale). */
    uint64_t hi = (uint64_t)unit / frac_scale;
    uint64_t lo = (uint64_t)unit % frac_scale;
    uint64_t part = frac * hi + frac * lo / frac_scale;
    /* whole * unit <= max_ns and part < unit: no overflow before the
     * range check. */
    pl_time ns = (pl_time)whole * unit + (pl_time)part;
    if (ns <= 0 || ns > max_ns) {
        return PL_EINVAL;
    }
    *out_ns = ns;
    return 0;
}

int pl__cli_parse_shard(const char *text, uint32_t *k, uint32_t *n)
{
    char left[16];
    const char *right;
    uint64_t a, b;
    if (!split_at(text, "/", left, sizeof left, &right) || pl__cli_parse_u64(left, &a) != 0 ||
        pl__cli_parse_u64(right, &b) != 0) {
        return PL_EINVAL;
    }
    if (a < 1 || a > b || b > PL__CLI_SHARDS_MAX) {
        return PL_EINVAL;
    }
    *k = (uint32_t)a;
    *n = (uint32_t)b;
    return 0;
}

static bool shell_safe(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("_-./:=,+@%", c) != NULL;
}

/* Appends c to buf (when it fits) and counts it, like snprintf does. */
static void put_char(char *buf, size_t len, size_t *n, char c)
{
    if (*n + 1 < len) {
        buf[*n] = c;
    }
    (*n)++;
}

pl__cli_slice pl__cli_slice_of(uint64_t lo, uint64_t hi, uint32_t k, uint32_t n, uint32_t j,
                               uint32_t jobs)
{
    pl__cli_slice none = {0, 1, 0, true};
    /* The shard's seeds: lo + (k - 1) + i * n for i <= shard_last. Indexes
     * rather than counts: a count of the whole seed space overflows. */
    uint64_t span = hi - lo; /* seeds in range minus one; no overflow */
    if ((uint64_t)(k - 1) > span) {
        return none;
    }
    uint64_t shard_last = (span - (k - 1)) / n;
    if (j > shard_last) {
        return none;
    }
    pl__cli_slice s;
    s.first = lo + (k - 1) + (uint64_t)j * n;
    s.stride = (uint64_t)n * jobs;
    s.last = (shard_last - j) / jobs;
    s.empty = false;
    return s;
}

bool pl__cli_slice_has(const pl__cli_slice *s, uint64_t i)
{
    return !s->empty && i <= s->last;
}

uint64_t pl__cli_slice_seed(const pl__cli_slice *s, uint64_t i)
{
    return s->first + i * s->stride;
}

pl__cli_slice pl__cli_slice_rest(const pl__cli_slice *s, uint64_t i)
{
    pl__cli_slice rest = {0, 1, 0, true};
    if (pl__cli_slice_has(s, i)) {
        rest.first = pl__cli_slice_seed(s, i);
        rest.stride = s->stride;
        rest.last = s->last - i;
        rest.empty = false;
    }
    return rest;
}

int pl__cli_slice_count_text(const pl__cli_slice *s, char *buf, size_t len)
{
    if (s->empty) {
        return snprintf(buf, len, "0");
    }
    if (s->last == UINT64_MAX) {
        return snprintf(buf, len, "18446744073709551616"); /* 2^64 */
    }
    return snprintf(buf, len, "%" PRIu64, s->last + 1);
}

int pl__cli_parse_size(const char *text, uint64_t *out_bytes)
{
    static const struct {
        const char *name;
        unsigned shift;
    } units[] = {{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
    size_t digits = text != NULL ? strspn(text, "0123456789") : 0;
    uint64_t n;
    if (digits == 0 || !parse_decimal(text, digits, &n) || n == 0) {
        return PL_EINVAL;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(text + digits, units[i].name) == 0) {
            if (n > UINT64_MAX >> units[i].shift) {
                return PL_EINVAL;
            }
            *out_bytes = n << units[i].shift;
            return 0;
        }
    }
    return PL_EINVAL;
}

size_t pl__cli_utf8_len(const unsigned char *p)
{
    if (p[0] < 0x80) {
        return 1;
    }
    /* Lead byte: sequence length and the smallest value it may encode. */
    size_t n = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    uint32_t cp = n == 2 ? p[0] & 0x1fu : n == 3 ? p[0] & 0x0fu : p[0] & 0x07u;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0; /* also stops at the NUL */
        }
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    static const uint32_t min_of[] = {0, 0, 0x80, 0x800, 0x10000};
    if (n == 0 || cp < min_of[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    return n;
}

int pl__cli_escape(const char *text, bool keep_lines, char *buf, size_t len)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0';) {
        size_t seq = pl__cli_utf8_len(p);
        bool c1 = seq == 2 && p[0] == 0xc2 && p[1] < 0xa0; /* U+0080-U+009F */
        bool kept = keep_lines && (*p == '\n' || *p == '\t');
        if (seq == 0 || c1 || ((*p < 0x20 || *p == 0x7f) && !kept)) {
            char hex[8];
            snprintf(hex, sizeof hex, "\\x%02x", *p);
            for (const char *h = hex; *h != '\0'; h++) {
                put_char(buf, len, &n, *h);
            }
            p++;
            continue;
        }
        for (size_t i = 0; i < seq; i++) {
            put_char(buf, len, &n, (char)p[i]);
        }
        p += seq;
    }
    if (len > 0) {
        buf[n < len ? n : len - 1] = '\0';
    }
    return (int)n;
}

size_t pl__cli_distance(const char *a, const char *b, size_t cap)
{
    enum { LEN_MAX = 64 };
    size_t na = strlen(a), nb = strlen(b);
    if (na > LEN_MAX || nb > LEN_MAX) {
        return cap;
    }
    size_t prev[LEN_MAX + 1], cur[LEN_MAX + 1];
    for (size_t j = 0; j <= nb; j++) {
        prev[j] = j;
    }
    for (size_t i = 1; i <= na; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            size_t m = sub < del ? sub : del;
            cur[j] = m < ins ? m : ins;
        }
        memcpy(prev, cur, sizeof prev);
    }
    return prev[nb] < cap ? prev[nb] : cap;
}

int pl__cli_shell_quote(const char *text, char *buf, size_t len)
{
    bool safe = *text != '\0';
    for (const char *p = text; *p != '\0'; p++) {
        safe = safe && shell_safe(*p);
    }
    if (safe) {
        return snprintf(buf, len, "%s", text);
    }
    size_t n = 0;
    put_char(buf, len, &n, '\'');
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '\'') {
            /* Close the quote, add an escaped quote, reopen. */
            for (const char *q = "'\\''"; *q != '\0'; q++) {
                put_char(buf, len, &n, *q);
            }
        } else {
            put_char(buf, len, &n, *p);
        }
    }
    put_char(buf, len, &n, '\'');
    if (len > 0) {
        buf[n < len ? n : len - 1] = '\0';
    }
    return (int)n;
}

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

/* Set by SIGINT in the parent of `run`: stop cleanly, keep the summary. */
static volatile sig_atomic_t interrupted;

/* The errno of a failed write to stdout in `run` (EPIPE: the reader went
 * away, as `| head` does; ENOSPC: a full disk); 0 while it works. Nothing
 * more can be reported then, so the run stops. */
static int stdout_errno;

/* Flushes what `run` printed on f, noting a failure of stdout. */
static void flush_out(FILE *f)
{
    if ((fflush(f) != 0 || ferror(f)) && f == stdout && stdout_errno == 0) {
        stdout_errno = errno != 0 ? errno : EIO;
    }
}

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Prints a message with its control bytes escaped: messages quote file
 * names, file contents and arguments, and none of them may drive the
 * terminal. */
static void put_message(FILE *f, const char *fmt, va_list ap)
{
    char text[4096], safe[4096];
    vsnprintf(text, sizeof text, fmt, ap);
    pl__cli_escape(text, false, safe, sizeof safe);
    fputs(safe, f);
}

static void vsay(const cli *c, const char *cmd, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s%s%s: ", c->prog, cmd != NULL ? " " : "", cmd != NULL ? cmd : "");
    put_message(stderr, fmt, ap);
}

/* Prints "prog cmd: <message>; <hint>" on one line and returns ST_USAGE.
 * hint NULL: "see 'prog cmd --help'". */
static int usage_hint(const cli *c, const char *cmd, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int usage_hint(const cli *c, const char *cmd, const char *hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(c, cmd, fmt, ap);
    va_end(ap);
    if (hint != NULL) {
        fprintf(stderr, "; %s\n", hint);
    } else {
        fprintf(stderr, "; see '%s%s%s --help'\n", c->prog, cmd != NULL ? " " : "",
                cmd != NULL ? cmd : "");
    }
    return ST_USAGE;
}

#define usage_error(c, cmd, ...) usage_hint((c), (cmd), NULL, __VA_ARGS__)

/* Prints "prog cmd: error: <message>" and returns ST_INTERNAL. */
static int internal_error(const cli *c, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int internal_error(const cli *c, const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s%s%s: error: ", c->prog, cmd != NULL ? " " : "", cmd != NULL ? cmd : "");
    put_message(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return ST_INTERNAL;
}

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

static int find_long(const opt_spec *specs, const char *name, size_t len)
{
    for (int i = 0; specs[i].name != NULL; i++) {
        if (strlen(specs[i].name) == len && strncmp(specs[i].name, name, len) == 0) {
            return i;
        }
    }
    return -1;
}

static int find_short(const opt_spec *specs, char c)
{
    for (int i = 0; specs[i].name != NULL; i++) {
        if (specs[i].short_name != 0 && specs[i].short_name == c) {
            return i;
        }
    }
    return -1;
}

static int unknown_option(const opts_iter *it, const char *arg)
{
    char typed[64];
    snprintf(typed, sizeof typed, "%.*s", (int)strcspn(arg, "="), arg);
    const char *best = NULL;
    size_t best_d = 3;
    for (int i = 0; it->specs[i].name != NULL && typed[0] == '-' && typed[1] == '-'; i++) {
        size_t d = pl__cli_distance(typed + 2, it->specs[i].name, 3);
        if (d < best_d) {
            best_d = d;
            best = it->specs[i].name;
        }
    }
    if (best != NULL) {
        return usage_error(it->c, it->cmd, "unknown option '%s' (did you mean '--%s'?)", typed,
                           best);
    }
    return usage_error(it->c, it->cmd, "unknown option '%s'", typed);
}

/* Takes the value of option s: inline ("--x=v", "-jv") or the next
 * argument. Returns the option index or OPT_ERROR. */
static int option_value(opts_iter *it, int idx, const char *inline_value, const char **value)
{
    const opt_spec *s = &it->specs[idx];
    if (s->arg == NULL) {
        if (inline_value != NULL) {
            usage_error(it->c, it->cmd, "option '--%s' takes no value", s->name);
            return OPT_ERROR;
        }
        *value = NULL;
        return idx;
    }
    if (inline_value != NULL) {
        *value = inline_value;
    } else if (it->i >= it->argc || strncmp(it->argv[it->i], "--", 2) == 0) {
        /* "--seeds --json" means the value was forgotten, not "--json". */
        usage_error(it->c, it->cmd, "option '--%s' needs a value (%s)", s->name, s->arg);
        return OPT_ERROR;
    } else {
        *value = it->argv[it->i++];
    }
    /* Keeping the last of two values would silently drop the other. */
    if (it->given[idx] != NULL) {
        usage_error(it->c, it->cmd, "option '--%s' given twice ('%s', then '%s'): give it once",
                    s->name, it->given[idx], *value);
        return OPT_ERROR;
    }
    it->given[idx] = *value;
    return idx;
}

/* The next option (its index in specs, *value set or NULL for a flag),
 * OPT_POSITIONAL (*value the argument), OPT_END, or OPT_ERROR after a
 * usage error was printed. */
static int opts_next(opts_iter *it, const char **value)
{
    while (it->i < it->argc) {
        const char *a = it->argv[it->i++];
        if (it->positional_only || a[0] != '-' || a[1] == '\0') {
            *value = a;
            return OPT_POSITIONAL;
        }
        if (strcmp(a, "--") == 0) {
            it->positional_only = true;
            continue;
        }
        if (a[1] == '-') {
            const char *name = a + 2, *eq = strchr(name, '=');
            int idx = find_long(it->specs, name, eq != NULL ? (size_t)(eq - name) : strlen(name));
            if (idx < 0) {
                unknown_option(it, a);
                return OPT_ERROR;
            }
            return option_value(it, idx, eq != NULL ? eq + 1 : NULL, value);
        }
        int idx = find_short(it->specs, a[1]);
        if (idx < 0) {
            unknown_option(it, a);
            return OPT_ERROR;
        }
        return option_value(it, idx, a[2] != '\0' ? a + 2 : NULL, value);
    }
    return OPT_END;
}

/* Parses a whole number option value in [lo, hi]. */
static int opt_number(const opts_iter *it, int idx, const char *v, uint64_t lo, uint64_t hi,
                      uint64_t *out)
{
    if (pl__cli_parse_u64(v, out) != 0 || *out < lo || *out > hi) {
        return usage_error(it->c, it->cmd,
                           "bad value for '--%s': '%s' (expected a whole number from %" PRIu64
                           " to %" PRIu64 ")",
                           it->specs[idx].name, v, lo, hi);
    }
    return 0;
}

static int opt_duration(const opts_iter *it, int idx, const char *v, pl_time *out)
{
    if (pl__cli_parse_duration(v, out) != 0) {
        return usage_error(it->c, it->cmd,
                           "bad value for '--%s': '%s' (expected a duration such as 500ms, 30s, "
                           "10m or 1.5h)",
                           it->specs[idx].name, v);
    }
    return 0;
}

/* --poll-cost: 0, or a virtual duration up to PL_SIM_POLL_COST_MAX. */
static int opt_poll_cost(const opts_iter *it, int idx, const char *v, pl_time *out)
{
    if (strcmp(v, "0") == 0) {
        *out = 0;
        return 0;
    }
    if (pl__cli_parse_duration(v, out) != 0 || *out > PL_SIM_POLL_COST_MAX) {
        return usage_error(it->c, it->cmd,
                           "bad value for '--%s': '%s' (expected 0 or a duration up to 1s, such "
                           "as 100ns or 2us)",
                           it->specs[idx].name, v);
    }
    return 0;
}

/* --poll-budget: the CPU time one poll may take in a child process
 * before it counts as never returning (budget.h). */
static int opt_poll_budget(const opts_iter *it, int idx, const char *v)
{
    pl_time ns;
    if (opt_duration(it, idx, v, &ns) != 0) {
        return ST_USAGE;
    }
    pl__budget_set(ns);
    return 0;
}

/* shrink --watchdog: the wall time a livelock's candidate may run. */
static int opt_candidate_watchdog(const opts_iter *it, int idx, const char *v)
{
    pl_time ns;
    if (opt_duration(it, idx, v, &ns) != 0) {
        return ST_USAGE;
    }
    pl__budget_set_watchdog(ns);
    return 0;
}

/* ======================================================================
 * Output helpers
 * ==================================================================== */

/* snprintf for messages, where a cut tail is acceptable: says so to the
 * compiler's truncation warnings, which only look at snprintf itself. */
static void textf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void textf(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Text from a file or the command line, escaped for the terminal
 * (pl__cli_escape), by value so that one printf can take several. */
typedef struct safe_buf {
    char s[PATH_MAX + 1024];
} safe_buf;

static safe_buf safe_text(const char *text)
{
    safe_buf b;
    pl__cli_escape(text, false, b.s, sizeof b.s);
    return b;
}

/* A JSON string. Bytes that are not UTF-8 (user output, names from
 * files) become U+FFFD: JSON text must be valid UTF-8. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        size_t seq = pl__cli_utf8_len(p);
        if (seq == 0) {
            fputs("\\ufffd", f);
        } else if (seq > 1) {
            fwrite(p, 1, seq, f);
            p += seq - 1;
        } else if (*p == '"' || *p == '\\') {
            fprintf(f, "\\%c", *p);
        } else if (*p == '\n') {
            fputs("\\n", f);
        } else if (*p == '\t') {
            fputs("\\t", f);
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(f, "\\u%04x", *p);
        } else {
            fputc(*p, f);
        }
    }
    fputc('"', f);
}

static const char *signal_name(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGABRT, "SIGABRT"}, {SIGFPE, "SIGFPE"},
        {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"},
        {SIGSYS, "SIGSYS"},   {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
        {SIGALRM, "SIGALRM"}, {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGHUP, "SIGHUP"},
        {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (names[i].sig == sig) {
            return names[i].name;
        }
    }
    return "an unknown signal";
}

/* Describes a wait status: "was killed by SIGSEGV (Segmentation fault)". */
static void describe_status(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(buf, len, "was killed by %s (%s)", signal_name(sig), strsignal(sig));
    } else if (WIFEXITED(status)) {
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    } else {
        snprintf(buf, len, "stopped with wait status %d", status);
    }
}

/* mkdir -p: creates dir and its parents. Returns 0 or a negative errno. */
static int make_dirs(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        return -ENAMETOOLONG;
    }
    for (char *p = path + 1; ; p++) {
        bool end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            struct stat st;
            if (mkdir(path, 0777) != 0 && (errno != EEXIST || stat(path, &st) != 0 ||
                                           !S_ISDIR(st.st_mode))) {
                return errno == EEXIST ? -ENOTDIR : -errno;
            }
            if (end) {
                return 0;
            }
            *p = '/';
        }
    }
}

/* Writes all of buf to fd, retrying short writes and EINTR. */
static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return -errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

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

/* An unlinked temporary file for a child's stdout. Returns its fd or a
 * negative errno. */
static int capture_file(void)
{
    const char *dir = getenv("TMPDIR");
    char path[PATH_MAX];
    int n = snprintf(path, sizeof path, "%s/pollen-stdout-XXXXXX",
                     dir != NULL && dir[0] != '\0' ? dir : "/tmp");
    if (n < 0 || (size_t)n >= sizeof path) {
        return -ENAMETOOLONG;
    }
    int fd = mkstemp(path);
    if (fd < 0) {
        return -errno;
    }
    unlink(path);
    return fd;
}

/* In a child: makes fd its stdout. Unbuffered when the child may die
 * mid-run (its output up to the crash is the clue), fully buffered
 * otherwise (a write per line would slow chatty scenarios down). */
static void capture_stdout(int fd, bool unbuffered)
{
    fflush(stdout);
    if (fd >= 0 && fd != STDOUT_FILENO) {
        dup2(fd, STDOUT_FILENO);
        close(fd);
    }
    setvbuf(stdout, NULL, unbuffered ? _IONBF : _IOFBF, unbuffered ? 0 : BUFSIZ);
}

/* Reads the tail of the capture file fd (any process's). */
static void read_tail(int fd, output_tail *t)
{
    struct stat st;
    memset(t, 0, sizeof *t);
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
        return;
    }
    t->bytes = (uint64_t)st.st_size;
    size_t want = t->bytes < OUTPUT_TAIL_MAX - 1 ? (size_t)t->bytes : OUTPUT_TAIL_MAX - 1;
    ssize_t got = pread(fd, t->text, want, st.st_size - (off_t)want);
    t->text[got > 0 ? got : 0] = '\0';
    /* A NUL in the output would end the text early: show it as a space. */
    for (ssize_t i = 0; i < got; i++) {
        t->text[i] = t->text[i] == '\0' ? ' ' : t->text[i];
    }
}

/* In a worker, after a seed: flushes its output and, when there is a
 * finding, takes the tail; then empties the file for the next seed. */
static void end_seed_output(output_tail *t)
{
    fflush(stdout);
    if (t != NULL) {
        read_tail(STDOUT_FILENO, t);
    }
    if (lseek(STDOUT_FILENO, 0, SEEK_CUR) > 0) {
        if (ftruncate(STDOUT_FILENO, 0) == 0) {
            fseek(stdout, 0, SEEK_SET);
        }
    }
}

/* The "build" line of replay files written by the CLI itself. */
static const char *build_text(void)
{
#if defined(__clang__)
    return "clang " __clang_version__;
#elif defined(__GNUC__)
    return "gcc " __VERSION__;
#else
    return "unknown compiler";
#endif
}

/* ======================================================================
 * Help
 * ==================================================================== */

static const char help_main[] =
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
    "  --check-determinism  run every seed twice and compare the trace hashes\n"
    "  --real               instead of simulating, run each scenario once on\n"
    "                       the real epoll backend (60 s limit, or --time)\n"
    "\n"
    "processes and limits:\n"
    "  --jobs N, -j N       worker processes (default: online CPUs, at most 64)\n"
    "  --shard K/N          only shard K of N: seed s when (s - A) mod N = K - 1\n"
    "  --time DURATION      start no seed after this much wall time, and report\n"
    "                       how far the run got (units ms, s, m, h); a seed still\n"
    "                       running finishes or meets the watchdog\n"
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
    "  --shrink-time DURATION  wall-time budget of that shrink (default 10s)\n"
    "  --json               stdout holds only JSON objects, one per line: each\n"
    "                       finding (user output in \"output\"), warnings, and\n"
    "                       the summary last; the text goes to stderr\n"
    "  --quiet, -q          no progress or summary lines, only findings\n"
    "  --help, -h           this text\n"
    "\n"
    "Progress goes to stderr every second on a terminal, every 10 s otherwise.\n"
    "What user code prints on stdout is captured per seed, never mixed into\n"
    "pollen's output; a finding shows its run's last 4 KiB of it.\n"
    "A finding writes DIR/<scenario>-seed<seed>.replay; reproduce it with\n"
    "'{prog} replay FILE'.\n"
    "\n"
    "exit status: 0 no finding, 10 + kind of the first finding (see below),\n"
    "2 bad usage, 3 internal error (such as an unwritable DIR or a full\n"
    "stdout), 130 interrupted before any finding, 141 stdout closed early\n"
    "(a reader such as 'head' went away: the run stops without a summary).\n"
    "A known-bug scenario that produces its expected finding still exits\n"
    "10 + kind: the report is the truth.\n";

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
    "  --poll-budget DURATION  stop a poll using more CPU time (default 1s): a\n"
    "                          livelock\n"
    "  --no-fork               run in this process (for a debugger)\n"
    "  --quiet, -q             only the verdict line per file\n"
    "  --help, -h              this text\n"
    "\n"
    "exit status: 0 every file reproduced (a raw input: produced a finding),\n"
    "1 a run differed from its file, 2 bad usage, 3 unreadable or malformed\n"
    "file or internal error.\n";

static const char help_shrink[] =
    "usage: {prog} shrink FILE [-o OUT] [--time DURATION] [--runs N]\n"
    "                           [--poll-budget DURATION] [--watchdog DURATION]\n"
    "\n"
    "Shrinks the failing run of a replay file to the smallest decision list\n"
    "that still produces the same finding (shortlex: drop the tail, delete\n"
    "chunks, zero and lower values), explains the few decisions where it\n"
    "leaves production's order, and writes it as a replay file. Candidate\n"
    "runs execute in a child process.\n"
    "\n"
    "options:\n"
    "  -o OUT, --output OUT   where to write (default: FILE with '.replay'\n"
    "                         replaced by '.shrunk.replay')\n"
    "  --time DURATION        wall-time budget (default 30s)\n"
    "  --runs N               run budget (default 20000)\n"
    "  --poll-budget DURATION CPU time one poll may take (default 1s); a\n"
    "                         livelock's candidates each run in a child, and\n"
    "                         one stopped there still fails with livelock\n"
    "  --watchdog DURATION    wall time such a candidate may take (default\n"
    "                         10s): one killed then still fails with livelock\n"
    "  --help, -h             this text\n"
    "\n"
    "exit status: 0 shrunk, 2 bad usage, 3 unreadable file, a run that does\n"
    "not fail, or a crash while shrinking.\n";

/* Writes text with every "{prog}" replaced by the program's name. */
static void put_text(FILE *f, const char *text, const char *prog)
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

static int show_help(const cli *c, const char *cmd)
{
    const char *text = help_main;
    if (cmd != NULL && strcmp(cmd, "list") == 0) {
        text = help_list;
    } else if (cmd != NULL && strcmp(cmd, "run") == 0) {
        text = help_run;
    } else if (cmd != NULL && strcmp(cmd, "replay") == 0) {
        text = help_replay;
    } else if (cmd != NULL && strcmp(cmd, "shrink") == 0) {
        text = help_shrink;
    } else if (cmd != NULL && strcmp(cmd, "help") != 0 && strcmp(cmd, "version") != 0) {
        char hint[96];
        snprintf(hint, sizeof hint, "'%s --help' lists the commands", c->prog);
        return usage_hint(c, "help", hint, "unknown command '%s'", cmd);
    }
    put_text(stdout, text, c->prog);
    if (text == help_run || text == help_main) {
        put_exit_kinds(stdout);
    }
    return fflush(stdout) == 0 ? ST_CLEAN : ST_INTERNAL;
}

/* ======================================================================
 * Scenarios: the catalogue, selection, `list`
 * ==================================================================== */

static int catalogue_add(cli *c, const pl_scenario *sc)
{
    for (size_t i = 0; i < c->nall; i++) {
        if (c->all[i] == sc) {
            return 0;
        }
        if (strcmp(c->all[i]->name, sc->name) == 0) {
            return internal_error(c, NULL, "two different scenarios are named '%s'", sc->name);
        }
    }
    c->all[c->nall++] = sc;
    return 0;
}

static int catalogue_init(cli *c, const pl_scenario *const *extra)
{
    size_t nreg = 0, nextra = 0;
    const pl_scenario *const *reg = pl_scenarios(&nreg);
    while (extra != NULL && extra[nextra] != NULL) {
        nextra++;
    }
    c->all = calloc(nreg + nextra + 1, sizeof *c->all);
    if (c->all == NULL) {
        return internal_error(c, NULL, "out of memory");
    }
    for (size_t i = 0; i < nreg + nextra; i++) {
        const pl_scenario *sc = i < nreg ? reg[i] : extra[i - nreg];
        if (sc != NULL && catalogue_add(c, sc) != 0) {
            return ST_INTERNAL;
        }
    }
    return 0;
}

static const pl_scenario *catalogue_find(const cli *c, const char *name)
{
    for (size_t i = 0; i < c->nall; i++) {
        if (strcmp(c->all[i]->name, name) == 0) {
            return c->all[i];
        }
    }
    return NULL;
}

static int no_such_scenario(const cli *c, const char *cmd, const char *pattern)
{
    char hint[128];
    snprintf(hint, sizeof hint, "'%s list' shows them", c->prog);
    const char *best = NULL;
    size_t best_d = 4;
    for (size_t i = 0; i < c->nall; i++) {
        size_t d = pl__cli_distance(pattern, c->all[i]->name, 4);
        if (d < best_d) {
            best_d = d;
            best = c->all[i]->name;
        }
    }
    if (best != NULL) {
        return usage_hint(c, cmd, hint, "no scenario matches '%s' (did you mean '%s'?)", pattern,
                          best);
    }
    return usage_hint(c, cmd, hint, "no scenario matches '%s'", pattern);
}

static bool selected(const pl_scenario *const *sel, size_t n, const pl_scenario *sc)
{
    for (size_t i = 0; i < n; i++) {
        if (sel[i] == sc) {
            return true;
        }
    }
    return false;
}

/* Resolves names, globs and 'all' into sel (room for c->nall), in the
 * order of the patterns, each scenario once. */
static int select_scenarios(const cli *c, const char *cmd, char **pats, size_t npats,
                            const pl_scenario **sel, size_t *nsel)
{
    *nsel = 0;
    for (size_t p = 0; p < npats; p++) {
        bool glob = strpbrk(pats[p], "*?[") != NULL, all = strcmp(pats[p], "all") == 0;
        size_t matched = 0;
        for (size_t i = 0; i < c->nall; i++) {
            const char *name = c->all[i]->name;
            bool hit = all || (glob ? fnmatch(pats[p], name, 0) == 0 : strcmp(pats[p], name) == 0);
            if (hit) {
                matched++;
                if (!selected(sel, *nsel, c->all[i])) {
                    sel[(*nsel)++] = c->all[i];
                }
            }
        }
        if (matched == 0 && !(all && c->nall == 0)) {
            return no_such_scenario(c, cmd, pats[p]);
        }
    }
    return 0;
}

static const opt_spec list_specs[] = {
    {"json", 0, NULL},
    {"help", 'h', NULL},
    {NULL, 0, NULL},
};

static void list_text(const cli *c)
{
    int wname = 8, wexpect = 6;
    for (size_t i = 0; i < c->nall; i++) {
        const pl_scenario *sc = c->all[i];
        int n = (int)strlen(sc->name), e = sc->expect != NULL ? (int)strlen(sc->expect) : 1;
        wname = n > wname ? n : wname;
        wexpect = e > wexpect ? e : wexpect;
    }
    printf("%-*s  %-*s  %s\n", wname, "SCENARIO", wexpect, "EXPECT", "SUMMARY");
    for (size_t i = 0; i < c->nall; i++) {
        const pl_scenario *sc = c->all[i];
        printf("%-*s  %-*s  %s\n", wname, sc->name, wexpect,
               sc->expect != NULL ? sc->expect : "-", sc->summary != NULL ? sc->summary : "");
    }
}

static void list_json(const cli *c)
{
    for (size_t i = 0; i < c->nall; i++) {
        const pl_scenario *sc = c->all[i];
        fputs("{\"name\":", stdout);
        json_string(stdout, sc->name);
        fputs(",\"expect\":", stdout);
        if (sc->expect != NULL) {
            json_string(stdout, sc->expect);
        } else {
            fputs("null", stdout);
        }
        fputs(",\"summary\":", stdout);
        json_string(stdout, sc->summary != NULL ? sc->summary : "");
        fputs("}\n", stdout);
    }
}

static int cmd_list(cli *c, int argc, char **argv)
{
    opts_iter it = {c, "list", list_specs, argc, argv, 0, false, {NULL}};
    bool json = false;
    const char *v;
    for (int id; (id = opts_next(&it, &v)) != OPT_END;) {
        if (id == OPT_ERROR) {
            return ST_USAGE;
        }
        if (id == OPT_POSITIONAL) {
            return usage_error(c, "list", "unexpected argument '%s'", v);
        }
        if (strcmp(list_specs[id].name, "help") == 0) {
            return show_help(c, "list");
        }
        json = true;
    }
    if (json) {
        list_json(c);
    } else {
        list_text(c);
    }
    return fflush(stdout) == 0 ? ST_CLEAN : ST_INTERNAL;
}

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
    uint32_t jobs;
    uint32_t shard_k, shard_n;
    char out_dir[PATH_MAX]; /* no trailing slash */
    bool json, check_det, real, keep_going, quiet, no_shrink;
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
    R_RECYCLE_SEEDS, R_WORKER_RSS, R_HELP, R_POLL_COST, R_POLL_BUDGET, R__COUNT
};

static const opt_spec run_specs[] = {
    [R_SEEDS] = {"seeds", 0, "A..B"},
    [R_SEED] = {"seed", 0, "N"},
    [R_TIME] = {"time", 0, "DURATION"},
    [R_STRATEGY] = {"strategy", 0, "random|pct:D|bounded:K|swarm"},
    [R_KNOBS] = {"knobs", 0, "TEXT"},
    [R_JOBS] = {"jobs", 'j', "N"},
    [R_SHARD] = {"shard", 0, "K/N"},
    [R_OUT] = {"out", 0, "DIR"},
    [R_JSON] = {"json", 0, NULL},
    [R_CHECK_DET] = {"check-determinism", 0, NULL},
    [R_REAL] = {"real", 0, NULL},
    [R_KEEP_GOING] = {"keep-going", 0, NULL},
    [R_QUIET] = {"quiet", 'q', NULL},
    [R_WATCHDOG] = {"watchdog", 0, "DURATION"},
    [R_NO_SHRINK] = {"no-shrink", 0, NULL},
    [R_SHRINK_TIME] = {"shrink-time", 0, "DURATION"},
    [R_RECYCLE_SEEDS] = {"recycle-seeds", 0, "N"},
    [R_WORKER_RSS] = {"worker-rss", 0, "SIZE"},
    [R_HELP] = {"help", 'h', NULL},
    [R_POLL_COST] = {"poll-cost", 0, "DURATION"},
    [R_POLL_BUDGET] = {"poll-budget", 0, "DURATION"},
    [R__COUNT] = {NULL, 0, NULL},
};
_Static_assert(R__COUNT <= OPTS_MAX, "opts_iter remembers at most OPTS_MAX options");

static uint32_t default_jobs(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) {
        return 1;
    }
    return n > (long)JOBS_DEFAULT_MAX ? JOBS_DEFAULT_MAX : (uint32_t)n;
}

static void run_opts_default(run_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed_hi = DEFAULT_SEED_HI;
    o->watchdog_ns = DEFAULT_WATCHDOG_NS;
    o->shrink_ns = DEFAULT_SHRINK_NS;
    o->recycle_seeds = DEFAULT_RECYCLE_SEEDS;
    o->worker_rss = DEFAULT_WORKER_RSS;
    o->strategy = "random";
    o->jobs = default_jobs();
    o->shard_k = o->shard_n = 1;
    snprintf(o->out_dir, sizeof o->out_dir, "%s", DEFAULT_OUT_DIR);
    o->deadline_ms = INT64_MAX;
    o->text = stdout;
}

static int run_opt_seeds(const opts_iter *it, int id, const char *v, run_opts *o)
{
    if (id == R_SEEDS && pl__cli_parse_seeds(v, &o->seed_lo, &o->seed_hi) != 0) {
        return usage_error(it->c, it->cmd,
                           "bad value for '--seeds': '%s' (expected A..B with A <= B, e.g. "
                           "0..999)",
                           v);
    }
    if (id == R_SEED && pl__cli_parse_seed(v, &o->seed_lo) != 0) {
        return usage_error(it->c, it->cmd,
                           "bad value for '--seed': '%s' (expected a decimal number, 0x-hex "
                           "or a 40-hex commit hash)",
                           v);
    }
    if (id == R_SEED) {
        o->seed_hi = o->seed_lo;
    }
    return 0;
}

static int run_opt_schedule(const opts_iter *it, int id, const char *v, run_opts *o)
{
    if (id == R_STRATEGY) {
        pl__strategy_spec spec;
        char err[200];
        if (pl__strategy_parse(v, &spec, err, sizeof err) != 0) {
            return usage_error(it->c, it->cmd, "bad value for '--strategy': %s", err);
        }
        o->strategy = v;
        o->bounded = spec.kind == PL__STRATEGY_BOUNDED;
        o->bound_k = spec.depth;
        o->pct_depth = spec.kind == PL__STRATEGY_PCT ? spec.depth : 0;
        return 0;
    }
    pl__dec_knobs k;
    char err[160];
    pl__dec_knobs_default(&k);
    if (pl__dec_knobs_parse(&k, v, strlen(v), err, sizeof err) != 0) {
        return usage_error(it->c, it->cmd, "bad value for '--knobs': %s", err);
    }
    o->knobs = v;
    return 0;
}

static int run_opt_out(const opts_iter *it, const char *v, run_opts *o)
{
    size_t n = strlen(v);
    while (n > 1 && v[n - 1] == '/') {
        n--;
    }
    if (n == 0 || n >= sizeof o->out_dir) {
        return usage_error(it->c, it->cmd, "bad value for '--out': '%s' (expected a directory)",
                           v);
    }
    memcpy(o->out_dir, v, n);
    o->out_dir[n] = '\0';
    return 0;
}

static int run_opt_flag(int id, run_opts *o)
{
    o->json = o->json || id == R_JSON;
    o->check_det = o->check_det || id == R_CHECK_DET;
    o->real = o->real || id == R_REAL;
    o->keep_going = o->keep_going || id == R_KEEP_GOING;
    o->quiet = o->quiet || id == R_QUIET;
    o->no_shrink = o->no_shrink || id == R_NO_SHRINK;
    return 0;
}

/* Applies one option. Returns 0 or ST_USAGE (message printed). */
static int run_opt_apply(const opts_iter *it, int id, const char *v, run_opts *o)
{
    uint64_t n;
    switch (id) {
    case R_SEEDS:
    case R_SEED:
        return run_opt_seeds(it, id, v, o);
    case R_STRATEGY:
    case R_KNOBS:
        return run_opt_schedule(it, id, v, o);
    case R_TIME:
        return opt_duration(it, id, v, &o->time_ns);
    case R_WATCHDOG:
        return opt_duration(it, id, v, &o->watchdog_ns);
    case R_SHRINK_TIME:
        return opt_duration(it, id, v, &o->shrink_ns);
    case R_POLL_COST:
        return opt_poll_cost(it, id, v, &o->poll_cost_ns);
    case R_POLL_BUDGET:
        return opt_poll_budget(it, id, v);
    case R_JOBS:
        if (opt_number(it, id, v, 1, PL__CLI_JOBS_MAX, &n) != 0) {
            return ST_USAGE;
        }
        o->jobs = (uint32_t)n;
        return 0;
    case R_SHARD:
        if (pl__cli_parse_shard(v, &o->shard_k, &o->shard_n) != 0) {
            return usage_error(it->c, it->cmd,
                               "bad value for '--shard': '%s' (expected K/N with 1 <= K <= N <= "
                               "%u, e.g. 2/4)",
                               v, PL__CLI_SHARDS_MAX);
        }
        return 0;
    case R_OUT:
        return run_opt_out(it, v, o);
    case R_RECYCLE_SEEDS:
        return opt_number(it, id, v, 1, UINT64_MAX, &o->recycle_seeds);
    case R_WORKER_RSS:
        if (pl__cli_parse_size(v, &o->worker_rss) != 0) {
            return usage_error(it->c, it->cmd,
                               "bad value for '--worker-rss': '%s' (expected a size such as "
                               "512MiB or 2GiB)",
                               v);
        }
        return 0;
    default:
        return run_opt_flag(id, o);
    }
}

/* Options that make no sense together. */
static int run_opts_check(const opts_iter *it, const bool *seen, const run_opts *o)
{
    static const int sim_only[] = {R_SEEDS, R_SEED, R_STRATEGY, R_KNOBS, R_JOBS, R_SHARD,
                                   R_OUT, R_CHECK_DET, R_KEEP_GOING, R_WATCHDOG, R_NO_SHRINK,
                                   R_SHRINK_TIME, R_RECYCLE_SEEDS, R_WORKER_RSS, R_POLL_BUDGET};
    if (seen[R_SEEDS] && seen[R_SEED]) {
        return usage_error(it->c, it->cmd, "'--seeds' and '--seed' exclude each other");
    }
    for (size_t i = 0; o->real && i < sizeof sim_only / sizeof sim_only[0]; i++) {
        if (seen[sim_only[i]]) {
            return usage_error(it->c, it->cmd,
                               "'--%s' has no effect with '--real', which runs each scenario "
                               "once on the real backend",
                               run_specs[sim_only[i]].name);
        }
    }
    static const int seed_only_opts[] = {R_SEEDS, R_SEED, R_SHARD, R_JOBS, R_KEEP_GOING,
                                         R_CHECK_DET, R_RECYCLE_SEEDS, R_WORKER_RSS};
    for (size_t i = 0; o->bounded && i < sizeof seed_only_opts / sizeof seed_only_opts[0]; i++) {
        if (seen[seed_only_opts[i]]) {
            return usage_error(it->c, it->cmd,
                               "'--%s' has no effect with '--strategy %s', which enumerates "
                               "schedules instead of seeds",
                               run_specs[seed_only_opts[i]].name, o->strategy);
        }
    }
    if (o->npatterns == 0) {
        return usage_hint(it->c, it->cmd, NULL,
                          "which scenarios? name them, use a glob such as 'bugs_*', or 'all'");
    }
    return 0;
}

/* Parses `run`'s arguments. Returns 0, ST_USAGE, or -1 after --help. */
static int run_opts_parse(const cli *c, int argc, char **argv, run_opts *o)
{
    opts_iter it = {c, "run", run_specs, argc, argv, 0, false, {NULL}};
    bool seen[R__COUNT] = {false};
    run_opts_default(o);
    o->patterns = calloc((size_t)argc + 1, sizeof *o->patterns);
    if (o->patterns == NULL) {
        return internal_error(c, "run", "out of memory");
    }
    const char *v;
    for (int id; (id = opts_next(&it, &v)) != OPT_END;) {
        if (id == OPT_ERROR) {
            return ST_USAGE;
        }
        if (id == OPT_POSITIONAL) {
            o->patterns[o->npatterns++] = (char *)v;
            continue;
        }
        if (id == R_HELP) {
            show_help(c, "run");
            return -1;
        }
        if (run_opt_apply(&it, id, v, o) != 0) {
            return ST_USAGE;
        }
        seen[id] = true;
    }
    if (run_opts_check(&it, seen, o) != 0) {
        return ST_USAGE;
    }
    o->text = o->json ? stderr : stdout;
    o->tty = isatty(STDERR_FILENO) != 0;
    if (o->time_ns > 0) {
        o->deadline_ms = now_ms() + o->time_ns / PL_MS;
    }
    return 0;
}

static void sim_options(const run_opts *o, uint64_t seed, pl_sim_options *so)
{
    pl_sim_options_default(so);
    so->source = PL_SIM_SOURCE_SEED;
    so->seed = seed;
    so->strategy = o->strategy;
    so->knobs = o->knobs;
    so->poll_cost_ns = o->poll_cost_ns;
    so->pct_horizon = o->pct_horizon;
}

/* A message for a negative code, falling back to strerror for errno
 * values pollen has no name for. */
static const char *error_text(int rc)
{
    const char *s = pl_strerror(rc);
    if (strcmp(s, "unknown error") == 0 && rc < 0 && rc > -4096) {
        return strerror(-rc);
    }
    return s;
}

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
    pl__hang hang;           /* the poll budget's report (budget.h) */
    volatile uint64_t len;   /* entries written (may exceed cap) */
    uint64_t cap;
    pl__dec_record recs[];
} shared_rec;

static size_t shared_rec_size(void)
{
    return sizeof(shared_rec) + PL__DEC_RECORD_MAX_DEFAULT * sizeof(pl__dec_record);
}

static shared_rec *shared_rec_create(void)
{
    /* Anonymous pages are committed on first touch: the cap costs
     * nothing until decisions are written. */
    void *p = mmap(NULL, shared_rec_size(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) {
        return NULL;
    }
    shared_rec *r = p;
    memset(&r->hang, 0, sizeof r->hang);
    r->len = 0;
    r->cap = PL__DEC_RECORD_MAX_DEFAULT;
    return r;
}

static void shared_rec_destroy(shared_rec *r)
{
    if (r != NULL) {
        munmap(r, shared_rec_size());
    }
}

/* What one worker process does. */
typedef struct job {
    const run_opts *o;
    const pl_scenario *sc;
    pl__cli_slice slice;
    bool rerun;      /* reruns one seed whose worker died */
    shared_rec *rec; /* where a rerun records its decisions; may be NULL */
    int out_fd;      /* the capture file that becomes its stdout */
} job;

static void send_msg(int fd, uint32_t type, uint64_t seed, const void *payload, size_t len)
{
    msg_head h = {type, (uint32_t)len, seed};
    if (write_all(fd, &h, sizeof h) != 0 || (len > 0 && write_all(fd, payload, len) != 0)) {
        /* The parent is gone: nobody is left to report to. */
        fflush(NULL);
        _exit(ST_INTERNAL);
    }
}

static void send_error(int fd, uint64_t seed, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void send_error(int fd, uint64_t seed, const char *fmt, ...)
{
    char text[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    send_msg(fd, MSG_ERROR, seed, text, strlen(text) + 1);
}

/* OUT/<scenario>-seed<seed>.replay. Returns 0 or -ENAMETOOLONG. */
static int replay_path(const run_opts *o, const pl_scenario *sc, uint64_t seed, char *buf,
                       size_t len)
{
    int n = snprintf(buf, len, "%s/%s-seed%" PRIu64 ".replay", o->out_dir, sc->name, seed);
    return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/* Names tasks in timelines; ud is the run's pl__run_record. */
static const char *task_name_of(void *ud, uint32_t task)
{
    return pl__run_task_name(ud, task);
}

/* The event log of a run made with keep_events (NULL, 0 without). */
static const pl__trace_rec *result_events(const pl_sim_result *r, size_t *len)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    *len = rec != NULL ? rec->events_len : 0;
    return rec != NULL ? rec->events : NULL;
}

/* One event as a timeline line, without the trailing newline. */
static void event_text(const pl_sim_result *r, const pl__trace_rec *ev, char *buf, size_t len)
{
    char *mem = NULL;
    size_t memlen = 0;
    FILE *f = open_memstream(&mem, &memlen);
    buf[0] = '\0';
    if (f == NULL) {
        return;
    }
    pl__trace_write_text(f, ev, 1, task_name_of, (void *)pl__sim_result_record(r));
    fclose(f);
    if (mem != NULL) {
        snprintf(buf, len, "%.*s", (int)strcspn(mem, "\n"), mem);
    }
    free(mem);
}

/* Reruns a seed twice with the event log and describes where the two
 * runs part; also positions the finding at that event. */
static void locate_divergence(const job *jb, const pl_sim_options *so, pl_finding *f,
                              char *buf, size_t len)
{
    pl_sim_options o2 = *so;
    o2.keep_events = true;
    pl_sim_result a, b;
    int ra = pl_sim_run(jb->sc, &o2, &a), rb = pl_sim_run(jb->sc, &o2, &b);
    size_t na = 0, nb = 0;
    const pl__trace_rec *ea = ra == 0 ? result_events(&a, &na) : NULL;
    const pl__trace_rec *eb = rb == 0 ? result_events(&b, &nb) : NULL;
    size_t i = ea != NULL && eb != NULL ? pl__trace_first_diff(ea, na, eb, nb) : SIZE_MAX;
    if (i == SIZE_MAX) {
        snprintf(buf, len, "\n(two more runs with the event log agreed: the difference is "
                           "intermittent)");
    } else {
        char la[256] = "(no event: the run ended)", lb[256] = "(no event: the run ended)";
        const pl__trace_rec *at = i < na ? &ea[i] : &eb[i];
        if (i < na) {
            event_text(&a, &ea[i], la, sizeof la);
        }
        if (i < nb) {
            event_text(&b, &eb[i], lb, sizeof lb);
        }
        snprintf(buf, len, "\nfirst difference at event %zu:\n  one run: %s\n  other:   %s", i, la,
                 lb);
        const char *name = i < na ? pl__run_task_name(pl__sim_result_record(&a), at->task)
                                  : pl__run_task_name(pl__sim_result_record(&b), at->task);
        f->step = at->step;
        f->time_ns = at->time_ns;
        f->task_id = at->task == PL__TRACE_NO_TASK ? 0 : at->task;
        snprintf(f->task_name, sizeof f->task_name, "%s", name != NULL ? name : "");
    }
    pl_sim_result_free(&a);
    pl_sim_result_free(&b);
}

/* --check-determinism: runs the seed again; on a different hash turns
 * r1's finding into a nondeterminism finding. Returns 0 or the run's
 * error. */
static int check_determinism(const job *jb, const pl_sim_options *so, pl_sim_result *r1)
{
    pl_sim_result r2;
    int rc = pl_sim_run(jb->sc, so, &r2);
    uint64_t h2 = r2.hash;
    pl_sim_result_free(&r2);
    if (rc < 0 || h2 == r1->hash) {
        return rc;
    }
    pl_finding *f = &r1->finding;
    char before[160] = "";
    if (f->kind != PL_FINDING_NONE) {
        snprintf(before, sizeof before, " (the first run ended with %s)",
                 pl_finding_name(f->kind));
    }
    pl_finding nf;
    memset(&nf, 0, sizeof nf);
    nf.kind = PL_FINDING_NONDETERMINISM;
    char where[900];
    locate_divergence(jb, so, &nf, where, sizeof where);
    textf(nf.message, sizeof nf.message,
          "the same seed gave two different traces: hash %016" PRIx64 ", then %016" PRIx64 "%s%s",
          r1->hash, h2, before, where);
    *f = nf;
    return 0;
}

static void worker_finding(const job *jb, int fd, uint64_t seed, const pl_sim_options *so,
                           const pl_sim_result *r)
{
    msg_finding m;
    memset(&m, 0, sizeof m);
    end_seed_output(&m.output);
    m.hash = r->hash;
    m.finding = r->finding;
    int rc = replay_path(jb->o, jb->sc, seed, m.replay, sizeof m.replay);
    rc = rc == 0 ? make_dirs(jb->o->out_dir) : rc;
    if (rc == 0) {
        rc = pl_sim_write_replay(jb->sc, so, r, m.replay);
    }
    if (rc != 0) {
        textf(m.replay_error, sizeof m.replay_error, "cannot write %s: %s", m.replay,
              error_text(rc));
        m.replay[0] = '\0';
    }
    send_msg(fd, MSG_FINDING, seed, &m, sizeof m);
}

/* Runs one seed and reports it. Returns 1 on a finding, 0 when clean,
 * or a negative code after reporting an error. */
static int worker_seed(const job *jb, int fd, uint64_t seed)
{
    pl_sim_options so;
    pl_sim_result r;
    sim_options(jb->o, seed, &so);
    int rc = pl_sim_run(jb->sc, &so, &r);
    if (rc == 0 && jb->o->check_det) {
        rc = check_determinism(jb, &so, &r);
    }
    if (rc < 0) {
        send_error(fd, seed, "the simulator failed on seed %" PRIu64 ": %s%s%s", seed,
                   error_text(rc), r.finding.message[0] != '\0' ? ": " : "", r.finding.message);
        pl_sim_result_free(&r);
        return rc;
    }
    bool found = r.finding.kind != PL_FINDING_NONE;
    if (found) {
        worker_finding(jb, fd, seed, &so, &r);
    } else {
        end_seed_output(NULL);
    }
    uint64_t hash = r.hash;
    send_msg(fd, MSG_DONE, seed, &hash, sizeof hash);
    pl_sim_result_free(&r);
    return found ? 1 : 0;
}

static void reset_sites(void)
{
    size_t n = 0;
    pl__sometimes_site *s = pl__sometimes_sites(&n);
    for (size_t i = 0; i < n; i++) {
        s[i].hits = 0;
        s[i].reached = 0;
    }
}

static void send_sites(int fd)
{
    size_t n = 0;
    const pl__sometimes_site *s = pl__sometimes_sites(&n);
    uint32_t *counts = calloc(2 * n + 1, sizeof *counts);
    if (counts == NULL) {
        send_error(fd, 0, "out of memory");
        fflush(NULL);
        _exit(ST_INTERNAL);
    }
    for (size_t i = 0; i < n; i++) {
        counts[2 * i] = s[i].hits;
        counts[2 * i + 1] = s[i].reached;
    }
    send_msg(fd, MSG_SITES, n, counts, 2 * n * sizeof *counts);
    free(counts);
}

static void worker_setup(const job *jb)
{
    /* Ctrl-C reaches the whole process group; the parent decides. */
    signal(SIGINT, SIG_IGN);
#ifdef __linux__
    /* A worker stuck in user code must not outlive a killed parent. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    capture_stdout(jb->out_fd, jb->rerun);
    reset_sites();
    if (jb->rec != NULL) {
        pl__sim_record_to(jb->rec->recs, (size_t)jb->rec->cap, &jb->rec->len);
        pl__budget_arm(&jb->rec->hang);
    }
}

/* The worker's peak resident set, in bytes (Linux counts ru_maxrss in
 * KiB). What the OOM killer looks at, so what --worker-rss bounds. */
static uint64_t peak_rss(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0 || ru.ru_maxrss < 0) {
        return 0;
    }
    return (uint64_t)ru.ru_maxrss * 1024u;
}

/* The memory a leak in user code makes grow, given the peak RSS. The
 * peak RSS does not move for a scenario that frees what it allocates,
 * once warm, nor for one seed that peaks once; a leak pushes it up seed
 * after seed. */
static uint64_t memory_in_use(uint64_t rss)
{
#ifdef CLI_ASAN
    (void)rss;
    return (uint64_t)__sanitizer_get_current_allocated_bytes();
#else
    return rss;
#endif
}

/* A worker's watch on its memory, over windows of GROWTH_WINDOW seeds. */
typedef struct growth {
    uint64_t start;          /* memory at the window's start */
    uint64_t prev;           /* after the previous seed */
    uint64_t first_seed;     /* the window's first seed */
    uint32_t seeds, grew;    /* seeds in the window; those that grew memory */
    bool warned;
} growth;

/* After the seed of index i: memory growing over most seeds of a window,
 * by enough to matter, is user code keeping memory across runs. The
 * first seed warms caches up and only sets the baseline. */
static void watch_memory(int fd, growth *g, uint64_t i, uint64_t seed, uint64_t rss)
{
    uint64_t now = memory_in_use(rss);
    if (i == 0 || g->warned) {
        g->start = g->prev = now;
        g->seeds = g->grew = 0;
        return;
    }
    if (g->seeds == 0) {
        g->first_seed = seed;
    }
    g->seeds++;
    g->grew += now > g->prev;
    g->prev = now;
    if (g->seeds < GROWTH_WINDOW) {
        return;
    }
    if (g->grew >= GROWTH_WINDOW * 3 / 4 && now >= g->start + GROWTH_MIN_BYTES) {
        msg_growth m = {g->first_seed, seed, g->seeds, now - g->start};
        send_msg(fd, MSG_GROWTH, seed, &m, sizeof m);
        g->warned = true;
    }
    g->start = now;
    g->seeds = g->grew = 0;
}

/* Whether the worker should hand its remaining seeds to a fresh process
 * after running `ran` of them: leaks and fragmentation in user code
 * must not grow one process until the OOM killer picks a seed. */
static recycle_reason recycle_due(const job *jb, uint64_t ran, uint64_t rss)
{
    if (jb->rerun) {
        return RECYCLE_NONE;
    }
    if (rss > jb->o->worker_rss) {
        return RECYCLE_RSS;
    }
    return ran >= jb->o->recycle_seeds ? RECYCLE_SEEDS : RECYCLE_NONE;
}

static void worker_main(const job *jb, int fd)
{
    worker_setup(jb);
    bool stopped = false;
    growth g;
    memset(&g, 0, sizeof g);
    recycle_reason recycle = RECYCLE_NONE;
    uint64_t i = 0, seed = 0, rss = 0;
    for (; pl__cli_slice_has(&jb->slice, i) && !stopped && recycle == RECYCLE_NONE; i++) {
        seed = pl__cli_slice_seed(&jb->slice, i);
        send_msg(fd, MSG_START, seed, NULL, 0);
        int rc = worker_seed(jb, fd, seed);
        if (rc < 0) {
            fflush(NULL);
            _exit(ST_INTERNAL);
        }
        /* Later seeds are higher: after a finding they cannot matter. */
        stopped = rc > 0 && !jb->o->keep_going;
        rss = peak_rss();
        watch_memory(fd, &g, i, seed, rss);
        recycle = recycle_due(jb, i + 1, rss);
    }
    if (!stopped && recycle != RECYCLE_NONE && pl__cli_slice_has(&jb->slice, i)) {
        msg_recycle m;
        memset(&m, 0, sizeof m); /* no uninitialised padding on the pipe */
        m.reason = (uint32_t)recycle;
        m.rss = rss;
        m.seed = seed;
        send_msg(fd, MSG_RECYCLE, seed, &m, sizeof m);
    }
    if (!stopped && !jb->rerun) {
        send_sites(fd);
    }
    fflush(NULL);
    _exit(ST_CLEAN);
}

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
    char reproduce[PATH_MAX + 512];
    char shrunk[PATH_MAX];    /* the shrunk replay, "" when none */
    char shrunk_reproduce[PATH_MAX + 512];
    char shrink_text[8192];   /* the shrinker's account, lines indented */
    output_tail output;       /* what the run wrote to stdout */
} report;

/* "--strategy S --knobs K --poll-cost Nns" when they differ from the defaults. */
static void schedule_args(const run_opts *o, char *buf, size_t len)
{
    char knobs[512] = "";
    char cost[48] = "";
    buf[0] = '\0';
    if (o->knobs != NULL) {
        pl__cli_shell_quote(o->knobs, knobs, sizeof knobs);
    }
    if (o->poll_cost_ns > 0) {
        snprintf(cost, sizeof cost, " --poll-cost %lldns", (long long)o->poll_cost_ns);
    }
    snprintf(buf, len, "%s%s%s%s%s", strcmp(o->strategy, "random") != 0 ? " --strategy " : "",
             strcmp(o->strategy, "random") != 0 ? o->strategy : "",
             o->knobs != NULL ? " --knobs " : "", knobs, cost);
}

static void make_reproduce(const cli *c, const run_opts *o, report *rp)
{
    char prog[PATH_MAX], arg[PATH_MAX + 8], sched[600];
    pl__cli_shell_quote(c->argv0, prog, sizeof prog);
    schedule_args(o, sched, sizeof sched);
    if (rp->replay[0] != '\0') {
        pl__cli_shell_quote(rp->replay, arg, sizeof arg);
        textf(rp->reproduce, sizeof rp->reproduce, "%s replay %s", prog, arg);
    } else if (rp->real) {
        textf(rp->reproduce, sizeof rp->reproduce, "%s run %s --real", prog, rp->sc->name);
    } else if (o->bounded) {
        textf(rp->reproduce, sizeof rp->reproduce, "%s run %s%s", prog, rp->sc->name, sched);
    } else if (rp->has_seed) {
        textf(rp->reproduce, sizeof rp->reproduce, "%s run %s --seed %" PRIu64 "%s", prog,
              rp->sc->name, rp->seed, sched);
    } else {
        textf(rp->reproduce, sizeof rp->reproduce, "%s run %s --seeds %" PRIu64 "..%" PRIu64 "%s",
              prog, rp->sc->name, o->seed_lo, o->seed_hi, sched);
    }
}

static void print_task_line(FILE *f, const report *rp)
{
    const pl_finding *fd = &rp->f;
    pl_time t = fd->time_ns < 0 ? 0 : fd->time_ns;
    char when[96];
    snprintf(when, sizeof when, "virtual time %" PRId64 ".%03" PRId64 " ms, step %" PRIu64,
             t / PL_MS, t % PL_MS / PL_US, fd->step);
    if (fd->task_id != 0) {
        fprintf(f, "  task: %s (#%" PRIu32 "), poll %" PRIu32 ", %s\n",
                fd->task_name[0] != '\0' ? fd->task_name : "unnamed", fd->task_id,
                fd->task_polls, when);
    } else {
        fprintf(f, "  task: none, %s\n", when);
    }
}

/* Prints text indented by two spaces, line by line, control bytes
 * other than newlines and tabs escaped. */
static void print_indented(FILE *f, const char *text)
{
    char *safe = malloc(4 * strlen(text) + 1);
    if (safe != NULL) {
        pl__cli_escape(text, true, safe, 4 * strlen(text) + 1);
        text = safe;
    }
    while (*text != '\0') {
        size_t n = strcspn(text, "\n");
        fprintf(f, "  %.*s\n", (int)n, text);
        text += n + (text[n] == '\n');
    }
    free(safe);
}

/* The finding itself: headline, position, message, expectation. */
static void print_finding_head(FILE *f, const run_opts *o, const report *rp)
{
    const char *kind = pl_finding_name(rp->f.kind);
    if (rp->has_seed) {
        fprintf(f, "FINDING %s in %s (seed %" PRIu64 ")\n", kind, rp->sc->name, rp->seed);
    } else if (rp->origin[0] != '\0') {
        fprintf(f, "FINDING %s in %s (%s)\n", kind, rp->sc->name, rp->origin);
    } else {
        fprintf(f, "FINDING %s in %s (seeds %" PRIu64 "..%" PRIu64 ")\n", kind, rp->sc->name,
                o->seed_lo, o->seed_hi);
    }
    if (rp->positioned) {
        print_task_line(f, rp);
    } else if (rp->has_seed) {
        fprintf(f, "  task: unknown (the run did not finish)\n");
    }
    print_indented(f, rp->f.message);
    if (rp->sc->expect != NULL) {
        bool same = strcmp(rp->sc->expect, kind) == 0;
        fprintf(f, "  expected: %s, this known-bug scenario must produce %s\n", same ? "yes" : "no",
                rp->sc->expect);
    }
}

/* Swarm draws its knobs per seed: show the ones this finding ran with. */
static void print_swarm_knobs(FILE *f, const run_opts *o, const report *rp)
{
    pl_sim_options so;
    char knobs[PL_SIM_KNOBS_TEXT_MAX];
    if (strcmp(o->strategy, "swarm") != 0 || !rp->has_seed) {
        return;
    }
    sim_options(o, rp->seed, &so);
    if (pl_sim_knobs_text(&so, knobs, sizeof knobs) == 0) {
        fprintf(f, "  swarm knobs: %s\n", knobs);
    }
}

/* The tail of what the run wrote to stdout, "..." where it was cut. */
static void print_output(FILE *f, const output_tail *t)
{
    size_t shown = strlen(t->text);
    if (t->bytes == 0) {
        return;
    }
    bool cut = t->bytes > shown;
    if (cut) {
        fprintf(f, "  stdout of the run (%" PRIu64 " bytes), the last %zu:\n", t->bytes, shown);
    } else {
        fprintf(f, "  stdout of the run (%" PRIu64 " bytes):\n", t->bytes);
    }
    char *safe = malloc(4 * shown + 1);
    if (safe == NULL) {
        return;
    }
    pl__cli_escape(t->text, true, safe, 4 * shown + 1);
    for (const char *p = safe; *p != '\0'; cut = false) {
        size_t n = strcspn(p, "\n");
        fprintf(f, "    | %s%.*s\n", cut ? "..." : "", (int)n, p);
        p += n + (p[n] == '\n');
    }
    free(safe);
}

static void print_report_text(FILE *f, const run_opts *o, const report *rp)
{
    print_finding_head(f, o, rp);
    print_swarm_knobs(f, o, rp);
    print_output(f, &rp->output);
    /* Paths and commands hold the --out directory and argv[0]. */
    if (rp->replay[0] != '\0') {
        fprintf(f, "  replay: %s%s%s%s\n", safe_text(rp->replay).s,
                rp->note[0] != '\0' ? " (" : "", safe_text(rp->note).s,
                rp->note[0] != '\0' ? ")" : "");
    } else if (!rp->real && rp->has_seed) {
        fprintf(f, "  replay: none (%s)\n",
                rp->note[0] != '\0' ? safe_text(rp->note).s : "not written");
    }
    fprintf(f, "  reproduce: %s\n", safe_text(rp->reproduce).s);
    if (rp->shrunk[0] != '\0') {
        fputs(rp->shrink_text, f);
        fprintf(f, "  shrunk replay: %s\n  reproduce shrunk: %s\n", safe_text(rp->shrunk).s,
                safe_text(rp->shrunk_reproduce).s);
    } else if (rp->shrink_text[0] != '\0') {
        fputs(rp->shrink_text, f);
    }
    flush_out(f);
}

static void print_report_json(const report *rp)
{
    FILE *f = stdout;
    fputs("{\"kind\":", f);
    json_string(f, pl_finding_name(rp->f.kind));
    fputs(",\"scenario\":", f);
    json_string(f, rp->sc->name);
    if (rp->has_seed) {
        fprintf(f, ",\"seed\":%" PRIu64, rp->seed);
    } else {
        fputs(",\"seed\":null", f);
    }
    fputs(",\"task\":", f);
    if (rp->positioned && rp->f.task_id != 0) {
        json_string(f, rp->f.task_name);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"task_id\":%" PRIu32 ",\"poll\":%" PRIu32 ",\"time_ns\":%" PRId64
               ",\"step\":%" PRIu64 ",\"message\":",
            rp->f.task_id, rp->f.task_polls, rp->f.time_ns, rp->f.step);
    json_string(f, rp->f.message);
    fputs(",\"replay\":", f);
    if (rp->replay[0] != '\0') {
        json_string(f, rp->replay);
    } else {
        fputs("null", f);
    }
    fputs(",\"reproduce\":", f);
    json_string(f, rp->reproduce);
    fputs(",\"shrunk\":", f);
    if (rp->shrunk[0] != '\0') {
        json_string(f, rp->shrunk);
    } else {
        fputs("null", f);
    }
    fputs(",\"output\":", f);
    if (rp->output.bytes > 0) {
        json_string(f, rp->output.text);
    } else {
        fputs("null", f);
    }
    fprintf(f, ",\"output_bytes\":%" PRIu64, rp->output.bytes);
    fprintf(f, ",\"expected\":%s,\"real\":%s}\n",
            rp->sc->expect != NULL && strcmp(rp->sc->expect, pl_finding_name(rp->f.kind)) == 0
                ? "true"
                : "false",
            rp->real ? "true" : "false");
    flush_out(f);
}

static void print_report(const run_opts *o, const report *rp)
{
    print_report_text(o->text, o, rp);
    if (o->json) {
        print_report_json(rp);
    }
}

/* Knobs a run with these options used, for replay files written here.
 * Swarm draws them from the seed, then --knobs applies on top. */
static void knobs_for(const run_opts *o, uint64_t seed, pl__dec_knobs *k)
{
    pl__dec_knobs_default(k);
    if (strcmp(o->strategy, "swarm") == 0) {
        pl__dec_knobs_swarm(k, seed);
    }
    if (o->knobs != NULL) {
        pl__dec_knobs_parse(k, o->knobs, strlen(o->knobs), NULL, 0);
    }
}

/* Writes the replay file of a run that never finished (crash, hang):
 * the decisions a rerun recorded in shared memory, or, without them, the
 * seed only, marked by an empty list flagged truncated. */
static int write_lost_replay(const run_opts *o, report *rp, const shared_rec *rec,
                             const char *seed_only_note)
{
    pl__replay r;
    pl__replay_init(&r);
    /* Borrowed pointers: r is never passed to pl__replay_free. */
    r.pollen_version = (char *)PL_VERSION_STRING;
    r.build = (char *)build_text();
    r.scenario = (char *)rp->sc->name;
    r.seed = rp->seed;
    r.strategy = (char *)o->strategy;
    r.has_knobs = true;
    knobs_for(o, rp->seed, &r.knobs);
    r.poll_cost_ns = o->poll_cost_ns;
    r.finding = (char *)pl_finding_name(rp->f.kind);
    r.message = rp->f.message;
    bool have = rec != NULL;
    uint64_t n = have ? rec->len : 0;
    r.decisions = have ? (pl__dec_record *)rec->recs : NULL;
    r.decisions_len = (size_t)(n < (have ? rec->cap : 0) ? n : (have ? rec->cap : 0));
    r.truncated = !have || n > rec->cap;
    int rc = replay_path(o, rp->sc, rp->seed, rp->replay, sizeof rp->replay);
    rc = rc == 0 ? make_dirs(o->out_dir) : rc;
    if (rc == 0) {
        rc = pl__replay_write_path(rp->replay, &r);
    }
    if (rc != 0) {
        textf(rp->note, sizeof rp->note, "cannot write %s: %s", rp->replay, error_text(rc));
        rp->replay[0] = '\0';
    } else if (!have) {
        snprintf(rp->note, sizeof rp->note, "seed only: %s", seed_only_note);
    }
    return rc;
}

/* ======================================================================
 * `run`: the parent's side of a campaign
 * ==================================================================== */

typedef enum kill_reason { KILL_NONE, KILL_STOP, KILL_WATCHDOG } kill_reason;

typedef struct worker {
    pid_t pid;               /* 0: free slot */
    int fd;                  /* read end of its pipe */
    int out_fd;              /* its stdout's capture file */
    output_tail tail;        /* once reaped: what that file held */
    pl__cli_slice slice;
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
    pl__cli_slice shard;     /* the seeds of this shard */
    char total[24];          /* how many, in decimal (2^64 does not fit a uint64_t) */
    uint64_t done;           /* seeds finished */
    uint64_t findings;       /* findings reported */
    uint64_t limit;          /* lowest seed with a finding; UINT64_MAX: none */
    report *first;           /* the lowest-seed finding */
    pl__hashset hashes;
    uint64_t *sites;         /* hits, reached per pl_sometimes site, summed */
    size_t nsites;
    uint32_t sites_expected; /* seed workers started */
    uint32_t sites_received; /* seed workers that finished their slice */
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

static uint64_t worker_next_seed(const worker *w)
{
    if (w->running) {
        return w->seed;
    }
    return pl__cli_slice_has(&w->slice, w->started) ? pl__cli_slice_seed(&w->slice, w->started)
                                                     : UINT64_MAX;
}

static void kill_worker(worker *w, kill_reason why)
{
    if (w->pid > 0 && w->killed == KILL_NONE) {
        kill(w->pid, SIGKILL);
        w->killed = why;
    }
}

/* Seeds of `rest` will not be judged in this campaign. */
static void note_unfinished(campaign *cp, pl__cli_slice rest)
{
    if (!rest.empty && rest.first < cp->resume_seed) {
        cp->resume_seed = rest.first;
    }
}

/* Stops a worker on purpose (--time, Ctrl-C): its seeds from the one it
 * runs or starts next on stay unjudged. */
static void stop_worker(campaign *cp, worker *w)
{
    if (w->pid > 0 && w->killed == KILL_NONE) {
        pl__cli_slice rest = pl__cli_slice_rest(&w->slice, w->started - (w->running ? 1 : 0));
        note_unfinished(cp, rest);
        kill_worker(w, KILL_STOP);
    }
}

/* Stop mode: seeds above the lowest finding cannot change the report. */
static void lower_limit(campaign *cp, uint64_t seed)
{
    if (seed < cp->limit) {
        cp->limit = seed;
    }
    for (size_t i = 0; i < cp->nw && !cp->o->keep_going; i++) {
        if (cp->w[i].pid > 0 && worker_next_seed(&cp->w[i]) > cp->limit) {
            kill_worker(&cp->w[i], KILL_STOP);
        }
    }
}

static void discard_report(report *rp, bool remove_file)
{
    if (rp != NULL && remove_file && rp->replay[0] != '\0') {
        unlink(rp->replay);
    }
    free(rp);
}

/* Takes ownership of rp. Stop mode keeps only the lowest seed (printed
 * at the end, once no lower seed can report); keep-going prints now. */
static void accept_report(campaign *cp, report *rp)
{
    make_reproduce(cp->c, cp->o, rp);
    if (cp->o->keep_going) {
        cp->findings++;
        print_report(cp->o, rp);
    }
    bool lower = cp->first == NULL || (rp->has_seed && rp->seed < cp->first->seed);
    if (lower) {
        discard_report(cp->first, !cp->o->keep_going);
        cp->first = rp;
    } else {
        discard_report(rp, !cp->o->keep_going);
    }
    if (!cp->o->keep_going) {
        cp->findings = 1;
    }
    if (cp->first->has_seed) {
        lower_limit(cp, cp->first->seed);
    }
}

static void clear_progress(campaign *cp)
{
    if (cp->progress_shown) {
        fputs("\r\033[K", stderr);
        cp->progress_shown = false;
    }
}

static void progress(campaign *cp)
{
    int64_t now = now_ms(), every = cp->o->tty ? PROGRESS_TTY_MS : PROGRESS_PIPE_MS;
    if (cp->o->quiet || now - cp->progress_ms < every) {
        return;
    }
    cp->progress_ms = now;
    double secs = (double)(now - cp->start_ms) / 1000.0;
    fprintf(stderr, "%s%s: %" PRIu64 "/%s seeds, %.0f runs/s, %" PRIu64 " findings, %.1f s%s",
            cp->o->tty ? "\r\033[K" : "", cp->sc->name, cp->done, cp->total,
            secs > 0 ? (double)cp->done / secs : 0.0, cp->findings, secs,
            cp->o->tty ? "" : "\n");
    cp->progress_shown = cp->o->tty;
    fflush(stderr);
}

static worker *worker_slot(campaign *cp)
{
    for (size_t i = 0; i < cp->nw; i++) {
        if (cp->w[i].pid == 0) {
            return &cp->w[i];
        }
    }
    worker *w = realloc(cp->w, (cp->nw + 1) * sizeof *w);
    if (w == NULL) {
        return NULL;
    }
    cp->w = w;
    return &cp->w[cp->nw++];
}

/* In a new worker: the other workers' pipes and capture files are not its
 * business (and an inherited capture file would outlive its worker). */
static void close_others(const campaign *cp, const worker *self)
{
    for (size_t i = 0; i < cp->nw; i++) {
        if (&cp->w[i] != self && cp->w[i].pid > 0) {
            close(cp->w[i].fd);
            close(cp->w[i].out_fd);
        }
    }
}

/* Forks a worker for `slice`. Fills and returns its slot, or NULL after
 * an internal error. */
static worker *spawn_worker(campaign *cp, pl__cli_slice slice, bool rerun, shared_rec *rec)
{
    int fds[2];
    worker *w = worker_slot(cp);
    int out = capture_file();
    if (w == NULL || out < 0 || pipe(fds) != 0) {
        internal_error(cp->c, "run", "cannot start a worker: %s",
                       strerror(out < 0 ? -out : errno));
        if (out >= 0) {
            close(out);
        }
        return NULL;
    }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    fflush(NULL); /* or the child would print the parent's buffered text again */
    pid_t pid = fork();
    if (pid < 0) {
        internal_error(cp->c, "run", "cannot fork a worker: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        close(out);
        return NULL;
    }
    if (pid == 0) {
        close(fds[0]);
        close_others(cp, w);
        job jb = {cp->o, cp->sc, slice, rerun, rec, out};
        worker_main(&jb, fds[1]);
    }
    close(fds[1]);
    memset(w, 0, sizeof *w);
    w->pid = pid;
    w->fd = fds[0];
    w->out_fd = out;
    w->slice = slice;
    w->heard_ms = now_ms();
    w->rerun = rerun;
    w->rec = rec;
    cp->sites_expected += !rerun;
    return w;
}

/* Seed workers mirror their decisions too, so a seed the poll budget
 * stopped is reported with them at once, without a rerun. */
static worker *spawn_seed_worker(campaign *cp, pl__cli_slice slice)
{
    shared_rec *rec = shared_rec_create();
    worker *w = spawn_worker(cp, slice, false, rec);
    if (w == NULL) {
        shared_rec_destroy(rec);
    }
    return w;
}

/* Reruns a seed whose worker died, alone, recording its decisions. */
static void spawn_rerun(campaign *cp, uint64_t seed, pl_finding_kind cause, const char *text)
{
    pl__cli_slice one = {seed, 1, 0, false};
    shared_rec *rec = shared_rec_create();
    worker *w = spawn_worker(cp, one, true, rec);
    if (w == NULL) {
        shared_rec_destroy(rec);
        cp->error = true;
        return;
    }
    w->cause = cause;
    snprintf(w->cause_text, sizeof w->cause_text, "%s", text);
}

/* "10 s", "250 ms", "1.5 s" */
static void format_duration(pl_time ns, char *buf, size_t len)
{
    if (ns < PL_S) {
        snprintf(buf, len, "%" PRId64 " ms", ns / PL_MS);
    } else if (ns % PL_S == 0) {
        snprintf(buf, len, "%" PRId64 " s", ns / PL_S);
    } else {
        snprintf(buf, len, "%.1f s", (double)ns / (double)PL_S);
    }
}

/* How a worker's run of a seed ended, in words. */
static void lost_text(const campaign *cp, const worker *w, int status, char *buf, size_t len)
{
    if (w->killed == KILL_WATCHDOG) {
        char d[32];
        format_duration(cp->o->watchdog_ns, d, sizeof d);
        snprintf(buf, len, "made no progress for %s of wall time and was killed", d);
    } else {
        describe_status(status, buf, len);
    }
}

/* What became of a seed whose worker died or hung on it. */
typedef enum lost_how {
    LOST_REPRODUCED,     /* its rerun alone failed the same way: w is the rerun */
    LOST_NOT_REPRODUCED, /* its rerun alone did not fail */
    LOST_NOT_RERUN,      /* --time had run out: judged on the first run alone */
} lost_how;

/* Reports a seed whose run never finished, with the rerun's decisions
 * when it reproduced. */
static void lost_report(campaign *cp, const worker *w, pl_finding_kind kind, const char *text,
                        lost_how how)
{
    report *rp = calloc(1, sizeof *rp);
    if (rp == NULL) {
        cp->error = true;
        internal_error(cp->c, "run", "out of memory");
        return;
    }
    rp->sc = cp->sc;
    rp->has_seed = true;
    rp->seed = w->seed;
    rp->f.kind = kind;
    /* pollen's own kills are the watchdog's: a SIGKILL otherwise came
     * from outside, most often the OOM killer. */
    bool outside = strncmp(text, "was killed by SIGKILL", 21) == 0;
    const char *why = kind == PL_FINDING_LIVELOCK
                          ? "user code seems stuck inside one poll, or a poll never returns"
                      : outside ? "pollen did not send it; the kernel's OOM killer does when "
                                  "memory runs out (see --worker-rss)"
                                : "user code crashed";
    int n = snprintf(rp->f.message, sizeof rp->f.message,
                     "the worker process %s while running this seed: %s", text, why);
    if (how == LOST_NOT_REPRODUCED && n > 0 && (size_t)n < sizeof rp->f.message) {
        snprintf(rp->f.message + n, sizeof rp->f.message - (size_t)n,
                 "\nrun again alone, the seed did not fail: the failure depends on something "
                 "outside the simulation (state left by earlier seeds, the environment)");
    } else if (how == LOST_NOT_RERUN && n > 0 && (size_t)n < sizeof rp->f.message) {
        snprintf(rp->f.message + n, sizeof rp->f.message - (size_t)n,
                 "\n(not run again alone to record its decisions: --time had run out)");
    }
    rp->output = w->tail;
    const char *note = how == LOST_NOT_RERUN ? "--time ran out before a rerun could record "
                                               "the decisions"
                                             : "this build records no decisions of crashed runs";
    if (write_lost_replay(cp->o, rp, how == LOST_REPRODUCED ? w->rec : NULL, note) != 0) {
        cp->error = true;
    }
    accept_report(cp, rp);
}

static void on_finding(campaign *cp, worker *w, uint64_t seed, const msg_finding *m)
{
    report *rp = calloc(1, sizeof *rp);
    if (rp == NULL) {
        cp->error = true;
        internal_error(cp->c, "run", "out of memory");
        return;
    }
    rp->sc = cp->sc;
    rp->has_seed = true;
    rp->seed = seed;
    rp->positioned = true;
    rp->f = m->finding;
    snprintf(rp->replay, sizeof rp->replay, "%s", m->replay);
    snprintf(rp->note, sizeof rp->note, "%s", m->replay_error);
    rp->output = m->output;
    rp->output.text[sizeof rp->output.text - 1] = '\0';
    cp->error = cp->error || m->replay_error[0] != '\0';
    if (w->rerun) {
        /* The rerun was for a crash or hang; say so next to what it found. */
        char msg[sizeof rp->f.message];
        textf(msg, sizeof msg,
              "(the worker process first running this seed %s; run again alone, the seed "
              "gave this)\n%s",
              w->cause_text, m->finding.message);
        memcpy(rp->f.message, msg, sizeof msg);
    }
    w->reported = true;
    if (!cp->o->keep_going && seed > cp->limit) {
        discard_report(rp, true);
        return;
    }
    accept_report(cp, rp);
}

static void on_sites(campaign *cp, const worker *w, uint64_t n, const uint8_t *payload,
                     size_t len)
{
    if (w->rerun || n != cp->nsites || len != 2 * n * sizeof(uint32_t)) {
        return;
    }
    for (size_t i = 0; i < 2 * n; i++) {
        uint32_t v;
        memcpy(&v, payload + i * sizeof v, sizeof v);
        cp->sites[i] += v;
    }
    cp->sites_received++;
}

/* "512 bytes", "64.0 KiB", "1.5 GiB" */
static void format_bytes(uint64_t n, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (n < 1024) {
        snprintf(buf, len, "%" PRIu64 " bytes", n);
        return;
    }
    double v = (double)n / 1024.0;
    size_t u = 0;
    for (; v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]; u++) {
        v /= 1024.0;
    }
    snprintf(buf, len, "%.1f %s", v, units[u]);
}

/* A worker's memory grew seed after seed: not a finding of the oracles,
 * but what it is, once per campaign, on the text channel and as a JSON
 * line. */
static void on_growth(campaign *cp, const msg_growth *m)
{
    if (cp->growth_warned || m->seeds == 0) {
        return;
    }
    cp->growth_warned = true;
    char per[32], rss[32], text[512];
    format_bytes(m->bytes / m->seeds, per, sizeof per);
    format_bytes(cp->o->worker_rss, rss, sizeof rss);
    textf(text, sizeof text,
          "worker memory grew by %s per seed over seeds %" PRIu64 "..%" PRIu64 " (%" PRIu64
          " runs in one process): user code leaks memory across runs; workers restart every "
          "%" PRIu64 " seeds (--recycle-seeds) and past %s of RSS (--worker-rss)",
          per, m->first_seed, m->last_seed, m->seeds, cp->o->recycle_seeds, rss);
    clear_progress(cp);
    fprintf(cp->o->text, "warning: %s: %s\n", cp->sc->name, text);
    flush_out(cp->o->text);
    if (cp->o->json) {
        fputs("{\"warning\":\"memory_growth\",\"scenario\":", stdout);
        json_string(stdout, cp->sc->name);
        fprintf(stdout, ",\"first_seed\":%" PRIu64 ",\"last_seed\":%" PRIu64 ",\"seeds\":%" PRIu64
                        ",\"bytes_per_seed\":%" PRIu64 ",\"message\":",
                m->first_seed, m->last_seed, m->seeds, m->bytes / m->seeds);
        json_string(stdout, text);
        fputs("}\n", stdout);
        flush_out(stdout);
    }
}

/* A worker handed its remaining seeds on: they go on in a fresh process,
 * unless the campaign is ending. */
static void worker_recycled(campaign *cp, const worker *w)
{
    pl__cli_slice rest = pl__cli_slice_rest(&w->slice, w->started);
    if (rest.empty || (!cp->o->keep_going && rest.first > cp->limit)) {
        return;
    }
    if (cp->stopping || interrupted || cp->error || stdout_errno != 0) {
        note_unfinished(cp, rest);
        return;
    }
    if (w->recycle.reason == RECYCLE_RSS && !cp->rss_noted) {
        char rss[32], bound[32];
        cp->rss_noted = true;
        format_bytes(w->recycle.rss, rss, sizeof rss);
        format_bytes(cp->o->worker_rss, bound, sizeof bound);
        clear_progress(cp);
        fprintf(cp->o->text,
                "note: %s: a worker grew to %s of RSS (--worker-rss %s) by seed %" PRIu64
                "; its seeds from %" PRIu64 " on run in a fresh process\n",
                cp->sc->name, rss, bound, w->recycle.seed, rest.first);
        flush_out(cp->o->text);
    }
    if (spawn_seed_worker(cp, rest) == NULL) {
        cp->error = true;
    }
}

static void on_message(campaign *cp, worker *w, const msg_head *h, const uint8_t *payload)
{
    w->heard_ms = now_ms();
    if (h->type == MSG_START) {
        w->running = true;
        w->seed = h->seed;
        w->started++;
        if (!cp->o->keep_going && h->seed > cp->limit) {
            kill_worker(w, KILL_STOP);
        } else if (cp->stopping) {
            stop_worker(cp, w);
        }
    } else if (h->type == MSG_DONE && h->len == sizeof(uint64_t)) {
        uint64_t hash;
        memcpy(&hash, payload, sizeof hash);
        w->running = false;
        cp->done++;
        pl__hashset_add(&cp->hashes, hash);
    } else if (h->type == MSG_FINDING && h->len == sizeof(msg_finding)) {
        msg_finding *m = malloc(sizeof *m); /* aligned copy */
        if (m != NULL) {
            memcpy(m, payload, sizeof *m);
            on_finding(cp, w, h->seed, m);
        }
        free(m);
    } else if (h->type == MSG_SITES) {
        on_sites(cp, w, h->seed, payload, h->len);
    } else if (h->type == MSG_RECYCLE && h->len == sizeof(msg_recycle)) {
        memcpy(&w->recycle, payload, sizeof w->recycle);
    } else if (h->type == MSG_GROWTH && h->len == sizeof(msg_growth)) {
        msg_growth m;
        memcpy(&m, payload, sizeof m);
        on_growth(cp, &m);
    } else if (h->type == MSG_ERROR && h->len > 0) {
        internal_error(cp->c, "run", "%s: %.*s", cp->sc->name, (int)h->len, (const char *)payload);
        cp->error = true;
    }
}

static void parse_messages(campaign *cp, worker *w)
{
    size_t off = 0;
    while (w->len - off >= sizeof(msg_head)) {
        msg_head h;
        memcpy(&h, w->buf + off, sizeof h);
        if (w->len - off - sizeof h < h.len) {
            break;
        }
        on_message(cp, w, &h, w->buf + off + sizeof h);
        off += sizeof h + h.len;
    }
    memmove(w->buf, w->buf + off, w->len - off);
    w->len -= off;
}

static bool buffer_append(worker *w, const uint8_t *data, size_t n)
{
    if (w->len + n > w->cap) {
        size_t cap = w->cap == 0 ? 65536 : w->cap;
        while (cap < w->len + n) {
            cap *= 2;
        }
        uint8_t *buf = realloc(w->buf, cap);
        if (buf == NULL) {
            return false;
        }
        w->buf = buf;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, data, n);
    w->len += n;
    return true;
}

/* Keep-going: a worker for the seeds a dead worker had left. */
static void spawn_rest(campaign *cp, const worker *w)
{
    pl__cli_slice rest = pl__cli_slice_rest(&w->slice, w->started);
    if (cp->o->keep_going && !rest.empty && spawn_seed_worker(cp, rest) == NULL) {
        cp->error = true;
    }
}

/* The poll budget stopped a worker inside a poll: the seed is a livelock,
 * reported with the task, its poll and the step, and the decisions the
 * worker mirrored up to there. Returns false for any other end. */
static bool hang_reported(campaign *cp, const worker *w, int status)
{
    if (w->rec == NULL || w->killed != KILL_NONE || !pl__hang_ended(&w->rec->hang, status)) {
        return false;
    }
    cp->done++;
    if (!w->rerun) {
        spawn_rest(cp, w);
    }
    if (!cp->o->keep_going && w->seed > cp->limit) {
        return true;
    }
    report *rp = calloc(1, sizeof *rp);
    if (rp == NULL) {
        cp->error = true;
        internal_error(cp->c, "run", "out of memory");
        return true;
    }
    rp->sc = cp->sc;
    rp->has_seed = true;
    rp->seed = w->seed;
    rp->positioned = true;
    pl__hang_finding(&w->rec->hang, &rp->f);
    if (write_lost_replay(cp->o, rp, w->rec, NULL) != 0) {
        cp->error = true;
    }
    accept_report(cp, rp);
    return true;
}

/* A seed worker died inside a run: rerun the seed alone, and in
 * keep-going mode start a worker for the seeds it had left. */
static void seed_lost(campaign *cp, const worker *w, int status)
{
    char text[160];
    lost_text(cp, w, status, text, sizeof text);
    pl_finding_kind cause =
        w->killed == KILL_WATCHDOG ? PL_FINDING_LIVELOCK : PL_FINDING_CRASH;
    if (!cp->o->keep_going && w->seed > cp->limit) {
        return;
    }
    pl__cli_slice rest = pl__cli_slice_rest(&w->slice, w->started);
    if (cp->stopping) {
        /* After --time, no rerun: the seed is judged now, so that a
         * resumed campaign goes past it. */
        lost_report(cp, w, cause, text, LOST_NOT_RERUN);
        note_unfinished(cp, rest);
        return;
    }
    /* Holds the other workers below this seed while the rerun runs. */
    lower_limit(cp, w->seed);
    spawn_rerun(cp, w->seed, cause, text);
    spawn_rest(cp, w);
}

static void rerun_ended(campaign *cp, const worker *w, int status)
{
    if (w->running || w->killed == KILL_WATCHDOG) {
        char text[160];
        lost_text(cp, w, status, text, sizeof text);
        cp->done++;
        lost_report(cp, w, w->killed == KILL_WATCHDOG ? PL_FINDING_LIVELOCK : PL_FINDING_CRASH,
                    text, LOST_REPRODUCED);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == ST_CLEAN) {
        if (!w->reported) {
            lost_report(cp, w, w->cause, w->cause_text, LOST_NOT_REPRODUCED);
        }
    } else {
        cp->error = true;
    }
}

/* The worker in slot i closed its pipe: collect it and act on how it
 * ended. */
static void reap(campaign *cp, size_t i)
{
    worker w = cp->w[i]; /* a copy: spawning below may move the array */
    cp->w[i].pid = 0;
    cp->w[i].buf = NULL;
    close(w.fd);
    free(w.buf);
    int status = 0;
    while (waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    /* Closed before any new worker forks, which would inherit it. */
    read_tail(w.out_fd, &w.tail);
    close(w.out_fd);
    if (w.killed == KILL_STOP) {
        /* Stopped on purpose: nothing to report. */
    } else if (hang_reported(cp, &w, status)) {
        /* Reported with its decisions. */
    } else if (w.rerun) {
        rerun_ended(cp, &w, status);
    } else if (w.running || w.killed == KILL_WATCHDOG) {
        seed_lost(cp, &w, status);
    } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == ST_CLEAN) && !cp->error) {
        char text[160];
        describe_status(status, text, sizeof text);
        internal_error(cp->c, "run", "%s: a worker %s between two runs", cp->sc->name, text);
        cp->error = true;
    } else if (w.recycle.reason != RECYCLE_NONE) {
        worker_recycled(cp, &w);
    }
    shared_rec_destroy(w.rec);
}

static void drain(campaign *cp, size_t i)
{
    uint8_t tmp[65536];
    ssize_t n = read(cp->w[i].fd, tmp, sizeof tmp);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;
    }
    if (n <= 0) {
        reap(cp, i);
        return;
    }
    if (!buffer_append(&cp->w[i], tmp, (size_t)n)) {
        internal_error(cp->c, "run", "out of memory");
        cp->error = true;
        return;
    }
    parse_messages(cp, &cp->w[i]);
}

/* --time, Ctrl-C, errors: stops every worker now. */
static void stop_all(campaign *cp)
{
    for (size_t i = 0; i < cp->nw; i++) {
        stop_worker(cp, &cp->w[i]);
    }
}

/* --time ran out: no seed starts any more, and a seed still running
 * finishes or meets the watchdog. Dropping it unjudged would make every
 * resumed campaign stall on the same hanging seed. */
static void stop_for_time(campaign *cp)
{
    cp->stopped = cp->stopping = true;
    for (size_t i = 0; i < cp->nw; i++) {
        if (!cp->w[i].running) {
            stop_worker(cp, &cp->w[i]);
        }
    }
}

static void check_limits(campaign *cp)
{
    int64_t now = now_ms();
    if (interrupted) {
        cp->stopped = true;
        stop_all(cp);
    } else if (cp->error || stdout_errno != 0) {
        stop_all(cp);
    } else if (now >= cp->o->deadline_ms) {
        stop_for_time(cp);
    }
    for (size_t i = 0; i < cp->nw; i++) {
        worker *w = &cp->w[i];
        if (w->pid > 0 && w->running && now - w->heard_ms >= cp->o->watchdog_ns / PL_MS) {
            kill_worker(w, KILL_WATCHDOG);
        }
    }
}

static int poll_timeout(const campaign *cp)
{
    int64_t now = now_ms(), t = 1000;
    if (!cp->o->quiet) {
        int64_t every = cp->o->tty ? PROGRESS_TTY_MS : PROGRESS_PIPE_MS;
        t = cp->progress_ms + every - now < t ? cp->progress_ms + every - now : t;
    }
    if (!cp->stopping) {
        t = cp->o->deadline_ms - now < t ? cp->o->deadline_ms - now : t;
    }
    for (size_t i = 0; i < cp->nw; i++) {
        const worker *w = &cp->w[i];
        int64_t due = w->heard_ms + cp->o->watchdog_ns / PL_MS - now;
        t = w->pid > 0 && w->running && due < t ? due : t;
    }
    return t < 0 ? 0 : (int)t;
}

static size_t live_workers(const campaign *cp)
{
    size_t n = 0;
    for (size_t i = 0; i < cp->nw; i++) {
        n += cp->w[i].pid > 0;
    }
    return n;
}

/* Last resort when the parent cannot go on: kill and collect everyone. */
static void abandon_all(campaign *cp)
{
    for (size_t i = 0; i < cp->nw; i++) {
        worker *w = &cp->w[i];
        if (w->pid > 0) {
            kill(w->pid, SIGKILL);
            while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR) {
            }
            close(w->fd);
            close(w->out_fd);
            free(w->buf);
            shared_rec_destroy(w->rec);
            memset(w, 0, sizeof *w);
        }
    }
}

static void campaign_loop(campaign *cp)
{
    struct pollfd *pfd = NULL;
    size_t *slot = NULL;
    for (size_t live; (live = live_workers(cp)) > 0;) {
        struct pollfd *p = realloc(pfd, cp->nw * sizeof *p);
        size_t *s = realloc(slot, cp->nw * sizeof *s);
        pfd = p != NULL ? p : pfd;
        slot = s != NULL ? s : slot;
        if (p == NULL || s == NULL) {
            internal_error(cp->c, "run", "out of memory");
            cp->error = true;
            abandon_all(cp);
            break;
        }
        size_t n = 0;
        for (size_t i = 0; i < cp->nw; i++) {
            if (cp->w[i].pid > 0) {
                pfd[n] = (struct pollfd){.fd = cp->w[i].fd, .events = POLLIN};
                slot[n++] = i;
            }
        }
        int rc = poll(pfd, n, poll_timeout(cp));
        for (size_t k = 0; rc > 0 && k < n; k++) {
            /* A slot may have been reused by a rerun during this pass. */
            if (pfd[k].revents != 0 && cp->w[slot[k]].pid > 0 && cp->w[slot[k]].fd == pfd[k].fd) {
                drain(cp, slot[k]);
            }
        }
        check_limits(cp);
        progress(cp);
    }
    free(pfd);
    free(slot);
}

static int campaign_start(campaign *cp)
{
    const run_opts *o = cp->o;
    cp->shard = pl__cli_slice_of(o->seed_lo, o->seed_hi, o->shard_k, o->shard_n, 0, 1);
    pl__cli_slice_count_text(&cp->shard, cp->total, sizeof cp->total);
    for (uint32_t j = 0; j < o->jobs; j++) {
        pl__cli_slice s = pl__cli_slice_of(o->seed_lo, o->seed_hi, o->shard_k, o->shard_n, j,
                                           o->jobs);
        if (!s.empty && spawn_seed_worker(cp, s) == NULL) {
            /* The loop still collects the workers already started. */
            cp->error = true;
            return ST_INTERNAL;
        }
    }
    return 0;
}

/* pl_sometimes sites reached in this campaign but never true. Only a
 * complete campaign can tell; a shard only sees part of it, so there it
 * is a note for the CI job that gathers all shards. */
static void check_sometimes(campaign *cp)
{
    size_t n = 0;
    const pl__sometimes_site *sites = pl__sometimes_sites(&n);
    if (cp->stopped || cp->error || cp->sites_received != cp->sites_expected ||
        (cp->first != NULL && !cp->o->keep_going) || n != cp->nsites) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t hits = cp->sites[2 * i], reached = cp->sites[2 * i + 1];
        /* A site no run reached counts against the scenario written in the
         * same file; sites elsewhere belong to other scenarios. */
        bool own = cp->sc->source_file != NULL && strcmp(sites[i].file, cp->sc->source_file) == 0;
        if (hits > 0 || (reached == 0 && !own)) {
            continue;
        }
        if (cp->o->shard_n > 1) {
            fprintf(cp->o->text,
                    "note: %s: pl_sometimes(\"%s\") at %s:%d was never true in this shard (%" PRIu64
                    " evaluations)\n",
                    cp->sc->name, sites[i].msg, sites[i].file, sites[i].line, reached);
            continue;
        }
        report *rp = calloc(1, sizeof *rp);
        if (rp == NULL) {
            cp->error = true;
            return;
        }
        rp->sc = cp->sc;
        rp->f.kind = PL_FINDING_ASSERTION;
        if (reached == 0) {
            snprintf(rp->f.message, sizeof rp->f.message,
                     "pl_sometimes(\"%s\") at %s:%d was never even reached over the campaign",
                     sites[i].msg, sites[i].file, sites[i].line);
        } else {
            snprintf(rp->f.message, sizeof rp->f.message,
                     "pl_sometimes(\"%s\") at %s:%d was evaluated %" PRIu64
                     " times over the campaign and never true",
                     sites[i].msg, sites[i].file, sites[i].line, reached);
        }
        /* Printed at once: these come after the campaign's other output. */
        make_reproduce(cp->c, cp->o, rp);
        print_report(cp->o, rp);
        cp->findings++;
        if (cp->first == NULL) {
            cp->first = rp;
        } else {
            free(rp);
        }
    }
}

static void shrink_report(const cli *c, const run_opts *o, report *rp);

/* What one scenario's campaign came to, for the summary and the exit. */
typedef struct outcome {
    const pl_scenario *sc;
    bool ran;
    char total[24];         /* seeds, in decimal; "" for none */
    uint64_t runs, findings, distinct;
    bool distinct_partial;
    bool stopped;
    uint64_t resume_seed;   /* stopped: every seed below it is done */
    double seconds;
    pl_finding_kind first;  /* NONE: clean */
    bool first_has_seed;
    uint64_t first_seed;
} outcome;

/* The outcome's seed count as text ("0" when it has none). */
static const char *total_of(const outcome *out)
{
    return out->total[0] != '\0' ? out->total : "0";
}

static void outcome_of(const campaign *cp, outcome *out)
{
    out->sc = cp->sc;
    out->ran = true;
    snprintf(out->total, sizeof out->total, "%s", cp->total);
    out->runs = cp->done;
    out->findings = cp->findings;
    out->distinct = cp->hashes.count;
    out->distinct_partial = cp->hashes.full;
    out->stopped = cp->stopped;
    out->resume_seed = cp->resume_seed;
    out->seconds = (double)(cp->end_ms - cp->start_ms) / 1000.0;
    out->first = cp->first != NULL ? cp->first->f.kind : PL_FINDING_NONE;
    out->first_has_seed = cp->first != NULL && cp->first->has_seed;
    out->first_seed = cp->first != NULL ? cp->first->seed : 0;
}

static void print_summary_line(const run_opts *o, const outcome *out)
{
    FILE *f = o->text;
    if (!out->ran) {
        fprintf(f, "%s: not run (%s)\n", out->sc->name,
                interrupted ? "interrupted" : "--time ran out");
        return;
    }
    fprintf(f, "%s: %" PRIu64 " run%s%s, %" PRIu64 " finding%s, %s%" PRIu64
               " distinct schedule%s, %.1f s",
            out->sc->name, out->runs, out->runs == 1 ? "" : "s",
            o->check_det ? " (each twice)" : "", out->findings, out->findings == 1 ? "" : "s",
            out->distinct_partial ? "at least " : "", out->distinct,
            out->distinct == 1 ? "" : "s", out->seconds);
    if (out->stopped) {
        fprintf(f, "; %s after %" PRIu64 " of %s seeds", interrupted ? "interrupted" :
                "stopped by --time", out->runs, total_of(out));
        if (out->resume_seed != UINT64_MAX) {
            fprintf(f, ", every seed%s below %" PRIu64 " done",
                    o->shard_n > 1 ? " of this shard" : "", out->resume_seed);
        }
    }
    if (out->sc->expect != NULL && out->first == PL_FINDING_NONE) {
        fprintf(f, "; expected %s, not found", out->sc->expect);
    }
    fputc('\n', f);
    flush_out(f);
}

static void campaign_free(campaign *cp)
{
    free(cp->first);
    free(cp->hashes.slots);
    free(cp->sites);
    for (size_t i = 0; i < cp->nw; i++) {
        free(cp->w[i].buf);
    }
    free(cp->w);
}

/* Runs one scenario's seeds. Returns 0 or ST_INTERNAL. */
static int campaign_run(const cli *c, const run_opts *o, const pl_scenario *sc, outcome *out)
{
    campaign cp;
    memset(&cp, 0, sizeof cp);
    cp.c = c;
    cp.o = o;
    cp.sc = sc;
    cp.limit = UINT64_MAX;
    cp.resume_seed = UINT64_MAX;
    pl__sometimes_sites(&cp.nsites);
    cp.sites = calloc(2 * cp.nsites + 1, sizeof *cp.sites);
    cp.start_ms = cp.progress_ms = now_ms();
    if (cp.sites == NULL) {
        cp.error = true;
    } else {
        campaign_start(&cp);
    }
    campaign_loop(&cp);
    cp.end_ms = now_ms();
    clear_progress(&cp);
    if (stdout_errno != 0) {
        /* Nobody reads any more: no shrink, no report. */
        outcome_of(&cp, out);
        campaign_free(&cp);
        return 0;
    }
    if (cp.first != NULL && !o->keep_going) {
        shrink_report(c, o, cp.first);
        print_report(o, cp.first);
    }
    check_sometimes(&cp);
    outcome_of(&cp, out);
    if (!o->quiet) {
        print_summary_line(o, out);
    }
    bool error = cp.error;
    campaign_free(&cp);
    return error ? ST_INTERNAL : 0;
}

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

/* Waits for the child's result until it exits or the deadline passes. */
static void collect_child(pid_t pid, int fd, void *result, size_t size, int64_t deadline_ms,
                          child_end *end)
{
    size_t got = 0;
    for (;;) {
        int64_t left = deadline_ms - now_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rc = poll(&p, 1, left > 1000 ? 1000 : (left < 0 ? 0 : (int)left));
        if (rc > 0) {
            ssize_t n = read(fd, (char *)result + got, size - got);
            if (n <= 0) {
                break;
            }
            got += (size_t)n;
        } else if (interrupted || left <= 0) {
            kill(pid, SIGKILL);
            end->timed_out = true;
            break;
        }
    }
    while (waitpid(pid, &end->status, 0) < 0 && errno == EINTR) {
    }
    end->complete = got == size && !end->timed_out;
}

/* Where a child's stdout goes. */
typedef enum child_out {
    OUT_DISCARD,    /* /dev/null: the shrinker's thousands of candidate runs */
    OUT_CAPTURE,    /* a capture file, buffered: many runs */
    OUT_CAPTURE_ALL /* a capture file, unbuffered: one run whose crash must not lose it */
} child_out;

/* Whether the poll budget stopped the child; releases its record. */
static void child_hang(pl__hang *hang, child_end *end)
{
    end->hung = !end->complete && pl__hang_ended(hang, end->status);
    if (end->hung) {
        pl__hang_finding(hang, &end->hang);
    }
    pl__hang_unmap(hang);
}

/* Runs fn(ctx, result) in a child under the poll budget: user code there
 * may crash or hang. The tail of a captured stdout lands in end->output.
 * Returns 0 (see *end) or a negative errno when no child could start. */
static int run_in_child(child_fn fn, const void *ctx, void *result, size_t size,
                        int64_t deadline_ms, child_out where, child_end *end)
{
    bool capture = where != OUT_DISCARD;
    int fds[2];
    memset(end, 0, sizeof *end);
    fflush(NULL);
    int out = capture ? capture_file() : open("/dev/null", O_WRONLY);
    if (out < 0) {
        return capture ? out : -errno;
    }
    if (pipe(fds) != 0) {
        int rc = -errno;
        close(out);
        return rc;
    }
    pl__hang *hang = pl__hang_map();
    int64_t start = now_ms();
    pid_t pid = fork();
    if (pid < 0) {
        int rc = -errno;
        close(fds[0]);
        close(fds[1]);
        close(out);
        pl__hang_unmap(hang);
        return rc;
    }
    if (pid == 0) {
        signal(SIGINT, SIG_IGN);
        close(fds[0]);
        capture_stdout(out, where != OUT_CAPTURE);
        pl__budget_arm(hang);
        fn(ctx, result);
        write_all(fds[1], result, size);
        fflush(NULL);
        _exit(ST_CLEAN);
    }
    close(fds[1]);
    collect_child(pid, fds[0], result, size, deadline_ms, end);
    close(fds[0]);
    if (capture) {
        read_tail(out, &end->output);
    }
    close(out);
    end->seconds = (double)(now_ms() - start) / 1000.0;
    child_hang(hang, end);
    return 0;
}

/* The finding of a child that died or ran out of time. */
static pl_finding_kind child_lost(const child_end *end, const char *what, char *buf, size_t len)
{
    char text[160];
    if (end->hung) {
        snprintf(buf, len, "%s", end->hang.message);
        return PL_FINDING_LIVELOCK;
    }
    if (end->timed_out) {
        snprintf(buf, len, "%s was still running at the time limit and was killed", what);
        return PL_FINDING_LIVELOCK;
    }
    describe_status(end->status, text, sizeof text);
    textf(buf, len, "%s %s", what, text);
    return PL_FINDING_CRASH;
}

static int report_once(const cli *c, const run_opts *o, report *rp)
{
    make_reproduce(c, o, rp);
    print_report(o, rp);
    free(rp);
    return 0;
}

/* ---- Shrinking, in a child: candidate runs execute user code --------- */

typedef struct shrink_job {
    const char *in;
    const char *out;                 /* NULL: the shrinker's default */
    const pl_sim_shrink_limits *limits;
    const char *indent;              /* of the printed lines */
} shrink_job;

typedef struct shrink_msg {
    int rc;
    char err[512];
    char out[PATH_MAX];              /* where the shrunk replay went */
    char text[8192];                 /* what pl__shrink_print says */
} shrink_msg;

/* The shrinker names errors with pl_strerror, which knows only pollen's
 * codes: replace its "unknown error" by the system's name of the errno
 * (EISDIR: "Is a directory", ENOSPC: "No space left on device"). */
static void name_errno(char *err, size_t len, int rc)
{
    static const char unknown[] = "unknown error";
    size_t n = strlen(err), u = sizeof unknown - 1;
    if (strcmp(error_text(rc), pl_strerror(rc)) == 0 || n < u ||
        strcmp(err + n - u, unknown) != 0) {
        return;
    }
    snprintf(err + n - u, len - (n - u), "%s", error_text(rc));
}

static void shrink_child(const void *ctx, void *result)
{
    const shrink_job *sj = ctx;
    shrink_msg *m = result;
    pl_sim_shrink_result res;
    pl__budget_shrink_in_children();
    if (sj->out != NULL) {
        snprintf(m->out, sizeof m->out, "%s", sj->out);
    } else {
        pl__shrink_default_out(sj->in, m->out, sizeof m->out);
    }
    m->rc = pl__shrink_file_ex(sj->in, m->out, sj->limits, &res, m->err, sizeof m->err);
    name_errno(m->err, sizeof m->err, m->rc);
    if (m->rc == 0) {
        /* One byte short: the text stays NUL-terminated when it is cut. */
        FILE *f = fmemopen(m->text, sizeof m->text - 1, "w");
        if (f != NULL) {
            pl__shrink_print(f, &res, NULL, sj->indent);
            fclose(f);
        }
    }
    pl_sim_shrink_result_free(&res);
}

/* Shrinks replay file `in` in a child process. Returns 0 with m filled,
 * or nonzero with the reason in m->err. */
static int shrink_isolated(const char *in, const char *out,
                           const pl_sim_shrink_limits *limits, const char *indent, shrink_msg *m)
{
    shrink_job sj = {in, out, limits, indent};
    child_end end;
    memset(m, 0, sizeof *m);
    /* The shrinker keeps its own time budget; this is the backstop. */
    pl_time budget = limits->time_ns > 0 ? limits->time_ns : 30 * PL_S;
    int64_t deadline = now_ms() + budget / PL_MS + 60 * 1000;
    int rc = run_in_child(shrink_child, &sj, m, sizeof *m, deadline, OUT_DISCARD, &end);
    if (rc != 0) {
        snprintf(m->err, sizeof m->err, "cannot start the shrinker: %s", strerror(-rc));
        return ST_INTERNAL;
    }
    if (!end.complete) {
        char text[160];
        child_lost(&end, "the shrinker's process", text, sizeof text);
        snprintf(m->err, sizeof m->err, "%s (a candidate schedule crashed or hung)", text);
        return ST_INTERNAL;
    }
    if (m->rc != 0 && m->err[0] == '\0') {
        snprintf(m->err, sizeof m->err, "%s", error_text(m->rc));
    }
    return m->rc != 0 ? ST_INTERNAL : 0;
}

/* The first finding of `run`, shrunk to the few decisions that matter.
 * Crashes, watchdog hangs (not positioned) and nondeterminism are not
 * shrunk: their candidate runs would not fail the same way, or not at
 * all. A poll the budget stopped is: livelock candidates run in children
 * under the same budget. */
static void shrink_report(const cli *c, const run_opts *o, report *rp)
{
    int64_t left_ms = o->deadline_ms - now_ms();
    if (o->no_shrink || !rp->positioned || rp->replay[0] == '\0' || left_ms <= 0 ||
        rp->f.kind == PL_FINDING_CRASH || rp->f.kind == PL_FINDING_NONDETERMINISM) {
        return;
    }
    pl_sim_shrink_limits limits = {o->shrink_ns, 0};
    if (left_ms < o->shrink_ns / PL_MS) {
        limits.time_ns = left_ms * PL_MS;
    }
    shrink_msg *m = malloc(sizeof *m);
    if (m == NULL) {
        return;
    }
    pl__budget_set_watchdog(o->watchdog_ns);
    if (shrink_isolated(rp->replay, NULL, &limits, "  ", m) == 0) {
        char prog[PATH_MAX], arg[PATH_MAX + 8];
        pl__cli_shell_quote(c->argv0, prog, sizeof prog);
        pl__cli_shell_quote(m->out, arg, sizeof arg);
        snprintf(rp->shrunk, sizeof rp->shrunk, "%s", m->out);
        textf(rp->shrunk_reproduce, sizeof rp->shrunk_reproduce, "%s replay %s", prog, arg);
        snprintf(rp->shrink_text, sizeof rp->shrink_text, "%s", m->text);
    } else {
        textf(rp->shrink_text, sizeof rp->shrink_text, "  not shrunk: %s\n", m->err);
    }
    free(m);
}

typedef struct real_result {
    pl_finding_kind kind;
    char message[1024];
} real_result;

/* setup, pl_run, check, then the order of pl_sim_run (pollen/sim.h):
 * cancel every task, so none still points into the state, run teardown
 * while the executor is alive (releasing a task handle needs it), and
 * destroy the executor last. */
static void real_scenario(const void *ctx, void *result)
{
    const pl_scenario *sc = ctx;
    real_result *res = result;
    void *state = calloc(1, sc->state_size > 0 ? sc->state_size : 1);
    pl_executor *ex = NULL;
    int rc = state != NULL ? pl_executor_create(&ex, NULL) : PL_ENOMEM;
    if (rc < 0) {
        res->kind = PL_FINDING_ASSERTION;
        snprintf(res->message, sizeof res->message, "cannot create the executor: %s",
                 error_text(rc));
    } else if ((rc = sc->setup(ex, state)) < 0) {
        res->kind = PL_FINDING_ASSERTION;
        snprintf(res->message, sizeof res->message, "setup failed: %s", error_text(rc));
    } else if ((rc = pl_run(ex)) < 0) {
        res->kind = rc == PL_EDEADLK ? PL_FINDING_DEADLOCK : PL_FINDING_ASSERTION;
        snprintf(res->message, sizeof res->message, "pl_run failed: %s (%zu tasks left)",
                 error_text(rc), pl_executor_live_tasks(ex));
    } else if (sc->check != NULL && sc->check(ex, state, res->message, sizeof res->message)) {
        res->kind = PL_FINDING_ASSERTION;
    }
    if (ex != NULL) {
        pl_executor_cancel_all(ex);
    }
    if (state != NULL && sc->teardown != NULL) {
        sc->teardown(state);
    }
    pl_executor_destroy(ex);
    free(state);
}

static int real_one(const cli *c, const run_opts *o, const pl_scenario *sc, outcome *out)
{
    real_result res;
    child_end end;
    memset(&res, 0, sizeof res);
    pl_time limit = o->time_ns > 0 ? o->time_ns : DEFAULT_REAL_LIMIT_NS;
    int rc = run_in_child(real_scenario, sc, &res, sizeof res, now_ms() + limit / PL_MS,
                          OUT_CAPTURE_ALL, &end);
    if (rc != 0) {
        return internal_error(c, "run", "cannot start a process: %s", strerror(-rc));
    }
    if (!end.complete && !interrupted) {
        res.kind = child_lost(&end, "the scenario's process", res.message, sizeof res.message);
    }
    memset(out, 0, sizeof *out);
    out->sc = sc;
    out->ran = true;
    snprintf(out->total, sizeof out->total, "1");
    out->runs = 1;
    out->first = interrupted ? PL_FINDING_NONE : res.kind;
    out->findings = out->first != PL_FINDING_NONE;
    out->seconds = end.seconds;
    out->stopped = interrupted != 0;
    if (interrupted) {
        fprintf(o->text, "%s: real backend run interrupted\n", sc->name);
    } else if (res.kind != PL_FINDING_NONE) {
        report *rp = calloc(1, sizeof *rp);
        if (rp == NULL) {
            return internal_error(c, "run", "out of memory");
        }
        rp->sc = sc;
        rp->real = true;
        snprintf(rp->origin, sizeof rp->origin, "real backend");
        rp->f.kind = res.kind;
        snprintf(rp->f.message, sizeof rp->f.message, "%s", res.message);
        rp->output = end.output;
        return report_once(c, o, rp);
    } else if (!o->quiet) {
        fprintf(o->text, "%s: real backend ok, %.1f s\n", sc->name, out->seconds);
    }
    return 0;
}

typedef struct bounded_job {
    const run_opts *o;
    const pl_scenario *sc;
} bounded_job;

typedef struct bounded_msg {
    int rc;                  /* pl_sim_explore_bounded's */
    uint64_t runs, schedules;
    uint32_t levels_done, deviations;
    bool exhausted, budget_hit, truncated;
    pl_finding finding;
    char replay[PATH_MAX];   /* "" when not written */
    char replay_error[256];
} bounded_msg;

/* In the child: the whole exploration, then the failing run's replay. */
static void bounded_explore(const void *ctx, void *result)
{
    const bounded_job *bj = ctx;
    bounded_msg *m = result;
    pl_sim_options so;
    pl_sim_bounded_result res;
    sim_options(bj->o, 0, &so);
    m->rc = pl_sim_explore_bounded(bj->sc, bj->o->bound_k, 0, &so, &res);
    m->runs = res.runs;
    m->schedules = res.schedules;
    m->levels_done = res.levels_done;
    m->deviations = res.deviations;
    m->exhausted = res.exhausted;
    m->budget_hit = res.budget_hit;
    m->truncated = res.truncated;
    m->finding = res.finding;
    if (m->rc == 0 && res.finding.kind != PL_FINDING_NONE) {
        int n = snprintf(m->replay, sizeof m->replay, "%s/%s-bounded%" PRIu32 ".replay",
                         bj->o->out_dir, bj->sc->name, bj->o->bound_k);
        int rc = n > 0 && (size_t)n < sizeof m->replay ? make_dirs(bj->o->out_dir)
                                                         : -ENAMETOOLONG;
        rc = rc == 0 ? pl_sim_write_replay(bj->sc, &so, &res.run, m->replay) : rc;
        if (rc != 0) {
            textf(m->replay_error, sizeof m->replay_error, "cannot write %s: %s", m->replay,
                  error_text(rc));
            m->replay[0] = '\0';
        }
    }
    pl_sim_bounded_result_free(&res);
}

/* Which decision kinds a bounded claim covers: the enumeration deviates
 * only at consulted decisions, and a kind whose knob is off is never
 * consulted, so its faults were not explored at all. Appends
 * " over decision kinds a, b; not explored: c (off)" to buf. */
static void bounded_kinds(const run_opts *o, char *buf, size_t len)
{
    pl__dec_knobs k;
    knobs_for(o, 0, &k);
    static const char *const heads[2] = {" over decision kinds ", "; not explored: "};
    size_t used = strlen(buf);
    for (int pass = 0; pass < 2; pass++) {
        bool first = true;
        for (uint32_t i = 0; i < PL_DECIDE__COUNT; i++) {
            if (k.kind[i].enabled != (pass == 0) || used >= len) {
                continue;
            }
            int n = snprintf(buf + used, len - used, "%s%s%s", first ? heads[pass] : ", ",
                             pl__dec_kind_name(i), pass == 0 ? "" : " (off)");
            used += n > 0 ? (size_t)n : 0;
            first = false;
        }
    }
}

static void bounded_summary(const run_opts *o, const outcome *out, const bounded_msg *m,
                            const child_end *end)
{
    char kinds[512] = "";
    bounded_kinds(o, kinds, sizeof kinds);
    FILE *f = o->text;
    if (!end->complete) {
        const char *why = end->hung       ? "a poll never returned"
                          : !out->stopped ? "the process died"
                          : interrupted   ? "interrupted"
                                          : "stopped by --time";
        fprintf(f, "%s: %s, %.1f s; %s before the exploration finished\n", out->sc->name,
                o->strategy, out->seconds, why);
        return;
    }
    fprintf(f, "%s: %s, %" PRIu64 " runs, %" PRIu64 " schedules, %.1f s", out->sc->name,
            o->strategy, m->runs, m->schedules, out->seconds);
    if (m->exhausted) {
        fprintf(f, "; verified: all %" PRIu64 " schedules with at most %" PRIu32 " deviation%s "
                   "explored, no finding,%s",
                m->schedules, o->bound_k, o->bound_k == 1 ? "" : "s", kinds);
    } else if (m->finding.kind == PL_FINDING_NONE) {
        fprintf(f, "; schedules with fewer than %" PRIu32 " deviations done%s,%s",
                m->levels_done, m->truncated ? " (a run outgrew the decision recorder)" : "",
                kinds);
    }
    fputc('\n', f);
}

static report *bounded_report(const pl_scenario *sc, const bounded_msg *m, const child_end *end)
{
    report *rp = calloc(1, sizeof *rp);
    if (rp == NULL) {
        return NULL;
    }
    rp->sc = sc;
    rp->output = end->output;
    if (end->complete) {
        rp->positioned = true;
        rp->f = m->finding;
        snprintf(rp->replay, sizeof rp->replay, "%s", m->replay);
        snprintf(rp->note, sizeof rp->note, "%s", m->replay_error);
        snprintf(rp->origin, sizeof rp->origin, "schedule with %" PRIu32 " deviation%s",
                 m->deviations, m->deviations == 1 ? "" : "s");
    } else if (end->hung) {
        rp->positioned = true;
        rp->f = end->hang;
        snprintf(rp->origin, sizeof rp->origin, "one of the schedules explored");
    } else {
        rp->f.kind = child_lost(end, "the exploring process", rp->f.message,
                                sizeof rp->f.message);
        snprintf(rp->origin, sizeof rp->origin, "one of the schedules explored");
    }
    return rp;
}

/* --strategy bounded:K: every schedule with at most K deviations, in a
 * child; no seeds, so no jobs, shards or per-seed watchdog. */
static int bounded_one(const cli *c, const run_opts *o, const pl_scenario *sc, outcome *out)
{
    bounded_msg m;
    child_end end;
    bounded_job bj = {o, sc};
    memset(&m, 0, sizeof m);
    int rc = run_in_child(bounded_explore, &bj, &m, sizeof m, o->deadline_ms, OUT_CAPTURE,
                          &end);
    if (rc != 0) {
        return internal_error(c, "run", "cannot start a process: %s", strerror(-rc));
    }
    if (end.complete && m.rc < 0) {
        return internal_error(c, "run", "%s: the exploration failed: %s", sc->name,
                              error_text(m.rc));
    }
    memset(out, 0, sizeof *out);
    out->sc = sc;
    out->ran = true;
    out->runs = m.runs;
    out->distinct = m.schedules;
    out->seconds = end.seconds;
    out->stopped = end.timed_out && (interrupted || now_ms() >= o->deadline_ms);
    bool found = end.complete ? m.finding.kind != PL_FINDING_NONE : !out->stopped;
    if (found) {
        report *rp = bounded_report(sc, &m, &end);
        if (rp == NULL) {
            return internal_error(c, "run", "out of memory");
        }
        out->first = rp->f.kind;
        out->findings = 1;
        rc = rp->note[0] != '\0' ? ST_INTERNAL : 0;
        shrink_report(c, o, rp);
        report_once(c, o, rp);
    }
    if (!o->quiet) {
        bounded_summary(o, out, &m, &end);
    }
    return rc;
}

/* ======================================================================
 * `run`: the command
 * ==================================================================== */

static void summary_json_scenario(const outcome *out)
{
    FILE *f = stdout;
    fputs("{\"scenario\":", f);
    json_string(f, out->sc->name);
    fprintf(f, ",\"ran\":%s,\"seeds\":%s,\"runs\":%" PRIu64 ",\"findings\":%" PRIu64
               ",\"distinct_schedules\":%" PRIu64 ",\"distinct_exact\":%s,\"seconds\":%.3f",
            out->ran ? "true" : "false", total_of(out), out->runs, out->findings, out->distinct,
            out->distinct_partial ? "false" : "true", out->seconds);
    fprintf(f, ",\"complete\":%s", out->ran && !out->stopped ? "true" : "false");
    if (out->stopped && out->resume_seed != UINT64_MAX) {
        fprintf(f, ",\"resume_seed\":%" PRIu64, out->resume_seed);
    }
    fputs(",\"first\":", f);
    if (out->first != PL_FINDING_NONE) {
        fputs("{\"kind\":", f);
        json_string(f, pl_finding_name(out->first));
        if (out->first_has_seed) {
            fprintf(f, ",\"seed\":%" PRIu64 "}", out->first_seed);
        } else {
            fputs(",\"seed\":null}", f);
        }
    } else {
        fputs("null", f);
    }
    fputs(",\"expect\":", f);
    if (out->sc->expect != NULL) {
        json_string(f, out->sc->expect);
    } else {
        fputs("null", f);
    }
    fputc('}', f);
}

static void summary_json(const run_opts *o, const outcome *outs, size_t n, int status)
{
    FILE *f = stdout;
    fprintf(f, "{\"summary\":{\"exit\":%d,\"real\":%s", status, o->real ? "true" : "false");
    if (!o->real) {
        fprintf(f, ",\"seeds\":\"%" PRIu64 "..%" PRIu64 "\",\"shard\":\"%" PRIu32 "/%" PRIu32
                   "\",\"strategy\":",
                o->seed_lo, o->seed_hi, o->shard_k, o->shard_n);
        json_string(f, o->strategy);
    }
    fprintf(f, ",\"interrupted\":%s,\"scenarios\":[", interrupted ? "true" : "false");
    for (size_t i = 0; i < n; i++) {
        if (i > 0) {
            fputc(',', f);
        }
        summary_json_scenario(&outs[i]);
    }
    fputs("]}}\n", f);
    flush_out(f);
}

static int run_status(const outcome *outs, size_t n, bool error)
{
    if (error) {
        return ST_INTERNAL;
    }
    for (size_t i = 0; i < n; i++) {
        if (outs[i].first != PL_FINDING_NONE) {
            return ST_FINDING_BASE + (int)outs[i].first;
        }
    }
    return interrupted ? ST_INTERRUPTED : ST_CLEAN;
}

/* ---- PCT's guarantee: n and k measured in a child (user code runs) --- */

typedef struct pct_job {
    const run_opts *o;
    const pl_scenario *sc;
} pct_job;

typedef struct pct_msg {
    int rc;
    uint32_t tasks;
    uint64_t steps;
} pct_msg;

static void pct_measure(const void *ctx, void *result)
{
    const pct_job *pj = ctx;
    pct_msg *m = result;
    pl_sim_options so;
    sim_options(pj->o, 0, &so);
    m->rc = pl_sim_pct_estimate(pj->sc, &so, &m->tasks, &m->steps);
}

/* PCT's horizon for every seed of the campaign of `sc`, measured once in
 * a child; 0 when it is not PCT without K, or the measure failed (then
 * each run measures it itself). */
static uint64_t pct_horizon_of(const run_opts *o, const pl_scenario *sc)
{
    pl_sim_options so;
    sim_options(o, 0, &so);
    if (o->real || o->bounded || !pl__strategy_needs_horizon(&so)) {
        return 0;
    }
    pct_job pj = {o, sc};
    pct_msg m;
    child_end end;
    memset(&m, 0, sizeof m);
    int rc = run_in_child(pct_measure, &pj, &m, sizeof m, now_ms() + o->watchdog_ns / PL_MS,
                          OUT_DISCARD, &end);
    if (rc != 0 || !end.complete || m.rc != 0) {
        return 0;
    }
    return m.steps > 0 ? m.steps : 1;
}

/* x^n by squaring (no libm for one power). */
static double power(double x, uint64_t n)
{
    double r = 1.0;
    for (; n > 0; n >>= 1, x *= x) {
        if (n & 1) {
            r *= x;
        }
    }
    return r;
}

/* After a pct:D campaign: the paper's bound 1/(n k^(D-1)) for one run and
 * what it promises over the runs made. n and k come from the scenario's
 * production run, as PCT's default horizon does (pct:D:K sets k). */
static void pct_guarantee_line(const run_opts *o, const pl_scenario *sc, const outcome *out)
{
    pct_job pj = {o, sc};
    pct_msg m;
    child_end end;
    pl__strategy_spec spec;
    memset(&m, 0, sizeof m);
    int rc = run_in_child(pct_measure, &pj, &m, sizeof m, now_ms() + o->watchdog_ns / PL_MS,
                          OUT_DISCARD, &end);
    if (rc != 0 || !end.complete || m.rc != 0 ||
        pl__strategy_parse(o->strategy, &spec, NULL, 0) != 0) {
        fprintf(o->text, "%s: %s guarantee unknown (the production run could not be measured)\n",
                sc->name, o->strategy);
        return;
    }
    /* The bound holds for what the change points covered: the first k
     * schedule steps (the horizon they were drawn over), and the schedule
     * decisions only, which are all PCT orders. */
    uint64_t k = spec.horizon > 0 ? spec.horizon : m.steps;
    double p = pl_sim_pct_guarantee(o->pct_depth, m.tasks, k);
    double miss = power(1.0 - p, out->runs);
    char miss_text[32] = "< 1e-300"; /* (1-p)^runs underflows: say so, never "<= 0" */
    if (miss >= 1e-300) {
        snprintf(miss_text, sizeof miss_text, "<= %.3g", miss);
    }
    fprintf(o->text,
            "%s: %s guarantee: each run finds a scheduling bug of depth %" PRIu32 " within the "
            "first k schedule steps with probability >= 1/(n*k^%" PRIu32 ") = %.3g (n = %" PRIu32
            " task%s, k = %" PRIu64 " schedule step%s, %s); all %" PRIu64
            " runs miss such a bug with probability %s. PCT orders schedule decisions only: "
            "every other decision kind was drawn at random, with no such bound\n",
            sc->name, o->strategy, o->pct_depth, o->pct_depth - 1, p, m.tasks,
            m.tasks == 1 ? "" : "s", k, k == 1 ? "" : "s",
            spec.horizon > 0 ? "as given" : "the longest of the production run and 8 PCT runs",
            out->runs, miss_text);
    flush_out(o->text);
}

/* The exit status once stdout failed: a reader that went away (`| head`)
 * is no error of the run, only the end of it; anything else (a full disk)
 * is one. */
static int stdout_status(const cli *c, int status)
{
    if (stdout_errno == EPIPE) {
        return ST_OUTPUT_CLOSED;
    }
    if (stdout_errno != 0) {
        return internal_error(c, "run", "cannot write to stdout: %s", strerror(stdout_errno));
    }
    return status;
}

static int run_all(const cli *c, const run_opts *o, const pl_scenario **sel, size_t nsel)
{
    outcome *outs = calloc(nsel + 1, sizeof *outs);
    if (outs == NULL) {
        return internal_error(c, "run", "out of memory");
    }
    bool error = false;
    for (size_t i = 0; i < nsel && stdout_errno == 0; i++) {
        outs[i].sc = sel[i];
        if (error || interrupted || now_ms() >= o->deadline_ms) {
            if (!o->quiet && !error) {
                print_summary_line(o, &outs[i]);
            }
            continue;
        }
        run_opts oi = *o;
        oi.pct_horizon = pct_horizon_of(o, sel[i]);
        int rc = o->real      ? real_one(c, &oi, sel[i], &outs[i])
                 : o->bounded ? bounded_one(c, &oi, sel[i], &outs[i])
                              : campaign_run(c, &oi, sel[i], &outs[i]);
        if (rc == 0 && o->pct_depth > 0 && !o->quiet && outs[i].ran) {
            pct_guarantee_line(o, sel[i], &outs[i]);
        }
        error = error || rc != 0;
        flush_out(o->text);
    }
    int status = run_status(outs, nsel, error);
    if (o->json && stdout_errno == 0) {
        summary_json(o, outs, nsel, status);
    }
    free(outs);
    flush_out(stdout);
    return stdout_status(c, status);
}

static int cmd_run(cli *c, int argc, char **argv)
{
    run_opts o;
    int rc = run_opts_parse(c, argc, argv, &o);
    const pl_scenario **sel = NULL;
    size_t nsel = 0;
    if (rc == 0) {
        sel = calloc(c->nall + 1, sizeof *sel);
        rc = sel == NULL ? internal_error(c, "run", "out of memory")
                         : select_scenarios(c, "run", o.patterns, o.npatterns, sel, &nsel);
    }
    if (rc == 0) {
        struct sigaction sa, old, ign, old_pipe;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_interrupt;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old);
        /* A closed stdout is an EPIPE the parent handles (stdout_errno),
         * and workers inherit this: a worker dying of SIGPIPE would be
         * taken for a crash of user code. */
        memset(&ign, 0, sizeof ign);
        ign.sa_handler = SIG_IGN;
        sigemptyset(&ign.sa_mask);
        sigaction(SIGPIPE, &ign, &old_pipe);
        rc = run_all(c, &o, sel, nsel);
        sigaction(SIGPIPE, &old_pipe, NULL);
        sigaction(SIGINT, &old, NULL);
    }
    free(sel);
    free(o.patterns);
    return rc < 0 ? ST_CLEAN : rc;
}

/* ======================================================================
 * `replay`
 * ==================================================================== */

typedef struct replay_opts {
    char **files;
    size_t nfiles;
    const char *scenario;   /* for raw fuzzer inputs */
    const char *chrome;     /* --chrome-trace OUT.json */
    bool trace, quiet, no_fork;
    pl_time watchdog_ns;
    pl_time poll_cost_ns;   /* --poll-cost, when poll_cost_set */
    bool poll_cost_set;
} replay_opts;

enum replay_opt {
    P_SCENARIO, P_TRACE, P_CHROME, P_WATCHDOG, P_NO_FORK, P_QUIET, P_HELP, P_POLL_COST,
    P_POLL_BUDGET
};

static const opt_spec replay_specs[] = {
    [P_SCENARIO] = {"scenario", 0, "NAME"},
    [P_TRACE] = {"trace", 0, NULL},
    [P_CHROME] = {"chrome-trace", 0, "OUT.json"},
    [P_WATCHDOG] = {"watchdog", 0, "DURATION"},
    [P_NO_FORK] = {"no-fork", 0, NULL},
    [P_QUIET] = {"quiet", 'q', NULL},
    [P_HELP] = {"help", 'h', NULL},
    [P_POLL_COST] = {"poll-cost", 0, "DURATION"},
    [P_POLL_BUDGET] = {"poll-budget", 0, "DURATION"},
    {NULL, 0, NULL},
};

/* What one file asks for, once read. */
typedef struct replay_input {
    const char *path;
    const pl_scenario *sc;
    bool raw;               /* a libFuzzer input, not a replay file */
    pl__replay file;        /* parsed replay file (owned) */
    uint8_t *bytes;         /* raw input (owned) */
    size_t bytes_len;
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
} replay_input;

static int replay_opts_parse(const cli *c, int argc, char **argv, replay_opts *ro)
{
    opts_iter it = {c, "replay", replay_specs, argc, argv, 0, false, {NULL}};
    memset(ro, 0, sizeof *ro);
    ro->watchdog_ns = DEFAULT_WATCHDOG_NS;
    ro->files = calloc((size_t)argc + 1, sizeof *ro->files);
    if (ro->files == NULL) {
        return internal_error(c, "replay", "out of memory");
    }
    const char *v;
    for (int id; (id = opts_next(&it, &v)) != OPT_END;) {
        if (id == OPT_ERROR) {
            return ST_USAGE;
        } else if (id == OPT_POSITIONAL) {
            ro->files[ro->nfiles++] = (char *)v;
        } else if (id == P_HELP) {
            show_help(c, "replay");
            return -1;
        } else if (id == P_WATCHDOG && opt_duration(&it, id, v, &ro->watchdog_ns) != 0) {
            return ST_USAGE;
        } else if (id == P_POLL_COST && opt_poll_cost(&it, id, v, &ro->poll_cost_ns) != 0) {
        } else if (id == P_POLL_BUDGET && opt_poll_budget(&it, id, v) != 0) {
            return ST_USAGE;
        }
        ro->poll_cost_set = ro->poll_cost_set || id == P_POLL_COST;
        ro->scenario = id == P_SCENARIO ? v : ro->scenario;
        ro->chrome = id == P_CHROME ? v : ro->chrome;
        ro->trace = ro->trace || id == P_TRACE;
        ro->no_fork = ro->no_fork || id == P_NO_FORK;
        ro->quiet = ro->quiet || id == P_QUIET;
    }
    if (ro->nfiles == 0) {
        return usage_error(c, "replay", "which file? give one or more replay files");
    }
    if (ro->chrome != NULL && ro->nfiles != 1) {
        return usage_error(c, "replay", "'--chrome-trace' writes one trace: give exactly one FILE");
    }
    if (ro->scenario != NULL && catalogue_find(c, ro->scenario) == NULL) {
        return no_such_scenario(c, "replay", ro->scenario);
    }
    return 0;
}

static bool is_replay_file(const uint8_t *data, size_t len)
{
    static const char magic[] = "pollen-replay";
    return len >= sizeof magic - 1 && memcmp(data, magic, sizeof magic - 1) == 0;
}

/* Reads and classifies a file. Returns 0, ST_USAGE or ST_INTERNAL
 * (unreadable or malformed), with the message printed. */
static int replay_load(const cli *c, const replay_opts *ro, const char *path, replay_input *in)
{
    char err[512];
    memset(in, 0, sizeof *in);
    in->path = path;
    pl__replay_init(&in->file);
    char *bytes = NULL;
    int rc = pl__replay_read_path(path, &bytes, &in->bytes_len, err, sizeof err);
    if (rc < 0) {
        return internal_error(c, "replay", "%s", err);
    }
    in->bytes = (uint8_t *)bytes;
    in->file.poll_cost_ns = ro->poll_cost_ns;
    if (!is_replay_file(in->bytes, in->bytes_len)) {
        in->raw = true;
        if (ro->scenario == NULL) {
            return usage_hint(c, "replay", "pass --scenario NAME to run it as a raw fuzzer input",
                              "%s is not a replay file (no 'pollen-replay' header)", path);
        }
        in->sc = catalogue_find(c, ro->scenario);
        return 0;
    }
    rc = pl__replay_parse_buffer((const char *)in->bytes, in->bytes_len, &in->file, err,
                                 sizeof err);
    if (rc < 0) {
        return internal_error(c, "replay", "%s: %s", path, err);
    }
    const char *name = ro->scenario != NULL ? ro->scenario : in->file.scenario;
    in->sc = name != NULL ? catalogue_find(c, name) : NULL;
    if (name == NULL) {
        return internal_error(c, "replay", "%s names no scenario; pass --scenario NAME", path);
    }
    if (in->sc == NULL) {
        return internal_error(c, "replay",
                              "%s: scenario '%s' is not linked into this program; run it with "
                              "the program that has it ('%s list' shows what this one has)",
                              path, name, c->prog);
    }
    if (in->file.has_knobs) {
        pl__dec_knobs_format(&in->file.knobs, in->knobs, sizeof in->knobs);
    }
    in->file.poll_cost_ns = ro->poll_cost_set ? ro->poll_cost_ns : in->file.poll_cost_ns;
    return 0;
}

static void replay_input_free(replay_input *in)
{
    pl__replay_free(&in->file);
    free(in->bytes);
}

/* A file without decisions (written for a crash by a build that could
 * not record them) replays from its seed. */
static bool seed_only(const replay_input *in)
{
    return !in->raw && in->file.decisions_len == 0 && in->file.truncated;
}

/* The options that rerun the input: its bytes, its decision list (which
 * already holds the strategy's choices), or its seed. */
static void replay_sim_options(const replay_input *in, pl_sim_options *so)
{
    pl_sim_options_default(so);
    so->seed = in->file.seed;
    so->knobs = in->file.has_knobs ? in->knobs : NULL;
    so->poll_cost_ns = in->file.poll_cost_ns;
    if (in->raw) {
        so->source = PL_SIM_SOURCE_BYTES;
        so->bytes = in->bytes;
        so->bytes_len = in->bytes_len;
    } else if (seed_only(in)) {
        so->source = PL_SIM_SOURCE_SEED;
        so->strategy = in->file.strategy;
    } else {
        so->source = PL_SIM_SOURCE_LIST;
        so->decisions = in->file.decisions;
        so->decisions_len = in->file.decisions_len;
    }
}

static void print_replay_finding(const replay_input *in, const pl_sim_result *r)
{
    report rp;
    memset(&rp, 0, sizeof rp);
    rp.sc = in->sc;
    rp.has_seed = !in->raw;
    if (in->raw) {
        snprintf(rp.origin, sizeof rp.origin, "fuzzer input");
    }
    rp.seed = in->file.seed;
    rp.positioned = true;
    rp.f = r->finding;
    print_finding_head(stdout, NULL, &rp);
}

/* Compares a run made here with what its file expects. Returns 0 when
 * it matches, 1 (with why in err) when it differs. */
static int compare_run(const replay_input *in, const pl_sim_result *r, char *err, size_t len)
{
    const char *got = r->finding.kind != PL_FINDING_NONE ? pl_finding_name(r->finding.kind) : NULL;
    if (in->raw) {
        if (got == NULL) {
            snprintf(err, len, "no finding: this input does not reproduce a failure");
            return 1;
        }
        return 0;
    }
    const char *want = in->file.finding;
    if ((want == NULL) != (got == NULL) || (want != NULL && strcmp(want, got) != 0)) {
        snprintf(err, len, "expected %s, got %s%s%s", want != NULL ? want : "no finding",
                 got != NULL ? got : "no finding", r->diverged ? "; " : "",
                 r->diverged ? r->divergence : "");
        return 1;
    }
    if (!seed_only(in) && in->file.has_hash && in->file.hash != r->hash) {
        snprintf(err, len, "expected hash %016" PRIx64 ", got %016" PRIx64 "%s%s", in->file.hash,
                 r->hash, r->diverged ? "; " : "", r->diverged ? r->divergence : "");
        return 1;
    }
    return 0;
}

static void print_verdict(const replay_opts *ro, const replay_input *in, bool same,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void print_verdict(const replay_opts *ro, const replay_input *in, bool same,
                          const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s%s%s: ", ro->quiet ? safe_text(in->path).s : "  ", ro->quiet ? ": " : "",
           same ? "reproduced" : "DIFFERS");
    put_message(stdout, fmt, ap);
    putchar('\n');
    va_end(ap);
    fflush(stdout);
}

/* --trace, --chrome-trace: the run's event log (replays keep it). */
static int replay_trace(const cli *c, const replay_opts *ro, const replay_input *in,
                        const pl_sim_result *r)
{
    size_t n = 0;
    const pl__trace_rec *ev = result_events(r, &n);
    const pl__run_record *rec = pl__sim_result_record(r);
    int rc = 0;
    if (ro->trace) {
        rc = pl__trace_write_text(stdout, ev, n, task_name_of, (void *)rec);
    }
    if (rc == 0 && ro->chrome != NULL) {
        FILE *f = fopen(ro->chrome, "w");
        rc = f == NULL ? -errno : pl__trace_write_chrome(f, ev, n, task_name_of, (void *)rec);
        rc = f != NULL && fclose(f) != 0 && rc == 0 ? -errno : rc;
        if (rc == 0 && !ro->quiet) {
            printf("  chrome trace: %s (%zu events)\n", safe_text(ro->chrome).s, n);
        }
    }
    if (rc != 0) {
        return internal_error(c, "replay", "cannot write the trace of %s: %s", in->path,
                              error_text(rc));
    }
    return ST_CLEAN;
}

static void print_reproduced(const replay_opts *ro, const replay_input *in,
                             const pl_sim_result *r)
{
    const char *what = r->finding.kind != PL_FINDING_NONE ? pl_finding_name(r->finding.kind)
                                                          : "no finding";
    if (in->raw) {
        print_verdict(ro, in, true, "the input produces %s", what);
    } else if (seed_only(in)) {
        print_verdict(ro, in, true, "%s (run from the seed: the file holds no decisions)", what);
    } else {
        print_verdict(ro, in, true, "%s, hash %016" PRIx64 " matches", what, r->hash);
    }
}

static bool expects_nondeterminism(const replay_input *in)
{
    return !in->raw && in->file.finding != NULL &&
           strcmp(in->file.finding, pl_finding_name(PL_FINDING_NONDETERMINISM)) == 0;
}

/* A nondeterminism file cannot match itself: it reproduces when two
 * runs of its decisions disagree with each other or with its hash. */
static int replay_nondeterminism(const cli *c, const replay_opts *ro, const replay_input *in)
{
    pl_sim_options so;
    pl_sim_result a, b;
    replay_sim_options(in, &so);
    int ra = pl_sim_run(in->sc, &so, &a), rb = pl_sim_run(in->sc, &so, &b);
    uint64_t ha = a.hash, hb = b.hash;
    pl_sim_result_free(&a);
    pl_sim_result_free(&b);
    if (ra < 0 || rb < 0) {
        return internal_error(c, "replay", "%s: the run could not start: %s", in->path,
                              error_text(ra < 0 ? ra : rb));
    }
    uint64_t want = in->file.hash;
    if (ha != hb || (in->file.has_hash && (ha != want || hb != want))) {
        print_verdict(ro, in, true, "nondeterminism, two runs gave hashes %016" PRIx64
                                    " and %016" PRIx64 " (recorded %016" PRIx64 ")",
                      ha, hb, want);
        return ST_CLEAN;
    }
    print_verdict(ro, in, false, "two runs agreed (hash %016" PRIx64 "): the nondeterminism "
                                 "did not show this time",
                  ha);
    return ST_DIFFERS;
}

/* Runs one input and prints its verdict (in the child unless
 * --no-fork). Returns ST_CLEAN, ST_DIFFERS or ST_INTERNAL. */
static int replay_exec(const cli *c, const replay_opts *ro, const replay_input *in)
{
    if (expects_nondeterminism(in)) {
        return replay_nondeterminism(c, ro, in);
    }
    pl_sim_result r;
    char err[1024] = "";
    int rc;
    bool canonical = !in->raw && !seed_only(in) && in->file.scenario != NULL &&
                     strcmp(in->file.scenario, in->sc->name) == 0 &&
                     pl_scenario_find(in->sc->name) == in->sc && !ro->poll_cost_set;
    if (canonical) {
        rc = pl_sim_replay_file(in->path, &r, err, sizeof err);
    } else {
        pl_sim_options so;
        replay_sim_options(in, &so);
        so.keep_events = ro->trace || ro->chrome != NULL;
        rc = pl_sim_run(in->sc, &so, &r);
        rc = rc == 0 ? compare_run(in, &r, err, sizeof err) : rc;
    }
    if (rc < 0) {
        pl_sim_result_free(&r);
        return internal_error(c, "replay", "%s: %s", in->path,
                              err[0] != '\0' ? err : error_text(rc));
    }
    if (!ro->quiet && r.finding.kind != PL_FINDING_NONE) {
        print_replay_finding(in, &r);
    }
    if (rc == 0) {
        print_reproduced(ro, in, &r);
    } else {
        print_verdict(ro, in, false, "%s", err);
    }
    int status = rc == 0 ? ST_CLEAN : ST_DIFFERS;
    if (ro->trace || ro->chrome != NULL) {
        int trc = replay_trace(c, ro, in, &r);
        status = trc != ST_CLEAN ? trc : status;
    }
    pl_sim_result_free(&r);
    return status;
}

/* The replay child died or hung: a reproduction when the file expects
 * exactly that. */
static int replay_lost(const replay_opts *ro, const replay_input *in, pl_finding_kind kind,
                       const char *text)
{
    const char *got = pl_finding_name(kind);
    const char *want = in->raw ? got : in->file.finding;
    bool same = want != NULL && strcmp(want, got) == 0;
    if (same) {
        print_verdict(ro, in, true, "%s (the replay process %s)", got, text);
        return ST_CLEAN;
    }
    print_verdict(ro, in, false, "the replay process %s, but the file expects %s", text,
                  want != NULL ? want : "no finding");
    return ST_DIFFERS;
}

/* The poll budget stopped the replay child inside a poll. */
static int replay_stopped(const replay_opts *ro, const replay_input *in)
{
    char d[32], text[160];
    pl__budget_text(pl__budget_get(), d, sizeof d);
    snprintf(text, sizeof text, "ran for %s of CPU time inside one poll and was stopped", d);
    return replay_lost(ro, in, PL_FINDING_LIVELOCK, text);
}

static int replay_forked(const cli *c, const replay_opts *ro, const replay_input *in)
{
    int fds[2];
    if (pipe(fds) != 0) {
        return internal_error(c, "replay", "cannot create a pipe: %s", strerror(errno));
    }
    fflush(NULL);
    pl__hang *hang = pl__hang_map();
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        pl__hang_unmap(hang);
        return internal_error(c, "replay", "cannot fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        pl__budget_arm(hang);
        /* Line buffering: what was printed survives a crash. */
        setvbuf(stdout, NULL, _IOLBF, 0);
        unsigned char verdict = (unsigned char)replay_exec(c, ro, in);
        fflush(NULL);
        /* The verdict tells a finished replay from one that died with
         * an exit status of its own (user code, a sanitizer). */
        write_all(fds[1], &verdict, 1);
        _exit(verdict);
    }
    close(fds[1]);
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    unsigned char verdict = 0;
    bool hung = poll(&p, 1, (int)(ro->watchdog_ns / PL_MS)) == 0;
    bool got = !hung && read(fds[0], &verdict, 1) == 1;
    if (hung) {
        kill(pid, SIGKILL);
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    char text[160];
    bool stopped = !got && pl__hang_ended(hang, status);
    pl__hang_unmap(hang);
    if (stopped) {
        return replay_stopped(ro, in);
    }
    if (hung) {
        char d[32];
        format_duration(ro->watchdog_ns, d, sizeof d);
        snprintf(text, sizeof text, "made no progress for %s of wall time and was killed", d);
        return replay_lost(ro, in, PL_FINDING_LIVELOCK, text);
    }
    if (!got) {
        describe_status(status, text, sizeof text);
        return replay_lost(ro, in, PL_FINDING_CRASH, text);
    }
    return verdict;
}

static int replay_one(const cli *c, const replay_opts *ro, const char *path)
{
    replay_input in;
    int rc = replay_load(c, ro, path, &in);
    if (rc == 0 && !ro->quiet) {
        if (in.raw) {
            printf("%s: raw fuzzer input, %zu bytes, scenario %s\n", safe_text(path).s,
                   in.bytes_len, in.sc->name);
        } else {
            printf("%s: scenario %s, seed %" PRIu64 ", expects %s\n", safe_text(path).s,
                   in.sc->name, in.file.seed,
                   safe_text(in.file.finding != NULL ? in.file.finding : "no finding").s);
        }
    }
    if (rc == 0) {
        rc = ro->no_fork ? replay_exec(c, ro, &in) : replay_forked(c, ro, &in);
    }
    replay_input_free(&in);
    return rc;
}

static int cmd_replay(cli *c, int argc, char **argv)
{
    replay_opts ro;
    int rc = replay_opts_parse(c, argc, argv, &ro);
    int worst = ST_CLEAN;
    for (size_t i = 0; rc == 0 && i < ro.nfiles; i++) {
        int one = replay_one(c, &ro, ro.files[i]);
        if (one == ST_USAGE) {
            rc = one;
        } else if (one == ST_INTERNAL || (one == ST_DIFFERS && worst == ST_CLEAN)) {
            worst = one;
        }
    }
    free(ro.files);
    if (rc != 0) {
        return rc < 0 ? ST_CLEAN : rc;
    }
    return worst;
}

/* ======================================================================
 * `shrink`, dispatch
 * ==================================================================== */

enum shrink_opt { S_OUTPUT, S_TIME, S_RUNS, S_HELP, S_POLL_BUDGET, S_WATCHDOG };

static const opt_spec shrink_specs[] = {
    [S_OUTPUT] = {"output", 'o', "OUT"},
    [S_TIME] = {"time", 0, "DURATION"},
    [S_RUNS] = {"runs", 0, "N"},
    [S_HELP] = {"help", 'h', NULL},
    [S_POLL_BUDGET] = {"poll-budget", 0, "DURATION"},
    [S_WATCHDOG] = {"watchdog", 0, "DURATION"},
    {NULL, 0, NULL},
};

typedef struct shrink_args {
    const char *in;
    const char *out; /* NULL: the shrinker's default */
    pl_sim_shrink_limits limits;
} shrink_args;

static int shrink_opts_parse(const cli *c, int argc, char **argv, shrink_args *sa)
{
    opts_iter it = {c, "shrink", shrink_specs, argc, argv, 0, false, {NULL}};
    memset(sa, 0, sizeof *sa);
    const char *v;
    uint64_t n;
    for (int id; (id = opts_next(&it, &v)) != OPT_END;) {
        if (id == OPT_ERROR) {
            return ST_USAGE;
        } else if (id == S_HELP) {
            show_help(c, "shrink");
            return -1;
        } else if (id == S_OUTPUT) {
            sa->out = v;
        } else if (id == S_TIME && opt_duration(&it, id, v, &sa->limits.time_ns) != 0) {
            return ST_USAGE;
        } else if (id == S_POLL_BUDGET && opt_poll_budget(&it, id, v) != 0) {
            return ST_USAGE;
        } else if (id == S_WATCHDOG && opt_candidate_watchdog(&it, id, v) != 0) {
            return ST_USAGE;
        } else if (id == S_RUNS) {
            if (opt_number(&it, id, v, 1, UINT64_MAX, &n) != 0) {
                return ST_USAGE;
            }
            sa->limits.runs_max = n;
        } else if (id == OPT_POSITIONAL && sa->in != NULL) {
            return usage_error(c, "shrink", "one FILE at a time (got '%s' and '%s')", sa->in, v);
        } else if (id == OPT_POSITIONAL) {
            sa->in = v;
        }
    }
    if (sa->in == NULL) {
        return usage_error(c, "shrink", "which file? give a replay file to shrink");
    }
    return 0;
}

static int cmd_shrink(cli *c, int argc, char **argv)
{
    shrink_args sa;
    int rc = shrink_opts_parse(c, argc, argv, &sa);
    if (rc != 0) {
        return rc < 0 ? ST_CLEAN : rc;
    }
    shrink_msg m;
    if (shrink_isolated(sa.in, sa.out, &sa.limits, "", &m) != 0) {
        return internal_error(c, "shrink", "%s", m.err);
    }
    char prog[PATH_MAX], arg[PATH_MAX + 8];
    pl__cli_shell_quote(c->argv0, prog, sizeof prog);
    pl__cli_shell_quote(m.out, arg, sizeof arg);
    printf("%sshrunk replay: %s\n  reproduce: %s replay %s\n", m.text, safe_text(m.out).s,
           safe_text(prog).s, safe_text(arg).s);
    return fflush(stdout) == 0 ? ST_CLEAN : ST_INTERNAL;
}

static int cmd_help(cli *c, int argc, char **argv)
{
    if (argc > 1) {
        return usage_error(c, "help", "one command at a time");
    }
    return show_help(c, argc == 1 ? argv[0] : NULL);
}

static int cmd_version(cli *c, int argc, char **argv)
{
    (void)argv;
    if (argc > 0) {
        char hint[96];
        snprintf(hint, sizeof hint, "'%s version' takes no arguments", c->prog);
        return usage_hint(c, "version", hint, "unexpected argument '%s'", argv[0]);
    }
    printf("%s %s\n", c->prog, PL_VERSION_STRING);
    return fflush(stdout) == 0 ? ST_CLEAN : ST_INTERNAL;
}

typedef struct command {
    const char *name;
    int (*fn)(cli *c, int argc, char **argv);
} command;

static const command commands[] = {
    {"list", cmd_list},     {"run", cmd_run},   {"replay", cmd_replay},
    {"shrink", cmd_shrink}, {"help", cmd_help}, {"version", cmd_version},
};

static int unknown_command(const cli *c, const char *name)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        size_t d = pl__cli_distance(name, commands[i].name, 3);
        if (d < best_d) {
            best_d = d;
            best = commands[i].name;
        }
    }
    if (name[0] == '-') {
        return usage_error(c, NULL, "unknown option '%s'", name);
    }
    if (best != NULL) {
        return usage_error(c, NULL, "unknown command '%s' (did you mean '%s'?)", name, best);
    }
    return usage_error(c, NULL, "unknown command '%s'", name);
}

int pl_main(int argc, char **argv, const pl_scenario *const *extra)
{
    cli c;
    memset(&c, 0, sizeof c);
    c.argv0 = argc > 0 && argv[0] != NULL ? argv[0] : "pollen";
    const char *slash = strrchr(c.argv0, '/');
    pl__cli_escape(slash != NULL ? slash + 1 : c.argv0, false, c.prog_buf, sizeof c.prog_buf);
    c.prog = c.prog_buf;
    int rc = catalogue_init(&c, extra);
    if (rc != 0) {
        free(c.all);
        return rc;
    }
    if (argc < 2) {
        put_text(stderr, help_main, c.prog);
        rc = ST_USAGE;
    } else if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        rc = show_help(&c, NULL);
    } else if (strcmp(argv[1], "--version") == 0) {
        rc = cmd_version(&c, 0, NULL);
    } else {
        rc = -1;
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
            if (strcmp(argv[1], commands[i].name) == 0) {
                rc = commands[i].fn(&c, argc - 2, argv + 2);
            }
        }
        rc = rc == -1 ? unknown_command(&c, argv[1]) : rc;
    }
    free(c.all);
    return rc;
}
