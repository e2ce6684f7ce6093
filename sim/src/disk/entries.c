/* sim/src/disk/entries.c: the system's file entries (pollen/system.h),
 * over the tables, the data and the names. Checks come in the order a
 * kernel makes them (the handle, its state, the arguments), then the
 * delay, then the fault, then the operation itself. */
#include <stdint.h>
#include <string.h>

#include "disk_impl.h"
#include "pollen/file.h"
#include "sim_assert.h"

/* The current node's disk (the run's own outside nodes). */
static pl__disk *disk_of(void *self) { return *pl__node_disk_slot(self); }

/* The handle of kind `kind` (0: either), or NULL with *err set. */
static pl__disk_handle *handle_as(void *self, int handle, uint8_t kind, int *err)
{
    pl__disk_handle *h = pl__disk_handle_of(disk_of(self), handle);
    if (h == NULL) {
        *err = PL_EBADF;
        return NULL;
    }
    if (kind != 0 && h->kind != kind) {
        *err = kind == PL__DISK_H_FILE ? PL_EISDIR : PL_EBADF;
        return NULL;
    }
    if (h->stale) {
        *err = PL_EIO;
        return NULL;
    }
    /* A live handle names a file or a directory, never a free slot. */
    PL__SIM_ASSERT(h->kind == PL__DISK_H_FILE || h->kind == PL__DISK_H_DIR);
    return h;
}

int pl__disk_io_register(void *self, pl_io_source *src)
{
    pl__disk_handle *h = pl__disk_handle_of(disk_of(self), src->handle);
    if (h == NULL) {
        return PL_EBADF;
    }
    h->src = src;
    return 0;
}

void pl__disk_io_deregister(void *self, pl_io_source *src)
{
    pl__disk_handle *h = pl__disk_handle_of(disk_of(self), src->handle);
    if (h != NULL) {
        h->src = NULL;
    }
}

int pl__disk_close(void *self, int handle)
{
    pl__disk *d = disk_of(self);
    pl__disk_handle *h = pl__disk_handle_of(d, handle);
    if (h == NULL) {
        return PL_EBADF;
    }
    pl__disk_inode *ino = NULL;
    if (h->kind == PL__DISK_H_FILE && !h->stale) {
        ino = pl__disk_inode_get(d, h->obj);
        /* This handle is one of the opens its file counts. */
        PL__SIM_ASSERT(ino != NULL && ino->opens > 0);
        ino->opens--;
    }
    uint32_t gen = h->gen;
    *h = (pl__disk_handle){.kind = PL__DISK_FREE, .gen = gen};
    PL__SIM_ASSERT(d->open_handles > 0);
    d->open_handles--;
    pl__disk_inode_maybe_free(d, ino);
    return 0;
}

int pl__disk_dir_open(void *self, const char *path, int create)
{
    pl__sim *s = self;
    pl__disk **slot = pl__node_disk_slot(s);
    if (*slot == NULL && pl__disk_create(slot, s, pl__node_current(s)) != 0) {
        return PL_ENOMEM;
    }
    if ((*slot)->open_handles >= PL_SIM_DISK_HANDLES_MAX) {
        return PL_EMFILE;
    }
    uint32_t obj;
    int err = PL_EBADF;
    if (pl__disk_dir_find(*slot, path, create != 0, &obj, &err) == NULL) {
        return err;
    }
    return pl__disk_handle_new(*slot, PL__DISK_H_DIR, obj, 0);
}

/* The file `name` of dir, created when the flags say so; its number. */
static int lookup_or_create(pl__disk *d, pl__disk_dir *dir, const char *name, uint32_t flags)
{
    uint32_t no = pl__disk_names_lookup(dir, name);
    if (no != 0) {
        bool excl = (flags & PL_FILE_CREATE) != 0 && (flags & PL_FILE_EXCL) != 0;
        return excl ? PL_EEXIST : (int)no;
    }
    if ((flags & PL_FILE_CREATE) == 0) {
        return PL_ENOENT;
    }
    int err = PL_EBADF;
    pl__disk_inode *ino = pl__disk_inode_new(d, &err);
    if (ino == NULL) {
        return err;
    }
    err = pl__disk_names_add(d, dir, name, ino->no);
    if (err != 0) {
        pl__disk_inode_maybe_free(d, ino);
        return err;
    }
    return (int)ino->no;
}

