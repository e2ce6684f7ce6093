/* core/src/timer.c: the timers, grouped by firing time (see internal.h),
 * and what the simulator reads of them; sleep.c has the futures on them.
 *
 * The sequence number makes the order total, so production fires equal
 * deadlines in arming order and the simulator has a well-defined default
 * (choice 0) when it reorders them.
 */
#include <string.h>

#include "executor_internal.h"
#include "pollen/timer.h"
#include "recorder.h"

enum {
    TIMER_IDLE = PL__TIMER_IDLE,
    TIMER_FIRED = PL__TIMER_FIRED,
    TIMER_IN_GROUP = PL__TIMER_IN_GROUP
};

enum { HEAP_ARITY = 8 }; /* children per heap node */

/* For the paths a few timers never take (sifting, the map): out of line,
 * their callers save no registers for them. */
#if defined(__GNUC__)
#define TIMER_NOINLINE __attribute__((noinline))
#else
#define TIMER_NOINLINE
#endif
enum { MAP_MIN = 16 }; /* groups from which the map finds them, not a scan */

/* A group's first array, and the largest one a freed group keeps: a
 * thousand timers of one millisecond must not pin their array forever. */
enum { GROUP_MIN_CAP = 2, GROUP_KEEP_CAP = 64 };

/* How far ahead a batch fetches the timers it fires, and their tasks. */
enum { AHEAD_TIMER = 8, AHEAD_TASK = 4 };

#define NO_GROUP UINT32_MAX

static inline bool timer_armed(const pl_timer *t) { return pl__timer_armed(t); }

/* ---- The heap of groups --------------------------------------------- */

static inline void heap_place(pl__timer_heap *h, uint32_t i, pl__heap_entry e)
{
    h->items[i] = e;
    h->groups[e.group].heap_index = i;
}

/* Fire times in the heap are distinct (one group each): no tie-break. */
static void sift_up(pl__timer_heap *h, uint32_t i)
{
    pl__heap_entry e = h->items[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / HEAP_ARITY;
        if (e.fire_ns >= h->items[parent].fire_ns) {
            break;
        }
        heap_place(h, i, h->items[parent]);
        i = parent;
    }
    heap_place(h, i, e);
}

static void sift_down(pl__timer_heap *h, uint32_t i)
{
    pl__heap_entry e = h->items[i];
    for (;;) {
        uint32_t first = HEAP_ARITY * i + 1;
        if (first >= h->items_len) {
            break;
        }
        /* Eight children per node: a third of a binary heap's depth; the
         * children's keys share two adjacent cache lines. */
        uint32_t end = first + HEAP_ARITY < h->items_len ? first + HEAP_ARITY : h->items_len;
        uint32_t child = first;
        for (uint32_t c = first + 1; c < end; c++) {
            if (h->items[c].fire_ns < h->items[child].fire_ns) {
                child = c;
            }
        }
        if (h->items[child].fire_ns >= e.fire_ns) {
            break;
        }
        heap_place(h, i, h->items[child]);
        i = child;
    }
    heap_place(h, i, e);
}

/* Out of line: the common removal (the only group, or the last slot)
 * moves nothing, and its callers stay small. */
TIMER_NOINLINE static void heap_refill(pl__timer_heap *h, uint32_t i, pl__heap_entry last)
{
    heap_place(h, i, last);
    sift_down(h, i);
    if (i > 0) {
        sift_up(h, h->groups[last.group].heap_index);
    }
}

static inline void heap_remove(pl__timer_heap *h, uint32_t i)
{
    PL_ASSERT(i < h->items_len);
    pl__heap_entry last = h->items[--h->items_len];
    if (i < h->items_len) {
        heap_refill(h, i, last);
    }
}

/* ---- The map from fire time to group ---------------------------------- */

static inline uint32_t map_slot(const pl__timer_heap *h, pl_time fire_ns)
{
    /* Fibonacci hashing: the high bits of the product spread the
     * millisecond-spaced times a simulator uses over the whole table. */
    uint64_t x = (uint64_t)fire_ns * UINT64_C(0x9e3779b97f4a7c15);
    return (uint32_t)(x >> 32) & h->map_mask;
}

