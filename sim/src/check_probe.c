/* sim/src/check_probe.c: the quiescence probes, up to timers.
 *
 * A parked task that could progress if polled, yet nothing woke it, lost
 * a wakeup. Real code is rarely quiescent: an idle timeout, a retry
 * deadline or a ticker is nearly always armed, and rescues the task late.
 * So parked tasks are judged not only at final quiescence and at the
 * time limit but also at every timer-quiescent point (nothing runnable,
 * no I/O delivery or remote wake in flight, a timer armed: only a timer
 * can happen next), and at points where only background work is left.
 *
 * A probe polls a parked task in place, handing it the waker of its
 * latest poll (no rotation: the wakers it stored stay current). The
 * Future contract lets a poll come without a wake, so a correct future
 * tolerates a probe; one that returns PENDING, leaves the future's bytes
 * as they were and wakes nobody had no effect the program can see
 * through the future, and the run goes on as if it had not happened.
 * (Effects outside the future, a statistics counter, are the one thing
 * that can leak; they cannot make a correct program incorrect.) A probe
 * that makes progress ends the run with the finding; what would have
 * rescued the task is then learnt from a follow-up run of the same
 * decisions without that probe (run.c), so nothing the probe did leaks
 * into what the report says.
 *
 * Which points probe is a decision (PL_DECIDE_PROBE, knob "probe"), so
 * it replays and shrinks. Two probes need no decision: the task the next
 * timer will wake, when someone besides that timer holds its waker (the
 * timer is about to rescue it: the last moment a lost wake still shows),
 * and the task pollen is about to wake spuriously (an injected wake must
 * not hide a lost one). The knob's on/off switch covers all three.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "check_probe.h"
#include "check_probe_wait.h"
#include "sim_internal.h"

/* A point's scan for parked tasks looks at this many task ids at most,
 * and probes at most this many of them: O(1) per point with a million
 * tasks, every task of a small scenario at every probing point. */
#define SCAN_MAX 64u

/* Futures up to this size are compared with a copy, bigger ones by hash. */
#define PROBE_COPY_MAX 512u
#define PROBES_PER_POINT_MAX 8u

static double ms(pl_time ns) { return (double)ns / 1e6; }

/* Between a late timer's deadline and its firing, the task's own clock
 * check already says "due": that is the lateness being simulated. The
 * task's list forgets timers whose firing time has passed as it goes. */
static bool in_late_window(pl__sim *s, uint32_t id)
{
    uint32_t *link = &s->tasks.info[id].late_head;
    while (*link != 0) {
        uint32_t i = *link - 1;
        PL__SIM_ASSERT(i < s->probe.late_len);
        pl__late_timer *l = &s->probe.late[i];
        if (l->until > s->now) {
            if (l->from <= s->now) {
                return true;
            }
            link = &l->next;
            continue;
        }
        *link = l->next; /* fired (or disarmed) long since: reuse the entry */
        l->next = s->probe.late_free;
        s->probe.late_free = i + 1;
    }
    return false;
}

/* Worth probing at a timer point: parked in the foreground, not polling
 * on purpose, and either not probed since it parked (its poll may have
 * parked without looking at what had already happened) or something ran
 * since its last probe (otherwise a probe sees what the last one saw). */
static bool suspect(pl__sim *s, uint32_t id)
{
    const pl__task_info *ti = &s->tasks.info[id];
    return pl__sim_pollable_parked(s, ti) && !pl_task_is_background(ti->task) && !ti->on_purpose &&
           (ti->probed_step < ti->parked_step || s->step > ti->probed_step) &&
           !in_late_window(s, id);
}

typedef struct probe_out {
    bool progress;
    const char *how;      /* "completed", "woke a task", "changed its state" */
    uint32_t polls;       /* polls before the probe */
    uint32_t clones;      /* live waker clones before the probe */
    uint32_t holder;      /* who made the latest clone */
    uint64_t parked_step;
    pl_time parked_ns;
    pl_time at_ns;        /* when the probe ran */
} probe_out;

/* "latest made by itself" / "latest made while polling 'x'". */
static void clone_text(pl__sim *s, uint32_t id, const probe_out *p, char *buf, size_t len)
{
    if (p->holder == id) {
        snprintf(buf, len, "%u (latest made by itself)", p->clones);
    } else {
        snprintf(buf, len, "%u (latest made while polling %s)", p->clones,
                 pl__tasks_holder_name(s, p->holder));
    }
}

/* The finding for a probe that progressed. `rescue` says what woke the
 * task instead, when that is already known ("" otherwise). A task woken
 * only through a superseded waker is a stale_waker, and the report links
 * that dropped wake. */
static void report_progress(pl__sim *s, const pl_task *t, const probe_out *p, const char *where,
                            const char *rescue)
{
    uint32_t id = pl_task_id(t);
    pl__task_info *ti = &s->tasks.info[id];
    char clones[128];
    clone_text(s, id, p, clones, sizeof clones);
    bool fresh = s->finding.kind == PL_FINDING_NONE;
    if (ti->stale_wakes > 0) {
        char by[96] = "code outside any poll";
        if (ti->stale_by != 0) {
            snprintf(by, sizeof by, "'%s' (#%u)", pl__tasks_name_of(s, ti->stale_by), ti->stale_by);
        }
        pl__sim_finding(
            s, PL_FINDING_STALE_WAKER, t,
            "'%s' (#%u) was woken at %.3f ms by %s only through the waker of its poll #%u, "
            "which its later polls superseded, so the wake was dropped (it kept a stale "
            "waker: compare with pl_waker_will_wake and store the newest); a probe poll %s at "
            "%.3f ms %s: it could have run%s. Its waker clones alive: %s",
            pl_task_name(t), id, ms(ti->stale_ns), by, ti->last_stale_gen, where, ms(p->at_ns),
            p->how, rescue, clones);
        pl__bt_describe(s, fresh, id);
        return;
    }
    pl__sim_finding(s, PL_FINDING_LOST_WAKEUP, t,
                    "'%s' (#%u) parked at %.3f ms (step %llu, after poll #%u) and nothing woke "
                    "it, yet a probe poll %s at %.3f ms %s: the event it waited for had "
                    "happened%s. Its waker clones alive: %s",
                    pl_task_name(t), id, ms(p->parked_ns), (unsigned long long)p->parked_step,
                    p->polls, where, ms(p->at_ns), p->how, rescue, clones);
    pl__bt_describe(s, fresh, id);
}

