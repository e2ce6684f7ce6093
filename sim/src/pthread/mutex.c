/* sim/src/pthread/mutex.c: mutexes, condition variables and spinlocks.
 *
 * A mutex is the runtime's pl_thread_mutex plus what pthreads add on top:
 * its type (the recursive count and the error checks are the shim's; a
 * NORMAL mutex relocked by its holder blocks, as in production, and the
 * runtime reports the deadlock) and its holder, which a cond wait gives
 * up and takes back. */
#include "spt.h"

#include <string.h>

#define SITE_LOCK __FILE__, __LINE__, "pthread_mutex_lock"

static pl__spt_mutex *mutex_of(pl__spt_run *r, pthread_mutex_t *m)
{
    pl__spt_obj *o = pl__spt_obj_get(r, m, PL__SPT_MUTEX);
    return o != NULL ? &o->u.mutex : NULL;
}

int pl_sim_pthread_mutex_init(pthread_mutex_t *restrict m, const pthread_mutexattr_t *restrict attr)
{
    pl__spt_run *r = pl__spt_need("pthread_mutex_init");
    int type = PTHREAD_MUTEX_DEFAULT;
    if (attr != NULL && pthread_mutexattr_gettype(attr, &type) != 0) {
        return EINVAL;
    }
    memset(m, 0, sizeof *m);
    m->__data.__kind = type == PTHREAD_MUTEX_ADAPTIVE_NP ? PTHREAD_MUTEX_NORMAL : type;
    return pl__spt_obj_new(r, m, PL__SPT_MUTEX) != NULL ? 0 : ENOMEM;
}

int pl_sim_pthread_mutex_destroy(pthread_mutex_t *m)
{
    pl__spt_run *r = pl__spt_need("pthread_mutex_destroy");
    pl__spt_obj *o = pl__spt_obj_get(r, m, PL__SPT_MUTEX);
    if (o == NULL) {
        return ENOMEM;
    }
    if (o->u.mutex.owner != 0) {
        return EBUSY;
    }
    pl_thread_mutex_finish(&o->u.mutex.m);
    pl__spt_obj_forget(r, m, o);
    return 0;
}

/* The type's answer before blocking: -1 to go on and lock, else the
 * return value (0 after one more recursive hold). */
static int relock_rule(pl__spt_mutex *mx, uint32_t self, bool trying)
{
    if (mx->owner != self || self == 0) {
        return -1;
    }
    if (mx->type == PTHREAD_MUTEX_RECURSIVE) {
        if (mx->count == UINT32_MAX) {
            return EAGAIN;
        }
        mx->count++;
        return 0;
    }
    if (mx->type == PTHREAD_MUTEX_ERRORCHECK) {
        return trying ? EBUSY : EDEADLK;
    }
    return trying ? EBUSY : -1; /* NORMAL: blocks forever, as in production */
}

static int lock_until(pthread_mutex_t *m, pl_time deadline, const char *call)
{
    pl__spt_run *r = pl__spt_need(call);
    pl__spt_mutex *mx = mutex_of(r, m);
    if (mx == NULL) {
        return ENOMEM;
    }
    uint32_t self = pl__spt_self_id(r);
    int rule = relock_rule(mx, self, false);
    if (rule >= 0) {
        return rule;
    }
    int rc;
    if (deadline == PL_TIME_NEVER) {
        pl_thread_mutex_lock_at(&mx->m, SITE_LOCK);
        rc = 0;
    } else {
        rc = pl_thread_mutex_lock_until(&mx->m, deadline);
    }
    pl__spt_stop_if_over(r);
    if (rc != 0) {
        return rc == PL_ETIMEDOUT ? ETIMEDOUT : -rc;
    }
    mx->owner = self;
    mx->count = 1;
    return 0;
}

int pl_sim_pthread_mutex_lock(pthread_mutex_t *m)
{
    return lock_until(m, PL_TIME_NEVER, "pthread_mutex_lock");
}

int pl_sim_pthread_mutex_timedlock(pthread_mutex_t *restrict m,
                                   const struct timespec *restrict abstime)
{
    if (!pl__spt_timespec_valid(abstime)) {
        return EINVAL;
    }
    return lock_until(m, pl__spt_deadline(CLOCK_REALTIME, abstime), "pthread_mutex_timedlock");
}

