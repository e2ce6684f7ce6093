/* tests/sim/test_cover.c: findings in the user's own terms and coverage
 * you can merge.
 *
 *  - buggify sites and properties name their file:line and function in
 *    explanations and assertion findings (lines taken with __LINE__ in
 *    the scenarios below, never written out);
 *  - the campaign summary's counts (decisions per kind, buggify and
 *    pl_sometimes sites) against a scenario whose counts follow by hand;
 *  - `merge` of shards gives the single campaign's verdict and counts,
 *    and refuses what is not the shards of one campaign;
 *  - a single seed is never judged on pl_sometimes; pl_sim_campaign
 *    judges and reports its sites;
 *  - each run counts its own pl_sometimes evaluations (its record), also
 *    after other runs and beside runs on another thread.
 * The CLI runs as pl_main in a child process, in a temporary directory. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <pollen/sim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "leakcheck.h"
#include "run_record.h"
#include "sim_internal.h"

/* __LINE__ of the macro's use is the line of the site it expands to. */
#define BUGGIFY_AT(cx, line_out)           (*(line_out) = __LINE__, PL_BUGGIFY(cx))
#define ALWAYS_AT(cond, msg, line_out)     (*(line_out) = __LINE__, pl_always((cond), (msg)))
#define EVENTUALLY_AT(cond, msg, line_out) (*(line_out) = __LINE__, pl_eventually((cond), (msg)))

static int buggify_line, always_line, eventually_line, split_line;

/* ---- cov_buggify: the check fails when its buggify site fired ------------- */

typedef struct fired_state {
    int fired;
} fired_state;

typedef struct tripper {
    pl_future base;
    fired_state *st;
    int i;
} tripper;

static pl_poll_result tripper_poll(pl_future *f, pl_context *cx)
{
    tripper *self = (tripper *)f;
    for (; self->i < 8; self->i++) {
        if (BUGGIFY_AT(cx, &buggify_line)) {
            self->st->fired++;
        }
    }
    return PL_READY;
}

static const pl_future_vtable tripper_vtable = {"tripper", tripper_poll, NULL};

static int tripper_setup(pl_executor *ex, void *state)
{
    tripper t = {.base = PL_FUTURE_INIT(&tripper_vtable), .st = state};
    return PL_SPAWN(ex, t, "tripper", NULL);
}

static int tripper_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const fired_state *st = state;
    return st->fired > 0 ? pl_check_fail(msg, len, "the buggify site fired") : 0;
}

static const pl_scenario cov_buggify = {
    .name = "cov_buggify",
    .state_size = sizeof(fired_state),
    .setup = tripper_setup,
    .check = tripper_check,
};

/* ---- cov_always: a pl_always that fails at once ---------------------------- */

static pl_poll_result always_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    ALWAYS_AT(false, "the impossible holds", &always_line);
    return PL_READY;
}

static const pl_future_vtable always_vtable = {"always", always_poll, NULL};

static int always_setup(pl_executor *ex, void *state)
{
    (void)state;
    pl_future f = PL_FUTURE_INIT(&always_vtable);
    return PL_SPAWN(ex, f, "asserter", NULL);
}

static const pl_scenario cov_always = {.name = "cov_always", .setup = always_setup};

/* ---- cov_always_args: a pl_always whose message carries values ------------- */

static int always_args_line, args_evaluated;

static int evaluated(int v)
{
    args_evaluated++;
    return v;
}

#define CLAIMED(got, claimed)                                                                  \
    pl_always((got) == (claimed), "recovered %d, claimed %d", (got), evaluated(claimed))

static pl_poll_result always_args_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    int recovered = 0, claimed = 1;
    for (int i = 0; i < 3; i++) {
        pl_always(i < 3, "holds, so never formatted: %d", evaluated(i));
    }
    /* One line: gcc and clang give a macro call over two lines
     * different __LINE__s. */
    always_args_line = __LINE__, CLAIMED(recovered, claimed);
    return PL_READY;
}

static const pl_future_vtable always_args_vtable = {"always_args", always_args_poll, NULL};

