/* sim/src/net/explain.c: the shrinker's words for the link decisions.
 * Pure: everything is in the decision (its key names the link, its value
 * and n give the fault and its duration) and the time it was drawn. */
#include <stdio.h>

#include "net.h"

static void host_text(char *buf, size_t len, uint32_t h)
{
    snprintf(buf, len, "%u.%u.%u.%u", h >> 24, (h >> 16) & 255u, (h >> 8) & 255u, h & 255u);
}

/* "10.0.0.1 -> 10.0.0.2", or with "<->" for both ways. */
static void link_text(char *buf, size_t len, uint64_t key, bool both)
{
    char a[16], b[16];
    host_text(a, sizeof a, (uint32_t)(key >> 32));
    host_text(b, sizeof b, (uint32_t)key);
    snprintf(buf, len, "%s %s %s", a, both ? "<->" : "->", b);
}

static double ms_of(pl_time ns) { return (double)ns / 1e6; }

/* Partition: 1..S both ways, S+1..2S one way, 2^(k-1) quanta (link.c). */
static void explain_partition(char *buf, size_t len, uint64_t key, uint32_t v, uint32_t n,
                              pl_time at)
{
    uint32_t steps = (n - 1) / 2;
    bool both = v <= steps;
    uint32_t k = both ? v : v - steps;
    char l[48];
    link_text(l, sizeof l, key, both);
    pl_time heal = at + (PL_SIM_LINK_FAULT_QUANTUM_NS << (k - 1));
    snprintf(buf, len, "partition: link %s cut at %.3f ms (%s), healed at %.3f ms", l, ms_of(at),
             both ? "both ways" : "one-way", ms_of(heal));
}

bool pl__net_explain(char *buf, size_t len, uint32_t kind, uint64_t key, uint32_t v, uint32_t n,
                     pl_time at)
{
    PL__SIM_ASSERT(v >= 1 && v < n && n <= 1 + 2 * PL_SIM_LINK_STEPS_MAX); /* a non-zero one */
    char l[48];
    link_text(l, sizeof l, key, false);
    switch (kind) {
    case PL_DECIDE_LINK_LATENCY:
        snprintf(buf, len,
                 "link latency: a crossing of %s took bucket %u of %u (%u jitter "
                 "quanta more)",
                 l, v, n, 1u << (v - 1));
        return true;
    case PL_DECIDE_LINK_LOSS:
        snprintf(buf, len, "link loss: a datagram on %s was lost", l);
        return true;
    case PL_DECIDE_LINK_DUP:
        snprintf(buf, len, "link dup: a datagram on %s was delivered twice", l);
        return true;
    case PL_DECIDE_LINK_REORDER:
        snprintf(buf, len, "link reorder: a datagram on %s was held back, later ones overtake it",
                 l);
        return true;
    case PL_DECIDE_LINK_RESET:
        snprintf(buf, len,
                 "link reset: a stream write on %s broke its connection (both ends "
                 "see ECONNRESET)",
                 l);
        return true;
    case PL_DECIDE_PARTITION:
        explain_partition(buf, len, key, v, n, at);
        return true;
    case PL_DECIDE_CLOG:
        snprintf(buf, len, "clog: link %s held its traffic at %.3f ms, released at %.3f ms", l,
                 ms_of(at), ms_of(at + (PL_SIM_LINK_FAULT_QUANTUM_NS << (v - 1))));
        return true;
    default:
        return false;
    }
}
