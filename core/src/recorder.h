/* core/src/recorder.h: the flight recorder's ring (pollen/dump.h).
 *
 * A power-of-two ring of 16-byte records of the executor's last
 * scheduling events, written in place and never allocated after
 * pl_executor_create. A record carries no time: a clock record, written
 * when the executor's clock reading changed since the last one, dates
 * the records after it (the simulator's trace has its clock events too).
 * A poll is one record, its result and the (last) task it woke together,
 * so the ping-pong's hot path is two stores and the ring's index per
 * poll (docs/performance.md). Only executors created with
 * recorder_events > 0 have one (ex->rec); every recording call is on a
 * path an executor without one does not take (run_ready_rec's copy of
 * the fast poll, the observed poll, the checking waker), or behind an
 * ex->rec test on a rare one (a spawn, a remote wake, a timer's fire, an
 * I/O readiness).
 */
#ifndef POLLEN_RECORDER_H
#define POLLEN_RECORDER_H

#include <stddef.h>

#include "executor_internal.h"

/* What a record is; recorder.c names each event as the simulator's trace
 * does ("spawn", "pending", ...), the vocabulary a reader compares. A
 * poll record's kind is its pl_poll_result, so the hot path stores the
 * result as it is. */
enum pl__rec_kind {
    PL__REC_READY = PL_READY,     /* lo = the task's polls, hi = the task it woke (poll records) */
    PL__REC_PENDING = PL_PENDING, /* the same */
    PL__REC_SPAWN,                /* a = the spawning task's id (0: none) */
    PL__REC_PROBE,                /* a = polls */
    PL__REC_WAKE,                 /* a = the waking task's id (0: none) */
    PL__REC_TIMER_FIRE,           /* a = the timer's arming number; a MORE record: b */
    PL__REC_IO_READY,             /* a = the source's id; a MORE record: b */
    PL__REC_CLOCK,                /* a = the executor's clock (pl_time), dating what follows */
    PL__REC_MORE,                 /* a = the b of the record just before it */
    PL__REC_KINDS,
};

/* 16 bytes. Its first 8 are a pl_task's first 8, {id, polls}: a poll's
 * record copies them in one load and one store. Other kinds than a
 * poll's hold a 64-bit argument a = lo | hi << 32 (pl__rec_a). */
struct pl__rec_event {
    uint32_t task;
    uint32_t lo;
    uint32_t kind; /* enum pl__rec_kind */
    uint32_t hi;
};

_Static_assert(offsetof(pl_task, id) == 0 && offsetof(pl_task, polls) == 4 &&
                   offsetof(pl__rec_event, task) == 0 && offsetof(pl__rec_event, lo) == 4,
               "a poll record begins as its task does");

/* Sets ex->rec to &ex->recorder with a ring of at least `events` records
 * (> 0). Returns 0, PL_EINVAL (more than 2^31) or PL_ENOMEM (ex->rec
 * stays NULL). pl__recorder_destroy frees the ring (none: nothing to
 * do). */
PL_INTERNAL int pl__recorder_create(pl_executor *ex, uint32_t events);
PL_INTERNAL void pl__recorder_destroy(pl_executor *ex);

/* Writes the ring as text lines to `out` (a task dump's tail), each
 * prefixed by `indent`: the lines pl_executor_recorder_write writes. */
PL_INTERNAL void pl__recorder_write_text(const pl_executor *ex, FILE *out, const char *indent);

/* Writes the ring as a JSON array of {seq, time_ns, event, task_id, a, b}. */
PL_INTERNAL void pl__recorder_write_json(const pl_executor *ex, FILE *out);

/* The slot of the next record, undated: the caller has dated it
 * (pl__rec_date). */
static inline pl__rec_event *pl__rec_take(pl__recorder *r)
{
    pl__rec_event *e = r->at++;
    if (r->at == r->end) {
        r->at = r->ring;
        r->laps++;
    }
    return e;
}

static inline void pl__rec_put(pl__recorder *r, uint32_t kind, uint32_t task, uint64_t a)
{
    pl__rec_event *e = pl__rec_take(r);
    e->task = task;
    e->lo = (uint32_t)a;
    e->kind = kind;
    e->hi = (uint32_t)(a >> 32);
}

/* Dates the records that follow by ex->now, the latest clock reading:
 * a clock record when it changed since the last one. run_ready_rec
 * dates its batch of polls once, after reading the clock (a tick's
 * timers and I/O read it before their events), so a poll's record costs
 * no test of the clock. */
static inline void pl__rec_date(pl_executor *ex)
{
    pl__recorder *r = &ex->recorder;
    if (r->clock_ns != ex->now) {
        r->clock_ns = ex->now;
        pl__rec_put(r, PL__REC_CLOCK, 0, (uint64_t)ex->now);
    }
}

/* Records an event at ex->now. */
static inline void pl__rec(pl_executor *ex, uint32_t kind, uint32_t task, uint64_t a)
{
    pl__rec_date(ex);
    pl__rec_put(&ex->recorder, kind, task, a);
}

/* Records an event with a second argument (timer_fire, io_ready): a MORE
 * record after it holds b. */
static inline void pl__rec2(pl_executor *ex, uint32_t kind, uint32_t task, uint64_t a, uint64_t b)
{
    pl__rec(ex, kind, task, a);
    pl__rec_put(&ex->recorder, PL__REC_MORE, 0, b);
}

#endif
