/* tests/sim/cli_selftests.h: scenarios shared by the CLI harness
 * (cli_harness.c) and test_campaign.c; defined in cli_selftests.c. */
#ifndef POLLEN_TEST_CLI_SELFTESTS_H
#define POLLEN_TEST_CLI_SELFTESTS_H

#include <stdbool.h>

#include <pollen/sim.h>

/* Sleeps longer on every run of the process: nondeterministic. */
extern const pl_scenario selftest_nondet;

/* pl_sometimes("the impossible happens") is reached and never true. */
extern const pl_scenario selftest_sometimes;

/* pl_assume(draw == 0) of a draw in 0..3: three runs in four are discarded;
 * setup prints "premise: drew N". */
extern const pl_scenario selftest_premise;
/* Set: it prints nothing (an in-process run, beside a TAP stream). */
extern bool selftest_premise_quiet;

#endif
