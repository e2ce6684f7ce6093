/* The task block: what one spawn allocates, and the task's name while a
 * join is registered in the slot the name shares with the joiner. */
#include <criterion/criterion.h>

#include <pollen/executor.h>
#include <pollen/observer.h>

#include "leakcheck.h"
#include "manual_system.h"

TestSuite(task_block, .fini = pl_test_leak_check);

/* ---- What a spawn allocates ------------------------------------------- */

static size_t last_new_size;

static void *recording_alloc(void *ud, void *ptr, size_t old_size, size_t new_size)
{
    (void)ud, (void)old_size;
    if (new_size == 0) {
        free(ptr);
        return NULL;
    }
    if (ptr == NULL) {
        last_new_size = new_size;
    }
    return realloc(ptr, new_size);
}

typedef struct ready_now {
    pl_future base;
    unsigned char payload[40];
} ready_now;

static pl_poll_result ready_now_poll(pl_future *f, pl_context *cx)
{
    (void)f, (void)cx;
    return PL_READY;
}

static const pl_future_vtable ready_now_vt = {"ready_now", ready_now_poll, NULL};

/* The block the spawn allocated last (the task's: the task array is
 * reserved before it). */
static size_t spawn_block(const pl_observer *obs)
{
    manual_system m = {0};
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.alloc = recording_alloc;
    o.observer = obs;
    pl_executor *ex = manual_executor(&m, false, &o);
    cr_assert_not_null(ex);
    ready_now r = {.base = PL_FUTURE_INIT(&ready_now_vt)};
    cr_assert_eq(PL_SPAWN(ex, r, NULL, NULL), 0);
    size_t bytes = last_new_size;
    cr_assert_eq(pl_run(ex), 0);
    pl_executor_destroy(ex);
    return bytes;
}

Test(task_block, production_header_is_48_bytes)
{
    cr_assert_eq(spawn_block(NULL), 48 + sizeof(ready_now));
}

Test(task_block, observed_tasks_carry_the_16_byte_watch_before_the_header)
{
    static const pl_observer obs = {.version = PL_OBSERVER_VERSION};
    cr_assert_eq(spawn_block(&obs), 16 + 48 + sizeof(ready_now));
}

/* ---- The name while joined -------------------------------------------- */

typedef struct parked {
    pl_future base;
    pl_waker *slot;
    bool *open;
} parked;

static pl_poll_result parked_poll(pl_future *f, pl_context *cx)
{
    parked *p = (parked *)f;
    if (*p->open) {
        return PL_READY;
    }
    pl_waker_slot_set(p->slot, &cx->waker);
    return PL_PENDING;
}

static void parked_drop(pl_future *f) { pl_waker_slot_clear(((parked *)f)->slot); }

static const pl_future_vtable parked_vt = {"parked", parked_poll, parked_drop};

typedef struct joining {
    pl_future base;
    pl_join join;
} joining;

static pl_poll_result joining_poll(pl_future *f, pl_context *cx)
{
    return pl_poll(&((joining *)f)->join.base, cx);
}

static void joining_drop(pl_future *f) { pl_drop(&((joining *)f)->join.base); }

static const pl_future_vtable joining_vt = {"joining", joining_poll, joining_drop};

static void name_survives_a_join(const pl_observer *obs)
{
    manual_system m = {0};
    pl_executor_options o;
    pl_executor_options_default(&o);
    o.observer = obs;
    pl_executor *ex = manual_executor(&m, false, &o);
    pl_waker slot = PL_WAKER_EMPTY;
    bool open = false;
    parked p = {PL_FUTURE_INIT(&parked_vt), &slot, &open};
    pl_task *t;
    cr_assert_eq(PL_SPAWN(ex, p, "worker", &t), 0);
    joining j = {PL_FUTURE_INIT(&joining_vt), pl_join_init(t)};
    pl_task *jt;
    cr_assert_eq(PL_SPAWN(ex, j, "joiner", &jt), 0);
    cr_assert_eq(pl_run(ex), PL_EDEADLK, "both parked: the join is registered");
    cr_assert_str_eq(pl_task_name(t), "worker");
    pl_task_rename(t, "renamed");
    cr_assert_str_eq(pl_task_name(t), "renamed");
    open = true;
    pl_waker_slot_wake(&slot);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(((joining *)pl_task_future(jt))->join.result, 0);
    cr_assert_str_eq(pl_task_name(t), "renamed", "the join handed the name back");
    pl_task_rename(t, NULL);
    cr_assert_str_eq(pl_task_name(t), "parked", "no name: the vtable's");
    pl_task_release(t);
    pl_task_release(jt);
    pl_executor_destroy(ex);
}

Test(task_block, name_is_kept_while_a_join_is_registered) { name_survives_a_join(NULL); }

Test(task_block, name_is_kept_while_a_join_is_registered_observed)
{
    static const pl_observer obs = {.version = PL_OBSERVER_VERSION};
    name_survives_a_join(&obs);
}

/* A join dropped while registered gives the name back too. */
Test(task_block, dropped_join_gives_the_name_back)
{
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    pl_waker slot = PL_WAKER_EMPTY;
    bool open = false;
    parked p = {PL_FUTURE_INIT(&parked_vt), &slot, &open};
    pl_task *t;
    cr_assert_eq(PL_SPAWN(ex, p, "worker", &t), 0);
    joining j = {PL_FUTURE_INIT(&joining_vt), pl_join_init(t)};
    pl_task *jt;
    cr_assert_eq(PL_SPAWN(ex, j, "joiner", &jt), 0);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    pl_task_abort(jt); /* drops the pending join */
    cr_assert_str_eq(pl_task_name(t), "worker");
    pl_task_rename(t, "again");
    cr_assert_str_eq(pl_task_name(t), "again");
    pl_task_release(jt);
    pl_task_abort(t);
    pl_task_release(t);
    pl_executor_destroy(ex);
}
