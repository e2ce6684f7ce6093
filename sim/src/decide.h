/* sim/src/decide.h: the decision stream.
 *
 * Every nondeterministic choice the simulator makes goes through one
 * pl__dec: pl__dec_choose(d, kind, n, key) returns a value in [0, n),
 * where 0 is what production would do (FIFO order, no fault, no delay).
 * A run is therefore a function of its decision values, which can come
 * from a seeded PRNG, a byte buffer (libFuzzer input) or a recorded list
 * (replay, shrinking), optionally overridden by a strategy hook (PCT,
 * bounded enumeration).
 *
 * Consulted decisions. A call with n <= 1, or of a kind whose knob is
 * disabled, returns 0 and touches nothing: no source byte, no PRNG
 * output, no record, no counter. Every other call is "consulted": it
 * takes a value from the source, passes it through the strategy hook,
 * is appended to the record (kind, n, value) and is counted. The i-th
 * consulted decision of a run is decision index i (0-based); a list
 * source replays by that index.
 *
 * Knobs. Each kind has an enabled flag and a probability `prob` in parts
 * per 65536 of leaving choice 0 (0 = never, 65536 = always): knobs.h
 * owns the kinds, their names, letters, defaults (listed in pollen/sim.h)
 * and swarm ranges. The link kinds are consulted only for traffic between
 * two distinct hosts (net/link.c), so a run whose sockets stay on one
 * host never asks one and keeps its decisions and trace hash; cancel only
 * for tasks marked abortable (pl_task_set_abortable), the disk kinds only
 * by scenarios that use files.
 *
 * Sources (frozen for replay-format version 1):
 *   PRNG   the generator is seeded with pl__prng_subseed(seed,
 *          PL__SEED_DECIDE). Per consulted decision: one
 *          pl__prng_chance(prob) draw; if false the value is 0;
 *          otherwise, if n == 2 the value is 1 with no further draw, else
 *          1 + pl__prng_below(n - 1): uniform in [1, n).
 *   BYTES  probabilities are ignored, bytes decide directly (enabled
 *          flags still apply). n <= 256: one byte, value = byte % n;
 *          except the probe decision: one byte, 1 when it is 240 or more.
 *          n > 256: four bytes little-endian, value = u32 % n; when fewer
 *          than four remain they are all taken, missing high bytes are
 *          zero. An exhausted buffer yields 0 (still consulted).
 *   LIST   the i-th consulted decision returns the i-th recorded value.
 *          When the record's kind or n differs from the call's, or its
 *          value is >= n, the first such divergence is noted
 *          (pl__dec_divergence) and min(value, n - 1) is returned. Past
 *          the end of the list the value is 0 (counted in past_end), or,
 *          for a list given with pl__dec_use_prefix, the PRNG source's
 *          value from its seed (a random continuation of the prefix).
 *
 * Strategy hook: after the source, strategy(ud, kind, n, key, fallback)
 * may return any value in [0, n) to override the source's `fallback`.
 * It sees consulted decisions only (enabled kinds, n >= 2), and only of
 * the kinds it was installed for (pl__dec_set_strategy_kinds: a hook
 * that passes the other kinds through is not called for them). Returning
 * a value >= n is a contract violation (assertion).
 *
 * Recording: records are kept in a growable array up to `record_max`
 * entries (default PL__DEC_RECORD_MAX_DEFAULT; 0 disables recording).
 * Past it, or when growth fails, recording stops and `truncated` is set;
 * counters keep counting. A truncated record is only a prefix of the
 * run: it cannot replay the run, and replay files that say so are
 * refused (replay.h).
 *
 * Ownership: pl__dec is caller-allocated (embed it), initialized by
 * pl__dec_init and released by pl__dec_finish, which frees the record
 * array. Byte buffers and record lists given as sources are borrowed and
 * must outlive their use. Not thread-safe.
 */
#ifndef POLLEN_SIM_DECIDE_H
#define POLLEN_SIM_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "knobs.h"
#include "pollen/system.h"
#include "prng.h"
#include "sim_assert.h"

