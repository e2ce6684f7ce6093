/* tests/sim/test_decide.c: the PRNG and the decision stream. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "knobs_of.h"
#include "leakcheck.h"
#include "pollen/error.h"
#include "pollen/sim_node.h"
#include "prng.h"

/* PRNG ------------------------------------------------------------------ */

LEAK_TEST(prng, splitmix64_reference_value)
{
    /* The published first output of splitmix64 from state 0. */
    uint64_t x = 0;
    cr_assert_eq(pl__splitmix64(&x), UINT64_C(0xe220a8397b1dcdaf));
}

LEAK_TEST(prng, golden_outputs_seed_1)
{
    /* Computed once with the reference splitmix64 + xoshiro256** code
     * (Vigna). Frozen for replay-format version 1: if this fails, every
     * recorded seed changed meaning. */
    static const uint64_t golden[8] = {
        UINT64_C(0xb3f2af6d0fc710c5), UINT64_C(0x853b559647364cea),
        UINT64_C(0x92f89756082a4514), UINT64_C(0x642e1c7bc266a3a7),
        UINT64_C(0xb27a48e29a233673), UINT64_C(0x24c123126ffda722),
        UINT64_C(0x123004ef8df510e6), UINT64_C(0x61954dcc47b1e89d),
    };
    pl__prng p;
    pl__prng_seed(&p, 1);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(pl__prng_next(&p), golden[i], "output %d", i);
    }
}

LEAK_TEST(prng, golden_bounded_seed_1)
{
    static const uint32_t ns[8] = {10, 3, 1000, 7, 2, 100000, 6, 65536};
    static const uint32_t golden[8] = {7, 1, 574, 2, 1, 14357, 0, 24981};
    pl__prng p;
    pl__prng_seed(&p, 1);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(pl__prng_below(&p, ns[i]), golden[i], "draw %d", i);
    }
}

LEAK_TEST(prng, golden_subseeds)
{
    /* Computed once from this implementation; frozen with the format. */
    cr_assert_eq(pl__prng_subseed(1, PL__SEED_DECIDE), UINT64_C(0xb318b1aa9eb747ee));
    cr_assert_eq(pl__prng_subseed(1, PL__SEED_SWARM), UINT64_C(0xfacec95d4663db7d));
    cr_assert_neq(pl__prng_subseed(1, PL__SEED_DECIDE), pl__prng_subseed(2, PL__SEED_DECIDE));
    cr_assert_neq(pl__prng_subseed(0, 0), 0);
}

LEAK_TEST(prng, below_stays_in_range_and_is_roughly_uniform)
{
    pl__prng p;
    pl__prng_seed(&p, 42);
    uint32_t hist[6] = {0};
    for (int i = 0; i < 60000; i++) {
        uint32_t v = pl__prng_below(&p, 6);
        cr_assert_lt(v, 6);
        hist[v]++;
    }
    for (int i = 0; i < 6; i++) {
        cr_assert(hist[i] > 9500 && hist[i] < 10500, "bucket %d: %u", i, hist[i]);
    }
    static const uint32_t edges[] = {1, 2, 3, 0x80000001u, UINT32_MAX};
    for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++) {
        for (int i = 0; i < 1000; i++) {
            cr_assert_lt(pl__prng_below(&p, edges[e]), edges[e]);
        }
    }
}

LEAK_TEST(prng, chance_consumes_exactly_one_output)
{
    pl__prng a;
    pl__prng b;
    pl__prng_seed(&a, 7);
    pl__prng_seed(&b, 7);
    for (int i = 0; i < 100; i++) {
        cr_assert(!pl__prng_chance(&a, 0));
        cr_assert(pl__prng_chance(&a, PL__PROB_ONE));
        pl__prng_next(&b);
        pl__prng_next(&b);
    }
    cr_assert_eq(memcmp(&a, &b, sizeof(a)), 0);
}

/* Knobs and names --------------------------------------------------------- */

/* Field by field: the struct has padding, so memcmp would read garbage. */
static bool knobs_same(const pl__dec_knobs *a, const pl__dec_knobs *b)
{
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        if (a->kind[i].enabled != b->kind[i].enabled || a->kind[i].prob != b->kind[i].prob) {
            return false;
        }
    }
    return memcmp(a->bound, b->bound, sizeof a->bound) == 0;
}

LEAK_TEST(knobs, defaults_are_the_documented_table)
{
    pl__dec_knobs k;
    pl__dec_knobs_default(&k);
    char buf[PL__DEC_KNOBS_TEXT_MAX];
    int n = pl__dec_knobs_format(&k, buf, sizeof(buf));
    cr_assert_str_eq(buf, "schedule=32768,io_order=32768,timer_order=32768,timer_late=4096,"
                          "spurious_wake=1024,spurious_poll=off,wake_delay=8192,cancel=1024,"
                          "io_fault=2048,io_latency=4096,buggify_site=16384,buggify_fire=8192,"
                          "probe=4096,disk_latency=8192,disk_fault=1024,disk_corrupt=1024,"
                          "disk_lose=32768,link_latency=16384,link_loss=1024,link_dup=512,"
                          "link_reorder=1024,link_reset=128,partition=256,clog=256,node_crash=256,"
                          "crash_silence=16384,thread_switch=8192,cond_spurious=1024,"
                          "node_pause=256,node_isolate=256,random=65536,clock_offset=16384,"
                          "clock_drift=16384,clock_jump=256");
    cr_assert_eq((size_t)n, strlen(buf));
}

/* The hand-written format against the printf it replaced, at the
 * probabilities whose digits are edge cases (0, one digit, 65536) and
 * with kinds switched off in between. */
