/* core/src/timer.c: the timer heap, sleep, timeout and interval.
 *
 * The heap is an 8-ary array of (fire_ns, seq, timer) slots; each timer
 * keeps its slot index so disarming is O(log n) without a search. The
 * sequence number makes the order total, so production fires equal
 * deadlines in arming order and the simulator has a well-defined default
 * (choice 0) when it reorders them.
 */
#include <string.h>

#include "executor_internal.h"
#include "pollen/timer.h"

enum { TIMER_IDLE = 0, TIMER_ARMED = 1, TIMER_FIRED = 2 };

enum { HEAP_ARITY = 8 }; /* children per heap node */

/* ---- Heap ------------------------------------------------------------- */

static inline bool entry_less(const pl__heap_entry *a, const pl__heap_entry *b)
{
    if (a->fire_ns != b->fire_ns) {
        return a->fire_ns < b->fire_ns;
    }
    return a->seq < b->seq;
}

static inline void heap_place(pl__timer_heap *h, uint32_t i, pl__heap_entry e)
{
    h->items[i] = e;
    e.t->heap_index = i;
}

static void sift_up(pl__timer_heap *h, uint32_t i)
{
    pl__heap_entry e = h->items[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / HEAP_ARITY;
        if (!entry_less(&e, &h->items[parent])) {
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
        if (first >= h->len) {
            break;
        }
        /* Eight children per node: a third of a binary heap's depth, so a
         * third of the heap_index stores into (cold) timers per removal;
         * the children's keys share three adjacent cache lines. */
        uint32_t end = first + HEAP_ARITY < h->len ? first + HEAP_ARITY : h->len;
        uint32_t child = first;
        for (uint32_t c = first + 1; c < end; c++) {
            if (entry_less(&h->items[c], &h->items[child])) {
                child = c;
            }
        }
        if (!entry_less(&h->items[child], &e)) {
            break;
        }
        heap_place(h, i, h->items[child]);
        i = child;
    }
    heap_place(h, i, e);
}

static int heap_reserve(pl_executor *ex, pl__timer_heap *h)
{
    if (h->len < h->cap) {
        return 0;
    }
    uint32_t cap = h->cap ? h->cap * 2 : 64;
    pl__heap_entry *items = pl_alloc(ex, (size_t)cap * sizeof *items);
    if (items == NULL) {
        return PL_ENOMEM;
    }
    if (h->len > 0) {
        memcpy(items, h->items, (size_t)h->len * sizeof *items);
    }
    pl_free(ex, h->items, (size_t)h->cap * sizeof *items);
    h->items = items;
    h->cap = cap;
    return 0;
}

static void heap_remove(pl__timer_heap *h, pl_timer *t)
{
    uint32_t i = t->heap_index;
    PL_ASSERT(i < h->len && h->items[i].t == t);
    pl__heap_entry last = h->items[--h->len];
    if (last.t != t) {
        heap_place(h, i, last);
        sift_down(h, i);
        sift_up(h, last.t->heap_index);
    }
}

/* Removes the root: the last slot sinks from the top, no sift-up needed. */
static pl_timer *heap_pop(pl__timer_heap *h)
{
    pl_timer *t = h->items[0].t;
    pl__heap_entry last = h->items[--h->len];
    if (h->len > 0) {
        h->items[0] = last;
        sift_down(h, 0);
    }
    return t;
}

pl_time pl__timers_next(const pl__timer_heap *h)
{
    return h->len > 0 ? h->items[0].fire_ns : PL_TIME_NEVER;
}

void pl__timers_finish(pl_executor *ex, pl__timer_heap *h)
{
    pl_free(ex, h->items, (size_t)h->cap * sizeof *h->items);
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
    if (t->state == TIMER_ARMED) {
        heap_remove(h, t);
        t->state = TIMER_IDLE;
    } else if (heap_reserve(ex, h) != 0) {
        return PL_ENOMEM;
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
    h->items[h->len] = (pl__heap_entry){t->fire_ns, t->seq, t};
    t->heap_index = h->len++;
    sift_up(h, t->heap_index);
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
        heap_remove(pl__executor_timers(t->ex), t);
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
    while (h->len > 0 && h->items[0].fire_ns == at) {
        if (batch_reserve(ex, h, n + 1) != 0) {
            break;
        }
        pl_timer *t = heap_pop(h);
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
        fire(ex, heap_pop(h), now_ns);
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
    while (h->len > 0 && h->items[0].fire_ns <= now_ns && h->items[0].seq <= last_seq) {
        if (deciding) {
            fired += fire_tie_batch(ex, h, now_ns);
            continue;
        }
        fire(ex, heap_pop(h), now_ns);
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
        pl_timer_arm(s->timer.ex, &s->timer, deadline_ns, &s->timer.waker);
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
    if (ex->timers.len == 0) {
        return NULL;
    }
    *seq = ex->timers.items[0].seq;
    return timer_task(ex, ex->timers.items[0].t);
}

size_t pl_executor_timer_task_ids(const pl_executor *ex, uint32_t *ids, size_t max)
{
    size_t n = 0;
    for (uint32_t i = 0; i < ex->timers.len && n < max; i++) {
        const pl_task *t = timer_task(ex, ex->timers.items[i].t);
        ids[n++] = t != NULL ? t->head.id : 0;
    }
    return n;
}

bool pl_executor_timers_wake_foreground(const pl_executor *ex)
{
    for (uint32_t i = 0; i < ex->timers.len; i++) {
        const pl_task *t = timer_task(ex, ex->timers.items[i].t);
        if (t == NULL || (t->state < TASK_DONE && !(t->flags & TASK_BACKGROUND))) {
            return true;
        }
    }
    return false;
}
