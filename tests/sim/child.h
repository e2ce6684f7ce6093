/* tests/sim/child.h: running code in a child process, and what it printed.
 *
 * Tests whose subject may exit, crash or print (pl_main, a campaign that
 * dies on purpose, the `pollen` binary) run it in a forked child. This is
 * the one way tests do that: the child's stdout and stderr go to
 * unlinked temporary files, which the parent reads whole after the child
 * has ended (no pipe to fill and block on). Criterion tests only: every
 * failure is a cr_assert.
 */
#ifndef POLLEN_TESTS_CHILD_H
#define POLLEN_TESTS_CHILD_H

#include <sys/types.h>

typedef struct child_ran {
    int status; /* exit status, or 128 + the signal that ended the child */
    char *out;  /* stdout, NUL-terminated ("" when it went to a caller's fd) */
    char *err;  /* stderr, NUL-terminated */
} child_ran;

/* What the child runs; its return value is the child's exit status. */
typedef int (*child_body)(void *arg);

/* An unlinked temporary file opened read-write; the caller closes it. */
int child_temp_fd(void);

/* The whole text of the file fd from offset 0, NUL-terminated (free it);
 * closes fd. */
char *child_slurp(int fd);

/* Waits for pid: its exit status, or 128 + the signal that killed it. */
int child_wait(pid_t pid);

/* Starts body(arg) in a forked child with stdout on out and stderr on
 * err (the parent keeps its descriptors); returns the child's pid, for
 * child_wait. For tests that talk to the child while it runs. */
pid_t child_start(child_body body, void *arg, int out, int err);

/* Runs body(arg) in a forked child with stdout on out_fd (kept open for
 * the caller) or, when out_fd < 0, on a temporary file read back into
 * .out; stderr always read back into .err. Free with child_ran_free. */
child_ran child_run(child_body body, void *arg, int out_fd);

/* pl_main(argc, argv, extra) in a child, argv[0] "pollen" then args (NULL
 * terminated, at most 62 of them); extra may be NULL. */
struct pl_scenario;
child_ran child_pl_main(const char *const *args, const struct pl_scenario *const *extra,
                        int out_fd);

void child_ran_free(child_ran *r);

#endif
