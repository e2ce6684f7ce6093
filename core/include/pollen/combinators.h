/* pollen/combinators.h: join and select over borrowed child futures.
 *
 * Children are borrowed by pointer: they live in the caller's struct (so
 * their outputs stay readable there) and must not move once the
 * combinator has been polled. A combinator polls them only through
 * pl_poll, with the context it was polled with, so each child stores the
 * latest waker itself; nothing here allocates or stores a waker.
 *
 * All combinators are lazy (init polls nothing) and tolerate spurious
 * polls: each poll polls every unfinished child once, in index order, and
 * a poll a child did not ask for is a spurious poll the child tolerates.
 * Dropping a combinator drops (pl_drop) every child that neither finished
 * nor was already dropped; finished children are left to the caller.
 * Executor thread only; may be used from inside a poll (that is what
 * they are for). See timer.h for pl_timeout.
 */
#ifndef POLLEN_COMBINATORS_H
#define POLLEN_COMBINATORS_H

#include <stddef.h>
#include <stdint.h>

#include "pollen/future.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Join of two ------------------------------------------------------
 * READY when both children are. A child already finished before the
 * first poll counts as finished and is not polled. No output: read the
 * children's own outputs. */
typedef struct pl_join2 {
    pl_future base;
    pl_future *a;
    pl_future *b;
} pl_join2;

/* `a` and `b` point to future structs (first member pl_future), borrowed
 * until the join is READY or dropped. */
pl_join2 pl_join2_make(pl_future *a, pl_future *b);

/* ---- Join of N --------------------------------------------------------
 * READY when every child is; n may be 0 (READY at the first poll). */
typedef struct pl_join_all {
    pl_future base;
    pl_future *const *children; /* borrowed array of n pointers */
    size_t n;
    size_t remaining;           /* children not yet READY; set on first poll */
} pl_join_all;

/* `children` (the array and every future it points to) is borrowed
 * until the join is READY or dropped. */
pl_join_all pl_join_all_make(pl_future *const *children, size_t n);

/* ---- Select -----------------------------------------------------------
 * Polls children in index order; the first to return READY wins: its
 * index becomes the output and every other child that has not finished
 * is dropped with pl_drop before the select returns READY. Biased: when
 * several are ready in the same poll, the lowest index wins. A child
 * already finished before a poll wins without being polled. Dropping an
 * unfinished select drops all unfinished children. */
typedef struct pl_select {
    pl_future base;
    pl_future *const *children; /* borrowed array of n pointers */
    size_t n;
    size_t index;               /* output: the winner, valid after READY */
} pl_select;

/* `children`: n (> 0) pointers, borrowed until READY or drop. */
pl_select pl_select_make(pl_future *const *children, size_t n);

#ifdef __cplusplus
}
#endif
#endif