/* Default cap on recorded decisions: 64M (12 bytes each, 768 MiB at
 * most; the array grows with the run, so a short run pays for what it
 * records only). A run recorded in full replays exactly, so the cap is
 * far above any run a time limit allows in practice (a ticker running
 * for an hour of virtual time asks a few million). Replay files hold at
 * most this many decisions too (PL__REPLAY_DECISIONS_MAX). */
#define PL__DEC_RECORD_MAX_DEFAULT ((size_t)1 << 26)

/* One consulted decision. No padding: safe to hash or compare. */
typedef struct pl__dec_record {
    uint32_t kind;  /* pl_decision_kind */
    uint32_t n;     /* number of choices, >= 2 */
    uint32_t value; /* the answer, < n */
} pl__dec_record;

typedef enum pl__dec_source {
    PL__DEC_SOURCE_PRNG = 0,
    PL__DEC_SOURCE_BYTES = 1,
    PL__DEC_SOURCE_LIST = 2,
    PL__DEC_SOURCE_LIST_BY_KIND = 3, /* each kind reads its own sub-list */
} pl__dec_source;

/* A strategy may replace the source's answer `fallback` with any value
 * in [0, n). `key` is the caller's subject (task id, site id). */
typedef uint32_t (*pl__dec_strategy_fn)(void *ud, pl_decision_kind kind, uint32_t n,
                                        uint64_t key, uint32_t fallback);

/* The first point where a list source disagreed with the run. */
typedef struct pl__dec_divergence {
    bool diverged;           /* false: no divergence so far */
    uint64_t index;          /* decision index (position in the list) */
    uint32_t expected_kind;  /* from the list */
    uint32_t expected_n;
    uint32_t expected_value;
    uint32_t asked_kind;     /* from the run */
    uint32_t asked_n;
} pl__dec_divergence;

typedef struct pl__dec {
    /* Configuration: set through the functions below. */
    pl__dec_knobs knobs;
    pl__dec_source source;
    pl__dec_strategy_fn strategy; /* NULL: none */
    void *strategy_ud;
    uint64_t strategy_kinds; /* bit k set: the strategy sees kind k (0 with no strategy) */
    uint64_t slow_kinds; /* bit k set: kind k leaves pl__dec_draw's inline path */

    /* Source state. */
    pl__prng prng;
    const uint8_t *bytes; /* borrowed */
    size_t bytes_len;
    size_t bytes_pos;
    const pl__dec_record *list; /* borrowed */
    size_t list_len;
    size_t list_pos; /* next list entry: the list's decision index */
    bool list_then_prng; /* past the list's end, the PRNG answers (pl__dec_use_prefix) */
    size_t kind_pos[PL_DECIDE__COUNT]; /* by-kind source: next entry to scan, per kind */

    /* Results: read freely, do not write. */
    uint64_t consulted;                  /* consulted decisions so far */
    uint64_t count[PL_DECIDE__COUNT];    /* consulted, per kind */
    uint64_t nonzero[PL_DECIDE__COUNT];  /* consulted with value != 0 */
    uint64_t past_end;                   /* list source: asked past the end */
    pl__dec_divergence divergence;       /* list source */
    pl__dec_record *records;             /* owned; records_len valid */
    size_t records_len;
    size_t records_cap;
    size_t record_max;
    size_t records_room; /* min(records_cap, record_max): where pl__dec_draw's inline
                            append stops */
    bool truncated; /* some consulted decisions were not recorded */
} pl__dec;

/* The stream --------------------------------------------------------- */

/* Initializes *d with `knobs` (NULL: defaults), a PRNG source seeded
 * from seed 0, no strategy, empty record, record_max at its default.
 * Does not allocate. */
void pl__dec_init(pl__dec *d, const pl__dec_knobs *knobs);

/* Frees the record array. *d must be re-initialized before reuse. */
void pl__dec_finish(pl__dec *d);

