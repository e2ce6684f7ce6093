/* sim/src/knobs.c: the table of decision kinds and every function that
 * reads it (knobs.h). A leaf: it calls only the PRNG (swarm). */
#include "knobs.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pollen/error.h"
#include "pollen/sim_node.h"
#include "prng.h"
#include "sim_assert.h"

/* How swarm draws a kind: whether it is on, and from which menu its
 * probability comes (pl__dec_knobs_swarm). */
typedef enum swarm_class {
    SWARM_FAULT = 0, /* on 1/2, fault menu */
    SWARM_ORDER = 1, /* on 7/8, ordering menu: the kinds a schedule is made of */
    SWARM_RARE = 2,  /* on 1/4, fault menu: kinds whose departures mask or cost much */
    SWARM_KEEP = 3,  /* the default, no draw: values, not departures from production */
    SWARM_OFTEN = 4, /* on 7/8, fault menu: an oracle's own decision, not a fault */
} swarm_class;

typedef struct knob_row {
    const char *name;   /* NULL: the number is not assigned */
    char letter;        /* replay files' code */
    pl__dec_knob def;   /* the default */
    swarm_class swarm;
    size_t offset;      /* of the kind's knob in pl_sim_knobs */
} knob_row;

/* Names and letters are part of the knobs text and the replay format:
 * append only. The field of pl_sim_knobs is the kind's name. */
