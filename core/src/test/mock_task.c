/* core/src/test/mock_task.c: mock tasks and their counting waker.
 *
 * A mock task is a real task of the test's executor whose future (the
 * driver) polls the user's future only when pl_test_poll asks, with the
 * mock's own waker in the context instead of the task's: wakes are
 * counted, never acted on, so the test decides when the next poll comes
 * (tokio-test's task::spawn). The context keeps the real executor and
 * task, so timers, channels and I/O register as they would in a run.
 */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "mock.h"

struct pl_test_task {
    pl_test_task *next; /* in the pl_test's list */
    pl_test *t;
    pl_future *fut;        /* the user's, borrowed */
    pl_waker driver_waker; /* wakes the driver for a requested poll */
    bool requested;        /* pl_test_poll is waiting for a poll */
    bool polled;
    pl_poll_result last;
    bool dropped;   /* the user's future was dropped */
    uint32_t wakes; /* since the last poll */
    uint32_t refs;  /* clones of the counting waker alive */
};

/* ---- The counting waker --------------------------------------------------- */

static void count_clone(const pl_waker *w, pl_waker *out)
{
    ((pl_test_task *)w->data)->refs++;
    *out = *w;
}

static void count_drop(pl_waker w)
{
    pl_test_task *tt = w.data;
    PL_ASSERT(tt->refs > 0);
    tt->refs--;
}

static void count_wake_by_ref(const pl_waker *w) { ((pl_test_task *)w->data)->wakes++; }

static void count_wake(pl_waker w)
{
    count_wake_by_ref(&w);
    count_drop(w);
}

static const pl_waker_vtable count_vtable = {count_clone, count_wake, count_wake_by_ref,
                                             count_drop};

/* ---- The driver task ---------------------------------------------------- */

typedef struct driver {
    pl_future base;
    pl_test_task *tt;
} driver;

static pl_poll_result driver_poll(pl_future *f, pl_context *cx)
{
    pl_test_task *tt = ((driver *)f)->tt;
    pl_waker_slot_set(&tt->driver_waker, &cx->waker);
    if (!tt->requested) {
        /* Woken through the task itself (a remote waker wakes the task,
         * not the context's waker): a wake like any other. */
        tt->wakes++;
        return PL_PENDING;
    }
    tt->requested = false;
    tt->polled = true;
    tt->wakes = 0;
    pl_context inner = *cx;
    inner.waker = (pl_waker){&count_vtable, tt, 0, 0};
    tt->last = pl_poll(tt->fut, &inner);
    if (tt->last == PL_READY) {
        pl_drop(tt->fut);
        tt->dropped = true;
        pl_waker_slot_clear(&tt->driver_waker);
        return PL_READY;
    }
    return PL_PENDING;
}

static void driver_drop(pl_future *f)
{
    pl_test_task *tt = ((driver *)f)->tt;
    pl_waker_slot_clear(&tt->driver_waker);
}

static const pl_future_vtable driver_vtable = {"pl_test_task", driver_poll, driver_drop};

pl_test_task *pl_test_spawn(pl_test *t, pl_future *fut)
{
    pl_test_task *tt = calloc(1, sizeof *tt);
    if (tt == NULL) {
        return NULL;
    }
    *tt = (pl_test_task){.t = t, .fut = fut, .driver_waker = PL_WAKER_EMPTY};
    driver d = {PL_FUTURE_INIT(&driver_vtable), tt};
    if (pl_spawn(t->ex, &d.base, sizeof d, fut->vtable->name, NULL) != 0) {
        free(tt);
        return NULL;
    }
    tt->next = t->tasks;
    t->tasks = tt;
    /* The spawn made the driver runnable: let it store its waker now,
     * so the first pl_test_poll is not special. */
    pl_test_settle(t);
    tt->wakes = 0;
    return tt;
}

pl_poll_result pl_test_poll(pl_test_task *tt)
{
    PL_ASSERT(!tt->dropped); /* polled after READY or after pl_test_cancel */
    tt->requested = true;
    tt->polled = false;
    pl_waker_slot_wake(&tt->driver_waker);
    pl_test_settle(tt->t);
    PL_ASSERT(tt->polled);
    return tt->last;
}

uint32_t pl_test_wakes(const pl_test_task *tt) { return tt->wakes; }

uint32_t pl_test_waker_refs(const pl_test_task *tt) { return tt->refs; }

void pl_test_cancel(pl_test_task *tt)
{
    if (!tt->dropped) {
        tt->dropped = true;
        pl_drop(tt->fut);
    }
}

void pl__test_expect(pl_poll_result got, pl_poll_result want, const char *expr, const char *file,
                     int line)
{
    if (got == want) {
        return;
    }
    fprintf(stderr, "%s:%d: expected %s to be %s, got %s\n", file, line, expr,
            want == PL_READY ? "READY" : "PENDING", got == PL_READY ? "READY" : "PENDING");
    fflush(stderr);
    abort();
}

void pl__test_tasks_drop(pl_test *t)
{
    for (pl_test_task *tt = t->tasks; tt != NULL; tt = tt->next) {
        pl_test_cancel(tt);
    }
}

void pl__test_tasks_free(pl_test *t)
{
    while (t->tasks != NULL) {
        pl_test_task *next = t->tasks->next;
        free(t->tasks);
        t->tasks = next;
    }
}
