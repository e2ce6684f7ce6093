/* pollen/dump.h: task dumps of a running executor, and its flight recorder.
 *
 * A task dump lists every unfinished task: its id, name, spawn site,
 * state (running, runnable, or parked and since when), polls, references
 * and waker clones, and its async backtrace as a tree: the futures it is
 * parked in, outermost first, with every pending branch of a join or a
 * select, each with the PL_AWAIT or PL_YIELD it waits at. As text or as
 * JSON (docs/guide.md shows both).
 *
 * How the backtrace is taken: the dump polls each parked task once, with
 * a poll watch attached that records the tree (the simulator's hooks,
 * pollen/future.h). That is a spurious poll, which the poll contract
 * allows: a future must tolerate a poll it was not woken for. A task
 * whose dump poll returns READY completes there (it had been able to go
 * on and nobody woke it: a lost wakeup), and the dump says so; one that
 * cancels itself in that poll is cancelled_in_dump, and one that another
 * task's dump poll finished before its turn is finished_during_dump (not
 * polled). Runnable
 * tasks are not polled (their next poll is a real one) and show no
 * backtrace; neither does the running task (a dump from inside a poll).
 *
 * A production executor keeps nothing for dumps: a dump costs only when
 * asked for (a poll per parked task, and the output). Spawn sites and the
 * time a task parked are kept by an executor created with a flight
 * recorder (pl_executor_options.recorder_events); each task's live waker
 * clones are counted by one created with pl_executor_options.count_wakers
 * (a counting waker: the production one is a reference count alone) and
 * by an observed one; a dump leaves out what its executor does not keep
 * (the text's "waker clones N", JSON's "waker_clones": null). A waker
 * clone is a pl_waker_clone's copy, a remote waker's too; the context's
 * own waker is none. The flight recorder is a ring of the executor's
 * last scheduling records (spawn, pending, ready, wake, timer_fire,
 * io_ready, probe), in the simulator's trace vocabulary (docs/guide.md),
 * readable in the dump and, after a crash, from a signal handler
 * (pl_executor_recorder_write). What both cost is in
 * docs/performance.md.
 *
 * Thread rules: pl_executor_request_dump may be called from any thread
 * and from a signal handler; everything else is for the executor's
 * thread.
 */
#ifndef POLLEN_DUMP_H
#define POLLEN_DUMP_H

#include <stdint.h>
#include <stdio.h>

#include "pollen/executor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_dump_format {
    PL_DUMP_TEXT = 0,
    PL_DUMP_JSON = 1, /* one JSON object, then a newline */
} pl_dump_format;

/* Writes the executor's task dump to `out`. Executor thread only, from
 * outside pl_run or from inside a poll (the running task is shown
 * without a backtrace). Parked tasks are polled once each (see above);
 * under an observed executor (the simulator) they are not, and show no
 * backtrace. Returns 0, PL_ENOMEM (a backtrace too deep to keep: the
 * dump is written without the rest of it) or PL_EIO (a write failed). */
int pl_executor_dump(pl_executor *ex, FILE *out, pl_dump_format format);

/* Where a requested dump goes: `out` (the default: stderr) in `format`
 * (the default: text). `out` must stay open while the executor may serve
 * a request. Executor thread only. */
void pl_executor_set_dump_output(pl_executor *ex, FILE *out, pl_dump_format format);

/* Asks for a dump, written at the executor's next tick (pl_run and
 * pl_block_on serve it between two polls, and wake a blocked wait for
 * it). Async-signal-safe and callable from any thread: a SIGUSR1 handler
 * may call it (docs/guide.md). It sets a bit and calls the system's
 * remote_wake, which must then be async-signal-safe too (pollen/system.h;
 * the real backend's is). An executor not inside pl_run serves it when
 * pl_run is next called. */
void pl_executor_request_dump(pl_executor *ex);

/* ---- The flight recorder ------------------------------------------------ */

/* One recorded event. The ring holds 16-byte records: a poll's record
 * is its result and the task it woke (read as two events, the wake
 * first, both numbered by the record), and a clock record, written when
 * the executor's clock reading changed, dates the records after it and
 * is no event. `kind` is a name of the simulator's trace
 * ("pending", "ready", "wake", "timer_fire", "io_ready", "spawn",
 * "probe"); `a` and `b` are as the simulator's timeline labels them:
 *   spawn      a = the spawning task (0: none)
 *   pending, ready, probe   a = the task's poll count (a dump's poll is a probe)
 *   wake       b = the task whose poll woke it (0: from outside any poll);
 *              a poll's wakes come just before its pending or ready. Of the
 *              wakes from outside any poll, a production executor records
 *              remote wakes alone (a timer's shows as its timer_fire, an
 *              I/O readiness's as its io_ready); an observed one records
 *              them all
 *   timer_fire task = the task it wakes (0: none), a = the timer's arming
 *              number, b = how late it fired (ns)
 *   io_ready   a = the source's registration number, b = its PL_IO_* bits
 * time_ns is the executor's clock at the event's tick (read once per
 * tick that polls; a timer's or an I/O readiness's at its own reading),
 * or -1 when the clock record dating it was overwritten. */
typedef struct pl_recorder_event {
    uint64_t seq;      /* its record's number, from 1 (clock records are numbered too) */
    int64_t time_ns;
    const char *kind;  /* static storage */
    uint32_t task;     /* task id; 0: none */
    uint32_t reserved;
    uint64_t a;
    uint64_t b;
} pl_recorder_event;

/* Copies up to `max` of the recorder's latest events into `out`, oldest
 * first; returns how many. 0 without a recorder. Executor thread only.
 * The ring's recorder_events records hold up to twice as many events. */
size_t pl_executor_recorder_events(const pl_executor *ex, pl_recorder_event *out, size_t max);

/* Writes the recorder's events as text lines, oldest first, to the file
 * descriptor `fd`, with write(2) and no allocation, locks or stdio: a
 * SIGSEGV or SIGABRT handler may call it (on the executor's thread, or
 * after every other thread stopped). Returns 0, or PL_EIO (a write failed,
 * or no recorder). */
int pl_executor_recorder_write(const pl_executor *ex, int fd);

#ifdef __cplusplus
}
#endif

#endif
