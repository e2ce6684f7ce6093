/* pollen/sim_pthread.h: an unmodified pthread program under the simulator.
 *
 * Force-include this header into every file of a program that uses
 * pthreads, POSIX semaphores, sched_yield, C11 atomics and assert, and
 * link it with libpollen-sim-pthread:
 *
 *   cc -include pollen/sim_pthread.h prog.c $(pkg-config --cflags --libs pollen-sim-pthread)
 *
 * The result is a pollen CLI binary with one scenario, "main", whose run
 * is the program: `./prog run main --seeds 0..9999`, `replay`, `shrink`,
 * `list`. The program's main() runs on a simulated thread; each thread
 * it creates is another, and every pthread call, semaphore call,
 * sched_yield and C11 atomic operation is a schedule point whose switch is
 * a recorded decision. A failed assert, abort() and a nonzero exit status
 * are assertion findings, threads that all block are a deadlock, and each
 * finding comes with a replay file.
 *
 * How: each name below is a macro that renames the call to a
 * pl_sim_pthread_* function with exactly glibc's signature and types
 * (pthread_mutex_t and the others keep their glibc layout; the simulator
 * keeps its own state per run, found through a tag it writes into the
 * object's bytes). The header declares nothing itself: glibc's own
 * declarations, renamed, declare the functions, so a program that writes
 * the prototypes out itself (a preprocessed source) compiles the same.
 * It does include <stdatomic.h> (to redefine its generic functions with a
 * schedule point first), which may include <stdint.h> (clang's does): a
 * preprocessed source, which holds those declarations already and whose
 * atomics are expanded already, is compiled with
 * -DPL_SIM_PTHREAD_NO_ATOMICS.
 *
 * The program's globals: every run starts with the values the program's
 * files had when the process entered main (their .data and .bss are
 * copied then and copied back before each run), so thousands of runs in
 * one process see what one production run sees. That covers the files
 * compiled with this header (the pkg-config flags add -fno-common, so
 * every zero-initialized global is in .bss); a library linked in without
 * it keeps its state across runs.
 *
 * Return codes and errno are glibc's (pthread_* return an error number,
 * sem_* return -1 and set errno). Where a call is allowed: in the
 * program's main and the threads it creates, that is inside a run; a
 * call from a constructor, a destructor or another OS thread prints why
 * and aborts (clock and exit calls fall back to the real ones there).
 * Ownership is POSIX's: the program allocates every object; the shim's
 * per-run state behind an object is freed with the run.
 *
 * Not covered (docs/threads.md, "Unmodified pthread programs"): plain loads and
 * stores are not schedule points; no weak memory (every atomic is
 * sequentially consistent); no signals, fork, cancellation, robust or
 * process-shared objects, thread priorities or affinity; blocking I/O
 * calls really block (and are not points); _Thread_local variables are
 * per OS thread, so shared by every simulated thread.
 */
#ifndef POLLEN_SIM_PTHREAD_H
#define POLLEN_SIM_PTHREAD_H

/* ---- Threads ------------------------------------------------------------ */
#define pthread_create pl_sim_pthread_create
#define pthread_join pl_sim_pthread_join
#define pthread_tryjoin_np pl_sim_pthread_tryjoin_np
#define pthread_timedjoin_np pl_sim_pthread_timedjoin_np
#define pthread_detach pl_sim_pthread_detach
#define pthread_exit pl_sim_pthread_exit
#define pthread_self pl_sim_pthread_self
#define pthread_equal pl_sim_pthread_equal
#define pthread_setname_np pl_sim_pthread_setname_np
#define pthread_getname_np pl_sim_pthread_getname_np
#define pthread_cancel pl_sim_pthread_cancel
#define pthread_kill pl_sim_pthread_kill
#define pthread_once pl_sim_pthread_once
#define pthread_key_create pl_sim_pthread_key_create
#define pthread_key_delete pl_sim_pthread_key_delete
#define pthread_getspecific pl_sim_pthread_getspecific
#define pthread_setspecific pl_sim_pthread_setspecific
#define sched_yield pl_sim_pthread_sched_yield

