/* tests/sim/test_replay.c: replay-file writer and parser. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decide.h"
#include "leakcheck.h"
#include "pollen/error.h"
#include "prng.h"
#include "replay.h"

#ifdef PL_TEST_LSAN
#include <sanitizer/allocator_interface.h>
#endif

/* Writes r to a malloc'd string. */
static char *to_text(const pl__replay *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_eq(pl__replay_write(f, r), 0);
    fclose(f);
    return buf;
}

static int parse(const char *text, pl__replay *out, char *err, size_t errlen)
{
    return pl__replay_parse_buffer(text, strlen(text), out, err, errlen);
}

/* A replay with every field set; decisions from a recorded PRNG run. */
static void sample(pl__replay *r, pl__dec *d, uint64_t checkpoints[3])
{
    pl__replay_init(r);
    pl__dec_init(d, NULL);
    pl__dec_use_prng(d, 123);
    for (uint32_t i = 0; i < 700; i++) {
        pl__dec_choose(d, (pl_decision_kind)(i % PL_DECIDE__COUNT), 1 + i % 5, i);
    }
    r->decisions = (pl__dec_record *)pl__dec_records(d, &r->decisions_len);
    r->pollen_version = "0.1.0";
    r->build = "gcc 12.2.0 -O2 -fsanitize=address,undefined";
    r->scenario = "outbox_broadcast";
    r->seed = UINT64_MAX;
    r->strategy = "pct:3";
    r->has_knobs = true;
    pl__dec_knobs_swarm(&r->knobs, 5);
    r->finding = "lost_wakeup";
    r->message = "task relay-2\nparked \\ at\tpoll 3\x01 \x7f caf\xc3\xa9";
    r->steps = 1234;
    r->events = 5678;
    r->has_hash = true;
    r->hash = UINT64_C(0x0123456789abcdef);
    r->truncated = false; /* a truncated list is refused (errors/truncated_records) */
    checkpoints[0] = 1;
    checkpoints[1] = UINT64_MAX;
    checkpoints[2] = UINT64_C(0xfedcba9876543210);
    r->checkpoints = checkpoints;
    r->checkpoints_len = 3;
}

/* Equal strings, or both NULL. */
static void assert_text(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        cr_assert(a == NULL && b == NULL, "%s vs %s", a ? a : "NULL", b ? b : "NULL");
        return;
    }
    cr_assert_str_eq(a, b);
}

static void assert_same(const pl__replay *a, const pl__replay *b)
{
    assert_text(a->pollen_version, b->pollen_version);
    assert_text(a->build, b->build);
    assert_text(a->scenario, b->scenario);
    cr_assert_eq(a->seed, b->seed);
    assert_text(a->strategy, b->strategy);
    cr_assert_eq(a->has_knobs, b->has_knobs);
    cr_assert(pl__dec_knobs_equal(&a->knobs, &b->knobs));
    assert_text(a->finding, b->finding);
    assert_text(a->message, b->message);
    cr_assert_eq(a->steps, b->steps);
    cr_assert_eq(a->events, b->events);
    cr_assert_eq(a->has_hash, b->has_hash);
    cr_assert_eq(a->hash, b->hash);
    cr_assert_eq(a->truncated, b->truncated);
    cr_assert_eq(a->checkpoint_events, b->checkpoint_events);
    cr_assert_eq(a->checkpoints_len, b->checkpoints_len);
    for (size_t i = 0; i < a->checkpoints_len; i++) {
        cr_assert_eq(a->checkpoints[i], b->checkpoints[i]);
    }
    cr_assert_eq(a->decisions_len, b->decisions_len);
    for (size_t i = 0; i < a->decisions_len; i++) {
        cr_assert_eq(a->decisions[i].kind, b->decisions[i].kind, "decision %zu", i);
        cr_assert_eq(a->decisions[i].n, b->decisions[i].n, "decision %zu", i);
        cr_assert_eq(a->decisions[i].value, b->decisions[i].value, "decision %zu", i);
    }
}

/* Round trips ---------------------------------------------------------------- */

