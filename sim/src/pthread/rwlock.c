/* sim/src/pthread/rwlock.c: read-write locks, barriers and semaphores.
 *
 * Each is a monitor (one runtime mutex, one runtime condition variable)
 * around a few counters, so every wait is the runtime's (a deadlock lists
 * the threads in it) and every wakeup, spurious ones included, re-checks
 * its condition. The rwlock prefers readers, as glibc's default does. */
#include "spt.h"

#include <limits.h>
#include <string.h>

/* Waits on the monitor until ready(obj) or the deadline; 0 or ETIMEDOUT.
 * The monitor's lock is held on entry and on return. */
static int mon_wait(pl__spt_monitor *mon, bool (*ready)(const void *), const void *obj,
                    pl_time deadline, const char *call)
{
    while (!ready(obj)) {
        if (deadline == PL_TIME_NEVER) {
            pl_thread_cond_wait_at(&mon->cv, &mon->lock, __FILE__, __LINE__, call);
        } else if (pl_thread_cond_wait_until(&mon->cv, &mon->lock, deadline) == PL_ETIMEDOUT &&
                   !ready(obj)) {
            return ETIMEDOUT;
        }
    }
    return 0;
}

/* ---- Read-write locks ------------------------------------------------------ */

static pl__spt_rwlock *rwlock_of(pl__spt_run *r, pthread_rwlock_t *l)
{
    pl__spt_obj *o = pl__spt_obj_get(r, l, PL__SPT_RWLOCK);
    return o != NULL ? &o->u.rwlock : NULL;
}

int pl_sim_pthread_rwlock_init(pthread_rwlock_t *restrict l,
                               const pthread_rwlockattr_t *restrict attr)
{
    (void)attr;
    pl__spt_run *r = pl__spt_need("pthread_rwlock_init");
    memset(l, 0, sizeof *l);
    return pl__spt_obj_new(r, l, PL__SPT_RWLOCK) != NULL ? 0 : ENOMEM;
}

int pl_sim_pthread_rwlock_destroy(pthread_rwlock_t *l)
{
    pl__spt_run *r = pl__spt_need("pthread_rwlock_destroy");
    pl__spt_obj *o = pl__spt_obj_get(r, l, PL__SPT_RWLOCK);
    if (o == NULL) {
        return ENOMEM;
    }
    if (o->u.rwlock.readers > 0 || o->u.rwlock.writer != 0) {
        return EBUSY;
    }
    pl__spt_obj_forget(r, l, o);
    return 0;
}

static bool no_writer(const void *p)
{
    return ((const pl__spt_rwlock *)p)->writer == 0;
}

static bool lock_free(const void *p)
{
    const pl__spt_rwlock *rw = p;
    return rw->writer == 0 && rw->readers == 0;
}

/* mode: 0 read, 1 write; deadline < 0: try; PL_TIME_NEVER: no deadline. */
static int rw_acquire(pthread_rwlock_t *l, int mode, pl_time deadline, const char *call)
{
    pl__spt_run *r = pl__spt_need(call);
    pl__spt_rwlock *rw = rwlock_of(r, l);
    if (rw == NULL) {
        return ENOMEM;
    }
    uint32_t self = pl__spt_self_id(r);
    pl_thread_mutex_lock_at(&rw->mon.lock, __FILE__, __LINE__, call);
    int rc = 0;
    bool (*ready)(const void *) = mode == 0 ? no_writer : lock_free;
    if (rw->writer == self) {
        rc = EDEADLK;
    } else if (deadline < 0) {
        rc = ready(rw) ? 0 : EBUSY;
    } else {
        rc = mon_wait(&rw->mon, ready, rw, deadline, call);
    }
    if (rc == 0 && mode == 0) {
        if (rw->readers == UINT32_MAX) {
            rc = EAGAIN;
        } else {
            rw->readers++;
        }
    } else if (rc == 0) {
        rw->writer = self;
    }
    pl_thread_mutex_unlock(&rw->mon.lock);
    pl__spt_stop_if_over(r);
    return rc;
}

static pl_time rw_deadline(const struct timespec *abstime)
{
    return pl__spt_timespec_valid(abstime) ? pl__spt_deadline(CLOCK_REALTIME, abstime) : -2;
}

int pl_sim_pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    return rw_acquire(l, 0, PL_TIME_NEVER, "pthread_rwlock_rdlock");
}

