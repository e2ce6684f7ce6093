/* sim/src/net/link.c: links between hosts (pollen/sim_net.h). A link is
 * the state of one ordered pair of distinct hosts: its options, when it
 * is cut or held, the datagrams a hold keeps, its counters; and the
 * decisions drawn for its traffic. The files above ask here what a
 * crossing costs and whether a link lets traffic through; what a cut or
 * a hold does to a datagram or a segment is theirs (dgram.c, chan.c,
 * stream.c). */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net_impl.h"

/* ---- The table ---------------------------------------------------------- */

uint32_t pl__net_host(const addr *a)
{
    if (a->family != AF_INET) {
        return 0;
    }
    if (a->ip[0] == 127) {
        return 0x7f000001u; /* the loopback net is one host */
    }
    return (uint32_t)a->ip[0] << 24 | (uint32_t)a->ip[1] << 16 | (uint32_t)a->ip[2] << 8 | a->ip[3];
}

static uint64_t link_key(const link *l) { return (uint64_t)l->from << 32 | l->to; }

/* Index + 1 of from -> to, or 0. Links are few (hosts squared), so a scan
 * in first-use order is both cheap and deterministic. */
static uint32_t link_find(const pl__reactor *r, uint32_t from, uint32_t to)
{
    for (size_t i = 0; i < r->links_len; i++) {
        if (r->links[i].from == from && r->links[i].to == to) {
            return (uint32_t)i + 1;
        }
    }
    return 0;
}

link *pl__net_link_at(const pl__reactor *r, uint32_t index)
{
    PL__SIM_ASSERT(index >= 1 && index <= r->links_len);
    return &r->links[index - 1];
}

/* Makes from -> to and to -> from exist (a symmetric cut needs both);
 * returns the index + 1 of from -> to, or PL_ENOMEM. */
static int link_make(pl__reactor *r, uint32_t from, uint32_t to)
{
    PL__SIM_ASSERT(from != to);
    uint32_t i = link_find(r, from, to);
    if (i != 0) {
        return (int)i;
    }
    if (!PL__NET_RESERVE(r->links, r->links_cap, r->links_len + 2, 8)) {
        return PL_ENOMEM;
    }
    uint32_t pair[2][2] = {{from, to}, {to, from}};
    for (int k = 0; k < 2; k++) {
        if (link_find(r, pair[k][0], pair[k][1]) == 0) {
            r->links[r->links_len++] =
                (link){.from = pair[k][0], .to = pair[k][1], .o = r->faults.link};
        }
    }
    i = link_find(r, from, to);
    PL__SIM_ASSERT(i != 0 && link_find(r, to, from) != 0);
    return (int)i;
}

int pl__net_link_index(pl__reactor *r, const addr *from, const addr *to)
{
    uint32_t a = pl__net_host(from);
    uint32_t b = pl__net_host(to);
    return a == b ? 0 : link_make(r, a, b);
}

void pl__net_links_free(pl__reactor *r)
{
    for (size_t i = 0; i < r->links_len; i++) {
        dgram *d = r->links[i].held_head;
        while (d != NULL) {
            dgram *next = d->next;
            free(d);
            d = next;
        }
    }
    free(r->links);
    r->links = NULL;
    r->links_len = r->links_cap = 0;
}

/* ---- State -------------------------------------------------------------- */

bool pl__net_link_cut(const link *l, pl_time now) { return now < l->cut_until; }

bool pl__net_link_held(const link *l, pl_time now) { return now < l->held_until; }

pl_time pl__net_link_open_at(const link *l, pl_time now)
{
    pl_time at = now;
    if (pl__net_link_cut(l, now) && l->cut_until > at) {
        at = l->cut_until;
    }
    if (pl__net_link_held(l, now) && l->held_until > at) {
        at = l->held_until;
    }
    return at;
}

link_verdict pl__net_link_wait(const link *l, pl_time now, bool *waiting, pl_time *since,
                               pl_time *again)
{
    pl_time open = pl__net_link_open_at(l, now);
    if (open == now) {
        *waiting = false;
        return LINK_GO;
    }
    if (!*waiting) {
        *waiting = true;
        *since = now;
    }
    pl_time give_up = *since + l->o.break_after_ns;
    if (now >= give_up) {
        return LINK_GIVE_UP;
    }
    *again = open < give_up ? open : give_up;
    return LINK_WAIT;
}

void pl__net_link_keep(link *l, dgram *d)
{
    PL__NET_FIFO_PUSH(l->held_head, l->held_tail, d, next);
    l->count.dgrams_held++;
}

/* ---- Decisions ---------------------------------------------------------- */

