/* tests/sim/test_explain.c: the explanations of the zoo's cluster
 * findings name the message a link decision struck and what a crash lost.
 *
 * Each case reruns a committed shrunk replay (scenarios/replays/, found
 * through POLLEN_REPLAYS) once, as the shrinker's final run does (a list
 * source, events kept, its decisions captured), and asserts the exact
 * words of its explanation: one run each, no shrink.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pollen/sim.h>

#include "decide.h"
#include "leakcheck.h"
#include "replay.h"
#include "run.h"
#include "shrink.h"
#include "strategy.h"

TestSuite(explain, .fini = pl_test_leak_check);

/* The explanation of the committed replay of `name` (malloc'd). */
static char *explain_replay(const char *name)
{
    const char *dir = getenv("POLLEN_REPLAYS");
    cr_assert_not_null(dir, "POLLEN_REPLAYS names scenarios/replays/");
    char path[512];
    snprintf(path, sizeof path, "%s/%s.replay", dir, name);
    pl__replay rp;
    const pl_scenario *sc = NULL;
    int kind = 0;
    pl_sim_options o;
    char knobs[PL__DEC_KNOBS_TEXT_MAX], err[256];
    int rc = pl__shrink_load(path, &rp, &sc, &kind, &o, knobs, sizeof knobs, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    o.decisions = rp.decisions;
    o.decisions_len = rp.decisions_len;
    o.keep_events = true;
    pl__capture cap = {0};
    pl_sim_result r;
    cr_assert_eq(pl__sim_run_captured(sc, &o, &cap, &r), 0);
    cr_assert_eq((int)r.finding.kind, kind, "the replay reproduces its finding: %s",
                 r.finding.message);
    char *text = pl__shrink_explain(&r, &cap, &o);
    cr_assert_not_null(text);
    free(cap.notes);
    pl_sim_result_free(&r);
    pl__replay_free(&rp);
    return text;
}

static void expect_text(const char *name, const char *want)
{
    char *text = explain_replay(name);
    cr_assert_str_eq(text, want);
    free(text);
}

/* The partition struck as the primary replicated put 0 (a label the
 * zoo's code gives each word it sends). */
Test(explain, a_link_decision_names_the_message)
{
    expect_text("bug_repl_ack",
                "step 11 (3.000 ms): partition: link 10.0.0.1 -> 10.0.0.2 cut at 3.000 ms "
                "(one-way) as the 'put 0' from node 'primary' to node 'backup' was sent, healed "
                "at 131.000 ms\n");
}

/* A node's crash loses the put's record, by default: no decision says
 * it, the crash's note does. */
Test(explain, a_node_crash_names_the_lost_bytes)
{
    expect_text("bug_kv_ack",
                "step 5 (1.000 ms): disk: node 'server': fsync of 'db/log' took 0.500 ms\n"
                "step 5 (1.500 ms): node 'server' crashed at 1.500 ms, restarted at 2.500 ms\n"
                "step 5 (1.500 ms): disk crash: node 'server': 'db/log' lost 16 unsynced bytes "
                "(kept 0 of 16)\n");
}

/* The scenario's own crash (pl_sim_disk_crash) decides nothing, yet its
 * loss is listed. */
Test(explain, a_disk_crash_names_the_lost_bytes)
{
    expect_text("bug_log_ack",
                "step 3 (1.000 ms): disk: fsync of 'db/log' took 2.500 ms\n"
                "step 4 (3.300 ms): disk crash: 'db/log' lost 16 unsynced bytes (kept 0 of 16)\n");
}
