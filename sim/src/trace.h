/* sim/src/trace.h: the event trace and its running hash.
 *
 * Every simulator event is a fixed record {step, time_ns, kind, task, a,
 * b}. The trace hash is XXH3-64 (seed 0) of the concatenation of all
 * events so far, each encoded as 24 bytes little-endian in this order:
 *
 *     kind u32 | task u32 | a u64 | b u64
 *
 * step and time_ns are kept in the log but not hashed per event: the
 * step is the number of PENDING/READY events before it, and the simulator
 * emits a CLOCK event whenever virtual time moves, so both are already
 * covered, and the hash has 40% fewer bytes to digest on the hot path.
 *
 * POLL and DECISION events are log-only (pl__trace_kind_hashed): they go
 * to the kept log, for the timeline and the shrinker's explanations, but
 * neither into the hash nor into the event count. A poll is hashed once,
 * by its PENDING/READY event (which carries the poll number and waker
 * generation), and a decision by the events it causes; hashing them too
 * would double the hot path's hashing for no extra discrimination.
 *
 * The encoding and the kind numbers below are part of replay format 1: a
 * recorded hash stays valid only as long as they do. Events are batched
 * in a 4 KiB buffer and fed to a streaming XXH3 state per buffer, never
 * per event; XXH3 streaming is chunking-independent, so flushing early
 * (pl__trace_hash, checkpoints) never changes a hash.
 *
 * No pointer value, clock reading or random number may enter an event:
 * the same run must hash the same under gcc and clang, -O0 and -O2, with
 * and without sanitizers. Use task ids and counters.
 *
 * Optional, off by default (pl__trace_options):
 *   keep_log     keep every event in memory (text timeline, Chrome JSON,
 *                locating a divergence event by event), up to log_max;
 *   checkpoints  record the hash of the stream after every
 *                PL__TRACE_CHECKPOINT_EVENTS events, so two runs that
 *                disagree can be narrowed to the first differing window
 *                without keeping the log.
 *
 * Ownership: pl__trace is opaque, created by pl__trace_create and freed
 * by pl__trace_destroy (which accepts NULL). Arrays returned by accessors
 * belong to the trace and stay valid until the next event, reset or
 * destroy. Not thread-safe.
 */
#ifndef POLLEN_SIM_TRACE_H
#define POLLEN_SIM_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pollen/time.h"

/* Event kinds. Numbers enter the hash: append only, never renumber.
 * Suggested argument conventions (the timeline labels a/b this way):
 *   SPAWN        task = new task, a = parent task id (PL__TRACE_NO_TASK
 *                when spawned from outside), b = 0
 *   POLL         a = poll number of this task (1-based), b = waker gen
 *   PENDING      a = poll number, b = 0
 *   READY        a = poll number, b = 0
 *   WAKE, WAKE_STALE, WAKE_DEDUP
 *                task = woken task, a = waker generation, b = the
 *                running task (PL__TRACE_NO_TASK outside polls)
 *   WAKER_CLONE, WAKER_DROP   a = waker generation, b = live clones after
 *   TIMER_ARM    a = timer id, b = deadline_ns
 *   TIMER_FIRE   a = timer id, b = lateness_ns
 *   IO_READY     a = source id, b = PL_IO_* bits
 *   DECISION     use pl__trace_decision: a = pl_decision_kind,
 *                b = n << 32 | value
 *   COMPLETE     a = polls in total, b = 0
 *   DROP         a = polls in total, b = 0
 *   FINDING      a = finding code, b = detail
 *   USER         use pl__trace_user: a user trace event (PL_TRACE_EVENT),
 *                a = offset of its text in the trace's text store, b =
 *                its length; log-only like POLL and DECISION */