LEAK_TEST(roundtrip, every_field_survives)
{
    pl__replay r;
    pl__dec d;
    uint64_t cps[3];
    sample(&r, &d, cps);
    char *text = to_text(&r);
    pl__replay back;
    char err[256] = "";
    cr_assert_eq(parse(text, &back, err, sizeof(err)), 0, "%s\n%s", err, text);
    cr_assert_eq(back.format, PL__REPLAY_FORMAT);
    cr_assert_null(back.notes);
    assert_same(&r, &back);
    /* 'd' and 'c' lines wrap at 100 columns; no control bytes anywhere. */
    size_t col = 0;
    char tag = 0;
    for (const char *p = text; *p != '\0'; p++) {
        cr_assert((*p >= 0x20 && *p < 0x7f) || *p == '\n' || (unsigned char)*p >= 0x80);
        tag = col == 0 ? *p : tag;
        col = *p == '\n' ? 0 : col + 1;
        cr_assert(col <= 100 || (tag != 'd' && tag != 'c'), "%s", text);
    }
    cr_assert_gt(strlen(text), 1000);
    pl__replay_free(&back);
    free(text);
    pl__dec_finish(&d);
}

LEAK_TEST(roundtrip, decisions_replay_the_recorded_run)
{
    pl__dec rec;
    pl__dec_init(&rec, NULL);
    pl__dec_use_prng(&rec, 99);
    uint32_t values[2000];
    for (uint32_t i = 0; i < 2000; i++) {
        values[i] = pl__dec_choose(&rec, (pl_decision_kind)(i % 4), 2 + i % 3, i);
    }
    pl__replay r;
    pl__replay_init(&r);
    r.seed = 99;
    r.decisions = (pl__dec_record *)pl__dec_records(&rec, &r.decisions_len);
    char *text = to_text(&r);
    pl__replay back;
    char err[256];
    cr_assert_eq(parse(text, &back, err, sizeof(err)), 0, "%s", err);
    pl__dec rep;
    pl__dec_init(&rep, NULL);
    pl__dec_use_list(&rep, back.decisions, back.decisions_len);
    for (uint32_t i = 0; i < 2000; i++) {
        cr_assert_eq(pl__dec_choose(&rep, (pl_decision_kind)(i % 4), 2 + i % 3, i), values[i]);
    }
    cr_assert(!rep.divergence.diverged);
    cr_assert_eq(rep.past_end, 0);
    pl__dec_finish(&rep);
    pl__dec_finish(&rec);
    pl__replay_free(&back);
    free(text);
}

LEAK_TEST(roundtrip, minimal_file_and_runs)
{
    static const pl__dec_record runs[] = {
        {PL_DECIDE_SCHEDULE, 2, 0}, {PL_DECIDE_SCHEDULE, 2, 0}, {PL_DECIDE_SCHEDULE, 2, 0},
        {PL_DECIDE_SCHEDULE, 2, 1}, {PL_DECIDE_BUGGIFY_FIRE, 2, 1},
        {PL_DECIDE_BUGGIFY_FIRE, 2, 1},
    };
    pl__replay r;
    pl__replay_init(&r);
    r.seed = 7;
    r.decisions = (pl__dec_record *)runs;
    r.decisions_len = 6;
    char *text = to_text(&r);
    cr_assert_str_eq(text, "pollen-replay 2\nseed 7\nsteps 0\nevents 0\ndecisions 6\n"
                           "d s2:0*3 s2:1 B2:1*2\nend\n");
    pl__replay back;
    cr_assert_eq(parse(text, &back, NULL, 0), 0);
    cr_assert_null(back.scenario);
    cr_assert(!back.has_hash);
    cr_assert(!back.has_knobs);
    assert_same(&r, &back);
    pl__replay_free(&back);
    free(text);
}

LEAK_TEST(roundtrip, through_a_file)
{
    pl__replay r;
    pl__dec d;
    uint64_t cps[3];
    sample(&r, &d, cps);
    char dir[] = "/tmp/pollen-replay-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof(path), "%s/run.replay", dir);
    cr_assert_eq(pl__replay_write_path(path, &r), 0);
    pl__replay back;
    char err[256];
    cr_assert_eq(pl__replay_parse_file(path, &back, err, sizeof(err)), 0, "%s", err);
    assert_same(&r, &back);
    pl__replay_free(&back);
    cr_assert_eq(unlink(path), 0);
    cr_assert_eq(rmdir(dir), 0);
    cr_assert_eq(pl__replay_parse_file(path, &back, err, sizeof(err)), PL_ENOENT);
    cr_assert(strstr(err, "cannot open") != NULL, "%s", err);
    pl__dec_finish(&d);
}

