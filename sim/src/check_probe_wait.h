/* sim/src/check_probe_wait.h: the wait conditions, part of the probes'
 * family (check_probe_wait.c explains them; only check_probe.c calls
 * them). A parked task with a declared wait condition (pl_wait_declare in
 * its latest poll) that holds is a lost_wakeup finding.
 */
#ifndef POLLEN_SIM_CHECK_PROBE_WAIT_H
#define POLLEN_SIM_CHECK_PROBE_WAIT_H

#include <stdbool.h>
#include <stdint.h>

typedef struct pl__sim pl__sim;

/* pl__probe_waits looks at every parked task, pl__probe_wait_of at task
 * `id` only. Each returns true when it raised a finding, and does nothing
 * once one exists. Only at probe points. */
bool pl__probe_waits(pl__sim *s);
bool pl__probe_wait_of(pl__sim *s, uint32_t id);

#endif