#define ROW(kind, field, letter, on, prob, swarm)                                                  \
    [kind] = {#field, letter, {on, prob}, swarm, offsetof(pl_sim_knobs, field)},

/* The table, once: rows[] below and the size check after it expand it. */
#define KNOB_ROWS(X)                                                                               \
    X(PL_DECIDE_SCHEDULE, schedule, 's', true, 32768, SWARM_ORDER)                                 \
    X(PL_DECIDE_IO_ORDER, io_order, 'i', true, 32768, SWARM_ORDER)                                 \
    X(PL_DECIDE_TIMER_ORDER, timer_order, 't', true, 32768, SWARM_ORDER)                           \
    X(PL_DECIDE_TIMER_LATE, timer_late, 'l', true, 4096, SWARM_FAULT)                              \
    X(PL_DECIDE_SPURIOUS_WAKE, spurious_wake, 'w', true, 1024, SWARM_FAULT)                        \
    /* Off: extra polls hide lost wakeups. */                                                      \
    X(PL_DECIDE_SPURIOUS_POLL, spurious_poll, 'p', false, 1024, SWARM_RARE)                        \
    X(PL_DECIDE_WAKE_DELAY, wake_delay, 'd', true, 8192, SWARM_FAULT)                              \
    /* On: consulted only for tasks marked abortable, whose owners declared                        \
     * cancellation at any await part of their contract. */                                        \
    X(PL_DECIDE_CANCEL, cancel, 'c', true, 1024, SWARM_RARE)                                       \
    X(PL_DECIDE_IO_FAULT, io_fault, 'f', true, 2048, SWARM_FAULT)                                  \
    X(PL_DECIDE_IO_LATENCY, io_latency, 'j', true, 4096, SWARM_FAULT)                              \
    X(PL_DECIDE_BUGGIFY_SITE, buggify_site, 'b', true, 16384, SWARM_FAULT)                         \
    X(PL_DECIDE_BUGGIFY_FIRE, buggify_fire, 'B', true, 8192, SWARM_FAULT)                          \
    /* The probe finds lost wakeups: off, swarm's seed can find none. */                           \
    X(PL_DECIDE_PROBE, probe, 'q', true, 4096, SWARM_OFTEN)                                        \
    /* The disk kinds are consulted only by scenarios that use files. */                           \
    X(PL_DECIDE_DISK_LATENCY, disk_latency, 'k', true, 8192, SWARM_FAULT)                          \
    X(PL_DECIDE_DISK_FAULT, disk_fault, 'e', true, 1024, SWARM_FAULT)                              \
    X(PL_DECIDE_DISK_CORRUPT, disk_corrupt, 'x', true, 1024, SWARM_FAULT)                          \
    X(PL_DECIDE_DISK_LOSE, disk_lose, 'u', true, 32768, SWARM_FAULT)                               \
    /* The link kinds only for traffic between two distinct hosts. */                              \
    X(PL_DECIDE_LINK_LATENCY, link_latency, 'g', true, 16384, SWARM_FAULT)                         \
    X(PL_DECIDE_LINK_LOSS, link_loss, 'L', true, 1024, SWARM_FAULT)                                \
    X(PL_DECIDE_LINK_DUP, link_dup, 'D', true, 512, SWARM_FAULT)                                   \
    X(PL_DECIDE_LINK_REORDER, link_reorder, 'r', true, 1024, SWARM_FAULT)                          \
    X(PL_DECIDE_LINK_RESET, link_reset, 'R', true, 128, SWARM_FAULT)                               \
    X(PL_DECIDE_PARTITION, partition, 'P', true, 256, SWARM_FAULT)                                 \
    X(PL_DECIDE_CLOG, clog, 'C', true, 256, SWARM_FAULT)                                           \
    X(PL_DECIDE_NODE_CRASH, node_crash, 'K', true, 256, SWARM_FAULT)                               \
    X(PL_DECIDE_CRASH_SILENCE, crash_silence, 'Z', true, 16384, SWARM_FAULT)                       \
    X(PL_DECIDE_THREAD_SWITCH, thread_switch, 'T', true, 8192, SWARM_FAULT)                        \
    X(PL_DECIDE_COND_SPURIOUS, cond_spurious, 'V', true, 1024, SWARM_FAULT)                        \
    /* Consulted only for nodes declared pausable. */                                              \
    X(PL_DECIDE_NODE_PAUSE, node_pause, 'N', true, 256, SWARM_FAULT)                               \
    /* Consulted only for nodes declared isolatable. */                                            \
    X(PL_DECIDE_NODE_ISOLATE, node_isolate, 'I', true, 256, SWARM_FAULT)                           \
    /* Always drawn uniform: a user's workload, not a fault. */                                    \
    X(PL_DECIDE_RANDOM, random, 'a', true, 65536, SWARM_KEEP)                                     \
    /* Consulted only for nodes declared skewed (node_clock.c). */                                 \
    X(PL_DECIDE_CLOCK_OFFSET, clock_offset, 'O', true, 16384, SWARM_FAULT)                         \
    X(PL_DECIDE_CLOCK_DRIFT, clock_drift, 'F', true, 16384, SWARM_FAULT)                           \
    X(PL_DECIDE_CLOCK_JUMP, clock_jump, 'J', true, 256, SWARM_FAULT)

static const knob_row rows[PL_DECIDE__COUNT] = {KNOB_ROWS(ROW)};

/* The bounds (knobs.h), append only as the kinds: their names are part of
 * the knobs text. Each default is the most its kind drew before there was
 * a bound, so that a run without one draws as it did. */
typedef struct bound_row {
    const char *name;
    uint32_t def; /* and largest value */
} bound_row;

static const bound_row bounds[PL__DEC_BOUNDS] = {
    [PL__DEC_BOUND_CLOCK_OFFSET_MS] = {"clock_offset_max_ms", (uint32_t)(PL_SIM_CLOCK_OFFSET_MAX_NS / PL_MS)},
    [PL__DEC_BOUND_CLOCK_DRIFT_PPM] = {"clock_drift_max_ppm", PL_SIM_CLOCK_DRIFT_MAX_PPM},
    [PL__DEC_BOUND_CLOCK_JUMP_MS] = {"clock_jump_max_ms", (uint32_t)(PL_SIM_CLOCK_JUMP_MAX_NS / PL_MS)},
};

/* Every kind at its longest, "name=65536," each, fits the text buffer (a
 * new kind that does not fit fails here, not in a run). */
#define KNOB_TEXT_LEN(kind, field, letter, on, prob, swarm) +(sizeof(#field "=65536,") - 1)
#define BOUNDS_TEXT_LEN                                                                            \
    (sizeof("clock_offset_max_ms=128,clock_drift_max_ppm=12800,clock_jump_max_ms=128,") - 1)
_Static_assert(0 KNOB_ROWS(KNOB_TEXT_LEN) + BOUNDS_TEXT_LEN < PL__DEC_KNOBS_TEXT_MAX,
               "every kind's name=65536 and every bound fit PL__DEC_KNOBS_TEXT_MAX");

/* pl_sim_knobs has one knob per assigned kind and nothing else (that each
 * field is its own row's is test_decide's knobs.typed_fields_are_their_kinds). */
_Static_assert(sizeof(pl_sim_knobs) == PL_DECIDE__COUNT * sizeof(pl_sim_knob),
               "pl_sim_knobs holds one knob per kind");
_Static_assert(PL_SIM_KNOB_PROB_ONE == PL__PROB_ONE, "one scale of probabilities");

/* Kind names and letters ----------------------------------------------- */

const char *pl__dec_kind_name(uint32_t kind)
{
    return kind < PL_DECIDE__COUNT ? rows[kind].name : NULL;
}

int pl__dec_kind_from_name(const char *text, size_t len)
{
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        if (rows[i].name != NULL && strlen(rows[i].name) == len &&
            memcmp(rows[i].name, text, len) == 0) {
            return i;
        }
    }
    return -1;
}

