/* Zoo: a reaper that forgets the waiters it reaps.
 *
 * The primitive: `conn_queue`, one connection shared by three clients.
 * A client that finds the connection taken queues a waiter (its waker in
 * a slot) and parks; a release hands the connection straight to the
 * longest waiter and wakes it. Each client holds the connection for
 * 2 ms. A reaper task wakes every millisecond and reaps waiters that have
 * been queued for 3 ms or more: they are closed ("the server is
 * overloaded, try later"), unlinked and forgotten.
 *
 * BUG (bug_reaper_orphan): the reaper "closes" a reaped waiter by setting
 * its flag and clearing its waker slot: "it will see the flag when it
 * wakes up". Nothing will wake it: the slot held the only clone of its
 * waker. Production's order already shows it: client #3 has waited 3 ms
 * when the reaper's third tick comes.
 * Why it is a bug: dropping a waiter's waker without waking it is
 * forgetting the waiter. Whoever takes a waiter off a wait list, for any
 * reason, must wake it (or hand the waker to someone who will).
 * Finding: orphan, reported at the drop: the parked client, and that the
 * last clone of its waker was dropped by 'reaper' while it was polled.
 * Without the drop-time check it surfaces only at quiescence, as a lost
 * wakeup of a client with no waker clone left, and nothing names the
 * reaper.
 * FIX (fix_reaper_orphan): the reaper wakes the reaped waiter through its
 * slot (pl_waker_slot_wake); the client sees "closed" and gives up.
 */
#include "zoo.h"

#include <pollen/timer.h>

enum { CLIENTS = 3, REAPER_TICKS = 8 };

#define HOLD_NS     (2 * PL_MS)
#define IDLE_MAX_NS (3 * PL_MS)

typedef struct conn_queue {
    bool busy;
    zoo_queue waiters; /* conn_wait nodes, FIFO */
} conn_queue;

typedef struct reaper_state {
    conn_queue q;
    bool fixed;
    int served;
    int closed;
} reaper_state;

/* ---- conn_wait ----------------------------------------------------------- */

enum { WAIT_INIT = 0, WAIT_QUEUED = 1, WAIT_GRANTED = 2, WAIT_CLOSED = 3 };

typedef struct conn_wait {
    pl_future base;
    conn_queue *q;
    int state;        /* WAIT_* */
    pl_time since_ns; /* when it was queued */
    zoo_node node;
    pl_waker waker;
    bool got; /* output: the connection (false: closed) */
} conn_wait;

static pl_poll_result conn_wait_poll(pl_future *f, pl_context *cx)
{
    conn_wait *w = (conn_wait *)f;
    if (w->state == WAIT_INIT && !w->q->busy) {
        w->q->busy = true;
        w->got = true;
        return PL_READY;
    }
    if (w->state == WAIT_INIT) {
        w->state = WAIT_QUEUED;
        w->since_ns = pl_now(cx->ex);
        zoo_queue_push(&w->q->waiters, &w->node);
    }
    if (w->state != WAIT_QUEUED) {
        w->got = w->state == WAIT_GRANTED;
        return PL_READY;
    }
    pl_waker_slot_set(&w->waker, &cx->waker);
    return PL_PENDING;
}

static void conn_release(conn_queue *q)
{
    zoo_node *n = zoo_queue_pop(&q->waiters);
    if (n == NULL) {
        q->busy = false;
        return;
    }
    conn_wait *w = ZOO_CONTAINER_OF(n, conn_wait, node);
    w->state = WAIT_GRANTED;
    pl_waker_slot_wake(&w->waker);
}

/* A granted waiter owns the connection: dropping it passes it on. */
static void conn_wait_drop(pl_future *f)
{
    conn_wait *w = (conn_wait *)f;
    zoo_queue_remove(&w->q->waiters, &w->node);
    pl_waker_slot_clear(&w->waker);
    if (w->state == WAIT_GRANTED) {
        conn_release(w->q);
    }
}

static const pl_future_vtable conn_wait_vt = {"conn_wait", conn_wait_poll, conn_wait_drop};

