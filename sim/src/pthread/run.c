/* sim/src/pthread/run.c: the program as a scenario, and its process.
 *
 * main.c, the process's main, has this file copy the program's globals
 * once, then hands over to pl_main and the scenario "main" registered
 * here. Each run of it copies
 * the globals back, starts the program's main on a simulated thread and
 * parks thread 0 (the executor's) in a task until the program ends: main
 * returns, a thread calls exit, or the last thread ends. exit, abort and
 * assert are the process's, so they are here too, with the clocks (the
 * C library's, routed) and the sleeps. */
#include "spt.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "../sim_internal.h"

/* The C library's names: the real functions outside any run (a
 * constructor, a program that runs the shim's library without pl_main),
 * and the clocks routed to virtual time in one (env/clock.c). */
#undef abort
#undef exit
#undef _exit
#undef atexit
#undef time
#undef clock_gettime
#undef gettimeofday
extern void abort(void) __attribute__((noreturn));
extern void exit(int status) __attribute__((noreturn));
extern void _exit(int status) __attribute__((noreturn));
extern int atexit(void (*fn)(void));
extern time_t time(time_t *out);
extern int clock_gettime(clockid_t clk, struct timespec *ts);
extern int gettimeofday(struct timeval *restrict tv, void *restrict tz);

static _Thread_local pl__spt_run *current;
PL__SPT_KEEP static uint64_t runs_started;

pl__spt_run *pl__spt_current(void)
{
    return current;
}

pl__spt_run *pl__spt_need(const char *call)
{
    if (current == NULL) {
        fprintf(stderr,
                "pollen: %s called outside a simulated run (a constructor, a destructor, or "
                "another OS thread): the pthread shim only works inside the program's main\n",
                call);
        fflush(stderr);
        abort();
    }
    return current;
}

/* ---- The program's globals --------------------------------------------- */

/* The library's own markers (end.c), linked after the program's files. */
extern char pl__spt_end_data, pl__spt_end_bss;
/* The output sections' starts (the C runtime's start file; the linker). */
extern char __data_start[], __bss_start[];

typedef struct pl__spt_span {
    char *lo, *hi;
    unsigned char *copy;
} pl__spt_span;

PL__SPT_KEEP static char *file_data_lo, *file_bss_lo;
PL__SPT_KEEP static bool files_unordered;
PL__SPT_KEEP static pl__spt_span spans[2];

void pl_sim_pthread_note_file(char *data, char *bss, int ordered)
{
    if (!ordered) {
        files_unordered = true;
    }
    if (file_data_lo == NULL || data < file_data_lo) {
        file_data_lo = data;
    }
    if (file_bss_lo == NULL || bss < file_bss_lo) {
        file_bss_lo = bss;
    }
}

/* Byte by byte and uninstrumented: the span holds a sanitizer's redzones
 * between the program's globals, which must be neither checked nor
 * turned into a call to an intercepted memcpy. */
__attribute__((no_sanitize("address"))) static void copy_bytes(volatile unsigned char *dst,
                                                               const volatile unsigned char *src,
                                                               size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = src[i];
    }
}

static void span_take(pl__spt_span *s, char *lo, char *hi)
{
    if (lo == NULL || hi <= lo) {
        return; /* no file of the program was compiled with the header */
    }
    s->copy = malloc((size_t)(hi - lo));
    if (s->copy == NULL) {
        fprintf(stderr, "pollen: no memory to keep the program's globals\n");
        abort();
    }
    s->lo = lo;
    s->hi = hi;
    copy_bytes(s->copy, (unsigned char *)lo, (size_t)(hi - lo));
}

static void globals_take(void)
{
    char *data_lo = files_unordered ? __data_start : file_data_lo;
    char *bss_lo = files_unordered ? __bss_start : file_bss_lo;
    span_take(&spans[0], data_lo, &pl__spt_end_data);
    span_take(&spans[1], bss_lo, &pl__spt_end_bss);
}

static void globals_restore(void)
{
    for (int i = 0; i < 2; i++) {
        if (spans[i].copy != NULL) {
            copy_bytes((unsigned char *)spans[i].lo, spans[i].copy,
                       (size_t)(spans[i].hi - spans[i].lo));
        }
    }
}

/* ---- Ending the program ------------------------------------------------- */

/* The process ends here: thread 0's task (below) wakes and ends the run. */
void pl__spt_end_program(pl__spt_run *r, int status)
{
    if (r->over) {
        return;
    }
    r->over = true;
    r->status = status;
    pl_thread_sem_post(&r->ended);
}

void pl__spt_stop_if_over(pl__spt_run *r)
{
    if (r->over && pl_thread_id() != 0) {
        pl_thread_exit(NULL);
    }
}

