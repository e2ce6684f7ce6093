/* sim/src/net/table.c: the network's tables. Objects (endpoints and
 * channels) by id, for pending events to name; endpoints by handle, for
 * the system's entries. Ids and handles are handed out in order and never
 * reused, so both stay deterministic. */
#include <stdlib.h>

#include "net_impl.h"

bool pl__net_reserve(void **arr, size_t *cap, size_t need, size_t size, size_t min)
{
    if (need <= *cap) {
        return true;
    }
    size_t n = *cap > 0 ? *cap : min;
    while (n < need) {
        n *= 2;
    }
    void *p = realloc(*arr, n * size);
    if (p == NULL) {
        return false;
    }
    *arr = p;
    *cap = n;
    return true;
}

bool pl__net_objs_reserve(pl__reactor *r, size_t k)
{
    size_t base = r->objs_len > 0 ? r->objs_len : 1;
    return PL__NET_RESERVE(r->objs, r->objs_cap, base + k, PL__NET_TABLE_MIN);
}

/* Gives o the next id. The table must have room (objs_reserve). */
static void obj_add(pl__reactor *r, obj *o, obj_type type)
{
    if (r->objs_len == 0) {
        r->objs[0] = NULL;
        r->objs_len = 1;
    }
    PL__SIM_ASSERT(r->objs_len < r->objs_cap);
    o->id = (uint32_t)r->objs_len;
    o->type = type;
    r->objs[r->objs_len++] = o;
}

static obj *obj_get(const pl__reactor *r, uint32_t id, obj_type type)
{
    if (id == 0 || id >= r->objs_len || r->objs[id] == NULL) {
        return NULL;
    }
    PL__SIM_ASSERT(r->objs[id]->id == id);
    return r->objs[id]->type == (uint32_t)type ? r->objs[id] : NULL;
}

ep *pl__net_ep_get(const pl__reactor *r, uint32_t id) { return (ep *)obj_get(r, id, OBJ_EP); }

chan *pl__net_chan_get(const pl__reactor *r, uint32_t id)
{
    return (chan *)obj_get(r, id, OBJ_CHAN);
}

ep *pl__net_ep_of(const pl__reactor *r, int handle)
{
    if (handle < PL__NET_HANDLE_FIRST) {
        return NULL;
    }
    size_t i = (size_t)(handle - PL__NET_HANDLE_FIRST);
    ep *e = i < r->handles_len ? r->handles[i] : NULL;
    /* An open handle names a live endpoint that knows its number. */
    PL__SIM_ASSERT(e == NULL || (e->handle == handle && r->objs[e->hdr.id] == &e->hdr));
    return e;
}

bool pl__net_handles_reserve(pl__reactor *r, size_t k)
{
    return PL__NET_RESERVE(r->handles, r->handles_cap, r->handles_len + k, PL__NET_TABLE_MIN);
}

int pl__net_handle_assign(pl__reactor *r, ep *e)
{
    PL__SIM_ASSERT(e->handle == -1 && r->handles_len < r->handles_cap);
    e->handle = PL__NET_HANDLE_FIRST + (int)r->handles_len;
    e->node = pl__node_current(r->sim);
    r->handles[r->handles_len++] = e;
    r->open_handles++;
    PL__SIM_ASSERT(r->open_handles <= r->handles_len);
    return e->handle;
}

void pl__net_handle_release(pl__reactor *r, ep *e)
{
    PL__SIM_ASSERT(pl__net_ep_of(r, e->handle) == e && r->open_handles > 0);
    r->handles[e->handle - PL__NET_HANDLE_FIRST] = NULL;
    r->open_handles--;
}

chan *pl__net_chan_new(pl__reactor *r)
{
    chan *c = calloc(1, sizeof *c);
    if (c != NULL) {
        obj_add(r, &c->hdr, OBJ_CHAN);
    }
    return c;
}

ep *pl__net_ep_new(pl__reactor *r, ep_kind kind, int family)
{
    ep *e = calloc(1, sizeof *e);
    if (e != NULL) {
        obj_add(r, &e->hdr, OBJ_EP);
        e->handle = -1;
        e->kind = kind;
        e->family = family;
    }
    return e;
}

void pl__net_chan_free(pl__reactor *r, chan *c)
{
    PL__SIM_ASSERT(r->objs[c->hdr.id] == &c->hdr);
    r->objs[c->hdr.id] = NULL;
    free(c->buf);
    free(c->segs);
    free(c);
}

static void dgram_list_free(dgram *d)
{
    while (d != NULL) {
        dgram *next = d->next;
        free(d);
        d = next;
    }
}

void pl__net_ep_free(pl__reactor *r, ep *e)
{
    PL__SIM_ASSERT(r->objs[e->hdr.id] == &e->hdr && !e->in_ready && !e->bound);
    r->objs[e->hdr.id] = NULL;
    dgram_list_free(e->q_head);
    free(e);
}

void pl__net_free_new(pl__reactor *r, ep *e1, ep *e2, chan *c1, chan *c2)
{
    ep *eps[2] = {e1, e2};
    chan *chans[2] = {c1, c2};
    for (int i = 0; i < 2; i++) {
        if (eps[i] != NULL) {
            pl__net_ep_free(r, eps[i]);
        }
        if (chans[i] != NULL) {
            pl__net_chan_free(r, chans[i]);
        }
    }
}

void pl__net_table_free(pl__reactor *r)
{
    for (size_t id = 1; id < r->objs_len; id++) {
        obj *o = r->objs[id];
        if (o != NULL && o->type == OBJ_EP) {
            ep *e = (ep *)o;
            e->in_ready = false; /* the whole reactor goes: no list to keep */
            e->bound = false;
            pl__net_ep_free(r, e);
        } else if (o != NULL) {
            pl__net_chan_free(r, (chan *)o);
        }
    }
    free(r->objs);
    free(r->handles);
    free(r->bound);
    r->objs = NULL;
    r->handles = NULL;
    r->bound = NULL;
}
