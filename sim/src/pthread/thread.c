/* sim/src/pthread/thread.c: pthread_create and the rest of a thread's life.
 *
 * A pthread_t is the thread's number in creation order (1 is main), an
 * index into the run's table, so it means the same in every run of a
 * seed; the runtime's own thread id is mapped to it when the thread first
 * runs. Thread-specific data, once and join-with-timeout live here too. */
#include "spt.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim_assert.h"

/* ---- The table ------------------------------------------------------------ */

static pl__spt_thread *thread_new(pl__spt_run *r, void *(*fn)(void *), void *arg)
{
    if (r->threads_len == r->threads_cap) {
        uint32_t cap = r->threads_cap ? 2 * r->threads_cap : 8;
        pl__spt_thread **t = realloc(r->threads, cap * sizeof *t);
        if (t == NULL) {
            return NULL;
        }
        r->threads = t;
        r->threads_cap = cap;
    }
    pl__spt_thread *t = calloc(1, sizeof *t);
    if (t == NULL) {
        return NULL;
    }
    t->fn = fn;
    t->arg = arg;
    t->self = r->threads_len + 1;
    if (t->self == 1) {
        snprintf(t->name, sizeof t->name, "main");
    } else {
        snprintf(t->name, sizeof t->name, "thread-%u", (t->self - 1) % 100000000u);
    }
    r->threads[r->threads_len++] = t;
    return t;
}

static pl__spt_thread *thread_of(pl__spt_run *r, pthread_t id)
{
    return id >= 1 && id <= r->threads_len ? r->threads[id - 1] : NULL;
}

static bool map_tid(pl__spt_run *r, uint32_t tid, uint32_t self)
{
    if (tid >= r->by_tid_cap) {
        uint32_t cap = r->by_tid_cap ? r->by_tid_cap : 8;
        while (cap <= tid) {
            cap *= 2;
        }
        uint32_t *m = realloc(r->by_tid, cap * sizeof *m);
        if (m == NULL) {
            return false;
        }
        memset(m + r->by_tid_cap, 0, (cap - r->by_tid_cap) * sizeof *m);
        r->by_tid = m;
        r->by_tid_cap = cap;
    }
    r->by_tid[tid] = self;
    return true;
}

uint32_t pl__spt_self_id(pl__spt_run *r)
{
    uint32_t tid = pl_thread_id();
    return tid < r->by_tid_cap ? r->by_tid[tid] : 0;
}

pl__spt_thread *pl__spt_self(pl__spt_run *r)
{
    return thread_of(r, pl__spt_self_id(r));
}

void pl__spt_threads_free(pl__spt_run *r)
{
    for (uint32_t i = 0; i < r->threads_len; i++) {
        free(r->threads[i]->values);
        free(r->threads[i]);
    }
    free(r->threads);
    free(r->by_tid);
    r->threads = NULL;
    r->by_tid = NULL;
    r->threads_len = r->threads_cap = r->by_tid_cap = 0;
}

/* ---- Start and end -------------------------------------------------------- */

/* POSIX's PTHREAD_DESTRUCTOR_ITERATIONS rounds over the keys. */
static void run_destructors(pl__spt_run *r, pl__spt_thread *t)
{
    for (int round = 0; round < 4; round++) {
        bool any = false;
        for (uint32_t k = 0; k < t->values_len && k < r->keys_len; k++) {
            void *v = t->values[k];
            if (v != NULL && r->keys[k].used && r->keys[k].destructor != NULL) {
                t->values[k] = NULL;
                r->keys[k].destructor(v);
                any = true;
            }
        }
        if (!any) {
            return;
        }
    }
}

void pl__spt_thread_ending(pl__spt_run *r, pl__spt_thread *t, void *ret)
{
    run_destructors(r, t);
    t->ret = ret;
    pl_thread_mutex_lock(&r->sys.lock);
    t->done = true;
    PL__SIM_ASSERT(r->live > 0);
    r->live--;
    pl_thread_cond_broadcast(&r->sys.cv);
    pl_thread_mutex_unlock(&r->sys.lock);
    if (r->live == 0) {
        /* main called pthread_exit and this was the last thread: the
         * process exits with status 0. */
        pl__spt_exit(r, 0, false);
    }
}