LEAK_TEST(knobs, format_prints_what_printf_printed)
{
    static const uint32_t probs[] = {0, 7, 10, 65535, 65536, 4096, 1};
    pl__dec_knobs k;
    pl__dec_knobs_default(&k);
    char want[PL__DEC_KNOBS_TEXT_MAX];
    size_t used = 0;
    for (uint32_t i = 0; i < PL__DEC_KINDS; i++) {
        k.kind[i].enabled = i % 3 != 1;
        k.kind[i].prob = probs[i % (sizeof probs / sizeof probs[0])];
        const char *name = pl__dec_kind_name(i);
        if (name == NULL) {
            continue;
        }
        const char *sep = used == 0 ? "" : ",";
        int w = k.kind[i].enabled
                    ? snprintf(want + used, sizeof want - used, "%s%s=%u", sep, name,
                               (unsigned)k.kind[i].prob)
                    : snprintf(want + used, sizeof want - used, "%s%s=off", sep, name);
        used += (size_t)w;
    }
    char buf[PL__DEC_KNOBS_TEXT_MAX];
    int n = pl__dec_knobs_format(&k, buf, sizeof(buf));
    cr_assert_str_eq(buf, want);
    cr_assert_eq((size_t)n, used);
    cr_assert_not_null(strstr(buf, "=65536"));
    cr_assert_not_null(strstr(buf, "=0,"));
}

LEAK_TEST(knobs, format_truncates_like_snprintf)
{
    pl__dec_knobs k;
    pl__dec_knobs_default(&k);
    char small[10];
    int n = pl__dec_knobs_format(&k, small, sizeof(small));
    cr_assert_gt(n, 100);
    cr_assert_str_eq(small, "schedule=");
    cr_assert_lt(n, PL__DEC_KNOBS_TEXT_MAX);
}

LEAK_TEST(knobs, parse_round_trip)
{
    pl__dec_knobs k;
    pl__dec_knobs_default(&k);
    k.kind[PL_DECIDE_SCHEDULE].prob = 65536;
    k.kind[PL_DECIDE_CANCEL].enabled = true;
    k.kind[PL_DECIDE_CANCEL].prob = 0;
    k.kind[PL_DECIDE_IO_FAULT].enabled = false;
    char buf[PL__DEC_KNOBS_TEXT_MAX];
    pl__dec_knobs_format(&k, buf, sizeof(buf));
    pl__dec_knobs back;
    pl__dec_knobs_default(&back);
    char err[128];
    cr_assert_eq(pl__dec_knobs_parse(&back, buf, strlen(buf), err, sizeof(err)), 0, "%s", err);
    cr_assert(pl__dec_knobs_equal(&k, &back));
}

LEAK_TEST(knobs, parse_partial_on_and_empty)
{
    pl__dec_knobs k;
    pl__dec_knobs_default(&k);
    const char *text = "spurious_poll=on,timer_late=off,schedule=7";
    cr_assert_eq(pl__dec_knobs_parse(&k, text, strlen(text), NULL, 0), 0);
    cr_assert(k.kind[PL_DECIDE_SPURIOUS_POLL].enabled);
    cr_assert_eq(k.kind[PL_DECIDE_SPURIOUS_POLL].prob, 1024);
    cr_assert(!k.kind[PL_DECIDE_TIMER_LATE].enabled);
    cr_assert_eq(k.kind[PL_DECIDE_SCHEDULE].prob, 7);
    cr_assert(k.kind[PL_DECIDE_IO_ORDER].enabled);
    pl__dec_knobs before = k;
    cr_assert_eq(pl__dec_knobs_parse(&k, "", 0, NULL, 0), 0);
    cr_assert(knobs_same(&before, &k));
}

static void expect_knob_error(const char *text, const char *message)
{
    pl__dec_knobs k;
    pl__dec_knobs_default(&k);
    pl__dec_knobs before = k;
    char err[160] = "";
    cr_assert_eq(pl__dec_knobs_parse(&k, text, strlen(text), err, sizeof(err)), PL_EFORMAT,
                 "%s", text);
    cr_assert_str_eq(err, message, "for '%s'", text);
    cr_assert(knobs_same(&before, &k), "knobs changed by '%s'", text);
}

LEAK_TEST(knobs, parse_errors_are_precise)
{
    expect_knob_error("sched=1", "unknown kind 'sched' at offset 0");
    expect_knob_error("schedule=1,bogus=off", "unknown kind 'bogus' at offset 11");
    expect_knob_error("cancel=65537",
                      "value for 'cancel' must be off, on or 0..65536, got '65537' at offset 7");
    expect_knob_error("cancel=-1",
                      "value for 'cancel' must be off, on or 0..65536, got '-1' at offset 7");
    expect_knob_error("cancel=", "value for 'cancel' must be off, on or 0..65536, got '' "
                                 "at offset 7");
    expect_knob_error("schedule=1,schedule=2", "duplicate kind 'schedule' at offset 11");
    expect_knob_error("schedule", "expected 'name=value', got 'schedule' at offset 0");
    expect_knob_error("schedule=1,", "trailing comma after 'schedule=1,' at offset 0");
    expect_knob_error(",", "expected 'name=value', got '' at offset 0");
}

/* The clock bounds: at their defaults (the most each kind drew before
 * there were bounds) the text is what it was, so older knobs texts and
 * replays read the same; a bound set is written after the kinds, read
 * back, compared, and refused past its default. */
