/* sim/src/decide.c: the decision stream (sources, recorder, knobs). */
#include "decide.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "pollen/error.h"
#include "sim_assert.h"

/* Names and letters, indexed by pl_decision_kind. The letters are part of
 * the replay format: append only. */
static const char *const kind_names[PL_DECIDE__COUNT] = {
    "schedule",     "io_order",      "timer_order", "timer_late",
    "spurious_wake", "spurious_poll", "wake_delay",  "cancel",
    "io_fault",     "io_latency",    "buggify_site", "buggify_fire",
    "probe",        "disk_latency",  "disk_fault",  "disk_corrupt",
    "disk_lose",
    [PL_DECIDE_LINK_LATENCY] = "link_latency",
    [PL_DECIDE_LINK_LOSS] = "link_loss",
    [PL_DECIDE_LINK_DUP] = "link_dup",
    [PL_DECIDE_LINK_REORDER] = "link_reorder",
    [PL_DECIDE_LINK_RESET] = "link_reset",
    [PL_DECIDE_PARTITION] = "partition",
    [PL_DECIDE_CLOG] = "clog",
    [PL_DECIDE_NODE_CRASH] = "node_crash",
    [PL_DECIDE_CRASH_SILENCE] = "crash_silence",
    [PL_DECIDE_THREAD_SWITCH] = "thread_switch",
    [PL_DECIDE_COND_SPURIOUS] = "cond_spurious",
};

static const char kind_letters[PL_DECIDE__COUNT] = {
    's', 'i', 't', 'l', 'w', 'p', 'd', 'c', 'f', 'j', 'b', 'B', 'q', 'k', 'e', 'x', 'u',
    [PL_DECIDE_LINK_LATENCY] = 'g',
    [PL_DECIDE_LINK_LOSS] = 'L',
    [PL_DECIDE_LINK_DUP] = 'D',
    [PL_DECIDE_LINK_REORDER] = 'r',
    [PL_DECIDE_LINK_RESET] = 'R',
    [PL_DECIDE_PARTITION] = 'P',
    [PL_DECIDE_CLOG] = 'C',
    [PL_DECIDE_NODE_CRASH] = 'K',
    [PL_DECIDE_CRASH_SILENCE] = 'Z',
    [PL_DECIDE_THREAD_SWITCH] = 'T',
    [PL_DECIDE_COND_SPURIOUS] = 'V',
};

static const pl__dec_knob default_knobs[PL_DECIDE__COUNT] = {
    [PL_DECIDE_SCHEDULE] = {true, 32768},
    [PL_DECIDE_IO_ORDER] = {true, 32768},
    [PL_DECIDE_TIMER_ORDER] = {true, 32768},
    [PL_DECIDE_TIMER_LATE] = {true, 4096},
    [PL_DECIDE_SPURIOUS_WAKE] = {true, 1024},
    [PL_DECIDE_SPURIOUS_POLL] = {false, 1024},
    [PL_DECIDE_WAKE_DELAY] = {true, 8192},
    [PL_DECIDE_CANCEL] = {true, 1024},
    [PL_DECIDE_IO_FAULT] = {true, 2048},
    [PL_DECIDE_IO_LATENCY] = {true, 4096},
    [PL_DECIDE_BUGGIFY_SITE] = {true, 16384},
    [PL_DECIDE_BUGGIFY_FIRE] = {true, 8192},
    [PL_DECIDE_PROBE] = {true, 4096},
    [PL_DECIDE_DISK_LATENCY] = {true, 8192},
    [PL_DECIDE_DISK_FAULT] = {true, 1024},
    [PL_DECIDE_DISK_CORRUPT] = {true, 1024},
    [PL_DECIDE_DISK_LOSE] = {true, 32768},
    [PL_DECIDE_LINK_LATENCY] = {true, 16384},
    [PL_DECIDE_LINK_LOSS] = {true, 1024},
    [PL_DECIDE_LINK_DUP] = {true, 512},
    [PL_DECIDE_LINK_REORDER] = {true, 1024},
    [PL_DECIDE_LINK_RESET] = {true, 128},
    [PL_DECIDE_PARTITION] = {true, 256},
    [PL_DECIDE_CLOG] = {true, 256},
    [PL_DECIDE_NODE_CRASH] = {true, 256},
    [PL_DECIDE_CRASH_SILENCE] = {true, 16384},
    [PL_DECIDE_THREAD_SWITCH] = {true, 8192},
    [PL_DECIDE_COND_SPURIOUS] = {true, 1024},
};

/* Kind names and letters ----------------------------------------------- */

const char *pl__dec_kind_name(uint32_t kind)
{
    return kind < PL_DECIDE__COUNT ? kind_names[kind] : NULL;
}

int pl__dec_kind_from_name(const char *text, size_t len)
{
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        if (kind_names[i] != NULL && strlen(kind_names[i]) == len &&
            memcmp(kind_names[i], text, len) == 0) {
            return i;
        }
    }
    return -1;
}

