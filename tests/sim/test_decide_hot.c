/* tests/sim/test_decide_hot.c: the decision stream's inline path (the
 * strategy's kind mask, the record's one bound) answers and records as
 * the documented stream does. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "leakcheck.h"
#include "prng.h"

static pl__dec_knobs all_on(uint32_t prob)
{
    pl__dec_knobs k;
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        k.kind[i].enabled = true;
        k.kind[i].prob = prob;
    }
    return k;
}

typedef struct hook_log {
    uint32_t calls;
    uint32_t other_kinds; /* calls for a kind other than schedule */
} hook_log;

/* Changes schedule decisions only (the last choice), as the fairness and
 * PCT hooks do; counts every call. */
static uint32_t schedule_last(void *ud, pl_decision_kind kind, uint32_t n, uint64_t key,
                              uint32_t fallback)
{
    (void)key;
    hook_log *log = ud;
    log->calls++;
    if (kind != PL_DECIDE_SCHEDULE) {
        log->other_kinds++;
        return fallback;
    }
    return n - 1;
}

/* A mixed run: every kind, n from 2 to 6, keyed by its index. */
static void mixed_run(pl__dec *d, uint32_t len)
{
    for (uint32_t i = 0; i < len; i++) {
        pl_decision_kind kind = (pl_decision_kind)(i * 7 % PL_DECIDE__COUNT);
        (void)pl__dec_choose(d, kind, 2 + i % 5, i);
    }
}

LEAK_TEST(strategy_kinds, hook_sees_its_kinds_only_and_changes_nothing_else)
{
    pl__dec_knobs k = all_on(PL__PROB_ONE / 2);
    hook_log all_log = {0};
    hook_log sched_log = {0};
    pl__dec all;
    pl__dec sched;
    pl__dec_init(&all, &k);
    pl__dec_init(&sched, &k);
    pl__dec_use_prng(&all, 77);
    pl__dec_use_prng(&sched, 77);
    pl__dec_set_strategy(&all, schedule_last, &all_log);
    /* Bits past the last kind are dropped, not kept as garbage. */
    pl__dec_set_strategy_kinds(&sched, schedule_last, &sched_log,
                               1u << PL_DECIDE_SCHEDULE | 1u << 31);
    cr_assert_eq(sched.strategy_kinds, 1u << PL_DECIDE_SCHEDULE);
    mixed_run(&all, 4000);
    mixed_run(&sched, 4000);
    cr_assert_gt(all_log.other_kinds, 0);
    cr_assert_eq(sched_log.other_kinds, 0);
    cr_assert_eq(sched_log.calls, (uint32_t)sched.count[PL_DECIDE_SCHEDULE]);
    cr_assert_eq(all.records_len, sched.records_len);
    cr_assert_eq(memcmp(all.records, sched.records, all.records_len * sizeof *all.records), 0);
    cr_assert_eq(memcmp(all.nonzero, sched.nonzero, sizeof all.nonzero), 0);
    pl__dec_check(&all);
    pl__dec_check(&sched);
    pl__dec_finish(&all);
    pl__dec_finish(&sched);
}

LEAK_TEST(strategy_kinds, removing_the_hook_clears_the_mask)
{
    hook_log log = {0};
    pl__dec_knobs k = all_on(PL__PROB_ONE);
    pl__dec d;
    pl__dec_init(&d, &k);
    pl__dec_set_strategy_kinds(&d, schedule_last, &log, 1u << PL_DECIDE_SCHEDULE);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 5, 0), 4);
    pl__dec_set_strategy_kinds(&d, NULL, NULL, 1u << PL_DECIDE_SCHEDULE);
    cr_assert_eq(d.strategy_kinds, 0);
    (void)pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 5, 0);
    cr_assert_eq(log.calls, 1);
    pl__dec_check(&d);
    pl__dec_finish(&d);
}

/* The inline append checks one bound, min(capacity, record_max): every
 * call that moves either must move the bound with it. */
