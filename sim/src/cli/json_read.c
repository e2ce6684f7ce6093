/* sim/src/cli/json_read.c: a small JSON reader for `merge`, which reads
 * back the summary lines `run --json` writes. A tree of values, strings
 * unescaped (\uXXXX as UTF-8), numbers kept as written so that 64-bit
 * counts survive exactly. Input is untrusted: depth and sizes are
 * bounded, and every error says where. */
#include "cli_internal.h"

#define JSON_DEPTH_MAX 32

typedef struct jparser {
    const char *p, *end, *start;
    char *err;
    size_t err_len;
} jparser;

static bool jfail(jparser *ps, const char *what)
{
    if (ps->err[0] == '\0') {
        snprintf(ps->err, ps->err_len, "%s at byte %zu", what, (size_t)(ps->p - ps->start));
    }
    return false;
}

static void skip_ws(jparser *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) {
        ps->p++;
    }
}

static bool put_utf8(char *buf, size_t *n, uint32_t cp)
{
    if (cp < 0x80) {
        buf[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        buf[(*n)++] = (char)(0xc0 | (cp >> 6));
        buf[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        buf[(*n)++] = (char)(0xe0 | (cp >> 12));
        buf[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        buf[(*n)++] = (char)(0x80 | (cp & 0x3f));
    }
    return true;
}

/* A \u escape's four hex digits; false when they are not. */
static bool hex4(jparser *ps, uint32_t *cp)
{
    *cp = 0;
    for (int i = 0; i < 4; i++, ps->p++) {
        char c = ps->p < ps->end ? *ps->p : '\0';
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) {
            return jfail(ps, "bad \\u escape");
        }
        *cp = *cp * 16 + (uint32_t)d;
    }
    return true;
}

/* A string after its opening quote; *out is malloc'd. */
static bool parse_string(jparser *ps, char **out)
{
    /* Unescaped text is never longer than the escaped (\uXXXX: 6 -> 3). */
    const char *q = ps->p;
    while (q < ps->end && *q != '"') {
        q += *q == '\\' && q + 1 < ps->end ? 2 : 1;
    }
    if (q >= ps->end) {
        return jfail(ps, "unterminated string");
    }
    char *buf = malloc((size_t)(q - ps->p) + 1);
    size_t n = 0;
    if (buf == NULL) {
        return jfail(ps, "out of memory");
    }
    static const char plain[] = "\"\\/bfnrt", real[] = "\"\\/\b\f\n\r\t";
    while (*ps->p != '"') {
        char c = *ps->p++;
        if ((unsigned char)c < 0x20) {
            free(buf);
            return jfail(ps, "control character in a string");
        }
        if (c != '\\') {
            buf[n++] = c;
            continue;
        }
        const char *e = strchr(plain, *ps->p);
        uint32_t cp;
        if (*ps->p == 'u') {
            ps->p++;
            if (!hex4(ps, &cp) || cp == 0) {
                free(buf);
                return jfail(ps, "bad \\u escape");
            }
            put_utf8(buf, &n, cp);
        } else if (e != NULL && *e != '\0') {
            buf[n++] = real[e - plain];
            ps->p++;
        } else {
            free(buf);
            return jfail(ps, "bad escape in a string");
        }
    }
    ps->p++;
    buf[n] = '\0';
    *out = buf;
    return true;
}

static bool parse_value(jparser *ps, jval *v, int depth);

static bool add_item(jparser *ps, jval *v, char *key, jval *item)
{
    jval *items = realloc(v->items, (v->n + 1) * sizeof *items);
    char **keys = v->type == JV_OBJ ? realloc(v->keys, (v->n + 1) * sizeof *keys) : NULL;
    if (items != NULL) {
        v->items = items;
    }
    if (keys != NULL) {
        v->keys = keys;
    }
    if (items == NULL || (v->type == JV_OBJ && keys == NULL)) {
        free(key);
        pl__cli_json_free(item);
        return jfail(ps, "out of memory");
    }
    v->items[v->n] = *item;
    if (v->type == JV_OBJ) {
        v->keys[v->n] = key;
    }
    v->n++;
    return true;
}

/* An array or an object after its opening bracket. */
static bool parse_container(jparser *ps, jval *v, int depth)
{
    char close = v->type == JV_ARR ? ']' : '}';
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return true;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(ps);
        if (v->type == JV_OBJ) {
            if (ps->p >= ps->end || *ps->p != '"') {
                return jfail(ps, "expected a key");
            }
            ps->p++;
            if (!parse_string(ps, &key)) {
                return false;
            }
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(key);
                return jfail(ps, "expected ':'");
            }
            ps->p++;
        }
        jval item;
        if (!parse_value(ps, &item, depth + 1)) {
            free(key);
            return false;
        }
        if (!add_item(ps, v, key, &item)) {
            return false;
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
        } else if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return true;
        } else {
            return jfail(ps, v->type == JV_ARR ? "expected ',' or ']'" : "expected ',' or '}'");
        }
    }
}

