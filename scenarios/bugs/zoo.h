/* scenarios/bugs/zoo.h: helpers the bug zoo's scenarios share.
 *
 * Private to scenarios/bugs/: nothing here is part of pollen's API. Each
 * zoo file holds one small primitive or protocol written the way users
 * write them, a buggy version (scenario bug_<name>, which names the
 * finding it must produce) and its fixed twin (fix_<name>, which must
 * stay clean), with a comment block saying what is wrong and why.
 */
#ifndef POLLEN_BUGS_ZOO_H
#define POLLEN_BUGS_ZOO_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <pollen/sim.h>
#include <pollen/sim_node.h>
#include <pollen/thread.h>

/* Declares the cluster's nodes in order (each boots at once). Returns 0 or
 * the first pl_sim_node_add's error. */
static inline int zoo_nodes_add(pl_executor *ex, const pl_node_def *defs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = pl_sim_node_add(ex, &defs[i]);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

/* Spawns a server as a background task (it runs as long as its process,
 * so it keeps no run from ending) and lets its handle go. Returns 0 or
 * pl_spawn's error. */
static inline int zoo_spawn_background(pl_executor *ex, pl_future *f, size_t size,
                                       const char *name)
{
    pl_task *t;
    int rc = pl_spawn(ex, f, size, name, &t);
    if (rc == 0) {
        pl_task_set_background(t, true);
        pl_task_release(t);
    }
    return rc;
}

/* A minimal intrusive FIFO of waiters, as hand-written primitives keep
 * them: the node lives in the waiting future, which must not move while
 * it is linked. */
typedef struct zoo_node {
    struct zoo_node *next;
    struct zoo_node *prev;
    bool linked;
} zoo_node;

typedef struct zoo_queue {
    zoo_node *head;
    zoo_node *tail;
} zoo_queue;

static inline void zoo_queue_push(zoo_queue *q, zoo_node *n)
{
    n->next = NULL;
    n->prev = q->tail;
    if (q->tail != NULL) {
        q->tail->next = n;
    } else {
        q->head = n;
    }
    q->tail = n;
    n->linked = true;
}

static inline void zoo_queue_remove(zoo_queue *q, zoo_node *n)
{
    if (!n->linked) {
        return;
    }
    if (n->prev != NULL) {
        n->prev->next = n->next;
    } else {
        q->head = n->next;
    }
    if (n->next != NULL) {
        n->next->prev = n->prev;
    } else {
        q->tail = n->prev;
    }
    n->next = NULL;
    n->prev = NULL;
    n->linked = false;
}

static inline zoo_node *zoo_queue_pop(zoo_queue *q)
{
    zoo_node *n = q->head;
    if (n != NULL) {
        zoo_queue_remove(q, n);
    }
    return n;
}

/* The disk pairs' records (log_ack, checksum): ZOO_REC bytes holding a
 * sequence number, a value, a zero word and the FNV-1a checksum of the
 * first twelve bytes, as a log or a snapshot would store them. */
enum { ZOO_REC = 16 };

static inline uint32_t zoo_fnv1a(const uint8_t *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 16777619u;
    }
    return h;
}

static inline void zoo_put32(uint8_t *p, uint32_t v) { memcpy(p, &v, sizeof v); }

static inline uint32_t zoo_get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Record i holds value 1000 + i. */
static inline void zoo_record_encode(uint8_t *rec, int i)
{
    zoo_put32(rec, (uint32_t)i);
    zoo_put32(rec + 4, 1000u + (uint32_t)i);
    zoo_put32(rec + 8, 0);
    zoo_put32(rec + 12, zoo_fnv1a(rec, 12));
}

/* The checksum matches and it is record i. */
static inline bool zoo_record_ok(const uint8_t *rec, int i)
{
    return zoo_get32(rec + 12) == zoo_fnv1a(rec, 12) && zoo_get32(rec) == (uint32_t)i;
}

/* Thread per core: joins core 1 (*core, then NULL) and checks what its
 * consumer summed and what its executor's pl_run returned. A scenario
 * check: 0 or pl_check_fail's value. */
static inline int zoo_core_check(pl_thread **core, int run_rc, int sum, int want, char *msg,
                                 size_t len)
{
    if (*core != NULL && pl_thread_join(*core, NULL) != 0) {
        return pl_check_fail(msg, len, "joining core 1 failed");
    }
    *core = NULL;
    if (run_rc != 0 || sum != want) {
        return pl_check_fail(msg, len, "core 1 summed %d (rc %d), want %d", sum, run_rc, want);
    }
    return 0;
}

#define ZOO_CONTAINER_OF(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

#endif