LEAK_TEST(roundtrip, writer_rejects_what_the_parser_would)
{
    pl__dec_record bad[1] = {{PL_DECIDE_SCHEDULE, 3, 3}};
    pl__replay r;
    pl__replay_init(&r);
    r.decisions = bad;
    r.decisions_len = 1;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(pl__replay_write(f, &r), PL_EINVAL);
    bad[0] = (pl__dec_record){PL_DECIDE__COUNT, 3, 0};
    cr_assert_eq(pl__replay_write(f, &r), PL_EINVAL);
    bad[0] = (pl__dec_record){PL_DECIDE_SCHEDULE, 1, 0};
    cr_assert_eq(pl__replay_write(f, &r), PL_EINVAL);
    fclose(f);
    cr_assert_eq(len, 0);
    free(buf);
}

LEAK_TEST(roundtrip, set_copies_and_free_releases)
{
    pl__replay r;
    pl__replay_init(&r);
    cr_assert_eq(pl__replay_set(&r.scenario, "a"), 0);
    cr_assert_eq(pl__replay_set(&r.scenario, "bb"), 0);
    cr_assert_str_eq(r.scenario, "bb");
    cr_assert_eq(pl__replay_set(&r.finding, NULL), 0);
    cr_assert_null(r.finding);
    pl__replay_free(&r);
    cr_assert_null(r.scenario);
}

/* Accepted variations ------------------------------------------------------------ */

LEAK_TEST(parse, comments_blank_lines_crlf_and_unknown_keys)
{
    const char *text = "pollen-replay 1\r\n"
                       "# a regression test for the outbox relay\r\n"
                       "\r\n"
                       "seed 5\r\n"
                       "future-key something new\r\n"
                       "decisions 3\r\n"
                       "d s3:2\r\n"
                       "# between d lines\r\n"
                       "d  w2:1   t4:0  \r\n"
                       "another_one\r\n"
                       "end\r\n"
                       "\r\n"
                       "# trailing comment\r\n";
    pl__replay r;
    char err[256];
    cr_assert_eq(parse(text, &r, err, sizeof(err)), 0, "%s", err);
    cr_assert_eq(r.seed, 5);
    cr_assert_eq(r.decisions_len, 3);
    cr_assert_eq(r.decisions[1].kind, PL_DECIDE_SPURIOUS_WAKE);
    cr_assert_str_eq(r.notes, "line 5: ignored unknown key 'future-key'\n"
                              "line 10: ignored unknown key 'another_one'\n");
    pl__replay_free(&r);
}

LEAK_TEST(parse, end_without_newline_and_empty_text_values)
{
    const char *text = "pollen-replay 1\nseed 0\nscenario\nmessage \ndecisions 0\nend";
    pl__replay r;
    char err[256];
    cr_assert_eq(parse(text, &r, err, sizeof(err)), 0, "%s", err);
    cr_assert_str_eq(r.scenario, "");
    cr_assert_str_eq(r.message, "");
    cr_assert_eq(r.decisions_len, 0);
    pl__replay_free(&r);
}

/* Errors ----------------------------------------------------------------------- */

static void expect_error(const char *text, int code, uint64_t line, const char *message)
{
    pl__replay r;
    char err[256] = "";
    int rc = pl__replay_parse_buffer(text, strlen(text), &r, err, sizeof(err));
    cr_assert_eq(rc, code, "rc %d for:\n%s\nerr: %s", rc, text, err);
    cr_assert_eq(r.error_line, line, "line %llu for:\n%s\nerr: %s",
                 (unsigned long long)r.error_line, text, err);
    cr_assert_str_eq(err, message);
    cr_assert_null(r.decisions);
    cr_assert_null(r.scenario);
    pl__replay_free(&r);
}

#define HEAD "pollen-replay 1\nseed 1\n"

LEAK_TEST(errors, foreign_files)
{
    expect_error("", PL_EFORMAT, 1,
                 "line 1: not a pollen replay file (expected 'pollen-replay 2')");
    expect_error("\x7f" "ELF\x02\x01\x01", PL_EFORMAT, 1,
                 "line 1: not a pollen replay file (expected 'pollen-replay 2')");
    expect_error("pollen-replay\nseed 1\n", PL_EFORMAT, 1,
                 "line 1: not a pollen replay file (expected 'pollen-replay 2')");
    expect_error("pollen-replay one\n", PL_EFORMAT, 1,
                 "line 1: bad format version 'one' (expected a positive integer)");
    expect_error("pollen-replay 0\n", PL_EFORMAT, 1,
                 "line 1: bad format version '0' (expected a positive integer)");
}

LEAK_TEST(errors, newer_version)
{
    expect_error("pollen-replay 3\nwhatever the future holds\n", PL_EVERSION, 1,
                 "line 1: format version 3 is newer than this pollen reads (2)");
    expect_error("pollen-replay 99999999999999999999\n", PL_EFORMAT, 1,
                 "line 1: bad format version '99999999999999999999' (expected a positive "
                 "integer)");
}