static bool parse_number(jparser *ps, jval *v)
{
    const char *s = ps->p;
    while (ps->p < ps->end && strchr("+-0123456789.eE", *ps->p) != NULL) {
        ps->p++;
    }
    if (ps->p == s || ps->p - s > 40) {
        return jfail(ps, "bad value");
    }
    v->type = JV_NUM;
    v->text = strndup(s, (size_t)(ps->p - s));
    return v->text != NULL || jfail(ps, "out of memory");
}

static bool word(jparser *ps, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, w, n) == 0) {
        ps->p += n;
        return true;
    }
    return false;
}

static bool parse_value(jparser *ps, jval *v, int depth)
{
    memset(v, 0, sizeof *v);
    skip_ws(ps);
    if (depth > JSON_DEPTH_MAX) {
        return jfail(ps, "nested too deep");
    }
    if (ps->p >= ps->end) {
        return jfail(ps, "unexpected end");
    }
    char c = *ps->p;
    if (c == '{' || c == '[') {
        ps->p++;
        v->type = c == '{' ? JV_OBJ : JV_ARR;
        if (!parse_container(ps, v, depth)) {
            pl__cli_json_free(v);
            return false;
        }
        return true;
    }
    if (c == '"') {
        ps->p++;
        v->type = JV_STR;
        return parse_string(ps, &v->text);
    }
    if (word(ps, "true") || word(ps, "false")) {
        v->type = JV_BOOL;
        v->b = ps->p[-1] == 'e' && ps->p[-2] == 'u';
        return true;
    }
    if (word(ps, "null")) {
        v->type = JV_NULL;
        return true;
    }
    return parse_number(ps, v);
}

int pl__cli_json_parse(const char *text, size_t len, jval *out, char *err, size_t err_len)
{
    jparser ps = {text, text + len, text, err, err_len};
    err[0] = '\0';
    if (!parse_value(&ps, out, 0)) {
        return PL_EFORMAT;
    }
    skip_ws(&ps);
    if (ps.p != ps.end) {
        pl__cli_json_free(out);
        jfail(&ps, "text after the value");
        return PL_EFORMAT;
    }
    return 0;
}

void pl__cli_json_free(jval *v)
{
    for (size_t i = 0; i < v->n; i++) {
        pl__cli_json_free(&v->items[i]);
        if (v->keys != NULL) {
            free(v->keys[i]);
        }
    }
    free(v->items);
    free(v->keys);
    free(v->text);
    memset(v, 0, sizeof *v);
}

const jval *pl__cli_json_get(const jval *obj, const char *key)
{
    for (size_t i = 0; obj != NULL && obj->type == JV_OBJ && i < obj->n; i++) {
        if (strcmp(obj->keys[i], key) == 0) {
            return &obj->items[i];
        }
    }
    return NULL;
}

bool pl__cli_json_u64(const jval *v, uint64_t *out)
{
    if (v == NULL || v->type != JV_NUM || v->text[0] < '0' || v->text[0] > '9') {
        return false;
    }
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v->text, &end, 10);
    *out = (uint64_t)x;
    return errno == 0 && *end == '\0';
}

const char *pl__cli_json_str(const jval *v)
{
    return v != NULL && v->type == JV_STR ? v->text : NULL;
}

bool pl__cli_json_bool(const jval *v, bool *out)
{
    if (v == NULL || v->type != JV_BOOL) {
        return false;
    }
    *out = v->b;
    return true;
}
