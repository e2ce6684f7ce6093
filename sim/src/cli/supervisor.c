/* sim/src/cli/supervisor.c: the parent's side of a campaign's workers.
 *
 * Process model of `run`: the parent forks --jobs workers per scenario.
 * Each worker owns an arithmetic progression of seeds (cli.h) and runs
 * it (worker.c). The parent never runs user code: it polls the pipes,
 * applies the watchdog and --time (loop.c), prints progress and
 * findings, and reruns a seed alone in a fresh child when a worker died
 * on it, so the crash is reported with the decisions that led to it.
 *
 * A worker's stdout is a capture file, not the parent's: what user code
 * printed goes with the finding of its seed. When --time runs out no
 * seed starts, but a running one finishes or meets the watchdog: a hang
 * is judged, not left for every resumed campaign to stall on. Workers
 * ignore SIGPIPE like the parent, which ends the run quietly when its
 * stdout is closed.
 *
 * Stopping at the first finding stays deterministic with several jobs:
 * the parent keeps the lowest finding seed L and stops only workers that
 * start a seed above L. Every worker runs its seeds in increasing order,
 * so all seeds below L still run and the reported finding is the one a
 * single job would have reported. */
#include "cli_internal.h"

static uint64_t worker_next_seed(const worker *w)
{
    if (w->running) {
        return w->seed;
    }
    return pl__seed_slice_has(&w->slice, w->started) ? pl__seed_slice_seed(&w->slice, w->started)
                                                     : UINT64_MAX;
}

void pl__cli_kill_worker(worker *w, kill_reason why)
{
    if (w->pid > 0 && w->killed == KILL_NONE) {
        kill(w->pid, SIGKILL);
        w->killed = why;
    }
}

/* Seeds of `rest` will not be judged in this campaign. */
void pl__cli_note_unfinished(campaign *cp, pl__seed_slice rest)
{
    if (!rest.empty && rest.first < cp->resume_seed) {
        cp->resume_seed = rest.first;
    }
}

/* Stops a worker on purpose (--time, Ctrl-C): its seeds from the one it
 * runs or starts next on stay unjudged. */
void pl__cli_stop_worker(campaign *cp, worker *w)
{
    if (w->pid > 0 && w->killed == KILL_NONE) {
        PL__CLI_ASSERT(!w->running || w->started > 0); /* running: one was started */
        pl__seed_slice rest = pl__seed_slice_rest(&w->slice, w->started - (w->running ? 1 : 0));
        pl__cli_note_unfinished(cp, rest);
        pl__cli_kill_worker(w, KILL_STOP);
    }
}

/* Stop mode: seeds above the lowest finding cannot change the report. */
void pl__cli_lower_limit(campaign *cp, uint64_t seed)
{
    if (seed < cp->limit) {
        cp->limit = seed;
    }
    for (size_t i = 0; i < cp->nw && !cp->o->keep_going; i++) {
        if (cp->w[i].pid > 0 && worker_next_seed(&cp->w[i]) > cp->limit) {
            pl__cli_kill_worker(&cp->w[i], KILL_STOP);
        }
    }
}

static void discard_report(report *rp, bool remove_file)
{
    if (rp != NULL && remove_file && rp->replay[0] != '\0') {
        unlink(rp->replay);
    }
    free(rp);
}

/* Takes ownership of rp. Stop mode keeps only the lowest seed (printed
 * at the end, once no lower seed can report); keep-going prints now. */