/* ---- Progress or bookkeeping -------------------------------------------
 * A future that recomputes its next wake on every poll changes its bytes
 * when probed without having seen anything: it re-arms its sleep (a new
 * arming number) to the same deadline or a later one, refreshes a cached
 * "now", counts its polls. Reporting that as a lost wakeup is a false
 * alarm. So a probe's changes are read word by word (8 bytes, futures up
 * to PROBE_COPY_MAX; bigger ones are compared whole), and these are
 * bookkeeping:
 *  - a pl_timer inside the future, armed before the probe and re-armed by
 *    it for a deadline no earlier than before (pl_sleep's own deadline
 *    word, or the future's copy of it, moves with it the same way);
 *  - a word that held an earlier time and now holds exactly the probe's
 *    virtual time (a cached clock);
 *  - counters that went up by one, when a second probe, right after,
 *    moves exactly the same words by exactly as much and nothing else
 *    (a poll counter counts every poll; what an event changed, a second
 *    look does not change again the same way).
 * A deadline moved earlier (a new entry the future had not seen), any
 * other word, READY, a wake, a spawn: progress, as before. At final
 * quiescence nothing can wake the task anyway, so there every change
 * counts (the finding is a deadlock either way; this keeps its kind). */

#define WORD 8u
#define WORDS_MAX (PROBE_COPY_MAX / WORD)
#define RESIDUE_MAX 4u /* counters a second probe is asked about */
_Static_assert(WORDS_MAX <= 64, "one bit per word of a copied future");

typedef struct rearm {
    pl_time old_ns; /* the deadline before the probe, and after it */
    pl_time new_ns;
} rearm;

/* What a probe changed that is not bookkeeping: the words, and by how
 * much (new - old, modulo 2^64). */
typedef struct residue {
    uint32_t len;      /* may exceed RESIDUE_MAX: then not all are listed */
    bool earlier;      /* a timer was moved to an earlier deadline */
    uint32_t word[RESIDUE_MAX];
    uint64_t delta[RESIDUE_MAX];
} residue;

static uint64_t word_at(const unsigned char *bytes, size_t size, size_t w)
{
    uint64_t v = 0;
    size_t at = w * WORD;
    memcpy(&v, bytes + at, size - at < WORD ? size - at : WORD); /* the tail, zero-padded */
    return v;
}

static bool probe_armed(const pl__sim *s, uint64_t seq)
{
    uint32_t n = s->probe.arms_len < PL__PROBE_ARMS_MAX ? s->probe.arms_len : PL__PROBE_ARMS_MAX;
    for (uint32_t i = 0; i < n; i++) {
        if (s->probe.arms[i] == seq) {
            return true;
        }
    }
    return false;
}

static bool arm_deadline(const pl__sim *s, uint64_t seq, pl_time *out)
{
    if (seq >= s->probe.arm_deadlines_cap) {
        return false;
    }
    *out = s->probe.arm_deadlines[seq];
    return true;
}

/* The timers at 8-byte offsets of the future that the probe re-armed, as
 * they were armed before it: their words are excused when the deadline
 * did not move earlier. Returns how many re-arms it recorded in rearms. */
static uint32_t find_rearms(const pl__sim *s, const unsigned char *before,
                            const unsigned char *after, size_t size, uint64_t *excused,
                            rearm *rearms, bool *earlier)
{
    uint32_t n = 0;
    if (s->probe.arms_len == 0 || s->probe.arms_len > PL__PROBE_ARMS_MAX) {
        return 0; /* nothing re-armed, or too much to tell apart */
    }
    for (size_t at = 0; at + sizeof(pl_timer) <= size; at += WORD) {
        pl_timer was, is;
        memcpy(&was, before + at, sizeof was);
        memcpy(&is, after + at, sizeof is);
        pl_time old_ns, new_ns;
        if (is.ex != s->ex || was.ex != s->ex || !pl_timer_is_armed(&is) ||
            !pl_timer_is_armed(&was) || is.seq == was.seq || !probe_armed(s, is.seq) ||
            !arm_deadline(s, was.seq, &old_ns) || !arm_deadline(s, is.seq, &new_ns)) {
            continue;
        }
        if (new_ns < old_ns) {
            *earlier = true;
            continue;
        }
        for (size_t w = at / WORD; w < (at + sizeof(pl_timer)) / WORD; w++) {
            *excused |= UINT64_C(1) << w;
        }
        if (n < PL__PROBE_ARMS_MAX) {
            rearms[n++] = (rearm){old_ns, new_ns};
        }
    }
    return n;
}

static bool is_rearm_copy(const rearm *rearms, uint32_t n, uint64_t was, uint64_t is)
{
    for (uint32_t i = 0; i < n; i++) {
        if ((uint64_t)rearms[i].old_ns == was && (uint64_t)rearms[i].new_ns == is) {
            return true;
        }
    }
    return false;
}

/* Reads what the probe changed in a future of `size` <= PROBE_COPY_MAX
 * bytes into *out; true when all of it is bookkeeping of timers and
 * clocks (counters are left in *out for a second probe to judge). */
