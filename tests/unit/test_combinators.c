/* Combinators: join2, join_all, select.
 *
 * Children are controllable futures that count polls and drops, so the
 * tests can assert exactly which child was polled or dropped and when. */
#include <criterion/criterion.h>

#include <pollen/combinators.h>
#include <pollen/error.h>
#include <pollen/executor.h>
#include <pollen/sync.h>

#include "leakcheck.h"

TestSuite(combinators, .fini = pl_test_leak_check);

/* ---- A counting waker (one per simulated task) ------------------------ */

typedef struct tw {
    int wakes;
    int live;   /* clones neither woken nor dropped */
} tw;

static void tw_clone(const pl_waker *w, pl_waker *out)
{
    ((tw *)w->data)->live++;
    *out = *w;
}

static void tw_wake(pl_waker w)
{
    tw *t = w.data;
    t->wakes++;
    t->live--;
}

static void tw_wake_by_ref(const pl_waker *w) { ((tw *)w->data)->wakes++; }

static void tw_drop(pl_waker w) { ((tw *)w.data)->live--; }

static const pl_waker_vtable tw_vtable = {tw_clone, tw_wake, tw_wake_by_ref, tw_drop};

static pl_poll_result poll_as(void *fut, tw *t)
{
    pl_context cx = {{&tw_vtable, t, 1, 0}, NULL, NULL, NULL};
    return pl_poll((pl_future *)fut, &cx);
}

/* ---- A controllable child --------------------------------------------- */

typedef struct ctl {
    pl_future base;
    bool ready;
    int polls;
    int drops;
    pl_waker waker;
} ctl;

static pl_poll_result ctl_poll(pl_future *f, pl_context *cx)
{
    ctl *c = (ctl *)f;
    c->polls++;
    if (c->ready) {
        pl_waker_slot_clear(&c->waker);
        return PL_READY;
    }
    pl_waker_slot_set(&c->waker, &cx->waker);
    return PL_PENDING;
}

static void ctl_drop(pl_future *f)
{
    ctl *c = (ctl *)f;
    c->drops++;
    pl_waker_slot_clear(&c->waker);
}

static const pl_future_vtable ctl_vtable = {"ctl", ctl_poll, ctl_drop};

static ctl ctl_init(bool ready)
{
    return (ctl){PL_FUTURE_INIT(&ctl_vtable), ready, 0, 0, PL_WAKER_EMPTY};
}

static void ctl_fire(ctl *c)
{
    c->ready = true;
    pl_waker_slot_wake(&c->waker);
}

/* ---- join2 ------------------------------------------------------------ */

Test(combinators, join2_is_lazy_and_waits_for_both)
{
    tw t = {0};
    ctl a = ctl_init(false), b = ctl_init(false);
    pl_join2 j = pl_join2_make(&a.base, &b.base);
    cr_assert_eq(a.polls + b.polls, 0, "init polls nothing");
    cr_assert_eq(poll_as(&j, &t), PL_PENDING);
    cr_assert_eq(a.polls, 1);
    cr_assert_eq(b.polls, 1);
    ctl_fire(&a);
    cr_assert_eq(t.wakes, 1);
    cr_assert_eq(poll_as(&j, &t), PL_PENDING);
    cr_assert_eq(a.polls, 2);
    cr_assert(pl_future_is_done(&a.base));
    cr_assert_eq(poll_as(&j, &t), PL_PENDING, "spurious poll");
    cr_assert_eq(a.polls, 2, "a finished child is never polled again");
    cr_assert_eq(b.polls, 3);
    ctl_fire(&b);
    cr_assert_eq(poll_as(&j, &t), PL_READY);
    cr_assert_eq(a.polls, 2);
    cr_assert_eq(b.polls, 4);
    cr_assert_eq(a.drops + b.drops, 0);
    cr_assert_eq(t.live, 0);
}