int pl_sim_pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
    return rw_acquire(l, 0, -1, "pthread_rwlock_tryrdlock");
}

int pl_sim_pthread_rwlock_timedrdlock(pthread_rwlock_t *restrict l,
                                      const struct timespec *restrict abstime)
{
    pl_time d = rw_deadline(abstime);
    return d == -2 ? EINVAL : rw_acquire(l, 0, d, "pthread_rwlock_timedrdlock");
}

int pl_sim_pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    return rw_acquire(l, 1, PL_TIME_NEVER, "pthread_rwlock_wrlock");
}

int pl_sim_pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
    return rw_acquire(l, 1, -1, "pthread_rwlock_trywrlock");
}

int pl_sim_pthread_rwlock_timedwrlock(pthread_rwlock_t *restrict l,
                                      const struct timespec *restrict abstime)
{
    pl_time d = rw_deadline(abstime);
    return d == -2 ? EINVAL : rw_acquire(l, 1, d, "pthread_rwlock_timedwrlock");
}

int pl_sim_pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    pl__spt_run *r = pl__spt_need("pthread_rwlock_unlock");
    pl__spt_rwlock *rw = rwlock_of(r, l);
    if (rw == NULL) {
        return ENOMEM;
    }
    uint32_t self = pl__spt_self_id(r);
    pl_thread_mutex_lock_at(&rw->mon.lock, __FILE__, __LINE__, "pthread_rwlock_unlock");
    int rc = 0;
    if (rw->writer == self && self != 0) {
        rw->writer = 0;
    } else if (rw->readers > 0) {
        rw->readers--;
    } else {
        rc = EPERM;
    }
    if (rc == 0) {
        pl_thread_cond_broadcast(&rw->mon.cv);
    }
    pl_thread_mutex_unlock(&rw->mon.lock);
    pl__spt_stop_if_over(r);
    return rc;
}

/* ---- Barriers -------------------------------------------------------------------- */

int pl_sim_pthread_barrier_init(pthread_barrier_t *restrict b,
                                const pthread_barrierattr_t *restrict attr, unsigned int count)
{
    (void)attr;
    pl__spt_run *r = pl__spt_need("pthread_barrier_init");
    if (count == 0) {
        return EINVAL;
    }
    memset(b, 0, sizeof *b);
    pl__spt_obj *o = pl__spt_obj_new(r, b, PL__SPT_BARRIER);
    if (o == NULL) {
        return ENOMEM;
    }
    o->u.barrier.count = count;
    return 0;
}

int pl_sim_pthread_barrier_destroy(pthread_barrier_t *b)
{
    pl__spt_run *r = pl__spt_need("pthread_barrier_destroy");
    pl__spt_obj *o = pl__spt_obj_get(r, b, PL__SPT_BARRIER);
    if (o == NULL) {
        return ENOMEM;
    }
    if (o->u.barrier.arrived > 0) {
        return EBUSY;
    }
    pl__spt_obj_forget(r, b, o);
    return 0;
}

typedef struct barrier_wait {
    const pl__spt_barrier *b;
    uint64_t round;
} barrier_wait;

static bool round_over(const void *p)
{
    const barrier_wait *w = p;
    return w->b->round != w->round;
}

int pl_sim_pthread_barrier_wait(pthread_barrier_t *b)
{
    pl__spt_run *r = pl__spt_need("pthread_barrier_wait");
    pl__spt_obj *o = pl__spt_obj_get(r, b, PL__SPT_BARRIER);
    if (o == NULL) {
        return ENOMEM;
    }
    pl__spt_barrier *bar = &o->u.barrier;
    if (bar->count == 0) {
        return EINVAL; /* never initialized in this run */
    }
    pl_thread_mutex_lock_at(&bar->mon.lock, __FILE__, __LINE__, "pthread_barrier_wait");
    int rc = 0;
    if (++bar->arrived == bar->count) {
        bar->arrived = 0;
        bar->round++;
        pl_thread_cond_broadcast(&bar->mon.cv);
        rc = PTHREAD_BARRIER_SERIAL_THREAD;
    } else {
        barrier_wait w = {bar, bar->round};
        mon_wait(&bar->mon, round_over, &w, PL_TIME_NEVER, "pthread_barrier_wait");
    }
    pl_thread_mutex_unlock(&bar->mon.lock);
    pl__spt_stop_if_over(r);
    return rc;
}

