/* sim/src/net/link_api.c: pollen/sim_net.h for scenario code (hosts named
 * by text, the run found through the calling thread). Kept apart from
 * link.c so the reactor's own test links the network without a simulator
 * instance. */
#include <arpa/inet.h>
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

/* The running simulation's network and both hosts, or an error. */
static int resolve(const char *a, const char *b, pl__reactor **r, uint32_t *ha, uint32_t *hb)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL || s->reactor == NULL) {
        return PL_ENOSYS;
    }
    if (host_parse(a, ha) < 0 || host_parse(b, hb) < 0 || *ha == *hb) {
        return PL_EINVAL;
    }
    *r = s->reactor;
    return 0;
}

#define LINK_CALL(a, b, call)                                                                      \
    do {                                                                                           \
        pl__reactor *r_;                                                                           \
        uint32_t ha_, hb_;                                                                         \
        int rc_ = resolve((a), (b), &r_, &ha_, &hb_);                                              \
        return rc_ < 0 ? rc_ : call;                                                               \
    } while (0)

int pl_sim_partition(const char *a, const char *b)
{
    LINK_CALL(a, b, pl__net_link_partition(r_, ha_, hb_, true));
}

int pl_sim_partition_oneway(const char *from, const char *to)
{
    LINK_CALL(from, to, pl__net_link_partition(r_, ha_, hb_, false));
}

int pl_sim_heal(const char *a, const char *b) { LINK_CALL(a, b, pl__net_link_heal(r_, ha_, hb_)); }

int pl_sim_hold(const char *a, const char *b) { LINK_CALL(a, b, pl__net_link_hold(r_, ha_, hb_)); }

int pl_sim_release(const char *a, const char *b)
{
    LINK_CALL(a, b, pl__net_link_release(r_, ha_, hb_));
}

int pl_sim_link_set(const char *from, const char *to, const pl_sim_link_options *o)
{
    if (o == NULL) {
        return PL_EINVAL;
    }
    LINK_CALL(from, to, pl__net_link_set(r_, ha_, hb_, o));
}

int pl_sim_link_get(const char *from, const char *to, pl_sim_link_state *out)
{
    LINK_CALL(from, to, pl__net_link_get(r_, ha_, hb_, out));
}