typedef enum pl__trace_kind {
    PL__EV_SPAWN = 0,
    PL__EV_POLL = 1,
    PL__EV_PENDING = 2,
    PL__EV_READY = 3,
    PL__EV_WAKE = 4,
    PL__EV_WAKE_STALE = 5,
    PL__EV_WAKE_DEDUP = 6,
    PL__EV_WAKER_CLONE = 7, /* reserved: clones are counted, not traced */
    PL__EV_WAKER_DROP = 8,  /* reserved: likewise */
    PL__EV_TIMER_ARM = 9,
    PL__EV_TIMER_FIRE = 10,
    PL__EV_IO_READY = 11,
    PL__EV_DECISION = 12,
    PL__EV_COMPLETE = 13,
    PL__EV_DROP = 14,
    PL__EV_FINDING = 15,
    PL__EV_CLOCK = 16,     /* virtual time moved: a = new time (ns), b = old */
    PL__EV_PROBE = 17,     /* a poll outside the schedule (quiescence probe,
                              spurious poll): a = poll number, b = gen */
    PL__EV_USER = 18,      /* log-only: a user trace event, see above */
    PL__EV_NODE = 19,      /* a node crashed (b = 0), restarted (1), paused (2),
                              resumed (3) or was isolated (4): a = its index
                              (sim_node.h); only in cluster scenarios */
    PL__EV_THREAD = 20,    /* a simulated thread (threads/): a = its id, b = what
                              (PL__THREAD_EV_*) << 32 | the other thread's id */
    PL__EV__COUNT
} pl__trace_kind;

/* PL__EV_NODE's b. */
#define PL__NODE_EV_CRASH   0
#define PL__NODE_EV_RESTART 1
#define PL__NODE_EV_PAUSE   2
#define PL__NODE_EV_RESUME  3
#define PL__NODE_EV_ISOLATE 4 /* a decided isolation (node_isolate.c) */

/* What a PL__EV_THREAD event says of thread a (b's high half); the
 * other thread is b's low half. */
enum {
    PL__THREAD_EV_SPAWN = 0,  /* spawned by the other */
    PL__THREAD_EV_SWITCH = 1, /* runs now; the other ran before */
    PL__THREAD_EV_BLOCK = 2,  /* blocked; low half: what it waits for (pl__thread_wait) */
    PL__THREAD_EV_EXIT = 3,   /* ended; low half: 1 when killed by its node's crash */
    PL__THREAD_EV_READY = 4,  /* made runnable; low half: 1 when by a deadline */
};

/* "No task" in the task field and in task-valued arguments. Executor
 * task ids start at 1 (pollen/observer.h), so 0 is free. */
#define PL__TRACE_NO_TASK 0u

/* Events per checkpoint (the replay file records it too). */
#define PL__TRACE_CHECKPOINT_EVENTS 256u

/* Bytes per encoded event. */
#define PL__TRACE_EVENT_BYTES 24u

/* Default cap on the in-memory log (40-byte records: 160 MiB). */
#define PL__TRACE_LOG_MAX_DEFAULT ((size_t)1 << 22)

/* Cap on the text store of user events (PL__EV_USER): past it, user
 * events are dropped and the log is marked truncated. */
#define PL__TRACE_TEXT_MAX ((size_t)64 << 20)

/* One event, as kept in the log. */
typedef struct pl__trace_rec {
    uint64_t step;   /* the simulator's step counter */
    int64_t time_ns; /* virtual time */
    uint32_t kind;   /* pl__trace_kind */
    uint32_t task;   /* task id or PL__TRACE_NO_TASK */
    uint64_t a;      /* kind-specific, see above */
    uint64_t b;
} pl__trace_rec;

typedef struct pl__trace_options {
    bool keep_log;    /* keep every event in memory */
    bool checkpoints; /* hash every PL__TRACE_CHECKPOINT_EVENTS events */
    size_t log_max;   /* log cap; 0: PL__TRACE_LOG_MAX_DEFAULT */
} pl__trace_options;

typedef struct pl__trace pl__trace;

