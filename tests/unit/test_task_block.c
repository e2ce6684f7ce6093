/* The task block: what one spawn allocates, and the task's name while a
 * join is registered in the slot the name shares with the joiner. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
    joining j = {PL_FUTURE_INIT(&joining_vt), pl_join_make(t)};
    pl_task *jt;
    cr_assert_eq(PL_SPAWN(ex, j, "joiner", &jt), 0);
    cr_assert_eq(pl_run(ex), PL_EDEADLK, "both parked: the join is registered");
    cr_assert_str_eq(pl_task_name(t), "worker");
    pl__task_rename(t, "renamed");
    cr_assert_str_eq(pl_task_name(t), "renamed");
    open = true;
    pl_waker_slot_wake(&slot);
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(((joining *)pl_task_future(jt))->join.result, 0);
    cr_assert_str_eq(pl_task_name(t), "renamed", "the join handed the name back");
    pl__task_rename(t, NULL);
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
    joining j = {PL_FUTURE_INIT(&joining_vt), pl_join_make(t)};
    pl_task *jt;
    cr_assert_eq(PL_SPAWN(ex, j, "joiner", &jt), 0);
    cr_assert_eq(pl_run(ex), PL_EDEADLK);
    pl_task_cancel(jt); /* drops the pending join */
    cr_assert_str_eq(pl_task_name(t), "worker");
    pl__task_rename(t, "again");
    cr_assert_str_eq(pl_task_name(t), "again");
    pl_task_release(jt);
    pl_task_cancel(t);
    pl_task_release(t);
    pl_executor_destroy(ex);
}

/* ---- The production executor's arena ------------------------------------ */

/* 48-byte header + 80 bytes: a 128-byte block, where malloc's chunk
 * would be 144 (its 8-byte header, then the next 16 bytes). */
typedef struct block128 {
    pl_future base;
    unsigned char payload[64];
} block128;

static const pl_future_vtable block128_vt = {"block128", ready_now_poll, NULL};

enum { ARENA_TASKS = 40000 }; /* 5 MB of blocks: the chunks up to 1 MB, two of 2 MB */

static pl_task **spawn_blocks(pl_executor *ex, size_t n)
{
    pl_task **h = calloc(n, sizeof *h);
    cr_assert_not_null(h);
    for (size_t i = 0; i < n; i++) {
        block128 b = {.base = PL_FUTURE_INIT(&block128_vt)};
        memset(b.payload, (int)(i & 0xff), sizeof b.payload);
        cr_assert_eq(PL_SPAWN(ex, b, NULL, &h[i]), 0);
    }
    return h;
}

/* Runs the tasks, checks no block overlapped another, releases them. */
static void finish_blocks(pl_executor *ex, pl_task **h, size_t n)
{
    cr_assert_eq(pl_run(ex), 0);
    for (size_t i = 0; i < n; i++) {
        const block128 *b = pl_task_future(h[i]);
        cr_assert_eq(b->payload[0], (unsigned char)(i & 0xff));
        cr_assert_eq(b->payload[sizeof b->payload - 1], (unsigned char)(i & 0xff));
        pl_task_release(h[i]);
    }
    free(h);
}

static uintptr_t addr(const pl_task *t) { return (uintptr_t)(const void *)t; }

Test(task_block, arena_blocks_are_their_size_rounded_to_16_and_chunks_grow_to_2mb)
{
#ifdef PL_TEST_LSAN
    cr_skip_test("a sanitizer build allocates every task block with malloc");
#endif
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    pl_task **h = spawn_blocks(ex, ARENA_TASKS);
    /* One after the other inside a chunk; a new chunk starts 16 bytes in
     * (its header), and from the sixth on (64 KB, 128 KB ... 1 MB before
     * it) chunks are 2 MB, aligned to 2 MB for a huge page. */
    size_t chunks = 1, huge = 0;
    for (size_t i = 1; i < ARENA_TASKS; i++) {
        if (addr(h[i]) == addr(h[i - 1]) + 128) {
            continue;
        }
        chunks++;
        cr_assert_eq(addr(h[i]) % 16, 16 % 16);
        if (chunks >= 6) {
            cr_assert_eq((addr(h[i]) - 16) % (2u << 20), 0, "chunk %zu is not 2 MB-aligned",
                         chunks);
            huge++;
        }
    }
    cr_assert_eq(chunks, 7, "64 KB + ... + 1 MB hold 15,867 blocks, 2 MB 16,383: %zu chunks",
                 chunks);
    cr_assert_eq(huge, 2);
    finish_blocks(ex, h, ARENA_TASKS);
    pl_executor_destroy(ex);
}

Test(task_block, arena_reuses_freed_blocks_last_freed_first)
{
#ifdef PL_TEST_LSAN
    cr_skip_test("a sanitizer build allocates every task block with malloc");
#endif
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    pl_task **h = spawn_blocks(ex, 100);
    uintptr_t before[100];
    for (size_t i = 0; i < 100; i++) {
        before[i] = addr(h[i]);
    }
    finish_blocks(ex, h, 100); /* frees them in spawn order */
    h = spawn_blocks(ex, 100);
    for (size_t i = 0; i < 100; i++) {
        cr_assert_eq(addr(h[i]), before[99 - i], "block %zu is not the %zu-th freed", i, 99 - i);
    }
    /* Another size class does not take the freed blocks of this one. */
    ready_now r = {.base = PL_FUTURE_INIT(&ready_now_vt)};
    pl_task *other;
    cr_assert_eq(PL_SPAWN(ex, r, NULL, &other), 0);
    for (size_t i = 0; i < 100; i++) {
        cr_assert_neq(addr(other), before[i]);
    }
    pl_task_release(other);
    finish_blocks(ex, h, 100);
    pl_executor_destroy(ex);
}

/* With an allocator hook every block goes through it (production_header
 * above); a block above the arena's 512 bytes goes through malloc. */
typedef struct block_big {
    pl_future base;
    unsigned char payload[1024];
} block_big;

static const pl_future_vtable block_big_vt = {"block_big", ready_now_poll, NULL};

Test(task_block, big_blocks_bypass_the_arena)
{
#ifdef PL_TEST_LSAN
    cr_skip_test("a sanitizer build allocates every task block with malloc");
#endif
    manual_system m = {0};
    pl_executor *ex = manual_executor(&m, false, NULL);
    pl_task *small = NULL;
    pl_task *big[2] = {NULL, NULL};
    ready_now r = {.base = PL_FUTURE_INIT(&ready_now_vt)};
    cr_assert_eq(PL_SPAWN(ex, r, NULL, &small), 0);
    for (int i = 0; i < 2; i++) {
        block_big b = {.base = PL_FUTURE_INIT(&block_big_vt)};
        memset(b.payload, i + 1, sizeof b.payload);
        cr_assert_eq(PL_SPAWN(ex, b, NULL, &big[i]), 0);
        /* malloc's own chunk header sits between two of its blocks. */
        uintptr_t a = addr(big[i]), s = addr(small);
        cr_assert(a < s || a >= s + (64u << 10), "a 1 KB block came from the small one's chunk");
    }
    cr_assert_eq(pl_run(ex), 0);
    cr_assert_eq(((block_big *)pl_task_future(big[1]))->payload[1023], 2);
    pl_task_release(small);
    pl_task_release(big[0]);
    pl_task_release(big[1]);
    pl_executor_destroy(ex);
}