void pl__cli_accept_report(campaign *cp, report *rp)
{
    pl__cli_make_reproduce(cp->c, cp->o, rp);
    bool setup = pl_finding_is_setup_error(&rp->f);
    if (cp->o->keep_going) {
        cp->findings += !setup;
        cp->setup_errors += setup;
        pl__cli_print_report(cp->o, rp);
    }
    bool lower = cp->first == NULL || (rp->has_seed && rp->seed < cp->first->seed);
    if (lower) {
        discard_report(cp->first, !cp->o->keep_going);
        cp->first = rp;
    } else {
        discard_report(rp, !cp->o->keep_going);
    }
    if (!cp->o->keep_going) {
        /* Stop mode reports the lowest seed alone: one finding or one
         * setup error (the scenario never ran: not a finding). */
        bool first_setup = pl_finding_is_setup_error(&cp->first->f);
        cp->findings = !first_setup;
        cp->setup_errors = first_setup;
    }
    if (cp->first->has_seed) {
        pl__cli_lower_limit(cp, cp->first->seed);
    }
}

void pl__cli_clear_progress(campaign *cp)
{
    if (cp->progress_shown) {
        fputs("\r\033[K", stderr);
        cp->progress_shown = false;
    }
}

void pl__cli_progress(campaign *cp)
{
    int64_t now = pl__cli_now_ms(), every = cp->o->tty ? PROGRESS_TTY_MS : PROGRESS_PIPE_MS;
    if (cp->o->quiet || now - cp->progress_ms < every) {
        return;
    }
    cp->progress_ms = now;
    double secs = (double)(now - cp->start_ms) / 1000.0;
    fprintf(stderr, "%s%s: %" PRIu64 "/%s seeds, %.0f runs/s, %" PRIu64 " findings, %.1f s%s",
            cp->o->tty ? "\r\033[K" : "", cp->sc->name, cp->done, cp->total,
            secs > 0 ? (double)cp->done / secs : 0.0, cp->findings, secs,
            cp->o->tty ? "" : "\n");
    cp->progress_shown = cp->o->tty;
    fflush(stderr);
}

static worker *worker_slot(campaign *cp)
{
    for (size_t i = 0; i < cp->nw; i++) {
        if (cp->w[i].pid == 0) {
            return &cp->w[i];
        }
    }
    worker *w = realloc(cp->w, (cp->nw + 1) * sizeof *w);
    if (w == NULL) {
        return NULL;
    }
    cp->w = w;
    return &cp->w[cp->nw++];
}

/* In a new worker: the other workers' pipes and capture files are not its
 * business (and an inherited capture file would outlive its worker). */
static void close_others(const campaign *cp, const worker *self)
{
    for (size_t i = 0; i < cp->nw; i++) {
        if (&cp->w[i] != self && cp->w[i].pid > 0) {
            close(cp->w[i].fd);
            close(cp->w[i].out_fd);
        }
    }
}

/* Forks a worker for `slice`. Fills and returns its slot, or NULL after
 * an internal error. */
