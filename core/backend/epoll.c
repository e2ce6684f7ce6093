/* core/backend/epoll.c: the real system backend.
 *
 * epoll for readiness, CLOCK_MONOTONIC for time, an eventfd for wakes from
 * other threads. This is the only file in core allowed to touch the clock,
 * epoll or eventfd: everything else reaches them through the vtable, which
 * is what lets the simulator replace all of it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "file.h"
#include "internal.h"
#include "pollen/error.h"
#include "pollen/system.h"

enum { EVENTS_MAX = 64 };

typedef struct epoll_system {
    int epoll_fd;
    int wake_fd;              /* eventfd: remote_wake writes, wait drains */
    bool no_pwait2;           /* the kernel lacks epoll_pwait2: use ms timeouts */
    pl_time last_now_ns;      /* latest now(), to assert monotonicity */
    pl_alloc_fn alloc;        /* what allocated this struct, and frees it */
    void *alloc_ud;
    struct epoll_event events[EVENTS_MAX];
} epoll_system;

/* The eventfd is registered with a NULL data.ptr: sources are never NULL. */
#define WAKE_TAG NULL

static pl_time sys_now(void *self)
{
    epoll_system *s = self;
    struct timespec ts;
    int rc = clock_gettime(CLOCK_MONOTONIC, &ts);
    PL_ASSERT(rc == 0);
    pl_time now_ns = (pl_time)ts.tv_sec * PL_S + (pl_time)ts.tv_nsec;
    /* Timers and the simulator's "never early" promise rest on this. */
    PL_ASSERT(now_ns >= s->last_now_ns);
    s->last_now_ns = now_ns;
    return now_ns;
}

/* Time left until deadline_ns, never negative. Compares before
 * subtracting: a deadline far in the past must not overflow. */
static pl_time remaining_ns(epoll_system *s, pl_time deadline_ns)
{
    pl_time now_ns = sys_now(s);
    return deadline_ns > now_ns ? deadline_ns - now_ns : 0;
}

/* Milliseconds for epoll_wait, rounded up so a wakeup is never early. */
static int timeout_ms(epoll_system *s, pl_time deadline_ns)
{
    if (deadline_ns == PL_TIME_NEVER) {
        return -1;
    }
    pl_time left_ns = remaining_ns(s, deadline_ns);
    pl_time max_ns = (pl_time)INT_MAX * PL_MS;
    if (left_ns >= max_ns) {
        return INT_MAX;
    }
    return (int)((left_ns + PL_MS - 1) / PL_MS);
}

/* One epoll call: the number of events, 0 on timeout or EINTR, or -errno.
 * epoll_pwait2 takes nanoseconds; older kernels fall back to ms. */
static int poll_once(epoll_system *s, pl_time deadline_ns)
{
    if (!s->no_pwait2) {
        struct timespec ts;
        struct timespec *tsp = NULL;
        if (deadline_ns != PL_TIME_NEVER) {
            pl_time left_ns = remaining_ns(s, deadline_ns);
            ts.tv_sec = (time_t)(left_ns / PL_S);
            ts.tv_nsec = (long)(left_ns % PL_S);
            tsp = &ts;
        }
        int n = epoll_pwait2(s->epoll_fd, s->events, EVENTS_MAX, tsp, NULL);
        if (n >= 0) {
            return n;
        }
        /* Seccomp filters answer EPERM for syscalls they do not know. */
        if (errno != ENOSYS && errno != EPERM) {
            return errno == EINTR ? 0 : -errno;
        }
        s->no_pwait2 = true;
    }
    int n = epoll_wait(s->epoll_fd, s->events, EVENTS_MAX, timeout_ms(s, deadline_ns));
    if (n < 0) {
        return errno == EINTR ? 0 : -errno;
    }
    return n;
}

static uint32_t epoll_to_bits(uint32_t e)
{
    uint32_t bits = 0;
    /* RDHUP: the peer shut down its side, so a read returns 0 now. */
    if (e & (EPOLLIN | EPOLLPRI | EPOLLRDHUP)) {
        bits |= PL_IO_READABLE;
    }
    if (e & EPOLLOUT) {
        bits |= PL_IO_WRITABLE;
    }
    /* An error or hangup must wake both directions: each will see it. */
    if (e & (EPOLLERR | EPOLLHUP)) {
        bits |= PL_IO_ERROR | PL_IO_READABLE | PL_IO_WRITABLE;
    }
    return bits;
}

static void drain_wake_fd(epoll_system *s)
{
    uint64_t count;
    ssize_t r;
    do {
        r = read(s->wake_fd, &count, sizeof count);
    } while (r < 0 && errno == EINTR);
}

