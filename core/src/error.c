/* core/src/error.c: messages and names for PL_E* codes. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "pollen/error.h"

const char *pl_strerror(int code)
{
    if (code == 0) {
        return "success";
    }
    switch (code) {
#define PL__ERR_MSG(name, value, msg)                                       \
    case (value):                                                           \
        return (msg);
        PL_ERRNO_MAP(PL__ERR_MSG)
#undef PL__ERR_MSG
    default:
        return "unknown error";
    }
}

const char *pl_err_name(int code)
{
    if (code == 0) {
        return "0";
    }
    switch (code) {
#define PL__ERR_NAME(name, value, msg)                                      \
    case (value):                                                           \
        return "PL_" #name;
        PL_ERRNO_MAP(PL__ERR_NAME)
#undef PL__ERR_NAME
    default:
        return "PL_E?";
    }
}

void pl__assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "pollen: assertion failed: %s (%s:%d)\n", expr, file, line);
    fflush(stderr);
    abort();
}
