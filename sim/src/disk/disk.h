/* sim/src/disk/disk.h: the simulated disk, as the rest of the simulator
 * sees it. Its files and their layers are listed in disk_impl.h.
 *
 * Model. One in-memory file system per node (sim_node.h; the scenario's
 * own tasks use the run's), created at the node's first pl_dir_open and
 * freed with the run.
 * Directories are named by their path string (they are not entries of
 * each other) and are durable as soon as they are created. A directory
 * holds entries (a name, a file); a file (an inode) holds durable bytes
 * and, apart from them, the list of its pending (written, unsynced)
 * writes and truncations in the order they were made.
 *
 * Durability. Reads see the durable bytes with the pending writes applied
 * in order. A file's sync (fsync, fdatasync) applies its pending list to
 * its durable bytes. Entries change (create, rename, unlink) in a
 * directory's visible set at once and reach its durable set only at a
 * sync of that directory (POSIX's rule; ext4 and xfs are kinder to a
 * rename, but a program that relies on that breaks elsewhere). A crash
 * (pl__disk_crash) makes every directory's visible set its durable set
 * again, frees every file no durable entry names, decides for each file
 * which of its pending writes survive (PL_DECIDE_DISK_LOSE: none, all or
 * a torn prefix, in bytes), and makes every handle opened before it fail
 * with PL_EIO (close still works).
 *
 * Time and faults. The first attempt of a read, write or sync draws
 * PL_DECIDE_DISK_LATENCY: choice q > 0 makes it say PL_EAGAIN and wakes
 * the handle's source q * PL_SIM_DISK_LATENCY_QUANTUM_NS later, when the
 * repeated call runs it (so a file op lets other tasks run meanwhile).
 * When the operation runs, PL_DECIDE_DISK_FAULT may fail it (read: EIO or
 * a short read; write: EIO or a short write; sync: EIO, nothing synced),
 * and a read that returns bytes may draw PL_DECIDE_DISK_CORRUPT, which
 * flips one of the bits returned (the stored bytes stay intact).
 * Directory operations (open, rename, unlink, list) complete at once.
 *
 * Bounds: PL_SIM_DISK_BYTES_MAX bytes stored (PL_ENOSPC), at most
 * PL_SIM_DISK_FILES_MAX files and directories (PL_ENOSPC), at most
 * PL_SIM_DISK_HANDLES_MAX open handles (PL_EMFILE).
 *
 * Threads: everything here runs on the executor's thread, inside the run.
 */
#ifndef POLLEN_SIM_DISK_H
#define POLLEN_SIM_DISK_H

#include <stdbool.h>
#include <stdint.h>

#include "sim_internal.h"

typedef struct pl__disk pl__disk;

/* Handles of files and directories start here; the network's are below
 * (net.h), so the system's register and close entries can tell them
 * apart by number. */
#define PL__DISK_HANDLE_FIRST (1 << 24)

/* ---- Lifecycle and delivery ------------------------------------------- */

/* Creates the disk of node `node` of `sim` (0: the scenario's own).
 * Returns 0 or PL_ENOMEM. */
int pl__disk_create(pl__disk **out, pl__sim *sim, uint32_t node);
/* Frees every file, directory, handle and pending completion. NULL: no-op. */
void pl__disk_destroy(pl__disk *d);
/* True for a handle number in the disk's range. */
bool pl__disk_owns(int handle);
/* Earliest pending completion (a delayed op's wake), or PL_TIME_NEVER. */
pl_time pl__disk_next_event(const pl__disk *d);
/* Wakes the sources of the completions due at or before `now`, in the
 * order they were scheduled. Returns how many. */
size_t pl__disk_deliver(pl__disk *d, pl_time now);
/* The crash (above). Returns how many pending writes were dropped in
 * whole or in part. */
size_t pl__disk_crash(pl__disk *d);
/* Open handles (for tests). */
size_t pl__disk_open_handles(const pl__disk *d);
/* Bytes stored, as PL_SIM_DISK_BYTES_MAX counts them (for tests). */
uint64_t pl__disk_bytes_used(const pl__disk *d);

