/* pollen/thread.h: threads, locks and atomics that the simulator can
 * schedule.
 *
 * In production every name here is a thin layer over pthreads and C11
 * atomics. Under the simulator (pollen/sim.h) the same calls run each
 * thread as a fiber on the run's own OS thread, and every schedule point
 * below is a place where the simulator may switch threads, as a recorded
 * decision: a seed, a replay file or a shrunk decision list reproduces
 * the interleaving exactly.
 *
 * Schedule points: every pl_atomic_* operation, PL_SCHED_POINT(), every
 * blocking or releasing call of the primitives below (lock, unlock,
 * wait, signal, post, join, sleep, yield), spawn, exit, and the push of
 * a remote waker (pl_remote_waker_wake, pl_remote_waker_drop). Plain
 * loads and stores are NOT points: a race on a plain variable is only
 * explored when an access is written with pl_atomic_* or preceded by
 * PL_SCHED_POINT().
 *
 * Where a call is allowed: anywhere, on any thread, except that the
 * blocking calls must not be made from inside a poll in production (they
 * block the executor); under the simulator they are legal there and
 * block thread 0, the thread that runs every poll.
 *
 * Ownership: a pl_thread handle is owned by the spawner until it is
 * joined (join frees it) or detached (the thread frees it). Mutexes,
 * condition variables and semaphores are caller-allocated; the static
 * initializers need no init call and may be reused by any number of
 * simulated runs in one process (the simulator keeps its per-run state
 * in its own tables, keyed by a run number and an id stored in the
 * struct).
 *
 * Return codes: 0 or a negative PL_E* code; timed waits return
 * PL_ETIMEDOUT when the deadline (a pl_thread_now() value) passed.
 * Misuse (unlocking a mutex not held, destroying a locked mutex) is a
 * contract violation: undefined in production, a finding in the
 * simulator.
 */
#ifndef POLLEN_THREAD_H
#define POLLEN_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "pollen/executor.h"
#include "pollen/time.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_thread pl_thread; /* opaque */
typedef void *(*pl_thread_fn)(void *arg);

/* Sites: pl_thread_spawn, pl_thread_join, pl_thread_mutex_lock,
 * pl_thread_cond_wait and pl_thread_sem_wait are macros that pass the
 * caller's file:line and function to their _at function, which the
 * simulator shows in its reports (where a thread was spawned, where it
 * blocks). A function pointer, or a call without a site, takes the _at
 * function (file NULL, line 0, func NULL: unknown). */

/* Starts fn(arg) on a new thread named `name` (copied; at most 31 bytes
 * are kept). *out is the handle to join or detach. 0, PL_ENOMEM or
 * PL_EAGAIN. */
int pl_thread_spawn_at(pl_thread **out, const char *name, pl_thread_fn fn, void *arg,
                       const char *file, int line, const char *func);
#define pl_thread_spawn(out, name, fn, arg)                                                   \
    pl_thread_spawn_at(out, name, fn, arg, __FILE__, __LINE__, __func__)
/* Waits for t to finish, stores its result in *ret (ret may be NULL) and
 * frees t. 0, or PL_EDEADLK (joining oneself; under the simulator also
 * when the run stopped while waiting); under the simulator PL_ECANCELED
 * (t was a thread of a cluster node that crashed: *ret is NULL, t is
 * freed; pollen/sim_node.h). */
int pl_thread_join_at(pl_thread *t, void **ret, const char *file, int line, const char *func);
#define pl_thread_join(t, ret) pl_thread_join_at(t, ret, __FILE__, __LINE__, __func__)
/* The thread frees its own handle when it ends. 0. */
int pl_thread_detach(pl_thread *t);
/* The calling thread's number: 0 for the run's main thread (the one
 * that did not come from pl_thread_spawn), then 1, 2, ... in spawn
 * order (under the simulator, stable per run). */
uint32_t pl_thread_id(void);
/* The calling thread's name ("main" for thread 0). Valid while the
 * thread runs. */
const char *pl_thread_name(void);
/* Ends the calling thread with result `ret`. Not for thread 0. */
_Noreturn void pl_thread_exit(void *ret);
/* A schedule point that also says "I am waiting for another thread":
 * under the simulator the thread's priority drops until something
 * changes (a store, a release, the clock), so a spin-wait with a yield
 * lets the others run and is not a livelock. */
void pl_thread_yield(void);
/* Sleeps ns nanoseconds (the virtual clock under the simulator). */
void pl_thread_sleep(pl_time ns);
/* CLOCK_MONOTONIC in production, the virtual clock under the simulator. */
pl_time pl_thread_now(void);

/* ---- Thread per core ----------------------------------------------------
 * An executor for the calling thread, which runs it with pl_run (its
 * tasks' remote wakers wake it from other threads). In production,
 * pl_executor_create with default options (the real backend); under the
 * simulator an executor on the run's virtual clock whose wait blocks the
 * simulated thread until a remote wake or its next timer. Destroy it with
 * pl_executor_destroy on the same thread. 0, PL_ENOMEM or another
 * pl_executor_create error. */