static bool read_changes(const pl__sim *s, const unsigned char *before, const unsigned char *after,
                         size_t size, residue *out)
{
    *out = (residue){0};
    uint64_t excused = 0;
    rearm rearms[PL__PROBE_ARMS_MAX];
    uint32_t nrearms = find_rearms(s, before, after, size, &excused, rearms, &out->earlier);
    size_t words = (size + WORD - 1) / WORD;
    PL__SIM_ASSERT(words <= WORDS_MAX);
    for (size_t w = 0; w < words; w++) {
        uint64_t was = word_at(before, size, w);
        uint64_t is = word_at(after, size, w);
        if (was == is || (excused >> w & 1u) != 0 || is_rearm_copy(rearms, nrearms, was, is) ||
            ((pl_time)is == s->now && (pl_time)was < s->now && (pl_time)was >= 0)) {
            continue;
        }
        if (out->len < RESIDUE_MAX) {
            out->word[out->len] = (uint32_t)w;
            out->delta[out->len] = is - was;
        }
        out->len++;
    }
    return out->len == 0 && !out->earlier;
}

/* An increment by one of an aligned 1-, 2-, 4- or 8-byte counter. */
static bool counted_one(uint64_t delta)
{
    for (unsigned shift = 0; shift < 64; shift += 8) {
        if (delta == UINT64_C(1) << shift) {
            return true;
        }
    }
    return false;
}

static bool counters_only(const residue *r)
{
    if (r->earlier || r->len == 0 || r->len > RESIDUE_MAX) {
        return false;
    }
    for (uint32_t i = 0; i < r->len; i++) {
        if (!counted_one(r->delta[i])) {
            return false;
        }
    }
    return true;
}

static bool same_residue(const residue *a, const residue *b)
{
    if (a->len != b->len || a->earlier || b->earlier || a->len > RESIDUE_MAX) {
        return false;
    }
    for (uint32_t i = 0; i < a->len; i++) {
        if (a->word[i] != b->word[i] || a->delta[i] != b->delta[i]) {
            return false;
        }
    }
    return true;
}

/* One probe poll, with what it needs to judge it: whether it completed,
 * woke a task or spawned one. */
static pl_poll_result probe_poll(pl__sim *s, pl_task *t, bool *woke)
{
    uint32_t spawned = s->tasks.spawned;
    s->probe.arms_len = 0;
    s->polling_probe = true;
    pl_poll_result r = pl__executor_probe(s->ex, t);
    s->polling_probe = false;
    *woke = s->woken_in_poll || s->woke_other || s->tasks.spawned != spawned;
    return r;
}

/* After a probe that changed only counters by one: a second probe, right
 * after, that moves the same counters by as much and changes nothing
 * else says they count polls. */
static bool counts_polls(pl__sim *s, pl_task *t, size_t size, const residue *first)
{
    unsigned char before[PROBE_COPY_MAX];
    memcpy(before, pl_task_future(t), size);
    bool woke;
    pl_poll_result r = probe_poll(s, t, &woke);
    residue second;
    return r == PL_PENDING && !woke && !read_changes(s, before, pl_task_future(t), size, &second) &&
           same_residue(first, &second);
}

/* One probe poll of task `id`. Progress: it completed, woke or spawned a
 * task, or its future changed more than bookkeeping (above; `strict`
 * counts every changed byte). Progress is reported (`where` the probe
 * ran, `rescue` what woke the task instead when known). A probe never
 * allocates, so running out of memory cannot turn a lost wakeup into a
 * deadlock. */
static bool probe_task_as(pl__sim *s, uint32_t id, const char *where, const char *rescue,
                          bool strict, probe_out *out)
{
    pl__task_info *ti = &s->tasks.info[id];
    PL__SIM_ASSERT(pl__sim_pollable_parked(s, ti)); /* never a paused node's task */
    /* Our own reference keeps the task alive through the report: a probe
     * that completes a task nobody holds a handle to frees it. */
    pl_task *t = pl_task_ref(ti->task);
    *out = (probe_out){
        .polls = pl_task_polls(t),
        .clones = pl__tasks_live_clones(ti),
        .holder = pl__tasks_clone_holder(ti, id),
        .parked_step = ti->parked_step,
        .parked_ns = ti->parked_ns,
        .at_ns = s->now,
    };
    size_t size = pl__task_future_size(t);
    /* A copy on the stack compares cheapest; a future too big for it is
     * compared by a 128-bit hash. Neither allocates. */
    unsigned char copy[PROBE_COPY_MAX];
    bool small = size <= sizeof copy;
    XXH128_hash_t before = {0, 0};
    if (small) {
        memcpy(copy, pl_task_future(t), size);
    } else {
        before = XXH3_128bits(pl_task_future(t), size);
    }
    bool woke;
    pl_poll_result r = probe_poll(s, t, &woke);
    bool changed = r == PL_READY ||
                   (small ? memcmp(copy, pl_task_future(t), size) != 0
                          : !XXH128_isEqual(before, XXH3_128bits(pl_task_future(t), size)));
    residue first = {0};
    if (changed && !woke && r == PL_PENDING && small && !strict) {
        changed = !read_changes(s, copy, pl_task_future(t), size, &first) &&
                  !(counters_only(&first) && counts_polls(s, t, size, &first));
    }
    /* A spawn during the probe may have moved s->tasks.info: index again. */
    s->tasks.info[id].probed_step = s->step;
    out->progress = changed || woke;
    out->how = r == PL_READY ? "completed"
               : woke        ? "woke a task"
               : first.earlier ? "moved its timer to an earlier deadline"
                               : "changed its state";
    if (out->progress) {
        report_progress(s, t, out, where, rescue);
    }
    pl_task_release(t);
    return out->progress;
}

