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
 * per 65536 of leaving choice 0 (0 = never, 65536 = always). Defaults
 * (pl__dec_knobs_default), which callers may tune:
 *
 *     schedule       on  32768     spurious_poll  off
 *     io_order       on  32768     wake_delay     on   8192
 *     timer_order    on  32768     cancel         on   1024
 *     timer_late     on   4096     io_fault       on   2048
 *     spurious_wake  on   1024     io_latency     on   4096
 *                                  buggify_site   on  16384
 *                                  buggify_fire   on   8192
 *                                  probe          on   4096
 *     disk_latency   on   8192     disk_fault     on   1024
 *     disk_corrupt   on   1024     disk_lose      on  32768
 *     link_latency   on  16384     link_loss      on   1024
 *     link_dup       on    512     link_reorder   on   1024
 *     link_reset     on    128     partition      on    256
 *     clog           on    256     node_crash     on    256
 *     crash_silence  on  16384
 *     thread_switch  on   8192     cond_spurious  on   1024
 *
 * The link kinds are consulted only for traffic between two distinct
 * hosts (net/link.c), so a run whose sockets stay on one host never asks
 * one and keeps its decisions and trace hash.
 *
 * spurious_poll is off because extra polls hide lost wakeups. cancel is
 * on: it is only ever consulted for tasks marked abortable
 * (pl_task_set_abortable), whose owners declared that cancellation at any
 * await is part of their contract, so exploring it by default finds the
 * drop bugs of cancelled futures (bug_abort_permit) and changes nothing
 * for a scenario without abortable tasks (no cancel decision is ever
 * consulted there, so its runs and trace hashes stay the same). The disk
 * kinds are on for the same reason: only a scenario that uses files ever
 * consults them, and a correct program survives what they inject (a
 * delay, an error it reports, a flipped bit its checksum catches, the
 * loss of what it never synced).
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
 *          the end of the list the value is 0 (counted in past_end).
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

#include "pollen/system.h"
#include "prng.h"
#include "sim_assert.h"

/* The simulator's own decision kinds, in the number space of core's
 * (pollen/system.h: schedule 0, timer_order 2, timer_late 3, cancel 7,
 * buggify_fire 11). The numbers are part of the replay format: append
 * only. Typed as pl_decision_kind, which every decision function takes. */
#define PL_DECIDE_IO_ORDER ((pl_decision_kind)1)      /* which of n ready sources fires next */
#define PL_DECIDE_SPURIOUS_WAKE ((pl_decision_kind)4) /* wake a parked task through its waker */
#define PL_DECIDE_SPURIOUS_POLL ((pl_decision_kind)5) /* poll a parked task without a wake */
#define PL_DECIDE_WAKE_DELAY ((pl_decision_kind)6)    /* hold a remote wake back this many steps */
#define PL_DECIDE_IO_FAULT ((pl_decision_kind)8)      /* short read/write, EAGAIN, error, loss */
#define PL_DECIDE_IO_LATENCY ((pl_decision_kind)9)    /* delay of simulated I/O delivery */
#define PL_DECIDE_BUGGIFY_SITE ((pl_decision_kind)10) /* enable a PL_BUGGIFY site for this run */
#define PL_DECIDE_PROBE ((pl_decision_kind)12)        /* probe the parked tasks at a point
                                                         where only a timer can fire next */
/* The simulated disk (sim/src/disk/), consulted only when files are used. */
#define PL_DECIDE_DISK_LATENCY ((pl_decision_kind)13) /* a file op completes this many
                                                         latency quanta later */
#define PL_DECIDE_DISK_FAULT ((pl_decision_kind)14)   /* EIO, short read, short write */
#define PL_DECIDE_DISK_CORRUPT ((pl_decision_kind)15) /* flip a bit of what a read returns */
#define PL_DECIDE_DISK_LOSE ((pl_decision_kind)16)    /* at a crash: which unsynced writes
                                                         survive (none, all, a torn prefix) */
/* Links between hosts (net/link.c; the
 * key of each is the link, from-host << 32 | to-host, IPv4 host order): */
#define PL_DECIDE_LINK_LATENCY ((pl_decision_kind)17) /* extra delay bucket of one crossing */
#define PL_DECIDE_LINK_LOSS ((pl_decision_kind)18)    /* lose a datagram */
#define PL_DECIDE_LINK_DUP ((pl_decision_kind)19)     /* deliver a datagram twice */
#define PL_DECIDE_LINK_REORDER ((pl_decision_kind)20) /* hold a datagram back (overtaken) */
#define PL_DECIDE_LINK_RESET ((pl_decision_kind)21)   /* a stream write breaks its connection */
#define PL_DECIDE_PARTITION ((pl_decision_kind)22)    /* cut the link (or both ways) a while */
#define PL_DECIDE_CLOG ((pl_decision_kind)23)         /* hold the link's traffic a while */
/* Nodes (node_crash.c), consulted only for nodes declared crashable; the
 * key is the node's index << 32 | its crashes so far (bit 63 set for the
 * delay): */
