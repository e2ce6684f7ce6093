/* core/src/dump.c: task dumps (pollen/dump.h).
 *
 * A production executor records nothing a dump could read back, so the
 * dump asks each parked task: it polls it once under a poll watch that
 * builds the tree of futures the poll went through, and keeps the
 * branches that returned PENDING. The nodes are kept in pre-order with
 * their depth: a READY child truncates the array back to itself, so
 * what is left when the task's poll returns is exactly its pending tree.
 * The tasks are listed first (with a reference each): a dump poll may
 * finish a task, and a freed task moves another one in ex->tasks.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "executor_internal.h"
#include "pollen/dump.h"
#include "recorder.h"

enum { TREE_NODES_MAX = 256, TREE_DEPTH_MAX = 64 };
#define NO_NODE UINT32_MAX

typedef struct tree_node {
    const char *future;
    const pl_await_site *site; /* the await it is parked at; NULL: none */
    const char *object;        /* its declared wait (pl_wait_declare); NULL: none */
    const char *condition;
    uint32_t depth;
} tree_node;

typedef struct dump_tree {
    tree_node nodes[TREE_NODES_MAX];
    uint32_t len;
    uint32_t open[TREE_DEPTH_MAX]; /* the node of each depth whose poll runs */
    uint32_t depth;
    bool truncated; /* deeper or wider than the arrays: a part is left out */
} dump_tree;

/* ---- The watch that builds the tree ------------------------------------ */

static tree_node *innermost(dump_tree *d)
{
    if (d->depth == 0 || d->depth > TREE_DEPTH_MAX || d->open[d->depth - 1] == NO_NODE) {
        return NULL;
    }
    return &d->nodes[d->open[d->depth - 1]];
}

static void tree_open(dump_tree *d, const char *future)
{
    uint32_t node = NO_NODE;
    if (d->depth < TREE_DEPTH_MAX && d->len < TREE_NODES_MAX) {
        node = d->len++;
        d->nodes[node] = (tree_node){future, NULL, NULL, NULL, d->depth};
    } else {
        d->truncated = true;
    }
    if (d->depth < TREE_DEPTH_MAX) {
        d->open[d->depth] = node;
    }
    d->depth++;
}

static void tree_enter(void *ud, pl_future *f) { tree_open(ud, f->vtable->name); }

/* A READY child is done: it and what it polled leave the tree. */
static void tree_leave(void *ud, pl_future *f, pl_poll_result r)
{
    (void)f;
    dump_tree *d = ud;
    PL_ASSERT(d->depth > 1);
    d->depth--;
    uint32_t node = d->depth < TREE_DEPTH_MAX ? d->open[d->depth] : NO_NODE;
    if (r == PL_READY && node != NO_NODE) {
        d->len = node;
    }
}

/* An await names its site on the future that awaits (the innermost one
 * still polling once the child returned), as the simulator's frames do. */
static void tree_await(void *ud, pl_future *child, pl_poll_result r, const pl_await_site *site)
{
    dump_tree *d = ud;
    if (child != NULL) {
        tree_leave(ud, child, r);
    }
    tree_node *n = innermost(d);
    if (r == PL_PENDING && n != NULL) {
        n->site = site;
    }
}

static void tree_wait(void *ud, const pl_wait *w)
{
    tree_node *n = innermost(ud);
    if (n != NULL) {
        n->object = w->object;
        n->condition = w->condition;
    }
}

static void tree_on_purpose(void *ud) { (void)ud; }

/* ---- Taking a task's tree ---------------------------------------------- */

typedef enum task_seen {
    SEEN_PARKED,    /* polled: PENDING, the tree holds its backtrace */
    SEEN_WOKE,      /* polled: PENDING, and it woke itself (now runnable) */
    SEEN_COMPLETED, /* polled: READY (nobody had woken it) */
    SEEN_CANCELLED, /* polled: PENDING, and it cancelled itself in that poll */
    SEEN_RUNNABLE,
    SEEN_RUNNING,
    SEEN_NOT_POLLED, /* parked, not polled: an observed executor, or a dump from a poll */
    SEEN_FINISHED,   /* listed unfinished, then completed or cancelled by another
                        task's dump poll before its turn: not polled */
} task_seen;

/* Whether the dump polled the task (JSON's polled_by_dump). */
static bool polled_by_dump(task_seen s) { return s <= SEEN_CANCELLED; }

