/* sim/src/threads/fiber.c: the context switch and the stacks of
 * simulated threads.
 *
 * A switch saves the callee-saved registers on the running stack, stores
 * the stack pointer, loads the other fiber's and returns on its stack: a
 * few dozen instructions and no system call (glibc's swapcontext saves
 * the signal mask with a sigprocmask call each time). x86-64 and aarch64
 * have it in assembly below; other machines fall back to ucontext. The
 * floating-point control words are saved too (callee-saved by the ABIs).
 *
 * Stacks are mmap'ed with a PROT_NONE guard page at their low end, so an
 * overflow faults at once instead of writing over another thread's
 * stack; the crash report names the running thread (check_threads.c).
 * An ended fiber's stack goes to a small process-wide pool, not back to
 * the kernel: a campaign of short threaded runs spent 40% of its time in
 * munmap's TLB flushes. A reused stack holds the previous run's bytes,
 * as thread 0's own stack always did; nothing of the simulator reads
 * them, and a program that reads uninitialized stack is caught by the
 * sanitizers, not made deterministic by fresh zero pages.
 * ASan is told of every switch (__sanitizer_start_switch_fiber and
 * __sanitizer_finish_switch_fiber), without which it takes a switched-to
 * stack for a wild stack and reports false errors.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "isolate/crash_stack.h"
#include "pollen/error.h"
#include "sim_assert.h"
#include "threads.h"

#if defined(__SANITIZE_ADDRESS__)
#define FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBER_ASAN 1
#endif
#endif

#ifdef FIBER_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
/* The stack the latest switch came from, as ASan reported it. */
static _Thread_local const void *came_bottom;
static _Thread_local size_t came_size;
#endif

#if defined(__x86_64__)
#define FIBER_ASM 1
/* pl__fiber_swap(save, sp): pushes rbp rbx r12-r15 and the MXCSR and x87
 * control words, stores rsp in *save, loads sp, pops the same. A new
 * fiber's first "return" lands in pl__fiber_boot with the entry in r13
 * and its argument in r12. */
__asm__(".text\n"
        ".globl pl__fiber_swap\n"
        ".type pl__fiber_swap,@function\n"
        "pl__fiber_swap:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size pl__fiber_swap, .-pl__fiber_swap\n"
        ".globl pl__fiber_boot\n"
        ".type pl__fiber_boot,@function\n"
        "pl__fiber_boot:\n"
        "    movq %r12, %rdi\n"
        "    callq *%r13\n"
        "    ud2\n"
        ".size pl__fiber_boot, .-pl__fiber_boot\n"
        ".section .note.GNU-stack,\"\",@progbits\n"
        ".text\n");

/* The initial frame, lowest address first, as pl__fiber_swap pops it. */
static void *initial_frame(char *top, pl__fiber_entry entry, void *arg)
{
    extern void pl__fiber_boot(void);
    uint64_t *sp = (uint64_t *)(void *)(top - 80); /* top is 16-aligned; see the ret slot */
    sp[0] = 0x1F80u | ((uint64_t)0x037Fu << 32);   /* MXCSR, x87 control word */
    sp[1] = 0;                                     /* r15 */
    sp[2] = 0;                                     /* r14 */
    sp[3] = (uint64_t)(uintptr_t)entry;            /* r13 */
    sp[4] = (uint64_t)(uintptr_t)arg;              /* r12 */
    sp[5] = 0;                                     /* rbx */
    sp[6] = 0;                                     /* rbp */
    sp[7] = (uint64_t)(uintptr_t)pl__fiber_boot;   /* ret: rsp is 16-aligned after it */
    return sp;
}
#elif defined(__aarch64__)
#define FIBER_ASM 1
/* x19-x30 and d8-d15 (the callee-saved registers of AAPCS64), then sp. */
__asm__(".text\n"
        ".globl pl__fiber_swap\n"
        ".type pl__fiber_swap,%function\n"
        "pl__fiber_swap:\n"
        "    sub sp, sp, #160\n"
        "    stp x19, x20, [sp, #0]\n"
        "    stp x21, x22, [sp, #16]\n"
        "    stp x23, x24, [sp, #32]\n"
        "    stp x25, x26, [sp, #48]\n"
        "    stp x27, x28, [sp, #64]\n"
        "    stp x29, x30, [sp, #80]\n"
        "    stp d8, d9, [sp, #96]\n"
        "    stp d10, d11, [sp, #112]\n"
        "    stp d12, d13, [sp, #128]\n"
        "    stp d14, d15, [sp, #144]\n"
        "    mov x2, sp\n"
        "    str x2, [x0]\n"
        "    mov sp, x1\n"
        "    ldp x19, x20, [sp, #0]\n"
        "    ldp x21, x22, [sp, #16]\n"
        "    ldp x23, x24, [sp, #32]\n"
        "    ldp x25, x26, [sp, #48]\n"
        "    ldp x27, x28, [sp, #64]\n"
        "    ldp x29, x30, [sp, #80]\n"
        "    ldp d8, d9, [sp, #96]\n"
        "    ldp d10, d11, [sp, #112]\n"
        "    ldp d12, d13, [sp, #128]\n"
        "    ldp d14, d15, [sp, #144]\n"
        "    add sp, sp, #160\n"
        "    ret\n"
        ".size pl__fiber_swap, .-pl__fiber_swap\n"
        ".globl pl__fiber_boot\n"
        ".type pl__fiber_boot,%function\n"
        "pl__fiber_boot:\n"
        "    mov x0, x19\n"
        "    blr x20\n"
        "    brk #0\n"
        ".size pl__fiber_boot, .-pl__fiber_boot\n"
        ".section .note.GNU-stack,\"\",%progbits\n"
        ".text\n");

