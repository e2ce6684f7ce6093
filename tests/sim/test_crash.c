/* tests/sim/test_crash.c: crashes through the `pollen` command line, and
 * shrunk findings that describe the run they explain.
 *
 * selftest_deref (scenarios/selftest_trace.c) reads through a null
 * pointer in 'bob' when a PL_BUGGIFY site fires: `run` must name bob's
 * poll and print the last events (the user's trace events among them),
 * `replay --trace` must print the timeline up to the crash, and the crash
 * must shrink. The binary is POLLEN_BIN (set by meson); every test runs
 * in a fresh temporary directory, its output merged from stdout and
 * stderr.
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- Running the binary --------------------------------------------------- */

typedef struct ran {
    int status; /* exit status; -1 when it did not exit */
    char *out;  /* stdout and stderr, NUL-terminated */
} ran;

/* Runs `$POLLEN_BIN ARGS 2>&1` through the shell: args are fixed words
 * of the tests, never user input. */
static ran pollen(const char *args)
{
    const char *bin = getenv("POLLEN_BIN");
    cr_assert_not_null(bin, "POLLEN_BIN is not set: run this test through meson");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", bin, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    for (size_t n; (n = fread(buf + len, 1, cap - len - 1, p)) > 0;) {
        len += n;
        if (cap - len < 2) {
            buf = realloc(buf, cap *= 2);
            cr_assert_not_null(buf);
        }
    }
    buf[len] = '\0';
    int st = pclose(p);
    return (ran){WIFEXITED(st) ? WEXITSTATUS(st) : -1, buf};
}

static char workdir[4096];

static void enter_workdir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(workdir, sizeof workdir, "%s/pollen-crash-XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : P_tmpdir);
    cr_assert_not_null(mkdtemp(workdir));
    cr_assert_eq(chdir(workdir), 0);
}

static void leave_workdir(void)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", workdir);
    if (chdir("/") == 0 && system(cmd) != 0) {
        cr_log_warn("could not remove %s", workdir);
    }
}

TestSuite(crash, .init = enter_workdir, .fini = leave_workdir, .timeout = 120);

static bool has(const char *text, const char *needle) { return strstr(text, needle) != NULL; }

/* The number after `key` in text (its first occurrence). */
static uint64_t number_after(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    cr_assert_not_null(p, "'%s' not in: %s", key, text);
    return strtoull(p + strlen(key), NULL, 10);
}

/* The line of text that starts with `head` (static buffer, no newline). */
static const char *line_of(const char *text, const char *head)
{
    static char line[512];
    const char *p = strstr(text, head);
    cr_assert_not_null(p, "'%s' not in: %s", head, text);
    snprintf(line, sizeof line, "%.*s", (int)strcspn(p, "\n"), p);
    return line;
}

/* ---- A crash, named, shown and shrunk --------------------------------------- */

Test(crash, finding_names_the_poll_and_prints_the_last_events)
{
    ran r = pollen("run selftest_deref --seeds 0..99 --no-shrink");
    cr_assert_eq(r.status, 10 + 12, "%s", r.out); /* 10 + PL_FINDING_CRASH */
    cr_assert(has(r.out, "FINDING crash in selftest_deref (seed "), "%s", r.out);
    /* The task and the poll it died in, no longer "task: unknown". */
    cr_assert(has(r.out, "  task: bob (#2), poll "), "%s", r.out);
    cr_assert(!has(r.out, "task: unknown"), "%s", r.out);
    cr_assert(has(r.out, "it died in 'bob' (#2), poll "), "%s", r.out);
    /* Its last events, the user's own among them, the crash's poll last. */
    cr_assert(has(r.out, "  the run's last events, the latest last:\n"), "%s", r.out);
    cr_assert(has(r.out, " event        bob#2        bob: reading the peer table\n"), "%s",
              r.out);
    cr_assert(has(r.out, " poll         bob#2        poll="), "%s", r.out);
    free(r.out);
}

/* The crash finding's JSON line of out, in line; returns how many
 * events its timeline holds. */
static size_t json_timeline_events(const char *out, char *line, size_t len)
{
    const char *p = strstr(out, "{\"kind\":\"crash\",");
    cr_assert_not_null(p, "%s", out);
    snprintf(line, len, "%.*s", (int)strcspn(p, "\n"), p);
    const char *tl = strstr(line, ",\"timeline\":[{\"step\":");
    cr_assert_not_null(tl, "%s", line);
    size_t n = 0;
    for (const char *q = strstr(tl, "{\"step\":"); q != NULL; q = strstr(q + 1, "{\"step\":")) {
        n++;
    }
    return n;
}

