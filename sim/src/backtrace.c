/* sim/src/backtrace.c: async backtraces of parked tasks and spawn sites.
 *
 * The poll watch brackets every pl_poll of a child future (enter, leave)
 * and the coroutine macros report where an await returned PENDING
 * (pollen/future.h); the observer brackets the task's own future. From
 * that nesting this file keeps, for each task, the chain of futures its
 * latest PENDING poll was parked in, outermost first, each with its
 * await point: "worker (outbox.c:124 in worker_poll) > pl_notified".
 *
 * Which chain: the PENDING path from the task's future down to the
 * innermost future that returned PENDING. A future that polls several
 * children (a select, a join, a timeout) is parked in all of them; the
 * chain follows the first one polled that returned PENDING, which is the
 * operation where a timeout or a select puts its timer last. A child
 * that completed takes any path through it with it.
 *
 * Chains are interned (s->bt.chains): a task names its chain by index, so a
 * million tasks parked at one await cost a million indices and one
 * chain, and the common poll (parked where it parked before) compares
 * one chain and stores nothing. Log-only: nothing here enters the trace
 * or a decision, so trace hashes do not depend on it; the interning
 * table hashes string addresses, which decides where a chain is stored,
 * never what is printed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backtrace.h"
#include "grow.h"
#include "sim_internal.h"

static uint32_t kept_of(const pl__chain *c) { return pl__bt_kept(c->len); }

/* Chain a against a chain of `len` futures whose kept frames are f. */
static bool frames_equal(const pl__chain *a, uint32_t len, const pl__frame *f)
{
    if (a->len != len) {
        return false;
    }
    for (uint32_t i = 0; i < kept_of(a); i++) {
        if (!pl__bt_frame_equal(&a->f[i], &f[i])) {
            return false;
        }
    }
    return true;
}

static bool chain_equal(const pl__chain *a, const pl__chain *b)
{
    return frames_equal(a, b->len, b->f);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdu;
}

static uint64_t chain_hash(const pl__chain *c)
{
    uint64_t h = mix(0, c->len);
    for (uint32_t i = 0; i < kept_of(c); i++) {
        const pl__frame *f = &c->f[i];
        h = mix(h, (uint64_t)(uintptr_t)f->future);
        h = mix(h, (uint64_t)(uintptr_t)f->site);
    }
    return h;
}

/* Chains a run finds by a scan, before it indexes them by hash. */
#define CHAINS_SCANNED 16

/* A hash already taken by another chain leaves that one unindexed: it
 * is stored again when met again, which costs memory, not truth. Out of
 * memory likewise. */
static void index_one(pl__bt *b, uint64_t h, size_t at)
{
    uint32_t other;
    if (!pl__hashmap_get(&b->chain_index, h, &other)) {
        (void)pl__hashmap_put(&b->chain_index, h, (uint32_t)at);
    }
}

static void index_all(pl__bt *b)
{
    for (size_t i = 0; i < b->chains_len; i++) {
        index_one(b, chain_hash(&b->chains[i]), i);
    }
}

/* The slow path of pl__bt_park (backtrace.h). */
static void park_new(pl__bt *b, pl__task_info *ti);

void pl__bt_parked(pl__bt *b, pl__task_info *ti)
{
    uint32_t before = ti->chain;
    park_new(b, ti);
    if (ti->chain != before) {
        ti->chain_prev = before;
    }
}

static void park_new(pl__bt *b, pl__task_info *ti)
{
    PL__SIM_ASSERT(b->depth == 0 && b->path_top == 0 && b->path.len > 0);
    if (ti->chain != 0 && chain_equal(&b->chains[ti->chain - 1], &b->path)) {
        return;
    }
    uint64_t h = 0;
    uint32_t at;
    if (b->chains_len <= CHAINS_SCANNED) {
        /* Most runs know a few chains: a scan costs less than hashing. */
        for (at = 0; at < b->chains_len; at++) {
            if (chain_equal(&b->chains[at], &b->path)) {
                ti->chain = at + 1;
                return;
            }
        }
    } else {
        h = chain_hash(&b->path);
        if (pl__hashmap_get(&b->chain_index, h, &at) && chain_equal(&b->chains[at], &b->path)) {
            ti->chain = at + 1;
            return;
        }
    }
    /* Out of memory the task has no backtrace: a report shows none. */
    ti->chain = 0;
    if (b->chains_len >= UINT32_MAX - 1 ||
        pl__grow_append((void **)&b->chains, &b->chains_cap, b->chains_len + 1, sizeof *b->chains,
                        16, 0) != 0) {
        return;
    }
    b->chains[b->chains_len] = b->path;
    ti->chain = (uint32_t)++b->chains_len;
    if (b->chains_len == CHAINS_SCANNED + 1) {
        index_all(b); /* from here on, chains are looked up by hash */
    } else if (b->chains_len > CHAINS_SCANNED + 1) {
        index_one(b, h, b->chains_len - 1);
    }
}

