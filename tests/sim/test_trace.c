/* tests/sim/test_trace.c: trace hash, checkpoints, log and outputs. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "decide.h"
#include "leakcheck.h"
#include "prng.h"
#include "trace.h"

static pl__trace *make(bool keep_log, bool checkpoints)
{
    pl__trace_options o = {.keep_log = keep_log, .checkpoints = checkpoints};
    pl__trace *t = NULL;
    cr_assert_eq(pl__trace_create(&t, &o), 0);
    cr_assert_not_null(t);
    return t;
}

/* Event i of a deterministic pseudo-run drawn from p. */
static pl__trace_rec pseudo_event(pl__prng *p, uint64_t i)
{
    pl__trace_rec r = {
        .step = i,
        .time_ns = (int64_t)(i * 1000),
        /* The kinds there were when the golden value was computed:
         * kinds appended since (USER, log-only) must not move it. */
        .kind = (uint32_t)(pl__prng_below(p, PL__EV_USER)),
        .task = pl__prng_below(p, 8),
        .a = pl__prng_next(p),
        .b = pl__prng_next(p),
    };
    if (!pl__trace_kind_hashed(r.kind)) {
        r.kind = PL__EV_WAKE; /* hashed kinds only: counts and windows stay exact */
    }
    return r;
}

/* A deterministic pseudo-run: event i, with field `field` of event
 * `change_at` bumped by one when change_at < n. */
static void feed(pl__trace *t, uint64_t n, uint64_t change_at, int field)
{
    pl__prng p;
    pl__prng_seed(&p, 5);
    for (uint64_t i = 0; i < n; i++) {
        pl__trace_rec r = pseudo_event(&p, i);
        if (i == change_at) {
            switch (field) {
            case 0: r.step++; break;
            case 1: r.time_ns++; break;
            case 2: r.kind = (r.kind + 1) % PL__EV_USER; break;
            case 3: r.task++; break;
            case 4: r.a++; break;
            default: r.b++; break;
            }
        }
        pl__trace_event(t, r.step, r.time_ns, (pl__trace_kind)r.kind, r.task, r.a, r.b);
    }
}

/* Hash --------------------------------------------------------------------- */

LEAK_TEST(hash, same_events_same_hash)
{
    pl__trace *a = make(false, false);
    pl__trace *b = make(true, true);
    feed(a, 5000, UINT64_MAX, 0);
    feed(b, 5000, UINT64_MAX, 0);
    cr_assert_eq(pl__trace_hash(a), pl__trace_hash(b));
    cr_assert_eq(pl__trace_count(a), 5000);
    pl__trace_destroy(a);
    pl__trace_destroy(b);
}

LEAK_TEST(hash, any_one_hashed_field_change_changes_the_hash)
{
    /* Fields 0 and 1 (step, time) are logged, not hashed: the step count
     * and CLOCK events carry them (see trace.h). */
    pl__trace *base = make(false, false);
    feed(base, 3000, UINT64_MAX, 0);
    uint64_t h = pl__trace_hash(base);
    for (int field = 2; field < 6; field++) {
        pl__trace *t = make(false, false);
        feed(t, 3000, 1777, field);
        cr_assert_neq(pl__trace_hash(t), h, "field %d", field);
        pl__trace_destroy(t);
    }
    pl__trace_destroy(base);
}

LEAK_TEST(hash, log_only_kinds_are_logged_but_not_hashed)
{
    pl__trace *plain = make(false, false);
    pl__trace *noted = make(true, false);
    feed(plain, 300, UINT64_MAX, 0);
    feed(noted, 300, UINT64_MAX, 0);
    pl__trace_event(noted, 300, 0, PL__EV_POLL, 1, 2, 3);
    pl__trace_decision(noted, 300, 0, 1, PL_DECIDE_SCHEDULE, 3, 1);
    cr_assert_eq(pl__trace_hash(noted), pl__trace_hash(plain));
    cr_assert_eq(pl__trace_count(noted), 300);
    size_t len;
    const pl__trace_rec *log = pl__trace_log(noted, &len, NULL);
    cr_assert_eq(len, 302);
    cr_assert_eq(log[300].kind, PL__EV_POLL);
    cr_assert_eq(log[301].kind, PL__EV_DECISION);
    pl__trace_destroy(plain);
    pl__trace_destroy(noted);
}

