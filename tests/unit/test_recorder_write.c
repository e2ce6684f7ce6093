/* pl_executor_recorder_write (pollen/dump.h) when a signal interrupts
 * its write(2): --wrap=write sends pollen's writes here, which fail the
 * first one with EINTR, as a signal landing before any byte was written
 * makes it. The writer must retry it, and leave errno as it found it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <pollen/pollen.h>

ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);

static int interrupt_next; /* writes to fail with EINTR */

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    if (interrupt_next > 0) {
        interrupt_next--;
        errno = EINTR;
        return -1;
    }
    return __real_write(fd, buf, n);
}

TestSuite(recorder_write);

typedef struct done_fut {
    pl_future base;
} done_fut;

static pl_poll_result done_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    return PL_READY;
}

static const pl_future_vtable done_vtable = {"done", done_poll, NULL};

Test(recorder_write, an_interrupted_write_is_retried_and_errno_kept)
{
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.recorder_events = 8;
    pl_executor *ex;
    cr_assert_eq(pl_executor_create(&ex, &o), 0);
    done_fut d = {PL_FUTURE_INIT(&done_vtable)};
    cr_assert_eq(PL_SPAWN(ex, d, "done", NULL), 0);
    cr_assert_eq(pl_run(ex), 0); /* spawn, ready */
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    interrupt_next = 2;
    errno = ERANGE;
    cr_assert_eq(pl_executor_recorder_write(ex, fds[1]), 0);
    cr_assert_eq(errno, ERANGE);
    cr_assert_eq(interrupt_next, 0);
    close(fds[1]);
    char lines[1024];
    ssize_t got = read(fds[0], lines, sizeof lines - 1);
    close(fds[0]);
    cr_assert_gt(got, 0);
    lines[got] = '\0';
    cr_assert_not_null(strstr(lines, "spawn        task#1       parent=-\n"), "%s", lines);
    cr_assert_not_null(strstr(lines, "ready        task#1       poll=1\n"), "%s", lines);
    pl_executor_destroy(ex);
}