/* ---- Mutexes, condition variables --------------------------------------- */
#define pthread_mutex_init pl_sim_pthread_mutex_init
#define pthread_mutex_destroy pl_sim_pthread_mutex_destroy
#define pthread_mutex_lock pl_sim_pthread_mutex_lock
#define pthread_mutex_trylock pl_sim_pthread_mutex_trylock
#define pthread_mutex_timedlock pl_sim_pthread_mutex_timedlock
#define pthread_mutex_clocklock pl_sim_pthread_mutex_clocklock
#define pthread_mutex_unlock pl_sim_pthread_mutex_unlock
#define pthread_cond_init pl_sim_pthread_cond_init
#define pthread_cond_destroy pl_sim_pthread_cond_destroy
#define pthread_cond_wait pl_sim_pthread_cond_wait
#define pthread_cond_timedwait pl_sim_pthread_cond_timedwait
#define pthread_cond_clockwait pl_sim_pthread_cond_clockwait
#define pthread_cond_signal pl_sim_pthread_cond_signal
#define pthread_cond_broadcast pl_sim_pthread_cond_broadcast

/* ---- Read-write locks, barriers, spinlocks ------------------------------ */
#define pthread_rwlock_init pl_sim_pthread_rwlock_init
#define pthread_rwlock_destroy pl_sim_pthread_rwlock_destroy
#define pthread_rwlock_rdlock pl_sim_pthread_rwlock_rdlock
#define pthread_rwlock_tryrdlock pl_sim_pthread_rwlock_tryrdlock
#define pthread_rwlock_timedrdlock pl_sim_pthread_rwlock_timedrdlock
#define pthread_rwlock_wrlock pl_sim_pthread_rwlock_wrlock
#define pthread_rwlock_trywrlock pl_sim_pthread_rwlock_trywrlock
#define pthread_rwlock_timedwrlock pl_sim_pthread_rwlock_timedwrlock
#define pthread_rwlock_unlock pl_sim_pthread_rwlock_unlock
#define pthread_barrier_init pl_sim_pthread_barrier_init
#define pthread_barrier_destroy pl_sim_pthread_barrier_destroy
#define pthread_barrier_wait pl_sim_pthread_barrier_wait
#define pthread_spin_init pl_sim_pthread_spin_init
#define pthread_spin_destroy pl_sim_pthread_spin_destroy
#define pthread_spin_lock pl_sim_pthread_spin_lock
#define pthread_spin_trylock pl_sim_pthread_spin_trylock
#define pthread_spin_unlock pl_sim_pthread_spin_unlock

/* ---- Semaphores ------------------------------------------------------------ */
#define sem_init pl_sim_pthread_sem_init
#define sem_destroy pl_sim_pthread_sem_destroy
#define sem_wait pl_sim_pthread_sem_wait
#define sem_trywait pl_sim_pthread_sem_trywait
#define sem_timedwait pl_sim_pthread_sem_timedwait
#define sem_clockwait pl_sim_pthread_sem_clockwait
#define sem_post pl_sim_pthread_sem_post
#define sem_getvalue pl_sim_pthread_sem_getvalue

/* ---- The process: exit, abort, assert, clocks, sleeps ----------------------
 * Generic names are function-like macros (a variable named `time` keeps
 * its name); abort and sched_yield take no argument, so they are renamed
 * as names. glibc's assert expands to __assert_fail, renamed here, so
 * assert reports through pollen whichever header comes first. */
#define abort pl_sim_pthread_abort
#define __assert_fail pl_sim_pthread_assert_fail
#define __assert_perror_fail pl_sim_pthread_assert_perror_fail
#define exit(status) pl_sim_pthread_exit_process(status)
#define _Exit(status) pl_sim_pthread__Exit(status)
#define _exit(status) pl_sim_pthread__exit(status)
#define quick_exit(status) pl_sim_pthread__Exit(status)
#define atexit(fn) pl_sim_pthread_atexit(fn)
#define time(t) pl_sim_pthread_time(t)
#define clock_gettime(clk, ts) pl_sim_pthread_clock_gettime(clk, ts)
#define gettimeofday(tv, tz) pl_sim_pthread_gettimeofday(tv, tz)
#define sleep(s) pl_sim_pthread_sleep(s)
#define usleep(us) pl_sim_pthread_usleep(us)
#define nanosleep(req, rem) pl_sim_pthread_nanosleep(req, rem)

/* The program's main becomes the scenario's body; the library has the
 * process's main (pl_main over the one scenario). main may take
 * (void), (int, char **) or (int, char **, char **), so no prototype can
 * be declared for it: -Wmissing-prototypes, which main is exempt from,
 * is turned off for the file. */
#ifndef PL_SIM_PTHREAD_IMPL
#define main pl_sim_pthread_user_main
#pragma GCC diagnostic ignored "-Wmissing-prototypes"
#endif

/* ---- C11 atomics: a schedule point, then the operation ----------------------
 * Every generic function of <stdatomic.h> that reads or writes an atomic
 * object is a point first (the operation itself is never split);
 * atomic_init, fences and plain accesses to _Atomic objects (x++, x = 1)
 * are not points. */
