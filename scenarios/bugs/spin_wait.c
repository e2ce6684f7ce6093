/* Zoo: a "ready flag" waited on by waking oneself (a busy loop).
 *
 * The primitive: `ready_flag`, set by a loader task once the
 * configuration is loaded (after a 1 ms read). A server task waits for it
 * before serving.
 *
 * BUG (bug_spin_wait): flag_spin, the wait, never registers with the
 * flag: while it is down it wakes its own waker and returns PENDING, "so
 * the executor polls us again after the others had a turn". The task is
 * runnable forever: the executor never goes idle, so it never waits for
 * the next deadline; in production that burns a core until the loader's
 * timer fires, and under a virtual clock (which moves only when nothing
 * is runnable) time stops and the loader never finishes.
 * Why it is a bug: a future waiting for an event must sleep until the
 * event wakes it; self-wakes are for yielding once during long work, not
 * for waiting.
 * Finding: livelock (the same task woke itself thousands of polls in a
 * row without waking anyone or completing).
 * FIX (fix_spin_wait): the flag gets a waker slot; flag_wait stores the
 * latest waker and flag_set wakes it.
 */
#include "zoo.h"

typedef struct ready_flag {
    bool up;
    pl_waker waker; /* used by the fixed wait only */
} ready_flag;

typedef struct spin_state {
    ready_flag loaded;
    int config;
    int served_with;
} spin_state;

static void flag_set(ready_flag *fl)
{
    fl->up = true;
    pl_waker_slot_wake(&fl->waker);
}

typedef struct flag_wait {
    pl_future base;
    ready_flag *flag;
} flag_wait;

static pl_poll_result flag_spin_poll(pl_future *f, pl_context *cx)
{
    if (((flag_wait *)f)->flag->up) {
        return PL_READY;
    }
    pl_waker_wake_by_ref(&cx->waker); /* BUG: spin instead of sleeping */
    return PL_PENDING;
}

static pl_poll_result flag_wait_poll(pl_future *f, pl_context *cx)
{
    ready_flag *fl = ((flag_wait *)f)->flag;
    if (fl->up) {
        return PL_READY;
    }
    pl_waker_slot_set(&fl->waker, &cx->waker); /* FIX: sleep until set */
    return PL_PENDING;
}

static void flag_wait_drop(pl_future *f) { pl_waker_slot_clear(&((flag_wait *)f)->flag->waker); }

static const pl_future_vtable flag_spin_vt = {"flag_spin", flag_spin_poll, NULL};
static const pl_future_vtable flag_wait_vt = {"flag_wait", flag_wait_poll, flag_wait_drop};

/* ---- Server and loader ------------------------------------------------- */

typedef struct server {
    pl_future base;
    spin_state *st;
    const pl_future_vtable *wait_vt;
    flag_wait wait;
} server;

static pl_poll_result server_poll(pl_future *f, pl_context *cx)
{
    server *self = (server *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = (flag_wait){PL_FUTURE_INIT(self->wait_vt), &self->st->loaded};
    PL_AWAIT(cx, &self->wait);
    self->st->served_with = self->st->config;
    PL_ASYNC_END;
}

static void server_drop(pl_future *f) { pl_drop_child(&((server *)f)->wait.base); }

static const pl_future_vtable server_vt = {"server", server_poll, server_drop};

typedef struct loader {
    pl_future base;
    spin_state *st;
    pl_sleep read;
} loader;

static pl_poll_result loader_poll(pl_future *f, pl_context *cx)
{
    loader *self = (loader *)f;
    PL_ASYNC_BEGIN(self);
    self->read = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->read);
    self->st->config = 7;
    flag_set(&self->st->loaded);
    PL_ASYNC_END;
}

static void loader_drop(pl_future *f) { pl_drop_child(&((loader *)f)->read.base); }

static const pl_future_vtable loader_vt = {"loader", loader_poll, loader_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, spin_state *st, const pl_future_vtable *wait_vt)
{
    server s = {.base = PL_FUTURE_INIT(&server_vt), .st = st, .wait_vt = wait_vt};
    loader l = {.base = PL_FUTURE_INIT(&loader_vt), .st = st};
    int rc = PL_SPAWN(ex, s, "server", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, l, "loader", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, &flag_spin_vt); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, &flag_wait_vt); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    spin_state *st = state;
    if (st->served_with != 7) {
        return pl_check_fail(msg, len, "served with config %d, want 7", st->served_with);
    }
    return 0;
}

PL_SCENARIO(bug_spin_wait_sc, .name = "bug_spin_wait",
            .summary = "waits for a flag by waking itself over and over (livelock)",
            .state_size = sizeof(spin_state), .setup = setup_buggy, .check = check,
            .expect = "livelock");

PL_SCENARIO(fix_spin_wait_sc, .name = "fix_spin_wait",
            .summary = "waits for a flag with a stored waker",
            .state_size = sizeof(spin_state), .setup = setup_fixed, .check = check);