/* Names a task for output ("relay-2"); may return NULL for "unknown".
 * The string is used before the next call only. */
typedef const char *(*pl__trace_task_name_fn)(void *ud, uint32_t task);

/* Creates a trace. opts NULL: all options off. Returns 0 or PL_ENOMEM. */
int pl__trace_create(pl__trace **out, const pl__trace_options *opts);

/* Frees the trace and everything it owns; NULL is a no-op. */
void pl__trace_destroy(pl__trace *t);

/* Forgets all events, hash, log and checkpoints (same options). */
void pl__trace_reset(pl__trace *t);

/* False for the log-only kinds (POLL, DECISION, USER), see above. */
bool pl__trace_kind_hashed(uint32_t kind);

/* Appends an event. Never allocates unless keep_log/checkpoints is on
 * (then amortized growth; on failure the log is marked truncated and the
 * hash stays exact). Inline below: the simulator appends an event or two
 * per poll and per wake, and a call each showed in its cost. */
static inline void pl__trace_event(pl__trace *t, uint64_t step, pl_time time_ns,
                                   pl__trace_kind kind, uint32_t task, uint64_t a, uint64_t b);

/* Appends a DECISION event with the packing documented above. */
void pl__trace_decision(pl__trace *t, uint64_t step, pl_time time_ns, uint32_t task,
                        uint32_t decision_kind, uint32_t n, uint32_t value);

/* Whether anything keeps log-only events (the log, or an attached crash
 * ring): a user event is formatted only then, and a POLL event is
 * nothing but a branch otherwise. Inline below. */
static inline bool pl__trace_wants_text(const pl__trace *t);

/* Appends a USER event with `len` bytes of `text` (no NUL needed; at most
 * PL_TRACE_EVENT_MAX - 1 are kept). Log-only: never hashed or counted,
 * so it cannot change a run. A no-op unless pl__trace_wants_text. */
void pl__trace_user(pl__trace *t, uint64_t step, pl_time time_ns, uint32_t task,
                    const char *text, size_t len);

/* The text store the USER events of the log point into (*len bytes). */
const char *pl__trace_texts(const pl__trace *t, size_t *len);

/* Attaches a crash ring (trace_ring.h; NULL detaches): from now on every
 * event, log-only ones included, is also copied into it as it is made,
 * so a process killed by a signal leaves its last events behind. */
struct pl__trace_ring;
void pl__trace_set_ring(pl__trace *t, struct pl__trace_ring *ring);

/* The hash of every event so far (XXH3-64 of their encodings). The empty
 * trace hashes like XXH3_64bits of zero bytes. */
uint64_t pl__trace_hash(pl__trace *t);

/* Hashed events appended so far (log-only kinds are not counted). */
uint64_t pl__trace_count(const pl__trace *t);

/* Asserts the trace's invariants (PL__SIM_ASSERT, every build): pending
 * bytes within the buffer, the log within its bounds, and one checkpoint
 * per full window of hashed events unless growth stopped. O(1). */
void pl__trace_check(const pl__trace *t);

/* The kept events (*len of them; NULL, 0 without keep_log). *truncated,
 * when not NULL, tells whether events were dropped past log_max. */
const pl__trace_rec *pl__trace_log(const pl__trace *t, size_t *len, bool *truncated);

/* Checkpoint hashes: entry i is the hash after (i + 1) *
 * PL__TRACE_CHECKPOINT_EVENTS events. NULL, 0 without checkpoints. */
const uint64_t *pl__trace_checkpoints(const pl__trace *t, size_t *len);

/* Names ----------------------------------------------------------------- */

/* "spawn", "poll", ...; "?" for an unknown kind. */
const char *pl__trace_kind_name(uint32_t kind);

/* Comparing runs ------------------------------------------------------- */

/* The index of the first event where logs a and b differ (any field),
 * min(na, nb) when one is a proper prefix of the other, or SIZE_MAX when
 * they are identical. */
