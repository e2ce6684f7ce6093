/* fuzz/canary.c: a target that fails on purpose.
 *
 * It aborts on exactly the 4-byte input "PLFZ", so CI can prove the
 * pipeline (instrumentation, engine, crash files, the smoke script)
 * finds crashes at all: a fuzzing setup that silently finds nothing
 * looks exactly like a healthy one.
 */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    pl__fuzz_parse_flags(*argc, *argv);
    return 0;
}

/* How many leading bytes of the trigger the input matches. Each step is
 * its own branch so coverage rewards partial progress; the constant
 * comparisons also feed libFuzzer's table of interesting values. */
static int matched(const uint8_t *data, size_t size)
{
    if (size != 4 || data[0] != 'P') {
        return 0;
    }
    if (data[1] != 'L') {
        return 1;
    }
    if (data[2] != 'F') {
        return 2;
    }
    return data[3] != 'Z' ? 3 : 4;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int depth = matched(data, size);
    pl__fuzz_keep((uint64_t)depth);
    if (depth == 4) {
        char path[512];
        pl__fuzz_artifact(data, size, path, sizeof path);
        fprintf(stderr, "\n==pollen== canary found (%s): the fuzzing pipeline works\n\n", path);
        fflush(stderr);
        abort();
    }
    return 0;
}