/* While the run explains its decisions, the words for the message the
 * decision just drawn struck (label.h), which
 * the key cannot say: its label or its sender's latest note, and the
 * nodes. A latency adds how much longer it took (the link's jitter
 * quantum is the link's own, which the explanation no longer has). A
 * decision not consulted has no buffer (pl__sim_decision_text). */
static void say(pl__reactor *r, const link *l, pl__label_msg m, bool hosts, pl_time extra_ns)
{
    char *text = pl__sim_decision_text(r->sim);
    if (text == NULL) {
        return;
    }
    pl__label_subject(r->sim, text, PL__DECISION_TEXT_MAX, m, l->from, l->to, hosts);
    size_t w = strlen(text);
    if (extra_ns > 0 && w < PL__DECISION_TEXT_MAX) {
        snprintf(text + w, PL__DECISION_TEXT_MAX - w, " was held %.3f ms more",
                 (double)extra_ns / 1e6);
    }
}

pl_time pl__net_link_latency(pl__reactor *r, link *l, pl__label_msg m)
{
    uint32_t v = pl__sim_choose(r->sim, PL_DECIDE_LINK_LATENCY, l->o.jitter_steps, link_key(l));
    PL__SIM_ASSERT(v < l->o.jitter_steps);
    pl_time extra = v == 0 ? 0 : l->o.jitter_quantum_ns << (v - 1);
    say(r, l, m, true, extra);
    return l->o.latency_ns + extra;
}

/* 2^(k-1) fault quanta, k >= 1. */
static pl_time fault_span(uint32_t k)
{
    PL__SIM_ASSERT(k >= 1 && k <= PL_SIM_LINK_STEPS_MAX);
    return PL_SIM_LINK_FAULT_QUANTUM_NS << (k - 1);
}

static link *reverse_of(pl__reactor *r, const link *l)
{
    uint32_t i = link_find(r, l->to, l->from);
    PL__SIM_ASSERT(i != 0); /* links are made in pairs */
    return pl__net_link_at(r, i);
}

static void cut_until(link *l, pl_time until)
{
    if (until > l->cut_until) {
        l->cut_until = until;
    }
    l->count.partitions++;
}

/* The partition decision: 0 nothing; 1..S both ways for 2^(v-1) ms;
 * S+1..2S this way only for 2^(v-S-1) ms (S = fault_steps). The clog
 * decision: 0 nothing; 1..S held for 2^(v-1) ms. Drawn only while the
 * link is open, so a cut is not stacked on a cut. */
void pl__net_link_on_send(pl__reactor *r, link *l, pl__label_msg m)
{
    pl_time now = pl__sim_now(r->sim);
    if (pl__net_link_open_at(l, now) != now) {
        return;
    }
    uint32_t steps = l->o.fault_steps;
    if (l->o.partition) {
        uint32_t v = pl__sim_choose(r->sim, PL_DECIDE_PARTITION, 1 + 2 * steps, link_key(l));
        say(r, l, m, false, 0);
        if (v != 0) {
            bool both = v <= steps;
            pl_time until = now + fault_span(both ? v : v - steps);
            cut_until(l, until);
            if (both) {
                cut_until(reverse_of(r, l), until);
            }
            return;
        }
    }
    if (l->o.clog) {
        uint32_t v = pl__sim_choose(r->sim, PL_DECIDE_CLOG, 1 + steps, link_key(l));
        say(r, l, m, false, 0);
        if (v != 0 && now + fault_span(v) > l->held_until) {
            l->held_until = now + fault_span(v);
        }
    }
}

static bool link_flip(pl__reactor *r, link *l, bool on, pl_decision_kind kind, pl__label_msg m)
{
    if (!on) {
        return false;
    }
    bool flip = pl__sim_choose(r->sim, kind, 2, link_key(l)) != 0;
    say(r, l, m, true, 0);
    return flip;
}

bool pl__net_link_lose(pl__reactor *r, link *l)
{
    return link_flip(r, l, l->o.loss, PL_DECIDE_LINK_LOSS, PL__LABEL_DGRAM);
}

bool pl__net_link_dup(pl__reactor *r, link *l)
{
    return link_flip(r, l, l->o.dup, PL_DECIDE_LINK_DUP, PL__LABEL_DGRAM);
}

bool pl__net_link_reorder(pl__reactor *r, link *l)
{
    return link_flip(r, l, l->o.reorder, PL_DECIDE_LINK_REORDER, PL__LABEL_DGRAM);
}

bool pl__net_link_reset(pl__reactor *r, link *l)
{
    return link_flip(r, l, l->o.reset, PL_DECIDE_LINK_RESET, PL__LABEL_WRITE);
}

