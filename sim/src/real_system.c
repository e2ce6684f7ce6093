/* sim/src/real_system.c: the real backend as a cluster's nodes see it
 * (real.h): node hosts on 127.X.b.c, node paths in node directories.
 *
 * The system is the real one's vtable with nine entries replaced, on
 * the real one's instance: everything else (epoll, the clock, reads and
 * writes, files) is the production code itself, and the replaced entries
 * find the run through pl__real_current (one real run per process).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "grow.h"
#include "real.h"
#include "sim_assert.h"

enum { CLAIM_PORT = 65535 };

static uint32_t loopback(const pl__real *r, uint32_t host)
{
    return 0x7f000000u | (uint32_t)r->net << 16 | (host & 0xffffu);
}

/* The address a node's code means, as the machine has it: 10.a.b.c is
 * 127.X.b.c, and a node's 0.0.0.0 (bind only) its own host. Other
 * addresses go through as they are. Returns the address to use. */
static const struct sockaddr *map_out(const pl__real *r, const struct sockaddr *a, socklen_t len,
                                      struct sockaddr_in *buf, bool any_is_self)
{
    if (a == NULL || a->sa_family != AF_INET || len < sizeof *buf) {
        return a;
    }
    memcpy(buf, a, sizeof *buf);
    uint32_t ip = ntohl(buf->sin_addr.s_addr);
    uint32_t self = pl__node_host(&r->nodes, pl__real_node_current(r));
    if (ip >> 24 == 10) {
        buf->sin_addr.s_addr = htonl(loopback(r, ip));
    } else if (ip == INADDR_ANY && any_is_self && self != 0) {
        buf->sin_addr.s_addr = htonl(loopback(r, self));
    } else {
        return a;
    }
    return (const struct sockaddr *)buf;
}

/* The other way, for addresses handed back to the code: 127.X.b.c is the
 * node whose host ends in b.c, or 10.0.b.c. */
static void map_in(const pl__real *r, struct sockaddr *a, const socklen_t *len)
{
    if (a == NULL || len == NULL || *len < sizeof(struct sockaddr_in) || a->sa_family != AF_INET) {
        return;
    }
    struct sockaddr_in in;
    memcpy(&in, a, sizeof in);
    uint32_t ip = ntohl(in.sin_addr.s_addr);
    if (ip >> 16 != (0x7f00u | r->net)) {
        return;
    }
    uint32_t host = 0x0a000000u | (ip & 0xffffu);
    for (uint32_t i = 1; i < r->nodes.len; i++) {
        if ((r->nodes.list[i].host & 0xffffu) == (ip & 0xffffu)) {
            host = r->nodes.list[i].host;
        }
    }
    in.sin_addr.s_addr = htonl(host);
    memcpy(a, &in, sizeof in);
}

/* A node's socket connects and sends from its own host: an unbound IPv4
 * socket is bound there first (port 0), as the simulator puts it there. */
static int bind_to_self(const pl__real *r, void *self, int h)
{
    uint32_t host = pl__node_host(&r->nodes, pl__real_node_current(r));
    struct sockaddr_in in;
    socklen_t len = sizeof in;
    if (host == 0 || r->inner.vtable->local_addr(self, h, (struct sockaddr *)&in, &len) != 0 ||
        in.sin_family != AF_INET || in.sin_port != 0) {
        return 0;
    }
    in = (struct sockaddr_in){.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(loopback(r, host))};
    return r->inner.vtable->bind(self, h, (const struct sockaddr *)&in, sizeof in);
}

static int mapped_bind(void *self, int h, const struct sockaddr *a, socklen_t len)
{
    const pl__real *r = pl__real_current();
    struct sockaddr_in buf;
    return r->inner.vtable->bind(self, h, map_out(r, a, len, &buf, true), len);
}

static int mapped_connect(void *self, int h, const struct sockaddr *a, socklen_t len)
{
    const pl__real *r = pl__real_current();
    struct sockaddr_in buf;
    int rc = bind_to_self(r, self, h);
    return rc != 0 ? rc : r->inner.vtable->connect(self, h, map_out(r, a, len, &buf, false), len);
}

static ssize_t mapped_sendto(void *self, int h, const void *data, size_t n,
                             const struct sockaddr *a, socklen_t len)
{
    const pl__real *r = pl__real_current();
    struct sockaddr_in buf;
    int rc = a != NULL ? bind_to_self(r, self, h) : 0;
    return rc != 0 ? rc
                   : r->inner.vtable->sendto(self, h, data, n, map_out(r, a, len, &buf, false),
                                             len);
}

static int mapped_accept(void *self, int h, struct sockaddr *a, socklen_t *len)
{
    const pl__real *r = pl__real_current();
    int rc = r->inner.vtable->accept(self, h, a, len);
    if (rc >= 0) {
        map_in(r, a, len);
    }
    return rc;
}

