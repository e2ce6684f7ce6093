/* sim/src/cli/loop.c: the parent's poll loop over its workers' pipes:
 * messages in, workers reaped (a seed lost to a crash or a hang is rerun
 * or reported), the watchdog, --time and Ctrl-C. */
#include "cli_internal.h"

static bool buffer_append(worker *w, const uint8_t *data, size_t n)
{
    PL__CLI_ASSERT(w->len <= w->cap && data != NULL);
    if (w->len + n > w->cap) {
        size_t cap = w->cap == 0 ? 65536 : w->cap;
        while (cap < w->len + n) {
            cap *= 2;
        }
        uint8_t *buf = realloc(w->buf, cap);
        if (buf == NULL) {
            return false;
        }
        w->buf = buf;
        w->cap = cap;
    }
    memcpy(w->buf + w->len, data, n);
    w->len += n;
    return true;
}

/* Keep-going: a worker for the seeds a dead worker had left. */
static void spawn_rest(campaign *cp, const worker *w)
{
    pl__seed_slice rest = pl__seed_slice_rest(&w->slice, w->started);
    if (cp->o->keep_going && !rest.empty && pl__cli_spawn_seed_worker(cp, rest) == NULL) {
        cp->error = true;
    }
}

/* The poll budget stopped a worker inside a poll: the seed is a livelock,
 * reported with the task, its poll and the step, and the decisions the
 * worker mirrored up to there. Returns false for any other end. */
static bool hang_reported(campaign *cp, const worker *w, int status)
{
    if (w->rec == NULL || w->killed != KILL_NONE || !pl__hang_ended(&w->rec->hang, status)) {
        return false;
    }
    cp->done++;
    if (!w->rerun) {
        spawn_rest(cp, w);
    }
    if (!cp->o->keep_going && w->seed > cp->limit) {
        return true;
    }
    report *rp = pl__cli_new_report(cp, w->seed);
    if (rp == NULL) {
        return true;
    }
    rp->positioned = true;
    pl__hang_finding(&w->rec->hang, &rp->f);
    if (pl__cli_write_lost_replay(cp->o, rp, w->rec, NULL) != 0) {
        cp->error = true;
    }
    pl__cli_accept_report(cp, rp);
    return true;
}

/* A seed worker died inside a run: rerun the seed alone, and in
 * keep-going mode start a worker for the seeds it had left. */
static void seed_lost(campaign *cp, const worker *w, int status)
{
    char text[160];
    pl__cli_lost_text(cp, w, status, text, sizeof text);
    pl_finding_kind cause =
        w->killed == KILL_WATCHDOG ? PL_FINDING_LIVELOCK : PL_FINDING_CRASH;
    if (!cp->o->keep_going && w->seed > cp->limit) {
        return;
    }
    pl__seed_slice rest = pl__seed_slice_rest(&w->slice, w->started);
    if (cp->stopping) {
        /* After --time, no rerun: the seed is judged now, so that a
         * resumed campaign goes past it. */
        pl__cli_lost_report(cp, w, cause, text, LOST_NOT_RERUN);
        pl__cli_note_unfinished(cp, rest);
        return;
    }
    /* Holds the other workers below this seed while the rerun runs. */
    pl__cli_lower_limit(cp, w->seed);
    pl__cli_spawn_rerun(cp, w->seed, cause, text);
    spawn_rest(cp, w);
}

static void rerun_ended(campaign *cp, const worker *w, int status)
{
    if (w->running || w->killed == KILL_WATCHDOG) {
        char text[160];
        pl__cli_lost_text(cp, w, status, text, sizeof text);
        cp->done++;
        pl__cli_lost_report(cp, w,
                            w->killed == KILL_WATCHDOG ? PL_FINDING_LIVELOCK : PL_FINDING_CRASH,
                            text, LOST_REPRODUCED);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == ST_CLEAN) {
        if (!w->reported) {
            pl__cli_lost_report(cp, w, w->cause, w->cause_text, LOST_NOT_REPRODUCED);
        }
    } else {
        cp->error = true;
    }
}

/* The worker in slot i closed its pipe: collect it and act on how it
 * ended. */
static void reap(campaign *cp, size_t i)
{
    worker w = cp->w[i]; /* a copy: spawning below may move the array */
    cp->w[i].pid = 0;
    cp->w[i].buf = NULL;
    close(w.fd);
    free(w.buf);
    int status = 0;
    while (waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    /* Closed before any new worker forks, which would inherit it. */
    pl__cli_read_tail(w.out_fd, &w.tail);
    close(w.out_fd);
    if (w.killed == KILL_STOP) {
        /* Stopped on purpose: nothing to report. */
    } else if (hang_reported(cp, &w, status)) {
        /* Reported with its decisions. */
    } else if (w.rerun) {
        rerun_ended(cp, &w, status);
    } else if (w.running || w.killed == KILL_WATCHDOG) {
        seed_lost(cp, &w, status);
    } else if (!(WIFEXITED(status) && WEXITSTATUS(status) == ST_CLEAN) && !cp->error) {
        char text[160];
        pl__cli_describe_status(status, text, sizeof text);
        pl__cli_internal_error(cp->c, "run", "%s: a worker %s between two runs", cp->sc->name,
                               text);
        cp->error = true;
    } else if (w.recycle.reason != RECYCLE_NONE) {
        pl__cli_worker_recycled(cp, &w);
    }
    pl__cli_shared_rec_destroy(w.rec);
}

static void drain(campaign *cp, size_t i)
{
    uint8_t tmp[65536];
    ssize_t n = read(cp->w[i].fd, tmp, sizeof tmp);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        return;
    }
    if (n <= 0) {
        reap(cp, i);
        return;
    }
    if (!buffer_append(&cp->w[i], tmp, (size_t)n)) {
        pl__cli_internal_error(cp->c, "run", "out of memory");
        cp->error = true;
        return;
    }
    pl__cli_parse_messages(cp, &cp->w[i]);
}

