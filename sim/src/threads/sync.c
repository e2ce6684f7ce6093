/* sim/src/threads/sync.c: pollen/thread.h under the simulator (the
 * pl_thread_ops a run installs on its OS thread).
 *
 * Mutexes, condition variables and semaphores keep their state in the
 * run's object table (sched.c), found through the run number and id in
 * the user's struct, so a static PL_THREAD_MUTEX_INIT mutex starts every
 * run unlocked. A release hands the object straight to the waiter it
 * wakes (choice 0: the longest waiting), so a woken thread never finds
 * it taken again. Acquiring is a point before the attempt; releasing is
 * a point after the release, where the woken thread may run at once.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include "../sim_internal.h"
#include "threads.h"

/* A pl_thread handle under the simulator. */
typedef struct sim_handle {
    uint64_t run;
    uint32_t id;
} sim_handle;

static const pl_thread_site no_site = {NULL, 0, NULL};

static pl__thread_rec *me_of(pl__sim *s)
{
    /* pl__threads_spawn made thread 0's record; before any spawn a lone
     * thread 0 gets one on first use. */
    if (pl__threads_ensure_main(s) != 0) {
        return NULL;
    }
    return pl__threads_self(s);
}

static void note_site(pl__thread_rec *me, const pl_thread_site *site)
{
    if (site != NULL && site->file != NULL) {
        me->at = *site;
    }
}

/* ---- Threads ---------------------------------------------------------------- */

static int op_spawn(void *self, pl_thread **out, const char *name, pl_thread_fn fn, void *arg,
                    const pl_thread_site *site)
{
    pl__sim *s = self;
    sim_handle *h = calloc(1, sizeof *h);
    if (h == NULL) {
        return PL_ENOMEM;
    }
    uint32_t id;
    int rc = pl__threads_spawn(s, name, fn, arg, site, &id);
    if (rc != 0) {
        free(h);
        return rc;
    }
    h->run = pl__threads_run(s);
    h->id = id;
    s->threads.t[id]->handle = h;
    *out = (pl_thread *)(void *)h;
    pl__threads_point(s, site, PL_THREAD_POINT_WRITE);
    return 0;
}

static pl__thread_rec *target_of(pl__sim *s, pl_thread *t)
{
    sim_handle *h = (sim_handle *)(void *)t;
    PL__SIM_ASSERT(h != NULL && h->run == s->threads.run && h->id < s->threads.len);
    return s->threads.t[h->id];
}

static int op_join(void *self, pl_thread *t, void **ret, const pl_thread_site *site)
{
    pl__sim *s = self;
    pl__thread_rec *me = me_of(s);
    pl__thread_rec *target = target_of(s, t);
    if (target == me) {
        return PL_EDEADLK;
    }
    note_site(me, site);
    pl__threads_point(s, site, PL_THREAD_POINT_READ);
    if (target->state != PL__TH_DONE && target->state != PL__TH_KILLED) {
        PL__SIM_ASSERT(target->joiner == 0);
        target->joiner = me->id + 1;
        me->state = PL__TH_BLOCKED;
        me->waits = PL__WAIT_JOIN;
        me->obj = target->id;
        if (!pl__threads_block(s)) {
            target->joiner = 0;
            return PL_EDEADLK;
        }
    }
    /* A thread its node's crash killed returned nothing: the join says
     * so rather than wait for good, as a task's join of a crashed
     * node's task does. */
    bool killed = target->state == PL__TH_KILLED;
    if (ret != NULL) {
        *ret = killed ? NULL : target->ret;
    }
    free(target->handle);
    target->handle = NULL;
    return killed ? PL_ECANCELED : 0;
}

static int op_detach(void *self, pl_thread *t)
{
    pl__thread_rec *target = target_of(self, t);
    target->detached = true; /* its handle is freed with the run */
    return 0;
}

static uint32_t op_id(void *self)
{
    pl__sim *s = self;
    return s->threads.len == 0 ? 0 : s->threads.current;
}

static const char *op_name(void *self)
{
    pl__sim *s = self;
    return s->threads.len == 0 ? "main" : pl__threads_self(s)->name;
}

static void op_exit(void *self, void *ret)
{
    pl__sim *s = self;
    if (s->threads.len == 0 || s->threads.current == 0) {
        /* Thread 0 runs the executor: it cannot end. Reported, and the
         * poll is left as the budget oracle leaves it. */
        pl__threads_misuse(s, "calls pl_thread_exit on thread 0", 0);
        if (s->escape != NULL) {
            longjmp(*s->escape, 1);
        }
        abort();
    }
    pl__threads_exit(s, ret);
}

static void op_yield(void *self, const pl_thread_site *site) { pl__threads_yield(self, site); }

/* A thread reads its node's clock, as the node's tasks do (a skewed
 * node's own, node_clock.c); its deadlines are on that clock, and the
 * thread table waits in true time. */
static pl_time op_now(void *self)
{
    const pl__sim *s = self;
    return pl__node_clock_read(s, pl__node_current(s), s->now, false);
}