static inline pl_time map_key(const pl__timer_heap *h, uint32_t i)
{
    return h->groups[h->map[i] - 1].fire_ns;
}

/* The map slot of fire_ns's group, or the empty slot it would take. */
TIMER_NOINLINE static uint32_t map_find(const pl__timer_heap *h, pl_time fire_ns)
{
    uint32_t i = map_slot(h, fire_ns);
    while (h->map[i] != 0 && map_key(h, i) != fire_ns) {
        i = (i + 1) & h->map_mask;
    }
    return i;
}

/* Linear probing's deletion: later entries of the probe run move back
 * into the hole, so lookups never need a tombstone. */
TIMER_NOINLINE static void map_delete(pl__timer_heap *h, uint32_t i)
{
    uint32_t j = i;
    for (;;) {
        h->map[i] = 0;
        for (;;) {
            j = (j + 1) & h->map_mask;
            if (h->map[j] == 0) {
                return;
            }
            uint32_t home = map_slot(h, map_key(h, j));
            /* Stays unless its home is cyclically outside (i, j]. */
            bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
            if (!stays) {
                break;
            }
        }
        h->map[i] = h->map[j];
        i = j;
    }
}

/* Indexes every group in the heap afresh. */
TIMER_NOINLINE static void map_fill(pl__timer_heap *h)
{
    memset(h->map, 0, ((size_t)h->map_mask + 1) * sizeof *h->map);
    for (uint32_t k = 0; k < h->items_len; k++) {
        h->map[map_find(h, h->items[k].fire_ns)] = h->items[k].group + 1;
    }
}

static int map_grow(pl_executor *ex, pl__timer_heap *h, uint32_t cap)
{
    uint32_t *map = pl_alloc(ex, (size_t)cap * sizeof *map);
    if (map == NULL) {
        return PL_ENOMEM;
    }
    if (h->map != NULL) {
        pl_free(ex, h->map, ((size_t)h->map_mask + 1) * sizeof *h->map);
    }
    h->map = map;
    h->map_mask = cap - 1;
    if (h->map_on) {
        map_fill(h);
    }
    return 0;
}

/* ---- Groups ------------------------------------------------------------ */

/* The group of the timers firing at fire_ns, or NO_GROUP. */
static inline uint32_t group_find(const pl__timer_heap *h, pl_time fire_ns)
{
    if (h->map_on) {
        uint32_t g = h->map[map_find(h, fire_ns)];
        return g != 0 ? g - 1 : NO_GROUP;
    }
    for (uint32_t k = 0; k < h->items_len; k++) {
        if (h->items[k].fire_ns == fire_ns) {
            return h->items[k].group;
        }
    }
    return NO_GROUP;
}

static int slots_resize(pl_executor *ex, pl__timer_group *g, uint32_t cap)
{
    pl_timer **slots = pl_alloc(ex, (size_t)cap * sizeof *slots);
    if (slots == NULL) {
        return PL_ENOMEM;
    }
    if (g->len > 0) {
        memcpy(slots, g->slots, (size_t)g->len * sizeof *slots);
    }
    pl_free(ex, g->slots, (size_t)g->cap * sizeof *slots);
    g->slots = slots;
    g->cap = cap;
    return 0;
}

/* Room for one more timer in a full group: the slots of timers that left
 * are dropped when they are at least half of them (each live timer learns
 * its new place), else the array doubles. Compaction runs after at least
 * cap / 2 departures, so it costs O(1) per departure. */
TIMER_NOINLINE static int group_room(pl_executor *ex, pl__timer_group *g)
{
    if (g->live <= g->cap / 2) {
        uint32_t n = 0;
        for (uint32_t i = g->head; i < g->len; i++) {
            if (g->slots[i] != NULL) {
                g->slots[n] = g->slots[i];
                g->slots[n]->slot = n;
                n++;
            }
        }
        PL_ASSERT(n == g->live);
        g->head = 0;
        g->len = n;
        return 0;
    }
    if (g->cap > UINT32_MAX / 2) {
        return PL_ENOMEM;
    }
    return slots_resize(ex, g, g->cap * 2);
}

