/* tests/failalloc.h: fail the N-th allocation of the code under test.
 *
 * For the out-of-memory sweeps (tests/unit/test_oom.c,
 * tests/sim/test_oom.c), in the manner of SQLite's malloc countdown: a
 * first run counts the allocations of a workload, then the workload runs
 * again once for every N, with the N-th allocation failing.
 *
 * How allocations are reached: a binary that includes this header links
 * with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc (see the meson
 * files). The linker then sends every call to those functions from the
 * binary's own objects, which include the static libpollen and
 * libpollen-sim, to the __wrap_ functions below; they count and fail
 * calls only between failalloc_arm and failalloc_disarm, and pass
 * everything else to libc. free is not wrapped: a failing allocation
 * never reaches it. Calls made inside shared libraries (libc itself,
 * Criterion, libxxhash) are not redirected, so Criterion's own memory is
 * never failed. With shared pollen libraries nothing would be counted:
 * failalloc_disarm's count is then 0, which the sweeps assert against.
 *
 * Header-only: include it in exactly one file of a test binary.
 */
#ifndef POLLEN_TEST_FAILALLOC_H
#define POLLEN_TEST_FAILALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct failalloc_state {
    bool armed;       /* counting (and maybe failing) */
    bool persistent;  /* every allocation from fail_at on fails, not only it */
    uint64_t fail_at; /* 1-based index of the allocation to fail; 0: none */
    uint64_t calls;   /* allocations counted since failalloc_arm */
    uint64_t failed;  /* allocations failed since failalloc_arm */
} failalloc_state;

static failalloc_state failalloc;

/* Starts counting; the fail_at-th allocation from now on fails (0: none),
 * and with `persistent` every later one too. */
static inline void failalloc_arm(uint64_t fail_at, bool persistent)
{
    failalloc = (failalloc_state){true, persistent, fail_at, 0, 0};
}

/* Stops counting; returns how many allocations were counted. */
static inline uint64_t failalloc_disarm(void)
{
    failalloc.armed = false;
    return failalloc.calls;
}

/* True when the allocation being made must fail. */
static inline bool failalloc_next_fails(void)
{
    if (!failalloc.armed) {
        return false;
    }
    uint64_t n = ++failalloc.calls;
    bool fail = failalloc.fail_at != 0 &&
                (n == failalloc.fail_at || (failalloc.persistent && n > failalloc.fail_at));
    failalloc.failed += fail;
    return fail;
}

void *__real_malloc(size_t size);
void *__real_calloc(size_t count, size_t size);
void *__real_realloc(void *ptr, size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t count, size_t size);
void *__wrap_realloc(void *ptr, size_t size);

void *__wrap_malloc(size_t size) { return failalloc_next_fails() ? NULL : __real_malloc(size); }

void *__wrap_calloc(size_t count, size_t size)
{
    return failalloc_next_fails() ? NULL : __real_calloc(count, size);
}

/* realloc(p, 0) frees in glibc: a free is not an allocation to fail. */
void *__wrap_realloc(void *ptr, size_t size)
{
    if (size != 0 && failalloc_next_fails()) {
        return NULL;
    }
    return __real_realloc(ptr, size);
}

#endif
