/* core/src/thread.c: pollen/thread.h in production, and the seam that
 * hands every call to an installed pl_thread_ops (the simulator's).
 *
 * The seam is one thread-local pointer: NULL means pthreads. It is per OS
 * thread on purpose: a simulated run owns its OS thread for its whole
 * length and installs its vtable there, so other OS threads (other runs,
 * a real pool in the same process) keep their own.
 */
#include "pollen/thread.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pollen/error.h"

pl_time pl__thread_clock_now(void);  /* core/backend/thread_clock.c */
void pl__thread_clock_sleep(pl_time ns);

static _Thread_local const pl_thread_ops *cur_ops;
static _Thread_local void *cur_self;

void pl_thread_ops_install(const pl_thread_ops *ops, void *self)
{
    cur_ops = ops;
    cur_self = self;
}

#define SITE(file, line, func) (&(const pl_thread_site){(file), (line), (func)})
#define NO_SITE SITE(NULL, 0, NULL)

/* ---- Production threads ------------------------------------------------ */

struct pl_thread {
    pthread_t pt;
    pl_thread_fn fn;
    void *arg;
    _Atomic int state; /* DETACHED and FINISHED: whoever comes second frees */
    uint32_t id;
    char name[32];
};

enum { T_RUNNING = 0, T_DETACHED = 1, T_FINISHED = 2 };

/* The running thread's handle; NULL on a thread pl_thread_spawn did not
 * start (thread 0). */
static _Thread_local struct pl_thread *self_thread;
static _Atomic uint32_t next_id = 1;

static int errno_to_pl(int err)
{
    return err == ENOMEM ? PL_ENOMEM : err == EDEADLK ? PL_EDEADLK : PL_EAGAIN;
}

/* Runs at the end of a thread, returned or exited (pl_thread_exit). */
static void thread_end(void *p)
{
    struct pl_thread *t = p;
    self_thread = NULL;
    if (atomic_exchange(&t->state, T_FINISHED) == T_DETACHED) {
        free(t);
    }
}

static void *thread_start(void *p)
{
    struct pl_thread *t = p;
    self_thread = t;
    void *r;
    pthread_cleanup_push(thread_end, t);
    r = t->fn(t->arg);
    pthread_cleanup_pop(1);
    return r;
}

int pl_thread_spawn_at(pl_thread **out, const char *name, pl_thread_fn fn, void *arg,
                       const char *file, int line, const char *func)
{
    if (cur_ops != NULL) {
        return cur_ops->spawn(cur_self, out, name, fn, arg, SITE(file, line, func));
    }
    struct pl_thread *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return PL_ENOMEM;
    }
    t->fn = fn;
    t->arg = arg;
    t->id = atomic_fetch_add(&next_id, 1);
    snprintf(t->name, sizeof t->name, "%s", name != NULL ? name : "thread");
    int err = pthread_create(&t->pt, NULL, thread_start, t);
    if (err != 0) {
        free(t);
        return errno_to_pl(err);
    }
    *out = t;
    return 0;
}

int pl_thread_join_at(pl_thread *t, void **ret, const char *file, int line, const char *func)
{
    if (cur_ops != NULL) {
        return cur_ops->join(cur_self, t, ret, SITE(file, line, func));
    }
    if (t == self_thread) {
        return PL_EDEADLK;
    }
    void *r = NULL;
    int err = pthread_join(t->pt, &r);
    if (err != 0) {
        return errno_to_pl(err);
    }
    free(t);
    if (ret != NULL) {
        *ret = r;
    }
    return 0;
}

int pl_thread_detach(pl_thread *t)
{
    if (cur_ops != NULL) {
        return cur_ops->detach(cur_self, t);
    }
    int err = pthread_detach(t->pt);
    if (err != 0) {
        return errno_to_pl(err);
    }
    if (atomic_exchange(&t->state, T_DETACHED) == T_FINISHED) {
        free(t);
    }
    return 0;
}

uint32_t pl_thread_id(void)
{
    if (cur_ops != NULL) {
        return cur_ops->id(cur_self);
    }
    return self_thread != NULL ? self_thread->id : 0;
}

const char *pl_thread_name(void)
{
    if (cur_ops != NULL) {
        return cur_ops->name(cur_self);
    }
    return self_thread != NULL ? self_thread->name : "main";
}

