/* tests/sim/test_explain.c: the explanations of the zoo's cluster
 * findings name the message a link decision struck and what a crash lost,
 * and a decision not consulted writes no words over the one before it.
 *
 * Each case reruns a committed shrunk replay (scenarios/replays/, found
 * through POLLEN_REPLAYS) once, as the shrinker's final run does (a list
 * source, events kept, its decisions captured), and asserts the exact
 * words of its explanation: one run each, no shrink. The last case runs
 * a scenario of its own twice, seeded, then captured.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pollen/io.h>
#include <pollen/random.h>
#include <pollen/sim.h>

#include "decide.h"
#include "leakcheck.h"
#include "replay.h"
#include "run_record.h"
#include "run.h"
#include "shrink.h"
#include "strategy.h"

TestSuite(explain, .fini = pl_test_leak_check);

/* The explanation of a captured rerun of sc with o (malloc'd): the run
 * must reproduce `kind`. */
static char *explain_run(const pl_scenario *sc, pl_sim_options *o, int kind)
{
    o->keep_events = true;
    pl__capture cap = {0};
    pl_sim_result r;
    cr_assert_eq(pl__sim_run_captured(sc, o, &cap, &r), 0);
    cr_assert_eq((int)r.finding.kind, kind, "the rerun reproduces its finding: %s",
                 r.finding.message);
    char *text = pl__shrink_explain(&r, &cap, o);
    cr_assert_not_null(text);
    free(cap.notes);
    pl_sim_result_free(&r);
    return text;
}

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
    char *text = explain_run(sc, &o, kind);
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

/* ---- A decision not consulted says nothing ------------------------------ */

/* Draws a die, then writes a byte to a pipe and reads it back: with
 * io_fault off, the write's and the read's fault decisions are not
 * consulted and draw nothing, so the die's is the latest decision drawn
 * when the reactor would say which fault it picked. */
typedef struct roller {
    pl_future base;
    pl_pipe_reader r;
    pl_pipe_writer w;
    char byte;
    pl_io_write wr;
    pl_io_read rd;
} roller;

static pl_poll_result roller_poll(pl_future *f, pl_context *cx)
{
    roller *p = (roller *)f;
    PL_ASYNC_BEGIN(p);
    if (pl_pipe_open(cx->ex, &p->r, &p->w) != 0) {
        return PL_READY;
    }
    p->byte = (char)('1' + pl_random_below(6));
    p->wr = pl_pipe_write(&p->w, &p->byte, 1);
    PL_AWAIT(cx, &p->wr);
    p->rd = pl_pipe_read(&p->r, &p->byte, 1);
    PL_AWAIT(cx, &p->rd);
    pl_pipe_writer_close(&p->w);
    pl_pipe_reader_close(&p->r);
    PL_ASYNC_END;
}

static void roller_drop(pl_future *f)
{
    roller *p = (roller *)f;
    pl_drop_child(&p->wr.base);
    pl_drop_child(&p->rd.base);
    pl_pipe_writer_close(&p->w);
    pl_pipe_reader_close(&p->r);
}

static const pl_future_vtable roller_vt = {"roller", roller_poll, roller_drop};

static int roller_setup(pl_executor *ex, void *state)
{
    (void)state;
    roller p = {.base = PL_FUTURE_INIT(&roller_vt)};
    return PL_SPAWN(ex, p, "roller", NULL);
}

static const pl_scenario roller_sc = {.name = "test_explain_roller", .setup = roller_setup};

/* The die's line says what it drew, not the words of the fault decision
 * that followed it unconsulted ("random: no fault on pipe (read end)"
 * when that decision wrote into the die's note). */
Test(explain, a_decision_not_consulted_leaves_the_previous_words)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = "io_fault=off,io_latency=off,spurious_wake=off";
    o.seed = 1;
    pl_sim_result first;
    cr_assert_eq(pl_sim_run(&roller_sc, &o, &first), 0);
    cr_assert_eq(first.finding.kind, PL_FINDING_NONE, "%s", first.finding.message);
    const pl__run_record *rec = pl__sim_result_record(&first);
    cr_assert_eq(rec->decisions_len, 1);
    cr_assert_eq(rec->decisions[0].kind, PL_DECIDE_RANDOM);
    uint32_t v = rec->decisions[0].value;
    cr_assert_gt(v, 0, "seed 1 leaves production's draw: its line is listed");
    o.source = PL_SIM_SOURCE_LIST;
    o.decisions = rec->decisions;
    o.decisions_len = rec->decisions_len;
    char *text = explain_run(&roller_sc, &o, PL_FINDING_NONE);
    char want[128];
    snprintf(want, sizeof want, "step 1 (0.000 ms): random: pl_random_below() drew %u\n", v - 1);
    cr_assert_str_eq(text, want);
    free(text);
    pl_sim_result_free(&first);
}
