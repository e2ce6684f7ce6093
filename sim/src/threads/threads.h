/* sim/src/threads/threads.h: simulated threads (pollen/thread.h under
 * the simulator).
 *
 * Each simulated thread is a fiber on the run's own OS thread (fiber.c):
 * only one runs at a time, and control passes only at a schedule point
 * (sched.c), so a run stays a function of its decisions. Thread 0 is the
 * OS thread's own stack: it runs the scenario's setup, pl_run and every
 * poll. The world (struct pl__sim) embeds one pl__threads by value; it
 * costs nothing until the first pl_thread_spawn of a run (live stays 0
 * and every point returns at once), so runs without threads consult no
 * new decision and keep their trace hashes.
 *
 * A thread belongs to a cluster node (pl__thread_rec.node, its
 * spawner's) and stops with it: a paused node's threads are never
 * picked, a crashed node's are killed (PL__TH_KILLED).
 *
 * Layers (no call cycles, tests/check_sim_graph.sh): fiber.c (context
 * switch, stacks) <- check_threads.c (findings, reading the tables) <-
 * sched.c (the table, switching, blocking, the clock) <- tpc.c (a
 * thread's own executor) <- sync.c (the pl_thread_ops the simulator
 * installs: spawn, join, mutex, cond, sem).
 */
#ifndef POLLEN_SIM_THREADS_H
#define POLLEN_SIM_THREADS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/thread.h"
#include "pollen/time.h"

struct pl__sim;

/* ---- Fibers (fiber.c) ------------------------------------------------- */

typedef struct pl__fiber {
    void *sp;            /* saved stack pointer while switched out */
    void *map;           /* the mmap'ed stack, guard page first; NULL: thread 0 */
    size_t map_len;
    const void *asan_bottom; /* the stack as ASan knows it (learned on switches) */
    size_t asan_size;
    void *asan_fake;     /* ASan's fake stack while switched out */
    void *uctx;          /* the ucontext fallback's context; NULL on x86-64, aarch64 */
} pl__fiber;

typedef void (*pl__fiber_entry)(void *arg);

/* Prepares f to start entry(arg) on a fresh stack of stack_len bytes
 * (plus a guard page below it). 0 or PL_ENOMEM. */
int pl__fiber_create(pl__fiber *f, size_t stack_len, pl__fiber_entry entry, void *arg);
/* Unmaps its stack. Never for the running fiber. */
void pl__fiber_destroy(pl__fiber *f);
/* Switches from `from` (the running fiber) to `to`. `from_ends`: from
 * will never run again (ASan frees its fake stack). Returns when some
 * fiber switches back to `from`. */
void pl__fiber_switch(pl__fiber *from, pl__fiber *to, bool from_ends);
/* A fiber's first code calls this (the second half of the switch that
 * started it). */
void pl__fiber_started(void);
/* After a switch returned or a fiber started: `origin` is the fiber that
 * switched here; ASan's bounds of thread 0's stack are learned so. */
void pl__fiber_note_origin(pl__fiber *origin);
/* The fiber that runs now, for the stack-overflow report (sched.c
 * calls it at each switch). */
void pl__fiber_running(const pl__fiber *f, const char *name, uint32_t id);
/* True when addr lies in f's guard page (a stack overflow). */
bool pl__fiber_in_guard(const pl__fiber *f, const void *addr);

/* ---- The thread table (sched.c) --------------------------------------- */

typedef enum pl__thread_state {
    PL__TH_RUNNABLE = 1,
    PL__TH_BLOCKED = 2,  /* on an object, a join or a sleep (wake_at) */
    PL__TH_DONE = 3,
    PL__TH_IDLE = 4,     /* thread 0 inside the executor's wait: runs when no one else can */
    PL__TH_STOPPED = 5,  /* left for good once the run stopped */
    PL__TH_KILLED = 6,   /* its node crashed: never runs again, its stack released */
} pl__thread_state;

/* What a blocked thread waits for. */
typedef enum pl__thread_wait {
    PL__WAIT_NONE = 0,
    PL__WAIT_MUTEX = 1,
    PL__WAIT_COND = 2,
    PL__WAIT_SEM = 3,
    PL__WAIT_JOIN = 4,
    PL__WAIT_SLEEP = 5,
    PL__WAIT_EXECUTOR = 6, /* its own executor's wait: a remote wake or its next timer */
} pl__thread_wait;

/* One simulated thread. Allocated one by one (fibers keep pointers to
 * their own record across switches, so records never move). */