_Noreturn void pl_thread_exit(void *ret)
{
    if (cur_ops != NULL) {
        cur_ops->exit(cur_self, ret);
        abort(); /* an ops exit that returns broke its contract */
    }
    pthread_exit(ret);
}

void pl_thread_yield(void)
{
    if (cur_ops != NULL) {
        cur_ops->yield(cur_self, NO_SITE);
        return;
    }
    sched_yield();
}

void pl_thread_sleep(pl_time ns)
{
    if (cur_ops != NULL) {
        cur_ops->sleep(cur_self, ns, NO_SITE);
        return;
    }
    pl__thread_clock_sleep(ns);
}

int pl_thread_executor_create(pl_executor **out)
{
    if (cur_ops != NULL && cur_ops->executor_create != NULL) {
        return cur_ops->executor_create(cur_self, out);
    }
    return pl_executor_create(out, NULL);
}

pl_time pl_thread_now(void)
{
    return cur_ops != NULL ? cur_ops->now(cur_self) : pl__thread_clock_now();
}

void pl__thread_point(const char *file, int line, const char *func, unsigned what)
{
    if (cur_ops != NULL) {
        cur_ops->point(cur_self, SITE(file, line, func), what);
    }
}

/* ---- Mutex --------------------------------------------------------------- */

static struct timespec abs_time(pl_time deadline)
{
    if (deadline < 0) {
        deadline = 0;
    }
    return (struct timespec){.tv_sec = (time_t)(deadline / PL_S),
                             .tv_nsec = (long)(deadline % PL_S)};
}

int pl_thread_mutex_init(pl_thread_mutex *m)
{
    *m = (pl_thread_mutex)PL_THREAD_MUTEX_INIT;
    int err = pthread_mutex_init(&m->m, NULL);
    return err == 0 ? 0 : errno_to_pl(err);
}

void pl_thread_mutex_finish(pl_thread_mutex *m)
{
    if (cur_ops != NULL) {
        cur_ops->mutex_finish(cur_self, m);
        return;
    }
    pthread_mutex_destroy(&m->m);
}

void pl_thread_mutex_lock_at(pl_thread_mutex *m, const char *file, int line, const char *func)
{
    if (cur_ops != NULL) {
        (void)cur_ops->mutex_lock(cur_self, m, PL_TIME_NEVER, SITE(file, line, func));
        return;
    }
    pthread_mutex_lock(&m->m);
}

bool pl_thread_mutex_trylock(pl_thread_mutex *m)
{
    if (cur_ops != NULL) {
        return cur_ops->mutex_lock(cur_self, m, -1, NO_SITE) == 0;
    }
    return pthread_mutex_trylock(&m->m) == 0;
}

int pl_thread_mutex_lock_until(pl_thread_mutex *m, pl_time deadline)
{
    if (cur_ops != NULL) {
        return cur_ops->mutex_lock(cur_self, m, deadline < 0 ? 0 : deadline, NO_SITE);
    }
    struct timespec ts = abs_time(deadline);
    return pthread_mutex_clocklock(&m->m, CLOCK_MONOTONIC, &ts) == 0 ? 0 : PL_ETIMEDOUT;
}

void pl_thread_mutex_unlock(pl_thread_mutex *m)
{
    if (cur_ops != NULL) {
        cur_ops->mutex_unlock(cur_self, m);
        return;
    }
    pthread_mutex_unlock(&m->m);
}

/* ---- Condition variable -------------------------------------------------- */

int pl_thread_cond_init(pl_thread_cond *c)
{
    *c = (pl_thread_cond)PL_THREAD_COND_INIT;
    int err = pthread_cond_init(&c->c, NULL);
    return err == 0 ? 0 : errno_to_pl(err);
}

void pl_thread_cond_finish(pl_thread_cond *c)
{
    if (cur_ops != NULL) {
        cur_ops->cond_finish(cur_self, c);
        return;
    }
    pthread_cond_destroy(&c->c);
}

void pl_thread_cond_wait_at(pl_thread_cond *c, pl_thread_mutex *m, const char *file, int line,
                            const char *func)
{
    if (cur_ops != NULL) {
        (void)cur_ops->cond_wait(cur_self, c, m, PL_TIME_NEVER, SITE(file, line, func));
        return;
    }
    pthread_cond_wait(&c->c, &m->m);
}

