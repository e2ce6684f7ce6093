/* Zoo: a pool waiter that keeps its first waker, rescued by the attempt deadline.
 *
 * The primitive: `conn_pool`, a hand-written pool of two database
 * connections. Waiters queue FIFO and keep a waker slot; pool_release
 * frees a connection and wakes the head waiter, which takes it on its
 * next poll (and wakes the next waiter if a connection is still free).
 * Four workers run three requests each. A request builds its query
 * (1 ms) while it waits for a connection: pl_join2 of the two, the wait
 * bounded by a 3 ms attempt deadline (pl_timeout), retried when it
 * expires. Then it runs the query on the connection (1 ms) and releases.
 *
 * BUG (bug_retry_stale): pool_acquire stores a waker only when its slot
 * is empty, i.e. on its first poll ("we are queued already"). When the
 * query is built the join re-polls the acquire with that poll's waker,
 * which it ignores. pollen's simulator hands every poll a fresh waker
 * identity and does not deliver wakes through superseded ones, so the
 * release's wake is dropped (the trace shows wake_stale) and the
 * connection sits idle. Nothing gets stuck: the attempt deadline's timer
 * re-polls the worker, the acquire (polled before the deadline, as
 * pl_timeout does) finds the connection free and takes it, and every
 * request is served, each a millisecond or two late.
 * Why it is a bug: a future may be polled with a different waker each
 * time (moved to another task, wrapped by a combinator that installs its
 * own waker, or simply rotated); it must store the latest one. The retry
 * deadline turns a hang into a slowdown nobody is alerted to, and hides
 * it from every oracle that waits for the executor to go quiet (a timer
 * is always armed). Without waker rotation (production's executor) the
 * bug is invisible.
 * Finding: stale_waker. At a point where nothing is runnable and only a
 * timer can fire next, a waiter is parked and its only wake since its
 * last poll came through a superseded waker. Judged only after the run,
 * the scenario's own check fails: a connection sat idle while a request
 * waited for one.
 * FIX (fix_retry_stale): pl_waker_slot_set on every poll: it keeps the
 * stored waker when it will_wake the current one and replaces it
 * otherwise.
 */
#include "zoo.h"

enum { CONNS = 2, WORKERS = 4, REQUESTS = 3 };

#define PREPARE_NS (1 * PL_MS)
#define QUERY_NS   (1 * PL_MS)
#define ATTEMPT_NS (3 * PL_MS)

typedef struct conn_pool {
    bool busy[CONNS];
    pl_time free_since_ns[CONNS];
    size_t free;
    zoo_queue waiters; /* pool_acquire nodes, FIFO */
    bool fixed;        /* which waker handling pool_acquire uses */
} conn_pool;

typedef struct pool_state {
    conn_pool pool;
    int served;
    int abandoned; /* requests of cancelled workers */
    int retries;
    pl_time idle_max_ns; /* longest a connection sat free while a request waited */
    pl_time idle_at_ns;
    int idle_conn;
} pool_state;

/* ---- pool_acquire ------------------------------------------------------ */

typedef struct pool_acquire {
    pl_future base;
    pool_state *st;
    zoo_node node;
    pl_waker waker;
    pl_time queued_ns;
    int conn; /* output: the connection taken */
} pool_acquire;

static void wake_head(conn_pool *p)
{
    if (p->waiters.head != NULL && p->free > 0) {
        pool_acquire *a = ZOO_CONTAINER_OF(p->waiters.head, pool_acquire, node);
        pl_waker_wake_by_ref(&a->waker);
    }
}

static void pool_release(pool_state *st, int conn, pl_time now)
{
    conn_pool *p = &st->pool;
    pl_always(p->busy[conn], "release of a connection not in use");
    p->busy[conn] = false;
    p->free_since_ns[conn] = now;
    p->free++;
    wake_head(p);
}

/* Takes the connection free the longest. A request that was queued
 * before it became free measures how long it sat idle meanwhile. */
static void take_conn(pool_acquire *self, pl_time now, bool waited)
{
    conn_pool *p = &self->st->pool;
    int best = -1;
    for (int i = 0; i < CONNS; i++) {
        if (!p->busy[i] && (best < 0 || p->free_since_ns[i] < p->free_since_ns[best])) {
            best = i;
        }
    }
    pl_always(best >= 0, "no free connection to take");
    if (best < 0) {
        return;
    }
    pl_time since = p->free_since_ns[best];
    since = since > self->queued_ns ? since : self->queued_ns;
    if (waited && now - since > self->st->idle_max_ns) {
        self->st->idle_max_ns = now - since;
        self->st->idle_at_ns = now;
        self->st->idle_conn = best;
    }
    p->busy[best] = true;
    p->free--;
    self->conn = best;
}

static void store_waker(pool_acquire *self, pl_context *cx)
{
    if (self->st->pool.fixed) {
        pl_waker_slot_set(&self->waker, &cx->waker); /* FIX: always the latest */
    } else if (!pl_waker_is_set(&self->waker)) {
        /* BUG: registers once; later polls' wakers are ignored. */
        self->waker = pl_waker_clone(&cx->waker);
    }
}

static pl_poll_result pool_acquire_poll(pl_future *f, pl_context *cx)
{
    pool_acquire *self = (pool_acquire *)f;
    conn_pool *p = &self->st->pool;
    pl_time now = pl_now(cx->ex);
    if (!self->node.linked) {
        if (p->free > 0 && p->waiters.head == NULL) {
            take_conn(self, now, false);
            return PL_READY;
        }
        self->queued_ns = now;
        zoo_queue_push(&p->waiters, &self->node);
    } else if (p->waiters.head == &self->node && p->free > 0) {
        zoo_queue_remove(&p->waiters, &self->node);
        pl_waker_slot_clear(&self->waker);
        take_conn(self, now, true);
        wake_head(p); /* the next waiter, if a connection is still free */
        return PL_READY;
    }
    store_waker(self, cx);
    return PL_PENDING;
}

