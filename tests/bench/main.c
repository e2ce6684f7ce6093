/* tests/bench/main.c: the pollen-bench command line.
 *
 *   pollen-bench WORKLOAD [N] [--sim] [--runs R] [--cpu] [-v]
 *   pollen-bench all [--sim] [--runs R] [--cpu] [-v]
 *
 * A single run happens in this process. Several runs, and every workload
 * of `all`, each get a fresh process (this binary re-executed with
 * --runs 1): ru_maxrss is a high-water mark, so a second run in the same
 * process could not measure its own memory, and a fresh heap keeps one
 * workload's leftovers out of the next one's figures. The parent prints
 * the median of each metric line over the runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define RUNS_MAX 99
#define LINES_MAX 16

enum { MODE_REAL = 1u << 0, MODE_SIM = 1u << 1 };

typedef struct workload {
    const char *name;
    unsigned modes;  /* where it runs at all */
    unsigned in_all; /* where `all` runs it (the goals in tests/bench/README.md) */
    int (*run)(uint64_t n, bool sim);
    const char *summary;
} workload;

static const workload workloads[] = {
    {"pingpong", MODE_REAL | MODE_SIM, MODE_REAL | MODE_SIM, bench_pingpong,
     "2 tasks, notify_one round trips (N = 2000000)"},
    {"spawn", MODE_REAL | MODE_SIM, MODE_REAL | MODE_SIM, bench_spawn,
     "N tasks parked on a gate, released, joined (N = 1000000)"},
    {"timers", MODE_REAL | MODE_SIM, MODE_SIM, bench_timers,
     "N tasks sleeping 1..1000 ms (N = 1000000); real mode waits the wall clock"},
    {"outbox", MODE_SIM, MODE_SIM, bench_outbox,
     "4 workers relaying N items, 1 per virtual ms, 20 runs (N = 10000)"},
    /* A fuzz target is a simulation: --sim is optional. */
    {"fuzz", MODE_REAL | MODE_SIM, MODE_SIM, bench_fuzz, "libFuzzer exec/s of the outbox fuzz target, N seconds (30; POLLEN_FUZZ_TARGET)"},
    /* Always the simulator (a campaign is one), so --sim is optional. */
    {"campaign", MODE_REAL | MODE_SIM, MODE_SIM, bench_campaign,
     "seeds/s of the outbox and handle lessons' campaigns, always simulated (SEEDS = 20000)"},
    {"cluster", MODE_SIM, MODE_SIM, bench_cluster,
     "5 hosts exchanging N UDP datagrams over default links, and on one host (N = 100000)"},
    {"threads", MODE_REAL | MODE_SIM, 0, bench_threads,
     "2 threads handing a token through semaphores, then 10 N schedule points (N = 200000)"},
};

#define WORKLOADS_LEN (sizeof workloads / sizeof workloads[0])

typedef struct options {
    const char *target; /* a workload name or "all" */
    uint64_t n;         /* 0: the workload's default */
    bool sim;
    int runs;           /* 0: default (5 for all, 1 otherwise) */
    bool verbose;
    bool cpu_clock;     /* time CPU, not wall (diagnostic) */
} options;

static const char *self_path = "/proc/self/exe";

/* ---- Usage -------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: pollen-bench WORKLOAD [N] [--sim] [--runs R] [--cpu] [-v]\n"
               "       pollen-bench all [--sim] [--runs R] [--cpu] [-v]\n\n"
               "Runs tests/bench/README.md's workloads and prints one line per metric:\n"
               "  <workload> <impl> <metric>=<value> <unit> [key=value ...]\n"
               "impl is 'pollen' (real backend) or 'pollen/sim' (--sim: the simulator\n"
               "with every oracle on and decisions recorded).\n\n"
               "  --sim      run under the simulator\n"
               "  --runs R   run R times, each in a fresh process, and print the\n"
               "             medians (default: 5 for all, 1 for one workload)\n"
               "  --cpu      time the region in process CPU time, not wall time\n"
               "             (a diagnostic for a busy machine; lines say clock=cpu)\n"
               "  -v         print every run's lines to stderr too\n"
               "  --help     this text\n\nWorkloads:\n");
    for (size_t i = 0; i < WORKLOADS_LEN; i++) {
        const workload *w = &workloads[i];
        fprintf(f, "  %-9s %s%s\n", w->name, w->summary,
                w->modes == MODE_SIM ? " [--sim only]" : "");
    }
}

static const workload *find_workload(const char *name)
{
    for (size_t i = 0; i < WORKLOADS_LEN; i++) {
        if (strcmp(workloads[i].name, name) == 0) {
            return &workloads[i];
        }
    }
    return NULL;
}

/* ---- Arguments ---------------------------------------------------------- */

