/* sim/src/disk/faults.c: the disk's decisions. Each is consulted only
 * when a file is used, so a scenario without files draws none of them and
 * keeps its runs and trace hashes. A decision's key says which operation
 * of which file of which node's disk at which offset it is about, so the
 * shrinker's explanation can say so (explain.c decodes it). */
#include "disk_impl.h"

_Static_assert(PL_SIM_NODES_MAX < 32, "a node index fits the key's 5 bits");

uint64_t pl__disk_key(uint32_t op, uint32_t sub, uint32_t obj, uint64_t off)
{
    return (uint64_t)(op & 0xfu) << 60 | (uint64_t)(sub & 0xfu) << 56 |
           (uint64_t)(obj & 0xfffffu) << 36 | (off & 0x7fffffffu);
}

uint64_t pl__disk_key_of(const pl__disk *d, uint32_t op, uint32_t sub, uint32_t obj, uint64_t off)
{
    return pl__disk_key(op, sub, obj, off) | (uint64_t)(d->node & 0x1fu) << 31;
}

/* A delay is decided at an operation's first attempt; its wake makes the
 * repeated call run it. A delay left behind by a dropped future is taken
 * by the next operation of the same side (still deterministic). */
int pl__disk_delay(pl__disk *d, int handle, pl__disk_handle *h, int side, uint64_t key)
{
    pl_time now = pl__sim_now(d->sim);
    if (h->armed[side]) {
        if (now >= h->due[side]) {
            h->armed[side] = false;
            return 0;
        }
        return PL_EAGAIN;
    }
    uint32_t q = pl__sim_choose(d->sim, PL_DECIDE_DISK_LATENCY, PL_SIM_DISK_LATENCY_STEPS, key);
    if (q == 0) {
        return 0;
    }
    pl_time after = (pl_time)q * PL_SIM_DISK_LATENCY_QUANTUM_NS;
    uint32_t bit = side == 0 ? PL_IO_READABLE : PL_IO_WRITABLE;
    if (h->src == NULL || pl__disk_schedule(d, handle, bit, after) != 0) {
        return 0; /* nothing could wake the caller: no delay */
    }
    h->armed[side] = true;
    h->due[side] = now + after;
    return PL_EAGAIN;
}

static uint32_t choices(size_t n) { return n < UINT32_MAX ? (uint32_t)n : UINT32_MAX; }

ssize_t pl__disk_fault(pl__disk *d, uint32_t op, uint64_t key, size_t len)
{
    bool can_short = (op == PL__DISK_OP_READ || op == PL__DISK_OP_WRITE) && len >= 2;
    uint32_t v = pl__sim_choose(d->sim, PL_DECIDE_DISK_FAULT, can_short ? 3 : 2, key);
    if (v == 0) {
        return 0;
    }
    if (v == 1) {
        return PL_EIO;
    }
    /* Short: 1 + a choice among the len - 1 shorter counts. */
    uint64_t amount_key = key | (uint64_t)1 << 56;
    return 1 + (ssize_t)pl__sim_choose(d->sim, PL_DECIDE_DISK_FAULT, choices(len - 1), amount_key);
}

/* One decision: 0 leaves the bytes alone, v > 0 flips bit v - 1, so a
 * flip that fires lands anywhere in what was read. */
void pl__disk_corrupt(pl__disk *d, uint64_t key, void *buf, size_t len)
{
    size_t bytes = len < ((size_t)1 << 28) ? len : ((size_t)1 << 28);
    if (bytes == 0) {
        return;
    }
    uint32_t v = pl__sim_choose(d->sim, PL_DECIDE_DISK_CORRUPT, (uint32_t)(bytes * 8 + 1), key);
    if (v != 0) {
        uint8_t *p = buf;
        p[(v - 1) / 8] ^= (uint8_t)(1u << ((v - 1) % 8));
    }
}
