/* sim/src/trace_ring.h: the crash ring, the last events of a run in
 * memory that outlives its process.
 *
 * A run killed by a signal (a null dereference in user code) takes its
 * event log with it. The CLI's children that may crash (the rerun of a
 * crashed seed, a forked replay, the shrinker's candidates) map a ring
 * in anonymous shared memory and attach it to their runs
 * (pl__sim_ring_to); the trace then copies every event into it as it is
 * made (pl__trace_set_ring), with the names of the tasks and the texts of
 * user events, so the parent can print the timeline's end and name the
 * poll the run died in. Each entry is written before the count is
 * bumped, as the decisions' mirror is, so a killed run leaves a
 * consistent ring behind. Seed workers attach none: a crashed seed is
 * rerun alone, and only that rerun pays for the copies.
 *
 * Ownership: the ring is plain memory owned by whoever mapped it
 * (isolate/ring_read.h maps it); the trace only writes into it, through
 * the inline writers below. Reading (isolate/ring_read.c) is for the
 * parent, after the child is gone.
 */
#ifndef POLLEN_SIM_TRACE_RING_H
#define POLLEN_SIM_TRACE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pollen/future.h"
#include "pollen/sim.h"
#include "trace.h"

#define PL__RING_EVENTS 4096u /* the last events kept (a power of two) */
#define PL__RING_TEXTS 256u   /* the last user-event texts kept */
#define PL__RING_NAMES 1024u  /* task names, by id modulo this */
#define PL__RING_NAME_MAX 48u

typedef struct pl__ring_text {
    uint64_t seq; /* 1 + the text's number; 0: empty */
    char text[PL_TRACE_EVENT_MAX];
} pl__ring_text;

#define PL__RING_SITE_MAX 48u

typedef struct pl__ring_name {
    uint32_t id; /* 0: empty */
    char name[PL__RING_NAME_MAX];
    char site[PL__RING_SITE_MAX]; /* its spawn site's base "file:line"; "": unknown */
    char func[PL__RING_SITE_MAX]; /* the function that spawned it; "": unknown */
} pl__ring_name;

#define PL__RING_KEYS 4096u /* the subjects of the first decisions */

typedef struct pl__trace_ring {
    volatile uint64_t len;   /* events written in all; the last PL__RING_EVENTS are kept */
    volatile uint64_t texts; /* user texts written in all */
    volatile uint64_t decisions; /* decisions consulted in all */
    uint64_t keys[PL__RING_KEYS]; /* decision i's subject (head task, site, timer...),
                                     for the shrinker's explanation of a crash */
    pl__trace_rec ev[PL__RING_EVENTS]; /* a USER event's a: its text number */
    pl__ring_text text[PL__RING_TEXTS];
    pl__ring_name names[PL__RING_NAMES];
} pl__trace_ring;

/* Forgets everything (a run starts). */
static inline void pl__ring_reset(pl__trace_ring *r)
{
    r->len = 0;
    r->texts = 0;
    r->decisions = 0;
    memset(r->names, 0, sizeof r->names);
}

static inline void pl__ring_event(pl__trace_ring *r, const pl__trace_rec *e)
{
    uint64_t i = r->len;
    r->ev[i % PL__RING_EVENTS] = *e;
    r->len = i + 1;
}

/* A USER event: the text first, then the event naming it. */
static inline void pl__ring_user(pl__trace_ring *r, const pl__trace_rec *e, const char *text,
                                 size_t len)
{
    uint64_t k = r->texts;
    pl__ring_text *slot = &r->text[k % PL__RING_TEXTS];
    len = len < PL_TRACE_EVENT_MAX - 1 ? len : PL_TRACE_EVENT_MAX - 1;
    memcpy(slot->text, text, len);
    slot->text[len] = '\0';
    slot->seq = k + 1;
    r->texts = k + 1;
    pl__trace_rec u = *e;
    u.a = k;
    u.b = len;
    pl__ring_event(r, &u);
}

/* The subject of the next decision consulted (pl__sim_choose's key). */
static inline void pl__ring_key(pl__trace_ring *r, uint64_t key)
{
    uint64_t i = r->decisions;
    if (i < PL__RING_KEYS) {
        r->keys[i] = key;
    }
    r->decisions = i + 1;
}

static inline void pl__ring_name_task(pl__trace_ring *r, uint32_t id, const char *name)
{
    pl__ring_name *slot = &r->names[id % PL__RING_NAMES];
    size_t n = name != NULL ? strlen(name) : 0;
    n = n < PL__RING_NAME_MAX - 1 ? n : PL__RING_NAME_MAX - 1;
    slot->id = 0;
    memcpy(slot->name, name != NULL ? name : "", n);
    slot->name[n] = '\0';
    slot->site[0] = '\0';
    slot->func[0] = '\0';
    slot->id = id;
}

/* Task id's spawn site (after pl__ring_name_task): copies, so that the
 * parent reads them once the process is gone. where: a base "file:line". */
static inline void pl__ring_site_task(pl__trace_ring *r, uint32_t id, const char *where,
                                      const char *func)
{
    pl__ring_name *slot = &r->names[id % PL__RING_NAMES];
    if (slot->id == id) {
        snprintf(slot->site, sizeof slot->site, "%s", where != NULL ? where : "");
        snprintf(slot->func, sizeof slot->func, "%s", func != NULL ? func : "");
    }
}

#endif
