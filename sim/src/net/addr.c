/* sim/src/net/addr.c: host addresses (loopback and 10.0.0.0/8), the table of bound endpoints
 * (in bind order: lookups scan it and must stay deterministic), ephemeral
 * ports, and the bind, listen and local_addr entries. */
#include <netinet/in.h>
#include <string.h>

#include "net_impl.h"

/* ---- Addresses ---------------------------------------------------------- */

static int addr_parse_any(const struct sockaddr *sa, socklen_t len, int family, addr *out)
{
    memset(out, 0, sizeof *out);
    if (sa == NULL || sa->sa_family != family) {
        return PL_EINVAL;
    }
    if (family == AF_INET) {
        struct sockaddr_in sin;
        if (len < (socklen_t)sizeof sin) {
            return PL_EINVAL;
        }
        memcpy(&sin, sa, sizeof sin);
        memcpy(out->ip, &sin.sin_addr, 4);
        out->port = ntohs(sin.sin_port);
    } else {
        struct sockaddr_in6 sin6;
        if (len < (socklen_t)sizeof sin6) {
            return PL_EINVAL;
        }
        memcpy(&sin6, sa, sizeof sin6);
        memcpy(out->ip, &sin6.sin6_addr, 16);
        out->port = ntohs(sin6.sin6_port);
    }
    out->family = (uint16_t)family;
    return 0;
}

static bool addr_is_loopback(const addr *a)
{
    if (a->family == AF_INET) {
        return a->ip[0] == 127;
    }
    static const uint8_t v6_loopback[16] = {[15] = 1};
    return memcmp(a->ip, v6_loopback, 16) == 0;
}

/* The simulated hosts besides loopback (pollen/sim_net.h). */
static bool addr_is_host(const addr *a) { return a->family == AF_INET && a->ip[0] == 10; }

int pl__net_addr_parse(const struct sockaddr *sa, socklen_t len, int family, addr *out)
{
    int rc = addr_parse_any(sa, len, family, out);
    if (rc < 0) {
        return rc;
    }
    return addr_is_loopback(out) || addr_is_host(out) ? 0 : PL_EADDRNOTAVAIL;
}

static addr addr_loopback(int family)
{
    addr a = {.family = (uint16_t)family};
    if (family == AF_INET) {
        a.ip[0] = 127;
        a.ip[3] = 1;
    } else {
        a.ip[15] = 1;
    }
    return a;
}

static bool addr_equal(const addr *a, const addr *b)
{
    return a->family == b->family && a->port == b->port && memcmp(a->ip, b->ip, 16) == 0;
}

void pl__net_addr_write(const addr *a, struct sockaddr *out, socklen_t *len)
{
    if (out == NULL || len == NULL) {
        return;
    }
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t full;
    if (a->family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(a->port);
        memcpy(&sin->sin_addr, a->ip, 4);
        full = (socklen_t)sizeof *sin;
    } else {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(a->port);
        memcpy(&sin6->sin6_addr, a->ip, 16);
        full = (socklen_t)sizeof *sin6;
    }
    memcpy(out, &ss, *len < full ? *len : full);
    *len = full;
}

/* ---- Bound endpoints and ports ------------------------------------------ */

/* Datagram and stream sockets have separate port spaces. */
static bool same_space(const ep *a, const ep *b)
{
    return (a->kind == EP_DGRAM) == (b->kind == EP_DGRAM);
}

static bool port_in_use(const pl__reactor *r, const ep *e, uint16_t port)
{
    for (size_t i = 0; i < r->bound_len; i++) {
        if (same_space(r->bound[i], e) && r->bound[i]->local.port == port) {
            return true;
        }
    }
    return false;
}

static bool addr_in_use(const pl__reactor *r, const ep *e, const addr *a)
{
    for (size_t i = 0; i < r->bound_len; i++) {
        if (same_space(r->bound[i], e) && addr_equal(&r->bound[i]->local, a)) {
            return true;
        }
    }
    return false;
}

/* The next free ephemeral port in request order, or 0. */
static uint16_t ephemeral_port(pl__reactor *r, const ep *e)
{
    uint32_t span = PL__NET_PORT_LAST - PL__NET_EPHEMERAL_FIRST + 1;
    for (uint32_t tries = 0; tries < span; tries++) {
        uint16_t port = (uint16_t)r->next_port;
        r->next_port = port == PL__NET_PORT_LAST ? PL__NET_EPHEMERAL_FIRST : port + 1u;
        if (!port_in_use(r, e, port)) {
            return port;
        }
    }
    return 0;
}

