/* tests/sim/test_campaign.c: pl_sim_campaign and the CLI's `run`
 * give the same findings for the same range: a pl_sometimes site never
 * true, sites of the scenario's own file never reached, and the
 * determinism check, on the CLI harness's scenarios. The CLI runs as
 * pl_main in a child process, its JSON lines read back from a pipe. */
#include <criterion/criterion.h>
#include <pollen/sim.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "cli_selftests.h"
#include "decide.h"
#include "leakcheck.h"
#include "replay.h"
#include "run.h"

/* ---- Scenarios ------------------------------------------------------------ */
/* selftest_sometimes and selftest_nondet are the CLI harness's
 * (cli_selftests.c); selftest_unreached is registered in cli_unreached.c,
 * alone in its file with a site no run reaches. */

static pl_poll_result quick_poll(pl_future *f, pl_context *cx)
{
    (void)f;
    (void)cx;
    return PL_READY;
}

static const pl_future_vtable quick_vtable = {"quick", quick_poll, NULL};

static int quick_setup(pl_executor *ex, void *state)
{
    (void)state;
    pl_future q = PL_FUTURE_INIT(&quick_vtable);
    return PL_SPAWN(ex, q, "quick", NULL);
}

/* Clean, with no site of its own: no finding either way. */
static const pl_scenario camp_clean = {
    .name = "camp_clean",
    .setup = quick_setup,
};

/* Keeps the waker of its first poll, then polls once more (it wakes
 * itself), so under waker rotation the kept waker is superseded: the
 * setter's wake is stale and the task stuck. Without rotation, as in
 * production, the kept waker is the task's only one and works. */
typedef struct keep_state {
    bool flag;
    pl_waker kept;
} keep_state;

typedef struct keeper {
    pl_future base;
    keep_state *st;
} keeper;

static pl_poll_result keeper_poll(pl_future *f, pl_context *cx)
{
    keep_state *st = ((keeper *)f)->st;
    if (st->flag) {
        pl_waker_slot_clear(&st->kept);
        return PL_READY;
    }
    if (st->kept.vtable == NULL) {
        st->kept = pl_waker_clone(&cx->waker);
        pl_waker_wake_by_ref(&cx->waker);
    }
    return PL_PENDING;
}

static void keeper_drop(pl_future *f) { pl_waker_slot_clear(&((keeper *)f)->st->kept); }

static const pl_future_vtable keeper_vtable = {"keeper", keeper_poll, keeper_drop};

typedef struct setter {
    pl_future base;
    keep_state *st;
    pl_sleep gap;
} setter;

static pl_poll_result setter_poll(pl_future *f, pl_context *cx)
{
    setter *self = (setter *)f;
    PL_ASYNC_BEGIN(self);
    self->gap = pl_sleep_for(1 * PL_MS);
    PL_AWAIT(cx, &self->gap);
    self->st->flag = true;
    pl_waker_wake_by_ref(&self->st->kept);
    PL_ASYNC_END;
}

static void setter_drop(pl_future *f) { pl_drop_child(&((setter *)f)->gap.base); }

static const pl_future_vtable setter_vtable = {"setter", setter_poll, setter_drop};

static int keep_setup(pl_executor *ex, void *state)
{
    keep_state *st = state;
    st->kept = PL_WAKER_EMPTY;
    keeper k = {PL_FUTURE_INIT(&keeper_vtable), st};
    setter t = {.base = PL_FUTURE_INIT(&setter_vtable), .st = st};
    int rc = PL_SPAWN(ex, k, "keeper", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, t, "setter", NULL);
}

static const pl_scenario camp_keep = {
    .name = "camp_keep",
    .state_size = sizeof(keep_state),
    .setup = keep_setup,
};

/* Parked forever in a notified: a deadlock whose backtrace the JSON
 * gives. The await's line is noted when a poll runs it. */
static int stuck_line;

