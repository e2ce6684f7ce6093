/* sim/src/node_crash.c: a node's crash (pollen/sim_node.h), as a process
 * kill: nothing of the node's code runs.
 *
 * Order: the tasks are forgotten first and the threads killed (none can
 * run again), then the I/O sources that name them are freed and their
 * sockets closed, then the disk crashes, then the node's memory goes. Task memory stays with
 * the executor until the run ends (pl__executor_forget_task): wakers that
 * other code still holds into it stay safe to wake and drop.
 *
 * The end of a run releases what every node (and the scenario) still
 * holds the same way, without the crash's decisions (pl__nodes_end_run).
 */
#include "disk/disk_impl.h"
#include "net/net_impl.h"
#include "node.h"
#include "real.h"

static void forget_tasks(pl__sim *s, uint32_t n)
{
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        if (ti->node != n || ti->task == NULL) {
            continue;
        }
        /* A finished one too: its handles and timers may live in the
         * node's memory, which is about to go. */
        ti->forgotten = true;
        pl__executor_forget_task(s->ex, ti->task);
    }
}

/* A connection of the crashed node: its peer reads PL_ECONNRESET after a
 * latency, as the kernel of a killed process resets its sockets, or
 * hears nothing at all, as when the machine itself vanished (a
 * crash_silence decision per connection). */
static void crash_conn(pl__sim *s, pl__reactor *r, ep *e)
{
    bool silent = pl__sim_choose(s, PL_DECIDE_CRASH_SILENCE, 2, e->hdr.id) != 0;
    char *text = pl__sim_decision_text(s);
    if (text != NULL) {
        pl__net_conn_text(e, text, PL__DECISION_TEXT_MAX);
    }
    if (silent) {
        pl__net_silence_conn(r, e);
    } else {
        pl__net_reset_conn(r, e, true);
    }
}

/* Connections reset or go silent, everything else closes; datagrams sent
 * to the node find nothing bound. */
static void close_sockets(pl__sim *s, uint32_t n)
{
    pl__reactor *r = s->reactor;
    for (size_t i = 0; r != NULL && i < r->handles_len; i++) {
        ep *e = r->handles[i];
        if (e == NULL || e->node != n) {
            continue;
        }
        pl__io_source_forget(e->src);
        if (e->kind == EP_STREAM && e->state == ST_CONNECTED) {
            crash_conn(s, r, e);
        }
        (void)pl__net_close(s, e->handle);
    }
}

/* The disk's registrations go; its handles stay open (stale after a
 * crash, freed with the disk at the end of a run). */
static void forget_disk_sources(pl__disk *d)
{
    for (size_t i = 0; d != NULL && i < d->handles_len; i++) {
        pl__io_source_forget(d->handles[i].src);
        d->handles[i].src = NULL;
    }
}

static void crash_disk(pl__disk *d)
{
    forget_disk_sources(d);
    (void)pl__disk_crash(d);
}

static void crash(pl__sim *s, pl__node *node)
{
    uint32_t n = (uint32_t)(node - s->nodes.list);
    node->up = false;
    node->crashes++;
    node->restart_at = 0;
    pl__sim_event(s, PL__EV_NODE, 0, n, PL__NODE_EV_CRASH);
    pl__node_pause_end(s, n, false); /* its held tasks go as the others */
    forget_tasks(s, n);
    pl__threads_node_crashed(s, n);
    /* The sources' deregistration reaches the node's own disk. */
    uint32_t saved = s->nodes.booting;
    s->nodes.booting = n;
    close_sockets(s, n);
    crash_disk(node->disk);
    s->nodes.booting = saved;
    pl__node_blocks_free(node);
}

/* The end of a run is every process's exit: what the program still holds
 * goes, as at a crash, and no oracle counts it. Unlike a crash it decides
 * nothing, emits nothing and closes nothing a peer could see (nothing
 * runs any more): the registrations go, so that neither they nor the
 * wakers in them outlive the executor, and the sockets, directories and
 * files go with the network and the disks in pl__sim_finish. */
void pl__nodes_end_run(pl__sim *s)
{
    PL__SIM_ASSERT(s->polling == 0 && s->nodes.dropping == 0); /* no task runs */
    pl__reactor *r = s->reactor;
    for (size_t i = 0; r != NULL && i < r->handles_len; i++) {
        if (r->handles[i] != NULL) {
            pl__io_source_forget(r->handles[i]->src);
        }
    }
    /* Each deregistration reaches the disk of the node set as booting
     * (none: the scenario's own disk). */
    uint32_t saved = s->nodes.booting;
    s->nodes.booting = 0;
    forget_disk_sources(s->disk);
    for (uint32_t n = 1; n < s->nodes.len; n++) {
        s->nodes.booting = n;
        forget_disk_sources(s->nodes.list[n].disk);
    }
    s->nodes.booting = saved;
}

int pl_sim_node_crash(const char *name)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        return pl__real_refuse("pl_sim_node_crash");
    }
    pl__node *node = pl__node_find(s, name);
    if (node == NULL || pl__node_current(s) == (uint32_t)(node - s->nodes.list)) {
        return PL_EINVAL;
    }
    if (!node->up) {
        return PL_EEXIST;
    }
    crash(s, node);
    return 0;
}

int pl_sim_power_cut(void)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        return pl__real_refuse("pl_sim_power_cut");
    }
    uint32_t self = pl__node_current(s);
    if (self != 0 && s->nodes.list[self].def.crashable) {
        return PL_EINVAL;
    }
    int crashed = 0;
    for (uint32_t n = 1; n < s->nodes.len; n++) {
        if (s->nodes.list[n].def.crashable && s->nodes.list[n].up) {
            crash(s, &s->nodes.list[n]);
            crashed++;
        }
    }
    return crashed;
}

/* A crashable node that is up may crash at any wait, with the knob's
 * probability per wait, and comes back after a decided delay. */
static void crash_decisions(pl__sim *s)
{
    for (uint32_t n = 1; n < s->nodes.len; n++) {
        pl__node *node = &s->nodes.list[n];
        if (!node->def.crashable || !node->up) {
            continue;
        }
        uint64_t key = (uint64_t)n << 32 | node->crashes;
        if (pl__sim_choose(s, PL_DECIDE_NODE_CRASH, 2, key) == 0) {
            continue;
        }
        uint32_t steps = pl__sim_choose(s, PL_DECIDE_NODE_CRASH, PL_SIM_NODE_RESTART_STEPS,
                                        key | (uint64_t)1 << 63);
        crash(s, node);
        node->restart_at = s->now + (pl_time)(steps + 1) * PL_SIM_NODE_RESTART_QUANTUM_NS;
    }
}

void pl__nodes_deliver(pl__sim *s, pl_time now)
{
    (void)pl__disk_deliver(s->disk, now);
    for (uint32_t n = 1; n < s->nodes.len; n++) {
        (void)pl__disk_deliver(s->nodes.list[n].disk, now);
    }
    for (uint32_t n = 1; n < s->nodes.len && !s->stopped; n++) {
        pl__node *node = &s->nodes.list[n];
        if (node->restart_at != 0 && node->restart_at <= now) {
            node->restart_at = 0;
            pl__sim_event(s, PL__EV_NODE, 0, n, 1);
            (void)pl__node_boot(s, node);
        }
    }
    if (!s->stopped) {
        crash_decisions(s);
    }
    if (!s->stopped) {
        pl__node_pause_deliver(s, now);
    }
    pl__node_isolate_deliver(s);
    pl__node_clock_deliver(s);
}
