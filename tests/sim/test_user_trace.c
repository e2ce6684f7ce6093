/* tests/sim/test_user_trace.c: user trace events (PL_TRACE_EVENT) in the
 * timeline and the Chrome trace, log-only; the Chrome trace's time map
 * (polls with a duration, never overlapping); the crash ring; and the
 * seed pl_sim_campaign reports when a seed kills its process.
 *
 * The scenarios are scenarios/selftest_trace.c's, linked in; one more
 * below says something too long for one event.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "campaign.h"
#include "child.h"
#include "isolate/guard.h"
#include "isolate/mirror.h"
#include "isolate/ring_read.h"
#include "leakcheck.h"
#include "run_record.h"
#include "sim_internal.h"
#include "trace.h"
#include "trace_ring.h"

static const pl_scenario *scenario(const char *name)
{
    const pl_scenario *sc = pl_scenario_find(name);
    cr_assert_not_null(sc, "%s is not linked in", name);
    return sc;
}

static void run(const char *name, uint64_t seed, bool keep_events, pl_sim_result *r)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = seed;
    o.keep_events = keep_events;
    cr_assert_eq(pl_sim_run(scenario(name), &o, r), 0);
}

typedef int (*writer_fn)(FILE *, const pl__trace_rec *, size_t, const pl__trace_namer *);

/* The run's events written by fn, named as `pollen` names them. */
static char *render(writer_fn fn, const pl_sim_result *r)
{
    size_t n = 0;
    const pl__trace_rec *ev = pl__result_events(r, &n);
    const pl__run_record *rec = pl__sim_result_record(r);
    pl__trace_store_namer sn = {pl__result_task_name, (void *)rec, rec->texts, rec->texts_len,
                                pl__run_spawn_site};
    pl__trace_namer nm = {pl__trace_store_task, pl__trace_store_text, &sn,
                          pl__trace_store_spawn_site};
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    cr_assert_eq(fn(f, ev, n, &nm), 0);
    fclose(f);
    return buf;
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p != NULL; p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

/* ---- User events --------------------------------------------------------- */

LEAK_TEST(user, events_show_in_the_timeline_on_their_task)
{
    pl_sim_result r;
    run("selftest_traced", 3, true, &r);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    char *text = render(pl__trace_write_text_ex, &r);
    cr_assert(strstr(text, " event        alice#1      alice: round 1 of 4\n") != NULL, "%s",
              text);
    cr_assert(strstr(text, " event        bob#2        bob: round 4 of 4\n") != NULL, "%s", text);
    cr_assert_eq(count_of(text, " event "), 8, "%s", text);
    free(text);
    pl_sim_result_free(&r);
}

/* The text of the line of `text` that holds `needle`, in buf. */
static const char *line_of(const char *text, const char *needle, char *buf, size_t len)
{
    const char *p = strstr(text, needle);
    cr_assert_not_null(p, "no '%s' in:\n%s", needle, text);
    snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
    return buf;
}

LEAK_TEST(user, spawns_show_their_site_in_the_timeline)
{
    pl_sim_result r;
    run("selftest_traced", 3, true, &r);
    char *text = render(pl__trace_write_text_ex, &r);
    char line[256];
    line_of(text, " spawn        bob#2        parent=- at ", line, sizeof line);
    cr_assert(strstr(line, " at selftest_trace.c:") != NULL, "%s", line);
    cr_assert(strstr(line, " in spawn_pair") != NULL, "%s", line);
    free(text);
    char *json = render(pl__trace_write_chrome_ex, &r);
    line_of(json, "{\"name\":\"spawn\",\"ph\":\"i\",\"ts\":0.001,\"pid\":1,\"tid\":2,", line,
            sizeof line);
    cr_assert(strstr(line, ",\"site\":\"selftest_trace.c:") != NULL, "%s", line);
    cr_assert(strstr(line, ",\"function\":\"spawn_pair\",") != NULL, "%s", line);
    free(json);
    pl_sim_result_free(&r);
}

LEAK_TEST(user, events_are_chrome_instants_on_their_task)
{
    pl_sim_result r;
    run("selftest_traced", 3, true, &r);
    char *json = render(pl__trace_write_chrome_ex, &r);
    const char *p = strstr(json, "{\"name\":\"bob: round 2 of 4\",\"ph\":\"i\",");
    cr_assert_not_null(p, "%s", json);
    char obj[512];
    snprintf(obj, sizeof obj, "%.*s", (int)(strstr(p, "}}") - p), p);
    cr_assert(strstr(obj, ",\"tid\":2,\"s\":\"t\",\"cat\":\"user\",\"args\":{\"text\":\"bob: "
                          "round 2 of 4\",\"step\":") != NULL,
              "%s", obj);
    cr_assert_eq(count_of(json, "\"cat\":\"user\""), 8, "%s", json);
    free(json);
    pl_sim_result_free(&r);
}

LEAK_TEST(user, events_never_change_the_hash)
{
    for (uint64_t seed = 0; seed < 40; seed++) {
        pl_sim_result a, b, c;
        run("selftest_traced", seed, true, &a);
        run("selftest_traced", seed, false, &b);
        run("selftest_untraced", seed, false, &c);
        cr_assert_eq(a.hash, c.hash, "seed %" PRIu64, seed);
        cr_assert_eq(b.hash, c.hash, "seed %" PRIu64, seed);
        cr_assert_eq(a.events, c.events, "seed %" PRIu64, seed);
        cr_assert_eq(a.steps, c.steps, "seed %" PRIu64, seed);
        pl_sim_result_free(&a);
        pl_sim_result_free(&b);
        pl_sim_result_free(&c);
    }
}

/* ---- Truncation ------------------------------------------------------------ */

typedef struct talker {
    pl_future base;
} talker;

static pl_poll_result talker_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    char word[300];
    memset(word, 'x', sizeof word - 1);
    word[sizeof word - 1] = '\0';
    PL_TRACE_EVENT(cx, "two\nlines");
    PL_TRACE_EVENT(cx, "long %s", word);
    return PL_READY;
}

