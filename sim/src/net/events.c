/* sim/src/net/events.c: the delivery heap, a min-heap on (at_ns, seq).
 * seq is the scheduling order, so simultaneous events are delivered in
 * the order they were scheduled and the order never depends on the heap's
 * shape. */
#include <stdlib.h>

#include "net_impl.h"

static bool ev_less(const event *a, const event *b)
{
    return a->at_ns < b->at_ns || (a->at_ns == b->at_ns && a->seq < b->seq);
}

/* The heap property between i and its parent. */
static bool heap_ok_at(const pl__reactor *r, size_t i)
{
    return i == 0 || !ev_less(&r->heap[i], &r->heap[(i - 1) / 2]);
}

bool pl__net_heap_reserve(pl__reactor *r, size_t k)
{
    return PL__NET_RESERVE(r->heap, r->heap_cap, r->heap_len + k, PL__NET_HEAP_MIN);
}

void pl__net_heap_push(pl__reactor *r, event ev)
{
    PL__SIM_ASSERT(r->heap_len < r->heap_cap);       /* room reserved by the operation */
    PL__SIM_ASSERT(ev.at_ns >= pl__sim_now(r->sim)); /* nothing lands in the past */
    ev.seq = r->seq++;
    size_t i = r->heap_len++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!ev_less(&ev, &r->heap[parent])) {
            break;
        }
        r->heap[i] = r->heap[parent];
        i = parent;
    }
    r->heap[i] = ev;
    PL__SIM_ASSERT(heap_ok_at(r, i));
}

event pl__net_heap_pop(pl__reactor *r)
{
    PL__SIM_ASSERT(r->heap_len > 0);
    event top = r->heap[0];
    event last = r->heap[--r->heap_len];
    size_t n = r->heap_len;
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n) {
            break;
        }
        if (child + 1 < n && ev_less(&r->heap[child + 1], &r->heap[child])) {
            child++;
        }
        if (!ev_less(&r->heap[child], &last)) {
            break;
        }
        r->heap[i] = r->heap[child];
        i = child;
    }
    if (n > 0) {
        r->heap[i] = last;
        /* The new top comes no earlier than the one taken. */
        PL__SIM_ASSERT(heap_ok_at(r, i) && !ev_less(&r->heap[0], &top));
    }
    return top;
}

void pl__net_notify_later(pl__reactor *r, ep *e, uint32_t bits, pl_time delay_ns)
{
    pl__net_heap_push(r, (event){.at_ns = pl__sim_now(r->sim) + delay_ns,
                                 .type = EV_NOTIFY,
                                 .target = e->hdr.id,
                                 .bits = bits});
}

void pl__net_heap_free(pl__reactor *r)
{
    for (size_t i = 0; i < r->heap_len; i++) {
        if (r->heap[i].type == EV_DGRAM) {
            free(r->heap[i].dg);
        }
    }
    free(r->heap);
    r->heap = NULL;
    r->heap_len = r->heap_cap = 0;
}
