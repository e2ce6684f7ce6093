/* sim/src/real.c: a cluster scenario on the real backend (real.h): the
 * run in progress, the node the current code runs on, the nodes'
 * directories. The bottom of the real backend's files: node.c boots the
 * nodes, real_system.c maps addresses and paths, real_run.c runs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "real.h"
#include "sim_assert.h"

/* One real run at a time: the CLI runs each scenario in a child of its
 * own, and the node calls have no executor argument to find it by. */
static _Thread_local pl__real *current_real;

pl__real *pl__real_current(void) { return current_real; }

void pl__real_set_current(pl__real *r) { current_real = r; }

uint32_t pl__real_node_current(const pl__real *r)
{
    return r->nodes.booting != 0 ? r->nodes.booting : r->polling;
}

int pl__real_refuse(const char *call)
{
    static pl__real *told; /* the run that was told already */
    if (current_real != NULL && told != current_real) {
        told = current_real;
        fprintf(stderr,
                "pollen: %s: node faults (crash, restart, pause, isolation, split, heal) are "
                "the simulator's; on the real backend the call does nothing and returns "
                "PL_ENOSYS\n",
                call);
    }
    return PL_ENOSYS;
}

/* ---- Node directories ---------------------------------------------------- */

int pl__real_node_dir(pl__real *r, uint32_t n, char *buf, size_t len)
{
    PL__SIM_ASSERT(n != 0 && n < r->nodes.len);
    if (r->root[0] == '\0') {
        const char *tmp = getenv("TMPDIR");
        if (tmp == NULL || tmp[0] == '\0' || strlen(tmp) > sizeof r->root - 32) {
            tmp = P_tmpdir;
        }
        snprintf(r->root, sizeof r->root, "%s/pollen-real-XXXXXX", tmp);
        if (mkdtemp(r->root) == NULL) {
            r->root[0] = '\0';
            return -errno;
        }
    }
    int w = snprintf(buf, len, "%s/%s", r->root, r->nodes.list[n].def.name);
    if (w < 0 || (size_t)w >= len) {
        return PL_ENAMETOOLONG;
    }
    if (mkdir(buf, 0700) != 0 && errno != EEXIST) {
        return -errno;
    }
    return 0;
}

