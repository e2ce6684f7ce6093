/* pollen/file.h: files and directories, as futures.
 *
 * The set a write-ahead log and a snapshot need: open a directory, open
 * (create, truncate) a file in it, read and write at an offset, fsync and
 * fdatasync a file, fsync a directory (which makes its entries durable),
 * rename and unlink within a directory, list it, and a file's size.
 * Everything goes through the system seam (system.h), so the same code
 * runs on the real backend, where regular files are always ready and
 * every future completes in its first poll (ordinary syscalls: openat,
 * pread, pwrite, fsync, renameat, ...), and under the simulator, whose
 * in-memory disk may delay an operation by virtual time, fail it (PL_EIO,
 * a short read or write), flip a bit of what a read returns, and at a
 * crash keep only what was made durable (docs/simulator.md, "Files and
 * the simulated disk").
 *
 * Objects. pl_dir and pl_file are small caller-owned values like the
 * objects of io.h (a pointer to a registration; copy or move freely, use
 * and close one copy). Close every file and directory before destroying
 * the executor: an open one keeps pl_run from returning idle.
 *
 * Futures. Lazy, results in the future, read after READY: a byte count or
 * 0, or a negative PL_E* code. A future borrows its object, its buffer and
 * its name strings until READY or dropped. At most one read-side future
 * (read, list) and one write-side future (write, write_all, sync, open in
 * a directory, rename, unlink) may be pending on one object at a time.
 *
 * Errors (negated errno where one exists): PL_ENOENT (no such file or
 * directory), PL_EEXIST (PL_FILE_EXCL and the file exists), PL_EIO (the
 * device failed; after a simulated disk crash every handle opened before
 * it fails this way), PL_ENOSPC (the device is full; the simulator's disk
 * holds PL_SIM_DISK_BYTES_MAX bytes), PL_ENAMETOOLONG, PL_EISDIR, PL_EINVAL
 * (a name with '/', "." or "..", or unknown flags), PL_EBADF (a closed
 * object or a file opened without the access an operation needs),
 * PL_EMSGSIZE (a listing larger than its buffer), PL_ENOSYS (a system
 * without files).
 *
 * Threads: every function here is for the executor's thread.
 */
#ifndef POLLEN_FILE_H
#define POLLEN_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pollen/executor.h"
#include "pollen/future.h"
#include "pollen/system.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Open flags. READ and/or WRITE is required. */
enum {
    PL_FILE_READ = 1u << 0,   /* reads allowed */
    PL_FILE_WRITE = 1u << 1,  /* writes and syncs allowed */
    PL_FILE_CREATE = 1u << 2, /* create the file when it does not exist */
    PL_FILE_EXCL = 1u << 3,   /* with CREATE: PL_EEXIST when it exists */
    PL_FILE_TRUNC = 1u << 4,  /* with WRITE: empty it */
};
#define PL_FILE_FLAGS_ALL 0x1fu

/* Longest name of a file in a directory, in bytes. */
#define PL_FILE_NAME_MAX 255

/* An open directory: the place files are opened, renamed, unlinked and
 * listed in, and what pl_dir_sync makes durable. */
typedef struct pl_dir {
    pl_io_source *src; /* NULL when closed */
} pl_dir;

typedef struct pl_file {
    pl_io_source *src; /* NULL when closed */
} pl_file;

/* Opens the directory at `path` (create: make it first when missing; its
 * own entry in its parent is not synced). Completes at once, outside or
 * inside a poll. Returns 0 or a PL_E* code (*d is then closed). */
int pl_dir_open(pl_executor *ex, pl_dir *d, const char *path, bool create);
/* Closes the directory (NULL or closed: no-op). */
void pl_dir_close(pl_dir *d);

/* Closes the file (NULL or closed: no-op). Closing does not sync. */
void pl_file_close(pl_file *f);

/* The file's size in bytes (what has been written, synced or not), or a
 * PL_E* code. Completes at once. */
int64_t pl_file_size(const pl_file *f);

/* ---- Futures ------------------------------------------------------------
 * Fields are private except `result` (and `written` of a write_all). */

/* Opens `name` in `dir`. result: 0 (then take the file with
 * pl_file_open_take) or a PL_E* code. A file taken is the caller's; one
 * never taken is closed when the future is dropped. */