/* ---- Semaphores (errno and -1, as POSIX's sem_* do) ------------------------------ */

static pl__spt_sem *sem_of(pl__spt_run *r, sem_t *s)
{
    pl__spt_obj *o = pl__spt_obj_get(r, s, PL__SPT_SEM);
    return o != NULL ? &o->u.sem : NULL;
}

static int sem_fail(int err)
{
    errno = err;
    return -1;
}

int pl_sim_pthread_sem_init(sem_t *s, int pshared, unsigned int value)
{
    (void)pshared;
    pl__spt_run *r = pl__spt_need("sem_init");
    if (value > SEM_VALUE_MAX) {
        return sem_fail(EINVAL);
    }
    memset(s, 0, sizeof *s);
    pl__spt_obj *o = pl__spt_obj_new(r, s, PL__SPT_SEM);
    if (o == NULL) {
        return sem_fail(ENOMEM);
    }
    o->u.sem.value = value;
    return 0;
}

int pl_sim_pthread_sem_destroy(sem_t *s)
{
    pl__spt_run *r = pl__spt_need("sem_destroy");
    pl__spt_obj *o = pl__spt_obj_get(r, s, PL__SPT_SEM);
    if (o != NULL) {
        pl__spt_obj_forget(r, s, o);
    }
    return 0;
}

static bool sem_positive(const void *p)
{
    return ((const pl__spt_sem *)p)->value > 0;
}

/* deadline < 0: try. */
static int sem_take(sem_t *s, pl_time deadline, const char *call)
{
    pl__spt_run *r = pl__spt_need(call);
    pl__spt_sem *sm = sem_of(r, s);
    if (sm == NULL) {
        return sem_fail(ENOMEM);
    }
    pl_thread_mutex_lock_at(&sm->mon.lock, __FILE__, __LINE__, call);
    int rc;
    if (deadline < 0) {
        rc = sm->value > 0 ? 0 : EAGAIN;
    } else {
        rc = mon_wait(&sm->mon, sem_positive, sm, deadline, call);
    }
    if (rc == 0) {
        sm->value--;
    }
    pl_thread_mutex_unlock(&sm->mon.lock);
    pl__spt_stop_if_over(r);
    return rc == 0 ? 0 : sem_fail(rc);
}

int pl_sim_pthread_sem_wait(sem_t *s)
{
    return sem_take(s, PL_TIME_NEVER, "sem_wait");
}

int pl_sim_pthread_sem_trywait(sem_t *s)
{
    return sem_take(s, -1, "sem_trywait");
}

int pl_sim_pthread_sem_timedwait(sem_t *restrict s, const struct timespec *restrict abstime)
{
    if (!pl__spt_timespec_valid(abstime)) {
        return sem_fail(EINVAL);
    }
    return sem_take(s, pl__spt_deadline(CLOCK_REALTIME, abstime), "sem_timedwait");
}

int pl_sim_pthread_sem_clockwait(sem_t *restrict s, clockid_t clk,
                                 const struct timespec *restrict abstime)
{
    if (!pl__spt_timespec_valid(abstime)) {
        return sem_fail(EINVAL);
    }
    return sem_take(s, pl__spt_deadline(clk, abstime), "sem_clockwait");
}

int pl_sim_pthread_sem_post(sem_t *s)
{
    pl__spt_run *r = pl__spt_need("sem_post");
    pl__spt_sem *sm = sem_of(r, s);
    if (sm == NULL) {
        return sem_fail(ENOMEM);
    }
    pl_thread_mutex_lock_at(&sm->mon.lock, __FILE__, __LINE__, "sem_post");
    int rc = 0;
    if (sm->value == SEM_VALUE_MAX) {
        rc = EOVERFLOW;
    } else {
        sm->value++;
        pl_thread_cond_signal(&sm->mon.cv);
    }
    pl_thread_mutex_unlock(&sm->mon.lock);
    pl__spt_stop_if_over(r);
    return rc == 0 ? 0 : sem_fail(rc);
}

int pl_sim_pthread_sem_getvalue(sem_t *restrict s, int *restrict value)
{
    pl__spt_run *r = pl__spt_need("sem_getvalue");
    pl__spt_sem *sm = sem_of(r, s);
    if (sm == NULL) {
        return sem_fail(ENOMEM);
    }
    PL_SCHED_POINT();
    pl__spt_stop_if_over(r);
    *value = (int)sm->value;
    return 0;
}
