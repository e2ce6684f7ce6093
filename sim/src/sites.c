/* sim/src/sites.c: the site tables (sites.h): a lookup that makes a
 * site on first use, indexed by key in a hash map.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sim_assert.h"
#include "sites.h"

pl__site *pl__site_lookup(pl__site_table *t, uint64_t key, bool *created)
{
    *created = false;
    uint32_t i;
    if (pl__hashmap_get(&t->index, key, &i)) {
        PL__SIM_ASSERT(i < t->len && t->sites[i].key == key);
        return &t->sites[i];
    }
    if (t->len >= UINT32_MAX ||
        pl__grow((void **)&t->sites, &t->cap, t->len + 1, sizeof *t->sites, 32, 0) != 0 ||
        pl__hashmap_put(&t->index, key, (uint32_t)t->len) != 0) {
        return NULL;
    }
    t->sites[t->len] = (pl__site){.key = key};
    *created = true;
    return &t->sites[t->len++];
}

const char *pl__site_base(const char *file)
{
    const char *slash = strrchr(file, '/');
    return slash != NULL ? slash + 1 : file;
}

void pl__site_table_free(pl__site_table *t)
{
    free(t->sites);
    pl__hashmap_free(&t->index);
    memset(t, 0, sizeof *t);
}
