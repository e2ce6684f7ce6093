/* sim/src/disk/explain.c: a disk decision in words, from its kind, key
 * and value, and the file names the run's record kept (the shrinker
 * explains a finished run: the disk is gone by then). */
#include <stdio.h>
#include <string.h>

#include "disk_impl.h"
#include "pollen/file.h"

static const char *op_name(uint32_t op)
{
    switch (op) {
    case PL__DISK_OP_READ:
        return "read";
    case PL__DISK_OP_WRITE:
        return "write";
    case PL__DISK_OP_SYNC:
        return "fsync";
    case PL__DISK_OP_DIRSYNC:
        return "fsync of directory";
    default:
        return "crash";
    }
}

/* File `no`'s name in the blob ("'log.dat'"), or "file #N". */
static void file_name(char *buf, size_t len, uint32_t no, const char *names, uint32_t count)
{
    const char *p = names;
    for (uint32_t i = 1; p != NULL && i < no && i <= count; i++) {
        p += strlen(p) + 1;
    }
    if (p != NULL && no >= 1 && no <= count && p[0] != '\0') {
        snprintf(buf, len, "'%s'", p);
    } else {
        snprintf(buf, len, "file #%u", no);
    }
}

/* "read of 'log.dat' at offset 4096", "fsync of 'log.dat'". */
static void subject(char *buf, size_t len, uint32_t op, const char *file, uint32_t obj,
                    uint64_t off)
{
    if (op == PL__DISK_OP_READ || op == PL__DISK_OP_WRITE) {
        snprintf(buf, len, "%s of %s at offset %llu", op_name(op), file, (unsigned long long)off);
    } else if (op == PL__DISK_OP_DIRSYNC) {
        snprintf(buf, len, "fsync of directory #%u", obj);
    } else {
        snprintf(buf, len, "%s of %s", op_name(op), file);
    }
}

static void explain_lose(char *buf, size_t len, uint32_t sub, const char *file, uint32_t v,
                         uint32_t n)
{
    static const char *const modes[3] = {"none", "all", "a torn prefix"};
    if (sub == 0) {
        snprintf(buf, len, "disk: at the crash, %s of %s's unsynced writes survived",
                 modes[v < 3 ? v : 2], file);
    } else {
        snprintf(buf, len, "disk: the crash tore %s's unsynced writes after %u of %u bytes", file,
                 v, n);
    }
}

bool pl__disk_explain(char *buf, size_t len, uint32_t kind, uint64_t key, uint32_t v, uint32_t n,
                      const char *names, uint32_t count)
{
    uint32_t op = (uint32_t)(key >> 60);
    uint32_t sub = (uint32_t)(key >> 56) & 0xfu;
    uint32_t obj = (uint32_t)(key >> 36) & 0xfffffu;
    uint64_t off = key & 0xfffffffffu;
    char file[PL_FILE_NAME_MAX + 3];
    file_name(file, sizeof file, obj, names, count);
    char what[sizeof file + 64];
    subject(what, sizeof what, op, file, obj, off);
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
        explain_lose(buf, len, sub, file, v, n);
        return true;
    default:
        return false;
    }
}
