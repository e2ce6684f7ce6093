/* pollen/system.h: the system seam.
 *
 * Everything nondeterministic the executor needs (the clock, blocking
 * for readiness, I/O on handles, cross-thread wakeups and scheduling
 * decisions) goes through one versioned vtable. The real backend
 * (pl_system_default(): epoll, CLOCK_MONOTONIC, eventfd) answers every
 * decision with 0; the simulator implements the same vtable in memory.
 * core never calls a clock, a random source or epoll anywhere else.
 *
 * This header is for implementers of a system (the simulator, a
 * fault-injecting shim). Applications only pass a pl_system in
 * pl_executor_options, or leave it NULL for the real backend.
 */
#ifndef POLLEN_SYSTEM_H
#define POLLEN_SYSTEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "pollen/time.h"
#include "pollen/waker.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_executor pl_executor;

/* The decisions core asks a system for (decide()). Choice 0 is always
 * what production does. The numbers are part of the replay format:
 * append only. The other numbers belong to the simulator's own
 * decisions (I/O order and faults, spurious wakes, wake delays, buggify
 * sites, probes, the disk's), which its system takes by itself and core
 * never asks for; they are numbered in the simulator (sim/src/decide.h) and share
 * this type and this number space. */
typedef enum pl_decision_kind {
    PL_DECIDE_SCHEDULE = 0,      /* which runnable task is polled next; n = candidates */
    PL_DECIDE_TIMER_ORDER = 2,   /* which of n equal-deadline timers fires next */
    PL_DECIDE_TIMER_LATE = 3,    /* lateness of a timer, in lateness quanta */
    PL_DECIDE_CANCEL = 7,        /* cancel a woken abortable task before it runs */
    PL_DECIDE_BUGGIFY_FIRE = 11, /* an enabled PL_BUGGIFY site fires this time */
} pl_decision_kind;

/* Readiness interest and readiness bits. */
enum { PL_IO_READABLE = 1u << 0, PL_IO_WRITABLE = 1u << 1, PL_IO_ERROR = 1u << 2 };

/* An I/O registration. Allocated by core for an I/O object (io.h) and
 * registered with the system through the vtable's io_register when the
 * object is created. The system records readiness by calling
 * pl_io_source_ready, which sets `ready` bits and wakes the matching
 * wakers. Futures clear a bit when the
 * operation says EAGAIN (edge-triggered readiness, as in mio/tokio). */
typedef struct pl_io_source {
    int handle;            /* the system's handle (an fd for the real system) */
    uint32_t ready;        /* PL_IO_* bits seen and not yet consumed */
    uint32_t id;           /* registration number, deterministic per executor */
    uint32_t registered;   /* nonzero between register and deregister */
    pl_waker read_waker;   /* woken on PL_IO_READABLE or PL_IO_ERROR */
    pl_waker write_waker;  /* woken on PL_IO_WRITABLE or PL_IO_ERROR */
    pl_executor *ex;       /* the executor it is registered with */
} pl_io_source;

/* Called by a system's wait() for each ready source. Sets the bits and
 * wakes the waiting futures. Executor thread only. */
void pl_io_source_ready(pl_io_source *src, uint32_t bits);

/* Delivers the remote wakes other threads queued (pl_remote_waker_wake,
 * pl_remote_waker_drop) to their tasks, in the order they were queued.
 * A system's wait() calls it after its remote_wake() was called, before
 * returning (the real backend does when its eventfd fires; the simulator
 * at every wait, possibly holding some back through its own decisions).
 * Returns how many were delivered. Executor thread only, from wait() or
 * outside pl_run; never from a poll. */
size_t pl_executor_drain_remote(pl_executor *ex);

#define PL_SYSTEM_VERSION 2u