static const pl_future_vtable talker_vtable = {"talker", talker_poll, NULL};

static int talker_setup(pl_executor *ex, void *state)
{
    (void)state;
    talker t = {PL_FUTURE_INIT(&talker_vtable)};
    return PL_SPAWN(ex, t, "talker", NULL);
}

PL_SCENARIO(test_talker_scenario, .name = "test_user_trace_talker",
            .summary = "test: trace events too long for one line", .setup = talker_setup);

LEAK_TEST(user, long_text_is_cut_and_newlines_become_spaces)
{
    pl_sim_result r;
    run("test_user_trace_talker", 0, true, &r);
    char *text = render(pl__trace_write_text_ex, &r);
    cr_assert(strstr(text, " talker#1     two lines\n") != NULL, "%s", text);
    /* PL_TRACE_EVENT_MAX - 1 bytes kept, the last three "...". */
    char want[PL_TRACE_EVENT_MAX + 8];
    int n = snprintf(want, sizeof want, " long ");
    memset(want + n, 'x', PL_TRACE_EVENT_MAX - 1 - 5 - 3);
    snprintf(want + PL_TRACE_EVENT_MAX - 1 - 5 - 3 + n, 8, "...\n");
    cr_assert(strstr(text, want) != NULL, "want %s in %s", want, text);
    free(text);
    pl_sim_result_free(&r);
}

/* ---- Notes from plain functions -------------------------------------------- */

/* A codec's helper that has no context: its note goes on the polled task. */
static int decode_frame(int n)
{
    pl_trace_note("decoded frame %d", n);
    return n + 1;
}

typedef struct decoder {
    pl_future base;
    int frames;
} decoder;

