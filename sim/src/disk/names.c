/* sim/src/disk/names.c: a directory's entries. Two sets, both sorted by
 * name: the visible one, which create, rename and unlink change at once,
 * and the durable one, which only a sync of the directory replaces with
 * a copy of the visible one. Each file counts the entries of each set
 * that name it (links, dlinks) and is freed when nothing names or opens
 * it. Names count toward PL_SIM_DISK_BYTES_MAX, once per set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk_impl.h"
#include "grow.h"
#include "pollen/file.h"

int pl__disk_name_check(const char *name)
{
    size_t len = strlen(name);
    if (len == 0 || strchr(name, '/') != NULL || strcmp(name, ".") == 0 ||
        strcmp(name, "..") == 0) {
        return PL_EINVAL;
    }
    return len > PL_FILE_NAME_MAX ? PL_ENAMETOOLONG : 0;
}

/* The position of `name` in es, or where it would go (*found false). */
static size_t find(const pl__disk_entries *es, const char *name, bool *found)
{
    size_t lo = 0, hi = es->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(es->e[mid].name, name);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return lo;
}

uint32_t pl__disk_names_lookup(const pl__disk_dir *dir, const char *name)
{
    return pl__disk_names_in(&dir->vis, name);
}

uint32_t pl__disk_names_in(const pl__disk_entries *es, const char *name)
{
    bool found;
    size_t i = find(es, name, &found);
    return found ? es->e[i].ino : 0;
}

const char *pl__disk_names_of(const pl__disk_entries *es, uint32_t ino)
{
    /* Sorted by name, not by file: a scan. Only a crash's words ask. */
    for (size_t i = 0; i < es->len; i++) {
        if (es->e[i].ino == ino) {
            return es->e[i].name;
        }
    }
    return NULL;
}

/* Inserts a copy of name at position i of es (force: charged even past
 * the bound, for a crash). */
static int insert_(pl__disk *d, pl__disk_entries *es, size_t i, const char *name, uint32_t ino,
                   bool force)
{
    size_t len = strlen(name) + 1;
    if (force) {
        d->bytes += len;
    } else if (pl__disk_charge(d, (int64_t)len) != 0) {
        return PL_ENOSPC;
    }
    char *copy = malloc(len);
    if (copy == NULL ||
        pl__grow_append((void **)&es->e, &es->cap, es->len + 1, sizeof *es->e, 8, 0) != 0) {
        free(copy);
        (void)pl__disk_charge(d, -(int64_t)len);
        return PL_ENOMEM;
    }
    memcpy(copy, name, len);
    memmove(es->e + i + 1, es->e + i, (es->len - i) * sizeof *es->e);
    es->e[i] = (pl__disk_entry){copy, ino};
    es->len++;
    return 0;
}

static int insert(pl__disk *d, pl__disk_entries *es, size_t i, const char *name, uint32_t ino)
{
    return insert_(d, es, i, name, ino, false);
}

static void remove_at(pl__disk *d, pl__disk_entries *es, size_t i)
{
    (void)pl__disk_charge(d, -(int64_t)(strlen(es->e[i].name) + 1));
    free(es->e[i].name);
    memmove(es->e + i, es->e + i + 1, (es->len - i - 1) * sizeof *es->e);
    es->len--;
}

void pl__disk_names_note(pl__disk *d, uint32_t no, const pl__disk_dir *dir, const char *name)
{
    if (no == 0 || no > PL__DISK_NAMES_KEPT) {
        return;
    }
    if (no > d->file_names_len) {
        if (pl__grow((void **)&d->file_names, &d->file_names_cap, no, sizeof *d->file_names, 16,
                     PL__DISK_NAMES_KEPT) != 0) {
            return;
        }
        d->file_names_len = no;
    }
    /* "wal/0001.log": the directory's path as it was opened, one slash. */
    size_t dlen = strlen(dir->path);
    bool slash = dlen > 0 && dir->path[dlen - 1] != '/';
    size_t len = dlen + slash + strlen(name) + 1;
    char *copy = malloc(len);
    if (copy != NULL) {
        memcpy(copy, dir->path, dlen);
        copy[dlen] = '/';
        memcpy(copy + dlen + slash, name, len - dlen - slash);
        free(d->file_names[no - 1]);
        d->file_names[no - 1] = copy;
    }
}

/* Appends s and its NUL at *p. */
static char *put(char *p, const char *s)
{
    size_t l = strlen(s) + 1;
    memcpy(p, s, l);
    return p + l;
}

