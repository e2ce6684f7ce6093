/* sim/src/backtrace.h: the per-poll bookkeeping of async backtraces
 * (backtrace.c explains them), static inline: the observer runs it on
 * every poll of every task, and a call per hook showed in the cost of a
 * simulated run; the state they keep, and the text of chains for the
 * findings. Only oracle.c calls the inline hooks.
 *
 * b->depth futures' polls have not returned (the task's own counts).
 * Nothing is recorded on the way down: the PENDING path is written into
 * b->path bottom-up as its futures return, so an enter costs one
 * increment. The first future to return PENDING starts the path
 * (path.len), each parent that returns PENDING over the path's top
 * extends it (path_top), and an await that returned PENDING on the
 * path's top names its site in its own frame. A sibling's subtree never
 * writes into a path that stands, so nothing is saved or copied.
 *
 * The other branches (a join or a select parked in several children)
 * cost only the polls that have them: a future that returns PENDING
 * while another branch's path stands is written out of line into
 * b->x, post-order with its depth and the path's top when it returned
 * (its stamp: backtrace.c explains how that places it in the tree).
 * A READY drops what it polled from there too. A one-branch poll pays
 * a test per READY and per park for them; a task parked in several
 * branches takes pl__bt_parked's slow path at each PENDING.
 */
#ifndef POLLEN_SIM_BACKTRACE_H
#define POLLEN_SIM_BACKTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hashset.h"
#include "pollen/future.h"
#include "pollen/observer.h"
#include "pollen/sim.h"
#include "tasks.h"

typedef struct pl__sim pl__sim;

/* One future of an async backtrace: its name and where it awaited
 * (static storage; site NULL while unknown). */
typedef struct pl__frame {
    const char *future;
    const pl_await_site *site;
} pl__frame;

#define PL__FRAMES_MAX PL_FINDING_FRAMES_MAX

/* A chain of futures, outermost first; len may exceed PL__FRAMES_MAX
 * (the deeper ones are not kept). tree: the other branches parked along
 * it, index + 1 in pl__bt.trees; 0: none (a one-branch task). */
typedef struct pl__chain {
    uint32_t len;
    uint32_t tree;
    pl__frame f[PL__FRAMES_MAX];
} pl__chain;

/* The other branches' futures kept from one poll (PL__FRAMES_MAX deep
 * at most, like the chain); a wider tree keeps its first ones. */
#define PL__BRANCH_NODES_MAX 16

/* A future of another branch than the chain's: depth 0 is the task's
 * own; stamp, the chain's top when it returned PENDING (stamp == depth:
 * its parent is the chain's frame at depth - 1; below: its parent is
 * the next node after it with a smaller depth). */
typedef struct pl__branch_node {
    pl__frame f;
    uint32_t depth;
    uint32_t stamp;
} pl__branch_node;

/* The other branches of one PENDING poll, post-order; cut: some were
 * left out (too wide or too deep). Interned like chains. */
typedef struct pl__branches {
    uint32_t len;
    uint32_t cut;
    pl__branch_node n[PL__BRANCH_NODES_MAX];
} pl__branches;

/* A run's interned values of one type (chains, branches): index + 1
 * names one; equal values are one. */
typedef struct pl__interned {
    void *items;
    size_t len;
    size_t cap;
    pl__hashmap index; /* content hash -> index, past a few values */
} pl__interned;

/* The backtraces' state (pl__sim.bt): how many futures' polls have not
 * returned (the task's own counts), the PENDING path found so far in
 * this poll, written bottom-up as its futures return, and the distinct
 * chains of the run (each task names one: a million tasks parked at one
 * await share it). */
typedef struct pl__bt {
    uint32_t depth;
    pl__chain path;    /* its length, and its frames from path_top down */
    uint32_t path_top; /* the shallowest frame the path is known to go through */
    uint32_t yield_at; /* the depth of a PL_YIELD before any path, or PL__BT_NO_PATH */
    const pl_await_site *yield_site;
    pl__branches x; /* the other branches found so far in this poll */
    /* Where x.n[i]'s parent awaited it (NULL: a plain pl_poll). */
    const pl_await_site *x_awaited[PL__BRANCH_NODES_MAX];
    pl__interned chains; /* pl__chain */
    pl__interned trees;  /* pl__branches */
} pl__bt;

