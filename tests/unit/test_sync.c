/* Sync primitives: notify, oneshot, mpsc, mutex, semaphore.
 *
 * Most cases poll futures by hand with a counting waker, so every wake,
 * clone and drop is visible and asserted exactly; the last cases run the
 * same primitives between tasks on the real executor. */
#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>

#include <pollen/error.h>
#include <pollen/executor.h>
#include <pollen/testing.h>
#include <pollen/sync.h>

#include "leakcheck.h"

TestSuite(sync, .fini = pl_test_leak_check);

/* ---- A counting waker --------------------------------------------------
 * One tw stands for one task. Its wakers carry a generation so tests can
 * rotate identity the way the simulator does. `live` counts clones not
 * yet woken or dropped: every test ends with it at zero. */

typedef struct tw {
    int id;
    int wakes;           /* wake + wake_by_ref */
    int clones;
    int drops;
    int live;
    uint32_t last_gen;   /* generation of the last wake */
} tw;

static int wake_log[64];  /* ids, in wake order */
static int wake_log_len;

static void log_wake(tw *t, uint32_t gen)
{
    t->wakes++;
    t->last_gen = gen;
    if (wake_log_len < 64) {
        wake_log[wake_log_len++] = t->id;
    }
}

static void tw_clone(const pl_waker *w, pl_waker *out)
{
    tw *t = w->data;
    t->clones++;
    t->live++;
    *out = *w;
}

static void tw_wake(pl_waker w)
{
    tw *t = w.data;
    t->live--;
    log_wake(t, w.gen);
}

static void tw_wake_by_ref(const pl_waker *w) { log_wake(w->data, w->gen); }

static void tw_drop(pl_waker w)
{
    tw *t = w.data;
    t->drops++;
    t->live--;
}

static const pl_waker_vtable tw_vtable = {tw_clone, tw_wake, tw_wake_by_ref, tw_drop};

static pl_context cx_of(tw *t, uint32_t gen)
{
    return (pl_context){{&tw_vtable, t, gen, 0}, NULL, NULL, NULL};
}

static pl_poll_result poll_as(void *fut, tw *t)
{
    pl_context cx = cx_of(t, 1);
    return pl_poll((pl_future *)fut, &cx);
}

static void assert_log(const int *want, int n)
{
    cr_assert_eq(wake_log_len, n, "wakes: got %d, want %d", wake_log_len, n);
    for (int i = 0; i < n; i++) {
        cr_assert_eq(wake_log[i], want[i], "wake %d: task %d, want %d", i, wake_log[i], want[i]);
    }
}

/* ---- Notify ------------------------------------------------------------- */

Test(sync, notify_one_stores_at_most_one_permit)
{
    pl_notify n;
    pl_notify_init(&n);
    cr_assert(!pl_notify_has_permit(&n));
    pl_notify_one(&n);
    pl_notify_one(&n);
    cr_assert(pl_notify_has_permit(&n));

    tw a = {.id = 1}, b = {.id = 2};
    pl_notified fa = pl_notified_make(&n);
    pl_notified fb = pl_notified_make(&n);
    cr_assert_eq(poll_as(&fa, &a), PL_READY);
    cr_assert(!pl_notify_has_permit(&n));
    cr_assert_eq(a.clones, 0, "a permit completes without storing a waker");
    cr_assert_eq(poll_as(&fb, &b), PL_PENDING, "the second notify stored nothing");
    cr_assert_eq(b.live, 1);
    pl_drop(&fb.base);
    cr_assert_eq(b.live, 0);
    cr_assert(!pl_notify_has_permit(&n));
}

Test(sync, notify_waiters_stores_no_permit)
{
    pl_notify n;
    pl_notify_init(&n);
    pl_notify_waiters(&n);
    cr_assert(!pl_notify_has_permit(&n));
    tw a = {.id = 1};
    pl_notified fa = pl_notified_make(&n);
    cr_assert_eq(poll_as(&fa, &a), PL_PENDING);
    pl_drop(&fa.base);
    cr_assert_eq(a.live, 0);
    cr_assert_eq(a.wakes, 0);
}

Test(sync, notify_waiters_keeps_a_stored_permit)
{
    pl_notify n = PL_NOTIFY_INIT(n);
    pl_notify_one(&n);
    pl_notify_waiters(&n);
    cr_assert(pl_notify_has_permit(&n));
}

Test(sync, notify_one_wakes_exactly_one_in_fifo_order)
{
    pl_notify n;
    pl_notify_init(&n);
    tw t[3] = {{.id = 1}, {.id = 2}, {.id = 3}};
    pl_notified f[3];
    wake_log_len = 0;
    for (int i = 0; i < 3; i++) {
        f[i] = pl_notified_make(&n);
        cr_assert_eq(poll_as(&f[i], &t[i]), PL_PENDING);
    }
    for (int i = 0; i < 3; i++) {
        pl_notify_one(&n);
        cr_assert_eq(t[i].wakes, 1);
        for (int j = i + 1; j < 3; j++) {
            cr_assert_eq(t[j].wakes, 0, "notify_one woke more than one");
            cr_assert_eq(poll_as(&f[j], &t[j]), PL_PENDING, "spurious poll completed");
        }
        cr_assert_eq(poll_as(&f[i], &t[i]), PL_READY);
        cr_assert_eq(t[i].live, 0, "the notifier consumed the stored waker");
    }
    const int want[] = {1, 2, 3};
    assert_log(want, 3);
    cr_assert(!pl_notify_has_permit(&n), "permits are stored only without waiters");
}

Test(sync, notify_waiters_wakes_only_registered_waiters)
{
    pl_notify n;
    pl_notify_init(&n);
    tw t[3] = {{.id = 1}, {.id = 2}, {.id = 3}};
    tw late = {.id = 4};
    pl_notified f[3], unpolled = pl_notified_make(&n);
    wake_log_len = 0;
    for (int i = 0; i < 3; i++) {
        f[i] = pl_notified_make(&n);
        cr_assert_eq(poll_as(&f[i], &t[i]), PL_PENDING);
    }
    pl_notify_waiters(&n);
    const int want[] = {1, 2, 3};
    assert_log(want, 3);
    cr_assert_eq(poll_as(&unpolled, &late), PL_PENDING, "not polled before: not notified");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(poll_as(&f[i], &t[i]), PL_READY);
        cr_assert_eq(t[i].live, 0);
    }
    cr_assert(!pl_notify_has_permit(&n));
    pl_notify_one(&n);
    cr_assert_eq(late.wakes, 1);
    cr_assert_eq(poll_as(&unpolled, &late), PL_READY);
}

/* An unlinked future's link points back at its notify's list: 56 bytes
 * with no notify pointer of its own, and chosen futures point back again
 * (the pass-on below needs it). */
Test(sync, notified_is_56_bytes_its_unlinked_link_names_the_notify)
{
    pl_notify n;
    pl_notify_init(&n);
    tw a = {.id = 1}, b = {.id = 2};
    cr_assert_eq(sizeof(pl_notified), 56);
    pl_notified f = pl_notified_make(&n), g = pl_notified_make(&n);
    cr_assert(f.node.next == NULL && f.node.prev == &n.waiters, "unpolled: names its notify");
    cr_assert_eq(poll_as(&f, &a), PL_PENDING);
    cr_assert_eq(poll_as(&g, &b), PL_PENDING);
    cr_assert(g.node.next == &n.waiters && g.node.prev == &f.node, "waiting: linked");
    pl_notify_waiters(&n);
    cr_assert(g.node.next == NULL && g.node.prev == &n.waiters, "released: names it again");
    cr_assert_eq(poll_as(&g, &b), PL_READY);
    cr_assert_eq(poll_as(&f, &a), PL_READY);
    cr_assert_eq(a.live + b.live, 0);
    pl_notified h = pl_notified_make(&n);
    cr_assert_eq(poll_as(&h, &a), PL_PENDING);
    pl_notify_one(&n);
    cr_assert(h.node.next == NULL && h.node.prev == &n.waiters, "chosen: names it again");
    cr_assert_eq(poll_as(&h, &a), PL_READY);
    cr_assert_eq(a.live, 0);
}

Test(sync, dropping_a_notified_waiter_passes_it_on)
{
    pl_notify n;
    pl_notify_init(&n);
    tw a = {.id = 1}, b = {.id = 2};
    pl_notified fa = pl_notified_make(&n), fb = pl_notified_make(&n);
    poll_as(&fa, &a);
    poll_as(&fb, &b);
    pl_notify_one(&n);
    cr_assert_eq(a.wakes, 1);
    cr_assert_eq(b.wakes, 0);
    pl_drop(&fa.base);
    cr_assert_eq(b.wakes, 1, "the dropped waiter's notification went to the next");
    cr_assert(!pl_notify_has_permit(&n));
    cr_assert_eq(poll_as(&fb, &b), PL_READY);
    cr_assert_eq(a.live + b.live, 0);
}

Test(sync, dropping_the_last_notified_waiter_stores_the_permit)
{
    pl_notify n;
    pl_notify_init(&n);
    tw a = {.id = 1}, c = {.id = 3};
    pl_notified fa = pl_notified_make(&n);
    poll_as(&fa, &a);
    pl_notify_one(&n);
    cr_assert(!pl_notify_has_permit(&n));
    pl_drop(&fa.base);
    cr_assert(pl_notify_has_permit(&n), "no permit may be lost");
    pl_notified fc = pl_notified_make(&n);
    cr_assert_eq(poll_as(&fc, &c), PL_READY);
}

Test(sync, dropping_a_broadcast_waiter_passes_nothing_on)
{
    pl_notify n;
    pl_notify_init(&n);
    tw a = {.id = 1}, b = {.id = 2}, c = {.id = 3};
    pl_notified fa = pl_notified_make(&n), fb = pl_notified_make(&n);
    poll_as(&fa, &a);
    poll_as(&fb, &b);
    pl_notify_waiters(&n);
    pl_drop(&fa.base);
    cr_assert_eq(b.wakes, 1);
    cr_assert(!pl_notify_has_permit(&n));
    pl_notified fc = pl_notified_make(&n);
    cr_assert_eq(poll_as(&fc, &c), PL_PENDING);
    pl_drop(&fc.base);
    cr_assert_eq(poll_as(&fb, &b), PL_READY);
}

