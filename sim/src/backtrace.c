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
 * that completed takes any path through it with it. The other children
 * that returned PENDING are the tree's other branches (its chain names
 * them, interned apart: s->bt.trees): findings draw the whole tree,
 * pre-order, the chain first, each future's other branches after its
 * child on the chain, in the order polled.
 *
 * Chains are interned (s->bt.chains): a task names its chain by index, so a
 * million tasks parked at one await cost a million indices and one
 * chain, and the common poll (parked where it parked before) compares
 * one chain and stores nothing. Log-only: nothing here enters the trace
 * or a decision, so trace hashes do not depend on it; the interning
 * table hashes string addresses, which decides where a chain is stored,
 * never what is printed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backtrace.h"
#include "grow.h"
#include "sim_internal.h"

_Static_assert(sizeof(pl__branch_node) == sizeof(pl__frame) + 8,
               "pl__branch_node: no padding (compared as bytes)");

static uint32_t kept_of(const pl__chain *c) { return pl__bt_kept(c->len); }

/* ---- Interning -------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdu;
}

static uint64_t frame_mix(uint64_t h, const pl__frame *f)
{
    return mix(mix(h, (uint64_t)(uintptr_t)f->future), (uint64_t)(uintptr_t)f->site);
}

/* A type of interned value: equal compares a stored value with a key
 * (a value being looked up, which may hold garbage where stored values
 * hold zeros), hash hashes either alike, store copies a key to where a
 * value is kept, zeroing what it leaves unused. */
typedef struct intern_type {
    size_t size;
    bool (*equal)(const void *stored, const void *key);
    uint64_t (*hash)(const void *value);
    void (*store)(void *to, const void *key);
} intern_type;

static const void *item_at(const pl__interned *t, const intern_type *ty, size_t at)
{
    return (const unsigned char *)t->items + at * ty->size;
}

/* Values a run finds by a scan, before it indexes them by hash. */
#define SCANNED 16

/* A hash already taken by another value leaves that one unindexed: it
 * is stored again when met again, which costs memory, not truth. Out of
 * memory likewise. */
static void index_one(pl__interned *t, uint64_t h, size_t at)
{
    uint32_t other;
    if (!pl__hashmap_get(&t->index, h, &other)) {
        (void)pl__hashmap_put(&t->index, h, (uint32_t)at);
    }
}

/* The value equal to key, index + 1, stored on first use; 0 out of memory. */
static uint32_t intern(pl__interned *t, const intern_type *ty, const void *key)
{
    uint64_t h = 0;
    uint32_t at;
    if (t->len <= SCANNED) {
        /* Most runs know a few values: a scan costs less than hashing. */
        for (at = 0; at < t->len; at++) {
            if (ty->equal(item_at(t, ty, at), key)) {
                return at + 1;
            }
        }
    } else {
        h = ty->hash(key);
        if (pl__hashmap_get(&t->index, h, &at) && ty->equal(item_at(t, ty, at), key)) {
            return at + 1;
        }
    }
    if (t->len >= UINT32_MAX - 1 ||
        pl__grow_append(&t->items, &t->cap, t->len + 1, ty->size, 16, 0) != 0) {
        return 0;
    }
    ty->store((unsigned char *)t->items + t->len * ty->size, key);
    t->len++;
    if (t->len == SCANNED + 1) {
        for (size_t i = 0; i < t->len; i++) { /* from here on, looked up by hash */
            index_one(t, ty->hash(item_at(t, ty, i)), i);
        }
    } else if (t->len > SCANNED + 1) {
        index_one(t, h, t->len - 1);
    }
    return (uint32_t)t->len;
}

static void interned_free(pl__interned *t)
{
    free(t->items);
    pl__hashmap_free(&t->index);
    *t = (pl__interned){0};
}

/* Chains: only the kept frames count. */
static bool chain_equal(const void *stored, const void *key)
{
    const pl__chain *a = stored;
    const pl__chain *b = key;
    if (a->len != b->len || a->tree != b->tree) {
        return false;
    }
    for (uint32_t i = 0; i < kept_of(a); i++) {
        if (!pl__bt_frame_equal(&a->f[i], &b->f[i])) {
            return false;
        }
    }
    return true;
}