Test(crash, json_finding_carries_its_timeline)
{
    const char *runs[] = {"run selftest_deref --seeds 0..99 --no-shrink --json",
                          "run selftest_deref --seeds 0..99 --json"}; /* and shrunk */
    for (size_t i = 0; i < 2; i++) {
        ran r = pollen(runs[i]);
        cr_assert_eq(r.status, 10 + 12, "%s", r.out);
        static char line[1 << 15];
        size_t n = json_timeline_events(r.out, line, sizeof line);
        /* The events the text finding shows: the last 20 at most. */
        cr_assert(n > 0 && n <= 20, "%zu events: %s", n, line);
        cr_assert(has(line, ",\"time_ns\":0,\"event\":\"event\",\"task\":\"bob\","
                            "\"task_id\":2,\"text\":\"bob: reading the peer table\"}"),
                  "%s", line);
        cr_assert(has(line, ",\"event\":\"poll\",\"task\":\"bob\",\"task_id\":2,"
                            "\"text\":\"poll="),
                  "%s", line);
        free(r.out);
    }
}

/* The native stack of the crashing thread, innermost first: the faulting
 * read in the scenario's poll, named with its file and line when pollen
 * was built with libdw, else by object file and offset. */
#ifdef POLLEN_HAVE_LIBDW
#define CRASH_FRAME "#0 pinger_poll ("
#define CRASH_FRAME_JSON "\"function\":\"pinger_poll\",\"file\":\""
#else
#define CRASH_FRAME "#0 ?? ("
#define CRASH_FRAME_JSON "\"function\":null,\"file\":null,\"line\":null,\"object\":\""
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define UNDER_SANITIZER 1
#endif

Test(crash, finding_and_replay_show_the_native_stack)
{
#ifdef UNDER_SANITIZER
    /* A sanitizer stops the null read first and exits with its own
     * report (and stack) on stderr: no signal, so no native stack. */
    cr_skip_test("a sanitizer reports this crash itself");
#endif
    ran r = pollen("run selftest_deref --seeds 0..99 --no-shrink");
    cr_assert_eq(r.status, 10 + 12, "%s", r.out);
    uint64_t seed = number_after(r.out, "FINDING crash in selftest_deref (seed ");
    cr_assert(has(r.out, "  the crashing thread's native stack (Segmentation fault):\n"
                         "    " CRASH_FRAME),
              "%s", r.out);
#ifdef POLLEN_HAVE_LIBDW
    cr_assert(has(r.out, "selftest_trace.c:"), "%s", r.out);
#endif
    free(r.out);

    r = pollen("run selftest_deref --seeds 0..99 --no-shrink --json");
    static char line[1 << 15];
    json_timeline_events(r.out, line, sizeof line);
    cr_assert(has(line, ",\"native_stack\":[{\"pc\":\"0x"), "%s", line);
    cr_assert(has(line, CRASH_FRAME_JSON), "%s", line);
    free(r.out);

    char args[256];
    snprintf(args, sizeof args, "replay pollen-out/selftest_deref-seed%" PRIu64 ".replay", seed);
    r = pollen(args);
    cr_assert(has(r.out, "  its native stack (Segmentation fault):\n    " CRASH_FRAME), "%s",
              r.out);
    cr_assert(has(r.out, "reproduced: crash"), "%s", r.out);
    free(r.out);
}

Test(crash, replay_trace_prints_the_timeline_up_to_the_crash)
{
    ran r = pollen("run selftest_deref --seeds 0..99 --no-shrink --quiet");
    uint64_t seed = number_after(r.out, "(seed ");
    free(r.out);
    char args[256];
    snprintf(args, sizeof args,
             "replay pollen-out/selftest_deref-seed%" PRIu64 ".replay --trace "
             "--chrome-trace crash.json",
             seed);
    r = pollen(args);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert(has(r.out, "  the replay process died in 'bob' (#2), poll "), "%s", r.out);
    cr_assert(has(r.out, "reproduced: crash"), "%s", r.out);
    /* The whole timeline from the first spawn, not just its tail. */
    cr_assert(has(r.out, " spawn        alice#1      parent=- at selftest_trace.c:"), "%s", r.out);
    cr_assert(has(r.out, " in spawn_pair\n"), "%s", r.out);
    cr_assert(has(r.out, " event        alice#1      alice: round 1 of 4\n"), "%s", r.out);
    cr_assert(has(r.out, "bob: reading the peer table\n"), "%s", r.out);
    cr_assert(has(r.out, "chrome trace: crash.json"), "%s", r.out);
    free(r.out);
    FILE *f = fopen("crash.json", "r");
    cr_assert_not_null(f);
    char json[1 << 16];
    size_t n = fread(json, 1, sizeof json - 1, f);
    json[n] = '\0';
    fclose(f);
    cr_assert(has(json, "{\"name\":\"bob: reading the peer table\",\"ph\":\"i\""), "%s", json);
    cr_assert(has(json, ",\"site\":\"selftest_trace.c:"), "%s", json);
}

