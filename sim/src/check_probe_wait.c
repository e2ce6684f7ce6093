/* sim/src/check_probe_wait.c: the wait-condition oracle.
 *
 * Some bugs destroy the signal itself rather than the wake (a stored
 * permit nobody is told about, a "wakeup scheduled" flag stuck): a probe
 * poll of the parked task then changes nothing, and without this check
 * the finding would be a bare deadlock. A parked future says what it
 * waits for (pl_wait_declare; pollen's own primitives do it for their
 * users), the simulator keeps the declarations of each task's latest poll
 * (on_wait in oracle.c), and a parked task whose declared condition
 * already holds was forgotten by whoever made it hold.
 */
#include <stdio.h>
#include <string.h>

#include "check_probe_wait.h"
#include "sim_internal.h"

/* The file's name without its directories: __FILE__ depends on where the
 * build runs, and a finding must read the same in every build. */
static const char *base_name(const char *path)
{
    if (path == NULL) {
        return "?";
    }
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

static void report(pl__sim *s, const pl__task_info *ti, uint32_t id, const pl_wait *w,
                   const char *why)
{
    PL__SIM_ASSERT(pl__tasks_is_parked(ti) && ti->waits_len > 0);
    const char *object = w->object != NULL ? w->object : "a future";
    const char *condition = w->condition != NULL ? w->condition : "its wait condition";
    /* "while 1 permit is free" when holds() said how, else the condition. */
    char state[224];
    if (why[0] != '\0') {
        snprintf(state, sizeof state, "%s (it waits for %s)", why, condition);
    } else {
        snprintf(state, sizeof state, "%s holds", condition);
    }
    pl__sim_finding(s, PL_FINDING_LOST_WAKEUP, ti->task,
                    "'%s' (#%u) parked on %s (%s:%d) while %s: nobody woke it. It waits for "
                    "something that is already there, parked since step %llu (%.3f ms); its waker "
                    "clones alive: %u",
                    pl_task_name(ti->task), id, object, base_name(w->file), w->line, state,
                    (unsigned long long)ti->parked_step, (double)ti->parked_ns / 1e6,
                    pl_task_head_of(ti->task)->waker_clones);
}

/* The first declared condition of the task that holds, or NULL; its
 * holds() says how in why. */
static const pl_wait *holding_wait(const pl__sim *s, uint32_t id, char *why, size_t why_len)
{
    const pl__task_info *ti = &s->tasks.info[id];
    uint32_t n = ti->waits_len < PL__WAITS_MAX ? ti->waits_len : PL__WAITS_MAX;
    for (uint32_t i = 0; i < n; i++) {
        PL__SIM_ASSERT(id < s->probe.waits_cap[i]);
        const pl_wait *w = &s->probe.waits[i][id];
        why[0] = '\0';
        if (w->holds != NULL && w->holds(w->subject, why, why_len)) {
            return w;
        }
    }
    return NULL;
}

bool pl__probe_wait_of(pl__sim *s, uint32_t id)
{
    const pl__task_info *ti = &s->tasks.info[id];
    if (s->finding.kind != PL_FINDING_NONE || !pl__tasks_is_parked(ti) || ti->waits_len == 0) {
        return false;
    }
    char why[160];
    const pl_wait *w = holding_wait(s, id, why, sizeof why);
    if (w == NULL) {
        return false;
    }
    why[sizeof why - 1] = '\0';
    report(s, ti, id, w, why);
    return true;
}

bool pl__probe_waits(pl__sim *s)
{
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        if (pl__probe_wait_of(s, id)) {
            return true;
        }
    }
    return false;
}