static void *trampoline(void *arg)
{
    pl__spt_thread *t = arg;
    pl__spt_run *r = pl__spt_current();
    if (!map_tid(r, pl_thread_id(), t->self)) {
        pl__spt_fail(r, "pollen: out of memory starting %s", t->name);
    }
    void *ret = t->fn(t->arg);
    pl__spt_stop_if_over(r);
    pl__spt_thread_ending(r, t, ret);
    return ret;
}

int pl_sim_pthread_user_main(int argc, char **argv, char **envp);

static void *main_body(void *arg)
{
    pl__spt_run *r = arg;
    char *argv[] = {r->argv0, NULL};
    char *envp[] = {NULL};
    int status = pl_sim_pthread_user_main(1, argv, envp);
    pl__spt_stop_if_over(r);
    pl__spt_exit(r, status, false);
    return NULL;
}

static void *main_trampoline(void *arg)
{
    pl__spt_thread *t = arg;
    pl__spt_run *r = pl__spt_current();
    if (!map_tid(r, pl_thread_id(), t->self)) {
        pl__spt_fail(r, "pollen: out of memory starting main");
    }
    return t->fn(t->arg);
}

int pl__spt_start_main(pl__spt_run *r)
{
    pl__spt_thread *t = thread_new(r, main_body, r);
    if (t == NULL) {
        return PL_ENOMEM;
    }
    r->live = 1;
    int rc = pl_thread_spawn(&t->handle, "main()", main_trampoline, t);
    if (rc != 0) {
        return rc;
    }
    /* Nobody joins main: it ends the program (or, after pthread_exit,
     * the last thread does). */
    t->detached = true;
    rc = pl_thread_detach(t->handle);
    t->handle = NULL;
    return rc;
}

int pl_sim_pthread_create(pthread_t *restrict out, const pthread_attr_t *restrict attr,
                          void *(*fn)(void *), void *restrict arg)
{
    pl__spt_run *r = pl__spt_need("pthread_create");
    int detach = PTHREAD_CREATE_JOINABLE;
    if (attr != NULL && pthread_attr_getdetachstate(attr, &detach) != 0) {
        return EINVAL;
    }
    pl__spt_thread *t = thread_new(r, fn, arg);
    if (t == NULL) {
        return EAGAIN;
    }
    *out = t->self;
    r->live++;
    int rc = pl_thread_spawn_at(&t->handle, t->name, trampoline, t, __FILE__, __LINE__,
                                "pthread_create");
    if (rc != 0) {
        r->live--;
        t->done = true;
        return rc == PL_ENOMEM ? EAGAIN : -rc;
    }
    if (detach == PTHREAD_CREATE_DETACHED) {
        t->detached = true;
        pl_thread_detach(t->handle);
        t->handle = NULL;
    }
    pl__spt_stop_if_over(r);
    return 0;
}

static int join_checks(pl__spt_run *r, pl__spt_thread *t)
{
    if (t == NULL) {
        return ESRCH;
    }
    if (t->self == pl__spt_self_id(r)) {
        return EDEADLK;
    }
    if (t->detached || t->joined || t->handle == NULL) {
        return EINVAL;
    }
    return 0;
}

static int join_now(pl__spt_run *r, pl__spt_thread *t, void **ret)
{
    t->joined = true;
    void *v = NULL;
    int rc = pl_thread_join_at(t->handle, &v, __FILE__, __LINE__, "pthread_join");
    pl__spt_stop_if_over(r);
    if (rc != 0) {
        return -rc;
    }
    t->handle = NULL;
    if (ret != NULL) {
        *ret = v;
    }
    return 0;
}

int pl_sim_pthread_join(pthread_t id, void **ret)
{
    pl__spt_run *r = pl__spt_need("pthread_join");
    pl__spt_thread *t = thread_of(r, id);
    int rc = join_checks(r, t);
    return rc != 0 ? rc : join_now(r, t, ret);
}

int pl_sim_pthread_tryjoin_np(pthread_t id, void **ret)
{
    pl__spt_run *r = pl__spt_need("pthread_tryjoin_np");
    pl__spt_thread *t = thread_of(r, id);
    int rc = join_checks(r, t);
    if (rc != 0) {
        return rc;
    }
    PL_SCHED_POINT();
    pl__spt_stop_if_over(r);
    return t->done ? join_now(r, t, ret) : EBUSY;
}