typedef struct pl_file_open {
    pl_future base;
    pl_io_source *src; /* the directory's */
    const char *name;  /* borrowed */
    uint32_t flags;
    uint32_t mode;
    bool parked;
    uint8_t reserved[7]; /* private: zero, so no byte is padding */
    pl_file file;
    int result;
    uint32_t reserved2; /* private: zero */
} pl_file_open;

pl_file_open pl_file_open_make(pl_dir *dir, const char *name, uint32_t flags, uint32_t mode);
pl_file pl_file_open_take(pl_file_open *op);

/* Reads up to len bytes at `offset`. result: bytes read (fewer than len
 * near the end of the file or on a short read), 0 at or past the end, or
 * a PL_E* code. */
typedef struct pl_file_pread {
    pl_future base;
    pl_io_source *src;
    void *buf;
    size_t len;
    uint64_t offset;
    bool parked;
    uint8_t reserved[7]; /* private: zero, so no byte is padding */
    ssize_t result;
} pl_file_pread;

pl_file_pread pl_file_read(pl_file *f, void *buf, size_t len, uint64_t offset);

/* Writes at `offset`. pl_file_write writes once and may write less than
 * len (a short write); pl_file_write_all writes all len bytes across as
 * many writes as it takes. result: bytes written, or a PL_E* code
 * (`written` says how many went out before it). Written data is visible
 * to reads at once and durable only after a sync. */
typedef struct pl_file_pwrite {
    pl_future base;
    pl_io_source *src;
    const void *buf;
    size_t len;
    uint64_t offset;
    size_t written;
    bool all;
    bool parked;
    uint8_t reserved[6]; /* private: zero, so no byte is padding */
    ssize_t result;
} pl_file_pwrite;

pl_file_pwrite pl_file_write(pl_file *f, const void *buf, size_t len, uint64_t offset);
pl_file_pwrite pl_file_write_all(pl_file *f, const void *buf, size_t len, uint64_t offset);

/* fsync: the file's written data (and size) durable. datasync: fdatasync
 * (the simulator treats both alike: it keeps no other metadata). For a
 * directory: its entries as they are now (created, renamed, unlinked)
 * durable. result: 0 or a PL_E* code; after PL_EIO nothing is known to be
 * durable. */
typedef struct pl_file_fsync {
    pl_future base;
    pl_io_source *src;
    bool data_only;
    bool parked;
    uint8_t reserved[2]; /* private: zero, so no byte is padding */
    int result;
} pl_file_fsync;

pl_file_fsync pl_file_sync(pl_file *f);
pl_file_fsync pl_file_datasync(pl_file *f);
pl_file_fsync pl_dir_sync(pl_dir *d);

/* rename (replacing `to` if it exists) and unlink within `dir`. result: 0
 * or a PL_E* code. Durable after pl_dir_sync. */
typedef struct pl_dir_change {
    pl_future base;
    pl_io_source *src;
    const char *name; /* borrowed */
    const char *to;   /* borrowed; NULL for an unlink */
    bool parked;
    uint8_t reserved[3]; /* private: zero, so no byte is padding */
    int result;
} pl_dir_change;

pl_dir_change pl_dir_rename(pl_dir *dir, const char *from, const char *to);
pl_dir_change pl_dir_unlink(pl_dir *dir, const char *name);

/* The names in `dir`, each followed by a NUL, sorted bytewise, into buf.
 * result: bytes used (0: empty), or PL_EMSGSIZE when they do not fit.
 * Walk it with pl_dir_next_name. */
typedef struct pl_dir_listing {
    pl_future base;
    pl_io_source *src;
    char *buf;
    size_t len;
    bool parked;
    uint8_t reserved[7]; /* private: zero, so no byte is padding */
    ssize_t result;
} pl_dir_listing;

pl_dir_listing pl_dir_list(pl_dir *dir, char *buf, size_t len);

/* The name after `prev` in a listing of `used` bytes (prev NULL: the
 * first), or NULL after the last. */
const char *pl_dir_next_name(const char *buf, size_t used, const char *prev);

#ifdef __cplusplus
}
#endif
#endif