static int always_args_setup(pl_executor *ex, void *state)
{
    (void)state;
    pl_future f = PL_FUTURE_INIT(&always_args_vtable);
    return PL_SPAWN(ex, f, "asserter", NULL);
}

static const pl_scenario cov_always_args = {.name = "cov_always_args",
                                            .setup = always_args_setup};

/* ---- cov_eventually: a pl_eventually never true ----------------------------- */

static pl_poll_result eventually_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    EVENTUALLY_AT(false, "the work gets done", &eventually_line);
    return PL_READY;
}

static const pl_future_vtable eventually_vtable = {"eventually", eventually_poll, NULL};

static int eventually_setup(pl_executor *ex, void *state)
{
    (void)state;
    pl_future f = PL_FUTURE_INIT(&eventually_vtable);
    return PL_SPAWN(ex, f, "waiter", NULL);
}

static const pl_scenario cov_eventually = {.name = "cov_eventually", .setup = eventually_setup};

/* ---- cov_count: counts that follow by hand ---------------------------------
 * One task, one poll: no decision has two choices but the buggify ones.
 * Each run evaluates its buggify site 3 times (the site's enable decision
 * once, a fire decision per evaluation while enabled) and its pl_sometimes
 * site twice, true once. */

static pl_poll_result count_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    for (int i = 0; i < 3; i++) {
        (void)PL_BUGGIFY(cx);
    }
    for (int i = 0; i < 2; i++) {
        pl_sometimes(i == 0, "the first of two");
    }
    return PL_READY;
}

static const pl_future_vtable count_vtable = {"count", count_poll, NULL};

static int count_setup(pl_executor *ex, void *state)
{
    (void)state;
    pl_future f = PL_FUTURE_INIT(&count_vtable);
    return PL_SPAWN(ex, f, "counter", NULL);
}

static const pl_scenario cov_count = {.name = "cov_count", .setup = count_setup};

/* ---- cov_split: a site true in some runs, and its negation ------------------ */

typedef struct splitter {
    pl_future base;
} splitter;

static pl_poll_result split_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    bool fired = false;
    for (int i = 0; i < 8; i++) {
        fired = BUGGIFY_AT(cx, &split_line) || fired;
    }
    pl_sometimes(fired, "a buggify fired");
    pl_sometimes(!fired, "no buggify fired");
    return PL_READY;
}

static const pl_future_vtable split_vtable = {"split", split_poll, NULL};

static int split_setup(pl_executor *ex, void *state)
{
    (void)state;
    splitter s = {.base = PL_FUTURE_INIT(&split_vtable)};
    return PL_SPAWN(ex, s, "splitter", NULL);
}

static const pl_scenario cov_split = {.name = "cov_split", .setup = split_setup};

/* ---- cov_never: clean, but its pl_sometimes is never true ------------------- */

static pl_poll_result never_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    /* A format and its arguments: the failing site says their values. */
    pl_sometimes(false, "the rare thing happens (%d of %d)", 0, 3);
    return PL_READY;
}

static const pl_future_vtable never_vtable = {"never", never_poll, NULL};

static int never_setup(pl_executor *ex, void *state)
{
    (void)state;
    pl_future f = PL_FUTURE_INIT(&never_vtable);
    return PL_SPAWN(ex, f, "hoper", NULL);
}

static const pl_scenario cov_never = {.name = "cov_never", .setup = never_setup};

static const pl_scenario *const extra[] = {&cov_buggify, &cov_always, &cov_count,
                                           &cov_split,   &cov_never,  NULL};

/* ---- Running the CLI ------------------------------------------------------- */

/* A temporary directory every test works in (replays, shard files). */
static char workdir[64];

static void enter_workdir(void)
{
    snprintf(workdir, sizeof workdir, "/tmp/pollen-cover-dir-XXXXXX");
    cr_assert_not_null(mkdtemp(workdir));
    cr_assert_eq(chdir(workdir), 0);
}