/* Binds e to a (port 0: ephemeral). */
static int bind_addr(pl__reactor *r, ep *e, addr a)
{
    PL__SIM_ASSERT(!e->bound);
    if (!PL__NET_RESERVE(r->bound, r->bound_cap, r->bound_len + 1, PL__NET_TABLE_MIN)) {
        return PL_ENOMEM;
    }
    if (a.port == 0) {
        a.port = ephemeral_port(r, e);
        if (a.port == 0) {
            return PL_EADDRINUSE;
        }
    } else if (addr_in_use(r, e, &a)) {
        return PL_EADDRINUSE;
    }
    e->local = a;
    e->bound = true;
    r->bound[r->bound_len++] = e;
    return 0;
}

/* A node's socket is on its node's host (sim_node.h), others on loopback. */
int pl__net_autobind(pl__reactor *r, ep *e)
{
    if (e->bound) {
        return 0;
    }
    addr a = addr_loopback(e->family);
    uint32_t host = pl__node_host(&r->sim->nodes, e->node);
    if (host != 0 && e->family == AF_INET) {
        for (int i = 0; i < 4; i++) {
            a.ip[i] = (uint8_t)(host >> (24 - 8 * i));
        }
    }
    return bind_addr(r, e, a);
}

void pl__net_unbind(pl__reactor *r, ep *e)
{
    if (!e->bound) {
        return;
    }
    size_t i = 0;
    while (i < r->bound_len && r->bound[i] != e) {
        i++;
    }
    PL__SIM_ASSERT(i < r->bound_len); /* a bound endpoint is in the table */
    /* Keep bind order: lookups scan it and must stay deterministic. */
    memmove(&r->bound[i], &r->bound[i + 1], (r->bound_len - i - 1) * sizeof *r->bound);
    r->bound_len--;
    e->bound = false;
}

ep *pl__net_find_bound(const pl__reactor *r, const addr *a, bool datagram)
{
    for (size_t i = 0; i < r->bound_len; i++) {
        ep *e = r->bound[i];
        PL__SIM_ASSERT(e->bound);
        bool listening = e->kind == EP_STREAM && e->state == ST_LISTENING;
        bool match = datagram ? e->kind == EP_DGRAM : listening;
        if (match && addr_equal(&e->local, a)) {
            return e;
        }
    }
    return NULL;
}

/* ---- Entries ------------------------------------------------------------ */

static bool is_socket(const ep *e) { return e->kind == EP_STREAM || e->kind == EP_DGRAM; }

int pl__net_bind(void *self, int handle, const struct sockaddr *sa, socklen_t len)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (!is_socket(e) || e->bound || e->state != ST_FRESH) {
        return PL_EINVAL;
    }
    addr a;
    int rc = pl__net_addr_parse(sa, len, e->family, &a);
    return rc < 0 ? rc : bind_addr(r, e, a);
}

int pl__net_listen(void *self, int handle, int backlog)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (e->kind != EP_STREAM || (e->state != ST_FRESH && e->state != ST_LISTENING)) {
        return PL_EINVAL;
    }
    int rc = pl__net_autobind(r, e);
    if (rc < 0) {
        return rc;
    }
    e->backlog_max = backlog < 1 ? 1 : (size_t)backlog;
    if (e->backlog_max > PL__NET_BACKLOG_MAX) {
        e->backlog_max = PL__NET_BACKLOG_MAX;
    }
    e->state = ST_LISTENING;
    return 0;
}

int pl__net_local_addr(void *self, int handle, struct sockaddr *sa, socklen_t *len)
{
    pl__reactor *r = pl__net_of(self);
    ep *e = pl__net_ep_of(r, handle);
    if (e == NULL) {
        return PL_EBADF;
    }
    if (!is_socket(e)) {
        return PL_EINVAL;
    }
    /* Unbound sockets report the wildcard address with port 0. */
    addr any = {.family = (uint16_t)e->family};
    pl__net_addr_write(e->local.family != 0 ? &e->local : &any, sa, len);
    return 0;
}
