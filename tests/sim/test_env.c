/* tests/sim/test_env.c: the C library's clocks and random functions in a
 * simulation binary (sim/src/env/env.h), and pollen/random.h.
 *
 * Inside a run each routed call reads the run: clocks the virtual clock,
 * random functions the run's stream (recorded, replayed, shrunk,
 * explained). Outside any run each behaves as the C library's own, which
 * the tests reach past the routing through dlsym(RTLD_NEXT) and raw
 * system calls.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <pollen/pollen.h>
#include <pollen/sim.h>

#include "env/env.h"
#include "knobs.h"
#include "leakcheck.h"
#include "run.h"
#include "run_record.h"
#include "sim_internal.h"

/* ---- What a run saw ------------------------------------------------------- */

typedef struct seen {
    pl_time now;                    /* pl_now when the clocks were read */
    struct timespec mono, real, boot, cpu;
    time_t t, t_out;
    struct timeval tv;
    int rand_v[4];
    long random_v[2];
    unsigned char bytes[7];         /* getrandom */
    unsigned char entropy[4];       /* getentropy */
    uint32_t arc4, arc4_uniform;
    uint64_t u64, below;
} seen;

static seen last;

typedef struct probe {
    pl_future base;
    seen *out;
    pl_sleep nap;
} probe;

static void read_clocks(seen *s)
{
    clock_gettime(CLOCK_MONOTONIC, &s->mono);
    clock_gettime(CLOCK_REALTIME, &s->real);
    clock_gettime(CLOCK_BOOTTIME, &s->boot);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &s->cpu);
    s->t = time(&s->t_out);
    gettimeofday(&s->tv, NULL);
}

static void read_random(seen *s)
{
    srand(1); /* changes nothing in a run */
    for (int i = 0; i < 4; i++) {
        s->rand_v[i] = rand();
    }
    srandom(1);
    s->random_v[0] = random();
    s->random_v[1] = random();
    cr_assert_eq(getrandom(s->bytes, sizeof s->bytes, 0), (ssize_t)sizeof s->bytes);
    cr_assert_eq(getentropy(s->entropy, sizeof s->entropy), 0);
    s->arc4 = arc4random();
    s->arc4_uniform = arc4random_uniform(1000);
    s->u64 = pl_random_u64();
    s->below = pl_random_below(6);
}

static pl_poll_result probe_poll(pl_future *f, pl_context *cx)
{
    probe *self = (probe *)f;
    PL_ASYNC_BEGIN(self);
    self->nap = pl_sleep_for(1500 * PL_MS);
    PL_AWAIT(cx, &self->nap);
    self->out->now = pl_now(cx->ex);
    read_clocks(self->out);
    read_random(self->out);
    PL_ASYNC_END;
}

static void probe_drop(pl_future *f) { pl_drop_child(&((probe *)f)->nap.base); }

static const pl_future_vtable probe_vt = {"probe", probe_poll, probe_drop};

static int probe_setup(pl_executor *ex, void *state)
{
    probe p = {.base = PL_FUTURE_INIT(&probe_vt), .out = state};
    return PL_SPAWN(ex, p, "probe", NULL);
}

static int probe_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex, (void)msg, (void)len;
    last = *(const seen *)state;
    return 0;
}

PL_SCENARIO(env_probe, .name = "env_probe", .state_size = sizeof(seen), .setup = probe_setup,
            .check = probe_check);

static pl_sim_result run_probe(uint64_t seed, const char *knobs, const void *list, size_t len)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = seed;
    o.knobs = knobs;
    if (list != NULL) {
        o.source = PL_SIM_SOURCE_LIST;
        o.decisions = list;
        o.decisions_len = len;
    }
    pl_sim_result r;
    memset(&last, 0, sizeof last);
    cr_assert_eq(pl_sim_run(&env_probe, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    return r;
}

static pl_time ts_ns(const struct timespec *ts)
{
    return (pl_time)ts->tv_sec * PL_S + ts->tv_nsec;
}

/* ---- Inside a run ------------------------------------------------------------ */

/* A large read: 64 KiB of getrandom in one call. */
enum { BIG_READ = 64 * 1024 };
static unsigned char big_bytes[BIG_READ];

static pl_poll_result big_poll(pl_future *f, pl_context *cx)
{
    (void)f, (void)cx;
    cr_assert_eq(getrandom(big_bytes, sizeof big_bytes, 0), (ssize_t)sizeof big_bytes);
    return PL_READY;
}

static const pl_future_vtable big_vt = {"big_read", big_poll, NULL};

static int big_setup(pl_executor *ex, void *state)
{
    (void)state;
    pl_future f = PL_FUTURE_INIT(&big_vt);
    return PL_SPAWN(ex, f, "big_read", NULL);
}

PL_SCENARIO(env_big_read, .name = "env_big_read", .setup = big_setup);

static size_t random_decisions(const pl_sim_result *r)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    cr_assert_not_null(rec);
    size_t n = 0;
    for (size_t i = 0; i < rec->decisions_len; i++) {
        n += rec->decisions[i].kind == (uint32_t)PL_DECIDE_RANDOM;
    }
    return n;
}

