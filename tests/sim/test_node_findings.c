/* tests/sim/test_node_findings.c: findings that name a cluster node's
 * parked tasks ("store/server") outlive the run that made them.
 *
 * A node's task names live in the run's node table, which the run frees.
 * A finding must carry its own copy: a campaign's first finding is read
 * after its run, and a CLI worker sends its finding to the parent, which
 * prints it (text and --json). These tests read those names after the
 * run, through the library and through the CLI; under ASan a name that
 * points into the freed table is a heap-use-after-free.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pollen/sim.h>

#include "child.h"

#define PARKED_NAME "store/server"

static const char *const zoo_names[] = {"bug_node_register_late", "bug_node_wake_no_flag"};
static const char *const zoo_kinds[] = {"lost_wakeup", "deadlock"};

/* ---- Through the library --------------------------------------------------- */

static void assert_parked_named(const pl_finding *f)
{
    cr_assert_geq(f->tasks_len, 1u, "the finding lists no parked task");
    cr_assert_str_eq(f->tasks[0].name, PARKED_NAME);
    cr_assert_str_eq(f->task_name, PARKED_NAME);
    cr_assert_not_null(f->tasks[0].spawn_function);
    cr_assert_str_eq(f->tasks[0].spawn_function, "store_boot");
}

static void campaign_keeps_parked_names(size_t which)
{
    const pl_scenario *sc = pl_scenario_find(zoo_names[which]);
    cr_assert_not_null(sc);
    pl_campaign_result cr;
    cr_assert_eq(pl_sim_campaign(sc, &(pl_campaign_options){.seed_lo = 0, .seed_hi = 99}, &cr), 0);
    cr_assert_geq(cr.findings, 1u);
    cr_assert_str_eq(pl_finding_name(cr.first.kind), zoo_kinds[which]);
    assert_parked_named(&cr.first);
}

Test(node_findings, campaign_lost_wakeup_names_parked) { campaign_keeps_parked_names(0); }

Test(node_findings, campaign_deadlock_names_parked) { campaign_keeps_parked_names(1); }

/* A finding copied out of its run, with later runs in between, still
 * names its task: nothing it holds points into a run's memory. */
Test(node_findings, copied_finding_survives_later_runs)
{
    const pl_scenario *sc = pl_scenario_find("bug_node_wake_no_flag");
    cr_assert_not_null(sc);
    pl_campaign_result first;
    cr_assert_eq(pl_sim_campaign(sc, &(pl_campaign_options){.seed_lo = 0, .seed_hi = 9}, &first),
                 0);
    cr_assert_geq(first.findings, 1u);
    pl_finding kept = first.first;
    pl_campaign_result again;
    cr_assert_eq(pl_sim_campaign(pl_scenario_find("fix_node_wake_no_flag"),
                                 &(pl_campaign_options){.seed_lo = 0, .seed_hi = 49}, &again),
                 0);
    cr_assert_eq(again.findings, 0u);
    assert_parked_named(&kept);
}

/* ---- Through the CLI (workers send findings to the parent) ----------------- */

static child_ran cli_run(const char *name, bool json, char *dir)
{
    cr_assert_not_null(mkdtemp(dir));
    const char *args[] = {"run", name, "--seeds", "0..99", "-j", "2", "--out", dir,
                          json ? "--json" : "--no-shrink", NULL};
    return child_pl_main(args, NULL, -1);
}

static void remove_dir(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static void cli_text_names_parked(size_t which)
{
    char dir[] = "/tmp/pollen-node-findings-XXXXXX";
    child_ran r = cli_run(zoo_names[which], false, dir);
    cr_assert_eq(r.status, which == 0 ? 12 : 13, "exit %d, stderr: %s", r.status, r.err);
    char want[64];
    snprintf(want, sizeof want, "FINDING %s in %s", zoo_kinds[which], zoo_names[which]);
    cr_assert_not_null(strstr(r.out, want), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "'" PARKED_NAME "' (#"), "%s", r.out);
    child_ran_free(&r);
    remove_dir(dir);
}

static void cli_json_names_parked(size_t which)
{
    char dir[] = "/tmp/pollen-node-findings-XXXXXX";
    child_ran r = cli_run(zoo_names[which], true, dir);
    cr_assert_eq(r.status, which == 0 ? 12 : 13, "exit %d, stderr: %s", r.status, r.err);
    const char *parked = strstr(r.out, "\"parked\":[{");
    cr_assert_not_null(parked, "%s", r.out);
    cr_assert_not_null(strstr(parked, "\"task\":\"" PARKED_NAME "\""), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "\"task\":\"" PARKED_NAME "\",\"task_id\""), "%s", r.out);
    child_ran_free(&r);
    remove_dir(dir);
}

Test(node_findings, cli_text_lost_wakeup) { cli_text_names_parked(0); }

Test(node_findings, cli_text_deadlock) { cli_text_names_parked(1); }

Test(node_findings, cli_json_lost_wakeup) { cli_json_names_parked(0); }

Test(node_findings, cli_json_deadlock) { cli_json_names_parked(1); }
