/* tests/bench/campaign.c: workload 6, campaign throughput.
 *
 * Seeds per second of the lessons users run campaigns on: the outbox
 * relay (scenarios/lessons/outbox.c, "outbox") and the Handle state
 * machine over TCP (scenarios/lessons/handle.c, "handle"). Each is one
 * pl_sim_campaign over seeds 1..SEEDS with the default options (every
 * oracle on, decisions recorded), the way `pollen run` runs it; the
 * lesson sources are compiled into pollen-bench, so the scenarios are
 * found by name. The clock covers the whole campaign, scenario setup and
 * teardown included: that is what a user waits for. Any finding fails.
 */
#include <stdio.h>

#include "bench.h"

#define CAMPAIGN_SEEDS_DEFAULT 20000u

static const char *const campaign_scenarios[] = {"outbox", "handle"};

#define CAMPAIGN_SCENARIOS_LEN (sizeof campaign_scenarios / sizeof campaign_scenarios[0])

/* Runs one scenario's campaign and prints its line. Returns 0 or 1. */
static int campaign_one(const char *name, uint64_t seeds)
{
    const pl_scenario *sc = pl_scenario_find(name);
    if (sc == NULL) {
        bench_fail("campaign", "scenario '%s' is not linked into pollen-bench", name);
        return 1;
    }
    pl_campaign_result r;
    uint64_t t0 = bench_clock_ns();
    int rc = pl_sim_campaign(
        sc, &(pl_campaign_options){.seed_lo = 1, .seed_hi = seeds, .stop_at_first = true}, &r);
    uint64_t elapsed = bench_clock_ns() - t0;
    if (rc != 0) {
        bench_fail("campaign", "%s: the campaign did not run: %s", name, pl_strerror(rc));
        return 1;
    }
    if (r.findings != 0 || r.runs != seeds) {
        bench_fail("campaign", "%s: seed %llu: finding %s: %s (%llu of %llu seeds ran)", name,
                   (unsigned long long)r.first_seed, pl_finding_name(r.first.kind),
                   r.first.message, (unsigned long long)r.runs, (unsigned long long)seeds);
        return 1;
    }
    char extra[128];
    snprintf(extra, sizeof extra, "seeds=%llu scenario=%s distinct_traces=%llu",
             (unsigned long long)seeds, name, (unsigned long long)r.distinct_hashes);
    double secs = (double)(elapsed ? elapsed : 1) / 1e9;
    bench_line("campaign", true, "seeds_per_sec", (double)seeds / secs, 1, "seeds/s", extra);
    return 0;
}

int bench_campaign(uint64_t n, bool sim)
{
    (void)sim; /* a campaign is always under the simulator */
    uint64_t seeds = n != 0 ? n : CAMPAIGN_SEEDS_DEFAULT;
    int failed = 0;
    for (size_t i = 0; i < CAMPAIGN_SCENARIOS_LEN; i++) {
        failed |= campaign_one(campaign_scenarios[i], seeds);
    }
    return failed;
}
