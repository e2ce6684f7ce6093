/* sim/src/knobs.h: the decision kinds and their knobs.
 *
 * One table (knobs.c) holds, per kind: its name (the knobs text and
 * pl_sim_knobs' field), its one-letter code in replay files, its default
 * and its swarm range. Every function below reads that table: defaults,
 * swarm, the text format and its parser, equality, names and letters,
 * and the conversion from the public pl_sim_knobs (pollen/sim.h). The
 * one options -> knobs function every run goes through is knobs_of.h's,
 * on top of these (it also reads the strategy, which knobs.c, a leaf,
 * does not call).
 *
 * The stream (decide.h) keeps its knobs as pl__dec_knobs, indexed by kind
 * so that a decision finds its knob with one load; pl_sim_knobs is the
 * same values by name, for users.
 *
 * Nothing here allocates or keeps state: every function may be called
 * from any thread.
 */
#ifndef POLLEN_SIM_KNOBS_H
#define POLLEN_SIM_KNOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/sim.h"
#include "pollen/system.h"

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
/* Nodes declared pausable (node_pause.c); the key is the node's index
 * << 32 | its pauses so far: */
#define PL_DECIDE_NODE_PAUSE ((pl_decision_kind)28) /* at a wait: v > 0 pauses the node
                                                       for 2^(v-1) ms (n = 9) */
/* Nodes declared isolatable (node_isolate.c), same key and values: v > 0
 * cuts every link of the node, both ways, for 2^(v-1) ms. */
#define PL_DECIDE_NODE_ISOLATE ((pl_decision_kind)29)
/* User code's randomness (env/random.c): pl_random_u64, pl_random_below
 * and the C library's random functions a simulation binary routes (rand,
 * random, getrandom, ...). n = bound + 1: value 0 and 1 both give 0, v
 * gives v - 1, so the kind off (or a value shrunk to 0) gives 0 and the
 * PRNG at prob 65536 gives a uniform value. */
#define PL_DECIDE_RANDOM ((pl_decision_kind)30)
/* Nodes declared skewed (node_clock.c); the key is the node's index << 32
 * (| its jumps so far, for a jump): */
#define PL_DECIDE_CLOCK_OFFSET ((pl_decision_kind)31) /* at its first boot: v > 0 sets the
                                                         node's clock 2^(v-1) ms ahead (n = 9) */
#define PL_DECIDE_CLOCK_DRIFT ((pl_decision_kind)32)  /* at its first boot: v > 0 makes it run
                                                         100 << (v-1)/2 ppm fast (v odd) or
                                                         slow (v even) (n = 17) */
#define PL_DECIDE_CLOCK_JUMP ((pl_decision_kind)33)   /* at a wait: v > 0 steps its wall clock
                                                         2^((v-1)/2) ms forward (v odd) or
                                                         back (v even) (n = 17) */
/* (Those n are at the bounds' defaults: a tighter clock_*_max knob leaves
 * out the steps past it, n = 1 + steps or 1 + 2 * steps.) */
/* Every kind, core's and these; a number without a name is not assigned
 * in this build. */
#define PL_DECIDE__COUNT 34

#define PL__DEC_KINDS ((int)PL_DECIDE__COUNT)

/* Room for the text pl__dec_knobs_format produces, NUL included. */
#define PL__DEC_KNOBS_TEXT_MAX PL_SIM_KNOBS_TEXT_MAX

/* One kind's knob: pl_sim_knob (enabled, prob). */
typedef pl_sim_knob pl__dec_knob;

/* Bounds on what some kinds' decisions may draw, knobs of the same text
 * ("clock_drift_max_ppm=800"): a decision's value stays a step k, and
 * the bound leaves out the steps past it (node_clock.c). Each defaults
 * to its largest value, the pollen/sim_node.h bound the kinds had
 * before, and a bound at its default is not written, so knobs texts and
 * replays without one read as they did. */
enum {
    PL__DEC_BOUND_CLOCK_OFFSET_MS = 0, /* clock_offset_max_ms: 0..128 */
    PL__DEC_BOUND_CLOCK_DRIFT_PPM = 1, /* clock_drift_max_ppm: 0..12800 */
    PL__DEC_BOUND_CLOCK_JUMP_MS = 2,   /* clock_jump_max_ms: 0..128 */
    PL__DEC_BOUNDS = 3,
};

/* Every kind's knob, indexed by pl_decision_kind, and the bounds. */
typedef struct pl__dec_knobs {
    pl__dec_knob kind[PL_DECIDE__COUNT];
    uint32_t bound[PL__DEC_BOUNDS];
} pl__dec_knobs;

