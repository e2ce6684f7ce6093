/* sim/src/grow.h: the one growable array of sim/src.
 *
 * An array is a pointer, a count the caller keeps and a capacity (size_t)
 * this helper keeps. Header only: every module of sim/src grows its
 * tables through it, the CLI included.
 */
#ifndef POLLEN_SIM_GROW_H
#define POLLEN_SIM_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pollen/error.h"

/* Makes *arr (elements of `size` bytes, *cap of them) hold at least
 * `need`: the capacity starts at `first` and doubles, clamped to `max`
 * elements (0: no bound but memory). Elements past the old capacity are
 * zeroed. Returns 0; PL_EMSGSIZE when need is above max; PL_ENOMEM when
 * memory ran out. On failure *arr and *cap are unchanged. */
static inline int pl__grow(void **arr, size_t *cap, size_t need, size_t size, size_t first,
                           size_t max)
{
    if (need <= *cap) {
        return 0;
    }
    size_t limit = SIZE_MAX / size;
    if (max == 0 || max > limit) {
        max = limit;
    }
    if (need > max) {
        return PL_EMSGSIZE;
    }
    size_t want = *cap == 0 ? (first > 0 ? first : 1) : *cap;
    while (want < need) {
        want = want > max / 2 ? max : want * 2;
    }
    if (want > max) {
        want = max;
    }
    char *p = realloc(*arr, want * size);
    if (p == NULL) {
        return PL_ENOMEM;
    }
    memset(p + *cap * size, 0, (want - *cap) * size);
    *arr = p;
    *cap = want;
    return 0;
}

#endif
