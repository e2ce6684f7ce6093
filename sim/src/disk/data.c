/* sim/src/disk/data.c: a file's bytes. Durable bytes and, apart from
 * them, the pending writes and truncations in the order they were made:
 * a read sees the durable bytes with the pending list applied in order,
 * a sync (or a crash, for the part that survives) applies the list to the
 * durable bytes. A file's cost (what PL_SIM_DISK_BYTES_MAX counts) is its
 * durable bytes plus, for each pending write, its bytes, the hole it
 * opens past the end and PL__DISK_PEND_OVERHEAD: a sync grows the durable
 * bytes by no more than that, so it never runs out of room.
 */
#include <stdlib.h>
#include <string.h>

#include "disk_impl.h"
#include "grow.h"

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

uint64_t pl__disk_data_pending_bytes(const pl__disk_inode *ino)
{
    uint64_t n = 0;
    for (size_t i = 0; i < ino->pend_len; i++) {
        n += ino->pend[i].len;
    }
    return n;
}

/* Copies the overlap of [from, from + n) (bytes at `src`) and the read
 * window [off, off + len) into buf. */
static void overlay(uint8_t *buf, uint64_t off, size_t len, const uint8_t *src, uint64_t from,
                    uint64_t n)
{
    uint64_t lo = max_u64(off, from);
    uint64_t hi = off + len < from + n ? off + len : from + n;
    if (lo < hi) {
        memcpy(buf + (lo - off), src + (lo - from), (size_t)(hi - lo));
    }
}

size_t pl__disk_data_read(const pl__disk_inode *ino, void *out, size_t len, uint64_t off)
{
    if (off >= ino->size) {
        return 0;
    }
    size_t n = ino->size - off < len ? (size_t)(ino->size - off) : len;
    uint8_t *buf = out;
    memset(buf, 0, n);
    overlay(buf, off, n, ino->dur, 0, ino->dur_len);
    for (size_t i = 0; i < ino->pend_len; i++) {
        const pl__disk_pend *p = &ino->pend[i];
        if (p->data != NULL) {
            overlay(buf, off, n, p->data, p->off, p->len);
        } else if (p->off < off + n) {
            /* Cut off: whatever a later write does not refill is a hole. */
            uint64_t from = max_u64(p->off, off);
            memset(buf + (from - off), 0, (size_t)(off + n - from));
        }
    }
    return n;
}

int pl__disk_data_write(pl__disk *d, pl__disk_inode *ino, const void *data, size_t len,
                        uint64_t off)
{
    if (off > PL_SIM_DISK_BYTES_MAX || len > PL_SIM_DISK_BYTES_MAX - off) {
        return PL_ENOSPC;
    }
    uint64_t size = data != NULL ? max_u64(ino->size, off + len) : off;
    uint64_t hole = data != NULL && off > ino->size ? off - ino->size : 0;
    uint64_t add = len + hole + PL__DISK_PEND_OVERHEAD;
    int rc = pl__disk_charge(d, (int64_t)add);
    if (rc != 0) {
        return rc;
    }
    PL__SIM_ASSERT(data == NULL || len > 0);
    uint8_t *copy = data != NULL ? malloc(len) : NULL;
    if ((data != NULL && copy == NULL) ||
        pl__grow_append((void **)&ino->pend, &ino->pend_cap, ino->pend_len + 1, sizeof *ino->pend,
                        4, 0) != 0) {
        free(copy);
        (void)pl__disk_charge(d, -(int64_t)add);
        return PL_ENOMEM;
    }
    if (copy != NULL) {
        memcpy(copy, data, len);
    }
    ino->pend[ino->pend_len++] =
        (pl__disk_pend){.off = off, .len = data != NULL ? len : 0, .data = copy};
    ino->size = size;
    ino->cost += add;
    return 0;
}

/* The largest durable length applying `keep` bytes of the list reaches. */
static uint64_t reach_of(const pl__disk_inode *ino, uint64_t keep)
{
    uint64_t cur = ino->dur_len, most = cur;
    for (size_t i = 0; i < ino->pend_len && keep > 0; i++) {
        const pl__disk_pend *p = &ino->pend[i];
        if (p->data == NULL) {
            cur = p->off;
            continue;
        }
        uint64_t take = p->len < keep ? p->len : keep;
        cur = max_u64(cur, p->off + take);
        most = max_u64(most, cur);
        keep -= take;
    }
    return most;
}

static void free_pending(pl__disk_inode *ino)
{
    for (size_t i = 0; i < ino->pend_len; i++) {
        free(ino->pend[i].data);
    }
    ino->pend_len = 0;
}

int pl__disk_data_sync(pl__disk *d, pl__disk_inode *ino, uint64_t keep)
{
    if (pl__grow_append((void **)&ino->dur, &ino->dur_cap, (size_t)reach_of(ino, keep), 1, 64, 0) !=
        0) {
        return PL_ENOMEM;
    }
    uint64_t cur = ino->dur_len;
    for (size_t i = 0; i < ino->pend_len && keep > 0; i++) {
        const pl__disk_pend *p = &ino->pend[i];
        if (p->data == NULL) {
            cur = p->off;
            continue;
        }
        uint64_t take = p->len < keep ? p->len : keep;
        if (p->off > cur) {
            memset(ino->dur + cur, 0, (size_t)(p->off - cur));
        }
        memcpy(ino->dur + p->off, p->data, (size_t)take);
        cur = max_u64(cur, p->off + take);
        keep -= take;
    }
    free_pending(ino);
    ino->dur_len = (size_t)cur;
    ino->size = cur;
    /* Never more than was charged, but a sync or a crash must not fail
     * for room either way. */
    d->bytes = d->bytes - ino->cost + cur;
    ino->cost = cur;
    return 0;
}

void pl__disk_data_free(pl__disk_inode *ino)
{
    free_pending(ino);
    free(ino->pend);
    free(ino->dur);
    ino->pend = NULL;
    ino->dur = NULL;
    ino->pend_cap = 0;
    ino->dur_cap = 0;
}

void pl__disk_inode_maybe_free(pl__disk *d, pl__disk_inode *ino)
{
    if (ino == NULL || ino->links > 0 || ino->dlinks > 0 || ino->opens > 0) {
        return;
    }
    PL__SIM_ASSERT(d->inodes[ino->no - 1] == ino);
    (void)pl__disk_charge(d, -(int64_t)ino->cost);
    d->inodes[ino->no - 1] = NULL;
    pl__disk_data_free(ino);
    free(ino);
    d->objects--;
}
