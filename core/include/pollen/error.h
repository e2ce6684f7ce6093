/* pollen/error.h: error codes.
 *
 * Every fallible pollen function returns int: 0 on success or a negative
 * PL_E* code. Where an errno exists the code is its negation, so
 * `-errno` from a system call can be passed through unchanged.
 * Contract violations by the caller (polling after READY, destroying an
 * executor with live tasks, ...) are assertions, not error codes.
 */
#ifndef POLLEN_ERROR_H
#define POLLEN_ERROR_H

#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, message): the one list that makes the codes, their
 * names and their messages. */
#define PL_ERRNO_MAP(X)                                                      \
    X(EAGAIN, -EAGAIN, "resource temporarily unavailable")                   \
    X(ENOMEM, -ENOMEM, "out of memory")                                      \
    X(EINVAL, -EINVAL, "invalid argument")                                   \
    X(EBADF, -EBADF, "bad file descriptor")                                  \
    X(EPIPE, -EPIPE, "broken pipe")                                          \
    X(ECONNREFUSED, -ECONNREFUSED, "connection refused")                     \
    X(ECONNRESET, -ECONNRESET, "connection reset by peer")                   \
    X(ENOTCONN, -ENOTCONN, "socket is not connected")                        \
    X(EADDRINUSE, -EADDRINUSE, "address already in use")                     \
    X(EADDRNOTAVAIL, -EADDRNOTAVAIL, "address not available")                \
    X(ETIMEDOUT, -ETIMEDOUT, "timed out")                                    \
    X(EINPROGRESS, -EINPROGRESS, "operation in progress")                    \
    X(EMSGSIZE, -EMSGSIZE, "message too long")                               \
    X(ECANCELED, -ECANCELED, "operation canceled")                           \
    X(EMFILE, -EMFILE, "too many open files")                                \
    X(ENOENT, -ENOENT, "no such file or directory")                          \
    X(EIO, -EIO, "input/output error")                                       \
    X(EEXIST, -EEXIST, "file exists")                                        \
    X(ENOSPC, -ENOSPC, "no space left on device")                            \
    X(ENAMETOOLONG, -ENAMETOOLONG, "file name too long")                     \
    X(EISDIR, -EISDIR, "is a directory")                                     \
    X(ENOSYS, -ENOSYS, "not supported by this system backend")               \
    X(EDEADLK, -EDEADLK, "no task can make progress")                        \
    X(ECLOSED, -10001, "channel closed")                                     \
    X(EFORMAT, -10002, "malformed input")                                    \
    X(EVERSION, -10003, "unsupported format version")

enum {
#define PL__ERR_ENUM(name, value, msg) PL_##name = (value),
    PL_ERRNO_MAP(PL__ERR_ENUM)
#undef PL__ERR_ENUM
};

/* A static message for `code` (0 gives "success"; unknown codes give
 * "unknown error"). Never NULL. */
const char *pl_strerror(int code);

/* The code's symbolic name ("PL_EAGAIN"), or "PL_E?" when unknown. */
const char *pl_err_name(int code);

#ifdef __cplusplus
}
#endif
#endif