typedef struct stuck {
    pl_future base;
    pl_notify never;
    pl_notified wait;
} stuck;

static pl_poll_result stuck_poll(pl_future *f, pl_context *cx)
{
    stuck *self = (stuck *)f;
    PL_ASYNC_BEGIN(self);
    pl_notify_init(&self->never);
    self->wait = pl_notified_make(&self->never);
    stuck_line = __LINE__ + 1;
    PL_AWAIT(cx, &self->wait);
    PL_ASYNC_END;
}

static void stuck_drop(pl_future *f) { pl_drop_child(&((stuck *)f)->wait.base); }

static const pl_future_vtable stuck_vtable = {"stuck", stuck_poll, stuck_drop};

static int stuck_setup(pl_executor *ex, void *state)
{
    (void)state;
    stuck s = {.base = PL_FUTURE_INIT(&stuck_vtable)};
    return PL_SPAWN(ex, s, "waiter", NULL);
}

static const pl_scenario camp_stuck = {
    .name = "camp_stuck",
    .setup = stuck_setup,
};

/* Parked forever in a join of two `stuck` futures: both branches are
 * in the JSON's tree. */
static int join_line;

typedef struct joined {
    pl_future base;
    stuck a;
    stuck b;
    pl_join2 join;
} joined;

static pl_poll_result joined_poll(pl_future *f, pl_context *cx)
{
    joined *self = (joined *)f;
    PL_ASYNC_BEGIN(self);
    self->a = (stuck){.base = PL_FUTURE_INIT(&stuck_vtable)};
    self->b = (stuck){.base = PL_FUTURE_INIT(&stuck_vtable)};
    self->join = pl_join2_make(&self->a.base, &self->b.base);
    join_line = __LINE__ + 1;
    PL_AWAIT(cx, &self->join);
    PL_ASYNC_END;
}

static void joined_drop(pl_future *f)
{
    joined *self = (joined *)f;
    if (self->base.resume != 0) {
        pl_drop_child(&self->join.base);
    }
}

static const pl_future_vtable joined_vtable = {"joined", joined_poll, joined_drop};

static int joined_setup(pl_executor *ex, void *state)
{
    (void)state;
    joined j = {.base = PL_FUTURE_INIT(&joined_vtable)};
    return PL_SPAWN(ex, j, "joiner", NULL);
}

static const pl_scenario camp_join = {
    .name = "camp_join",
    .setup = joined_setup,
};

static const pl_scenario *const extra[] = {&selftest_sometimes, &selftest_nondet, &camp_clean,
                                           &camp_keep,          &camp_stuck,      &camp_join,
                                           &selftest_premise,   NULL};

/* ---- The CLI's findings ---------------------------------------------------- */

typedef struct cli_findings {
    int status;
    size_t n;
    char kind[8][32];
    long long seed[8]; /* -1: null */
    char message[8][4096];
    char first_json[16384]; /* the first finding's JSON line */
} cli_findings;

/* Copies the JSON string value after `"key":` in line, unescaping \" and
 * \\ and \n; "" when absent or null. */
static void json_field(const char *line, const char *key, char *buf, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    size_t n = 0;
    buf[0] = '\0';
    if (p == NULL || p[strlen(pat)] != '"') {
        return;
    }
    for (p += strlen(pat) + 1; *p != '\0' && *p != '"' && n + 1 < len; p++) {
        if (*p == '\\' && p[1] != '\0') {
            p++;
            buf[n++] = *p == 'n' ? '\n' : *p;
        } else {
            buf[n++] = *p;
        }
    }
    buf[n] = '\0';
}

