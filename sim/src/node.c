/* sim/src/node.c: nodes of a cluster scenario (pollen/sim_node.h): their
 * table, their tasks' names, their disks and memory, boot and restart.
 * The crash itself is node_crash.c's.
 *
 * The table is allocated at the first pl_sim_node_add, so a run without
 * nodes pays one NULL test where the current node is asked for.
 */
#include <arpa/inet.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk/disk.h"
#include "grow.h"
#include "node.h"

/* A pl_node_alloc block: a header before the caller's bytes. */
typedef struct pl__node_block {
    struct pl__node_block *prev, *next;
    uint32_t node;
    alignas(max_align_t) unsigned char data[];
} pl__node_block;

pl__node *pl__node_find(pl__sim *s, const char *name)
{
    for (uint32_t i = 1; name != NULL && s != NULL && i < s->nodes.len; i++) {
        if (strcmp(s->nodes.list[i].def.name, name) == 0) {
            return &s->nodes.list[i];
        }
    }
    return NULL;
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

const char *pl__node_task_name(pl__sim *s, uint32_t n, const char *name)
{
    for (size_t i = 0; i < s->nodes.task_names_len; i++) {
        pl__task_alias *e = &s->nodes.task_names[i];
        if (e->node == n && (e->base == name || strcmp(e->base, name) == 0)) {
            return e->full;
        }
    }
    size_t len = strlen(s->nodes.list[n].def.name) + 1 + strlen(name) + 1;
    char *full = malloc(len);
    if (full == NULL ||
        pl__grow((void **)&s->nodes.task_names, &s->nodes.task_names_cap,
                 s->nodes.task_names_len + 1, sizeof *s->nodes.task_names, 16, 0) != 0) {
        free(full);
        return name;
    }
    snprintf(full, len, "%s/%s", s->nodes.list[n].def.name, name);
    s->nodes.task_names[s->nodes.task_names_len++] = (pl__task_alias){n, name, full};
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

void pl__nodes_free(pl__sim *s)
{
    for (uint32_t i = 0; i < s->nodes.len; i++) {
        pl__node_blocks_free(&s->nodes.list[i]);
        pl__disk_destroy(s->nodes.list[i].disk);
    }
    free(s->nodes.list);
    s->nodes.list = NULL;
    s->nodes.len = 0;
    for (size_t i = 0; i < s->nodes.task_names_len; i++) {
        free(s->nodes.task_names[i].full);
    }
    free(s->nodes.task_names);
    s->nodes.task_names = NULL;
    s->nodes.task_names_len = s->nodes.task_names_cap = 0;
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

static int host_of(pl__sim *s, const pl_node_def *def, uint32_t *out)
{
    struct in_addr in;
    if (def->host == NULL || inet_pton(AF_INET, def->host, &in) != 1) {
        return pl__sim_call_error(s, PL_EINVAL,
                                  "pl_sim_node_add: node '%s' has host '%s', not an IPv4 address "
                                  "such as \"10.0.0.2\"",
                                  def->name, def->host != NULL ? def->host : "(null)");
    }
    uint32_t h = ntohl(in.s_addr);
    if (h >> 24 != 10) {
        return pl__sim_call_error(s, PL_EINVAL,
                                  "pl_sim_node_add: host '%s' of node '%s' is outside 10.0.0.0/8 "
                                  "(nodes live on 10.x.y.z)",
                                  def->host, def->name);
    }
    *out = h;
    return 0;
}

/* Each refusal says which rule the definition broke (setup errors print it). */
static int check_def(pl__sim *s, const pl_node_def *def, uint32_t *host)
{
    if (def == NULL) {
        return pl__sim_call_error(s, PL_EINVAL, "pl_sim_node_add: no definition (NULL)");
    }
    if (!name_ok(def->name)) {
        return pl__sim_call_error(s, PL_EINVAL,
                                  "pl_sim_node_add: node name '%s' is not 1 to 32 characters of "
                                  "[a-z0-9_]",
                                  def->name != NULL ? def->name : "(null)");
    }
    if (def->boot == NULL) {
        return pl__sim_call_error(s, PL_EINVAL, "pl_sim_node_add: node '%s' has no boot function",
                                  def->name);
    }
    if (pl__node_find(s, def->name) != NULL) {
        return pl__sim_call_error(s, PL_EINVAL, "pl_sim_node_add: a node named '%s' exists already",
                                  def->name);
    }
    int rc = host_of(s, def, host);
    if (rc != 0) {
        return rc;
    }
    for (uint32_t i = 1; i < s->nodes.len; i++) {
        if (s->nodes.list[i].host == *host) {
            return pl__sim_call_error(s, PL_EINVAL,
                                      "pl_sim_node_add: host '%s' of node '%s' is node '%s''s "
                                      "already (one host per node)",
                                      def->host, def->name, s->nodes.list[i].def.name);
        }
    }
    if (s->nodes.len > PL_SIM_NODES_MAX) {
        return pl__sim_call_error(s, PL_ENOSPC,
                                  "pl_sim_node_add: node '%s' would be one more than "
                                  "PL_SIM_NODES_MAX (%d)",
                                  def->name, PL_SIM_NODES_MAX);
    }
    return 0;
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
    if (s == NULL || s->ex != ex) {
        return pl__sim_call_error(s, PL_EINVAL, "pl_sim_node_add: %s",
                                  s == NULL ? "no simulation is running"
                                            : "the executor is not the run's");
    }
    int rc = check_def(s, def, &host);
    if (rc != 0) {
        return rc;
    }
    if (s->nodes.list == NULL) {
        s->nodes.list = calloc(PL_SIM_NODES_MAX + 1, sizeof *s->nodes.list);
        if (s->nodes.list == NULL) {
            return PL_ENOMEM;
        }
        s->nodes.len = 1; /* node 0: the scenario itself */
    }
    pl__node *node = &s->nodes.list[s->nodes.len++];
    node->def = *def;
    node->host = host;
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

bool pl_sim_node_is_up(const char *name)
{
    pl__node *node = pl__node_find(pl__sim_current(), name);
    return node != NULL && node->up;
}

const pl_node_def *pl_sim_node_self(void)
{
    pl__sim *s = pl__sim_current();
    uint32_t n = s != NULL ? pl__node_current(s) : 0;
    if (n == 0) {
        return NULL;
    }
    PL__SIM_ASSERT(n < s->nodes.len && s->nodes.list[n].def.name != NULL);
    return &s->nodes.list[n].def;
}

/* ---- Node memory ------------------------------------------------------ */

void *pl_node_alloc(size_t size)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL || size > SIZE_MAX - sizeof(pl__node_block)) {
        return NULL;
    }
    if (s->nodes.list == NULL) {
        s->nodes.list = calloc(PL_SIM_NODES_MAX + 1, sizeof *s->nodes.list);
        if (s->nodes.list == NULL) {
            return NULL;
        }
        s->nodes.len = 1;
    }
    pl__node_block *b = malloc(sizeof *b + size);
    if (b == NULL) {
        return NULL;
    }
    pl__node *node = &s->nodes.list[pl__node_current(s)];
    b->node = (uint32_t)(node - s->nodes.list);
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
    pl__sim *s = pl__sim_current();
    pl__node_block *b =
        (pl__node_block *)(void *)((unsigned char *)p - offsetof(pl__node_block, data));
    PL__SIM_ASSERT(s != NULL && b->node < s->nodes.len);
    if (b->prev != NULL) {
        b->prev->next = b->next;
    } else {
        s->nodes.list[b->node].blocks = b->next;
    }
    if (b->next != NULL) {
        b->next->prev = b->prev;
    }
    s->nodes.list[b->node].blocks_len--;
    free(b);
}