int pl__disk_file_open(void *self, int dirh, const char *name, uint32_t flags, uint32_t mode)
{
    (void)mode; /* the simulated disk keeps no permissions */
    pl__disk *d = disk_of(self);
    int err = PL_EBADF;
    pl__disk_handle *h = handle_as(self, dirh, PL__DISK_H_DIR, &err);
    if (h == NULL) {
        return err == PL_EISDIR ? PL_EBADF : err;
    }
    int rc = pl__disk_name_check(name);
    if (rc != 0) {
        return rc;
    }
    if (d->open_handles >= PL_SIM_DISK_HANDLES_MAX) {
        return PL_EMFILE;
    }
    int no = lookup_or_create(d, pl__disk_dir_get(d, h->obj), name, flags);
    if (no < 0) {
        return no;
    }
    pl__disk_inode *ino = pl__disk_inode_get(d, (uint32_t)no);
    PL__SIM_ASSERT(ino != NULL && ino->no == (uint32_t)no);
    int handle = pl__disk_handle_new(d, PL__DISK_H_FILE, (uint32_t)no, flags);
    if (handle < 0) {
        return handle;
    }
    PL__SIM_ASSERT(d->open_handles <= PL_SIM_DISK_HANDLES_MAX);
    ino->opens++;
    if ((flags & PL_FILE_TRUNC) != 0 && (flags & PL_FILE_WRITE) != 0 && ino->size > 0) {
        rc = pl__disk_data_write(d, ino, NULL, 0, 0);
        if (rc != 0) {
            (void)pl__disk_close(self, handle);
            return rc;
        }
    }
    return handle;
}

/* The checks and the delay every data operation starts with. Returns the
 * file's handle, or NULL with *err (PL_EAGAIN: delayed). */
static pl__disk_handle *data_op(void *self, int handle, uint32_t need, int side, uint64_t *key,
                                uint32_t op, uint64_t off, int *err)
{
    pl__disk_handle *h = handle_as(self, handle, PL__DISK_H_FILE, err);
    if (h == NULL) {
        return NULL;
    }
    if ((h->flags & need) != need) {
        *err = PL_EBADF;
        return NULL;
    }
    pl__disk *d = disk_of(self);
    *key = pl__disk_key_of(d, op, 0, h->obj, off);
    *err = pl__disk_delay(d, handle, h, side, *key);
    return *err == 0 ? h : NULL;
}

ssize_t pl__disk_file_read(void *self, int handle, void *buf, size_t len, uint64_t offset)
{
    pl__disk *d = disk_of(self);
    uint64_t key;
    int err = PL_EBADF;
    pl__disk_handle *h =
        data_op(self, handle, PL_FILE_READ, 0, &key, PL__DISK_OP_READ, offset, &err);
    if (h == NULL) {
        return err;
    }
    pl__disk_inode *ino = pl__disk_inode_get(d, h->obj);
    size_t avail = offset >= ino->size        ? 0
                   : ino->size - offset < len ? (size_t)(ino->size - offset)
                                              : len;
    ssize_t f = pl__disk_fault(d, PL__DISK_OP_READ, key, avail);
    if (f < 0) {
        return f;
    }
    /* A short read is a count in [1, avail): never past the file's end. */
    PL__SIM_ASSERT(avail <= len && (size_t)f < (avail > 0 ? avail : 1));
    size_t n = pl__disk_data_read(ino, buf, f > 0 ? (size_t)f : avail, offset);
    PL__SIM_ASSERT(n <= avail);
    pl__disk_corrupt(d, key, buf, n);
    return (ssize_t)n;
}

