/* pollen/test.h: unit tests of one future, without a scenario.
 *
 * A pl_test is an executor over a paused manual clock and scripted I/O.
 * A mock task polls one future only when the test says so, through a
 * counting waker, so a test states each step of the future's life:
 *
 *     pl_test *t;
 *     pl_test_create(&t);
 *     pl_sleep s = pl_sleep_for(10 * PL_MS);
 *     pl_test_task *task = pl_test_spawn(t, &s.base);
 *     PL_ASSERT_PENDING(pl_test_poll(task));
 *     pl_test_advance(t, 9 * PL_MS);
 *     assert(!pl_test_is_woken(task));
 *     pl_test_advance(t, 1 * PL_MS);
 *     assert(pl_test_is_woken(task));
 *     PL_ASSERT_READY(pl_test_poll(task));
 *     pl_test_destroy(t);
 *
 * The future runs on a real executor (pl_test_executor): its timers,
 * channels and I/O are core's own, so what passes here passes in
 * production. The clock moves only by pl_test_advance. A scripted I/O
 * (pl_test_io) is a byte stream that yields the reads and expects the
 * writes of its script, in order; open its handle with pl_io_fd_open.
 *
 * The checks work under any test framework: PL_ASSERT_PENDING and
 * PL_ASSERT_READY print the expression, file and line and abort (a
 * Criterion test then fails as crashed); or compare pl_test_poll's
 * result with the framework's own assertion.
 *
 * Thread rules: one thread, the one that created the pl_test; none of
 * these functions may be called from a poll.
 */
#ifndef POLLEN_TEST_H
#define POLLEN_TEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/executor.h"
#include "pollen/future.h"
#include "pollen/time.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_test pl_test;
typedef struct pl_test_task pl_test_task;
typedef struct pl_test_io pl_test_io;

/* Creates an executor over a manual clock at 0, paused. Returns 0,
 * PL_ENOMEM, or pl_executor_create's error. */
int pl_test_create(pl_test **out);

/* Drops every mock task's future that is still pending, then destroys
 * the executor, the scripted I/Os and the tasks. NULL is allowed. */
void pl_test_destroy(pl_test *t);

/* The executor: spawn helper tasks on it, open I/O on it. Owned by t. */
pl_executor *pl_test_executor(pl_test *t);

/* The manual clock. */
pl_time pl_test_now(const pl_test *t);

/* Moves the clock forward by ns (>= 0), then runs the executor until
 * nothing more happens at the new time: due timers fire (waking whoever
 * waits on them), scripted I/O waits end, helper tasks run. */
void pl_test_advance(pl_test *t, pl_time ns);

/* Runs the executor until nothing more happens without the clock
 * moving. pl_test_poll and pl_test_advance do it themselves; call it
 * after waking something from outside a poll (pl_notify_one, a send). */
void pl_test_settle(pl_test *t);

/* ---- Mock tasks --------------------------------------------------------- */

/* Spawns a mock task polling `fut` (borrowed: it stays in the caller's
 * storage, where its output fields are read). The future is polled only
 * by pl_test_poll, with the task's counting waker. Owned by t (freed by
 * pl_test_destroy); NULL when out of memory. */
pl_test_task *pl_test_spawn(pl_test *t, pl_future *fut);

/* Polls the future once, then settles the executor. Returns its result;
 * after PL_READY the future is dropped (as an executor drops a finished
 * task's future: outputs stay readable) and must not be polled again.
 * Resets the wake count. */
pl_poll_result pl_test_poll(pl_test_task *task);

/* Wakes of the task's waker (wake or wake_by_ref through any clone)
 * since the last pl_test_poll. */
uint32_t pl_test_wakes(const pl_test_task *task);
static inline bool pl_test_is_woken(const pl_test_task *task) { return pl_test_wakes(task) > 0; }

/* Clones of the task's waker alive now (stored by the future or by what
 * it waits on). A parked future holds at least one; a dropped future
 * must hold none. */
uint32_t pl_test_waker_refs(const pl_test_task *task);

/* Cancels the mock task: drops its future if it is still pending.
 * Idempotent. */
void pl_test_cancel(pl_test_task *task);

/* What PL_ASSERT_PENDING and PL_ASSERT_READY call when the result is
 * not the one expected: prints the expression and where, then aborts. */
void pl__test_expect(pl_poll_result got, pl_poll_result want, const char *expr, const char *file,
                     int line);
#define PL_ASSERT_PENDING(expr) pl__test_expect((expr), PL_PENDING, #expr, __FILE__, __LINE__)
#define PL_ASSERT_READY(expr)   pl__test_expect((expr), PL_READY, #expr, __FILE__, __LINE__)

/* ---- Scripted I/O --------------------------------------------------------- */

/* Creates a scripted byte stream on t: the steps below, in the order
 * given. Owned by t (freed by pl_test_destroy); NULL when out of memory. Its handle is opened with
 * pl_io_fd_open(pl_test_executor(t), &fd, pl_test_io_handle(io)). */
pl_test_io *pl_test_io_create(pl_test *t);
int pl_test_io_handle(const pl_test_io *io);

/* Script steps, appended; each returns 0 or PL_ENOMEM. The bytes are
 * copied. Reads see a `read` step's bytes (over as many reads as they
 * take) and writes must give a `write` step's bytes exactly (split as
 * they like). A read while the next step is a write or a wait, and a
 * write while it is a read or a wait, would block (PL_EAGAIN, then the
 * handle's readiness when the step comes). A `wait` lets ns of the clock
 * pass (from when it becomes the next step) before the step after it.
 * `read_error` makes the next read return err (a PL_E* code). After the
 * last step reads see the end of the stream (0). */
int pl_test_io_read(pl_test_io *io, const void *data, size_t len);
int pl_test_io_write(pl_test_io *io, const void *data, size_t len);
int pl_test_io_wait(pl_test_io *io, pl_time ns);
int pl_test_io_read_error(pl_test_io *io, int err);

/* True when every step happened and every write matched; otherwise false
 * with why ("write 2: expected \"pong\", got \"pang\"", "step 3 of 4
 * left: read of 5 bytes") in why (NUL-terminated, cut to why_len). A
 * mismatched write, or one past the script's end, fails with PL_EIO. */
bool pl_test_io_done(const pl_test_io *io, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
