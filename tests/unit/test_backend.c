/* The epoll system backend: its clock, wait deadlines, remote wakes from
 * other threads, readiness mapping and the raw I/O operations. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <pollen/error.h>
#include <pollen/executor.h>
#include <pollen/system.h>
#include <pollen/timer.h>

#include "leakcheck.h"

TestSuite(backend, .fini = pl_test_leak_check, .timeout = 60);

/* ---- Helpers -------------------------------------------------------------- */

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    int n = 0;
    while (readdir(d) != NULL) {
        n++;
    }
    closedir(d);
    return n;
}

/* A real system and an executor running on it (wait() needs one to
 * deliver remote wakes to). */
typedef struct fixture {
    pl_system sys;
    pl_executor *ex;
} fixture;

static void fixture_open(fixture *fx)
{
    cr_assert_eq(pl_system_default_create(&fx->sys), 0);
    cr_assert_not_null(fx->sys.vtable);
    cr_assert_str_eq(fx->sys.vtable->name, "epoll");
    cr_assert_eq(fx->sys.vtable->version, PL_SYSTEM_VERSION);
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.system = &fx->sys;
    cr_assert_eq(pl_executor_create(&fx->ex, &o), 0);
}

static void fixture_close(fixture *fx)
{
    pl_executor_destroy(fx->ex);
    pl_system_default_destroy(&fx->sys);
    cr_assert_null(fx->sys.self);
}

static pl_time now(fixture *fx)
{
    return fx->sys.vtable->now(fx->sys.self);
}

static int sys_wait(fixture *fx, pl_time deadline_ns)
{
    return fx->sys.vtable->wait(fx->sys.self, fx->ex, deadline_ns);
}

