/* sim/src/net/explain.c: the shrinker's words for the link decisions.
 * Pure: everything is in the decision (its key names the link, its value
 * and n give the fault and its duration), the time it was drawn and, from
 * a run that explains, the words link.c wrote for the message it struck
 * (label.h). */
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

/* " as the 'put 3' from node 'a' to node 'b' was sent", or "". */
static void sent(char *buf, size_t len, const char *what)
{
    if (what != NULL && what[0] != '\0') {
        snprintf(buf, len, " as %s was sent", what);
    } else {
        buf[0] = '\0';
    }
}

/* Partition: 1..S both ways, S+1..2S one way, 2^(k-1) quanta (link.c). */
static void explain_partition(char *buf, size_t len, uint64_t key, uint32_t v, uint32_t n,
                              pl_time at, const char *what)
{
    uint32_t steps = (n - 1) / 2;
    bool both = v <= steps;
    uint32_t k = both ? v : v - steps;
    char l[48], as[PL__DECISION_TEXT_MAX + 16];
    link_text(l, sizeof l, key, both);
    sent(as, sizeof as, what);
    pl_time heal = at + (PL_SIM_LINK_FAULT_QUANTUM_NS << (k - 1));
    snprintf(buf, len, "partition: link %s cut at %.3f ms (%s)%s, healed at %.3f ms", l, ms_of(at),
             both ? "both ways" : "one-way", as, ms_of(heal));
}

/* What a decision of a flip kind did to its message, and the message
 * when link.c said nothing: what the link carries that the kind strikes. */
static const struct flip_words {
    uint32_t kind;
    const char *name;
    const char *unnamed; /* "a datagram on %s", the link */
    const char *did;
} flips[] = {
    {PL_DECIDE_LINK_LOSS, "link loss", "a datagram on %s", "was lost"},
    {PL_DECIDE_LINK_DUP, "link dup", "a datagram on %s", "was delivered twice"},
    {PL_DECIDE_LINK_REORDER, "link reorder", "a datagram on %s",
     "was held back, later ones overtake it"},
    {PL_DECIDE_LINK_RESET, "link reset", "a stream write on %s",
     "broke its connection (both ends see ECONNRESET)"},
};

/* A latency or a flip: the message link.c named (what), else the link's. */
static bool explain_message(char *buf, size_t len, uint32_t kind, const char *l, uint32_t v,
                            uint32_t n, const char *what)
{
    bool named = what != NULL && what[0] != '\0';
    if (kind == PL_DECIDE_LINK_LATENCY) {
        if (named) {
            snprintf(buf, len, "link latency: %s (bucket %u of %u)", what, v, n);
        } else {
            snprintf(buf, len,
                     "link latency: a crossing of %s took bucket %u of %u (%u jitter quanta "
                     "more)",
                     l, v, n, 1u << (v - 1));
        }
        return true;
    }
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        if (flips[i].kind != kind) {
            continue;
        }
        char unnamed[64];
        snprintf(unnamed, sizeof unnamed, flips[i].unnamed, l);
        snprintf(buf, len, "%s: %s %s", flips[i].name, named ? what : unnamed, flips[i].did);
        return true;
    }
    return false;
}

bool pl__net_explain(char *buf, size_t len, uint32_t kind, uint64_t key, uint32_t v, uint32_t n,
                     pl_time at, const char *what)
{
    PL__SIM_ASSERT(v >= 1 && v < n && n <= 1 + 2 * PL_SIM_LINK_STEPS_MAX); /* a non-zero one */
    char l[48];
    link_text(l, sizeof l, key, false);
    if (explain_message(buf, len, kind, l, v, n, what)) {
        return true;
    }
    switch (kind) {
    case PL_DECIDE_PARTITION:
        explain_partition(buf, len, key, v, n, at, what);
        return true;
    case PL_DECIDE_CLOG: {
        char as[PL__DECISION_TEXT_MAX + 16];
        sent(as, sizeof as, what);
        snprintf(buf, len, "clog: link %s held its traffic at %.3f ms%s, released at %.3f ms", l,
                 ms_of(at), as, ms_of(at + (PL_SIM_LINK_FAULT_QUANTUM_NS << (v - 1))));
        return true;
    }
    default:
        return false;
    }
}