/* ---- The reaper ---------------------------------------------------------- */

static void reap_one(reaper_state *st, conn_wait *w)
{
    zoo_queue_remove(&st->q.waiters, &w->node);
    w->state = WAIT_CLOSED;
    if (st->fixed) {
        pl_waker_slot_wake(&w->waker); /* FIX: it sees "closed" and gives up */
    } else {
        pl_waker_slot_clear(&w->waker); /* BUG: "it will notice when it wakes up" */
    }
}

static void reap_idle(reaper_state *st, pl_time now)
{
    zoo_node *n = st->q.waiters.head;
    while (n != NULL) {
        zoo_node *next = n->next;
        conn_wait *w = ZOO_CONTAINER_OF(n, conn_wait, node);
        if (now - w->since_ns >= IDLE_MAX_NS) {
            reap_one(st, w);
        }
        n = next;
    }
}

typedef struct reaper {
    pl_future base;
    reaper_state *st;
    int tick;
    pl_sleep nap;
} reaper;

static pl_poll_result reaper_poll(pl_future *f, pl_context *cx)
{
    reaper *self = (reaper *)f;
    PL_ASYNC_BEGIN(self);
    for (self->tick = 0; self->tick < REAPER_TICKS; self->tick++) {
        self->nap = pl_sleep_for(1 * PL_MS);
        PL_AWAIT(cx, &self->nap);
        reap_idle(self->st, pl_now(cx->ex));
    }
    PL_ASYNC_END;
}

static void reaper_drop(pl_future *f) { pl_drop_child(&((reaper *)f)->nap.base); }

static const pl_future_vtable reaper_vt = {"reaper", reaper_poll, reaper_drop};

/* ---- Clients ------------------------------------------------------------- */

typedef struct client {
    pl_future base;
    reaper_state *st;
    conn_wait wait;
    pl_sleep hold;
} client;

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *self = (client *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = (conn_wait){.base = PL_FUTURE_INIT(&conn_wait_vt), .q = &self->st->q};
    PL_AWAIT(cx, &self->wait);
    if (!self->wait.got) {
        self->st->closed++;
        return PL_READY;
    }
    self->hold = pl_sleep_for(HOLD_NS);
    PL_AWAIT(cx, &self->hold);
    self->st->served++;
    conn_release(&self->st->q);
    PL_ASYNC_END;
}

static void client_drop(pl_future *f)
{
    client *self = (client *)f;
    pl_drop_child(&self->wait.base);
    pl_drop_child(&self->hold.base);
}

static const pl_future_vtable client_vt = {"client", client_poll, client_drop};

/* ---- Scenario ------------------------------------------------------------ */

static int setup(pl_executor *ex, reaper_state *st, bool fixed)
{
    st->fixed = fixed;
    for (int i = 0; i < CLIENTS; i++) {
        client c = {.base = PL_FUTURE_INIT(&client_vt), .st = st};
        int rc = PL_SPAWN(ex, c, "client", NULL);
        if (rc != 0) {
            return rc;
        }
    }
    reaper r = {.base = PL_FUTURE_INIT(&reaper_vt), .st = st};
    return PL_SPAWN(ex, r, "reaper", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    reaper_state *st = state;
    if (st->served + st->closed != CLIENTS || st->served == 0) {
        return pl_check_fail(msg, len, "%d client(s) served and %d closed, want %d in all",
                             st->served, st->closed, CLIENTS);
    }
    return 0;
}

PL_SCENARIO(bug_reaper_orphan_sc, .name = "bug_reaper_orphan",
            .summary = "a reaper drops idle waiters' wakers without waking them (orphan)",
            .state_size = sizeof(reaper_state), .setup = setup_buggy, .check = check,
            .expect = "orphan");

PL_SCENARIO(fix_reaper_orphan_sc, .name = "fix_reaper_orphan",
            .summary = "a reaper wakes the waiters it closes", .state_size = sizeof(reaper_state),
            .setup = setup_fixed, .check = check);