/* After an allocation failure left a group full: room in every group. */
TIMER_NOINLINE static int room_everywhere(pl_executor *ex, pl__timer_heap *h)
{
    for (uint32_t k = 0; k < h->items_len; k++) {
        pl__timer_group *g = &h->groups[h->items[k].group];
        if (g->len == g->cap && group_room(ex, g) != 0) {
            return PL_ENOMEM;
        }
    }
    h->need_room = false;
    return 0;
}

/* A free group with an array, first on the free list. */
TIMER_NOINLINE static int reserve_free_group(pl_executor *ex, pl__timer_heap *h)
{
    if (h->free_group == 0) {
        if (h->groups_cap > UINT32_MAX / 4) {
            return PL_ENOMEM;
        }
        uint32_t cap = h->groups_cap ? h->groups_cap * 2 : 16;
        pl__timer_group *groups = pl_alloc(ex, (size_t)cap * sizeof *groups);
        if (groups == NULL) {
            return PL_ENOMEM;
        }
        if (h->groups_cap > 0) {
            memcpy(groups, h->groups, (size_t)h->groups_cap * sizeof *groups);
        }
        memset(groups + h->groups_cap, 0, (size_t)(cap - h->groups_cap) * sizeof *groups);
        pl_free(ex, h->groups, (size_t)h->groups_cap * sizeof *groups);
        for (uint32_t g = cap; g > h->groups_cap; g--) {
            groups[g - 1].next_free = h->free_group;
            h->free_group = g;
        }
        h->groups = groups;
        h->groups_cap = cap;
    }
    pl__timer_group *g = &h->groups[h->free_group - 1];
    return g->cap > 0 ? 0 : slots_resize(ex, g, GROUP_MIN_CAP);
}

/* Room for one more timer, whatever its fire time: a heap slot, a free
 * group with an array, from MAP_MIN groups a map kept at most half full,
 * and room in every group's array. Allocates only when something is full. */
static int reserve_arm(pl_executor *ex, pl__timer_heap *h)
{
    if (h->need_room && room_everywhere(ex, h) != 0) {
        return PL_ENOMEM;
    }
    if (h->free_group == 0 || h->groups[h->free_group - 1].cap == 0) {
        if (reserve_free_group(ex, h) != 0) {
            return PL_ENOMEM;
        }
    }
    if (h->items_len == h->items_cap) {
        if (h->items_cap > UINT32_MAX / 2) {
            return PL_ENOMEM;
        }
        uint32_t cap = h->items_cap ? h->items_cap * 2 : 64;
        pl__heap_entry *items = pl_alloc(ex, (size_t)cap * sizeof *items);
        if (items == NULL) {
            return PL_ENOMEM;
        }
        if (h->items_len > 0) {
            memcpy(items, h->items, (size_t)h->items_len * sizeof *items);
        }
        pl_free(ex, h->items, (size_t)h->items_cap * sizeof *items);
        h->items = items;
        h->items_cap = cap;
    }
    if (h->items_len + 1 < MAP_MIN) {
        return 0; /* found by a scan */
    }
    uint32_t map_cap = h->map_mask + 1;
    if (h->map == NULL || (h->items_len + 1) * 2 > map_cap) {
        if (h->map != NULL && map_cap > UINT32_MAX / 2) {
            return PL_ENOMEM;
        }
        return map_grow(ex, h, h->map == NULL ? 4 * MAP_MIN : map_cap * 2);
    }
    return 0;
}

/* Takes the first free group (reserve_arm gave it an array) for fire_ns
 * into the heap and the map. */
