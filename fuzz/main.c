/* fuzz/main.c: the driver for -Dfuzzing_engine=none.
 *
 * Links in place of libFuzzer and runs LLVMFuzzerTestOneInput once per
 * file named on the command line (a directory means every regular file
 * in it, in name order), so corpora and crashers replay under gcc, in
 * meson tests and in a debugger. Arguments starting with '-' are
 * libFuzzer flags and are ignored, so the same command lines work.
 *
 * --expect-crash: run each input in a child process and succeed only if
 * every one of them crashes (aborts, or exits nonzero). Regression tests
 * use it to prove known bugs are still found.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* strdup, and fork under -std=c11 */
#endif
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fuzz.h"

/* Above any target's input cap: bigger files are rejected unread. */
#define FILE_MAX ((size_t)1 << 20)

typedef struct driver {
    bool expect_crash;
    unsigned ran;
    unsigned failed; /* inputs that did not behave as expected */
} driver;

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return NULL;
    }
    /* One spare byte: a file that fills the buffer is too big. */
    uint8_t *buf = malloc(FILE_MAX + 1);
    size_t n = buf != NULL ? fread(buf, 1, FILE_MAX + 1, f) : 0;
    bool bad = buf == NULL || ferror(f) || n > FILE_MAX;
    fclose(f);
    if (bad) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* Runs one input in a child; true when the child crashed. */
static bool crashes(const uint8_t *data, size_t len)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return false;
    }
    if (pid == 0) {
        LLVMFuzzerTestOneInput(data, len);
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0) {
        return false;
    }
    return WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0);
}

static void run_file(driver *d, const char *path)
{
    size_t len = 0;
    uint8_t *data = read_all(path, &len);
    if (data == NULL) {
        fprintf(stderr, "fuzz: cannot read %s (or larger than %zu bytes)\n", path, FILE_MAX);
        d->failed++;
        return;
    }
    pl__fuzz_input_path = path;
    fprintf(stderr, "running %s (%zu bytes)\n", path, len);
    if (d->expect_crash) {
        if (!crashes(data, len)) {
            fprintf(stderr, "fuzz: %s did not crash, but it should\n", path);
            d->failed++;
        }
    } else {
        LLVMFuzzerTestOneInput(data, len);
    }
    d->ran++;
    free(data);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Collects a directory's entry names, sorted so runs are repeatable. */
static size_t list_dir(DIR *dir, char ***out)
{
    size_t n = 0;
    size_t cap = 0;
    char **names = NULL;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.') {
            continue;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **grown = realloc(names, cap * sizeof *names);
            if (grown == NULL) {
                break;
            }
            names = grown;
        }
        names[n] = strdup(e->d_name);
        n += names[n] != NULL;
    }
    qsort(names, n, sizeof *names, by_name);
    *out = names;
    return n;
}

static void run_dir(driver *d, const char *path)
{
    DIR *dir = opendir(path);
    if (dir == NULL) {
        perror(path);
        d->failed++;
        return;
    }
    char **names;
    size_t n = list_dir(dir, &names);
    closedir(dir);
    for (size_t i = 0; i < n; i++) {
        char full[4096];
        snprintf(full, sizeof full, "%s/%s", path, names[i]);
        struct stat st;
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
            run_file(d, full);
        }
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    driver d = {0};
    for (int i = 1; i < argc; i++) {
        d.expect_crash |= strcmp(argv[i], "--expect-crash") == 0;
    }
    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (argv[i][0] == '-') {
            continue;
        }
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            run_dir(&d, argv[i]);
        } else {
            run_file(&d, argv[i]);
        }
    }
    /* Run as a fuzzer by mistake (this build has no libFuzzer): say what
     * the binary does instead of quietly running nothing. */
    if (d.ran == 0 && d.failed == 0) {
        fprintf(stderr,
                "fuzz: no input given; this target links pollen's replay driver, not\n"
                "  libFuzzer, and only replays inputs: %s FILE|DIR...\n",
                argc > 0 ? argv[0] : "fuzz_target");
    }
    /* Expecting crashes from no input at all is a broken test setup. */
    if (d.expect_crash && d.ran == 0) {
        fprintf(stderr, "fuzz: --expect-crash, but no input was given\n");
        d.failed++;
    }
    fprintf(stderr, "%u inputs run, %u not as expected\n", d.ran, d.failed);
    return d.failed == 0 ? 0 : 1;
}