/* ---- The system's entries ------------------------------------------------
 * Same signatures and meaning as in pollen/system.h; `self` is the pl__sim
 * whose disk serves the call (created by the first dir_open). */
int pl__disk_io_register(void *self, pl_io_source *src);
void pl__disk_io_deregister(void *self, pl_io_source *src);
int pl__disk_close(void *self, int handle);
int pl__disk_dir_open(void *self, const char *path, int create);
int pl__disk_file_open(void *self, int dir, const char *name, uint32_t flags, uint32_t mode);
ssize_t pl__disk_file_read(void *self, int handle, void *buf, size_t len, uint64_t offset);
ssize_t pl__disk_file_write(void *self, int handle, const void *buf, size_t len, uint64_t offset);
int pl__disk_file_sync(void *self, int handle, int data_only);
int64_t pl__disk_file_size(void *self, int handle);
int pl__disk_dir_rename(void *self, int dir, const char *from, const char *to);
int pl__disk_dir_unlink(void *self, int dir, const char *name);
ssize_t pl__disk_dir_list(void *self, int dir, char *buf, size_t len);

/* The latest path ("wal/0001.log": the directory's path as opened, then
 * the name) of every file of disk d by number, "\0"-separated (an
 * unknown one is ""): *count paths, *len bytes, malloc'ed (the caller
 * frees it). NULL when there is no disk, no file or no memory. */
char *pl__disk_names_blob(const pl__disk *d, size_t *len, uint32_t *count);

/* The names of every disk of run s, for its record, read once the run is
 * over: "\0"-separated strings, *count of them, *len bytes, malloc'ed
 * (the caller frees it); NULL when no disk was used, or no memory. One
 * section per disk, in node order (the scenario's own first): a header
 * "@N:D:F:NAME" (node index N, NAME "" for the scenario), then the paths
 * of its D directories by number, then the latest paths of its F files
 * by number (pl__disk_names_blob's). File and directory numbers are per
 * disk: a decision's key says whose (disk_impl.h). */
char *pl__disk_run_names(const pl__sim *s, size_t *len, uint32_t *count);

/* What a crash lost, when the run keeps its trace's texts: one
 * pl__sim_note per loss, "disk crash: node 'server': 'db/log' lost 16
 * unsynced bytes (kept 0 of 16)" (the scenario's own disk names no node),
 * at most PL__DISK_CRASH_LINES a crash and then "... and N more": a
 * file's unsynced bytes, an entry created, renamed or unlinked since its
 * directory's last sync (crash.c). The explanation of a shrunk run lists
 * the notes that begin with PL__DISK_CRASH_NOTE (shrink_explain.c). */
#define PL__DISK_CRASH_NOTE  "disk crash: "
#define PL__DISK_CRASH_LINES 8u

/* ---- Explanations (explain.c) -------------------------------------------
 * Writes what a non-default disk decision did ("disk: node 'b1': read of
 * 'wal/0001.log' at offset 4096 returned a flipped bit (bit 13 of 512
 * bytes)"; the scenario's own disk names no node) into buf. Returns false
 * for a kind that is not the disk's. A file or directory with no name
 * known is "file #N" or "directory #N".
 *
 * pl__disk_explain_run reads the names from `names`, a run's
 * pl__disk_run_names (`count` strings; NULL: none), and finds the node
 * from the key. pl__disk_explain reads one disk's file paths
 * (pl__disk_names_blob's) and names no node or directory. */
bool pl__disk_explain_run(char *buf, size_t len, uint32_t kind, uint64_t key, uint32_t v,
                          uint32_t n, const char *names, uint32_t count);
bool pl__disk_explain(char *buf, size_t len, uint32_t kind, uint64_t key, uint32_t v, uint32_t n,
                      const char *names, uint32_t count);

#endif
