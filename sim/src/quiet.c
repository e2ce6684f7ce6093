/* sim/src/quiet.c: the quiet phase (quiet.h): after the storm, no more
 * faults, and the liveness judged at a deadline.
 *
 * A fault-injecting run cannot judge liveness: as long as faults go on, a
 * client may fairly never finish, and as soon as they stop, a client
 * that only recovers while faults continue (it waits for the next
 * failover to save it) stalls. FoundationDB's simulator stops injecting
 * and then asks the cluster to make progress; Jepsen heals everything
 * before its final reads. Muting is done on the stream's knobs (a kind
 * turned off is never consulted), so the hot path of a decision gains no
 * test, and a replay, whose knobs are the run's first ones, mutes the
 * same kinds at the same virtual time.
 */
#include <stdio.h>

#include "net/net.h"
#include "node.h"
#include "quiet.h"
#include "sim_internal.h"

/* The kinds that break, lose or stop something: what the quiet phase
 * ends. Scheduling, the order of I/O and timers, the bounded delays
 * (latencies, timer lateness, a held-back remote wake), the probes,
 * spurious wakes and polls (a correct future tolerates them: they never
 * stop progress) and user randomness go on. */
static const pl_decision_kind fault_kinds[] = {
    PL_DECIDE_CANCEL,       PL_DECIDE_IO_FAULT,     PL_DECIDE_BUGGIFY_SITE,  PL_DECIDE_BUGGIFY_FIRE,
    PL_DECIDE_DISK_FAULT,   PL_DECIDE_DISK_CORRUPT, PL_DECIDE_DISK_LOSE,     PL_DECIDE_LINK_LOSS,
    PL_DECIDE_LINK_DUP,     PL_DECIDE_LINK_REORDER, PL_DECIDE_LINK_RESET,    PL_DECIDE_PARTITION,
    PL_DECIDE_CLOG,         PL_DECIDE_NODE_CRASH,   PL_DECIDE_CRASH_SILENCE, PL_DECIDE_NODE_PAUSE,
    PL_DECIDE_NODE_ISOLATE, PL_DECIDE_CLOCK_JUMP,
};

_Static_assert(PL_DECIDE__COUNT <= 64, "a kind's bit in pl__quiet.muted");

bool pl__quiet_is_fault(uint32_t kind)
{
    for (size_t i = 0; i < sizeof fault_kinds / sizeof fault_kinds[0]; i++) {
        if ((uint32_t)fault_kinds[i] == kind) {
            return true;
        }
    }
    return false;
}

int pl__quiet_init(pl__sim *s, const pl_scenario *sc, char *err, size_t err_len)
{
    pl__quiet *q = &s->quiet;
    q->at = PL_TIME_NEVER;
    if (sc->quiet_after_ns == 0 && sc->quiet_deadline_ns == 0) {
        return 0;
    }
    pl_time window = sc->quiet_deadline_ns > 0 ? sc->quiet_deadline_ns : PL_S;
    if (sc->quiet_after_ns <= 0 || sc->quiet_deadline_ns < 0 ||
        sc->quiet_after_ns > s->time_limit_ns - window) {
        snprintf(err, err_len,
                 "scenario '%s': quiet_after_ns %lld and quiet_deadline_ns %lld must be "
                 "positive and end inside the time limit (%lld ns)",
                 sc->name, (long long)sc->quiet_after_ns, (long long)sc->quiet_deadline_ns,
                 (long long)s->time_limit_ns);
        return PL_EINVAL;
    }
    q->start_ns = sc->quiet_after_ns;
    q->deadline_ns = sc->quiet_after_ns + window;
    q->at = q->start_ns;
    return 0;
}

/* Every fault in force ends: the links' cuts and holds (node isolations
 * and splits are cuts), the pauses, and the crashes (each down node boots
 * again, on its durable disk, as pl_sim_node_restart does). */
static void end_faults(pl__sim *s)
{
    if (s->reactor != NULL) {
        (void)pl__net_links_heal(s->reactor); /* ENOMEM: a held datagram stays held */
    }
    for (uint32_t n = 1; n < s->nodes.len && !s->stopped; n++) {
        s->nemesis.isolated_until[n] = 0;
        pl__node_pause_end(s, n, true);
        pl__node *node = &s->nodes.list[n];
        if (!node->up) {
            node->restart_at = 0;
            pl__sim_event(s, PL__EV_NODE, 0, n, PL__NODE_EV_RESTART);
            (void)pl__node_boot(s, node);
        }
    }
}

static void begin(pl__sim *s)
{
    pl__quiet *q = &s->quiet;
    PL__SIM_ASSERT(!q->begun && q->muted == 0);
    q->begun = true;
    q->at = q->deadline_ns;
    for (size_t i = 0; i < sizeof fault_kinds / sizeof fault_kinds[0]; i++) {
        pl__dec_knob *k = &s->dec.knobs.kind[fault_kinds[i]];
        if (k->enabled) {
            q->muted |= (uint64_t)1 << fault_kinds[i];
            k->enabled = false;
        }
    }
    end_faults(s);
}

bool pl__quiet_reached(pl__sim *s)
{
    pl__quiet *q = &s->quiet;
    PL__SIM_ASSERT(q->at != PL_TIME_NEVER && s->now >= q->at);
    if (!q->begun) {
        begin(s);
        return false;
    }
    q->at = PL_TIME_NEVER;
    s->judges->quiet_end(s);
    PL__SIM_ASSERT(q->judged);
    s->stopped = true; /* judged: what is still running has had its chance */
    pl_executor_stop(s->ex);
    return true;
}

void pl__quiet_unmute(pl__sim *s)
{
    pl__quiet *q = &s->quiet;
    for (uint32_t k = 0; k < PL_DECIDE__COUNT; k++) {
        if ((q->muted >> k & 1u) != 0) {
            s->dec.knobs.kind[k].enabled = true;
        }
    }
    q->muted = 0;
}

void pl__quiet_when(const pl__sim *s, char *buf, size_t len)
{
    const pl__quiet *q = &s->quiet;
    if (q->begun) {
        snprintf(buf, len, " (faults stopped at %.3f ms, judged at %.3f ms)",
                 (double)q->start_ns / 1e6, (double)s->now / 1e6);
    } else {
        snprintf(buf, len, " (judged at the run's end, %.3f ms, before the quiet phase at %.3f ms)",
                 (double)s->now / 1e6, (double)q->start_ns / 1e6);
    }
}