static void leave_workdir(void)
{
    char cmd[128];
    cr_assert_eq(chdir("/"), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", workdir);
    cr_assert_eq(system(cmd), 0);
}

/* pl_main(args) in a child; stdout also goes to the file `to` when not
 * NULL (and is read back from it). */
static child_ran cli(const char *to, const char *const *args)
{
    if (to == NULL) {
        return child_pl_main(args, extra, -1);
    }
    int out = open(to, O_RDWR | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(out, 0);
    child_ran r = child_pl_main(args, extra, out);
    free(r.out);
    r.out = child_slurp(out);
    return r;
}

#define CLI(...)          cli(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define CLI_TO(file, ...) cli((file), (const char *const[]){__VA_ARGS__, NULL})

/* Asserts that text holds the formatted needle. */
static void assert_has(const char *text, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void assert_has(const char *text, const char *fmt, ...)
{
    char needle[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(needle, sizeof needle, fmt, ap);
    va_end(ap);
    cr_assert_not_null(strstr(text, needle), "no '%s' in:\n%s", needle, text);
}

/* The value of the integer after `"key":` in the object following the
 * first occurrence of `after` in text (-1 when absent). */
static long long json_number(const char *text, const char *after, const char *key)
{
    const char *p = strstr(text, after);
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    p = p != NULL ? strstr(p, pat) : NULL;
    return p != NULL ? atoll(p + strlen(pat)) : -1;
}

/* ---- Source locations --------------------------------------------------------- */

/* The line is known once the poll ran here: run one seed in-process. */
static int site_line_of(const pl_scenario *sc, const int *line)
{
    pl_sim_options o;
    pl_sim_result res;
    pl_sim_options_default(&o);
    cr_assert_eq(pl_sim_run(sc, &o, &res), 0);
    pl_sim_result_free(&res);
    cr_assert_gt(*line, 0);
    return *line;
}

LEAK_TEST(cover, explanation_lines_say_where_the_buggify_site_is)
{
    int line = site_line_of(&cov_buggify, &buggify_line);
    pl_campaign_result cr;
    cr_assert_eq(
        pl_sim_campaign(&cov_buggify,
                        &(pl_campaign_options){.seed_lo = 0, .seed_hi = 499, .stop_at_first = true},
                        &cr),
        0);
    cr_assert_eq(cr.findings, 1);
    pl_sim_options o;
    pl_sim_result r;
    pl_sim_options_default(&o);
    o.seed = cr.first_seed;
    cr_assert_eq(pl_sim_run(&cov_buggify, &o, &r), 0);
    const pl__run_record *rec = pl__sim_result_record(&r);
    cr_assert_not_null(rec);
    pl_sim_shrink_result s;
    cr_assert_eq(pl_sim_shrink(&cov_buggify, &o, rec->decisions, rec->decisions_len,
                               PL_FINDING_ASSERTION, NULL, &s),
                 0, "%s", s.message);
    cr_assert_not_null(s.explanation);
    char want[256];
    snprintf(want, sizeof want, "buggify at test_cover.c:%d (tripper_poll) enabled for this run",
             line);
    cr_assert_not_null(strstr(s.explanation, want), "%s", s.explanation);
    snprintf(want, sizeof want, "buggify at test_cover.c:%d (tripper_poll) fired in 'tripper'",
             line);
    cr_assert_not_null(strstr(s.explanation, want), "%s", s.explanation);
    cr_assert_null(strstr(s.explanation, "buggify: site"), "%s", s.explanation);
    pl_sim_shrink_result_free(&s);
    pl_sim_result_free(&r);
}

LEAK_TEST(cover, an_assertion_finding_names_file_line_and_function)
{
    int line = site_line_of(&cov_always, &always_line);
    pl_campaign_result cr;
    cr_assert_eq(
        pl_sim_campaign(&cov_always,
                        &(pl_campaign_options){.seed_lo = 0, .seed_hi = 0, .stop_at_first = true},
                        &cr),
        0);
    cr_assert_eq(cr.first.kind, PL_FINDING_ASSERTION);
    char want[512];
    snprintf(want, sizeof want, "pl_always failed: the impossible holds (%s:%d, in always_poll)",
             "test_cover.c", line);
    cr_assert_str_eq(cr.first.message, want);
    line = site_line_of(&cov_eventually, &eventually_line);
    cr_assert_eq(
        pl_sim_campaign(&cov_eventually,
                        &(pl_campaign_options){.seed_lo = 0, .seed_hi = 0, .stop_at_first = true},
                        &cr),
        0);
    snprintf(want, sizeof want,
             "pl_eventually never became true: the work gets done (%s:%d, in eventually_poll)",
             __FILE__, line);
    cr_assert_str_eq(cr.first.message, want);
}

/* pl_always's printf-style message: formatted with the failing values,
 * and its arguments evaluated only when it fails. */
LEAK_TEST(cover, an_assertion_message_carries_its_arguments)
{
    pl_sim_options o;
    pl_sim_result r;
    pl_sim_options_default(&o);
    args_evaluated = 0;
    cr_assert_eq(pl_sim_run(&cov_always_args, &o, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_ASSERTION);
    char want[512];
    snprintf(want, sizeof want,
             "pl_always failed: recovered 0, claimed 1 (test_cover.c:%d, in always_args_poll)",
             always_args_line);
    cr_assert_str_eq(r.finding.message, want);
    cr_assert_eq(args_evaluated, 1, "arguments evaluated %d times", args_evaluated);
    pl_sim_result_free(&r);
}

/* ---- The campaign summary --------------------------------------------------- */

Test(cover, summary_counts_follow_by_hand)
{
    enter_workdir();
    /* Workers that hand their seeds on still send every count. */
    child_ran r =
        CLI("run", "cov_count", "--seeds", "0..39", "-j", "2", "--recycle-seeds", "7", "--json");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    const char *sum = strstr(r.out, "{\"summary\":");
    cr_assert_not_null(sum, "%s", r.out);
    /* Each run: one enable decision; 3 evaluations; the sometimes site
     * reached twice and true once; one task: no schedule decision. */
    cr_assert_eq(json_number(sum, "\"buggify_site\"", "consulted"), 40);
    cr_assert_eq(json_number(sum, "\"schedule\"", "consulted"), 0);
    cr_assert_eq(json_number(sum, "\"buggify\":[", "reached"), 120);
    long long enabled = json_number(sum, "\"buggify\":[", "runs_enabled");
    long long fired = json_number(sum, "\"buggify\":[", "fired");
    cr_assert_eq(json_number(sum, "\"buggify_site\"", "deviated"), enabled);
    cr_assert_eq(json_number(sum, "\"buggify_fire\"", "consulted"), 3 * enabled);
    cr_assert_eq(json_number(sum, "\"buggify_fire\"", "deviated"), fired);
    cr_assert_gt(enabled, 0, "%s", sum); /* 1 in 4 of 40 runs: seeds 0..39 enable some */
    assert_has(sum, "\"message\":\"the first of two\"");
    cr_assert_eq(json_number(sum, "\"the first of two\"", "reached"), 80);
    cr_assert_eq(json_number(sum, "\"the first of two\"", "true"), 40);
    assert_has(sum, "\"sometimes_judged\":true");
    /* The text says the same. */
    assert_has(r.err, "buggify at test_cover.c:");
    assert_has(r.err, "reached 120, enabled in %lld of 40 runs, fired %lld", enabled, fired);
    assert_has(r.err, "\"the first of two\": reached 80, true 40");
    assert_has(r.err, "buggify_site 40 / %lld", enabled);
    assert_has(r.err, "pl_sometimes: judged");
    child_ran_free(&r);
    leave_workdir();
}

/* A campaign stopped at its first finding never gets the tallies of the
 * slices it cut short: it says so instead of printing a part as the
 * range's coverage; --keep-going gathers the whole range. */
Test(cover, a_campaign_stopped_at_its_finding_says_coverage_was_not_gathered)
{
    enter_workdir();
    child_ran r = CLI("run", "cov_always", "--seeds", "0..19", "--no-shrink");
    cr_assert_eq(r.status, 10 + PL_FINDING_ASSERTION, "%s%s", r.out, r.err);
    assert_has(r.out, "coverage: not gathered: the campaign stopped at its first finding");
    cr_assert_null(strstr(r.out, "decisions (consulted"), "%s", r.out);
    child_ran_free(&r);
    r = CLI("run", "cov_always", "--seeds", "0..19", "--no-shrink", "--keep-going");
    cr_assert_eq(r.status, 10 + PL_FINDING_ASSERTION, "%s%s", r.out, r.err);
    assert_has(r.out, "decisions (consulted");
    cr_assert_null(strstr(r.out, "not gathered"), "%s", r.out);
    child_ran_free(&r);
    leave_workdir();
}

/* ---- pl_sometimes and single seeds ----------------------------------------- */

Test(cover, a_single_seed_is_not_judged_on_pl_sometimes)
{
    enter_workdir();
    child_ran r = CLI("run", "cov_never", "--seed", "5");
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    assert_has(r.out, "pl_sometimes: not judged: one seed");
    child_ran_free(&r);
    r = CLI("run", "cov_never", "--seeds", "5..6");
    cr_assert_eq(r.status, 10 + PL_FINDING_ASSERTION, "%s%s", r.out, r.err);
    assert_has(r.out, "pl_sometimes(\"the rare thing happens (%%d of %%d)\")");
    assert_has(r.out, "(in never_poll) was evaluated 2 times over the campaign and never true "
                      "(last: the rare thing happens (0 of 3))");
    child_ran_free(&r);
    leave_workdir();
}

LEAK_TEST(cover, pl_sim_campaign_judges_and_reports_its_sites)
{
    pl_campaign_result cr;
    cr_assert_eq(
        pl_sim_campaign(&cov_never,
                        &(pl_campaign_options){.seed_lo = 5, .seed_hi = 5, .stop_at_first = true},
                        &cr),
        0);
    cr_assert_eq(cr.findings, 0);
    cr_assert(!cr.sometimes_judged);
    cr_assert_eq(cr.sometimes_failed, 0);
    cr_assert_eq(
        pl_sim_campaign(&cov_never,
                        &(pl_campaign_options){.seed_lo = 5, .seed_hi = 6, .stop_at_first = true},
                        &cr),
        0);
    cr_assert(cr.sometimes_judged);
    cr_assert_eq(cr.findings, 1);
    cr_assert_eq(cr.sometimes_sites, 1);
    cr_assert_eq(cr.sometimes_failed, 1);
    cr_assert(!cr.first_has_seed);
    cr_assert_not_null(strstr(cr.first.message, "\"the rare thing happens (%d of %d)\""), "%s",
                       cr.first.message);
    cr_assert_not_null(strstr(cr.first.message, "never true (last: the rare thing happens (0 of 3))"),
                       "%s", cr.first.message);
    cr_assert_eq(
        pl_sim_campaign(&cov_count,
                        &(pl_campaign_options){.seed_lo = 0, .seed_hi = 9, .stop_at_first = true},
                        &cr),
        0);
    cr_assert(cr.sometimes_judged);
    cr_assert_eq(cr.findings, 0);
    cr_assert_eq(cr.sometimes_sites, 1);
    cr_assert_eq(cr.sometimes_failed, 0);
}

/* ---- pl_sometimes counted per run ------------------------------------------- */

/* The index of the pl_sometimes site whose format is `msg`. */
static size_t site_index(const char *msg)
{
    size_t n = 0;
    const pl__sometimes_site *sites = pl__sometimes_sites(&n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(sites[i].msg, msg) == 0) {
            return i;
        }
    }
    cr_assert_fail("no pl_sometimes site \"%s\"", msg);
    return 0;
}

/* Runs sc's seed and gives the run's counts of the site `msg`; false when
 * the run did not end clean. */
static bool run_counts(const pl_scenario *sc, uint64_t seed, const char *msg, uint32_t *hits,
                       uint32_t *reached, char *last, size_t last_len)
{
    pl_sim_options o;
    pl_sim_result r;
    pl_sim_options_default(&o);
    o.seed = seed;
    if (pl_sim_run(sc, &o, &r) != 0 || r.finding.kind != PL_FINDING_NONE) {
        pl_sim_result_free(&r);
        return false;
    }
    const char *l;
    pl__run_sometimes(pl__sim_result_record(&r), site_index(msg), hits, reached, &l);
    snprintf(last, last_len, "%s", l);
    pl_sim_result_free(&r);
    return true;
}

LEAK_TEST(cover, a_run_reports_its_own_pl_sometimes_counts)
{
    uint32_t hits, reached;
    char last[PL__SOMETIMES_LAST];
    for (uint64_t seed = 0; seed < 3; seed++) {
        cr_assert(run_counts(&cov_count, seed, "the first of two", &hits, &reached, last,
                             sizeof last));
        cr_assert_eq(hits, 1, "seed %llu: %u hits", (unsigned long long)seed, hits);
        cr_assert_eq(reached, 2);
        cr_assert_str_empty(last);
    }
    /* Never true in its run: the record keeps its values. A run of
     * another scenario met none of its sites. */
    cr_assert(run_counts(&cov_never, 0, "the rare thing happens (%d of %d)", &hits, &reached,
                         last, sizeof last));
    cr_assert_eq(hits, 0);
    cr_assert_eq(reached, 1);
    cr_assert_str_eq(last, "the rare thing happens (0 of 3)");
    cr_assert(run_counts(&cov_count, 0, "the rare thing happens (%d of %d)", &hits, &reached,
                         last, sizeof last));
    cr_assert_eq(reached, 0);
    cr_assert_str_empty(last);
}

#define THREAD_RUNS 200

/* Runs cov_count THREAD_RUNS times; counts the runs whose record does not
 * say exactly their own evaluations of "the first of two". */
static void *count_runs(void *arg)
{
    uint64_t *wrong = arg;
    for (uint64_t seed = 0; seed < THREAD_RUNS; seed++) {
        uint32_t hits = 0, reached = 0;
        char last[8];
        bool ok = run_counts(&cov_count, seed, "the first of two", &hits, &reached, last,
                             sizeof last);
        *wrong += !ok || hits != 1 || reached != 2;
    }
    return NULL;
}

Test(cover, runs_on_two_threads_count_pl_sometimes_apart)
{
    site_index("the first of two"); /* asserts here, not in a thread */
    pthread_t other;
    uint64_t wrong[2] = {0, 0};
    cr_assert_eq(pthread_create(&other, NULL, count_runs, &wrong[1]), 0);
    count_runs(&wrong[0]);
    cr_assert_eq(pthread_join(other, NULL), 0);
    cr_assert_eq(wrong[0], 0, "%llu runs of this thread miscounted",
                 (unsigned long long)wrong[0]);
    cr_assert_eq(wrong[1], 0, "%llu runs of the other thread miscounted",
                 (unsigned long long)wrong[1]);
}

/* ---- Merging shards ------------------------------------------------------------ */

/* Whether cov_split's "a buggify fired" is true in the run of `seed`. */
static bool split_fires(uint64_t seed)
{
    pl_sim_options o;
    pl_sim_result r;
    pl_sim_options_default(&o);
    o.seed = seed;
    cr_assert_eq(pl_sim_run(&cov_split, &o, &r), 0);
    uint32_t hits, reached;
    const char *last;
    pl__run_sometimes(pl__sim_result_record(&r), site_index("a buggify fired"), &hits, &reached,
                      &last);
    pl_sim_result_free(&r);
    return hits > 0;
}

/* The lowest seed lo where cov_split fires at lo and lo + 2 and not at
 * lo + 1 and lo + 3: over lo..lo+3, shard 1/2 sees the site "a buggify
 * fired" true and never "no buggify fired", shard 2/2 the other way
 * round, so each shard alone fails and the whole range is clean. */
static uint64_t split_range(void)
{
    for (uint64_t lo = 0; lo < 100000; lo++) {
        if (split_fires(lo) && !split_fires(lo + 1) && split_fires(lo + 2) &&
            !split_fires(lo + 3)) {
            return lo;
        }
    }
    cr_assert_fail("no such range");
    return 0;
}

/* The line of text starting with `prefix` (copied into buf). */
static const char *line_of(const char *text, const char *prefix, char *buf, size_t len)
{
    const char *p = strstr(text, prefix);
    cr_assert_not_null(p, "no '%s' in:\n%s", prefix, text);
    snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
    return buf;
}

Test(cover, merged_shards_give_the_single_campaigns_verdict_and_counts)
{
    uint64_t lo = split_range();
    char seeds[64];
    snprintf(seeds, sizeof seeds, "%llu..%llu", (unsigned long long)lo, (unsigned long long)lo + 3);
    enter_workdir();
    child_ran a =
        CLI_TO("a.json", "run", "cov_split", "--seeds", seeds, "--shard", "1/2", "--json");
    child_ran b =
        CLI_TO("b.json", "run", "cov_split", "--seeds", seeds, "--shard", "2/2", "--json");
    child_ran u = CLI_TO("u.json", "run", "cov_split", "--seeds", seeds, "--json");
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_eq(b.status, 0, "%s", b.err);
    cr_assert_eq(u.status, 0, "%s", u.err);
    /* Each shard alone: one of the two sites reached and never true. */
    assert_has(a.err, "\"no buggify fired\": reached 2, true 0");
    assert_has(b.err, "\"a buggify fired\": reached 2, true 0");
    assert_has(a.err, "pl_sometimes: not judged: shard 1/2");
    child_ran m = CLI("merge", "a.json", "b.json");
    cr_assert_eq(m.status, 0, "%s%s", m.out, m.err);
    assert_has(m.out, "cov_split: 2 shards merged, 4 runs, 0 findings");
    assert_has(m.out, "pl_sometimes: judged");
    /* The counts the single campaign printed. */
    char line[1024];
    assert_has(m.out, "%s", line_of(u.err, "  decisions (", line, sizeof line));
    assert_has(m.out, "%s", line_of(u.err, "  buggify at test_cover.c:", line, sizeof line));
    assert_has(m.out, "%s", line_of(u.err, "  sometimes at test_cover.c:", line, sizeof line));
    assert_has(m.out, "\"a buggify fired\": reached 4, true 2");
    assert_has(m.out, "\"no buggify fired\": reached 4, true 2");
    child_ran_free(&m);
    m = CLI("merge", "b.json", "a.json"); /* any order */
    cr_assert_eq(m.status, 0, "%s%s", m.out, m.err);
    child_ran_free(&m);
    child_ran_free(&a);
    child_ran_free(&b);
    child_ran_free(&u);
    leave_workdir();
}

Test(cover, merged_shards_fail_as_the_single_campaign_fails)
{
    enter_workdir();
    child_ran a =
        CLI_TO("a.json", "run", "cov_never", "--seeds", "0..9", "--shard", "1/3", "--json");
    child_ran b =
        CLI_TO("b.json", "run", "cov_never", "--seeds", "0..9", "--shard", "2/3", "--json");
    child_ran c =
        CLI_TO("c.json", "run", "cov_never", "--seeds", "0..9", "--shard", "3/3", "--json");
    child_ran u = CLI("run", "cov_never", "--seeds", "0..9", "--json");
    cr_assert_eq(a.status + b.status + c.status, 0, "%s%s%s", a.err, b.err, c.err);
    cr_assert_eq(u.status, 10 + PL_FINDING_ASSERTION, "%s", u.err);
    child_ran m = CLI("merge", "c.json", "a.json", "b.json");
    cr_assert_eq(m.status, u.status, "%s%s", m.out, m.err);
    assert_has(m.out, "FINDING assertion in cov_never (seeds 0..9, 3 shards merged)");
    assert_has(m.out, "(in never_poll) was evaluated 10 times over the campaign and never true "
                      "(last: the rare thing happens (0 of 3))");
    assert_has(u.out, "was evaluated 10 times over the campaign and never true");
    assert_has(m.out, "merged verdict: exit %d", u.status);
    child_ran_free(&m);
    /* An unsharded run merges alone into its own verdict. */
    FILE *f = fopen("u.json", "w");
    cr_assert_not_null(f);
    fputs(u.out, f);
    fclose(f);
    m = CLI("merge", "u.json");
    cr_assert_eq(m.status, u.status, "%s%s", m.out, m.err);
    assert_has(m.out, "cov_never: 1 shard merged, 10 runs, 1 finding");
    child_ran_free(&m);
    child_ran_free(&a);
    child_ran_free(&b);
    child_ran_free(&c);
    child_ran_free(&u);
    leave_workdir();
}

/* merge FILES... exits 2 with an error naming `file` and saying `why`. */
static void assert_refused(const char *const *args, const char *file, const char *why)
{
    child_ran m = cli(NULL, args);
    cr_assert_eq(m.status, 2, "%s%s", m.out, m.err);
    assert_has(m.err, "%s", file);
    assert_has(m.err, "%s", why);
    cr_assert_eq(m.out[0], '\0', "%s", m.out);
    child_ran_free(&m);
}

#define REFUSED(file, why, ...)                                                                    \
    assert_refused((const char *const[]){"merge", __VA_ARGS__, NULL}, (file), (why))

Test(cover, merge_refuses_what_is_not_one_campaigns_shards)
{
    enter_workdir();
    child_ran r[6] = {
        CLI_TO("a.json", "run", "cov_count", "--seeds", "0..9", "--shard", "1/2", "--json"),
        CLI_TO("b.json", "run", "cov_count", "--seeds", "0..9", "--shard", "2/2", "--json"),
        CLI_TO("knobs.json", "run", "cov_count", "--seeds", "0..9", "--shard", "2/2", "--json",
               "--knobs", "buggify_site=off"),
        CLI_TO("range.json", "run", "cov_count", "--seeds", "0..19", "--shard", "2/2", "--json"),
        CLI_TO("other.json", "run", "cov_never", "--seeds", "0..9", "--shard", "2/2", "--json"),
        CLI_TO("thirds.json", "run", "cov_count", "--seeds", "0..9", "--shard", "2/3", "--json"),
    };
    for (size_t i = 0; i < 6; i++) {
        cr_assert_eq(r[i].status, 0, "%zu: %s", i, r[i].err);
        child_ran_free(&r[i]);
    }
    child_ran m = CLI("merge", "a.json", "b.json");
    cr_assert_eq(m.status, 0, "%s%s", m.out, m.err);
    child_ran_free(&m);
    cr_assert_eq(system("cp b.json b2.json"), 0);
    REFUSED("b2.json", "shard 2/2 again (b.json is that shard too)", "a.json", "b.json", "b2.json");
    REFUSED("a.json", "missing: 2/2", "a.json");
    REFUSED("knobs.json", "knobs buggify_site=off, but a.json has null", "a.json", "knobs.json");
    REFUSED("range.json", "seeds 0..19, but a.json has 0..9", "a.json", "range.json");
    REFUSED("other.json", "scenarios cov_never, but a.json has cov_count", "a.json", "other.json");
    REFUSED("thirds.json", "shard 2/3, but a.json is shard 1/2", "a.json", "thirds.json");
    FILE *f = fopen("cut.json", "w");
    cr_assert_not_null(f);
    fputs("{\"summary\":{\"exit\":0,\"real\":fals\n", f);
    fclose(f);
    REFUSED("cut.json", "the summary line is not valid JSON", "a.json", "cut.json");
    f = fopen("text.json", "w");
    cr_assert_not_null(f);
    fputs("cov_count: 5 runs, 0 findings\n", f);
    fclose(f);
    REFUSED("text.json", "no summary line", "text.json");
    REFUSED("gone.json", "cannot read it", "a.json", "gone.json");
    REFUSED("merge", "which files?", "--quiet");
    leave_workdir();
}

Test(cover, merge_has_help_with_its_exit_statuses)
{
    child_ran m = CLI("merge", "--help");
    cr_assert_eq(m.status, 0, "%s", m.err);
    assert_has(m.out, "usage: pollen merge FILE...");
    assert_has(m.out, "exit status: 0 clean, 10 + kind of the first finding");
    assert_has(m.out, "2 bad\nusage or bad input");
    child_ran_free(&m);
    m = CLI("--help");
    assert_has(m.out, "  merge     the verdict of a sharded campaign");
    child_ran_free(&m);
}