/* --time, Ctrl-C, errors: stops every worker now. */
static void stop_all(campaign *cp)
{
    for (size_t i = 0; i < cp->nw; i++) {
        pl__cli_stop_worker(cp, &cp->w[i]);
    }
}

/* --time ran out: no seed starts any more, and a seed still running
 * finishes or meets the watchdog. Dropping it unjudged would make every
 * resumed campaign stall on the same hanging seed. */
static void stop_for_time(campaign *cp)
{
    cp->stopped = cp->stopping = true;
    for (size_t i = 0; i < cp->nw; i++) {
        if (!cp->w[i].running) {
            pl__cli_stop_worker(cp, &cp->w[i]);
        }
    }
}

static void check_limits(campaign *cp)
{
    int64_t now = pl__cli_now_ms();
    if (pl__cli_interrupted) {
        cp->stopped = true;
        stop_all(cp);
    } else if (cp->error || pl__cli_stdout_errno != 0) {
        stop_all(cp);
    } else if (now >= cp->o->deadline_ms) {
        stop_for_time(cp);
    }
    for (size_t i = 0; i < cp->nw; i++) {
        worker *w = &cp->w[i];
        if (w->pid > 0 && w->running && now - w->heard_ms >= cp->o->watchdog_ns / PL_MS) {
            pl__cli_kill_worker(w, KILL_WATCHDOG);
        }
    }
}

static int poll_timeout(const campaign *cp)
{
    int64_t now = pl__cli_now_ms(), t = 1000;
    if (!cp->o->quiet) {
        int64_t every = cp->o->tty ? PROGRESS_TTY_MS : PROGRESS_PIPE_MS;
        t = cp->progress_ms + every - now < t ? cp->progress_ms + every - now : t;
    }
    if (!cp->stopping) {
        t = cp->o->deadline_ms - now < t ? cp->o->deadline_ms - now : t;
    }
    for (size_t i = 0; i < cp->nw; i++) {
        const worker *w = &cp->w[i];
        int64_t due = w->heard_ms + cp->o->watchdog_ns / PL_MS - now;
        t = w->pid > 0 && w->running && due < t ? due : t;
    }
    return t < 0 ? 0 : (int)t;
}

static size_t live_workers(const campaign *cp)
{
    size_t n = 0;
    for (size_t i = 0; i < cp->nw; i++) {
        n += cp->w[i].pid > 0;
    }
    return n;
}

/* Last resort when the parent cannot go on: kill and collect everyone. */
static void abandon_all(campaign *cp)
{
    for (size_t i = 0; i < cp->nw; i++) {
        worker *w = &cp->w[i];
        if (w->pid > 0) {
            kill(w->pid, SIGKILL);
            while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR) {
            }
            close(w->fd);
            close(w->out_fd);
            free(w->buf);
            pl__cli_shared_rec_destroy(w->rec);
            memset(w, 0, sizeof *w);
        }
    }
}

void pl__cli_campaign_loop(campaign *cp)
{
    struct pollfd *pfd = NULL;
    size_t *slot = NULL;
    for (size_t live; (live = live_workers(cp)) > 0;) {
        struct pollfd *p = realloc(pfd, cp->nw * sizeof *p);
        size_t *s = realloc(slot, cp->nw * sizeof *s);
        pfd = p != NULL ? p : pfd;
        slot = s != NULL ? s : slot;
        if (p == NULL || s == NULL) {
            pl__cli_internal_error(cp->c, "run", "out of memory");
            cp->error = true;
            abandon_all(cp);
            break;
        }
        size_t n = 0;
        for (size_t i = 0; i < cp->nw; i++) {
            if (cp->w[i].pid > 0) {
                pfd[n] = (struct pollfd){.fd = cp->w[i].fd, .events = POLLIN};
                slot[n++] = i;
            }
        }
        int rc = poll(pfd, n, poll_timeout(cp));
        for (size_t k = 0; rc > 0 && k < n; k++) {
            /* A slot may have been reused by a rerun during this pass. */
            if (pfd[k].revents != 0 && cp->w[slot[k]].pid > 0 && cp->w[slot[k]].fd == pfd[k].fd) {
                drain(cp, slot[k]);
            }
        }
        check_limits(cp);
        pl__cli_progress(cp);
    }
    free(pfd);
    free(slot);
}
