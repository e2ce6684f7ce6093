/* sim/src/disk/table.c: the disk's tables: handles, files, directories,
 * the byte count, and the queue of delayed completions. */
#include <stdlib.h>
#include <string.h>

#include "disk_impl.h"
#include "grow.h"

bool pl__disk_owns(int handle) { return handle >= PL__DISK_HANDLE_FIRST; }

size_t pl__disk_open_handles(const pl__disk *d) { return d != NULL ? d->open_handles : 0; }

uint64_t pl__disk_bytes_used(const pl__disk *d) { return d != NULL ? d->bytes : 0; }

int pl__disk_charge(pl__disk *d, int64_t delta)
{
    if (delta > 0 && d->bytes + (uint64_t)delta > PL_SIM_DISK_BYTES_MAX) {
        return PL_ENOSPC;
    }
    PL__SIM_ASSERT(delta >= 0 || d->bytes >= (uint64_t)-delta);
    d->bytes += (uint64_t)delta;
    return 0;
}

/* ---- Handles ------------------------------------------------------------ */

pl__disk_handle *pl__disk_handle_of(pl__disk *d, int handle)
{
    if (d == NULL || !pl__disk_owns(handle)) {
        return NULL;
    }
    size_t i = (size_t)(handle - PL__DISK_HANDLE_FIRST);
    if (i >= d->handles_len || d->handles[i].kind == PL__DISK_FREE) {
        return NULL;
    }
    return &d->handles[i];
}

int pl__disk_handle_new(pl__disk *d, uint8_t kind, uint32_t obj, uint32_t flags)
{
    if (d->open_handles >= PL_SIM_DISK_HANDLES_MAX) {
        return PL_EMFILE;
    }
    size_t i = 0;
    while (i < d->handles_len && d->handles[i].kind != PL__DISK_FREE) {
        i++;
    }
    if (i == d->handles_len) {
        if (pl__grow((void **)&d->handles, &d->handles_cap, i + 1, sizeof *d->handles, 8,
                     PL_SIM_DISK_HANDLES_MAX) != 0) {
            return PL_ENOMEM;
        }
        d->handles_len++;
    }
    pl__disk_handle *h = &d->handles[i];
    uint32_t gen = h->gen + 1;
    *h = (pl__disk_handle){.kind = kind, .obj = obj, .flags = flags, .gen = gen};
    d->open_handles++;
    return PL__DISK_HANDLE_FIRST + (int)i;
}

/* ---- Files ---------------------------------------------------------------- */

pl__disk_inode *pl__disk_inode_get(pl__disk *d, uint32_t no)
{
    return no != 0 && no <= d->inodes_len ? d->inodes[no - 1] : NULL;
}

pl__disk_inode *pl__disk_inode_new(pl__disk *d, int *err)
{
    *err = PL_ENOSPC;
    if (d->objects >= PL_SIM_DISK_FILES_MAX || d->inodes_len >= UINT32_MAX - 1) {
        return NULL;
    }
    *err = PL_ENOMEM;
    if (pl__grow((void **)&d->inodes, &d->inodes_cap, d->inodes_len + 1, sizeof *d->inodes, 16,
                 0) != 0) {
        return NULL;
    }
    pl__disk_inode *ino = calloc(1, sizeof *ino);
    if (ino == NULL) {
        return NULL;
    }
    ino->no = (uint32_t)d->inodes_len + 1;
    d->inodes[d->inodes_len++] = ino;
    d->objects++;
    return ino;
}

/* ---- Directories ------------------------------------------------------------ */

pl__disk_dir *pl__disk_dir_get(pl__disk *d, uint32_t obj)
{
    return obj != 0 && obj <= d->dirs_len ? d->dirs[obj - 1] : NULL;
}

pl__disk_dir *pl__disk_dir_find(pl__disk *d, const char *path, bool create, uint32_t *obj, int *err)
{
    for (size_t i = 0; i < d->dirs_len; i++) {
        if (strcmp(d->dirs[i]->path, path) == 0) {
            *obj = (uint32_t)i + 1;
            return d->dirs[i];
        }
    }
    *err = PL_ENOENT;
    if (!create) {
        return NULL;
    }
    size_t len = strlen(path) + 1;
    *err = PL_ENOSPC;
    if (d->objects >= PL_SIM_DISK_FILES_MAX || pl__disk_charge(d, (int64_t)len) != 0) {
        return NULL;
    }
    *err = PL_ENOMEM;
    pl__disk_dir *dir = calloc(1, sizeof *dir);
    char *p = malloc(len);
    if (dir == NULL || p == NULL ||
        pl__grow((void **)&d->dirs, &d->dirs_cap, d->dirs_len + 1, sizeof *d->dirs, 4, 0) != 0) {
        free(dir);
        free(p);
        (void)pl__disk_charge(d, -(int64_t)len);
        return NULL;
    }
    memcpy(p, path, len);
    dir->path = p;
    d->dirs[d->dirs_len++] = dir;
    d->objects++;
    *obj = (uint32_t)d->dirs_len;
    return dir;
}

/* ---- Completions -------------------------------------------------------------- */

int pl__disk_schedule(pl__disk *d, int handle, uint32_t bit, pl_time after)
{
    pl__disk_handle *h = pl__disk_handle_of(d, handle);
    PL__SIM_ASSERT(h != NULL && after > 0);
    if (pl__grow_append((void **)&d->due, &d->due_cap, d->due_len + 1, sizeof *d->due, 8, 0) != 0) {
        return PL_ENOMEM;
    }
    pl__disk_completion c = {.at = pl__sim_now(d->sim) + after,
                             .seq = ++d->seq,
                             .slot = (uint32_t)(handle - PL__DISK_HANDLE_FIRST),
                             .gen = h->gen,
                             .bit = bit};
    /* Sorted by (at, seq): a later seq never goes before an equal time. */
    size_t i = d->due_len;
    while (i > 0 && d->due[i - 1].at > c.at) {
        d->due[i] = d->due[i - 1];
        i--;
    }
    d->due[i] = c;
    d->due_len++;
    return 0;
}

pl_time pl__disk_next_event(const pl__disk *d)
{
    return d != NULL && d->due_len > 0 ? d->due[0].at : PL_TIME_NEVER;
}

size_t pl__disk_deliver(pl__disk *d, pl_time now)
{
    if (d == NULL) {
        return 0;
    }
    size_t n = 0;
    while (n < d->due_len && d->due[n].at <= now) {
        n++;
    }
    /* Take the due ones out first: a wake may schedule more. */
    pl__disk_completion batch[16];
    size_t woken = 0;
    while (n > 0) {
        size_t k = n < 16 ? n : 16;
        memcpy(batch, d->due, k * sizeof *batch);
        memmove(d->due, d->due + k, (d->due_len - k) * sizeof *d->due);
        d->due_len -= k;
        n -= k;
        for (size_t i = 0; i < k; i++) {
            pl__disk_handle *h = batch[i].slot < d->handles_len ? &d->handles[batch[i].slot] : NULL;
            if (h != NULL && h->kind != PL__DISK_FREE && h->gen == batch[i].gen && h->src != NULL) {
                pl_io_source_ready(h->src, batch[i].bit);
                woken++;
            }
        }
    }
    return woken;
}
