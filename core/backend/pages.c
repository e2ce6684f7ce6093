/* core/backend/pages.c: anonymous memory for the task arena (task_arena.c).
 *
 * The real system's pages: mmap, and for the arena's 2 MB chunks a hint
 * that the kernel may back them with transparent huge pages. A million
 * parked tasks are 128 MB; faulted in 4 KB at a time that is 32,000 page
 * faults, a third of the spawn workload's time, and 64 with huge pages.
 */
#include <stdint.h>
#include <sys/mman.h>

#include "task_arena.h"

void *pl__pages_map(size_t bytes, size_t align)
{
    PL_ASSERT(align != 0 && (align & (align - 1)) == 0 && bytes % align == 0);
    /* Over-map by the alignment and give back the ends: mmap only
     * promises page alignment, and a huge page needs an aligned range. */
    size_t span = align > PL__PAGE_BYTES ? bytes + align : bytes;
    unsigned char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        return NULL;
    }
    if (span == bytes) {
        return p;
    }
    uintptr_t at = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
    unsigned char *start = (unsigned char *)at;
    if (start > p) {
        munmap(p, (size_t)(start - p));
    }
    size_t tail = (size_t)(p + span - (start + bytes));
    if (tail != 0) {
        munmap(start + bytes, tail);
    }
#ifdef MADV_HUGEPAGE
    if (align >= PL__HUGE_PAGE_BYTES) {
        (void)madvise(start, bytes, MADV_HUGEPAGE); /* a hint: refused, 4 KB pages stay */
    }
#endif
    return start;
}

void pl__pages_unmap(void *p, size_t bytes) { munmap(p, bytes); }