ssize_t pl__disk_file_write(void *self, int handle, const void *buf, size_t len, uint64_t offset)
{
    pl__disk *d = disk_of(self);
    uint64_t key;
    int err = PL_EBADF;
    if (len == 0) {
        pl__disk_handle *h = handle_as(self, handle, PL__DISK_H_FILE, &err);
        return h == NULL ? err : (h->flags & PL_FILE_WRITE) == 0 ? PL_EBADF : 0;
    }
    pl__disk_handle *h =
        data_op(self, handle, PL_FILE_WRITE, 1, &key, PL__DISK_OP_WRITE, offset, &err);
    if (h == NULL) {
        return err;
    }
    ssize_t f = pl__disk_fault(d, PL__DISK_OP_WRITE, key, len);
    if (f < 0) {
        return f;
    }
    size_t n = f > 0 ? (size_t)f : len;
    PL__SIM_ASSERT(n >= 1 && n <= len); /* a short write still writes */
    int rc = pl__disk_data_write(d, pl__disk_inode_get(d, h->obj), buf, n, offset);
    return rc != 0 ? rc : (ssize_t)n;
}

int pl__disk_file_sync(void *self, int handle, int data_only)
{
    (void)data_only; /* no metadata but the size, which is data here */
    pl__disk *d = disk_of(self);
    int err = PL_EBADF;
    pl__disk_handle *h = handle_as(self, handle, 0, &err);
    if (h == NULL) {
        return err;
    }
    bool is_dir = h->kind == PL__DISK_H_DIR;
    uint32_t op = is_dir ? PL__DISK_OP_DIRSYNC : PL__DISK_OP_SYNC;
    uint64_t key = pl__disk_key_of(d, op, 0, h->obj, 0);
    int rc = pl__disk_delay(d, handle, h, 1, key);
    if (rc != 0) {
        return rc;
    }
    if (pl__disk_fault(d, op, key, 0) != 0) {
        return PL_EIO;
    }
    if (is_dir) {
        return pl__disk_names_sync(d, pl__disk_dir_get(d, h->obj));
    }
    return pl__disk_data_sync(d, pl__disk_inode_get(d, h->obj), UINT64_MAX);
}

int64_t pl__disk_file_size(void *self, int handle)
{
    int err = PL_EBADF;
    pl__disk_handle *h = handle_as(self, handle, PL__DISK_H_FILE, &err);
    return h == NULL ? err : (int64_t)pl__disk_inode_get(disk_of(self), h->obj)->size;
}

/* The directory behind a handle, or NULL with *err. */
static pl__disk_dir *dir_as(void *self, int handle, int *err)
{
    pl__disk_handle *h = handle_as(self, handle, PL__DISK_H_DIR, err);
    if (h == NULL) {
        *err = *err == PL_EISDIR ? PL_EBADF : *err;
        return NULL;
    }
    return pl__disk_dir_get(disk_of(self), h->obj);
}

int pl__disk_dir_rename(void *self, int dirh, const char *from, const char *to)
{
    int err = PL_EBADF;
    pl__disk_dir *dir = dir_as(self, dirh, &err);
    if (dir == NULL) {
        return err;
    }
    err = pl__disk_name_check(from);
    err = err != 0 ? err : pl__disk_name_check(to);
    return err != 0 ? err : pl__disk_names_rename(disk_of(self), dir, from, to);
}

int pl__disk_dir_unlink(void *self, int dirh, const char *name)
{
    int err = PL_EBADF;
    pl__disk_dir *dir = dir_as(self, dirh, &err);
    if (dir == NULL) {
        return err;
    }
    err = pl__disk_name_check(name);
    return err != 0 ? err : pl__disk_names_unlink(disk_of(self), dir, name);
}

ssize_t pl__disk_dir_list(void *self, int dirh, char *buf, size_t len)
{
    int err = PL_EBADF;
    pl__disk_dir *dir = dir_as(self, dirh, &err);
    return dir == NULL ? err : pl__disk_names_list(dir, buf, len);
}
