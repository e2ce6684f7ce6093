/* sim/src/node.c: nodes of a cluster scenario (pollen/sim_node.h): their
 * table, their tasks' names, their disks and memory, boot and restart.
 * The crash itself is node_crash.c's.
 *
 * The table is allocated at the first pl_sim_node_add, so a run without
 * nodes pays one NULL test where the current node is asked for.
 */
#include <arpa/inet.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk/disk.h"
#include "grow.h"
#include "node.h"
#include "real.h"

/* A pl_node_alloc block: a header before the caller's bytes. */
typedef struct pl__node_block {
    struct pl__node_block *prev, *next;
    uint32_t node;
    alignas(max_align_t) unsigned char data[];
} pl__node_block;

pl__node *pl__nodes_find(pl__nodes *ns, const char *name)
{
    for (uint32_t i = 1; name != NULL && ns != NULL && i < ns->len; i++) {
        if (strcmp(ns->list[i].def.name, name) == 0) {
            return &ns->list[i];
        }
    }
    return NULL;
}

pl__node *pl__node_find(pl__sim *s, const char *name)
{
    return pl__nodes_find(s != NULL ? &s->nodes : NULL, name);
}

pl_time pl__nodes_next_event(const pl__sim *s)
{
    pl_time next = pl__disk_next_event(s->disk);
    for (uint32_t i = 1; i < s->nodes.len; i++) {
        pl_time t = pl__disk_next_event(s->nodes.list[i].disk);
        next = t < next ? t : next;
        t = s->nodes.list[i].restart_at;
        next = t != 0 && t < next ? t : next;
        t = s->nemesis.paused_until[i];
        next = t != 0 && t < next ? t : next;
    }
    return next;
}

/* One interned task name of a node. */
typedef struct pl__task_alias {
    uint32_t node;
    const char *base; /* the task's own name (static storage) */
    char *full;       /* "node/base", malloc'ed */
} pl__task_alias;

const char *pl__node_task_name(pl__nodes *ns, uint32_t n, const char *name)
{
    for (size_t i = 0; i < ns->task_names_len; i++) {
        pl__task_alias *e = &ns->task_names[i];
        if (e->node == n && (e->base == name || strcmp(e->base, name) == 0)) {
            return e->full;
        }
    }
    size_t len = strlen(ns->list[n].def.name) + 1 + strlen(name) + 1;
    char *full = malloc(len);
    if (full == NULL || pl__grow((void **)&ns->task_names, &ns->task_names_cap,
                                 ns->task_names_len + 1, sizeof *ns->task_names, 16, 0) != 0) {
        free(full);
        return name;
    }
    snprintf(full, len, "%s/%s", ns->list[n].def.name, name);
    ns->task_names[ns->task_names_len++] = (pl__task_alias){n, name, full};
    return full;
}

void pl__node_blocks_free(pl__node *node)
{
    pl__node_block *b = node->blocks;
    while (b != NULL) {
        pl__node_block *next = b->next;
        free(b);
        b = next;
    }
    node->blocks = NULL;
    node->blocks_len = 0;
}

void pl__nodes_free(pl__nodes *ns)
{
    for (uint32_t i = 0; i < ns->len; i++) {
        pl__node_blocks_free(&ns->list[i]);
        pl__disk_destroy(ns->list[i].disk);
    }
    free(ns->list);
    ns->list = NULL;
    ns->len = 0;
    for (size_t i = 0; i < ns->task_names_len; i++) {
        free(ns->task_names[i].full);
    }
    free(ns->task_names);
    ns->task_names = NULL;
    ns->task_names_len = ns->task_names_cap = 0;
}

/* ---- Declaring and booting -------------------------------------------- */

static bool name_ok(const char *name)
{
    size_t len = name != NULL ? strlen(name) : 0;
    if (len == 0 || len > 32) {
        return false;
    }
    return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == len;
}

