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
 * children (a select, a join) is parked in all of them; the chain follows
 * the last one polled that returned PENDING. A child that completed
 * takes any path through it with it.
 *
 * Chains are interned (s->chains): a task names its chain by index, so a
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

#include "sim_internal.h"

#define NO_PATH UINT32_MAX

static pl__frame frame_of(const pl_future *f)
{
    return (pl__frame){f->vtable->name, NULL, NULL, 0};
}

static uint32_t kept_of(const pl__chain *c)
{
    return c->len < PL__FRAMES_MAX ? c->len : PL__FRAMES_MAX;
}

void pl__bt_poll_begin(pl__sim *s, const pl_task *t)
{
    /* A poll left through a longjmp (a livelock) never returned: its
     * frames are forgotten here. */
    s->frames[0] = frame_of((const pl_future *)pl_task_future((pl_task *)t));
    s->depth = 1;
    s->path.len = 0;
    s->path_top = NO_PATH;
}

void pl__bt_enter(pl__sim *s, const pl_future *f)
{
    if (s->depth < PL__FRAMES_MAX) {
        s->frames[s->depth] = frame_of(f);
    }
    s->depth++;
}

void pl__bt_leave(pl__sim *s, pl_poll_result r)
{
    PL__SIM_ASSERT(s->depth > 0);
    uint32_t i = --s->depth;
    if (r == PL_READY) {
        if (s->path_top != NO_PATH && s->path_top > i) {
            s->path.len = 0; /* the path went through this future, now done */
            s->path_top = NO_PATH;
        }
        return;
    }
    if (s->path_top == i + 1) {
        s->path_top = i; /* a child's path: this future is parked in it */
        return;
    }
    s->path.len = i + 1;
    memcpy(s->path.f, s->frames, kept_of(&s->path) * sizeof *s->frames);
    s->path_top = i;
}

void pl__bt_await(pl__sim *s, const char *file, int line, const char *func)
{
    if (s->depth == 0 || s->depth > PL__FRAMES_MAX) {
        return;
    }
    uint32_t k = s->depth - 1;
    s->frames[k].file = file;
    s->frames[k].line = line;
    s->frames[k].func = func;
    if (s->path_top == k + 1 && k < s->path.len) {
        s->path.f[k] = s->frames[k]; /* the child it awaits is the path's */
    }
}

static bool frame_equal(const pl__frame *a, const pl__frame *b)
{
    return a->future == b->future && a->file == b->file && a->func == b->func &&
           a->line == b->line;
}

static bool chain_equal(const pl__chain *a, const pl__chain *b)
{
    if (a->len != b->len) {
        return false;
    }
    for (uint32_t i = 0; i < kept_of(a); i++) {
        if (!frame_equal(&a->f[i], &b->f[i])) {
            return false;
        }
    }
    return true;
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
        h = mix(h, (uint64_t)(uintptr_t)f->file);
        h = mix(h, (uint64_t)(uintptr_t)f->func);
        h = mix(h, (uint64_t)(uint32_t)f->line);
    }
    return h;
}

void pl__bt_parked(pl__sim *s, pl__task_info *ti)
{
    PL__SIM_ASSERT(s->depth == 0 && s->path_top == 0 && s->path.len > 0);
    if (ti->chain != 0 && chain_equal(&s->chains[ti->chain - 1], &s->path)) {
        return; /* parked where it parked before */
    }
    uint64_t h = chain_hash(&s->path);
    uint32_t at;
    if (pl__hashmap_get(&s->chain_index, h, &at) && chain_equal(&s->chains[at], &s->path)) {
        ti->chain = at + 1;
        return;
    }
    /* Out of memory the task has no backtrace: a report shows none. */
    ti->chain = 0;
    if (s->chains_len >= UINT32_MAX - 1 ||
        pl__grow_append((void **)&s->chains, &s->chains_cap, s->chains_len + 1,
                        sizeof *s->chains, 16, 0) != 0) {
        return;
    }
    s->chains[s->chains_len] = s->path;
    /* A hash already taken by another chain leaves this one unindexed:
     * it is stored again when met again, which costs memory, not truth. */
    if (!pl__hashmap_get(&s->chain_index, h, &at) &&
        pl__hashmap_put(&s->chain_index, h, (uint32_t)s->chains_len) != 0) {
        return;
    }
    ti->chain = (uint32_t)++s->chains_len;
}

