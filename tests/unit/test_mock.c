/* tests/unit/test_mock.c: pollen/test.h, unit tests of one future
 * without a scenario: core's own sleep, channel and I/O futures, polled
 * step by step by a mock task under a manual clock and scripted I/O. */
#include <criterion/criterion.h>
#include <pollen/io.h>
#include <pollen/sync.h>
#include <pollen/test.h>
#include <pollen/timer.h>
#include <signal.h>
#include <string.h>

static pl_test *t;

static void setup(void) { cr_assert_eq(pl_test_create(&t), 0); }

static void teardown(void) { pl_test_destroy(t); }

TestSuite(mock, .init = setup, .fini = teardown);

Test(mock, a_sleep_is_ready_when_the_clock_reaches_its_deadline)
{
    pl_sleep s = pl_sleep_for(10 * PL_MS);
    pl_test_task *task = pl_test_spawn(t, &s.base);
    cr_assert_not_null(task);
    PL_ASSERT_PENDING(pl_test_poll(task));
    cr_assert_eq(pl_test_waker_refs(task), 1, "the armed timer holds the waker");
    pl_test_advance(t, 9 * PL_MS);
    cr_assert(!pl_test_is_woken(task));
    /* A poll without a wake stays PENDING: the clock did not move. */
    PL_ASSERT_PENDING(pl_test_poll(task));
    pl_test_advance(t, 1 * PL_MS);
    cr_assert_eq(pl_test_wakes(task), 1);
    cr_assert_eq(pl_test_now(t), 10 * PL_MS);
    PL_ASSERT_READY(pl_test_poll(task));
    cr_assert_eq(pl_test_waker_refs(task), 0, "a finished sleep keeps no waker");
}

Test(mock, a_dropped_sleep_releases_its_waker)
{
    pl_sleep s = pl_sleep_for(1 * PL_S);
    pl_test_task *task = pl_test_spawn(t, &s.base);
    PL_ASSERT_PENDING(pl_test_poll(task));
    cr_assert_eq(pl_test_waker_refs(task), 1);
    pl_test_cancel(task);
    cr_assert_eq(pl_test_waker_refs(task), 0);
    pl_test_advance(t, 2 * PL_S);
    cr_assert(!pl_test_is_woken(task), "a disarmed timer fired");
}

Test(mock, a_channel_receive_waits_for_a_send)
{
    pl_mpsc ch;
    int buf[2];
    pl_mpsc_init_buffer(&ch, buf, sizeof buf[0], 2);
    int got = -1;
    pl_mpsc_recv r = pl_mpsc_recv_make(&ch, &got);
    pl_test_task *task = pl_test_spawn(t, &r.base);
    PL_ASSERT_PENDING(pl_test_poll(task));
    cr_assert(!pl_test_is_woken(task));
    int v = 42;
    cr_assert_eq(pl_mpsc_try_send(&ch, &v), 0);
    cr_assert(pl_test_is_woken(task), "a send wakes the waiting receive");
    PL_ASSERT_READY(pl_test_poll(task));
    cr_assert_eq(r.result, 0);
    cr_assert_eq(got, 42);
    /* The last sender gone: the next receive completes with PL_ECLOSED. */
    pl_mpsc_recv r2 = pl_mpsc_recv_make(&ch, &got);
    pl_test_task *task2 = pl_test_spawn(t, &r2.base);
    PL_ASSERT_PENDING(pl_test_poll(task2));
    pl_mpsc_sender_drop(&ch);
    cr_assert(pl_test_is_woken(task2));
    PL_ASSERT_READY(pl_test_poll(task2));
    cr_assert_eq(r2.result, PL_ECLOSED);
    pl_mpsc_finish(&ch);
}

/* A helper task on the test's executor: sends v on ch after a delay. */
typedef struct sender {
    pl_future base;
    pl_sleep delay;
    pl_mpsc *ch;
    int v;
} sender;