LEAK_TEST(knobs, bounds_are_written_when_set_and_read_back)
{
    pl__dec_knobs k;
    pl__dec_knobs_default(&k);
    cr_assert_eq(k.bound[PL__DEC_BOUND_CLOCK_OFFSET_MS], PL_SIM_CLOCK_OFFSET_MAX_NS / PL_MS);
    cr_assert_eq(k.bound[PL__DEC_BOUND_CLOCK_DRIFT_PPM], PL_SIM_CLOCK_DRIFT_MAX_PPM);
    cr_assert_eq(k.bound[PL__DEC_BOUND_CLOCK_JUMP_MS], PL_SIM_CLOCK_JUMP_MAX_NS / PL_MS);
    char buf[PL__DEC_KNOBS_TEXT_MAX];
    pl__dec_knobs_format(&k, buf, sizeof buf);
    cr_assert_null(strstr(buf, "_max_"), "%s", buf);
    cr_assert_eq(strcmp(strrchr(buf, ',') + 1, "clock_jump=256"), 0, "%s", buf);

    pl__dec_knobs def = k;
    k.bound[PL__DEC_BOUND_CLOCK_DRIFT_PPM] = 800;
    k.bound[PL__DEC_BOUND_CLOCK_JUMP_MS] = 0;
    pl__dec_knobs_format(&k, buf, sizeof buf);
    cr_assert_not_null(strstr(buf, "clock_jump=256,clock_drift_max_ppm=800,clock_jump_max_ms=0"),
                       "%s", buf);
    cr_assert(!pl__dec_knobs_equal(&k, &def));
    pl__dec_knobs back = def;
    char err[128] = "";
    cr_assert_eq(pl__dec_knobs_parse(&back, buf, strlen(buf), err, sizeof err), 0, "%s", err);
    cr_assert(pl__dec_knobs_equal(&k, &back));
    cr_assert(knobs_same(&k, &back));

    expect_knob_error("clock_drift_max_ppm=12801", "value for 'clock_drift_max_ppm' must be "
                                                   "0..12800, got '12801' at offset 20");
    expect_knob_error("clock_offset_max_ms=off", "value for 'clock_offset_max_ms' must be "
                                                 "0..128, got 'off' at offset 20");
    expect_knob_error("clock_jump_max_ms=1,clock_jump_max_ms=2",
                      "duplicate bound 'clock_jump_max_ms' at offset 20");
}

/* Kinds added later are drawn after the earlier ones: a swarm seed keeps
 * what it drew for the kinds it had (these texts are those of the
 * thirteen kinds before the disk's, drawn by the code of that time). */
LEAK_TEST(knobs, swarm_keeps_the_choices_of_earlier_kinds)
{
    static const char *const before[3] = {
        "schedule=16384,io_order=off,timer_order=4096,timer_late=off,spurious_wake=off,"
        "spurious_poll=256,wake_delay=off,cancel=1024,io_fault=4096,io_latency=1024,"
        "buggify_site=128,buggify_fire=8192,probe=128,",
        "schedule=off,io_order=16384,timer_order=40960,timer_late=512,spurious_wake=off,"
        "spurious_poll=128,wake_delay=off,cancel=off,io_fault=off,io_latency=256,"
        "buggify_site=off,buggify_fire=4096,probe=512,",
        "schedule=49152,io_order=off,timer_order=off,timer_late=off,spurious_wake=off,"
        "spurious_poll=256,wake_delay=off,cancel=off,io_fault=256,io_latency=16384,"
        "buggify_site=off,buggify_fire=off,probe=1024,",
    };
    for (int i = 0; i < 3; i++) {
        pl__dec_knobs k;
        pl__dec_knobs_swarm(&k, (uint64_t)(i + 1) * 1000 + 7);
        char buf[PL__DEC_KNOBS_TEXT_MAX];
        pl__dec_knobs_format(&k, buf, sizeof buf);
        cr_assert_eq(strncmp(buf, before[i], strlen(before[i])), 0, "seed %d: %s", i, buf);
        cr_assert_not_null(strstr(buf, "disk_lose="), "%s", buf);
    }
}

LEAK_TEST(knobs, swarm_is_deterministic_and_varied)
{
    pl__dec_knobs a;
    pl__dec_knobs b;
    pl__dec_knobs_swarm(&a, 99);
    pl__dec_knobs_swarm(&b, 99);
    cr_assert(knobs_same(&a, &b));
    int distinct = 0;
    int on[PL_DECIDE__COUNT] = {0};
    for (uint64_t seed = 0; seed < 400; seed++) {
        pl__dec_knobs_swarm(&b, seed);
        distinct += !pl__dec_knobs_equal(&a, &b);
        for (int i = 0; i < PL__DEC_KINDS; i++) {
            on[i] += b.kind[i].enabled;
            if (pl__dec_kind_name((uint32_t)i) == NULL) {
                cr_assert(!b.kind[i].enabled, "an unassigned kind is never drawn on");
                continue;
            }
            cr_assert(b.kind[i].prob > 0 && b.kind[i].prob <= PL__PROB_ONE);
        }
    }
    cr_assert_gt(distinct, 390);
    cr_assert(on[PL_DECIDE_SCHEDULE] > 300, "schedule on %d/400", on[PL_DECIDE_SCHEDULE]);
    cr_assert(on[PL_DECIDE_IO_FAULT] > 140 && on[PL_DECIDE_IO_FAULT] < 260);
    cr_assert(on[PL_DECIDE_CANCEL] > 60 && on[PL_DECIDE_CANCEL] < 140);
    char buf[PL__DEC_KNOBS_TEXT_MAX];
    pl__dec_knobs_format(&a, buf, sizeof(buf));
    pl__dec_knobs_default(&b);
    cr_assert_eq(pl__dec_knobs_parse(&b, buf, strlen(buf), NULL, 0), 0);
    cr_assert(pl__dec_knobs_equal(&a, &b));
}

