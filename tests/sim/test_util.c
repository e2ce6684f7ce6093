/* tests/sim/test_util.c: sim/src's growable array, hash set and map, and
 * the site tables built on them. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "grow.h"
#include "hashset.h"
#include "leakcheck.h"
#include "sim_internal.h"

LEAK_TEST(grow, doubles_from_first_zeroes_and_respects_max)
{
    uint32_t *a = NULL;
    size_t cap = 0;
    cr_assert_eq(pl__grow((void **)&a, &cap, 1, sizeof *a, 16, 0), 0);
    cr_assert_eq(cap, 16);
    a[15] = 7;
    cr_assert_eq(pl__grow((void **)&a, &cap, 40, sizeof *a, 16, 0), 0);
    cr_assert_eq(cap, 64);
    cr_assert_eq(a[15], 7);
    for (size_t i = 16; i < cap; i++) {
        cr_assert_eq(a[i], 0);
    }
    cr_assert_eq(pl__grow((void **)&a, &cap, 10, sizeof *a, 16, 0), 0);
    cr_assert_eq(cap, 64, "never shrinks");
    cr_assert_eq(pl__grow((void **)&a, &cap, 65, sizeof *a, 16, 100), 0);
    cr_assert_eq(cap, 100, "clamped to max");
    cr_assert_eq(pl__grow((void **)&a, &cap, 101, sizeof *a, 16, 100), PL_EMSGSIZE);
    cr_assert_eq(cap, 100);
    free(a);
}

LEAK_TEST(hashset, counts_distinct_values_zero_included)
{
    pl__hashset hs = {0};
    for (uint64_t i = 0; i < 5000; i++) {
        pl__hashset_add(&hs, i % 2000);
    }
    cr_assert_eq(hs.count, 2000);
    cr_assert(!hs.full);
    pl__hashset_free(&hs);
}

LEAK_TEST(hashset, stops_at_its_cap_with_a_lower_bound)
{
    pl__hashset hs = {.cap_max = 1024};
    for (uint64_t i = 1; i <= 4000; i++) {
        pl__hashset_add(&hs, i * 0x100000001b3u);
    }
    cr_assert(hs.full);
    cr_assert_leq(hs.count, 512);
    pl__hashset_free(&hs);
}

LEAK_TEST(hashmap, gets_what_was_put_across_growth)
{
    pl__hashmap m = {0};
    uint32_t v;
    cr_assert(!pl__hashmap_get(&m, 5, &v));
    for (uint32_t i = 0; i < 3000; i++) {
        cr_assert_eq(pl__hashmap_put(&m, (uint64_t)i * 977, i), 0);
    }
    cr_assert_eq(m.count, 3000);
    for (uint32_t i = 0; i < 3000; i++) {
        cr_assert(pl__hashmap_get(&m, (uint64_t)i * 977, &v));
        cr_assert_eq(v, i);
    }
    cr_assert(!pl__hashmap_get(&m, 1, &v));
    cr_assert_eq(pl__hashmap_put(&m, 0, 42), 0);
    cr_assert(pl__hashmap_get(&m, 0, &v) && v == 42, "key 0 is kept aside");
    pl__hashmap_free(&m);
}

/* Sites come back in the order the run first met them, whatever their
 * keys: pl_eventually's verdict reports the first site met that failed. */
LEAK_TEST(sites, lookup_finds_and_keeps_first_met_order)
{
    pl__site_table t = {0};
    bool created;
    for (uint64_t k = 100; k > 0; k--) {
        pl__site *s = pl__site_lookup(&t, k * 0x9e3779b97f4a7c15u, &created);
        cr_assert_not_null(s);
        cr_assert(created);
        s->line = (int)k;
    }
    for (uint64_t k = 1; k <= 100; k++) {
        pl__site *s = pl__site_lookup(&t, k * 0x9e3779b97f4a7c15u, &created);
        cr_assert(!created);
        cr_assert_eq(s->line, (int)k);
    }
    cr_assert_eq(t.len, 100);
    for (size_t i = 0; i < t.len; i++) {
        cr_assert_eq(t.sites[i].line, (int)(100 - i));
    }
    pl__site_table_free(&t);
}