/* Probes at points where a timer can still fire tell bookkeeping apart. */
static bool probe_task(pl__sim *s, uint32_t id, const char *where, const char *rescue,
                       probe_out *out)
{
    return probe_task_as(s, id, where, rescue, false, out);
}

/* "<lead> it is woken only at 103.000 ms, by timer #8 armed by 'r' (#1)
 * (96.000 ms late)": what rescued a task that could have run earlier. */
static void woken_text(char *buf, size_t len, const char *lead, pl_time woken_ns,
                       const char *by, pl_time late_ns)
{
    snprintf(buf, len, "%s it is woken only at %.3f ms, %s (%.3f ms late)", lead, ms(woken_ns),
             by, ms(late_ns));
}

/* ---- Timer-quiescent points ------------------------------------------- */

/* The next timer is about to wake a parked task that someone else also
 * holds a waker of: the last moment at which a lost wake still shows. */
static bool rescue_probe(pl__sim *s)
{
    uint64_t seq = 0;
    pl_task *t = pl__executor_next_timer_task(s->ex, &seq);
    if (t == NULL) {
        return false;
    }
    uint32_t id = pl_task_id(t);
    /* suspect() asks whether it is parked, once. */
    if (pl__tasks_live_clones(&s->tasks.info[id]) < 2 || !suspect(s, id)) {
        return false;
    }
    pl_time fire_ns = pl__executor_next_timer(s->ex);
    uint32_t armer = seq < s->probe.armers_cap ? s->probe.armers[seq] : 0;
    char armed_by[96] = "code outside any poll";
    if (armer != 0) {
        snprintf(armed_by, sizeof armed_by, "'%s' (#%u)", pl__tasks_name_of(s, armer), armer);
    }
    char by[160];
    snprintf(by, sizeof by, "by timer #%llu armed by %s", (unsigned long long)seq, armed_by);
    char rescue[300];
    woken_text(rescue, sizeof rescue, ";\n ", fire_ns, by, fire_ns - s->now);
    probe_out p;
    return probe_task(s, id, "at a timer-quiescent point", rescue, &p);
}

/* Up to PROBES_PER_POINT_MAX suspects, scanning from a cursor that
 * rotates over task ids. `skip` (the follow-up run's task) and everything
 * after it are left alone. Returns how many it found. */
static uint32_t gather_suspects(pl__sim *s, uint32_t *ids)
{
    uint32_t n = s->tasks.spawned;
    uint32_t found = 0;
    for (uint32_t k = 0; k < n && k < SCAN_MAX && found < PROBES_PER_POINT_MAX; k++) {
        uint32_t id = 1 + (s->probe.cursor + k) % n;
        if (suspect(s, id)) {
            ids[found++] = id;
        }
    }
    s->probe.cursor = n > 0 ? (s->probe.cursor + (n < SCAN_MAX ? 1 : SCAN_MAX)) % n : 0;
    return found;
}

/* The decision comes first and the scan only when it says yes: most
 * points then cost one decision. */
static bool decision_probe(pl__sim *s)
{
    if (pl__sim_choose_fast(s, PL_DECIDE_PROBE, 2, s->probe.points) == 0) {
        return false;
    }
    uint32_t ids[PROBES_PER_POINT_MAX];
    uint32_t n = gather_suspects(s, ids);
    for (uint32_t i = 0; i < n; i++) {
        if (s->probe.follow.active && s->probe.follow.task == ids[i]) {
            return false; /* the follow-up run goes on without this probe */
        }
        probe_out p;
        if (pl__sim_pollable_parked(s, &s->tasks.info[ids[i]]) &&
            probe_task(s, ids[i], "at a timer-quiescent point", "", &p)) {
            s->probe.follow_wanted = s->finding.kind == PL_FINDING_LOST_WAKEUP ||
                                     s->finding.kind == PL_FINDING_STALE_WAKER;
            s->probe.follow_task = ids[i];
            s->probe.follow_point = s->probe.points;
            return true;
        }
        if (pl__probe_wait_of(s, ids[i])) {
            return true; /* what it waits for is there, though a probe did not show it */
        }
    }
    return false;
}

/* ---- Deadlock reports -------------------------------------------------- */

/* Appends one line per task to buf: "'x' (#3) parked since ...". */
static void list_task(pl__sim *s, uint32_t id, const char *note, char *buf, size_t len,
                      size_t *used)
{
    pl__task_info *ti = &s->tasks.info[id];
    if (*used >= len - 1) {
        return;
    }
    char site[160];
    pl__bt_spawn_text(ti, site, sizeof site);
    int n = snprintf(buf + *used, len - *used,
                     "\n    '%s' (#%u%s) parked since step %llu (%.3f ms), waker clones: %u "
                     "(latest made while polling %s)%s",
                     pl_task_name(ti->task), id, site, (unsigned long long)ti->parked_step,
                     ms(ti->parked_ns), pl__tasks_live_clones(ti),
                     pl__tasks_holder_name(s, pl__tasks_clone_holder(ti, id)), note);
    *used += n > 0 ? (size_t)n : 0;
    if (*used >= len) {
        *used = len - 1;
    }
    pl__bt_append(s, id, "      ", buf, len, used);
}

/* The finding just raised (fresh) names the tasks in ids as parked. */
static void note_all(pl__sim *s, bool fresh, const uint32_t *ids, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        pl__bt_note(s, fresh, ids[i]);
    }
}

/* Parked task ids, longest parked first (time-limit and foreground reports). */
static uint32_t *parked_by_age(pl__sim *s, bool foreground_only, uint32_t *count)
{
    uint32_t *ids = malloc(((size_t)s->tasks.spawned + 1) * sizeof *ids);
    *count = 0;
    if (ids == NULL) {
        return NULL;
    }
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        if (pl__tasks_is_parked(ti) && !(foreground_only && pl_task_is_background(ti->task))) {
            uint32_t j = (*count)++;
            while (j > 0 && s->tasks.info[ids[j - 1]].parked_step > ti->parked_step) {
                ids[j] = ids[j - 1];
                j--;
            }
            ids[j] = id;
        }
    }
    return ids;
}

