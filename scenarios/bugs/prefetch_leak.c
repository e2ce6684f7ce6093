/* Zoo: a prefetch whose task handle is not released on the cache-hit path.
 *
 * The protocol: two request handlers want the same key. Each spawns a
 * fetch task right away (a prefetch, keeping a handle to join it), then
 * parses its request (1 ms). If by then the cache holds the key (filled
 * by either fetch), it answers from the cache; otherwise it joins its
 * own fetch. A fetch takes 1 ms and fills the cache.
 *
 * BUG (bug_prefetch_leak): on the cache-hit path the handler returns
 * without releasing its fetch handle ("the fetch finishes by itself"),
 * and its drop does not release it either (the join path always did).
 * It does finish, but the handle is a counted reference: the task's
 * memory stays allocated until the end of the program. In production's
 * order both handlers finish parsing before either fetch completes, so
 * both take the join path; a schedule where a fetch completes first
 * sends the other handler down the hit path.
 * Why it is a bug: every pl_spawn handle must be released exactly once
 * (pl_task_release), on every path, including early returns and drops.
 * Finding: task_leak, at the end of the run: a finished task is still
 * allocated.
 * FIX (fix_prefetch_leak): release the handle on the hit path too, and
 * in the handler's drop when it is cancelled while holding it.
 */
#include "zoo.h"

enum { HANDLERS = 2 };

typedef struct prefetch_state {
    bool cached;
    int value;
    int fetches;
    int hits;
    int answers[HANDLERS];
} prefetch_state;

/* ---- The fetch task ---------------------------------------------------- */

typedef struct fetch_task {
    pl_future base;
    prefetch_state *st;
    pl_sleep io;
} fetch_task;

static pl_poll_result fetch_task_poll(pl_future *f, pl_context *cx)
{
    fetch_task *self = (fetch_task *)f;
    PL_ASYNC_BEGIN(self);
    self->io = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->io);
    self->st->fetches++;
    self->st->value = 99;
    self->st->cached = true;
    PL_ASYNC_END;
}

static void fetch_task_drop(pl_future *f) { pl_drop_child(&((fetch_task *)f)->io.base); }

static const pl_future_vtable fetch_task_vt = {"fetch", fetch_task_poll, fetch_task_drop};

/* ---- The request handler ----------------------------------------------- */

typedef struct handler {
    pl_future base;
    prefetch_state *st;
    int index;
    bool fixed;
    pl_task *fetch; /* our handle on the prefetch, while we hold it */
    int spawn_rc;
    pl_sleep parse;
    pl_join join;
} handler;

static int start_prefetch(handler *self, pl_context *cx)
{
    fetch_task t = {.base = PL_FUTURE_INIT(&fetch_task_vt), .st = self->st};
    return PL_SPAWN(cx->ex, t, "fetch", &self->fetch);
}

static pl_poll_result handler_poll(pl_future *f, pl_context *cx)
{
    handler *self = (handler *)f;
    PL_ASYNC_BEGIN(self);
    self->spawn_rc = start_prefetch(self, cx);
    pl_always(self->spawn_rc == 0, "the prefetch was spawned");
    self->parse = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->parse);
    if (self->st->cached) {
        self->st->hits++;
        if (self->fixed) {
            pl_task_release(self->fetch); /* FIX: the hit path releases too */
            self->fetch = NULL;
        }
        /* BUG (when !fixed): returns holding the handle. */
    } else {
        self->join = pl_join_make(self->fetch);
        PL_AWAIT(cx, &self->join);
        pl_drop(&self->join.base); /* the join borrows the handle: drop it first */
        pl_task_release(self->fetch);
        self->fetch = NULL;
    }
    self->st->answers[self->index] = self->st->value;
    PL_ASYNC_END;
}

/* Cancelled: stop waiting. The fixed handler also releases a handle it
 * still holds; the buggy one only ever released it after the join. */
static void handler_drop(pl_future *f)
{
    handler *self = (handler *)f;
    pl_drop_child(&self->parse.base);
    pl_drop_child(&self->join.base);
    if (self->fixed) {
        pl_task_release(self->fetch);
        self->fetch = NULL;
    }
}

static const pl_future_vtable handler_vt = {"handler", handler_poll, handler_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, prefetch_state *st, bool fixed)
{
    for (int i = 0; i < HANDLERS; i++) {
        handler h = {.base = PL_FUTURE_INIT(&handler_vt), .st = st, .index = i, .fixed = fixed};
        int rc = PL_SPAWN(ex, h, "handler", NULL);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    prefetch_state *st = state;
    for (int i = 0; i < HANDLERS; i++) {
        if (st->answers[i] != 99) {
            return pl_check_fail(msg, len, "handler %d answered %d, want 99", i, st->answers[i]);
        }
    }
    if (st->fetches != HANDLERS) {
        return pl_check_fail(msg, len, "%d fetches ran, want %d", st->fetches, HANDLERS);
    }
    return 0;
}

PL_SCENARIO(bug_prefetch_leak_sc, .name = "bug_prefetch_leak",
            .summary = "prefetch handle not released on the cache-hit path (task leak)",
            .state_size = sizeof(prefetch_state), .setup = setup_buggy, .check = check,
            .expect = "task_leak");

PL_SCENARIO(fix_prefetch_leak_sc, .name = "fix_prefetch_leak",
            .summary = "prefetch handle released on every path",
            .state_size = sizeof(prefetch_state), .setup = setup_fixed, .check = check);