LEAK_TEST(errors, truncated_files)
{
    expect_error(HEAD "decisions 0\n", PL_EFORMAT, 4,
                 "line 4: unexpected end of file: expected 'end'");
    expect_error(HEAD "decisions 4\nd s2:0 s2:1\n", PL_EFORMAT, 5,
                 "line 5: unexpected end of file: expected 2 more decisions ('d' lines)");
    expect_error(HEAD "decisions 4\nd s2:0 s2:1\nend\n", PL_EFORMAT, 5,
                 "line 5: expected 2 more decisions ('d' lines) before 'end'");
    expect_error(HEAD "checkpoints 256 2\nc 0000000000000001\nsteps 3\n", PL_EFORMAT, 5,
                 "line 5: expected 1 more checkpoints ('c' lines) before 'steps 3'");
    expect_error(HEAD "decisions 0\nen", PL_EFORMAT, 5,
                 "line 5: unexpected end of file: expected 'end'");
}

/* The parser's message for a token it cannot read, as `where` (the line
 * and token) followed by every letter of the kind table, in kind order. */
static const char *bad_token(char *buf, size_t len, const char *where)
{
    char letters[PL_DECIDE__COUNT + 1];
    size_t n = 0;
    for (uint32_t k = 0; k < PL_DECIDE__COUNT; k++) {
        if (pl__dec_kind_letter(k) != 0) {
            letters[n++] = pl__dec_kind_letter(k);
        }
    }
    letters[n] = '\0';
    snprintf(buf, len, "%s (expected <kind letter><n>:<value>[*<repeat>], letters %s)", where,
             letters);
    return buf;
}

LEAK_TEST(errors, bad_letter_lists_every_kind_letter)
{
    const char *text = HEAD "decisions 1\nd z2:0\nend\n";
    pl__replay r;
    char err[256] = "";
    cr_assert_eq(pl__replay_parse_buffer(text, strlen(text), &r, err, sizeof(err)), PL_EFORMAT);
    const char *list = strstr(err, "letters ");
    cr_assert_not_null(list, "%s", err);
    list += strlen("letters ");
    const char *close = strchr(list, ')');
    cr_assert_not_null(close, "%s", err);
    size_t listed = (size_t)(close - list);
    size_t kinds = 0;
    for (uint32_t k = 0; k < PL_DECIDE__COUNT; k++) {
        char c = pl__dec_kind_letter(k);
        if (c != 0) {
            cr_assert_not_null(memchr(list, c, listed), "letter %c (%s) is not listed: %s", c,
                               pl__dec_kind_name(k), err);
            kinds++;
        }
    }
    cr_assert_eq(listed, kinds, "more than the table's letters: %s", err);
    pl__replay_free(&r);
}