/* A refusal: rc, and why in err (len bytes; NULL: not written). */
__attribute__((format(printf, 4, 5))) static int refuse(char *err, size_t len, int rc,
                                                        const char *fmt, ...)
{
    if (err != NULL && len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

static int host_of(char *err, size_t len, const pl_node_def *def, uint32_t *out)
{
    struct in_addr in;
    if (def->host == NULL || inet_pton(AF_INET, def->host, &in) != 1) {
        return refuse(err, len, PL_EINVAL,
                                  "pl_sim_node_add: node '%s' has host '%s', not an IPv4 address "
                                  "such as \"10.0.0.2\"",
                                  def->name, def->host != NULL ? def->host : "(null)");
    }
    uint32_t h = ntohl(in.s_addr);
    if (h >> 24 != 10) {
        return refuse(err, len, PL_EINVAL,
                                  "pl_sim_node_add: host '%s' of node '%s' is outside 10.0.0.0/8 "
                                  "(nodes live on 10.x.y.z)",
                                  def->host, def->name);
    }
    *out = h;
    return 0;
}

/* Each refusal says which rule the definition broke (setup errors print it). */
int pl__nodes_check(char *err, size_t len, pl__nodes *ns, const pl_node_def *def,
                    uint32_t *host)
{
    if (def == NULL) {
        return refuse(err, len, PL_EINVAL, "pl_sim_node_add: no definition (NULL)");
    }
    if (!name_ok(def->name)) {
        return refuse(err, len, PL_EINVAL,
                                  "pl_sim_node_add: node name '%s' is not 1 to 32 characters of "
                                  "[a-z0-9_]",
                                  def->name != NULL ? def->name : "(null)");
    }
    if (def->boot == NULL) {
        return refuse(err, len, PL_EINVAL, "pl_sim_node_add: node '%s' has no boot function",
                                  def->name);
    }
    if (pl__nodes_find(ns, def->name) != NULL) {
        return refuse(err, len, PL_EINVAL, "pl_sim_node_add: a node named '%s' exists already",
                                  def->name);
    }
    int rc = host_of(err, len, def, host);
    if (rc != 0) {
        return rc;
    }
    for (uint32_t i = 1; i < ns->len; i++) {
        if (ns->list[i].host == *host) {
            return refuse(err, len, PL_EINVAL,
                                      "pl_sim_node_add: host '%s' of node '%s' is node '%s''s "
                                      "already (one host per node)",
                                      def->host, def->name, ns->list[i].def.name);
        }
    }
    if (ns->len > PL_SIM_NODES_MAX) {
        return refuse(err, len, PL_ENOSPC,
                                  "pl_sim_node_add: node '%s' would be one more than "
                                  "PL_SIM_NODES_MAX (%d)",
                                  def->name, PL_SIM_NODES_MAX);
    }
    return 0;
}

/* Node 0 is the scenario itself: the table exists once nodes or node
 * memory do. */
static int nodes_table(pl__nodes *ns)
{
    if (ns->list == NULL) {
        ns->list = calloc(PL_SIM_NODES_MAX + 1, sizeof *ns->list);
        if (ns->list == NULL) {
            return PL_ENOMEM;
        }
        ns->len = 1;
    }
    return 0;
}

pl__node *pl__nodes_declare(pl__nodes *ns, const pl_node_def *def, uint32_t host)
{
    if (nodes_table(ns) != 0) {
        return NULL;
    }
    PL__SIM_ASSERT(ns->len <= PL_SIM_NODES_MAX);
    pl__node *node = &ns->list[ns->len++];
    node->def = *def;
    node->host = host;
    return node;
}

/* 127.X.b.c keeps the low two bytes of 10.a.b.c: two nodes must differ
 * there. */
static int host_free(const pl__real *r, const pl_node_def *def, uint32_t host, char *err,
                     size_t len)
{
    for (uint32_t i = 1; i < r->nodes.len; i++) {
        if ((r->nodes.list[i].host & 0xffffu) == (host & 0xffffu)) {
            snprintf(err, len,
                     "pl_sim_node_add: on the real backend node '%s' (%s) would share node "
                     "'%s''s loopback host (10.a.b.c is 127.X.b.c: hosts must differ in b.c)",
                     def->name, def->host, r->nodes.list[i].def.name);
            return PL_EINVAL;
        }
    }
    return 0;
}

/* pl_sim_node_add on the real backend: the same checks (and one more),
 * then the boot with the node's tasks as the node's; refusals go to
 * stderr, where the real run's report shows them. */
static int real_node_add(pl__real *r, pl_executor *ex, const pl_node_def *def)
{
    char err[256] = "pl_sim_node_add: the executor is not the real run's";
    uint32_t host = 0;
    int rc = ex != r->ex ? PL_EINVAL : pl__nodes_check(err, sizeof err, &r->nodes, def, &host);
    rc = rc != 0 ? rc : host_free(r, def, host, err, sizeof err);
    pl__node *node = rc == 0 ? pl__nodes_declare(&r->nodes, def, host) : NULL;
    if (rc == 0 && node == NULL) {
        rc = PL_ENOMEM;
        snprintf(err, sizeof err, "pl_sim_node_add: out of memory");
    }
    if (rc != 0) {
        fprintf(stderr, "pollen: %s\n", err);
        return rc;
    }
    uint32_t saved = r->nodes.booting;
    r->nodes.booting = (uint32_t)(node - r->nodes.list);
    rc = def->boot(ex, def->ud);
    r->nodes.booting = saved;
    node->up = rc == 0;
    if (rc != 0) {
        fprintf(stderr, "pollen: pl_sim_node_add: the boot function of node '%s' returned %s\n",
                def->name, pl_strerror(rc));
    }
    return rc;
}

int pl__node_boot(pl__sim *s, pl__node *node)
{
    uint32_t saved = s->nodes.booting;
    s->nodes.booting = (uint32_t)(node - s->nodes.list);
    int rc = node->def.boot(s->ex, node->def.ud);
    s->nodes.booting = saved;
    node->up = rc == 0;
    return rc;
}

int pl_sim_node_add(pl_executor *ex, const pl_node_def *def)
{
    pl__sim *s = pl__sim_current();
    uint32_t host = 0;
    if (s == NULL && pl__real_current() != NULL) {
        return real_node_add(pl__real_current(), ex, def);
    }
    if (s == NULL || s->ex != ex) {
        return pl__sim_call_error(s, PL_EINVAL, "pl_sim_node_add: %s",
                                  s == NULL ? "no simulation is running"
                                            : "the executor is not the run's");
    }
    int rc = pl__nodes_check(s->call_error, sizeof s->call_error, &s->nodes, def, &host);
    if (rc != 0) {
        return rc;
    }
    pl__node *node = pl__nodes_declare(&s->nodes, def, host);
    if (node == NULL) {
        return PL_ENOMEM;
    }
    pl__node_clock_boot(s, (uint32_t)(node - s->nodes.list));
    rc = pl__node_boot(s, node);
    if (rc != 0 && s->call_error[0] == '\0') {
        pl__sim_call_error(s, rc, "pl_sim_node_add: the boot function of node '%s' returned %s",
                           def->name, pl_strerror(rc));
    }
    return rc;
}

int pl_sim_node_restart(const char *name)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        return pl__real_refuse("pl_sim_node_restart");
    }
    pl__node *node = pl__node_find(s, name);
    if (node == NULL) {
        return PL_EINVAL;
    }
    if (node->up) {
        return PL_EEXIST;
    }
    node->restart_at = 0; /* a decided restart would come on top */
    pl__sim_event(s, PL__EV_NODE, 0, (uint64_t)(node - s->nodes.list), PL__NODE_EV_RESTART);
    return pl__node_boot(s, node);
}

