/* sim/src/disk/crash.c: the crash. What a power cut leaves: the durable
 * entries of every directory, the files they name with their durable
 * bytes, and of each such file's unsynced writes what PL_DECIDE_DISK_LOSE
 * decides (0: none, the plain crash; 1: all of them; 2: a torn prefix of
 * the list, cut after a decided number of its bytes). Every handle opened
 * before the crash fails from then on: the process that held it is gone.
 */
#include <stdint.h>

#include "disk_impl.h"

/* The handles die first, so their files are freed with the rest. */
static void handles_die(pl__disk *d)
{
    for (size_t i = 0; i < d->handles_len; i++) {
        pl__disk_handle *h = &d->handles[i];
        if (h->kind == PL__DISK_FREE || h->stale) {
            continue;
        }
        if (h->kind == PL__DISK_H_FILE) {
            pl__disk_inode_get(d, h->obj)->opens--;
        }
        h->stale = true;
        h->obj = 0;
    }
}

/* How many bytes of `ino`'s pending list reach the platter. */
static uint64_t survivors(pl__disk *d, const pl__disk_inode *ino)
{
    uint64_t key = pl__disk_key_of(d, PL__DISK_OP_CRASH, 0, ino->no, d->crashes);
    uint32_t mode = pl__sim_choose(d->sim, PL_DECIDE_DISK_LOSE, 3, key);
    if (mode == 0) {
        return 0;
    }
    if (mode == 1) {
        return UINT64_MAX;
    }
    uint64_t total = pl__disk_data_pending_bytes(ino);
    uint32_t n = total < UINT32_MAX ? (uint32_t)total : UINT32_MAX;
    return pl__sim_choose(d->sim, PL_DECIDE_DISK_LOSE, n, key | (uint64_t)1 << 56);
}

size_t pl__disk_crash(pl__disk *d)
{
    if (d == NULL) {
        return 0;
    }
    d->crashes++;
    handles_die(d);
    for (size_t i = 0; i < d->dirs_len; i++) {
        pl__disk_names_revert(d, d->dirs[i]);
    }
    for (size_t i = 0; i < d->inodes_len; i++) {
        pl__disk_inode_maybe_free(d, d->inodes[i]);
    }
    /* Only files that outlive the crash draw: a decision about a file
     * that is gone anyway would only be noise to the shrinker. */
    size_t dropped = 0;
    for (size_t i = 0; i < d->inodes_len; i++) {
        pl__disk_inode *ino = d->inodes[i];
        if (ino == NULL || ino->pend_len == 0) {
            continue;
        }
        uint64_t keep = survivors(d, ino);
        dropped += keep < pl__disk_data_pending_bytes(ino) || keep == 0 ? 1 : 0;
        if (pl__disk_data_sync(d, ino, keep) != 0) {
            pl__sim_oom(d->sim, pl__sim_polled(d->sim), "the disk's data at a crash");
            (void)pl__disk_data_sync(d, ino, 0); /* needs no memory */
        }
    }
    return dropped;
}

int pl_sim_disk_crash(void)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        return PL_EINVAL;
    }
    return (int)pl__disk_crash(s->disk);
}
