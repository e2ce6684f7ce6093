/* tests/sim/test_history.c: histories and the linearizability checker
 * (pollen/sim_history.h; sim/src/lin_search.c, check_history.c).
 *
 * The search on hand-written histories of the three shipped models
 * (linearizable ones, and ones no order explains), the unknown
 * operation's two readings, the shrinking to the operations that
 * matter, the verdict of a run (per key, the finding's text, the
 * bounds), and the checker's speed on a 1,000-operation history of 5
 * clients, printed (no timed assertion: a loaded machine must not fail
 * it).
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <pollen/sim.h>
#include <pollen/sim_history.h>

#include "check_history.h"
#include "leakcheck.h"
#include "prng.h"

/* A history under construction: events numbered in the order written. */
typedef struct hist {
    pl__lin_op ops[2048];
    size_t n;
    uint64_t clock;
} hist;

static size_t inv(hist *h, uint32_t kind, uint64_t key, int64_t in, int64_t in2)
{
    cr_assert_lt(h->n, sizeof h->ops / sizeof h->ops[0]);
    h->ops[h->n] = (pl__lin_op){.op = {.kind = kind, .key = key, .in = in, .in2 = in2},
                                .call = ++h->clock, .ret = UINT64_MAX};
    return h->n++;
}

static void ok(hist *h, size_t i, int64_t out)
{
    h->ops[i].op.out = out;
    h->ops[i].ret = ++h->clock;
}

static void unknown(hist *h, size_t i) { h->ops[i].op.unknown = true; }

/* An operation that begins and ends before the next one. */
static size_t seq(hist *h, uint32_t kind, int64_t in, int64_t in2, int64_t out)
{
    size_t i = inv(h, kind, 0, in, in2);
    ok(h, i, out);
    return i;
}

static pl__lin_verdict check(const pl_model *m, const hist *h)
{
    return pl__lin_check(m, h->ops, h->n, PL_HISTORY_STEPS_MAX, NULL);
}

LEAK_TEST(history, register_sequential)
{
    hist h = {0};
    seq(&h, PL_REG_READ, 0, 0, 0);
    seq(&h, PL_REG_WRITE, 5, 0, 0);
    seq(&h, PL_REG_READ, 0, 0, 5);
    seq(&h, PL_REG_CAS, 5, 6, 1);
    seq(&h, PL_REG_CAS, 5, 7, 0);
    seq(&h, PL_REG_READ, 0, 0, 6);
    cr_assert_eq(check(&pl_model_register, &h), PL__LIN_OK);
    h.ops[h.n - 1].op.out = 5; /* a read of the value before the swap */
    cr_assert_eq(check(&pl_model_register, &h), PL__LIN_BAD);
}

/* A stale read: the write returned before the read began. Overlapping,
 * the same results are linearizable. */
LEAK_TEST(history, stale_read_and_overlap)
{
    hist h = {0};
    seq(&h, PL_REG_WRITE, 1, 0, 0);
    seq(&h, PL_REG_WRITE, 2, 0, 0);
    seq(&h, PL_REG_READ, 0, 0, 1);
    cr_assert_eq(check(&pl_model_register, &h), PL__LIN_BAD);

    hist o = {0};
    seq(&o, PL_REG_WRITE, 1, 0, 0);
    size_t w = inv(&o, PL_REG_WRITE, 0, 2, 0);
    size_t r = inv(&o, PL_REG_READ, 0, 0, 0);
    ok(&o, r, 1);
    ok(&o, w, 0);
    cr_assert_eq(check(&pl_model_register, &o), PL__LIN_OK);
}

/* An unknown write may have taken effect (a later read sees it) or not
 * (a later read does not), but not before its invocation. */
LEAK_TEST(history, unknown_takes_effect_or_not)
{
    for (int64_t seen = 0; seen <= 1; seen++) {
        hist h = {0};
        unknown(&h, inv(&h, PL_REG_WRITE, 0, 1, 0));
        seq(&h, PL_REG_READ, 0, 0, seen);
        seq(&h, PL_REG_READ, 0, 0, seen);
        cr_assert_eq(check(&pl_model_register, &h), PL__LIN_OK, "read %" PRId64, seen);
    }
    hist once = {0};
    unknown(&once, inv(&once, PL_REG_WRITE, 0, 1, 0));
    seq(&once, PL_REG_READ, 0, 0, 1);
    seq(&once, PL_REG_READ, 0, 0, 0); /* took effect, then undone: no */
    cr_assert_eq(check(&pl_model_register, &once), PL__LIN_BAD);

    hist early = {0};
    seq(&early, PL_REG_READ, 0, 0, 1); /* before the write was even invoked */
    unknown(&early, inv(&early, PL_REG_WRITE, 0, 1, 0));
    cr_assert_eq(check(&pl_model_register, &early), PL__LIN_BAD);
}

