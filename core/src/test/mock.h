/* core/src/test/mock.h: what the pieces of pollen/test.h share.
 *
 * mock_system.c is the pl_test and its system (the manual clock, the
 * wait that never blocks); mock_io.c the scripted streams behind that
 * system's handles; mock_task.c the mock tasks and their counting
 * waker. Dependencies point one way: task -> system -> io. */
#ifndef POLLEN_CORE_TEST_MOCK_H
#define POLLEN_CORE_TEST_MOCK_H

#include "internal.h"
#include "pollen/system.h"
#include "pollen/test.h"

struct pl_test {
    pl_executor *ex;
    pl_system sys;
    pl_time now_ns;
    pl_test_io *ios;     /* every scripted I/O, newest first */
    pl_test_task *tasks; /* every mock task, newest first */
    int next_handle;
};

/* The scripted I/O behind handle h, or NULL; the one after io in t's
 * list, or NULL. */
PL_INTERNAL pl_test_io *pl__test_io_find(pl_test *t, int h);
PL_INTERNAL pl_test_io *pl__test_io_next(const pl_test_io *io);

/* Scripted I/O as the system's calls (mock_io.c). */
PL_INTERNAL int pl__test_io_register(pl_test_io *io, pl_io_source *src);
PL_INTERNAL void pl__test_io_deregister(pl_test_io *io);
PL_INTERNAL ssize_t pl__test_io_read(pl_test_io *io, void *buf, size_t len);
PL_INTERNAL ssize_t pl__test_io_write(pl_test_io *io, const void *buf, size_t len);
/* Delivers the readiness the script's next step gives at `now`; true
 * when it set a bit the source did not have (something can progress). */
PL_INTERNAL bool pl__test_io_deliver(pl_test_io *io, pl_time now);
/* Frees every scripted I/O of the list. */
PL_INTERNAL void pl__test_io_free_all(pl_test_io *ios);

/* Drops the pending futures of every mock task; then, once the executor
 * is gone (and with it any clone of their wakers it held), frees them
 * (mock_task.c). */
PL_INTERNAL void pl__test_tasks_drop(pl_test *t);
PL_INTERNAL void pl__test_tasks_free(pl_test *t);

#endif