int pl_thread_executor_create(pl_executor **out);

/* ---- Mutex -------------------------------------------------------------
 * Not recursive. The sim_* fields belong to the simulator: never touch. */
typedef struct pl_thread_mutex {
    pthread_mutex_t m;
    uint64_t sim_run;  /* the simulated run that knows this mutex; 0: none */
    uint32_t sim_id;   /* its id in that run's tables */
    uint32_t sim_pad;
} pl_thread_mutex;

#define PL_THREAD_MUTEX_INIT {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0}

int pl_thread_mutex_init(pl_thread_mutex *m); /* 0, PL_ENOMEM or PL_EAGAIN */
void pl_thread_mutex_finish(pl_thread_mutex *m);
void pl_thread_mutex_lock_at(pl_thread_mutex *m, const char *file, int line, const char *func);
#define pl_thread_mutex_lock(m) pl_thread_mutex_lock_at(m, __FILE__, __LINE__, __func__)
bool pl_thread_mutex_trylock(pl_thread_mutex *m); /* true: locked */
int pl_thread_mutex_lock_until(pl_thread_mutex *m, pl_time deadline); /* 0 / PL_ETIMEDOUT */
void pl_thread_mutex_unlock(pl_thread_mutex *m);

/* ---- Condition variable ------------------------------------------------
 * Waits may wake spuriously (the simulator injects such wakeups as a
 * decision): wait in a loop that re-checks the condition. */
typedef struct pl_thread_cond {
    pthread_cond_t c;
    uint64_t sim_run;
    uint32_t sim_id;
    uint32_t sim_pad;
} pl_thread_cond;

#define PL_THREAD_COND_INIT {PTHREAD_COND_INITIALIZER, 0, 0, 0}

int pl_thread_cond_init(pl_thread_cond *c); /* 0, PL_ENOMEM or PL_EAGAIN */
void pl_thread_cond_finish(pl_thread_cond *c);
void pl_thread_cond_wait_at(pl_thread_cond *c, pl_thread_mutex *m, const char *file, int line,
                            const char *func);
#define pl_thread_cond_wait(c, m) pl_thread_cond_wait_at(c, m, __FILE__, __LINE__, __func__)
int pl_thread_cond_wait_until(pl_thread_cond *c, pl_thread_mutex *m, pl_time deadline);
void pl_thread_cond_signal(pl_thread_cond *c);
void pl_thread_cond_broadcast(pl_thread_cond *c);

/* ---- Counting semaphore ------------------------------------------------ */
typedef struct pl_thread_sem {
    pl_thread_mutex lock; /* production: guards value */
    pl_thread_cond nonzero;
    uint32_t value;
    uint32_t sim_id;
    uint64_t sim_run;
} pl_thread_sem;

int pl_thread_sem_init(pl_thread_sem *s, uint32_t value); /* 0, PL_ENOMEM or PL_EAGAIN */
void pl_thread_sem_finish(pl_thread_sem *s);
void pl_thread_sem_wait_at(pl_thread_sem *s, const char *file, int line, const char *func);
#define pl_thread_sem_wait(s) pl_thread_sem_wait_at(s, __FILE__, __LINE__, __func__)
bool pl_thread_sem_trywait(pl_thread_sem *s); /* true: took one */
int pl_thread_sem_wait_until(pl_thread_sem *s, pl_time deadline); /* 0 / PL_ETIMEDOUT */
void pl_thread_sem_post(pl_thread_sem *s);

/* ---- Schedule points and atomics ---------------------------------------
 * Each pl_atomic_* is a schedule point, then the C11 operation on an
 * _Atomic object (the point comes first: the operation itself is never
 * split). In production the point costs one thread-local load and a
 * branch. */

/* What a point does, for the simulator's livelock oracle (a thread that
 * only reads, forever, while no one stores, is spinning). */
#define PL_THREAD_POINT_READ 0u
#define PL_THREAD_POINT_WRITE 1u

void pl__thread_point(const char *file, int line, const char *func, unsigned what);

#define PL__THREAD_POINT(what) pl__thread_point(__FILE__, __LINE__, __func__, (what))
#define PL_SCHED_POINT() PL__THREAD_POINT(PL_THREAD_POINT_WRITE)

#define pl_atomic_load(obj) (PL__THREAD_POINT(PL_THREAD_POINT_READ), atomic_load(obj))
#define pl_atomic_load_explicit(obj, mo)                                                      \
    (PL__THREAD_POINT(PL_THREAD_POINT_READ), atomic_load_explicit(obj, mo))