LEAK_TEST(hash, is_xxh3_of_the_little_endian_encoding)
{
    pl__trace *t = make(false, false);
    cr_assert_eq(pl__trace_hash(t), XXH3_64bits(NULL, 0));
    pl__trace_event(t, 0x0102030405060708u, -2, PL__EV_WAKE, 0x0a0b0c0du, 1, UINT64_MAX);
    uint8_t want[24] = {
        0x04, 0x00, 0x00, 0x00,                         /* kind = wake */
        0x0d, 0x0c, 0x0b, 0x0a,                         /* task */
        0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* a */
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, /* b */
    };
    cr_assert_eq(pl__trace_hash(t), XXH3_64bits(want, sizeof(want)));
    pl__trace_destroy(t);
}

LEAK_TEST(hash, golden_value)
{
    /* Computed once; pins the encoding and kind numbers for replay format
     * 1 (a committed replay's hash must stay valid). */
    pl__trace *t = make(false, false);
    feed(t, 1000, UINT64_MAX, 0);
    cr_assert_eq(pl__trace_hash(t), UINT64_C(0x5ea8048a84560ea5), "got %016llx",
                 (unsigned long long)pl__trace_hash(t));
    pl__trace_destroy(t);
}

LEAK_TEST(hash, does_not_depend_on_when_it_is_read)
{
    pl__trace *a = make(false, false);
    pl__trace *b = make(false, false);
    feed(a, 777, UINT64_MAX, 0);
    pl__prng p;
    pl__prng_seed(&p, 5);
    for (uint64_t i = 0; i < 777; i++) {
        uint32_t kind = pl__prng_below(&p, PL__EV_USER);
        kind = pl__trace_kind_hashed(kind) ? kind : PL__EV_WAKE; /* as feed() does */
        uint32_t task = pl__prng_below(&p, 8);
        uint64_t ea = pl__prng_next(&p);
        uint64_t eb = pl__prng_next(&p);
        pl__trace_event(b, i, (int64_t)(i * 1000), (pl__trace_kind)kind, task, ea, eb);
        if (i % 13 == 0) {
            (void)pl__trace_hash(b);
        }
    }
    cr_assert_eq(pl__trace_hash(a), pl__trace_hash(b));
    pl__trace_destroy(a);
    pl__trace_destroy(b);
}

LEAK_TEST(hash, reset_starts_over)
{
    pl__trace *t = make(true, true);
    uint64_t empty = pl__trace_hash(t);
    feed(t, 600, UINT64_MAX, 0);
    uint64_t full = pl__trace_hash(t);
    pl__trace_reset(t);
    size_t n;
    cr_assert_null(pl__trace_log(t, &n, NULL));
    cr_assert_eq(n, 0);
    cr_assert_null(pl__trace_checkpoints(t, &n));
    cr_assert_eq(pl__trace_hash(t), empty);
    feed(t, 600, UINT64_MAX, 0);
    cr_assert_eq(pl__trace_hash(t), full);
    pl__trace_destroy(t);
    pl__trace_destroy(NULL);
}

/* Checkpoints and logs ------------------------------------------------------ */

LEAK_TEST(checkpoints, are_hashes_of_each_prefix)
{
    pl__trace *t = make(false, true);
    feed(t, 1000, UINT64_MAX, 0);
    size_t n;
    const uint64_t *cp = pl__trace_checkpoints(t, &n);
    cr_assert_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        pl__trace *prefix = make(false, false);
        feed(prefix, (i + 1) * PL__TRACE_CHECKPOINT_EVENTS, UINT64_MAX, 0);
        cr_assert_eq(cp[i], pl__trace_hash(prefix), "checkpoint %zu", i);
        pl__trace_destroy(prefix);
    }
    pl__trace_destroy(t);
}

LEAK_TEST(checkpoints, locate_the_first_differing_window)
{
    pl__trace *a = make(false, true);
    pl__trace *b = make(false, true);
    pl__trace *c = make(false, true);
    feed(a, 3000, UINT64_MAX, 0);
    feed(b, 3000, 1000, 4);
    feed(c, 3000, UINT64_MAX, 0);
    size_t na;
    size_t nb;
    size_t nc;
    const uint64_t *ca = pl__trace_checkpoints(a, &na);
    const uint64_t *cb = pl__trace_checkpoints(b, &nb);
    const uint64_t *cc = pl__trace_checkpoints(c, &nc);
    cr_assert_eq(na, 11);
    size_t w = pl__trace_first_diff_window(ca, na, cb, nb);
    cr_assert_eq(w, 1000 / PL__TRACE_CHECKPOINT_EVENTS);
    cr_assert(w * 256 <= 1000 && 1000 < (w + 1) * 256);
    cr_assert_eq(pl__trace_first_diff_window(ca, na, cc, nc), SIZE_MAX);
    cr_assert_eq(pl__trace_first_diff_window(ca, na, cc, 5), 5);
    cr_assert_eq(pl__trace_first_diff_window(NULL, 0, NULL, 0), SIZE_MAX);
    pl__trace_destroy(a);
    pl__trace_destroy(b);
    pl__trace_destroy(c);
}

