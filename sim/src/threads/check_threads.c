/* sim/src/threads/check_threads.c: the findings about simulated threads.
 *
 * A deadlock names every thread that is not done (nor killed by its
 * node's crash): where it was spawned, what it waits for and where (a
 * paused node's thread, a mutex a killed thread held), and the mutexes
 * it holds, beside the parked tasks the executor's own oracles list.
 * Misuse (unlocking a mutex one does not hold) and a thread used as
 * another's executor thread are assertion findings; a thread that spins
 * through points while no thread makes progress is a livelock. Reads the
 * tables only: the scheduler (sched.c) calls in here, never the other
 * way.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../sim_internal.h"
#include "threads.h"

static const char *wait_name(uint8_t w)
{
    switch (w) {
    case PL__WAIT_MUTEX:
        return "mutex";
    case PL__WAIT_COND:
        return "condition variable";
    case PL__WAIT_SEM:
        return "semaphore";
    case PL__WAIT_JOIN:
        return "join of thread";
    case PL__WAIT_SLEEP:
        return "sleep";
    case PL__WAIT_EXECUTOR:
        return "its executor's wait (a remote wake or a timer)";
    default:
        return "?";
    }
}

static const char *kind_name(uint8_t k)
{
    return k == PL__TOBJ_MUTEX ? "mutex" : k == PL__TOBJ_COND ? "condition variable" : "semaphore";
}

static void put(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used >= len) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n > 0) {
        *used += (size_t)n < len - *used ? (size_t)n : len - *used - 1;
    }
}

static void put_site(char *buf, size_t len, size_t *used, const pl_thread_site *site)
{
    if (site->file == NULL) {
        return;
    }
    put(buf, len, used, " at %s:%d in %s", pl__site_base(site->file), site->line,
        site->func != NULL ? site->func : "?");
}

static void describe_one(const pl__sim *s, const pl__thread_rec *r, char *buf, size_t len,
                         size_t *used)
{
    const pl__threads *th = &s->threads;
    put(buf, len, used, "\n  thread '%s' (#%u", r->name, r->id);
    if (r->spawned.file != NULL) {
        put(buf, len, used, ", spawned at %s:%d in %s", pl__site_base(r->spawned.file),
            r->spawned.line, r->spawned.func != NULL ? r->spawned.func : "?");
    }
    put(buf, len, used, "): ");
    if (r->state == PL__TH_BLOCKED) {
        put(buf, len, used, "blocked on %s", wait_name(r->waits));
        if (r->waits == PL__WAIT_JOIN) {
            put(buf, len, used, " '%s'", th->t[r->obj]->name);
        } else if (r->waits != PL__WAIT_SLEEP && r->obj != 0) {
            put(buf, len, used, " #%u", r->obj);
            uint32_t owner = r->waits == PL__WAIT_MUTEX ? th->objs[r->obj - 1].owner : 0;
            if (owner != 0 && th->t[owner - 1]->state == PL__TH_KILLED) {
                put(buf, len, used, " (held by '%s', killed by its node's crash)",
                    th->t[owner - 1]->name);
            }
        }
        if (r->wake_at != PL_TIME_NEVER) {
            put(buf, len, used, " until %lld ns", (long long)r->wake_at);
        }
    } else if (r->state == PL__TH_IDLE) {
        put(buf, len, used, "runs the executor, waiting for a wake");
    } else if (r->yielded) {
        put(buf, len, used, "spinning with pl_thread_yield");
    } else {
        put(buf, len, used, "runnable");
    }
    if (r->state == PL__TH_BLOCKED && r->waits == PL__WAIT_EXECUTOR && r->cur_ex != NULL) {
        /* Switched out inside its pl_run: cur_ex is that executor. */
        size_t parked = pl_executor_live_tasks(r->cur_ex) - pl__executor_runnable_count(r->cur_ex);
        put(buf, len, used, ", %zu task%s parked in it (not traced one by one)", parked,
            parked == 1 ? "" : "s");
    }
    if (r->state == PL__TH_BLOCKED && r->waits == PL__WAIT_EXECUTOR && r->at.file != NULL) {
        /* The wait is pollen's; where the thread's own code was last is
         * what names the park. */
        put(buf, len, used, ", after its latest point");
    }
    if (r->node != 0 && s->nemesis.paused_until[r->node] != 0) {
        put(buf, len, used, ", its node paused");
    }
    put_site(buf, len, used, &r->at);
    bool first = true;
    for (uint32_t o = 0; o < th->objs_len; o++) {
        if (th->objs[o].kind == PL__TOBJ_MUTEX && th->objs[o].owner == r->id + 1) {
            put(buf, len, used, "%s mutex #%u", first ? ", holding" : ",", o + 1);
            first = false;
        }
    }
}