Test(combinators, join2_ready_children_complete_on_first_poll)
{
    tw t = {0};
    ctl a = ctl_init(true), b = ctl_init(true);
    pl_join2 j = pl_join2_make(&a.base, &b.base);
    cr_assert_eq(poll_as(&j, &t), PL_READY);
    cr_assert_eq(a.polls, 1);
    cr_assert_eq(b.polls, 1);
    cr_assert_eq(t.live, 0);
}

Test(combinators, join2_drop_drops_only_unfinished_children)
{
    tw t = {0};
    ctl a = ctl_init(true), b = ctl_init(false);
    pl_join2 j = pl_join2_make(&a.base, &b.base);
    cr_assert_eq(poll_as(&j, &t), PL_PENDING);
    cr_assert_eq(t.live, 1);
    pl_drop(&j.base);
    cr_assert_eq(a.drops, 0, "the finished child belongs to the caller");
    cr_assert_eq(b.drops, 1);
    cr_assert_eq(t.live, 0);
}

Test(combinators, join2_unpolled_drop_drops_both)
{
    ctl a = ctl_init(false), b = ctl_init(false);
    pl_join2 j = pl_join2_make(&a.base, &b.base);
    pl_drop(&j.base);
    cr_assert_eq(a.drops, 1);
    cr_assert_eq(b.drops, 1);
    cr_assert_eq(a.polls + b.polls, 0);
}

/* ---- join_all --------------------------------------------------------- */

Test(combinators, join_all_waits_for_every_child)
{
    tw t = {0};
    ctl c[4] = {ctl_init(false), ctl_init(true), ctl_init(false), ctl_init(false)};
    pl_future *kids[4] = {&c[0].base, &c[1].base, &c[2].base, &c[3].base};
    pl_join_all j = pl_join_all_make(kids, 4);
    cr_assert_eq(poll_as(&j, &t), PL_PENDING);
    cr_assert_eq(j.remaining, 3);
    ctl_fire(&c[3]);
    ctl_fire(&c[0]);
    cr_assert_eq(poll_as(&j, &t), PL_PENDING);
    cr_assert_eq(j.remaining, 1);
    const int polls_mid[4] = {2, 1, 2, 2};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(c[i].polls, polls_mid[i], "child %d polled %d times", i, c[i].polls);
    }
    ctl_fire(&c[2]);
    cr_assert_eq(poll_as(&j, &t), PL_READY);
    cr_assert_eq(j.remaining, 0);
    const int polls_end[4] = {2, 1, 3, 2};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(c[i].polls, polls_end[i]);
        cr_assert_eq(c[i].drops, 0);
    }
    cr_assert_eq(t.live, 0);
}

Test(combinators, join_all_of_nothing_is_ready)
{
    tw t = {0};
    pl_join_all j = pl_join_all_make(NULL, 0);
    cr_assert_eq(poll_as(&j, &t), PL_READY);
}

Test(combinators, join_all_drop_drops_only_unfinished_children)
{
    tw t = {0};
    ctl c[3] = {ctl_init(false), ctl_init(true), ctl_init(false)};
    pl_future *kids[3] = {&c[0].base, &c[1].base, &c[2].base};
    pl_join_all j = pl_join_all_make(kids, 3);
    cr_assert_eq(poll_as(&j, &t), PL_PENDING);
    pl_drop(&j.base);
    cr_assert_eq(c[0].drops, 1);
    cr_assert_eq(c[1].drops, 0);
    cr_assert_eq(c[2].drops, 1);
    cr_assert_eq(t.live, 0);
}

/* ---- select ----------------------------------------------------------- */