LEAK_TEST(log, keeps_events_and_finds_the_first_difference)
{
    pl__trace *a = make(true, false);
    pl__trace *b = make(true, false);
    feed(a, 2000, UINT64_MAX, 0);
    feed(b, 2000, 1234, 3);
    size_t na;
    size_t nb;
    bool truncated = true;
    const pl__trace_rec *la = pl__trace_log(a, &na, &truncated);
    const pl__trace_rec *lb = pl__trace_log(b, &nb, NULL);
    cr_assert_eq(na, 2000);
    cr_assert(!truncated);
    cr_assert_eq(la[17].step, 17);
    cr_assert_eq(la[17].time_ns, 17000);
    cr_assert_eq(pl__trace_first_diff(la, na, lb, nb), 1234);
    cr_assert_eq(pl__trace_first_diff(la, na, la, na), SIZE_MAX);
    cr_assert_eq(pl__trace_first_diff(la, na, la, 1500), 1500);
    pl__trace_destroy(a);
    pl__trace_destroy(b);
}

/* The log and the checkpoints read each event back from the hash's
 * buffer after its encoding: every field of every event, across many
 * buffer flushes, must come back as it was appended. */
LEAK_TEST(log, keeps_every_field_across_buffer_flushes)
{
    pl__trace *t = make(true, true);
    pl__trace *plain = make(false, false);
    pl__prng p;
    pl__prng_seed(&p, 9);
    const uint64_t n = 3000; /* about 17 buffers of 4 KiB */
    for (uint64_t i = 0; i < n; i++) {
        pl__trace_rec r = pseudo_event(&p, i);
        r.task = (uint32_t)pl__prng_next(&p); /* all 32 bits */
        pl__trace_event(t, r.step, r.time_ns, (pl__trace_kind)r.kind, r.task, r.a, r.b);
        pl__trace_event(plain, r.step, r.time_ns, (pl__trace_kind)r.kind, r.task, r.a, r.b);
        pl__trace_check(t);
        pl__trace_check(plain);
    }
    size_t len;
    const pl__trace_rec *log = pl__trace_log(t, &len, NULL);
    cr_assert_eq(len, n);
    pl__prng_seed(&p, 9);
    for (uint64_t i = 0; i < n; i++) {
        pl__trace_rec r = pseudo_event(&p, i);
        r.task = (uint32_t)pl__prng_next(&p);
        cr_assert(memcmp(&log[i], &r, sizeof r) == 0, "event %llu", (unsigned long long)i);
    }
    size_t cps;
    (void)pl__trace_checkpoints(t, &cps);
    cr_assert_eq(cps, n / PL__TRACE_CHECKPOINT_EVENTS);
    cr_assert_eq(pl__trace_hash(t), pl__trace_hash(plain));
    pl__trace_destroy(t);
    pl__trace_destroy(plain);
}

LEAK_TEST(log, cap_truncates_without_touching_the_hash)
{
    pl__trace_options o = {.keep_log = true, .log_max = 100};
    pl__trace *t = NULL;
    cr_assert_eq(pl__trace_create(&t, &o), 0);
    pl__trace *plain = make(false, false);
    feed(t, 1000, UINT64_MAX, 0);
    feed(plain, 1000, UINT64_MAX, 0);
    size_t n;
    bool truncated = false;
    pl__trace_log(t, &n, &truncated);
    cr_assert_eq(n, 100);
    cr_assert(truncated);
    cr_assert_eq(pl__trace_hash(t), pl__trace_hash(plain));
    pl__trace_destroy(t);
    pl__trace_destroy(plain);
}

/* Outputs -------------------------------------------------------------------- */

static const char *name_of(void *ud, uint32_t task)
{
    (void)ud;
    static const char *const names[] = {"main", "relay-\"2\"", "sink\\x"};
    return task >= 1 && task <= 3 ? names[task - 1] : NULL;
}