static void *initial_frame(char *top, pl__fiber_entry entry, void *arg)
{
    extern void pl__fiber_boot(void);
    uint64_t *sp = (uint64_t *)(void *)(top - 160);
    memset(sp, 0, 160);
    sp[0] = (uint64_t)(uintptr_t)arg;            /* x19 */
    sp[1] = (uint64_t)(uintptr_t)entry;          /* x20 */
    sp[11] = (uint64_t)(uintptr_t)pl__fiber_boot; /* x30 */
    return sp;
}
#else
#include <ucontext.h>
#include <stdlib.h>
#endif

#ifdef FIBER_ASM
void pl__fiber_swap(void **save, void *sp);
#endif

static size_t page_size(void)
{
    static size_t page; /* read once: the SIGSEGV handler uses it too */
    if (page == 0) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? (size_t)p : 4096;
    }
    return page;
}

/* ---- Stack overflows ------------------------------------------------------
 * A fault in the running fiber's guard page is a stack overflow: the
 * handler, on an alternate stack (the faulting one is full), names the
 * thread on stderr, puts back the handler it replaced and returns; the
 * fault repeats and that handler (a sanitizer's, the campaign guard's,
 * the default) reports the crash as before. */

static _Thread_local const pl__fiber *running_fiber;
static _Thread_local const char *running_name;
static _Thread_local uint32_t running_id;
static _Thread_local bool altstack_set;
static struct sigaction previous_segv;

static void put(const char *s)
{
    ssize_t n = write(STDERR_FILENO, s, strlen(s));
    (void)n; /* nothing to do about a failed write from a dying process */
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    const pl__fiber *f = running_fiber;
    if (f != NULL && pl__fiber_in_guard(f, si->si_addr)) {
        char id[12];
        size_t i = sizeof id - 1;
        id[i] = '\0';
        uint32_t v = running_id;
        do {
            id[--i] = (char)('0' + v % 10);
            v /= 10;
        } while (v != 0);
        put("\npollen: stack overflow in simulated thread '");
        put(running_name != NULL ? running_name : "?");
        put("' (#");
        put(id + i);
        put("): it recursed past its stack (PL__THREAD_STACK_BYTES, threads/threads.h)\n");
    }
    sigaction(SIGSEGV, &previous_segv, NULL);
}

/* Per OS thread an alternate signal stack; per process the handler
 * (again when someone replaced it since). */
static void watch_overflows(void)
{
    if (!altstack_set) {
        if (!pl__altstack_ensure()) {
            return;
        }
        altstack_set = true;
    }
    struct sigaction cur;
    if (sigaction(SIGSEGV, NULL, &cur) != 0 ||
        ((cur.sa_flags & SA_SIGINFO) != 0 && cur.sa_sigaction == on_segv)) {
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &previous_segv);
}

void pl__fiber_running(const pl__fiber *f, const char *name, uint32_t id)
{
    running_fiber = f;
    running_name = name;
    running_id = id;
}

/* ---- The stack pool ---------------------------------------------------- */

enum { POOL_MAX = 16 };

/* Mappings (guard page included) of ended fibers, shared by the OS
 * threads that run simulations; kept for the process's life. */
