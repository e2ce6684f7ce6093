/* sim/src/node_isolate.c: faults of a node's links taken together
 * (nemesis.h, pollen/sim_node.h): a node cut from every peer, a split of
 * the cluster in two sides.
 *
 * Both are cuts of the links between nodes' hosts (net/link.c), both ways,
 * until a time or until healed: what a cut does to datagrams and streams
 * is the links' (docs/simulator.md, Links and partitions). One isolation
 * or split is one act over many links, where the per-link partition
 * decisions would need several to overlap by chance.
 */
#include "net/net_impl.h"
#include "node.h"
#include "real.h"

/* Cuts (or heals, until == 0) every link between a node of `side` (bit n
 * for node n) and a node outside it. */
static int cut_sides(pl__sim *s, uint32_t side, pl_time until)
{
    for (uint32_t a = 1; a < s->nodes.len; a++) {
        for (uint32_t b = 1; b < s->nodes.len && (side >> a & 1u) != 0; b++) {
            if ((side >> b & 1u) != 0) {
                continue;
            }
            uint32_t ha = s->nodes.list[a].host, hb = s->nodes.list[b].host;
            int rc = until == 0 ? pl__net_link_heal(s->reactor, ha, hb)
                                : pl__net_link_cut_pair(s->reactor, ha, hb, until);
            if (rc != 0) {
                return rc;
            }
        }
    }
    return 0;
}

/* A node declared isolatable, up and not isolated may be cut from every
 * peer at any wait, with the knob's probability, for 1 to 128 ms as
 * decided (one decision: its length in it, so shrinking shortens it). */
static void isolate_decisions(pl__sim *s)
{
    pl__nemesis *z = &s->nemesis;
    for (uint32_t n = 1; n < s->nodes.len; n++) {
        pl__node *node = &s->nodes.list[n];
        if (!node->def.isolatable || !node->up || z->isolated_until[n] > s->now) {
            continue;
        }
        uint64_t key = (uint64_t)n << 32 | z->isolations[n];
        uint32_t v = pl__sim_choose(s, PL_DECIDE_NODE_ISOLATE, 1 + PL_SIM_NODE_ISOLATE_STEPS, key);
        if (v == 0) {
            continue;
        }
        z->isolations[n]++;
        z->isolated_until[n] = s->now + (PL_SIM_NODE_ISOLATE_QUANTUM_NS << (v - 1));
        pl__sim_event(s, PL__EV_NODE, 0, n, PL__NODE_EV_ISOLATE);
        (void)cut_sides(s, 1u << n, z->isolated_until[n]); /* ENOMEM: the cut is partial */
    }
}

void pl__node_isolate_deliver(pl__sim *s)
{
    if (!s->stopped) {
        isolate_decisions(s);
    }
}

/* The side named by `names`: PL_EINVAL for an unknown name, an empty
 * side, or every node. */
static int side_of(pl__sim *s, const char *const *names, size_t n, uint32_t *side)
{
    *side = 0;
    for (size_t i = 0; i < n; i++) {
        pl__node *node = pl__node_find(s, names[i]);
        if (node == NULL) {
            return PL_EINVAL;
        }
        *side |= 1u << (node - s->nodes.list);
    }
    uint32_t all = s->nodes.len > 1 ? ((1u << s->nodes.len) - 2u) : 0;
    return *side == 0 || *side == all ? PL_EINVAL : 0;
}

int pl_sim_node_split(const char *const *names, size_t n, pl_time length_ns)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        return pl__real_refuse(n == 1 ? "pl_sim_node_isolate" : "pl_sim_node_split");
    }
    if (names == NULL || length_ns <= 0) {
        return PL_EINVAL;
    }
    uint32_t side;
    int rc = side_of(s, names, n, &side);
    pl_time until = length_ns > PL_TIME_NEVER - s->now ? PL_TIME_NEVER : s->now + length_ns;
    return rc != 0 ? rc : cut_sides(s, side, until);
}

int pl_sim_node_isolate(const char *name, pl_time length_ns)
{
    return pl_sim_node_split(&name, 1, length_ns);
}

int pl_sim_nodes_heal(void)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        return pl__real_refuse("pl_sim_nodes_heal");
    }
    for (uint32_t n = 1; n < s->nodes.len; n++) {
        s->nemesis.isolated_until[n] = 0;
        int rc = cut_sides(s, 1u << n, 0);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}