Test(sync, dropping_a_waiting_waiter_unlinks_it)
{
    pl_notify n;
    pl_notify_init(&n);
    tw a = {.id = 1}, b = {.id = 2};
    pl_notified fa = pl_notified_make(&n), fb = pl_notified_make(&n);
    poll_as(&fa, &a);
    poll_as(&fb, &b);
    pl_drop(&fa.base);
    cr_assert_eq(a.live, 0);
    cr_assert_eq(a.drops, 1);
    pl_notify_one(&n);
    cr_assert_eq(a.wakes, 0);
    cr_assert_eq(b.wakes, 1);
    cr_assert_eq(poll_as(&fb, &b), PL_READY);
}

Test(sync, dropping_a_completed_or_unpolled_notified_does_nothing)
{
    pl_notify n;
    pl_notify_init(&n);
    tw a = {.id = 1};
    pl_notified unpolled = pl_notified_make(&n);
    pl_drop(&unpolled.base);
    cr_assert(!pl_notify_has_permit(&n));
    pl_notified fa = pl_notified_make(&n);
    poll_as(&fa, &a);
    pl_notify_one(&n);
    cr_assert_eq(poll_as(&fa, &a), PL_READY);
    pl_drop(&fa.base);
    cr_assert(!pl_notify_has_permit(&n), "a consumed notification is not passed on");
}

Test(sync, notified_tolerates_spurious_polls)
{
    pl_notify n;
    pl_notify_init(&n);
    tw a = {.id = 1};
    pl_notified fa = pl_notified_make(&n);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(poll_as(&fa, &a), PL_PENDING);
    }
    cr_assert_eq(a.clones, 1, "same identity: the stored clone is kept");
    cr_assert_eq(a.live, 1);
    cr_assert_eq(a.wakes, 0);
    pl_notify_one(&n);
    cr_assert_eq(poll_as(&fa, &a), PL_READY);
    cr_assert_eq(a.live, 0);
}

Test(sync, notified_replaces_its_waker_when_identity_changes)
{
    pl_notify n;
    pl_notify_init(&n);
    tw a = {.id = 1};
    pl_notified fa = pl_notified_make(&n);
    pl_context g1 = cx_of(&a, 1), g2 = cx_of(&a, 2);
    cr_assert_eq(pl_poll(&fa.base, &g1), PL_PENDING);
    cr_assert_eq(pl_poll(&fa.base, &g2), PL_PENDING);
    cr_assert_eq(a.clones, 2);
    cr_assert_eq(a.drops, 1, "the superseded waker was dropped");
    cr_assert_eq(a.live, 1);
    pl_notify_one(&n);
    cr_assert_eq(a.wakes, 1);
    cr_assert_eq(a.last_gen, 2, "the most recent waker is woken");
    cr_assert_eq(pl_poll(&fa.base, &g2), PL_READY);
    cr_assert_eq(a.live, 0);
}

/* A waker whose wake polls another future right away, to show that a
 * waiter registering during notify_waiters waits for the next call. */
static pl_notified reentrant_fut;
static tw reentrant_task = {.id = 9};

static void reentrant_wake(pl_waker w)
{
    tw_wake(w);
    cr_assert_eq(poll_as(&reentrant_fut, &reentrant_task), PL_PENDING);
}

static const pl_waker_vtable reentrant_vtable = {tw_clone, reentrant_wake, tw_wake_by_ref,
                                                 tw_drop};

Test(sync, notify_waiters_ignores_waiters_registered_during_the_call)
{
    pl_notify n;
    pl_notify_init(&n);
    tw a = {.id = 1};
    reentrant_fut = pl_notified_make(&n);
    pl_notified fa = pl_notified_make(&n);
    pl_context cx = {{&reentrant_vtable, &a, 1, 0}, NULL, NULL, NULL};
    cr_assert_eq(pl_poll(&fa.base, &cx), PL_PENDING);
    pl_notify_waiters(&n);
    cr_assert_eq(a.wakes, 1);
    cr_assert_eq(reentrant_task.wakes, 0);
    cr_assert_eq(reentrant_task.live, 1);
    pl_notify_one(&n);
    cr_assert_eq(reentrant_task.wakes, 1);
    cr_assert_eq(poll_as(&reentrant_fut, &reentrant_task), PL_READY);
    cr_assert_eq(pl_poll(&fa.base, &cx), PL_READY);
}

/* ---- Oneshot ------------------------------------------------------------ */

Test(sync, oneshot_send_before_recv)
{
    pl_oneshot os;
    int storage = 0, v = 42;
    pl_oneshot_init(&os, &storage, sizeof storage);
    cr_assert_eq(pl_oneshot_send(&os, &v), 0);
    tw a = {.id = 1};
    pl_oneshot_recv r = pl_oneshot_recv_make(&os);
    cr_assert_eq(poll_as(&r, &a), PL_READY);
    cr_assert_eq(r.result, 0);
    cr_assert_eq(storage, 42);
    cr_assert_eq(a.clones, 0);
    pl_oneshot_recv again = pl_oneshot_recv_make(&os);
    cr_assert_eq(poll_as(&again, &a), PL_READY);
    cr_assert_eq(again.result, PL_ECLOSED, "the value was taken");
}

Test(sync, oneshot_send_wakes_the_pending_receive_once)
{
    pl_oneshot os;
    int storage = 0, v = 7;
    pl_oneshot_init(&os, &storage, sizeof storage);
    tw a = {.id = 1};
    pl_oneshot_recv r = pl_oneshot_recv_make(&os);
    cr_assert_eq(poll_as(&r, &a), PL_PENDING);
    cr_assert_eq(poll_as(&r, &a), PL_PENDING, "spurious poll");
    cr_assert_eq(a.clones, 1);
    cr_assert_eq(pl_oneshot_send(&os, &v), 0);
    cr_assert_eq(a.wakes, 1);
    cr_assert_eq(poll_as(&r, &a), PL_READY);
    cr_assert_eq(r.result, 0);
    cr_assert_eq(storage, 7);
    cr_assert_eq(a.live, 0);
    pl_oneshot_sender_drop(&os);
    cr_assert_eq(a.wakes, 1, "dropping a sender that sent wakes nobody");
}

Test(sync, oneshot_sender_dropped_unsent_closes)
{
    pl_oneshot os;
    int storage = 5;
    pl_oneshot_init(&os, &storage, sizeof storage);
    tw a = {.id = 1};
    pl_oneshot_recv r = pl_oneshot_recv_make(&os);
    cr_assert_eq(poll_as(&r, &a), PL_PENDING);
    pl_oneshot_sender_drop(&os);
    cr_assert_eq(a.wakes, 1);
    cr_assert_eq(poll_as(&r, &a), PL_READY);
    cr_assert_eq(r.result, PL_ECLOSED);
    cr_assert_eq(storage, 5);
    cr_assert_eq(a.live, 0);
}

Test(sync, oneshot_value_survives_sender_drop)
{
    pl_oneshot os;
    uint64_t storage = 0, v = 99;
    pl_oneshot_init(&os, &storage, sizeof storage);
    cr_assert_eq(pl_oneshot_send(&os, &v), 0);
    pl_oneshot_sender_drop(&os);
    cr_assert_eq(pl_oneshot_try_recv(&os), 0);
    cr_assert_eq(storage, 99);
    cr_assert_eq(pl_oneshot_try_recv(&os), PL_ECLOSED);
}

Test(sync, oneshot_receiver_dropped_fails_send)
{
    pl_oneshot os;
    int storage = 1, v = 2;
    pl_oneshot_init(&os, &storage, sizeof storage);
    cr_assert(!pl_oneshot_is_closed(&os));
    pl_oneshot_receiver_drop(&os);
    cr_assert(pl_oneshot_is_closed(&os));
    cr_assert_eq(pl_oneshot_send(&os, &v), PL_ECLOSED);
    cr_assert_eq(storage, 1, "a refused value is not stored");
}

Test(sync, oneshot_dropped_receive_forgets_its_waker_only)
{
    pl_oneshot os;
    int storage = 0, v = 3;
    pl_oneshot_init(&os, &storage, sizeof storage);
    tw a = {.id = 1}, b = {.id = 2};
    pl_oneshot_recv r1 = pl_oneshot_recv_make(&os);
    cr_assert_eq(pl_oneshot_try_recv(&os), PL_EAGAIN);
    cr_assert_eq(poll_as(&r1, &a), PL_PENDING);
    pl_drop(&r1.base);
    cr_assert_eq(a.live, 0);
    cr_assert_eq(pl_oneshot_send(&os, &v), 0);
    cr_assert_eq(a.wakes, 0);
    pl_oneshot_recv r2 = pl_oneshot_recv_make(&os);
    cr_assert_eq(poll_as(&r2, &b), PL_READY);
    cr_assert_eq(r2.result, 0);
    cr_assert_eq(storage, 3);
}

Test(sync, oneshot_receive_replaces_its_waker)
{
    pl_oneshot os;
    int storage = 0, v = 3;
    pl_oneshot_init(&os, &storage, sizeof storage);
    tw a = {.id = 1};
    pl_oneshot_recv r = pl_oneshot_recv_make(&os);
    pl_context g1 = cx_of(&a, 1), g2 = cx_of(&a, 2);
    cr_assert_eq(pl_poll(&r.base, &g1), PL_PENDING);
    cr_assert_eq(pl_poll(&r.base, &g2), PL_PENDING);
    cr_assert_eq(a.drops, 1);
    pl_oneshot_send(&os, &v);
    cr_assert_eq(a.last_gen, 2);
    cr_assert_eq(pl_poll(&r.base, &g2), PL_READY);
    cr_assert_eq(a.live, 0);
}

