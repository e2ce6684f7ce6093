/* sim/src/pthread/objects.c: a pthread object's state for the current run.
 *
 * The tag is in the user's bytes, so a lookup is one comparison of
 * numbers and no table is ever ordered or hashed by address: the run
 * cannot depend on where the program's objects happen to live. */
#include "spt.h"

#include <stdlib.h>
#include <string.h>

#include "../sim_assert.h"

#define PL__SPT_MAGIC 0x706c7400u /* "plt\0" | kind */

typedef struct pl__spt_tag {
    uint32_t magic;
    uint32_t index;
    uint64_t run;
} pl__spt_tag;

_Static_assert(sizeof(pl__spt_tag) <= sizeof(sem_t), "a tag fits the smallest object");
_Static_assert(sizeof(pl__spt_tag) <= 16, "a tag leaves a mutex's kind field alone");

void pl__spt_monitor_init(pl__spt_monitor *m)
{
    *m = (pl__spt_monitor){PL_THREAD_MUTEX_INIT, PL_THREAD_COND_INIT};
}

static void obj_init(pl__spt_obj *o, void *user, uint32_t kind)
{
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->live = true;
    o->addr = user;
    switch (kind) {
    case PL__SPT_MUTEX:
        o->u.mutex.m = (pl_thread_mutex)PL_THREAD_MUTEX_INIT;
        /* A static PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP (or an init
         * call) left the type in glibc's own field, past the tag. */
        o->u.mutex.type = ((pthread_mutex_t *)user)->__data.__kind & 3;
        if (o->u.mutex.type == PTHREAD_MUTEX_ADAPTIVE_NP) {
            o->u.mutex.type = PTHREAD_MUTEX_NORMAL;
        }
        break;
    case PL__SPT_COND:
        o->u.cond.c = (pl_thread_cond)PL_THREAD_COND_INIT;
        o->u.cond.clock = CLOCK_REALTIME;
        break;
    case PL__SPT_RWLOCK:
        pl__spt_monitor_init(&o->u.rwlock.mon);
        break;
    case PL__SPT_BARRIER:
        pl__spt_monitor_init(&o->u.barrier.mon);
        break;
    case PL__SPT_SEM:
        pl__spt_monitor_init(&o->u.sem.mon);
        break;
    default:
        PL__SIM_ASSERT(!"unknown pthread object kind");
    }
}

pl__spt_obj *pl__spt_obj_new(pl__spt_run *r, void *user, uint32_t kind)
{
    if (r->objs_len == r->objs_cap) {
        uint32_t cap = r->objs_cap ? 2 * r->objs_cap : 16;
        pl__spt_obj **objs = realloc(r->objs, cap * sizeof *objs);
        if (objs == NULL) {
            return NULL;
        }
        r->objs = objs;
        r->objs_cap = cap;
    }
    pl__spt_obj *o = malloc(sizeof *o);
    if (o == NULL) {
        return NULL;
    }
    obj_init(o, user, kind);
    pl__spt_tag tag = {PL__SPT_MAGIC | kind, r->objs_len, r->number};
    memcpy(user, &tag, sizeof tag);
    r->objs[r->objs_len++] = o;
    return o;
}

pl__spt_obj *pl__spt_obj_get(pl__spt_run *r, void *user, uint32_t kind)
{
    pl__spt_tag tag;
    memcpy(&tag, user, sizeof tag);
    if (tag.magic == (PL__SPT_MAGIC | kind) && tag.run == r->number && tag.index < r->objs_len) {
        pl__spt_obj *o = r->objs[tag.index];
        if (o->addr == user && o->kind == kind && o->live) {
            return o;
        }
    }
    return pl__spt_obj_new(r, user, kind);
}

/* A 4-byte object (a spinlock) holds the index + 1 of its entry under a
 * 7-bit tag of the run; the entry's address tells a stale word apart. */
pl__spt_obj *pl__spt_obj_get_word(pl__spt_run *r, volatile int *word, uint32_t kind)
{
    uint32_t v = (uint32_t)*word;
    uint32_t tag = (uint32_t)(r->number & 0x7f) + 1;
    uint32_t i = (v & 0xffffffu) - 1;
    if (v != 0 && v >> 24 == tag && i < r->objs_len && r->objs[i]->addr == (const void *)word &&
        r->objs[i]->kind == kind && r->objs[i]->live) {
        return r->objs[i];
    }
    if (r->objs_len >= 0xffffffu) {
        return NULL;
    }
    /* obj_new writes a 16-byte tag and reads a mutex's type: give it a
     * zeroed scratch object (a NORMAL mutex), then point the entry at the
     * word. */
    pthread_mutex_t scratch;
    memset(&scratch, 0, sizeof scratch);
    pl__spt_obj *o = pl__spt_obj_new(r, &scratch, kind);
    if (o == NULL) {
        return NULL;
    }
    o->addr = (const void *)word;
    *word = (int)((tag << 24) | r->objs_len);
    return o;
}

void pl__spt_obj_forget(pl__spt_run *r, void *user, pl__spt_obj *o)
{
    (void)r;
    o->live = false;
    memset(user, 0, sizeof(pl__spt_tag));
}

void pl__spt_objs_free(pl__spt_run *r)
{
    for (uint32_t i = 0; i < r->objs_len; i++) {
        free(r->objs[i]);
    }
    free(r->objs);
    r->objs = NULL;
    r->objs_len = r->objs_cap = 0;
}