typedef struct pl_system_vtable {
    uint32_t version;  /* PL_SYSTEM_VERSION */
    const char *name;  /* "epoll", "sim" */

    /* Monotonic now. */
    pl_time (*now)(void *self);

    /* Blocks until a registered source is ready, a remote wake arrives or
     * `deadline_ns` is reached (PL_TIME_NEVER: no deadline; a deadline at
     * or before now: do not block). Reports readiness through
     * pl_io_source_ready and remote wakes through pl_executor_drain_remote.
     * Returns 0 or a negative PL_E* code. */
    int (*wait)(void *self, pl_executor *ex, pl_time deadline_ns);

    /* Returns a value in [0, n) for a decision of `kind` about `key` (a
     * task id, a buggify site). NULL means "always 0" and lets the
     * executor take its fast paths. */
    uint32_t (*decide)(void *self, pl_decision_kind kind, uint32_t n, uint64_t key);

    /* Makes a blocked or the next wait() return. Thread-safe and
     * async-signal-safe: pl_executor_request_dump (pollen/dump.h) calls
     * it from signal handlers (and restores errno after), so it may
     * neither lock nor allocate: the real backend writes to an eventfd. */
    void (*remote_wake)(void *self);

    /* I/O on handles. Every call is non-blocking and returns a
     * non-negative result or a negative PL_E* code (PL_EAGAIN when it
     * would block). Sources must be registered before waiting on them. */
    int (*io_register)(void *self, pl_io_source *src);
    void (*io_deregister)(void *self, pl_io_source *src);
    int (*socket)(void *self, int domain, int type);  /* returns a handle */
    int (*pipe)(void *self, int handles[2]);           /* [0] read end, [1] write end */
    int (*close)(void *self, int handle);
    int (*bind)(void *self, int handle, const struct sockaddr *addr, socklen_t len);
    int (*listen)(void *self, int handle, int backlog);
    /* Returns a new handle; writes the peer address when addr != NULL. */
    int (*accept)(void *self, int handle, struct sockaddr *addr, socklen_t *len);
    /* 0 when connected, PL_EINPROGRESS when the handle becomes writable
     * later (then connect_result tells the outcome). */
    int (*connect)(void *self, int handle, const struct sockaddr *addr, socklen_t len);
    int (*connect_result)(void *self, int handle);
    int (*local_addr)(void *self, int handle, struct sockaddr *addr, socklen_t *len);
    ssize_t (*read)(void *self, int handle, void *buf, size_t len);
    ssize_t (*write)(void *self, int handle, const void *buf, size_t len);
    ssize_t (*sendto)(void *self, int handle, const void *buf, size_t len,
                      const struct sockaddr *addr, socklen_t addr_len);
    ssize_t (*recvfrom)(void *self, int handle, void *buf, size_t len,
                        struct sockaddr *addr, socklen_t *addr_len);
    /* Shuts down one or both directions of a connected stream socket (how:
     * SHUT_RD, SHUT_WR, SHUT_RDWR). May be NULL: callers get PL_ENOSYS. */
    int (*shutdown)(void *self, int handle, int how);

    /* Files and directories (pollen/file.h; version 2). Handles come from
     * dir_open and file_open and are closed with close(); they are
     * registered as sources like any handle. A system whose files never
     * block (the real backend: regular files are always ready) completes
     * every call at once; one that models a slow disk (the simulator) may
     * say PL_EAGAIN and make the handle's source ready later: the caller
     * then repeats the same call (read-side: file_read, dir_list; every
     * other call is write-side). Any entry may be NULL: callers get
     * PL_ENOSYS. `name` arguments are single path components (no '/'). */
    /* Opens (create != 0: first creates) the directory at `path`. */
    int (*dir_open)(void *self, const char *path, int create);
    /* Opens `name` in directory `dir` with PL_FILE_* flags and a mode for
     * a created file; returns a handle. */
    int (*file_open)(void *self, int dir, const char *name, uint32_t flags, uint32_t mode);
    /* Positional read and write (pread, pwrite): a byte count (0 at end
     * of file) or a PL_E* code. Writes past the end extend the file with
     * zeros in between. */
    ssize_t (*file_read)(void *self, int handle, void *buf, size_t len, uint64_t offset);
    ssize_t (*file_write)(void *self, int handle, const void *buf, size_t len, uint64_t offset);
    /* fsync (data_only: fdatasync) of a file or a directory handle. */
    int (*file_sync)(void *self, int handle, int data_only);
    /* The file's size in bytes, or a PL_E* code. Never PL_EAGAIN. */
    int64_t (*file_size)(void *self, int handle);
    /* renameat and unlinkat within one directory. */
    int (*dir_rename)(void *self, int dir, const char *from, const char *to);
    int (*dir_unlink)(void *self, int dir, const char *name);
    /* The directory's entry names ("." and ".." left out), each followed
     * by a NUL, sorted bytewise, into buf: the bytes used, or
     * PL_EMSGSIZE when they do not fit in len. */
    ssize_t (*dir_list)(void *self, int dir, char *buf, size_t len);
} pl_system_vtable;

/* A system instance: a vtable and the instance it operates on. */
typedef struct pl_system {
    const pl_system_vtable *vtable;
    void *self;
} pl_system;

/* The real backend: epoll, CLOCK_MONOTONIC, eventfd. Creates an instance
 * owned by the caller; free it with pl_system_default_destroy. */
int pl_system_default_create(pl_system *out);
void pl_system_default_destroy(pl_system *sys);

#ifdef __cplusplus
}
#endif
#endif
