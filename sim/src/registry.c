/* sim/src/registry.c: the scenario registry (the pl_scenarios section
 * the linker gathers), the finding kinds' names, the scenario check's
 * message helper and the default run options.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pollen/sim.h"

/* ---- Registry --------------------------------------------------------- */

extern const pl_scenario *const __start_pl_scenarios[] __attribute__((weak));
extern const pl_scenario *const __stop_pl_scenarios[] __attribute__((weak));

const pl_scenario *const *pl_scenarios(size_t *count)
{
    if (__start_pl_scenarios == NULL || __stop_pl_scenarios == NULL) {
        *count = 0;
        return NULL;
    }
    *count = (size_t)(__stop_pl_scenarios - __start_pl_scenarios);
    return __start_pl_scenarios;
}

const pl_scenario *pl_scenario_find(const char *name)
{
    size_t n;
    const pl_scenario *const *all = pl_scenarios(&n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(all[i]->name, name) == 0) {
            return all[i];
        }
    }
    return NULL;
}

int pl_check_fail(char *msg, size_t msg_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_len, fmt, ap);
    va_end(ap);
    return 1;
}

static const char *const finding_names[PL_FINDING__COUNT] = {
    "none",      "orphan",     "lost_wakeup", "deadlock", "stale_waker",
    "poll_after_ready", "double_drop", "waker_leak", "task_leak", "livelock",
    "assertion", "nondeterminism", "crash", "linearizability", "liveness",
};

const char *pl_finding_name(pl_finding_kind kind)
{
    return (unsigned)kind < PL_FINDING__COUNT ? finding_names[kind] : "unknown";
}

int pl_finding_from_name(const char *name)
{
    for (int k = 0; k < PL_FINDING__COUNT; k++) {
        if (strcmp(finding_names[k], name) == 0) {
            return k;
        }
    }
    return PL_EINVAL;
}

/* ---- Options ---------------------------------------------------------- */

void pl_sim_options_default(pl_sim_options *o)
{
    memset(o, 0, sizeof *o);
    o->strategy = "random";
    o->rotate_wakers = true;
    o->keep_decisions = true;
}