LEAK_TEST(errors, corrupt_lines)
{
    char msg[256];
    expect_error(HEAD "decisions 2\nd s2:0 z2:1\nend\n", PL_EFORMAT, 4,
                 bad_token(msg, sizeof(msg), "line 4: bad decision 'z2:1'"));
    expect_error(HEAD "decisions 1\nd s3:3\nend\n", PL_EFORMAT, 4,
                 "line 4: bad decision 's3:3' (expected n >= 2, value < n, repeat >= 1)");
    expect_error(HEAD "decisions 1\nd s1:0\nend\n", PL_EFORMAT, 4,
                 "line 4: bad decision 's1:0' (expected n >= 2, value < n, repeat >= 1)");
    expect_error(HEAD "decisions 1\nd s2:0*0\nend\n", PL_EFORMAT, 4,
                 "line 4: bad decision 's2:0*0' (expected n >= 2, value < n, repeat >= 1)");
    expect_error(HEAD "decisions 1\nd s4294967296:0\nend\n", PL_EFORMAT, 4,
                 bad_token(msg, sizeof(msg), "line 4: bad decision 's4294967296:0'"));
    expect_error(HEAD "decisions 2\nd s2:0*3\nend\n", PL_EFORMAT, 4,
                 "line 4: more decisions than the 2 declared on line 3");
    expect_error(HEAD "d s2:0\n", PL_EFORMAT, 3, "line 3: 'd' line outside a decisions block");
    expect_error(HEAD "decisions 0\nc 0000000000000000\n", PL_EFORMAT, 4,
                 "line 4: 'c' line outside a checkpoints block");
    expect_error(HEAD "decisions 18446744073709551615\n", PL_EFORMAT, 3,
                 "line 3: 18446744073709551615 decisions is more than the 67108864 "
                 "supported");
    expect_error(HEAD "hash 0123\n", PL_EFORMAT, 3,
                 "line 3: expected 'hash <16 hex digits>', got '0123'");
    expect_error(HEAD "steps -1\n", PL_EFORMAT, 3,
                 "line 3: expected 'steps <decimal uint64>', got '-1'");
    expect_error(HEAD "truncated 2\n", PL_EFORMAT, 3,
                 "line 3: expected 'truncated 0' or 'truncated 1', got '2'");
    expect_error(HEAD "checkpoints 0 1\n", PL_EFORMAT, 3,
                 "line 3: expected 'checkpoints <events per checkpoint > 0> <count>', got "
                 "'0 1'");
    expect_error(HEAD "checkpoints 256 1\nc 00000000000000zz\n", PL_EFORMAT, 4,
                 "line 4: bad checkpoint '00000000000000zz' (expected 16 hex digits)");
    expect_error(HEAD "knobs schedule=1,nope=2\n", PL_EFORMAT, 3,
                 "line 3: knobs: unknown kind 'nope' at offset 11");
    expect_error(HEAD "message a\\qb\n", PL_EFORMAT, 3,
                 "line 3: bad escape in 'message' at column 10 (expected \\\\, \\n, \\r, \\t "
                 "or \\xHH other than \\x00)");
    expect_error(HEAD "message a\\x00\n", PL_EFORMAT, 3,
                 "line 3: bad escape in 'message' at column 10 (expected \\\\, \\n, \\r, \\t "
                 "or \\xHH other than \\x00)");
    expect_error(HEAD "Seed 1\n", PL_EFORMAT, 3,
                 "line 3: expected 'key value' or 'end', got 'Seed 1'");
    expect_error(HEAD " seed 1\n", PL_EFORMAT, 3,
                 "line 3: expected 'key value' or 'end', got ' seed 1'");
    expect_error(HEAD "decisions 0\nend now\n", PL_EFORMAT, 4,
                 "line 4: expected 'end' alone on its line");
}

LEAK_TEST(errors, duplicates_missing_keys_and_trailers)
{
    expect_error(HEAD "scenario a\nscenario b\n", PL_EFORMAT, 4,
                 "line 4: duplicate key 'scenario' (first on line 3)");
    expect_error(HEAD "decisions 0\nseed 2\n", PL_EFORMAT, 4,
                 "line 4: duplicate key 'seed' (first on line 2)");
    expect_error("pollen-replay 1\ndecisions 0\nend\n", PL_EFORMAT, 3,
                 "line 3: missing required key 'seed' before 'end'");
    expect_error(HEAD "end\n", PL_EFORMAT, 3,
                 "line 3: missing required key 'decisions' before 'end'");
    expect_error(HEAD "decisions 0\nend\nseed 3\n", PL_EFORMAT, 5,
                 "line 5: unexpected content after 'end' (line 4)");
}

LEAK_TEST(errors, nul_bytes)
{
    static const char text[] = "pollen-replay 1\nseed 1\nscen\0rio x\ndecisions 0\nend\n";
    pl__replay r;
    char err[128];
    cr_assert_eq(pl__replay_parse_buffer(text, sizeof(text) - 1, &r, err, sizeof(err)),
                 PL_EFORMAT);
    cr_assert_str_eq(err, "line 3: NUL byte in a text file");
    cr_assert_eq(r.error_line, 3);
    pl__replay_free(&r);
}

LEAK_TEST(errors, tiny_error_buffers_are_respected)
{
    pl__replay r;
    char err[8];
    memset(err, 'x', sizeof(err));
    cr_assert_eq(parse("garbage", &r, err, 5), PL_EFORMAT);
    cr_assert_str_eq(err, "line");
    cr_assert_eq(err[5], 'x');
    cr_assert_eq(parse("garbage", &r, NULL, 0), PL_EFORMAT);
    cr_assert_eq(pl__replay_parse_buffer(NULL, 0, &r, err, sizeof(err)), PL_EFORMAT);
}

/* Robustness -------------------------------------------------------------------- */

/* Parses and, on success, checks the invariants the rest of the code
 * relies on. Under ASan, any out-of-bounds access fails the test. */