Test(crash, shrink_of_a_crash_succeeds_and_replays)
{
    ran r = pollen("run selftest_deref --seeds 0..99 --no-shrink --quiet");
    uint64_t seed = number_after(r.out, "(seed ");
    free(r.out);
    char args[256];
    snprintf(args, sizeof args, "shrink pollen-out/selftest_deref-seed%" PRIu64 ".replay", seed);
    r = pollen(args);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert(has(r.out, "shrunk crash: "), "%s", r.out);
    cr_assert(has(r.out, "fired in 'bob'"), "%s", r.out);
    cr_assert(has(r.out, "then the run crashed in 'bob' (#2), poll "), "%s", r.out);
    free(r.out);
    snprintf(args, sizeof args, "replay pollen-out/selftest_deref-seed%" PRIu64 ".shrunk.replay",
             seed);
    r = pollen(args);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert(has(r.out, "reproduced: crash"), "%s", r.out);
    free(r.out);
}

/* ---- One run described ------------------------------------------------------- */

/* Where a finding or a replay places its run: the task line ("  task:
 * NAME (#ID), poll P, ..., step S") or, for a replay that died, the line
 * naming the poll ("died in 'NAME' (#ID), poll P, step S, ..."). */
typedef struct place {
    uint64_t id, poll, step;
} place;

static place place_of(const char *text)
{
    const char *line = has(text, "  task: ") ? line_of(text, "  task: ")
                                              : line_of(text, "  the replay process died in ");
    char copy[512];
    snprintf(copy, sizeof copy, "%s", line);
    return (place){number_after(copy, "(#"), number_after(copy, ", poll "),
                   number_after(copy, ", step ")};
}

/* The shrunk finding's header places the run where its shrunk replay
 * does, and the line about the original run gives the original's step. */
static void assert_header_is_the_shrunk_run(const char *run_args, const char *name)
{
    ran r = pollen(run_args);
    cr_assert(has(r.out, "  shrunk: this finding is the shrunk run's; the original run (seed "),
              "%s", r.out);
    uint64_t seed = number_after(r.out, "(seed ");
    uint64_t orig_step = number_after(line_of(r.out, "  shrunk: "), ", step ");
    place head = place_of(r.out);
    free(r.out);
    char args[256];
    snprintf(args, sizeof args, "replay pollen-out/%s-seed%" PRIu64 ".shrunk.replay", name, seed);
    r = pollen(args);
    cr_assert_eq(r.status, 0, "%s", r.out);
    place shrunk = place_of(r.out);
    cr_assert(head.id == shrunk.id && head.poll == shrunk.poll && head.step == shrunk.step,
              "header #%" PRIu64 " poll %" PRIu64 " step %" PRIu64 "; %s", head.id, head.poll,
              head.step, r.out);
    free(r.out);
    snprintf(args, sizeof args, "replay pollen-out/%s-seed%" PRIu64 ".replay", name, seed);
    r = pollen(args);
    cr_assert_eq(place_of(r.out).step, orig_step, "%s", r.out);
    cr_assert_neq(orig_step, head.step, "the shrink must move the finding for this test");
    free(r.out);
}

Test(crash, shrunk_header_describes_the_shrunk_run)
{
    /* Shrinking moves this lost wakeup from step 6 to step 5. */
    assert_header_is_the_shrunk_run("run bug_sem_release --seed 0", "bug_sem_release");
}

Test(crash, run_shrinks_a_crash_and_describes_the_shrunk_run)
{
    ran r = pollen("run selftest_deref --seeds 0..99");
    cr_assert(has(r.out, "shrunk crash: "), "%s", r.out);
    cr_assert(has(r.out, "  shrunk replay: pollen-out/selftest_deref-seed"), "%s", r.out);
    /* The header, the explanation and the last events are the shrunk run's. */
    uint64_t poll = number_after(line_of(r.out, "  task: bob (#2)"), ", poll ");
    uint64_t step = number_after(line_of(r.out, "  task: bob (#2)"), ", step ");
    char said[128];
    snprintf(said, sizeof said,
             "then the run crashed in 'bob' (#2), poll %" PRIu64 ", step %" PRIu64, poll, step);
    cr_assert(has(r.out, said), "%s", r.out);
    free(r.out);
    assert_header_is_the_shrunk_run("run selftest_deref --seeds 0..99", "selftest_deref");
}