static pl_time true_time_of(const pl__sim *s, pl_time deadline)
{
    return pl__node_clock_due(s, pl__node_current(s), deadline);
}

static void op_sleep(void *self, pl_time ns, const pl_thread_site *site)
{
    pl__sim *s = self;
    pl__thread_rec *me = me_of(s);
    if (me == NULL) {
        return;
    }
    note_site(me, site);
    pl__threads_point(s, site, PL_THREAD_POINT_READ);
    if (ns <= 0) {
        return;
    }
    me->state = PL__TH_BLOCKED;
    me->waits = PL__WAIT_SLEEP;
    me->obj = 0;
    pl_time now = op_now(s);
    me->wake_at = now > PL_TIME_NEVER - ns ? PL_TIME_NEVER - 1 : true_time_of(s, now + ns);
    (void)pl__threads_block(s);
}

static void op_point(void *self, const pl_thread_site *site, unsigned what)
{
    pl__threads_point(self, site, what);
}

/* ---- Blocking on an object ---------------------------------------------------- */

/* Blocks the running thread on obj until a release hands it over or the
 * deadline passes. 0, PL_ETIMEDOUT, or PL_EDEADLK when the run stopped. */
static int wait_on(pl__sim *s, pl__thread_rec *me, uint32_t obj, uint8_t waits, pl_time deadline)
{
    deadline = true_time_of(s, deadline);
    if (deadline != PL_TIME_NEVER && deadline <= s->now) {
        return PL_ETIMEDOUT;
    }
    pl__threads_enqueue(s, obj, me);
    me->state = PL__TH_BLOCKED;
    me->waits = waits;
    me->wake_at = deadline;
    if (!pl__threads_block(s)) {
        return PL_EDEADLK;
    }
    return me->timed_out ? PL_ETIMEDOUT : 0;
}

/* Wakes one waiter of obj (a decision among several); its id, or -1. */
static int64_t wake_one(pl__sim *s, uint32_t obj)
{
    uint32_t n = pl__threads_waiters(s, obj);
    if (n == 0) {
        return -1;
    }
    uint32_t id = pl__threads_dequeue(s, obj, pl__threads_pick_waiter(s, n));
    pl__threads_ready(s, id);
    return id;
}

/* ---- Mutex ---------------------------------------------------------------------- */

static uint32_t mutex_obj(pl__sim *s, pl_thread_mutex *m)
{
    return pl__threads_obj(s, &m->sim_run, &m->sim_id, PL__TOBJ_MUTEX, 0);
}

static void op_mutex_finish(void *self, pl_thread_mutex *m)
{
    pl__sim *s = self;
    uint32_t owner = m->sim_run == s->threads.run && m->sim_id != 0
                         ? s->threads.objs[m->sim_id - 1].owner
                         : 0;
    /* One a killed thread held died with its node: no one misused it. */
    if (owner != 0 && s->threads.t[owner - 1]->state != PL__TH_KILLED) {
        pl__threads_misuse(s, "destroys a locked mutex", m->sim_id);
    }
    m->sim_run = 0;
    m->sim_id = 0;
}

static int op_mutex_lock(void *self, pl_thread_mutex *m, pl_time deadline,
                         const pl_thread_site *site)
{
    pl__sim *s = self;
    pl__thread_rec *me = me_of(s);
    uint32_t obj = me != NULL ? mutex_obj(s, m) : 0;
    if (obj == 0) {
        pl__sim_oom(s, NULL, "a simulated mutex");
        return PL_ENOMEM;
    }
    note_site(me, site);
    pl__threads_point(s, site, PL_THREAD_POINT_WRITE);
    pl__tobj *o = &s->threads.objs[obj - 1];
    if (o->owner == 0) {
        o->owner = me->id + 1;
        return 0;
    }
    if (o->owner == me->id + 1) {
        if (deadline >= 0) {
            pl__threads_misuse(s, "locks a mutex it already holds", obj);
        }
        return PL_EDEADLK;
    }
    if (deadline < 0) {
        return PL_EAGAIN; /* trylock */
    }
    int rc = wait_on(s, me, obj, PL__WAIT_MUTEX, deadline);
    PL__SIM_ASSERT(rc != 0 || s->threads.objs[obj - 1].owner == me->id + 1);
    return rc;
}

/* Releases obj held by me: handed to a waiter, or free. */
static void mutex_release(pl__sim *s, uint32_t obj)
{
    s->threads.objs[obj - 1].owner = 0;
    int64_t next = wake_one(s, obj);
    if (next >= 0) {
        s->threads.objs[obj - 1].owner = (uint32_t)next + 1;
    }
}

static void op_mutex_unlock(void *self, pl_thread_mutex *m)
{
    pl__sim *s = self;
    pl__thread_rec *me = me_of(s);
    uint32_t obj = me != NULL ? mutex_obj(s, m) : 0;
    if (obj == 0) {
        return;
    }
    if (s->threads.objs[obj - 1].owner != me->id + 1) {
        pl__threads_misuse(s, "unlocks a mutex it does not hold", obj);
        return;
    }
    mutex_release(s, obj);
    pl__threads_point(s, NULL, PL_THREAD_POINT_WRITE);
}

