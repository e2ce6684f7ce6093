/* sim/src/sim_assert.h: the simulator's always-on assertion.
 *
 * As core's PL_ASSERT, on in every build (a broken invariant in the
 * simulator would silently turn into a wrong verdict): every file of
 * sim/src asserts through it, never through assert(), which NDEBUG
 * builds drop. pl__assert_fail (core) prints the expression and aborts.
 */
#ifndef POLLEN_SIM_ASSERT_H
#define POLLEN_SIM_ASSERT_H

_Noreturn void pl__assert_fail(const char *expr, const char *file, int line);

#define PL__SIM_ASSERT(cond)                                                \
    do {                                                                    \
        if (!(cond)) {                                                      \
            pl__assert_fail(#cond, __FILE__, __LINE__);                     \
        }                                                                   \
    } while (0)

#endif
