/* File futures on the real backend, in a fresh temporary directory: open
 * flags, positional reads and writes, write_all, sync, size, rename,
 * unlink, listing, errors, and that every future completes in its first
 * poll (regular files are always ready). No descriptor outlives a test. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pollen/error.h>
#include <pollen/executor.h>
#include <pollen/file.h>

#include "leakcheck.h"

TestSuite(file, .fini = pl_test_leak_check, .timeout = 60);

typedef struct fixture {
    char root[256];
    pl_executor *ex;
    pl_dir dir;
    int fds_before;
} fixture;

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    cr_assert_not_null(d);
    int n = 0;
    while (readdir(d) != NULL) {
        n++;
    }
    closedir(d);
    return n;
}

static void setup(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    fx->fds_before = count_fds();
    snprintf(fx->root, sizeof fx->root, "%s/pollen-file-XXXXXX", P_tmpdir);
    cr_assert_not_null(mkdtemp(fx->root));
    cr_assert_eq(pl_executor_create(&fx->ex, NULL), 0);
    cr_assert_eq(pl_dir_open(fx->ex, &fx->dir, fx->root, false), 0);
}

static void remove_tree(const char *root)
{
    DIR *d = opendir(root);
    cr_assert_not_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            char p[512];
            snprintf(p, sizeof p, "%s/%s", root, e->d_name);
            struct stat st;
            cr_assert_eq(lstat(p, &st), 0);
            if (S_ISDIR(st.st_mode)) {
                remove_tree(p);
            } else {
                cr_assert_eq(unlink(p), 0);
            }
        }
    }
    closedir(d);
    cr_assert_eq(rmdir(root), 0);
}

static void teardown(fixture *fx)
{
    pl_dir_close(&fx->dir);
    pl_executor_destroy(fx->ex);
    remove_tree(fx->root);
    cr_assert_eq(count_fds(), fx->fds_before, "a descriptor leaked");
}

/* Polls once with a noop context: files must be ready at once. */
#define POLL_ONCE(exec, fut)                                                                       \
    do {                                                                                           \
        pl_context cx_ = {.waker = pl_waker_noop(), .ex = (exec)};                                 \
        cr_assert_eq(pl_poll((pl_future *)&(fut), &cx_), PL_READY, "not ready at once");           \
    } while (0)

static pl_file open_file(fixture *fx, const char *name, uint32_t flags, int want)
{
    pl_file_open op = pl_file_open_make(&fx->dir, name, flags, 0644);
    POLL_ONCE(fx->ex, op);
    cr_assert_eq(op.result, want, "open %s: %s", name, pl_err_name(op.result));
    pl_file f = pl_file_open_take(&op);
    pl_drop(&op.base);
    return f;
}

static ssize_t write_at(fixture *fx, pl_file *f, const char *s, uint64_t off)
{
    pl_file_pwrite w = pl_file_write_all(f, s, strlen(s), off);
    cr_assert_eq(PL_BLOCK_ON(fx->ex, w), 0);
    return w.result;
}

static ssize_t read_at(fixture *fx, pl_file *f, char *buf, size_t len, uint64_t off)
{
    pl_file_pread r = pl_file_read(f, buf, len, off);
    POLL_ONCE(fx->ex, r);
    pl_drop(&r.base);
    return r.result;
}

static int sync_of(fixture *fx, pl_file_fsync s)
{
    cr_assert_eq(PL_BLOCK_ON(fx->ex, s), 0);
    return s.result;
}

Test(file, write_read_at_offsets_and_size)
{
    fixture fx;
    setup(&fx);
    pl_file f = open_file(&fx, "log.dat", PL_FILE_READ | PL_FILE_WRITE | PL_FILE_CREATE, 0);
    cr_assert_eq(write_at(&fx, &f, "hello", 0), 5);
    cr_assert_eq(write_at(&fx, &f, "world", 10), 5);
    cr_assert_eq(pl_file_size(&f), 15);
    char buf[32] = {0};
    cr_assert_eq(read_at(&fx, &f, buf, sizeof buf, 0), 15);
    cr_assert_eq(memcmp(buf, "hello\0\0\0\0\0world", 15), 0, "a hole reads as zeros");
    cr_assert_eq(read_at(&fx, &f, buf, 3, 11), 3);
    cr_assert_eq(memcmp(buf, "orl", 3), 0);
    cr_assert_eq(read_at(&fx, &f, buf, sizeof buf, 15), 0, "end of file");
    pl_file_pwrite once = pl_file_write(&f, "!", 1, 15);
    POLL_ONCE(fx.ex, once);
    pl_drop(&once.base);
    cr_assert_eq(once.result, 1);
    cr_assert_eq(sync_of(&fx, pl_file_sync(&f)), 0);
    cr_assert_eq(sync_of(&fx, pl_file_datasync(&f)), 0);
    cr_assert_eq(sync_of(&fx, pl_dir_sync(&fx.dir)), 0);
    pl_file_close(&f);
    cr_assert_null(f.src);
    pl_file_close(&f); /* closed: no-op */
    teardown(&fx);
}