static worker *spawn_worker(campaign *cp, pl__seed_slice slice, bool rerun, shared_rec *rec)
{
    int fds[2];
    worker *w = worker_slot(cp);
    int out = pl__cli_capture_file();
    if (w == NULL || out < 0 || pipe(fds) != 0) {
        pl__cli_internal_error(cp->c, "run", "cannot start a worker: %s",
                               strerror(out < 0 ? -out : errno));
        if (out >= 0) {
            close(out);
        }
        return NULL;
    }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    fflush(NULL); /* or the child would print the parent's buffered text again */
    pid_t pid = fork();
    if (pid < 0) {
        pl__cli_internal_error(cp->c, "run", "cannot fork a worker: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        close(out);
        return NULL;
    }
    if (pid == 0) {
        close(fds[0]);
        close_others(cp, w);
        job jb = {cp->o, cp->sc, slice, rerun, rec, out};
        pl__cli_worker_main(&jb, fds[1]);
    }
    close(fds[1]);
    memset(w, 0, sizeof *w);
    w->pid = pid;
    w->fd = fds[0];
    w->out_fd = out;
    w->slice = slice;
    w->heard_ms = pl__cli_now_ms();
    w->rerun = rerun;
    w->rec = rec;
    cp->sites_expected += !rerun;
    return w;
}

/* Seed workers mirror their decisions too, so a seed the poll budget
 * stopped is reported with them at once, without a rerun. */
worker *pl__cli_spawn_seed_worker(campaign *cp, pl__seed_slice slice)
{
    shared_rec *rec = pl__cli_shared_rec_create();
    worker *w = spawn_worker(cp, slice, false, rec);
    if (w == NULL) {
        pl__cli_shared_rec_destroy(rec);
    }
    return w;
}

/* Reruns a seed whose worker died, alone, recording its decisions. */
void pl__cli_spawn_rerun(campaign *cp, uint64_t seed, pl_finding_kind cause, const char *text)
{
    pl__seed_slice one = {seed, 1, 0, false};
    shared_rec *rec = pl__cli_shared_rec_create();
    worker *w = spawn_worker(cp, one, true, rec);
    if (w == NULL) {
        pl__cli_shared_rec_destroy(rec);
        cp->error = true;
        return;
    }
    w->cause = cause;
    snprintf(w->cause_text, sizeof w->cause_text, "%s", text);
}

/* "10 s", "250 ms", "1.5 s" */
void pl__cli_format_duration(pl_time ns, char *buf, size_t len)
{
    if (ns < PL_S) {
        snprintf(buf, len, "%" PRId64 " ms", ns / PL_MS);
    } else if (ns % PL_S == 0) {
        snprintf(buf, len, "%" PRId64 " s", ns / PL_S);
    } else {
        snprintf(buf, len, "%.1f s", (double)ns / (double)PL_S);
    }
}

/* How a worker's run of a seed ended, in words. */
void pl__cli_lost_text(const campaign *cp, const worker *w, int status, char *buf, size_t len)
{
    if (w->killed == KILL_WATCHDOG) {
        char d[32];
        pl__cli_format_duration(cp->o->watchdog_ns, d, sizeof d);
        snprintf(buf, len, "made no progress for %s of wall time and was killed", d);
    } else {
        pl__cli_describe_status(status, buf, len);
    }
}

/* A report of scenario cp->sc at `seed`, or NULL (out of memory: the
 * campaign is marked failed and says so). */
report *pl__cli_new_report(campaign *cp, uint64_t seed)
{
    report *rp = calloc(1, sizeof *rp);
    if (rp == NULL) {
        cp->error = true;
        pl__cli_internal_error(cp->c, "run", "out of memory");
        return NULL;
    }
    rp->sc = cp->sc;
    rp->has_seed = true;
    rp->seed = seed;
    return rp;
}

/* Reports a seed whose run never finished, with the rerun's decisions
 * when it reproduced. */
void pl__cli_lost_report(campaign *cp, const worker *w, pl_finding_kind kind, const char *text,
                         lost_how how)
{
    report *rp = pl__cli_new_report(cp, w->seed);
    if (rp == NULL) {
        return;
    }
    rp->f.kind = kind;
    /* pollen's own kills are the watchdog's: a SIGKILL otherwise came
     * from outside, most often the OOM killer. */
    bool outside = strncmp(text, "was killed by SIGKILL", 21) == 0;
    const char *why = kind == PL_FINDING_LIVELOCK
                          ? "user code seems stuck inside one poll, or a poll never returns"
                      : outside ? "pollen did not send it; the kernel's OOM killer does when "
                                  "memory runs out (see --worker-rss)"
                                : "user code crashed";
    int n = snprintf(rp->f.message, sizeof rp->f.message,
                     "the worker process %s while running this seed: %s", text, why);
    if (how == LOST_NOT_REPRODUCED && n > 0 && (size_t)n < sizeof rp->f.message) {
        snprintf(rp->f.message + n, sizeof rp->f.message - (size_t)n,
                 "\nrun again alone, the seed did not fail: the failure depends on something "
                 "outside the simulation (state left by earlier seeds, the environment)");
    } else if (how == LOST_NOT_RERUN && n > 0 && (size_t)n < sizeof rp->f.message) {
        snprintf(rp->f.message + n, sizeof rp->f.message - (size_t)n,
                 "\n(not run again alone to record its decisions: --time had run out)");
    }
    if (how == LOST_NOT_REPRODUCED) {
        snprintf(rp->unknown, sizeof rp->unknown, "the seed did not fail when run again alone");
    } else if (how == LOST_NOT_RERUN) {
        snprintf(rp->unknown, sizeof rp->unknown,
                 "the seed was not run again alone (--time had run out)");
    }
    rp->output = w->tail;
    if (how == LOST_REPRODUCED && w->rec != NULL && kind == PL_FINDING_CRASH) {
        /* A watchdog hang stays unpositioned: its shrink candidates
         * would each wait for the watchdog. */
        pl__cli_crash_timeline(rp, &w->rec->ring);
        pl__cli_crash_stack_text(&w->rec->stack, "  the crashing thread's native stack", rp->native,
                                 sizeof rp->native);
        pl__cli_crash_stack_json(&w->rec->stack, rp->native_json, sizeof rp->native_json);
    }
    const char *note = how == LOST_NOT_RERUN ? "--time ran out before a rerun could record "
                                               "the decisions"
                                             : "this build records no decisions of crashed runs";
    if (pl__cli_write_lost_replay(cp->o, rp, how == LOST_REPRODUCED ? w->rec : NULL, note) != 0) {
        cp->error = true;
    }
    pl__cli_accept_report(cp, rp);
}

static void on_finding(campaign *cp, worker *w, uint64_t seed, const msg_finding *m)
{
    report *rp = pl__cli_new_report(cp, seed);
    if (rp == NULL) {
        return;
    }
    rp->positioned = true;
    rp->f = m->finding;
    snprintf(rp->replay, sizeof rp->replay, "%s", m->replay);
    snprintf(rp->note, sizeof rp->note, "%s", m->replay_error);
    rp->output = m->output;
    rp->output.text[sizeof rp->output.text - 1] = '\0';
    cp->error = cp->error || (m->replay_error[0] != '\0' && m->replay[0] == '\0');
    if (w->rerun) {
        /* The rerun was for a crash or hang; say so next to what it found. */
        char msg[sizeof rp->f.message];
        pl__cli_textf(msg, sizeof msg,
                      "(the worker process first running this seed %s; run again alone, the seed "
                      "gave this)\n%s",
                      w->cause_text, m->finding.message);
        memcpy(rp->f.message, msg, sizeof msg);
    }
    w->reported = true;
    if (!cp->o->keep_going && seed > cp->limit) {
        discard_report(rp, true);
        return;
    }
    pl__cli_accept_report(cp, rp);
}

static void on_sites(campaign *cp, const worker *w, uint64_t n, const uint8_t *payload,
                     size_t len)
{
    if (w->rerun || n != cp->tally.nsites || len != 2 * n * sizeof(uint32_t)) {
        return;
    }
    /* The payload sits unaligned in the receive buffer. */
    uint32_t *counts = malloc(len + sizeof *counts);
    if (counts == NULL) {
        cp->error = true;
        return;
    }
    memcpy(counts, payload, len);
    cp->sites_received += pl__campaign_tally_sites(&cp->tally, counts, (size_t)n);
    free(counts);
}

/* "512 bytes", "64.0 KiB", "1.5 GiB" */
static void format_bytes(uint64_t n, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (n < 1024) {
        snprintf(buf, len, "%" PRIu64 " bytes", n);
        return;
    }
    double v = (double)n / 1024.0;
    size_t u = 0;
    for (; v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]; u++) {
        v /= 1024.0;
    }
    snprintf(buf, len, "%.1f %s", v, units[u]);
}

