/* sim/src/hashset.h: a set of 64-bit trace hashes, to count distinct
 * schedules. Open addressing with 0 kept aside as the empty mark; grows
 * up to a cap, past which `count` is a lower bound (`full`). Header only:
 * the CLI and pl_sim_campaign share it. Zero-initialise to start; free
 * `slots` when done. */
#ifndef POLLEN_SIM_HASHSET_H
#define POLLEN_SIM_HASHSET_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct pl__hashset {
    uint64_t *slots;
    size_t cap;     /* power of two, or 0 */
    size_t cap_max; /* slots at most; 0: 1 << 22 */
    size_t count;   /* distinct values, zero included */
    bool zero;
    bool full;      /* stopped growing: count is a lower bound */
} pl__hashset;

static inline bool pl__hashset_put_slot(uint64_t *slots, size_t cap, uint64_t h)
{
    size_t i = (size_t)(h * 0x9e3779b97f4a7c15u) & (cap - 1);
    while (slots[i] != 0) {
        if (slots[i] == h) {
            return false;
        }
        i = (i + 1) & (cap - 1);
    }
    slots[i] = h;
    return true;
}

static inline bool pl__hashset_grow(pl__hashset *s)
{
    size_t max = s->cap_max != 0 ? s->cap_max : (size_t)1 << 22;
    size_t cap = s->cap == 0 ? 1024 : s->cap * 2;
    uint64_t *slots = cap <= max ? calloc(cap, sizeof *slots) : NULL;
    if (slots == NULL) {
        s->full = true;
        return false;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (s->slots[i] != 0) {
            pl__hashset_put_slot(slots, cap, s->slots[i]);
        }
    }
    free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return true;
}

static inline void pl__hashset_add(pl__hashset *s, uint64_t h)
{
    if (h == 0) {
        s->count += !s->zero;
        s->zero = true;
        return;
    }
    if (s->full || ((s->count + 1) * 2 > s->cap && !pl__hashset_grow(s))) {
        return;
    }
    s->count += pl__hashset_put_slot(s->slots, s->cap, h);
}

#endif