char pl__dec_kind_letter(uint32_t kind)
{
    return kind < PL_DECIDE__COUNT ? rows[kind].letter : 0;
}

int pl__dec_kind_from_letter(char c)
{
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        if (rows[i].letter != 0 && rows[i].letter == c) {
            return i;
        }
    }
    return -1;
}

const char *pl__dec_bound_name(uint32_t b) { return b < PL__DEC_BOUNDS ? bounds[b].name : NULL; }

uint32_t pl__dec_bound_default(uint32_t b) { return b < PL__DEC_BOUNDS ? bounds[b].def : 0; }

/* The bound named text[0, len), or -1. */
static int bound_from_name(const char *text, size_t len)
{
    for (int b = 0; b < PL__DEC_BOUNDS; b++) {
        if (strlen(bounds[b].name) == len && memcmp(bounds[b].name, text, len) == 0) {
            return b;
        }
    }
    return -1;
}

/* Defaults and swarm ---------------------------------------------------- */

void pl__dec_knobs_default(pl__dec_knobs *k)
{
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        k->kind[i] = rows[i].def; /* an unassigned number: {false, 0} */
    }
    for (int b = 0; b < PL__DEC_BOUNDS; b++) {
        k->bound[b] = bounds[b].def;
    }
}

void pl_sim_knobs_default(pl_sim_knobs *k)
{
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        if (rows[i].name != NULL) {
            memcpy((char *)k + rows[i].offset, &rows[i].def, sizeof(pl_sim_knob));
        }
    }
}

void pl__dec_knobs_swarm(pl__dec_knobs *k, uint64_t seed)
{
    static const uint32_t order_menu[8] = {2048, 4096, 8192, 16384,
                                           32768, 40960, 49152, 65536};
    static const uint32_t fault_menu[8] = {128, 256, 512, 1024, 2048, 4096, 8192, 16384};
    static const uint32_t on_prob[] = {
        [SWARM_FAULT] = PL__PROB_ONE / 2,
        [SWARM_ORDER] = PL__PROB_ONE / 8 * 7,
        [SWARM_RARE] = PL__PROB_ONE / 4,
        [SWARM_OFTEN] = PL__PROB_ONE / 8 * 7,
    };
    pl__prng p;
    pl__prng_seed(&p, pl__prng_subseed(seed, PL__SEED_SWARM));
    for (int b = 0; b < PL__DEC_BOUNDS; b++) {
        k->bound[b] = bounds[b].def; /* swarm draws which kinds, not how far */
    }
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        const knob_row *r = &rows[i];
        if (r->name == NULL) {
            k->kind[i] = (pl__dec_knob){false, 0}; /* not assigned: draws nothing */
            continue;
        }
        if (r->swarm == SWARM_KEEP) {
            k->kind[i] = r->def;
            continue;
        }
        k->kind[i].enabled = pl__prng_chance(&p, on_prob[r->swarm]);
        const uint32_t *menu = r->swarm == SWARM_ORDER ? order_menu : fault_menu;
        k->kind[i].prob = menu[pl__prng_below(&p, 8)];
    }
}

/* Text ------------------------------------------------------------------ */

/* Appends s to tmp at *used (tmp holds PL__DEC_KNOBS_TEXT_MAX). */
static void knobs_put(char *tmp, size_t *used, const char *s, size_t n)
{
    PL__SIM_ASSERT(n < PL__DEC_KNOBS_TEXT_MAX - *used);
    memcpy(tmp + *used, s, n);
    *used += n;
}