static struct {
    pthread_mutex_t lock;
    uint32_t len;
    void *map[POOL_MAX];
    size_t map_len[POOL_MAX];
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A pooled mapping of len bytes, or NULL. */
static void *pool_take(size_t len)
{
    void *map = NULL;
    pthread_mutex_lock(&pool.lock);
    PL__SIM_ASSERT(pool.len <= POOL_MAX);
    for (uint32_t i = pool.len; i-- > 0;) {
        if (pool.map_len[i] == len) {
            map = pool.map[i];
            pool.len--;
            pool.map[i] = pool.map[pool.len];
            pool.map_len[i] = pool.map_len[pool.len];
            break;
        }
    }
    pthread_mutex_unlock(&pool.lock);
    return map;
}

/* Keeps the mapping for a later fiber, or unmaps it when the pool is full. */
static void pool_give(void *map, size_t len)
{
    pthread_mutex_lock(&pool.lock);
    bool kept = pool.len < POOL_MAX;
    if (kept) {
        pool.map[pool.len] = map;
        pool.map_len[pool.len] = len;
        pool.len++;
    }
    pthread_mutex_unlock(&pool.lock);
    if (!kept) {
        munmap(map, len);
    }
}

/* A fresh mapping of len bytes whose first page is the guard, or NULL. */
static void *stack_map(size_t len, size_t page)
{
    void *map = pool_take(len);
    if (map != NULL) {
        return map;
    }
    map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (map == MAP_FAILED) {
        return NULL;
    }
    if (mprotect(map, page, PROT_NONE) != 0) {
        munmap(map, len);
        return NULL;
    }
    return map;
}

int pl__fiber_create(pl__fiber *f, size_t stack_len, pl__fiber_entry entry, void *arg)
{
    memset(f, 0, sizeof *f);
    size_t page = page_size();
    stack_len = (stack_len + page - 1) / page * page;
    size_t len = stack_len + page;
    void *map = stack_map(len, page);
    if (map == NULL) {
        return PL_ENOMEM;
    }
    watch_overflows();
    f->map = map;
    f->map_len = len;
    f->asan_bottom = (char *)map + page;
    f->asan_size = stack_len;
    char *top = (char *)map + len;
#ifdef FIBER_ASM
    f->sp = initial_frame(top, entry, arg);
#else
    ucontext_t *uc = calloc(1, sizeof *uc);
    if (uc == NULL || getcontext(uc) != 0) {
        free(uc);
        pool_give(map, len);
        f->map = NULL;
        return PL_ENOMEM;
    }
    uc->uc_stack.ss_sp = (char *)map + page;
    uc->uc_stack.ss_size = stack_len;
    uc->uc_link = NULL;
    /* makecontext passes ints; the argument goes through a static-free
     * split into two halves. */
    makecontext(uc, (void (*)(void))entry, 1, arg);
    f->uctx = uc;
    (void)top;
#endif
    return 0;
}

void pl__fiber_destroy(pl__fiber *f)
{
    if (f->map == NULL) {
        return;
    }
#ifdef FIBER_ASAN
    /* Frames left on a stack that never returned stay poisoned in ASan's
     * shadow; the next fiber on this stack must not inherit them. The
     * guard page is not ours to touch. */
    size_t page = page_size();
    __asan_unpoison_memory_region((char *)f->map + page, f->map_len - page);
#endif
    pool_give(f->map, f->map_len);
#ifndef FIBER_ASM
    free(f->uctx);
#endif
    memset(f, 0, sizeof *f);
}

void pl__fiber_switch(pl__fiber *from, pl__fiber *to, bool from_ends)
{
    PL__SIM_ASSERT(from != to);
#ifdef FIBER_ASAN
    __sanitizer_start_switch_fiber(from_ends ? NULL : &from->asan_fake, to->asan_bottom,
                                   to->asan_size);
#else
    (void)from_ends;
#endif
#ifdef FIBER_ASM
    pl__fiber_swap(&from->sp, to->sp);
#else
    if (from->uctx == NULL) {
        from->uctx = calloc(1, sizeof(ucontext_t));
        PL__SIM_ASSERT(from->uctx != NULL);
    }
    swapcontext(from->uctx, to->uctx);
#endif
#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(from->asan_fake, &came_bottom, &came_size);
#endif
}

void pl__fiber_started(void)
{
#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(NULL, &came_bottom, &came_size);
#endif
}

void pl__fiber_note_origin(pl__fiber *origin)
{
#ifdef FIBER_ASAN
    /* Thread 0's stack is not mapped here: ASan tells its bounds the
     * first time a fiber is entered from it. */
    if (origin->map == NULL && origin->asan_size == 0) {
        origin->asan_bottom = came_bottom;
        origin->asan_size = came_size;
    }
#else
    (void)origin;
#endif
}

bool pl__fiber_in_guard(const pl__fiber *f, const void *addr)
{
    if (f->map == NULL) {
        return false;
    }
    const char *a = addr;
    const char *lo = f->map;
    return a >= lo && a < lo + page_size();
}