static const char *file_name_or_empty(const pl__disk *d, size_t i)
{
    return d->file_names[i] != NULL ? d->file_names[i] : "";
}

char *pl__disk_names_blob(const pl__disk *d, size_t *len, uint32_t *count)
{
    *len = 0;
    *count = 0;
    if (d == NULL || d->file_names_len == 0) {
        return NULL;
    }
    size_t total = 0;
    for (size_t i = 0; i < d->file_names_len; i++) {
        total += strlen(file_name_or_empty(d, i)) + 1;
    }
    char *blob = malloc(total);
    if (blob == NULL) {
        return NULL;
    }
    char *p = blob;
    for (size_t i = 0; i < d->file_names_len; i++) {
        p = put(p, file_name_or_empty(d, i));
    }
    *len = total;
    *count = (uint32_t)d->file_names_len;
    return blob;
}

/* The run's disks by node: the scenario's, then each node's. */
static const pl__disk *disk_of_node(const pl__sim *s, uint32_t n)
{
    return n == 0 ? s->disk : s->nodes.list[n].disk;
}

/* One disk's section of pl__disk_run_names: its header, its directories'
 * paths and its files' latest paths. Writes it at p when p is not NULL;
 * returns its bytes. Adds its strings to *count. */
static size_t section(const pl__disk *d, uint32_t n, const char *node, char *p, uint32_t *count)
{
    char head[64];
    int w = snprintf(head, sizeof head, "@%u:%zu:%zu:%s", n, d->dirs_len, d->file_names_len, node);
    PL__SIM_ASSERT(w > 0 && (size_t)w < sizeof head); /* node names are 32 bytes at most */
    size_t bytes = (size_t)w + 1;
    char *q = p != NULL ? put(p, head) : NULL;
    for (size_t i = 0; i < d->dirs_len; i++) {
        bytes += strlen(d->dirs[i]->path) + 1;
        q = q != NULL ? put(q, d->dirs[i]->path) : NULL;
    }
    for (size_t i = 0; i < d->file_names_len; i++) {
        bytes += strlen(file_name_or_empty(d, i)) + 1;
        q = q != NULL ? put(q, file_name_or_empty(d, i)) : NULL;
    }
    *count += 1 + (uint32_t)d->dirs_len + (uint32_t)d->file_names_len;
    return bytes;
}

char *pl__disk_run_names(const pl__sim *s, size_t *len, uint32_t *count)
{
    uint32_t nodes = s->nodes.list != NULL ? s->nodes.len : 1;
    size_t total = 0;
    *count = 0;
    for (uint32_t n = 0; n < nodes; n++) {
        const pl__disk *d = disk_of_node(s, n);
        total +=
            d != NULL ? section(d, n, n != 0 ? s->nodes.list[n].def.name : "", NULL, count) : 0;
    }
    *len = 0;
    if (total == 0) {
        *count = 0;
        return NULL;
    }
    char *blob = malloc(total);
    if (blob == NULL) {
        *count = 0;
        return NULL;
    }
    char *p = blob;
    uint32_t written = 0;
    for (uint32_t n = 0; n < nodes; n++) {
        const pl__disk *d = disk_of_node(s, n);
        p += d != NULL ? section(d, n, n != 0 ? s->nodes.list[n].def.name : "", p, &written) : 0;
    }
    PL__SIM_ASSERT(written == *count && (size_t)(p - blob) == total);
    *len = total;
    return blob;
}

int pl__disk_names_add(pl__disk *d, pl__disk_dir *dir, const char *name, uint32_t ino)
{
    bool found;
    size_t i = find(&dir->vis, name, &found);
    PL__SIM_ASSERT(!found);
    int rc = insert(d, &dir->vis, i, name, ino);
    if (rc == 0) {
        pl__disk_inode_get(d, ino)->links++;
        pl__disk_names_note(d, ino, dir, name);
    }
    return rc;
}

/* Takes one visible link away from file `no`, freeing it if that was all. */
static void unlink_file(pl__disk *d, uint32_t no)
{
    pl__disk_inode *ino = pl__disk_inode_get(d, no);
    PL__SIM_ASSERT(ino != NULL && ino->links > 0);
    ino->links--;
    pl__disk_inode_maybe_free(d, ino);
}