void pl_sim_pthread_point(const char *file, int line, const char *func, unsigned what);
#define PL__SIM_PT_POINT(what) pl_sim_pthread_point(__FILE__, __LINE__, __func__, (what))

#if !defined(PL_SIM_PTHREAD_NO_ATOMICS) && !defined(PL_SIM_PTHREAD_IMPL) &&                  \
    !defined(__STDC_NO_ATOMICS__) && !defined(__cplusplus)
#include <stdatomic.h>

#undef atomic_load
#undef atomic_load_explicit
#undef atomic_store
#undef atomic_store_explicit
#undef atomic_exchange
#undef atomic_exchange_explicit
#undef atomic_compare_exchange_strong
#undef atomic_compare_exchange_strong_explicit
#undef atomic_compare_exchange_weak
#undef atomic_compare_exchange_weak_explicit
#undef atomic_fetch_add
#undef atomic_fetch_add_explicit
#undef atomic_fetch_sub
#undef atomic_fetch_sub_explicit
#undef atomic_fetch_or
#undef atomic_fetch_or_explicit
#undef atomic_fetch_xor
#undef atomic_fetch_xor_explicit
#undef atomic_fetch_and
#undef atomic_fetch_and_explicit
#undef atomic_flag_test_and_set
#undef atomic_flag_test_and_set_explicit
#undef atomic_flag_clear
#undef atomic_flag_clear_explicit

#if defined(__clang__)
#define PL__SIM_A_LOAD(p, mo) __c11_atomic_load(p, mo)
#define PL__SIM_A_STORE(p, v, mo) __c11_atomic_store(p, v, mo)
#define PL__SIM_A_XCHG(p, v, mo) __c11_atomic_exchange(p, v, mo)
#define PL__SIM_A_CAS(p, e, d, weak, s, f)                                                   \
    ((weak) ? __c11_atomic_compare_exchange_weak(p, e, d, s, f)                              \
            : __c11_atomic_compare_exchange_strong(p, e, d, s, f))
#define PL__SIM_A_FETCH(op, p, v, mo) __c11_atomic_fetch_##op(p, v, mo)
#define PL__SIM_A_FLAG_SET(p, mo) __c11_atomic_exchange(&(p)->_Value, 1, mo)
#define PL__SIM_A_FLAG_CLEAR(p, mo) __c11_atomic_store(&(p)->_Value, 0, mo)
#else
/* GNU C: the __atomic built-ins on a non-atomic copy of the value type
 * ((void)0, *p drops the _Atomic qualifier). */
#define PL__SIM_A_LOAD(p, mo)                                                                 \
    __extension__({                                                                           \
        __auto_type pl__a_p = (p);                                                            \
        __typeof__((void)0, *pl__a_p) pl__a_v;                                                \
        __atomic_load(pl__a_p, &pl__a_v, (mo));                                               \
        pl__a_v;                                                                              \
    })
#define PL__SIM_A_STORE(p, v, mo)                                                             \
    __extension__({                                                                           \
        __auto_type pl__a_p = (p);                                                            \
        __typeof__((void)0, *pl__a_p) pl__a_v = (v);                                          \
        __atomic_store(pl__a_p, &pl__a_v, (mo));                                              \
    })
#define PL__SIM_A_XCHG(p, v, mo)                                                              \
    __extension__({                                                                           \
        __auto_type pl__a_p = (p);                                                            \
        __typeof__((void)0, *pl__a_p) pl__a_v = (v), pl__a_old;                               \
        __atomic_exchange(pl__a_p, &pl__a_v, &pl__a_old, (mo));                               \
        pl__a_old;                                                                            \
    })
#define PL__SIM_A_CAS(p, e, d, weak, s, f)                                                    \
    __extension__({                                                                           \
        __auto_type pl__a_p = (p);                                                            \
        __typeof__((void)0, *pl__a_p) pl__a_d = (d);                                          \
        __atomic_compare_exchange(pl__a_p, (e), &pl__a_d, (weak), (s), (f));                  \
    })
#define PL__SIM_A_FETCH(op, p, v, mo) __atomic_fetch_##op((p), (v), (mo))
#define PL__SIM_A_FLAG_SET(p, mo) __atomic_test_and_set((p), (mo))
#define PL__SIM_A_FLAG_CLEAR(p, mo) __atomic_clear((p), (mo))
#endif

