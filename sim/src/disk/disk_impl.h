/* sim/src/disk/disk_impl.h: what the disk's files share, and nothing the
 * rest of the simulator may use (that is disk.h).
 *
 * Layers, each file calling only the ones above it (no call cycle):
 *   table.c    handles, files (inodes), directories by path, the byte
 *              count, the completion queue
 *   data.c     a file's bytes: the read view, writes, truncation, sync;
 *              freeing a file nothing names or opens
 *   names.c    a directory's entries: lookup, create, rename, unlink,
 *              list, sync
 *   faults.c   decision keys and the latency, fault and corruption draws
 *   crash.c    the crash and what it lost in words, and pl_sim_disk_crash
 *   disk.c     create and destroy
 *   entries.c  the system's entries (disk.h)
 *   explain.c  the words for a disk decision (calls nothing here)
 *
 * Determinism: files are numbered in creation order and never renumbered,
 * directories are kept in creation order and entries sorted by name,
 * handles take the lowest free slot: nothing depends on an address.
 */
#ifndef POLLEN_SIM_DISK_IMPL_H
#define POLLEN_SIM_DISK_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "disk.h"

/* Files whose latest name is kept for the explanations of a finished
 * run (the first ones by number; later files are explained by number). */
#define PL__DISK_NAMES_KEPT 4096u

/* What a pending write costs besides its bytes, so that many empty writes
 * are bounded too. */
#define PL__DISK_PEND_OVERHEAD 64u

/* A pending write (data != NULL) or truncation (to off; data NULL). */
typedef struct pl__disk_pend {
    uint64_t off;
    size_t len;
    uint8_t *data; /* owned */
} pl__disk_pend;

typedef struct pl__disk_inode {
    uint32_t no;  /* 1-based, in creation order */
    uint8_t *dur; /* durable bytes [0, dur_len); owned */
    size_t dur_len;
    size_t dur_cap;
    pl__disk_pend *pend; /* in the order they were made */
    size_t pend_len;
    size_t pend_cap;
    uint64_t size;   /* what reads see: durable with pend applied */
    uint32_t links;  /* visible entries naming it */
    uint32_t dlinks; /* durable entries naming it */
    uint32_t opens;  /* handles open on it */
    uint64_t cost;   /* its share of pl__disk.bytes */
} pl__disk_inode;

typedef struct pl__disk_entry {
    char *name; /* owned */
    uint32_t ino;
} pl__disk_entry;

typedef struct pl__disk_entries {
    pl__disk_entry *e; /* sorted by name */
    size_t len;
    size_t cap;
} pl__disk_entries;

typedef struct pl__disk_dir {
    char *path; /* owned */
    pl__disk_entries vis;
    pl__disk_entries dur;
} pl__disk_dir;

enum { PL__DISK_FREE = 0, PL__DISK_H_DIR = 1, PL__DISK_H_FILE = 2 };

typedef struct pl__disk_handle {
    uint8_t kind;      /* PL__DISK_FREE, _H_DIR, _H_FILE */
    bool stale;        /* opened before a crash: every op but close says EIO */
    bool armed[2];     /* a delayed op of this side [0 read, 1 write] waits */
    uint32_t flags;    /* PL_FILE_* */
    uint32_t obj;      /* directory index + 1, or inode number; 0 once stale */
    uint32_t gen;      /* bumped at every reuse of the slot */
    pl_io_source *src; /* NULL until registered */
    pl_time due[2];
} pl__disk_handle;

typedef struct pl__disk_completion {
    pl_time at;
    uint64_t seq;
    uint32_t slot;
    uint32_t gen;
    uint32_t bit;
} pl__disk_completion;

struct pl__disk {
    pl__sim *sim;
    uint32_t node;           /* whose disk: 0 the scenario's, else a node's index */
    pl__disk_inode **inodes; /* by number - 1; NULL once freed */
    size_t inodes_len;
    size_t inodes_cap;
    pl__disk_dir **dirs; /* in creation order */
    size_t dirs_len;
    size_t dirs_cap;
    size_t objects;           /* live files + directories */
    pl__disk_handle *handles; /* by handle - PL__DISK_HANDLE_FIRST */
    size_t handles_len;
    size_t handles_cap;
    size_t open_handles;
    pl__disk_completion *due; /* sorted by (at, seq) */
    size_t due_len;
    size_t due_cap;
    uint64_t seq;
    char **file_names; /* latest path of file number i + 1, for explanations */
    size_t file_names_len;
    size_t file_names_cap;
    uint64_t bytes; /* what PL_SIM_DISK_BYTES_MAX bounds */
    uint64_t crashes;
};

/* ---- table.c -------------------------------------------------------------- */

pl__disk_handle *pl__disk_handle_of(pl__disk *d, int handle);
/* A free slot (kind set by the caller); returns the handle or PL_EMFILE /
 * PL_ENOMEM. */
