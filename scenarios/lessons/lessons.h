/* scenarios/lessons/lessons.h: small helpers the lesson scenarios share.
 *
 * Private to scenarios/lessons/: nothing here is part of pollen's API.
 * The helpers are what every user of pollen ends up writing once.
 */
#ifndef POLLEN_LESSONS_H
#define POLLEN_LESSONS_H

#include <stdarg.h>
#include <stdio.h>

#include <pollen/pollen.h>

/* Drops a child future a coroutine owns, unless it was never initialised
 * (a zeroed field has no vtable) or someone already dropped it (a second
 * pl_drop is a contract violation the simulator reports).
 *
 * Why a coroutine needs this: the executor drops a task's future when the
 * task completes or is cancelled. If it is cancelled while suspended in a
 * PL_AWAIT, the child it awaits still holds a clone of the task's waker
 * (in a timer, a wait list, an I/O source). Dropping the child releases
 * that clone; forgetting to is a waker leak. Dropping a child that already
 * returned READY is allowed and releases nothing. */
static inline void drop_child(pl_future *child)
{
    if (child->vtable != NULL && (child->flags & PL_FUTURE_DROPPED) == 0) {
        pl_drop(child);
    }
}

/* Writes a check() failure message and returns 1, so a check reads
 * `return check_failed(msg, len, "got %d", x);`. */
__attribute__((format(printf, 3, 4))) static inline int check_failed(char *msg, size_t len,
                                                                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
    return 1;
}

#endif