Test(file, open_flags)
{
    fixture fx;
    setup(&fx);
    open_file(&fx, "none", PL_FILE_READ, PL_ENOENT);
    pl_file f = open_file(&fx, "a", PL_FILE_WRITE | PL_FILE_CREATE | PL_FILE_EXCL, 0);
    cr_assert_eq(write_at(&fx, &f, "abc", 0), 3);
    pl_file_close(&f);
    open_file(&fx, "a", PL_FILE_WRITE | PL_FILE_CREATE | PL_FILE_EXCL, PL_EEXIST);
    open_file(&fx, "a/b", PL_FILE_READ, PL_EINVAL);
    open_file(&fx, "..", PL_FILE_READ, PL_EINVAL);
    open_file(&fx, "a", 0, PL_EINVAL);
    open_file(&fx, "a", PL_FILE_READ | 0x100u, PL_EINVAL);
    char longname[300];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    open_file(&fx, longname, PL_FILE_READ | PL_FILE_CREATE, PL_ENAMETOOLONG);
    f = open_file(&fx, "a", PL_FILE_READ, 0);
    cr_assert_eq(pl_file_size(&f), 3);
    cr_assert_lt(write_at(&fx, &f, "x", 0), 0, "read-only file refuses writes");
    pl_file_close(&f);
    f = open_file(&fx, "a", PL_FILE_WRITE | PL_FILE_TRUNC, 0);
    cr_assert_eq(pl_file_size(&f), 0);
    pl_file_close(&f);
    teardown(&fx);
}

/* A file taken nowhere is closed by the future's drop. */
Test(file, open_not_taken_is_closed_by_drop)
{
    fixture fx;
    setup(&fx);
    int before = count_fds();
    pl_file_open op = pl_file_open_make(&fx.dir, "x", PL_FILE_WRITE | PL_FILE_CREATE, 0600);
    POLL_ONCE(fx.ex, op);
    cr_assert_eq(op.result, 0);
    cr_assert_eq(count_fds(), before + 1);
    pl_drop(&op.base);
    cr_assert_eq(count_fds(), before);
    teardown(&fx);
}

static ssize_t list_of(fixture *fx, char *buf, size_t len)
{
    pl_dir_listing l = pl_dir_list(&fx->dir, buf, len);
    POLL_ONCE(fx->ex, l);
    pl_drop(&l.base);
    return l.result;
}

static int change(fixture *fx, pl_dir_change c)
{
    POLL_ONCE(fx->ex, c);
    pl_drop(&c.base);
    return c.result;
}

Test(file, rename_unlink_list)
{
    fixture fx;
    setup(&fx);
    const char *names[] = {"snap.tmp", "b", "a"};
    for (int i = 0; i < 3; i++) {
        pl_file f = open_file(&fx, names[i], PL_FILE_WRITE | PL_FILE_CREATE, 0);
        pl_file_close(&f);
    }
    char buf[64];
    ssize_t used = list_of(&fx, buf, sizeof buf);
    cr_assert_eq(used, 13);
    cr_assert_eq(memcmp(buf, "a\0b\0snap.tmp\0", 13), 0, "sorted, NUL after each");
    cr_assert_eq(list_of(&fx, buf, 5), PL_EMSGSIZE);
    cr_assert_eq(change(&fx, pl_dir_rename(&fx.dir, "snap.tmp", "snap")), 0);
    cr_assert_eq(change(&fx, pl_dir_rename(&fx.dir, "a", "b")), 0, "replaces b");
    cr_assert_eq(change(&fx, pl_dir_rename(&fx.dir, "nothing", "c")), PL_ENOENT);
    cr_assert_eq(change(&fx, pl_dir_rename(&fx.dir, "b", NULL)), PL_EINVAL);
    cr_assert_eq(change(&fx, pl_dir_unlink(&fx.dir, "nothing")), PL_ENOENT);
    used = list_of(&fx, buf, sizeof buf);
    cr_assert_eq(used, 7);
    const char *n1 = pl_dir_next_name(buf, (size_t)used, NULL);
    const char *n2 = pl_dir_next_name(buf, (size_t)used, n1);
    cr_assert_str_eq(n1, "b");
    cr_assert_str_eq(n2, "snap");
    cr_assert_null(pl_dir_next_name(buf, (size_t)used, n2));
    cr_assert_eq(change(&fx, pl_dir_unlink(&fx.dir, "b")), 0);
    cr_assert_eq(change(&fx, pl_dir_unlink(&fx.dir, "snap")), 0);
    cr_assert_eq(list_of(&fx, buf, sizeof buf), 0);
    teardown(&fx);
}

Test(file, dir_open_create_and_errors)
{
    fixture fx;
    setup(&fx);
    char path[300];
    snprintf(path, sizeof path, "%s/sub", fx.root);
    pl_dir sub;
    cr_assert_eq(pl_dir_open(fx.ex, &sub, path, false), PL_ENOENT);
    cr_assert_null(sub.src);
    cr_assert_eq(pl_dir_open(fx.ex, &sub, path, true), 0);
    pl_dir_close(&sub);
    cr_assert_eq(pl_dir_open(fx.ex, &sub, path, true), 0, "exists: opened");
    pl_dir_close(&sub);
    cr_assert_eq(pl_dir_open(fx.ex, &sub, "", false), PL_EINVAL);
    pl_file closed = {NULL};
    cr_assert_eq(pl_file_size(&closed), PL_EBADF);
    pl_file_pread r = pl_file_read(&closed, path, 1, 0);
    POLL_ONCE(fx.ex, r);
    cr_assert_eq(r.result, PL_EBADF);
    teardown(&fx);
}