static bool parse_count(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v == 0 || v > max || s[0] == '-') {
        return false;
    }
    *out = v;
    return true;
}

/* Returns 0, 1 for --help, or -1 after printing what is wrong. */
static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        uint64_t v;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            return 1;
        } else if (strcmp(a, "--sim") == 0) {
            o->sim = true;
        } else if (strcmp(a, "-v") == 0) {
            o->verbose = true;
        } else if (strcmp(a, "--cpu") == 0) {
            o->cpu_clock = true;
        } else if (strcmp(a, "--runs") == 0 && i + 1 < argc &&
                   parse_count(argv[i + 1], RUNS_MAX, &v)) {
            o->runs = (int)v;
            i++;
        } else if (a[0] != '-' && o->target == NULL) {
            o->target = a;
        } else if (a[0] != '-' && o->n == 0 && parse_count(a, UINT32_MAX, &v)) {
            o->n = v;
        } else {
            fprintf(stderr, "pollen-bench: bad argument '%s' (--runs takes 1..%d)\n", a,
                    RUNS_MAX);
            return -1;
        }
    }
    if (o->target == NULL) {
        fprintf(stderr, "pollen-bench: which workload? (or 'all'; see --help)\n");
        return -1;
    }
    return 0;
}

/* ---- Child processes ---------------------------------------------------- */

/* Appends what fd delivers until EOF to a malloc'd, NUL-terminated buffer. */
static char *read_all(int fd)
{
    size_t len = 0;
    size_t cap = 1024;
    char *buf = malloc(cap);
    while (buf != NULL) {
        if (len + 1 == cap) {
            char *grown = realloc(buf, cap * 2);
            if (grown == NULL) {
                free(buf);
                return NULL;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + len, cap - 1 - len);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            buf[len] = '\0';
            break;
        }
        len += (size_t)got;
    }
    return buf;
}

static void exec_child(int out_fd, const workload *w, const options *o)
{
    char n_text[32];
    char *args[10];
    int k = 0;
    args[k++] = (char *)"pollen-bench";
    args[k++] = (char *)w->name;
    if (o->n != 0) {
        snprintf(n_text, sizeof n_text, "%llu", (unsigned long long)o->n);
        args[k++] = n_text;
    }
    if (o->sim) {
        args[k++] = (char *)"--sim";
    }
    if (o->cpu_clock) {
        args[k++] = (char *)"--cpu";
    }
    args[k++] = (char *)"--runs";
    args[k++] = (char *)"1";
    args[k] = NULL;
    if (dup2(out_fd, STDOUT_FILENO) < 0) {
        _exit(127);
    }
    execv(self_path, args);
    fprintf(stderr, "pollen-bench: cannot re-execute %s: %s\n", self_path, strerror(errno));
    _exit(127);
}

/* Runs `w` once in a fresh process. Returns its exit status (or -1) and
 * its standard output in *out (malloc'd). */
