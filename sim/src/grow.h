/* sim/src/grow.h: the one growable array of sim/src.
 *
 * An array is a pointer, a count the caller keeps and a capacity (size_t)
 * this helper keeps. Header only: every module of sim/src grows its
 * tables through it, the CLI included.
 */
#ifndef POLLEN_SIM_GROW_H
#define POLLEN_SIM_GROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pollen/error.h"

static inline int pl__grow_(void **arr, size_t *cap, size_t need, size_t size, size_t first,
                            size_t max, bool zero)
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
    if (zero) {
        memset(p + *cap * size, 0, (want - *cap) * size);
    }
    *arr = p;
    *cap = want;
    return 0;
}

/* Makes *arr (elements of `size` bytes, *cap of them) hold at least
 * `need`: the capacity starts at `first` and doubles, clamped to `max`
 * elements (0: no bound but memory). Elements past the old capacity are
 * zeroed. Returns 0; PL_EMSGSIZE when need is above max; PL_ENOMEM when
 * memory ran out. On failure *arr and *cap are unchanged. */
static inline int pl__grow(void **arr, size_t *cap, size_t need, size_t size, size_t first,
                           size_t max)
{
    return pl__grow_(arr, cap, need, size, first, max, true);
}

/* pl__grow for arrays only ever appended to (the caller writes each
 * element before it counts it): the new elements are left unwritten. */
static inline int pl__grow_append(void **arr, size_t *cap, size_t need, size_t size,
                                  size_t first, size_t max)
{
    return pl__grow_(arr, cap, need, size, first, max, false);
}

#endif