static ssize_t mapped_recvfrom(void *self, int h, void *data, size_t n, struct sockaddr *a,
                               socklen_t *len)
{
    const pl__real *r = pl__real_current();
    ssize_t rc = r->inner.vtable->recvfrom(self, h, data, n, a, len);
    if (rc >= 0) {
        map_in(r, a, len);
    }
    return rc;
}

static int mapped_local_addr(void *self, int h, struct sockaddr *a, socklen_t *len)
{
    const pl__real *r = pl__real_current();
    int rc = r->inner.vtable->local_addr(self, h, a, len);
    if (rc == 0) {
        map_in(r, a, len);
    }
    return rc;
}

/* A node's relative path is in its own directory: two nodes opening "db"
 * open two directories, as each has its own disk in the simulator. */
static int mapped_dir_open(void *self, const char *path, int create)
{
    pl__real *r = pl__real_current();
    uint32_t n = pl__real_node_current(r);
    if (n == 0 || path == NULL || path[0] == '/') {
        return r->inner.vtable->dir_open(self, path, create);
    }
    char full[512];
    int rc = pl__real_node_dir(r, n, full, sizeof full);
    size_t used = strlen(full);
    if (rc == 0 && snprintf(full + used, sizeof full - used, "/%s", path) >= (int)(sizeof full - used)) {
        rc = PL_ENAMETOOLONG;
    }
    return rc != 0 ? rc : r->inner.vtable->dir_open(self, full, create);
}

/* The run keeps its sources, to release what is left at its end. */
static int tracked_register(void *self, pl_io_source *src)
{
    pl__real *r = pl__real_current();
    if (pl__grow_append((void **)&r->sources, &r->sources_cap, r->sources_len + 1,
                        sizeof *r->sources, 16, 0) != 0) {
        return PL_ENOMEM;
    }
    int rc = r->inner.vtable->io_register(self, src);
    if (rc == 0) {
        r->sources[r->sources_len++] = src;
    }
    return rc;
}

static void tracked_deregister(void *self, pl_io_source *src)
{
    pl__real *r = pl__real_current();
    for (size_t i = r->sources_len; i-- > 0;) {
        if (r->sources[i] == src) {
            memmove(&r->sources[i], &r->sources[i + 1], (r->sources_len - i - 1) * sizeof src);
            r->sources_len--;
            break;
        }
    }
    r->inner.vtable->io_deregister(self, src);
}

void pl__real_system_end_run(pl__real *r)
{
    while (r->sources_len > 0) {
        pl_io_source *src = r->sources[r->sources_len - 1];
        int handle = src->handle;
        pl__io_source_forget(src); /* deregisters: the array shrinks */
        (void)r->inner.vtable->close(r->inner.self, handle);
    }
}

/* Holds 127.X for the run: X from the pid, the next free one when
 * another run holds it. */
static int claim_net(pl__real *r)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -errno;
    }
    static uint32_t runs; /* runs of this process: each starts at another X */
    uint32_t start = ((uint32_t)getpid() + runs++) % 254u;
    for (uint32_t i = 0; i < 254; i++) {
        r->net = (uint8_t)(1 + (start + i) % 254u);
        struct sockaddr_in in = {.sin_family = AF_INET,
                                 .sin_port = htons(CLAIM_PORT),
                                 .sin_addr.s_addr = htonl(loopback(r, 0xffffu))};
        if (bind(fd, (const struct sockaddr *)&in, sizeof in) == 0) {
            r->claim = fd;
            return 0;
        }
        if (errno != EADDRINUSE) {
            break;
        }
    }
    int rc = errno == EADDRINUSE ? PL_EADDRINUSE : -errno;
    close(fd);
    return rc;
}

int pl__real_system_init(pl__real *r)
{
    int rc = claim_net(r);
    if (rc != 0) {
        return rc;
    }
    rc = pl_system_default_create(&r->inner);
    if (rc != 0) {
        close(r->claim);
        r->claim = -1;
        return rc;
    }
    r->vtable = *r->inner.vtable;
    r->vtable.name = "epoll+nodes";
    r->vtable.bind = mapped_bind;
    r->vtable.connect = mapped_connect;
    r->vtable.sendto = mapped_sendto;
    r->vtable.accept = mapped_accept;
    r->vtable.recvfrom = mapped_recvfrom;
    r->vtable.local_addr = mapped_local_addr;
    r->vtable.dir_open = mapped_dir_open;
    r->vtable.io_register = tracked_register;
    r->vtable.io_deregister = tracked_deregister;
    r->outer = (pl_system){&r->vtable, r->inner.self};
    return 0;
}

void pl__real_system_finish(pl__real *r)
{
    PL__SIM_ASSERT(r->sources_len == 0);
    free(r->sources);
    r->sources = NULL;
    r->sources_cap = 0;
    pl_system_default_destroy(&r->inner);
    if (r->claim >= 0) {
        close(r->claim);
        r->claim = -1;
    }
}