char pl__dec_kind_letter(uint32_t kind)
{
    return kind < PL_DECIDE__COUNT ? kind_letters[kind] : 0;
}

int pl__dec_kind_from_letter(char c)
{
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        if (kind_letters[i] != 0 && kind_letters[i] == c) {
            return i;
        }
    }
    return -1;
}

/* Knobs ---------------------------------------------------------------- */

void pl__dec_knobs_default(pl__dec_knobs *k)
{
    memcpy(k->kind, default_knobs, sizeof(k->kind));
}

static bool is_ordering_kind(int kind)
{
    return kind == PL_DECIDE_SCHEDULE || kind == PL_DECIDE_IO_ORDER ||
           kind == PL_DECIDE_TIMER_ORDER;
}

void pl__dec_knobs_swarm(pl__dec_knobs *k, uint64_t seed)
{
    static const uint32_t order_menu[8] = {2048, 4096, 8192, 16384,
                                           32768, 40960, 49152, 65536};
    static const uint32_t fault_menu[8] = {128, 256, 512, 1024, 2048, 4096, 8192, 16384};
    pl__prng p;
    pl__prng_seed(&p, pl__prng_subseed(seed, PL__SEED_SWARM));
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        if (kind_names[i] == NULL) {
            k->kind[i] = (pl__dec_knob){false, 0}; /* not assigned: draws nothing */
            continue;
        }
        uint32_t on_prob = PL__PROB_ONE / 2;
        if (is_ordering_kind(i)) {
            on_prob = PL__PROB_ONE / 8 * 7;
        } else if (i == PL_DECIDE_SPURIOUS_POLL || i == PL_DECIDE_CANCEL) {
            on_prob = PL__PROB_ONE / 4;
        }
        k->kind[i].enabled = pl__prng_chance(&p, on_prob);
        const uint32_t *menu = is_ordering_kind(i) ? order_menu : fault_menu;
        k->kind[i].prob = menu[pl__prng_below(&p, 8)];
    }
}

/* Appends s to tmp at *used (tmp holds PL__DEC_KNOBS_TEXT_MAX). */
static void knobs_put(char *tmp, size_t *used, const char *s, size_t n)
{
    PL__SIM_ASSERT(n < PL__DEC_KNOBS_TEXT_MAX - *used);
    memcpy(tmp + *used, s, n);
    *used += n;
}

/* Every run records its knobs: by hand, where two dozen snprintf calls
 * were an eighth of a campaign's instructions. The text is what
 * "%s%s=%u" / "%s%s=off" printed. */
int pl__dec_knobs_format(const pl__dec_knobs *k, char *buf, size_t len)
{
    char tmp[PL__DEC_KNOBS_TEXT_MAX];
    size_t used = 0;
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        if (kind_names[i] == NULL) {
            continue;
        }
        if (used > 0) {
            knobs_put(tmp, &used, ",", 1);
        }
        knobs_put(tmp, &used, kind_names[i], strlen(kind_names[i]));
        if (!k->kind[i].enabled) {
            knobs_put(tmp, &used, "=off", 4);
            continue;
        }
        char digits[12];
        size_t at = sizeof digits;
        uint32_t v = k->kind[i].prob;
        do {
            digits[--at] = (char)('0' + v % 10);
            v /= 10;
        } while (v != 0);
        digits[--at] = '=';
        knobs_put(tmp, &used, digits + at, sizeof digits - at);
    }
    if (len > 0) {
        size_t n = used < len - 1 ? used : len - 1;
        memcpy(buf, tmp, n);
        buf[n] = '\0';
    }
    return (int)used;
}

bool pl__dec_knobs_equal(const pl__dec_knobs *a, const pl__dec_knobs *b)
{
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        if (a->kind[i].enabled != b->kind[i].enabled) {
            return false;
        }
        if (a->kind[i].enabled && a->kind[i].prob != b->kind[i].prob) {
            return false;
        }
    }
    return true;
}

/* Formats a parse error; err may be NULL. Returns PL_EFORMAT. */
static int knob_error(char *err, size_t errlen, const char *what, const char *item,
                      size_t item_len, size_t offset)
{
    if (err != NULL && errlen > 0) {
        int shown = item_len > 40 ? 40 : (int)item_len;
        snprintf(err, errlen, "%s '%.*s' at offset %zu", what, shown, item, offset);
    }
    return PL_EFORMAT;
}

/* Parses a knob value: "off", "on" or a decimal 0..65536. */
static bool parse_knob_value(const char *s, size_t len, pl__dec_knob *knob)
{
    if (len == 3 && memcmp(s, "off", 3) == 0) {
        knob->enabled = false;
        return true;
    }
    if (len == 2 && memcmp(s, "on", 2) == 0) {
        knob->enabled = true;
        return true;
    }
    if (len == 0 || len > 5) {
        return false;
    }
    uint32_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (uint32_t)(s[i] - '0');
    }
    if (v > PL__PROB_ONE) {
        return false;
    }
    knob->enabled = true;
    knob->prob = v;
    return true;
}