/* ---- The entries of pollen/sim_net.h ------------------------------------ */

/* Both links of a pair, made if need be: 0 or PL_EINVAL / PL_ENOMEM. */
static int pair_of(pl__reactor *r, uint32_t a, uint32_t b, link **ab, link **ba)
{
    if (a == b) {
        return PL_EINVAL;
    }
    int i = link_make(r, a, b);
    if (i < 0) {
        return i;
    }
    *ab = pl__net_link_at(r, (uint32_t)i);
    *ba = reverse_of(r, *ab);
    return 0;
}

int pl__net_link_partition(pl__reactor *r, uint32_t from, uint32_t to, bool both)
{
    link *ab, *ba;
    int rc = pair_of(r, from, to, &ab, &ba);
    if (rc == 0) {
        cut_until(ab, PL_TIME_NEVER);
        if (both) {
            cut_until(ba, PL_TIME_NEVER);
        }
    }
    return rc;
}

int pl__net_link_cut_pair(pl__reactor *r, uint32_t a, uint32_t b, pl_time until)
{
    link *ab, *ba;
    int rc = pair_of(r, a, b, &ab, &ba);
    if (rc == 0) {
        cut_until(ab, until);
        cut_until(ba, until);
    }
    return rc;
}

int pl__net_link_heal(pl__reactor *r, uint32_t a, uint32_t b)
{
    link *ab, *ba;
    int rc = pair_of(r, a, b, &ab, &ba);
    if (rc == 0) {
        ab->cut_until = ba->cut_until = 0;
    }
    return rc;
}

int pl__net_link_hold(pl__reactor *r, uint32_t a, uint32_t b)
{
    link *ab, *ba;
    int rc = pair_of(r, a, b, &ab, &ba);
    if (rc == 0) {
        ab->held_until = ba->held_until = PL_TIME_NEVER;
    }
    return rc;
}

/* The kept datagrams arrive now, in the order they came: each goes
 * through arrival again, so a link cut meanwhile loses them. */
static void release_one(pl__reactor *r, link *l)
{
    l->held_until = 0;
    pl_time now = pl__sim_now(r->sim);
    for (dgram *d = l->held_head; d != NULL;) {
        dgram *next = d->next;
        pl__net_heap_push(r, (event){.at_ns = now, .type = EV_DGRAM, .dg = d});
        d = next;
    }
    l->held_head = l->held_tail = NULL;
    l->count.dgrams_held = 0;
}

int pl__net_link_release(pl__reactor *r, uint32_t a, uint32_t b)
{
    link *ab, *ba;
    int rc = pair_of(r, a, b, &ab, &ba);
    if (rc < 0) {
        return rc;
    }
    if (!pl__net_heap_reserve(r, ab->count.dgrams_held + ba->count.dgrams_held)) {
        return PL_ENOMEM;
    }
    release_one(r, ab);
    release_one(r, ba);
    return 0;
}

int pl__net_links_heal(pl__reactor *r)
{
    size_t kept = 0;
    for (size_t i = 0; i < r->links_len; i++) {
        kept += r->links[i].count.dgrams_held;
    }
    bool room = pl__net_heap_reserve(r, kept);
    for (size_t i = 0; i < r->links_len; i++) {
        link *l = &r->links[i];
        l->cut_until = 0;
        if (room) {
            release_one(r, l);
        }
    }
    return room ? 0 : PL_ENOMEM;
}

int pl__net_link_set(pl__reactor *r, uint32_t from, uint32_t to, const pl_sim_link_options *o)
{
    if (pl_sim_link_options_validate(o, NULL, 0) != 0) {
        return PL_EINVAL;
    }
    link *ab, *ba;
    int rc = pair_of(r, from, to, &ab, &ba);
    if (rc == 0) {
        ab->o = *o;
    }
    return rc;
}

int pl__net_link_get(const pl__reactor *r, uint32_t from, uint32_t to, pl_sim_link_state *out)
{
    if (from == to) {
        return PL_EINVAL;
    }
    uint32_t i = link_find(r, from, to);
    if (i == 0) {
        *out = (pl_sim_link_state){.options = r->faults.link};
        return 0;
    }
    const link *l = pl__net_link_at(r, i);
    pl_time now = pl__sim_now(r->sim);
    *out = l->count;
    out->options = l->o;
    out->cut = pl__net_link_cut(l, now);
    out->held = pl__net_link_held(l, now);
    out->cut_until_ns = out->cut ? l->cut_until : 0;
    out->held_until_ns = out->held ? l->held_until : 0;
    return 0;
}