Test(combinators, select_first_ready_wins_and_losers_are_dropped_at_once)
{
    tw t = {0};
    ctl c[3] = {ctl_init(false), ctl_init(false), ctl_init(false)};
    pl_future *kids[3] = {&c[0].base, &c[1].base, &c[2].base};
    pl_select s = pl_select_make(kids, 3);
    cr_assert_eq(c[0].polls, 0, "lazy");
    cr_assert_eq(poll_as(&s, &t), PL_PENDING);
    cr_assert_eq(t.live, 3);
    cr_assert_eq(poll_as(&s, &t), PL_PENDING, "spurious poll");
    cr_assert_eq(t.live, 3, "children kept their clones");
    ctl_fire(&c[1]);
    cr_assert_eq(t.wakes, 1);
    cr_assert_eq(poll_as(&s, &t), PL_READY);
    cr_assert_eq(s.index, 1);
    cr_assert_eq(c[0].drops, 1);
    cr_assert_eq(c[1].drops, 0, "the winner is not dropped");
    cr_assert_eq(c[2].drops, 1);
    cr_assert_eq(c[2].polls, 2, "children after the winner are not polled again");
    cr_assert_eq(t.live, 0, "the losers released their wakers");
    pl_drop(&s.base);
    cr_assert_eq(c[0].drops + c[1].drops + c[2].drops, 2, "no second drop");
}

Test(combinators, select_is_biased_to_the_lowest_index)
{
    tw t = {0};
    ctl c[2] = {ctl_init(true), ctl_init(true)};
    pl_future *kids[2] = {&c[0].base, &c[1].base};
    pl_select s = pl_select_make(kids, 2);
    cr_assert_eq(poll_as(&s, &t), PL_READY);
    cr_assert_eq(s.index, 0);
    cr_assert_eq(c[1].polls, 0);
    cr_assert_eq(c[1].drops, 1);
}

Test(combinators, select_child_finished_before_wins_without_a_poll)
{
    tw t = {0};
    ctl c[2] = {ctl_init(false), ctl_init(true)};
    cr_assert_eq(poll_as(&c[1], &t), PL_READY);
    pl_future *kids[2] = {&c[0].base, &c[1].base};
    pl_select s = pl_select_make(kids, 2);
    cr_assert_eq(poll_as(&s, &t), PL_READY);
    cr_assert_eq(s.index, 1);
    cr_assert_eq(c[1].polls, 1);
    cr_assert_eq(c[0].drops, 1);
    cr_assert_eq(t.live, 0);
}

Test(combinators, select_drop_before_completion_drops_every_child)
{
    tw t = {0};
    ctl c[3] = {ctl_init(false), ctl_init(false), ctl_init(false)};
    pl_future *kids[3] = {&c[0].base, &c[1].base, &c[2].base};
    pl_select s = pl_select_make(kids, 3);
    cr_assert_eq(poll_as(&s, &t), PL_PENDING);
    pl_drop(&s.base);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(c[i].drops, 1);
    }
    cr_assert_eq(t.live, 0);
}

Test(combinators, select_over_notified_drops_the_losing_waiter)
{
    tw t = {0};
    pl_notify a, b;
    pl_notify_init(&a);
    pl_notify_init(&b);
    pl_notified na = pl_notified_make(&a), nb = pl_notified_make(&b);
    pl_future *kids[2] = {&na.base, &nb.base};
    pl_select s = pl_select_make(kids, 2);
    cr_assert_eq(poll_as(&s, &t), PL_PENDING);
    pl_notify_one(&b);
    cr_assert_eq(poll_as(&s, &t), PL_READY);
    cr_assert_eq(s.index, 1);
    cr_assert_eq(t.live, 0);
    pl_notify_one(&a);
    cr_assert(pl_notify_has_permit(&a), "the dropped loser no longer waits on a");
    cr_assert_eq(t.wakes, 1);
}

