/* sim/src/oracle.h: the observer (oracle.c): records events and the task
 * table, raises nothing, and forwards to the checkers' event hooks. */
#ifndef POLLEN_SIM_ORACLE_H
#define POLLEN_SIM_ORACLE_H

#include "pollen/observer.h"

typedef struct pl__sim pl__sim;

extern const pl_observer pl__sim_observer;
/* The poll watch's hooks, installed in s->watch (pl__sim_init). */
void pl__oracle_watch_init(pl__sim *s);

#endif
