/* sim/src/cli/worker.c: a worker process of `run`. It runs its slice of
 * seeds in increasing order in-process with pl_sim_run (the determinism
 * check and pl_sometimes counts through the library's campaign helpers),
 * writes replay files for its findings and reports every step to the
 * parent as small binary messages over a pipe. It hands its remaining
 * seeds to a fresh process after --recycle-seeds seeds or past
 * --worker-rss, and says when its memory grows seed after seed. */
#include "cli_internal.h"

static size_t shared_rec_size(void)
{
    return sizeof(shared_rec) + PL__DEC_RECORD_MAX_DEFAULT * sizeof(pl__dec_record);
}

shared_rec *pl__cli_shared_rec_create(void)
{
    /* Anonymous pages are committed on first touch: the cap costs
     * nothing until decisions are written. */
    void *p = mmap(NULL, shared_rec_size(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) {
        return NULL;
    }
    shared_rec *r = p;
    memset(&r->hang, 0, sizeof r->hang);
    r->len = 0;
    r->cap = PL__DEC_RECORD_MAX_DEFAULT;
    return r;
}

void pl__cli_shared_rec_destroy(shared_rec *r)
{
    if (r != NULL) {
        munmap(r, shared_rec_size());
    }
}

static void send_msg(int fd, uint32_t type, uint64_t seed, const void *payload, size_t len)
{
    msg_head h = {type, (uint32_t)len, seed};
    if (pl__cli_write_all(fd, &h, sizeof h) != 0 ||
        (len > 0 && pl__cli_write_all(fd, payload, len) != 0)) {
        /* The parent is gone: nobody is left to report to. */
        fflush(NULL);
        _exit(ST_INTERNAL);
    }
}

static void send_error(int fd, uint64_t seed, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void send_error(int fd, uint64_t seed, const char *fmt, ...)
{
    char text[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    send_msg(fd, MSG_ERROR, seed, text, strlen(text) + 1);
}

/* OUT/<scenario>-seed<seed>.replay. Returns 0 or -ENAMETOOLONG. */
int pl__cli_replay_path(const run_opts *o, const pl_scenario *sc, uint64_t seed, char *buf,
                        size_t len)
{
    int n = snprintf(buf, len, "%s/%s-seed%" PRIu64 ".replay", o->out_dir, sc->name, seed);
    return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/* Names tasks in timelines; ud is the run's pl__run_record. */
const char *pl__cli_task_name_of(void *ud, uint32_t task) { return pl__run_task_name(ud, task); }

/* The event log of a run made with keep_events (NULL, 0 without). */
const pl__trace_rec *pl__cli_result_events(const pl_sim_result *r, size_t *len)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    *len = rec != NULL ? rec->events_len : 0;
    return rec != NULL ? rec->events : NULL;
}

/* One event as a timeline line, without the trailing newline. */
static void event_text(const pl_sim_result *r, const pl__trace_rec *ev, char *buf, size_t len)
{
    char *mem = NULL;
    size_t memlen = 0;
    FILE *f = open_memstream(&mem, &memlen);
    buf[0] = '\0';
    if (f == NULL) {
        return;
    }
    pl__trace_write_text(f, ev, 1, pl__cli_task_name_of, (void *)pl__sim_result_record(r));
    fclose(f);
    if (mem != NULL) {
        snprintf(buf, len, "%.*s", (int)strcspn(mem, "\n"), mem);
    }
    free(mem);
}

/* Reruns a seed twice with the event log and describes where the two
 * runs part; also positions the finding at that event. */
static void locate_divergence(const job *jb, const pl_sim_options *so, pl_finding *f,
                              char *buf, size_t len)
{
    pl_sim_options o2 = *so;
    o2.keep_events = true;
    pl_sim_result a, b;
    int ra = pl_sim_run(jb->sc, &o2, &a), rb = pl_sim_run(jb->sc, &o2, &b);
    size_t na = 0, nb = 0;
    const pl__trace_rec *ea = ra == 0 ? pl__cli_result_events(&a, &na) : NULL;
    const pl__trace_rec *eb = rb == 0 ? pl__cli_result_events(&b, &nb) : NULL;
    size_t i = ea != NULL && eb != NULL ? pl__trace_first_diff(ea, na, eb, nb) : SIZE_MAX;
    if (i == SIZE_MAX) {
        snprintf(buf, len, "\n(two more runs with the event log agreed: the difference is "
                           "intermittent)");
    } else {
        char la[256] = "(no event: the run ended)", lb[256] = "(no event: the run ended)";
        const pl__trace_rec *at = i < na ? &ea[i] : &eb[i];
        if (i < na) {
            event_text(&a, &ea[i], la, sizeof la);
        }
        if (i < nb) {
            event_text(&b, &eb[i], lb, sizeof lb);
        }
        snprintf(buf, len, "\nfirst difference at event %zu:\n  one run: %s\n  other:   %s", i, la,
                 lb);
        const char *name = i < na ? pl__run_task_name(pl__sim_result_record(&a), at->task)
                                  : pl__run_task_name(pl__sim_result_record(&b), at->task);
        f->step = at->step;
        f->time_ns = at->time_ns;
        f->task_id = at->task == PL__TRACE_NO_TASK ? 0 : at->task;
        snprintf(f->task_name, sizeof f->task_name, "%s", name != NULL ? name : "");
    }
    pl_sim_result_free(&a);
    pl_sim_result_free(&b);
}

/* --check-determinism: runs the seed again; on a different hash turns
 * r1's finding into a nondeterminism finding. Returns 0 or the run's
 * error. */
static int check_determinism(const job *jb, const pl_sim_options *so, pl_sim_result *r1)
{
    pl_sim_result r2;
    int rc = pl_sim_run(jb->sc, so, &r2);
    uint64_t h2 = r2.hash;
    pl_sim_result_free(&r2);
    if (rc < 0 || h2 == r1->hash) {
        return rc;
    }
    pl_finding *f = &r1->finding;
    char before[160] = "";
    if (f->kind != PL_FINDING_NONE) {
        snprintf(before, sizeof before, " (the first run ended with %s)",
                 pl_finding_name(f->kind));
    }
    pl_finding nf;
    memset(&nf, 0, sizeof nf);
    nf.kind = PL_FINDING_NONDETERMINISM;
    char where[900];
    locate_divergence(jb, so, &nf, where, sizeof where);
    pl__cli_textf(nf.message, sizeof nf.message,
                  "the same seed gave two different traces: hash %016" PRIx64 ", then %016" PRIx64
                  "%s%s",
                  r1->hash, h2, before, where);
    *f = nf;
    return 0;
}

static void worker_finding(const job *jb, int fd, uint64_t seed, const pl_sim_options *so,
                           const pl_sim_result *r)
{
    msg_finding m;
    memset(&m, 0, sizeof m);
    pl__cli_end_seed_output(&m.output);
    m.hash = r->hash;
    m.finding = r->finding;
    int rc = pl__cli_replay_path(jb->o, jb->sc, seed, m.replay, sizeof m.replay);
    rc = rc == 0 ? pl__cli_make_dirs(jb->o->out_dir) : rc;
    if (rc == 0) {
        rc = pl_sim_write_replay(jb->sc, so, r, m.replay);
    }
    if (rc != 0) {
        pl__cli_textf(m.replay_error, sizeof m.replay_error, "cannot write %s: %s", m.replay,
                      pl__cli_error_text(rc));
        m.replay[0] = '\0';
    }
    send_msg(fd, MSG_FINDING, seed, &m, sizeof m);
}

/* Runs one seed and reports it. Returns 1 on a finding, 0 when clean,
 * or a negative code after reporting an error. */
static int worker_seed(const job *jb, int fd, uint64_t seed)
{
    pl_sim_options so;
    pl_sim_result r;
    pl__cli_sim_options(jb->o, seed, &so);
    int rc = pl_sim_run(jb->sc, &so, &r);
    if (rc == 0 && jb->o->check_det) {
        rc = check_determinism(jb, &so, &r);
    }
    if (rc < 0) {
        send_error(fd, seed, "the simulator failed on seed %" PRIu64 ": %s%s%s", seed,
                   pl__cli_error_text(rc), r.finding.message[0] != '\0' ? ": " : "",
                   r.finding.message);
        pl_sim_result_free(&r);
        return rc;
    }
    bool found = r.finding.kind != PL_FINDING_NONE;
    if (found) {
        worker_finding(jb, fd, seed, &so, &r);
    } else {
        pl__cli_end_seed_output(NULL);
    }
    uint64_t hash = r.hash;
    send_msg(fd, MSG_DONE, seed, &hash, sizeof hash);
    pl_sim_result_free(&r);
    return found ? 1 : 0;
}

static void reset_sites(void)
{
    size_t n = 0;
    pl__sometimes_site *s = pl__sometimes_sites(&n);
    for (size_t i = 0; i < n; i++) {
        s[i].hits = 0;
        s[i].reached = 0;
    }
}

static void send_sites(int fd)
{
    size_t n = 0;
    const pl__sometimes_site *s = pl__sometimes_sites(&n);
    uint32_t *counts = calloc(2 * n + 1, sizeof *counts);
    if (counts == NULL) {
        send_error(fd, 0, "out of memory");
        fflush(NULL);
        _exit(ST_INTERNAL);
    }
    for (size_t i = 0; i < n; i++) {
        counts[2 * i] = s[i].hits;
        counts[2 * i + 1] = s[i].reached;
    }
    send_msg(fd, MSG_SITES, n, counts, 2 * n * sizeof *counts);
    free(counts);
}

static void worker_setup(const job *jb)
{
    /* Ctrl-C reaches the whole process group; the parent decides. */
    signal(SIGINT, SIG_IGN);
#ifdef __linux__
    /* A worker stuck in user code must not outlive a killed parent. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    pl__cli_capture_stdout(jb->out_fd, jb->rerun);
    reset_sites();
    if (jb->rec != NULL) {
        pl__sim_record_to(jb->rec->recs, (size_t)jb->rec->cap, &jb->rec->len);
        pl__budget_arm(&jb->rec->hang);
    }
}

/* The worker's peak resident set, in bytes (Linux counts ru_maxrss in
 * KiB). What the OOM killer looks at, so what --worker-rss bounds. */
static uint64_t peak_rss(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0 || ru.ru_maxrss < 0) {
        return 0;
    }
    return (uint64_t)ru.ru_maxrss * 1024u;
}

/* The memory a leak in user code makes grow, given the peak RSS. The
 * peak RSS does not move for a scenario that frees what it allocates,
 * once warm, nor for one seed that peaks once; a leak pushes it up seed
 * after seed. */
static uint64_t memory_in_use(uint64_t rss)
{
#ifdef CLI_ASAN
    (void)rss;
    return (uint64_t)__sanitizer_get_current_allocated_bytes();
#else
    return rss;
#endif
}

/* After the seed of index i: memory growing over most seeds of a window,
 * by enough to matter, is user code keeping memory across runs. The
 * first seed warms caches up and only sets the baseline. */
static void watch_memory(int fd, growth *g, uint64_t i, uint64_t seed, uint64_t rss)
{
    uint64_t now = memory_in_use(rss);
    if (i == 0 || g->warned) {
        g->start = g->prev = now;
        g->seeds = g->grew = 0;
        return;
    }
    if (g->seeds == 0) {
        g->first_seed = seed;
    }
    g->seeds++;
    g->grew += now > g->prev;
    g->prev = now;
    if (g->seeds < GROWTH_WINDOW) {
        return;
    }
    if (g->grew >= GROWTH_WINDOW * 3 / 4 && now >= g->start + GROWTH_MIN_BYTES) {
        msg_growth m = {g->first_seed, seed, g->seeds, now - g->start};
        send_msg(fd, MSG_GROWTH, seed, &m, sizeof m);
        g->warned = true;
    }
    g->start = now;
    g->seeds = g->grew = 0;
}

/* Whether the worker should hand its remaining seeds to a fresh process
 * after running `ran` of them: leaks and fragmentation in user code
 * must not grow one process until the OOM killer picks a seed. */
static recycle_reason recycle_due(const job *jb, uint64_t ran, uint64_t rss)
{
    if (jb->rerun) {
        return RECYCLE_NONE;
    }
    if (rss > jb->o->worker_rss) {
        return RECYCLE_RSS;
    }
    return ran >= jb->o->recycle_seeds ? RECYCLE_SEEDS : RECYCLE_NONE;
}

void pl__cli_worker_main(const job *jb, int fd)
{
    worker_setup(jb);
    bool stopped = false;
    growth g;
    memset(&g, 0, sizeof g);
    recycle_reason recycle = RECYCLE_NONE;
    uint64_t i = 0, seed = 0, rss = 0;
    for (; pl__cli_slice_has(&jb->slice, i) && !stopped && recycle == RECYCLE_NONE; i++) {
        seed = pl__cli_slice_seed(&jb->slice, i);
        send_msg(fd, MSG_START, seed, NULL, 0);
        int rc = worker_seed(jb, fd, seed);
        if (rc < 0) {
            fflush(NULL);
            _exit(ST_INTERNAL);
        }
        /* Later seeds are higher: after a finding they cannot matter. */
        stopped = rc > 0 && !jb->o->keep_going;
        rss = peak_rss();
        watch_memory(fd, &g, i, seed, rss);
        recycle = recycle_due(jb, i + 1, rss);
    }
    if (!stopped && recycle != RECYCLE_NONE && pl__cli_slice_has(&jb->slice, i)) {
        msg_recycle m;
        memset(&m, 0, sizeof m); /* no uninitialised padding on the pipe */
        m.reason = (uint32_t)recycle;
        m.rss = rss;
        m.seed = seed;
        send_msg(fd, MSG_RECYCLE, seed, &m, sizeof m);
    }
    if (!stopped && !jb->rerun) {
        send_sites(fd);
    }
    fflush(NULL);
    _exit(ST_CLEAN);
}
