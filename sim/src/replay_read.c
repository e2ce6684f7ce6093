/* sim/src/replay_read.c: reading replay files from disk, bounded and
 * refusing what is not a regular file, then parsing them
 * (replay_parse.c).
 */
#include "replay.h"


#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digits.h"
#include "grow.h"
#include "pollen/error.h"
#include "pollen/sim.h"
#include "sim_assert.h"
#include "trace.h"

/* Why a file of this mode is not read, or NULL for a regular file. */
static const char *file_kind_refusal(mode_t mode)
{
    if (S_ISREG(mode)) {
        return NULL;
    }
    if (S_ISDIR(mode)) {
        return "it is a directory, not a file";
    }
    if (S_ISFIFO(mode)) {
        return "it is a named pipe (FIFO): only regular files are read";
    }
    if (S_ISCHR(mode) || S_ISBLK(mode)) {
        return "it is a device: only regular files are read";
    }
    if (S_ISSOCK(mode)) {
        return "it is a socket: only regular files are read";
    }
    return "it is not a regular file";
}

static int read_error(char *err, size_t errlen, const char *path, int rc, const char *why)
{
    if (err != NULL && errlen > 0) {
        snprintf(err, errlen, "cannot read '%s': %s", path, why != NULL ? why : strerror(-rc));
    }
    return rc;
}

/* Reads the open regular file fd, of `size` bytes when it was checked,
 * into *data. A file that grew since is read up to the cap. */
static int read_regular(int fd, size_t size, char **data, size_t *len)
{
    size_t cap = size + 1; /* one more byte shows whether it grew */
    char *buf = malloc(cap);
    size_t used = 0;
    while (buf != NULL) {
        ssize_t got = read(fd, buf + used, cap - used);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            if (got < 0) {
                int rc = -errno;
                free(buf);
                return rc;
            }
            *data = buf;
            *len = used;
            return 0;
        }
        used += (size_t)got;
        PL__SIM_ASSERT(used <= cap);
        if (used > PL__REPLAY_FILE_MAX - 1) {
            free(buf);
            return PL_EFORMAT;
        }
        if (used == cap &&
            pl__grow_append((void **)&buf, &cap, cap + 1, 1, cap, PL__REPLAY_FILE_MAX) != 0) {
            free(buf);
            return PL_ENOMEM;
        }
    }
    return PL_ENOMEM;
}

int pl__replay_read_path(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; the kind is
     * checked before a single byte is read. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int rc = -errno;
        if (err != NULL && errlen > 0) {
            snprintf(err, errlen, "cannot open '%s': %s", path, strerror(-rc));
        }
        return rc;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = -errno;
        close(fd);
        return read_error(err, errlen, path, rc, NULL);
    }
    const char *refusal = file_kind_refusal(st.st_mode);
    if (refusal != NULL) {
        close(fd);
        return read_error(err, errlen, path, PL_EFORMAT, refusal);
    }
    if (st.st_size < 0 || (uint64_t)st.st_size >= PL__REPLAY_FILE_MAX) {
        close(fd);
        char why[96];
        snprintf(why, sizeof(why), "it is %jd bytes, and files must be smaller than %zu",
                 (intmax_t)st.st_size, PL__REPLAY_FILE_MAX);
        return read_error(err, errlen, path, PL_EFORMAT, why);
    }
    /* Plain blocking reads from here on: O_NONBLOCK was for the open. */
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0) {
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    }
    int rc = read_regular(fd, (size_t)st.st_size, data, len);
    close(fd);
    if (rc < 0) {
        char why[96];
        snprintf(why, sizeof(why), "it grew to %zu bytes or more while being read",
                 PL__REPLAY_FILE_MAX);
        return read_error(err, errlen, path, rc, rc == PL_EFORMAT ? why : NULL);
    }
    return 0;
}

int pl__replay_parse_file(const char *path, pl__replay *out, char *err, size_t errlen)
{
    char *data = NULL;
    size_t len = 0;
    pl__replay_init(out);
    int rc = pl__replay_read_path(path, &data, &len, err, errlen);
    if (rc < 0) {
        return rc;
    }
    rc = pl__replay_parse_buffer(data, len, out, err, errlen);
    free(data);
    return rc;
}