TIMER_NOINLINE static uint32_t group_open(pl__timer_heap *h, pl_time fire_ns)
{
    PL_ASSERT(h->free_group != 0 && h->items_len < h->items_cap);
    uint32_t gi = h->free_group - 1;
    pl__timer_group *g = &h->groups[gi];
    PL_ASSERT(g->cap > 0 && g->len == 0 && g->live == 0);
    h->free_group = g->next_free;
    g->fire_ns = fire_ns;
    g->head = 0;
    h->items[h->items_len] = (pl__heap_entry){fire_ns, gi};
    g->heap_index = h->items_len++;
    if (g->heap_index > 0) {
        sift_up(h, g->heap_index);
    }
    if (h->map_on) {
        h->map[map_find(h, fire_ns)] = gi + 1;
    } else if (h->items_len >= MAP_MIN) {
        h->map_on = true; /* reserve_arm sized it */
        map_fill(h);
    }
    return gi;
}

/* An empty group leaves the heap and the map for the free list. It goes
 * behind the list's first, which reserve_arm may have readied for the
 * arming that is emptying this group (a re-arm of its last timer).
 * Inline: with a few timers at distinct times, every firing closes one. */
static inline void group_close(pl_executor *ex, pl__timer_heap *h, uint32_t gi)
{
    pl__timer_group *g = &h->groups[gi];
    PL_ASSERT(g->live == 0);
    if (h->map_on) {
        map_delete(h, map_find(h, g->fire_ns));
    }
    heap_remove(h, g->heap_index);
    h->map_on = h->map_on && h->items_len > 0;
    g->len = 0;
    g->head = 0;
    if (g->cap > GROUP_KEEP_CAP) {
        pl_free(ex, g->slots, (size_t)g->cap * sizeof *g->slots);
        g->slots = NULL;
        g->cap = 0;
    }
    if (h->free_group == 0) {
        g->next_free = 0;
        h->free_group = gi + 1;
    } else {
        pl__timer_group *first = &h->groups[h->free_group - 1];
        g->next_free = first->next_free;
        first->next_free = gi + 1;
    }
}

/* Appends t to the group of fire_ns, opening one if there is none
 * (reserve_arm made room for either). */
static void timer_link(pl_executor *ex, pl__timer_heap *h, pl_timer *t, pl_time fire_ns)
{
    uint32_t gi = group_find(h, fire_ns);
    if (gi == NO_GROUP) {
        gi = group_open(h, fire_ns);
    }
    pl__timer_group *g = &h->groups[gi];
    PL_ASSERT(g->len < g->cap);
    h->len++;
    t->state = TIMER_IN_GROUP + gi;
    t->slot = g->len;
    g->slots[g->len++] = t;
    g->live++;
    /* Room for the next arming now, so that it never needs memory after
     * its lateness decision; without memory, the next arming asks again. */
    if (g->len == g->cap && group_room(ex, g) != 0) {
        h->need_room = true;
    }
}

/* Takes an armed timer out of its group: O(1), its slot goes NULL. The
 * caller sets its state. */
static inline void timer_unlink(pl_executor *ex, pl__timer_heap *h, pl_timer *t)
{
    uint32_t gi = t->state - TIMER_IN_GROUP;
    PL_ASSERT(gi < h->groups_cap);
    pl__timer_group *g = &h->groups[gi];
    PL_ASSERT(t->slot < g->len && g->slots[t->slot] == t);
    h->len--;
    g->slots[t->slot] = NULL;
    if (--g->live == 0) {
        group_close(ex, h, gi);
        return;
    }
    while (g->slots[g->head] == NULL) {
        g->head++;
    }
}

/* The armed timer that fires first ((fire_ns, seq) order), or NULL. */
static inline pl_timer *first_timer(const pl__timer_heap *h)
{
    if (h->items_len == 0) {
        return NULL;
    }
    const pl__timer_group *g = &h->groups[h->items[0].group];
    return g->slots[g->head];
}

/* Removes and returns the first timer (h->len > 0). */
static pl_timer *pop_first(pl_executor *ex, pl__timer_heap *h)
{
    pl_timer *t = first_timer(h);
    timer_unlink(ex, h, t);
    return t;
}