void pl__bt_free(pl__sim *s)
{
    free(s->chains);
    s->chains = NULL;
    s->chains_len = 0;
    s->chains_cap = 0;
    pl__hashmap_free(&s->chain_index);
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
    if (ti->spawn_where != NULL) {
        snprintf(buf, len, ", spawned at %s%s%s", base_name(ti->spawn_where),
                 ti->spawn_func != NULL ? " in " : "", ti->spawn_func != NULL ? ti->spawn_func : "");
    }
}

static const pl__chain *chain_of(const pl__sim *s, uint32_t id)
{
    if (id == 0 || id > s->tasks_spawned || s->tasks[id].chain == 0) {
        return NULL;
    }
    return &s->chains[s->tasks[id].chain - 1];
}

void pl__bt_chain_text(const pl__sim *s, uint32_t id, char *buf, size_t len)
{
    const pl__chain *c = chain_of(s, id);
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; c != NULL && i < kept_of(c) && used < len; i++) {
        const pl__frame *f = &c->f[i];
        int n;
        if (f->file != NULL) {
            n = snprintf(buf + used, len - used, "%s%s (%s:%d in %s)", i > 0 ? " > " : "",
                         f->future, base_name(f->file), f->line, f->func);
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

static void loc_set(pl_source_loc *l, const char *file, int line, const char *func)
{
    snprintf(l->file, sizeof l->file, "%s", file != NULL ? base_name(file) : "");
    snprintf(l->function, sizeof l->function, "%s", func != NULL ? func : "");
    l->line = line;
}

/* "path/file.c:120" -> file.c, 120. */
static void spawn_loc(const pl__task_info *ti, pl_source_loc *l)
{
    memset(l, 0, sizeof *l);
    if (ti->spawn_where == NULL) {
        return;
    }
    const char *base = base_name(ti->spawn_where);
    const char *colon = strrchr(base, ':');
    size_t n = colon != NULL ? (size_t)(colon - base) : strlen(base);
    snprintf(l->file, sizeof l->file, "%.*s", (int)n, base);
    l->line = colon != NULL ? atoi(colon + 1) : 0;
    snprintf(l->function, sizeof l->function, "%s", ti->spawn_func != NULL ? ti->spawn_func : "");
}

void pl__bt_note(pl__sim *s, bool fresh, uint32_t id)
{
    pl_finding *fd = &s->finding;
    if (!fresh || fd->kind == PL_FINDING_NONE || fd->tasks_len >= PL_FINDING_TASKS_MAX ||
        id == 0 || id > s->tasks_spawned) {
        return;
    }
    const pl__task_info *ti = &s->tasks[id];
    pl_finding_task *ft = &fd->tasks[fd->tasks_len++];
    memset(ft, 0, sizeof *ft);
    ft->id = id;
    snprintf(ft->name, sizeof ft->name, "%s", pl__run_name_of(s, id));
    spawn_loc(ti, &ft->spawned_at);
    const pl__chain *c = chain_of(s, id);
    if (c == NULL) {
        return;
    }
    ft->frames_len = kept_of(c);
    ft->frames_cut = c->len > PL__FRAMES_MAX;
    for (uint32_t i = 0; i < ft->frames_len; i++) {
        const pl__frame *f = &c->f[i];
        snprintf(ft->frames[i].future, sizeof ft->frames[i].future, "%s", f->future);
        loc_set(&ft->frames[i].await, f->file, f->line, f->func);
    }
}

void pl__bt_describe(pl__sim *s, bool fresh, uint32_t id)
{
    if (!fresh || s->finding.kind == PL_FINDING_NONE || id == 0 || id > s->tasks_spawned) {
        return;
    }
    pl__bt_note(s, true, id);
    char *msg = s->finding.message;
    size_t len = sizeof s->finding.message;
    size_t used = strlen(msg);
    pl__bt_append(s, id, "  ", msg, len, &used);
    const pl__task_info *ti = &s->tasks[id];
    if (ti->spawn_where != NULL && used < len - 1) {
        char site[160];
        pl__bt_spawn_text(ti, site, sizeof site);
        snprintf(msg + used, len - used, "\n  '%s' (#%u) was spawned at%s", pl__run_name_of(s, id),
                 id, site + strlen(", spawned at"));
    }
}
