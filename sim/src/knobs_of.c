/* sim/src/knobs_of.c: the one options -> knobs function (knobs_of.h)
 * and pl_sim_knobs_text on it, over knobs.c's table. A leaf beside
 * strategy.c's parser, apart from run.c so that the simulator (sim.c)
 * can call it without a call cycle, and apart from knobs.c, which the
 * stream and the trace call: it calls nothing that runs a scenario. */
#include "knobs_of.h"

#include <stdio.h>
#include <string.h>

#include "strategy.h"

int pl__sim_knobs_of(const pl_sim_options *o, pl__dec_knobs *k, char *err, size_t err_len)
{
    pl__strategy_spec spec;
    if (pl__strategy_parse(o->strategy, &spec, err, err_len) != 0) {
        return PL_EINVAL;
    }
    pl__dec_knobs_default(k);
    if (spec.kind == PL__STRATEGY_SWARM) {
        if (o->knob_values != NULL) {
            if (err != NULL && err_len > 0) {
                snprintf(err, err_len, "swarm draws every knob from the seed: knob_values "
                                       "must be NULL (the knobs text still applies on top)");
            }
            return PL_EINVAL;
        }
        pl__dec_knobs_swarm(k, o->seed);
    } else if (o->knob_values != NULL &&
               pl__dec_knobs_from_public(o->knob_values, k, err, err_len) != 0) {
        return PL_EINVAL;
    }
    if (o->knobs != NULL && o->knobs[0] != '\0' &&
        pl__dec_knobs_parse(k, o->knobs, strlen(o->knobs), err, err_len) != 0) {
        return PL_EINVAL;
    }
    return 0;
}

int pl_sim_knobs_text(const pl_sim_options *opts, char *buf, size_t len)
{
    /* What pl_sim_options_default (registry.c) gives for the fields read
     * here, without a copy of the whole options per call. */
    static const pl_sim_options defaults = {.strategy = "random"};
    if (opts == NULL) {
        opts = &defaults;
    }
    pl__dec_knobs k;
    if (pl__sim_knobs_of(opts, &k, NULL, 0) != 0) {
        return PL_EINVAL;
    }
    pl__dec_knobs_format(&k, buf, len);
    return 0;
}
