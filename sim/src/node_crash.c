/* sim/src/node_crash.c: a node's crash (pollen/sim_node.h), as a process
 * kill: nothing of the node's code runs.
 *
 * Order: the tasks are forgotten first (none can run again), then the
 * I/O sources that name them are freed and their sockets closed, then
 * the disk crashes, then the node's memory goes. Task memory stays with
 * the executor until the run ends (pl_executor_forget_task): wakers that
 * other code still holds into it stay safe to wake and drop.
 */
#include "disk/disk_impl.h"
#include "net/net_impl.h"
#include "node.h"

static void forget_tasks(pl__sim *s, uint32_t n)
{
    for (uint32_t id = 1; id <= s->tasks_spawned; id++) {
        pl__task_info *ti = &s->tasks[id];
        if (ti->node != n || ti->task == NULL || pl_task_is_finished(ti->task)) {
            continue;
        }
        ti->forgotten = true;
        pl_executor_forget_task(s->ex, ti->task);
    }
}

/* Connections reset (the peer reads PL_ECONNRESET after a latency),
 * everything else closes; datagrams sent to the node find nothing bound. */
static void close_sockets(pl__sim *s, uint32_t n)
{
    pl__reactor *r = s->reactor;
    for (size_t i = 0; r != NULL && i < r->handles_len; i++) {
        ep *e = r->handles[i];
        if (e == NULL || e->node != n) {
            continue;
        }
        pl_io_source_forget(e->src);
        if (e->kind == EP_STREAM && e->state == ST_CONNECTED) {
            pl__net_reset_conn(r, e, true);
        }
        (void)pl__net_close(s, e->handle);
    }
}

static void crash_disk(pl__disk *d)
{
    for (size_t i = 0; d != NULL && i < d->handles_len; i++) {
        pl_io_source_forget(d->handles[i].src);
        d->handles[i].src = NULL;
    }
    (void)pl__disk_crash(d);
}

int pl_sim_node_crash(const char *name)
{
    pl__sim *s = pl__sim_current();
    pl__node *node = pl__node_find(s, name);
    uint32_t n = node != NULL ? (uint32_t)(node - s->nodes) : 0;
    if (node == NULL || pl__node_current(s) == n) {
        return PL_EINVAL;
    }
    if (!node->up) {
        return PL_EEXIST;
    }
    node->up = false;
    node->crashes++;
    pl__sim_event(s, PL__EV_NODE, 0, n, 0);
    forget_tasks(s, n);
    /* The sources' deregistration reaches the node's own disk. */
    uint32_t saved = s->booting;
    s->booting = n;
    close_sockets(s, n);
    crash_disk(node->disk);
    s->booting = saved;
    pl__node_blocks_free(node);
    return 0;
}
