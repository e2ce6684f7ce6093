/* sim/src/isolate/crash_stack.h: the native stack of a child that died
 * of a fatal signal, for its crash finding.
 *
 * The child (a rerun of a crashed seed, a forked replay) arms a handler
 * that stores the program counters of the crashing thread into memory it
 * shares with its parent, then lets the signal take its course. The
 * parent names each frame: function, file and line through libdw when
 * pollen was built with it (POLLEN_HAVE_LIBDW), else the object file and
 * offset, which `addr2line -f -e FILE OFFSET` names. The child was forked
 * without exec, so its code sits at the parent's addresses: the parent
 * resolves the child's counters in its own address space.
 */
#ifndef POLLEN_SIM_ISOLATE_CRASH_STACK_H
#define POLLEN_SIM_ISOLATE_CRASH_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PL__CRASH_STACK_FRAMES 40

/* Lives in shared memory; zeroed by whoever maps it. n is stored after
 * the counters, so a nonzero n means a complete stack. */
typedef struct pl__crash_stack {
    volatile uint32_t n; /* frames kept, innermost first; 0: none */
    int32_t signo;       /* the fatal signal */
    uintptr_t pc[PL__CRASH_STACK_FRAMES];
} pl__crash_stack;

/* One frame, named. function, file and object are "" when not known. */
typedef struct pl__crash_frame {
    uintptr_t pc;
    uintptr_t offset; /* pc's (a caller's frame: pc - 1's) offset in its object file */
    uint32_t line;    /* 0: not known */
    char function[160];
    char file[256];
    char object[256];
} pl__crash_frame;

/* Child side, before it runs user code: from now on SIGSEGV, SIGBUS,
 * SIGFPE, SIGILL and SIGABRT store the crashing thread's stack into *out
 * (the first fatal signal only), then go on to the handler that was
 * there before (a sanitizer's, the simulated threads' overflow report)
 * or to the default action: the process dies of the signal as it would
 * have. out NULL disarms. Process state: the CLI's single-threaded
 * children only. */
void pl__crash_stack_arm(pl__crash_stack *out);

/* Parent side: names st's frames into out (at most cap); returns how
 * many. Call in the process that forked the child. */
size_t pl__crash_stack_name(const pl__crash_stack *st, pl__crash_frame *out, size_t cap);

/* Gives the calling OS thread an alternate signal stack unless it has
 * one, so a handler runs after a stack overflow; whether it has one
 * now. */
bool pl__altstack_ensure(void);

/* A shared, zeroed stack for one forked child (NULL when mmap failed),
 * and its release (NULL ok). */
pl__crash_stack *pl__crash_stack_map(void);
void pl__crash_stack_unmap(pl__crash_stack *st);

#endif
