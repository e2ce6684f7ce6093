/* tests/leakcheck.h: make a leak visible as the test that caused it.
 *
 * LeakSanitizer reports at process exit, after Criterion recorded the
 * case as passed, and Criterion 2.4 ignores failures raised in a suite's
 * .fini. Two ways around it: LEAK_TEST (below) runs the check at the end
 * of the test's own body, so the leaking case fails; a suite's
 * `.fini = pl_test_leak_check` prints the report right after the test
 * that leaked, and tests/count.py, which produces CI's "N passed, N
 * failed" line, counts any LeakSanitizer report in a test's output as a
 * failure. */
#ifndef POLLEN_TEST_LEAKCHECK_H
#define POLLEN_TEST_LEAKCHECK_H

#include <criterion/criterion.h>
#include <stdio.h>

#if defined(__SANITIZE_ADDRESS__)
#define PL_TEST_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PL_TEST_LSAN 1
#endif
#endif

#ifdef PL_TEST_LSAN
#include <sanitizer/lsan_interface.h>
static inline void pl_test_leak_check(void)
{
    if (__lsan_do_recoverable_leak_check() != 0) {
        fprintf(stderr, "pollen: the test above leaked memory\n");
        /* Fails the case when called from a test body (LEAK_TEST below);
         * from a .fini Criterion ignores it, and count.py still counts
         * the report. */
        cr_assert_fail("memory leaked (see the LeakSanitizer report above)");
    }
}
#else
static inline void pl_test_leak_check(void) {}
#endif

/* Defines a Criterion test that runs the leak check at the end of its own
 * body. The check in a suite's .fini only prints (Criterion has already
 * reported the case); this one makes the leaking case itself fail. Use it
 * as `LEAK_TEST(suite, name) { ... }`. */
#define LEAK_TEST(suite, name)                                                                     \
    static void suite##_##name##_body(void);                                                       \
    Test(suite, name)                                                                              \
    {                                                                                              \
        suite##_##name##_body();                                                                   \
        pl_test_leak_check();                                                                      \
    }                                                                                              \
    static void suite##_##name##_body(void)

#endif
