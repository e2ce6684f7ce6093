/* core/backend/pages.c: anonymous memory for the task arena (task_arena.c).
 *
 * The real system's pages: mmap, the arena's 2 MB chunks aligned to 2 MB
 * so that a kernel whose transparent huge pages are on for every mapping
 * (THP "always") may back each with one. No MADV_HUGEPAGE hint: where THP
 * is "madvise" the hint makes page faults compact
 * memory on the spot, and on a virtual machine that hands freed memory
 * back to its host a million-task spawn then took 81 to 361 ns per task
 * from run to run (median 160) against 122 to 141 (median 135) on 4 KB
 * pages. A runtime's spawn should not stall on the kernel's compaction.
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
    return start;
}

void pl__pages_unmap(void *p, size_t bytes) { munmap(p, bytes); }
