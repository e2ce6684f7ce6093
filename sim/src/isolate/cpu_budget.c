/* sim/src/isolate/cpu_budget.c: the CPU-time budget of one poll in the
 * CLI's child processes, and shrink candidates run one per child under it.
 *
 * The handler runs asynchronously, inside whatever user code spins: it
 * only reads pl__progress (volatile copies the simulator keeps current)
 * and the polled task's header, which does not change while the task is
 * being polled, writes plain fields into shared memory and calls _exit.
 * Nothing it does allocates, locks or formats.
 */
#include "cpu_budget.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "isolate/progress.h"
#include "knobs_of.h"
#include "mirror.h"
#include "ring_read.h"
#include "run_record.h"
#include "sim_assert.h"
#include "sim_internal.h"
#include "trace_ring.h"

/* The handler needs TICKS periods without a new step before it stops the
 * poll: a budget of B is enforced within B and B + B / TICKS. */
#define TICKS 8u


static pl_time budget_ns = PL__POLL_BUDGET_DEFAULT_NS;
static pl_time candidate_wall_ns = PL__CANDIDATE_WATCHDOG_DEFAULT_NS;

void pl__cpu_budget_set(pl_time ns)
{
    PL__SIM_ASSERT(ns >= 0);
    budget_ns = ns;
}

pl_time pl__cpu_budget_get(void) { return budget_ns; }

void pl__cpu_budget_set_watchdog(pl_time ns)
{
    PL__SIM_ASSERT(ns > 0);
    candidate_wall_ns = ns;
}

void pl__cpu_budget_text(pl_time ns, char *buf, size_t len)
{
    PL__SIM_ASSERT(ns >= 0 && buf != NULL && len > 0);
    if (ns % PL_S == 0) {
        snprintf(buf, len, "%lld s", (long long)(ns / PL_S));
    } else if (ns >= PL_S) {
        snprintf(buf, len, "%.1f s", (double)ns / (double)PL_S);
    } else {
        snprintf(buf, len, "%lld ms", (long long)(ns / PL_MS));
    }
}

/* ---- The handler ----------------------------------------------------- */

static pl__hang *report_to;
static uint64_t seen_run, seen_step;
static const pl_task *seen_task;
static unsigned ticks;

static void copy_name(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src != NULL && src[i] != '\0' && i + 1 < cap; i++) {
        dst[i] = src[i];
    }
    dst[i] = '\0';
}

static void stop_poll(const pl_task *t)
{
    pl__hang *h = report_to;
    h->task_id = pl_task_id(t);
    h->task_polls = pl_task_polls(t);
    h->step = pl__progress.step;
    h->time_ns = pl__progress.time_ns;
    h->budget_ns = budget_ns;
    copy_name(h->task_name, sizeof h->task_name, pl_task_name(t));
    h->hung = 1;
    _exit(PL__ST_POLL_BUDGET);
}

static void on_cpu_tick(int sig)
{
    (void)sig;
    const pl_task *t = pl__progress.task;
    uint64_t run = pl__progress.run, step = pl__progress.step;
    if (t == NULL || t != seen_task || run != seen_run || step != seen_step) {
        seen_task = t;
        seen_run = run;
        seen_step = step;
        ticks = 0;
        return;
    }
    if (++ticks >= TICKS) {
        stop_poll(t);
    }
}

void pl__cpu_budget_arm(pl__hang *h)
{
    if (h == NULL || budget_ns <= 0) {
        return;
    }
    /* Before the timer: the first tick already reads what the
     * simulator keeps. */
    pl__progress.on = true;
    report_to = h;
    seen_task = NULL;
    ticks = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_cpu_tick;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, NULL);
    pl_time period = budget_ns / TICKS > PL_MS ? budget_ns / TICKS : PL_MS;
    struct itimerval it;
    it.it_interval.tv_sec = (time_t)(period / PL_S);
    it.it_interval.tv_usec = (suseconds_t)(period % PL_S / PL_US);
    it.it_value = it.it_interval;
    setitimer(ITIMER_PROF, &it, NULL);
}

/* ---- The parent's side ------------------------------------------------ */

pl__hang *pl__hang_map(void)
{
    void *p =
        mmap(NULL, sizeof(pl__hang), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        return NULL;
    }
    memset(p, 0, sizeof(pl__hang));
    return p;
}

