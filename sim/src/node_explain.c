/* sim/src/node_explain.c: the shrinker's words for a node_crash decision.
 *
 * The trace has what the decision did: the crash's PL__EV_NODE event
 * right after it names the node, and the node's next restart event (a
 * decided one or the scenario's) says when it came back.
 */
#include <stdio.h>

#include "sim_internal.h"

/* The next node event of the record from event i on: node *node (any
 * when *node is 0) and restart (b) as asked. Its index, or events_len. */
static size_t next_node_event(const pl__run_record *rec, size_t i, uint64_t node, uint64_t b)
{
    for (; i < rec->events_len; i++) {
        const pl__trace_rec *e = &rec->events[i];
        if (e->kind == PL__EV_NODE && e->b == b && (node == 0 || e->a == node)) {
            break;
        }
    }
    return i;
}

static const char *name_of(const pl__run_record *rec, uint64_t node)
{
    return node <= PL_SIM_NODES_MAX && rec->node_names[node][0] != '\0' ? rec->node_names[node]
                                                                        : "?";
}

bool pl__node_explain(char *buf, size_t len, const pl__run_record *rec, size_t i, uint32_t kind,
                      uint32_t v, uint32_t n)
{
    if (kind != PL_DECIDE_NODE_CRASH) {
        return false;
    }
    size_t c = next_node_event(rec, i, 0, 0);
    if (n != 2 || v == 0 || c == rec->events_len) {
        snprintf(buf, len, "node restart: %u ms after the crash", v + 1);
        return true;
    }
    const pl__trace_rec *crash = &rec->events[c];
    size_t r = next_node_event(rec, c, crash->a, 1);
    int w = snprintf(buf, len, "node '%s' crashed at %.3f ms", name_of(rec, crash->a),
                     (double)crash->time_ns / 1e6);
    if (w > 0 && (size_t)w < len) {
        if (r < rec->events_len) {
            snprintf(buf + w, len - (size_t)w, ", restarted at %.3f ms",
                     (double)rec->events[r].time_ns / 1e6);
        } else {
            snprintf(buf + w, len - (size_t)w, ", never restarted");
        }
    }
    return true;
}
