/* sim/src/net/link_api.c: pollen/sim_net.h for scenario code (hosts named
 * by text, the run found through the calling thread). Kept apart from
 * link.c so the reactor's own test links the network without a simulator
 * instance. */
#include <arpa/inet.h>
#include <stdarg.h>
#include <string.h>

#include "net_impl.h"

/* A host's text: dotted IPv4 in 10.0.0.0/8 or 127.0.0.0/8. */
static int host_parse(const char *text, uint32_t *out)
{
    struct in_addr in;
    if (text == NULL || inet_pton(AF_INET, text, &in) != 1) {
        return PL_EINVAL;
    }
    addr a = {.family = AF_INET};
    memcpy(a.ip, &in, 4);
    if (a.ip[0] != 10 && a.ip[0] != 127) {
        return PL_EINVAL;
    }
    *out = pl__net_host(&a);
    return 0;
}

/* The running simulation's network and the two hosts of a call. */
typedef struct pair {
    pl__reactor *r;
    uint32_t a, b;
} pair;

static int resolve(const char *a, const char *b, pair *p)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL || s->reactor == NULL) {
        return PL_ENOSYS;
    }
    if (host_parse(a, &p->a) < 0 || host_parse(b, &p->b) < 0 || p->a == p->b) {
        return PL_EINVAL;
    }
    p->r = s->reactor;
    return 0;
}

int pl_sim_partition(const char *a, const char *b)
{
    pair p;
    int rc = resolve(a, b, &p);
    return rc < 0 ? rc : pl__net_link_partition(p.r, p.a, p.b, true);
}

int pl_sim_partition_oneway(const char *from, const char *to)
{
    pair p;
    int rc = resolve(from, to, &p);
    return rc < 0 ? rc : pl__net_link_partition(p.r, p.a, p.b, false);
}

int pl_sim_heal(const char *a, const char *b)
{
    pair p;
    int rc = resolve(a, b, &p);
    return rc < 0 ? rc : pl__net_link_heal(p.r, p.a, p.b);
}

int pl_sim_hold(const char *a, const char *b)
{
    pair p;
    int rc = resolve(a, b, &p);
    return rc < 0 ? rc : pl__net_link_hold(p.r, p.a, p.b);
}

int pl_sim_unhold(const char *a, const char *b)
{
    pair p;
    int rc = resolve(a, b, &p);
    return rc < 0 ? rc : pl__net_link_release(p.r, p.a, p.b);
}

int pl_sim_link_set(const char *from, const char *to, const pl_sim_link_options *o)
{
    pair p;
    int rc = resolve(from, to, &p);
    if (rc == 0 && o == NULL) {
        rc = PL_EINVAL;
    }
    return rc < 0 ? rc : pl__net_link_set(p.r, p.a, p.b, o);
}

int pl_sim_link_get(const char *from, const char *to, pl_sim_link_state *out)
{
    pair p;
    int rc = resolve(from, to, &p);
    if (rc == 0 && out == NULL) {
        rc = PL_EINVAL;
    }
    return rc < 0 ? rc : pl__net_link_get(p.r, p.a, p.b, out);
}

void pl_sim_send_label(const char *fmt, ...)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL || !s->labels.on) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    pl__label_set(s, fmt, ap);
    va_end(ap);
}