static pl_poll_result sender_poll(pl_future *f, pl_context *cx)
{
    sender *s = (sender *)f;
    if (pl_poll(&s->delay.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    cr_assert_eq(pl_mpsc_try_send(s->ch, &s->v), 0);
    return PL_READY;
}

static void sender_drop(pl_future *f) { pl_drop_child(&((sender *)f)->delay.base); }

static const pl_future_vtable sender_vtable = {"sender", sender_poll, sender_drop};

Test(mock, helper_tasks_run_on_the_manual_clock)
{
    pl_mpsc ch;
    int buf[1];
    pl_mpsc_init_buffer(&ch, buf, sizeof buf[0], 1);
    sender h = {PL_FUTURE_INIT(&sender_vtable), pl_sleep_for(5 * PL_MS), &ch, 7};
    cr_assert_eq(pl_spawn(pl_test_executor(t), &h.base, sizeof h, "sender", NULL), 0);
    int got = 0;
    pl_mpsc_recv r = pl_mpsc_recv_make(&ch, &got);
    pl_test_task *task = pl_test_spawn(t, &r.base);
    PL_ASSERT_PENDING(pl_test_poll(task));
    pl_test_advance(t, 4 * PL_MS);
    cr_assert(!pl_test_is_woken(task));
    pl_test_advance(t, 1 * PL_MS);
    cr_assert(pl_test_is_woken(task), "the helper's timer fired and it sent");
    PL_ASSERT_READY(pl_test_poll(task));
    cr_assert_eq(got, 7);
    pl_mpsc_finish(&ch);
}

/* The scripted stream behind a pl_io_fd of the test's executor. */
static pl_test_io *open_io(pl_io_fd *fd)
{
    pl_test_io *io = pl_test_io_create(t);
    cr_assert_not_null(io);
    cr_assert_eq(pl_io_fd_open(pl_test_executor(t), fd, pl_test_io_handle(io)), 0);
    return io;
}

Test(mock, a_read_takes_the_scripts_bytes_after_its_wait)
{
    pl_io_fd fd;
    pl_test_io *io = open_io(&fd);
    cr_assert_eq(pl_test_io_wait(io, 5 * PL_MS), 0);
    cr_assert_eq(pl_test_io_read(io, "hello", 5), 0);
    char buf[3];
    pl_io_read rd = pl_io_fd_read(&fd, buf, sizeof buf);
    pl_test_task *task = pl_test_spawn(t, &rd.base);
    PL_ASSERT_PENDING(pl_test_poll(task));
    pl_test_advance(t, 4 * PL_MS);
    cr_assert(!pl_test_is_woken(task), "readable before the wait ended");
    pl_test_advance(t, 1 * PL_MS);
    cr_assert(pl_test_is_woken(task));
    PL_ASSERT_READY(pl_test_poll(task));
    cr_assert_eq(rd.result, 3);
    cr_assert_eq(memcmp(buf, "hel", 3), 0);
    char why[200];
    cr_assert(!pl_test_io_done(io, why, sizeof why));
    cr_assert_not_null(strstr(why, "step 2 of 2 left: read of 5 bytes (3 done)"), "%s", why);
    /* The rest, then the end of the stream. */
    rd = pl_io_fd_read(&fd, buf, sizeof buf);
    task = pl_test_spawn(t, &rd.base);
    PL_ASSERT_READY(pl_test_poll(task));
    cr_assert_eq(rd.result, 2);
    cr_assert_eq(memcmp(buf, "lo", 2), 0);
    cr_assert(pl_test_io_done(io, why, sizeof why), "%s", why);
    rd = pl_io_fd_read(&fd, buf, sizeof buf);
    task = pl_test_spawn(t, &rd.base);
    PL_ASSERT_READY(pl_test_poll(task));
    cr_assert_eq(rd.result, 0);
    pl_io_fd_close(&fd);
}

Test(mock, a_write_must_match_the_script)
{
    pl_io_fd fd;
    pl_test_io *io = open_io(&fd);
    cr_assert_eq(pl_test_io_read(io, "ping", 4), 0);
    cr_assert_eq(pl_test_io_write(io, "pong", 4), 0);
    /* A write while the script expects a read waits for its turn. */
    pl_io_write_all w = pl_io_fd_write_all(&fd, "pong", 4);
    pl_test_task *writer = pl_test_spawn(t, &w.base);
    PL_ASSERT_PENDING(pl_test_poll(writer));
    char buf[8];
    pl_io_read rd = pl_io_fd_read(&fd, buf, sizeof buf);
    pl_test_task *reader = pl_test_spawn(t, &rd.base);
    PL_ASSERT_READY(pl_test_poll(reader));
    cr_assert_eq(rd.result, 4);
    cr_assert(pl_test_is_woken(writer), "the write's turn came");
    PL_ASSERT_READY(pl_test_poll(writer));
    cr_assert_eq(w.result, 4);
    char why[200];
    cr_assert(pl_test_io_done(io, why, sizeof why), "%s", why);
    /* Past the script's end, a write is wrong. */
    pl_io_write w2 = pl_io_fd_write(&fd, "x", 1);
    pl_test_task *late = pl_test_spawn(t, &w2.base);
    PL_ASSERT_READY(pl_test_poll(late));
    cr_assert_eq(w2.result, PL_EIO);
    cr_assert(!pl_test_io_done(io, why, sizeof why));
    cr_assert_str_eq(why, "write 2: expected \"(the end of the script)\", got \"x\"");
    pl_io_fd_close(&fd);
}

Test(mock, a_wrong_write_fails_and_is_reported)
{
    pl_io_fd fd;
    pl_test_io *io = open_io(&fd);
    cr_assert_eq(pl_test_io_write(io, "pong", 4), 0);
    pl_io_write_all w = pl_io_fd_write_all(&fd, "pang", 4);
    pl_test_task *task = pl_test_spawn(t, &w.base);
    PL_ASSERT_READY(pl_test_poll(task));
    cr_assert_eq(w.result, PL_EIO);
    char why[200];
    cr_assert(!pl_test_io_done(io, why, sizeof why));
    cr_assert_str_eq(why, "write 1: expected \"pong\", got \"pang\"");
    pl_io_fd_close(&fd);
}

Test(mock, a_read_error_reaches_the_read)
{
    pl_io_fd fd;
    pl_test_io *io = open_io(&fd);
    cr_assert_eq(pl_test_io_read_error(io, PL_ECONNRESET), 0);
    char buf[4];
    pl_io_read rd = pl_io_fd_read(&fd, buf, sizeof buf);
    pl_test_task *task = pl_test_spawn(t, &rd.base);
    PL_ASSERT_READY(pl_test_poll(task));
    cr_assert_eq(rd.result, PL_ECONNRESET);
    pl_io_fd_close(&fd);
}

/* The assertion macros fail loudly under any framework: an abort. */
Test(mock, assert_ready_aborts_on_a_pending_future, .signal = SIGABRT)
{
    pl_sleep s = pl_sleep_for(1 * PL_MS);
    pl_test_task *task = pl_test_spawn(t, &s.base);
    PL_ASSERT_READY(pl_test_poll(task));
}

Test(mock, assert_pending_aborts_on_a_ready_future, .signal = SIGABRT)
{
    pl_sleep s = pl_sleep_for(0);
    pl_test_task *task = pl_test_spawn(t, &s.base);
    PL_ASSERT_PENDING(pl_test_poll(task));
}