void pl__threads_describe(const pl__sim *s, char *buf, size_t len, size_t *used)
{
    const pl__threads *th = &s->threads;
    for (uint32_t i = 0; i < th->len; i++) {
        const pl__thread_rec *r = th->t[i];
        /* Thread 0 is the executor's: listed only when it is stuck itself. */
        if (r->state != PL__TH_DONE && r->state != PL__TH_STOPPED &&
            r->state != PL__TH_KILLED && (i != 0 || r->state == PL__TH_BLOCKED)) {
            describe_one(s, r, buf, len, used);
        }
    }
}

void pl__threads_annotate(pl__sim *s)
{
    if (s->threads.deadlocked) {
        return; /* the finding is the threads' own: it lists them already */
    }
    char list[900] = "";
    size_t n = 0;
    pl__threads_describe(s, list, sizeof list, &n);
    if (n == 0) {
        return; /* every thread ended: the tasks alone are stuck */
    }
    size_t used = strlen(s->finding.message);
    char *buf = s->finding.message;
    size_t len = sizeof s->finding.message;
    put(buf, len, &used, "\n  and the threads:%s", list);
}

void pl__threads_deadlock(pl__sim *s, const char *where)
{
    char list[900] = "";
    size_t used = 0;
    pl__threads_describe(s, list, sizeof list, &used);
    s->threads.deadlocked = true;
    pl__sim_finding(s, PL_FINDING_DEADLOCK, pl__sim_polled(s),
                    "every thread is blocked %s and nothing can wake one:%s", where, list);
}

void pl__threads_livelock(pl__sim *s)
{
    const pl__thread_rec *me = s->threads.t[s->threads.current];
    char at[200] = "";
    size_t used = 0;
    put_site(at, sizeof at, &used, &me->at);
    pl__sim_finding(s, PL_FINDING_LIVELOCK, pl__sim_polled(s),
                    "thread '%s' (#%u) spins: %u schedule points in a row%s with no store, "
                    "release or clock move by any thread (a spin-wait without "
                    "pl_thread_yield, or waiting for something no one will do)",
                    me->name, me->id, PL__THREAD_SPIN_MAX, at);
}

void pl__threads_misuse(pl__sim *s, const char *what, uint32_t obj)
{
    const pl__threads *th = &s->threads;
    const pl__thread_rec *me = th->len > 0 ? th->t[th->current] : NULL;
    char at[200] = "";
    size_t used = 0;
    if (me != NULL) {
        put_site(at, sizeof at, &used, &me->at);
    }
    char holder[96] = "";
    if (obj != 0 && obj <= th->objs_len && th->objs[obj - 1].kind == PL__TOBJ_MUTEX) {
        uint32_t owner = th->objs[obj - 1].owner;
        snprintf(holder, sizeof holder, " (held by %s%s%s)", owner != 0 ? "'" : "",
                 owner != 0 ? th->t[owner - 1]->name : "no one", owner != 0 ? "'" : "");
    }
    char subject[64] = "";
    if (obj != 0 && obj <= th->objs_len) {
        snprintf(subject, sizeof subject, ": %s #%u", kind_name(th->objs[obj - 1].kind), obj);
    }
    pl__sim_finding(s, PL_FINDING_ASSERTION, pl__sim_polled(s), "thread '%s' (#%u) %s%s%s%s",
                    me != NULL ? me->name : "main", me != NULL ? me->id : 0, what, subject,
                    holder, at);
}

void pl__threads_wrong_thread(pl__sim *s, const char *what)
{
    const pl__thread_rec *me = s->threads.t[s->threads.current];
    char at[200] = "";
    size_t used = 0;
    put_site(at, sizeof at, &used, &me->at);
    pl__sim_finding(s, PL_FINDING_ASSERTION, NULL,
                    "thread '%s' (#%u) %s: only the executor's thread (thread 0) may; another "
                    "thread wakes a task through pl_remote_waker (latest point%s)",
                    me->name, me->id, what, at[0] != '\0' ? at : ": none");
}