static pl_poll_result decoder_poll(pl_future *f, pl_context *cx)
{
    decoder *self = (decoder *)f;
    PL_ASYNC_BEGIN(self);
    while (self->frames < 2) {
        self->frames = decode_frame(self->frames);
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable decoder_vtable = {"decoder", decoder_poll, NULL};

static int decoder_setup(pl_executor *ex, void *state)
{
    (void)state;
    pl_trace_note("in setup: no task is polled"); /* nothing */
    decoder d = {PL_FUTURE_INIT(&decoder_vtable), 0};
    return PL_SPAWN(ex, d, "decoder", NULL);
}

PL_SCENARIO(test_decoder_scenario, .name = "test_user_trace_decoder",
            .summary = "test: trace notes from a function without the context",
            .setup = decoder_setup);

LEAK_TEST(user, notes_from_plain_functions_go_on_the_polled_task)
{
    pl_trace_note("outside any run"); /* nothing, and no crash */
    pl_sim_result r;
    run("test_user_trace_decoder", 0, true, &r);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    char *text = render(pl__trace_write_text_ex, &r);
    cr_assert(strstr(text, " event        decoder#1    decoded frame 0\n") != NULL, "%s", text);
    cr_assert(strstr(text, " event        decoder#1    decoded frame 1\n") != NULL, "%s", text);
    cr_assert_eq(count_of(text, " event "), 2, "%s", text);
    free(text);
    pl_sim_result_free(&r);
}

/* ---- The Chrome trace's time ----------------------------------------------- */

typedef struct slice {
    uint32_t tid;
    double ts, dur;
} slice;

/* The complete events ("ph":"X") of a Chrome trace. */
static size_t slices_of(const char *json, slice *out, size_t max)
{
    size_t n = 0;
    for (const char *p = strstr(json, "\"ph\":\"X\""); p != NULL && n < max;
         p = strstr(p + 1, "\"ph\":\"X\"")) {
        slice s;
        cr_assert_eq(sscanf(p, "\"ph\":\"X\",\"ts\":%lf,\"pid\":1,\"tid\":%" SCNu32 ",\"dur\":%lf",
                            &s.ts, &s.tid, &s.dur),
                     3, "%.80s", p);
        out[n++] = s;
    }
    return n;
}

LEAK_TEST(chrome, polls_have_a_duration_and_never_overlap_on_a_track)
{
    for (uint64_t seed = 0; seed < 20; seed++) {
        pl_sim_result r;
        run("selftest_traced", seed, true, &r);
        char *json = render(pl__trace_write_chrome_ex, &r);
        static slice s[256];
        size_t n = slices_of(json, s, 256);
        /* Every poll of both tasks is a slice: 5 each (4 rounds, then READY). */
        cr_assert_eq(n, 10, "%s", json);
        for (size_t i = 0; i < n; i++) {
            cr_assert_gt(s[i].dur, 0.0, "seed %" PRIu64 ": %s", seed, json);
            for (size_t j = 0; j < i; j++) {
                bool apart = s[j].ts + s[j].dur <= s[i].ts || s[i].ts + s[i].dur <= s[j].ts;
                cr_assert(s[i].tid != s[j].tid || apart, "seed %" PRIu64 ": %s", seed, json);
                /* One executor thread: no two polls at once, on any track. */
                cr_assert(apart, "seed %" PRIu64 ": %s", seed, json);
            }
        }
        free(json);
        pl_sim_result_free(&r);
    }
}

/* ---- The crash ring ---------------------------------------------------------- */

LEAK_TEST(ring, holds_the_events_of_the_log_and_their_names)
{
    pl__trace_ring *ring = pl__ring_map();
    cr_assert_not_null(ring);
    pl__sim_ring_to(ring);
    pl_sim_result r;
    run("selftest_traced", 5, true, &r);
    pl__sim_ring_to(NULL);
    size_t n = 0, nr = 0;
    uint64_t lost = 1;
    const pl__trace_rec *ev = pl__result_events(&r, &n);
    pl__trace_rec *rev = pl__ring_events(ring, &nr, &lost);
    cr_assert_eq(lost, 0);
    cr_assert_eq(nr, n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(rev[i].kind, ev[i].kind, "event %zu", i);
        cr_assert_eq(rev[i].task, ev[i].task, "event %zu", i);
        cr_assert_eq(rev[i].step, ev[i].step, "event %zu", i);
        if (ev[i].kind != PL__EV_USER) {
            cr_assert_eq(rev[i].a, ev[i].a, "event %zu", i);
        }
    }
    free(rev);
    /* The ring's text is the run's text, names and user texts alike. */
    char *text = render(pl__trace_write_text_ex, &r);
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    cr_assert_eq(pl__ring_write_text(f, ring, 0, ""), 0);
    fclose(f);
    cr_assert_str_eq(mem, text);
    /* A run that ended normally died in no poll. */
    pl_finding fd;
    memset(&fd, 0, sizeof fd);
    cr_assert(pl__ring_position(ring, &fd));
    cr_assert_eq(fd.task_id, 0);
    free(mem);
    free(text);
    pl_sim_result_free(&r);
    pl__ring_unmap(ring);
}

/* ---- pl_sim_campaign and a crashing seed ------------------------------------- */

typedef struct seed_range {
    uint64_t lo, hi;
} seed_range;

/* pl_sim_campaign over the range: 0 when it ran every seed in-process. */
static int campaign_body(void *arg)
{
    const seed_range *r = arg;
    pl_campaign_result cr;
    int rc = pl_sim_campaign(
        scenario("selftest_deref"),
        &(pl_campaign_options){.seed_lo = r->lo, .seed_hi = r->hi, .stop_at_first = true}, &cr);
    return rc == 0 && cr.runs == r->hi - r->lo + 1 && !cr.isolated ? 0 : 1;
}

/* pl_sim_campaign over lo..hi in a child, its stderr collected. */
static child_ran campaign_in_child(uint64_t lo, uint64_t hi)
{
    seed_range r = {lo, hi};
    return child_run(campaign_body, &r, -1);
}

Test(campaign, a_crashing_seed_is_named_before_the_process_dies)
{
    child_ran d = campaign_in_child(0, 99);
    /* Killed by SIGSEGV, or ended by a sanitizer's report of it. */
    cr_assert_neq(d.status, 0, "%s", d.err);
    const char *p = strstr(d.err, "pollen: pl_sim_campaign: the process died running scenario "
                                  "'selftest_deref', seed ");
    cr_assert_not_null(p, "%s", d.err);
    uint64_t seed = strtoull(strstr(p, ", seed ") + 7, NULL, 10);
    cr_assert(strstr(d.err, "run selftest_deref --seed ") != NULL, "%s", d.err);
    /* That is the seed: the ones before it are clean, it alone crashes. */
    if (seed > 0) {
        child_ran before = campaign_in_child(0, seed - 1);
        cr_assert_eq(before.status, 0, "%s", before.err);
        cr_assert(strstr(before.err, "pl_sim_campaign") == NULL, "%s", before.err);
        child_ran_free(&before);
    }
    child_ran alone = campaign_in_child(seed, seed);
    cr_assert_neq(alone.status, 0, "%s", alone.err);
    char want[64];
    snprintf(want, sizeof want, ", seed %" PRIu64 " ", seed);
    cr_assert(strstr(alone.err, want) != NULL, "%s", alone.err);
    child_ran_free(&alone);
    child_ran_free(&d);
}

/* Two campaigns at once (each on its thread) share the guard: the
 * handlers stay until the last one ends, then what was there before is
 * back. */
Test(campaign, overlapping_guards_restore_the_handlers_at_the_last_end)
{
    struct sigaction before, mid, after;
    cr_assert_eq(sigaction(SIGSEGV, NULL, &before), 0);
    const pl_scenario *sc = scenario("selftest_deref");
    pl__campaign_guard_begin(sc);
    pl__campaign_guard_begin(sc);
    pl__campaign_guard_end();
    cr_assert_eq(sigaction(SIGSEGV, NULL, &mid), 0);
    cr_assert(mid.sa_handler != before.sa_handler, "one campaign still runs");
    pl__campaign_guard_end();
    cr_assert_eq(sigaction(SIGSEGV, NULL, &after), 0);
    cr_assert(after.sa_handler == before.sa_handler);
    pl__campaign_guard_end(); /* without a begin: nothing */
    cr_assert_eq(sigaction(SIGSEGV, NULL, &after), 0);
    cr_assert(after.sa_handler == before.sa_handler);
}
