/* sim/src/isolate/progress.c: the progress counter (progress.h), kept in
 * the library: the observer writes it while a budget is armed, and the
 * CLI's budget (cpu_budget.c, which no library file calls) reads it. */
#include "progress.h"

pl__sim_progress pl__progress;
