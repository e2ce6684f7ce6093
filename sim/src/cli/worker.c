/* sim/src/cli/worker.c: a worker process of `run`. It runs its slice of
 * seeds in increasing order in-process with pl_sim_run (the determinism
 * check and pl_sometimes counts through the library's campaign helpers),
 * writes replay files for its findings and reports every step to the
 * parent as small binary messages over a pipe. It hands its remaining
 * seeds to a fresh process after --recycle-seeds seeds or past
 * --worker-rss, and says when its memory grows seed after seed. */
#include "cli_internal.h"
#include "run_record.h"

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
    r->ring.len = 0;
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
    /* The head's length is 32 bits; the parent checks each type's size. */
    PL__CLI_ASSERT(len <= UINT32_MAX && (payload != NULL || len == 0));
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

/* Whether the run's decisions outgrew the recorder (its replay refuses). */
static bool truncated(const pl_sim_result *r)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    return rec != NULL && rec->decisions_truncated;
}

static void worker_finding(const job *jb, int fd, uint64_t seed, const pl_sim_options *so,
                           const pl_sim_result *r)
{
    msg_finding m;
    memset(&m, 0, sizeof m);
    pl__cli_end_seed_output(&m.output);
    m.hash = r->hash;
    m.finding = r->finding;
    if (pl_finding_is_setup_error(&r->finding)) {
        /* Nothing ran: a replay or a shrink would only repeat the error. */
        send_msg(fd, MSG_FINDING, seed, &m, sizeof m);
        return;
    }
    int rc = pl__cli_replay_path(jb->o, jb->sc, seed, m.replay, sizeof m.replay);
    rc = rc == 0 ? pl__cli_make_dirs(jb->o->out_dir) : rc;
    if (rc == 0) {
        rc = pl_sim_write_replay(jb->sc, so, r, m.replay);
    }
    if (rc != 0) {
        pl__cli_textf(m.replay_error, sizeof m.replay_error, "cannot write %s: %s", m.replay,
                      pl__cli_error_text(rc));
        m.replay[0] = '\0';
    } else if (truncated(r)) {
        /* The file refuses to replay: the finding says so, and why. */
        pl__cli_textf(m.replay_error, sizeof m.replay_error,
                      "it cannot reproduce this run: the run made more decisions than the "
                      "recorder keeps (%zu); rerun the seed instead",
                      (size_t)PL__DEC_RECORD_MAX_DEFAULT);
    }
    send_msg(fd, MSG_FINDING, seed, &m, sizeof m);
}

/* A clean seed's stdout is shown when it was the one seed asked for
 * (run --seed N): what the program printed is then what its user wants
 * to read. In a range it goes, as before, unseen. */
static void clean_output(const job *jb, int fd, uint64_t seed)
{
    if (jb->o->seed_lo != jb->o->seed_hi) {
        pl__cli_end_seed_output(NULL);
        return;
    }
    output_tail *t = calloc(1, sizeof *t);
    pl__cli_end_seed_output(t);
    if (t != NULL && t->bytes > 0) {
        send_msg(fd, MSG_OUTPUT, seed, t, sizeof *t);
    }
    free(t);
}

/* Runs one seed and reports it. Returns 1 on a finding, 0 when clean,
 * or a negative code after reporting an error. */
static int worker_seed(const job *jb, int fd, uint64_t seed, pl__campaign_tally *tally)
{
    pl_sim_options so;
    pl_sim_result r;
    pl__cli_sim_options(jb->o, seed, &so);
    int rc = pl__campaign_seed(jb->sc, &so, jb->o->check_det, &r);
    if (rc < 0) {
        send_error(fd, seed, "the simulator failed on seed %" PRIu64 ": %s%s%s", seed,
                   pl__cli_error_text(rc), r.finding.message[0] != '\0' ? ": " : "",
                   r.finding.message);
        pl_sim_result_free(&r);
        return rc;
    }
    if (pl__campaign_tally_run(tally, &r) != 0) {
        send_error(fd, seed, "out of memory");
        pl_sim_result_free(&r);
        return PL_ENOMEM;
    }
    bool found = r.finding.kind != PL_FINDING_NONE;
    if (found) {
        worker_finding(jb, fd, seed, &so, &r);
    } else {
        clean_output(jb, fd, seed);
    }
    uint64_t hash = r.hash;
    send_msg(fd, MSG_DONE, seed, &hash, sizeof hash);
    pl_sim_result_free(&r);
    return found ? 1 : 0;
}

/* The slice's counts: its coverage, then its pl_sometimes counters. */
static void send_sites(int fd, const pl__campaign_tally *tally)
{
    size_t n = tally->nsites, len = 0;
    uint32_t *counts = pl__campaign_tally_counts(tally);
    void *packed = pl__cli_cover_pack(tally, &len);
    if (counts == NULL || packed == NULL) {
        send_error(fd, 0, "out of memory");
        fflush(NULL);
        _exit(ST_INTERNAL);
    }
    send_msg(fd, MSG_COVER, 0, packed, len);
    /* Before the counts: the supervisor counts a worker's sites as in
     * once their counts arrive, and judges only then. */
    for (size_t i = 0; tally->last != NULL && i < n; i++) {
        const char *last = tally->last + i * PL__SOMETIMES_LAST;
        if (counts[2 * i] == 0 && last[0] != '\0') {
            send_msg(fd, MSG_SITE_LAST, i, last, strlen(last));
        }
    }
    send_msg(fd, MSG_SITES, n, counts, 2 * n * sizeof *counts);
    free(packed);
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
    if (jb->rec != NULL) {
        pl__sim_record_to(jb->rec->recs, (size_t)jb->rec->cap, &jb->rec->len);
        /* Only a rerun of a crashed seed pays for copying every event. */
        pl__sim_ring_to(jb->rerun ? &jb->rec->ring : NULL);
        if (jb->rerun) {
            pl__crash_stack_arm(&jb->rec->stack);
        }
        pl__cpu_budget_arm(&jb->rec->hang);
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
    pl__campaign_tally tally;
    if (pl__campaign_tally_init(&tally) != 0) {
        send_error(fd, 0, "out of memory");
        fflush(NULL);
        _exit(ST_INTERNAL);
    }
    for (; pl__seed_slice_has(&jb->slice, i) && !stopped && recycle == RECYCLE_NONE; i++) {
        seed = pl__seed_slice_seed(&jb->slice, i);
        send_msg(fd, MSG_START, seed, NULL, 0);
        int rc = worker_seed(jb, fd, seed, &tally);
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
    if (!stopped && recycle != RECYCLE_NONE && pl__seed_slice_has(&jb->slice, i)) {
        msg_recycle m;
        memset(&m, 0, sizeof m); /* no uninitialised padding on the pipe */
        m.reason = (uint32_t)recycle;
        m.rss = rss;
        m.seed = seed;
        send_msg(fd, MSG_RECYCLE, seed, &m, sizeof m);
    }
    if (!stopped && !jb->rerun) {
        send_sites(fd, &tally);
    }
    pl__campaign_tally_free(&tally);
    fflush(NULL);
    _exit(ST_CLEAN);
}
