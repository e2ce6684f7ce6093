/* sim/src/isolate/guard.c: the seed a dying pl_sim_campaign was on.
 *
 * pl_sim_campaign runs its seeds in the caller's process (a
 * Criterion test's, which Criterion already isolates), so a crash in
 * user code ends that process. While a campaign runs, handlers for the
 * fatal signals write which scenario and seed it was on, and the command
 * that reruns that seed in isolation, to stderr, then hand the signal to
 * whatever handled it before (a sanitizer's report, Criterion's verdict,
 * the default core dump). Only async-signal-safe calls in the handler:
 * write(2), sigaction, raise; the text is assembled by hand. Under a
 * sanitizer a bug is often caught before any signal (UBSan's null
 * pointer arithmetic, ASan's report of its own SEGV handler) and the
 * process ends through the sanitizer's exit: its death callback, when
 * the runtime is linked in, prints the same line.
 */
#include "guard.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "sim_assert.h"

static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
#define NFATAL (sizeof fatal / sizeof fatal[0])

/* Campaigns may run on several threads at once (each its own
 * simulation): the handlers go in with the first begin and out with the
 * last end, so `previous` always holds what was there before any
 * campaign. The name and seed are the last ones given: with two
 * campaigns at once, the line names one of them. */
static struct sigaction previous[NFATAL];
static atomic_uint depth;
static const char *volatile guard_name; /* NULL: no campaign running */
static volatile uint64_t guard_seed;

static void put(const char *s)
{
    ssize_t n = write(STDERR_FILENO, s, strlen(s));
    (void)n; /* nothing to do about a failed write from a dying process */
}

static void put_u64(uint64_t v)
{
    char buf[24];
    size_t i = sizeof buf - 1;
    buf[i] = '\0';
    do {
        buf[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    put(buf + i);
}

/* The sanitizers' hook, a weak reference: NULL without their runtime. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

static void say_seed(void)
{
    const char *name = guard_name;
    if (name != NULL) {
        put("\npollen: pl_sim_campaign: the process died running scenario '");
        put(name);
        put("', seed ");
        put_u64(guard_seed);
        put(" (its seeds run in this process); rerun that seed alone, isolated and traced, "
            "with a program whose main is pl_main: PROGRAM run ");
        put(name);
        put(" --seed ");
        put_u64(guard_seed);
        put(" --trace\n");
    }
}

static void restore(void)
{
    for (size_t i = 0; i < NFATAL; i++) {
        sigaction(fatal[i], &previous[i], NULL);
    }
    if (__sanitizer_set_death_callback != NULL) {
        __sanitizer_set_death_callback(NULL);
    }
}

static void on_fatal(int sig)
{
    say_seed();
    guard_name = NULL;
    restore();
    /* Blocked while this handler runs: delivered to the restored handler
     * on return (a fault re-executes and faults again anyway). */
    raise(sig);
}

void pl__campaign_guard_begin(const pl_scenario *sc)
{
    PL__SIM_ASSERT(sc != NULL && sc->name != NULL);
    guard_name = sc->name;
    if (atomic_fetch_add(&depth, 1) > 0) {
        return;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NFATAL; i++) {
        sigaction(fatal[i], &sa, &previous[i]);
        PL__SIM_ASSERT(previous[i].sa_handler != on_fatal);
    }
    if (__sanitizer_set_death_callback != NULL) {
        __sanitizer_set_death_callback(say_seed);
    }
}

void pl__campaign_guard_seed(uint64_t seed) { guard_seed = seed; }

void pl__campaign_guard_end(void)
{
    unsigned d = atomic_load(&depth);
    while (d > 0 && !atomic_compare_exchange_weak(&depth, &d, d - 1)) {
    }
    if (d != 1) {
        return; /* no guard up, or another campaign still runs */
    }
    guard_name = NULL;
    restore();
}