static pl_sim_result run_big(uint64_t seed)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = seed;
    pl_sim_result r;
    memset(big_bytes, 0, sizeof big_bytes);
    cr_assert_eq(pl_sim_run(&env_big_read, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    cr_assert_not(pl__sim_result_record(&r)->decisions_truncated);
    return r;
}

/* A long read is one 64-bit draw (three decisions) expanded, not a
 * decision per three bytes, which overflowed the run's record; the same
 * seed still gives the same bytes, another seed others. */
LEAK_TEST(env, a_long_read_costs_three_decisions)
{
    static unsigned char first[BIG_READ];
    pl_sim_result a = run_big(3);
    memcpy(first, big_bytes, sizeof first);
    cr_assert_eq(random_decisions(&a), 3);
    size_t zeros = 0;
    for (size_t i = 0; i < sizeof first; i++) {
        zeros += first[i] == 0;
    }
    cr_assert_lt(zeros, BIG_READ / 64, "the expansion fills every byte");
    pl_sim_result b = run_big(3);
    cr_assert_eq(memcmp(first, big_bytes, sizeof first), 0);
    cr_assert_eq(b.hash, a.hash);
    pl_sim_result c = run_big(4);
    cr_assert_neq(memcmp(first, big_bytes, sizeof first), 0);
    pl_sim_result_free(&c);
    pl_sim_result_free(&b);
    pl_sim_result_free(&a);
}


LEAK_TEST(env, clocks_read_the_virtual_clock)
{
    pl_sim_result r = run_probe(0, NULL, NULL, 0);
    cr_assert_geq(last.now, 1500 * PL_MS);
    cr_assert_eq(ts_ns(&last.mono), last.now);
    cr_assert_eq(ts_ns(&last.boot), last.now);
    cr_assert_eq(ts_ns(&last.cpu), last.now);
    cr_assert_eq(ts_ns(&last.real), PL__ENV_EPOCH_NS + last.now);
    cr_assert_eq(last.t, (time_t)((PL__ENV_EPOCH_NS + last.now) / PL_S));
    cr_assert_eq(last.t_out, last.t);
    cr_assert_eq(last.tv.tv_sec, last.t);
    cr_assert_eq((pl_time)last.tv.tv_usec, (PL__ENV_EPOCH_NS + last.now) % PL_S / PL_US);
    pl_sim_result_free(&r);
}

/* Every value a decision of kind random: the run's count says so, and a
 * second run of the seed, or its recorded list, gives the same values. */
LEAK_TEST(env, random_functions_draw_recorded_decisions)
{
    pl_sim_result r = run_probe(7, NULL, NULL, 0);
    seen first = last;
    const pl__run_record *rec = pl__sim_result_record(&r);
    cr_assert_not_null(rec);
    size_t randoms = 0;
    for (size_t i = 0; i < rec->decisions_len; i++) {
        randoms += rec->decisions[i].kind == (uint32_t)PL_DECIDE_RANDOM;
    }
    /* rand 4, random 2, getrandom 3, getentropy 2, arc4random 3,
     * arc4random_uniform 1, pl_random_u64 3, pl_random_below 1. */
    cr_assert_eq(randoms, 19);
    for (int i = 0; i < 4; i++) {
        cr_assert(first.rand_v[i] >= 0 && first.rand_v[i] <= RAND_MAX);
    }
    cr_assert_lt(first.arc4_uniform, 1000);
    cr_assert_lt(first.below, 6);

    pl_sim_result again = run_probe(7, NULL, NULL, 0);
    cr_assert_eq(memcmp(&first, &last, sizeof first), 0, "a seed gives the same values");
    cr_assert_eq(again.hash, r.hash);
    pl_sim_result replayed = run_probe(0, NULL, rec->decisions, rec->decisions_len);
    cr_assert_eq(memcmp(&first, &last, sizeof first), 0, "the record gives the same values");
    cr_assert_not(replayed.diverged);
    pl_sim_result_free(&replayed);
    pl_sim_result_free(&again);
    pl_sim_result_free(&r);
}

LEAK_TEST(env, seeds_draw_different_values)
{
    pl_sim_result a = run_probe(1, NULL, NULL, 0);
    seen first = last;
    pl_sim_result b = run_probe(2, NULL, NULL, 0);
    cr_assert_neq(memcmp(first.rand_v, last.rand_v, sizeof first.rand_v), 0);
    cr_assert_neq(first.u64, last.u64);
    cr_assert_neq(memcmp(first.bytes, last.bytes, sizeof first.bytes), 0);
    cr_assert_neq(memcmp(first.entropy, last.entropy, sizeof first.entropy), 0);
    cr_assert_neq(a.hash, b.hash, "the draws are in the trace");
    /* The same seed, the same bytes. */
    pl_sim_result c = run_probe(1, NULL, NULL, 0);
    cr_assert_eq(memcmp(first.bytes, last.bytes, sizeof first.bytes), 0);
    cr_assert_eq(memcmp(first.entropy, last.entropy, sizeof first.entropy), 0);
    cr_assert_eq(c.hash, a.hash);
    pl_sim_result_free(&a);
    pl_sim_result_free(&b);
    pl_sim_result_free(&c);
}

LEAK_TEST(env, the_kind_off_draws_zeros)
{
    pl_sim_result r = run_probe(3, "random=off", NULL, 0);
    seen zero;
    memset(&zero, 0, sizeof zero);
    cr_assert_eq(memcmp(last.rand_v, zero.rand_v, sizeof zero.rand_v), 0);
    cr_assert_eq(last.random_v[0] | last.random_v[1], 0);
    cr_assert_eq(memcmp(last.bytes, zero.bytes, sizeof zero.bytes), 0);
    cr_assert_eq(last.u64 | last.below | last.arc4 | last.arc4_uniform, 0);
    cr_assert_eq(r.nonzero_decisions, 0);
    pl_sim_result_free(&r);
}

/* A draw through the stream's PRNG maps choice v to v - 1: a value 0 needs
 * choice 0 or 1, and the largest value is reached. */
LEAK_TEST(env, a_bounded_draw_covers_its_range)
{
    bool hit[6] = {false};
    for (uint64_t seed = 0; seed < 64; seed++) {
        pl_sim_result r = run_probe(seed, NULL, NULL, 0);
        hit[last.below] = true;
        pl_sim_result_free(&r);
    }
    for (int v = 0; v < 6; v++) {
        cr_assert(hit[v], "pl_random_below(6) never gave %d over 64 seeds", v);
    }
}

/* ---- Shrinking and explaining a draw -------------------------------------------
 * Fails when one roll of a die, among twenty, is a six. */

static int dice_setup(pl_executor *ex, void *state)
{
    (void)ex, (void)state;
    for (int i = 0; i < 20; i++) {
        pl_always(rand() % 6 != 5, "no six");
    }
    return 0;
}

PL_SCENARIO(env_dice, .name = "env_dice", .setup = dice_setup, .expect = "assertion");

LEAK_TEST(env, a_draw_shrinks_and_explains_itself)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_campaign_result cr;
    pl_campaign_options co = {.seed_lo = 0, .seed_hi = 99, .sim = &o, .stop_at_first = true};
    cr_assert_eq(pl_sim_campaign(&env_dice, &co, &cr), 0);
    cr_assert_eq(cr.first.kind, PL_FINDING_ASSERTION);
    o.seed = cr.first_seed;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&env_dice, &o, &r), 0);
    const pl__run_record *rec = pl__sim_result_record(&r);
    pl_sim_shrink_result s;
    cr_assert_eq(pl_sim_shrink(&env_dice, &o, rec->decisions, rec->decisions_len,
                               PL_FINDING_ASSERTION, NULL, &s),
                 0, "%s", s.message);
    cr_assert_eq(s.nonzero_after, 1, "%s", s.explanation);
    cr_assert_not_null(strstr(s.explanation, "random: rand() drew "), "%s", s.explanation);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}

