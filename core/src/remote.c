/* core/src/remote.c: remote wakers and their delivery on the executor thread.
 *
 * Any thread may wake or drop a remote waker: it is pushed on a locked
 * LIFO list and the system's remote_wake makes the executor's wait()
 * return; wait() then calls pl_executor_drain_remote, which delivers them
 * in push order on the executor thread. This is the only lock in core.
 */
#include <errno.h>

#include "executor_internal.h"
#include "pollen/thread.h"

/* pthread_mutex_init may fail for lack of resources (EAGAIN, ENOMEM);
 * an executor without its remote-wake lock would race on first use. */
int pl__remote_init(pl_executor *ex)
{
    int err = pthread_mutex_init(&ex->remote_lock, NULL);
    if (err == 0) {
        return 0;
    }
    return err == ENOMEM ? PL_ENOMEM : PL_EAGAIN;
}

void pl__remote_fini(pl_executor *ex) { pthread_mutex_destroy(&ex->remote_lock); }

int pl_remote_waker_create(pl_context *cx, pl_remote_waker **out)
{
    pl_executor *ex = cx->ex;
    pl_remote_waker *rw = pl_alloc(ex, sizeof *rw);
    if (rw == NULL) {
        return PL_ENOMEM;
    }
    pl_task *t = cx->task;
    rw->next = NULL;
    rw->task = pl_task_ref(t);
    rw->gen = cx->waker.gen;
    rw->wake = true;
    ex->remote_outstanding++;
    /* To the oracles a remote waker is one more live clone of the waker. */
    if (pl__counts_clones(ex)) {
        pl__task_count_clone(ex, t, rw->gen);
    }
    *out = rw;
    return 0;
}

static void remote_push(pl_remote_waker *rw, bool wake)
{
    /* A schedule point (pollen/thread.h): under the simulator another
     * thread may run between the pusher's work and its wake. */
    PL__THREAD_POINT(PL_THREAD_POINT_WRITE);
    pl_executor *ex = rw->task->ex;
    rw->wake = wake;
    pthread_mutex_lock(&ex->remote_lock);
    rw->next = ex->remote_head;
    ex->remote_head = rw;
    pthread_mutex_unlock(&ex->remote_lock);
    ex->system.vtable->remote_wake(ex->system.self);
}

void pl_remote_waker_wake(pl_remote_waker *rw) { remote_push(rw, true); }
void pl_remote_waker_drop(pl_remote_waker *rw) { remote_push(rw, false); }

static size_t deliver_remote(pl_executor *ex, pl_remote_waker *list)
{
    /* The list is LIFO; reverse it so wakes are delivered in push order. */
    pl_remote_waker *fifo = NULL;
    while (list != NULL) {
        pl_remote_waker *next = list->next;
        list->next = fifo;
        fifo = list;
        list = next;
    }
    size_t n = 0;
    while (fifo != NULL) {
        pl_remote_waker *rw = fifo;
        fifo = rw->next;
        if (rw->wake) {
            pl__task_wake(rw->task, rw->gen, false);
        }
        if (pl__counts_clones(ex)) {
            count_drop(ex, rw->task, rw->gen);
        }
        task_release(rw->task);
        pl_free(ex, rw, sizeof *rw);
        PL_ASSERT(ex->remote_outstanding > 0);
        ex->remote_outstanding--;
        n++;
    }
    return n;
}

size_t pl_executor_drain_remote(pl_executor *ex)
{
    pthread_mutex_lock(&ex->remote_lock);
    pl_remote_waker *list = ex->remote_head;
    ex->remote_head = NULL;
    pthread_mutex_unlock(&ex->remote_lock);
    return deliver_remote(ex, list);
}

