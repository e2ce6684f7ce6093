/* tests/sim/child.c: see child.h.
 *
 * Output goes to files rather than pipes so that a child printing more
 * than a pipe holds never blocks against a parent that only reads after
 * waitpid. fflush(NULL) before fork keeps the parent's buffered output
 * from being printed twice.
 */
#include "child.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pollen/sim.h"

int child_temp_fd(void)
{
    char path[] = "/tmp/pollen-test-io-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    unlink(path);
    return fd;
}

char *child_slurp(int fd)
{
    size_t cap = 8192, len = 0;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    lseek(fd, 0, SEEK_SET);
    for (ssize_t n; (n = read(fd, buf + len, cap - len - 1)) > 0;) {
        len += (size_t)n;
        if (cap - len < 4096) {
            cap *= 2;
            buf = realloc(buf, cap);
            cr_assert_not_null(buf);
        }
    }
    buf[len] = '\0';
    close(fd);
    return buf;
}

int child_wait(pid_t pid)
{
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

pid_t child_start(child_body body, void *arg, int out, int err)
{
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        dup2(out, STDOUT_FILENO);
        dup2(err, STDERR_FILENO);
        int status = body(arg);
        fflush(NULL);
        _exit(status);
    }
    return pid;
}

child_ran child_run(child_body body, void *arg, int out_fd)
{
    int out = out_fd >= 0 ? out_fd : child_temp_fd();
    int err = child_temp_fd();
    child_ran r = {child_wait(child_start(body, arg, out, err)), NULL, child_slurp(err)};
    r.out = out_fd >= 0 ? strdup("") : child_slurp(out);
    cr_assert_not_null(r.out);
    return r;
}

typedef struct main_call {
    int argc;
    char *argv[64];
    const pl_scenario *const *extra;
} main_call;

static int run_main(void *arg)
{
    main_call *m = arg;
    return pl_main(m->argc, m->argv, m->extra);
}

child_ran child_pl_main(const char *const *args, const pl_scenario *const *extra, int out_fd)
{
    main_call m = {.argc = 1, .argv = {"pollen"}, .extra = extra};
    for (; args[m.argc - 1] != NULL; m.argc++) {
        cr_assert_lt(m.argc, 63);
        m.argv[m.argc] = (char *)args[m.argc - 1];
    }
    m.argv[m.argc] = NULL;
    return child_run(run_main, &m, out_fd);
}

void child_ran_free(child_ran *r)
{
    free(r->out);
    free(r->err);
    r->out = NULL;
    r->err = NULL;
}