int pl_thread_cond_wait_until(pl_thread_cond *c, pl_thread_mutex *m, pl_time deadline)
{
    if (cur_ops != NULL) {
        return cur_ops->cond_wait(cur_self, c, m, deadline < 0 ? 0 : deadline, NO_SITE);
    }
    struct timespec ts = abs_time(deadline);
    int err = pthread_cond_clockwait(&c->c, &m->m, CLOCK_MONOTONIC, &ts);
    return err == ETIMEDOUT ? PL_ETIMEDOUT : 0;
}

void pl_thread_cond_signal(pl_thread_cond *c)
{
    if (cur_ops != NULL) {
        cur_ops->cond_wake(cur_self, c, false);
        return;
    }
    pthread_cond_signal(&c->c);
}

void pl_thread_cond_broadcast(pl_thread_cond *c)
{
    if (cur_ops != NULL) {
        cur_ops->cond_wake(cur_self, c, true);
        return;
    }
    pthread_cond_broadcast(&c->c);
}

/* ---- Semaphore ------------------------------------------------------------
 * A mutex, a condition variable and a count: sem_t has no clock-based
 * timed wait on every libc, and this keeps one code path. */

int pl_thread_sem_init(pl_thread_sem *s, uint32_t value)
{
    memset(s, 0, sizeof *s);
    int rc = pl_thread_mutex_init(&s->lock);
    if (rc != 0) {
        return rc;
    }
    rc = pl_thread_cond_init(&s->nonzero);
    if (rc != 0) {
        pthread_mutex_destroy(&s->lock.m);
        return rc;
    }
    s->value = value;
    return 0;
}

void pl_thread_sem_finish(pl_thread_sem *s)
{
    if (cur_ops != NULL) {
        cur_ops->sem_finish(cur_self, s);
        return;
    }
    pthread_cond_destroy(&s->nonzero.c);
    pthread_mutex_destroy(&s->lock.m);
}

static int sem_wait_prod(pl_thread_sem *s, pl_time deadline)
{
    struct timespec ts = abs_time(deadline);
    int rc = 0;
    pthread_mutex_lock(&s->lock.m);
    while (s->value == 0 && rc == 0) {
        if (deadline == PL_TIME_NEVER) {
            pthread_cond_wait(&s->nonzero.c, &s->lock.m);
        } else if (pthread_cond_clockwait(&s->nonzero.c, &s->lock.m, CLOCK_MONOTONIC, &ts) ==
                   ETIMEDOUT) {
            rc = s->value == 0 ? PL_ETIMEDOUT : 0;
        }
    }
    if (rc == 0) {
        s->value--;
    }
    pthread_mutex_unlock(&s->lock.m);
    return rc;
}

void pl_thread_sem_wait_at(pl_thread_sem *s, const char *file, int line, const char *func)
{
    if (cur_ops != NULL) {
        (void)cur_ops->sem_wait(cur_self, s, PL_TIME_NEVER, SITE(file, line, func));
        return;
    }
    (void)sem_wait_prod(s, PL_TIME_NEVER);
}

bool pl_thread_sem_trywait(pl_thread_sem *s)
{
    if (cur_ops != NULL) {
        return cur_ops->sem_wait(cur_self, s, -1, NO_SITE) == 0;
    }
    bool took = false;
    pthread_mutex_lock(&s->lock.m);
    if (s->value > 0) {
        s->value--;
        took = true;
    }
    pthread_mutex_unlock(&s->lock.m);
    return took;
}

int pl_thread_sem_wait_until(pl_thread_sem *s, pl_time deadline)
{
    if (cur_ops != NULL) {
        return cur_ops->sem_wait(cur_self, s, deadline < 0 ? 0 : deadline, NO_SITE);
    }
    return sem_wait_prod(s, deadline < 0 ? 0 : deadline);
}

void pl_thread_sem_post(pl_thread_sem *s)
{
    if (cur_ops != NULL) {
        cur_ops->sem_post(cur_self, s);
        return;
    }
    pthread_mutex_lock(&s->lock.m);
    s->value++;
    pthread_cond_signal(&s->nonzero.c);
    pthread_mutex_unlock(&s->lock.m);
}