LEAK_TEST(knobs, names_and_letters_round_trip)
{
    for (uint32_t i = 0; i < PL_DECIDE__COUNT; i++) {
        const char *name = pl__dec_kind_name(i);
        if (name == NULL) { /* a number not assigned in this build */
            cr_assert_eq(pl__dec_kind_letter(i), 0);
            continue;
        }
        cr_assert_eq(pl__dec_kind_from_name(name, strlen(name)), (int)i);
        cr_assert_eq(pl__dec_kind_from_letter(pl__dec_kind_letter(i)), (int)i);
    }
    cr_assert_null(pl__dec_kind_name(PL_DECIDE__COUNT));
    cr_assert_eq(pl__dec_kind_letter(PL_DECIDE__COUNT), 0);
    cr_assert_eq(pl__dec_kind_from_name("schedul", 7), -1);
    cr_assert_eq(pl__dec_kind_from_letter('z'), -1);
    /* The link kinds keep their numbers and letters (the replay format). */
    static const char links[] = "gLDrRPC";
    for (uint32_t i = 0; i < 7; i++) {
        cr_assert_eq(pl__dec_kind_letter(PL_DECIDE_LINK_LATENCY + i), links[i]);
    }
    cr_assert_str_eq(pl__dec_kind_name(17), "link_latency");
    cr_assert_str_eq(pl__dec_kind_name(23), "clog");
}

/* Swarm draws the kinds numbered after 12 after the older ones, so every
 * older kind's choice is what it was before they existed: a swarm seed's
 * knobs for kinds 0..12 are pinned here (drawn with the 13-kind table). */
LEAK_TEST(knobs, swarm_keeps_the_older_kinds_choices)
{
    pl__dec_knobs k;
    pl__dec_knobs_swarm(&k, 7);
    char buf[PL__DEC_KNOBS_TEXT_MAX];
    pl__dec_knobs_format(&k, buf, sizeof buf);
    static const char before[] =
        "schedule=40960,io_order=4096,timer_order=49152,timer_late=off,spurious_wake=16384,"
        "spurious_poll=8192,wake_delay=off,cancel=off,io_fault=off,io_latency=1024,"
        "buggify_site=8192,buggify_fire=2048,probe=16384,";
    cr_assert_eq(strncmp(buf, before, strlen(before)), 0, "%s", buf);
}

/* Typed knobs (pl_sim_knobs) -------------------------------------------------- */

/* Each field set to a distinct value, by name: the text lists them in the
 * knobs text's order, so a field bound to the wrong kind shows. */
static void number_every_field(pl_sim_knobs *k)
{
    pl_sim_knobs_default(k);
    k->schedule.prob = 1;
    k->io_order.prob = 2;
    k->timer_order.prob = 3;
    k->timer_late.prob = 4;
    k->spurious_wake.prob = 5;
    k->spurious_poll.prob = 6;
    k->spurious_poll.enabled = true;
    k->wake_delay.prob = 7;
    k->cancel.prob = 8;
    k->io_fault.prob = 9;
    k->io_latency.prob = 10;
    k->buggify_site.prob = 11;
    k->buggify_fire.prob = 12;
    k->probe.prob = 13;
    k->disk_latency.prob = 14;
    k->disk_fault.prob = 15;
    k->disk_corrupt.prob = 16;
    k->disk_lose.prob = 17;
    k->link_latency.prob = 18;
    k->link_loss.prob = 19;
    k->link_dup.prob = 20;
    k->link_reorder.prob = 21;
    k->link_reset.prob = 22;
    k->partition.prob = 23;
    k->clog.prob = 24;
    k->node_crash.prob = 25;
    k->crash_silence.prob = 26;
    k->thread_switch.prob = 27;
    k->cond_spurious.enabled = false;
    k->node_pause.prob = 29;
    k->node_isolate.prob = 30;
    k->random.prob = 31;
    k->clock_offset.prob = 32;
    k->clock_drift.prob = 33;
    k->clock_jump.prob = 34;
}

