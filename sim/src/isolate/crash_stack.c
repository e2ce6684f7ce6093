/* sim/src/isolate/crash_stack.c: the native stack of a crashed child
 * (crash_stack.h). backtrace() is not on POSIX's list of
 * async-signal-safe calls; it is safe enough here because arming calls
 * it once (glibc loads its unwinder on the first call, which allocates),
 * and the process is dying anyway: at worst the stack is missing. */
#include "isolate/crash_stack.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "sim_assert.h"

#ifdef POLLEN_HAVE_LIBDW
#include <elfutils/libdwfl.h>
#include <unistd.h>
#endif

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define FATAL_SIGNALS (sizeof fatal_signals / sizeof fatal_signals[0])

static pl__crash_stack *armed;
static struct sigaction previous[FATAL_SIGNALS];

/* The interrupted instruction, where the platform says it: the frames
 * above it are the handler's and the kernel's trampoline. */
static uintptr_t interrupted_pc(const void *ucv)
{
    const ucontext_t *uc = ucv;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

static void capture(pl__crash_stack *st, int sig, const void *ucv)
{
    void *frames[PL__CRASH_STACK_FRAMES + 8];
    int got = backtrace(frames, (int)(sizeof frames / sizeof frames[0]));
    uintptr_t at = interrupted_pc(ucv);
    int from = 0;
    for (int i = 0; i < got && at != 0; i++) {
        if ((uintptr_t)frames[i] == at) {
            from = i;
            break;
        }
    }
    uint32_t n = 0;
    for (int i = from; i < got && n < PL__CRASH_STACK_FRAMES; i++) {
        st->pc[n++] = (uintptr_t)frames[i];
    }
    st->signo = sig;
    st->n = n; /* last: a nonzero count means a whole stack */
}

static size_t slot_of(int sig)
{
    for (size_t i = 0; i < FATAL_SIGNALS; i++) {
        if (fatal_signals[i] == sig) {
            return i;
        }
    }
    PL__SIM_ASSERT(false);
    return 0;
}

static void on_fatal(int sig, siginfo_t *si, void *ucv)
{
    pl__crash_stack *st = armed;
    if (st != NULL && st->n == 0) {
        capture(st, sig, ucv);
    }
    /* The handler that was there before takes over: a fault returns to
     * the faulting instruction and raises the signal again under it;
     * a signal sent by a call (abort, raise, kill) is sent again. */
    sigaction(sig, &previous[slot_of(sig)], NULL);
    if (si == NULL || si->si_code <= 0) {
        raise(sig);
    }
}

bool pl__altstack_ensure(void)
{
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0) {
        return false;
    }
    if ((cur.ss_flags & SS_DISABLE) == 0) {
        return true; /* someone (a sanitizer) gave the thread one */
    }
    size_t len = 64 * 1024;
    void *alt = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (alt == MAP_FAILED) {
        return false;
    }
    stack_t ss = {.ss_sp = alt, .ss_size = len, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(alt, len);
        return false;
    }
    return true; /* kept for the OS thread's life */
}

void pl__crash_stack_arm(pl__crash_stack *out)
{
    if (out == NULL) {
        if (armed != NULL) {
            for (size_t i = 0; i < FATAL_SIGNALS; i++) {
                sigaction(fatal_signals[i], &previous[i], NULL);
            }
        }
        armed = NULL;
        return;
    }
    PL__SIM_ASSERT(armed == NULL);
    void *prime[2];
    (void)backtrace(prime, 2);
    (void)pl__altstack_ensure();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < FATAL_SIGNALS; i++) {
        sigaction(fatal_signals[i], &sa, &previous[i]);
    }
    armed = out;
}

pl__crash_stack *pl__crash_stack_map(void)
{
    void *p = mmap(NULL, sizeof(pl__crash_stack), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p; /* anonymous pages start zeroed */
}

void pl__crash_stack_unmap(pl__crash_stack *st)
{
    if (st != NULL) {
        munmap(st, sizeof *st);
    }
}

/* The object file and offset of pc, through the dynamic loader. A
 * caller's frame (every frame after the first) holds a return address,
 * which may be the first byte of the next function or line: pc - 1 is
 * inside the call, as name_lines looks it up. */
static void name_object(pl__crash_frame *fr, bool caller)
{
    uintptr_t pc = fr->pc - caller;
    Dl_info info;
    if (dladdr((void *)pc, &info) == 0 || info.dli_fname == NULL) {
        return;
    }
    snprintf(fr->object, sizeof fr->object, "%s", info.dli_fname);
    fr->offset = pc - (uintptr_t)info.dli_fbase;
    if (info.dli_sname != NULL) {
        snprintf(fr->function, sizeof fr->function, "%s", info.dli_sname);
    }
}

#ifdef POLLEN_HAVE_LIBDW
static void name_lines(pl__crash_frame *out, size_t n)
{
    static const Dwfl_Callbacks callbacks = {
        .find_elf = dwfl_linux_proc_find_elf,
        .find_debuginfo = dwfl_standard_find_debuginfo,
    };
    Dwfl *dwfl = dwfl_begin(&callbacks);
    if (dwfl == NULL) {
        return;
    }
    if (dwfl_linux_proc_report(dwfl, getpid()) == 0 && dwfl_report_end(dwfl, NULL, NULL) == 0) {
        for (size_t i = 0; i < n; i++) {
            /* A return address points past its call: look up the call. */
            Dwarf_Addr pc = out[i].pc - (i > 0);
            Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
            const char *fn = mod != NULL ? dwfl_module_addrname(mod, pc) : NULL;
            if (fn != NULL) {
                snprintf(out[i].function, sizeof out[i].function, "%s", fn);
            }
            Dwfl_Line *line = mod != NULL ? dwfl_module_getsrc(mod, pc) : NULL;
            int lineno = 0;
            const char *file =
                line != NULL ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
            if (file != NULL && lineno > 0) {
                snprintf(out[i].file, sizeof out[i].file, "%s", file);
                out[i].line = (uint32_t)lineno;
            }
        }
    }
    dwfl_end(dwfl);
}
#endif

size_t pl__crash_stack_name(const pl__crash_stack *st, pl__crash_frame *out, size_t cap)
{
    PL__SIM_ASSERT(st != NULL && (out != NULL || cap == 0));
    size_t n = st->n < cap ? st->n : cap;
    PL__SIM_ASSERT(n <= PL__CRASH_STACK_FRAMES);
    for (size_t i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].pc = st->pc[i];
        name_object(&out[i], i > 0);
    }
#ifdef POLLEN_HAVE_LIBDW
    name_lines(out, n);
#endif
    return n;
}