#define PL__SIM_SC memory_order_seq_cst
#define atomic_load_explicit(p, mo) (PL__SIM_PT_POINT(0u), PL__SIM_A_LOAD(p, mo))
#define atomic_load(p) atomic_load_explicit(p, PL__SIM_SC)
#define atomic_store_explicit(p, v, mo) (PL__SIM_PT_POINT(1u), PL__SIM_A_STORE(p, v, mo))
#define atomic_store(p, v) atomic_store_explicit(p, v, PL__SIM_SC)
#define atomic_exchange_explicit(p, v, mo) (PL__SIM_PT_POINT(1u), PL__SIM_A_XCHG(p, v, mo))
#define atomic_exchange(p, v) atomic_exchange_explicit(p, v, PL__SIM_SC)
#define atomic_compare_exchange_strong_explicit(p, e, d, s, f)                                \
    (PL__SIM_PT_POINT(1u), PL__SIM_A_CAS(p, e, d, 0, s, f))
#define atomic_compare_exchange_strong(p, e, d)                                               \
    atomic_compare_exchange_strong_explicit(p, e, d, PL__SIM_SC, PL__SIM_SC)
#define atomic_compare_exchange_weak_explicit(p, e, d, s, f)                                  \
    (PL__SIM_PT_POINT(1u), PL__SIM_A_CAS(p, e, d, 1, s, f))
#define atomic_compare_exchange_weak(p, e, d)                                                 \
    atomic_compare_exchange_weak_explicit(p, e, d, PL__SIM_SC, PL__SIM_SC)
#define atomic_fetch_add_explicit(p, v, mo) (PL__SIM_PT_POINT(1u), PL__SIM_A_FETCH(add, p, v, mo))
#define atomic_fetch_add(p, v) atomic_fetch_add_explicit(p, v, PL__SIM_SC)
#define atomic_fetch_sub_explicit(p, v, mo) (PL__SIM_PT_POINT(1u), PL__SIM_A_FETCH(sub, p, v, mo))
#define atomic_fetch_sub(p, v) atomic_fetch_sub_explicit(p, v, PL__SIM_SC)
#define atomic_fetch_or_explicit(p, v, mo) (PL__SIM_PT_POINT(1u), PL__SIM_A_FETCH(or, p, v, mo))
#define atomic_fetch_or(p, v) atomic_fetch_or_explicit(p, v, PL__SIM_SC)
#define atomic_fetch_xor_explicit(p, v, mo) (PL__SIM_PT_POINT(1u), PL__SIM_A_FETCH(xor, p, v, mo))
#define atomic_fetch_xor(p, v) atomic_fetch_xor_explicit(p, v, PL__SIM_SC)
#define atomic_fetch_and_explicit(p, v, mo) (PL__SIM_PT_POINT(1u), PL__SIM_A_FETCH(and, p, v, mo))
#define atomic_fetch_and(p, v) atomic_fetch_and_explicit(p, v, PL__SIM_SC)
#define atomic_flag_test_and_set_explicit(p, mo) (PL__SIM_PT_POINT(1u), PL__SIM_A_FLAG_SET(p, mo))
#define atomic_flag_test_and_set(p) atomic_flag_test_and_set_explicit(p, PL__SIM_SC)
#define atomic_flag_clear_explicit(p, mo) (PL__SIM_PT_POINT(1u), PL__SIM_A_FLAG_CLEAR(p, mo))
#define atomic_flag_clear(p) atomic_flag_clear_explicit(p, PL__SIM_SC)
#endif

/* ---- The bracket around the program's globals ------------------------------
 * clang emits a file's objects in the order they are defined, so these
 * two are the first of their file's .data and .bss, and the lowest pair
 * of all files, up to the library's end marker, brackets the program's
 * globals. gcc reorders them: its files say so (ordered 0) and the
 * bracket then starts at the output sections' own start, which holds
 * nothing before the program's files but the C runtime's start files
 * (gcc links sanitizer runtimes as shared libraries). */
void pl_sim_pthread_note_file(char *data, char *bss, int ordered);
#ifndef PL_SIM_PTHREAD_IMPL
__attribute__((used)) static char pl__sim_pthread_file_data = 1;
__attribute__((used)) static char pl__sim_pthread_file_bss;
__attribute__((constructor, used)) static void pl__sim_pthread_file(void)
{
#ifdef __clang__
    pl_sim_pthread_note_file(&pl__sim_pthread_file_data, &pl__sim_pthread_file_bss, 1);
#else
    pl_sim_pthread_note_file(&pl__sim_pthread_file_data, &pl__sim_pthread_file_bss, 0);
#endif
}
#endif

#endif
