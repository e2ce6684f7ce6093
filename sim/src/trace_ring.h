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
 * Ownership: the ring is plain memory owned by whoever mapped it; the
 * trace only writes into it. Reading (trace_ring.c) is for the parent,
 * after the child is gone.
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

/* ---- Reading, after the process is gone (trace_ring.c) ---------------- */

/* A zeroed ring in anonymous shared memory, or NULL (then runs go
 * without one). pl__ring_unmap accepts NULL. */
pl__trace_ring *pl__ring_map(void);
void pl__ring_unmap(pl__trace_ring *r);

/* The kept events in order (*n of them, *lost = how many older ones the
 * ring no longer holds), malloc'd; NULL with *n == 0 when empty or out
 * of memory. */
pl__trace_rec *pl__ring_events(const pl__trace_ring *r, size_t *n, uint64_t *lost);

/* The namer of the ring's events (ud: the ring). */
pl__trace_namer pl__ring_namer(const pl__trace_ring *r);

/* Positions a crash finding where the ring ends: the task whose poll
 * never returned (its id, name and poll number) at that poll's step and
 * virtual time, or no task at the last event's step and time when the
 * run died outside any poll. Returns whether the ring held any event
 * (false: f is untouched). */
bool pl__ring_position(const pl__trace_ring *r, pl_finding *f);

/* "in 'crasher' (#1), poll 4, step 5, virtual time 0.000 ms" or
 * "outside any poll, after step 5, virtual time 0.000 ms". */
void pl__ring_where(const pl_finding *f, char *buf, size_t len);

/* Gives a crashed run's record (sim_internal.h) the ring's events, task
 * names and user texts, as a finished run's record has them, so the
 * shrinker explains it and the timeline prints alike. Leaves the events
 * out when the ring lost the run's start (an explanation counts the
 * decisions from the first), and the decisions' subjects as capture
 * notes (rec->notes) when it kept them all. Returns 0 or PL_ENOMEM
 * (record unchanged). */
struct pl__run_record;
int pl__ring_to_record(const pl__trace_ring *r, struct pl__run_record *rec);

/* Writes the last `max` kept events as timeline lines (max 0: all
 * kept), each line prefixed by `indent`, after a line saying how many
 * older ones are not shown. Returns 0 or PL_EIO / PL_ENOMEM. */
int pl__ring_write_text(FILE *f, const pl__trace_ring *r, size_t max, const char *indent);

#endif