/* Takes the first n timers of the first group into out, in order, without
 * reading them; the group closes when that is all of them. */
static void take_first(pl_executor *ex, pl__timer_heap *h, uint32_t n, pl_timer **out)
{
    uint32_t gi = h->items[0].group;
    pl__timer_group *g = &h->groups[gi];
    PL_ASSERT(n > 0 && n <= g->live);
    uint32_t i = g->head;
    for (uint32_t k = 0; k < n; i++) {
        if (g->slots[i] != NULL) {
            out[k++] = g->slots[i];
            g->slots[i] = NULL;
        }
    }
    h->len -= n;
    g->live -= n;
    if (g->live == 0) {
        group_close(ex, h, gi);
        return;
    }
    g->head = i;
    while (g->slots[g->head] == NULL) {
        g->head++;
    }
}

pl_time pl__timers_next(const pl__timer_heap *h)
{
    return h->items_len > 0 ? h->items[0].fire_ns : PL_TIME_NEVER;
}

void pl__timers_finish(pl_executor *ex, pl__timer_heap *h)
{
    for (uint32_t g = 0; g < h->groups_cap; g++) {
        pl_free(ex, h->groups[g].slots, (size_t)h->groups[g].cap * sizeof *h->groups[g].slots);
    }
    pl_free(ex, h->groups, (size_t)h->groups_cap * sizeof *h->groups);
    pl_free(ex, h->items, (size_t)h->items_cap * sizeof *h->items);
    if (h->map != NULL) {
        pl_free(ex, h->map, ((size_t)h->map_mask + 1) * sizeof *h->map);
    }
    pl_free(ex, h->batch, (size_t)h->batch_cap * sizeof *h->batch);
    memset(h, 0, sizeof *h);
}

/* ---- Arming and firing ------------------------------------------------ */

int pl_timer_arm(pl_executor *ex, pl_timer *t, pl_time deadline_ns, const pl_waker *w)
{
    pl__timer_heap *h = pl__executor_timers(ex);
    /* Room first, before anything changes: the fire time (and so which
     * group takes the timer) is known only after the lateness decision,
     * which must not be drawn twice. */
    if (reserve_arm(ex, h) != 0) {
        return PL_ENOMEM;
    }
    if (timer_armed(t)) {
        timer_unlink(ex, h, t);
        t->state = TIMER_IDLE;
    }
    PL_ASSERT(t->ex == NULL || t->ex == ex);
    t->seq = ++h->seq;
    /* The arming code's clock may not be the executor's (a clock map):
     * the heap holds executor times, so the deadline is mapped first and
     * everything below, the observer included, sees executor time. */
    deadline_ns = pl__executor_deadline_of(ex, deadline_ns);
    pl_time late = 0;
    if (h->late_max > 0) {
        uint32_t steps = pl__executor_decide(ex, PL_DECIDE_TIMER_LATE, h->late_max + 1, t->seq);
        late = (pl_time)steps * h->late_quantum_ns;
    }
    /* A deadline already past fires at the next tick, never "in the past":
     * a fire time below now would reorder it before timers armed earlier
     * for now, and the next-timer deadline would read as overdue. */
    pl_time now_ns = pl__executor_now(ex);
    pl_time fire_ns = pl__time_add(deadline_ns < now_ns ? now_ns : deadline_ns, late);
    t->ex = ex;
    if (w != &t->waker) {
        pl_waker_slot_set(&t->waker, w);
    }
    timer_link(ex, h, t, fire_ns);
    void *ud;
    const pl_observer *obs = pl__executor_observer(ex, &ud);
    if (obs != NULL && obs->timer_arm != NULL) {
        obs->timer_arm(ud, t->seq, deadline_ns, fire_ns, pl__executor_waker_task(ex, &t->waker));
    }
    return 0;
}

void pl_timer_set_waker(pl_timer *t, const pl_waker *w) { pl_waker_slot_set(&t->waker, w); }

