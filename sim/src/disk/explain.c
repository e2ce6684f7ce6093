/* sim/src/disk/explain.c: a disk decision in words, from its kind, key
 * and value, and the names the run's record kept (the shrinker explains
 * a finished run: the disks are gone by then). The key says which node's
 * disk it was, so each line names the node and the file's latest path
 * even when several disks number their files alike. */
#include <stdio.h>
#include <string.h>

#include "disk_impl.h"
#include "pollen/file.h"

/* A quoted path or "directory #N" fits; a longer one is cut. */
#define PL__DISK_EXPLAIN_NAME_MAX 320

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

/* The no-th (1-based) of `count` "\0"-separated strings at p, or NULL. */
static const char *nth(const char *p, uint32_t count, uint32_t no)
{
    if (p == NULL || no == 0 || no > count) {
        return NULL;
    }
    for (uint32_t i = 1; i < no; i++) {
        p += strlen(p) + 1;
    }
    return p;
}

/* "'wal/0001.log'", or `what` then "#N" when the name is unknown. */
static void quoted(char *buf, size_t len, const char *what, uint32_t no, const char *name)
{
    if (name != NULL && name[0] != '\0') {
        snprintf(buf, len, "'%s'", name);
    } else {
        snprintf(buf, len, "%s#%u", what, no);
    }
}

/* What the names say about the disk of one decision. */
typedef struct names_view {
    uint32_t node_no; /* 0: the scenario's own disk, which names no node */
    const char *node; /* the node's name; NULL when unknown */
    const char *dirs; /* dirs_count paths, by number */
    uint32_t dirs_count;
    const char *files; /* files_count latest paths, by number */
    uint32_t files_count;
} names_view;

/* "read of 'wal/0001.log' at offset 4096", "fsync of directory 'wal'"
 * ("fsync of directory #2" when its path is unknown). */
static void subject(char *buf, size_t len, uint32_t op, const names_view *nv, uint32_t obj,
                    uint64_t off)
{
    char name[PL__DISK_EXPLAIN_NAME_MAX];
    if (op == PL__DISK_OP_DIRSYNC) {
        quoted(name, sizeof name, "", obj, nth(nv->dirs, nv->dirs_count, obj));
        snprintf(buf, len, "fsync of directory %s", name);
        return;
    }
    quoted(name, sizeof name, "file ", obj, nth(nv->files, nv->files_count, obj));
    if (op == PL__DISK_OP_READ || op == PL__DISK_OP_WRITE) {
        snprintf(buf, len, "%s of %s at offset %llu", op_name(op), name, (unsigned long long)off);
    } else {
        snprintf(buf, len, "%s of %s", op_name(op), name);
    }
}

static void explain_lose(char *buf, size_t len, const char *disk, uint32_t sub, const char *file,
                         uint32_t v, uint32_t n)
{
    static const char *const modes[3] = {"none", "all", "a torn prefix"};
    if (sub == 0) {
        snprintf(buf, len, "%sat the crash, %s of %s's unsynced writes survived", disk,
                 modes[v < 3 ? v : 2], file);
    } else {
        snprintf(buf, len, "%sthe crash tore %s's unsynced writes after %u of %u bytes", disk, file,
                 v, n);
    }
}

static bool explain(char *buf, size_t len, uint32_t kind, uint64_t key, uint32_t v, uint32_t n,
                    const names_view *nv)
{
    uint32_t op = (uint32_t)(key >> 60);
    uint32_t sub = (uint32_t)(key >> 56) & 0xfu;
    uint32_t obj = (uint32_t)(key >> 36) & 0xfffffu;
    uint64_t off = key & 0x7fffffffu;
    /* "disk: " or "disk: node 'b1': " */
    char disk[64];
    if (nv->node_no != 0 && nv->node != NULL) {
        snprintf(disk, sizeof disk, "disk: node '%s': ", nv->node);
    } else if (nv->node_no != 0) {
        snprintf(disk, sizeof disk, "disk: node #%u: ", nv->node_no);
    } else {
        snprintf(disk, sizeof disk, "disk: ");
    }
    char what[PL__DISK_EXPLAIN_NAME_MAX + 64];
    subject(what, sizeof what, op, nv, obj, off);
    switch (kind) {
    case PL_DECIDE_DISK_LATENCY:
        snprintf(buf, len, "%s%s took %.3f ms", disk, what,
                 (double)v * (double)PL_SIM_DISK_LATENCY_QUANTUM_NS / 1e6);
        return true;
    case PL_DECIDE_DISK_FAULT:
        if (sub != 0) {
            snprintf(buf, len, "%sthe short %s moved %u of %u bytes", disk, what, v + 1, n + 1);
        } else if (v == 1) {
            snprintf(buf, len, "%s%s failed with EIO", disk, what);
        } else {
            snprintf(buf, len, "%s%s was cut short", disk, what);
        }
        return true;
    case PL_DECIDE_DISK_CORRUPT:
        snprintf(buf, len, "%s%s returned a flipped bit (bit %u of %u bytes)", disk, what,
                 v > 0 ? v - 1 : 0, (n - 1) / 8);
        return true;
    case PL_DECIDE_DISK_LOSE: {
        char file[PL__DISK_EXPLAIN_NAME_MAX];
        quoted(file, sizeof file, "file ", obj, nth(nv->files, nv->files_count, obj));
        explain_lose(buf, len, disk, sub, file, v, n);
        return true;
    }
    default:
        return false;
    }
}

/* The section of node `node` in a run's names (disk.h), its name
 * included, or an empty view (no names known) when there is none. */
static names_view view_of(const char *names, uint32_t count, uint32_t node)
{
    names_view nv = {0};
    const char *p = names;
    for (uint32_t i = 0; p != NULL && i < count;) {
        unsigned no, dirs, files;
        int at = 0;
        if (sscanf(p, "@%u:%u:%u:%n", &no, &dirs, &files, &at) != 3 || at == 0 ||
            (uint64_t)dirs + files >= count - i) {
            break; /* not a record pl__disk_run_names wrote: no names */
        }
        if (no == node) {
            nv.node = p + at;
            nv.dirs = p + strlen(p) + 1;
            nv.dirs_count = dirs;
            nv.files = nth(nv.dirs, dirs + files, dirs + 1);
            nv.files_count = files;
            return nv;
        }
        p = nth(p, count - i, dirs + files + 2);
        i += dirs + files + 1;
    }
    return nv;
}

bool pl__disk_explain_run(char *buf, size_t len, uint32_t kind, uint64_t key, uint32_t v,
                          uint32_t n, const char *names, uint32_t count)
{
    uint32_t node = (uint32_t)(key >> 31) & 0x1fu;
    names_view nv = view_of(names, count, node);
    nv.node_no = node;
    return explain(buf, len, kind, key, v, n, &nv);
}

bool pl__disk_explain(char *buf, size_t len, uint32_t kind, uint64_t key, uint32_t v, uint32_t n,
                      const char *names, uint32_t count)
{
    names_view nv = {.files = names, .files_count = count};
    return explain(buf, len, kind, key, v, n, &nv);
}