int pl_sim_pthread_mutex_clocklock(pthread_mutex_t *restrict m, clockid_t clk,
                                   const struct timespec *restrict abstime)
{
    if (!pl__spt_timespec_valid(abstime)) {
        return EINVAL;
    }
    return lock_until(m, pl__spt_deadline(clk, abstime), "pthread_mutex_clocklock");
}

int pl_sim_pthread_mutex_trylock(pthread_mutex_t *m)
{
    pl__spt_run *r = pl__spt_need("pthread_mutex_trylock");
    pl__spt_mutex *mx = mutex_of(r, m);
    if (mx == NULL) {
        return ENOMEM;
    }
    uint32_t self = pl__spt_self_id(r);
    int rule = relock_rule(mx, self, true);
    if (rule >= 0) {
        return rule;
    }
    bool got = pl_thread_mutex_trylock(&mx->m);
    pl__spt_stop_if_over(r);
    if (!got) {
        return EBUSY;
    }
    mx->owner = self;
    mx->count = 1;
    return 0;
}

int pl_sim_pthread_mutex_unlock(pthread_mutex_t *m)
{
    pl__spt_run *r = pl__spt_need("pthread_mutex_unlock");
    pl__spt_mutex *mx = mutex_of(r, m);
    if (mx == NULL) {
        return ENOMEM;
    }
    uint32_t self = pl__spt_self_id(r);
    if (mx->type != PTHREAD_MUTEX_NORMAL && mx->owner != self) {
        return EPERM;
    }
    if (mx->type == PTHREAD_MUTEX_RECURSIVE && mx->count > 1) {
        mx->count--;
        return 0;
    }
    if (mx->owner == self) {
        mx->owner = 0;
        mx->count = 0;
    }
    /* A NORMAL mutex unlocked by another thread goes to the runtime,
     * whose contract check reports it. */
    pl_thread_mutex_unlock(&mx->m);
    pl__spt_stop_if_over(r);
    return 0;
}

/* ---- Condition variables -------------------------------------------------- */

static pl__spt_cond *cond_of(pl__spt_run *r, pthread_cond_t *c)
{
    pl__spt_obj *o = pl__spt_obj_get(r, c, PL__SPT_COND);
    return o != NULL ? &o->u.cond : NULL;
}

int pl_sim_pthread_cond_init(pthread_cond_t *restrict c, const pthread_condattr_t *restrict attr)
{
    pl__spt_run *r = pl__spt_need("pthread_cond_init");
    clockid_t clk = CLOCK_REALTIME;
    if (attr != NULL && pthread_condattr_getclock(attr, &clk) != 0) {
        return EINVAL;
    }
    memset(c, 0, sizeof *c);
    pl__spt_obj *o = pl__spt_obj_new(r, c, PL__SPT_COND);
    if (o == NULL) {
        return ENOMEM;
    }
    o->u.cond.clock = clk;
    return 0;
}

int pl_sim_pthread_cond_destroy(pthread_cond_t *c)
{
    pl__spt_run *r = pl__spt_need("pthread_cond_destroy");
    pl__spt_obj *o = pl__spt_obj_get(r, c, PL__SPT_COND);
    if (o == NULL) {
        return ENOMEM;
    }
    pl_thread_cond_finish(&o->u.cond.c);
    pl__spt_obj_forget(r, c, o);
    return 0;
}

static int wait_until(pthread_cond_t *c, pthread_mutex_t *m, bool timed, clockid_t clk,
                      const struct timespec *abstime, const char *call)
{
    pl__spt_run *r = pl__spt_need(call);
    pl__spt_cond *cv = cond_of(r, c);
    pl__spt_mutex *mx = mutex_of(r, m);
    if (cv == NULL || mx == NULL) {
        return ENOMEM;
    }
    if (timed && !pl__spt_timespec_valid(abstime)) {
        return EINVAL;
    }
    uint32_t self = pl__spt_self_id(r);
    if (mx->type != PTHREAD_MUTEX_NORMAL && mx->owner != self) {
        return EPERM;
    }
    uint32_t count = mx->count;
    if (mx->owner == self) {
        mx->owner = 0;
        mx->count = 0;
    }
    int rc = 0;
    if (!timed) {
        pl_thread_cond_wait_at(&cv->c, &mx->m, __FILE__, __LINE__, call);
    } else {
        rc = pl_thread_cond_wait_until(&cv->c, &mx->m, pl__spt_deadline(clk, abstime));
    }
    mx->owner = self;
    mx->count = count > 0 ? count : 1;
    pl__spt_stop_if_over(r);
    return rc == PL_ETIMEDOUT ? ETIMEDOUT : -rc;
}

