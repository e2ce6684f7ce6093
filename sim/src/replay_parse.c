/* sim/src/replay_parse.c: the replay-file parser (format in replay.h).
 *
 * The parser is fed untrusted bytes (it is fuzzed): every read is bounded
 * by the buffer's end, every number is overflow-checked, and memory grows
 * only with content actually present, up to the documented limits. The
 * one exception is run-length encoding, where a few bytes stand for many
 * decisions: the file is first parsed whole with the decisions only
 * counted, and the array is allocated once, at its declared size, after
 * everything else in the file was found valid. */
#include "replay.h"


#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digits.h"
#include "grow.h"
#include "pollen/error.h"
#include "pollen/sim.h"
#include "sim_assert.h"
#include "trace.h"

/* Parser ------------------------------------------------------------------ */

enum key_id {
    K_POLLEN_VERSION,
    K_BUILD,
    K_SCENARIO,
    K_SEED,
    K_STRATEGY,
    K_KNOBS,
    K_POLL_COST,
    K_ROTATION,
    K_TIME_LIMIT,
    K_FINDING,
    K_MESSAGE,
    K_STEPS,
    K_EVENTS,
    K_HASH,
    K_TRUNCATED,
    K_CHECKPOINTS,
    K_DECISIONS,
    K_END,
    K__COUNT
};

static const char *const key_names[K__COUNT] = {
    "pollen-version", "build", "scenario", "seed",  "strategy",
    "knobs",          "poll-cost-ns", "waker-rotation", "time-limit-ns", "finding", "message",
    "steps",          "events",
    "hash",           "truncated", "checkpoints", "decisions", "end",
};

typedef enum block { BLOCK_NONE, BLOCK_DECISIONS, BLOCK_CHECKPOINTS } block;

typedef struct parser {
    const char *p;         /* unread input */
    const char *end;
    uint64_t line;         /* number of the current line, 1-based */
    pl__replay *out;
    char *err;
    size_t errlen;
    uint64_t seen[K__COUNT]; /* line where each key appeared, 0: not yet */
    block blk;             /* which continuation lines may follow */
    uint64_t blk_left;     /* items still expected in the block */
    uint64_t blk_line;     /* the block's header line */
    size_t dec_cap;        /* allocated decisions */
    bool counting;         /* first pass: decisions are checked, not stored */
    const char *dec_body;  /* the line after the decisions header */
    uint64_t dec_line;     /* the decisions header's line */
    uint64_t dec_declared; /* its count */
    size_t cp_cap;         /* allocated checkpoints */
    size_t notes_len;
    size_t notes_cap;      /* allocated bytes of out->notes */
} parser;

/* Records an error for the current line and returns code. */
static int fail(parser *ps, int code, const char *fmt, ...)
{
    ps->out->error_line = ps->line;
    if (ps->err != NULL && ps->errlen > 0) {
        int w = snprintf(ps->err, ps->errlen, "line %" PRIu64 ": ", ps->line);
        if (w >= 0 && (size_t)w < ps->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(ps->err + w, ps->errlen - (size_t)w, fmt, ap);
            va_end(ap);
        }
    }
    return code;
}

/* Copies an excerpt of untrusted text for an error message: at most 40
 * bytes, non-printable bytes shown as '?'. */
