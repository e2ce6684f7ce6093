/* core/src/combinators.c: join2, join_all, select. */
#include "internal.h"
#include "pollen/combinators.h"

/* Drops a child unless it finished (its output belongs to the caller)
 * or someone already dropped it (a second drop is a contract break). */
static void drop_unfinished(pl_future *child)
{
    if ((child->flags & (PL_FUTURE_DONE | PL_FUTURE_DROPPED)) == 0) {
        pl_drop(child);
    }
}

/* True once `child` is READY, polling it if it has not finished. */
static bool poll_child(pl_future *child, pl_context *cx)
{
    return pl_future_is_done(child) || pl_poll(child, cx) == PL_READY;
}

static pl_poll_result join2_poll(pl_future *f, pl_context *cx)
{
    pl_join2 *self = (pl_join2 *)f;
    bool a = poll_child(self->a, cx);
    bool b = poll_child(self->b, cx);
    return a && b ? PL_READY : PL_PENDING;
}

static void join2_drop(pl_future *f)
{
    pl_join2 *self = (pl_join2 *)f;
    drop_unfinished(self->a);
    drop_unfinished(self->b);
}

static const pl_future_vtable join2_vtable = {
    .name = "pl_join2",
    .poll = join2_poll,
    .drop = join2_drop,
};

pl_join2 pl_join2_make(pl_future *a, pl_future *b)
{
    PL_ASSERT(a != NULL && b != NULL && a != b);
    return (pl_join2){PL_FUTURE_INIT(&join2_vtable), a, b};
}

static pl_poll_result join_all_poll(pl_future *f, pl_context *cx)
{
    pl_join_all *self = (pl_join_all *)f;
    size_t remaining = 0;
    for (size_t i = 0; i < self->n; i++) {
        if (!poll_child(self->children[i], cx)) {
            remaining++;
        }
    }
    self->remaining = remaining;
    return remaining == 0 ? PL_READY : PL_PENDING;
}

static void join_all_drop(pl_future *f)
{
    pl_join_all *self = (pl_join_all *)f;
    for (size_t i = 0; i < self->n; i++) {
        drop_unfinished(self->children[i]);
    }
}

static const pl_future_vtable join_all_vtable = {
    .name = "pl_join_all",
    .poll = join_all_poll,
    .drop = join_all_drop,
};

pl_join_all pl_join_all_make(pl_future *const *children, size_t n)
{
    PL_ASSERT(children != NULL || n == 0);
    return (pl_join_all){PL_FUTURE_INIT(&join_all_vtable), children, n, n};
}

static pl_poll_result select_poll(pl_future *f, pl_context *cx)
{
    pl_select *self = (pl_select *)f;
    for (size_t i = 0; i < self->n; i++) {
        if (poll_child(self->children[i], cx)) {
            self->index = i;
            for (size_t j = 0; j < self->n; j++) {
                if (j != i) {
                    drop_unfinished(self->children[j]);
                }
            }
            return PL_READY;
        }
    }
    return PL_PENDING;
}

static void select_drop(pl_future *f)
{
    pl_select *self = (pl_select *)f;
    if (pl_future_is_done(f)) {
        return; /* the losers went at completion; the winner is the caller's */
    }
    for (size_t i = 0; i < self->n; i++) {
        drop_unfinished(self->children[i]);
    }
}

static const pl_future_vtable select_vtable = {
    .name = "pl_select",
    .poll = select_poll,
    .drop = select_drop,
};

pl_select pl_select_make(pl_future *const *children, size_t n)
{
    PL_ASSERT(children != NULL && n > 0);
    return (pl_select){PL_FUTURE_INIT(&select_vtable), children, n, SIZE_MAX};
}