static int run_child(const workload *w, const options *o, char **out)
{
    int fds[2];
    *out = NULL;
    if (pipe(fds) != 0) {
        return -1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        exec_child(fds[1], w, o);
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return -1;
    }
    *out = read_all(fds[0]);
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* ---- Medians of result lines -------------------------------------------- */

/* "<workload> <impl> <metric>=<value> <unit> [key=value ...]", split
 * around the value. */
typedef struct result_line {
    char head[128]; /* up to and including '=' */
    double value;
    int decimals;
    char tail[256]; /* from the space after the value */
} result_line;

static bool parse_result(const char *line, result_line *r)
{
    const char *eq = strchr(line, '=');
    if (eq == NULL || (size_t)(eq - line) + 1 >= sizeof r->head) {
        return false;
    }
    memcpy(r->head, line, (size_t)(eq - line) + 1);
    r->head[eq - line + 1] = '\0';
    char *end;
    r->value = strtod(eq + 1, &end);
    if (end == eq + 1) {
        return false;
    }
    const char *dot = memchr(eq + 1, '.', (size_t)(end - eq - 1));
    r->decimals = dot != NULL ? (int)(end - dot - 1) : 0;
    snprintf(r->tail, sizeof r->tail, "%s", end);
    return true;
}

/* Splits a child's output into result lines; returns how many. */
static int parse_output(char *text, result_line *lines)
{
    int n = 0;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l != NULL; l = strtok_r(NULL, "\n", &save)) {
        if (n < LINES_MAX && parse_result(l, &lines[n])) {
            n++;
        }
    }
    return n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Prints line j's median over `runs` runs of parsed lines. */
static void print_median(result_line (*lines)[LINES_MAX], int runs, int j)
{
    double v[RUNS_MAX];
    for (int r = 0; r < runs; r++) {
        v[r] = lines[r][j].value;
    }
    const result_line *first = &lines[0][j];
    printf("%s%.*f%s", first->head, first->decimals, median(v, runs), first->tail);
    if (runs > 1) {
        printf(" median_of=%d", runs);
    }
    printf("\n");
    fflush(stdout);
}

/* Every run must print the same metrics in the same order. */
static bool same_shape(result_line (*lines)[LINES_MAX], const int *count, int runs)
{
    for (int r = 1; r < runs; r++) {
        if (count[r] != count[0]) {
            return false;
        }
        for (int j = 0; j < count[0]; j++) {
            if (strcmp(lines[r][j].head, lines[0][j].head) != 0) {
                return false;
            }
        }
    }
    return count[0] > 0;
}

/* ---- Running workloads -------------------------------------------------- */

static void echo_run(const char *name, int r, const char *text)
{
    fprintf(stderr, "%s run %d:\n%s", name, r + 1, text);
}

/* Runs `w` o->runs times in fresh processes and prints the medians.
 * Returns 0, 1 on failure or BENCH_EXIT_UNAVAILABLE. */
static int run_median(const workload *w, const options *o)
{
    static result_line lines[RUNS_MAX][LINES_MAX];
    int count[RUNS_MAX] = {0};
    for (int r = 0; r < o->runs; r++) {
        char *text;
        int status = run_child(w, o, &text);
        if (status == 0 && text != NULL && o->verbose) {
            echo_run(w->name, r, text);
        }
        count[r] = status == 0 && text != NULL ? parse_output(text, lines[r]) : 0;
        free(text);
        if (status != 0) {
            return status == BENCH_EXIT_UNAVAILABLE ? status : 1;
        }
    }
    if (!same_shape(lines, count, o->runs)) {
        bench_fail(w->name, "the runs printed different or no result lines");
        return 1;
    }
    for (int j = 0; j < count[0]; j++) {
        print_median(lines, o->runs, j);
    }
    return 0;
}

static bool supports(const workload *w, bool sim, unsigned set)
{
    return (set & (sim ? MODE_SIM : MODE_REAL)) != 0;
}

static int run_all(options *o)
{
    int failed = 0;
    o->runs = o->runs ? o->runs : 5;
    for (size_t i = 0; i < WORKLOADS_LEN; i++) {
        const workload *w = &workloads[i];
        if (!supports(w, o->sim, w->in_all)) {
            continue;
        }
        int rc = run_median(w, o);
        if (rc == BENCH_EXIT_UNAVAILABLE) {
            fprintf(stderr, "pollen-bench: %s: skipped\n", w->name);
        } else if (rc != 0) {
            failed++;
        }
    }
    return failed ? 1 : 0;
}

static int run_one(options *o)
{
    const workload *w = find_workload(o->target);
    if (w == NULL) {
        fprintf(stderr, "pollen-bench: no workload '%s' (see --help)\n", o->target);
        return 2;
    }
    if (!supports(w, o->sim, w->modes)) {
        bench_fail(w->name, "runs under the simulator only (tests/bench/README.md): add --sim");
        return 2;
    }
    o->runs = o->runs ? o->runs : 1;
    if (o->runs == 1) {
        return w->run(o->n, o->sim);
    }
    return run_median(w, o);
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc != 0) {
        usage(rc > 0 ? stdout : stderr);
        return rc > 0 ? 0 : 2;
    }
    if (o.cpu_clock) {
        bench_use_cpu_clock();
    }
    if (access(self_path, X_OK) != 0) {
        self_path = argv[0]; /* no procfs: hope argv[0] is a path */
    }
    if (strcmp(o.target, "all") == 0) {
        if (o.n != 0) {
            fprintf(stderr, "pollen-bench: 'all' runs every workload at its specified size\n");
            return 2;
        }
        return run_all(&o);
    }
    return run_one(&o);
}
