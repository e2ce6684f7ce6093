/* core/src/task_arena.h: the production executor's memory for task blocks.
 *
 * Task blocks (header and future, task.c) of up to PL__ARENA_BLOCK_MAX
 * bytes are carved from chunks the executor maps itself, in 16-byte size
 * classes with a LIFO free list each; a freed block is kept for the next
 * spawn of its class and every chunk goes back at pl_executor_destroy.
 * Chunks grow from 64 KB to 2 MB; the 2 MB ones are aligned so that the
 * kernel may back them with huge pages (backend/pages.c).
 *
 * Only a production executor with the default allocator uses it
 * (pl__arena_init says): one given an allocator sends every block through
 * it, and an observed one (the simulator) keeps its allocations as they
 * were. Sanitizer builds never use it, so that a block a task outlives is
 * the sanitizer's to report. Executor thread only, like the tasks.
 */
#ifndef POLLEN_TASK_ARENA_H
#define POLLEN_TASK_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"

enum {
    PL__PAGE_BYTES = 4096,
    PL__HUGE_PAGE_BYTES = 2u << 20,
    PL__ARENA_CLASS_BYTES = 16,
    PL__ARENA_CLASSES = 32, /* blocks of 16 to 512 bytes */
    PL__ARENA_BLOCK_MAX = PL__ARENA_CLASSES * PL__ARENA_CLASS_BYTES,
    PL__ARENA_CHUNK_MIN = 64u << 10,
    PL__ARENA_CHUNK_MAX = PL__HUGE_PAGE_BYTES,
};

typedef struct pl__arena_chunk pl__arena_chunk;

typedef struct pl__task_arena {
    bool on;            /* false: every block through ex->alloc */
    unsigned char *cur; /* the newest chunk's unused bytes */
    unsigned char *end;
    pl__arena_chunk *chunks;       /* every chunk, newest first */
    size_t chunk_bytes;            /* size of the next chunk */
    void *free[PL__ARENA_CLASSES]; /* per class: freed blocks, LIFO */
} pl__task_arena;

/* Turns the arena on for a production executor with the default
 * allocator (`wanted`), unless this is a sanitizer build. */
PL_INTERNAL void pl__arena_init(pl__task_arena *a, bool wanted);

/* True when a block of `bytes` comes from the arena. */
static inline bool pl__arena_holds(const pl__task_arena *a, size_t bytes)
{
    return a->on && bytes <= PL__ARENA_BLOCK_MAX;
}

/* Maps a chunk and carves `need` bytes from it (task_arena.c). */
PL_INTERNAL void *pl__arena_alloc_slow(pl__task_arena *a, size_t need);

/* A 16-aligned block of `bytes` (pl__arena_holds must be true), or NULL
 * when no chunk can be mapped. Its contents are undefined. Inline: the
 * pop or the bump is every spawn's. */
static inline void *pl__arena_alloc(pl__task_arena *a, size_t bytes)
{
    size_t cls = (bytes - 1) / PL__ARENA_CLASS_BYTES;
    void *p = a->free[cls];
    if (p != NULL) {
        a->free[cls] = *(void **)p;
        return p;
    }
    size_t need = (cls + 1) * PL__ARENA_CLASS_BYTES;
    if ((size_t)(a->end - a->cur) < need) {
        return pl__arena_alloc_slow(a, need);
    }
    p = a->cur;
    a->cur += need;
    return p;
}

/* Keeps `p`, a block of the same `bytes` from pl__arena_alloc, for the
 * next allocation of its class. */
static inline void pl__arena_free(pl__task_arena *a, void *p, size_t bytes)
{
    void **slot = &a->free[(bytes - 1) / PL__ARENA_CLASS_BYTES];
    *(void **)p = *slot;
    *slot = p;
}

/* Unmaps every chunk: the blocks in them are gone. */
PL_INTERNAL void pl__arena_fini(pl__task_arena *a);

/* backend/pages.c: `bytes` (a multiple of align) of zeroed anonymous
 * memory aligned to `align` (a power of two); NULL when the system has
 * none. */
PL_INTERNAL void *pl__pages_map(size_t bytes, size_t align);
PL_INTERNAL void pl__pages_unmap(void *p, size_t bytes);

#endif