void pl_timer_disarm(pl_timer *t)
{
    if (timer_armed(t)) {
        timer_unlink(t->ex, pl__executor_timers(t->ex), t);
    }
    t->state = TIMER_IDLE;
    pl_waker_slot_clear(&t->waker);
}

bool pl_timer_is_armed(const pl_timer *t) { return timer_armed(t); }
bool pl_timer_has_fired(const pl_timer *t) { return t->state == TIMER_FIRED; }

/* due_ns: the time the timer's group was due (the recorder's lateness). */
static void fire(pl_executor *ex, pl_timer *t, pl_time now_ns, pl_time due_ns)
{
    t->state = TIMER_FIRED;
    void *ud;
    const pl_observer *obs = pl__executor_observer(ex, &ud);
    if (obs != NULL && obs->timer_fire != NULL) {
        obs->timer_fire(ud, t->seq, now_ns);
    }
    if (ex->rec != NULL) {
        pl_task *wakes = pl__executor_waker_task(ex, &t->waker);
        pl__rec2(ex, PL__REC_TIMER_FIRE, wakes != NULL ? wakes->id : 0, t->seq,
                 (uint64_t)(now_ns - due_ns));
    }
    pl_waker_slot_wake(&t->waker);
}

static int batch_reserve(pl_executor *ex, pl__timer_heap *h, uint32_t n)
{
    if (n <= h->batch_cap) {
        return 0;
    }
    uint32_t cap = h->batch_cap ? h->batch_cap : 16;
    while (cap < n) {
        cap *= 2;
    }
    pl_timer **batch = pl_alloc(ex, (size_t)cap * sizeof *batch);
    if (batch == NULL) {
        return PL_ENOMEM;
    }
    pl_free(ex, h->batch, (size_t)h->batch_cap * sizeof *batch);
    h->batch = batch;
    h->batch_cap = cap;
    return 0;
}

/* Fetches what firing the timers ahead of the next pick reads: the timer
 * AHEAD_TIMER places on, and the task a timer AHEAD_TASK places on wakes
 * (its timer was fetched earlier). Choice 0 is the common pick. */
static inline void fetch_ahead(pl_timer *const *rest, uint32_t left)
{
    if (left > AHEAD_TIMER) {
        PL_PREFETCH(&rest[AHEAD_TIMER]->seq);
        PL_PREFETCH(&rest[AHEAD_TIMER]->state);
    }
    if (left > AHEAD_TASK) {
        PL_PREFETCH(rest[AHEAD_TASK]->waker.data);
    }
}

/* Under a deciding system, timers that share the earliest firing time
 * leave the heap together and fire in the order the system picks. When
 * the batch cannot grow, the timers the buffer holds form the batch and
 * the rest wait for the caller's next round; always at least one fires. */
static size_t fire_tie_batch(pl_executor *ex, pl__timer_heap *h, pl_time now_ns)
{
    uint32_t n = h->groups[h->items[0].group].live;
    if (batch_reserve(ex, h, n) != 0) {
        n = n < h->batch_cap ? n : h->batch_cap;
    }
    if (n == 0) {
        /* No memory for a batch: fire the root alone, in production
         * order. The caller loops while timers are due, so a batch that
         * cannot grow must still fire one timer or the loop would spin. */
        fire(ex, pop_first(ex, h), now_ns, now_ns);
        return 1;
    }
    pl_timer **b = h->batch;
    take_first(ex, h, n, b);
    for (uint32_t k = 0; k < n && k < AHEAD_TIMER; k++) {
        PL_PREFETCH(&b[k]->seq);
        PL_PREFETCH(&b[k]->state);
    }
    /* The unfired rest stays in order in batch[first, first + left): the
     * pick is closed from whichever side is shorter, so choice 0 (the
     * common case) costs nothing and a batch never goes quadratic. */
    uint32_t first = 0;
    for (uint32_t left = n; left > 0; left--) {
        fetch_ahead(&b[first], left);
        uint32_t k = pl__executor_decide(ex, PL_DECIDE_TIMER_ORDER, left, b[first]->seq);
        pl_timer *t = b[first + k];
        if (k < left - 1 - k) {
            memmove(&b[first + 1], &b[first], (size_t)k * sizeof *b);
            first++;
        } else {
            memmove(&b[first + k], &b[first + k + 1], (size_t)(left - k - 1) * sizeof *b);
        }
        fire(ex, t, now_ns, now_ns);
    }
    return n;
}

