/* sim/src/backtrace.h: the per-poll bookkeeping of async backtraces
 * (backtrace.c explains them), static inline: the observer runs it on
 * every poll of every task, and a call per hook showed in the cost of a
 * simulated run. Only oracle.c includes it.
 *
 * The futures whose poll has not returned are s->frames[0..depth) (the
 * task's own first). The PENDING path found so far in this poll ends at
 * depth s->path.len - 1 and is known to go through every frame from
 * s->path_top down. It lives in s->frames themselves (an await chain is
 * the stack) until a sibling future is entered over it (a select, a
 * join): only then is it copied to s->path (path_saved).
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
static inline void pl__bt_poll_begin(pl__sim *s, const char *root)
{
    s->frames[0] = (pl__frame){root, NULL};
    s->depth = 1;
    s->path.len = 0;
    s->path_top = PL__BT_NO_PATH;
    s->path_saved = false;
}

static inline void pl__bt_enter(pl__sim *s, const pl_future *f)
{
    uint32_t d = s->depth++;
    if (d >= PL__FRAMES_MAX) {
        return;
    }
    if (!s->path_saved && d < s->path.len && s->path_top != PL__BT_NO_PATH) {
        /* A sibling of a PENDING future: keep that future's path. */
        memcpy(s->path.f, s->frames, pl__bt_kept(s->path.len) * sizeof *s->frames);
        s->path_saved = true;
    }
    s->frames[d] = (pl__frame){f->vtable->name, NULL};
}

static inline void pl__bt_leave(pl__sim *s, pl_poll_result r)
{
    PL__SIM_ASSERT(s->depth > 0);
    uint32_t i = --s->depth;
    if (r == PL_READY) {
        if (s->path_top != PL__BT_NO_PATH && s->path_top > i) {
            s->path.len = 0; /* the path went through this future, now done */
            s->path_top = PL__BT_NO_PATH;
        }
    } else if (s->path_top == i + 1) {
        s->path_top = i; /* a child's path: this future is parked in it */
    } else if (s->path_top == PL__BT_NO_PATH) {
        s->path.len = i + 1; /* a path that ends here: the live stack */
        s->path_top = i;
        s->path_saved = false;
    }
    /* Otherwise an earlier sibling's path stands: the first branch wins. */
}

static inline void pl__bt_await(pl__sim *s, const pl_await_site *site)
{
    if (s->depth == 0 || s->depth > PL__FRAMES_MAX) {
        return;
    }
    uint32_t k = s->depth - 1;
    s->frames[k].site = site;
    if (s->path_saved && s->path_top == k + 1 && k < s->path.len) {
        s->path.f[k].site = site; /* the child it awaits is the saved path's */
    }
}

static inline bool pl__bt_frame_equal(const pl__frame *a, const pl__frame *b)
{
    return a->future == b->future && a->site == b->site;
}

/* At a PENDING poll_end: the chain found becomes the task's. The common
 * case, parked where it parked before on the live stack, costs one
 * comparison here; the rest is pl__bt_parked's. */
static inline bool pl__bt_is_live_path(const pl__sim *s, uint32_t chain)
{
    if (chain == 0) {
        return false;
    }
    const pl__chain *c = &s->chains[chain - 1];
    uint32_t i = 0;
    if (c->len == s->path.len && c->len <= PL__FRAMES_MAX) {
        while (i < c->len && pl__bt_frame_equal(&c->f[i], &s->frames[i])) {
            i++;
        }
    }
    return i == s->path.len;
}

static inline void pl__bt_park(pl__sim *s, pl__task_info *ti)
{
    if (!s->path_saved) {
        if (pl__bt_is_live_path(s, ti->chain)) {
            return;
        }
        if (pl__bt_is_live_path(s, ti->chain_prev)) {
            uint32_t c = ti->chain;
            ti->chain = ti->chain_prev;
            ti->chain_prev = c;
            return;
        }
    }
    pl__bt_parked(s, ti);
}

#endif
