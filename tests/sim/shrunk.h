/* tests/sim/shrunk.h: shrinks a run's finding and checks what the shrunk
 * schedule says, for suites that show a zoo bug shrinking to its one
 * decisive fault: how many departures from production's order are left,
 * and a phrase of their one-line explanation. Needs Criterion and the
 * simulator's internal headers (the run record holds the decisions). */
#ifndef POLLEN_TESTS_SIM_SHRUNK_H
#define POLLEN_TESTS_SIM_SHRUNK_H

#include <criterion/criterion.h>
#include <string.h>

#include <pollen/sim.h>

#include "run_record.h"

/* Shrinks r (a run of sc with o that found something) and asserts that
 * `nonzero` departures are left and that their explanation says `says`. */
static inline void expect_shrunk(const pl_scenario *sc, const pl_sim_options *o,
                                 const pl_sim_result *r, size_t nonzero, const char *says)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    pl_sim_shrink_result sh;
    cr_assert_eq(
        pl_sim_shrink(sc, o, rec->decisions, rec->decisions_len, r->finding.kind, NULL, &sh), 0,
        "%s", sh.message);
    cr_assert_eq(sh.nonzero_after, nonzero, "%s", sh.explanation);
    cr_assert_not_null(strstr(sh.explanation, says), "%s", sh.explanation);
    pl_sim_shrink_result_free(&sh);
}

#endif
