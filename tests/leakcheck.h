/* tests/leakcheck.h: fail a Criterion test when it leaked memory.
 *
 * LeakSanitizer reports at process exit, after Criterion has already
 * recorded the test as passed, so each suite runs this in its .fini and
 * turns a leak into a failure of the test that caused it. */
#ifndef POLLEN_TEST_LEAKCHECK_H
#define POLLEN_TEST_LEAKCHECK_H

#include <criterion/criterion.h>

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
        cr_assert_fail("memory leaked (see the LeakSanitizer report above)");
    }
}
#else
static inline void pl_test_leak_check(void) {}
#endif

#endif