int pl_sim_pthread_timedjoin_np(pthread_t id, void **ret, const struct timespec *abstime)
{
    pl__spt_run *r = pl__spt_need("pthread_timedjoin_np");
    pl__spt_thread *t = thread_of(r, id);
    int rc = join_checks(r, t);
    if (rc != 0) {
        return rc;
    }
    if (abstime != NULL && !pl__spt_timespec_valid(abstime)) {
        return EINVAL;
    }
    pl_time deadline = abstime != NULL ? pl__spt_deadline(CLOCK_REALTIME, abstime) : PL_TIME_NEVER;
    pl_thread_mutex_lock(&r->sys.lock);
    int w = 0;
    while (!t->done && w == 0) {
        w = pl_thread_cond_wait_until(&r->sys.cv, &r->sys.lock, deadline);
    }
    bool done = t->done;
    pl_thread_mutex_unlock(&r->sys.lock);
    pl__spt_stop_if_over(r);
    return done ? join_now(r, t, ret) : ETIMEDOUT;
}

int pl_sim_pthread_detach(pthread_t id)
{
    pl__spt_run *r = pl__spt_need("pthread_detach");
    pl__spt_thread *t = thread_of(r, id);
    if (t == NULL) {
        return ESRCH;
    }
    if (t->detached || t->joined || t->handle == NULL) {
        return EINVAL;
    }
    t->detached = true;
    pl_thread_detach(t->handle);
    t->handle = NULL;
    return 0;
}

void pl_sim_pthread_exit(void *ret)
{
    pl__spt_run *r = pl__spt_need("pthread_exit");
    pl__spt_stop_if_over(r);
    pl__spt_thread *t = pl__spt_self(r);
    PL__SIM_ASSERT(t != NULL);
    pl__spt_thread_ending(r, t, ret);
    pl_thread_exit(ret);
}

pthread_t pl_sim_pthread_self(void)
{
    return pl__spt_self_id(pl__spt_need("pthread_self"));
}

int pl_sim_pthread_equal(pthread_t a, pthread_t b)
{
    return a == b;
}

int pl_sim_pthread_setname_np(pthread_t id, const char *name)
{
    pl__spt_thread *t = thread_of(pl__spt_need("pthread_setname_np"), id);
    if (t == NULL) {
        return ESRCH;
    }
    if (strlen(name) >= sizeof t->name) {
        return ERANGE;
    }
    snprintf(t->name, sizeof t->name, "%s", name);
    return 0;
}

int pl_sim_pthread_getname_np(pthread_t id, char *buf, size_t len)
{
    pl__spt_thread *t = thread_of(pl__spt_need("pthread_getname_np"), id);
    if (t == NULL) {
        return ESRCH;
    }
    if (strlen(t->name) >= len) {
        return ERANGE;
    }
    snprintf(buf, len, "%s", t->name);
    return 0;
}

int pl_sim_pthread_cancel(pthread_t id)
{
    (void)id;
    pl__spt_fail(pl__spt_need("pthread_cancel"),
                 "pthread_cancel is not supported under pollen's simulator");
}

int pl_sim_pthread_kill(pthread_t id, int sig)
{
    pl__spt_run *r = pl__spt_need("pthread_kill");
    if (sig == 0) {
        return thread_of(r, id) != NULL ? 0 : ESRCH;
    }
    pl__spt_fail(r, "pthread_kill(%d) is not supported: no signals under pollen's simulator",
                 sig);
}

int pl_sim_pthread_sched_yield(void)
{
    pl__spt_run *r = pl__spt_need("sched_yield");
    pl_thread_yield();
    pl__spt_stop_if_over(r);
    return 0;
}

/* An atomic operation's point (the header's atomics), at the program's
 * own file:line. */
void pl_sim_pthread_point(const char *file, int line, const char *func, unsigned what)
{
    pl__spt_run *r = pl__spt_current();
    if (r == NULL) {
        return; /* a constructor's atomics: nothing to schedule */
    }
    pl__thread_point(file, line, func, what);
    pl__spt_stop_if_over(r);
}

/* ---- Thread-specific data --------------------------------------------------- */