/* Probes every task in ids (longest parked first); reports the first
 * that progresses. */
static bool probe_all(pl__sim *s, const uint32_t *ids, uint32_t n, const char *where)
{
    for (uint32_t i = 0; i < n; i++) {
        pl__task_info *ti = &s->tasks.info[ids[i]];
        if (!pl__sim_pollable_parked(s, ti) || ti->on_purpose || in_late_window(s, ids[i])) {
            continue;
        }
        probe_out p;
        if (probe_task(s, ids[i], where, "", &p)) {
            return true;
        }
    }
    return false;
}

/* The wait-condition oracle over the tasks in ids, before a deadlock is
 * reported: "parked while X holds" says more than a bare deadlock. */
static bool waits_hold(pl__sim *s, const uint32_t *ids, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (pl__probe_wait_of(s, ids[i])) {
            return true;
        }
    }
    return false;
}

/* The background tasks still alive, for the foreground's deadlock report. */
static void list_background(pl__sim *s, char *buf, size_t len, size_t *used)
{
    bool first = true;
    for (uint32_t id = 1; id <= s->tasks.spawned && *used < len - 1; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        if (ti->task == NULL || pl_task_is_finished(ti->task) ||
            !pl_task_is_background(ti->task)) {
            continue;
        }
        int n = snprintf(buf + *used, len - *used, "%s'%s' (#%u)", first ? "" : ", ",
                         pl_task_name(ti->task), id);
        *used += n > 0 ? (size_t)n : 0;
        first = false;
    }
    if (*used >= len) {
        *used = len - 1;
    }
}

/* Nothing but background work can happen: the foreground is judged now,
 * while the background tasks still run. */
static bool judge_foreground(pl__sim *s)
{
    uint32_t n;
    uint32_t *ids = parked_by_age(s, true, &n);
    if (ids == NULL) {
        pl__sim_finding(s, PL_FINDING_ASSERTION, NULL, "simulator out of memory");
        return true;
    }
    if (probe_all(s, ids, n, "once only background work was left") || waits_hold(s, ids, n)) {
        free(ids);
        return true;
    }
    char list[900];
    size_t used = 0;
    for (uint32_t i = 0; i < n; i++) {
        list_task(s, ids[i], "", list, sizeof list, &used);
    }
    list[used] = '\0';
    char bg[200];
    size_t bg_used = 0;
    list_background(s, bg, sizeof bg, &bg_used);
    bg[bg_used] = '\0';
    bool fresh = s->finding.kind == PL_FINDING_NONE;
    pl__sim_finding(s, PL_FINDING_DEADLOCK, n > 0 ? s->tasks.info[ids[0]].task : NULL,
                    "%u foreground task(s) parked and nothing but background work can "
                    "happen (still running: %s); no probe made progress:%s",
                    n, bg, list);
    note_all(s, fresh, ids, n);
    free(ids);
    return true;
}

/* Starts watching the foreground from here. */
static void quiet_start(pl__sim *s)
{
    s->probe.quiet_step = s->step;
    s->probe.quiet_last_step = s->step;
    s->probe.quiet_last_ns = s->now;
    s->probe.quiet_spawned = s->tasks.spawned;
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        s->tasks.info[id].quiet_rounds = 0;
    }
}

/* Nothing but background work can happen. The foreground is judged once
 * each background task has run in two rounds since then (polled between
 * two such points, each at a later virtual time) while no foreground
 * task ran: a background task may still hand a foreground task what it
 * waits for on its next round (a flusher's tick, then its sync, then the
 * signal), and two rounds of each is what it takes to see that it does
 * not. A spurious wake adds polls, not rounds: a round needs the clock
 * to have moved. */
static bool background_only(pl__sim *s)
{
    if (s->probe.quiet_step == 0 || s->tasks.spawned != s->probe.quiet_spawned) {
        quiet_start(s);
        return false;
    }
    bool new_round = s->now > s->probe.quiet_last_ns;
    bool background_ran = true;
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        if (ti->task == NULL || pl_task_is_finished(ti->task)) {
            continue;
        }
        bool ran = ti->parked_step > s->probe.quiet_last_step;
        if (!pl_task_is_background(ti->task)) {
            if (ti->parked_step > s->probe.quiet_step) {
                quiet_start(s); /* the foreground moved: start again */
                return false;
            }
            continue;
        }
        ti->quiet_rounds += new_round && ran;
        background_ran = background_ran && ti->quiet_rounds >= 2;
    }
    if (new_round) {
        s->probe.quiet_last_step = s->step;
        s->probe.quiet_last_ns = s->now;
    }
    return background_ran && judge_foreground(s);
}

/* ---- Parked while timers keep the run alive ----------------------------
 * Part of a program deadlocks while a ticker keeps the rest alive: the
 * run would only end at its virtual time limit (an hour by default,
 * millions of steps), and the finding would take as long to shrink. At
 * timer-quiescent points the parked foreground tasks that no timer will
 * wake are watched: once none of them has run for a long while (KEEP_DIV
 * of the time limit) and the tasks that do run (the keepers, woken by
 * their timers) each ran at least KEEP_ROUNDS rounds in that time (polled
 * at later virtual times) without touching them, no probe progresses and
 * no declared wait condition holds, they are a deadlock, reported with
 * what keeps the run alive. That is a horizon, not a proof: a task that
 * waits with no timeout for something a ticker does only after the
 * horizon is reported too; a longer time limit moves the horizon. */