LEAK_TEST(knobs, typed_fields_are_their_kinds)
{
    pl_sim_knobs k;
    number_every_field(&k);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knob_values = &k;
    char buf[PL_SIM_KNOBS_TEXT_MAX];
    cr_assert_eq(pl_sim_knobs_text(&o, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "schedule=1,io_order=2,timer_order=3,timer_late=4,spurious_wake=5,"
                          "spurious_poll=6,wake_delay=7,cancel=8,io_fault=9,io_latency=10,"
                          "buggify_site=11,buggify_fire=12,probe=13,disk_latency=14,"
                          "disk_fault=15,disk_corrupt=16,disk_lose=17,link_latency=18,"
                          "link_loss=19,link_dup=20,link_reorder=21,link_reset=22,partition=23,"
                          "clog=24,node_crash=25,crash_silence=26,thread_switch=27,"
                          "cond_spurious=off,node_pause=29,node_isolate=30,random=31,"
                          "clock_offset=32,clock_drift=33,clock_jump=34");
}

LEAK_TEST(knobs, typed_defaults_are_the_text_defaults)
{
    pl_sim_knobs k;
    pl_sim_knobs_default(&k);
    pl_sim_options o;
    pl_sim_options_default(&o);
    char plain[PL_SIM_KNOBS_TEXT_MAX];
    cr_assert_eq(pl_sim_knobs_text(&o, plain, sizeof plain), 0);
    o.knob_values = &k;
    char typed[PL_SIM_KNOBS_TEXT_MAX];
    cr_assert_eq(pl_sim_knobs_text(&o, typed, sizeof typed), 0);
    cr_assert_str_eq(typed, plain);
    pl__dec_knobs a;
    pl__dec_knobs b;
    pl__dec_knobs_default(&a);
    cr_assert_eq(pl__sim_knobs_of(&o, &b, NULL, 0), 0);
    cr_assert(knobs_same(&a, &b));
}

/* The text applies on top of the typed knobs, kind by kind. */
LEAK_TEST(knobs, text_goes_on_top_of_typed)
{
    pl_sim_knobs k;
    pl_sim_knobs_default(&k);
    k.timer_late.prob = 0;
    k.cancel.enabled = false;
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knob_values = &k;
    o.knobs = "cancel=on,probe=off";
    pl__dec_knobs got;
    cr_assert_eq(pl__sim_knobs_of(&o, &got, NULL, 0), 0);
    pl__dec_knobs want;
    pl__dec_knobs_default(&want);
    want.kind[PL_DECIDE_TIMER_LATE].prob = 0;
    want.kind[PL_DECIDE_PROBE].enabled = false;
    cr_assert(knobs_same(&got, &want));
}

LEAK_TEST(knobs, typed_knobs_are_checked)
{
    pl_sim_knobs k;
    pl_sim_knobs_default(&k);
    k.link_dup.prob = PL_SIM_KNOB_PROB_ONE + 1;
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knob_values = &k;
    char err[128] = "";
    pl__dec_knobs got;
    cr_assert_eq(pl__sim_knobs_of(&o, &got, err, sizeof err), PL_EINVAL);
    cr_assert_str_eq(err, "knob_values.link_dup.prob is 65537, past 65536");
    char buf[PL_SIM_KNOBS_TEXT_MAX];
    cr_assert_eq(pl_sim_knobs_text(&o, buf, sizeof buf), PL_EINVAL);
    /* 65536 itself is "always". */
    k.link_dup.prob = PL_SIM_KNOB_PROB_ONE;
    cr_assert_eq(pl__sim_knobs_of(&o, &got, NULL, 0), 0);
    cr_assert_eq(got.kind[PL_DECIDE_LINK_DUP].prob, PL_SIM_KNOB_PROB_ONE);
}

/* Swarm draws every knob: typed knobs beside it are a mistake, said so. */
LEAK_TEST(knobs, swarm_refuses_typed_knobs)
{
    pl_sim_knobs k;
    pl_sim_knobs_default(&k);
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.strategy = "swarm";
    o.seed = 7;
    pl__dec_knobs got;
    cr_assert_eq(pl__sim_knobs_of(&o, &got, NULL, 0), 0);
    pl__dec_knobs drawn;
    pl__dec_knobs_swarm(&drawn, 7);
    cr_assert(knobs_same(&got, &drawn));
    o.knob_values = &k;
    char err[160] = "";
    cr_assert_eq(pl__sim_knobs_of(&o, &got, err, sizeof err), PL_EINVAL);
    cr_assert(strstr(err, "swarm") != NULL, "%s", err);
}


/* Stream: common rules ------------------------------------------------------ */

static pl__dec_knobs all_on(uint32_t prob)
{
    pl__dec_knobs k;
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        k.kind[i].enabled = true;
        k.kind[i].prob = prob;
    }
    return k;
}

LEAK_TEST(stream, trivial_and_disabled_decisions_touch_nothing)
{
    pl__dec_knobs k = all_on(PL__PROB_ONE);
    k.kind[PL_DECIDE_CANCEL].enabled = false;
    pl__dec d;
    pl__dec_init(&d, &k);
    pl__dec_use_prng(&d, 5);
    pl__prng before = d.prng;
    for (int i = 0; i < 100; i++) {
        cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 1, 0), 0);
        cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 0, 0), 0);
        cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_CANCEL, 100, 0), 0);
    }
    cr_assert_eq(memcmp(&before, &d.prng, sizeof(before)), 0);
    cr_assert_eq(d.consulted, 0);
    cr_assert_eq(d.records_len, 0);
    cr_assert_eq(d.count[PL_DECIDE_CANCEL], 0);

    static const uint8_t bytes[4] = {1, 2, 3, 4};
    pl__dec_use_bytes(&d, bytes, sizeof(bytes));
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_CANCEL, 10, 0), 0);
    cr_assert_eq(d.bytes_pos, 0);

    static const pl__dec_record list[1] = {{PL_DECIDE_SCHEDULE, 3, 2}};
    pl__dec_use_list(&d, list, 1);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_CANCEL, 10, 0), 0);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 1, 0), 0);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0), 2);
    cr_assert(!d.divergence.diverged);
    pl__dec_finish(&d);
}

/* Draws `draws` decisions of SCHEDULE with n choices and returns how many
 * left choice 0. */
static uint32_t count_deviations(uint32_t prob, uint32_t n, uint32_t draws, uint32_t *hist)
{
    pl__dec_knobs k = all_on(prob);
    pl__dec d;
    pl__dec_init(&d, &k);
    pl__dec_use_prng(&d, 1234);
    uint32_t dev = 0;
    for (uint32_t i = 0; i < draws; i++) {
        uint32_t v = pl__dec_choose(&d, PL_DECIDE_SCHEDULE, n, i);
        cr_assert_lt(v, n);
        dev += v != 0;
        if (hist != NULL) {
            hist[v]++;
        }
    }
    cr_assert_eq(d.nonzero[PL_DECIDE_SCHEDULE], dev);
    cr_assert_eq(d.count[PL_DECIDE_SCHEDULE], draws);
    pl__dec_finish(&d);
    return dev;
}

LEAK_TEST(stream, prng_probabilities_are_honoured)
{
    cr_assert_eq(count_deviations(0, 5, 100000, NULL), 0);
    cr_assert_eq(count_deviations(PL__PROB_ONE, 5, 100000, NULL), 100000);
    uint32_t half = count_deviations(32768, 2, 100000, NULL);
    cr_assert(half > 49000 && half < 51000, "32768: %u / 100000", half);
    uint32_t low = count_deviations(4096, 2, 100000, NULL);
    cr_assert(low > 5850 && low < 6650, "4096: %u / 100000", low);
    uint32_t rare = count_deviations(1024, 3, 100000, NULL);
    cr_assert(rare > 1370 && rare < 1760, "1024: %u / 100000", rare);
}