static task_seen take_tree(pl_executor *ex, pl_task *t, dump_tree *d, bool may_poll)
{
    if (t->state >= TASK_DONE) {
        return SEEN_FINISHED;
    }
    if (t->state == TASK_RUNNING) {
        return SEEN_RUNNING;
    }
    if (t->state == TASK_SCHEDULED) {
        return SEEN_RUNNABLE;
    }
    if (!may_poll || (t->flags & TASK_ABANDONED)) {
        return SEEN_NOT_POLLED;
    }
    const pl_poll_watch watch = {d, tree_enter, tree_leave, tree_wait, tree_on_purpose, NULL,
                                 tree_await};
    d->len = 0;
    d->depth = 0;
    d->truncated = false;
    tree_open(d, ((const pl_future *)(const void *)t->future)->vtable->name);
    pl_poll_result r = pl__executor_poll_watched(ex, t, &watch);
    PL_ASSERT(d->depth == 1);
    if (r == PL_READY) {
        return SEEN_COMPLETED;
    }
    if (t->state >= TASK_DONE) {
        return SEEN_CANCELLED;
    }
    return t->state == TASK_SCHEDULED ? SEEN_WOKE : SEEN_PARKED;
}

/* ---- Output helpers ------------------------------------------------------ */

static const char *base_name(const char *path)
{
    const char *slash = path != NULL ? strrchr(path, '/') : NULL;
    return slash != NULL ? slash + 1 : path;
}

static void json_str(FILE *out, const char *s)
{
    if (s == NULL) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\') {
            fprintf(out, "\\%c", *p);
        } else if (*p < 0x20 || *p >= 0x7f) {
            fprintf(out, "\\u%04x", (unsigned)*p);
        } else {
            fputc(*p, out);
        }
    }
    fputc('"', out);
}

static void fmt_ms(char *buf, size_t len, pl_time ns)
{
    pl_time mag = ns < 0 ? -ns : ns;
    snprintf(buf, len, "%s%" PRId64 ".%03" PRId64 " ms", ns < 0 ? "-" : "", mag / PL_MS,
             (mag % PL_MS) / PL_US);
}


static const char *state_name(task_seen s)
{
    static const char *const names[] = {
        [SEEN_PARKED] = "parked",
        [SEEN_WOKE] = "parked",
        [SEEN_COMPLETED] = "completed_in_dump",
        [SEEN_CANCELLED] = "cancelled_in_dump",
        [SEEN_RUNNABLE] = "runnable",
        [SEEN_RUNNING] = "running",
        [SEEN_NOT_POLLED] = "parked",
        [SEEN_FINISHED] = "finished_during_dump",
    };
    return names[s];
}

/* A dump poll's outcome in words, after the state. */
static const char *seen_note(task_seen s)
{
    switch (s) {
    case SEEN_WOKE:
        return "; the dump's poll woke it: runnable now";
    case SEEN_COMPLETED:
        return "; the dump's poll returned READY, so it completed: it could go on and "
               "nobody had woken it (a lost wakeup)";
    case SEEN_CANCELLED:
        return "; the dump's poll returned PENDING and cancelled the task";
    case SEEN_NOT_POLLED:
        return "; not polled by this dump: no backtrace";
    case SEEN_FINISHED:
        return "; finished during the dump (another task's dump poll completed or "
               "cancelled it): not polled";
    default:
        return "";
    }
}

/* ---- Text ---------------------------------------------------------------- */

static void text_node(FILE *out, const tree_node *n)
{
    fputs(n->future, out);
    if (n->site != NULL) {
        fprintf(out, " (%s:%d in %s)", base_name(n->site->file), n->site->line, n->site->func);
    }
    if (n->object != NULL) {
        fprintf(out, " [waits on %s: %s]", n->object, n->condition);
    }
    fputc('\n', out);
}

/* True when node i is the last child of its parent. */
static bool last_child(const dump_tree *d, uint32_t i)
{
    for (uint32_t j = i + 1; j < d->len; j++) {
        if (d->nodes[j].depth <= d->nodes[i].depth) {
            return d->nodes[j].depth < d->nodes[i].depth;
        }
    }
    return true;
}

/* One line per node: the path of "|  " and "   " to it, then "+- " or
 * "`- " for its own branch. */
static void text_tree(FILE *out, const dump_tree *d, const char *indent)
{
    bool more[TREE_DEPTH_MAX] = {false}; /* more siblings follow at depth k */
    for (uint32_t i = 0; i < d->len; i++) {
        const tree_node *n = &d->nodes[i];
        fputs(indent, out);
        for (uint32_t k = 1; k < n->depth; k++) {
            fputs(more[k] ? "|  " : "   ", out);
        }
        if (n->depth > 0) {
            bool last = last_child(d, i);
            more[n->depth] = !last;
            fputs(last ? "`- " : "+- ", out);
        }
        text_node(out, n);
    }
    if (d->truncated) {
        fprintf(out, "%s(deeper or wider than %d nodes: the rest is left out)\n", indent,
                TREE_NODES_MAX);
    }
}

