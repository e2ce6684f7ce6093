/* core/backend/thread_clock.c: the monotonic clock and sleep of
 * pollen/thread.h in production (core/src may not call a clock). */
#include <errno.h>
#include <time.h>

#include "pollen/time.h"

pl_time pl__thread_clock_now(void);
void pl__thread_clock_sleep(pl_time ns);

pl_time pl__thread_clock_now(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (pl_time)ts.tv_sec * PL_S + (pl_time)ts.tv_nsec;
}

/* Sleeps the whole interval: a signal does not shorten it. */
void pl__thread_clock_sleep(pl_time ns)
{
    if (ns <= 0) {
        return;
    }
    struct timespec ts = {.tv_sec = (time_t)(ns / PL_S), .tv_nsec = (long)(ns % PL_S)};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
    }
}
