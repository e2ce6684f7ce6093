/* Zoo: a woken waiter dropped before it runs takes its permit with it.
 *
 * The primitive: `conn_pool`, a hand-written semaphore guarding one
 * database connection, with direct handoff: pool_release gives the
 * permit straight to the longest waiter (marks it granted, wakes it)
 * instead of putting it back. Three clients each acquire, use the
 * connection for 1 ms and release. Client #2 is impatient: the pool's
 * owner gives up on it at 1 ms and aborts it (pl_task_cancel), then takes
 * the connection back itself to close the pool. Every client is marked
 * abortable (pl_task_set_abortable), so with the `cancel` decision on the
 * simulator also cancels clients that were woken but not yet polled.
 *
 * BUG (bug_abort_permit): pool_acquire's drop unlinks a waiting acquire,
 * but an acquire that was already granted and not yet polled ("not
 * waiting any more") is dropped as is: the permit it was handed vanishes.
 * This happens when the abort lands between client #1's release (which
 * grants client #2 and wakes it) and client #2's next poll. Production's
 * order runs the owner first at 1 ms (its timer was armed first) and
 * aborts a client still waiting, which is handled; another timer or
 * scheduling order aborts the granted one.
 * Why it is a bug: with direct handoff, a granted waiter owns the permit
 * from the moment it is woken. Cancellation can come at any await, so
 * the drop of every state that owns something must give it back.
 * Finding: deadlock. Client #3 and the owner wait forever: their wakers
 * are stored in the pool's queue, the pool has no free permit, and no
 * probe progresses. (With the `cancel` decision on, the simulator's own
 * cancellations of woken clients lose the permit the same way.)
 * FIX (fix_abort_permit): the drop of a granted acquire calls
 * pool_release, handing the permit to the next waiter (or freeing it),
 * which is what pl_semaphore does.
 */
#include "zoo.h"

enum { CLIENTS = 3, IMPATIENT = 1 /* index of client #2 */ };

typedef struct conn_pool {
    size_t free;
    zoo_queue waiters; /* pool_acquire nodes, FIFO */
    bool fixed;        /* which drop this scenario uses */
} conn_pool;

typedef struct pool_state {
    conn_pool pool;
    pl_task *impatient;
    bool closed;
    int served;
    int aborted;
} pool_state;

/* ---- pool_acquire ------------------------------------------------------ */

enum { ACQ_INIT = 0, ACQ_WAITING = 1, ACQ_GRANTED = 2, ACQ_DONE = 3 };

typedef struct pool_acquire {
    pl_future base; /* base.resume holds ACQ_* */
    conn_pool *pool;
    zoo_node node;
    pl_waker waker;
} pool_acquire;

static void pool_release(conn_pool *p)
{
    zoo_node *n = zoo_queue_pop(&p->waiters);
    if (n == NULL) {
        p->free++;
        return;
    }
    pool_acquire *a = ZOO_CONTAINER_OF(n, pool_acquire, node);
    a->base.resume = ACQ_GRANTED; /* the permit is a's from now on */
    pl_waker_wake(pl_waker_slot_take(&a->waker));
}

static pl_poll_result pool_acquire_poll(pl_future *f, pl_context *cx)
{
    pool_acquire *self = (pool_acquire *)f;
    switch (self->base.resume) {
    case ACQ_INIT:
        if (self->pool->free > 0 && self->pool->waiters.head == NULL) {
            self->pool->free--;
            self->base.resume = ACQ_DONE;
            return PL_READY;
        }
        zoo_queue_push(&self->pool->waiters, &self->node);
        self->base.resume = ACQ_WAITING;
        pl_waker_slot_set(&self->waker, &cx->waker);
        return PL_PENDING;
    case ACQ_WAITING:
        pl_waker_slot_set(&self->waker, &cx->waker);
        return PL_PENDING;
    default: /* ACQ_GRANTED */
        self->base.resume = ACQ_DONE;
        return PL_READY;
    }
}

static void pool_acquire_drop(pl_future *f)
{
    pool_acquire *self = (pool_acquire *)f;
    if (self->base.resume == ACQ_WAITING) {
        zoo_queue_remove(&self->pool->waiters, &self->node);
        pl_waker_slot_clear(&self->waker);
    } else if (self->base.resume == ACQ_GRANTED && self->pool->fixed) {
        pool_release(self->pool); /* FIX: pass the handed-over permit on */
    }
    /* BUG (when !fixed): a granted acquire drops its permit on the floor. */
    self->base.resume = ACQ_DONE;
}

