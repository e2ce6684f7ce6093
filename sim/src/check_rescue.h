/* sim/src/check_rescue.h: the oracle of deadlocks a timer hides.
 *
 * A task that waits for a broadcast it missed (pl_notify_waiters while it
 * was not waiting) is stuck, but a timer often rescues it late: its own
 * ack timeout or retry deadline, or a sweeper's tick that broadcasts
 * again. Nothing stays parked, no probe progresses, and without this
 * oracle the run is clean. At a timer-quiescent point where one timer is
 * all that is left (nothing runnable, no I/O, no other timer, no thread
 * or node event), the run without that timer is already known: nothing
 * would ever run again. If that timer's firing then wakes such a task,
 * directly (its own timeout) or through the background task it woke
 * broadcasting on the notify the task waits on (a sweeper), the task was
 * stuck for good but for the timer: a deadlock finding that names the
 * task, the missed broadcast and the timer.
 *
 * Every function is for the simulator's executor thread; each does
 * nothing in a follow-up run (s->probe.follow.active) or once a finding exists.
 * The state lives in pl__sim.rescue (zeroed by pl__sim_init), freed by
 * pl__rescue_free.
 */
#ifndef POLLEN_CHECK_RESCUE_H
#define POLLEN_CHECK_RESCUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/observer.h"
#include "hashset.h"

/* What the oracle knows of one task (by task id). */
typedef struct pl__rescue_task {
    uint64_t key;           /* the notify of its latest link ((uintptr_t), compared only) */
    uint64_t link_step;     /* step of that link */
    uint64_t released;      /* number of the latest broadcast that released it */
    uint64_t missed_step;   /* step of a broadcast on key that left it out; 0: none */
    pl_time missed_ns;
    uint64_t woken_ev;      /* event number of its latest wake from parked (0: none seen) */
    uint32_t missed_by;     /* the task that broadcast (0: outside polls) */
    uint32_t park_polls;    /* its poll count at its latest park on key */
    bool linked;            /* a waiter of it is linked on key */
    uint8_t pad[7];
} pl__rescue_task;

/* The latest broadcast on one notify. */
typedef struct pl__rescue_bcast {
    uint64_t num;           /* broadcasts of the run before it, plus one */
    uint64_t ev;            /* its event number (pl__rescue.events) */
    uint64_t step;
    pl_time ns;
    uint32_t by;            /* the task that broadcast (0: outside polls) */
    uint32_t spawned;       /* tasks spawned by then: later ones were not there to miss it */
} pl__rescue_bcast;

typedef struct pl__rescue {
    pl__rescue_task *tasks; /* NULL until a task links a waiter or a broadcast is made */
    size_t tasks_cap;
    pl__rescue_bcast *bcasts;
    size_t bcasts_len;
    size_t bcasts_cap;
    pl__hashmap bcast_index; /* notify -> index in bcasts */
    uint64_t bcast_num;     /* broadcasts so far */
    uint64_t in_bcast;      /* the notify being broadcast; 0: none */
    uint64_t bcast_ev;      /* its event number */
    uint64_t events;        /* wakes from parked and broadcasts so far, once tasks exists */
    uint32_t bcast_depth;
    uint32_t doom_woke;     /* the task doom_seq's firing woke; 0: none yet */
    uint64_t doom_seq;      /* the one timer left at the latest point; 0: none */
    pl_time doom_deadline_ns;
} pl__rescue;

struct pl__sim;

/* pl_observer.signal (oracle.c's table points here). */
void pl__rescue_signal(void *ud, const void *primitive, pl_signal_event ev, pl_task *t);
/* At every timer-quiescent point (sim.c), after the probes. */
void pl__rescue_point(struct pl__sim *s);
/* Every wake the observer sees, before the other oracles' handling:
 * task `id` woken (outcome), `running` the task being polled (0: none). */
void pl__rescue_wake(struct pl__sim *s, uint32_t id, uint32_t running, pl_wake_outcome outcome);
void pl__rescue_free(struct pl__sim *s);

#endif