static void dispatch(epoll_system *s, pl_executor *ex, int n)
{
    bool remote = false;
    for (int i = 0; i < n; i++) {
        struct epoll_event *ev = &s->events[i];
        if (ev->data.ptr == WAKE_TAG) {
            remote = true;
            continue;
        }
        pl_io_source_ready(ev->data.ptr, epoll_to_bits(ev->events));
    }
    if (remote) {
        /* Reset the counter before draining the queue: a wake pushed after
         * the drain then writes the eventfd again and is not lost. */
        drain_wake_fd(s);
        pl_executor_drain_remote(ex);
    }
}

static int sys_wait(void *self, pl_executor *ex, pl_time deadline_ns)
{
    epoll_system *s = self;
    for (;;) {
        int n = poll_once(s, deadline_ns);
        if (n < 0) {
            return n;
        }
        if (n > 0) {
            dispatch(s, ex, n);
            return 0;
        }
        /* A timeout or a signal: return only once the deadline has really
         * passed, so callers never see an early wakeup. */
        if (deadline_ns != PL_TIME_NEVER && remaining_ns(s, deadline_ns) == 0) {
            return 0;
        }
    }
}

static void sys_remote_wake(void *self)
{
    epoll_system *s = self;
    uint64_t one = 1;
    ssize_t r;
    /* EAGAIN means the counter is saturated: the eventfd is readable anyway. */
    do {
        r = write(s->wake_fd, &one, sizeof one);
    } while (r < 0 && errno == EINTR);
}

static int sys_io_register(void *self, pl_io_source *src)
{
    epoll_system *s = self;
    struct epoll_event ev = {0};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.ptr = src;
    if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, src->handle, &ev) < 0) {
        /* Regular files and directories cannot be watched (EPERM): they
         * are always ready, and their futures never wait for readiness. */
        return errno == EPERM ? 0 : -errno;
    }
    return 0;
}

static void sys_io_deregister(void *self, pl_io_source *src)
{
    epoll_system *s = self;
    /* Failure means the fd is already gone, and with it the registration. */
    (void)epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, src->handle, NULL);
}

static int sys_socket(void *self, int domain, int type)
{
    int fd = socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -errno;
    }
    if (type == SOCK_STREAM) {
        /* Servers restarted on the same port must not wait out TIME_WAIT. */
        int one = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) {
            int err = errno;
            close(fd);
            return -err;
        }
    }
    return fd;
}

static int sys_pipe(void *self, int handles[2])
{
    return pipe2(handles, O_NONBLOCK | O_CLOEXEC) < 0 ? -errno : 0;
}

static int sys_close(void *self, int handle)
{
    /* On Linux the fd is released even when close says EINTR: never retry. */
    if (close(handle) < 0 && errno != EINTR) {
        return -errno;
    }
    return 0;
}

static int sys_bind(void *self, int handle, const struct sockaddr *addr, socklen_t len)
{
    return bind(handle, addr, len) < 0 ? -errno : 0;
}

static int sys_listen(void *self, int handle, int backlog)
{
    return listen(handle, backlog) < 0 ? -errno : 0;
}