/* ---- Condition variable ----------------------------------------------------------- */

static uint32_t cond_obj(pl__sim *s, pl_thread_cond *c)
{
    return pl__threads_obj(s, &c->sim_run, &c->sim_id, PL__TOBJ_COND, 0);
}

static void op_cond_finish(void *self, pl_thread_cond *c)
{
    (void)self;
    c->sim_run = 0;
    c->sim_id = 0;
}

static int op_cond_wait(void *self, pl_thread_cond *c, pl_thread_mutex *m, pl_time deadline,
                        const pl_thread_site *site)
{
    pl__sim *s = self;
    pl__thread_rec *me = me_of(s);
    uint32_t mo = me != NULL ? mutex_obj(s, m) : 0;
    uint32_t co = mo != 0 ? cond_obj(s, c) : 0;
    if (co == 0) {
        pl__sim_oom(s, NULL, "a simulated condition variable");
        return PL_ENOMEM;
    }
    note_site(me, site);
    if (s->threads.objs[mo - 1].owner != me->id + 1) {
        pl__threads_misuse(s, "waits on a condition variable without holding its mutex", mo);
        return PL_EDEADLK;
    }
    mutex_release(s, mo);
    int rc;
    if (pl__threads_active(&s->threads) &&
        pl__sim_choose(s, PL_DECIDE_COND_SPURIOUS, 2, me->id) != 0) {
        /* A spurious wakeup: the others may run, then the mutex again. */
        pl__threads_point(s, site, PL_THREAD_POINT_READ);
        rc = 0;
    } else {
        rc = wait_on(s, me, co, PL__WAIT_COND, deadline);
        if (rc == PL_EDEADLK) {
            return rc;
        }
    }
    int lrc = op_mutex_lock(s, m, PL_TIME_NEVER, site);
    return lrc != 0 ? lrc : rc;
}

static void op_cond_wake(void *self, pl_thread_cond *c, bool all)
{
    pl__sim *s = self;
    uint32_t co = me_of(s) != NULL ? cond_obj(s, c) : 0;
    if (co == 0) {
        return;
    }
    while (wake_one(s, co) >= 0 && all) {
    }
    pl__threads_point(s, NULL, PL_THREAD_POINT_WRITE);
}

/* ---- Semaphore ---------------------------------------------------------------------- */

static uint32_t sem_obj(pl__sim *s, pl_thread_sem *sem)
{
    return pl__threads_obj(s, &sem->sim_run, &sem->sim_id, PL__TOBJ_SEM, sem->value);
}

static void op_sem_finish(void *self, pl_thread_sem *sem)
{
    (void)self;
    sem->sim_run = 0;
    sem->sim_id = 0;
}

static int op_sem_wait(void *self, pl_thread_sem *sem, pl_time deadline,
                       const pl_thread_site *site)
{
    pl__sim *s = self;
    pl__thread_rec *me = me_of(s);
    uint32_t obj = me != NULL ? sem_obj(s, sem) : 0;
    if (obj == 0) {
        pl__sim_oom(s, NULL, "a simulated semaphore");
        return PL_ENOMEM;
    }
    note_site(me, site);
    pl__threads_point(s, site, PL_THREAD_POINT_WRITE);
    pl__tobj *o = &s->threads.objs[obj - 1];
    if (o->value > 0) {
        o->value--;
        return 0;
    }
    if (deadline < 0) {
        return PL_EAGAIN; /* trywait */
    }
    return wait_on(s, me, obj, PL__WAIT_SEM, deadline);
}

static void op_sem_post(void *self, pl_thread_sem *sem)
{
    pl__sim *s = self;
    uint32_t obj = me_of(s) != NULL ? sem_obj(s, sem) : 0;
    if (obj == 0) {
        return;
    }
    if (wake_one(s, obj) < 0) {
        s->threads.objs[obj - 1].value++; /* no waiter: the count keeps it */
    }
    pl__threads_point(s, NULL, PL_THREAD_POINT_WRITE);
}

static int op_executor_create(void *self, pl_executor **out)
{
    return pl__threads_executor_create(self, out);
}

static const pl_thread_ops sim_thread_ops = {
    .version = PL_THREAD_OPS_VERSION,
    .spawn = op_spawn,
    .join = op_join,
    .detach = op_detach,
    .id = op_id,
    .name = op_name,
    .exit = op_exit,
    .yield = op_yield,
    .sleep = op_sleep,
    .now = op_now,
    .point = op_point,
    .mutex_finish = op_mutex_finish,
    .mutex_lock = op_mutex_lock,
    .mutex_unlock = op_mutex_unlock,
    .cond_finish = op_cond_finish,
    .cond_wait = op_cond_wait,
    .cond_wake = op_cond_wake,
    .sem_finish = op_sem_finish,
    .sem_wait = op_sem_wait,
    .sem_post = op_sem_post,
    .executor_create = op_executor_create,
};

void pl__threads_install(pl__sim *s)
{
    (void)no_site;
    pl_thread_ops_install(&sim_thread_ops, s);
}