/* Many timed-out reads cost nothing: an unknown operation that changes
 * nothing is never linearized (without that rule the memo doubles with
 * each one and this history takes 2^60 steps). */
LEAK_TEST(history, unknown_reads_are_cheap)
{
    hist h = {0};
    seq(&h, PL_REG_WRITE, 1, 0, 0);
    for (int i = 0; i < 60; i++) {
        unknown(&h, inv(&h, PL_REG_READ, 0, 0, 0));
    }
    seq(&h, PL_REG_WRITE, 2, 0, 0);
    seq(&h, PL_REG_READ, 0, 0, 1);
    uint64_t steps = 0;
    cr_assert_eq(pl__lin_check(&pl_model_register, h.ops, h.n, PL_HISTORY_STEPS_MAX, &steps),
                 PL__LIN_BAD);
    cr_assert_lt(steps, 100000, "%" PRIu64 " steps", steps);
}

LEAK_TEST(history, log_model)
{
    hist h = {0};
    int64_t d = 0;
    for (int64_t e = 10; e < 13; e++) {
        seq(&h, PL_LOG_APPEND, e, 0, 0);
        d = pl_history_log_digest(d, e);
    }
    size_t r = inv(&h, PL_LOG_READ, 0, 0, 0);
    ok(&h, r, 3);
    h.ops[r].op.out2 = d;
    seq(&h, PL_LOG_LEN, 0, 0, 3);
    cr_assert_eq(check(&pl_model_log, &h), PL__LIN_OK);
    h.ops[r].op.out2 = pl_history_log_digest(pl_history_log_digest(pl_history_log_digest(0, 11), 10), 12);
    cr_assert_eq(check(&pl_model_log, &h), PL__LIN_BAD, "entries out of order");
    h.ops[r].op.out2 = d;
    h.ops[h.n - 1].op.out = 2;
    cr_assert_eq(check(&pl_model_log, &h), PL__LIN_BAD, "a shorter log after a longer one");
}

/* The shrink keeps the operations that matter: the stale read and two
 * operations that pin it, not the noise around them; what it kept still
 * admits no order with every other operation relaxed. */
LEAK_TEST(history, minimize_keeps_what_matters)
{
    hist h = {0};
    for (int i = 0; i < 5; i++) {
        seq(&h, PL_REG_READ, 0, 0, 0);
    }
    seq(&h, PL_REG_WRITE, 1, 0, 0);
    seq(&h, PL_REG_READ, 0, 0, 1);
    seq(&h, PL_REG_WRITE, 2, 0, 0);
    seq(&h, PL_REG_READ, 0, 0, 2);
    size_t stale = seq(&h, PL_REG_READ, 0, 0, 1);
    seq(&h, PL_REG_READ, 0, 0, 2);
    bool keep[sizeof h.ops / sizeof h.ops[0]];
    cr_assert(pl__lin_minimize(&pl_model_register, h.ops, h.n, keep, 1000000));
    size_t kept = 0;
    for (size_t i = 0; i < h.n; i++) {
        kept += keep[i];
        if (!keep[i]) {
            h.ops[i].op.unknown = true;
            h.ops[i].ret = UINT64_MAX;
        }
    }
    cr_assert(keep[stale], "the stale read");
    cr_assert_leq(kept, 3, "kept %zu", kept);
    cr_assert_eq(check(&pl_model_register, &h), PL__LIN_BAD);
    cr_assert_eq(pl__lin_check(&pl_model_register, h.ops, h.n, 2, NULL), PL__LIN_BUDGET);
}

/* ---- A run's verdict ------------------------------------------------------- */

enum { V_KV_BAD, V_KV_GOOD, V_TOO_MANY, V_NO_MODEL, V_TWICE, V_LONG_NAME };

/* kv under a name longer than a finding's message. */
static char long_name[1500];
static pl_model long_named;

/* The case the next run's setup records (the tests run one at a time). */
static int current_case;