LEAK_TEST(stream, prng_deviations_are_uniform_over_the_rest)
{
    uint32_t hist[5] = {0};
    uint32_t dev = count_deviations(PL__PROB_ONE, 5, 100000, hist);
    cr_assert_eq(hist[0], 0);
    for (int i = 1; i < 5; i++) {
        cr_assert(hist[i] > 24000 && hist[i] < 26000, "value %d: %u", i, hist[i]);
    }
    cr_assert_eq(dev, 100000);
}

LEAK_TEST(stream, prng_source_is_reproducible)
{
    pl__dec a;
    pl__dec b;
    pl__dec c;
    pl__dec_init(&a, NULL);
    pl__dec_init(&b, NULL);
    pl__dec_init(&c, NULL);
    pl__dec_use_prng(&a, 77);
    pl__dec_use_prng(&b, 77);
    pl__dec_use_prng(&c, 78);
    int differ = 0;
    for (uint32_t i = 0; i < 1000; i++) {
        pl_decision_kind kind = (pl_decision_kind)(i % PL_DECIDE__COUNT);
        uint32_t va = pl__dec_choose(&a, kind, 2 + i % 7, i);
        cr_assert_eq(va, pl__dec_choose(&b, kind, 2 + i % 7, i));
        differ += va != pl__dec_choose(&c, kind, 2 + i % 7, i);
    }
    cr_assert_gt(differ, 0);
    pl__dec_finish(&a);
    pl__dec_finish(&b);
    pl__dec_finish(&c);
}

LEAK_TEST(stream, prng_source_golden_decisions)
{
    /* Pins the decision algorithm (chance draw, n == 2 shortcut, below)
     * on top of the PRNG. Computed once from this implementation. */
    static const uint32_t golden[16] = {0, 1, 0, 0, 0, 1, 2, 0, 1, 0, 2, 0, 1, 0, 0, 0};
    pl__dec d;
    pl__dec_init(&d, NULL);
    pl__dec_use_prng(&d, 1);
    uint32_t got[16];
    for (uint32_t i = 0; i < 16; i++) {
        got[i] = pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 2 + i % 4, 0);
    }
    for (uint32_t i = 0; i < 16; i++) {
        cr_assert_eq(got[i], golden[i], "decision %u: got %u", i, got[i]);
    }
    pl__dec_finish(&d);
}

/* Byte source ------------------------------------------------------------ */

LEAK_TEST(stream, bytes_decide_directly_and_exhaust_to_zero)
{
    pl__dec_knobs k = all_on(0); /* probabilities must be ignored */
    pl__dec d;
    pl__dec_init(&d, &k);
    static const uint8_t in[] = {7, 255, 0x01, 0x02, 0x03, 0x04, 9, 0xff, 0x01};
    pl__dec_use_bytes(&d, in, sizeof(in));
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 5, 0), 7 % 5);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_IO_FAULT, 256, 0), 255);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_IO_LATENCY, 1000000, 0), 0x04030201u % 1000000);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 2, 0), 1);
    cr_assert(!pl__dec_bytes_exhausted(&d));
    /* Two bytes left for a 4-byte decision: taken, zero-extended. */
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_IO_LATENCY, 70000, 0), 0x01ffu);
    cr_assert(pl__dec_bytes_exhausted(&d));
    for (int i = 0; i < 10; i++) {
        cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 9, 0), 0);
    }
    cr_assert_eq(d.consulted, 15);
    cr_assert_eq(d.records_len, 15);
    pl__dec_finish(&d);
}

LEAK_TEST(stream, empty_byte_buffer_is_production)
{
    pl__dec d;
    pl__dec_init(&d, NULL);
    pl__dec_use_bytes(&d, NULL, 0);
    cr_assert(pl__dec_bytes_exhausted(&d));
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 9, 0), 0);
    pl__dec_finish(&d);
}

/* List source ------------------------------------------------------------- */

LEAK_TEST(stream, list_replays_in_order_then_zero)
{
    static const pl__dec_record list[] = {
        {PL_DECIDE_SCHEDULE, 3, 2},
        {PL_DECIDE_TIMER_LATE, 10, 9},
        {PL_DECIDE_SCHEDULE, 2, 1},
    };
    pl__dec d;
    pl__dec_init(&d, NULL);
    pl__dec_use_list(&d, list, 3);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0), 2);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_TIMER_LATE, 10, 0), 9);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 2, 0), 1);
    cr_assert_eq(d.past_end, 0);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 4, 0), 0);
    }
    cr_assert_eq(d.past_end, 5);
    cr_assert(!d.divergence.diverged);
    pl__dec_finish(&d);
}

/* A prefix: the list, then the PRNG source's answers from the prefix
 * seed, as a PRNG source with that seed gives them from its first draw. */
LEAK_TEST(stream, prefix_replays_the_list_then_the_seeded_prng)
{
    static const pl__dec_record list[] = {
        {PL_DECIDE_SCHEDULE, 3, 2},
        {PL_DECIDE_TIMER_LATE, 10, 9},
    };
    pl__dec d, rng;
    pl__dec_init(&d, NULL);
    pl__dec_init(&rng, NULL);
    pl__dec_use_prefix(&d, list, 2, 77);
    pl__dec_use_prng(&rng, 77);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0), 2);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_TIMER_LATE, 10, 0), 9);
    uint32_t nonzero = 0;
    for (int i = 0; i < 64; i++) {
        uint32_t v = pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 4, 0);
        cr_assert_eq(v, pl__dec_choose(&rng, PL_DECIDE_SCHEDULE, 4, 0), "draw %d", i);
        nonzero += v != 0;
    }
    cr_assert_gt(nonzero, 0, "past the prefix the decisions are random, not production's");
    cr_assert_eq(d.past_end, 64);
    /* A plain list selected afterwards answers 0 past its end again. */
    pl__dec_use_list(&d, list, 0);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 4, 0), 0);
    pl__dec_finish(&d);
    pl__dec_finish(&rng);
}

