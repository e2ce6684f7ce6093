/* pollen/time.h: the time type. */
#ifndef POLLEN_TIME_H
#define POLLEN_TIME_H

#include <stdint.h>

/* Signed 64-bit nanoseconds of the executor's monotonic clock (virtual
 * under the simulator). Units go last in names: deadline_ns, delay_ns. */
typedef int64_t pl_time;

#define PL_NS ((pl_time)1)
#define PL_US ((pl_time)1000)
#define PL_MS ((pl_time)1000000)
#define PL_S ((pl_time)1000000000)

/* "No deadline": larger than any reachable time. */
#define PL_TIME_NEVER INT64_MAX

#endif
