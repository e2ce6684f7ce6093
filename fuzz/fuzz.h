/* fuzz/fuzz.h: what the fuzz targets, their helpers and the standalone
 * driver share.
 *
 * Every target defines the libFuzzer entry points below. Under libFuzzer
 * the engine calls them; with -Dfuzzing_engine=none, fuzz/main.c does,
 * once per input file, so crashers replay under any compiler.
 */
#ifndef POLLEN_FUZZ_H
#define POLLEN_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Runs one input. Returns 0, or -1 for an input the target rejects
 * (libFuzzer then keeps it out of the corpus). A bug aborts. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Called once before the first input with the program's arguments. */
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The file being replayed by fuzz/main.c, or NULL under libFuzzer (whose
 * crash file is named after the input's SHA-1, see pl__fuzz_artifact). */
extern const char *pl__fuzz_input_path;

/* Remembers libFuzzer's -artifact_prefix= and -exact_artifact_path=
 * flags, so a finding can name the file libFuzzer is about to write. */
void pl__fuzz_parse_flags(int argc, char **argv);

/* Writes the path of the crash file for this input into buf: the
 * replayed file, or libFuzzer's "<prefix>crash-<sha1>". */
void pl__fuzz_artifact(const uint8_t *data, size_t size, char *buf, size_t len);

/* Folds a result into a volatile sink so the optimizer must compute it. */
void pl__fuzz_keep(uint64_t value);

#endif
