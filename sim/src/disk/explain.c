/* sim/src/disk/explain.c: a disk decision in words, from its kind, key
 * and value alone (the shrinker explains a finished run: the disk is
 * gone by then). Files are named by their number in creation order. */
#include <stdio.h>

#include "disk_impl.h"

static const char *op_name(uint32_t op)
{
    switch (op) {
    case PL__DISK_OP_READ: return "read";
    case PL__DISK_OP_WRITE: return "write";
    case PL__DISK_OP_SYNC: return "fsync";
    case PL__DISK_OP_DIRSYNC: return "fsync of directory";
    default: return "crash";
    }
}

/* "read of file #2 at offset 4096", "fsync of file #2". */
static void subject(char *buf, size_t len, uint32_t op, uint32_t obj, uint64_t off)
{
    if (op == PL__DISK_OP_READ || op == PL__DISK_OP_WRITE) {
        snprintf(buf, len, "%s of file #%u at offset %llu", op_name(op), obj,
                 (unsigned long long)off);
    } else if (op == PL__DISK_OP_DIRSYNC) {
        snprintf(buf, len, "fsync of directory #%u", obj);
    } else {
        snprintf(buf, len, "%s of file #%u", op_name(op), obj);
    }
}

static void explain_lose(char *buf, size_t len, uint32_t sub, uint32_t obj, uint32_t v,
                         uint32_t n)
{
    static const char *const modes[3] = {"none", "all", "a torn prefix"};
    if (sub == 0) {
        snprintf(buf, len, "disk: at the crash, %s of file #%u's unsynced writes survived",
                 modes[v < 3 ? v : 2], obj);
    } else {
        snprintf(buf, len, "disk: the crash tore file #%u's unsynced writes after %u of %u bytes",
                 obj, v, n);
    }
}

bool pl__disk_explain(char *buf, size_t len, uint32_t kind, uint64_t key, uint32_t v,
                      uint32_t n)
{
    uint32_t op = (uint32_t)(key >> 60);
    uint32_t sub = (uint32_t)(key >> 56) & 0xfu;
    uint32_t obj = (uint32_t)(key >> 36) & 0xfffffu;
    uint64_t off = key & 0xfffffffffu;
    char what[96];
    subject(what, sizeof what, op, obj, off);
    switch (kind) {
    case PL_DECIDE_DISK_LATENCY:
        snprintf(buf, len, "disk: %s took %.3f ms", what,
                 (double)v * (double)PL_SIM_DISK_LATENCY_QUANTUM_NS / 1e6);
        return true;
    case PL_DECIDE_DISK_FAULT:
        if (sub != 0) {
            snprintf(buf, len, "disk: the short %s moved %u of %u bytes", what, v + 1, n + 1);
        } else if (v == 1) {
            snprintf(buf, len, "disk: %s failed with EIO", what);
        } else {
            snprintf(buf, len, "disk: %s was cut short", what);
        }
        return true;
    case PL_DECIDE_DISK_CORRUPT:
        snprintf(buf, len, "disk: %s returned a flipped bit (bit %u of %u bytes)", what,
                 v > 0 ? v - 1 : 0, (n - 1) / 8);
        return true;
    case PL_DECIDE_DISK_LOSE:
        explain_lose(buf, len, sub, obj, v, n);
        return true;
    default:
        return false;
    }
}
