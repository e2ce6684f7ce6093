/* Zoo: a hand-written join that polls a child again after it was READY.
 *
 * The primitive: `both`, a join of two child futures written by hand
 * (users write their own small combinators). A page loader fetches the
 * header and the body concurrently, each a 1 ms fetch, and awaits both.
 *
 * BUG (bug_join_repoll): both_poll polls each child on every poll and is
 * READY when both were READY in that same poll. When one child finishes
 * first, the next poll polls it again. Both fetches take 1 ms, so they
 * finish in the same poll, except when one takes its rare slow path (a
 * PL_BUGGIFY site: always off in production, sometimes on under the
 * simulator), which splits them over two polls.
 * Why it is a bug: a future is never polled after it returned READY (its
 * output may have been moved out, its resources released, its state
 * reused). A combinator must remember which children finished.
 * Finding: poll_after_ready, reported by pl_poll on the second poll of
 * the finished child (in production pl_poll aborts the process there).
 * FIX (fix_join_repoll): poll a child only while it is not done
 * (pl_future_is_done), which is what pl_join2 does.
 */
#include "zoo.h"

typedef struct page_state {
    int header;
    int body;
} page_state;

/* ---- fetch: a 1 ms fetch of one value --------------------------------- */

typedef struct fetch {
    pl_future base;
    int value;
    int out;
    pl_sleep io;
} fetch;

static pl_poll_result fetch_poll(pl_future *f, pl_context *cx)
{
    fetch *self = (fetch *)f;
    PL_ASYNC_BEGIN(self);
    self->io = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->io);
    if (PL_BUGGIFY(cx)) {
        /* A rare slow path (a cache miss, a retry): 1 ms more. */
        self->io = pl_sleep_for(1 * PL_MS);
        PL_AWAIT(cx, &self->io);
    }
    self->out = self->value;
    PL_ASYNC_END;
}

static void fetch_drop(pl_future *f) { pl_drop_child(&((fetch *)f)->io.base); }

static const pl_future_vtable fetch_vt = {"fetch", fetch_poll, fetch_drop};

static fetch fetch_init(int value)
{
    return (fetch){.base = PL_FUTURE_INIT(&fetch_vt), .value = value};
}

/* ---- both: the hand-written join --------------------------------------- */

typedef struct both {
    pl_future base;
    pl_future *a;
    pl_future *b;
} both;

static pl_poll_result both_poll_buggy(pl_future *f, pl_context *cx)
{
    both *self = (both *)f;
    /* BUG: polls a child that may have returned READY on an earlier poll. */
    bool a = pl_poll(self->a, cx) == PL_READY;
    bool b = pl_poll(self->b, cx) == PL_READY;
    return a && b ? PL_READY : PL_PENDING;
}

static pl_poll_result both_poll_fixed(pl_future *f, pl_context *cx)
{
    both *self = (both *)f;
    /* FIX: a finished child counts as READY and is left alone. */
    bool a = pl_future_is_done(self->a) || pl_poll(self->a, cx) == PL_READY;
    bool b = pl_future_is_done(self->b) || pl_poll(self->b, cx) == PL_READY;
    return a && b ? PL_READY : PL_PENDING;
}

/* Drops unfinished children: they hold timers with our waker. */
static void both_drop(pl_future *f)
{
    both *self = (both *)f;
    if (!pl_future_is_done(self->a)) {
        pl_drop_child(self->a);
    }
    if (!pl_future_is_done(self->b)) {
        pl_drop_child(self->b);
    }
}

static const pl_future_vtable both_buggy_vt = {"both", both_poll_buggy, both_drop};
static const pl_future_vtable both_fixed_vt = {"both", both_poll_fixed, both_drop};

/* ---- The page loader task ---------------------------------------------- */

typedef struct page_loader {
    pl_future base;
    page_state *st;
    const pl_future_vtable *both_vt;
    fetch header;
    fetch body;
    both join;
} page_loader;

static pl_poll_result page_loader_poll(pl_future *f, pl_context *cx)
{
    page_loader *self = (page_loader *)f;
    PL_ASYNC_BEGIN(self);
    self->header = fetch_init(1);
    self->body = fetch_init(2);
    self->join = (both){PL_FUTURE_INIT(self->both_vt), &self->header.base, &self->body.base};
    PL_AWAIT(cx, &self->join);
    self->st->header = self->header.out;
    self->st->body = self->body.out;
    PL_ASYNC_END;
}

static void page_loader_drop(pl_future *f)
{
    page_loader *self = (page_loader *)f;
    if (self->join.base.vtable != NULL && !pl_future_is_done(&self->join.base)) {
        pl_drop_child(&self->join.base);
    }
}

static const pl_future_vtable page_loader_vt = {"page_loader", page_loader_poll,
                                                page_loader_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, page_state *st, const pl_future_vtable *both_vt)
{
    page_loader p = {.base = PL_FUTURE_INIT(&page_loader_vt), .st = st, .both_vt = both_vt};
    return PL_SPAWN(ex, p, "page_loader", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, &both_buggy_vt); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, &both_fixed_vt); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    page_state *st = state;
    if (st->header != 1 || st->body != 2) {
        return pl_check_fail(msg, len, "header %d and body %d, want 1 and 2", st->header, st->body);
    }
    return 0;
}

PL_SCENARIO(bug_join_repoll_sc, .name = "bug_join_repoll",
            .summary = "hand-written join polls a finished child again (poll after ready)",
            .state_size = sizeof(page_state), .setup = setup_buggy, .check = check,
            .expect = "poll_after_ready");

PL_SCENARIO(fix_join_repoll_sc, .name = "fix_join_repoll",
            .summary = "hand-written join skips finished children",
            .state_size = sizeof(page_state), .setup = setup_fixed, .check = check);