typedef struct pl__thread_rec {
    pl__fiber fiber;
    pl_thread_fn fn;
    void *arg;
    void *ret;
    pl_thread_site spawned;  /* where pl_thread_spawn was called */
    pl_thread_site at;       /* its latest point or blocking call */
    pl_time wake_at;         /* blocked with a deadline; PL_TIME_NEVER: none */
    uint64_t ready_seq;      /* when it last became runnable: production's FIFO order */
    uint64_t spin;           /* points in a row with no progress by anyone */
    uint64_t progress_seen;  /* pl__threads.progress at its latest point */
    uint32_t id;
    uint32_t obj;            /* the object (or thread, for a join) waited on */
    uint32_t next_waiter;    /* the next waiter's id + 1 on the same object; 0: none */
    uint32_t joiner;         /* the thread joining it, id + 1; 0: none */
    uint8_t state;           /* pl__thread_state */
    uint8_t waits;           /* pl__thread_wait */
    bool yielded;            /* lowered priority until the next progress */
    bool timed_out;          /* its latest timed wait ended by the deadline */
    bool detached;
    void *handle;            /* its pl_thread handle until joined (sync.c); NULL after */
    pl_executor *cur_ex;     /* the OS thread's current executor while switched out */
    uint32_t node;           /* the cluster node it runs for: its spawner's; 0: the scenario */
    int saved_errno;
    char name[32];
} pl__thread_rec;

/* A mutex, condition variable or semaphore, as this run knows it. */
typedef enum pl__tobj_kind { PL__TOBJ_MUTEX = 1, PL__TOBJ_COND = 2, PL__TOBJ_SEM = 3 } pl__tobj_kind;

typedef struct pl__tobj {
    uint32_t owner;      /* mutex: holder's id + 1; 0: free */
    uint32_t value;      /* semaphore: its count */
    uint32_t head;       /* waiters, FIFO, id + 1; 0: none */
    uint32_t tail;
    uint8_t kind;        /* pl__tobj_kind */
} pl__tobj;

typedef struct pl__threads {
    pl__thread_rec **t;  /* by id; t[0] is thread 0 once any thread was spawned */
    uint32_t *ids;       /* scratch: [0] the running thread, then candidates in ready order */
    const uint32_t *choices; /* while a thread_switch decision is asked: its choices */
    uint32_t choices_len;
    uint32_t len;
    uint32_t cap;
    uint32_t came_from;  /* the thread that made the latest switch */
    uint32_t current;    /* the running thread's id */
    uint32_t live;       /* threads not done, thread 0 included; 0: none ever spawned */
    pl__tobj *objs;      /* by id - 1 */
    uint32_t objs_len;
    uint32_t objs_cap;
    uint64_t run;        /* this run's number, stored in the objects it knows */
    uint64_t seq;        /* ready order */
    uint64_t progress;   /* stores, releases, wakes and clock moves so far */
    uint64_t switches;   /* fiber switches in this run */
    uint32_t ended;      /* fiber that ended at the latest switch (its stack to free), id + 1 */
    bool deadlocked;     /* pl__threads_deadlock raised this run's finding */
    struct pl__tpc *executors; /* threads' own executors' systems, newest first (tpc.c);
                                  kept past pl__threads_free until
                                  pl__threads_release_executors */
} pl__threads;

/* True once the run has a thread besides thread 0 that has not ended:
 * the test every hook makes first. */
static inline bool pl__threads_active(const pl__threads *th) { return th->live > 1; }

/* Installs the simulator's pl_thread_ops for the run on this OS thread
 * (pl__sim_init; sync.c) and takes a run number. No allocation. */
void pl__threads_install(struct pl__sim *s);
/* Uninstalls them and frees every stack, record, object and handle
 * (pl__sim_finish; sched.c). */
void pl__threads_free(struct pl__sim *s);

/* Thread 0 enters the executor's wait: the other threads run until each
 * is blocked, asleep, yielded or done (sched.c). */
void pl__threads_idle(struct pl__sim *s);
/* The earliest deadline of a sleeping or timed-waiting thread;
 * PL_TIME_NEVER: none. */
pl_time pl__threads_next_wake(const struct pl__sim *s);
/* The clock moved to s->now: wakes the threads whose deadline came,
 * un-yields the yielded ones. */
void pl__threads_clock_moved(struct pl__sim *s);
/* pl_run returned: the other threads run to their end (sleeps move the
 * clock, and so do the resumes of paused nodes whose threads wait to
 * run); threads blocked for good then are a deadlock finding, unless a
 * node paused past the run's end holds threads (they stay stopped). */
void pl__threads_finish_run(struct pl__sim *s);
/* Node n crashed (node_crash.c): its threads are killed, as a killed
 * process's are: they never run again, their stacks are released, they
 * leave every wait queue, and a join of one (blocked now or made later)
 * returns PL_ECANCELED. What they held stays held by no one alive: a
 * mutex they locked is the node's and dies with it. The running thread
 * is never one of them (a crash comes from outside the node). */
void pl__threads_node_crashed(struct pl__sim *s, uint32_t n);

/* A schedule point of the running thread (sched.c). */
void pl__threads_point(struct pl__sim *s, const pl_thread_site *site, unsigned what);
/* The running thread blocks (its state and waits set by the caller): the
 * next thread runs. Returns when it was made runnable again and chosen,
 * or when the run stopped (then false). */