static uint64_t chain_hash(const void *value)
{
    const pl__chain *c = value;
    uint64_t h = mix(mix(0, c->len), c->tree);
    for (uint32_t i = 0; i < kept_of(c); i++) {
        h = frame_mix(h, &c->f[i]);
    }
    return h;
}

static void chain_store(void *to, const void *key)
{
    const pl__chain *c = key;
    pl__chain *out = to;
    memset(out, 0, sizeof *out);
    out->len = c->len;
    out->tree = c->tree;
    memcpy(out->f, c->f, kept_of(c) * sizeof c->f[0]);
}

static const intern_type chain_type = {sizeof(pl__chain), chain_equal, chain_hash, chain_store};

/* Branches: only the nodes up to len count. */
static bool branches_equal(const void *stored, const void *key)
{
    const pl__branches *a = stored;
    const pl__branches *b = key;
    return a->len == b->len && a->cut == b->cut && memcmp(a->n, b->n, a->len * sizeof a->n[0]) == 0;
}

static uint64_t branches_hash(const void *value)
{
    const pl__branches *x = value;
    uint64_t h = mix(mix(0, x->len), x->cut);
    for (uint32_t i = 0; i < x->len; i++) {
        h = mix(frame_mix(h, &x->n[i].f), ((uint64_t)x->n[i].depth << 32) | x->n[i].stamp);
    }
    return h;
}

static void branches_store(void *to, const void *key)
{
    const pl__branches *x = key;
    pl__branches *out = to;
    memset(out, 0, sizeof *out);
    out->len = x->len;
    out->cut = x->cut;
    memcpy(out->n, x->n, x->len * sizeof x->n[0]);
}

static const intern_type branches_type = {sizeof(pl__branches), branches_equal, branches_hash,
                                          branches_store};

static const pl__chain *chain_at(const pl__bt *b, uint32_t chain)
{
    return (const pl__chain *)b->chains.items + (chain - 1);
}

static const pl__branches *tree_at(const pl__bt *b, uint32_t tree)
{
    return (const pl__branches *)b->trees.items + (tree - 1);
}

/* ---- The other branches ---------------------------------------------- */

/* Post-order places each node: its subtree is the run of nodes just
 * before it that are deeper with its stamp (a future's stamp holds over
 * its whole poll: the path's top cannot move while a branch off it is
 * polled). A node whose stamp is its depth has the path's frame above
 * it as its parent: the path stood at its depth, so it was a sibling of
 * the path's top. Within one stamp, depths alone make the tree, and the
 * node just before a future is its last child: where it awaited. */
static uint32_t subtree_start(const pl__branches *x, uint32_t r)
{
    uint32_t s = r;
    while (s > 0 && x->n[s - 1].depth > x->n[r].depth && x->n[s - 1].stamp == x->n[r].stamp) {
        s--;
    }
    return s;
}

/* Keeps the node; false when it is left out. */
static bool branch_keep(pl__bt *b, const char *name)
{
    pl__branches *x = &b->x;
    uint32_t depth = b->depth;
    uint32_t stamp = b->path_top;
    PL__SIM_ASSERT(stamp <= depth && x->len <= PL__BRANCH_NODES_MAX);
    if (depth >= PL__FRAMES_MAX) {
        x->cut = 1; /* as deep as the chain keeps frames, no deeper */
        return false;
    }
    uint32_t n = x->len;
    const pl_await_site *site = NULL;
    if (n > 0 && x->n[n - 1].depth == depth + 1 && x->n[n - 1].stamp == stamp) {
        site = b->x_awaited[n - 1];
    }
    if (n == PL__BRANCH_NODES_MAX) {
        /* Too wide: its own subtree makes room for it, so no node is
         * ever kept without its parent. */
        x->cut = 1;
        while (n > 0 && x->n[n - 1].depth > depth && x->n[n - 1].stamp == stamp) {
            n--;
        }
        x->len = n;
        if (n == PL__BRANCH_NODES_MAX) {
            return false;
        }
    }
    x->n[n] = (pl__branch_node){{name, site}, depth, stamp};
    b->x_awaited[n] = NULL;
    x->len = n + 1;
    return true;
}

