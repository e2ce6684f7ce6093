/* Zoo: a configuration reloader thread broadcasts through the remote
 * waker path while a watcher task is between creating its pl_notified
 * and registering it.
 *
 * The primitive: `changed`, a pl_notify; `gen`, the configuration's
 * generation (an atomic). A reloader thread (pollen/thread.h) publishes
 * generation 1 and wakes a relay task through its pl_remote_waker; the
 * relay, on the executor's thread (a pl_notify is single-threaded),
 * calls pl_notify_waiters(&changed). The watcher task loops: make a
 * pl_notified, read `gen`, stop at generation 1; otherwise flush its
 * metrics (1 ms) and await the pl_notified. The reloader takes 1.5 ms
 * to read the new configuration.
 *
 * BUG (bug_notify_waiters_thread): a pl_notified registers at its first
 * poll, not when it is made. The watcher reads generation 0 and flushes;
 * when the reloader's broadcast comes before the flush ends, the relay's
 * pl_notify_waiters finds no waiter and stores nothing (broadcasts store
 * no permit), and the watcher then registers and waits for a broadcast
 * that already happened. In production's timing the flush ends first;
 * a late timer (timer_late) or a switch to the reloader before the
 * watcher's read shows it.
 * Why it is a bug: a broadcast reaches only registered waiters; reading
 * the condition must come after the registration.
 * Finding: deadlock (the watcher parked forever; its wait condition, a
 * notification, does not hold: the broadcast stored nothing for it).
 * FIX (fix_notify_waiters_thread): poll the pl_notified once right after
 * making it (tokio's Notified::enable), then read `gen`: a broadcast
 * after the registration notifies it, one before it is seen in `gen`.
 */
#include <stdatomic.h>

#include <pollen/thread.h>

#include "zoo.h"

typedef struct reload_state {
    pl_notify changed;
    _Atomic unsigned gen;
    _Atomic(pl_remote_waker *) relay_waker;
    pl_thread_sem started; /* posted by the relay (its waker is stored) and the watcher */
    pl_thread *reloader;
    unsigned seen;
} reload_state;

static void *reloader_main(void *arg)
{
    reload_state *st = arg;
    pl_thread_sem_wait(&st->started);
    pl_thread_sem_wait(&st->started);
    pl_thread_sleep(1500 * PL_US); /* reading the new configuration */
    pl_atomic_store(&st->gen, 1);
    pl_remote_waker *rw = pl_atomic_exchange(&st->relay_waker, NULL);
    if (rw != NULL) {
        pl_remote_waker_wake(rw);
    }
    return NULL;
}

/* ---- The relay: a remote wake becomes a broadcast ---------------------- */

typedef struct relay {
    pl_future base;
    reload_state *st;
    bool armed;
} relay;

/* Registers, then checks (on every poll: a spurious poll must leave the
 * newest waker where the reloader looks). */
static pl_poll_result relay_poll(pl_future *f, pl_context *cx)
{
    relay *self = (relay *)f;
    pl_remote_waker *rw;
    if (pl_remote_waker_create(cx, &rw) != 0) {
        pl_waker_wake_by_ref(&cx->waker);
        return PL_PENDING;
    }
    pl_remote_waker *old = pl_atomic_exchange(&self->st->relay_waker, rw);
    if (old != NULL) {
        pl_remote_waker_drop(old);
    }
    if (!self->armed) {
        self->armed = true;
        pl_thread_sem_post(&self->st->started);
    }
    if (pl_atomic_load(&self->st->gen) == 0) {
        return PL_PENDING;
    }
    pl_remote_waker *mine = pl_atomic_exchange(&self->st->relay_waker, NULL);
    if (mine != NULL) {
        pl_remote_waker_drop(mine);
    }
    pl_notify_waiters(&self->st->changed);
    return PL_READY;
}

static void relay_drop(pl_future *f)
{
    relay *self = (relay *)f;
    pl_remote_waker *rw = pl_atomic_exchange(&self->st->relay_waker, NULL);
    if (rw != NULL) {
        pl_remote_waker_drop(rw);
    }
}

static const pl_future_vtable relay_vt = {"relay", relay_poll, relay_drop};

/* ---- The watcher ------------------------------------------------------------ */

typedef struct watcher {
    pl_future base;
    reload_state *st;
    bool enable; /* the fix: register before reading gen */
    bool early;  /* the enabling poll already completed the pl_notified */
    pl_notified n;
    pl_sleep flush;
} watcher;

static pl_poll_result watcher_poll(pl_future *f, pl_context *cx)
{
    watcher *self = (watcher *)f;
    reload_state *st = self->st;
    PL_ASYNC_BEGIN(self);
    pl_thread_sem_post(&st->started);
    for (;;) {
        self->n = pl_notified_make(&st->changed);
        /* FIX: registered from here on. BUG: not until the await below. */
        self->early = self->enable && pl_poll(&self->n.base, cx) == PL_READY;
        st->seen = pl_atomic_load(&st->gen);
        if (st->seen >= 1) {
            break;
        }
        self->flush = pl_sleep_for(1 * PL_MS); /* flush the metrics */
        PL_AWAIT(cx, &self->flush);
        if (!self->early) {
            PL_AWAIT(cx, &self->n);
        }
    }
    pl_drop_child(&self->n.base);
    PL_ASYNC_END;
}

static void watcher_drop(pl_future *f)
{
    pl_drop_child(&((watcher *)f)->flush.base);
    pl_drop_child(&((watcher *)f)->n.base);
}

static const pl_future_vtable watcher_vt = {"watcher", watcher_poll, watcher_drop};

/* ---- Scenario ----------------------------------------------------------------- */

static int setup(pl_executor *ex, reload_state *st, bool enable)
{
    pl_notify_init(&st->changed);
    int rc = pl_thread_sem_init(&st->started, 0);
    if (rc != 0) {
        return rc;
    }
    watcher w = {.base = PL_FUTURE_INIT(&watcher_vt), .st = st, .enable = enable};
    relay r = {.base = PL_FUTURE_INIT(&relay_vt), .st = st};
    rc = PL_SPAWN(ex, w, "watcher", NULL);
    rc = rc != 0 ? rc : PL_SPAWN(ex, r, "relay", NULL);
    return rc != 0 ? rc : pl_thread_spawn(&st->reloader, "reloader", reloader_main, st);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    reload_state *st = state;
    if (st->reloader != NULL && pl_thread_join(st->reloader, NULL) != 0) {
        return pl_check_fail(msg, len, "joining the reloader failed");
    }
    st->reloader = NULL;
    pl_thread_sem_finish(&st->started);
    if (st->seen != 1) {
        return pl_check_fail(msg, len, "the watcher saw generation %u, want 1", st->seen);
    }
    return 0;
}

PL_SCENARIO(bug_notify_waiters_thread_sc, .name = "bug_notify_waiters_thread",
            .summary = "a thread's broadcast (remote waker, relay, notify_waiters) lands "
                       "between a watcher making its pl_notified and registering it (deadlock)",
            .state_size = sizeof(reload_state), .setup = setup_buggy, .check = check,
            .expect = "deadlock");

PL_SCENARIO(fix_notify_waiters_thread_sc, .name = "fix_notify_waiters_thread",
            .summary = "the watcher polls its pl_notified once (registers) before reading "
                       "the generation",
            .state_size = sizeof(reload_state), .setup = setup_fixed, .check = check);