int pl_sim_pthread_key_create(pthread_key_t *key, void (*destructor)(void *))
{
    pl__spt_run *r = pl__spt_need("pthread_key_create");
    if (r->keys_len == r->keys_cap) {
        if (r->keys_cap >= PTHREAD_KEYS_MAX) {
            return EAGAIN;
        }
        uint32_t cap = r->keys_cap ? 2 * r->keys_cap : 8;
        pl__spt_key *k = realloc(r->keys, cap * sizeof *k);
        if (k == NULL) {
            return ENOMEM;
        }
        r->keys = k;
        r->keys_cap = cap;
    }
    r->keys[r->keys_len] = (pl__spt_key){true, destructor};
    *key = r->keys_len++;
    return 0;
}

int pl_sim_pthread_key_delete(pthread_key_t key)
{
    pl__spt_run *r = pl__spt_need("pthread_key_delete");
    if (key >= r->keys_len || !r->keys[key].used) {
        return EINVAL;
    }
    r->keys[key].used = false;
    /* Keys are never reused, so nothing stale is read through a new one. */
    return 0;
}

void *pl_sim_pthread_getspecific(pthread_key_t key)
{
    pl__spt_run *r = pl__spt_need("pthread_getspecific");
    pl__spt_thread *t = pl__spt_self(r);
    if (t == NULL || key >= t->values_len || key >= r->keys_len || !r->keys[key].used) {
        return NULL;
    }
    return t->values[key];
}

int pl_sim_pthread_setspecific(pthread_key_t key, const void *value)
{
    pl__spt_run *r = pl__spt_need("pthread_setspecific");
    pl__spt_thread *t = pl__spt_self(r);
    if (t == NULL || key >= r->keys_len || !r->keys[key].used) {
        return EINVAL;
    }
    if (key >= t->values_len) {
        uint32_t len = r->keys_len;
        void **v = realloc(t->values, len * sizeof *v);
        if (v == NULL) {
            return ENOMEM;
        }
        memset(v + t->values_len, 0, (len - t->values_len) * sizeof *v);
        t->values = v;
        t->values_len = len;
    }
    t->values[key] = (void *)(uintptr_t)value;
    return 0;
}

/* ---- Once ----------------------------------------------------------------------
 * The control word holds the entry's index + 1 under a 7-bit tag of the
 * run; the entry's address (compared for equality) tells a reused word
 * from its own. */

static pl__spt_once *once_entry(pl__spt_run *r, pthread_once_t *o)
{
    uint32_t v = (uint32_t)*o;
    uint32_t tag = (uint32_t)(r->number & 0x7f) + 1;
    uint32_t i = (v & 0xffffffu) - 1;
    if (v != 0 && v >> 24 == tag && i < r->onces_len && r->onces[i].addr == o) {
        return &r->onces[i];
    }
    if (r->onces_len == r->onces_cap) {
        uint32_t cap = r->onces_cap ? 2 * r->onces_cap : 8;
        pl__spt_once *n = realloc(r->onces, cap * sizeof *n);
        if (n == NULL) {
            return NULL;
        }
        r->onces = n;
        r->onces_cap = cap;
    }
    i = r->onces_len++;
    r->onces[i] = (pl__spt_once){o, 0};
    *o = (pthread_once_t)((tag << 24) | (i + 1));
    return &r->onces[i];
}

int pl_sim_pthread_once(pthread_once_t *o, void (*fn)(void))
{
    pl__spt_run *r = pl__spt_need("pthread_once");
    pl_thread_mutex_lock(&r->sys.lock);
    pl__spt_once *e = once_entry(r, o);
    if (e == NULL) {
        pl_thread_mutex_unlock(&r->sys.lock);
        return ENOMEM;
    }
    uint32_t i = (uint32_t)(e - r->onces);
    while (r->onces[i].state == 1) {
        pl_thread_cond_wait(&r->sys.cv, &r->sys.lock);
    }
    bool run_it = r->onces[i].state == 0;
    if (run_it) {
        r->onces[i].state = 1;
    }
    pl_thread_mutex_unlock(&r->sys.lock);
    pl__spt_stop_if_over(r);
    if (run_it) {
        fn();
        pl_thread_mutex_lock(&r->sys.lock);
        r->onces[i].state = 2;
        pl_thread_cond_broadcast(&r->sys.cv);
        pl_thread_mutex_unlock(&r->sys.lock);
        pl__spt_stop_if_over(r);
    }
    return 0;
}
