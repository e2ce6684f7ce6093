/* sim/src/backtrace.h: the per-poll bookkeeping of async backtraces
 * (backtrace.c explains them), static inline: the observer runs it on
 * every poll of every task, and a call per hook showed in the cost of a
 * simulated run. Only oracle.c includes it.
 *
 * s->depth futures' polls have not returned (the task's own counts).
 * Nothing is recorded on the way down: the PENDING path is written into
 * s->path bottom-up as its futures return, so an enter costs one
 * increment. The first future to return PENDING starts the path
 * (path.len), each parent that returns PENDING over the path's top
 * extends it (path_top), and an await that returned PENDING on the
 * path's top names its site in its own frame. A sibling's subtree never
 * writes into a path that stands, so nothing is saved or copied.
 */
#ifndef POLLEN_SIM_BACKTRACE_H
#define POLLEN_SIM_BACKTRACE_H

#include <string.h>

#include "sim_internal.h"

#define PL__BT_NO_PATH UINT32_MAX

static inline uint32_t pl__bt_kept(uint32_t len)
{
    return len < PL__FRAMES_MAX ? len : PL__FRAMES_MAX;
}

/* A poll left through a longjmp (a livelock) never returned: its frames
 * are forgotten here. */
static inline void pl__bt_poll_begin(pl__sim *s)
{
    s->depth = 1;
    s->path.len = 0;
    s->path_top = PL__BT_NO_PATH;
    s->yield_at = PL__BT_NO_PATH;
}

static inline void pl__bt_enter(pl__sim *s) { s->depth++; }

/* The future at the current depth returned READY: a path that went
 * through it is done (PL__BT_NO_PATH is above every depth). */
static inline void pl__bt_ready(pl__sim *s)
{
    uint32_t i = --s->depth; /* above 0: poll_begin counted the task's own */
    if (s->path_top > i) {
        s->path.len = 0;
        s->path_top = PL__BT_NO_PATH;
        s->yield_at = PL__BT_NO_PATH;
    }
}

/* The future `name` at the current depth returned PENDING. Returns true
 * when it is now the path's top: its parent is parked in it. */
static inline bool pl__bt_pending(pl__sim *s, const char *name)
{
    uint32_t i = --s->depth; /* above 0: poll_begin counted the task's own */
    const pl_await_site *site = NULL;
    if (s->path_top == PL__BT_NO_PATH) {
        s->path.len = i + 1; /* the path ends here, at a yield or a leaf */
        site = s->yield_at == i ? s->yield_site : NULL;
        s->yield_at = PL__BT_NO_PATH;
        if (i < PL__FRAMES_MAX) {
            s->path.f[i].site = site;
        }
    } else if (s->path_top != i + 1) {
        return false; /* an earlier sibling's path stands: the first branch wins */
    }
    s->path_top = i;
    if (i < PL__FRAMES_MAX) {
        s->path.f[i].future = name;
    }
    if (i > 0 && i <= PL__FRAMES_MAX) {
        s->path.f[i - 1].site = NULL; /* a plain pl_poll of it; PL_AWAIT names its site */
    }
    return true;
}

static inline void pl__bt_leave(pl__sim *s, pl_poll_result r, const char *name)
{
    if (r == PL_READY) {
        pl__bt_ready(s);
    } else {
        (void)pl__bt_pending(s, name);
    }
}

/* A PL_AWAIT of `child` returned r at `site`; child NULL: a PL_YIELD. */
static inline void pl__bt_await(pl__sim *s, const pl_future *child, pl_poll_result r,
                                const pl_await_site *site)
{
    if (child != NULL) {
        if (r == PL_READY) {
            pl__bt_ready(s);
        } else if (pl__bt_pending(s, child->vtable->name) && s->depth <= PL__FRAMES_MAX) {
            s->path.f[s->depth - 1].site = site;
        }
        return;
    }
    uint32_t k = s->depth - 1;
    if (s->depth == 0 || k >= PL__FRAMES_MAX) {
        return;
    }
    if (s->path_top == PL__BT_NO_PATH) {
        s->yield_at = k; /* the frame that yields: the path will end there */
        s->yield_site = site;
    } else if (s->path_top == k + 1) {
        s->path.f[k].site = site;
    }
}

static inline bool pl__bt_frame_equal(const pl__frame *a, const pl__frame *b)
{
    return a->future == b->future && a->site == b->site;
}

/* At a PENDING poll_end: is the path found the chain `chain` names? */
static inline bool pl__bt_is_path(const pl__sim *s, uint32_t chain)
{
    if (chain == 0) {
        return false;
    }
    const pl__chain *c = &s->chains[chain - 1];
    if (c->len != s->path.len) {
        return false;
    }
    for (uint32_t i = 0; i < pl__bt_kept(c->len); i++) {
        if (!pl__bt_frame_equal(&c->f[i], &s->path.f[i])) {
            return false;
        }
    }
    return true;
}

/* At a PENDING poll_end: the chain found becomes the task's. The common
 * case, parked where it parked before (or the time before: a loop), costs
 * one comparison here; the rest is pl__bt_parked's. */
static inline void pl__bt_park(pl__sim *s, pl__task_info *ti)
{
    if (pl__bt_is_path(s, ti->chain)) {
        return;
    }
    if (pl__bt_is_path(s, ti->chain_prev)) {
        uint32_t c = ti->chain;
        ti->chain = ti->chain_prev;
        ti->chain_prev = c;
        return;
    }
    pl__bt_parked(s, ti);
}

#endif
