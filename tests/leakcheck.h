/* tests/leakcheck.h: make a leak visible as the test that caused it.
 *
 * LeakSanitizer reports at process exit, after Criterion recorded the
 * case as passed, and Criterion 2.4 ignores failures raised in a suite's
 * .fini. So each suite runs this check in its .fini: under ASan it prints
 * the leak report right after the test that leaked (naming it), and
 * tests/count.py, which produces CI's "N passed, N failed" line, counts
 * any LeakSanitizer report in a test's output as a failure. */
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
    }
}
#else
static inline void pl_test_leak_check(void) {}
#endif

#endif
