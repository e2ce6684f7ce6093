/* core/src/task_arena.c: chunks and size classes for task blocks.
 *
 * Why an arena: a spawn was a glibc malloc (a third of the spawn
 * workload's instructions, 8 bytes of chunk header per task and a
 * rounding to the next 16 bytes above that) and its memory came in 4 KB
 * page faults. Here a block is its exact size rounded to 16 bytes, a
 * spawn is a pop or a bump, and the chunks a busy executor maps are 2 MB
 * aligned ranges the kernel may back with one huge page each.
 */
#include "task_arena.h"

#include <stdint.h>

#if defined(__SANITIZE_ADDRESS__)
#define ARENA_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define ARENA_SANITIZED 1
#endif
#endif

/* At the start of each chunk; 16 bytes, so the blocks after it stay
 * 16-aligned. */
struct pl__arena_chunk {
    pl__arena_chunk *next;
    size_t bytes;
};

void pl__arena_init(pl__task_arena *a, bool wanted)
{
    *a = (pl__task_arena){.chunk_bytes = PL__ARENA_CHUNK_MIN};
#ifndef ARENA_SANITIZED
    a->on = wanted;
#else
    (void)wanted;
#endif
}

/* The rest of the current chunk (under one block) is left unused: at
 * most 512 bytes of 64 KB and more. Small executors stay small (their
 * first chunk is 64 KB, touched page by page); each further chunk doubles
 * up to the huge page's 2 MB, aligned to it. */
static int arena_grow(pl__task_arena *a)
{
    size_t bytes = a->chunk_bytes;
    size_t align = bytes >= PL__HUGE_PAGE_BYTES ? PL__HUGE_PAGE_BYTES : PL__PAGE_BYTES;
    pl__arena_chunk *c = pl__pages_map(bytes, align);
    if (c == NULL) {
        return PL_ENOMEM;
    }
    c->next = a->chunks;
    c->bytes = bytes;
    a->chunks = c;
    a->cur = (unsigned char *)(c + 1);
    a->end = (unsigned char *)c + bytes;
    if (bytes < PL__ARENA_CHUNK_MAX) {
        a->chunk_bytes = bytes * 2;
    }
    return 0;
}

void *pl__arena_alloc_slow(pl__task_arena *a, size_t need)
{
    PL_ASSERT(a->on && need <= PL__ARENA_BLOCK_MAX);
    if (arena_grow(a) != 0) {
        return NULL;
    }
    void *p = a->cur;
    a->cur += need;
    return p;
}

void pl__arena_fini(pl__task_arena *a)
{
    pl__arena_chunk *c = a->chunks;
    while (c != NULL) {
        pl__arena_chunk *next = c->next;
        pl__pages_unmap(c, c->bytes);
        c = next;
    }
    pl__arena_init(a, a->on);
}