static int verdict_setup(pl_executor *ex, void *state)
{
    (void)ex;
    (void)state;
    pl_model nameless = pl_model_kv;
    nameless.name = NULL;
    cr_assert_eq(pl_history_use(&nameless), PL_EINVAL, "a model needs a name");
    if (current_case == V_LONG_NAME) {
        memset(long_name, 'm', sizeof long_name - 1);
        long_named = pl_model_kv;
        long_named.name = long_name;
        cr_assert_eq(pl_history_use(&long_named), 0);
    } else if (current_case != V_NO_MODEL) {
        cr_assert_eq(pl_history_use(&pl_model_kv), 0);
        cr_assert_eq(pl_history_use(&pl_model_kv), PL_EINVAL, "one model per run");
    }
    if (current_case == V_TOO_MANY) {
        for (uint32_t i = 0; i <= PL_HISTORY_OPS_MAX; i++) {
            pl_history_ok(pl_history_invoke("c", PL_REG_WRITE, i, 1, 0), 0, 0);
        }
        return 0;
    }
    /* Key 1 is fine; key 2 is read stale unless the case is the good one. */
    pl_history_ok(pl_history_invoke("c1", PL_REG_WRITE, 1, 7, 0), 0, 0);
    pl_history_ok(pl_history_invoke("c2", PL_REG_READ, 1, 0, 0), 7, 0);
    pl_history_ok(pl_history_invoke("c1", PL_REG_WRITE, 2, 8, 0), 0, 0);
    pl_history_fail(pl_history_invoke("c1", PL_REG_WRITE, 2, 0, 0)); /* no effect */
    uint64_t r = pl_history_invoke("c2", PL_REG_READ, 2, 0, 0);
    pl_history_ok(r, current_case == V_KV_GOOD ? 8 : 0, 0);
    if (current_case == V_TWICE) {
        pl_history_unknown(r);
    }
    (void)pl_history_invoke(NULL, PL_REG_WRITE, 3, 1, 0); /* open at the end: unknown */
    return 0;
}

static pl_finding run_case(int what)
{
    current_case = what;
    const pl_scenario sc = {.name = "history_verdict", .setup = verdict_setup};
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&sc, &o, &r), 0);
    pl_finding f = r.finding;
    pl_sim_result_free(&r);
    return f;
}

LEAK_TEST(history, verdict_per_key)
{
    pl_finding f = run_case(V_KV_GOOD);
    cr_assert_eq(f.kind, PL_FINDING_NONE, "%s", f.message);
    f = run_case(V_KV_BAD);
    cr_assert_eq(f.kind, PL_FINDING_LINEARIZABILITY, "%s: %s", pl_finding_name(f.kind), f.message);
    cr_assert(strstr(f.message, "model kv, key 2") != NULL, "%s", f.message);
    cr_assert(strstr(f.message, "c1             write(2, 8)") != NULL, "%s", f.message);
    cr_assert(strstr(f.message, "c2             read(2) -> 0") != NULL, "%s", f.message);
    cr_assert(strstr(f.message, "invoked 0.000 ms, returned 0.000 ms") != NULL, "%s", f.message);
    cr_assert_null(strstr(f.message, "write(2, 0)"), "a failed operation is left out: %s",
                   f.message);
    cr_assert_null(strstr(f.message, "key 1"), "%s", f.message);
    cr_assert_str_eq(pl_finding_name(PL_FINDING_LINEARIZABILITY), "linearizability");
}

/* A message longer than the finding's is cut, never written past it. */
LEAK_TEST(history, a_long_model_name_is_cut)
{
    pl_finding f = run_case(V_LONG_NAME);
    cr_assert_eq(f.kind, PL_FINDING_LINEARIZABILITY, "%s", f.message);
    cr_assert(strncmp(f.message, "history not linearizable (model mmm", 35) == 0, "%s", f.message);
    cr_assert_eq(strlen(f.message), sizeof f.message - 1);
}

LEAK_TEST(history, verdict_never_passes_what_it_did_not_check)
{
    pl_finding f = run_case(V_TOO_MANY);
    cr_assert_eq(f.kind, PL_FINDING_LINEARIZABILITY, "%s", f.message);
    cr_assert(strstr(f.message, "history too large to check") != NULL, "%s", f.message);
    f = run_case(V_NO_MODEL);
    cr_assert_eq(f.kind, PL_FINDING_LINEARIZABILITY, "%s", f.message);
    cr_assert(strstr(f.message, "no model set") != NULL, "%s", f.message);
    f = run_case(V_TWICE);
    cr_assert_eq(f.kind, PL_FINDING_ASSERTION, "%s", f.message);
    cr_assert(strstr(f.message, "already completed") != NULL, "%s", f.message);
}

LEAK_TEST(history, outside_a_run)
{
    cr_assert_eq(pl_history_use(&pl_model_register), PL_ENOSYS);
    cr_assert_eq(pl_history_invoke("c", PL_REG_READ, 0, 0, 0), 0);
    pl_history_ok(0, 0, 0);
    pl_history_unknown(0);
    pl_history_fail(0);
}

/* ---- Speed ------------------------------------------------------------------ */

/* A linearizable history of `ops` operations by `clients` clients on
 * `keys` keys: each operation takes effect at a random instant of its
 * interval on a true register per key, so its results are what a
 * correct system returns; a client's next operation starts after its
 * previous one returned. */
