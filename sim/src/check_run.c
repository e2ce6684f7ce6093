/* sim/src/check_run.c: the run's own verdicts.
 *
 * What no oracle family owns: the scenario's setup failing, the executor
 * failing, the simulator running out of memory where going on would
 * make a run pass untested, and the scenario's own check at the end of
 * a clean run. pl__run_judge is the order in which run.c consults the
 * checkers' verdicts once pl_run has returned.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "check_history.h"
#include "sim_internal.h"

/* A setup error says which call refused and why when a call of the
 * simulator's API recorded it; the code alone ("invalid argument") left
 * the user guessing which of the setup's calls failed. */
void pl__run_setup_failed(pl__sim *s, int rc)
{
    if (s->call_error[0] != '\0') {
        pl__sim_finding(s, PL_FINDING_ASSERTION, NULL, PL_SIM_SETUP_FAILED ": %s: %s",
                        pl_strerror(rc), s->call_error);
    } else {
        pl__sim_finding(s, PL_FINDING_ASSERTION, NULL,
                        PL_SIM_SETUP_FAILED ": %s (returned by the scenario's setup)",
                        pl_strerror(rc));
    }
}

int pl__run_call_error(pl__sim *s, int rc, const char *fmt, ...)
{
    PL__SIM_ASSERT(rc < 0);
    if (s == NULL) {
        return rc;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->call_error, sizeof s->call_error, fmt, ap);
    va_end(ap);
    return rc;
}

bool pl_finding_is_setup_error(const pl_finding *f)
{
    static const char prefix[] = PL_SIM_SETUP_FAILED ": ";
    return f->kind == PL_FINDING_ASSERTION && f->task_id == 0 && f->step == 0 &&
           strncmp(f->message, prefix, sizeof prefix - 1) == 0;
}

void pl__run_out_of_memory(pl__sim *s, const pl_task *t, const char *what)
{
    if (what == NULL) {
        pl__sim_finding(s, PL_FINDING_ASSERTION, t, "simulator out of memory");
    } else {
        pl__sim_finding(s, PL_FINDING_ASSERTION, t, "simulator out of memory: %s", what);
    }
}

/* A deadlock says who is stuck; the scenario's check usually says what
 * it costs (an item stranded, a reply never sent), so it is appended. */
static void annotate_deadlock(pl__sim *s, const pl_scenario *sc, void *state)
{
    char msg[512] = "";
    if (sc->check == NULL || sc->check(s->ex, state, msg, sizeof msg) == 0 || msg[0] == '\0') {
        return;
    }
    size_t used = strlen(s->finding.message);
    snprintf(s->finding.message + used, sizeof s->finding.message - used,
             "\n  and the scenario check fails: %s", msg);
}

static void scenario_check(pl__sim *s, const pl_scenario *sc, void *state)
{
    char msg[512] = "";
    if (sc->check != NULL && sc->check(s->ex, state, msg, sizeof msg) != 0) {
        pl__sim_finding(s, PL_FINDING_ASSERTION, NULL, "scenario check failed: %s",
                        msg[0] ? msg : "(no message)");
    }
}

void pl__run_judge(pl__sim *s, const pl_scenario *sc, void *state, int rc)
{
    PL__SIM_ASSERT(s->run_over); /* pl_run returned */
    if (rc == PL_EDEADLK) {
        pl__oracle_quiescence(s);
    } else if (rc < 0 && rc != PL_ECANCELED) {
        pl__sim_finding(s, PL_FINDING_ASSERTION, NULL, "the executor failed: %s",
                        pl_strerror(rc));
    }
    if (s->finding.kind == PL_FINDING_DEADLOCK || s->stuck_finding) {
        annotate_deadlock(s, sc, state);
    }
    if (s->finding.kind != PL_FINDING_NONE) {
        return;
    }
    pl__props_verdict(s);
    pl__history_verdict(s);
    if (s->finding.kind == PL_FINDING_NONE) {
        scenario_check(s, sc, state);
    }
}
