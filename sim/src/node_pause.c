/* sim/src/node_pause.c: a node's process pause (nemesis.h,
 * pollen/sim_node.h).
 *
 * Holding is per task: every task the node has when it pauses is held,
 * and none can be spawned on it while it is paused (only its own tasks
 * and its boot spawn there, and none of them runs). The clock goes on:
 * the resume is an event of the run (pl__nodes_next_event), so a run
 * whose only other work is done still reaches it.
 */
#include "node.h"
#include "sim_internal.h"
#include "real.h"

/* The pause durations: 2^v quanta, v < PL_SIM_NODE_PAUSE_STEPS. */
static pl_time pause_length(uint32_t v) { return (pl_time)PL_SIM_NODE_PAUSE_QUANTUM_NS << v; }

static void hold_tasks(pl__sim *s, uint32_t n, bool hold)
{
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        if (ti->node == n && ti->task != NULL && !ti->forgotten) {
            pl__executor_hold_task(s->ex, ti->task, hold);
        }
    }
}

static void pause_node(pl__sim *s, uint32_t n, pl_time length_ns)
{
    pl__nemesis *z = &s->nemesis;
    PL__SIM_ASSERT(n != 0 && n < s->nodes.len && z->paused_until[n] == 0 && length_ns > 0);
    z->pauses[n]++;
    /* PL_TIME_NEVER (or any length past it) pauses for the rest of the run. */
    z->paused_until[n] = length_ns > PL_TIME_NEVER - s->now ? PL_TIME_NEVER : s->now + length_ns;
    pl__sim_event(s, PL__EV_NODE, 0, n, PL__NODE_EV_PAUSE);
    hold_tasks(s, n, true);
}

void pl__node_pause_end(pl__sim *s, uint32_t n, bool traced)
{
    if (s->nemesis.paused_until[n] == 0) {
        return;
    }
    s->nemesis.paused_until[n] = 0;
    if (traced) {
        pl__sim_event(s, PL__EV_NODE, 0, n, PL__NODE_EV_RESUME);
    }
    hold_tasks(s, n, false);
}

/* A pausable node that is up and running may pause at any wait, with the
 * knob's probability per wait, for 1 to 128 ms, as decided; not at the
 * wait that resumed it (bit n of `resumed`): its tasks run first. */
static void pause_decisions(pl__sim *s, uint32_t resumed)
{
    for (uint32_t n = 1; n < s->nodes.len; n++) {
        pl__node *node = &s->nodes.list[n];
        if (!node->def.pausable || !node->up || s->nemesis.paused_until[n] != 0 ||
            (resumed >> n & 1u) != 0) {
            continue;
        }
        /* One decision, its length in it: the shrinker shortens a pause by
         * lowering one value, and a kept pause keeps its length. */
        uint64_t key = (uint64_t)n << 32 | s->nemesis.pauses[n];
        uint32_t v = pl__sim_choose(s, PL_DECIDE_NODE_PAUSE, 1 + PL_SIM_NODE_PAUSE_STEPS, key);
        if (v != 0) {
            pause_node(s, n, pause_length(v - 1));
        }
    }
}

void pl__node_pause_deliver(pl__sim *s, pl_time now)
{
    _Static_assert(PL_SIM_NODES_MAX < 32, "a node's bit in a word");
    uint32_t resumed = 0;
    for (uint32_t n = 1; n < s->nodes.len; n++) {
        pl_time until = s->nemesis.paused_until[n];
        if (until != 0 && until <= now) {
            pl__node_pause_end(s, n, true);
            resumed |= 1u << n;
        }
    }
    if (!s->stopped) {
        pause_decisions(s, resumed);
    }
}

/* The node a scenario call names: not the caller's own, and up. */
static int node_of_call(pl__sim *s, const char *name, uint32_t *n)
{
    pl__node *node = pl__node_find(s, name);
    if (node == NULL || pl__node_current(s) == (uint32_t)(node - s->nodes.list)) {
        return PL_EINVAL;
    }
    *n = (uint32_t)(node - s->nodes.list);
    return node->up ? 0 : PL_ENOENT;
}

int pl_sim_node_pause(const char *name, pl_time length_ns)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        return pl__real_refuse("pl_sim_node_pause");
    }
    uint32_t n = 0;
    int rc = node_of_call(s, name, &n);
    if (rc != 0) {
        return rc;
    }
    if (length_ns <= 0) {
        return PL_EINVAL;
    }
    if (s->nemesis.paused_until[n] != 0) {
        return PL_EEXIST;
    }
    pause_node(s, n, length_ns);
    return 0;
}

int pl_sim_node_resume(const char *name)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        return pl__real_refuse("pl_sim_node_resume");
    }
    uint32_t n = 0;
    int rc = node_of_call(s, name, &n);
    if (rc != 0) {
        return rc;
    }
    if (s->nemesis.paused_until[n] == 0) {
        return PL_EEXIST;
    }
    pl__node_pause_end(s, n, true);
    return 0;
}

bool pl_sim_node_is_paused(const char *name)
{
    pl__sim *s = pl__sim_current();
    pl__node *node = pl__node_find(s, name);
    return node != NULL && s->nemesis.paused_until[node - s->nodes.list] != 0;
}
