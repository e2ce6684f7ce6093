/* fuzz/common.c: helpers every fuzz target links: the result sink and
 * the name of the crash file a finding should point the user at. */
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

const char *pl__fuzz_input_path;

static char artifact_prefix[256] = "./";
static char exact_artifact_path[256];

static volatile uint64_t sink;

void pl__fuzz_keep(uint64_t value) { sink ^= value; }

/* Copies the value of "-name=value" into dst when arg is that flag. */
static void take_flag(const char *arg, const char *name, char *dst, size_t len)
{
    size_t n = strlen(name);
    if (strncmp(arg, name, n) == 0 && arg[n] == '=') {
        snprintf(dst, len, "%s", arg + n + 1);
    }
}

void pl__fuzz_parse_flags(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        take_flag(argv[i], "-artifact_prefix", artifact_prefix, sizeof artifact_prefix);
        take_flag(argv[i], "-exact_artifact_path", exact_artifact_path, sizeof exact_artifact_path);
    }
}

/* ---- SHA-1 (FIPS 180-4), only to predict libFuzzer's file name -------- */

typedef struct sha1 {
    uint32_t h[5];
    uint8_t block[64];
    size_t used;    /* bytes in block */
    uint64_t total; /* bytes hashed */
} sha1;

static uint32_t rol(uint32_t x, int n) { return x << n | x >> (32 - n); }

static uint32_t sha1_f(int t, uint32_t b, uint32_t c, uint32_t d)
{
    if (t < 20) {
        return (b & c) | (~b & d);
    }
    if (t >= 40 && t < 60) {
        return (b & c) | (b & d) | (c & d);
    }
    return b ^ c ^ d;
}

static void sha1_block(sha1 *s)
{
    static const uint32_t k[4] = {0x5a827999, 0x6ed9eba1, 0x8f1bbcdc, 0xca62c1d6};
    uint32_t w[80];
    for (int t = 0; t < 16; t++) {
        const uint8_t *p = s->block + 4 * t;
        w[t] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
    }
    for (int t = 16; t < 80; t++) {
        w[t] = rol(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    }
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
    for (int t = 0; t < 80; t++) {
        uint32_t tmp = rol(a, 5) + sha1_f(t, b, c, d) + e + w[t] + k[t / 20];
        e = d;
        d = c;
        c = rol(b, 30);
        b = a;
        a = tmp;
    }
    s->h[0] += a;
    s->h[1] += b;
    s->h[2] += c;
    s->h[3] += d;
    s->h[4] += e;
}

static void sha1_update(sha1 *s, const uint8_t *data, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        s->block[s->used++] = data[i];
        if (s->used == 64) {
            sha1_block(s);
            s->used = 0;
        }
    }
    s->total += len;
}

static void sha1_hex(const uint8_t *data, size_t len, char out[41])
{
    sha1 s = {{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0}, {0}, 0, 0};
    sha1_update(&s, data, len);
    uint64_t bits = s.total * 8;
    uint8_t pad = 0x80;
    sha1_update(&s, &pad, 1);
    pad = 0;
    while (s.used != 56) {
        sha1_update(&s, &pad, 1);
    }
    uint8_t be[8];
    for (int i = 0; i < 8; i++) {
        be[i] = (uint8_t)(bits >> (56 - 8 * i));
    }
    sha1_update(&s, be, 8);
    for (int i = 0; i < 5; i++) {
        snprintf(out + 8 * i, 9, "%08x", (unsigned)s.h[i]);
    }
}

void pl__fuzz_artifact(const uint8_t *data, size_t size, char *buf, size_t len)
{
    if (pl__fuzz_input_path != NULL) {
        snprintf(buf, len, "%s", pl__fuzz_input_path);
        return;
    }
    if (exact_artifact_path[0] != '\0') {
        snprintf(buf, len, "%s", exact_artifact_path);
        return;
    }
    char hex[41];
    sha1_hex(data, size, hex);
    snprintf(buf, len, "%scrash-%s", artifact_prefix, hex);
}