size_t pl__trace_first_diff(const pl__trace_rec *a, size_t na, const pl__trace_rec *b,
                            size_t nb);

/* The first window where two checkpoint lists differ: returns w such
 * that events [w * 256, (w + 1) * 256) hold the first difference, or
 * SIZE_MAX when the lists are identical. When the common checkpoints all
 * agree but the counts differ, the window is min(na, nb) (the runs
 * differ after the last common checkpoint, or only in length). */
size_t pl__trace_first_diff_window(const uint64_t *a, size_t na, const uint64_t *b,
                                   size_t nb);

/* Output ---------------------------------------------------------------- */

/* Where task `task` was spawned: "file:line" (static storage), *func
 * its function or NULL; NULL when not known. */
typedef const char *(*pl__trace_spawn_site_fn)(void *ud, uint32_t task, const char **func);

/* What the writers below name things with: task names (NULL: tasks
 * print as "task#<id>"), the text of a USER event (NULL, or NULL
 * returned: "(text not kept)") and spawn sites (NULL: not shown). ud is
 * handed to all three. */
typedef struct pl__trace_namer {
    pl__trace_task_name_fn task_name;
    const char *(*user_text)(void *ud, const pl__trace_rec *e, size_t *len);
    void *ud;
    pl__trace_spawn_site_fn spawn_site;
} pl__trace_namer;

/* The namer of a log whose USER events point into `texts` (len bytes;
 * pl__trace_texts, or a run record's copy): task names through fn/ud. */
typedef struct pl__trace_store_namer {
    pl__trace_task_name_fn task_name;
    void *ud;
    const char *texts;
    size_t texts_len;
    pl__trace_spawn_site_fn spawn_site; /* through ud too; NULL: none */
} pl__trace_store_namer;
const char *pl__trace_store_text(void *ud, const pl__trace_rec *e, size_t *len);
const char *pl__trace_store_task(void *ud, uint32_t task);
const char *pl__trace_store_spawn_site(void *ud, uint32_t task, const char **func);

/* pl__trace_write_text / _chrome with a namer (NULL: names and texts
 * unknown). */
int pl__trace_write_text_ex(FILE *f, const pl__trace_rec *ev, size_t n,
                            const pl__trace_namer *nm);
int pl__trace_write_chrome_ex(FILE *f, const pl__trace_rec *ev, size_t n,
                              const pl__trace_namer *nm);

/* What a timeline line shows after the event's task: its arguments,
 * each after a space (a USER event: its text), without the newline. */
void pl__trace_write_args(FILE *f, const pl__trace_rec *e, const pl__trace_namer *nm);

/* Writes one line per event:
 *     "<step> <time ms, 3 decimals>ms <kind> <task name> <args>"
 * e.g. "      12     1.234ms poll         relay-2      poll=3 gen=1".
 * task_name may be NULL (tasks print as "task-<id>"). A SPAWN whose
 * site the namer knows ends in " at <file:line>[ in <function>]".
 * Returns 0 or PL_EIO on a write error. */
int pl__trace_write_text(FILE *f, const pl__trace_rec *ev, size_t n,
                         pl__trace_task_name_fn task_name, void *ud);