/* ---- Mpsc --------------------------------------------------------------- */

typedef struct chan3 {
    pl_mpsc ch;
    int buf[3];
} chan3;

static void chan3_init(chan3 *c) { pl_mpsc_init_buffer(&c->ch, c->buf, sizeof(int), 3); }

/* A channel holding 0, 1, 2: the next send has to wait. */
static void chan3_init_full(chan3 *c)
{
    chan3_init(c);
    for (int i = 0; i < 3; i++) {
        pl_mpsc_try_send(&c->ch, &i);
    }
}

Test(sync, mpsc_try_send_until_full_and_try_recv_in_order)
{
    chan3 c;
    chan3_init(&c);
    int out = -1;
    cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), PL_EAGAIN);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pl_mpsc_try_send(&c.ch, &i), 0);
    }
    int x = 3;
    cr_assert_eq(pl_mpsc_try_send(&c.ch, &x), PL_EAGAIN);
    cr_assert_eq(pl_mpsc_len(&c.ch), 3);
    for (int round = 0; round < 10; round++) {  /* wrap the ring many times */
        cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), 0);
        cr_assert_eq(out, round);
        x = round + 3;
        cr_assert_eq(pl_mpsc_try_send(&c.ch, &x), 0);
    }
    for (int i = 10; i < 13; i++) {
        cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), 0);
        cr_assert_eq(out, i);
    }
    cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), PL_EAGAIN);
    pl_mpsc_finish(&c.ch);
}

Test(sync, mpsc_recv_waits_when_empty_and_each_item_wakes_it)
{
    chan3 c;
    chan3_init(&c);
    tw rx = {.id = 1};
    int out = 0, v = 11;
    pl_mpsc_recv r = pl_mpsc_recv_make(&c.ch, &out);
    cr_assert_eq(poll_as(&r, &rx), PL_PENDING);
    cr_assert_eq(poll_as(&r, &rx), PL_PENDING);
    cr_assert_eq(rx.clones, 1);
    cr_assert_eq(pl_mpsc_try_send(&c.ch, &v), 0);
    cr_assert_eq(rx.wakes, 1);
    cr_assert_eq(poll_as(&r, &rx), PL_READY);
    cr_assert_eq(r.result, 0);
    cr_assert_eq(out, 11);
    cr_assert_eq(rx.live, 0);
    pl_mpsc_finish(&c.ch);
}

Test(sync, mpsc_send_waits_when_full_and_senders_are_served_fifo)
{
    chan3 c;
    chan3_init_full(&c);
    tw t[3] = {{.id = 1}, {.id = 2}, {.id = 3}};
    int items[3] = {100, 101, 102};
    pl_mpsc_send s[3];
    wake_log_len = 0;
    for (int i = 0; i < 3; i++) {
        s[i] = pl_mpsc_send_make(&c.ch, &items[i]);
        cr_assert_eq(poll_as(&s[i], &t[i]), PL_PENDING);
    }
    int out;
    cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), 0);
    cr_assert_eq(out, 0);
    const int want1[] = {1};
    assert_log(want1, 1);
    cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), 0);
    const int want2[] = {1, 2};
    assert_log(want2, 2);
    /* Items enter the ring when the woken sends run, in grant order. */
    cr_assert_eq(poll_as(&s[0], &t[0]), PL_READY);
    cr_assert_eq(poll_as(&s[1], &t[1]), PL_READY);
    cr_assert_eq(s[0].result, 0);
    cr_assert_eq(poll_as(&s[2], &t[2]), PL_PENDING);
    const int want_out[] = {2, 100, 101};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), 0);
        cr_assert_eq(out, want_out[i]);
    }
    cr_assert_eq(t[2].wakes, 1);
    cr_assert_eq(poll_as(&s[2], &t[2]), PL_READY);
    cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), 0);
    cr_assert_eq(out, 102);
    cr_assert_eq(t[0].live + t[1].live + t[2].live, 0);
    pl_mpsc_finish(&c.ch);
}

Test(sync, mpsc_reserved_slot_cannot_be_taken_by_newcomers)
{
    chan3 c;
    chan3_init_full(&c);
    tw a = {.id = 1}, b = {.id = 2};
    int va = 50, vb = 60, out;
    pl_mpsc_send sa = pl_mpsc_send_make(&c.ch, &va);
    cr_assert_eq(poll_as(&sa, &a), PL_PENDING);
    cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), 0);
    cr_assert_eq(a.wakes, 1);
    cr_assert_eq(pl_mpsc_try_send(&c.ch, &vb), PL_EAGAIN, "the slot is reserved");
    pl_mpsc_send sb = pl_mpsc_send_make(&c.ch, &vb);
    cr_assert_eq(poll_as(&sb, &b), PL_PENDING, "a newcomer queues behind");
    cr_assert_eq(poll_as(&sa, &a), PL_READY);
    cr_assert_eq(sa.result, 0);
    pl_drop(&sb.base);
    cr_assert_eq(b.live, 0);
    pl_mpsc_finish(&c.ch);
}

Test(sync, mpsc_dropping_a_woken_send_passes_its_slot_on)
{
    chan3 c;
    chan3_init_full(&c);
    tw a = {.id = 1}, b = {.id = 2};
    int va = 50, vb = 60, out;
    pl_mpsc_send sa = pl_mpsc_send_make(&c.ch, &va);
    pl_mpsc_send sb = pl_mpsc_send_make(&c.ch, &vb);
    poll_as(&sa, &a);
    poll_as(&sb, &b);
    pl_mpsc_try_recv(&c.ch, &out);
    cr_assert_eq(a.wakes, 1);
    cr_assert_eq(b.wakes, 0);
    pl_drop(&sa.base);
    cr_assert_eq(b.wakes, 1, "the reserved slot went to the next send");
    cr_assert_eq(poll_as(&sb, &b), PL_READY);
    const int want[] = {1, 2, 60};
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), 0);
        cr_assert_eq(out, want[i], "the dropped send's item was not sent");
    }
    cr_assert_eq(a.live + b.live, 0);
    pl_mpsc_finish(&c.ch);
}

Test(sync, mpsc_dropping_the_last_woken_send_frees_the_slot)
{
    chan3 c;
    chan3_init_full(&c);
    tw a = {.id = 1};
    int va = 50, out;
    pl_mpsc_send sa = pl_mpsc_send_make(&c.ch, &va);
    poll_as(&sa, &a);
    pl_mpsc_try_recv(&c.ch, &out);
    pl_drop(&sa.base);
    cr_assert_eq(pl_mpsc_try_send(&c.ch, &va), 0);
    pl_mpsc_finish(&c.ch);
}

Test(sync, mpsc_dropping_a_waiting_send_unlinks_it)
{
    chan3 c;
    chan3_init_full(&c);
    tw a = {.id = 1}, b = {.id = 2};
    int va = 50, vb = 60, out;
    pl_mpsc_send sa = pl_mpsc_send_make(&c.ch, &va);
    pl_mpsc_send sb = pl_mpsc_send_make(&c.ch, &vb);
    poll_as(&sa, &a);
    poll_as(&sb, &b);
    pl_drop(&sa.base);
    cr_assert_eq(a.live, 0);
    pl_mpsc_try_recv(&c.ch, &out);
    cr_assert_eq(a.wakes, 0);
    cr_assert_eq(b.wakes, 1);
    cr_assert_eq(poll_as(&sb, &b), PL_READY);
    pl_mpsc_finish(&c.ch);
}

Test(sync, mpsc_close_fails_sends_but_drains_items)
{
    chan3 c;
    chan3_init_full(&c);
    tw a = {.id = 1}, b = {.id = 2};
    int va = 50, vb = 60, out;
    pl_mpsc_send sa = pl_mpsc_send_make(&c.ch, &va);
    pl_mpsc_send sb = pl_mpsc_send_make(&c.ch, &vb);
    poll_as(&sa, &a);
    poll_as(&sb, &b);
    pl_mpsc_try_recv(&c.ch, &out);  /* grants a slot to sa */
    wake_log_len = 0;
    pl_mpsc_close(&c.ch);
    const int want[] = {2};
    assert_log(want, 1);
    cr_assert_eq(poll_as(&sa, &a), PL_READY);
    cr_assert_eq(sa.result, PL_ECLOSED, "a woken send polled after close fails");
    cr_assert_eq(poll_as(&sb, &b), PL_READY);
    cr_assert_eq(sb.result, PL_ECLOSED);
    cr_assert_eq(pl_mpsc_try_send(&c.ch, &va), PL_ECLOSED);
    pl_mpsc_send sc = pl_mpsc_send_make(&c.ch, &va);
    cr_assert_eq(poll_as(&sc, &a), PL_READY);
    cr_assert_eq(sc.result, PL_ECLOSED);
    for (int i = 1; i < 3; i++) {
        cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), 0);
        cr_assert_eq(out, i);
    }
    cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), PL_ECLOSED);
    cr_assert_eq(a.live + b.live, 0);
    pl_mpsc_finish(&c.ch);
}

Test(sync, mpsc_receiver_sees_closed_after_last_sender_and_drain)
{
    chan3 c;
    chan3_init(&c);
    pl_mpsc_sender_clone(&c.ch);
    tw rx = {.id = 1};
    int out = 0, v = 8;
    pl_mpsc_recv r = pl_mpsc_recv_make(&c.ch, &out);
    cr_assert_eq(poll_as(&r, &rx), PL_PENDING);
    pl_mpsc_sender_drop(&c.ch);
    cr_assert_eq(rx.wakes, 0, "one sender is still alive");
    cr_assert_eq(pl_mpsc_try_send(&c.ch, &v), 0);
    cr_assert_eq(rx.wakes, 1);
    cr_assert_eq(poll_as(&r, &rx), PL_READY);
    cr_assert_eq(out, 8);
    pl_mpsc_send s = pl_mpsc_send_make(&c.ch, &v);
    cr_assert_eq(poll_as(&s, &rx), PL_READY);
    pl_mpsc_sender_drop(&c.ch);
    r = pl_mpsc_recv_make(&c.ch, &out);
    out = 0;
    cr_assert_eq(poll_as(&r, &rx), PL_READY, "the buffered item comes first");
    cr_assert_eq(r.result, 0);
    cr_assert_eq(out, 8);
    r = pl_mpsc_recv_make(&c.ch, &out);
    cr_assert_eq(poll_as(&r, &rx), PL_READY);
    cr_assert_eq(r.result, PL_ECLOSED);
    cr_assert_eq(rx.live, 0);
    pl_mpsc_finish(&c.ch);
}