/* A worker's memory grew seed after seed: not a finding of the oracles,
 * but what it is, once per campaign, on the text channel and as a JSON
 * line. */
static void on_growth(campaign *cp, const msg_growth *m)
{
    if (cp->growth_warned || m->seeds == 0) {
        return;
    }
    cp->growth_warned = true;
    char per[32], rss[32], text[512];
    format_bytes(m->bytes / m->seeds, per, sizeof per);
    format_bytes(cp->o->worker_rss, rss, sizeof rss);
    pl__cli_textf(
        text, sizeof text,
        "worker memory grew by %s per seed over seeds %" PRIu64 "..%" PRIu64 " (%" PRIu64
        " runs in one process): user code leaks memory across runs; workers restart every "
        "%" PRIu64 " seeds (--recycle-seeds) and past %s of RSS (--worker-rss)",
        per, m->first_seed, m->last_seed, m->seeds, cp->o->recycle_seeds, rss);
    pl__cli_clear_progress(cp);
    fprintf(cp->o->text, "warning: %s: %s\n", cp->sc->name, text);
    pl__cli_flush_out(cp->o->text);
    if (cp->o->json) {
        fputs("{\"warning\":\"memory_growth\",\"scenario\":", stdout);
        pl__cli_json_string(stdout, cp->sc->name);
        fprintf(stdout, ",\"first_seed\":%" PRIu64 ",\"last_seed\":%" PRIu64 ",\"seeds\":%" PRIu64
                        ",\"bytes_per_seed\":%" PRIu64 ",\"message\":",
                m->first_seed, m->last_seed, m->seeds, m->bytes / m->seeds);
        pl__cli_json_string(stdout, text);
        fputs("}\n", stdout);
        pl__cli_flush_out(stdout);
    }
}

