/* core/src/internal.h: what core's modules share and users never see. */
#ifndef POLLEN_INTERNAL_H
#define POLLEN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "pollen/executor.h"
#include "pollen/observer.h"
#include "pollen/system.h"
#include "pollen/timer.h"

#define pl_container_of(ptr, type, member)                                  \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/* Contract checks that stay on in every build: a broken invariant in an
 * async runtime shows up far from its cause, so we stop at the cause. */
#define PL_ASSERT(cond)                                                     \
    do {                                                                    \
        if (!(cond)) {                                                      \
            pl__assert_fail(#cond, __FILE__, __LINE__);                     \
        }                                                                   \
    } while (0)

_Noreturn void pl__assert_fail(const char *expr, const char *file, int line);

/* A hint that `p` will be read soon, for walks whose next address is
 * known a step ahead of its use (no effect where unsupported; never
 * faults, so any pointer value will do). */
#if defined(__GNUC__)
#define PL_PREFETCH(p) __builtin_prefetch(p)
#else
#define PL_PREFETCH(p) ((void)(p))
#endif

/* For a rare path out of a hot function: kept out of line, so the hot
 * function stays small enough to inline. */
#if defined(__GNUC__)
#define PL_COLD __attribute__((noinline, cold))
#else
#define PL_COLD
#endif

/* For functions shared between core's files only: not exported from a
 * shared libpollen, and not interposable, so a compiler may still inline
 * them inside the file that defines them. */
#if defined(__GNUC__)
#define PL_INTERNAL __attribute__((visibility("hidden")))
#else
#define PL_INTERNAL
#endif

/* The executor running on this thread, or NULL outside pl_run. Lets
 * pl_drop report misuse without a context. */
pl_executor *pl__current_executor(void);

/* The allocator used when none is given (pl_alloc_fn over
 * realloc/free), for the executor and for the backend. Inline, so the
 * backend calls nothing of the executor's but the seam's two calls. */
static inline void *pl__libc_alloc(void *ud, void *ptr, size_t old_size, size_t new_size)
{
    (void)ud;
    (void)old_size;
    if (new_size == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, new_size);
}

/* pl_system_default_create with an allocator for the backend's own
 * state (NULL: malloc/free): the executor passes its pl_alloc_fn, so an
 * executor that owns its backend allocates nothing behind its hook. The
 * instance frees through the same allocator in pl_system_default_destroy.
 * Returns 0, PL_ENOMEM or a negated errno of epoll_create1/eventfd. */
int pl__system_default_create_with(pl_system *out, pl_alloc_fn alloc, void *alloc_ud);

/* The system the executor runs on. */
const pl_system *pl__executor_system(const pl_executor *ex);

/* I/O bookkeeping for io.c: a registration number for traces, and the
 * count of registered sources that keeps pl_run from calling the
 * executor idle. */
uint32_t pl__executor_next_io_id(pl_executor *ex);
void pl__executor_io_count(pl_executor *ex, int delta);

/* Decisions and observation, for timer.c: the system's decide() (0 when
 * the system has none) and the observer (NULL in production). */
uint32_t pl__executor_decide(pl_executor *ex, pl_decision_kind kind, uint32_t n, uint64_t key);
const pl_observer *pl__executor_observer(const pl_executor *ex, void **ud);

/* The executor's timers, grouped by firing time: the timers armed for
 * one fire_ns form a group, an array of timer pointers in arming order (a
 * new arming takes the highest sequence number, so appending keeps the
 * order), and the group has one slot in an array-backed 8-ary min-heap
 * ordered by fire_ns. Timers firing together (the simulator's
 * whole-millisecond deadlines, a batch of equal timeouts) then share a
 * slot: arming one costs a lookup and an append where a heap of timers
 * would sift it through every armed timer's slot, and the (fire_ns, seq)
 * order is a heap of timers'. A timer that leaves its group leaves a NULL
 * behind (no other timer moves, so the order holds); a group whose array
 * fills with NULLs compacts it instead of growing. Firing a group reads
 * its array, not the timers, so the timers' memory can be fetched ahead.
 * A few groups are found by a scan of the heap's keys; from MAP_MIN
 * (timer.c) on, a map from fire time to group (open addressing, linear
 * probing) finds them, until the heap next empties. */
typedef struct pl__heap_entry {
    pl_time fire_ns; /* the group's, next to it: sifting reads no group */
    uint32_t group;  /* index in pl__timer_heap.groups */
} pl__heap_entry;

typedef struct pl__timer_group {
    pl_time fire_ns;
    struct pl_timer **slots; /* armed timers in arming order; NULL: one left */
    uint32_t head;           /* first non-NULL slot (while in the heap) */
    uint32_t len;            /* slots used */
    uint32_t cap;            /* slots allocated (0: none yet) */
    uint32_t live;           /* non-NULL slots */
    uint32_t heap_index;     /* its slot in the heap (while in it) */
    uint32_t next_free;      /* while free: the next free group + 1; 0: last */
} pl__timer_group;

typedef struct pl__timer_heap {
    size_t len;            /* armed timers */
    pl__heap_entry *items; /* one slot per fire time */
    uint32_t items_len;
    uint32_t items_cap;
    pl__timer_group *groups; /* in the heap or free; never moves a timer */
    uint32_t groups_cap;
    uint32_t free_group;     /* first free group + 1; 0: none */
    uint32_t *map;           /* group + 1 by hashed fire time; 0: an empty slot */
    uint32_t map_mask;       /* map capacity - 1; 0 before the map is first used */
    bool map_on;             /* the map indexes every group in the heap */
    bool need_room;          /* a group's array is full (it could not grow) */
    uint64_t seq;            /* last arming number handed out */
    struct pl_timer **batch; /* scratch for equal-deadline batches */
    uint32_t batch_cap;
    uint32_t late_max; /* from the options */
    pl_time late_quantum_ns;
} pl__timer_heap;

/* pl_timer.state (timer.c, sleep.c): a timer in group g has state
 * PL__TIMER_IN_GROUP + g; an unpolled pl_sleep_for's, PL__TIMER_DURATION. */
enum { PL__TIMER_IDLE = 0, PL__TIMER_FIRED = 1, PL__TIMER_IN_GROUP = PL__TIMER_DURATION + 1 };

static inline bool pl__timer_armed(const pl_timer *t) { return t->state >= PL__TIMER_IN_GROUP; }

/* a + b (b >= 0), short of PL_TIME_NEVER. */
static inline pl_time pl__time_add(pl_time a, pl_time b)
{
    return a > PL_TIME_NEVER - b ? PL_TIME_NEVER - 1 : a + b;
}

pl__timer_heap *pl__executor_timers(pl_executor *ex);
/* The executor's now on its one timeline, whatever clock map is set
 * (pl_now gives the polled code's clock). */
pl_time pl__executor_now(const pl_executor *ex);
/* The executor time at which the current code's clock first reads
 * local_ns (itself without a clock map): what a timer armed for local_ns
 * waits for. */
pl_time pl__executor_deadline_of(const pl_executor *ex, pl_time local_ns);

/* The task a waker wakes, or NULL for a waker that is not one of this
 * executor's task wakers (a user's own waker, an empty slot). */
pl_task *pl__executor_waker_task(const pl_executor *ex, const pl_waker *w);

/* Fires every timer due at `now_ns`; returns how many fired. */
size_t pl__timers_fire_due(pl_executor *ex, pl__timer_heap *h, pl_time now_ns);
pl_time pl__timers_next(const pl__timer_heap *h);
void pl__timers_finish(pl_executor *ex, pl__timer_heap *h);
/* Disarms every armed timer whose waker wakes t (pl__executor_forget_task). */
void pl__timers_disarm_task(pl_executor *ex, pl_task *t);

#endif