#define KEEP_ROUNDS 8u
#define KEEP_DIV 256
#define KEEP_TRIES 16 /* watches tried per horizon of virtual time, at most */
#define KEEP_TASKS_MAX 256u /* more tasks: judged at the time limit only */
#define KEEP_TIMERS_MAX 64u

static bool timer_held(const uint32_t *timer_ids, size_t n, uint32_t id)
{
    for (size_t i = 0; i < n; i++) {
        if (timer_ids[i] == id) {
            return true;
        }
    }
    return false;
}

/* Starts a watch: marks the parked foreground tasks no timer will wake.
 * Returns how many it marked (0: nothing to watch). */
static uint32_t keep_start(pl__sim *s)
{
    uint32_t timer_ids[KEEP_TIMERS_MAX];
    size_t timers = pl__executor_timer_count(s->ex);
    s->probe.keep_step = 0;
    /* A busy program moves its parked tasks all the time: a watch that
     * ended is tried again a fraction of the horizon later, so the scans
     * stay rare and a stuck set is still judged within a horizon and a
     * sixteenth of it. */
    s->probe.keep_retry_ns = s->now + s->time_limit_ns / KEEP_DIV / KEEP_TRIES;
    /* Unless more foreground tasks live than timers are armed, each may
     * hold one: then nothing is scanned (the common point). */
    if (timers > KEEP_TIMERS_MAX || s->tasks.spawned > KEEP_TASKS_MAX ||
        pl_executor_live_tasks(s->ex) - pl_executor_live_background(s->ex) <= timers) {
        return 0;
    }
    size_t held = pl__executor_timer_task_ids(s->ex, timer_ids, KEEP_TIMERS_MAX);
    uint32_t marked = 0;
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        ti->keep_parked = pl__tasks_is_parked(ti) && !pl_task_is_background(ti->task) &&
                          !ti->on_purpose && !timer_held(timer_ids, held, id);
        ti->quiet_rounds = 0;
        marked += ti->keep_parked;
    }
    s->probe.keep_woken = false;
    if (marked > 0) {
        s->probe.keep_step = s->step;
        s->probe.keep_last_step = s->step;
        s->probe.keep_last_ns = s->now;
        s->probe.keep_since_ns = s->now;
        s->probe.keep_spawned = s->tasks.spawned;
    }
    return marked;
}

/* Whether the watched set changed since the watch started: a task
 * joined (it parked later, with no timer of its own), or a timer now
 * holds a watched task's waker (another task armed it). Then the watch
 * starts again, so that each task reported stayed put, with no timer to
 * wake it, for the whole horizon. */
static bool keep_grew(pl__sim *s)
{
    uint32_t timer_ids[KEEP_TIMERS_MAX];
    size_t timers = pl__executor_timer_count(s->ex);
    size_t held = pl__executor_timer_task_ids(s->ex, timer_ids, KEEP_TIMERS_MAX);
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        if (ti->keep_parked && (timers > KEEP_TIMERS_MAX || timer_held(timer_ids, held, id))) {
            (void)keep_start(s); /* another task armed a timer with its waker */
            return true;
        }
        if (!ti->keep_parked && pl__tasks_is_parked(ti) && !pl_task_is_background(ti->task) &&
            !ti->on_purpose && (timers > KEEP_TIMERS_MAX || !timer_held(timer_ids, held, id))) {
            (void)keep_start(s);
            return true;
        }
    }
    return false;
}

/* "'ticker' (#3, 12 rounds), ...": the tasks that ran while the watched
 * ones stayed put, and the timer that fires next. */
static void list_keepers(pl__sim *s, char *buf, size_t len)
{
    size_t used = 0;
    for (uint32_t id = 1; id <= s->tasks.spawned && used < len - 1; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        if (ti->task == NULL || pl_task_is_finished(ti->task) || ti->keep_parked ||
            ti->quiet_rounds == 0) {
            continue;
        }
        int n = snprintf(buf + used, len - used, "%s'%s' (#%u, %u rounds)", used > 0 ? ", " : "",
                         pl_task_name(ti->task), id, ti->quiet_rounds);
        used += n > 0 ? (size_t)n : 0;
    }
    used = used < len ? used : len - 1;
    uint64_t seq = 0;
    pl_task *next = pl__executor_next_timer_task(s->ex, &seq);
    if (next != NULL && used < len - 1) {
        uint32_t armer = seq < s->probe.armers_cap ? s->probe.armers[seq] : 0;
        snprintf(buf + used, len - used,
                 "; next, timer #%llu armed by '%s' (#%u) wakes '%s' (#%u) at %.3f ms",
                 (unsigned long long)seq, pl__tasks_name_of(s, armer), armer, pl_task_name(next),
                 pl_task_id(next), ms(pl__executor_next_timer(s->ex)));
    }
}

/* The watched tasks, judged: probes, wait conditions, then a deadlock. */
static bool judge_kept(pl__sim *s)
{
    uint32_t n;
    uint32_t *ids = parked_by_age(s, true, &n);
    if (ids == NULL) {
        pl__sim_finding(s, PL_FINDING_ASSERTION, NULL, "simulator out of memory");
        return true;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (s->tasks.info[ids[i]].keep_parked) {
            ids[k++] = ids[i];
        }
    }
    const char *where = "while only timers kept the run alive";
    if (k == 0 || probe_all(s, ids, k, where) || waits_hold(s, ids, k)) {
        free(ids);
        return k > 0;
    }
    char list[900];
    size_t used = 0;
    for (uint32_t i = 0; i < k; i++) {
        list_task(s, ids[i], "", list, sizeof list, &used);
    }
    list[used] = '\0';
    char keepers[400];
    list_keepers(s, keepers, sizeof keepers);
    bool fresh = s->finding.kind == PL_FINDING_NONE;
    pl__sim_finding(s, PL_FINDING_DEADLOCK, s->tasks.info[ids[0]].task,
                    "%u task(s) parked that no timer will wake, untouched for %.3f ms while "
                    "only timers kept the run alive (running: %s); no probe made progress "
                    "(longest parked first):%s",
                    k, ms(s->now - s->probe.keep_since_ns), keepers, list);
    note_all(s, fresh, ids, k);
    free(ids);
    return true;
}