#define PL_DECIDE_NODE_CRASH ((pl_decision_kind)24)   /* at a wait: crash the node (n = 2);
                                                         then its restart delay (n = 8) */
/* At a crash, per connected stream of the node (key: the endpoint id): 1
 * the peer hears nothing (no RST, no FIN), 0 it reads ECONNRESET. */
#define PL_DECIDE_CRASH_SILENCE ((pl_decision_kind)25)
/* Simulated threads (threads/sched.c), consulted only while a thread
 * besides thread 0 lives and more than one could run; the key is the
 * running thread's id: */
#define PL_DECIDE_THREAD_SWITCH ((pl_decision_kind)26) /* at a point: 0 keeps running, k runs
                                                          the k-th other runnable thread in
                                                          ready order; when the running one
                                                          blocks, or a wait wakes one of n:
                                                          the k-th, 0 the longest waiting */
#define PL_DECIDE_COND_SPURIOUS ((pl_decision_kind)27) /* a condition-variable wait returns
                                                          without a signal (POSIX allows it) */
/* Every kind, core's and these; a number without a name is not assigned
 * in this build. */
#define PL_DECIDE__COUNT 28

#define PL__DEC_KINDS ((int)PL_DECIDE__COUNT)

/* Default cap on recorded decisions: 64M (12 bytes each, 768 MiB at
 * most; the array grows with the run, so a short run pays for what it
 * records only). A run recorded in full replays exactly, so the cap is
 * far above any run a time limit allows in practice (a ticker running
 * for an hour of virtual time asks a few million). Replay files hold at
 * most this many decisions too (PL__REPLAY_DECISIONS_MAX). */
#define PL__DEC_RECORD_MAX_DEFAULT ((size_t)1 << 26)

/* Room for the text pl__dec_knobs_format produces, NUL included (every
 * kind at its longest takes under 300 bytes; room is left for more). */
#define PL__DEC_KNOBS_TEXT_MAX 512

typedef struct pl__dec_knob {
    bool enabled;  /* false: the kind always answers 0, unconsulted */
    uint32_t prob; /* parts per 65536 of leaving choice 0, 0..65536 */
} pl__dec_knob;

typedef struct pl__dec_knobs {
    pl__dec_knob kind[PL_DECIDE__COUNT]; /* indexed by pl_decision_kind */
} pl__dec_knobs;

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
    uint32_t strategy_kinds; /* bit k set: the strategy sees kind k (0 with no strategy) */
    uint32_t slow_kinds; /* bit k set: kind k leaves the inline path (see below) */

    /* Source state. */
    pl__prng prng;
    const uint8_t *bytes; /* borrowed */
    size_t bytes_len;
    size_t bytes_pos;
    const pl__dec_record *list; /* borrowed */
    size_t list_len;
    size_t list_pos; /* next list entry: the list's decision index */
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
    size_t records_room; /* min(records_cap, record_max): where the inline append stops */
    bool truncated; /* some consulted decisions were not recorded */
} pl__dec;

/* Knobs --------------------------------------------------------------- */

/* Fills *k with the defaults listed at the top of this file. */
void pl__dec_knobs_default(pl__dec_knobs *k);

/* Swarm testing: draws which kinds are on and their probabilities from
 * `seed` (through pl__prng_subseed(seed, PL__SEED_SWARM)). Frozen with
 * the format, so `--strategy swarm --seed N` reproduces. Per kind, in
 * enum order, with one generator:
 *   schedule, io_order, timer_order: on with probability 7/8;
 *   spurious_poll, cancel: on with probability 1/4;
 *   every other kind: on with probability 1/2;
 *   then prob = menu[below(8)] (drawn for disabled kinds too), where
 *   ordering kinds use {2048, 4096, 8192, 16384, 32768, 40960, 49152,
 *   65536} and the others {128, 256, 512, 1024, 2048, 4096, 8192,
 *   16384}. Kinds not assigned in this build draw nothing, so the
 *   kinds numbered after 12 (drawn after the older ones) leave every
 *   older kind's choice as it was. */
void pl__dec_knobs_swarm(pl__dec_knobs *k, uint64_t seed);

/* Writes knobs as "schedule=32768,io_order=32768,...,cancel=off" (every
 * kind, in enum order; a disabled kind prints "off"). Returns the length
 * of the full text like snprintf; it always fits in
 * PL__DEC_KNOBS_TEXT_MAX. */
int pl__dec_knobs_format(const pl__dec_knobs *k, char *buf, size_t len);

/* Parses text[0, len) of the form "name=value,name=value" into *k.
 * Names are those of pl__dec_kind_name; a value is "off", "on" (enable,
 * keep the probability already in *k) or a decimal probability 0..65536
 * (enables). Kinds not mentioned keep their values from *k, so start
 * from pl__dec_knobs_default for a full setting. An empty text changes
 * nothing. Returns 0, or PL_EFORMAT with *k untouched and a message in
 * err (e.g. "unknown kind 'sched' at offset 0"; err may be NULL). */