void pl__hang_unmap(pl__hang *h)
{
    if (h != NULL) {
        munmap(h, sizeof *h);
    }
}

bool pl__hang_ended(const pl__hang *h, int status)
{
    return h != NULL && h->hung && WIFEXITED(status) && WEXITSTATUS(status) == PL__ST_POLL_BUDGET;
}

void pl__hang_finding(const pl__hang *h, pl_finding *f)
{
    PL__SIM_ASSERT(h != NULL && f != NULL && h->hung);
    char budget[32];
    pl__cpu_budget_text(h->budget_ns, budget, sizeof budget);
    memset(f, 0, sizeof *f);
    f->kind = PL_FINDING_LIVELOCK;
    f->task_id = h->task_id;
    f->task_polls = h->task_polls;
    f->step = h->step;
    f->time_ns = h->time_ns;
    snprintf(f->task_name, sizeof f->task_name, "%s", h->task_name);
    snprintf(f->message, sizeof f->message,
             "'%s' (#%u) ran for %s of CPU time inside one poll (poll #%u, step %llu) without "
             "returning: it loops instead of returning PENDING (the budget of one poll, "
             "--poll-budget)",
             h->task_name, h->task_id, budget, h->task_polls, (unsigned long long)h->step);
}

/* ---- How a child ended ------------------------------------------------- */

static const char *signal_name(int sig)
{
    static const struct {
        int sig;
        const char *name;
    } names[] = {
        {SIGSEGV, "SIGSEGV"}, {SIGBUS, "SIGBUS"},   {SIGABRT, "SIGABRT"}, {SIGFPE, "SIGFPE"},
        {SIGILL, "SIGILL"},   {SIGKILL, "SIGKILL"}, {SIGTERM, "SIGTERM"}, {SIGTRAP, "SIGTRAP"},
        {SIGSYS, "SIGSYS"},   {SIGPIPE, "SIGPIPE"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
        {SIGALRM, "SIGALRM"}, {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGHUP, "SIGHUP"},
        {SIGUSR1, "SIGUSR1"}, {SIGUSR2, "SIGUSR2"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (names[i].sig == sig) {
            return names[i].name;
        }
    }
    return "an unknown signal";
}

void pl__wait_status_text(int status, char *buf, size_t len)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        snprintf(buf, len, "was killed by %s (%s)", signal_name(sig), strsignal(sig));
    } else if (WIFEXITED(status)) {
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    } else {
        snprintf(buf, len, "stopped with wait status %d", status);
    }
}

/* ---- Shrink candidates, one child each ---------------------------------- */

/* What a candidate's child leaves behind: its hang report or its result,
 * and the decisions it consulted (mirrored as they are made, so a child
 * the budget stopped leaves them too). */
typedef struct candidate_page {
    pl__hang hang;
    volatile int done; /* the run returned */
    int rc;
    pl_sim_result result; /* internal is not valid here */
    volatile uint64_t len;
    uint64_t cap;
    pl__dec_record recs[];
} candidate_page;

static candidate_page *page;

/* The final run of a crash shrink keeps its events here (the run keeps
 * its events: o->keep_events), for the explanation of a run that died. */
static pl__trace_ring *ring;

static size_t page_size(void)
{
    return sizeof(candidate_page) + PL__DEC_RECORD_MAX_DEFAULT * sizeof(pl__dec_record);
}

