/* sim/src/pthread/spt.h: what the files of the pthread shim share.
 *
 * The shim (pollen/sim_pthread.h) maps the pthread API onto pollen's
 * simulated threads (pollen/thread.h). Its state lives in one pl__spt_run
 * per simulated run, reached through a per-OS-thread pointer (a run lives
 * on one OS thread, and its simulated threads are fibers on it), created
 * by the "main" scenario's setup and freed by its teardown.
 *
 * A pthread object (pthread_mutex_t, pthread_cond_t, pthread_rwlock_t,
 * pthread_barrier_t, sem_t) keeps glibc's type and size. Its first 16
 * bytes hold a tag the shim writes: a magic word with the object's kind,
 * the index of its pl__spt_obj in the run's table and the run's number.
 * Zero bytes (the static initializers) or a tag of another run mean "not
 * known to this run yet": the object is created as if freshly
 * initialized. Lookups compare the stored index, run number and the
 * object's address for equality only, so no decision and no event ever
 * depends on an address value.
 *
 * The shim keeps no state in .data or .bss: the bracket around the
 * program's globals (run.c) ends at a marker of this library, and the
 * shim's files are linked before it. Its per-process state is in its own
 * section (PL__SPT_KEEP), its per-run state behind a _Thread_local.
 */
#ifndef POLLEN_SIM_SPT_H
#define POLLEN_SIM_SPT_H

#define PL_SIM_PTHREAD_IMPL 1
#include "pollen/sim_pthread.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "pollen/sim.h"
#include "pollen/thread.h"

/* Per-process state of the shim, outside the program's globals. */
#define PL__SPT_KEEP __attribute__((section("pl_sim_pthread_keep")))

typedef enum pl__spt_kind {
    PL__SPT_MUTEX = 1,
    PL__SPT_COND = 2,
    PL__SPT_RWLOCK = 3,
    PL__SPT_BARRIER = 4,
    PL__SPT_SEM = 5,
} pl__spt_kind;

typedef struct pl__spt_mutex {
    pl_thread_mutex m;
    int type;       /* PTHREAD_MUTEX_NORMAL, _RECURSIVE, _ERRORCHECK */
    uint32_t owner; /* pthread_t of the holder; 0: free */
    uint32_t count; /* recursive holds */
} pl__spt_mutex;

typedef struct pl__spt_cond {
    pl_thread_cond c;
    clockid_t clock; /* of timedwait's abstime */
} pl__spt_cond;

/* rwlocks, barriers and semaphores are built on one mutex and one
 * condition variable each, so their waits are the runtime's waits (a
 * deadlock names them) and their spurious wakeups are re-checked. */
typedef struct pl__spt_monitor {
    pl_thread_mutex lock;
    pl_thread_cond cv;
} pl__spt_monitor;

typedef struct pl__spt_rwlock {
    pl__spt_monitor mon;
    uint32_t readers;
    uint32_t writer; /* pthread_t of the writer; 0: none */
} pl__spt_rwlock;

typedef struct pl__spt_barrier {
    pl__spt_monitor mon;
    uint32_t count;   /* threads per round */
    uint32_t arrived; /* in the current round */
    uint64_t round;
} pl__spt_barrier;

typedef struct pl__spt_sem {
    pl__spt_monitor mon;
    uint32_t value;
} pl__spt_sem;

typedef struct pl__spt_obj {
    uint32_t kind;
    bool live;
    const void *addr; /* the user's object, compared for equality only */
    union {
        pl__spt_mutex mutex;
        pl__spt_cond cond;
        pl__spt_rwlock rwlock;
        pl__spt_barrier barrier;
        pl__spt_sem sem;
    } u;
} pl__spt_obj;

typedef struct pl__spt_thread {
    pl_thread *handle;     /* until joined or detached */
    void *(*fn)(void *);
    void *arg;
    void *ret;
    void **values;         /* thread-specific data, by key */
    uint32_t values_len;
    uint32_t self;         /* its pthread_t: 1 for main, then creation order */
    bool detached, joined, done;
    char name[16];
} pl__spt_thread;

typedef struct pl__spt_key {
    bool used;
    void (*destructor)(void *);
} pl__spt_key;