/* Appends "=<v>". */
static void number_put(char *tmp, size_t *used, uint32_t v)
{
    char digits[12];
    size_t at = sizeof digits;
    do {
        digits[--at] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    digits[--at] = '=';
    knobs_put(tmp, used, digits + at, sizeof digits - at);
}

/* Appends "=<prob>" or "=off". */
static void knob_value_put(char *tmp, size_t *used, pl__dec_knob knob)
{
    if (!knob.enabled) {
        knobs_put(tmp, used, "=off", 4);
        return;
    }
    number_put(tmp, used, knob.prob);
}

/* Every run records its knobs: by hand, where two dozen snprintf calls
 * were an eighth of a campaign's instructions. The text is what
 * "%s%s=%u" / "%s%s=off" printed. */
int pl__dec_knobs_format(const pl__dec_knobs *k, char *buf, size_t len)
{
    char tmp[PL__DEC_KNOBS_TEXT_MAX];
    size_t used = 0;
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        if (rows[i].name == NULL) {
            continue;
        }
        if (used > 0) {
            knobs_put(tmp, &used, ",", 1);
        }
        knobs_put(tmp, &used, rows[i].name, strlen(rows[i].name));
        knob_value_put(tmp, &used, k->kind[i]);
    }
    for (int b = 0; b < PL__DEC_BOUNDS; b++) {
        if (k->bound[b] != bounds[b].def) {
            knobs_put(tmp, &used, ",", 1);
            knobs_put(tmp, &used, bounds[b].name, strlen(bounds[b].name));
            number_put(tmp, &used, k->bound[b]);
        }
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
    return memcmp(a->bound, b->bound, sizeof a->bound) == 0;
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

/* Parses a bound's value, a decimal 0..max. */
static bool parse_bound_value(const char *s, size_t len, uint32_t max, uint32_t *out)
{
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || (v = v * 10 + (uint64_t)(s[i] - '0')) > max) {
            return false;
        }
    }
    if (len == 0) {
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* Parses a bound's "name=value" item (kind-like names are the caller's). */
static int parse_bound_item(pl__dec_knobs *out, bool *seen, int b, const char *text, size_t off,
                            size_t name_len, size_t len, char *err, size_t errlen)
{
    const char *value = text + off + name_len + 1;
    size_t value_len = len - name_len - 1;
    if (seen[PL_DECIDE__COUNT + b]) {
        return knob_error(err, errlen, "duplicate bound", text + off, name_len, off);
    }
    seen[PL_DECIDE__COUNT + b] = true;
    if (!parse_bound_value(value, value_len, bounds[b].def, &out->bound[b])) {
        char what[80];
        snprintf(what, sizeof(what), "value for '%s' must be 0..%" PRIu32 ", got", bounds[b].name,
                 bounds[b].def);
        return knob_error(err, errlen, what, value, value_len, off + name_len + 1);
    }
    return 0;
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
    int b = kind < 0 ? bound_from_name(item, name_len) : -1;
    if (b >= 0) {
        return parse_bound_item(out, seen, b, text, off, name_len, len, err, errlen);
    }
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
                 rows[kind].name);
        return knob_error(err, errlen, what, value, value_len, off + name_len + 1);
    }
    return 0;
}

int pl__dec_knobs_parse(pl__dec_knobs *k, const char *text, size_t len, char *err,
                        size_t errlen)
{
    /* Work on a copy so a bad item leaves *k as it was. */
    pl__dec_knobs tmp = *k;
    bool seen[PL_DECIDE__COUNT + PL__DEC_BOUNDS] = {false};
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

/* Typed knobs ----------------------------------------------------------- */

int pl__dec_knobs_from_public(const pl_sim_knobs *in, pl__dec_knobs *k, char *err, size_t err_len)
{
    pl__dec_knobs tmp = *k;
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        if (rows[i].name == NULL) {
            continue;
        }
        pl_sim_knob knob;
        memcpy(&knob, (const char *)in + rows[i].offset, sizeof knob);
        if (knob.prob > PL__PROB_ONE) {
            if (err != NULL && err_len > 0) {
                snprintf(err, err_len, "knob_values.%s.prob is %" PRIu32 ", past 65536",
                         rows[i].name, knob.prob);
            }
            return PL_EINVAL;
        }
        tmp.kind[i] = knob;
    }
    *k = tmp;
    return 0;
}