Test(sync, mpsc_last_sender_drop_wakes_a_pending_receive)
{
    chan3 c;
    chan3_init(&c);
    tw rx = {.id = 1};
    int out = 0;
    pl_mpsc_recv r = pl_mpsc_recv_make(&c.ch, &out);
    cr_assert_eq(poll_as(&r, &rx), PL_PENDING);
    pl_mpsc_sender_drop(&c.ch);
    cr_assert_eq(rx.wakes, 1);
    cr_assert_eq(poll_as(&r, &rx), PL_READY);
    cr_assert_eq(r.result, PL_ECLOSED);
    pl_mpsc_finish(&c.ch);
}

Test(sync, mpsc_dropped_receive_and_replaced_waker)
{
    chan3 c;
    chan3_init(&c);
    tw rx = {.id = 1};
    int out = 0, v = 4;
    pl_mpsc_recv r = pl_mpsc_recv_make(&c.ch, &out);
    pl_context g1 = cx_of(&rx, 1), g2 = cx_of(&rx, 2);
    cr_assert_eq(pl_poll(&r.base, &g1), PL_PENDING);
    cr_assert_eq(pl_poll(&r.base, &g2), PL_PENDING);
    cr_assert_eq(rx.drops, 1);
    pl_mpsc_try_send(&c.ch, &v);
    cr_assert_eq(rx.wakes, 1);
    cr_assert_eq(rx.last_gen, 2, "the most recent waker is woken");
    pl_drop(&r.base);
    cr_assert_eq(out, 0, "a dropped receive takes nothing");
    cr_assert_eq(pl_mpsc_len(&c.ch), 1);
    pl_mpsc_recv r2 = pl_mpsc_recv_make(&c.ch, &out);
    cr_assert_eq(pl_poll(&r2.base, &g1), PL_READY);
    cr_assert_eq(out, 4);
    cr_assert_eq(rx.live, 0);
    pl_mpsc_finish(&c.ch);
}

/* ---- Mutex -------------------------------------------------------------- */

Test(sync, mutex_unlock_hands_over_in_fifo_order)
{
    pl_mutex m;
    pl_mutex_init(&m);
    tw owner = {.id = 0};
    tw t[3] = {{.id = 1}, {.id = 2}, {.id = 3}};
    pl_mutex_lock first = pl_mutex_lock_make(&m);
    cr_assert_eq(poll_as(&first, &owner), PL_READY);
    cr_assert(pl_mutex_is_locked(&m));
    pl_mutex_lock l[3];
    wake_log_len = 0;
    for (int i = 0; i < 3; i++) {
        l[i] = pl_mutex_lock_make(&m);
        cr_assert_eq(poll_as(&l[i], &t[i]), PL_PENDING);
    }
    for (int i = 0; i < 3; i++) {
        pl_mutex_unlock(&m);
        cr_assert(pl_mutex_is_locked(&m), "handed over, never free");
        cr_assert(!pl_mutex_try_lock(&m), "no barging during a handoff");
        cr_assert_eq(t[i].wakes, 1);
        for (int j = i + 1; j < 3; j++) {
            cr_assert_eq(poll_as(&l[j], &t[j]), PL_PENDING);
        }
        cr_assert_eq(poll_as(&l[i], &t[i]), PL_READY);
    }
    const int want[] = {1, 2, 3};
    assert_log(want, 3);
    pl_mutex_unlock(&m);
    cr_assert(!pl_mutex_is_locked(&m));
    cr_assert(pl_mutex_try_lock(&m));
    pl_mutex_unlock(&m);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(t[i].live, 0);
        cr_assert_eq(t[i].clones, 1, "spurious polls kept the same clone");
    }
}

Test(sync, mutex_dropping_a_handed_lock_hands_it_on)
{
    pl_mutex m;
    pl_mutex_init(&m);
    cr_assert(pl_mutex_try_lock(&m));
    tw a = {.id = 1}, b = {.id = 2};
    pl_mutex_lock la = pl_mutex_lock_make(&m), lb = pl_mutex_lock_make(&m);
    poll_as(&la, &a);
    poll_as(&lb, &b);
    pl_mutex_unlock(&m);
    cr_assert_eq(a.wakes, 1);
    pl_drop(&la.base);
    cr_assert_eq(b.wakes, 1);
    cr_assert_eq(poll_as(&lb, &b), PL_READY);
    pl_drop(&lb.base);
    cr_assert(pl_mutex_is_locked(&m), "dropping a completed lock does not unlock");
    pl_mutex_unlock(&m);
    cr_assert(!pl_mutex_is_locked(&m));
}

Test(sync, mutex_dropping_the_only_handed_lock_unlocks)
{
    pl_mutex m;
    pl_mutex_init(&m);
    cr_assert(pl_mutex_try_lock(&m));
    tw a = {.id = 1};
    pl_mutex_lock la = pl_mutex_lock_make(&m);
    poll_as(&la, &a);
    pl_mutex_unlock(&m);
    pl_drop(&la.base);
    cr_assert(!pl_mutex_is_locked(&m));
}

Test(sync, mutex_dropping_a_waiting_lock_unlinks_it)
{
    pl_mutex m;
    pl_mutex_init(&m);
    cr_assert(pl_mutex_try_lock(&m));
    tw a = {.id = 1}, b = {.id = 2};
    pl_mutex_lock la = pl_mutex_lock_make(&m), lb = pl_mutex_lock_make(&m);
    poll_as(&la, &a);
    poll_as(&lb, &b);
    pl_drop(&la.base);
    cr_assert_eq(a.live, 0);
    pl_mutex_unlock(&m);
    cr_assert_eq(a.wakes, 0);
    cr_assert_eq(b.wakes, 1);
    cr_assert_eq(poll_as(&lb, &b), PL_READY);
    pl_mutex_unlock(&m);
}

Test(sync, mutex_lock_replaces_its_waker)
{
    pl_mutex m;
    pl_mutex_init(&m);
    cr_assert(pl_mutex_try_lock(&m));
    tw a = {.id = 1};
    pl_mutex_lock la = pl_mutex_lock_make(&m);
    pl_context g1 = cx_of(&a, 1), g2 = cx_of(&a, 2);
    cr_assert_eq(pl_poll(&la.base, &g1), PL_PENDING);
    cr_assert_eq(pl_poll(&la.base, &g2), PL_PENDING);
    pl_mutex_unlock(&m);
    cr_assert_eq(a.wakes, 1);
    cr_assert_eq(a.last_gen, 2);
    cr_assert_eq(pl_poll(&la.base, &g2), PL_READY);
    pl_mutex_unlock(&m);
    cr_assert_eq(a.live, 0);
}

/* ---- Semaphore ---------------------------------------------------------- */

Test(sync, semaphore_acquire_and_release_without_contention)
{
    pl_semaphore s;
    pl_semaphore_init(&s, 3);
    tw a = {.id = 1};
    pl_semaphore_acquire q = pl_semaphore_acquire_make(&s, 2);
    cr_assert_eq(pl_semaphore_available(&s), 3, "lazy: init takes nothing");
    cr_assert_eq(poll_as(&q, &a), PL_READY);
    cr_assert_eq(pl_semaphore_available(&s), 1);
    cr_assert(pl_semaphore_try_acquire(&s, 1));
    cr_assert(!pl_semaphore_try_acquire(&s, 1));
    pl_semaphore_release(&s, 3);
    cr_assert_eq(pl_semaphore_available(&s), 3);
    cr_assert_eq(a.clones, 0);
}

Test(sync, semaphore_does_not_let_small_requests_barge)
{
    pl_semaphore s;
    pl_semaphore_init(&s, 2);
    tw a = {.id = 1}, b = {.id = 2}, c = {.id = 3};
    pl_semaphore_acquire big = pl_semaphore_acquire_make(&s, 3);
    pl_semaphore_acquire small = pl_semaphore_acquire_make(&s, 1);
    cr_assert_eq(poll_as(&big, &a), PL_PENDING);
    cr_assert_eq(poll_as(&small, &b), PL_PENDING, "2 free, but the head waits for 3");
    cr_assert(!pl_semaphore_try_acquire(&s, 1));
    pl_semaphore_acquire late = pl_semaphore_acquire_make(&s, 1);
    cr_assert_eq(poll_as(&late, &c), PL_PENDING);
    cr_assert_eq(pl_semaphore_available(&s), 2);
    wake_log_len = 0;
    pl_semaphore_release(&s, 1);
    const int want1[] = {1};
    assert_log(want1, 1);
    cr_assert_eq(pl_semaphore_available(&s), 0, "granted permits leave the pool");
    cr_assert_eq(poll_as(&small, &b), PL_PENDING);
    cr_assert_eq(poll_as(&big, &a), PL_READY);
    pl_semaphore_release(&s, 3);
    const int want2[] = {1, 2, 3};
    assert_log(want2, 3);
    cr_assert_eq(pl_semaphore_available(&s), 1);
    cr_assert_eq(poll_as(&small, &b), PL_READY);
    cr_assert_eq(poll_as(&late, &c), PL_READY);
    cr_assert_eq(a.live + b.live + c.live, 0);
}