_Noreturn void pl__spt_fail(pl__spt_run *r, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pl__sim *s = pl__sim_current();
    PL__SIM_ASSERT(s != NULL);
    pl__sim_finding(s, PL_FINDING_ASSERTION, NULL, "%s (thread %s)", msg, pl_thread_name());
    /* The process would be gone (SIGABRT): nothing of the program runs
     * after it, and the finding stopped the run. */
    r->over = true;
    r->status = 134;
    pl_thread_exit(NULL);
}

static void run_atexit(pl__spt_run *r)
{
    while (r->atexit_len > 0) {
        r->atexit_fns[--r->atexit_len]();
    }
}

/* exit(), main's return and the last thread's end: the atexit handlers,
 * then the end. */
void pl__spt_exit(pl__spt_run *r, int status, bool by_exit)
{
    if (r->over) {
        return;
    }
    if (r->exiting) {
        /* Another thread is in exit's handlers: this one ends there, as
         * it would with the process. */
        pl_thread_exit(NULL);
    }
    r->exiting = true;
    r->by_exit = by_exit;
    run_atexit(r);
    pl__spt_end_program(r, status);
}

void pl_sim_pthread_exit_process(int status)
{
    pl__spt_run *r = current;
    if (r == NULL) {
        exit(status);
    }
    pl__spt_exit(r, status, true);
    pl_thread_exit(NULL);
}

void pl_sim_pthread__Exit(int status)
{
    pl__spt_run *r = current;
    if (r == NULL) {
        _exit(status);
    }
    r->by_exit = true;
    pl__spt_end_program(r, status);
    pl_thread_exit(NULL);
}

void pl_sim_pthread__exit(int status)
{
    pl_sim_pthread__Exit(status);
}

int pl_sim_pthread_atexit(void (*fn)(void))
{
    pl__spt_run *r = current;
    if (r == NULL) {
        return atexit(fn);
    }
    if (r->atexit_len == PL__SPT_ATEXIT_MAX) {
        return -1;
    }
    r->atexit_fns[r->atexit_len++] = fn;
    return 0;
}

void pl_sim_pthread_abort(void)
{
    pl__spt_run *r = current;
    if (r == NULL || r->over) {
        abort();
    }
    pl__spt_fail(r, "abort() called");
}

/* The program's main is renamed; its assert says main. */
static const char *user_func(const char *func)
{
    return func != NULL && strcmp(func, "pl_sim_pthread_user_main") == 0 ? "main" : func;
}

void pl_sim_pthread_assert_fail(const char *expr, const char *file, unsigned int line,
                                const char *func)
{
    pl__spt_run *r = current;
    if (r == NULL) {
        fprintf(stderr, "%s:%u: %s: Assertion `%s' failed.\n", file, line, func, expr);
        abort();
    }
    pl__spt_fail(r, "assert failed: %s (%s:%u, in %s)", expr, file, line, user_func(func));
}

void pl_sim_pthread_assert_perror_fail(int errnum, const char *file, unsigned int line,
                                       const char *func)
{
    pl__spt_run *r = current;
    if (r == NULL) {
        fprintf(stderr, "%s:%u: %s: Unexpected error: %s.\n", file, line, func, strerror(errnum));
        abort();
    }
    pl__spt_fail(r, "assert_perror failed: %s (%s:%u, in %s)", strerror(errnum), file, line,
                 user_func(func));
}

/* ---- Clocks and sleeps: the virtual clock ---------------------------------
 * The shim keeps no clock of its own: in a run the C library's clocks
 * are routed to the run's virtual time (env/clock.c), the node's clock
 * where the code runs for a skewed node, wall jumps included. Only
 * sleeps and timed waits need the shim: they block a simulated thread. */

bool pl__spt_timespec_valid(const struct timespec *ts)
{
    return ts->tv_nsec >= 0 && ts->tv_nsec < PL_S;
}

static pl_time ns_of(const struct timespec *ts) { return (pl_time)ts->tv_sec * PL_S + ts->tv_nsec; }

/* clk reads pl_thread_now() plus an offset (the epoch for a wall clock,
 * and a skewed node's jumps so far): the deadline is abstime less it. */
pl_time pl__spt_deadline(clockid_t clk, const struct timespec *abstime)
{
    struct timespec now;
    pl_time offset = clock_gettime(clk, &now) == 0 ? ns_of(&now) - pl_thread_now() : 0;
    pl_time abs = ns_of(abstime) - offset;
    return abs < 0 ? 0 : abs;
}

int pl_sim_pthread_clock_gettime(clockid_t clk, struct timespec *ts) { return clock_gettime(clk, ts); }

time_t pl_sim_pthread_time(time_t *out) { return time(out); }