/* Asserts the stream's invariants (PL__SIM_ASSERT, every build): the
 * per-kind counters add up to `consulted`, no kind has more non-zero
 * values than values, and every consulted decision was recorded unless
 * `truncated` says not (each value < n is asserted as it is drawn).
 * O(kinds): once per run, at its end. */
void pl__dec_check(const pl__dec *d);

/* Selects a source. Call before the first decision; each resets the
 * source position but not the record or the counters (use_list also
 * clears divergence and past_end, which describe the list). `seed` is the
 * run's root seed; the decision sub-seed is derived from it. `data` and
 * `records` are borrowed. */
void pl__dec_use_prng(pl__dec *d, uint64_t seed);
void pl__dec_use_bytes(pl__dec *d, const uint8_t *data, size_t len);
void pl__dec_use_list(pl__dec *d, const pl__dec_record *records, size_t len);
/* Like pl__dec_use_list, but a decision of kind K takes the next record of
 * kind K, skipping the others: the list read as one sub-list per kind.
 * A positional record of a run replays identically this way, and an edit
 * that removes or adds decisions of one kind leaves every other kind's
 * decisions where they were (the shrinker's candidates). No divergence
 * is noted. */
void pl__dec_use_list_by_kind(pl__dec *d, const pl__dec_record *records, size_t len);
/* Like pl__dec_use_list, but past the list's end each decision is the
 * PRNG source's, seeded from `seed` as pl__dec_use_prng seeds it: the
 * list is a prefix and the rest a random continuation of it (`pollen
 * why`). past_end still counts the decisions drawn after the list. */
void pl__dec_use_prefix(pl__dec *d, const pl__dec_record *records, size_t len, uint64_t seed);

/* Installs (or, with fn == NULL, removes) the strategy hook. */
void pl__dec_set_strategy(pl__dec *d, pl__dec_strategy_fn fn, void *ud);

/* Like pl__dec_set_strategy, for a hook that returns `fallback` unchanged
 * (and changes nothing) for every kind whose bit (UINT64_C(1) << kind) is clear in
 * `kinds`: those decisions skip the call. */
void pl__dec_set_strategy_kinds(pl__dec *d, pl__dec_strategy_fn fn, void *ud, uint64_t kinds);

/* Caps the record at `max` entries (0: record nothing). Lowering it
 * below the current length does not discard what is recorded. */
void pl__dec_set_record_max(pl__dec *d, size_t max);

/* Returns a value in [0, n) for a decision of `kind` about `key`; see the
 * top of this file. `kind` must be < PL_DECIDE__COUNT. */
uint32_t pl__dec_choose(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key);

/* True when pl__dec_choose(d, kind, n, ...) would be consulted: n >= 2
 * and the kind enabled. `kind` must be < PL_DECIDE__COUNT. Inline, so a
 * caller answers an unconsulted decision (0) without a call. */
static inline bool pl__dec_consulted(const pl__dec *d, pl_decision_kind kind, uint32_t n)
{
    return n > 1 && d->knobs.kind[kind].enabled;
}

/* A yes/no decision: pl__dec_choose(d, kind, 2, key) != 0. */
static inline bool pl__dec_flip(pl__dec *d, pl_decision_kind kind, uint64_t key)
{
    return pl__dec_choose(d, kind, 2, key) != 0;
}

/* The recorded decisions: *len entries, owned by *d, valid until the
 * next pl__dec_choose or pl__dec_finish. */
const pl__dec_record *pl__dec_records(const pl__dec *d, size_t *len);

/* Hands the record over (the caller frees it with free()): a finished
 * run keeps its decisions without a copy. *d then records nothing more
 * until pl__dec_finish. NULL when nothing was recorded. */
pl__dec_record *pl__dec_take_records(pl__dec *d, size_t *len);

/* True once the byte source has no bytes left (false for other
 * sources). */
bool pl__dec_bytes_exhausted(const pl__dec *d);

/* The draw ------------------------------------------------------------ */

