/* Error codes: names, messages and errno compatibility. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <pollen/error.h>

Test(error, codes_are_negated_errno)
{
    cr_assert_eq(PL_EAGAIN, -EAGAIN);
    cr_assert_eq(PL_ENOMEM, -ENOMEM);
    cr_assert_eq(PL_ECONNREFUSED, -ECONNREFUSED);
    cr_assert_lt(PL_ECLOSED, 0);
}

Test(error, every_code_has_a_name_and_a_message)
{
    int codes[] = {
#define X(name, value, msg) value,
        PL_ERRNO_MAP(X)
#undef X
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        cr_assert_str_neq(pl_strerror(codes[i]), "unknown error");
        cr_assert_eq(strncmp(pl_err_name(codes[i]), "PL_E", 4), 0);
        cr_assert_str_neq(pl_err_name(codes[i]), "PL_E?");
        for (size_t j = 0; j < i; j++) {
            cr_assert_neq(codes[i], codes[j], "codes are distinct");
        }
    }
}

Test(error, unknown_and_zero)
{
    cr_assert_str_eq(pl_strerror(0), "success");
    cr_assert_str_eq(pl_strerror(-99999), "unknown error");
    cr_assert_str_eq(pl_err_name(-99999), "PL_E?");
    cr_assert_str_eq(pl_err_name(PL_ETIMEDOUT), "PL_ETIMEDOUT");
    cr_assert_str_eq(pl_strerror(PL_ECLOSED), "channel closed");
}
