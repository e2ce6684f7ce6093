/* sim/src/check_leaks.h: the leak checker (check_leaks.c). No state of
 * its own: it reads the task table once the run is torn down.
 */
#ifndef POLLEN_SIM_CHECK_LEAKS_H
#define POLLEN_SIM_CHECK_LEAKS_H

typedef struct pl__sim pl__sim;

/* The verdict at the end of a clean run, after the teardown: waker
 * clones alive, tasks still allocated. */
void pl__leaks_verdict(pl__sim *s);

#endif