/* Writes Chrome trace-event JSON (an array of objects with name, ph, ts,
 * pid, tid; Perfetto and chrome://tracing open it).
 *
 * Time: every event of the log gets a nanosecond of its own, so that
 * the many events of one virtual instant (polls take no virtual time)
 * are drawn one after the other instead of on top of each other:
 *     chrome_ns(e0) = time_ns(e0)
 *     chrome_ns(ei) = max(time_ns(ei), chrome_ns(e(i-1)) + 1)
 * ts is chrome_ns in microseconds (3 decimals). It equals virtual time
 * wherever an instant has fewer events than nanoseconds until the next
 * one (the usual case, instants being microseconds or more apart) and is
 * later by a few nanoseconds elsewhere; every event's args carry its
 * exact virtual time ("time_ns") and its step.
 *
 * A POLL (or PROBE) and the next PENDING/READY of the same task with no
 * other POLL in between become one complete event ("ph":"X") from the
 * POLL's ts to the PENDING/READY's: dur >= 1 ns, the events made during
 * the poll (wakes, user events) lie inside it, and two polls never
 * overlap (the executor never nests them, and chrome_ns only grows).
 * Everything else is an instant ("ph":"i", "s":"t") on its task's track;
 * a USER event is named by its text, a SPAWN whose site the namer knows
 * carries it in args "site" (and "function"). Each SPAWN also emits a thread_name
 * metadata event so tracks carry task names. tid = task id (0: no
 * task). Returns 0 or PL_EIO. */
int pl__trace_write_chrome(FILE *f, const pl__trace_rec *ev, size_t n,
                           pl__trace_task_name_fn task_name, void *ud);

/* ---- The inline append (internal) ------------------------------------
 * The head of every pl__trace: what appending an event touches. The rest
 * of the struct is private to trace.c. */

#define PL__TRACE_BUF_BYTES 4096u

typedef struct pl__trace_hot {
    size_t used;      /* bytes pending in buf */
    uint64_t count;   /* hashed events appended */
    uint64_t slow_at; /* count at which the log or a checkpoint wants the event */
    bool keep_log;    /* every event goes out of line: the log or a ring wants it */
    uint8_t buf[PL__TRACE_BUF_BYTES]; /* encoded events not yet hashed */
} pl__trace_hot;

/* Out of line: the work after an event just encoded at the end of buf
 * (the log and checkpoints of an event whose count reached slow_at,
 * then the hash of a buffer with no room left for one more); a log-only
 * event. */
void pl__trace_after_(pl__trace *t, uint64_t step, pl_time time_ns);
void pl__trace_log_only_(pl__trace *t, uint64_t step, pl_time time_ns, pl__trace_kind kind,
                         uint32_t task, uint64_t a, uint64_t b);

/* Little-endian stores independent of the host's byte order. On
 * little-endian hosts a memcpy is one store; byte-by-byte code is not
 * reliably merged (clang 14 leaves it, costing several ns per event). */
static inline void pl__trace_put32(uint8_t *p, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, sizeof(v));
#else
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
#endif
}

static inline void pl__trace_put64(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, sizeof(v));
#else
    pl__trace_put32(p, (uint32_t)v);
    pl__trace_put32(p + 4, (uint32_t)(v >> 32));
#endif
}

static inline bool pl__trace_wants_text(const pl__trace *t)
{
    return ((const pl__trace_hot *)(const void *)t)->keep_log;
}

static inline void pl__trace_event(pl__trace *t, uint64_t step, pl_time time_ns,
                                   pl__trace_kind kind, uint32_t task, uint64_t a, uint64_t b)
{
    pl__trace_hot *h = (pl__trace_hot *)(void *)t;
    if (kind == PL__EV_POLL || kind == PL__EV_DECISION) {
        if (h->keep_log) {
            pl__trace_log_only_(t, step, time_ns, kind, task, a, b);
        }
        return;
    }
    /* Room for one event is kept after every append, so the encoding
     * comes first and the rare work last: a hook that ends in an event
     * reaches it by a jump, and saves no registers for it. */
    uint8_t *p = h->buf + h->used;
    pl__trace_put32(p, (uint32_t)kind);
    pl__trace_put32(p + 4, task);
    pl__trace_put64(p + 8, a);
    pl__trace_put64(p + 16, b);
    h->used += PL__TRACE_EVENT_BYTES;
    if (++h->count == h->slow_at || h->used > PL__TRACE_BUF_BYTES - PL__TRACE_EVENT_BYTES) {
        pl__trace_after_(t, step, time_ns);
    }
}

#endif