/* Dropped when the attempt deadline expires (or the worker is
 * cancelled): leave the queue, and pass on a wake meant for us. */
static void pool_acquire_drop(pl_future *f)
{
    pool_acquire *self = (pool_acquire *)f;
    conn_pool *p = &self->st->pool;
    bool was_head = p->waiters.head == &self->node;
    zoo_queue_remove(&p->waiters, &self->node);
    pl_waker_slot_clear(&self->waker);
    if (was_head) {
        wake_head(p);
    }
}

static const pl_future_vtable pool_acquire_vt = {"pool_acquire", pool_acquire_poll,
                                                 pool_acquire_drop};

static pool_acquire pool_acquire_init(pool_state *st)
{
    return (pool_acquire){
        .base = PL_FUTURE_INIT(&pool_acquire_vt), .st = st, .waker = PL_WAKER_EMPTY, .conn = -1};
}

/* ---- Worker: per request, build the query while waiting for a
 * connection (retrying expired attempts), run it, release ------------- */

typedef struct worker {
    pl_future base;
    pool_state *st;
    pl_executor *ex; /* for the time of a release in the drop */
    int done;        /* requests served */
    bool holding;
    int conn;
    pool_acquire acq;
    pl_timeout attempt;
    pl_sleep prepare;
    pl_join2 both;
    pl_sleep query;
} worker;

static void start_attempt(worker *self)
{
    self->acq = pool_acquire_init(self->st);
    self->attempt = pl_timeout_make(&self->acq.base, ATTEMPT_NS);
}

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *self = (worker *)f;
    PL_ASYNC_BEGIN(self);
    for (; self->done < REQUESTS; self->done++) {
        start_attempt(self);
        self->prepare = pl_sleep_for(PREPARE_NS);
        self->both = pl_join2_make(&self->attempt.base, &self->prepare.base);
        PL_AWAIT(cx, &self->both);
        while (self->attempt.result == PL_ETIMEDOUT) {
            self->st->retries++;
            start_attempt(self);
            PL_AWAIT(cx, &self->attempt);
        }
        self->conn = self->acq.conn;
        self->acq.conn = -1; /* the worker holds it now */
        self->holding = true;
        self->query = pl_sleep_for(QUERY_NS);
        PL_AWAIT(cx, &self->query);
        self->holding = false;
        pool_release(self->st, self->conn, pl_now(cx->ex));
        self->st->served++;
    }
    PL_ASYNC_END;
}

/* Cancelled (the simulator's `cancel` decision): drop whatever is
 * pending and give back a connection, whether in use or acquired while
 * the query was still being built (the join was waiting for that). */
static void worker_drop(pl_future *f)
{
    worker *self = (worker *)f;
    pl_drop_child(&self->both.base);
    pl_drop_child(&self->attempt.base);
    pl_drop_child(&self->prepare.base);
    pl_drop_child(&self->query.base);
    if (pl_future_is_done(&self->acq.base) && self->acq.conn >= 0) {
        pool_release(self->st, self->acq.conn, pl_now(self->ex));
        self->acq.conn = -1;
    }
    if (self->holding) {
        self->holding = false;
        pool_release(self->st, self->conn, pl_now(self->ex));
    }
    if (!pl_future_is_done(f)) {
        self->st->abandoned += REQUESTS - self->done;
    }
}

static const pl_future_vtable worker_vt = {"worker", worker_poll, worker_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, pool_state *st, bool fixed)
{
    st->pool.free = CONNS;
    st->pool.fixed = fixed;
    for (int i = 0; i < WORKERS; i++) {
        worker w = {.base = PL_FUTURE_INIT(&worker_vt), .st = st, .ex = ex};
        pl_task *t;
        int rc = PL_SPAWN(ex, w, "worker", &t);
        if (rc != 0) {
            return rc;
        }
        pl_task_set_abortable(t, true);
        pl_task_release(t);
    }
    return 0;
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    pool_state *st = state;
    if (st->served + st->abandoned != WORKERS * REQUESTS) {
        return pl_check_fail(msg, len, "%d requests served and %d abandoned, want %d in all",
                             st->served, st->abandoned, WORKERS * REQUESTS);
    }
    if (st->pool.free != CONNS || st->pool.waiters.head != NULL) {
        return pl_check_fail(msg, len, "the pool ends with %zu free connection(s), want %d",
                             st->pool.free, CONNS);
    }
    if (st->idle_max_ns > 0) {
        return pl_check_fail(msg, len,
                             "connection %d sat idle for %.3f ms while a request waited for "
                             "one (taken at %.3f ms; %d attempt(s) retried)",
                             st->idle_conn, (double)st->idle_max_ns / 1e6,
                             (double)st->idle_at_ns / 1e6, st->retries);
    }
    return 0;
}

PL_SCENARIO(bug_retry_stale_sc, .name = "bug_retry_stale",
            .summary = "pool waiter keeps its first waker; the attempt deadline rescues it "
                       "late (stale waker)",
            .state_size = sizeof(pool_state), .setup = setup_buggy, .check = check,
            .expect = "stale_waker");

PL_SCENARIO(fix_retry_stale_sc, .name = "fix_retry_stale",
            .summary = "pool waiter stores the latest waker on every poll",
            .state_size = sizeof(pool_state), .setup = setup_fixed, .check = check);
