/* core/src/recorder.h: the flight recorder's ring (pollen/dump.h).
 *
 * A power-of-two ring of the executor's last scheduling events, written
 * in place: recording an event is five stores and an increment (the
 * clock is read once per tick), and nothing is ever allocated after
 * pl_executor_create. Only executors created with
 * recorder_events > 0 have one (ex->rec); every recording call is on a
 * path an executor without one does not take (run_ready_rec's copy of
 * the fast poll, the observed poll, the checking waker), or behind an
 * ex->rec test on a rare one (a spawn, a remote wake, a timer's fire, an
 * I/O readiness).
 */
#ifndef POLLEN_RECORDER_H
#define POLLEN_RECORDER_H

#include "executor_internal.h"

/* What an event is; recorder.c names each as the simulator's trace does
 * ("spawn", "pending", ...), the vocabulary a reader compares. */
enum pl__rec_kind {
    PL__REC_SPAWN,
    PL__REC_PENDING,
    PL__REC_READY,
    PL__REC_PROBE,
    PL__REC_WAKE,
    PL__REC_TIMER_FIRE,
    PL__REC_IO_READY,
    PL__REC_KINDS,
};

typedef struct pl__rec_event {
    pl_time time_ns;
    uint64_t a;
    uint64_t b;
    uint32_t kind; /* enum pl__rec_kind */
    uint32_t task;
} pl__rec_event;

struct pl__recorder {
    pl__rec_event *ring;
    uint64_t next; /* events recorded so far; the next goes to next & mask */
    uint32_t mask; /* ring capacity - 1 */
};

/* Creates ex->rec with room for at least `events` (> 0). Returns 0 or
 * PL_ENOMEM. pl__recorder_destroy frees it (NULL: nothing to do). */
PL_INTERNAL int pl__recorder_create(pl_executor *ex, uint32_t events);
PL_INTERNAL void pl__recorder_destroy(pl_executor *ex);

/* The name of a recorded kind ("pending", "wake", ...). */
PL_INTERNAL const char *pl__rec_kind_name(uint32_t kind);

/* Writes the ring as text lines to `out` (a task dump's tail), each
 * prefixed by `indent`: the lines pl_executor_recorder_write writes. */
PL_INTERNAL void pl__recorder_write_text(const pl_executor *ex, FILE *out, const char *indent);

/* Writes the ring as a JSON array of {seq, time_ns, event, task_id, a, b}. */
PL_INTERNAL void pl__recorder_write_json(const pl_executor *ex, FILE *out);

/* Records an event at ex->now: the time of the latest clock reading,
 * which run_ready_rec takes once per tick before its polls (and a timer's
 * or an I/O readiness's tick before them), so that an event costs no
 * test of the clock. */
static inline void pl__rec(pl_executor *ex, uint32_t kind, uint32_t task, uint64_t a, uint64_t b)
{
    pl__recorder *r = ex->rec;
    pl__rec_event *e = &r->ring[r->next & r->mask];
    e->time_ns = ex->now;
    e->a = a;
    e->b = b;
    e->kind = kind;
    e->task = task;
    r->next++;
}

#endif
