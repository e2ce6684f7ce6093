/* sim/src/check_props.h: the property checker (check_props.c). Its event
 * hooks are sim.h's macros (pl_always, pl_eventually, pl_sometimes),
 * which reach the run through pl__sim_current(); its state is pl__props
 * (pl__sim.props), zeroed by pl__sim_init and freed by pl__props_free.
 */
#ifndef POLLEN_SIM_CHECK_PROPS_H
#define POLLEN_SIM_CHECK_PROPS_H

#include "pollen/sim.h"
#include "sites.h"

typedef struct pl__sim pl__sim;

typedef struct pl__props {
    pl__site_table eventually; /* each pl_eventually site's latest evaluation */
    /* pl_sometimes, this run's: (hits, reached) per site, by its index in
     * pl__sometimes_sites, and per site PL__SOMETIMES_LAST bytes of its
     * last false message while not yet true ("": none). Allocated at the
     * first site met (NULL before, or when memory ran out); the run
     * record takes them over (run_record.h). */
    uint32_t *sometimes;
    char *sometimes_last;
} pl__props;

/* The verdict at the end of a clean run, or at the quiet phase's
 * deadline (quiet.h): fails the pl_eventually sites whose latest
 * evaluation was false, as a finding of `kind` (assertion; liveness with
 * a quiet phase), `when` ("" or " by 300.000 ms ...") after "true". */
void pl__props_verdict(pl__sim *s, pl_finding_kind kind, const char *when);
void pl__props_free(pl__props *p);

#endif