int pl__disk_names_rename(pl__disk *d, pl__disk_dir *dir, const char *from, const char *to)
{
    bool found;
    size_t i = find(&dir->vis, from, &found);
    if (!found) {
        return PL_ENOENT;
    }
    uint32_t moved = dir->vis.e[i].ino;
    if (strcmp(from, to) == 0) {
        return 0;
    }
    pl__disk_names_note(d, moved, dir, to);
    size_t j = find(&dir->vis, to, &found);
    if (found) {
        /* Replace the target in place, then drop the source's entry. */
        uint32_t old = dir->vis.e[j].ino;
        dir->vis.e[j].ino = moved;
        remove_at(d, &dir->vis, i);
        if (old != moved) {
            unlink_file(d, old);
        } else {
            pl__disk_inode_get(d, moved)->links--;
        }
        return 0;
    }
    int rc = insert(d, &dir->vis, j, to, moved);
    if (rc != 0) {
        return rc;
    }
    remove_at(d, &dir->vis, j <= i ? i + 1 : i);
    return 0;
}

int pl__disk_names_unlink(pl__disk *d, pl__disk_dir *dir, const char *name)
{
    bool found;
    size_t i = find(&dir->vis, name, &found);
    if (!found) {
        return PL_ENOENT;
    }
    uint32_t no = dir->vis.e[i].ino;
    remove_at(d, &dir->vis, i);
    unlink_file(d, no);
    return 0;
}

ssize_t pl__disk_names_list(const pl__disk_dir *dir, char *buf, size_t len)
{
    size_t used = 0;
    for (size_t i = 0; i < dir->vis.len; i++) {
        size_t l = strlen(dir->vis.e[i].name) + 1;
        if (l > len - used) {
            return PL_EMSGSIZE;
        }
        memcpy(buf + used, dir->vis.e[i].name, l);
        used += l;
    }
    return (ssize_t)used;
}

void pl__disk_names_free(pl__disk_entries *es)
{
    for (size_t i = 0; i < es->len; i++) {
        free(es->e[i].name);
    }
    free(es->e);
    *es = (pl__disk_entries){NULL, 0, 0};
}

/* A copy of src with every name counted (on failure, nothing is). */
static int copy_set(pl__disk *d, const pl__disk_entries *src, pl__disk_entries *out, bool force)
{
    *out = (pl__disk_entries){NULL, 0, 0};
    for (size_t i = 0; i < src->len; i++) {
        int rc = insert_(d, out, i, src->e[i].name, src->e[i].ino, force);
        if (rc != 0) {
            for (size_t k = 0; k < out->len; k++) {
                (void)pl__disk_charge(d, -(int64_t)(strlen(out->e[k].name) + 1));
            }
            pl__disk_names_free(out);
            return rc;
        }
    }
    return 0;
}

/* Replaces *set with `fresh`, moving each named file's count (links or
 * dlinks) from the old names to the new ones. */
static void replace_set(pl__disk *d, pl__disk_entries *set, pl__disk_entries fresh, bool durable)
{
    for (size_t i = 0; i < fresh.len; i++) {
        pl__disk_inode *ino = pl__disk_inode_get(d, fresh.e[i].ino);
        *(durable ? &ino->dlinks : &ino->links) += 1;
    }
    pl__disk_entries old = *set;
    *set = fresh;
    for (size_t i = 0; i < old.len; i++) {
        pl__disk_inode *ino = pl__disk_inode_get(d, old.e[i].ino);
        *(durable ? &ino->dlinks : &ino->links) -= 1;
        (void)pl__disk_charge(d, -(int64_t)(strlen(old.e[i].name) + 1));
    }
    for (size_t i = 0; i < old.len; i++) {
        pl__disk_inode_maybe_free(d, pl__disk_inode_get(d, old.e[i].ino));
    }
    pl__disk_names_free(&old);
}

int pl__disk_names_sync(pl__disk *d, pl__disk_dir *dir)
{
    pl__disk_entries fresh;
    int rc = copy_set(d, &dir->vis, &fresh, false);
    if (rc == 0) {
        replace_set(d, &dir->dur, fresh, true);
    }
    return rc;
}

void pl__disk_names_revert(pl__disk *d, pl__disk_dir *dir)
{
    pl__disk_entries fresh;
    /* The crash must happen whatever room is left: the visible names it
     * replaces are given back right after. Only memory can fail. */
    if (copy_set(d, &dir->dur, &fresh, true) != 0) {
        pl__sim_oom(d->sim, pl__sim_polled(d->sim), "the disk's names at a crash");
        fresh = (pl__disk_entries){NULL, 0, 0};
    }
    replace_set(d, &dir->vis, fresh, false);
}