static void parse_findings(const char *out, cli_findings *cf)
{
    for (const char *line = out; *line != '\0';) {
        size_t len = strcspn(line, "\n");
        char *l = strndup(line, len);
        cr_assert_not_null(l);
        if (strncmp(l, "{\"kind\":", 8) == 0 && cf->n == 0) {
            snprintf(cf->first_json, sizeof cf->first_json, "%s", l);
        }
        if (strncmp(l, "{\"kind\":", 8) == 0 && cf->n < 8) {
            json_field(l, "kind", cf->kind[cf->n], sizeof cf->kind[0]);
            json_field(l, "message", cf->message[cf->n], sizeof cf->message[0]);
            const char *s = strstr(l, "\"seed\":");
            cf->seed[cf->n] = s != NULL && s[7] != 'n' ? atoll(s + 7) : -1;
            cf->n++;
        }
        free(l);
        line += len + (line[len] == '\n');
    }
}

/* Runs `pollen run NAME --seeds LO..HI -j 1 --json` (plus flag) in a
 * child and collects its findings. */
static void cli_run(const char *name, const char *seeds, const char *flag, cli_findings *cf)
{
    memset(cf, 0, sizeof *cf);
    char dir[] = "/tmp/pollen-campaign-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    const char *args[] = {"run",     name,          "--seeds", seeds, "-j", "1", "--json",
                          "--quiet", "--no-shrink", "--out",   dir,   flag, NULL};
    child_ran r = child_pl_main(args, extra, -1);
    cf->status = r.status;
    parse_findings(r.out, cf);
    child_ran_free(&r);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static void lib_run_with(const pl_scenario *sc, uint64_t hi, bool check_det,
                         const pl_sim_options *so, pl_campaign_result *cr)
{
    pl_campaign_options co;
    pl_campaign_options_default(&co);
    co.seed_lo = 0;
    co.seed_hi = hi;
    co.check_determinism = check_det;
    co.sim = so;
    cr_assert_eq(pl_sim_campaign(sc, &co, cr), 0);
}

static void lib_run(const pl_scenario *sc, uint64_t hi, bool check_det, pl_campaign_result *cr)
{
    lib_run_with(sc, hi, check_det, NULL, cr);
}

/* The library's first finding is the CLI's (reported first, the lowest
 * seed), with the same count of findings. A clean range of a known-bug
 * scenario (sc->expect set) exits 4 from the CLI. */
static void assert_same(const pl_scenario *sc, const pl_campaign_result *cr,
                        const cli_findings *cf, bool same_message)
{
    cr_assert_eq(cr->findings, cf->n, "library %llu findings, CLI %zu",
                 (unsigned long long)cr->findings, cf->n);
    if (cf->n == 0) {
        cr_assert_eq(cf->status, sc->expect != NULL ? 4 : 0);
        return;
    }
    cr_assert_str_eq(pl_finding_name(cr->first.kind), cf->kind[0]);
    cr_assert_eq(cf->status, 10 + (int)cr->first.kind);
    cr_assert_eq(cr->first_has_seed, cf->seed[0] >= 0);
    if (cr->first_has_seed) {
        cr_assert_eq((long long)cr->first_seed, cf->seed[0]);
    }
    if (same_message) {
        cr_assert_str_eq(cr->first.message, cf->message[0]);
    }
}

/* ---- Tests ------------------------------------------------------------------ */

LEAK_TEST(campaign, a_sometimes_never_true_is_the_same_finding)
{
    pl_campaign_result cr;
    lib_run(&selftest_sometimes, 19, false, &cr);
    cr_assert_eq(cr.runs, 20);
    cr_assert_eq(cr.first.kind, PL_FINDING_ASSERTION);
    cr_assert_not_null(strstr(cr.first.message, "evaluated 20 times over the campaign and never"));
    cli_findings cf;
    cli_run("selftest_sometimes", "0..19", NULL, &cf);
    assert_same(&selftest_sometimes, &cr, &cf, true);
}