/* Timers can still wake someone in the foreground. Watches the parked
 * tasks that no timer will wake (keep_start) and judges them once they
 * stayed put past the horizon while the keepers ran their rounds. */
static bool keepers_only(pl__sim *s)
{
    if (s->probe.keep_step == 0 || s->tasks.spawned != s->probe.keep_spawned) {
        if (s->probe.keep_step != 0 || s->now >= s->probe.keep_retry_ns) {
            (void)keep_start(s);
        }
        return false;
    }
    bool new_round = s->now > s->probe.keep_last_ns;
    bool ran_any = false;
    uint32_t rounds = 0;
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        if (ti->task == NULL || pl_task_is_finished(ti->task)) {
            continue;
        }
        if (ti->keep_parked) {
            /* pollen's own spurious wakes re-poll it without moving it */
            if (s->probe.keep_woken || !pl__tasks_is_parked(ti)) {
                s->probe.keep_step = 0; /* a watched task moved: start again later */
                s->probe.keep_retry_ns = s->now + s->time_limit_ns / KEEP_DIV / KEEP_TRIES;
                return false;
            }
            continue;
        }
        bool ran = ti->parked_step > s->probe.keep_last_step;
        ran_any = ran_any || ran;
        ti->quiet_rounds += new_round && ran;
        rounds = ti->quiet_rounds > rounds ? ti->quiet_rounds : rounds;
    }
    /* Every KEEP_ROUNDS rounds: has one that ran parked with no timer of
     * its own? Then it is watched from now on. */
    if (new_round && ran_any && rounds % KEEP_ROUNDS == 0 && keep_grew(s)) {
        return false;
    }
    if (new_round) {
        s->probe.keep_last_step = s->step;
        s->probe.keep_last_ns = s->now;
    }
    pl_time horizon = s->time_limit_ns / KEEP_DIV;
    return rounds >= KEEP_ROUNDS && s->now - s->probe.keep_since_ns >= horizon && !keep_grew(s) &&
           judge_kept(s);
}

bool pl__probe_point(pl__sim *s)
{
    s->probe.points++;
    size_t background = pl_executor_live_background(s->ex);
    if (background > 0 && pl_executor_live_tasks(s->ex) > background &&
        !pl__executor_timers_wake_foreground(s->ex)) {
        s->probe.keep_step = 0; /* the tasks' quiet_rounds count background rounds now */
        if (background_only(s)) {
            return true;
        }
    } else {
        s->probe.quiet_step = 0;
        if (keepers_only(s)) {
            return true;
        }
    }
    if (!s->dec.knobs.kind[PL_DECIDE_PROBE].enabled) {
        return false;
    }
    bool past_follow = s->probe.follow.active && s->probe.points > s->probe.follow.point;
    if (past_follow) {
        return false;
    }
    return rescue_probe(s) || decision_probe(s);
}

bool pl__probe_before_injection(pl__sim *s, pl_task *t, bool is_poll, bool *probed)
{
    uint32_t id = pl_task_id(t);
    *probed = false;
    if (!s->dec.knobs.kind[PL_DECIDE_PROBE].enabled || !suspect(s, id) ||
        (s->probe.follow.active && s->probe.points >= s->probe.follow.point)) {
        return false;
    }
    *probed = true;
    probe_out p;
    return probe_task(s, id,
                      is_poll ? "made as pollen's injected spurious poll"
                              : "made just before pollen's injected spurious wake",
                      is_poll ? ";\n  only that injected poll reached it"
                              : ";\n  only that injected wake would have reached it",
                      &p);
}

/* ---- The time limit ---------------------------------------------------- */

void pl__probe_time_limit(pl__sim *s)
{
    s->probe.stuck_finding = true;
    uint32_t n;
    uint32_t *ids = parked_by_age(s, false, &n);
    size_t timers = pl__executor_timer_count(s->ex);
    uint32_t *timer_ids = malloc((timers + 1) * sizeof *timer_ids);
    if (ids == NULL || timer_ids == NULL) {
        free(ids);
        free(timer_ids);
        pl__sim_finding(s, PL_FINDING_ASSERTION, NULL, "simulator out of memory");
        return;
    }
    size_t held = pl__executor_timer_task_ids(s->ex, timer_ids, timers);
    if (!probe_all(s, ids, n, "at the virtual time limit") && !waits_hold(s, ids, n)) {
        char stuck[700], waiting[300];
        size_t su = 0, wu = 0;
        uint32_t nstuck = 0;
        const pl_task *first = NULL;
        for (uint32_t i = 0; i < n; i++) {
            pl__task_info *ti = &s->tasks.info[ids[i]];
            if (timer_held(timer_ids, held, ids[i]) || pl_task_is_background(ti->task)) {
                list_task(s, ids[i], ", waits for a timer", waiting, sizeof waiting, &wu);
            } else {
                first = first != NULL ? first : ti->task;
                nstuck++;
                list_task(s, ids[i], "", stuck, sizeof stuck, &su);
            }
        }
        stuck[su] = '\0';
        waiting[wu] = '\0';
        double limit_s = (double)s->time_limit_ns / 1e9;
        bool fresh = s->finding.kind == PL_FINDING_NONE;
        if (nstuck > 0) {
            pl__sim_finding(s, PL_FINDING_DEADLOCK, first,
                            "virtual time limit of %.3f s reached; %u task(s) parked that no "
                            "timer will wake, and no probe made progress (longest parked "
                            "first):%s%s%s",
                            limit_s, nstuck, stuck, wu > 0 ? "\n  still running:" : "", waiting);
        } else {
            pl__sim_finding(s, PL_FINDING_LIVELOCK, n > 0 ? s->tasks.info[ids[0]].task : NULL,
                            "virtual time limit of %.3f s reached with %zu task(s) alive, each "
                            "waiting for a timer (nothing stuck, but the run never ends; mark "
                            "tickers background with pl_task_set_background):%s",
                            limit_s, pl_executor_live_tasks(s->ex), waiting);
        }
        note_all(s, fresh, ids, n);
    }
    free(ids);
    free(timer_ids);
}

