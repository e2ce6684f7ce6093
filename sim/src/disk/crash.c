/* sim/src/disk/crash.c: the crash. What a power cut leaves: the durable
 * entries of every directory, the files they name with their durable
 * bytes, and of each such file's unsynced writes what PL_DECIDE_DISK_LOSE
 * decides (0: none, the plain crash; 1: all of them; 2: a torn prefix of
 * the list, cut after a decided number of its bytes). Every handle opened
 * before the crash fails from then on: the process that held it is gone.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "disk_impl.h"

/* ---- The crash in words --------------------------------------------------
 * By default a crash decides nothing a shrunk schedule lists (disk_lose
 * 0, production's crash, loses every unsynced write), so no decision line
 * said what it lost, and a reader had to work out which write or entry it
 * was. A run that keeps its trace's texts gets one line per loss, a note
 * of no task (pl__sim_note) that the timeline shows and the shrinker's
 * explanation lists. Words only: nothing here decides or hashes. */

/* A path in a line: a line is cut to PL_TRACE_EVENT_MAX - 1 bytes anyway. */
#define PATH_WORDS PL_TRACE_EVENT_MAX

typedef struct words {
    pl__disk *d;
    bool on;       /* the run keeps texts */
    uint32_t said; /* lines noted */
    uint32_t more; /* losses past PL__DISK_CRASH_LINES */
} words;

static void say(words *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(words *w, const char *fmt, ...)
{
    if (!w->on) {
        return;
    }
    if (w->said >= PL__DISK_CRASH_LINES) {
        w->more++;
        return;
    }
    char line[PL_TRACE_EVENT_MAX];
    const char *node = pl__node_name(&w->d->sim->nodes, w->d->node);
    int head = node[0] != '\0'
                   ? snprintf(line, sizeof line, PL__DISK_CRASH_NOTE "node '%s': ", node)
                   : snprintf(line, sizeof line, PL__DISK_CRASH_NOTE);
    if (head > 0 && (size_t)head < sizeof line) {
        va_list ap;
        va_start(ap, fmt);
        int rest = vsnprintf(line + head, sizeof line - (size_t)head, fmt, ap);
        va_end(ap);
        if (rest > 0 && (size_t)head + (size_t)rest >= sizeof line) {
            memcpy(line + sizeof line - 4, "...", 3); /* a long path was cut */
        }
    }
    pl__sim_note(w->d->sim, line);
    w->said++;
}

/* "db/log": the directory's path as it was opened, then the name. */
static const char *path_of(char *buf, size_t len, const pl__disk_dir *dir, const char *name)
{
    size_t dlen = strlen(dir->path);
    bool slash = dlen > 0 && dir->path[dlen - 1] != '/';
    snprintf(buf, len, "%s%s%s", dir->path, slash ? "/" : "", name);
    return buf;
}

/* The latest path of file `no`, or "file #N". */
static const char *file_of(char *buf, size_t len, const pl__disk *d, uint32_t no)
{
    if (no >= 1 && no <= d->file_names_len && d->file_names[no - 1] != NULL) {
        snprintf(buf, len, "%s", d->file_names[no - 1]);
    } else {
        snprintf(buf, len, "file #%u", no);
    }
    return buf;
}

/* Entries made since the directory's last sync: a created file goes, a
 * rename is undone. */
static void say_made(words *w, const pl__disk_dir *dir)
{
    char a[PATH_WORDS], b[PATH_WORDS];
    for (size_t i = 0; i < dir->vis.len; i++) {
        const pl__disk_entry *e = &dir->vis.e[i];
        uint32_t was = pl__disk_names_in(&dir->dur, e->name);
        if (was == e->ino) {
            continue;
        }
        const char *from = pl__disk_names_of(&dir->dur, e->ino);
        if (from != NULL) {
            say(w, "the rename of '%s' to '%s' was undone (never fsynced in its directory)",
                path_of(a, sizeof a, dir, from), path_of(b, sizeof b, dir, e->name));
        } else if (was == 0 || pl__disk_names_of(&dir->vis, was) != NULL) {
            uint64_t size = pl__disk_inode_get(w->d, e->ino)->size;
            say(w, "'%s' lost its directory entry (created, never fsynced in its directory)%s",
                path_of(a, sizeof a, dir, e->name), size > 0 ? ", and its bytes with it" : "");
        }
        /* Else the name's durable file comes back: said below. */
    }
}

/* Entries gone since the directory's last sync come back. */
static void say_gone(words *w, const pl__disk_dir *dir)
{
    char a[PATH_WORDS];
    for (size_t i = 0; i < dir->dur.len; i++) {
        const pl__disk_entry *e = &dir->dur.e[i];
        uint32_t now = pl__disk_names_in(&dir->vis, e->name);
        if (now == e->ino || pl__disk_names_of(&dir->vis, e->ino) != NULL) {
            continue; /* unchanged, or renamed: said above */
        }
        if (now != 0) {
            say(w,
                "'%s' names its older file again (the newer entry was never fsynced in its "
                "directory)",
                path_of(a, sizeof a, dir, e->name));
        } else {
            say(w, "'%s' is back (its unlink was never fsynced in its directory)",
                path_of(a, sizeof a, dir, e->name));
        }
    }
}

/* What a file's unsynced writes lost: `keep` bytes of `total` survived
 * (UINT64_MAX: all). */
static void say_data(words *w, const pl__disk_inode *ino, uint64_t total, uint64_t keep)
{
    char a[PATH_WORDS];
    uint64_t kept = keep < total ? keep : total;
    if (kept < total) {
        say(w, "'%s' lost %llu unsynced bytes (kept %llu of %llu)",
            file_of(a, sizeof a, w->d, ino->no), (unsigned long long)(total - kept),
            (unsigned long long)kept, (unsigned long long)total);
    } else if (keep == 0) {
        say(w, "'%s' lost its unsynced truncation", file_of(a, sizeof a, w->d, ino->no));
    }
}

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
    words w = {.d = d, .on = pl__sim_notes_on(d->sim)};
    for (size_t i = 0; i < d->dirs_len; i++) {
        if (w.on) {
            say_made(&w, d->dirs[i]);
            say_gone(&w, d->dirs[i]);
        }
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
        uint64_t total = pl__disk_data_pending_bytes(ino);
        dropped += keep < total || keep == 0 ? 1 : 0;
        say_data(&w, ino, total, keep);
        if (pl__disk_data_sync(d, ino, keep) != 0) {
            pl__sim_oom(d->sim, pl__sim_polled(d->sim), "the disk's data at a crash");
            (void)pl__disk_data_sync(d, ino, 0); /* needs no memory */
        }
    }
    if (w.more > 0) {
        w.said = 0; /* one line more for the rest */
        say(&w, "and %u more", w.more);
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