Test(combinators, select_loser_chosen_by_notify_one_passes_it_on)
{
    tw t = {0}, other = {0};
    pl_notify n;
    pl_notify_init(&n);
    ctl c = ctl_init(false);
    pl_notified mine = pl_notified_make(&n), theirs = pl_notified_make(&n);
    pl_future *kids[2] = {&c.base, &mine.base};
    pl_select s = pl_select_make(kids, 2);
    cr_assert_eq(poll_as(&s, &t), PL_PENDING);
    cr_assert_eq(poll_as(&theirs, &other), PL_PENDING);
    pl_notify_one(&n);  /* chooses `mine`, the older waiter */
    c.ready = true;     /* both are ready now; index 0 wins */
    cr_assert_eq(poll_as(&s, &t), PL_READY);
    cr_assert_eq(s.index, 0);
    cr_assert_eq(other.wakes, 1, "the losing waiter's notification went on");
    cr_assert_eq(poll_as(&theirs, &other), PL_READY);
    cr_assert_eq(t.live + other.live, 0);
}

/* ---- On the executor ---------------------------------------------------- */

typedef struct shared {
    pl_notify go_a;
    pl_notify go_b;
    int steps;
} shared;

/* Waits for both notifies with join2, then for either with select. */
typedef struct waiter {
    pl_future base;
    shared *sh;
    pl_notified na;
    pl_notified nb;
    pl_join2 join;
    pl_future *kids[2];
    pl_select sel;
    size_t winner;
} waiter;

static pl_poll_result waiter_poll(pl_future *f, pl_context *cx)
{
    waiter *self = (waiter *)f;
    PL_ASYNC_BEGIN(self);
    self->na = pl_notified_make(&self->sh->go_a);
    self->nb = pl_notified_make(&self->sh->go_b);
    self->join = pl_join2_make(&self->na.base, &self->nb.base);
    PL_AWAIT(cx, &self->join);
    self->sh->steps++;
    self->na = pl_notified_make(&self->sh->go_a);
    self->nb = pl_notified_make(&self->sh->go_b);
    self->kids[0] = &self->na.base;
    self->kids[1] = &self->nb.base;
    self->sel = pl_select_make(self->kids, 2);
    PL_AWAIT(cx, &self->sel);
    self->winner = self->sel.index;
    self->sh->steps++;
    PL_ASYNC_END;
}

static const pl_future_vtable waiter_vtable = {"waiter", waiter_poll, NULL};

typedef struct kicker {
    pl_future base;
    shared *sh;
} kicker;

/* Notifies b, yields, notifies a (join completes), yields, notifies b. */
static pl_poll_result kicker_poll(pl_future *f, pl_context *cx)
{
    kicker *self = (kicker *)f;
    PL_ASYNC_BEGIN(self);
    pl_notify_one(&self->sh->go_b);
    PL_YIELD(cx);
    pl_notify_one(&self->sh->go_a);
    PL_YIELD(cx);
    PL_YIELD(cx);
    pl_notify_one(&self->sh->go_b);
    PL_ASYNC_END;
}

static const pl_future_vtable kicker_vtable = {"kicker", kicker_poll, NULL};

Test(combinators, join2_then_select_on_the_executor)
{
    pl_executor *ex;
    cr_assert_eq(pl_executor_create(&ex, NULL), 0);
    shared sh = {.steps = 0};
    pl_notify_init(&sh.go_a);
    pl_notify_init(&sh.go_b);
    waiter w = {.base = PL_FUTURE_INIT(&waiter_vtable), .sh = &sh};
    kicker k = {.base = PL_FUTURE_INIT(&kicker_vtable), .sh = &sh};
    pl_task *tw_handle;
    cr_assert_eq(PL_SPAWN(ex, w, "waiter", &tw_handle), 0);
    cr_assert_eq(PL_SPAWN(ex, k, "kicker", NULL), 0);
    cr_assert_eq(pl_run(ex), 0);
    waiter *done = pl_task_future(tw_handle);
    cr_assert_eq(sh.steps, 2);
    cr_assert_eq(done->winner, 1);
    cr_assert(!pl_notify_has_permit(&sh.go_a), "the select's loser took no permit");
    cr_assert(!pl_notify_has_permit(&sh.go_b));
    pl_task_release(tw_handle);
    pl_executor_destroy(ex);
}