static int parse_checked(const char *data, size_t len)
{
    pl__replay r;
    char err[256];
    int rc = pl__replay_parse_buffer(data, len, &r, err, sizeof(err));
    if (rc == 0) {
        cr_assert_leq(r.decisions_len, PL__REPLAY_DECISIONS_MAX);
        for (size_t i = 0; i < r.decisions_len; i++) {
            cr_assert_lt(r.decisions[i].kind, PL_DECIDE__COUNT);
            cr_assert_geq(r.decisions[i].n, 2);
            cr_assert_lt(r.decisions[i].value, r.decisions[i].n);
        }
        cr_assert(r.checkpoints_len == 0 || r.checkpoint_events > 0);
    } else {
        cr_assert(rc == PL_EFORMAT || rc == PL_EVERSION, "rc %d", rc);
        cr_assert(strncmp(err, "line ", 5) == 0, "%s", err);
        cr_assert_gt(r.error_line, 0);
    }
    pl__replay_free(&r);
    return rc;
}

LEAK_TEST(robustness, random_bytes_never_crash)
{
    static const char alphabet[] = "pollen-replay 1\nseedcdbB:*0123456789abcdef \\x#\r\t\0";
    pl__prng p;
    pl__prng_seed(&p, 31337);
    char buf[512];
    for (int i = 0; i < 3000; i++) {
        size_t len = pl__prng_below(&p, sizeof(buf));
        bool from_alphabet = i % 2 == 0;
        for (size_t k = 0; k < len; k++) {
            buf[k] = from_alphabet ? alphabet[pl__prng_below(&p, sizeof(alphabet))]
                                   : (char)pl__prng_below(&p, 256);
        }
        /* Half of them get a valid first line, to reach the body parser. */
        if (i % 4 < 2 && len > 16) {
            memcpy(buf, "pollen-replay 1\n", 16);
        }
        parse_checked(buf, len);
    }
}

/* One random edit of text[0, *len) in place (capacity cap). */
static void mutate(pl__prng *p, char *text, size_t *len, size_t cap)
{
    static const char *const inserts[] = {"\n", " ", "*", ":", "d ", "c ", "end\n", "\\",
                                          "decisions 5\n", "#", "99999999999", "\r", "s2:1"};
    size_t at = *len > 0 ? pl__prng_below(p, (uint32_t)*len) : 0;
    switch (pl__prng_below(p, 5)) {
    case 0: /* flip a byte */
        if (*len > 0) {
            text[at] = (char)pl__prng_below(p, 256);
        }
        break;
    case 1: { /* delete a range */
        size_t n = pl__prng_below(p, 40);
        n = at + n > *len ? *len - at : n;
        memmove(text + at, text + at + n, *len - at - n);
        *len -= n;
        break;
    }
    case 2: /* truncate */
        *len = at;
        break;
    case 3: { /* insert a token */
        const char *s = inserts[pl__prng_below(p, sizeof(inserts) / sizeof(inserts[0]))];
        size_t n = strlen(s);
        if (*len + n <= cap) {
            memmove(text + at + n, text + at, *len - at);
            memcpy(text + at, s, n);
            *len += n;
        }
        break;
    }
    default: { /* duplicate a range */
        size_t n = pl__prng_below(p, 60);
        n = at + n > *len ? *len - at : n;
        if (*len + n <= cap) {
            memmove(text + at + n, text + at, *len - at);
            *len += n;
        }
        break;
    }
    }
}

LEAK_TEST(robustness, mutated_valid_files_never_crash)
{
    pl__replay r;
    pl__dec d;
    uint64_t cps[3];
    sample(&r, &d, cps);
    char *valid = to_text(&r);
    size_t valid_len = strlen(valid);
    size_t cap = valid_len + 4096;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    pl__prng p;
    pl__prng_seed(&p, 4242);
    int ok = 0;
    for (int i = 0; i < 3000; i++) {
        memcpy(buf, valid, valid_len);
        size_t len = valid_len;
        int edits = 1 + (int)pl__prng_below(&p, 4);
        for (int e = 0; e < edits; e++) {
            mutate(&p, buf, &len, cap);
        }
        /* Parse an exact-size heap copy so ASan sees reads past the end. */
        char *exact = malloc(len > 0 ? len : 1);
        cr_assert_not_null(exact);
        memcpy(exact, buf, len);
        ok += parse_checked(exact, len) == 0;
        free(exact);
    }
    /* Some mutations (comments, a flipped hash digit) stay valid. */
    cr_assert_gt(ok, 0);
    free(buf);
    free(valid);
    pl__dec_finish(&d);
}

/* Limits ----------------------------------------------------------------------- */

