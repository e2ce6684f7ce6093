/* sim/src/cli/child.c: user code in a child process. Its stdout (fd 1)
 * is a capture file, never pollen's stdout: under --json that channel
 * carries pollen's JSON lines alone. run_in_child runs one function in a
 * fresh child that writes one fixed-size result back (`run --real`,
 * bounded exploration, PCT's measure, shrinking, replays), with a
 * deadline and the poll budget's report. */
#include "cli_internal.h"

/* An unlinked temporary file for a child's stdout. Returns its fd or a
 * negative errno. */
int pl__cli_capture_file(void)
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
void pl__cli_capture_stdout(int fd, bool unbuffered)
{
    fflush(stdout);
    if (fd >= 0 && fd != STDOUT_FILENO) {
        dup2(fd, STDOUT_FILENO);
        close(fd);
    }
    setvbuf(stdout, NULL, unbuffered ? _IONBF : _IOFBF, unbuffered ? 0 : BUFSIZ);
}

/* Reads the tail of the capture file fd (any process's). */
void pl__cli_read_tail(int fd, output_tail *t)
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
void pl__cli_end_seed_output(output_tail *t)
{
    fflush(stdout);
    if (t != NULL) {
        pl__cli_read_tail(STDOUT_FILENO, t);
    }
    if (lseek(STDOUT_FILENO, 0, SEEK_CUR) > 0) {
        if (ftruncate(STDOUT_FILENO, 0) == 0) {
            fseek(stdout, 0, SEEK_SET);
        }
    }
}

/* Waits for the child's result until it exits or the deadline passes. */
static void collect_child(pid_t pid, int fd, void *result, size_t size, int64_t deadline_ms,
                          child_end *end)
{
    size_t got = 0;
    for (;;) {
        int64_t left = deadline_ms - pl__cli_now_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int rc = poll(&p, 1, left > 1000 ? 1000 : (left < 0 ? 0 : (int)left));
        if (rc > 0) {
            ssize_t n = read(fd, (char *)result + got, size - got);
            if (n <= 0) {
                break;
            }
            got += (size_t)n;
            PL__CLI_ASSERT(got <= size);
        } else if (pl__cli_interrupted || left <= 0) {
            kill(pid, SIGKILL);
            end->timed_out = true;
            break;
        }
    }
    while (waitpid(pid, &end->status, 0) < 0 && errno == EINTR) {
    }
    end->complete = got == size && !end->timed_out;
}

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
int pl__cli_run_in_child(child_fn fn, const void *ctx, void *result, size_t size,
                         int64_t deadline_ms, child_out where, child_end *end)
{
    PL__CLI_ASSERT(fn != NULL && result != NULL && size > 0 && end != NULL);
    bool capture = where != OUT_DISCARD;
    int fds[2];
    memset(end, 0, sizeof *end);
    fflush(NULL);
    int out = capture ? pl__cli_capture_file() : open("/dev/null", O_WRONLY);
    if (out < 0) {
        return capture ? out : -errno;
    }
    if (pipe(fds) != 0) {
        int rc = -errno;
        close(out);
        return rc;
    }
    pl__hang *hang = pl__hang_map();
    int64_t start = pl__cli_now_ms();
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
        pl__cli_capture_stdout(out, where != OUT_CAPTURE);
        pl__cpu_budget_arm(hang);
        fn(ctx, result);
        pl__cli_write_all(fds[1], result, size);
        fflush(NULL);
        _exit(ST_CLEAN);
    }
    close(fds[1]);
    collect_child(pid, fds[0], result, size, deadline_ms, end);
    close(fds[0]);
    if (capture) {
        pl__cli_read_tail(out, &end->output);
    }
    close(out);
    end->seconds = (double)(pl__cli_now_ms() - start) / 1000.0;
    child_hang(hang, end);
    return 0;
}

/* The finding of a child that died or ran out of time. */
pl_finding_kind pl__cli_child_lost(const child_end *end, const char *what, char *buf, size_t len)
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
    pl__cli_describe_status(end->status, text, sizeof text);
    pl__cli_textf(buf, len, "%s %s", what, text);
    return PL_FINDING_CRASH;
}

int pl__cli_report_once(const cli *c, const run_opts *o, report *rp)
{
    pl__cli_make_reproduce(c, o, rp);
    pl__cli_print_report(o, rp);
    free(rp);
    return 0;
}