void pl__bt_free(pl__bt *b)
{
    free(b->chains);
    b->chains = NULL;
    b->chains_len = 0;
    b->chains_cap = 0;
    pl__hashmap_free(&b->chain_index);
}

/* ---- Text ------------------------------------------------------------ */

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

void pl__bt_spawn_text(const pl__task_info *ti, char *buf, size_t len)
{
    buf[0] = '\0';
    if (ti->kind->where != NULL) {
        const char *func = ti->kind->func;
        snprintf(buf, len, ", spawned at %s%s%s", base_name(ti->kind->where),
                 func != NULL ? " in " : "", func != NULL ? func : "");
    }
}

static const pl__chain *chain_of(const pl__sim *s, uint32_t id)
{
    if (id == 0 || id > s->tasks.spawned || s->tasks.info[id].chain == 0) {
        return NULL;
    }
    return &s->bt.chains[s->tasks.info[id].chain - 1];
}

void pl__bt_chain_text(const pl__sim *s, uint32_t id, char *buf, size_t len)
{
    const pl__chain *c = chain_of(s, id);
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; c != NULL && i < kept_of(c) && used < len; i++) {
        const pl__frame *f = &c->f[i];
        int n;
        if (f->site != NULL) {
            n = snprintf(buf + used, len - used, "%s%s (%s:%d in %s)", i > 0 ? " > " : "",
                         f->future, base_name(f->site->file), f->site->line, f->site->func);
        } else {
            n = snprintf(buf + used, len - used, "%s%s", i > 0 ? " > " : "", f->future);
        }
        used += n > 0 ? (size_t)n : 0;
    }
    if (c != NULL && c->len > PL__FRAMES_MAX && used < len) {
        snprintf(buf + used, len - used, " > ... (%u futures deeper)", c->len - PL__FRAMES_MAX);
    }
}

void pl__bt_append(const pl__sim *s, uint32_t id, const char *indent, char *buf, size_t len,
                   size_t *used)
{
    char chain[512];
    pl__bt_chain_text(s, id, chain, sizeof chain);
    if (chain[0] == '\0' || *used >= len - 1) {
        return;
    }
    int n = snprintf(buf + *used, len - *used, "\n%sparked in: %s", indent, chain);
    *used += n > 0 ? (size_t)n : 0;
    if (*used >= len) {
        *used = len - 1;
    }
}

/* ---- The finding's parked tasks ------------------------------------- */

void pl__bt_note(pl__sim *s, bool fresh, uint32_t id)
{
    pl_finding *fd = &s->finding;
    if (!fresh || fd->kind == PL_FINDING_NONE || fd->tasks_len >= PL_FINDING_TASKS_MAX || id == 0 ||
        id > s->tasks.spawned) {
        return;
    }
    const pl__task_info *ti = &s->tasks.info[id];
    pl_finding_task *ft = &fd->tasks[fd->tasks_len++];
    memset(ft, 0, sizeof *ft);
    ft->id = id;
    snprintf(ft->name, sizeof ft->name, "%s", pl__tasks_name_of(s, id));
    ft->spawn_site = ti->kind->where != NULL ? base_name(ti->kind->where) : NULL;
    ft->spawn_function = ti->kind->func;
    const pl__chain *c = chain_of(s, id);
    if (c == NULL) {
        return;
    }
    ft->frames_len = kept_of(c);
    ft->frames_cut = c->len > PL__FRAMES_MAX;
    for (uint32_t i = 0; i < ft->frames_len; i++) {
        const pl__frame *f = &c->f[i];
        const pl_await_site *at = f->site;
        ft->frames[i] = (pl_finding_frame){f->future, at ? base_name(at->file) : NULL,
                                           at ? at->func : NULL, at ? at->line : 0};
    }
}

void pl__bt_describe(pl__sim *s, bool fresh, uint32_t id)
{
    if (!fresh || s->finding.kind == PL_FINDING_NONE || id == 0 || id > s->tasks.spawned) {
        return;
    }
    pl__bt_note(s, true, id);
    char *msg = s->finding.message;
    size_t len = sizeof s->finding.message;
    size_t used = strlen(msg);
    pl__bt_append(s, id, "  ", msg, len, &used);
    const pl__task_info *ti = &s->tasks.info[id];
    if (ti->kind->where != NULL && used < len - 1) {
        char site[160];
        pl__bt_spawn_text(ti, site, sizeof site);
        snprintf(msg + used, len - used, "\n  '%s' (#%u) was spawned at%s",
                 pl__tasks_name_of(s, id), id, site + strlen(", spawned at"));
    }
}