static const pl_future_vtable pool_acquire_vt = {"pool_acquire", pool_acquire_poll,
                                                 pool_acquire_drop};

/* ---- Client: acquire, use for 1 ms, release --------------------------- */

typedef struct client {
    pl_future base;
    pool_state *st;
    bool holding;
    pool_acquire acq;
    pl_sleep use;
} client;

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *self = (client *)f;
    PL_ASYNC_BEGIN(self);
    self->acq = (pool_acquire){.base = PL_FUTURE_INIT(&pool_acquire_vt), .pool = &self->st->pool,
                               .waker = PL_WAKER_EMPTY};
    PL_AWAIT(cx, &self->acq);
    self->holding = true;
    self->use = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->use);
    self->st->served++;
    self->holding = false;
    pool_release(&self->st->pool);
    PL_ASYNC_END;
}

/* Cancelled: give back what this client holds, at whatever await. */
static void client_drop(pl_future *f)
{
    client *self = (client *)f;
    pl_drop_child(&self->acq.base);
    pl_drop_child(&self->use.base);
    if (self->holding) {
        self->holding = false;
        pool_release(&self->st->pool);
    }
    if (!pl_future_is_done(f)) {
        self->st->aborted++;
    }
}

static const pl_future_vtable client_vt = {"client", client_poll, client_drop};

/* ---- The owner: gives up on client #2 at 1 ms, then closes the pool ---- */

typedef struct owner {
    pl_future base;
    pool_state *st;
    pl_sleep patience;
    pool_acquire last; /* takes the connection back to close it */
} owner;

static pl_poll_result owner_poll(pl_future *f, pl_context *cx)
{
    owner *self = (owner *)f;
    PL_ASYNC_BEGIN(self);
    self->patience = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->patience);
    pl_task_cancel(self->st->impatient); /* no-op if it already finished */
    pl_task_release(self->st->impatient);
    self->st->impatient = NULL;
    self->last = (pool_acquire){.base = PL_FUTURE_INIT(&pool_acquire_vt),
                                .pool = &self->st->pool, .waker = PL_WAKER_EMPTY};
    PL_AWAIT(cx, &self->last);
    self->st->closed = true;
    pool_release(&self->st->pool);
    PL_ASYNC_END;
}

static void owner_drop(pl_future *f)
{
    owner *self = (owner *)f;
    pl_drop_child(&self->patience.base);
    pl_drop_child(&self->last.base);
    pl_task_release(self->st->impatient); /* cancelled before it ran */
    self->st->impatient = NULL;
}

static const pl_future_vtable owner_vt = {"owner", owner_poll, owner_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int spawn_clients(pl_executor *ex, pool_state *st)
{
    for (int i = 0; i < CLIENTS; i++) {
        client c = {.base = PL_FUTURE_INIT(&client_vt), .st = st};
        pl_task *t;
        int rc = PL_SPAWN(ex, c, "client", &t);
        if (rc != 0) {
            return rc;
        }
        pl_task_set_abortable(t, true);
        if (i == IMPATIENT) {
            st->impatient = t;
        } else {
            pl_task_release(t);
        }
    }
    return 0;
}

static int setup(pl_executor *ex, pool_state *st, bool fixed)
{
    st->pool.free = 1;
    st->pool.fixed = fixed;
    owner o = {.base = PL_FUTURE_INIT(&owner_vt), .st = st};
    int rc = PL_SPAWN(ex, o, "owner", NULL);
    return rc != 0 ? rc : spawn_clients(ex, st);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    pool_state *st = state;
    if (st->pool.free != 1 || st->pool.waiters.head != NULL) {
        return pl_check_fail(msg, len, "the pool ends with %zu free permit(s), want 1",
                        st->pool.free);
    }
    if (!st->closed || st->served + st->aborted != CLIENTS) {
        return pl_check_fail(msg, len, "closed=%d, %d clients served and %d aborted, want 1, %d in all",
                        st->closed, st->served, st->aborted, CLIENTS);
    }
    return 0;
}

PL_SCENARIO(bug_abort_permit_sc, .name = "bug_abort_permit",
            .summary = "granted pool waiter aborted before it runs loses the permit (deadlock)",
            .state_size = sizeof(pool_state), .setup = setup_buggy, .check = check,
            .expect = "deadlock");

PL_SCENARIO(fix_abort_permit_sc, .name = "fix_abort_permit",
            .summary = "a dropped granted waiter passes its permit on",
            .state_size = sizeof(pool_state), .setup = setup_fixed, .check = check);
