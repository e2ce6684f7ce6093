/* sim/src/check_probe.h: the quiescence probes, up to timers
 * (check_probe.c explains them), with the wait conditions they consult
 * (check_probe_wait.h). The state of the family is pl__probe, embedded in
 * the world as pl__sim.probe: zeroed by pl__sim_init, freed by
 * pl__probe_free. Every function is for the simulator's executor thread.
 */
#ifndef POLLEN_SIM_CHECK_PROBE_H
#define POLLEN_SIM_CHECK_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/observer.h"
#include "pollen/sim.h"

typedef struct pl__sim pl__sim;

/* Wait conditions a parked task declared in its latest poll (pl_wait_declare).
 * Two: a select of two branches, a timeout around one. They live apart
 * from the task table, one table per position (s->probe.waits[i][id] is
 * task id's declaration i), each allocated once a task declares that
 * many: a run whose tasks declare nothing (a million sleeps) pays
 * nothing, one whose tasks declare one each (a million waiters on a
 * notify) pays for one each. */
#define PL__WAITS_MAX 2
/* Timers one probe poll may arm and still be told apart. */
#define PL__PROBE_ARMS_MAX 8

/* A timer that fires late (PL_DECIDE_TIMER_LATE): between its deadline
 * and its firing the task's own clock check already says "due". Kept in
 * a list per task (pl__task_info.late_head), usually of one. */
typedef struct pl__late_timer {
    pl_time from;  /* deadline */
    pl_time until; /* firing time */
    uint32_t next; /* the task's next entry or the free list's, index + 1; 0: none */
} pl__late_timer;

/* How a task's wake came about, for the reports of rescued tasks. */
typedef enum pl__waker_kind {
    PL__WOKEN_NOT = 0, /* not woken before the run ended */
    PL__WOKEN_BY_TIMER = 1,
    PL__WOKEN_BY_TASK = 2,     /* a task's poll woke it */
    PL__WOKEN_BY_SPURIOUS = 3, /* pollen's injected spurious wake */
    PL__WOKEN_OUTSIDE = 4,     /* outside polls: I/O readiness, a remote wake */
} pl__waker_kind;

/* Following one task after a probe found it could progress: a
 * re-execution of the run's decisions without that probe, to see what
 * would have woken it and when. */
typedef struct pl__follow {
    bool active;
    uint32_t task;  /* the task followed */
    uint64_t point; /* probing stops at this timer-quiescent point */
    bool done;      /* its next wake was seen, or the run ended */
    pl__waker_kind how;
    pl_time woken_ns;
    uint32_t by_task;
    uint64_t by_timer;    /* timer seq */
    uint32_t timer_armer; /* task that armed it (0: outside polls) */
} pl__follow;

/* The family's state (pl__sim.probe). The observer (oracle.c) writes the
 * armers, deadlines, waits and late timers as the executor reports them. */
typedef struct pl__probe {
    uint64_t points;  /* timer-quiescent points so far */
    uint32_t cursor;  /* where the next point's scan for parked tasks starts */
    uint32_t *armers; /* task that armed timer #seq (index seq); 0: none */
    size_t armers_cap;
    pl_time *arm_deadlines; /* the deadline timer #seq was armed for (index seq; zeroed) */
    size_t arm_deadlines_cap;
    uint64_t arms[PL__PROBE_ARMS_MAX]; /* timers the current probe poll armed */
    uint32_t arms_len;                 /* past PL__PROBE_ARMS_MAX: some went unrecorded */
    pl_wait *waits[PL__WAITS_MAX];     /* [i][task id]; NULL until a task declares i + 1 */
    size_t waits_cap[PL__WAITS_MAX];
    pl__late_timer *late; /* late timers whose firing time has not passed (a
                             disarmed one stays until then: it only costs probes) */
    uint32_t late_len;
    size_t late_cap;
    uint32_t late_free;       /* entries to reuse, index + 1; 0: none */
    uint64_t quiet_step;      /* step since which only background work could happen
                                 (0: not now); the foreground is judged once every
                                 background task ran in two rounds since (between two
                                 such points), and no foreground task ran */
    uint32_t quiet_spawned;   /* tasks spawned by then */
    uint64_t quiet_last_step; /* step of the latest such point that counted a round */
    pl_time quiet_last_ns;    /* and its virtual time: a round takes time to pass */
    /* Parked foreground tasks left alone while timers keep the run alive
     * (keepers_only); the tasks' quiet_rounds count the keepers' rounds
     * then, as background_only's never runs at once. */
    uint64_t keep_step;      /* step since which the parked set stayed put; 0: not now */
    uint32_t keep_spawned;   /* tasks spawned by then */
    uint64_t keep_last_step; /* step of the latest point that counted a round */
    pl_time keep_last_ns;    /* and its virtual time */
    pl_time keep_since_ns;   /* virtual time at keep_step */
    pl_time keep_retry_ns;   /* no watch starts before this virtual time */
    bool keep_woken;         /* a watched task was woken since, not by pollen's injection */
    bool follow_wanted;      /* the finding wants a follow-up run (rescue unknown) */
    uint32_t follow_task;
    uint64_t follow_point;
    pl__follow follow;  /* this run is the follow-up of another */
    bool stuck_finding; /* the finding names stuck tasks: append the scenario's check */
} pl__probe;

/* A timer-quiescent point: nothing is runnable, no I/O delivery or
 * remote wake is in flight, and a timer is armed. Each of the three
 * below returns true when it raised a finding. */
bool pl__probe_point(pl__sim *s);
/* A spurious wake (is_poll: a spurious poll) of `t` is about to be
 * injected at a timer-quiescent point: probes it first (an injected wake
 * must not hide a lost one). *probed says whether it polled the task:
 * then that probe was the spurious poll. */
bool pl__probe_before_injection(pl__sim *s, pl_task *t, bool is_poll, bool *probed);
/* The virtual time limit is reached: judges every parked task. */
void pl__probe_time_limit(pl__sim *s);
/* Final quiescence: stale wakers, then probes, then deadlock. */
void pl__probe_quiescence(pl__sim *s);
/* Following a task (s->probe.follow): notes the task's wake. */
void pl__probe_follow_wake(pl__sim *s, uint32_t id, uint32_t running);
/* The finding's message gets what the follow-up run saw; by_name names
 * the waking task or the timer's armer (NULL: none). */
void pl__probe_follow_explain(const pl__follow *f, const char *by_name, pl_time progress_ns,
                              pl_finding *finding);
/* Frees the family's tables (pl__sim_finish). */
void pl__probe_free(pl__probe *p);

#endif
