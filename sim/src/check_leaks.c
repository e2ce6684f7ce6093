/* sim/src/check_leaks.c: the leak checker.
 *
 * Verdict only, at the end of a clean run, once the tasks were cancelled
 * and the scenario torn down (run.c): a waker clone still alive or a
 * task still allocated was leaked by the program. No init, no event
 * hook: it reads the task table oracle.c keeps.
 *
 * Sockets, directories and files still open are not leaks: a correct
 * program may end with its listener and its log open. By the time this
 * runs they were released as at a crash (pl__nodes_end_run, node.h),
 * with the wakers their registrations held, so this verdict and a
 * LeakSanitizer around many runs (a fuzzer's) agree.
 */
#include "check_leaks.h"
#include "sim_internal.h"

void pl__leaks_verdict(pl__sim *s)
{
    PL__SIM_ASSERT(s->run_over); /* only once the tasks were cancelled */
    for (uint32_t id = 1; id <= s->tasks.spawned && s->finding.kind == PL_FINDING_NONE; id++) {
        pl__task_info *ti = &s->tasks.info[id];
        if (ti->forgotten) {
            continue; /* its node crashed: the crash discarded what it held */
        }
        uint32_t clones = pl__tasks_live_clones(ti);
        if (clones > 0) {
            const char *holder = pl__tasks_holder_name(s, pl__tasks_clone_holder(ti, id));
            pl__sim_finding(s, PL_FINDING_WAKER_LEAK, ti->task,
                            "%u clone(s) of the waker of task #%u were never dropped (latest "
                            "made while polling %s)",
                            clones, id, holder);
        } else if (ti->task != NULL) {
            pl__sim_finding(s, PL_FINDING_TASK_LEAK, ti->task,
                            "task '%s' (#%u) is still allocated at the end of the run: a handle "
                            "was never released (pl_task_release)",
                            pl_task_name(ti->task), id);
        }
    }
}