#define pl_atomic_store(obj, v) (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_store(obj, v))
#define pl_atomic_store_explicit(obj, v, mo)                                                  \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_store_explicit(obj, v, mo))
#define pl_atomic_exchange(obj, v)                                                            \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_exchange(obj, v))
#define pl_atomic_exchange_explicit(obj, v, mo)                                               \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_exchange_explicit(obj, v, mo))
#define pl_atomic_compare_exchange_strong(obj, exp, v)                                        \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_compare_exchange_strong(obj, exp, v))
#define pl_atomic_compare_exchange_strong_explicit(obj, exp, v, ok, fail)                     \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE),                                                 \
     atomic_compare_exchange_strong_explicit(obj, exp, v, ok, fail))
#define pl_atomic_compare_exchange_weak(obj, exp, v)                                          \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_compare_exchange_weak(obj, exp, v))
#define pl_atomic_compare_exchange_weak_explicit(obj, exp, v, ok, fail)                       \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE),                                                 \
     atomic_compare_exchange_weak_explicit(obj, exp, v, ok, fail))
#define pl_atomic_fetch_add(obj, v) (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_fetch_add(obj, v))
#define pl_atomic_fetch_add_explicit(obj, v, mo)                                              \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_fetch_add_explicit(obj, v, mo))
#define pl_atomic_fetch_sub(obj, v) (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_fetch_sub(obj, v))
#define pl_atomic_fetch_sub_explicit(obj, v, mo)                                              \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_fetch_sub_explicit(obj, v, mo))
#define pl_atomic_fetch_or(obj, v) (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_fetch_or(obj, v))
#define pl_atomic_fetch_or_explicit(obj, v, mo)                                               \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_fetch_or_explicit(obj, v, mo))
#define pl_atomic_fetch_and(obj, v) (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_fetch_and(obj, v))
#define pl_atomic_fetch_and_explicit(obj, v, mo)                                              \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_fetch_and_explicit(obj, v, mo))
#define pl_atomic_fetch_xor(obj, v) (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_fetch_xor(obj, v))
#define pl_atomic_fetch_xor_explicit(obj, v, mo)                                              \
    (PL__THREAD_POINT(PL_THREAD_POINT_WRITE), atomic_fetch_xor_explicit(obj, v, mo))

/* ---- For implementers: the thread seam ---------------------------------
 * Like pollen/system.h for the executor: a vtable that replaces every
 * call above, installed per OS thread. NULL (the default) is production.
 * The simulator installs its own for the duration of a run on the OS
 * thread that runs it; everything the run's simulated threads call then
 * goes to it. Applications never use this. */
typedef struct pl_thread_site {
    const char *file; /* NULL: unknown */
    int line;
    const char *func;
} pl_thread_site;

#define PL_THREAD_OPS_VERSION 1u

typedef struct pl_thread_ops {
    uint32_t version; /* PL_THREAD_OPS_VERSION */
    int (*spawn)(void *self, pl_thread **out, const char *name, pl_thread_fn fn, void *arg,
                 const pl_thread_site *site);
    int (*join)(void *self, pl_thread *t, void **ret, const pl_thread_site *site);
    int (*detach)(void *self, pl_thread *t);
    uint32_t (*id)(void *self);
    const char *(*name)(void *self);
    void (*exit)(void *self, void *ret); /* must not return */
    void (*yield)(void *self, const pl_thread_site *site);
    void (*sleep)(void *self, pl_time ns, const pl_thread_site *site);
    pl_time (*now)(void *self);
    void (*point)(void *self, const pl_thread_site *site, unsigned what);
    void (*mutex_finish)(void *self, pl_thread_mutex *m);
    /* deadline PL_TIME_NEVER: no deadline, always 0; trylock: deadline < 0 */
    int (*mutex_lock)(void *self, pl_thread_mutex *m, pl_time deadline,
                      const pl_thread_site *site);
    void (*mutex_unlock)(void *self, pl_thread_mutex *m);
    void (*cond_finish)(void *self, pl_thread_cond *c);
    int (*cond_wait)(void *self, pl_thread_cond *c, pl_thread_mutex *m, pl_time deadline,
                     const pl_thread_site *site);
    void (*cond_wake)(void *self, pl_thread_cond *c, bool all);
    void (*sem_finish)(void *self, pl_thread_sem *s);
    int (*sem_wait)(void *self, pl_thread_sem *s, pl_time deadline, const pl_thread_site *site);
    void (*sem_post)(void *self, pl_thread_sem *s);
    /* Appended in version 1: the calling thread's own executor. */
    int (*executor_create)(void *self, pl_executor **out);
} pl_thread_ops;

/* Installs `ops` (NULL: production) for the calling OS thread. */
void pl_thread_ops_install(const pl_thread_ops *ops, void *self);
/* The executor the calling OS thread is running (the one pl_run, a poll
 * and pl_now() refer to) becomes `ex`; returns the previous one. Fibers
 * share their OS thread's, so an implementer that switches threads
 * inside a run swaps it at each switch. */
pl_executor *pl_thread_swap_executor(pl_executor *ex);

#ifdef __cplusplus
}
#endif

#endif