/* Parses one "name=value" item at text[off, off + len) into *out. */
static int parse_knob_item(pl__dec_knobs *out, bool *seen, const char *text, size_t off,
                           size_t len, char *err, size_t errlen)
{
    const char *item = text + off;
    const char *eq = memchr(item, '=', len);
    if (eq == NULL) {
        return knob_error(err, errlen, "expected 'name=value', got", item, len, off);
    }
    size_t name_len = (size_t)(eq - item);
    int kind = pl__dec_kind_from_name(item, name_len);
    if (kind < 0) {
        return knob_error(err, errlen, "unknown kind", item, name_len, off);
    }
    if (seen[kind]) {
        return knob_error(err, errlen, "duplicate kind", item, name_len, off);
    }
    seen[kind] = true;
    const char *value = eq + 1;
    size_t value_len = len - name_len - 1;
    if (!parse_knob_value(value, value_len, &out->kind[kind])) {
        char what[80];
        snprintf(what, sizeof(what), "value for '%s' must be off, on or 0..65536, got",
                 kind_names[kind]);
        return knob_error(err, errlen, what, value, value_len, off + name_len + 1);
    }
    return 0;
}

int pl__dec_knobs_parse(pl__dec_knobs *k, const char *text, size_t len, char *err,
                        size_t errlen)
{
    /* Work on a copy so a bad item leaves *k as it was. */
    pl__dec_knobs tmp = *k;
    bool seen[PL_DECIDE__COUNT] = {false};
    size_t off = 0;
    while (off < len) {
        const char *comma = memchr(text + off, ',', len - off);
        size_t item_len = comma != NULL ? (size_t)(comma - (text + off)) : len - off;
        int rc = parse_knob_item(&tmp, seen, text, off, item_len, err, errlen);
        if (rc < 0) {
            return rc;
        }
        off += item_len;
        if (comma != NULL) {
            off++;
            if (off == len) {
                return knob_error(err, errlen, "trailing comma after", text, len, 0);
            }
        }
    }
    *k = tmp;
    return 0;
}

/* The stream ------------------------------------------------------------ */

/* Each kind is a bit of strategy_kinds. */
_Static_assert(PL_DECIDE__COUNT <= 32, "strategy_kinds holds one bit per kind");
#define ALL_KINDS ((uint32_t)((UINT64_C(1) << PL_DECIDE__COUNT) - 1))

/* The inline append's bound: below it the array has room and the cap
 * allows another record, so one compare does for both. */
static void update_room(pl__dec *d)
{
    d->records_room = d->records_cap < d->record_max ? d->records_cap : d->record_max;
}

/* The inline path serves the PRNG source only, and the kinds no strategy
 * wants: one bit per kind says which way a decision goes. */
static uint32_t slow_kinds_of(const pl__dec *d)
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
    d->past_end = 0;
    memset(&d->divergence, 0, sizeof(d->divergence));
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

void pl__dec_set_strategy_kinds(pl__dec *d, pl__dec_strategy_fn fn, void *ud, uint32_t kinds)
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
        return 0;
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

/* The slow path of recording: grow the array or give up. Kept out of line
 * so the common append stays a few instructions. */
void pl__dec_record_slow_(pl__dec *d, pl__dec_record rec)
{
    if (d->records_len >= d->record_max) {
        d->truncated = true;
        return;
    }
    if (pl__grow_append((void **)&d->records, &d->records_cap, d->records_len + 1,
                        sizeof *d->records, 1024, d->record_max) != 0) {
        d->truncated = true;
        return;
    }
    update_room(d);
    d->records[d->records_len++] = rec;
}

uint32_t pl__dec_choose(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    PL__SIM_ASSERT((uint32_t)kind < PL_DECIDE__COUNT);
    return pl__dec_consulted(d, kind, n) ? pl__dec_choose_consulted(d, kind, n, key) : 0;
}

uint32_t pl__dec_choose_consulted(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    PL__SIM_ASSERT(n > 1 && (uint32_t)kind < PL_DECIDE__COUNT);
    if (pl__dec_slow_kind_(d, kind)) {
        return pl__dec_choose_other_(d, kind, n, key);
    }
    return pl__dec_settle_(d, kind, n, key, pl__dec_from_prng_(d, kind, n));
}

uint32_t pl__dec_choose_other_(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    uint32_t v;
    if (d->source == PL__DEC_SOURCE_BYTES) {
        v = kind == PL_DECIDE_PROBE ? from_bytes_sparse(d) : from_bytes(d, n);
    } else if (d->source == PL__DEC_SOURCE_LIST) {
        v = from_list(d, kind, n);
    } else if (d->source == PL__DEC_SOURCE_LIST_BY_KIND) {
        v = from_list_by_kind(d, kind, n);
    } else {
        v = pl__dec_from_prng_(d, kind, n);
    }
    return pl__dec_settle_(d, kind, n, key, v);
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
