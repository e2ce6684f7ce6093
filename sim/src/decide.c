/* sim/src/decide.c: the decision stream: its sources and recorder (the
 * knobs are knobs.c's). */
#include "decide.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sim_assert.h"

/* The stream ------------------------------------------------------------ */

/* Each kind is a bit of strategy_kinds. */
_Static_assert(PL_DECIDE__COUNT < 64, "strategy_kinds holds one bit per kind");
#define ALL_KINDS ((UINT64_C(1) << PL_DECIDE__COUNT) - 1)

/* The inline append's bound: below it the array has room and the cap
 * allows another record, so one compare does for both. */
static void update_room(pl__dec *d)
{
    d->records_room = d->records_cap < d->record_max ? d->records_cap : d->record_max;
}

/* The inline path serves the PRNG source only, and the kinds no strategy
 * wants: one bit per kind says which way a decision goes. */
static uint64_t slow_kinds_of(const pl__dec *d)
{
    return d->source != PL__DEC_SOURCE_PRNG ? ALL_KINDS : d->strategy_kinds;
}

void pl__dec_init(pl__dec *d, const pl__dec_knobs *knobs)
{
    memset(d, 0, sizeof(*d));
    if (knobs != NULL) {
        d->knobs = *knobs;
    } else {
        pl__dec_knobs_default(&d->knobs);
    }
    d->record_max = PL__DEC_RECORD_MAX_DEFAULT;
    update_room(d); /* 0: nothing allocated yet */
    pl__dec_use_prng(d, 0);
}

void pl__dec_finish(pl__dec *d)
{
    free(d->records);
    d->records = NULL;
    d->records_len = 0;
    d->records_cap = 0;
    update_room(d);
}

void pl__dec_use_prng(pl__dec *d, uint64_t seed)
{
    d->source = PL__DEC_SOURCE_PRNG;
    d->slow_kinds = slow_kinds_of(d);
    pl__prng_seed(&d->prng, pl__prng_subseed(seed, PL__SEED_DECIDE));
}

void pl__dec_use_bytes(pl__dec *d, const uint8_t *data, size_t len)
{
    PL__SIM_ASSERT(data != NULL || len == 0);
    d->source = PL__DEC_SOURCE_BYTES;
    d->slow_kinds = slow_kinds_of(d);
    d->bytes = data;
    d->bytes_len = len;
    d->bytes_pos = 0;
}

void pl__dec_use_list(pl__dec *d, const pl__dec_record *records, size_t len)
{
    PL__SIM_ASSERT(records != NULL || len == 0);
    d->source = PL__DEC_SOURCE_LIST;
    d->slow_kinds = slow_kinds_of(d);
    d->list = records;
    d->list_len = len;
    d->list_pos = 0;
    d->list_then_prng = false;
    d->past_end = 0;
    memset(&d->divergence, 0, sizeof(d->divergence));
}

void pl__dec_use_prefix(pl__dec *d, const pl__dec_record *records, size_t len, uint64_t seed)
{
    pl__dec_use_list(d, records, len);
    pl__prng_seed(&d->prng, pl__prng_subseed(seed, PL__SEED_DECIDE));
    d->list_then_prng = true;
}

void pl__dec_use_list_by_kind(pl__dec *d, const pl__dec_record *records, size_t len)
{
    pl__dec_use_list(d, records, len);
    d->source = PL__DEC_SOURCE_LIST_BY_KIND;
    d->slow_kinds = slow_kinds_of(d);
    memset(d->kind_pos, 0, sizeof(d->kind_pos));
}

void pl__dec_set_strategy(pl__dec *d, pl__dec_strategy_fn fn, void *ud)
{
    pl__dec_set_strategy_kinds(d, fn, ud, ALL_KINDS);
}

void pl__dec_set_strategy_kinds(pl__dec *d, pl__dec_strategy_fn fn, void *ud, uint64_t kinds)
{
    d->strategy = fn;
    d->strategy_ud = ud;
    /* The mask is the only test a decision makes: no hook, no bit. */
    d->strategy_kinds = fn != NULL ? kinds & ALL_KINDS : 0;
    d->slow_kinds = slow_kinds_of(d);
}

void pl__dec_set_record_max(pl__dec *d, size_t max)
{
    d->record_max = max;
    update_room(d);
}

pl__dec_record *pl__dec_take_records(pl__dec *d, size_t *len)
{
    pl__dec_record *r = d->records;
    *len = d->records_len;
    d->records = NULL;
    d->records_cap = 0;
    d->record_max = 0; /* what it records from now on would be lost */
    update_room(d);
    return r;
}

const pl__dec_record *pl__dec_records(const pl__dec *d, size_t *len)
{
    *len = d->records_len;
    return d->records;
}

bool pl__dec_bytes_exhausted(const pl__dec *d)
{
    return d->source == PL__DEC_SOURCE_BYTES && d->bytes_pos >= d->bytes_len;
}