void pl__bt_branch(pl__bt *b, const char *name) { (void)branch_keep(b, name); }

void pl__bt_branch_await(pl__bt *b, const char *name, const pl_await_site *site)
{
    if (branch_keep(b, name)) {
        b->x_awaited[b->x.len - 1] = site;
    }
}

void pl__bt_branch_ready(pl__bt *b)
{
    pl__branches *x = &b->x;
    while (x->len > 0 && x->n[x->len - 1].depth > b->depth &&
           x->n[x->len - 1].stamp == b->path_top) {
        x->len--;
    }
}

/* ---- Parking ---------------------------------------------------------- */

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

/* Out of memory the task has no backtrace (a report shows none), or
 * its chain without the other branches. */
static void park_new(pl__bt *b, pl__task_info *ti)
{
    PL__SIM_ASSERT(b->depth == 0 && b->path_top == 0 && b->path.len > 0);
    b->path.tree = b->x.len > 0 ? intern(&b->trees, &branches_type, &b->x) : 0;
    if (ti->chain != 0 && chain_equal(chain_at(b, ti->chain), &b->path)) {
        return;
    }
    ti->chain = intern(&b->chains, &chain_type, &b->path);
}

void pl__bt_free(pl__bt *b)
{
    interned_free(&b->chains);
    interned_free(&b->trees);
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
    return chain_at(&s->bt, s->tasks.info[id].chain);
}

/* A chain and its other branches in pre-order, as the finding keeps them. */
typedef struct tree_walk {
    const pl__chain *c;
    const pl__branches *x; /* NULL: one branch */
    pl_finding_node *out;
    uint32_t len;
    bool cut;
} tree_walk;

static void tree_push(tree_walk *w, const pl__frame *f, uint32_t depth)
{
    if (w->len == PL_FINDING_TREE_MAX) {
        w->cut = true;
        return;
    }
    const pl_await_site *at = f->site;
    w->out[w->len++] = (pl_finding_node){
        {f->future, at ? base_name(at->file) : NULL, at ? at->func : NULL, at ? at->line : 0},
        depth};
}

/* Node r of the other branches, then its children's subtrees in order. */
static void walk_branch(tree_walk *w, uint32_t r)
{
    const pl__branch_node *n = &w->x->n[r];
    tree_push(w, &n->f, n->depth);
    for (uint32_t i = subtree_start(w->x, r); i < r; i++) {
        if (w->x->n[i].depth == n->depth + 1) {
            walk_branch(w, i);
        }
    }
}

/* The chain's frame k, then its child on the chain, then the other
 * branches parked under it (polled after that child). */
static void walk_chain(tree_walk *w, uint32_t k)
{
    tree_push(w, &w->c->f[k], k);
    if (k + 1 < kept_of(w->c)) {
        walk_chain(w, k + 1);
    }
    for (uint32_t i = 0; w->x != NULL && i < w->x->len; i++) {
        if (w->x->n[i].depth == k + 1 && w->x->n[i].stamp == k + 1) {
            walk_branch(w, i);
        }
    }
}

/* Task id's tree into out (PL_FINDING_TREE_MAX nodes); returns how many,
 * 0 when it has no chain. */
static uint32_t tree_of(const pl__sim *s, uint32_t id, pl_finding_node *out, bool *cut)
{
    const pl__chain *c = chain_of(s, id);
    *cut = false;
    if (c == NULL) {
        return 0;
    }
    tree_walk w = {c, c->tree != 0 ? tree_at(&s->bt, c->tree) : NULL, out, 0, false};
    walk_chain(&w, 0);
    *cut = w.cut || c->len > PL__FRAMES_MAX || (w.x != NULL && w.x->cut);
    return w.len;
}

