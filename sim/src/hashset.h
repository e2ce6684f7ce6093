/* sim/src/hashset.h: the one hash table of sim/src, keyed by 64-bit
 * values, in two forms on one probe:
 *   - pl__hashset, a set of trace hashes to count distinct schedules;
 *     grows up to a cap, past which `count` is a lower bound (`full`);
 *   - pl__hashmap, a key -> uint32_t index map that never drops a key
 *     (the run's PL_BUGGIFY and pl_eventually site tables).
 * Open addressing, linear probing, power-of-two capacity, at most half
 * full; 0 is the empty mark and key 0 is kept aside. Header only: the
 * CLI and the library share it. Zero-initialise to start; free with
 * pl__hashset_free / pl__hashmap_free.
 */
#ifndef POLLEN_SIM_HASHSET_H
#define POLLEN_SIM_HASHSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "pollen/error.h"

/* The slot holding `h`, or the empty slot where it would go (h != 0). */
static inline size_t pl__hash_probe(const uint64_t *keys, size_t cap, uint64_t h)
{
    size_t i = (size_t)(h * 0x9e3779b97f4a7c15u) & (cap - 1);
    while (keys[i] != 0 && keys[i] != h) {
        i = (i + 1) & (cap - 1);
    }
    return i;
}

/* Rehashes `cap` keys (and their values when vals != NULL) into tables of
 * `ncap`; false when out of memory (the old tables are then kept). */
static inline bool pl__hash_rehash(uint64_t **keys, uint32_t **vals, size_t cap, size_t ncap)
{
    uint64_t *nk = calloc(ncap, sizeof *nk);
    uint32_t *nv = vals != NULL ? calloc(ncap, sizeof *nv) : NULL;
    if (nk == NULL || (vals != NULL && nv == NULL)) {
        free(nk);
        free(nv);
        return false;
    }
    for (size_t i = 0; i < cap; i++) {
        if ((*keys)[i] != 0) {
            size_t j = pl__hash_probe(nk, ncap, (*keys)[i]);
            nk[j] = (*keys)[i];
            if (vals != NULL) {
                nv[j] = (*vals)[i];
            }
        }
    }
    free(*keys);
    *keys = nk;
    if (vals != NULL) {
        free(*vals);
        *vals = nv;
    }
    return true;
}

/* ---- The set of trace hashes ------------------------------------------ */

typedef struct pl__hashset {
    uint64_t *slots;
    size_t cap;     /* power of two, or 0 */
    size_t cap_max; /* slots at most; 0: 1 << 22 */
    size_t count;   /* distinct values, zero included */
    bool zero;
    bool full;      /* stopped growing: count is a lower bound */
} pl__hashset;

static inline bool pl__hashset_grow(pl__hashset *s)
{
    size_t max = s->cap_max != 0 ? s->cap_max : (size_t)1 << 22;
    size_t cap = s->cap == 0 ? 1024 : s->cap * 2;
    if (cap > max || !pl__hash_rehash(&s->slots, NULL, s->cap, cap)) {
        s->full = true;
        return false;
    }
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
    size_t i = pl__hash_probe(s->slots, s->cap, h);
    s->count += s->slots[i] == 0;
    s->slots[i] = h;
}

static inline void pl__hashset_free(pl__hashset *s)
{
    free(s->slots);
    s->slots = NULL;
    s->cap = 0;
}

/* ---- The key -> index map ---------------------------------------------- */

typedef struct pl__hashmap {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap;     /* power of two, or 0 */
    size_t count;   /* keys stored, zero included */
    bool has_zero;
    uint32_t zero_val;
} pl__hashmap;

/* True, with *val, when `key` is in the map. */
static inline bool pl__hashmap_get(const pl__hashmap *m, uint64_t key, uint32_t *val)
{
    if (key == 0) {
        *val = m->zero_val;
        return m->has_zero;
    }
    if (m->cap == 0) {
        return false;
    }
    size_t i = pl__hash_probe(m->keys, m->cap, key);
    *val = m->vals[i];
    return m->keys[i] == key;
}

/* Stores key -> val (replacing). Returns 0 or PL_ENOMEM (map unchanged). */
static inline int pl__hashmap_put(pl__hashmap *m, uint64_t key, uint32_t val)
{
    if (key == 0) {
        m->count += !m->has_zero;
        m->has_zero = true;
        m->zero_val = val;
        return 0;
    }
    if ((m->count + 1) * 2 > m->cap) {
        size_t cap = m->cap == 0 ? 32 : m->cap * 2;
        if (!pl__hash_rehash(&m->keys, &m->vals, m->cap, cap)) {
            return PL_ENOMEM;
        }
        m->cap = cap;
    }
    size_t i = pl__hash_probe(m->keys, m->cap, key);
    m->count += m->keys[i] == 0;
    m->keys[i] = key;
    m->vals[i] = val;
    return 0;
}

static inline void pl__hashmap_free(pl__hashmap *m)
{
    free(m->keys);
    free(m->vals);
    *m = (pl__hashmap){0};
}

#endif
