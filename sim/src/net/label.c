/* sim/src/net/label.c: the words that name a message in the explanation
 * of a link decision (label.h). A decision's key names only its link, and
 * a shrunk schedule that says "a crossing of 10.0.0.1 -> 10.0.0.2 took
 * longer" leaves the reader to work out which of the many messages on
 * that link it was; the sender knows, so it may say (a label), and
 * otherwise what it last traced is the best guess at hand.
 *
 * Reads the world's fields and nothing else, so the reactor's own test
 * (a fake world) links it with the network's files.
 */
#include <stdio.h>
#include <string.h>

#include "grow.h"
#include "sim_internal.h"

/* The entry of task `task`, made when missing; NULL when out of memory
 * (the words are best effort: the run goes on without them). */
static pl__label_task *slot(pl__labels *l, uint32_t task)
{
    if (task >= l->len) {
        if (pl__grow((void **)&l->by_task, &l->cap, (size_t)task + 1, sizeof *l->by_task, 16, 0) !=
            0) {
            return NULL;
        }
        l->len = (size_t)task + 1;
    }
    return &l->by_task[task];
}

/* Copies len bytes of text into dst (PL__LABEL_MAX bytes), cut with
 * "..." and on one line. */
static void keep(char *dst, const char *text, size_t len)
{
    size_t n = len < PL__LABEL_MAX - 1 ? len : PL__LABEL_MAX - 1;
    memcpy(dst, text, n);
    dst[n] = '\0';
    if (n < len) {
        memcpy(dst + n - 3, "...", 3);
    }
    for (size_t i = 0; i < n; i++) {
        dst[i] = dst[i] == '\n' || dst[i] == '\r' ? ' ' : dst[i];
    }
}

void pl__label_set(pl__sim *s, const char *fmt, va_list ap)
{
    if (!s->labels.on || s->polling == 0) {
        return;
    }
    pl__label_task *t = slot(&s->labels, s->polling);
    if (t == NULL) {
        return;
    }
    char text[2 * PL__LABEL_MAX];
    int w = fmt != NULL ? vsnprintf(text, sizeof text, fmt, ap) : 0;
    size_t len = w < 0 ? 0 : (size_t)w;
    keep(t->label, text, len < sizeof text ? len : sizeof text);
}

void pl__label_note(pl__sim *s, uint32_t task, const char *text, size_t len)
{
    if (!s->labels.on || task == 0) {
        return;
    }
    pl__label_task *t = slot(&s->labels, task);
    if (t != NULL) {
        keep(t->note, text, len);
    }
}

void pl__label_free(pl__labels *l)
{
    free(l->by_task);
    *l = (pl__labels){.on = false};
}

/* The name of the node on `host`, or NULL (none: the scenario's own). */
static const char *node_on(const pl__sim *s, uint32_t host)
{
    for (uint32_t n = 1; n < s->nodes.len; n++) {
        if (s->nodes.list[n].host == host) {
            return pl__node_name(&s->nodes, n);
        }
    }
    return NULL;
}

static void host_text(char *buf, size_t len, uint32_t h)
{
    snprintf(buf, len, "%u.%u.%u.%u", h >> 24, (h >> 16) & 255u, (h >> 8) & 255u, h & 255u);
}

/* " from node 'a' to node 'b' (10.0.0.1 -> 10.0.0.2)": a host without a
 * node is named by its address alone. */
static void route(const pl__sim *s, char *buf, size_t len, uint32_t from, uint32_t to, bool hosts)
{
    char a[16], b[16], na[48], nb[48];
    host_text(a, sizeof a, from);
    host_text(b, sizeof b, to);
    const char *fa = node_on(s, from), *fb = node_on(s, to);
    if (fa != NULL) {
        snprintf(na, sizeof na, "node '%s'", fa);
    } else {
        snprintf(na, sizeof na, "%s", a);
    }
    if (fb != NULL) {
        snprintf(nb, sizeof nb, "node '%s'", fb);
    } else {
        snprintf(nb, sizeof nb, "%s", b);
    }
    if (hosts && (fa != NULL || fb != NULL)) {
        snprintf(buf, len, " from %s to %s (%s -> %s)", na, nb, a, b);
    } else {
        snprintf(buf, len, " from %s to %s", na, nb);
    }
}

/* Task `task`'s name without its node's ("server/serve" is 'serve': the
 * node is named beside it), or NULL (no task). */
static const char *task_name(const pl__sim *s, uint32_t task)
{
    if (task == 0 || task > s->tasks.spawned || s->tasks.info[task].kind->name == NULL) {
        return NULL;
    }
    const char *name = s->tasks.info[task].kind->name;
    const char *node = pl__node_name(&s->nodes, s->tasks.info[task].node);
    size_t len = strlen(node);
    return len > 0 && strncmp(name, node, len) == 0 && name[len] == '/' ? name + len + 1 : name;
}

static const char *const msg_names[] = {
    [PL__LABEL_DGRAM] = "a datagram",
    [PL__LABEL_WRITE] = "a stream write",
    [PL__LABEL_FIN] = "the end of stream",
    [PL__LABEL_CONNECT] = "a connection attempt",
};

void pl__label_subject(const pl__sim *s, char *buf, size_t len, pl__label_msg m, uint32_t from,
                       uint32_t to, bool hosts)
{
    PL__SIM_ASSERT((size_t)m < sizeof msg_names / sizeof msg_names[0]);
    char where[160];
    route(s, where, sizeof where, from, to, hosts);
    uint32_t task = s->polling;
    const pl__label_task *t = task != 0 && task < s->labels.len ? &s->labels.by_task[task] : NULL;
    const char *name = task_name(s, task);
    /* A label names what the program sent; the end of a stream and a
     * connection attempt are the socket's own, whatever the task said. */
    bool own = m == PL__LABEL_DGRAM || m == PL__LABEL_WRITE;
    if (own && t != NULL && t->label[0] != '\0') {
        snprintf(buf, len, "the '%s'%s", t->label, where);
    } else if (name != NULL && own && t != NULL && t->note[0] != '\0') {
        snprintf(buf, len, "%s of '%s' (after its note '%s')%s", msg_names[m], name, t->note,
                 where);
    } else if (name != NULL) {
        snprintf(buf, len, "%s of '%s'%s", msg_names[m], name, where);
    } else {
        snprintf(buf, len, "%s%s", msg_names[m], where);
    }
}