/* ---- Following a task: the follow-up run ------------------------------- */

void pl__probe_follow_wake(pl__sim *s, uint32_t id, uint32_t running)
{
    pl__follow *f = &s->probe.follow;
    if (f->done || id != f->task || s->probe.points < f->point) {
        return;
    }
    f->done = true;
    f->woken_ns = s->now;
    if (s->firing_seq != 0) {
        f->how = PL__WOKEN_BY_TIMER;
        f->by_timer = s->firing_seq;
        f->timer_armer = s->firing_seq < s->probe.armers_cap ? s->probe.armers[s->firing_seq] : 0;
    } else if (s->injecting) {
        f->how = PL__WOKEN_BY_SPURIOUS;
    } else if (running != 0) {
        f->how = PL__WOKEN_BY_TASK;
        f->by_task = running;
    } else {
        f->how = PL__WOKEN_OUTSIDE;
    }
    s->stopped = true;
    pl_executor_stop(s->ex);
}

void pl__probe_follow_explain(const pl__follow *f, const char *by_name, pl_time progress_ns,
                              pl_finding *finding)
{
    char by[160];
    switch (f->how) {
    case PL__WOKEN_BY_TIMER:
        snprintf(by, sizeof by, "by timer #%llu armed by %s", (unsigned long long)f->by_timer,
                 by_name != NULL ? by_name : "code outside any poll");
        break;
    case PL__WOKEN_BY_TASK:
        snprintf(by, sizeof by, "by %s", by_name != NULL ? by_name : "?");
        break;
    case PL__WOKEN_BY_SPURIOUS:
        snprintf(by, sizeof by, "by nothing but pollen's injected spurious wake");
        break;
    case PL__WOKEN_OUTSIDE:
        snprintf(by, sizeof by, "from outside any poll (I/O readiness or a remote wake)");
        break;
    case PL__WOKEN_NOT:
    default:
        by[0] = '\0';
        break;
    }
    char text[300];
    if (by[0] == '\0') {
        snprintf(text, sizeof text, "\n  without that probe nothing wakes it before the run ends");
    } else {
        woken_text(text, sizeof text, "\n  without that probe", f->woken_ns, by,
                   f->woken_ns - progress_ns);
    }
    size_t used = strlen(finding->message);
    snprintf(finding->message + used, sizeof finding->message - used, "%s", text);
}

/* ---- Final quiescence --------------------------------------------------- */

/* A task woken only through wakers a later poll superseded is stuck
 * because of where it stored its waker, not because of who woke it. */
static bool find_stale(pl__sim *s)
{
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        if (pl__tasks_is_parked(ti) && ti->stale_wakes > 0) {
            pl__sim_finding(
                s, PL_FINDING_STALE_WAKER, ti->task,
                "'%s' (#%u) was woken %u time(s) only through the waker of its poll #%u, which "
                "its later polls superseded (the latest at %.3f ms, by %s); it kept a stale "
                "waker (compare with pl_waker_will_wake and store the newest), so it is stuck "
                "since step %llu",
                pl_task_name(ti->task), id, ti->stale_wakes, ti->last_stale_gen, ms(ti->stale_ns),
                pl__tasks_holder_name(s, ti->stale_by), (unsigned long long)ti->parked_step);
            pl__bt_describe(s, true, id);
            return true;
        }
    }
    return false;
}

void pl__probe_quiescence(pl__sim *s)
{
    if (s->finding.kind != PL_FINDING_NONE || find_stale(s)) {
        return;
    }
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        probe_out p;
        if (pl__sim_pollable_parked(s, &s->tasks.info[id]) &&
            probe_task_as(s, id, "at quiescence", "", true, &p)) {
            return;
        }
    }
    if (pl__probe_waits(s)) {
        return;
    }
    char list[900];
    size_t used = 0;
    uint32_t parked = 0;
    uint32_t noted[PL_FINDING_TASKS_MAX];
    const pl_task *first = NULL;
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        if (pl__tasks_is_parked(ti)) {
            first = first != NULL ? first : ti->task;
            if (parked < PL_FINDING_TASKS_MAX) {
                noted[parked] = id;
            }
            parked++;
            list_task(s, id, "", list, sizeof list, &used);
        }
    }
    list[used] = '\0';
    pl__sim_finding(s, PL_FINDING_DEADLOCK, first,
                    "%u task(s) parked forever and no probe made progress:%s", parked, list);
    note_all(s, true, noted, parked < PL_FINDING_TASKS_MAX ? parked : PL_FINDING_TASKS_MAX);
}

void pl__probe_free(pl__probe *p)
{
    free(p->armers);
    p->armers = NULL;
    p->armers_cap = 0;
    free(p->arm_deadlines);
    p->arm_deadlines = NULL;
    p->arm_deadlines_cap = 0;
    free(p->late);
    p->late = NULL;
    for (int i = 0; i < PL__WAITS_MAX; i++) {
        free(p->waits[i]);
        p->waits[i] = NULL;
    }
}