static pl__trace *sample(void)
{
    pl__trace *t = make(true, false);
    pl__trace_event(t, 1, 0, PL__EV_SPAWN, 1, PL__TRACE_NO_TASK, 0);
    pl__trace_event(t, 2, 0, PL__EV_SPAWN, 2, 1, 0);
    pl__trace_event(t, 3, 1234567, PL__EV_POLL, 2, 1, 0);
    pl__trace_event(t, 4, 1234567, PL__EV_WAKER_CLONE, 2, 0, 1);
    pl__trace_event(t, 5, 1300000, PL__EV_PENDING, 2, 1, 0);
    pl__trace_decision(t, 6, 1300000, PL__TRACE_NO_TASK, PL_DECIDE_SCHEDULE, 3, 1);
    pl__trace_event(t, 7, 2000000, PL__EV_WAKE, 2, 0, 0);
    pl__trace_event(t, 8, 2000000, PL__EV_POLL, 2, 2, 0);
    pl__trace_event(t, 9, 2000000, PL__EV_READY, 2, 2, 0);
    pl__trace_event(t, 10, 2000000, PL__EV_POLL, 7, 1, 0); /* never closed */
    pl__trace_event(t, 11, -5000, PL__EV_FINDING, 3, 3, 0);
    return t;
}

/* Writes with fn to a memory stream and returns the malloc'd text. */
static char *render(int (*fn)(FILE *, const pl__trace_rec *, size_t, pl__trace_task_name_fn,
                              void *),
                    pl__trace *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    size_t n;
    const pl__trace_rec *ev = pl__trace_log(t, &n, NULL);
    cr_assert_eq(fn(f, ev, n, name_of, NULL), 0);
    fclose(f);
    return buf;
}

LEAK_TEST(output, text_timeline)
{
    pl__trace *t = sample();
    char *text = render(pl__trace_write_text, t);
    int lines = 0;
    for (const char *p = text; *p != '\0'; p++) {
        lines += *p == '\n';
    }
    cr_assert_eq(lines, 11);
    cr_assert(strstr(text, "       3      1.234ms poll         relay-\"2\"#2  poll=1 gen=0\n") !=
                  NULL,
              "%s", text);
    cr_assert(strstr(text, "decision     -            schedule n=3 value=1\n") != NULL, "%s",
              text);
    cr_assert(strstr(text, "spawn        main#1       parent=-\n") != NULL, "%s", text);
    cr_assert(strstr(text, "spawn        relay-\"2\"#2  parent=main#1\n") != NULL, "%s", text);
    cr_assert(strstr(text, "task#7") != NULL, "%s", text);
    cr_assert(strstr(text, "-0.005ms finding") != NULL, "%s", text);
    free(text);
    pl__trace_destroy(t);
}

/* A tiny JSON checker: enough of RFC 8259 to reject what a broken writer
 * produces (unbalanced brackets, bad escapes, trailing commas). */
typedef struct json {
    const char *p;
    int depth;
} json;

static bool json_value(json *j);

static void json_ws(json *j)
{
    while (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t') {
        j->p++;
    }
}

static bool json_string(json *j)
{
    if (*j->p != '"') {
        return false;
    }
    for (j->p++; *j->p != '"'; j->p++) {
        unsigned char c = (unsigned char)*j->p;
        if (c < 0x20) {
            return false;
        }
        if (c == '\\') {
            j->p++;
            if (*j->p == 'u') {
                for (int i = 1; i <= 4; i++) {
                    if (strchr("0123456789abcdefABCDEF", j->p[i]) == NULL || j->p[i] == 0) {
                        return false;
                    }
                }
                j->p += 4;
            } else if (*j->p == '\0' || strchr("\"\\/bfnrt", *j->p) == NULL) {
                return false;
            }
        }
    }
    j->p++;
    return true;
}

static bool json_number(json *j)
{
    const char *start = j->p;
    if (*j->p == '-') {
        j->p++;
    }
    if (*j->p < '0' || *j->p > '9') {
        return false;
    }
    while (*j->p >= '0' && *j->p <= '9') {
        j->p++;
    }
    if (*j->p == '.') {
        j->p++;
        if (*j->p < '0' || *j->p > '9') {
            return false;
        }
        while (*j->p >= '0' && *j->p <= '9') {
            j->p++;
        }
    }
    return j->p > start;
}

static bool json_container(json *j, char close, bool object)
{
    j->p++;
    json_ws(j);
    if (*j->p == close) {
        j->p++;
        return true;
    }
    for (;;) {
        json_ws(j);
        if (object) {
            if (!json_string(j)) {
                return false;
            }
            json_ws(j);
            if (*j->p++ != ':') {
                return false;
            }
        }
        if (!json_value(j)) {
            return false;
        }
        json_ws(j);
        if (*j->p == close) {
            j->p++;
            return true;
        }
        if (*j->p++ != ',') {
            return false;
        }
    }
}