/* Leaves of a pre-order tree: nodes the next one is not deeper than. */
static uint32_t leaves_of(const pl_finding_node *n, uint32_t len)
{
    uint32_t leaves = 0;
    for (uint32_t i = 0; i < len; i++) {
        leaves += i + 1 == len || n[i + 1].depth <= n[i].depth;
    }
    return leaves;
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

/* snprintf at buf + *used, *used kept below len. */
static void put(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void put(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    if (*used >= len - 1) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    *used += n > 0 ? (size_t)n : 0;
    if (*used >= len) {
        *used = len - 1;
    }
}

/* True when node i is the last child of its parent. */
static bool last_child(const pl_finding_node *n, uint32_t len, uint32_t i)
{
    for (uint32_t j = i + 1; j < len; j++) {
        if (n[j].depth <= n[i].depth) {
            return n[j].depth < n[i].depth;
        }
    }
    return true;
}

/* What a drawn tree leaves of a message for the lines after it (a
 * spawn site, the next task). */
#define TREE_LEAVES_ROOM 128

/* Node i's line: the path of "|  " and "   " to it, then "+- " or "`- "
 * for its own branch, then the frame. */
static void node_line(const pl_finding_node *n, uint32_t count, uint32_t i, bool *more,
                      const char *indent, char *line, size_t len)
{
    size_t used = 0;
    line[0] = '\0';
    put(line, len, &used, "\n%s", indent);
    for (uint32_t k = 1; k < n[i].depth; k++) {
        put(line, len, &used, "%s", more[k] ? "|  " : "   ");
    }
    if (n[i].depth > 0) {
        bool last = last_child(n, count, i);
        more[n[i].depth] = !last;
        put(line, len, &used, "%s", last ? "`- " : "+- ");
    }
    const pl_finding_frame *f = &n[i].frame;
    if (f->file != NULL) {
        put(line, len, &used, "%s (%s:%d in %s)", f->future, f->file, f->line, f->function);
    } else {
        put(line, len, &used, "%s", f->future);
    }
}

/* As task dumps draw a tree. A line that would leave the message less
 * than TREE_LEAVES_ROOM is not drawn, nor the rest: the tree says so. */
void pl__bt_tree_text(const pl_finding_node *n, uint32_t count, bool cut, const char *indent,
                      char *buf, size_t len, size_t *used)
{
    bool more[PL_FINDING_TREE_MAX] = {false}; /* more siblings follow at depth k */
    char note[96];
    snprintf(note, sizeof note, "\n%s(deeper or wider than kept: the rest is left out)", indent);
    for (uint32_t i = 0; i < count; i++) {
        PL__SIM_ASSERT(n[i].depth < PL_FINDING_TREE_MAX);
        char line[256];
        node_line(n, count, i, more, indent, line, sizeof line);
        if (*used + strlen(line) + strlen(note) + TREE_LEAVES_ROOM >= len) {
            cut = true;
            break;
        }
        put(buf, len, used, "%s", line);
    }
    if (cut) {
        put(buf, len, used, "%s", note);
    }
}

void pl__bt_append(const pl__sim *s, uint32_t id, const char *indent, char *buf, size_t len,
                   size_t *used)
{
    pl_finding_node tree[PL_FINDING_TREE_MAX];
    bool cut;
    uint32_t count = tree_of(s, id, tree, &cut);
    if (leaves_of(tree, count) > 1) {
        char deeper[32];
        snprintf(deeper, sizeof deeper, "%s  ", indent);
        put(buf, len, used, "\n%sparked in:", indent);
        pl__bt_tree_text(tree, count, cut, deeper, buf, len, used);
        return;
    }
    char chain[512];
    pl__bt_chain_text(s, id, chain, sizeof chain);
    if (chain[0] == '\0') {
        return;
    }
    put(buf, len, used, "\n%sparked in: %s", indent, chain);
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
    ft->tree_len = tree_of(s, id, ft->tree, &ft->tree_cut);
    ft->tree_branches = leaves_of(ft->tree, ft->tree_len);
    ft->frames_len = kept_of(c);
    ft->frames_cut = c->len > PL__FRAMES_MAX;
    for (uint32_t i = 0, k = 0; i < ft->tree_len && k < ft->frames_len; i++) {
        if (ft->tree[i].depth == k) { /* the chain: each depth's first node */
            ft->frames[k++] = ft->tree[i].frame;
        }
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