/* ---- Outside any run -------------------------------------------------------------- */

static pl_time raw_clock(clockid_t clk)
{
    struct timespec ts;
    cr_assert_eq(syscall(SYS_clock_gettime, clk, &ts), 0);
    return ts_ns(&ts);
}

LEAK_TEST(env, outside_a_run_clocks_are_the_system_clocks)
{
    cr_assert_null(pl__sim_current());
    pl_time before = raw_clock(CLOCK_MONOTONIC);
    struct timespec ts;
    cr_assert_eq(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
    pl_time after = raw_clock(CLOCK_MONOTONIC);
    cr_assert(before <= ts_ns(&ts) && ts_ns(&ts) <= after);
    cr_assert(before <= pl__env_real_now() && pl__env_real_now() <= raw_clock(CLOCK_MONOTONIC));

    pl_time real_before = raw_clock(CLOCK_REALTIME);
    cr_assert_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
    time_t t = time(NULL);
    struct timeval tv;
    cr_assert_eq(gettimeofday(&tv, NULL), 0);
    pl_time real_after = raw_clock(CLOCK_REALTIME);
    cr_assert(real_before <= ts_ns(&ts) && ts_ns(&ts) <= real_after);
    /* time() reads the kernel's coarse second, which may trail by a tick. */
    cr_assert(real_before / PL_S - 1 <= t && t <= real_after / PL_S);
    pl_time tv_ns = (pl_time)tv.tv_sec * PL_S + (pl_time)tv.tv_usec * PL_US;
    cr_assert(real_before / PL_US * PL_US <= tv_ns && tv_ns <= real_after);
    /* Nowhere near the simulator's epoch. */
    cr_assert_gt(real_before, PL__ENV_EPOCH_NS + 86400 * PL_S);
}

/* The routed rand and random share the C library's state: seeded by
 * srand and srandom, they give its sequence. */
LEAK_TEST(env, outside_a_run_random_functions_are_the_c_librarys)
{
    int (*libc_rand)(void);
    long (*libc_random)(void);
    void *p = dlsym(RTLD_NEXT, "rand");
    memcpy(&libc_rand, &p, sizeof p);
    p = dlsym(RTLD_NEXT, "random");
    memcpy(&libc_random, &p, sizeof p);
    cr_assert(libc_rand != NULL && libc_random != NULL);
    srand(42);
    int a = rand(), b = rand();
    srand(42);
    cr_assert_eq(libc_rand(), a);
    cr_assert_eq(libc_rand(), b);
    srandom(9);
    long c = random();
    srandom(9);
    cr_assert_eq(libc_random(), c);

    /* The kernel's bytes: two reads of 16 agree with odds 2^-128, while a
     * routed stream outside a run (zeros, or a fixed seed's) would repeat. */
    unsigned char buf[16] = {0}, again[16] = {0}, entropy[16] = {0}, arc[16] = {0};
    cr_assert_eq(getrandom(buf, sizeof buf, 0), (ssize_t)sizeof buf);
    cr_assert_eq(getrandom(again, sizeof again, 0), (ssize_t)sizeof again);
    cr_assert_eq(getentropy(entropy, sizeof entropy), 0);
    arc4random_buf(arc, sizeof arc);
    cr_assert_neq(memcmp(buf, again, sizeof buf), 0);
    cr_assert_neq(memcmp(buf, entropy, sizeof buf), 0);
    cr_assert_neq(memcmp(again, entropy, sizeof buf), 0);
    cr_assert_neq(memcmp(arc, entropy, sizeof arc), 0);
    cr_assert_lt(arc4random_uniform(10), 10);
}

/* Production's generator: per thread, reproducible after pl_random_seed. */
LEAK_TEST(env, outside_a_run_pl_random_is_production_s_generator)
{
    pl_random_seed(5);
    uint64_t a = pl_random_u64(), b = pl_random_below(1000);
    pl_random_seed(5);
    cr_assert_eq(pl_random_u64(), a);
    cr_assert_eq(pl_random_below(1000), b);
    cr_assert_lt(b, 1000);
    cr_assert_neq(a, pl_random_u64());
    cr_assert_lt(pl_random_below(UINT64_MAX), UINT64_MAX);
}