LEAK_TEST(campaign, sites_of_its_own_file_never_reached_are_the_same_findings)
{
    const pl_scenario *unreached = pl_scenario_find("selftest_unreached");
    cr_assert_not_null(unreached);
    pl_campaign_result cr;
    lib_run(unreached, 9, false, &cr);
    cr_assert_eq(cr.clean, 10);
    cr_assert_eq(cr.findings, 1);
    cr_assert_not_null(strstr(cr.first.message, "was never even reached over the campaign"));
    cli_findings cf;
    cli_run("selftest_unreached", "0..9", NULL, &cf);
    assert_same(unreached, &cr, &cf, true);
}

LEAK_TEST(campaign, a_clean_range_is_clean_in_both)
{
    pl_campaign_result cr;
    lib_run(&camp_clean, 9, true, &cr);
    cr_assert_eq(cr.findings, 0);
    cli_findings cf;
    cli_run("camp_clean", "0..9", "--check-determinism", &cf);
    assert_same(&camp_clean, &cr, &cf, true);
}

LEAK_TEST(campaign, the_determinism_check_finds_the_same_seed)
{
    pl_campaign_result cr;
    lib_run(&selftest_nondet, 9, true, &cr);
    cr_assert_eq(cr.first.kind, PL_FINDING_NONDETERMINISM);
    cr_assert(cr.first_has_seed);
    cr_assert_eq(cr.first_seed, 0);
    cr_assert_not_null(strstr(cr.first.message, "first difference at event"));
    cli_findings cf;
    cli_run("selftest_nondet", "0..9", "--check-determinism", &cf);
    /* The hashes in the message depend on the process's run count. */
    assert_same(&selftest_nondet, &cr, &cf, false);
}

LEAK_TEST(campaign, without_the_check_nondeterminism_goes_unseen_in_both)
{
    pl_campaign_result cr;
    lib_run(&selftest_nondet, 9, false, &cr);
    cr_assert_eq(cr.findings, 0);
    cli_findings cf;
    cli_run("selftest_nondet", "0..9", NULL, &cf);
    assert_same(&selftest_nondet, &cr, &cf, true);
}

LEAK_TEST(campaign, pl_sim_campaign_judges_pl_sometimes_too)
{
    pl_campaign_result cr;
    cr_assert_eq(
        pl_sim_campaign(&selftest_sometimes,
                        &(pl_campaign_options){.seed_lo = 0, .seed_hi = 4, .stop_at_first = true},
                        &cr),
        0);
    cr_assert_eq(cr.findings, 1);
    cr_assert_eq(cr.first.kind, PL_FINDING_ASSERTION);
    cr_assert(!cr.first_has_seed);
    /* An empty range runs nothing and judges nothing. */
    cr_assert_eq(
        pl_sim_campaign(&camp_clean,
                        &(pl_campaign_options){.seed_lo = 5, .seed_hi = 4, .stop_at_first = true},
                        &cr),
        0);
    cr_assert_eq(cr.runs, 0);
    cr_assert_eq(cr.findings, 0);
}

/* `--waker-rotation=off` is pl_sim_options.rotate_wakers = false: a
 * stale waker that only rotation makes stale is found with rotation on,
 * by both, and by neither with it off. */
LEAK_TEST(campaign, waker_rotation_off_is_the_same_in_both)
{
    pl_campaign_result cr;
    cli_findings cf;
    lib_run(&camp_keep, 9, false, &cr);
    cr_assert_eq(cr.first.kind, PL_FINDING_STALE_WAKER, "%s: %s", pl_finding_name(cr.first.kind),
                 cr.first.message);
    cli_run("camp_keep", "0..9", NULL, &cf);
    assert_same(&camp_keep, &cr, &cf, true);
    pl_sim_options so;
    pl_sim_options_default(&so);
    so.rotate_wakers = false;
    lib_run_with(&camp_keep, 9, false, &so, &cr);
    cr_assert_eq(cr.findings, 0, "%s", cr.first.message);
    cli_run("camp_keep", "0..9", "--waker-rotation=off", &cf);
    assert_same(&camp_keep, &cr, &cf, true);
}