static bool json_value(json *j)
{
    json_ws(j);
    if (j->depth++ > 64) {
        return false;
    }
    bool ok;
    if (*j->p == '{') {
        ok = json_container(j, '}', true);
    } else if (*j->p == '[') {
        ok = json_container(j, ']', false);
    } else if (*j->p == '"') {
        ok = json_string(j);
    } else if (strncmp(j->p, "true", 4) == 0 || strncmp(j->p, "null", 4) == 0) {
        j->p += 4;
        ok = true;
    } else if (strncmp(j->p, "false", 5) == 0) {
        j->p += 5;
        ok = true;
    } else {
        ok = json_number(j);
    }
    j->depth--;
    return ok;
}

static bool json_valid(const char *text)
{
    json j = {text, 0};
    if (!json_value(&j)) {
        return false;
    }
    json_ws(&j);
    return *j.p == '\0';
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

LEAK_TEST(output, json_checker_rejects_broken_json)
{
    cr_assert(json_valid("[{\"a\":1,\"b\":[true,null,-1.5,\"x\\u00e9\"]}]"));
    cr_assert(!json_valid("[{\"a\":1,}]"));
    cr_assert(!json_valid("[{\"a\":1}"));
    cr_assert(!json_valid("[\"a\\q\"]"));
    cr_assert(!json_valid("[1 2]"));
    cr_assert(!json_valid("[1.]"));
}

LEAK_TEST(output, chrome_json_is_well_formed)
{
    pl__trace *t = sample();
    char *text = render(pl__trace_write_chrome, t);
    cr_assert(json_valid(text), "%s", text);
    cr_assert_eq(text[0], '[');
    /* Two polls paired into complete events, the unclosed one an instant. */
    cr_assert_eq(count_of(text, "\"ph\":\"X\""), 2, "%s", text);
    cr_assert(strstr(text, "{\"name\":\"poll\",\"ph\":\"X\",\"ts\":1234.567,\"pid\":1,"
                           "\"tid\":2,\"dur\":65.433,") != NULL,
              "%s", text);
    /* One nanosecond per event within an instant (trace.h): the wake at
     * 2000.000, the poll after it from 2000.001 for 1 ns, the unclosed
     * poll after that; virtual time stays in the args. */
    cr_assert(strstr(text, "{\"name\":\"poll\",\"ph\":\"X\",\"ts\":2000.001,\"pid\":1,"
                           "\"tid\":2,\"dur\":0.001,") != NULL,
              "%s", text);
    cr_assert(strstr(text, "{\"name\":\"poll\",\"ph\":\"i\",\"ts\":2000.003,\"pid\":1,"
                           "\"tid\":7,") != NULL,
              "%s", text);
    cr_assert_eq(count_of(text, "\"ph\":\"M\""), 2);
    cr_assert(strstr(text, "\"args\":{\"name\":\"relay-\\\"2\\\"#2\"}") != NULL, "%s", text);
    cr_assert(strstr(text, "\"kind\":\"schedule\",\"n\":3,\"value\":1") != NULL, "%s", text);
    /* Chrome time never goes back; the event's own time is in its args. */
    cr_assert(strstr(text, "\"ts\":2000.004,") != NULL, "%s", text);
    cr_assert(strstr(text, "\"time_ns\":-5000}") != NULL, "%s", text);
    /* Every event object carries the required fields (the thread_name
     * metadata events also have a "name" inside their args). */
    int objects = count_of(text, "\"ph\":");
    cr_assert_eq(objects, 11); /* 9 events + 2 thread names */
    cr_assert_eq(objects + 2, count_of(text, "{\"name\":"));
    cr_assert_eq(objects, count_of(text, "\"ts\":"));
    cr_assert_eq(objects, count_of(text, "\"pid\":"));
    cr_assert_eq(objects, count_of(text, "\"tid\":"));
    free(text);
    pl__trace_destroy(t);
}

LEAK_TEST(output, chrome_json_of_nothing_and_of_a_random_run)
{
    pl__trace *t = make(true, false);
    char *text = render(pl__trace_write_chrome, t);
    cr_assert(json_valid(text), "%s", text);
    free(text);
    feed(t, 3000, UINT64_MAX, 0);
    text = render(pl__trace_write_chrome, t);
    cr_assert(json_valid(text));
    free(text);
    text = render(pl__trace_write_text, t);
    cr_assert_eq(count_of(text, "\n"), 3000);
    free(text);
    pl__trace_destroy(t);
}