static uint32_t from_bytes(pl__dec *d, uint32_t n)
{
    size_t left = d->bytes_len - d->bytes_pos;
    if (left == 0) {
        return 0;
    }
    const uint8_t *p = d->bytes + d->bytes_pos;
    if (n <= 256) {
        d->bytes_pos++;
        return p[0] % n;
    }
    /* Fewer than four bytes left: take them all rather than drop them, so
     * every input byte can matter to the fuzzer. */
    size_t take = left < 4 ? left : 4;
    uint32_t v = 0;
    for (size_t i = 0; i < take; i++) {
        v |= (uint32_t)p[i] << (8 * i);
    }
    d->bytes_pos += take;
    return v % n;
}

/* The probe decision from a byte: 1 for bytes 240..255, else 0. A probe
 * at every other point (byte % 2) would cost the fuzzer half its speed;
 * one in sixteen is the random source's default rate, and the fuzzer can
 * still ask for one at any point. */
static uint32_t from_bytes_sparse(pl__dec *d)
{
    if (d->bytes_pos >= d->bytes_len) {
        return 0;
    }
    return d->bytes[d->bytes_pos++] >= 240 ? 1 : 0;
}

static uint32_t from_list(pl__dec *d, pl_decision_kind kind, uint32_t n)
{
    size_t i = d->list_pos;
    if (i >= d->list_len) {
        d->past_end++;
        return d->list_then_prng ? pl__dec_prng_value(d, kind, n) : 0;
    }
    d->list_pos++;
    const pl__dec_record *r = &d->list[i];
    bool same = r->kind == (uint32_t)kind && r->n == n && r->value < n;
    if (!same && !d->divergence.diverged) {
        d->divergence = (pl__dec_divergence){
            .diverged = true,
            .index = i,
            .expected_kind = r->kind,
            .expected_n = r->n,
            .expected_value = r->value,
            .asked_kind = (uint32_t)kind,
            .asked_n = n,
        };
    }
    return r->value < n ? r->value : n - 1;
}

/* The next record of `kind` (each kind's cursor only moves forward, so a
 * whole run scans the list once per kind). */
static uint32_t from_list_by_kind(pl__dec *d, pl_decision_kind kind, uint32_t n)
{
    size_t *pos = &d->kind_pos[kind];
    while (*pos < d->list_len && d->list[*pos].kind != (uint32_t)kind) {
        (*pos)++;
    }
    if (*pos >= d->list_len) {
        d->past_end++;
        return 0;
    }
    uint32_t v = d->list[(*pos)++].value;
    return v < n ? v : n - 1;
}

/* Appends rec, growing the array, or marks the record truncated. */
static void record(pl__dec *d, pl__dec_record rec)
{
    if (d->records_len < d->records_room) {
        d->records[d->records_len++] = rec;
        return;
    }
    if (d->records_len >= d->record_max ||
        pl__grow_append((void **)&d->records, &d->records_cap, d->records_len + 1,
                        sizeof *d->records, 1024, d->record_max) != 0) {
        d->truncated = true;
        return;
    }
    update_room(d);
    d->records[d->records_len++] = rec;
}

static uint32_t from_source(pl__dec *d, pl_decision_kind kind, uint32_t n)
{
    switch (d->source) {
    case PL__DEC_SOURCE_BYTES:
        return kind == PL_DECIDE_PROBE ? from_bytes_sparse(d) : from_bytes(d, n);
    case PL__DEC_SOURCE_LIST:
        return from_list(d, kind, n);
    case PL__DEC_SOURCE_LIST_BY_KIND:
        return from_list_by_kind(d, kind, n);
    case PL__DEC_SOURCE_PRNG:
        break;
    }
    return pl__dec_prng_value(d, kind, n);
}

/* Kept out of line: replays, fuzzing and the record's growth are rare
 * next to the decisions of seeded runs. */
uint32_t pl__dec_draw_slow(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    uint32_t v = pl__dec_settle(d, kind, n, key, from_source(d, kind, n));
    record(d, (pl__dec_record){(uint32_t)kind, n, v});
    return v;
}

uint32_t pl__dec_choose(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    PL__SIM_ASSERT((uint32_t)kind < PL_DECIDE__COUNT);
    return pl__dec_consulted(d, kind, n) ? pl__dec_draw(d, kind, n, key) : 0;
}

void pl__dec_check(const pl__dec *d)
{
    uint64_t sum = 0;
    for (int k = 0; k < PL_DECIDE__COUNT; k++) {
        PL__SIM_ASSERT(d->nonzero[k] <= d->count[k]);
        sum += d->count[k];
    }
    PL__SIM_ASSERT(sum == d->consulted);
    PL__SIM_ASSERT(d->records_len <= d->records_cap || d->records_cap == 0);
    PL__SIM_ASSERT(d->records_len <= d->record_max);
    PL__SIM_ASSERT(d->records_room ==
                   (d->records_cap < d->record_max ? d->records_cap : d->record_max));
    PL__SIM_ASSERT(d->strategy != NULL || d->strategy_kinds == 0);
    PL__SIM_ASSERT(d->slow_kinds == slow_kinds_of(d));
    PL__SIM_ASSERT(d->records_len == d->consulted || d->truncated);
    /* Each record's value < n was asserted as it was made. */
}