size_t pl__timers_fire_due(pl_executor *ex, pl__timer_heap *h, pl_time now_ns)
{
    /* Timers armed while firing (by a waker that re-arms) wait for the
     * next tick, so a zero-delay re-arm cannot spin this loop. */
    uint64_t last_seq = h->seq;
    size_t fired = 0;
    bool deciding = pl__executor_system(ex)->vtable->decide != NULL;
    while (h->items_len > 0 && h->items[0].fire_ns <= now_ns && first_timer(h)->seq <= last_seq) {
        if (deciding) {
            fired += fire_tie_batch(ex, h, now_ns);
            continue;
        }
        pl_time due_ns = h->items[0].fire_ns;
        fire(ex, pop_first(ex, h), now_ns, due_ns);
        fired++;
    }
    return fired;
}

/* ---- Timers seen from the simulator ---------------------------------- */

static pl_task *timer_task(const pl_executor *ex, const pl_timer *tm)
{
    return pl__executor_waker_task(ex, &tm->waker);
}

pl_task *pl__executor_next_timer_task(const pl_executor *ex, uint64_t *seq)
{
    const pl_timer *t = first_timer(&ex->timers);
    if (t == NULL) {
        return NULL;
    }
    *seq = t->seq;
    return timer_task(ex, t);
}

/* The armed timer at place k of heap slot i's group, or NULL for a slot
 * a timer left (and past the group's end). */
static pl_timer *group_timer(const pl__timer_heap *h, uint32_t i, uint32_t k)
{
    const pl__timer_group *g = &h->groups[h->items[i].group];
    return g->head + k < g->len ? g->slots[g->head + k] : NULL;
}

static uint32_t group_span(const pl__timer_heap *h, uint32_t i)
{
    const pl__timer_group *g = &h->groups[h->items[i].group];
    return g->len - g->head;
}

size_t pl__executor_timer_task_ids(const pl_executor *ex, uint32_t *ids, size_t max)
{
    const pl__timer_heap *h = &ex->timers;
    size_t n = 0;
    for (uint32_t i = 0; i < h->items_len && n < max; i++) {
        for (uint32_t k = 0; k < group_span(h, i) && n < max; k++) {
            const pl_timer *tm = group_timer(h, i, k);
            if (tm != NULL) {
                const pl_task *t = timer_task(ex, tm);
                ids[n++] = t != NULL ? t->id : 0;
            }
        }
    }
    return n;
}

bool pl__executor_timers_wake_foreground(const pl_executor *ex)
{
    const pl__timer_heap *h = &ex->timers;
    for (uint32_t i = 0; i < h->items_len; i++) {
        for (uint32_t k = 0; k < group_span(h, i); k++) {
            const pl_timer *tm = group_timer(h, i, k);
            const pl_task *t = tm != NULL ? timer_task(ex, tm) : NULL;
            if (tm != NULL &&
                (t == NULL || (t->state < TASK_DONE && !(t->flags & TASK_BACKGROUND)))) {
                return true;
            }
        }
    }
    return false;
}

void pl__timers_disarm_task(pl_executor *ex, pl_task *t)
{
    pl__timer_heap *h = &ex->timers;
    bool found = true;
    while (found) {
        /* A disarm may close a group and reorder the heap: rescan (a kill
         * is rare). */
        found = false;
        for (uint32_t i = 0; i < h->items_len && !found; i++) {
            for (uint32_t k = 0; k < group_span(h, i) && !found; k++) {
                pl_timer *tm = group_timer(h, i, k);
                if (tm != NULL && pl__executor_waker_task(ex, &tm->waker) == t) {
                    pl_timer_disarm(tm);
                    found = true;
                }
            }
        }
    }
}