static void sleep_ns(pl_time ns)
{
    struct timespec ts = {(time_t)(ns / PL_S), (long)(ns % PL_S)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- Clock ------------------------------------------------------------------ */

Test(backend, now_is_monotonic_and_advances)
{
    fixture fx;
    fixture_open(&fx);
    pl_time prev = now(&fx);
    cr_assert_gt(prev, 0);
    for (int i = 0; i < 100000; i++) {
        pl_time t = now(&fx);
        cr_assert_geq(t, prev);
        prev = t;
    }
    pl_time before = now(&fx);
    sleep_ns(5 * PL_MS);
    cr_assert_geq(now(&fx) - before, 5 * PL_MS);
    fixture_close(&fx);
}

/* ---- Deadlines ---------------------------------------------------------------- */

Test(backend, wait_is_never_early)
{
    fixture fx;
    fixture_open(&fx);
    const pl_time delays_ns[] = {1, 300 * PL_US, 1 * PL_MS, 2500 * PL_US, 20 * PL_MS};
    for (size_t i = 0; i < sizeof delays_ns / sizeof delays_ns[0]; i++) {
        pl_time start = now(&fx);
        pl_time deadline = start + delays_ns[i];
        cr_assert_eq(sys_wait(&fx, deadline), 0);
        pl_time end = now(&fx);
        cr_assert_geq(end, deadline, "woke %lld ns early", (long long)(deadline - end));
        cr_assert_lt(end - deadline, 500 * PL_MS, "absurdly late");
    }
    fixture_close(&fx);
}

Test(backend, a_past_deadline_does_not_block)
{
    fixture fx;
    fixture_open(&fx);
    pl_time start = now(&fx);
    cr_assert_eq(sys_wait(&fx, start - PL_S), 0);
    cr_assert_eq(sys_wait(&fx, 0), 0);
    cr_assert_eq(sys_wait(&fx, INT64_MIN), 0);
    cr_assert_lt(now(&fx) - start, 100 * PL_MS);
    fixture_close(&fx);
}

Test(backend, a_far_deadline_is_clamped_not_overflowed)
{
    fixture fx;
    fixture_open(&fx);
    /* A deadline of centuries must block (here: until a remote wake), not
     * wrap around to "now". */
    fx.sys.vtable->remote_wake(fx.sys.self);
    pl_time start = now(&fx);
    cr_assert_eq(sys_wait(&fx, PL_TIME_NEVER - 1), 0);
    cr_assert_lt(now(&fx) - start, 100 * PL_MS);
    fixture_close(&fx);
}

Test(backend, sleep_on_the_real_backend_is_never_early)
{
    pl_executor *ex;
    cr_assert_eq(pl_executor_create(&ex, NULL), 0);
    const pl_system *sys = pl_executor_system(ex);
    pl_time start = sys->vtable->now(sys->self);
    pl_sleep s = pl_sleep_for(15 * PL_MS);
    cr_assert_eq(PL_BLOCK_ON(ex, s), 0);
    cr_assert_geq(sys->vtable->now(sys->self) - start, 15 * PL_MS);
    pl_executor_destroy(ex);
}

/* ---- Remote wakes --------------------------------------------------------------- */

typedef struct waker_thread {
    const pl_system *sys;
    pl_time delay_ns;
} waker_thread;

static void *remote_wake_later(void *arg)
{
    waker_thread *w = arg;
    sleep_ns(w->delay_ns);
    w->sys->vtable->remote_wake(w->sys->self);
    return NULL;
}

Test(backend, remote_wake_interrupts_a_blocked_wait_and_is_drained)
{
    fixture fx;
    fixture_open(&fx);
    waker_thread w = {&fx.sys, 50 * PL_MS};
    pthread_t th;
    pl_time start = now(&fx);
    cr_assert_eq(pthread_create(&th, NULL, remote_wake_later, &w), 0);
    cr_assert_eq(sys_wait(&fx, PL_TIME_NEVER), 0);
    pl_time woke = now(&fx);
    cr_assert_geq(woke - start, 40 * PL_MS, "returned before the wake");
    cr_assert_eq(pthread_join(th, NULL), 0);
    /* Drained: the next wait runs to its deadline instead of returning at
     * once on a still-readable eventfd. */
    pl_time deadline = now(&fx) + 30 * PL_MS;
    cr_assert_eq(sys_wait(&fx, deadline), 0);
    cr_assert_geq(now(&fx), deadline);
    fixture_close(&fx);
}

Test(backend, wakes_before_the_wait_coalesce_into_one_return)
{
    fixture fx;
    fixture_open(&fx);
    for (int i = 0; i < 5; i++) {
        fx.sys.vtable->remote_wake(fx.sys.self);
    }
    pl_time start = now(&fx);
    cr_assert_eq(sys_wait(&fx, PL_TIME_NEVER), 0);
    cr_assert_lt(now(&fx) - start, 100 * PL_MS);
    pl_time deadline = now(&fx) + 20 * PL_MS;
    cr_assert_eq(sys_wait(&fx, deadline), 0);
    cr_assert_geq(now(&fx), deadline, "the counter was drained in one read");
    fixture_close(&fx);
}

/* Parks once after handing a remote waker to a thread that wakes it later. */
typedef struct remote_task {
    pl_future base;
    pthread_t thread;
    pl_remote_waker *rw;
    pl_time delay_ns;
    int polls;
} remote_task;

static void *wake_remote_later(void *arg)
{
    remote_task *t = arg;
    sleep_ns(t->delay_ns);
    pl_remote_waker_wake(t->rw);
    return NULL;
}

static pl_poll_result remote_task_poll(pl_future *f, pl_context *cx)
{
    remote_task *self = (remote_task *)f;
    if (self->polls++ > 0) {
        return PL_READY;
    }
    cr_assert_eq(pl_remote_waker_create(cx, &self->rw), 0);
    /* self lives in the task, which stays put until it completes. */
    cr_assert_eq(pthread_create(&self->thread, NULL, wake_remote_later, self), 0);
    return PL_PENDING;
}

static const pl_future_vtable remote_task_vt = {"remote_task", remote_task_poll, NULL};

Test(backend, a_remote_waker_from_another_thread_unblocks_pl_run)
{
    int fds = count_fds();
    fixture fx;
    fixture_open(&fx);
    remote_task rt = {.base = PL_FUTURE_INIT(&remote_task_vt), .delay_ns = 40 * PL_MS};
    pl_task *t;
    cr_assert_eq(PL_SPAWN(fx.ex, rt, "remote", &t), 0);
    pl_time start = now(&fx);
    cr_assert_eq(pl_run(fx.ex), 0);
    cr_assert_geq(now(&fx) - start, 40 * PL_MS);
    remote_task *ro = pl_task_future(t);
    cr_assert_eq(ro->polls, 2, "parked once, woken once");
    cr_assert_eq(pthread_join(ro->thread, NULL), 0);
    pl_task_release(t);
    fixture_close(&fx);
    cr_assert_eq(count_fds(), fds, "epoll and eventfd closed by destroy");
}

/* ---- Readiness ----------------------------------------------------------------- */

Test(backend, readiness_maps_to_source_bits_and_wakes)
{
    fixture fx;
    fixture_open(&fx);
    const pl_system_vtable *vt = fx.sys.vtable;
    int p[2];
    cr_assert_eq(vt->pipe(fx.sys.self, p), 0);
    cr_assert(fcntl(p[0], F_GETFL) & O_NONBLOCK);
    cr_assert(fcntl(p[1], F_GETFL) & O_NONBLOCK);
    cr_assert_eq(fcntl(p[0], F_GETFD), FD_CLOEXEC);
    pl_io_source rd = {.handle = p[0], .ex = fx.ex};
    pl_io_source wr = {.handle = p[1], .ex = fx.ex};
    cr_assert_eq(vt->io_register(fx.sys.self, &rd), 0);
    cr_assert_eq(vt->io_register(fx.sys.self, &wr), 0);
    cr_assert_eq(vt->io_register(fx.sys.self, &wr), -EEXIST);

    /* Registration reports the current state: the writer has room. */
    cr_assert_eq(sys_wait(&fx, now(&fx) + 50 * PL_MS), 0);
    cr_assert_eq(wr.ready, PL_IO_WRITABLE);
    cr_assert_eq(rd.ready, 0);

    cr_assert_eq(vt->write(fx.sys.self, p[1], "hi", 2), 2);
    cr_assert_eq(sys_wait(&fx, now(&fx) + 50 * PL_MS), 0);
    cr_assert(rd.ready & PL_IO_READABLE);
    char buf[4];
    cr_assert_eq(vt->read(fx.sys.self, p[0], buf, sizeof buf), 2);
    cr_assert_eq(vt->read(fx.sys.self, p[0], buf, sizeof buf), PL_EAGAIN);
    rd.ready = 0;

    /* The writer goes away: the reader sees a hangup, i.e. readable plus
     * error, and reads end of stream. */
    vt->io_deregister(fx.sys.self, &wr);
    cr_assert_eq(vt->close(fx.sys.self, p[1]), 0);
    cr_assert_eq(sys_wait(&fx, now(&fx) + 50 * PL_MS), 0);
    cr_assert_eq(rd.ready, PL_IO_READABLE | PL_IO_WRITABLE | PL_IO_ERROR);
    cr_assert_eq(vt->read(fx.sys.self, p[0], buf, sizeof buf), 0);

    vt->io_deregister(fx.sys.self, &rd);
    cr_assert_eq(vt->close(fx.sys.self, p[0]), 0);
    fixture_close(&fx);
}

Test(backend, a_ready_source_wakes_its_stored_wakers)
{
    fixture fx;
    fixture_open(&fx);
    pl_io_source src = {.ex = fx.ex, .read_waker = pl_waker_noop(),
                        .write_waker = pl_waker_noop()};
    pl_io_source_ready(&src, PL_IO_READABLE);
    cr_assert_not(pl_waker_is_set(&src.read_waker), "woken and emptied");
    cr_assert(pl_waker_is_set(&src.write_waker));
    pl_io_source_ready(&src, PL_IO_ERROR);
    cr_assert_not(pl_waker_is_set(&src.write_waker), "an error wakes writers too");
    cr_assert_eq(src.ready, PL_IO_READABLE | PL_IO_ERROR);
    fixture_close(&fx);
}

/* ---- Raw operations -------------------------------------------------------------- */

Test(backend, sockets_are_nonblocking_and_cloexec)
{
    fixture fx;
    fixture_open(&fx);
    const pl_system_vtable *vt = fx.sys.vtable;
    int fd = vt->socket(fx.sys.self, AF_INET, SOCK_STREAM);
    cr_assert_geq(fd, 0);
    cr_assert(fcntl(fd, F_GETFL) & O_NONBLOCK);
    cr_assert_eq(fcntl(fd, F_GETFD), FD_CLOEXEC);
    cr_assert_eq(vt->close(fx.sys.self, fd), 0);
    cr_assert_eq(vt->socket(fx.sys.self, 12345, SOCK_STREAM), -EAFNOSUPPORT);
    fixture_close(&fx);
}

Test(backend, failures_are_negative_errno)
{
    fixture fx;
    fixture_open(&fx);
    const pl_system_vtable *vt = fx.sys.vtable;
    void *s = fx.sys.self;
    char buf[4];
    cr_assert_eq(vt->read(s, -1, buf, sizeof buf), PL_EBADF);
    cr_assert_eq(vt->write(s, -1, buf, sizeof buf), PL_EBADF);
    cr_assert_eq(vt->close(s, -1), PL_EBADF);
    cr_assert_eq(vt->listen(s, -1, 1), PL_EBADF);
    pl_io_source bad = {.handle = -1, .ex = fx.ex};
    cr_assert_eq(vt->io_register(s, &bad), PL_EBADF);

    /* A refused connect: at once, or as EINPROGRESS then SO_ERROR. */
    int l = vt->socket(s, AF_INET, SOCK_STREAM);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(vt->bind(s, l, (struct sockaddr *)&sin, sizeof sin), 0);
    socklen_t len = sizeof sin;
    cr_assert_eq(vt->local_addr(s, l, (struct sockaddr *)&sin, &len), 0);
    cr_assert_eq(vt->close(s, l), 0);
    int c = vt->socket(s, AF_INET, SOCK_STREAM);
    int rc = vt->connect(s, c, (struct sockaddr *)&sin, sizeof sin);
    if (rc == PL_EINPROGRESS) {
        pl_io_source src = {.handle = c, .ex = fx.ex};
        cr_assert_eq(vt->io_register(s, &src), 0);
        while (!(src.ready & PL_IO_ERROR)) {
            cr_assert_eq(sys_wait(&fx, now(&fx) + PL_S), 0);
        }
        vt->io_deregister(s, &src);
        rc = vt->connect_result(s, c);
    }
    cr_assert_eq(rc, PL_ECONNREFUSED, "got %s", pl_err_name(rc));
    cr_assert_eq(vt->close(s, c), 0);
    fixture_close(&fx);
}

Test(backend, writes_to_a_closed_pipe_or_socket_raise_no_sigpipe)
{
    fixture fx;
    fixture_open(&fx);
    const pl_system_vtable *vt = fx.sys.vtable;
    void *s = fx.sys.self;
    int p[2];
    cr_assert_eq(vt->pipe(s, p), 0);
    cr_assert_eq(vt->close(s, p[0]), 0);
    cr_assert_eq(vt->write(s, p[1], "x", 1), PL_EPIPE);
    cr_assert_eq(vt->close(s, p[1]), 0);
    int sv[2];
    cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
    close(sv[0]);
    cr_assert_eq(vt->write(s, sv[1], "x", 1), PL_EPIPE);
    close(sv[1]);
    /* Still alive (SIGPIPE's default action kills), nothing pending, and the
     * thread's signal mask is as it was. */
    sigset_t set;
    sigemptyset(&set);
    sigpending(&set);
    cr_assert_eq(sigismember(&set, SIGPIPE), 0);
    pthread_sigmask(SIG_BLOCK, NULL, &set);
    cr_assert_eq(sigismember(&set, SIGPIPE), 0);
    fixture_close(&fx);
}

Test(backend, destroy_accepts_an_empty_system)
{
    pl_system none = {NULL, NULL};
    pl_system_default_destroy(&none);
    pl_system_default_destroy(NULL);
    int fds = count_fds();
    pl_system sys;
    cr_assert_eq(pl_system_default_create(&sys), 0);
    cr_assert_null(sys.vtable->decide, "production decides nothing");
    cr_assert_eq(count_fds(), fds + 2);
    pl_system_default_destroy(&sys);
    cr_assert_eq(count_fds(), fds);
}