/* A replay file records rotation off ("waker-rotation off") and its
 * replay reruns without rotation; a file without the key rotates, and a
 * bad value is a format error naming its line. */
LEAK_TEST(campaign, a_replay_file_records_waker_rotation_off)
{
    char path[] = "/tmp/pollen-rotation-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    pl_sim_options so;
    pl_sim_options_default(&so);
    so.source = PL_SIM_SOURCE_SEED;
    so.seed = 3;
    so.rotate_wakers = false;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(&camp_keep, &so, &r), 0);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "%s", r.finding.message);
    cr_assert_eq(pl_sim_write_replay(&camp_keep, &so, &r, path), 0);
    pl__replay file;
    char err[256] = "";
    cr_assert_eq(pl__replay_parse_file(path, &file, err, sizeof err), 0, "%s", err);
    cr_assert(file.rotation_off);
    /* The file's run options (as `replay` and `shrink` read them) run
     * without rotation: with it, this run finds a stale waker. */
    pl_sim_options ro;
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    cr_assert_eq(pl__replay_options(&file, &ro, knobs, sizeof knobs), 0);
    cr_assert(!ro.rotate_wakers);
    pl_sim_result again;
    cr_assert_eq(pl_sim_run(&camp_keep, &ro, &again), 0);
    pl__replay_free(&file);
    cr_assert_eq(again.hash, r.hash);
    cr_assert_eq(again.finding.kind, PL_FINDING_NONE, "%s", again.finding.message);
    pl_sim_result_free(&again);
    pl_sim_result_free(&r);
    unlink(path);

    static const char old[] = "pollen-replay 1\nseed 3\ndecisions 0\nend\n";
    cr_assert_eq(pl__replay_parse_buffer(old, strlen(old), &file, err, sizeof err), 0, "%s", err);
    cr_assert(!file.rotation_off);
    pl__replay_free(&file);
    static const char bad[] = "pollen-replay 1\nseed 3\nwaker-rotation maybe\ndecisions 0\nend\n";
    cr_assert_eq(pl__replay_parse_buffer(bad, strlen(bad), &file, err, sizeof err), PL_EFORMAT);
    cr_assert(strncmp(err, "line 3: ", 8) == 0, "%s", err);
    pl__replay_free(&file);
}

/* --json gives each parked task's backtrace as frames, outermost first,
 * and as a tree (one branch here), the same the library's finding has. */
LEAK_TEST(campaign, the_json_finding_has_the_parked_tasks_frames)
{
    pl_campaign_result cr;
    lib_run(&camp_stuck, 0, false, &cr);
    cr_assert_eq(cr.first.kind, PL_FINDING_DEADLOCK, "%s", cr.first.message);
    cr_assert_eq(cr.first.tasks_len, 1);
    cr_assert_eq(cr.first.tasks[0].frames[0].line, stuck_line);
    cli_findings cf;
    cli_run("camp_stuck", "0..0", NULL, &cf);
    assert_same(&camp_stuck, &cr, &cf, true);
    char want[512];
    snprintf(want, sizeof want,
             "\"parked\":[{\"task_id\":1,\"task\":\"waiter\",\"spawned_at\":{\"file\":"
             "\"test_campaign.c\",\"line\":%d,\"function\":\"stuck_setup\"},\"frames\":["
             "{\"function\":\"stuck_poll\",\"future\":\"stuck\",\"file\":\"test_campaign.c\","
             "\"line\":%d},{\"function\":\"pl_notified\",\"future\":\"pl_notified\","
             "\"file\":null,\"line\":null}],\"frames_cut\":false,\"tree\":"
             "{\"function\":\"stuck_poll\",\"future\":\"stuck\",\"file\":\"test_campaign.c\","
             "\"line\":%d,\"children\":[{\"function\":\"pl_notified\",\"future\":"
             "\"pl_notified\",\"file\":null,\"line\":null,\"children\":[]}]},"
             "\"tree_cut\":false}]",
             atoi(strchr(cr.first.tasks[0].spawn_site, ':') + 1), stuck_line, stuck_line);
    cr_assert_not_null(strstr(cf.first_json, want), "want %s in\n%s", want, cf.first_json);
}