/* A task still parked (or parked until the dump's own poll woke it). */
static bool shows_park_time(task_seen s)
{
    return s == SEEN_PARKED || s == SEEN_WOKE || s == SEEN_NOT_POLLED;
}

static void text_task(FILE *out, pl_executor *ex, pl_task *t, task_seen seen, const dump_tree *d)
{
    fprintf(out, "task #%" PRIu32 " '%s'", t->id, pl_task_name(t));
    if (ex->rec != NULL) {
        const task_track *k = task_track_of(t);
        if (k->where != NULL) {
            fprintf(out, " spawned at %s%s%s", base_name(k->where), k->func ? " in " : "",
                    k->func ? k->func : "");
        } else {
            fputs(" spawned at an unknown site", out);
        }
    }
    fprintf(out, "\n  state: %s", state_name(seen));
    if (ex->rec != NULL && shows_park_time(seen)) {
        char since[32];
        fmt_ms(since, sizeof since, pl__executor_now(ex) - task_track_of(t)->parked_ns);
        fprintf(out, " for %s", since);
    }
    fprintf(out, "%s\n  polls %" PRIu32 ", references %" PRIu32, seen_note(seen), t->polls,
            t->refs);
    if (pl__counts_clones(ex)) {
        fprintf(out, ", waker clones %" PRIu32, task_watch_of(t)->waker_clones);
    }
    fputc('\n', out);
    if (seen == SEEN_PARKED || seen == SEEN_WOKE) {
        fputs("  parked in:\n", out);
        text_tree(out, d, "    ");
    }
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_site(FILE *out, const char *file, int line, const char *func)
{
    fputs("{\"file\":", out);
    json_str(out, base_name(file));
    fprintf(out, ",\"line\":%d,\"function\":", line);
    json_str(out, func);
    fputc('}', out);
}

/* "file:line" as pl_spawn records it. */
static void json_spawn_site(FILE *out, const char *where, const char *func)
{
    const char *colon = where != NULL ? strrchr(where, ':') : NULL;
    if (colon == NULL) {
        fputs("null", out);
        return;
    }
    char file[256];
    size_t len = (size_t)(colon - where) < sizeof file - 1 ? (size_t)(colon - where)
                                                            : sizeof file - 1;
    memcpy(file, where, len);
    file[len] = '\0';
    json_site(out, file, atoi(colon + 1), func);
}

/* Node i and its subtree; returns the index after the subtree. */
static uint32_t json_tree(FILE *out, const dump_tree *d, uint32_t i)
{
    const tree_node *n = &d->nodes[i];
    fputs("{\"future\":", out);
    json_str(out, n->future);
    fputs(",\"await\":", out);
    if (n->site != NULL) {
        json_site(out, n->site->file, n->site->line, n->site->func);
    } else {
        fputs("null", out);
    }
    fputs(",\"waits_on\":", out);
    json_str(out, n->object);
    fputs(",\"condition\":", out);
    json_str(out, n->condition);
    fputs(",\"children\":[", out);
    uint32_t j = i + 1;
    while (j < d->len && d->nodes[j].depth > n->depth) {
        if (j != i + 1) {
            fputc(',', out);
        }
        j = json_tree(out, d, j);
    }
    fputs("]}", out);
    return j;
}

static void json_task(FILE *out, pl_executor *ex, pl_task *t, task_seen seen, const dump_tree *d,
                      bool first)
{
    fprintf(out, "%s{\"id\":%" PRIu32 ",\"name\":", first ? "" : ",", t->id);
    json_str(out, pl_task_name(t));
    fprintf(out, ",\"state\":\"%s\",\"polled_by_dump\":%s,\"spawned_at\":", state_name(seen),
            polled_by_dump(seen) ? "true" : "false");
    const task_track *k = ex->rec != NULL ? task_track_of(t) : NULL;
    if (k != NULL) {
        json_spawn_site(out, k->where, k->func);
    } else {
        fputs("null", out);
    }
    fputs(",\"parked_since_ns\":", out);
    if (k != NULL && shows_park_time(seen)) {
        fprintf(out, "%" PRId64, k->parked_ns);
    } else {
        fputs("null", out);
    }
    fprintf(out, ",\"polls\":%" PRIu32 ",\"refs\":%" PRIu32 ",\"waker_clones\":", t->polls,
            t->refs);
    if (pl__counts_clones(ex)) {
        fprintf(out, "%" PRIu32, task_watch_of(t)->waker_clones);
    } else {
        fputs("null", out);
    }
    fputs(",\"backtrace\":", out);
    if ((seen == SEEN_PARKED || seen == SEEN_WOKE) && d->len > 0) {
        json_tree(out, d, 0);
    } else {
        fputs("null", out);
    }
    fprintf(out, ",\"backtrace_truncated\":%s}", d->truncated ? "true" : "false");
}

/* ---- The dump ------------------------------------------------------------ */

static void write_head(FILE *out, pl_executor *ex, pl_dump_format format, size_t n)
{
    char now[32];
    fmt_ms(now, sizeof now, pl__executor_now(ex));
    if (format == PL_DUMP_JSON) {
        fprintf(out, "{\"time_ns\":%" PRId64 ",\"unfinished\":%zu,\"tasks\":[",
                pl__executor_now(ex), n);
        return;
    }
    fprintf(out, "pollen task dump at %s: %zu unfinished task%s\n", now, n, n == 1 ? "" : "s");
}

static void write_tail(FILE *out, pl_executor *ex, pl_dump_format format)
{
    if (format == PL_DUMP_JSON) {
        fputs("],\"recorder\":", out);
        if (ex->rec != NULL) {
            pl__recorder_write_json(ex, out);
        } else {
            fputs("null", out);
        }
        fputs("}\n", out);
        return;
    }
    if (ex->rec != NULL) {
        fputs("flight recorder, the latest last:\n", out);
        pl__recorder_write_text(ex, out, "  ");
    }
}

/* The unfinished tasks, each with a reference the caller releases. */
static pl_task **list_tasks(pl_executor *ex, size_t cap, size_t *n)
{
    pl_task **list = pl_alloc(ex, cap * sizeof *list);
    *n = 0;
    if (list == NULL) {
        return NULL;
    }
    for (uint32_t i = 0; i < ex->tasks_len && *n < cap; i++) {
        pl_task *t = ex->tasks[i];
        if (t->state < TASK_DONE) {
            list[(*n)++] = pl_task_ref(t);
        }
    }
    return list;
}

int pl_executor_dump(pl_executor *ex, FILE *out, pl_dump_format format)
{
    /* The cached clock may be a long wait old (tick reads it lazily):
     * the dump's time and each "parked for" are measured from now, on
     * the executor's timeline (a task's pl_now may be its node's). */
    ex->now_stale = true;
    (void)pl__executor_now(ex);
    size_t n = 0;
    size_t cap = ex->live + 1; /* a dump poll may change ex->live */
    pl_task **list = list_tasks(ex, cap, &n);
    if (list == NULL) {
        return PL_ENOMEM;
    }
    /* Task ids grow with spawns: sort the listing by id. */
    for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0 && list[j - 1]->id > list[j]->id; j--) {
            pl_task *tmp = list[j];
            list[j] = list[j - 1];
            list[j - 1] = tmp;
        }
    }
    dump_tree *d = pl_alloc(ex, sizeof *d);
    bool may_poll = ex->obs == NULL && ex->running == NULL && d != NULL;
    write_head(out, ex, format, n);
    bool truncated = d == NULL;
    dump_tree none = {.len = 0};
    for (size_t i = 0; i < n; i++) {
        dump_tree *tree = d != NULL ? d : &none;
        tree->len = 0;
        tree->truncated = false;
        task_seen seen = take_tree(ex, list[i], tree, may_poll);
        truncated = truncated || tree->truncated;
        if (format == PL_DUMP_JSON) {
            json_task(out, ex, list[i], seen, tree, i == 0);
        } else {
            text_task(out, ex, list[i], seen, tree);
        }
        task_release(list[i]);
    }
    write_tail(out, ex, format);
    pl_free(ex, d, sizeof *d);
    pl_free(ex, list, cap * sizeof *list);
    fflush(out);
    if (ferror(out)) {
        return PL_EIO;
    }
    return truncated ? PL_ENOMEM : 0;
}

void pl_executor_set_dump_output(pl_executor *ex, FILE *out, pl_dump_format format)
{
    ex->dump_out = out;
    ex->dump_format = (uint8_t)format;
}

void pl_executor_request_dump(pl_executor *ex)
{
    int saved = errno; /* a signal handler must leave errno as it found it */
    pl__interrupt_set(ex, PL__INTERRUPT_DUMP);
    ex->system.vtable->remote_wake(ex->system.self);
    errno = saved;
}

void pl__dump_serve(pl_executor *ex)
{
    FILE *out = ex->dump_out != NULL ? ex->dump_out : stderr;
    (void)pl_executor_dump(ex, out, (pl_dump_format)ex->dump_format);
}
