/* Production's generator (pollen/random.h) across fork().
 *
 * The child of a fork gets a copy of the forking thread's state; an
 * entropy-seeded one must not hand the child the parent's next values,
 * a pl_random_seed one is the program's choice and is kept. Each case
 * draws in the parent and in the child and compares through a pipe. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pollen/random.h>

TestSuite(random);

/* The next value in this process and in a child forked now. */
static void draw_across_fork(uint64_t *parent, uint64_t *child)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        uint64_t v = pl_random_u64();
        _exit(write(fds[1], &v, sizeof v) == (ssize_t)sizeof v ? 0 : 1);
    }
    close(fds[1]);
    *parent = pl_random_u64();
    cr_assert_eq(read(fds[0], child, sizeof *child), (ssize_t)sizeof *child);
    close(fds[0]);
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

Test(random, a_forked_child_does_not_repeat_the_parent_s_values)
{
    (void)pl_random_u64(); /* seeded from entropy before the fork */
    uint64_t parent, child;
    draw_across_fork(&parent, &child);
    cr_assert_neq(parent, child, "parent and child both drew %llu", (unsigned long long)parent);
}

Test(random, a_seeded_generator_is_kept_across_fork)
{
    pl_random_seed(42);
    uint64_t parent, child;
    draw_across_fork(&parent, &child);
    cr_assert_eq(parent, child);
    pl_random_seed(42);
    cr_assert_eq(pl_random_u64(), parent);
}