int pl_sim_pthread_gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    return gettimeofday(tv, tz);
}

static void sleep_ns(pl_time ns)
{
    pl__spt_run *r = pl__spt_need("sleep");
    pl_thread_sleep(ns);
    pl__spt_stop_if_over(r);
}

unsigned int pl_sim_pthread_sleep(unsigned int seconds)
{
    sleep_ns((pl_time)seconds * PL_S);
    return 0;
}

int pl_sim_pthread_usleep(useconds_t usec)
{
    sleep_ns((pl_time)usec * PL_US);
    return 0;
}

int pl_sim_pthread_nanosleep(const struct timespec *req, struct timespec *rem)
{
    if (req == NULL || !pl__spt_timespec_valid(req) || req->tv_sec < 0) {
        errno = EINVAL;
        return -1;
    }
    sleep_ns((pl_time)req->tv_sec * PL_S + req->tv_nsec);
    if (rem != NULL) {
        *rem = (struct timespec){0, 0};
    }
    return 0;
}

/* ---- The scenario ------------------------------------------------------------ */

/* Thread 0's task: waits, blocking thread 0 inside its poll, until the
 * program ends, so the executor stays busy while the program runs. */
typedef struct pl__spt_main_task {
    pl_future base;
    pl__spt_run *run;
} pl__spt_main_task;

static pl_poll_result main_task_poll(pl_future *self, pl_context *cx)
{
    (void)cx;
    pl__spt_main_task *t = (pl__spt_main_task *)self;
    pl_thread_sem_wait(&t->run->ended);
    PL__SIM_ASSERT(t->run->over);
    /* The process ended, whatever its other threads are doing: none of
     * them runs again, and none is a deadlock or a leak. The simulator's
     * stop, set here on thread 0 inside the poll (so the poll returns and
     * the task completes), does exactly that: pl_run returns, the threads
     * still alive are not run to their end, and the run goes on to the
     * scenario's check (the exit status), as after any pl_run. */
    pl__sim *s = pl__sim_current();
    PL__SIM_ASSERT(s != NULL);
    s->stopped = true;
    return PL_READY;
}

static const pl_future_vtable main_task_vtable = {"pthread_program", main_task_poll, NULL};

typedef struct pl__spt_state {
    pl_task *task;
} pl__spt_state;

PL__SPT_KEEP static char program_name[64];

static int program_setup(pl_executor *ex, void *state)
{
    pl__spt_state *st = state;
    PL__SIM_ASSERT(current == NULL);
    pl__spt_run *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return PL_ENOMEM;
    }
    r->number = ++runs_started;
    pl__spt_monitor_init(&r->sys);
    int rc = pl_thread_sem_init(&r->ended, 0);
    if (rc != 0) {
        free(r);
        return rc;
    }
    snprintf(r->argv0, sizeof r->argv0, "%s", program_name);
    current = r;
    globals_restore();
    rc = pl__spt_start_main(r);
    if (rc != 0) {
        return rc;
    }
    pl__spt_main_task task = {.base = {.vtable = &main_task_vtable}, .run = r};
    return pl_spawn(ex, &task.base, sizeof task, "pthread_program", &st->task);
}

static int program_check(pl_executor *ex, void *state, char *msg, size_t msg_len)
{
    (void)ex;
    (void)state;
    pl__spt_run *r = current;
    if (r != NULL && r->over && r->status != 0) {
        return pl_check_fail(msg, msg_len, "the program %s with status %d",
                             r->by_exit ? "called exit" : "returned from main", r->status);
    }
    return 0;
}

static void program_teardown(void *state)
{
    pl__spt_state *st = state;
    pl_task_release(st->task);
    st->task = NULL;
    pl__spt_run *r = current;
    if (r == NULL) {
        return;
    }
    pl__spt_threads_free(r);
    pl__spt_objs_free(r);
    pl_thread_sem_finish(&r->ended);
    free(r->keys);
    free(r->onces);
    free(r);
    current = NULL;
}

/* Registered (not handed to pl_main as an extra) so that replay and
 * shrink, which look scenarios up by name, find it too; main.c calls
 * pl__spt_program_start, so the linker always keeps this file. */
PL_SCENARIO(program_scenario, .name = "main",
            .summary = "the program's main(), its threads simulated",
            .state_size = sizeof(pl__spt_state), .setup = program_setup,
            .check = program_check, .teardown = program_teardown);

void pl__spt_program_start(const char *argv0)
{
    const char *base = argv0 != NULL ? strrchr(argv0, '/') : NULL;
    snprintf(program_name, sizeof program_name, "%s",
             base != NULL ? base + 1 : (argv0 != NULL ? argv0 : "main"));
    globals_take();
}