int pl__dec_knobs_parse(pl__dec_knobs *k, const char *text, size_t len, char *err,
                        size_t errlen);

/* True when both enable the same kinds with the same probabilities (the
 * probability of a disabled kind is ignored: it never draws). */
bool pl__dec_knobs_equal(const pl__dec_knobs *a, const pl__dec_knobs *b);

/* Kind names ---------------------------------------------------------- */

/* "schedule", "io_order", ...; NULL for a kind out of range or a number
 * not assigned in this build (such a kind is off, never formatted, parsed
 * or drawn by swarm). */
const char *pl__dec_kind_name(uint32_t kind);

/* The kind named text[0, len), or -1. */
int pl__dec_kind_from_name(const char *text, size_t len);

/* The one-letter code of a kind in replay files (s i t l w p d c f j b B q
 * k e x u, in enum order, then g L D r R P C K Z for 17..25, T V for 26
 * and 27), or 0 for a kind
 * out of range or not assigned. */
char pl__dec_kind_letter(uint32_t kind);

/* The kind with letter c, or -1. */
int pl__dec_kind_from_letter(char c);

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

/* Installs (or, with fn == NULL, removes) the strategy hook. */
void pl__dec_set_strategy(pl__dec *d, pl__dec_strategy_fn fn, void *ud);

/* Like pl__dec_set_strategy, for a hook that returns `fallback` unchanged
 * (and changes nothing) for every kind whose bit (1u << kind) is clear in
 * `kinds`: those decisions skip the call. */
void pl__dec_set_strategy_kinds(pl__dec *d, pl__dec_strategy_fn fn, void *ud, uint32_t kinds);

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

/* pl__dec_choose for a call pl__dec_consulted said is consulted. */
uint32_t pl__dec_choose_consulted(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key);

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

/* The inline path (internal) ----------------------------------------- */

/* The pieces of pl__dec_choose_consulted, for the simulator's one hot
 * caller (pl__sim_choose_consulted), which inlines the common case and
 * keeps every rare one out of line: a kind for which
 * pl__dec_slow_kind_ is true goes through pl__dec_settle_ (the PRNG
 * source, with its strategy) or pl__dec_choose_other_ (other sources);
 * otherwise the caller draws with pl__dec_from_prng_ and records with
 * pl__dec_note_, calling pl__dec_record_slow_ when that returns false.
 * Together they do exactly what pl__dec_choose_consulted does. */

/* A consulted decision of a slow kind: any source, the strategy, the
 * counters and the record. */
uint32_t pl__dec_choose_other_(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key);

/* The record append's slow path: grow the array, or mark the record
 * truncated. */
void pl__dec_record_slow_(pl__dec *d, pl__dec_record rec);

/* True when `kind` leaves the inline path: a source other than the
 * PRNG (every kind), or a strategy installed for it. One bit test. */
static inline bool pl__dec_slow_kind_(const pl__dec *d, pl_decision_kind kind)
{
    return (d->slow_kinds >> (uint32_t)kind & 1u) != 0;
}

/* The random source: choice 0 unless chance(prob), then uniform in [1, n). */
static inline uint32_t pl__dec_from_prng_(pl__dec *d, pl_decision_kind kind, uint32_t n)
{
    if (!pl__prng_chance(&d->prng, d->knobs.kind[kind].prob)) {
        return 0;
    }
    if (n == 2) {
        return 1;
    }
    return 1 + pl__prng_below(&d->prng, n - 1);
}

/* Counts decision v and appends its record when the array has room;
 * false when it has none (the caller then calls pl__dec_record_slow_). */
static inline bool pl__dec_note_(pl__dec *d, pl_decision_kind kind, uint32_t n, uint32_t v)
{
    d->consulted++;
    d->count[kind]++;
    d->nonzero[kind] += v != 0;
    if (d->records_len < d->records_room) {
        d->records[d->records_len++] = (pl__dec_record){(uint32_t)kind, n, v};
        return true;
    }
    return false;
}

/* After the source: the strategy (when it wants this kind), the counters
 * and the record. Returns the decision. */
static inline uint32_t pl__dec_settle_(pl__dec *d, pl_decision_kind kind, uint32_t n, uint64_t key,
                                       uint32_t v)
{
    if ((d->strategy_kinds >> (uint32_t)kind & 1u) != 0) {
        v = d->strategy(d->strategy_ud, kind, n, key, v);
    }
    /* Every source and strategy keeps the [0, n) promise. */
    PL__SIM_ASSERT(v < n);
    if (!pl__dec_note_(d, kind, n, v)) {
        pl__dec_record_slow_(d, (pl__dec_record){(uint32_t)kind, n, v});
    }
    return v;
}

#endif