bool pl__threads_block(struct pl__sim *s);
/* Makes blocked thread `id` runnable (it runs when the schedule picks it). */
void pl__threads_ready(struct pl__sim *s, uint32_t id);
/* Makes thread 0's record (a lone thread 0 using a mutex needs one).
 * 0 or PL_ENOMEM. */
int pl__threads_ensure_main(struct pl__sim *s);
/* This run's number (taken on first use): what objects and handles
 * store to be told apart from another run's. */
uint64_t pl__threads_run(struct pl__sim *s);
/* The running thread's record. */
pl__thread_rec *pl__threads_self(struct pl__sim *s);
/* Progress for the spin oracle: a store, a release. */
static inline void pl__threads_progress(pl__threads *th) { th->progress++; }
/* pl_thread_yield: a point, then the thread stands aside until progress. */
void pl__threads_yield(struct pl__sim *s, const pl_thread_site *site);
/* The id (1-based) of the object behind *run / *id in this run, made on
 * first sight with `value` (a semaphore's count); 0 when out of memory. */
uint32_t pl__threads_obj(struct pl__sim *s, uint64_t *run, uint32_t *id, uint8_t kind,
                         uint32_t value);
/* Waiter queues of objects (FIFO). */
void pl__threads_enqueue(struct pl__sim *s, uint32_t obj, pl__thread_rec *r);
uint32_t pl__threads_waiters(const struct pl__sim *s, uint32_t obj);
uint32_t pl__threads_dequeue(struct pl__sim *s, uint32_t obj, uint32_t k);
/* While a thread_switch decision of n choices is asked: the thread id of
 * each choice (NULL when it is a pick among waiters, or n differs). */
const uint32_t *pl__threads_choices(const struct pl__sim *s, uint32_t n);
/* A decision of which of n waiters to wake (0: the longest waiting). */
uint32_t pl__threads_pick_waiter(struct pl__sim *s, uint32_t n);
/* Creates thread records (thread 0's on first use) and starts nothing:
 * the new thread is runnable. 0 or PL_ENOMEM (sched.c). */
int pl__threads_spawn(struct pl__sim *s, const char *name, pl_thread_fn fn, void *arg,
                      const pl_thread_site *site, uint32_t *id);
/* The running thread ends with `ret` (never returns). */
_Noreturn void pl__threads_exit(struct pl__sim *s, void *ret);

/* An executor for the running thread, on a system of its own (tpc.c):
 * its wait blocks the thread until a remote wake or its next timer. */
int pl__threads_executor_create(struct pl__sim *s, pl_executor **out);
/* The threads are about to go (pl__sim_finish, before pl__threads_free):
 * a remote wake or drop of a thread executor's task from now on only
 * queues (tpc.c). */
void pl__threads_executors_orphan(struct pl__sim *s);
/* Frees the threads' executors' systems and every block their executors
 * still hold: the executor, its tasks and remote wakers, when its thread
 * never ended or never destroyed it, as a process's exit would. Called
 * by pl__sim_finish after thread 0's executor is destroyed, whose tasks
 * may still drop a remote waker of theirs (tpc.c). */
void pl__threads_release_executors(struct pl__sim *s);

/* ---- Findings (check_threads.c) ---------------------------------------- */

/* Appends one line per thread that is not done ("thread 'pool' (#1,
 * spawned at pool.c:40 in setup): blocked on mutex #2 at pool.c:61 in
 * worker, holding mutex #1") to buf at *used. */
void pl__threads_describe(const struct pl__sim *s, char *buf, size_t len, size_t *used);
/* A deadlock finding exists: its message gets the threads' lines, unless
 * the threads raised it (pl__threads_deadlock: they are listed already). */
void pl__threads_annotate(struct pl__sim *s);
/* Every thread is blocked for good (no runnable thread, no deadline):
 * the deadlock finding, naming them (`where` says when). */
void pl__threads_deadlock(struct pl__sim *s, const char *where);
/* The running thread spun past the bound without progress by anyone. */
void pl__threads_livelock(struct pl__sim *s);
/* The running thread misused an object (unlocking a mutex it does not
 * hold, destroying a held mutex): an assertion finding. */
void pl__threads_misuse(struct pl__sim *s, const char *what, uint32_t obj);
/* A waker of a task (not a remote waker) or a pollen/sync.h primitive
 * was used from a thread other than the executor's (thread 0). */
void pl__threads_wrong_thread(struct pl__sim *s, const char *what);

/* Points in a row without progress by any thread after which a thread is
 * spinning (livelock). */
#define PL__THREAD_SPIN_MAX 100000u
/* Stack of a simulated thread (a guard page below it). ASan's frames are
 * larger: its builds get more. */
#if defined(__SANITIZE_ADDRESS__)
#define PL__THREAD_STACK_BYTES ((size_t)1 << 20)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PL__THREAD_STACK_BYTES ((size_t)1 << 20)
#endif
#endif
#ifndef PL__THREAD_STACK_BYTES
#define PL__THREAD_STACK_BYTES ((size_t)256 << 10)
#endif

#endif