/* The largest single allocation since largest_reset(), seen through the
 * sanitizer's allocator hooks; SIZE_MAX (unknown) in other builds, where
 * only the outcome is checked. */
static volatile size_t largest;

#ifdef PL_TEST_LSAN
static void on_malloc(const volatile void *p, size_t size)
{
    (void)p;
    if (size > largest) {
        largest = size;
    }
}

static void on_free(const volatile void *p) { (void)p; }
#endif

static void largest_reset(void)
{
#ifdef PL_TEST_LSAN
    static bool installed;
    if (!installed) {
        cr_assert_eq(__sanitizer_install_malloc_and_free_hooks(on_malloc, on_free), 1);
        installed = true;
    }
    largest = 0;
#else
    largest = SIZE_MAX;
#endif
}

/* Parses text expecting failure `code` with `message` in err, and no
 * allocation above 1 MiB on the way. */
static void expect_cheap_error(const char *text, int code, const char *message)
{
    pl__replay r;
    char err[256] = "";
    largest_reset();
    int rc = pl__replay_parse_buffer(text, strlen(text), &r, err, sizeof(err));
    size_t peak = largest;
    cr_assert_eq(rc, code, "rc %d for:\n%s\nerr: %s", rc, text, err);
    cr_assert_str_eq(err, message);
    cr_assert(peak == SIZE_MAX || peak <= ((size_t)1 << 20), "%zu bytes allocated for:\n%s", peak,
              text);
    pl__replay_free(&r);
}

LEAK_TEST(limits, expansion_bombs_are_refused_before_allocating)
{
    expect_cheap_error(HEAD "decisions 67108865\nd s2:0*67108865\nend\n", PL_EFORMAT,
                       "line 3: 67108865 decisions is more than the 67108864 supported");
    expect_cheap_error(HEAD "decisions 3\nd s2:0*4294967296\nend\n", PL_EFORMAT,
                       "line 4: more decisions than the 3 declared on line 3");
    /* Valid up to the missing 'end': 600 MB of decisions were allocated
     * before the parser found out. */
    expect_cheap_error(HEAD "decisions 50000000\nd s2:0*50000000\n", PL_EFORMAT,
                       "line 5: unexpected end of file: expected 'end'");
    expect_cheap_error(HEAD "decisions 50000000\nd s2:0*50000000\nend\nmore\n", PL_EFORMAT,
                       "line 6: unexpected content after 'end' (line 5)");
    char msg[256];
    expect_cheap_error(HEAD "decisions 50000000\nd s2:0*49999999 s2:1\nd x\nend\n", PL_EFORMAT,
                       bad_token(msg, sizeof(msg), "line 5: bad decision 'x'"));
}

LEAK_TEST(limits, run_length_decisions_are_allocated_once_at_their_count)
{
    const char *text = HEAD "decisions 3000000\nd s2:0*2999999\n# note\nd t3:2\nend\n";
    pl__replay r;
    char err[256] = "";
    largest_reset();
    cr_assert_eq(parse(text, &r, err, sizeof(err)), 0, "%s", err);
    size_t peak = largest;
    cr_assert_eq(r.decisions_len, 3000000);
    cr_assert_eq(r.decisions[2999998].value, 0);
    cr_assert_eq(r.decisions[2999999].kind, PL_DECIDE_TIMER_ORDER);
    cr_assert_eq(r.decisions[2999999].value, 2);
    cr_assert(peak == SIZE_MAX || peak == 3000000 * sizeof(pl__dec_record), "%zu", peak);
    pl__replay_free(&r);
}

