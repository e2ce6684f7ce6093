/* sim/src/cli/text.c: the pure helpers of the command line (cli.h):
 * seed, duration and size parsing, escaping, quoting and
 * edit distance, cutting a long text at a line. No I/O: the unit tests
 * call them in-process. */
#include "cli_internal.h"

int pl__cli_parse_u64(const char *text, uint64_t *out)
{
    PL__CLI_ASSERT(out != NULL);
    if (text == NULL || !parse_decimal(text, strlen(text), out)) {
        return PL_EINVAL;
    }
    return 0;
}

int pl__cli_parse_seed(const char *text, uint64_t *out)
{
    PL__CLI_ASSERT(out != NULL);
    if (text == NULL) {
        return PL_EINVAL;
    }
    size_t len = strlen(text);
    if (len == 40) {
        for (size_t i = 0; i < len; i++) {
            if (hex_digit(text[i]) < 0) {
                return PL_EINVAL;
            }
        }
        return parse_hex(text, 16, out) ? 0 : PL_EINVAL;
    }
    if (len > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        return parse_hex(text + 2, len - 2, out) ? 0 : PL_EINVAL;
    }
    return pl__cli_parse_u64(text, out);
}

/* Splits text at the first `sep`: what precedes it is copied into left
 * (NUL-terminated, so it can be parsed on its own), *right points after
 * it. False when sep is missing or the left part does not fit. */
static bool split_at(const char *text, const char *sep, char *left, size_t left_size,
                     const char **right)
{
    PL__CLI_ASSERT(left != NULL && left_size > 0 && right != NULL);
    const char *at = text != NULL ? strstr(text, sep) : NULL;
    if (at == NULL || (size_t)(at - text) >= left_size) {
        return false;
    }
    memcpy(left, text, (size_t)(at - text));
    left[at - text] = '\0';
    *right = at + strlen(sep);
    return true;
}

int pl__cli_parse_seeds(const char *text, uint64_t *lo, uint64_t *hi)
{
    char left[64];
    const char *right;
    uint64_t a, b;
    if (!split_at(text, "..", left, sizeof left, &right) || pl__cli_parse_seed(left, &a) != 0 ||
        pl__cli_parse_seed(right, &b) != 0) {
        return PL_EINVAL;
    }
    if (a > b) {
        return PL_EINVAL;
    }
    PL__CLI_ASSERT(lo != NULL && hi != NULL);
    *lo = a;
    *hi = b;
    return 0;
}

static pl_time unit_ns(const char *unit)
{
    static const struct {
        const char *name;
        pl_time ns;
    } units[] = {{"ns", 1},   {"us", PL_US},    {"ms", PL_MS},
                 {"s", PL_S}, {"m", 60 * PL_S}, {"h", 3600 * PL_S}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(unit, units[i].name) == 0) {
            return units[i].ns;
        }
    }
    return 0;
}

int pl__cli_parse_duration(const char *text, pl_time *out_ns)
{
    const pl_time max_ns = (pl_time)10 * 366 * 24 * 3600 * PL_S;
    const char *p = text;
    uint64_t whole = 0, frac = 0, frac_scale = 1;
    if (p == NULL || *p < '0' || *p > '9') {
        return PL_EINVAL;
    }
    for (; *p >= '0' && *p <= '9'; p++) {
        if (whole > (uint64_t)max_ns / 10) {
            return PL_EINVAL;
        }
        whole = whole * 10 + (uint64_t)(*p - '0');
    }
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9') {
            return PL_EINVAL;
        }
        for (; *p >= '0' && *p <= '9'; p++) {
            if (frac_scale == 1000000000u) {
                return PL_EINVAL;
            }
            frac = frac * 10 + (uint64_t)(*p - '0');
            frac_scale *= 10;
        }
    }
    pl_time unit = unit_ns(p);
    if (unit == 0 || whole > (uint64_t)(max_ns / unit)) {
        return PL_EINVAL;
    }
    /* frac * unit overflows 64 bits (9 digits of hours reach 3.6e21), so
     * split unit = hi * frac_scale + lo: frac * hi < unit and
     * frac * lo < frac_scale^2 <= 1e18 both fit, and the sum is exactly
     * floor(frac * unit / frac_scale). */
    uint64_t hi = (uint64_t)unit / frac_scale;
    uint64_t lo = (uint64_t)unit % frac_scale;
    uint64_t part = frac * hi + frac * lo / frac_scale;
    /* whole * unit <= max_ns and part < unit: no overflow before the
     * range check. */
    pl_time ns = (pl_time)whole * unit + (pl_time)part;
    if (ns <= 0 || ns > max_ns) {
        return PL_EINVAL;
    }
    *out_ns = ns;
    return 0;
}

int pl__cli_parse_shard(const char *text, uint32_t *k, uint32_t *n)
{
    char left[16];
    const char *right;
    uint64_t a, b;
    if (!split_at(text, "/", left, sizeof left, &right) || pl__cli_parse_u64(left, &a) != 0 ||
        pl__cli_parse_u64(right, &b) != 0) {
        return PL_EINVAL;
    }
    if (a < 1 || a > b || b > PL__CLI_SHARDS_MAX) {
        return PL_EINVAL;
    }
    PL__CLI_ASSERT(k != NULL && n != NULL);
    *k = (uint32_t)a;
    *n = (uint32_t)b;
    return 0;
}

static bool shell_safe(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           strchr("_-./:=,+@%", c) != NULL;
}

/* Appends c to buf (when it fits) and counts it, like snprintf does. */
static void put_char(char *buf, size_t len, size_t *n, char c)
{
    PL__CLI_ASSERT(buf != NULL || len == 0);
    if (*n + 1 < len) {
        buf[*n] = c;
    }
    (*n)++;
}