/* A worker handed its remaining seeds on: they go on in a fresh process,
 * unless the campaign is ending. */
void pl__cli_worker_recycled(campaign *cp, const worker *w)
{
    pl__seed_slice rest = pl__seed_slice_rest(&w->slice, w->started);
    if (rest.empty || (!cp->o->keep_going && rest.first > cp->limit)) {
        return;
    }
    if (cp->stopping || pl__cli_interrupted || cp->error || pl__cli_stdout_errno != 0) {
        pl__cli_note_unfinished(cp, rest);
        return;
    }
    if (w->recycle.reason == RECYCLE_RSS && !cp->rss_noted) {
        char rss[32], bound[32];
        cp->rss_noted = true;
        format_bytes(w->recycle.rss, rss, sizeof rss);
        format_bytes(cp->o->worker_rss, bound, sizeof bound);
        pl__cli_clear_progress(cp);
        fprintf(cp->o->text,
                "note: %s: a worker grew to %s of RSS (--worker-rss %s) by seed %" PRIu64
                "; its seeds from %" PRIu64 " on run in a fresh process\n",
                cp->sc->name, rss, bound, w->recycle.seed, rest.first);
        pl__cli_flush_out(cp->o->text);
    }
    if (pl__cli_spawn_seed_worker(cp, rest) == NULL) {
        cp->error = true;
    }
}

/* Whether h is a message a worker sends (worker.c's send_msg): a known
 * type, and the payload size of those that carry a struct. Parent and
 * worker are the same binary, so anything else is a broken pipe
 * protocol, not bad input. */
static bool msg_known(const msg_head *h)
{
    switch (h->type) {
    case MSG_START:
        return h->len == 0;
    case MSG_DONE:
        return h->len == sizeof(uint64_t);
    case MSG_FINDING:
        return h->len == sizeof(msg_finding);
    case MSG_RECYCLE:
        return h->len == sizeof(msg_recycle);
    case MSG_GROWTH:
        return h->len == sizeof(msg_growth);
    case MSG_OUTPUT:
        return h->len == sizeof(output_tail);
    case MSG_SITES:
        return h->len == 2 * h->seed * sizeof(uint32_t);
    case MSG_SITE_LAST:
        return h->len < PL__SOMETIMES_LAST;
    case MSG_ERROR:
    case MSG_COVER:
        return true;
    default:
        return false;
    }
}