LEAK_TEST(stream, list_by_kind_reads_one_sub_list_per_kind)
{
    static const pl__dec_record list[] = {
        {PL_DECIDE_SCHEDULE, 3, 2},
        {PL_DECIDE_TIMER_LATE, 10, 9},
        {PL_DECIDE_SCHEDULE, 2, 1},
        {PL_DECIDE_TIMER_LATE, 10, 4},
    };
    pl__dec d;
    pl__dec_init(&d, NULL);
    pl__dec_use_list_by_kind(&d, list, 4);
    /* Asked in another order than recorded: each kind keeps its own order. */
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_TIMER_LATE, 10, 0), 9);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_TIMER_LATE, 10, 0), 4);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0), 2);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 2, 0), 1);
    cr_assert_eq(d.past_end, 0);
    /* Past its sub-list a kind answers 0; values beyond n are clamped. */
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_TIMER_LATE, 10, 0), 0);
    cr_assert_eq(d.past_end, 1);
    pl__dec_use_list_by_kind(&d, list, 4);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_TIMER_LATE, 5, 0), 4);
    cr_assert(!d.divergence.diverged);
    pl__dec_finish(&d);
}

LEAK_TEST(stream, list_notes_first_divergence_and_clamps)
{
    static const pl__dec_record list[] = {
        {PL_DECIDE_SCHEDULE, 3, 2},
        {PL_DECIDE_SCHEDULE, 5, 4},   /* asked with n = 3: diverges, clamps */
        {PL_DECIDE_IO_ORDER, 4, 1},   /* asked as TIMER_ORDER: second, not noted */
    };
    pl__dec d;
    pl__dec_init(&d, NULL);
    pl__dec_use_list(&d, list, 3);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0), 2);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0), 2);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_TIMER_ORDER, 4, 0), 1);
    cr_assert(d.divergence.diverged);
    cr_assert_eq(d.divergence.index, 1);
    cr_assert_eq(d.divergence.expected_kind, PL_DECIDE_SCHEDULE);
    cr_assert_eq(d.divergence.expected_n, 5);
    cr_assert_eq(d.divergence.expected_value, 4);
    cr_assert_eq(d.divergence.asked_kind, PL_DECIDE_SCHEDULE);
    cr_assert_eq(d.divergence.asked_n, 3);
    pl__dec_finish(&d);
}

LEAK_TEST(stream, list_kind_mismatch_is_a_divergence)
{
    static const pl__dec_record list[] = {{PL_DECIDE_IO_ORDER, 4, 3}};
    pl__dec d;
    pl__dec_init(&d, NULL);
    pl__dec_use_list(&d, list, 1);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_TIMER_ORDER, 4, 0), 3);
    cr_assert(d.divergence.diverged);
    cr_assert_eq(d.divergence.index, 0);
    cr_assert_eq(d.divergence.expected_kind, PL_DECIDE_IO_ORDER);
    cr_assert_eq(d.divergence.asked_kind, PL_DECIDE_TIMER_ORDER);
    pl__dec_finish(&d);
}

LEAK_TEST(stream, recorded_run_replays_identically)
{
    pl__dec rec;
    pl__dec_init(&rec, NULL);
    pl__dec_use_prng(&rec, 2024);
    uint32_t values[3000];
    for (uint32_t i = 0; i < 3000; i++) {
        values[i] = pl__dec_choose(&rec, (pl_decision_kind)(i % 12), 1 + i % 9, i);
    }
    size_t len;
    const pl__dec_record *list = pl__dec_records(&rec, &len);
    cr_assert_eq(len, rec.consulted);
    pl__dec rep;
    pl__dec_init(&rep, NULL);
    pl__dec_use_list(&rep, list, len);
    for (uint32_t i = 0; i < 3000; i++) {
        cr_assert_eq(pl__dec_choose(&rep, (pl_decision_kind)(i % 12), 1 + i % 9, i), values[i]);
    }
    cr_assert(!rep.divergence.diverged);
    cr_assert_eq(rep.past_end, 0);
    cr_assert_eq(memcmp(rep.count, rec.count, sizeof(rec.count)), 0);
    cr_assert_eq(memcmp(rep.nonzero, rec.nonzero, sizeof(rec.nonzero)), 0);
    pl__dec_finish(&rec);
    pl__dec_finish(&rep);
}

/* Strategy hook -------------------------------------------------------------- */

typedef struct hook_log {
    uint32_t calls;
    uint64_t last_key;
    uint32_t last_fallback;
    uint32_t other_kinds; /* schedule_last: calls for a kind other than schedule */
} hook_log;

static uint32_t pick_last(void *ud, pl_decision_kind kind, uint32_t n, uint64_t key,
                          uint32_t fallback)
{
    hook_log *log = ud;
    log->calls++;
    log->last_key = key;
    log->last_fallback = fallback;
    return kind == PL_DECIDE_SCHEDULE ? n - 1 : fallback;
}