static int sys_accept(void *self, int handle, struct sockaddr *addr, socklen_t *len)
{
    int fd;
    do {
        fd = accept4(handle, addr, len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

static int sys_connect(void *self, int handle, const struct sockaddr *addr, socklen_t len)
{
    if (connect(handle, addr, len) == 0) {
        return 0;
    }
    /* An interrupted non-blocking connect carries on in the background. */
    if (errno == EINPROGRESS || errno == EINTR) {
        return PL_EINPROGRESS;
    }
    return -errno;
}

static int sys_connect_result(void *self, int handle)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(handle, SOL_SOCKET, SO_ERROR, &err, &len) < 0) {
        return -errno;
    }
    return -err;
}

static int sys_local_addr(void *self, int handle, struct sockaddr *addr, socklen_t *len)
{
    return getsockname(handle, addr, len) < 0 ? -errno : 0;
}

static ssize_t sys_read(void *self, int handle, void *buf, size_t len)
{
    ssize_t n;
    do {
        n = read(handle, buf, len);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

/* write(2) on a pipe whose reader is gone raises SIGPIPE, which kills the
 * process by default. Changing the process-wide disposition would surprise
 * the application, so block SIGPIPE in this thread for the call and consume
 * the one our write raised, leaving any earlier pending one alone. */
static ssize_t write_without_sigpipe(int handle, const void *buf, size_t len)
{
    sigset_t pipe_set;
    sigset_t old_set;
    sigset_t pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigemptyset(&pending);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
    ssize_t n;
    do {
        n = write(handle, buf, len);
    } while (n < 0 && errno == EINTR);
    int err = errno;
    if (n < 0 && err == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old_set, NULL);
    return n < 0 ? -err : n;
}

static ssize_t sys_write(void *self, int handle, const void *buf, size_t len)
{
    /* Sockets take MSG_NOSIGNAL, the cheap way to avoid SIGPIPE. */
    ssize_t n;
    do {
        n = send(handle, buf, len, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n >= 0) {
        return n;
    }
    if (errno != ENOTSOCK) {
        return -errno;
    }
    return write_without_sigpipe(handle, buf, len);
}

static ssize_t sys_sendto(void *self, int handle, const void *buf, size_t len,
                          const struct sockaddr *addr, socklen_t addr_len)
{
    ssize_t n;
    do {
        n = sendto(handle, buf, len, MSG_NOSIGNAL, addr, addr_len);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

static ssize_t sys_recvfrom(void *self, int handle, void *buf, size_t len,
                            struct sockaddr *addr, socklen_t *addr_len)
{
    ssize_t n;
    do {
        n = recvfrom(handle, buf, len, 0, addr, addr_len);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

static int sys_shutdown(void *self, int handle, int how)
{
    return shutdown(handle, how) < 0 ? -errno : 0;
}

static const pl_system_vtable epoll_vtable = {
    .version = PL_SYSTEM_VERSION,
    .name = "epoll",
    .now = sys_now,
    .wait = sys_wait,
    .decide = NULL, /* production answers 0: the executor's fast path */
    .remote_wake = sys_remote_wake,
    .io_register = sys_io_register,
    .io_deregister = sys_io_deregister,
    .socket = sys_socket,
    .pipe = sys_pipe,
    .close = sys_close,
    .bind = sys_bind,
    .listen = sys_listen,
    .accept = sys_accept,
    .connect = sys_connect,
    .connect_result = sys_connect_result,
    .local_addr = sys_local_addr,
    .read = sys_read,
    .write = sys_write,
    .sendto = sys_sendto,
    .recvfrom = sys_recvfrom,
    .shutdown = sys_shutdown,
    .dir_open = pl__posix_dir_open,
    .file_open = pl__posix_file_open,
    .file_read = pl__posix_file_read,
    .file_write = pl__posix_file_write,
    .file_sync = pl__posix_file_sync,
    .file_size = pl__posix_file_size,
    .dir_rename = pl__posix_dir_rename,
    .dir_unlink = pl__posix_dir_unlink,
    .dir_list = pl__posix_dir_list,
};

static int open_fds(epoll_system *s)
{
    s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (s->epoll_fd < 0) {
        return -errno;
    }
    s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->wake_fd < 0) {
        return -errno;
    }
    /* Level-triggered: wait() drains the counter every time it fires. */
    struct epoll_event ev = {0};
    ev.events = EPOLLIN;
    ev.data.ptr = WAKE_TAG;
    if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->wake_fd, &ev) < 0) {
        return -errno;
    }
    return 0;
}

static void close_fds(epoll_system *s)
{
    if (s->wake_fd >= 0) {
        close(s->wake_fd);
    }
    if (s->epoll_fd >= 0) {
        close(s->epoll_fd);
    }
}

int pl__system_default_create_with(pl_system *out, pl_alloc_fn alloc, void *alloc_ud)
{
    *out = (pl_system){NULL, NULL};
    alloc = alloc != NULL ? alloc : pl__libc_alloc;
    epoll_system *s = alloc(alloc_ud, NULL, 0, sizeof *s);
    if (s == NULL) {
        return PL_ENOMEM;
    }
    memset(s, 0, sizeof *s);
    s->alloc = alloc;
    s->alloc_ud = alloc_ud;
    s->epoll_fd = -1;
    s->wake_fd = -1;
    int rc = open_fds(s);
    if (rc < 0) {
        close_fds(s);
        alloc(alloc_ud, s, sizeof *s, 0);
        return rc;
    }
    *out = (pl_system){&epoll_vtable, s};
    return 0;
}

int pl_system_default_create(pl_system *out)
{
    return pl__system_default_create_with(out, NULL, NULL);
}

void pl_system_default_destroy(pl_system *sys)
{
    if (sys == NULL || sys->self == NULL) {
        return;
    }
    PL_ASSERT(sys->vtable == &epoll_vtable);
    epoll_system *s = sys->self;
    close_fds(s);
    s->alloc(s->alloc_ud, s, sizeof *s, 0);
    *sys = (pl_system){NULL, NULL};
}