int pl_sim_pthread_cond_wait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m)
{
    return wait_until(c, m, false, CLOCK_REALTIME, NULL, "pthread_cond_wait");
}

int pl_sim_pthread_cond_timedwait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m,
                                  const struct timespec *restrict abstime)
{
    pl__spt_run *r = pl__spt_need("pthread_cond_timedwait");
    pl__spt_cond *cv = cond_of(r, c);
    if (cv == NULL) {
        return ENOMEM;
    }
    return wait_until(c, m, true, cv->clock, abstime, "pthread_cond_timedwait");
}

int pl_sim_pthread_cond_clockwait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m,
                                  clockid_t clk, const struct timespec *restrict abstime)
{
    return wait_until(c, m, true, clk, abstime, "pthread_cond_clockwait");
}

int pl_sim_pthread_cond_signal(pthread_cond_t *c)
{
    pl__spt_run *r = pl__spt_need("pthread_cond_signal");
    pl__spt_cond *cv = cond_of(r, c);
    if (cv == NULL) {
        return ENOMEM;
    }
    pl_thread_cond_signal(&cv->c);
    pl__spt_stop_if_over(r);
    return 0;
}

int pl_sim_pthread_cond_broadcast(pthread_cond_t *c)
{
    pl__spt_run *r = pl__spt_need("pthread_cond_broadcast");
    pl__spt_cond *cv = cond_of(r, c);
    if (cv == NULL) {
        return ENOMEM;
    }
    pl_thread_cond_broadcast(&cv->c);
    pl__spt_stop_if_over(r);
    return 0;
}

/* ---- Spinlocks -----------------------------------------------------------------
 * Scheduled as a NORMAL mutex: a thread that spins does nothing until
 * the holder releases, so blocking it is the same set of interleavings,
 * and a spinlock nobody will release is a deadlock naming its holder
 * instead of a long spin. The int holds the object's entry (objects.c). */

static pl__spt_mutex *spin_of(pl__spt_run *r, pthread_spinlock_t *l)
{
    pl__spt_obj *o = pl__spt_obj_get_word(r, l, PL__SPT_MUTEX);
    return o != NULL ? &o->u.mutex : NULL;
}

int pl_sim_pthread_spin_init(pthread_spinlock_t *l, int pshared)
{
    (void)pshared;
    *l = 0;
    return spin_of(pl__spt_need("pthread_spin_init"), l) != NULL ? 0 : ENOMEM;
}

int pl_sim_pthread_spin_destroy(pthread_spinlock_t *l)
{
    pl__spt_run *r = pl__spt_need("pthread_spin_destroy");
    pl__spt_obj *o = pl__spt_obj_get_word(r, l, PL__SPT_MUTEX);
    if (o != NULL) {
        o->live = false;
    }
    *l = 0;
    return 0;
}

int pl_sim_pthread_spin_lock(pthread_spinlock_t *l)
{
    pl__spt_run *r = pl__spt_need("pthread_spin_lock");
    pl__spt_mutex *mx = spin_of(r, l);
    if (mx == NULL) {
        return ENOMEM;
    }
    pl_thread_mutex_lock_at(&mx->m, __FILE__, __LINE__, "pthread_spin_lock");
    pl__spt_stop_if_over(r);
    mx->owner = pl__spt_self_id(r);
    return 0;
}

int pl_sim_pthread_spin_trylock(pthread_spinlock_t *l)
{
    pl__spt_run *r = pl__spt_need("pthread_spin_trylock");
    pl__spt_mutex *mx = spin_of(r, l);
    if (mx == NULL) {
        return ENOMEM;
    }
    bool got = pl_thread_mutex_trylock(&mx->m);
    pl__spt_stop_if_over(r);
    if (!got) {
        return EBUSY;
    }
    mx->owner = pl__spt_self_id(r);
    return 0;
}

int pl_sim_pthread_spin_unlock(pthread_spinlock_t *l)
{
    pl__spt_run *r = pl__spt_need("pthread_spin_unlock");
    pl__spt_mutex *mx = spin_of(r, l);
    if (mx == NULL) {
        return ENOMEM;
    }
    mx->owner = 0;
    pl_thread_mutex_unlock(&mx->m);
    pl__spt_stop_if_over(r);
    return 0;
}