LEAK_TEST(stream, strategy_overrides_and_is_recorded)
{
    hook_log log = {0};
    pl__dec_knobs k = all_on(0);
    k.kind[PL_DECIDE_CANCEL].enabled = false;
    pl__dec d;
    pl__dec_init(&d, &k);
    pl__dec_set_strategy(&d, pick_last, &log);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 6, 41), 5);
    cr_assert_eq(log.last_key, 41);
    cr_assert_eq(log.last_fallback, 0);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_IO_ORDER, 6, 42), 0);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_CANCEL, 6, 43), 0);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 1, 44), 0);
    cr_assert_eq(log.calls, 2);
    size_t len;
    const pl__dec_record *r = pl__dec_records(&d, &len);
    cr_assert_eq(len, 2);
    cr_assert_eq(r[0].value, 5);
    cr_assert_eq(d.nonzero[PL_DECIDE_SCHEDULE], 1);
    pl__dec_set_strategy(&d, NULL, NULL);
    cr_assert_eq(pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 6, 45), 0);
    cr_assert_eq(log.calls, 2);
    pl__dec_finish(&d);
}

/* Recorder ------------------------------------------------------------------ */

LEAK_TEST(recorder, records_every_consulted_decision)
{
    pl__dec d;
    pl__dec_init(&d, NULL);
    pl__dec_use_prng(&d, 3);
    uint32_t got[5000];
    for (uint32_t i = 0; i < 5000; i++) {
        got[i] = pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 2 + i % 3, 0);
    }
    size_t len;
    const pl__dec_record *r = pl__dec_records(&d, &len);
    cr_assert_eq(len, 5000);
    for (uint32_t i = 0; i < 5000; i++) {
        cr_assert_eq(r[i].kind, PL_DECIDE_SCHEDULE);
        cr_assert_eq(r[i].n, 2 + i % 3);
        cr_assert_eq(r[i].value, got[i]);
    }
    cr_assert(!d.truncated);
    pl__dec_finish(&d);
}

LEAK_TEST(recorder, cap_truncates_but_keeps_counting)
{
    pl__dec d;
    pl__dec_init(&d, NULL);
    pl__dec_set_record_max(&d, 1500);
    for (uint32_t i = 0; i < 4000; i++) {
        pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0);
    }
    cr_assert_eq(d.records_len, 1500);
    cr_assert(d.truncated);
    cr_assert_eq(d.consulted, 4000);
    cr_assert_eq(d.count[PL_DECIDE_SCHEDULE], 4000);
    pl__dec_finish(&d);

    pl__dec_init(&d, NULL);
    pl__dec_set_record_max(&d, 0);
    pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 3, 0);
    cr_assert_eq(d.records_len, 0);
    cr_assert_null(d.records);
    cr_assert(d.truncated);
    pl__dec_finish(&d);
}

LEAK_TEST(recorder, flip_is_a_binary_choice)
{
    pl__dec_knobs k = all_on(PL__PROB_ONE);
    pl__dec d;
    pl__dec_init(&d, &k);
    cr_assert(pl__dec_flip(&d, PL_DECIDE_BUGGIFY_FIRE, 3));
    size_t len;
    const pl__dec_record *r = pl__dec_records(&d, &len);
    cr_assert_eq(len, 1);
    cr_assert_eq(r[0].n, 2);
    cr_assert_eq(r[0].value, 1);
    pl__dec_finish(&d);
}

/* Invariants hold in every build ------------------------------------------ */

static uint32_t out_of_range(void *ud, pl_decision_kind kind, uint32_t n, uint64_t key,
                             uint32_t fallback)
{
    (void)ud, (void)kind, (void)key, (void)fallback;
    return n;
}

/* A strategy answering outside [0, n) is a simulator bug: the stream
 * stops there, NDEBUG or not (it used to clamp the value in release). */
Test(stream, value_out_of_range_aborts_in_every_build, .signal = SIGABRT)
{
    pl__dec_knobs k = all_on(PL__PROB_ONE);
    pl__dec d;
    pl__dec_init(&d, &k);
    pl__dec_use_prng(&d, 5);
    pl__dec_set_strategy(&d, out_of_range, NULL);
    (void)pl__dec_choose(&d, PL_DECIDE_SCHEDULE, 4, 0);
}

LEAK_TEST(stream, counters_are_consistent_after_every_source)
{
    pl__dec_knobs k = all_on(PL__PROB_ONE / 2);
    pl__dec d;
    pl__dec_init(&d, &k);
    pl__dec_use_prng(&d, 9);
    for (uint32_t i = 0; i < 3000; i++) {
        (void)pl__dec_choose(&d, (pl_decision_kind)(i % PL_DECIDE__COUNT), 2 + i % 5, i);
    }
    pl__dec_check(&d);
    cr_assert_eq(d.records_len, d.consulted);
    pl__dec e;
    pl__dec_init(&e, &k);
    pl__dec_use_list(&e, d.records, d.records_len);
    for (uint32_t i = 0; i < 3000; i++) {
        (void)pl__dec_choose(&e, (pl_decision_kind)(i % PL_DECIDE__COUNT), 2 + i % 5, i);
    }
    pl__dec_check(&e);
    cr_assert_eq(memcmp(e.records, d.records, d.records_len * sizeof *d.records), 0);
    pl__dec_finish(&e);
    pl__dec_finish(&d);
}

/* Strategy kinds and the record's bound ------------------------------------- */

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
                               UINT64_C(1) << PL_DECIDE_SCHEDULE | UINT64_C(1) << 63);
    cr_assert_eq(sched.strategy_kinds, UINT64_C(1) << PL_DECIDE_SCHEDULE);
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

/* pl__dec_draw's inline append checks one bound, min(capacity,
 * record_max): every call that moves either must move the bound with it. */
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

/* The random source draws as prng.h documents, in the same order:
 * chance(prob), then 1 + below(n - 1) unless n == 2. */
LEAK_TEST(stream, prng_source_follows_the_documented_algorithm)
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
        cr_assert_eq(pl__dec_choose(&d, kind, n, i), want, "decision %u", i);
    }
    cr_assert_eq(memcmp(&d.prng, &ref, sizeof ref), 0);
    pl__dec_check(&d);
    pl__dec_finish(&d);
}