LEAK_TEST(limits, lines_are_bounded)
{
    /* Line 3 is one byte too long. */
    size_t head = strlen(HEAD);
    size_t n = head + PL__REPLAY_LINE_MAX + 1;
    char *text = malloc(n + 64);
    cr_assert_not_null(text);
    int w = snprintf(text, 64, HEAD "message ");
    memset(text + w, 'x', n - (size_t)w);
    snprintf(text + n, 64, "\ndecisions 0\nend\n");
    expect_cheap_error(text, PL_EFORMAT,
                       "line 3: line of 65537 bytes is longer than the 65536 supported");
    /* A shorter line holding a text value too long to be written back
     * (escaped, each raw tab takes two bytes). */
    text[n - 1] = '\n';
    expect_cheap_error(text, PL_EFORMAT,
                       "line 3: 'message' is 65528 bytes, more than the "
                       "16000 supported");
    memset(text + w, '\t', PL__REPLAY_TEXT_MAX);
    text[w + PL__REPLAY_TEXT_MAX] = '\n';
    pl__replay ok;
    char ok_err[256] = "";
    cr_assert_eq(parse(text, &ok, ok_err, sizeof(ok_err)), 0, "%s", ok_err);
    char *again = to_text(&ok); /* 32000 bytes escaped: still one line */
    pl__replay back;
    cr_assert_eq(parse(again, &back, ok_err, sizeof(ok_err)), 0, "%s", ok_err);
    cr_assert_str_eq(back.message, ok.message);
    pl__replay_free(&back);
    free(again);
    pl__replay_free(&ok);
    /* The writer refuses a value one byte longer. */
    char *big = malloc(PL__REPLAY_TEXT_MAX + 2);
    cr_assert_not_null(big);
    memset(big, 'x', PL__REPLAY_TEXT_MAX + 1);
    big[PL__REPLAY_TEXT_MAX + 1] = '\0';
    pl__replay_init(&ok); /* borrowed pointers: never freed */
    ok.message = big;
    FILE *f = fopen("/dev/null", "w");
    cr_assert_not_null(f);
    cr_assert_eq(pl__replay_write(f, &ok), PL_EINVAL);
    fclose(f);
    free(big);
    free(text);
    /* Millions of empty lines: counted, then refused. */
    size_t lines = (size_t)PL__REPLAY_LINES_MAX + 1;
    text = malloc(lines + 64);
    cr_assert_not_null(text);
    w = snprintf(text, 64, HEAD);
    memset(text + w, '\n', lines);
    snprintf(text + w + lines, 64, "decisions 0\nend\n");
    pl__replay r;
    char err[256] = "";
    cr_assert_eq(parse(text, &r, err, sizeof(err)), PL_EFORMAT);
    cr_assert_str_eq(err, "line 16777217: more than 16777216 lines");
    free(text);
}

LEAK_TEST(errors, truncated_records_are_refused)
{
    expect_error(HEAD "truncated 1\ndecisions 2\nd s2:1 s2:0\nend\n", PL_EFORMAT, 3,
                 "line 3: this run's decisions were truncated at 2: it cannot be replayed (the "
                 "file holds only its first decisions; run its seed again instead)");
    /* No decision at all: the seed-only form, replayed from the seed. */
    pl__replay r;
    char err[256] = "";
    cr_assert_eq(parse(HEAD "truncated 1\ndecisions 0\nend\n", &r, err, sizeof(err)), 0, "%s", err);
    cr_assert(r.truncated);
    pl__replay_free(&r);
}

static void expect_read_refused(const char *path, const char *why)
{
    char *data = NULL;
    size_t len = 0;
    char err[512] = "";
    alarm(20); /* a read that blocks fails the test instead of hanging it */
    int rc = pl__replay_read_path(path, &data, &len, err, sizeof(err));
    alarm(0);
    cr_assert_eq(rc, PL_EFORMAT, "rc %d: %s", rc, err);
    cr_assert_null(data);
    char want[512];
    snprintf(want, sizeof(want), "cannot read '%s': %s", path, why);
    cr_assert_str_eq(err, want);
    pl__replay r;
    cr_assert_eq(pl__replay_parse_file(path, &r, err, sizeof(err)), PL_EFORMAT);
    cr_assert_str_eq(err, want);
}

LEAK_TEST(limits, a_fifo_is_refused_without_blocking)
{
    char path[128];
    snprintf(path, sizeof(path), "/tmp/pollen-test-fifo-%ld", (long)getpid());
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    expect_read_refused(path, "it is a named pipe (FIFO): only regular files are read");
    unlink(path);
}

LEAK_TEST(limits, devices_and_directories_are_refused)
{
    /* /dev/zero never ends: it used to be read up to the size cap. */
    expect_read_refused("/dev/zero", "it is a device: only regular files are read");
    expect_read_refused("/tmp", "it is a directory, not a file");
}

LEAK_TEST(limits, a_file_too_large_is_refused_by_its_size)
{
    char path[128];
    snprintf(path, sizeof(path), "/tmp/pollen-test-large-%ld", (long)getpid());
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, (off_t)PL__REPLAY_FILE_MAX), 0); /* sparse: no disk used */
    close(fd);
    largest_reset();
    expect_read_refused(path, "it is 1073741824 bytes, and files must be smaller than "
                              "1073741824");
    size_t peak = largest;
    cr_assert(peak == SIZE_MAX || peak <= ((size_t)1 << 20), "%zu bytes allocated", peak);
    unlink(path);
}