int pl__cli_parse_size(const char *text, uint64_t *out_bytes)
{
    static const struct {
        const char *name;
        unsigned shift;
    } units[] = {{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
    size_t digits = text != NULL ? strspn(text, "0123456789") : 0;
    uint64_t n;
    if (digits == 0 || !parse_decimal(text, digits, &n) || n == 0) {
        return PL_EINVAL;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(text + digits, units[i].name) == 0) {
            if (n > UINT64_MAX >> units[i].shift) {
                return PL_EINVAL;
            }
            PL__CLI_ASSERT(out_bytes != NULL);
            *out_bytes = n << units[i].shift;
            return 0;
        }
    }
    return PL_EINVAL;
}

size_t pl__cli_utf8_len(const unsigned char *p)
{
    if (p[0] < 0x80) {
        return 1;
    }
    /* Lead byte: sequence length and the smallest value it may encode. */
    size_t n = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    uint32_t cp = n == 2 ? p[0] & 0x1fu : n == 3 ? p[0] & 0x0fu : p[0] & 0x07u;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0; /* also stops at the NUL */
        }
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    static const uint32_t min_of[] = {0, 0, 0x80, 0x800, 0x10000};
    if (n == 0 || cp < min_of[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    return n;
}

int pl__cli_escape(const char *text, bool keep_lines, char *buf, size_t len)
{
    PL__CLI_ASSERT(text != NULL);
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p != '\0';) {
        size_t seq = pl__cli_utf8_len(p);
        PL__CLI_ASSERT(seq <= 4); /* a valid sequence never spans the NUL */
        bool c1 = seq == 2 && p[0] == 0xc2 && p[1] < 0xa0; /* U+0080-U+009F */
        bool kept = keep_lines && (*p == '\n' || *p == '\t');
        if (seq == 0 || c1 || ((*p < 0x20 || *p == 0x7f) && !kept)) {
            char hex[8];
            snprintf(hex, sizeof hex, "\\x%02x", *p);
            for (const char *h = hex; *h != '\0'; h++) {
                put_char(buf, len, &n, *h);
            }
            p++;
            continue;
        }
        for (size_t i = 0; i < seq; i++) {
            put_char(buf, len, &n, (char)p[i]);
        }
        p += seq;
    }
    if (len > 0) {
        buf[n < len ? n : len - 1] = '\0';
    }
    return (int)n;
}

size_t pl__cli_distance(const char *a, const char *b, size_t cap)
{
    enum { LEN_MAX = 64 };
    PL__CLI_ASSERT(a != NULL && b != NULL);
    size_t na = strlen(a), nb = strlen(b);
    if (na > LEN_MAX || nb > LEN_MAX) {
        return cap;
    }
    size_t prev[LEN_MAX + 1], cur[LEN_MAX + 1];
    for (size_t j = 0; j <= nb; j++) {
        prev[j] = j;
    }
    for (size_t i = 1; i <= na; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            size_t m = sub < del ? sub : del;
            cur[j] = m < ins ? m : ins;
        }
        memcpy(prev, cur, sizeof prev);
    }
    /* The distance never exceeds the longer string's length. */
    PL__CLI_ASSERT(prev[nb] <= (na > nb ? na : nb));
    return prev[nb] < cap ? prev[nb] : cap;
}

int pl__cli_shell_quote(const char *text, char *buf, size_t len)
{
    PL__CLI_ASSERT(text != NULL);
    bool safe = *text != '\0';
    for (const char *p = text; *p != '\0'; p++) {
        safe = safe && shell_safe(*p);
    }
    if (safe) {
        return snprintf(buf, len, "%s", text);
    }
    size_t n = 0;
    put_char(buf, len, &n, '\'');
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '\'') {
            /* Close the quote, add an escaped quote, reopen. */
            for (const char *q = "'\\''"; *q != '\0'; q++) {
                put_char(buf, len, &n, *q);
            }
        } else {
            put_char(buf, len, &n, *p);
        }
    }
    put_char(buf, len, &n, '\'');
    if (len > 0) {
        buf[n < len ? n : len - 1] = '\0';
    }
    return (int)n;
}

static size_t lines_in(const char *text)
{
    size_t n = 0;
    for (const char *p = text; *p != '\0'; p++) {
        n += *p == '\n';
    }
    return n;
}

/* A cut in the middle of a line ran into the next line of the report:
 * cut after the last whole line that leaves room for the closing line. */
void pl__cli_cut_lines(char *dst, size_t dst_len, const char *text, const char *indent,
                       const char *replay)
{
    PL__CLI_ASSERT(dst != NULL && dst_len > 0 && text != NULL && indent != NULL);
    size_t len = strlen(text);
    if (len < dst_len) {
        memcpy(dst, text, len + 1);
        return;
    }
    static const char closing[] = "%s... %zu more of %zu lines: the shrunk replay %s holds them "
                                  "all in its header\n";
    size_t total = lines_in(text);
    int need = snprintf(NULL, 0, closing, indent, total, total, replay);
    PL__CLI_ASSERT(need >= 0);
    size_t room = dst_len - 1 > (size_t)need ? dst_len - 1 - (size_t)need : 0;
    size_t keep = 0;
    for (size_t i = 0; i < room; i++) {
        if (text[i] == '\n') {
            keep = i + 1;
        }
    }
    memcpy(dst, text, keep);
    dst[keep] = '\0';
    size_t shown = lines_in(dst);
    PL__CLI_ASSERT(keep < dst_len && shown <= total);
    snprintf(dst + keep, dst_len - keep, closing, indent, total - shown, total, replay);
}