typedef struct pl__spt_once {
    const void *addr;
    int state; /* 0 not run, 1 running, 2 done */
} pl__spt_once;

#define PL__SPT_ATEXIT_MAX 32

typedef struct pl__spt_run {
    uint64_t number; /* distinct per run of this process, never 0 */
    pl__spt_thread **threads; /* by pthread_t - 1 */
    uint32_t threads_len, threads_cap;
    uint32_t *by_tid; /* pl_thread_id() -> pthread_t (0: none) */
    uint32_t by_tid_cap;
    uint32_t live;    /* threads started and not ended */
    pl__spt_obj **objs;
    uint32_t objs_len, objs_cap;
    pl__spt_key *keys;
    uint32_t keys_len, keys_cap;
    pl__spt_once *onces;
    uint32_t onces_len, onces_cap;
    pl__spt_monitor sys; /* once, join-with-timeout */
    pl_thread_sem ended; /* thread 0 waits on it; the run's stop ends the wait */
    bool over;           /* main returned, exit was called, or every thread ended */
    bool exiting;        /* a thread runs the atexit handlers */
    bool by_exit;        /* over through exit() */
    int status;
    void (*atexit_fns[PL__SPT_ATEXIT_MAX])(void);
    uint32_t atexit_len;
    char argv0[64];
} pl__spt_run;

/* The run of the calling OS thread; NULL outside a pthread program's
 * run. pl__spt_need names the call and aborts when there is none (a
 * pthread call from a constructor or from another OS thread). */
pl__spt_run *pl__spt_current(void);
pl__spt_run *pl__spt_need(const char *call);

/* Whether the program ended; if so, a thread other than the one ending
 * it stops here (exit and main's return end every thread, as in
 * production). Called after every call that may switch threads. */
void pl__spt_stop_if_over(pl__spt_run *r);

/* The calling thread's record, or its pthread_t (0 on thread 0). */
pl__spt_thread *pl__spt_self(pl__spt_run *r);
uint32_t pl__spt_self_id(pl__spt_run *r);

/* The object behind a user's pthread object of `kind`, created (default
 * attributes) when the run does not know it yet. NULL: out of memory. */
pl__spt_obj *pl__spt_obj_get(pl__spt_run *r, void *user, uint32_t kind);
/* A fresh object for an init call, replacing what the bytes named. */
pl__spt_obj *pl__spt_obj_new(pl__spt_run *r, void *user, uint32_t kind);
/* The same for an int-sized object (a spinlock), through its word. */
pl__spt_obj *pl__spt_obj_get_word(pl__spt_run *r, volatile int *word, uint32_t kind);
/* destroy: the bytes name nothing afterwards. */
void pl__spt_obj_forget(pl__spt_run *r, void *user, pl__spt_obj *o);
void pl__spt_monitor_init(pl__spt_monitor *m);

/* An abstime of clock `clk` as a deadline of pl_thread_now(). */
pl_time pl__spt_deadline(clockid_t clk, const struct timespec *abstime);
bool pl__spt_timespec_valid(const struct timespec *ts);

/* Records an assertion finding for the run, then ends the calling thread. */
_Noreturn void pl__spt_fail(pl__spt_run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Ends the program with `status` (the main task wakes, the run ends). */
void pl__spt_end_program(pl__spt_run *r, int status);
/* The same after the atexit handlers, as exit() (by_exit), main's return
 * and the last thread's end do. */
void pl__spt_exit(pl__spt_run *r, int status, bool by_exit);

/* Thread bookkeeping at a thread's end: destructors of its keys, the
 * live count; the program ends with the last thread. */
void pl__spt_thread_ending(pl__spt_run *r, pl__spt_thread *t, void *ret);

/* Frees the per-thread and per-object tables at the end of a run. */
void pl__spt_threads_free(pl__spt_run *r);
void pl__spt_objs_free(pl__spt_run *r);

/* Before any run, once: notes the program's name (its argv[0] in runs)
 * and copies its globals (run.c). main.c calls it; so does a harness
 * that runs the scenario "main" through the library instead of pl_main. */
void pl__spt_program_start(const char *argv0);

/* Starts the program's main on a simulated thread (thread.c). */
int pl__spt_start_main(pl__spt_run *r);

#endif