/* ---- Out of line (backtrace.c) ---------------------------------------- */

/* At a PENDING poll_end, the chain found is kept as the task's (the slow
 * path of pl__bt_park). */
void pl__bt_parked(pl__bt *b, pl__task_info *ti);
/* The future `name` at depth b->depth returned PENDING off the path
 * (another branch): kept in b->x when it fits. The inline hooks call
 * these three last, as tail calls, so they save no registers. */
void pl__bt_branch(pl__bt *b, const char *name);
/* The same through a PL_AWAIT at `site`: its parent awaited it there. */
void pl__bt_branch_await(pl__bt *b, const char *name, const pl_await_site *site);
/* A READY at depth b->depth while other branches are kept: what it
 * polled goes. */
void pl__bt_branch_ready(pl__bt *b);
void pl__bt_free(pl__bt *b);
/* ", spawned at outbox.c:120 in main" (or "" when unknown) into buf. */
void pl__bt_spawn_text(const pl__task_info *ti, char *buf, size_t len);
/* "worker (outbox.c:124 in worker_poll) > pl_notified": task `id`'s chain
 * at its latest PENDING poll ("" when none was recorded). */
void pl__bt_chain_text(const pl__sim *s, uint32_t id, char *buf, size_t len);
/* Appends task `id` to the finding's parked tasks (pl_finding.tasks),
 * when `fresh` (the finding was raised by the caller just now). */
void pl__bt_note(pl__sim *s, bool fresh, uint32_t id);
/* The line a finding's message gives a parked task: "\n<indent>parked in:
 * CHAIN" (nothing when no chain was recorded), appended at buf + *used;
 * a task parked in more than one branch gets the tree instead, a line a
 * future below "\n<indent>parked in:", drawn as task dumps draw it. */
void pl__bt_append(const pl__sim *s, uint32_t id, const char *indent, char *buf, size_t len,
                   size_t *used);
/* A finding's tree (pl_finding_task.tree) appended at buf + *used, a
 * line a node, "\n<indent>" before each, drawn as task dumps draw it;
 * cut adds a line saying nodes were left out. */
void pl__bt_tree_text(const pl_finding_node *n, uint32_t count, bool cut, const char *indent,
                      char *buf, size_t len, size_t *used);
/* For a finding about one task (lost wakeup, stale waker, orphan) raised
 * just now (`fresh`): notes it and appends its chain and spawn site to
 * the message. */
void pl__bt_describe(pl__sim *s, bool fresh, uint32_t id);

/* ---- Per poll, inline (the observer's hooks) --------------------------- */

#define PL__BT_NO_PATH UINT32_MAX

static inline uint32_t pl__bt_kept(uint32_t len)
{
    return len < PL__FRAMES_MAX ? len : PL__FRAMES_MAX;
}

/* A poll left through a longjmp (a livelock) never returned: its frames
 * are forgotten here. */
static inline void pl__bt_poll_begin(pl__bt *b)
{
    b->depth = 1;
    b->path.len = 0;
    b->path_top = PL__BT_NO_PATH;
    b->yield_at = PL__BT_NO_PATH;
    b->x.len = 0;
    b->x.cut = 0;
}

static inline void pl__bt_enter(pl__bt *b) { b->depth++; }

/* The future at the current depth returned READY: a path that went
 * through it is done (PL__BT_NO_PATH is above every depth). Returns
 * true when other branches may hold what it polled: the caller ends
 * with pl__bt_branch_ready. */
static inline bool pl__bt_ready(pl__bt *b)
{
    uint32_t i = --b->depth; /* above 0: poll_begin counted the task's own */
    if (b->path_top > i) {
        b->path.len = 0;
        b->path_top = PL__BT_NO_PATH;
        b->yield_at = PL__BT_NO_PATH;
        b->x.len = 0; /* every other branch came after the path, under this future */
        b->x.cut = 0;
        return false;
    }
    return b->x.len != 0;
}

/* The future `name` at the current depth returned PENDING. Returns true
 * when it is on the path (it starts it, or its parent is parked in it);
 * false when an earlier sibling's path stands (the first branch wins):
 * the caller ends with pl__bt_branch. */