static size_t gen(hist *h, uint64_t seed, size_t ops, int clients, int keys)
{
    uint64_t rng = seed;
    typedef struct ev {
        uint64_t at;
        int kind; /* 0 call, 1 effect, 2 return */
        size_t op;
    } ev;
    static ev evs[3 * 2048];
    size_t nev = 0;
    uint64_t free_at[16] = {0};
    h->n = 0;
    for (size_t i = 0; i < ops; i++) {
        int c = (int)(pl__splitmix64(&rng) % (uint64_t)clients);
        uint64_t call = free_at[c] + 1 + pl__splitmix64(&rng) % 8;
        uint64_t eff = call + 1 + pl__splitmix64(&rng) % 16;
        uint64_t ret = eff + 1 + pl__splitmix64(&rng) % 16;
        free_at[c] = ret;
        uint32_t kind = (uint32_t)(pl__splitmix64(&rng) % 3);
        int64_t v = (int64_t)(pl__splitmix64(&rng) % 4);
        h->ops[h->n] = (pl__lin_op){
            .op = {.kind = kind, .key = pl__splitmix64(&rng) % (uint64_t)keys, .in = v, .in2 = v + 1}};
        evs[nev++] = (ev){call * 3, 0, h->n};
        evs[nev++] = (ev){eff * 3 + 1, 1, h->n};
        evs[nev++] = (ev){ret * 3 + 2, 2, h->n};
        h->n++;
    }
    /* Process in time order: stamps from one counter, effects on the registers. */
    for (size_t a = 1; a < nev; a++) {
        for (size_t b = a; b > 0 && evs[b - 1].at > evs[b].at; b--) {
            ev t = evs[b];
            evs[b] = evs[b - 1];
            evs[b - 1] = t;
        }
    }
    int64_t reg[16] = {0};
    uint64_t clock = 0;
    for (size_t k = 0; k < nev; k++) {
        pl__lin_op *o = &h->ops[evs[k].op];
        if (evs[k].kind == 0) {
            o->call = ++clock;
        } else if (evs[k].kind == 2) {
            o->ret = ++clock;
        } else {
            pl_history_op *p = &o->op;
            int64_t *r = &reg[p->key];
            if (p->kind == PL_REG_READ) {
                p->out = *r;
            } else if (p->kind == PL_REG_WRITE) {
                *r = p->in;
            } else {
                p->out = *r == p->in;
                *r = *r == p->in ? p->in2 : *r;
            }
        }
    }
    return h->n;
}

/* Checks each key of h alone, as the verdict does; the total steps. */
static pl__lin_verdict per_key(const hist *h, int keys, uint64_t *steps)
{
    static pl__lin_op part[2048];
    pl__lin_verdict worst = PL__LIN_OK;
    *steps = 0;
    for (int k = 0; k < keys; k++) {
        size_t n = 0;
        for (size_t i = 0; i < h->n; i++) {
            if (h->ops[i].op.key == (uint64_t)k) {
                part[n++] = h->ops[i];
            }
        }
        uint64_t s = 0;
        pl__lin_verdict v = pl__lin_check(&pl_model_kv, part, n, PL_HISTORY_STEPS_MAX, &s);
        *steps += s;
        worst = v > worst ? v : worst;
    }
    return worst;
}

/* A 1,000-operation history of 5 clients is decided within the search's
 * step bound, linearizable as generated and not once one read is
 * changed. How fast is pollen-bench's question, not a test's: this one
 * prints the steps the search took. */
LEAK_TEST(history, a_1000_op_history_of_5_clients_is_decided)
{
    static hist h;
    const int key_counts[] = {1, 10};
    for (size_t kc = 0; kc < 2; kc++) {
        int keys = key_counts[kc];
        uint64_t steps_max = 0;
        enum { ROUNDS = 20 };
        for (uint64_t seed = 1; seed <= ROUNDS; seed++) {
            gen(&h, seed, 1000, 5, keys);
            uint64_t steps = 0;
            cr_assert_eq(per_key(&h, keys, &steps), PL__LIN_OK, "seed %" PRIu64, seed);
            steps_max = steps > steps_max ? steps : steps_max;
            /* One read changed: no longer linearizable. */
            for (size_t i = h.n / 2; i < h.n; i++) {
                if (h.ops[i].op.kind == PL_REG_READ) {
                    h.ops[i].op.out += 10;
                    break;
                }
            }
            cr_assert_eq(per_key(&h, keys, &steps), PL__LIN_BAD, "seed %" PRIu64, seed);
        }
        fprintf(stderr,
                "history check: 1000 operations, 5 clients, %d key(s): at most %" PRIu64
                " search steps over %d histories\n",
                keys, steps_max, ROUNDS);
    }
}