/* A clean seed's stdout (run --seed N): printed as a finding's is. */
static void on_output(campaign *cp, const uint8_t *payload)
{
    output_tail *t = malloc(sizeof *t); /* aligned copy */
    if (t == NULL) {
        return;
    }
    memcpy(t, payload, sizeof *t);
    t->text[sizeof t->text - 1] = '\0';
    fprintf(cp->o->text, "%s: seed %" PRIu64 " ran clean\n", cp->sc->name, cp->o->seed_lo);
    pl__cli_print_output(cp->o->text, t);
    pl__cli_flush_out(cp->o->text);
    free(t);
}

static void on_message(campaign *cp, worker *w, const msg_head *h, const uint8_t *payload)
{
    PL__CLI_ASSERT(msg_known(h));
    w->heard_ms = pl__cli_now_ms();
    /* A worker runs its slice in order, each seed between its START and
     * its DONE, its finding in between. */
    PL__CLI_ASSERT((h->type != MSG_DONE && h->type != MSG_FINDING) ||
                   (w->running && h->seed == w->seed));
    if (h->type == MSG_START) {
        PL__CLI_ASSERT(!w->running && pl__seed_slice_has(&w->slice, w->started) &&
                       h->seed == pl__seed_slice_seed(&w->slice, w->started));
        w->running = true;
        w->seed = h->seed;
        w->started++;
        if (!cp->o->keep_going && h->seed > cp->limit) {
            pl__cli_kill_worker(w, KILL_STOP);
        } else if (cp->stopping) {
            pl__cli_stop_worker(cp, w);
        }
    } else if (h->type == MSG_DONE && h->len == sizeof(uint64_t)) {
        uint64_t hash;
        memcpy(&hash, payload, sizeof hash);
        w->running = false;
        cp->done++;
        pl__hashset_add(&cp->tally.hashes, hash);
    } else if (h->type == MSG_FINDING && h->len == sizeof(msg_finding)) {
        msg_finding *m = malloc(sizeof *m); /* aligned copy */
        if (m != NULL) {
            memcpy(m, payload, sizeof *m);
            on_finding(cp, w, h->seed, m);
        }
        free(m);
    } else if (h->type == MSG_SITES) {
        on_sites(cp, w, h->seed, payload, h->len);
    } else if (h->type == MSG_SITE_LAST && !w->rerun) {
        pl__campaign_tally_last(&cp->tally, (size_t)h->seed, (const char *)payload, h->len);
    } else if (h->type == MSG_COVER && !w->rerun) {
        int rc = pl__cli_cover_unpack(&cp->tally, payload, h->len);
        cp->cover_received += rc == 0;
        cp->error = cp->error || rc == PL_ENOMEM;
    } else if (h->type == MSG_RECYCLE && h->len == sizeof(msg_recycle)) {
        memcpy(&w->recycle, payload, sizeof w->recycle);
    } else if (h->type == MSG_OUTPUT && h->len == sizeof(output_tail)) {
        on_output(cp, payload);
    } else if (h->type == MSG_GROWTH && h->len == sizeof(msg_growth)) {
        msg_growth m;
        memcpy(&m, payload, sizeof m);
        on_growth(cp, &m);
    } else if (h->type == MSG_ERROR && h->len > 0) {
        pl__cli_internal_error(cp->c, "run", "%s: %.*s", cp->sc->name, (int)h->len,
                               (const char *)payload);
        cp->error = true;
    }
}

void pl__cli_parse_messages(campaign *cp, worker *w)
{
    PL__CLI_ASSERT(w->len <= w->cap && (w->buf != NULL || w->len == 0));
    size_t off = 0;
    while (w->len - off >= sizeof(msg_head)) {
        msg_head h;
        memcpy(&h, w->buf + off, sizeof h);
        if (w->len - off - sizeof h < h.len) {
            break;
        }
        on_message(cp, w, &h, w->buf + off + sizeof h);
        off += sizeof h + h.len;
        PL__CLI_ASSERT(off <= w->len);
    }
    if (off == 0) {
        return; /* no whole message yet (also: nothing received) */
    }
    memmove(w->buf, w->buf + off, w->len - off);
    w->len -= off;
}
