/* core/src/timer.c: the timers (grouped by firing time, see
 * internal.h), sleep, timeout and interval.
 *
 * The sequence number makes the order total, so production fires equal
 * deadlines in arming order and the simulator has a well-defined default
 * (choice 0) when it reorders them.
 */
#include <string.h>

#include "executor_internal.h"
#include "pollen/timer.h"

enum { TIMER_IDLE = 0, TIMER_ARMED = 1, TIMER_FIRED = 2 };

enum { HEAP_ARITY = 8 }; /* children per heap node */

/* For the paths a few timers never take (sifting, the map): out of line,
 * their callers save no registers for them. */
#if defined(__GNUC__)
#define TIMER_NOINLINE __attribute__((noinline))
#else
#define TIMER_NOINLINE
#endif
enum { MAP_MIN = 16 }; /* groups from which the map finds them, not a scan */

/* ---- The heap of groups --------------------------------------------- */

#define NOT_LEADER UINT32_MAX

static inline void heap_place(pl__timer_heap *h, uint32_t i, pl__heap_entry e)
{
    h->items[i] = e;
    e.t->heap_index = i;
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
        /* Eight children per node: a third of a binary heap's depth, so a
         * third of the heap_index stores into (cold) timers per removal;
         * the children's keys share two adjacent cache lines. */
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
        sift_up(h, last.t->heap_index);
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

/* ---- The map from fire time to leader --------------------------------- */

static inline uint32_t map_slot(const pl__timer_heap *h, pl_time fire_ns)
{
    /* Fibonacci hashing: the high bits of the product spread the
     * millisecond-spaced times a simulator uses over the whole table. */
    uint64_t x = (uint64_t)fire_ns * UINT64_C(0x9e3779b97f4a7c15);
    return (uint32_t)(x >> 32) & h->map_mask;
}

/* The slot of fire_ns's leader, or the empty slot it would take. */
static uint32_t map_find(const pl__timer_heap *h, pl_time fire_ns)
{
    uint32_t i = map_slot(h, fire_ns);
    while (h->map[i] != NULL && h->map[i]->fire_ns != fire_ns) {
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
        h->map[i] = NULL;
        for (;;) {
            j = (j + 1) & h->map_mask;
            if (h->map[j] == NULL) {
                return;
            }
            uint32_t home = map_slot(h, h->map[j]->fire_ns);
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
        h->map[map_find(h, h->items[k].fire_ns)] = h->items[k].t;
    }
}

static int map_grow(pl_executor *ex, pl__timer_heap *h, uint32_t cap)
{
    pl_timer **map = pl_alloc(ex, (size_t)cap * sizeof *map);
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

/* The map's entry for fire_ns (the map on). */
TIMER_NOINLINE static pl_timer **map_entry(const pl__timer_heap *h, pl_time fire_ns)
{
    return &h->map[map_find(h, fire_ns)];
}

/* The leader of the timers firing at fire_ns, or NULL. */
static inline pl_timer *leader_of(const pl__timer_heap *h, pl_time fire_ns)
{
    if (h->map_on) {
        return *map_entry(h, fire_ns);
    }
    for (uint32_t k = 0; k < h->items_len; k++) {
        if (h->items[k].fire_ns == fire_ns) {
            return h->items[k].t;
        }
    }
    return NULL;
}

/* Room for one more group: a heap slot and, from MAP_MIN groups, a map
 * kept at most half full. Allocates only when a table is full. */
static int reserve_group(pl_executor *ex, pl__timer_heap *h)
{
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

/* Appends t to the timers firing at t->fire_ns, or makes it the leader
 * of a new group (reserve_group made room). */
TIMER_NOINLINE static void timer_link_slow(pl__timer_heap *h, pl_timer *t)
{
    h->len++;
    t->next = NULL;
    pl_timer *lead = leader_of(h, t->fire_ns);
    if (lead != NULL) {
        t->heap_index = NOT_LEADER;
        t->prev = lead->prev;
        lead->prev->next = t;
        lead->prev = t;
        return;
    }
    PL_ASSERT(h->items_len < h->items_cap);
    t->prev = t;
    h->items[h->items_len] = (pl__heap_entry){t->fire_ns, t};
    t->heap_index = h->items_len++;
    sift_up(h, t->heap_index);
    if (h->map_on) {
        *map_entry(h, t->fire_ns) = t;
    } else if (h->items_len >= MAP_MIN) {
        h->map_on = true; /* reserve_group sized it */
        map_fill(h);
    }
}

/* Unlinks an armed timer. A leader's successor takes its heap slot (and
 * map entry) in place; a group left empty leaves the heap and the map. */
TIMER_NOINLINE static void timer_unlink_slow(pl__timer_heap *h, pl_timer *t)
{
    h->len--;
    if (t->heap_index == NOT_LEADER) {
        t->prev->next = t->next;
        if (t->next != NULL) {
            t->next->prev = t->prev;
        } else {
            leader_of(h, t->fire_ns)->prev = t->prev; /* the list's last left */
        }
        return;
    }
    PL_ASSERT(t->heap_index < h->items_len && h->items[t->heap_index].t == t);
    pl_timer *next = t->next;
    if (next != NULL) {
        next->prev = t->prev; /* the list's last (itself when alone) */
        next->heap_index = t->heap_index;
        h->items[t->heap_index].t = next;
        if (h->map_on) {
            *map_entry(h, t->fire_ns) = next;
        }
        return;
    }
    if (h->map_on) {
        map_delete(h, (uint32_t)(map_entry(h, t->fire_ns) - h->map));
    }
    heap_remove(h, t->heap_index);
    h->map_on = h->map_on && h->items_len > 0;
}

/* A lone timer (one sleep at a time, the common case of a small program)
 * arms into and leaves an empty heap without the general paths. */
static inline void timer_link(pl__timer_heap *h, pl_timer *t)
{
    if (h->items_len == 0 && h->items_cap > 0) {
        h->len++;
        t->next = NULL;
        t->prev = t;
        t->heap_index = 0;
        h->items[0] = (pl__heap_entry){t->fire_ns, t};
        h->items_len = 1;
        return;
    }
    timer_link_slow(h, t);
}

static inline void timer_unlink(pl__timer_heap *h, pl_timer *t)
{
    if (h->items_len == 1 && t->heap_index == 0 && t->next == NULL) {
        PL_ASSERT(h->items[0].t == t && h->len == 1);
        h->len = 0;
        h->items_len = 0;
        h->map_on = false;
        return;
    }
    timer_unlink_slow(h, t);
}

/* The armed timer that fires first ((fire_ns, seq) order), or NULL. */
static inline pl_timer *first_timer(const pl__timer_heap *h)
{
    return h->items_len > 0 ? h->items[0].t : NULL;
}

/* Removes and returns the first timer (h->len > 0). */
static pl_timer *pop_first(pl__timer_heap *h)
{
    pl_timer *t = first_timer(h);
    timer_unlink(h, t);
    return t;
}

pl_time pl__timers_next(const pl__timer_heap *h)
{
    return h->items_len > 0 ? h->items[0].fire_ns : PL_TIME_NEVER;
}

void pl__timers_finish(pl_executor *ex, pl__timer_heap *h)
{
    pl_free(ex, h->items, (size_t)h->items_cap * sizeof *h->items);
    if (h->map != NULL) {
        pl_free(ex, h->map, ((size_t)h->map_mask + 1) * sizeof *h->map);
    }
    pl_free(ex, h->batch, (size_t)h->batch_cap * sizeof *h->batch);
    memset(h, 0, sizeof *h);
}

/* ---- Arming and firing ------------------------------------------------ */

static pl_time sat_add(pl_time a, pl_time b)
{
    return a > PL_TIME_NEVER - b ? PL_TIME_NEVER - 1 : a + b;
}

int pl_timer_arm(pl_executor *ex, pl_timer *t, pl_time deadline_ns, const pl_waker *w)
{
    pl__timer_heap *h = pl__executor_timers(ex);
    /* Room for a new group first, before anything changes: the fire
     * time (and so whether it needs one) is known only after the
     * lateness decision, which must not be drawn twice. */
    if (reserve_group(ex, h) != 0) {
        return PL_ENOMEM;
    }
    if (t->state == TIMER_ARMED) {
        timer_unlink(h, t);
        t->state = TIMER_IDLE;
    }
    PL_ASSERT(t->ex == NULL || t->ex == ex);
    t->seq = ++h->seq;
    pl_time late = 0;
    if (h->late_max > 0) {
        uint32_t steps = pl__executor_decide(ex, PL_DECIDE_TIMER_LATE, h->late_max + 1, t->seq);
        late = (pl_time)steps * h->late_quantum_ns;
    }
    /* A deadline already past fires at the next tick, never "in the past":
     * a fire time below now would reorder it before timers armed earlier
     * for now, and the next-timer deadline would read as overdue. */
    pl_time now_ns = pl_now(ex);
    t->fire_ns = sat_add(deadline_ns < now_ns ? now_ns : deadline_ns, late);
    t->ex = ex;
    t->state = TIMER_ARMED;
    if (w != &t->waker) {
        pl_waker_slot_set(&t->waker, w);
    }
    timer_link(h, t);
    void *ud;
    const pl_observer *obs = pl__executor_observer(ex, &ud);
    if (obs != NULL && obs->timer_arm != NULL) {
        obs->timer_arm(ud, t->seq, deadline_ns, t->fire_ns,
                       pl__executor_waker_task(ex, &t->waker));
    }
    return 0;
}

void pl_timer_set_waker(pl_timer *t, const pl_waker *w) { pl_waker_slot_set(&t->waker, w); }

void pl_timer_disarm(pl_timer *t)
{
    if (t->state == TIMER_ARMED) {
        timer_unlink(pl__executor_timers(t->ex), t);
    }
    t->state = TIMER_IDLE;
    pl_waker_slot_clear(&t->waker);
}

bool pl_timer_is_armed(const pl_timer *t) { return t->state == TIMER_ARMED; }
bool pl_timer_has_fired(const pl_timer *t) { return t->state == TIMER_FIRED; }

static void fire(pl_executor *ex, pl_timer *t, pl_time now_ns)
{
    t->state = TIMER_FIRED;
    void *ud;
    const pl_observer *obs = pl__executor_observer(ex, &ud);
    if (obs != NULL && obs->timer_fire != NULL) {
        obs->timer_fire(ud, t->seq, now_ns);
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
    if (h->batch_cap > 0) {
        memcpy(batch, h->batch, (size_t)h->batch_cap * sizeof *batch);
    }
    pl_free(ex, h->batch, (size_t)h->batch_cap * sizeof *batch);
    h->batch = batch;
    h->batch_cap = cap;
    return 0;
}

/* Under a deciding system, timers that share the earliest firing time
 * leave the heap together and fire in the order the system picks. When
 * the batch cannot grow, the timers collected so far form the batch and
 * the rest wait for the caller's next round; always at least one fires. */
static size_t fire_tie_batch(pl_executor *ex, pl__timer_heap *h, pl_time now_ns)
{
    pl_time at = h->items[0].fire_ns;
    uint32_t n = 0;
    while (h->items_len > 0 && h->items[0].fire_ns == at) {
        if (batch_reserve(ex, h, n + 1) != 0) {
            break;
        }
        pl_timer *t = pop_first(h);
        /* Firing reads the timer's sequence, state and waker: start
         * fetching them now, while the rest of the batch leaves the heap. */
        PL_PREFETCH(&t->seq);
        PL_PREFETCH(&t->waker);
        h->batch[n++] = t;
    }
    if (n == 0) {
        /* No memory for a batch: fire the root alone, in production
         * order. The caller loops while timers are due, so a batch that
         * cannot grow must still fire one timer or the loop would spin. */
        fire(ex, pop_first(h), now_ns);
        return 1;
    }
    /* The unfired rest stays in order in batch[first, first + left): the
     * pick is closed from whichever side is shorter, so choice 0 (the
     * common case) costs nothing and a batch never goes quadratic. */
    pl_timer **b = h->batch;
    uint32_t first = 0;
    for (uint32_t left = n; left > 0; left--) {
        uint32_t k = pl__executor_decide(ex, PL_DECIDE_TIMER_ORDER, left, b[first]->seq);
        pl_timer *t = b[first + k];
        if (k < left - 1 - k) {
            memmove(&b[first + 1], &b[first], (size_t)k * sizeof *b);
            first++;
        } else {
            memmove(&b[first + k], &b[first + k + 1], (size_t)(left - k - 1) * sizeof *b);
        }
        if (left > 1) {
            /* The next pick is most likely the first left: its task's
             * header, which the wake updates. */
            PL_PREFETCH(b[first]->waker.data);
        }
        fire(ex, t, now_ns);
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
        fire(ex, pop_first(h), now_ns);
        fired++;
    }
    return fired;
}

/* ---- Sleep ------------------------------------------------------------ */

static pl_poll_result sleep_poll(pl_future *f, pl_context *cx)
{
    pl_sleep *s = (pl_sleep *)f;
    pl_time now = pl_now(cx->ex);
    if (s->duration_ns >= 0) {
        s->deadline_ns = sat_add(now, s->duration_ns);
        s->duration_ns = -1;
    }
    if (now >= s->deadline_ns || s->timer.state == TIMER_FIRED) {
        pl_timer_disarm(&s->timer);
        return PL_READY;
    }
    if (s->timer.state != TIMER_ARMED) {
        if (pl_timer_arm(cx->ex, &s->timer, s->deadline_ns, &cx->waker) != 0) {
            /* Out of memory for the heap: poll again soon rather than
             * hang; the next attempt may succeed. */
            pl_waker_wake_by_ref(&cx->waker);
        }
        return PL_PENDING;
    }
    pl_timer_set_waker(&s->timer, &cx->waker);
    return PL_PENDING;
}

static void sleep_drop(pl_future *f) { pl_timer_disarm(&((pl_sleep *)f)->timer); }

const pl_future_vtable pl__sleep_vtable = {"sleep", sleep_poll, sleep_drop};

static pl_poll_result sleep_poll_interval_poll(pl_future *f, pl_context *cx)
{
    pl_poll_result r = sleep_poll(f, cx);
    if (r == PL_PENDING) {
        pl_poll_interval_declare(cx);
    }
    return r;
}

const pl_future_vtable pl__sleep_poll_vtable = {"poll_interval", sleep_poll_interval_poll,
                                                sleep_drop};

void pl_sleep_reset(pl_sleep *s, pl_time deadline_ns)
{
    s->deadline_ns = deadline_ns;
    s->duration_ns = -1;
    if (s->timer.state == TIMER_ARMED) {
        if (pl_timer_arm(s->timer.ex, &s->timer, deadline_ns, &s->timer.waker) != 0) {
            /* Out of memory: armed at the old deadline, it could fire
             * early and complete the sleep. Wake its task instead, whose
             * next poll arms it again (as sleep_poll does). */
            pl_waker_slot_wake(&s->timer.waker);
            pl_timer_disarm(&s->timer);
        }
    } else if (s->timer.state == TIMER_FIRED) {
        s->timer.state = TIMER_IDLE;
    }
}

/* ---- Timeout ---------------------------------------------------------- */

static pl_poll_result timeout_poll(pl_future *f, pl_context *cx)
{
    pl_timeout *t = (pl_timeout *)f;
    if (pl_poll(t->inner, cx) == PL_READY) {
        t->result = 0;
        pl_drop_child(&t->sleep.base);
        return PL_READY;
    }
    if (pl_poll(&t->sleep.base, cx) == PL_READY) {
        t->result = PL_ETIMEDOUT;
        pl_drop_child(t->inner);
        pl_drop_child(&t->sleep.base);
        return PL_READY;
    }
    return PL_PENDING;
}

static void timeout_drop(pl_future *f)
{
    pl_timeout *t = (pl_timeout *)f;
    if (!pl_future_is_done(t->inner)) {
        pl_drop_child(t->inner);
    }
    pl_drop_child(&t->sleep.base);
}

static const pl_future_vtable timeout_vtable = {"timeout", timeout_poll, timeout_drop};

pl_timeout pl_timeout_init(pl_future *inner, pl_time duration_ns)
{
    return (pl_timeout){PL_FUTURE_INIT(&timeout_vtable), inner, pl_sleep_for(duration_ns), 0};
}

/* ---- Interval --------------------------------------------------------- */

pl_interval pl_interval_init(pl_time period_ns)
{
    return (pl_interval){period_ns > 0 ? period_ns : 1, 0, 0};
}

static pl_poll_result interval_tick_poll(pl_future *f, pl_context *cx)
{
    pl_interval_tick *it = (pl_interval_tick *)f;
    pl_interval *iv = it->interval;
    pl_time now = pl_now(cx->ex);
    if (it->sleep.base.vtable == NULL) {
        /* The first tick completes at once, as tokio's does. */
        it->sleep = pl_sleep_until(iv->ticks == 0 ? now : iv->next_ns);
    }
    if (pl_poll(&it->sleep.base, cx) == PL_PENDING) {
        return PL_PENDING;
    }
    pl_drop_child(&it->sleep.base);
    pl_time next = sat_add(it->sleep.deadline_ns, iv->period_ns);
    iv->next_ns = next > now ? next : sat_add(now, iv->period_ns);
    iv->ticks++;
    return PL_READY;
}

static void interval_tick_drop(pl_future *f)
{
    pl_interval_tick *it = (pl_interval_tick *)f;
    if (it->sleep.base.vtable != NULL) {
        pl_drop_child(&it->sleep.base);
    }
}

static const pl_future_vtable interval_tick_vtable = {"interval", interval_tick_poll,
                                                      interval_tick_drop};

pl_interval_tick pl_interval_tick_init(pl_interval *iv)
{
    pl_interval_tick it;
    memset(&it, 0, sizeof it);
    it.base = PL_FUTURE_INIT(&interval_tick_vtable);
    it.interval = iv;
    return it;
}

/* ---- Timers seen from the simulator ---------------------------------- */

static pl_task *timer_task(const pl_executor *ex, const pl_timer *tm)
{
    return pl__executor_waker_task(ex, &tm->waker);
}

pl_task *pl_executor_next_timer_task(const pl_executor *ex, uint64_t *seq)
{
    const pl_timer *t = first_timer(&ex->timers);
    if (t == NULL) {
        return NULL;
    }
    *seq = t->seq;
    return timer_task(ex, t);
}

size_t pl_executor_timer_task_ids(const pl_executor *ex, uint32_t *ids, size_t max)
{
    const pl__timer_heap *h = &ex->timers;
    size_t n = 0;
    for (uint32_t i = 0; i < h->items_len && n < max; i++) {
        for (const pl_timer *tm = h->items[i].t; tm != NULL && n < max; tm = tm->next) {
            const pl_task *t = timer_task(ex, tm);
            ids[n++] = t != NULL ? t->id : 0;
        }
    }
    return n;
}

bool pl_executor_timers_wake_foreground(const pl_executor *ex)
{
    const pl__timer_heap *h = &ex->timers;
    for (uint32_t i = 0; i < h->items_len; i++) {
        for (const pl_timer *tm = h->items[i].t; tm != NULL; tm = tm->next) {
            const pl_task *t = timer_task(ex, tm);
            if (t == NULL || (t->state < TASK_DONE && !(t->flags & TASK_BACKGROUND))) {
                return true;
            }
        }
    }
    return false;
}