int pl__disk_handle_new(pl__disk *d, uint8_t kind, uint32_t obj, uint32_t flags);
pl__disk_inode *pl__disk_inode_get(pl__disk *d, uint32_t no);
/* A new empty file; NULL when out of room (*err: PL_ENOSPC or PL_ENOMEM). */
pl__disk_inode *pl__disk_inode_new(pl__disk *d, int *err);
pl__disk_dir *pl__disk_dir_get(pl__disk *d, uint32_t obj);
/* The directory at path (create: made when missing); NULL with *err. */
pl__disk_dir *pl__disk_dir_find(pl__disk *d, const char *path, bool create, uint32_t *obj,
                                int *err);
/* Charges `delta` bytes (may be negative); PL_ENOSPC (nothing charged)
 * when the disk would hold more than PL_SIM_DISK_BYTES_MAX. */
int pl__disk_charge(pl__disk *d, int64_t delta);
/* Wakes side `bit` of the handle's source `after` ns from now. */
int pl__disk_schedule(pl__disk *d, int handle, uint32_t bit, pl_time after);

/* ---- data.c --------------------------------------------------------------- */

/* Copies what a read of [off, off + len) sees; returns the bytes. */
size_t pl__disk_data_read(const pl__disk_inode *ino, void *buf, size_t len, uint64_t off);
/* Appends a pending write of len > 0 bytes (or a truncation to off when
 * data is NULL).
 * Returns 0, PL_ENOSPC or PL_ENOMEM (nothing changed). */
int pl__disk_data_write(pl__disk *d, pl__disk_inode *ino, const void *data, size_t len,
                        uint64_t off);
/* Applies the first `keep_bytes` bytes of the pending list (SIZE_MAX:
 * all of it; truncations count as surviving when reached) to the durable
 * bytes, then drops the whole list. Returns 0 or PL_ENOMEM (then nothing
 * changed). */
int pl__disk_data_sync(pl__disk *d, pl__disk_inode *ino, uint64_t keep_bytes);
/* Bytes of all pending writes. */
uint64_t pl__disk_data_pending_bytes(const pl__disk_inode *ino);
/* Frees the file's bytes and pending list. */
void pl__disk_data_free(pl__disk_inode *ino);
/* Frees the file if nothing names or opens it (NULL: no-op). */
void pl__disk_inode_maybe_free(pl__disk *d, pl__disk_inode *ino);

/* ---- names.c -------------------------------------------------------------- */

/* PL_EINVAL or PL_ENAMETOOLONG for a name that is not one component. */
int pl__disk_name_check(const char *name);
/* The file `name` names in the visible set, or 0. */
uint32_t pl__disk_names_lookup(const pl__disk_dir *dir, const char *name);
/* The file `name` names in es (either set), or 0. */
uint32_t pl__disk_names_in(const pl__disk_entries *es, const char *name);
/* The first name of file `ino` in es, or NULL. */
const char *pl__disk_names_of(const pl__disk_entries *es, uint32_t ino);
int pl__disk_names_add(pl__disk *d, pl__disk_dir *dir, const char *name, uint32_t ino);
int pl__disk_names_rename(pl__disk *d, pl__disk_dir *dir, const char *from, const char *to);
int pl__disk_names_unlink(pl__disk *d, pl__disk_dir *dir, const char *name);
ssize_t pl__disk_names_list(const pl__disk_dir *dir, char *buf, size_t len);
/* Notes `name` in `dir` as the latest path of file `no` (best effort:
 * only for the explanations). */
void pl__disk_names_note(pl__disk *d, uint32_t no, const pl__disk_dir *dir, const char *name);
/* Copies the visible set to the durable one (sync), or back (crash). */
int pl__disk_names_sync(pl__disk *d, pl__disk_dir *dir);
void pl__disk_names_revert(pl__disk *d, pl__disk_dir *dir);
void pl__disk_names_free(pl__disk_entries *es);

/* ---- faults.c ------------------------------------------------------------- */

/* Decision keys: what (op, and sub for the second decision of one op),
 * which file or directory (obj), on which node's disk, where (off, its
 * low 31 bits): bits 60-63 op, 56-59 sub, 36-55 obj, 31-35 node, 0-30
 * off. explain.c decodes them. A key only names the subject: no source
 * or strategy draws a disk decision from it. */
enum {
    PL__DISK_OP_READ = 1,
    PL__DISK_OP_WRITE = 2,
    PL__DISK_OP_SYNC = 3,
    PL__DISK_OP_DIRSYNC = 4,
    PL__DISK_OP_CRASH = 5,
};
/* The key of node 0's disk (the scenario's). */
uint64_t pl__disk_key(uint32_t op, uint32_t sub, uint32_t obj, uint64_t off);
/* The key of an op on disk d (its node's). */
uint64_t pl__disk_key_of(const pl__disk *d, uint32_t op, uint32_t sub, uint32_t obj, uint64_t off);
/* 0: run the op now; PL_EAGAIN: it was delayed (or still is). */
int pl__disk_delay(pl__disk *d, int handle, pl__disk_handle *h, int side, uint64_t key);
/* The fault of one op: 0 none, PL_EIO, or (short ops) a byte count in
 * [1, len) to do instead of len. */
ssize_t pl__disk_fault(pl__disk *d, uint32_t op, uint64_t key, size_t len);
/* Maybe flips one bit of buf[0, len). */
void pl__disk_corrupt(pl__disk *d, uint64_t key, void *buf, size_t len);

#endif