static inline bool pl__bt_pending(pl__bt *b, const char *name)
{
    uint32_t i = --b->depth; /* above 0: poll_begin counted the task's own */
    const pl_await_site *site = NULL;
    if (b->path_top == PL__BT_NO_PATH) {
        b->path.len = i + 1; /* the path ends here, at a yield or a leaf */
        site = b->yield_at == i ? b->yield_site : NULL;
        b->yield_at = PL__BT_NO_PATH;
        if (i < PL__FRAMES_MAX) {
            b->path.f[i].site = site;
        }
    } else if (b->path_top != i + 1) {
        return false;
    }
    b->path_top = i;
    if (i < PL__FRAMES_MAX) {
        b->path.f[i].future = name;
    }
    if (i > 0 && i <= PL__FRAMES_MAX) {
        b->path.f[i - 1].site = NULL; /* a plain pl_poll of it; PL_AWAIT names its site */
    }
    return true;
}

static inline void pl__bt_leave(pl__bt *b, pl_poll_result r, const char *name)
{
    if (r == PL_READY) {
        if (pl__bt_ready(b)) {
            pl__bt_branch_ready(b);
        }
    } else if (!pl__bt_pending(b, name)) {
        pl__bt_branch(b, name);
    }
}

/* The task's own future returned: nothing stands beside it, so it never
 * makes a branch (and this calls nothing). */
static inline void pl__bt_leave_root(pl__bt *b, pl_poll_result r, const char *name)
{
    if (r == PL_READY) {
        (void)pl__bt_ready(b);
    } else {
        (void)pl__bt_pending(b, name);
    }
}

/* A PL_AWAIT of `child` returned r at `site`; child NULL: a PL_YIELD (on
 * another branch than the path's, its site is not kept). */
static inline void pl__bt_await(pl__bt *b, const pl_future *child, pl_poll_result r,
                                const pl_await_site *site)
{
    if (child != NULL) {
        if (r == PL_READY) {
            if (pl__bt_ready(b)) {
                pl__bt_branch_ready(b);
            }
        } else if (!pl__bt_pending(b, child->vtable->name)) {
            pl__bt_branch_await(b, child->vtable->name, site);
        } else if (b->depth <= PL__FRAMES_MAX) {
            b->path.f[b->depth - 1].site = site;
        }
        return;
    }
    uint32_t k = b->depth - 1;
    if (b->depth == 0 || k >= PL__FRAMES_MAX) {
        return;
    }
    if (b->path_top == PL__BT_NO_PATH) {
        b->yield_at = k; /* the frame that yields: the path will end there */
        b->yield_site = site;
    } else if (b->path_top == k + 1) {
        b->path.f[k].site = site;
    }
}

static inline bool pl__bt_frame_equal(const pl__frame *a, const pl__frame *b)
{
    return a->future == b->future && a->site == b->site;
}

/* At a PENDING poll_end: is the path found the chain `chain` names?
 * False for a chain or a poll with other branches, whatever they are. */
static inline bool pl__bt_is_path(const pl__bt *b, uint32_t chain)
{
    if (chain == 0) {
        return false;
    }
    const pl__chain *c = (const pl__chain *)b->chains.items + (chain - 1);
    if (c->len != b->path.len) {
        return false;
    }
    if ((c->tree | b->x.len) != 0) {
        return false; /* several branches: pl__bt_parked compares them */
    }
    for (uint32_t i = 0; i < pl__bt_kept(c->len); i++) {
        if (!pl__bt_frame_equal(&c->f[i], &b->path.f[i])) {
            return false;
        }
    }
    return true;
}

/* At a PENDING poll_end: the chain found becomes the task's. The common
 * case, parked where it parked before (or the time before: a loop), costs
 * one comparison here; the rest is pl__bt_parked's. */
static inline void pl__bt_park(pl__bt *b, pl__task_info *ti)
{
    if (pl__bt_is_path(b, ti->chain)) {
        return;
    }
    if (pl__bt_is_path(b, ti->chain_prev)) {
        uint32_t c = ti->chain;
        ti->chain = ti->chain_prev;
        ti->chain_prev = c;
        return;
    }
    pl__bt_parked(b, ti);
}

#endif
