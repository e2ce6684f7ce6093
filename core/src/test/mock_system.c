/* core/src/test/mock_system.c: the pl_test and its system.
 *
 * The clock is a variable only pl_test_advance moves. wait() never
 * blocks and never moves the clock: it delivers the scripted I/Os'
 * readiness and remote wakes, and when it would have to block and
 * neither gave anything new it says PL_EAGAIN, which ends pl_run. So
 * "run until idle" is pl_run, with every timer, channel and I/O future
 * as core makes them.
 */
#include <stdlib.h>

#include "internal.h"
#include "mock.h"

static pl_time mock_now(void *self) { return ((pl_test *)self)->now_ns; }

static int mock_wait(void *self, pl_executor *ex, pl_time deadline_ns)
{
    pl_test *t = self;
    bool progress = pl_executor_drain_remote(ex) > 0;
    for (pl_test_io *io = t->ios; io != NULL; io = pl__test_io_next(io)) {
        progress = pl__test_io_deliver(io, t->now_ns) || progress;
    }
    /* A wait that would not block (tasks still runnable, a timer due
     * now) goes on; one that would block ends the run: the clock moves
     * by pl_test_advance alone. */
    bool blocking = deadline_ns == PL_TIME_NEVER || deadline_ns > t->now_ns;
    return progress || !blocking ? 0 : PL_EAGAIN;
}

static void mock_remote_wake(void *self) { (void)self; }

static int mock_io_register(void *self, pl_io_source *src)
{
    pl_test_io *io = pl__test_io_find(self, src->handle);
    return io != NULL ? pl__test_io_register(io, src) : PL_EBADF;
}

static void mock_io_deregister(void *self, pl_io_source *src)
{
    pl_test_io *io = pl__test_io_find(self, src->handle);
    if (io != NULL) {
        pl__test_io_deregister(io);
    }
}

static int mock_close(void *self, int handle)
{
    return pl__test_io_find(self, handle) != NULL ? 0 : PL_EBADF;
}

static ssize_t mock_read(void *self, int handle, void *buf, size_t len)
{
    pl_test_io *io = pl__test_io_find(self, handle);
    return io != NULL ? pl__test_io_read(io, buf, len) : PL_EBADF;
}

static ssize_t mock_write(void *self, int handle, const void *buf, size_t len)
{
    pl_test_io *io = pl__test_io_find(self, handle);
    return io != NULL ? pl__test_io_write(io, buf, len) : PL_EBADF;
}

static const pl_system_vtable mock_vtable = {
    .version = PL_SYSTEM_VERSION,
    .name = "test",
    .now = mock_now,
    .wait = mock_wait,
    .remote_wake = mock_remote_wake,
    .io_register = mock_io_register,
    .io_deregister = mock_io_deregister,
    .close = mock_close,
    .read = mock_read,
    .write = mock_write,
};

int pl_test_create(pl_test **out)
{
    *out = NULL;
    pl_test *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return PL_ENOMEM;
    }
    t->sys = (pl_system){&mock_vtable, t};
    t->next_handle = 1000;
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.system = &t->sys;
    int rc = pl_executor_create(&t->ex, &o);
    if (rc != 0) {
        free(t);
        return rc;
    }
    *out = t;
    return 0;
}

void pl_test_destroy(pl_test *t)
{
    if (t == NULL) {
        return;
    }
    pl__test_tasks_drop(t);
    pl_executor_cancel_all(t->ex);
    pl_executor_destroy(t->ex);
    pl__test_tasks_free(t);
    pl__test_io_free_all(t->ios);
    free(t);
}

pl_executor *pl_test_executor(pl_test *t) { return t->ex; }

pl_time pl_test_now(const pl_test *t) { return t->now_ns; }

void pl_test_settle(pl_test *t)
{
    /* PL_EAGAIN (nothing more without the clock), PL_EDEADLK (parked
     * tasks nothing can wake) and 0 all mean: settled. */
    (void)pl_run(t->ex);
}

void pl_test_advance(pl_test *t, pl_time ns)
{
    PL_ASSERT(ns >= 0);
    t->now_ns += ns;
    pl_test_settle(t);
}
