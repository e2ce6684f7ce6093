/* core/backend/file.c: the real system's files: the ordinary syscalls.
 *
 * Regular files are always ready, so nothing here says PL_EAGAIN: every
 * file future completes in its first poll. Interrupted calls are retried
 * (EINTR), and names are checked the way the simulator checks them, so a
 * program sees the same PL_EINVAL on both.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "internal.h"
#include "pollen/error.h"
#include "pollen/file.h"

/* A single path component: not empty, no '/', not "." or "..". */
static int name_check(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || strchr(name, '/') != NULL || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0) {
        return PL_EINVAL;
    }
    return len > PL_FILE_NAME_MAX ? PL_ENAMETOOLONG : 0;
}

int pl__posix_dir_open(void *self, const char *path, int create)
{
    (void)self;
    if (create && mkdir(path, 0777) < 0 && errno != EEXIST) {
        return -errno;
    }
    int fd;
    do {
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

int pl__posix_file_open(void *self, int dir, const char *name, uint32_t flags, uint32_t mode)
{
    (void)self;
    int rc = name_check(name);
    if (rc < 0) {
        return rc;
    }
    bool rd = (flags & PL_FILE_READ) != 0;
    bool wr = (flags & PL_FILE_WRITE) != 0;
    int oflags = O_CLOEXEC | (rd && wr ? O_RDWR : wr ? O_WRONLY : O_RDONLY);
    oflags |= (flags & PL_FILE_CREATE) != 0 ? O_CREAT : 0;
    oflags |= (flags & PL_FILE_EXCL) != 0 ? O_EXCL : 0;
    oflags |= (flags & PL_FILE_TRUNC) != 0 && wr ? O_TRUNC : 0;
    int fd;
    do {
        fd = openat(dir, name, oflags, (mode_t)mode);
    } while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

ssize_t pl__posix_file_read(void *self, int handle, void *buf, size_t len, uint64_t offset)
{
    (void)self;
    ssize_t n;
    do {
        n = pread(handle, buf, len, (off_t)offset);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

ssize_t pl__posix_file_write(void *self, int handle, const void *buf, size_t len, uint64_t offset)
{
    (void)self;
    ssize_t n;
    do {
        n = pwrite(handle, buf, len, (off_t)offset);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

int pl__posix_file_sync(void *self, int handle, int data_only)
{
    (void)self;
    int rc;
    do {
        rc = data_only ? fdatasync(handle) : fsync(handle);
    } while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : 0;
}

int64_t pl__posix_file_size(void *self, int handle)
{
    (void)self;
    struct stat st;
    if (fstat(handle, &st) < 0) {
        return -errno;
    }
    return S_ISDIR(st.st_mode) ? PL_EISDIR : (int64_t)st.st_size;
}

int pl__posix_dir_rename(void *self, int dir, const char *from, const char *to)
{
    (void)self;
    int rc = name_check(from);
    rc = rc < 0 ? rc : name_check(to);
    if (rc < 0) {
        return rc;
    }
    return renameat(dir, from, dir, to) < 0 ? -errno : 0;
}

int pl__posix_dir_unlink(void *self, int dir, const char *name)
{
    (void)self;
    int rc = name_check(name);
    if (rc < 0) {
        return rc;
    }
    return unlinkat(dir, name, 0) < 0 ? -errno : 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Copies the names of `d` into buf unsorted; *count gets how many. */
static ssize_t list_raw(DIR *d, char *buf, size_t len, size_t *count)
{
    size_t used = 0;
    *count = 0;
    for (struct dirent *e; (errno = 0, e = readdir(d)) != NULL;) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        size_t l = strlen(e->d_name) + 1;
        if (l > len - used) {
            return PL_EMSGSIZE;
        }
        memcpy(buf + used, e->d_name, l);
        used += l;
        (*count)++;
    }
    return errno != 0 ? -errno : (ssize_t)used;
}

/* Sorts the `count` names in buf[0, used) bytewise, through a copy. */
static int sort_names(char *buf, size_t used, size_t count)
{
    if (count < 2) {
        return 0;
    }
    const char **names = malloc(count * sizeof *names);
    char *copy = malloc(used);
    if (names == NULL || copy == NULL) {
        free(names);
        free(copy);
        return PL_ENOMEM;
    }
    memcpy(copy, buf, used);
    const char *p = copy;
    for (size_t i = 0; i < count; i++, p += strlen(p) + 1) {
        names[i] = p;
    }
    qsort(names, count, sizeof *names, name_cmp);
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        size_t l = strlen(names[i]) + 1;
        memcpy(buf + at, names[i], l);
        at += l;
    }
    free(names);
    free(copy);
    return 0;
}

/* readdir on a duplicate: closedir closes the fd it was given, and the
 * directory handle must stay open (and at its own position: rewound). */
ssize_t pl__posix_dir_list(void *self, int dir, char *buf, size_t len)
{
    (void)self;
    int fd = fcntl(dir, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) {
        return -errno;
    }
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        int err = -errno;
        close(fd);
        return err;
    }
    rewinddir(d);
    size_t count;
    ssize_t used = list_raw(d, buf, len, &count);
    closedir(d);
    if (used > 0) {
        int rc = sort_names(buf, (size_t)used, count);
        if (rc < 0) {
            return rc;
        }
    }
    return used;
}
