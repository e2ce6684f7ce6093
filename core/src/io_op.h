/* core/src/io_op.h: the one I/O operation future, shared by io.c (fds,
 * pipes, sockets) and file.c (files and directories).
 *
 * Every I/O future is one instance of the same future: make sure there is
 * a source (register it first where the future creates it), try the
 * operation once, and on PL_EAGAIN forget the readiness bit and store the
 * current waker (replacing the one of an earlier poll), so the next
 * readiness event wakes this poll's task (edge-triggered readiness, as in
 * mio/tokio); anything else completes the future with that result. An
 * instance only says where its fields are and how to try its operation.
 */
#ifndef POLLEN_IO_OP_H
#define POLLEN_IO_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "internal.h"
#include "pollen/future.h"
#include "pollen/system.h"

typedef struct io_op {
    pl_future_vtable vtable; /* first: a future's vtable pointer is its op */
    uint32_t bit;            /* PL_IO_READABLE or PL_IO_WRITABLE: what it waits for */
    size_t src_at;           /* offsetof the future's pl_io_source pointer */
    size_t parked_at;        /* offsetof its `parked` flag */
    /* Gets a source for a future that creates its own (NULL: a missing
     * source is PL_EBADF). Returns 1 when *src is set and the operation
     * should be tried, or the future's result (0 or a PL_E* code). */
    int (*open)(pl_future *f, pl_executor *ex);
    /* One non-blocking try: a result >= 0, PL_EAGAIN, or a PL_E* code. */
    ssize_t (*attempt)(pl_future *f, pl_io_source *src, const pl_system *sys);
    /* Stores the result (src is NULL when there is none). NULL: the result
     * is a ssize_t at result_at. */
    void (*finish)(pl_future *f, pl_io_source *src, ssize_t result);
    size_t result_at;
    /* What the future owns besides its parked waker (NULL: nothing). */
    void (*release)(pl_future *f);
} io_op;

/* The poll and drop of every io_op future. */
PL_INTERNAL pl_poll_result pl__io_op_poll(pl_future *f, pl_context *cx);
PL_INTERNAL void pl__io_op_drop(pl_future *f);

#define IO_OP_VTABLE(name)                                                                         \
    {                                                                                              \
        (name), pl__io_op_poll, pl__io_op_drop                                                     \
    }
#define IO_OP_FIELDS(type) .src_at = offsetof(type, src), .parked_at = offsetof(type, parked)

/* Registers `handle` with the executor's system; *out is the new source.
 * The handle stays the caller's on failure. Returns 0 or a PL_E* code. */
PL_INTERNAL int pl__io_source_open(pl_executor *ex, int handle, pl_io_source **out);
/* Deregisters, closes the handle, frees the source, sets *srcp to NULL.
 * NULL *srcp: no-op. */
PL_INTERNAL void pl__io_source_close(pl_io_source **srcp);
/* Closes a handle that has no source. */
PL_INTERNAL void pl__io_handle_close(pl_executor *ex, int handle);

#endif