Test(sync, semaphore_dropping_a_waiting_head_unblocks_the_rest)
{
    pl_semaphore s;
    pl_semaphore_init(&s, 2);
    tw a = {.id = 1}, b = {.id = 2};
    pl_semaphore_acquire big = pl_semaphore_acquire_make(&s, 3);
    pl_semaphore_acquire small = pl_semaphore_acquire_make(&s, 1);
    poll_as(&big, &a);
    poll_as(&small, &b);
    pl_drop(&big.base);
    cr_assert_eq(a.live, 0);
    cr_assert_eq(a.wakes, 0);
    cr_assert_eq(b.wakes, 1);
    cr_assert_eq(pl_semaphore_available(&s), 1);
    cr_assert_eq(poll_as(&small, &b), PL_READY);
}

Test(sync, semaphore_dropping_a_granted_acquire_releases_its_permits)
{
    pl_semaphore s;
    pl_semaphore_init(&s, 0);
    tw a = {.id = 1}, b = {.id = 2};
    pl_semaphore_acquire qa = pl_semaphore_acquire_make(&s, 2);
    pl_semaphore_acquire qb = pl_semaphore_acquire_make(&s, 2);
    poll_as(&qa, &a);
    poll_as(&qb, &b);
    pl_semaphore_release(&s, 2);
    cr_assert_eq(a.wakes, 1);
    cr_assert_eq(b.wakes, 0);
    pl_drop(&qa.base);
    cr_assert_eq(b.wakes, 1, "the permits went to the next in line");
    cr_assert_eq(pl_semaphore_available(&s), 0);
    cr_assert_eq(poll_as(&qb, &b), PL_READY);
    pl_drop(&qb.base);
    cr_assert_eq(pl_semaphore_available(&s), 0, "a completed acquire keeps its permits");
    pl_semaphore_release(&s, 2);
    cr_assert_eq(pl_semaphore_available(&s), 2);
}

Test(sync, semaphore_acquire_tolerates_spurious_polls_and_rotation)
{
    pl_semaphore s;
    pl_semaphore_init(&s, 0);
    tw a = {.id = 1};
    pl_semaphore_acquire q = pl_semaphore_acquire_make(&s, 1);
    pl_context g1 = cx_of(&a, 1), g2 = cx_of(&a, 2);
    cr_assert_eq(pl_poll(&q.base, &g1), PL_PENDING);
    cr_assert_eq(pl_poll(&q.base, &g1), PL_PENDING);
    cr_assert_eq(a.clones, 1);
    cr_assert_eq(pl_poll(&q.base, &g2), PL_PENDING);
    cr_assert_eq(a.drops, 1);
    pl_semaphore_release(&s, 1);
    cr_assert_eq(a.last_gen, 2);
    cr_assert_eq(pl_poll(&q.base, &g2), PL_READY);
    cr_assert_eq(a.live, 0);
}

/* ---- On the executor ---------------------------------------------------- */

static pl_executor *new_executor(bool rotate)
{
    pl_executor_options o;
    pl_executor_options_default(&o);
    pl_executor_testing_options to;
    pl_executor_testing_options_default(&to);
    to.rotate_wakers = rotate;
    o.testing = &to;
    pl_executor *ex = NULL;
    cr_assert_eq(pl_executor_create(&ex, &o), 0);
    return ex;
}

/* The pingpong workload of the benchmark, small. */
typedef struct pingpong {
    pl_notify a;
    pl_notify b;
    int rounds;
    int ping_count;
    int pong_count;
} pingpong;

typedef struct pinger {
    pl_future base;
    pingpong *pp;
    int i;
    pl_notified wait;
} pinger;

static pl_poll_result ping_poll(pl_future *f, pl_context *cx)
{
    pinger *self = (pinger *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < self->pp->rounds; self->i++) {
        pl_notify_one(&self->pp->b);
        self->wait = pl_notified_make(&self->pp->a);
        PL_AWAIT(cx, &self->wait);
        self->pp->ping_count++;
    }
    PL_ASYNC_END;
}

