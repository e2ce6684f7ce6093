/* sim/src/sites.h: tables of a run's source sites (sites.c), the
 * PL_BUGGIFY sites of the world (pl__sim.buggify) and the pl_eventually
 * sites of the properties (check_props.h), each in the order the run
 * first met them and indexed by key.
 */
#ifndef POLLEN_SIM_SITES_H
#define POLLEN_SIM_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hashset.h"

/* A PL_BUGGIFY site or a pl_eventually site seen in this run. */
typedef struct pl__site {
    uint64_t key;
    uint8_t enabled; /* buggify: enabled for this run */
    uint8_t last_ok; /* eventually: the latest evaluation */
    const char *msg;
    const char *file; /* NULL: unknown (a buggify site asked without one) */
    int line;
    const char *func;
    uint64_t reached; /* buggify: evaluations in this run */
    uint64_t fired;   /* buggify: evaluations that fired */
} pl__site;

typedef struct pl__site_table {
    pl__site *sites; /* grow.h */
    size_t len;
    size_t cap;
    pl__hashmap index; /* key -> position in sites */
} pl__site_table;

/* The site of `key`, *created saying it is new (zeroed but for its key);
 * NULL when out of memory. The pointer holds until the next lookup. */
pl__site *pl__site_lookup(pl__site_table *t, uint64_t key, bool *created);
void pl__site_table_free(pl__site_table *t);
/* A source file's base name: what site keys hash and reports show. */
const char *pl__site_base(const char *file);

#endif