LEAK_TEST(record_room, lowering_the_cap_after_growth_stops_the_record)
{
    pl__dec d;
    pl__dec_init(&d, NULL);
    pl__dec_use_prng(&d, 4);
    for (uint32_t i = 0; i < 1100; i++) {
        (void)pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0);
    }
    cr_assert_gt(d.records_cap, 1100);
    pl__dec_set_record_max(&d, 1100);
    (void)pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0);
    cr_assert_eq(d.records_len, 1100);
    cr_assert(d.truncated);
    pl__dec_set_record_max(&d, 1102);
    (void)pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0);
    cr_assert_eq(d.records_len, 1101);
    cr_assert_eq(d.consulted, 1102);
    pl__dec_check(&d);
    pl__dec_finish(&d);
}

LEAK_TEST(record_room, nothing_is_recorded_after_take)
{
    pl__dec d;
    pl__dec_init(&d, NULL);
    for (uint32_t i = 0; i < 10; i++) {
        (void)pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0);
    }
    size_t len;
    pl__dec_record *r = pl__dec_take_records(&d, &len);
    cr_assert_eq(len, 10);
    /* The taken array had room left: the stream must not write into it. */
    pl__dec_record copy[10];
    memcpy(copy, r, sizeof copy);
    (void)pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0);
    cr_assert(d.truncated);
    cr_assert_eq(d.consulted, 11);
    cr_assert_eq(memcmp(copy, r, sizeof copy), 0);
    free(r);
    pl__dec_finish(&d);
}

/* The inline random source draws as prng.h documents, in the same order:
 * chance(prob), then 1 + below(n - 1) unless n == 2. */
LEAK_TEST(random_source, inline_draws_match_the_documented_algorithm)
{
    pl__dec_knobs k = all_on(PL__PROB_ONE / 3);
    pl__dec d;
    pl__dec_init(&d, &k);
    pl__dec_use_prng(&d, 123);
    pl__prng ref;
    pl__prng_seed(&ref, pl__prng_subseed(123, PL__SEED_DECIDE));
    for (uint32_t i = 0; i < 5000; i++) {
        pl_decision_kind kind = (pl_decision_kind)(i % PL_DECIDE__COUNT);
        uint32_t n = 2 + i % 300; /* past 256 too: Lemire's rejection zone grows */
        uint32_t want = 0;
        if (pl__prng_chance(&ref, k.kind[kind].prob)) {
            want = n == 2 ? 1 : 1 + pl__prng_below(&ref, n - 1);
        }
        cr_assert_eq(pl__dec_choose_consulted(&d, kind, n, i), want, "decision %u", i);
    }
    cr_assert_eq(memcmp(&d.prng, &ref, sizeof ref), 0);
    pl__dec_check(&d);
    pl__dec_finish(&d);
}

/* One bit per kind sends a decision off the inline path: every kind for
 * a source other than the PRNG, the strategy's kinds for the PRNG. */
LEAK_TEST(slow_kinds, follow_the_source_and_the_strategy)
{
    static const uint8_t bytes[4] = {1, 2, 3, 4};
    hook_log log = {0};
    pl__dec d;
    pl__dec_init(&d, NULL);
    cr_assert_eq(d.slow_kinds, 0);
    pl__dec_set_strategy_kinds(&d, schedule_last, &log, 1u << PL_DECIDE_SCHEDULE);
    cr_assert(pl__dec_slow_kind_(&d, PL_DECIDE_SCHEDULE));
    cr_assert(!pl__dec_slow_kind_(&d, PL_DECIDE_PROBE));
    pl__dec_use_bytes(&d, bytes, sizeof bytes);
    for (int k = 0; k < PL__DEC_KINDS; k++) {
        cr_assert(pl__dec_slow_kind_(&d, (pl_decision_kind)k), "kind %d", k);
    }
    /* The byte source answers, not the PRNG: 3 % 2 == 1 after 1 % 2 == 1. */
    cr_assert_eq(pl__dec_choose_consulted(&d, PL_DECIDE_TIMER_LATE, 2, 0), 1);
    cr_assert_eq(pl__dec_choose_consulted(&d, PL_DECIDE_IO_ORDER, 3, 0), 2);
    pl__dec_use_prng(&d, 1);
    cr_assert_eq(d.slow_kinds, 1u << PL_DECIDE_SCHEDULE);
    pl__dec_set_strategy(&d, NULL, NULL);
    cr_assert_eq(d.slow_kinds, 0);
    pl__dec_check(&d);
    pl__dec_finish(&d);
}