static pl_poll_result pong_poll(pl_future *f, pl_context *cx)
{
    pinger *self = (pinger *)f;
    PL_ASYNC_BEGIN(self);
    for (self->i = 0; self->i < self->pp->rounds; self->i++) {
        self->wait = pl_notified_make(&self->pp->b);
        PL_AWAIT(cx, &self->wait);
        cr_assert_eq(self->pp->pong_count, self->pp->ping_count, "strict alternation");
        self->pp->pong_count++;
        pl_notify_one(&self->pp->a);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable ping_vtable = {"ping", ping_poll, NULL};
static const pl_future_vtable pong_vtable = {"pong", pong_poll, NULL};

static void run_pingpong(bool rotate)
{
    pl_executor *ex = new_executor(rotate);
    pingpong pp = {.rounds = 1000};
    pl_notify_init(&pp.a);
    pl_notify_init(&pp.b);
    pinger ping = {.base = PL_FUTURE_INIT(&ping_vtable), .pp = &pp};
    pinger pong = {.base = PL_FUTURE_INIT(&pong_vtable), .pp = &pp};
    cr_assert_eq(PL_SPAWN(ex, ping, "ping", NULL), 0);
    cr_assert_eq(PL_SPAWN(ex, pong, "pong", NULL), 0);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(pp.ping_count, 1000);
    cr_assert_eq(pp.pong_count, 1000);
    cr_assert(!pl_notify_has_permit(&pp.a));
    cr_assert(!pl_notify_has_permit(&pp.b));
    cr_assert_eq(pl_executor_live_tasks(ex), 0);
    pl_executor_destroy(ex);
}

Test(sync, pingpong_on_the_executor) { run_pingpong(false); }

Test(sync, pingpong_with_rotating_wakers) { run_pingpong(true); }

/* The spawn workload's gate: tasks park until `open`, then one
 * notify_waiters releases them all. */
typedef struct gate {
    pl_notify notify;
    bool open;
    int parked;
    int passed;
} gate;

typedef struct gated {
    pl_future base;
    gate *g;
    pl_notified wait;
} gated;

static pl_poll_result gated_poll(pl_future *f, pl_context *cx)
{
    gated *self = (gated *)f;
    PL_ASYNC_BEGIN(self);
    self->g->parked++;
    while (!self->g->open) {
        self->wait = pl_notified_make(&self->g->notify);
        PL_AWAIT(cx, &self->wait);
    }
    self->g->passed++;
    PL_ASYNC_END;
}

static const pl_future_vtable gated_vtable = {"gated", gated_poll, NULL};

typedef struct opener {
    pl_future base;
    gate *g;
    int n;
} opener;

static pl_poll_result opener_poll(pl_future *f, pl_context *cx)
{
    opener *self = (opener *)f;
    PL_ASYNC_BEGIN(self);
    while (self->g->parked < self->n) {
        PL_YIELD(cx);
    }
    cr_assert_eq(self->g->passed, 0);
    self->g->open = true;
    pl_notify_waiters(&self->g->notify);
    PL_ASYNC_END;
}

static const pl_future_vtable opener_vtable = {"opener", opener_poll, NULL};

Test(sync, notify_waiters_opens_a_gate_for_every_task)
{
    pl_executor *ex = new_executor(true);
    gate g = {.parked = 0};
    pl_notify_init(&g.notify);
    for (int i = 0; i < 100; i++) {
        gated t = {.base = PL_FUTURE_INIT(&gated_vtable), .g = &g};
        cr_assert_eq(PL_SPAWN(ex, t, "gated", NULL), 0);
    }
    opener o = {.base = PL_FUTURE_INIT(&opener_vtable), .g = &g, .n = 100};
    cr_assert_eq(PL_SPAWN(ex, o, "opener", NULL), 0);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(g.passed, 100);
    cr_assert(!pl_notify_has_permit(&g.notify));
    pl_executor_destroy(ex);
}

/* Mutex contention: each task locks, yields twice while holding the
 * lock, and notes its id; FIFO handoff makes the order the spawn order,
 * twice over. */
typedef struct locker_shared {
    pl_mutex m;
    int inside;
    int order[16];
    int order_len;
} locker_shared;

typedef struct locker {
    pl_future base;
    locker_shared *sh;
    int id;
    int round;
    pl_mutex_lock lock;
} locker;

static pl_poll_result locker_poll(pl_future *f, pl_context *cx)
{
    locker *self = (locker *)f;
    locker_shared *sh = self->sh;
    PL_ASYNC_BEGIN(self);
    for (self->round = 0; self->round < 2; self->round++) {
        self->lock = pl_mutex_lock_make(&sh->m);
        PL_AWAIT(cx, &self->lock);
        cr_assert_eq(sh->inside, 0, "two holders at once");
        sh->inside = 1;
        sh->order[sh->order_len++] = self->id;
        PL_YIELD(cx);
        PL_YIELD(cx);
        sh->inside = 0;
        pl_mutex_unlock(&sh->m);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable locker_vtable = {"locker", locker_poll, NULL};

Test(sync, mutex_serialises_tasks_in_fifo_order)
{
    pl_executor *ex = new_executor(true);
    locker_shared sh = {.inside = 0};
    pl_mutex_init(&sh.m);
    for (int i = 1; i <= 4; i++) {
        locker l = {.base = PL_FUTURE_INIT(&locker_vtable), .sh = &sh, .id = i};
        cr_assert_eq(PL_SPAWN(ex, l, "locker", NULL), 0);
    }
    cr_assert_eq(pl_run(ex), 0);
    const int want[] = {1, 2, 3, 4, 1, 2, 3, 4};
    cr_assert_eq(sh.order_len, 8);
    for (int i = 0; i < 8; i++) {
        cr_assert_eq(sh.order[i], want[i], "holder %d was %d", i, sh.order[i]);
    }
    cr_assert(!pl_mutex_is_locked(&sh.m));
    pl_executor_destroy(ex);
}

/* Many producers, one consumer, a small allocated ring. */
typedef struct chan_shared {
    pl_mpsc ch;
    long sum;
    int received;
} chan_shared;

typedef struct sender_task {
    pl_future base;
    chan_shared *sh;
    int base_value;
    int k;
    int item;
    pl_mpsc_send send;
} sender_task;

static pl_poll_result sender_poll(pl_future *f, pl_context *cx)
{
    sender_task *self = (sender_task *)f;
    PL_ASYNC_BEGIN(self);
    for (self->k = 0; self->k < 50; self->k++) {
        self->item = self->base_value + self->k;
        self->send = pl_mpsc_send_make(&self->sh->ch, &self->item);
        PL_AWAIT(cx, &self->send);
        cr_assert_eq(self->send.result, 0);
    }
    pl_mpsc_sender_drop(&self->sh->ch);
    PL_ASYNC_END;
}

typedef struct receiver_task {
    pl_future base;
    chan_shared *sh;
    int item;
    int last[3];
    pl_mpsc_recv recv;
} receiver_task;

static pl_poll_result receiver_poll(pl_future *f, pl_context *cx)
{
    receiver_task *self = (receiver_task *)f;
    PL_ASYNC_BEGIN(self);
    for (;;) {
        self->recv = pl_mpsc_recv_make(&self->sh->ch, &self->item);
        PL_AWAIT(cx, &self->recv);
        if (self->recv.result == PL_ECLOSED) {
            break;
        }
        /* Per sender, items arrive in the order they were sent. */
        int who = self->item / 1000;
        cr_assert_gt(self->item, self->last[who]);
        self->last[who] = self->item;
        self->sh->sum += self->item;
        self->sh->received++;
    }
    PL_ASYNC_END;
}

static const pl_future_vtable sender_vtable = {"sender", sender_poll, NULL};
static const pl_future_vtable receiver_vtable = {"receiver", receiver_poll, NULL};

Test(sync, mpsc_many_senders_one_receiver)
{
    pl_executor *ex = new_executor(true);
    chan_shared sh = {.sum = 0};
    cr_assert_eq(pl_mpsc_init(&sh.ch, ex, sizeof(int), 4), 0);
    pl_mpsc_sender_clone(&sh.ch);
    pl_mpsc_sender_clone(&sh.ch);
    long want = 0;
    for (int s = 0; s < 3; s++) {
        sender_task t = {.base = PL_FUTURE_INIT(&sender_vtable), .sh = &sh,
                         .base_value = s * 1000 + 1};
        cr_assert_eq(PL_SPAWN(ex, t, "sender", NULL), 0);
        for (int k = 0; k < 50; k++) {
            want += s * 1000 + 1 + k;
        }
    }
    receiver_task r = {.base = PL_FUTURE_INIT(&receiver_vtable), .sh = &sh};
    cr_assert_eq(PL_SPAWN(ex, r, "receiver", NULL), 0);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(sh.received, 150);
    cr_assert_eq(sh.sum, want);
    pl_mpsc_finish(&sh.ch);
    pl_executor_destroy(ex);
}

/* Semaphore: 5 tasks each hold 2 of 3 permits across a yield, so at most
 * one holds at a time; 1-permit tasks queued behind must not overtake. */
typedef struct sem_shared {
    pl_semaphore s;
    int holders;
    int max_holders;
    int order[16];
    int order_len;
} sem_shared;

typedef struct sem_task {
    pl_future base;
    sem_shared *sh;
    int id;
    size_t n;
    pl_semaphore_acquire acq;
} sem_task;

static pl_poll_result sem_poll(pl_future *f, pl_context *cx)
{
    sem_task *self = (sem_task *)f;
    sem_shared *sh = self->sh;
    PL_ASYNC_BEGIN(self);
    self->acq = pl_semaphore_acquire_make(&sh->s, self->n);
    PL_AWAIT(cx, &self->acq);
    sh->order[sh->order_len++] = self->id;
    sh->holders++;
    if (sh->holders > sh->max_holders) {
        sh->max_holders = sh->holders;
    }
    PL_YIELD(cx);
    sh->holders--;
    pl_semaphore_release(&sh->s, self->n);
    PL_ASYNC_END;
}

static const pl_future_vtable sem_vtable = {"sem", sem_poll, NULL};

Test(sync, semaphore_grants_in_fifo_order_on_the_executor)
{
    pl_executor *ex = new_executor(true);
    sem_shared sh = {.holders = 0};
    pl_semaphore_init(&sh.s, 3);
    const size_t wants[5] = {2, 2, 1, 2, 1};
    for (int i = 0; i < 5; i++) {
        sem_task t = {.base = PL_FUTURE_INIT(&sem_vtable), .sh = &sh, .id = i + 1,
                      .n = wants[i]};
        cr_assert_eq(PL_SPAWN(ex, t, "sem", NULL), 0);
    }
    cr_assert_eq(pl_run(ex), 0);
    const int want[] = {1, 2, 3, 4, 5};
    cr_assert_eq(sh.order_len, 5);
    for (int i = 0; i < 5; i++) {
        cr_assert_eq(sh.order[i], want[i]);
    }
    cr_assert_eq(pl_semaphore_available(&sh.s), 3);
    cr_assert_eq(sh.max_holders, 2, "task 1 (2) + task 3 (1) was never allowed");
    pl_executor_destroy(ex);
}

/* Oneshot between two tasks, and the sender dropping unsent. */
typedef struct os_recv_task {
    pl_future base;
    pl_oneshot *os;
    pl_oneshot_recv recv;
    int result;
} os_recv_task;

static pl_poll_result os_recv_poll(pl_future *f, pl_context *cx)
{
    os_recv_task *self = (os_recv_task *)f;
    PL_ASYNC_BEGIN(self);
    self->recv = pl_oneshot_recv_make(self->os);
    PL_AWAIT(cx, &self->recv);
    self->result = self->recv.result;
    PL_ASYNC_END;
}

typedef struct os_send_task {
    pl_future base;
    pl_oneshot *os;
    int value;  /* 0: drop the sender unsent */
} os_send_task;

static pl_poll_result os_send_poll(pl_future *f, pl_context *cx)
{
    os_send_task *self = (os_send_task *)f;
    PL_ASYNC_BEGIN(self);
    PL_YIELD(cx);
    if (self->value != 0) {
        cr_assert_eq(pl_oneshot_send(self->os, &self->value), 0);
    }
    pl_oneshot_sender_drop(self->os);
    PL_ASYNC_END;
}

/* A coroutine owns its children: dropping it mid-await drops the child. */
static void os_recv_drop(pl_future *f)
{
    os_recv_task *self = (os_recv_task *)f;
    if (self->base.resume != 0 && !pl_future_is_done(&self->recv.base)) {
        pl_drop(&self->recv.base);
    }
}

static const pl_future_vtable os_recv_vtable = {"os_recv", os_recv_poll, os_recv_drop};
static const pl_future_vtable os_send_vtable = {"os_send", os_send_poll, NULL};

static int oneshot_between_tasks(int value, int *storage)
{
    pl_executor *ex = new_executor(true);
    pl_oneshot os;
    pl_oneshot_init(&os, storage, sizeof *storage);
    os_recv_task r = {.base = PL_FUTURE_INIT(&os_recv_vtable), .os = &os};
    os_send_task s = {.base = PL_FUTURE_INIT(&os_send_vtable), .os = &os, .value = value};
    pl_task *h;
    cr_assert_eq(PL_SPAWN(ex, r, "recv", &h), 0);
    cr_assert_eq(PL_SPAWN(ex, s, "send", NULL), 0);
    cr_assert_eq(pl_run(ex), 0);
    int result = ((os_recv_task *)pl_task_future(h))->result;
    pl_task_release(h);
    pl_executor_destroy(ex);
    return result;
}

Test(sync, oneshot_between_tasks)
{
    int storage = 0;
    cr_assert_eq(oneshot_between_tasks(77, &storage), 0);
    cr_assert_eq(storage, 77);
    storage = 0;
    cr_assert_eq(oneshot_between_tasks(0, &storage), PL_ECLOSED);
    cr_assert_eq(storage, 0);
}

/* A receive nothing will ever complete is reported as a deadlock, not
 * hung: the parked task's waker sits in the channel. */
Test(sync, a_receive_nobody_sends_to_is_a_deadlock)
{
    pl_executor *ex = new_executor(false);
    int storage = 0;
    pl_oneshot os;
    pl_oneshot_init(&os, &storage, sizeof storage);
    os_recv_task r = {.base = PL_FUTURE_INIT(&os_recv_vtable), .os = &os};
    cr_assert_eq(PL_SPAWN(ex, r, "recv", NULL), 0);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    pl_executor_destroy(ex);  /* drops the parked receive */
    cr_assert(!pl_waker_is_set(&os.rx_waker), "the cancelled receive released its waker");
}

/* Allocation failures and size overflow in pl_mpsc_init. */
static int alloc_budget;

static void *budget_alloc(void *ud, void *ptr, size_t old_size, size_t new_size)
{
    (void)ud;
    (void)old_size;
    if (new_size == 0) {
        free(ptr);
        return NULL;
    }
    if (ptr == NULL && alloc_budget-- <= 0) {
        return NULL;
    }
    return realloc(ptr, new_size);
}

Test(sync, mpsc_init_reports_enomem_and_einval)
{
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.alloc = budget_alloc;
    alloc_budget = 1000;
    pl_executor *ex = NULL;
    cr_assert_eq(pl_executor_create(&ex, &o), 0);
    pl_mpsc ch;
    alloc_budget = 0;
    cr_assert_eq(pl_mpsc_init(&ch, ex, sizeof(int), 8), PL_ENOMEM);
    alloc_budget = 1000;
    cr_assert_eq(pl_mpsc_init(&ch, ex, SIZE_MAX / 2, 4), PL_EINVAL);
    cr_assert_eq(pl_mpsc_init(&ch, ex, sizeof(int), 8), 0);
    pl_mpsc_finish(&ch);
    pl_executor_destroy(ex);
}

/* ---- The intrusive list, against a model ------------------------------ */

#include "../../core/src/list.h"

enum { MODEL_NODES = 16 };

typedef struct model_list {
    int items[MODEL_NODES];
    int len;
} model_list;

static void model_insert(model_list *m, int at, int v)
{
    memmove(&m->items[at + 1], &m->items[at], (size_t)(m->len - at) * sizeof(int));
    m->items[at] = v;
    m->len++;
}

static void model_erase(model_list *m, int at)
{
    memmove(&m->items[at], &m->items[at + 1], (size_t)(m->len - at - 1) * sizeof(int));
    m->len--;
}

static int model_find(const model_list *m, int v)
{
    for (int i = 0; i < m->len; i++) {
        if (m->items[i] == v) {
            return i;
        }
    }
    return -1;
}

static void check_list(pl_list_node *list, const model_list *m, pl_list_node *nodes)
{
    cr_assert_eq(pl_list_empty(list), m->len == 0);
    pl_list_node *it = list->next;
    for (int i = 0; i < m->len; i++) {
        cr_assert_eq(it, &nodes[m->items[i]], "element %d differs from the model", i);
        cr_assert_eq(it->next->prev, it, "broken back link");
        it = it->next;
    }
    cr_assert_eq(it, list, "the list is longer than the model");
}

Test(sync, list_matches_a_model)
{
    pl_list_node lists[2], nodes[MODEL_NODES];
    model_list model[2] = {{.len = 0}, {.len = 0}};
    int owner[MODEL_NODES];  /* which list holds node i, or -1 */
    pl_list_init(&lists[0]);
    pl_list_init(&lists[1]);
    for (int i = 0; i < MODEL_NODES; i++) {
        nodes[i] = (pl_list_node){NULL, NULL};
        owner[i] = -1;
    }
    uint64_t x = 42;
    for (int step = 0; step < 20000; step++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        uint32_t r = (uint32_t)(x >> 33);
        int l = (int)(r & 1), v = (int)((r >> 1) % MODEL_NODES), op = (int)((r >> 8) % 5);
        if (op <= 1 && owner[v] < 0) {  /* push back or front */
            if (op == 0) {
                pl_list_push_back(&lists[l], &nodes[v]);
                model_insert(&model[l], model[l].len, v);
            } else {
                pl_list_push_front(&lists[l], &nodes[v]);
                model_insert(&model[l], 0, v);
            }
            owner[v] = l;
        } else if (op == 2) {
            pl_list_node *n = pl_list_pop_front(&lists[l]);
            cr_assert_eq(n == NULL, model[l].len == 0);
            if (n != NULL) {
                cr_assert_eq(n, &nodes[model[l].items[0]]);
                cr_assert(!pl_list_is_linked(n));
                owner[model[l].items[0]] = -1;
                model_erase(&model[l], 0);
            }
        } else if (op == 3 && owner[v] >= 0) {
            int o = owner[v];
            pl_list_remove(&nodes[v]);
            model_erase(&model[o], model_find(&model[o], v));
            owner[v] = -1;
        } else if (op == 4 && (r >> 16) % 8 == 0) {  /* splice, rarely */
            pl_list_splice(&lists[l], &lists[1 - l]);
            for (int i = 0; i < model[1 - l].len; i++) {
                owner[model[1 - l].items[i]] = l;
                model_insert(&model[l], model[l].len, model[1 - l].items[i]);
            }
            model[1 - l].len = 0;
        }
        check_list(&lists[0], &model[0], nodes);
        check_list(&lists[1], &model[1], nodes);
        for (int i = 0; i < MODEL_NODES; i++) {
            cr_assert_eq(pl_list_is_linked(&nodes[i]), owner[i] >= 0);
        }
    }
}

/* ---- Wait conditions -----------------------------------------------------
 * Every waiting future declares what it waits for (pl_wait_declare) when
 * it returns PENDING under a watch. A watch here records the declarations
 * of one poll, as the simulator does, and the tests evaluate them by hand
 * at the points where a waiter can be parked. A condition that holds
 * means "this waiter could complete on its next poll": a waiter queued
 * behind others must not hold while the primitive's own rules serve
 * those first. */

#define DECLS_MAX 4

typedef struct decls {
    pl_wait w[DECLS_MAX];
    int n;
} decls;

static void decl_enter(void *ud, pl_future *f)
{
    (void)ud;
    (void)f;
}

static void decl_leave(void *ud, pl_future *f, pl_poll_result r)
{
    (void)ud;
    (void)f;
    (void)r;
}

static void decl_purpose(void *ud) { (void)ud; }

static void decl_wait(void *ud, const pl_wait *w)
{
    decls *d = ud;
    if (d->n < DECLS_MAX) {
        d->w[d->n] = *w;
    }
    d->n++;
}

/* Polls `fut` as task t under a recording watch: d holds what this poll
 * declared, and nothing else. */
static pl_poll_result poll_declaring(void *fut, tw *t, decls *d)
{
    d->n = 0;
    pl_poll_watch watch = {d, decl_enter, decl_leave, decl_wait, decl_purpose, NULL, NULL};
    pl_context cx = cx_of(t, 1);
    cx.watch = &watch;
    return pl_poll((pl_future *)fut, &cx);
}

/* The poll declared exactly one wait, on `object`, about `subject`. */
static void assert_declared(const decls *d, const char *object, const void *subject)
{
    cr_assert_eq(d->n, 1, "%d declarations, want 1", d->n);
    cr_assert_str_eq(d->w[0].object, object);
    cr_assert_eq(d->w[0].subject, subject);
    cr_assert_not_null(d->w[0].condition);
    cr_assert_not_null(d->w[0].file);
    cr_assert_gt(d->w[0].line, 0);
}

static char why[160];

/* Evaluates the declared condition; how it holds lands in `why`. */
static bool holds(const decls *d)
{
    cr_assert_eq(d->n, 1);
    why[0] = '\0';
    return d->w[0].holds(d->w[0].subject, why, sizeof why);
}

static void assert_holds(const decls *d, const char *how)
{
    cr_assert(holds(d), "the condition does not hold, want: %s", how);
    cr_assert_str_eq(why, how);
}

Test(sync, notified_declares_a_notification_and_holds_once_chosen)
{
    pl_notify n = PL_NOTIFY_INIT(n);
    tw a = {.id = 1}, b = {.id = 2};
    pl_notified fa = pl_notified_make(&n), fb = pl_notified_make(&n);
    decls da, db;
    cr_assert_eq(poll_declaring(&fa, &a, &da), PL_PENDING);
    cr_assert_eq(poll_declaring(&fb, &b, &db), PL_PENDING);
    assert_declared(&da, "notify", &fa);
    cr_assert(!holds(&da));
    cr_assert(!holds(&db));

    pl_notify_one(&n);
    assert_holds(&da, "pl_notify_one chose it");
    cr_assert(!holds(&db), "the waiter behind the chosen one is owed nothing");

    decls done;
    cr_assert_eq(poll_declaring(&fa, &a, &done), PL_READY);
    cr_assert_eq(done.n, 0, "a READY poll declares nothing");
    cr_assert(!holds(&da), "a completed waiter waits for nothing");
    cr_assert_eq(poll_declaring(&fb, &b, &db), PL_PENDING, "a spurious poll declares again");
    assert_declared(&db, "notify", &fb);
    cr_assert(!holds(&db));
    pl_drop(&fb.base);
    pl_notify_one(&n);
    cr_assert(pl_notify_has_permit(&n));
    cr_assert(!holds(&db), "a dropped waiter does not hold, even with a permit stored");
    cr_assert_eq(a.live + b.live, 0);
}

/* A broadcast stores nothing: a waiter that registers after it waits for
 * the next notification and must not be reported. */
Test(sync, notified_after_a_broadcast_does_not_hold)
{
    pl_notify n = PL_NOTIFY_INIT(n);
    tw a = {.id = 1}, b = {.id = 2};
    pl_notified fa = pl_notified_make(&n), fb = pl_notified_make(&n);
    decls da, db;
    cr_assert_eq(poll_declaring(&fa, &a, &da), PL_PENDING);
    pl_notify_waiters(&n);
    assert_holds(&da, "pl_notify_waiters released it");
    cr_assert_eq(poll_declaring(&fb, &b, &db), PL_PENDING);
    cr_assert(!holds(&db));
    cr_assert_eq(poll_as(&fa, &a), PL_READY);
    cr_assert(!holds(&da));
    pl_drop(&fb.base);
    cr_assert_eq(a.live + b.live, 0);
}

Test(sync, semaphore_acquire_holds_only_when_fifo_would_grant_it)
{
    pl_semaphore s;
    pl_semaphore_init(&s, 0);
    tw a = {.id = 1}, b = {.id = 2};
    pl_semaphore_acquire big = pl_semaphore_acquire_make(&s, 3);
    pl_semaphore_acquire small = pl_semaphore_acquire_make(&s, 1);
    decls dbig, dsmall;
    cr_assert_eq(poll_declaring(&big, &a, &dbig), PL_PENDING);
    cr_assert_eq(poll_declaring(&small, &b, &dsmall), PL_PENDING);
    assert_declared(&dbig, "semaphore", &big);
    cr_assert(!holds(&dbig));

    pl_semaphore_release(&s, 2);
    cr_assert(!holds(&dbig), "2 free permits do not meet the head's 3");
    cr_assert(!holds(&dsmall), "one behind an unmet head is not owed a permit");

    /* A release that forgot to grant (a broken semaphore): the free
     * permits are counted in FIFO order. */
    s.permits = 3;
    assert_holds(&dbig, "3 permit(s) are free, it needs 3, 0 waiter(s) ahead of it");
    cr_assert(!holds(&dsmall), "the head takes all 3");
    s.permits = 4;
    assert_holds(&dsmall, "4 permit(s) are free, it needs 1, 1 waiter(s) ahead of it");
    s.permits = 2;

    pl_semaphore_release(&s, 1);
    assert_holds(&dbig, "its 3 permit(s) were granted to it");
    cr_assert(!holds(&dsmall));
    pl_drop(&big.base); /* gives its permits back: small is granted */
    cr_assert(!holds(&dbig), "a dropped acquire waits for nothing");
    assert_holds(&dsmall, "its 1 permit(s) were granted to it");
    cr_assert_eq(poll_as(&small, &b), PL_READY);
    cr_assert(!holds(&dsmall));
    cr_assert_eq(a.live + b.live, 0);
}

Test(sync, mutex_lock_holds_once_handed_the_lock)
{
    pl_mutex m;
    pl_mutex_init(&m);
    cr_assert(pl_mutex_try_lock(&m));
    tw a = {.id = 1}, b = {.id = 2};
    pl_mutex_lock la = pl_mutex_lock_make(&m), lb = pl_mutex_lock_make(&m);
    decls da, db;
    cr_assert_eq(poll_declaring(&la, &a, &da), PL_PENDING);
    cr_assert_eq(poll_declaring(&lb, &b, &db), PL_PENDING);
    assert_declared(&da, "mutex", &la);
    cr_assert(!holds(&da));
    cr_assert(!holds(&db));

    /* A mutex left free with waiters (a broken unlock): the head could
     * take it, the one behind could not. */
    m.locked = 0;
    assert_holds(&da, "the mutex is free and it is first in line");
    cr_assert(!holds(&db));
    m.locked = 1;

    pl_mutex_unlock(&m);
    assert_holds(&da, "the lock was handed to it");
    cr_assert(!holds(&db));
    cr_assert_eq(poll_as(&la, &a), PL_READY);
    cr_assert(!holds(&da));
    pl_mutex_unlock(&m);
    assert_holds(&db, "the lock was handed to it");
    pl_drop(&lb.base); /* hands it on: nobody waits, so the mutex is free */
    cr_assert(!holds(&db));
    cr_assert(!pl_mutex_is_locked(&m));
    cr_assert_eq(a.live + b.live, 0);
}

Test(sync, mpsc_recv_holds_with_an_item_or_without_senders)
{
    tw a = {.id = 1};
    int out = 0, v = 5;
    chan3 c;
    chan3_init(&c);
    pl_mpsc_recv r = pl_mpsc_recv_make(&c.ch, &out);
    decls d;
    cr_assert_eq(poll_declaring(&r, &a, &d), PL_PENDING);
    assert_declared(&d, "channel", &r);
    cr_assert(!holds(&d));
    cr_assert_eq(pl_mpsc_try_send(&c.ch, &v), 0);
    assert_holds(&d, "1 item(s) are queued");
    cr_assert_eq(poll_as(&r, &a), PL_READY);
    cr_assert(!holds(&d));

    pl_mpsc_recv r2 = pl_mpsc_recv_make(&c.ch, &out);
    cr_assert_eq(poll_declaring(&r2, &a, &d), PL_PENDING);
    cr_assert(!holds(&d));
    pl_mpsc_sender_drop(&c.ch);
    assert_holds(&d, "every sender is gone");
    cr_assert_eq(poll_as(&r2, &a), PL_READY);
    cr_assert_eq(r2.result, PL_ECLOSED);

    chan3_init(&c);
    pl_mpsc_recv r3 = pl_mpsc_recv_make(&c.ch, &out);
    cr_assert_eq(poll_declaring(&r3, &a, &d), PL_PENDING);
    pl_drop(&r3.base);
    pl_mpsc_close(&c.ch);
    cr_assert(!holds(&d), "a dropped receive waits for nothing");
    cr_assert_eq(a.live, 0);
}

Test(sync, mpsc_send_holds_with_a_reserved_slot_or_a_closed_channel)
{
    tw a = {.id = 1}, b = {.id = 2};
    int out = 0, v1 = 10, v2 = 20;
    chan3 c;
    chan3_init_full(&c);
    pl_mpsc_send s1 = pl_mpsc_send_make(&c.ch, &v1), s2 = pl_mpsc_send_make(&c.ch, &v2);
    decls d1, d2;
    cr_assert_eq(poll_declaring(&s1, &a, &d1), PL_PENDING);
    cr_assert_eq(poll_declaring(&s2, &b, &d2), PL_PENDING);
    assert_declared(&d1, "channel", &s1);
    cr_assert(!holds(&d1));
    cr_assert(!holds(&d2));

    /* A slot freed without a grant (a broken receive): the first send in
     * line could take it, the second could not. */
    c.ch.len--;
    assert_holds(&d1, "1 slot(s) are free, 0 send(s) ahead of it");
    cr_assert(!holds(&d2));
    c.ch.len++;

    cr_assert_eq(pl_mpsc_try_recv(&c.ch, &out), 0);
    assert_holds(&d1, "a slot was reserved for it");
    cr_assert(!holds(&d2), "the freed slot is reserved for the send ahead");
    cr_assert_eq(poll_as(&s1, &a), PL_READY);
    cr_assert(!holds(&d1));
    pl_mpsc_close(&c.ch);
    assert_holds(&d2, "the receiver closed the channel");
    cr_assert_eq(poll_as(&s2, &b), PL_READY);
    cr_assert_eq(s2.result, PL_ECLOSED);
    cr_assert(!holds(&d2));
    cr_assert_eq(a.live + b.live, 0);
}

Test(sync, oneshot_recv_holds_once_sent_or_sender_gone)
{
    tw a = {.id = 1};
    int storage = 0, v = 7;
    pl_oneshot os;
    pl_oneshot_init(&os, &storage, sizeof storage);
    pl_oneshot_recv r = pl_oneshot_recv_make(&os);
    decls d;
    cr_assert_eq(poll_declaring(&r, &a, &d), PL_PENDING);
    assert_declared(&d, "oneshot", &r);
    cr_assert(!holds(&d));
    cr_assert_eq(pl_oneshot_send(&os, &v), 0);
    assert_holds(&d, "a value was sent");
    cr_assert_eq(poll_as(&r, &a), PL_READY);
    cr_assert(!holds(&d));

    pl_oneshot_init(&os, &storage, sizeof storage);
    r = pl_oneshot_recv_make(&os);
    cr_assert_eq(poll_declaring(&r, &a, &d), PL_PENDING);
    cr_assert(!holds(&d));
    pl_oneshot_sender_drop(&os);
    assert_holds(&d, "the sender is gone");
    pl_drop(&r.base);
    cr_assert(!holds(&d), "a dropped receive waits for nothing");
    cr_assert_eq(a.live, 0);
}

/* A task parked on a notify, for the join's condition. */
typedef struct parked {
    pl_future base;
    pl_notify *n;
    pl_notified wait;
} parked;

static pl_poll_result parked_poll(pl_future *f, pl_context *cx)
{
    parked *self = (parked *)f;
    PL_ASYNC_BEGIN(self);
    self->wait = pl_notified_make(self->n);
    PL_AWAIT(cx, &self->wait);
    PL_ASYNC_END;
}

static void parked_drop(pl_future *f) { pl_drop_child(&((parked *)f)->wait.base); }

static const pl_future_vtable parked_vtable = {"parked", parked_poll, parked_drop};

static void join_holds_once_the_task_finishes(bool cancel)
{
    pl_executor *ex = new_executor(false);
    pl_notify n = PL_NOTIFY_INIT(n);
    parked p = {.base = PL_FUTURE_INIT(&parked_vtable), .n = &n};
    pl_task *t;
    cr_assert_eq(PL_SPAWN(ex, p, "sleeper", &t), 0);
    cr_assert_eq(pl_run(ex), PL_EDEADLK, "the task parks on the notify");

    tw a = {.id = 1};
    pl_join j = pl_join_make(t);
    decls d;
    cr_assert_eq(poll_declaring(&j, &a, &d), PL_PENDING);
    assert_declared(&d, "join", &j);
    cr_assert(!holds(&d));
    if (cancel) {
        pl_task_cancel(t);
        assert_holds(&d, "'sleeper' (#1) was cancelled");
    } else {
        pl_notify_one(&n);
        cr_assert_eq(pl_run(ex), 0);
        assert_holds(&d, "'sleeper' (#1) completed");
    }
    cr_assert_eq(a.wakes, 1, "the finish woke the join");
    cr_assert_eq(poll_as(&j, &a), PL_READY);
    cr_assert_eq(j.result, cancel ? PL_ECANCELED : 0);
    cr_assert(!holds(&d), "a completed join waits for nothing");
    pl_drop(&j.base);
    pl_task_release(t);
    pl_executor_destroy(ex);
    cr_assert_eq(a.live, 0);
}

Test(sync, join_holds_once_the_task_completes) { join_holds_once_the_task_finishes(false); }

Test(sync, join_holds_once_the_task_is_cancelled) { join_holds_once_the_task_finishes(true); }

/* ---- Contract violations are assertions --------------------------------- */

Test(sync, unlocking_a_free_mutex_aborts, .signal = SIGABRT)
{
    pl_mutex m;
    pl_mutex_init(&m);
    pl_mutex_unlock(&m);
}

Test(sync, sending_twice_on_a_oneshot_aborts, .signal = SIGABRT)
{
    pl_oneshot os;
    int storage, v = 1;
    pl_oneshot_init(&os, &storage, sizeof storage);
    pl_oneshot_send(&os, &v);
    pl_oneshot_send(&os, &v);
}

Test(sync, acquiring_zero_permits_aborts, .signal = SIGABRT)
{
    pl_semaphore s;
    pl_semaphore_init(&s, 1);
    (void)pl_semaphore_try_acquire(&s, 0);
}

Test(sync, sending_after_the_last_sender_dropped_aborts, .signal = SIGABRT)
{
    chan3 c;
    chan3_init(&c);
    int v = 1;
    pl_mpsc_sender_drop(&c.ch);
    (void)pl_mpsc_try_send(&c.ch, &v);
}