/* A consulted decision's value: the source, the strategy, the counters
 * and the record, as the top of this file says. pl__dec_draw is the one
 * implementation, called by pl__dec_choose and by the simulator's hot
 * caller (pl__sim_choose_consulted). It is inline, and its paths differ
 * in what they call:
 *   none         the PRNG source, a kind no strategy wants, room in the
 *                record array: the common case;
 *   the hook     the PRNG source, a kind the strategy wants (every
 *                schedule decision of a seeded run: the fairness hook);
 *   out of line  another source, or a record that must grow or stop
 *                (pl__dec_draw_slow). */

/* pl__dec_draw is inlined into each caller whatever their number: an
 * outlined copy would be a call on the path it exists to keep free of
 * one. */
#if defined(__GNUC__)
#define PL__DEC_INLINE static inline __attribute__((always_inline))
#else
#define PL__DEC_INLINE static inline
#endif

/* pl__dec_draw's out-of-line path (any source, any record). Same
 * contract. */
uint32_t pl__dec_draw_slow(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key);

/* The PRNG source: choice 0 unless chance(prob), then uniform in [1, n). */
PL__DEC_INLINE uint32_t pl__dec_prng_value(pl__dec *d, pl_decision_kind kind, uint32_t n)
{
    if (!pl__prng_chance(&d->prng, d->knobs.kind[kind].prob)) {
        return 0;
    }
    if (n == 2) {
        return 1;
    }
    return 1 + pl__prng_below(&d->prng, n - 1);
}

/* Counts decision v. Returns it. */
PL__DEC_INLINE uint32_t pl__dec_count(pl__dec *d, pl_decision_kind kind, uint32_t n, uint32_t v)
{
    /* Every source and strategy keeps the [0, n) promise. */
    PL__SIM_ASSERT(v < n);
    d->consulted++;
    d->count[kind]++;
    d->nonzero[kind] += v != 0;
    return v;
}

/* After the source: the strategy's value when it wants this kind, then
 * the counters. Returns the decision. */
PL__DEC_INLINE uint32_t pl__dec_settle(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key,
                                       uint32_t v)
{
    if ((d->strategy_kinds >> (uint32_t)kind & 1u) != 0) {
        v = d->strategy(d->strategy_ud, kind, n, key, v);
    }
    return pl__dec_count(d, kind, n, v);
}

/* Appends decision v to a record array with room. Returns v. */
PL__DEC_INLINE uint32_t pl__dec_append(pl__dec *d, pl_decision_kind kind, uint32_t n, uint32_t v)
{
    d->records[d->records_len++] = (pl__dec_record){(uint32_t)kind, n, v};
    return v;
}

/* True when pl__dec_draw(d, kind, ...) takes its path that calls
 * nothing. */
PL__DEC_INLINE bool pl__dec_draws_inline(const pl__dec *d, pl_decision_kind kind)
{
    /* slow_kinds has kind's bit clear only for the PRNG source and a kind
     * no strategy wants; records_room is 0 when nothing may be appended,
     * so one compare tests both the array's room and the cap. */
    return (d->slow_kinds >> (uint32_t)kind & 1u) == 0 && d->records_len < d->records_room;
}

/* Returns a value in [0, n) for a consulted decision (pl__dec_consulted
 * said so: n >= 2, the kind enabled) of `kind` about `key`. */
PL__DEC_INLINE uint32_t pl__dec_draw(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    PL__SIM_ASSERT(n > 1 && (uint32_t)kind < PL_DECIDE__COUNT);
    /* The path that calls nothing is tested apart from the hook's: one
     * path with the hook's test measured slower (callgrind, the outbox). */
    if (pl__dec_draws_inline(d, kind)) {
        return pl__dec_append(d, kind, n, pl__dec_count(d, kind, n, pl__dec_prng_value(d, kind, n)));
    }
    if (d->source == PL__DEC_SOURCE_PRNG && d->records_len < d->records_room) {
        uint32_t v = pl__dec_prng_value(d, kind, n);
        return pl__dec_append(d, kind, n, pl__dec_settle(d, kind, n, key, v));
    }
    return pl__dec_draw_slow(d, kind, n, key);
}

#endif