static int page_get(void)
{
    if (page == NULL) {
        /* Pages are committed on first touch: the cap costs nothing. */
        void *p =
            mmap(NULL, page_size(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            return -errno;
        }
        page = p;
    }
    memset(page, 0, sizeof *page);
    page->cap = PL__DEC_RECORD_MAX_DEFAULT;
    return 0;
}

static _Noreturn void candidate_child(const pl_scenario *sc, const pl_sim_options *o)
{
    pl__sim_record_to(page->recs, (size_t)page->cap, &page->len);
    pl__sim_ring_to(o->keep_events ? ring : NULL);
    pl__cpu_budget_arm(&page->hang);
    pl_sim_result r;
    page->rc = pl_sim_run(sc, o, &r);
    r.internal = NULL; /* freed below, with the child */
    page->result = r;
    page->done = 1;
    _exit(0);
}

/* The candidate's result as pl_sim_run would give it, its record holding
 * the decisions the child consulted. */
static int candidate_result(const pl_scenario *sc, const pl_sim_options *o, pl_sim_result *r)
{
    pl__run_record *rec = calloc(1, sizeof *rec);
    size_t n = (size_t)(page->len < page->cap ? page->len : page->cap);
    if (rec == NULL || (n > 0 && (rec->decisions = malloc(n * sizeof *rec->decisions)) == NULL)) {
        free(rec);
        return PL_ENOMEM;
    }
    if (n > 0) {
        memcpy(rec->decisions, page->recs, n * sizeof *rec->decisions);
    }
    rec->decisions_len = n;
    rec->decisions_truncated = page->len > page->cap;
    if (r->finding.kind == PL_FINDING_CRASH && o->keep_events && ring != NULL &&
        pl__ring_to_record(ring, rec) != 0) {
        free(rec->decisions);
        free(rec);
        return PL_ENOMEM;
    }
    if (pl__sim_knobs_of(o, &rec->knobs, NULL, 0) != 0) {
        pl__dec_knobs_default(&rec->knobs); /* what an empty knobs text reads as */
    }
    snprintf(rec->scenario, sizeof rec->scenario, "%s", sc->name);
    r->internal = rec;
    return 0;
}

/* Waits for the candidate, killing it after candidate_wall_ns of wall
 * time (pl__cpu_budget_set_watchdog): a poll that sleeps uses no CPU, so only the
 * clock stops it (the
 * watchdog of `pollen run`). Short naps first: most candidates end in
 * well under a millisecond. Returns true when it had to kill it. */
static bool candidate_wait(pid_t pid, int *status)
{
    struct timespec nap = {0, 50 * 1000};
    pl_time waited = 0;
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) {
            return false;
        }
        if (waited >= candidate_wall_ns) {
            kill(pid, SIGKILL);
            while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
            }
            return true;
        }
        nanosleep(&nap, NULL);
        waited += (pl_time)nap.tv_nsec;
        nap.tv_nsec = nap.tv_nsec < 10 * 1000 * 1000 ? nap.tv_nsec * 2 : nap.tv_nsec;
    }
}

static void candidate_killed(pl_sim_result *r)
{
    char d[32];
    pl__cpu_budget_text(candidate_wall_ns, d, sizeof d);
    r->finding.kind = PL_FINDING_LIVELOCK;
    snprintf(r->finding.message, sizeof r->finding.message,
             "the candidate's process made no progress for %s of wall time and was killed", d);
}

int pl__cpu_budget_run_candidate(const pl_scenario *sc, const pl_sim_options *o,
                                 pl_sim_result *r, bool *hung)
{
    PL__SIM_ASSERT(sc != NULL && o != NULL && r != NULL && hung != NULL);
    memset(r, 0, sizeof *r);
    *hung = false;
    int rc = page_get();
    if (rc != 0) {
        return rc;
    }
    if (o->keep_events && ring == NULL) {
        ring = pl__ring_map(); /* NULL: explained without a timeline */
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        return -errno;
    }
    if (pid == 0) {
        candidate_child(sc, o);
    }
    int status = 0;
    if (candidate_wait(pid, &status)) {
        *hung = true;
        candidate_killed(r);
    } else if (pl__hang_ended(&page->hang, status)) {
        *hung = true;
        pl__hang_finding(&page->hang, &r->finding);
        r->steps = page->hang.step;
        r->time_ns = page->hang.time_ns;
    } else if (page->done) {
        if (page->rc != 0) {
            r->finding = page->result.finding;
            return page->rc;
        }
        *r = page->result;
    } else {
        /* Crashed: a crash shrink keeps it, the others do not. */
        char how[160];
        pl__wait_status_text(status, how, sizeof how);
        r->finding.kind = PL_FINDING_CRASH;
        snprintf(r->finding.message, sizeof r->finding.message,
                 "the run's process %s: user code crashed", how);
        if (o->keep_events && ring != NULL) {
            pl__ring_position(ring, &r->finding);
        }
    }
    return candidate_result(sc, o, r);
}