static const char *excerpt(char *buf, size_t buflen, const char *s, size_t len)
{
    size_t n = len < buflen - 4 ? len : buflen - 4;
    if (n > 40) {
        n = 40;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    if (n < len) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

/* The next line without its terminator; false at the end of input. */
static bool next_line(parser *ps, const char **line, size_t *len)
{
    if (ps->p >= ps->end) {
        return false;
    }
    const char *nl = memchr(ps->p, '\n', (size_t)(ps->end - ps->p));
    const char *stop = nl != NULL ? nl : ps->end;
    *line = ps->p;
    *len = (size_t)(stop - ps->p);
    ps->p = nl != NULL ? nl + 1 : ps->end;
    if (*len > 0 && (*line)[*len - 1] == '\r') {
        (*len)--;
    }
    ps->line++;
    return true;
}

/* Lines and line lengths are capped, so a hostile file cannot make one
 * text value as large as the file or keep the parser looping over
 * millions of empty lines. */
static int check_line(parser *ps, size_t len)
{
    if (ps->line > PL__REPLAY_LINES_MAX) {
        return fail(ps, PL_EFORMAT, "more than %" PRIu64 " lines", PL__REPLAY_LINES_MAX);
    }
    if (len > PL__REPLAY_LINE_MAX) {
        return fail(ps, PL_EFORMAT, "line of %zu bytes is longer than the %zu supported", len,
                    PL__REPLAY_LINE_MAX);
    }
    return 0;
}

static bool parse_u32(const char *s, size_t len, uint32_t *out)
{
    uint64_t v;
    if (!parse_decimal(s, len, &v) || v > UINT32_MAX) {
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* A trace hash is written as exactly 16 hex digits. */
static bool parse_hash(const char *s, size_t len, uint64_t *out)
{
    return len == 16 && parse_hex(s, len, out);
}

/* Splits s[0, len) at the first space: the word, and what follows. */
static void split_word(const char *s, size_t len, size_t *word_len, const char **rest,
                       size_t *rest_len)
{
    const char *sp = memchr(s, ' ', len);
    *word_len = sp != NULL ? (size_t)(sp - s) : len;
    *rest = sp != NULL ? sp + 1 : s + len;
    *rest_len = sp != NULL ? len - *word_len - 1 : 0;
}

/* Unescapes a text value into a malloc'd string stored in *field. */
static int parse_text(parser *ps, const char *key, const char *s, size_t len, char **field)
{
    char *out = malloc(len + 1);
    if (out == NULL) {
        return fail(ps, PL_ENOMEM, "out of memory");
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c != '\\') {
            out[o++] = c;
            continue;
        }
        char e = i + 1 < len ? s[i + 1] : '\0';
        int hi = i + 2 < len ? hex_digit(s[i + 2]) : -1;
        int lo = i + 3 < len ? hex_digit(s[i + 3]) : -1;
        if (e == '\\' || e == 'n' || e == 'r' || e == 't') {
            out[o++] = e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : '\\';
            i++;
        } else if (e == 'x' && hi >= 0 && lo >= 0 && (hi | lo) != 0) {
            out[o++] = (char)(hi << 4 | lo);
            i += 3;
        } else {
            free(out);
            return fail(ps, PL_EFORMAT,
                        "bad escape in '%s' at column %zu (expected \\\\, \\n, \\r, \\t or "
                        "\\xHH other than \\x00)",
                        key, strlen(key) + 2 + i);
        }
    }
    out[o] = '\0';
    if (o > PL__REPLAY_TEXT_MAX) {
        free(out);
        return fail(ps, PL_EFORMAT, "'%s' is %zu bytes, more than the %zu supported", key, o,
                    PL__REPLAY_TEXT_MAX);
    }
    *field = out;
    return 0;
}

static int parse_number_key(parser *ps, const char *key, const char *v, size_t len,
                            uint64_t *out)
{
    char ex[48];
    if (!parse_decimal(v, len, out)) {
        return fail(ps, PL_EFORMAT, "expected '%s <decimal uint64>', got '%s'", key,
                    excerpt(ex, sizeof(ex), v, len));
    }
    return 0;
}

static int parse_decisions_header(parser *ps, const char *v, size_t len)
{
    uint64_t count = 0; /* set on success; gcc -O3 cannot see it */
    int rc = parse_number_key(ps, "decisions", v, len, &count);
    if (rc < 0) {
        return rc;
    }
    if (count > PL__REPLAY_DECISIONS_MAX) {
        return fail(ps, PL_EFORMAT, "%" PRIu64 " decisions is more than the %zu supported",
                    count, PL__REPLAY_DECISIONS_MAX);
    }
    ps->blk = BLOCK_DECISIONS;
    ps->blk_left = count;
    ps->blk_line = ps->line;
    ps->dec_body = ps->p;
    ps->dec_line = ps->line;
    ps->dec_declared = count;
    return 0;
}

static int parse_checkpoints_header(parser *ps, const char *v, size_t len)
{
    char ex[48];
    size_t wl;
    const char *rest;
    size_t rest_len;
    split_word(v, len, &wl, &rest, &rest_len);
    uint32_t every;
    uint64_t count;
    if (!parse_u32(v, wl, &every) || every == 0 || !parse_decimal(rest, rest_len, &count)) {
        return fail(ps, PL_EFORMAT,
                    "expected 'checkpoints <events per checkpoint > 0> <count>', got '%s'",
                    excerpt(ex, sizeof(ex), v, len));
    }
    if (count > PL__REPLAY_CHECKPOINTS_MAX) {
        return fail(ps, PL_EFORMAT, "%" PRIu64 " checkpoints is more than the %zu supported",
                    count, PL__REPLAY_CHECKPOINTS_MAX);
    }
    ps->out->checkpoint_events = every;
    ps->blk = BLOCK_CHECKPOINTS;
    ps->blk_left = count;
    ps->blk_line = ps->line;
    return 0;
}

static int parse_knobs(parser *ps, const char *v, size_t len)
{
    char kerr[160];
    pl__dec_knobs_default(&ps->out->knobs);
    if (pl__dec_knobs_parse(&ps->out->knobs, v, len, kerr, sizeof(kerr)) < 0) {
        return fail(ps, PL_EFORMAT, "knobs: %s", kerr);
    }
    ps->out->has_knobs = true;
    return 0;
}

/* Format 1 predates the probe decision: those runs never probed at timer
 * points, so they replay with the probe knob off (and, without a knobs
 * line, with format 1's defaults, in which cancel was off). */
static void knobs_of_format_1(pl__replay *r)
{
    if (!r->has_knobs) {
        pl__dec_knobs_default(&r->knobs);
        r->knobs.kind[PL_DECIDE_CANCEL].enabled = false;
        r->has_knobs = true;
    }
    r->knobs.kind[PL_DECIDE_PROBE].enabled = false;
}

static int parse_poll_cost(parser *ps, const char *v, size_t len)
{
    char ex[48];
    uint64_t ns;
    if (!parse_decimal(v, len, &ns) || ns > (uint64_t)PL_SIM_POLL_COST_MAX) {
        return fail(ps, PL_EFORMAT, "expected 'poll-cost-ns <0 to %lld>', got '%s'",
                    (long long)PL_SIM_POLL_COST_MAX, excerpt(ex, sizeof(ex), v, len));
    }
    ps->out->poll_cost_ns = (int64_t)ns;
    return 0;
}

static int parse_time_limit(parser *ps, const char *v, size_t len)
{
    char ex[48];
    uint64_t ns;
    if (!parse_decimal(v, len, &ns) || ns == 0 || ns > (uint64_t)PL__REPLAY_TIME_LIMIT_MAX) {
        return fail(ps, PL_EFORMAT, "expected 'time-limit-ns <1 to %lld>', got '%s'",
                    (long long)PL__REPLAY_TIME_LIMIT_MAX, excerpt(ex, sizeof(ex), v, len));
    }
    ps->out->time_limit_ns = (int64_t)ns;
    return 0;
}

static int parse_rotation(parser *ps, const char *v, size_t len)
{
    char ex[48];
    if (len == 2 && memcmp(v, "on", 2) == 0) {
        ps->out->rotation_off = false;
    } else if (len == 3 && memcmp(v, "off", 3) == 0) {
        ps->out->rotation_off = true;
    } else {
        return fail(ps, PL_EFORMAT, "expected 'waker-rotation on' or 'waker-rotation off', got "
                    "'%s'", excerpt(ex, sizeof(ex), v, len));
    }
    return 0;
}

/* Handles a known key's value. */
static int parse_key(parser *ps, enum key_id k, const char *v, size_t len)
{
    char ex[48];
    pl__replay *r = ps->out;
    uint64_t flag;
    switch (k) {
    case K_POLLEN_VERSION: return parse_text(ps, key_names[k], v, len, &r->pollen_version);
    case K_BUILD: return parse_text(ps, key_names[k], v, len, &r->build);
    case K_SCENARIO: return parse_text(ps, key_names[k], v, len, &r->scenario);
    case K_STRATEGY: return parse_text(ps, key_names[k], v, len, &r->strategy);
    case K_FINDING: return parse_text(ps, key_names[k], v, len, &r->finding);
    case K_MESSAGE: return parse_text(ps, key_names[k], v, len, &r->message);
    case K_SEED: return parse_number_key(ps, key_names[k], v, len, &r->seed);
    case K_STEPS: return parse_number_key(ps, key_names[k], v, len, &r->steps);
    case K_EVENTS: return parse_number_key(ps, key_names[k], v, len, &r->events);
    case K_KNOBS: return parse_knobs(ps, v, len);
    case K_POLL_COST: return parse_poll_cost(ps, v, len);
    case K_ROTATION: return parse_rotation(ps, v, len);
    case K_TIME_LIMIT: return parse_time_limit(ps, v, len);
    case K_CHECKPOINTS: return parse_checkpoints_header(ps, v, len);
    case K_DECISIONS: return parse_decisions_header(ps, v, len);
    case K_HASH:
        if (!parse_hash(v, len, &r->hash)) {
            return fail(ps, PL_EFORMAT, "expected 'hash <16 hex digits>', got '%s'",
                        excerpt(ex, sizeof(ex), v, len));
        }
        r->has_hash = true;
        return 0;
    case K_TRUNCATED:
        if (!parse_decimal(v, len, &flag) || flag > 1) {
            return fail(ps, PL_EFORMAT, "expected 'truncated 0' or 'truncated 1', got '%s'",
                        excerpt(ex, sizeof(ex), v, len));
        }
        r->truncated = flag == 1;
        return 0;
    case K_END:
    case K__COUNT:
    default:
        break;
    }
    return 0;
}

/* Appends a note about an ignored line to out->notes. */
static int add_note(parser *ps, const char *key, size_t key_len)
{
    char ex[48];
    char note[128];
    int w = snprintf(note, sizeof(note), "line %" PRIu64 ": ignored unknown key '%s'\n",
                     ps->line, excerpt(ex, sizeof(ex), key, key_len));
    size_t n = w > 0 ? (size_t)w : 0;
    if (n >= sizeof(note)) {
        n = sizeof(note) - 1;
    }
    if (pl__grow_append((void **)&ps->out->notes, &ps->notes_cap, ps->notes_len + n + 1, 1,
                        sizeof(note), 0) != 0) {
        return fail(ps, PL_ENOMEM, "out of memory");
    }
    memcpy(ps->out->notes + ps->notes_len, note, n);
    ps->notes_len += n;
    ps->out->notes[ps->notes_len] = '\0';
    return 0;
}

/* Appends `repeat` copies of rec to the decision list (the second pass),
 * or only counts them (the first). */
static int push_decisions(parser *ps, pl__dec_record rec, uint64_t repeat)
{
    /* blk_left bounds repeat, and the header bounded blk_left by
     * PL__REPLAY_DECISIONS_MAX. */
    ps->blk_left -= repeat;
    if (ps->counting) {
        return 0;
    }
    pl__replay *r = ps->out;
    PL__SIM_ASSERT(r->decisions_len + repeat <= ps->dec_cap);
    for (uint64_t i = 0; i < repeat; i++) {
        r->decisions[r->decisions_len++] = rec;
    }
    return 0;
}

/* Writes every kind's letter, in kind order, to buf (PL__DEC_KINDS + 1
 * bytes): the error names what this build reads, so a kind added to the
 * table is listed without touching the parser. */
static const char *kind_letters(char *buf)
{
    size_t n = 0;
    for (int i = 0; i < PL__DEC_KINDS; i++) {
        char c = pl__dec_kind_letter((uint32_t)i);
        if (c != 0) {
            buf[n++] = c;
        }
    }
    buf[n] = '\0';
    return buf;
}

/* Parses one decision token: <letter><n>:<value>[*<repeat>]. */
static int parse_decision_token(parser *ps, const char *t, size_t len)
{
    char ex[48];
    char letters[PL__DEC_KINDS + 1];
    const char *colon = memchr(t, ':', len);
    const char *star = colon != NULL ? memchr(colon, '*', len - (size_t)(colon - t)) : NULL;
    const char *vend = star != NULL ? star : t + len;
    int kind = len > 0 ? pl__dec_kind_from_letter(t[0]) : -1;
    uint32_t n = 0;
    uint32_t value = 0;
    uint64_t repeat = 1;
    if (colon == NULL || kind < 0 || !parse_u32(t + 1, (size_t)(colon - t) - 1, &n) ||
        !parse_u32(colon + 1, (size_t)(vend - colon) - 1, &value) ||
        (star != NULL && !parse_decimal(star + 1, len - (size_t)(star - t) - 1, &repeat))) {
        return fail(ps, PL_EFORMAT,
                    "bad decision '%s' (expected <kind letter><n>:<value>[*<repeat>], "
                    "letters %s)",
                    excerpt(ex, sizeof(ex), t, len), kind_letters(letters));
    }
    if (n < 2 || value >= n || repeat == 0) {
        return fail(ps, PL_EFORMAT,
                    "bad decision '%s' (expected n >= 2, value < n, repeat >= 1)",
                    excerpt(ex, sizeof(ex), t, len));
    }
    if (repeat > ps->blk_left) {
        return fail(ps, PL_EFORMAT, "more decisions than the %" PRIu64 " declared on line %" PRIu64,
                    ps->dec_declared, ps->blk_line);
    }
    pl__dec_record rec = {(uint32_t)kind, n, value};
    return push_decisions(ps, rec, repeat);
}

static int parse_checkpoint_token(parser *ps, const char *t, size_t len)
{
    char ex[48];
    uint64_t h;
    if (!parse_hash(t, len, &h)) {
        return fail(ps, PL_EFORMAT, "bad checkpoint '%s' (expected 16 hex digits)",
                    excerpt(ex, sizeof(ex), t, len));
    }
    if (ps->blk_left == 0) {
        return fail(ps, PL_EFORMAT, "more checkpoints than the %zu declared on line %" PRIu64,
                    ps->out->checkpoints_len, ps->blk_line);
    }
    pl__replay *r = ps->out;
    /* Grow with the content, not the declared count: a short hostile
     * file must not allocate megabytes. */
    if (pl__grow_append((void **)&r->checkpoints, &ps->cp_cap, r->checkpoints_len + 1,
                 sizeof *r->checkpoints, 64, 0) != 0) {
        return fail(ps, PL_ENOMEM, "out of memory");
    }
    r->checkpoints[r->checkpoints_len++] = h;
    ps->blk_left--;
    return 0;
}

/* Parses the space-separated tokens of a 'd' or 'c' line. */
static int parse_block_line(parser *ps, const char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (s[i] == ' ') {
            i++;
            continue;
        }
        const char *sp = memchr(s + i, ' ', len - i);
        size_t tl = sp != NULL ? (size_t)(sp - (s + i)) : len - i;
        int rc = ps->blk == BLOCK_DECISIONS ? parse_decision_token(ps, s + i, tl)
                                            : parse_checkpoint_token(ps, s + i, tl);
        if (rc < 0) {
            return rc;
        }
        i += tl;
    }
    return 0;
}

static const char *block_item(block b)
{
    return b == BLOCK_DECISIONS ? "decisions ('d' lines)" : "checkpoints ('c' lines)";
}

/* A 'd' or 'c' line: must continue the open block of its type. */
static int parse_continuation(parser *ps, char tag, const char *rest, size_t rest_len)
{
    block want = tag == 'd' ? BLOCK_DECISIONS : BLOCK_CHECKPOINTS;
    if (ps->blk != want) {
        return fail(ps, PL_EFORMAT, "'%c' line outside a %s block", tag,
                    tag == 'd' ? "decisions" : "checkpoints");
    }
    return parse_block_line(ps, rest, rest_len);
}

static bool is_key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

static int find_key(const char *s, size_t len)
{
    for (int k = 0; k < K__COUNT; k++) {
        if (strlen(key_names[k]) == len && memcmp(key_names[k], s, len) == 0) {
            return k;
        }
    }
    return -1;
}

/* Handles one non-blank, non-comment line before 'end'. Sets *done on
 * 'end'. */
static int parse_line(parser *ps, const char *s, size_t len, bool *done)
{
    char ex[48];
    size_t kl;
    const char *v;
    size_t vl;
    split_word(s, len, &kl, &v, &vl);
    bool cont = kl == 1 && (s[0] == 'd' || s[0] == 'c');
    if (!cont && ps->blk != BLOCK_NONE && ps->blk_left > 0) {
        return fail(ps, PL_EFORMAT, "expected %" PRIu64 " more %s before '%s'", ps->blk_left,
                    block_item(ps->blk), excerpt(ex, sizeof(ex), s, len));
    }
    if (cont) {
        return parse_continuation(ps, s[0], v, vl);
    }
    ps->blk = BLOCK_NONE;
    for (size_t i = 0; i < kl; i++) {
        if (!is_key_char(s[i])) {
            kl = 0;
        }
    }
    if (kl == 0) {
        return fail(ps, PL_EFORMAT, "expected 'key value' or 'end', got '%s'",
                    excerpt(ex, sizeof(ex), s, len));
    }
    int k = find_key(s, kl);
    if (k < 0) {
        return add_note(ps, s, kl);
    }
    if (ps->seen[k] != 0) {
        return fail(ps, PL_EFORMAT, "duplicate key '%s' (first on line %" PRIu64 ")",
                    key_names[k], ps->seen[k]);
    }
    ps->seen[k] = ps->line;
    if (k == K_END) {
        if (kl != len) {
            return fail(ps, PL_EFORMAT, "expected 'end' alone on its line");
        }
        *done = true;
        return 0;
    }
    return parse_key(ps, (enum key_id)k, v, vl);
}

static int parse_magic(parser *ps)
{
    static const char magic[] = "pollen-replay ";
    const size_t mlen = sizeof(magic) - 1;
    char ex[48];
    const char *s;
    size_t len;
    if (!next_line(ps, &s, &len) || len < mlen || memcmp(s, magic, mlen) != 0) {
        ps->line = 1;
        return fail(ps, PL_EFORMAT, "not a pollen replay file (expected 'pollen-replay %u')",
                    PL__REPLAY_FORMAT);
    }
    int rc = check_line(ps, len);
    if (rc < 0) {
        return rc;
    }
    uint64_t version;
    if (!parse_decimal(s + mlen, len - mlen, &version) || version == 0) {
        return fail(ps, PL_EFORMAT, "bad format version '%s' (expected a positive integer)",
                    excerpt(ex, sizeof(ex), s + mlen, len - mlen));
    }
    if (version > PL__REPLAY_FORMAT) {
        return fail(ps, PL_EVERSION,
                    "format version %" PRIu64 " is newer than this pollen reads (%u)", version,
                    PL__REPLAY_FORMAT);
    }
    ps->out->format = (uint32_t)version;
    return 0;
}

/* After 'end': only blank and comment lines may follow. */
static int parse_trailer(parser *ps)
{
    const char *s;
    size_t len;
    while (next_line(ps, &s, &len)) {
        int rc = check_line(ps, len);
        if (rc < 0) {
            return rc;
        }
        if (len > 0 && s[0] != '#') {
            return fail(ps, PL_EFORMAT, "unexpected content after 'end' (line %" PRIu64 ")",
                        ps->seen[K_END]);
        }
    }
    return 0;
}

static int check_required(parser *ps)
{
    static const enum key_id required[] = {K_SEED, K_DECISIONS};
    ps->line = ps->seen[K_END];
    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        if (ps->seen[required[i]] == 0) {
            return fail(ps, PL_EFORMAT, "missing required key '%s' before 'end'",
                        key_names[required[i]]);
        }
    }
    /* A prefix of a run's decisions replays the run only up to its end,
     * then answers 0 where the run had its own values: the replay would
     * differ, so it is refused here, for every reader. A file with no
     * decisions at all is the seed-only form (a crash in a build that
     * records none), replayed from its seed. */
    if (ps->out->truncated && ps->dec_declared > 0) {
        ps->line = ps->seen[K_TRUNCATED];
        return fail(ps, PL_EFORMAT,
                    "this run's decisions were truncated at %" PRIu64 ": it cannot be replayed "
                    "(the file holds only its first decisions; run its seed again instead)",
                    ps->dec_declared);
    }
    return 0;
}

/* The second pass: stores the decisions the first pass validated and
 * counted, in an array of exactly their number. */
static int fill_decisions(parser *ps)
{
    pl__replay *r = ps->out;
    if (ps->dec_declared == 0) {
        return 0;
    }
    ps->line = ps->dec_line;
    r->decisions = malloc((size_t)ps->dec_declared * sizeof(*r->decisions));
    if (r->decisions == NULL) {
        return fail(ps, PL_ENOMEM, "out of memory for %" PRIu64 " decisions", ps->dec_declared);
    }
    ps->dec_cap = (size_t)ps->dec_declared;
    ps->counting = false;
    ps->p = ps->dec_body;
    ps->blk = BLOCK_DECISIONS;
    ps->blk_left = ps->dec_declared;
    const char *s;
    size_t len;
    while (ps->blk_left > 0 && next_line(ps, &s, &len)) {
        if (len == 0 || s[0] == '#') {
            continue;
        }
        size_t kl;
        const char *v;
        size_t vl;
        split_word(s, len, &kl, &v, &vl);
        PL__SIM_ASSERT(kl == 1 && s[0] == 'd'); /* the first pass saw only 'd' lines here */
        int rc = parse_block_line(ps, v, vl);
        if (rc < 0) {
            return rc;
        }
    }
    PL__SIM_ASSERT(ps->blk_left == 0 && r->decisions_len == ps->dec_cap);
    return 0;
}

static int parse_body(parser *ps)
{
    const char *s;
    size_t len;
    bool done = false;
    while (!done) {
        if (!next_line(ps, &s, &len)) {
            ps->line++;
            if (ps->blk != BLOCK_NONE && ps->blk_left > 0) {
                return fail(ps, PL_EFORMAT,
                            "unexpected end of file: expected %" PRIu64 " more %s",
                            ps->blk_left, block_item(ps->blk));
            }
            return fail(ps, PL_EFORMAT, "unexpected end of file: expected 'end'");
        }
        int rc = check_line(ps, len);
        if (rc < 0) {
            return rc;
        }
        if (memchr(s, '\0', len) != NULL) {
            return fail(ps, PL_EFORMAT, "NUL byte in a text file");
        }
        if (len == 0 || s[0] == '#') {
            continue;
        }
        rc = parse_line(ps, s, len, &done);
        if (rc < 0) {
            return rc;
        }
    }
    int rc = parse_trailer(ps);
    if (rc == 0 && ps->out->format < 2) {
        knobs_of_format_1(ps->out);
    }
    rc = rc < 0 ? rc : check_required(ps);
    return rc < 0 ? rc : fill_decisions(ps);
}

int pl__replay_parse_buffer(const char *data, size_t len, pl__replay *out, char *err,
                            size_t errlen)
{
    pl__replay_init(out);
    if (err != NULL && errlen > 0) {
        err[0] = '\0';
    }
    if (data == NULL) {
        data = "";
        len = 0;
    }
    parser ps = {
        .p = data, .end = data + len, .out = out, .err = err, .errlen = errlen, .counting = true};
    int rc = parse_magic(&ps);
    if (rc == 0) {
        rc = parse_body(&ps);
    }
    if (rc < 0) {
        uint64_t line = out->error_line;
        pl__replay_free(out);
        out->error_line = line;
    }
    return rc;
}