/* A task parked in a join of two PENDING children: its JSON tree has
 * both branches, each with its await; frames stay the first branch. */
LEAK_TEST(campaign, the_json_tree_has_every_pending_branch)
{
    pl_campaign_result cr; /* in this process: notes the lines */
    lib_run(&camp_join, 0, false, &cr);
    cr_assert_eq(cr.first.kind, PL_FINDING_DEADLOCK, "%s", cr.first.message);
    cr_assert_eq(cr.first.tasks[0].tree_branches, 2);
    cli_findings cf;
    cli_run("camp_join", "0..0", NULL, &cf);
    assert_same(&camp_join, &cr, &cf, true);
    char stuck_node[512];
    snprintf(stuck_node, sizeof stuck_node,
             "{\"function\":\"stuck_poll\",\"future\":\"stuck\",\"file\":\"test_campaign.c\","
             "\"line\":%d,\"children\":[{\"function\":\"pl_notified\",\"future\":"
             "\"pl_notified\",\"file\":null,\"line\":null,\"children\":[]}]}",
             stuck_line);
    char want[2048];
    snprintf(want, sizeof want,
             "\"frames_cut\":false,\"tree\":{\"function\":\"joined_poll\",\"future\":"
             "\"joined\",\"file\":\"test_campaign.c\",\"line\":%d,\"children\":["
             "{\"function\":\"pl_join2\",\"future\":\"pl_join2\",\"file\":null,\"line\":null,"
             "\"children\":[%s,%s]}]},\"tree_cut\":false}]",
             join_line, stuck_node, stuck_node);
    cr_assert_not_null(strstr(cf.first_json, want), "want %s in\n%s", want, cf.first_json);
    cr_assert_not_null(strstr(cf.message[0], "`- pl_join2"), "%s", cf.message[0]);
}

/* ---- Premises (pl_assume) ---------------------------------------------------- */

/* A failed premise discards its run: neither a finding nor judged. */
LEAK_TEST(campaign, a_discarded_run_is_not_judged)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    selftest_premise_quiet = true;
    int kept = 0, discarded = 0;
    for (uint64_t seed = 0; seed < 20; seed++) {
        o.seed = seed;
        pl_sim_result r;
        cr_assert_eq(pl_sim_run(&selftest_premise, &o, &r), 0);
        /* Its task parked with no waker kept: an orphan, had it been judged. */
        cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "seed %llu: %s",
                     (unsigned long long)seed, r.finding.message);
        if (r.discarded) {
            discarded++;
            cr_assert_not_null(strstr(r.discarded_by, "pl_assume(self->draw == 0) failed "
                                                      "(cli_selftests.c:"),
                               "%s", r.discarded_by);
        } else {
            kept++;
            cr_assert_str_eq(r.discarded_by, "");
        }
        pl_sim_result_free(&r);
    }
    selftest_premise_quiet = false;
    cr_assert(kept > 0 && discarded > 0, "kept %d, discarded %d", kept, discarded);
}

/* The library counts the discarded runs; `pollen run` says how many and
 * warns when most were. */