/* The nodes of the world running now, the simulation's or the real
 * backend's (real.h), and the node the current code runs on; NULL: none. */
static pl__nodes *nodes_now(uint32_t *current)
{
    pl__sim *s = pl__sim_current();
    pl__real *r = s == NULL ? pl__real_current() : NULL;
    *current = s != NULL ? pl__node_current(s) : r != NULL ? pl__real_node_current(r) : 0;
    return s != NULL ? &s->nodes : r != NULL ? &r->nodes : NULL;
}

bool pl_sim_node_is_up(const char *name)
{
    uint32_t self;
    pl__node *node = pl__nodes_find(nodes_now(&self), name);
    return node != NULL && node->up;
}

const pl_node_def *pl_sim_node_self(void)
{
    uint32_t n;
    pl__nodes *ns = nodes_now(&n);
    if (n == 0) {
        return NULL;
    }
    PL__SIM_ASSERT(n < ns->len && ns->list[n].def.name != NULL);
    return &ns->list[n].def;
}

/* ---- Node memory ------------------------------------------------------ */

void *pl_node_alloc(size_t size)
{
    uint32_t n;
    pl__nodes *ns = nodes_now(&n);
    if (ns == NULL || size > SIZE_MAX - sizeof(pl__node_block) || nodes_table(ns) != 0) {
        return NULL;
    }
    pl__node_block *b = malloc(sizeof *b + size);
    if (b == NULL) {
        return NULL;
    }
    pl__node *node = &ns->list[n];
    b->node = n;
    b->prev = NULL;
    b->next = node->blocks;
    if (node->blocks != NULL) {
        node->blocks->prev = b;
    }
    node->blocks = b;
    node->blocks_len++;
    return b->data;
}

void pl_node_free(void *p)
{
    if (p == NULL) {
        return;
    }
    uint32_t self;
    pl__nodes *ns = nodes_now(&self);
    pl__node_block *b =
        (pl__node_block *)(void *)((unsigned char *)p - offsetof(pl__node_block, data));
    PL__SIM_ASSERT(ns != NULL && b->node < ns->len);
    if (b->prev != NULL) {
        b->prev->next = b->next;
    } else {
        ns->list[b->node].blocks = b->next;
    }
    if (b->next != NULL) {
        b->next->prev = b->prev;
    }
    ns->list[b->node].blocks_len--;
    free(b);
}