/* Kind names and letters ----------------------------------------------- */

/* "schedule", "io_order", ... (pl_sim_knobs' field names); NULL for a
 * kind out of range or a number not assigned in this build (such a kind
 * is off, never formatted, parsed or drawn by swarm). */
const char *pl__dec_kind_name(uint32_t kind);

/* The kind named text[0, len), or -1. */
int pl__dec_kind_from_name(const char *text, size_t len);

/* The one-letter code of a kind in replay files (s i t l w p d c f j b B q
 * k e x u, in enum order, then g L D r R P C K Z for 17..25, T V for 26
 * and 27, N I a for 28 to 30, O F J for 31 to 33), or 0 for a kind out of range or not assigned. */
char pl__dec_kind_letter(uint32_t kind);

/* The kind with letter c, or -1. */
int pl__dec_kind_from_letter(char c);

/* "clock_offset_max_ms", ...; NULL for b >= PL__DEC_BOUNDS. */
const char *pl__dec_bound_name(uint32_t b);

/* A bound's default, which is also its largest value; 0 for b >=
 * PL__DEC_BOUNDS. */
uint32_t pl__dec_bound_default(uint32_t b);

/* Knobs ---------------------------------------------------------------- */

/* Fills *k with the defaults (pollen/sim.h lists them; bounds at theirs). */
void pl__dec_knobs_default(pl__dec_knobs *k);

/* Swarm testing: draws which kinds are on and their probabilities from
 * `seed` (through pl__prng_subseed(seed, PL__SEED_SWARM)). Frozen with
 * the format, so `--strategy swarm --seed N` reproduces. Per kind, in
 * enum order, with one generator:
 *   schedule, io_order, timer_order: on with probability 7/8;
 *   spurious_poll, cancel: on with probability 1/4;
 *   probe: on with probability 7/8 (before, 1/2: a lost wakeup took
 *   swarm many more seeds than the default strategy);
 *   random: its default, drawing nothing (user code's values stay
 *   uniform: a run's workload differs per seed under every strategy);
 *   every other kind: on with probability 1/2;
 *   then prob = menu[below(8)] (drawn for disabled kinds too), where
 *   ordering kinds use {2048, 4096, 8192, 16384, 32768, 40960, 49152,
 *   65536} and the others {128, 256, 512, 1024, 2048, 4096, 8192,
 *   16384}. Kinds not assigned in this build draw nothing, so the
 *   kinds numbered after 12 (drawn after the older ones) leave every
 *   older kind's choice as it was. */
void pl__dec_knobs_swarm(pl__dec_knobs *k, uint64_t seed);

/* Writes knobs as "schedule=32768,io_order=32768,...,cancel=off" (every
 * kind, in enum order; a disabled kind prints "off"), then each bound not
 * at its default (",clock_drift_max_ppm=800"). Returns the length
 * of the full text like snprintf. Every setting fits in
 * PL__DEC_KNOBS_TEXT_MAX: a compile-time assertion in knobs.c sums every
 * kind's "name=65536,". */
int pl__dec_knobs_format(const pl__dec_knobs *k, char *buf, size_t len);

/* Parses text[0, len) of the form "name=value,name=value" into *k.
 * Names are those of pl__dec_kind_name; a value is "off", "on" (enable,
 * keep the probability already in *k) or a decimal probability 0..65536
 * (enables). A bound's name (pl__dec_bound_name) takes a decimal from 0
 * to its default. Kinds and bounds not mentioned keep their values from
 * *k, so start
 * from pl__dec_knobs_default for a full setting. An empty text changes
 * nothing. Returns 0, or PL_EFORMAT with *k untouched and a message in
 * err (e.g. "unknown kind 'sched' at offset 0"; err may be NULL). */
int pl__dec_knobs_parse(pl__dec_knobs *k, const char *text, size_t len, char *err,
                        size_t errlen);

/* True when both enable the same kinds with the same probabilities (the
 * probability of a disabled kind is ignored: it never draws) and have the
 * same bounds. */
bool pl__dec_knobs_equal(const pl__dec_knobs *a, const pl__dec_knobs *b);

/* Copies every kind's knob from the typed form into *k. Returns 0, or
 * PL_EINVAL with *k untouched and the field named in err (err may be
 * NULL) when a probability is past 65536. */
int pl__dec_knobs_from_public(const pl_sim_knobs *in, pl__dec_knobs *k, char *err, size_t err_len);

#endif