LEAK_TEST(campaign, discarded_runs_are_counted_in_both)
{
    pl_campaign_result cr;
    selftest_premise_quiet = true;
    lib_run(&selftest_premise, 99, false, &cr);
    selftest_premise_quiet = false;
    cr_assert_eq(cr.findings, 0);
    cr_assert_eq(cr.clean, 100);
    cr_assert(cr.discarded > 50 && cr.discarded < 100, "%llu",
              (unsigned long long)cr.discarded);
    const char *args[] = {"run", "selftest_premise", "--seeds", "0..99", "-j", "2", NULL};
    child_ran r = child_pl_main(args, extra, -1);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    char want[96];
    snprintf(want, sizeof want, "discarded: %llu of 100 runs (a pl_assume premise failed)",
             (unsigned long long)cr.discarded);
    cr_assert_not_null(strstr(r.out, want), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "warning: most runs were discarded"), "%s", r.out);
    cr_assert_null(strstr(r.out, "| premise: drew"), "a range shows no clean seed's output");
    child_ran_free(&r);
}

/* The "discarded" count of a `run --json` summary (its first). */
static unsigned long long json_discarded(const char *out)
{
    const char *p = strstr(out, "\"discarded\":");
    cr_assert_not_null(p, "no \"discarded\" in:\n%s", out);
    return strtoull(p + strlen("\"discarded\":"), NULL, 10);
}

/* Writes text to dir/name. */
static void write_in(const char *dir, const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_geq(fputs(text, f), 0);
    cr_assert_eq(fclose(f), 0);
}

/* --json says how many runs were discarded, each shard its own, and
 * `merge` adds them up and warns as the whole range's `run` does. */
LEAK_TEST(campaign, discarded_runs_are_in_json_and_merge)
{
    char dir[] = "/tmp/pollen-discarded-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    const char *whole[] = {"run", "selftest_premise", "--seeds", "0..99", "--json", "--quiet", NULL};
    const char *one[] = {"run", "selftest_premise", "--seeds", "0..99", "--shard", "1/2",
                         "--json", "--quiet", NULL};
    const char *two[] = {"run", "selftest_premise", "--seeds", "0..99", "--shard", "2/2",
                         "--json", "--quiet", NULL};
    child_ran u = child_pl_main(whole, extra, -1);
    child_ran a = child_pl_main(one, extra, -1);
    child_ran b = child_pl_main(two, extra, -1);
    cr_assert_eq(u.status + a.status + b.status, 0, "%s%s%s", u.err, a.err, b.err);
    unsigned long long all = json_discarded(u.out);
    cr_assert(all > 50 && all < 100, "%llu", all);
    cr_assert_eq(json_discarded(a.out) + json_discarded(b.out), all);
    cr_assert_gt(json_discarded(a.out), 0);
    cr_assert_gt(json_discarded(b.out), 0);
    write_in(dir, "a.json", a.out);
    write_in(dir, "b.json", b.out);
    char pa[128], pb[128], want[96];
    snprintf(pa, sizeof pa, "%s/a.json", dir);
    snprintf(pb, sizeof pb, "%s/b.json", dir);
    const char *merge[] = {"merge", pa, pb, NULL};
    child_ran m = child_pl_main(merge, extra, -1);
    cr_assert_eq(m.status, 0, "%s%s", m.out, m.err);
    snprintf(want, sizeof want, "  discarded: %llu of 100 runs (a pl_assume premise failed)\n",
             all);
    cr_assert_not_null(strstr(m.out, want), "%s", m.out);
    cr_assert_not_null(strstr(m.out, "warning: most runs were discarded"), "%s", m.out);
    child_ran_free(&m);
    child_ran_free(&u);
    child_ran_free(&a);
    child_ran_free(&b);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

/* One seed asked for alone: what it printed is shown, clean as it is. */
LEAK_TEST(campaign, a_clean_seed_run_alone_shows_its_stdout)
{
    const char *args[] = {"run", "selftest_premise", "--seed", "3", NULL};
    child_ran r = child_pl_main(args, extra, -1);
    cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
    cr_assert_not_null(strstr(r.out, "selftest_premise: seed 3 ran clean\n"
                                     "  stdout of the run (16 bytes):\n"
                                     "    | premise: drew "),
                       "%s", r.out);
    child_ran_free(&r);
}
