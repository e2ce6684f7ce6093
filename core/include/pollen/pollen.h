/* pollen/pollen.h: everything an application needs.
 *
 * pollen: poll/waker async code for C, run in production on epoll and,
 * unchanged, under a deterministic simulator (pollen/sim.h).
 */
#ifndef POLLEN_POLLEN_H
#define POLLEN_POLLEN_H

#include "pollen/error.h"
#include "pollen/time.h"
#include "pollen/waker.h"
#include "pollen/future.h"
#include "pollen/system.h"
#include "pollen/executor.h"
#include "pollen/timer.h"
#include "pollen/sync.h"
#include "pollen/combinators.h"
#include "pollen/io.h"
#include "pollen/file.h"
#include "pollen/dump.h"
#include "pollen/random.h"

#define PL_VERSION_STRING "0.1.0"

#endif
