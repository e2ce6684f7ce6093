/* core/src/addr.c: socket address text, parsed and formatted.
 *
 * Pure functions over sockaddr structs (pollen/io.h): no system call, no
 * executor, so any thread may use them and the simulator's loopback
 * addresses read the same as the real ones.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pollen/error.h"
#include "pollen/io.h"

/* Parses a decimal port 0..65535 that ends the string. */
static int parse_port(const char *p, in_port_t *out)
{
    unsigned long port = 0;
    size_t digits = 0;
    for (; p[digits] >= '0' && p[digits] <= '9'; digits++) {
        if (digits == 5) {
            return PL_EINVAL;
        }
        port = port * 10 + (unsigned long)(p[digits] - '0');
    }
    if (digits == 0 || p[digits] != '\0' || port > 65535) {
        return PL_EINVAL;
    }
    *out = htons((in_port_t)port);
    return 0;
}

/* Copies text[0, n) into a NUL-terminated host buffer of size cap. */
static bool copy_host(char *host, size_t cap, const char *text, size_t n)
{
    if (n == 0 || n >= cap) {
        return false;
    }
    memcpy(host, text, n);
    host[n] = '\0';
    return true;
}

static int parse_v6(const char *text, struct sockaddr_storage *out, socklen_t *len)
{
    const char *rbracket = strchr(text, ']');
    char host[INET6_ADDRSTRLEN];
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;
    if (rbracket == NULL || rbracket[1] != ':' ||
        !copy_host(host, sizeof host, text + 1, (size_t)(rbracket - text - 1)) ||
        inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1 ||
        parse_port(rbracket + 2, &sin6->sin6_port) < 0) {
        return PL_EINVAL;
    }
    sin6->sin6_family = AF_INET6;
    *len = (socklen_t)sizeof *sin6;
    return 0;
}

static int parse_v4(const char *text, struct sockaddr_storage *out, socklen_t *len)
{
    const char *colon = strchr(text, ':');
    char host[INET_ADDRSTRLEN];
    struct sockaddr_in *sin = (struct sockaddr_in *)out;
    if (colon == NULL || !copy_host(host, sizeof host, text, (size_t)(colon - text)) ||
        inet_pton(AF_INET, host, &sin->sin_addr) != 1 ||
        parse_port(colon + 1, &sin->sin_port) < 0) {
        return PL_EINVAL;
    }
    sin->sin_family = AF_INET;
    *len = (socklen_t)sizeof *sin;
    return 0;
}

int pl_addr_parse(const char *text, struct sockaddr_storage *out, socklen_t *len)
{
    memset(out, 0, sizeof *out);
    *len = 0;
    if (text == NULL) {
        return PL_EINVAL;
    }
    int rc = text[0] == '[' ? parse_v6(text, out, len) : parse_v4(text, out, len);
    if (rc < 0) {
        memset(out, 0, sizeof *out);
        *len = 0;
    }
    return rc;
}

int pl_addr_format(const struct sockaddr *addr, char *buf, size_t buf_size)
{
    char host[INET6_ADDRSTRLEN];
    int n;
    if (addr == NULL) {
        return PL_EINVAL;
    }
    if (addr->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)addr;
        inet_ntop(AF_INET, &sin->sin_addr, host, sizeof host);
        n = snprintf(buf, buf_size, "%s:%u", host, (unsigned)ntohs(sin->sin_port));
    } else if (addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)(const void *)addr;
        inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof host);
        n = snprintf(buf, buf_size, "[%s]:%u", host, (unsigned)ntohs(sin6->sin6_port));
    } else {
        return PL_EINVAL;
    }
    return n < 0 || (size_t)n >= buf_size ? PL_EMSGSIZE : 0;
}

int pl_addr_port(const struct sockaddr *addr)
{
    if (addr == NULL) {
        return PL_EINVAL;
    }
    if (addr->sa_family == AF_INET) {
        return ntohs(((const struct sockaddr_in *)(const void *)addr)->sin_port);
    }
    if (addr->sa_family == AF_INET6) {
        return ntohs(((const struct sockaddr_in6 *)(const void *)addr)->sin6_port);
    }
    return PL_EINVAL;
}
