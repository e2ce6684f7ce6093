/* sim/src/node_explain.c: the shrinker's words for a node_crash, a
 * node_pause or a node_isolate decision.
 *
 * The trace has what the decision did: the crash's (or pause's)
 * PL__EV_NODE event right after it names the node, and the node's next
 * restart (resume) event, a decided one or the scenario's, says when it
 * came back.
 */
#include <stdio.h>

#include "run_record.h"
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

/* "node 'n1' paused at 3.000 ms for 16.000 ms (resumed at 19.000 ms)". */
static void explain_pause(char *buf, size_t len, const pl__run_record *rec, size_t i,
                          uint32_t v, uint32_t n)
{
    size_t p = next_node_event(rec, i, 0, PL__NODE_EV_PAUSE);
    if (v == 0 || p == rec->events_len) {
        snprintf(buf, len, "node pause: choice %u of %u", v, n);
        return;
    }
    const pl__trace_rec *pause = &rec->events[p];
    size_t r = next_node_event(rec, p, pause->a, PL__NODE_EV_RESUME);
    size_t c = next_node_event(rec, p, pause->a, PL__NODE_EV_CRASH);
    int w = snprintf(buf, len, "node '%s' paused at %.3f ms", name_of(rec, pause->a),
                     (double)pause->time_ns / 1e6);
    if (w <= 0 || (size_t)w >= len) {
        return;
    }
    if (r < rec->events_len && r < c) {
        snprintf(buf + w, len - (size_t)w, " for %.3f ms (resumed at %.3f ms)",
                 (double)(rec->events[r].time_ns - pause->time_ns) / 1e6,
                 (double)rec->events[r].time_ns / 1e6);
    } else if (c < rec->events_len) {
        snprintf(buf + w, len - (size_t)w, ", crashed at %.3f ms while paused",
                 (double)rec->events[c].time_ns / 1e6);
    } else {
        snprintf(buf + w, len - (size_t)w, ", still paused when the run ended");
    }
}

/* "node 'n1' cut from every peer at 3.000 ms for 64 ms". */
static void explain_isolate(char *buf, size_t len, const pl__run_record *rec, size_t i,
                            uint32_t v, uint32_t n)
{
    size_t e = next_node_event(rec, i, 0, PL__NODE_EV_ISOLATE);
    if (v == 0 || e == rec->events_len) {
        snprintf(buf, len, "node isolation: choice %u of %u", v, n);
        return;
    }
    snprintf(buf, len, "node '%s' cut from every peer at %.3f ms for %lld ms",
             name_of(rec, rec->events[e].a), (double)rec->events[e].time_ns / 1e6,
             (long long)((PL_SIM_NODE_ISOLATE_QUANTUM_NS << (v - 1)) / PL_MS));
}

bool pl__node_explain(char *buf, size_t len, const pl__run_record *rec, size_t i, uint32_t kind,
                      uint32_t v, uint32_t n)
{
    if (kind == PL_DECIDE_NODE_ISOLATE) {
        explain_isolate(buf, len, rec, i, v, n);
        return true;
    }
    if (kind == PL_DECIDE_NODE_PAUSE) {
        explain_pause(buf, len, rec, i, v, n);
        return true;
    }
    if (kind != PL_DECIDE_NODE_CRASH) {
        return false;
    }
    size_t c = next_node_event(rec, i, 0, PL__NODE_EV_CRASH);
    if (n != 2 || v == 0 || c == rec->events_len) {
        snprintf(buf, len, "node restart: %u ms after the crash", v + 1);
        return true;
    }
    const pl__trace_rec *crash = &rec->events[c];
    size_t r = next_node_event(rec, c, crash->a, PL__NODE_EV_RESTART);
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
