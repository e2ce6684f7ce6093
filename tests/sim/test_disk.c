/* tests/sim/test_disk.c: the simulated disk, on its own.
 *
 * Links sim/src/disk/ alone against a fake simulator whose decisions are
 * scripted per kind, and drives the system's file entries directly: the
 * durability rules (file data needs a file sync, entries a directory
 * sync), the crash with none, all or a torn prefix of the unsynced writes
 * surviving, each fault kind firing (latency, EIO, short read and write,
 * a flipped bit), the bounds, the explanations, and that destroying the
 * disk frees everything (LeakSanitizer in the ASan build).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "disk/disk_impl.h"
#include "leakcheck.h"
#include "pollen/error.h"
#include "pollen/file.h"

/* ---- The fake simulator ------------------------------------------------- */

enum { SCRIPT_MAX = 16 };

static struct fake {
    uint32_t script[PL_DECIDE__COUNT][SCRIPT_MAX];
    size_t script_len[PL_DECIDE__COUNT];
    size_t script_pos[PL_DECIDE__COUNT];
    uint64_t asked[PL_DECIDE__COUNT];
    uint64_t last_key[PL_DECIDE__COUNT];
    int out_of_memory;
    bool notes_on;                      /* the fake run keeps texts */
    char notes[16][PL_TRACE_EVENT_MAX]; /* the disk's notes, in order */
    size_t notes_len;
} fk;

static pl__sim sim;

pl_time pl__sim_now(const pl__sim *s) { return s->now; }

uint32_t pl__sim_choose(pl__sim *s, pl_decision_kind kind, uint32_t n, uint64_t key)
{
    (void)s;
    if (n <= 1) {
        return 0;
    }
    fk.asked[kind]++;
    fk.last_key[kind] = key;
    if (fk.script_pos[kind] < fk.script_len[kind]) {
        uint32_t v = fk.script[kind][fk.script_pos[kind]++];
        cr_assert_lt(v, n, "scripted %u for kind %d with n = %u", v, (int)kind, n);
        return v;
    }
    return 0;
}

pl__sim *pl__sim_current(void) { return &sim; }

bool pl__sim_notes_on(const pl__sim *s)
{
    (void)s;
    return fk.notes_on;
}

void pl__sim_note(pl__sim *s, const char *text)
{
    (void)s;
    cr_assert(fk.notes_on, "a note made while notes are off: %s", text);
    cr_assert_lt(fk.notes_len, sizeof fk.notes / sizeof fk.notes[0]);
    snprintf(fk.notes[fk.notes_len++], sizeof fk.notes[0], "%s", text);
}

void pl__sim_oom(pl__sim *s, const pl_task *t, const char *what)
{
    (void)s;
    (void)t;
    (void)what;
    fk.out_of_memory++;
}

#define SCRIPT(kind, ...)                                                                          \
    do {                                                                                           \
        const uint32_t v_[] = {__VA_ARGS__};                                                       \
        memcpy(fk.script[kind], v_, sizeof v_);                                                    \
        fk.script_len[kind] = sizeof v_ / sizeof v_[0];                                            \
        fk.script_pos[kind] = 0;                                                                   \
    } while (0)

static void setup(void)
{
    memset(&fk, 0, sizeof fk);
    memset(&sim, 0, sizeof sim);
}

static void teardown(void)
{
    cr_assert_eq(fk.out_of_memory, 0);
    pl__disk_destroy(sim.disk);
    sim.disk = NULL;
    pl_test_leak_check();
}

TestSuite(disk, .init = setup, .fini = teardown);

/* ---- Helpers ------------------------------------------------------------ */

#define RW  (PL_FILE_READ | PL_FILE_WRITE)
#define RWC (PL_FILE_READ | PL_FILE_WRITE | PL_FILE_CREATE)

static int dir_open(void)
{
    int h = pl__disk_dir_open(&sim, "db", 1);
    cr_assert_geq(h, PL__DISK_HANDLE_FIRST, "%s", pl_err_name(h));
    return h;
}

static int open_file(int dir, const char *name, uint32_t flags)
{
    return pl__disk_file_open(&sim, dir, name, flags, 0644);
}

static void write_str(int f, const char *s, uint64_t off)
{
    ssize_t n = pl__disk_file_write(&sim, f, s, strlen(s), off);
    cr_assert_eq(n, (ssize_t)strlen(s), "%s", pl_err_name((int)n));
}

/* The whole file as a string (up to 63 bytes). */
static const char *contents(int f)
{
    static char buf[64];
    memset(buf, 0, sizeof buf);
    ssize_t n = pl__disk_file_read(&sim, f, buf, sizeof buf - 1, 0);
    cr_assert_geq(n, 0, "%s", pl_err_name((int)n));
    return buf;
}

/* After a crash: the directory and `name` opened again. */
static int reopen(int *dir, const char *name)
{
    *dir = dir_open();
    return open_file(*dir, name, RW);
}

static void crash(void) { (void)pl__disk_crash(sim.disk); }

/* A file whose entry is durable, with `synced` synced. */
static int durable_file(int dir, const char *name, const char *synced)
{
    int f = open_file(dir, name, RWC);
    cr_assert_geq(f, 0);
    cr_assert_eq(pl__disk_file_sync(&sim, dir, 0), 0);
    if (synced[0] != '\0') {
        write_str(f, synced, 0);
        cr_assert_eq(pl__disk_file_sync(&sim, f, 0), 0);
    }
    return f;
}

/* ---- Durability --------------------------------------------------------- */

Test(disk, data_is_durable_only_after_a_file_sync)
{
    int dir = dir_open();
    int f = durable_file(dir, "log", "abc");
    write_str(f, "def", 3);
    cr_assert_str_eq(contents(f), "abcdef", "reads see unsynced writes");
    cr_assert_eq(pl__disk_file_size(&sim, f), 6);
    crash();
    cr_assert_eq(pl__disk_file_read(&sim, f, (char[4]){0}, 4, 0), PL_EIO, "stale after crash");
    cr_assert_eq(pl__disk_file_write(&sim, f, "x", 1, 0), PL_EIO);
    cr_assert_eq(pl__disk_file_sync(&sim, dir, 0), PL_EIO);
    cr_assert_eq(pl__disk_close(&sim, f), 0, "close still works");
    cr_assert_eq(pl__disk_close(&sim, dir), 0);
    int f2 = reopen(&dir, "log");
    cr_assert_str_eq(contents(f2), "abc", "the unsynced write is gone (choice 0: none)");
    cr_assert_eq(fk.asked[PL_DECIDE_DISK_LOSE], 1);
}

Test(disk, entries_are_durable_only_after_a_directory_sync)
{
    int dir = dir_open();
    int a = durable_file(dir, "a", "A");
    int c = durable_file(dir, "c", "C");
    int b = open_file(dir, "b", RWC);
    write_str(b, "B", 0);
    cr_assert_eq(pl__disk_file_sync(&sim, b, 0), 0, "data synced, entry not");
    cr_assert_eq(pl__disk_dir_rename(&sim, dir, "a", "a2"), 0);
    cr_assert_eq(pl__disk_dir_unlink(&sim, dir, "c"), 0);
    char names[64];
    cr_assert_eq(pl__disk_dir_list(&sim, dir, names, sizeof names), 5);
    cr_assert_eq(memcmp(names, "a2\0b\0", 5), 0);
    crash();
    int d2;
    int fa = reopen(&d2, "a");
    cr_assert_geq(fa, 0, "the rename was not synced: 'a' is back");
    cr_assert_str_eq(contents(fa), "A");
    cr_assert_eq(open_file(d2, "a2", RW), PL_ENOENT);
    cr_assert_eq(open_file(d2, "b", RW), PL_ENOENT, "created, never synced: gone");
    int fc = open_file(d2, "c", RW);
    cr_assert_str_eq(contents(fc), "C", "the unlink was not synced: 'c' is back");
    cr_assert_eq(pl__disk_dir_list(&sim, d2, names, sizeof names), 4);
    cr_assert_eq(memcmp(names, "a\0c\0", 4), 0);
    (void)a;
    (void)c;
}

/* The crash says what it lost, one note per loss, when the run keeps
 * texts: the entries made, renamed and unlinked since the directory's
 * sync, then each file's unsynced bytes (a torn prefix says what it
 * kept). */
Test(disk, a_crash_says_what_it_lost)
{
    fk.notes_on = true;
    int dir = dir_open();
    durable_file(dir, "a", "A");
    durable_file(dir, "c", "C");
    int log = durable_file(dir, "log", "");
    int b = open_file(dir, "b", RWC);
    write_str(b, "BBB", 0);
    cr_assert_eq(pl__disk_dir_rename(&sim, dir, "a", "a2"), 0);
    cr_assert_eq(pl__disk_dir_unlink(&sim, dir, "c"), 0);
    write_str(log, "0123456789", 0);
    write_str(log, "abcdef", 10);
    SCRIPT(PL_DECIDE_DISK_LOSE, 2, 4);
    crash();
    static const char *const said[] = {
        "disk crash: the rename of 'db/a' to 'db/a2' was undone (never fsynced in its "
        "directory)",
        "disk crash: 'db/b' lost its directory entry (created, never fsynced in its directory), "
        "and its bytes with it",
        "disk crash: 'db/c' is back (its unlink was never fsynced in its directory)",
        "disk crash: 'db/log' lost 12 unsynced bytes (kept 4 of 16)",
    };
    cr_assert_eq(fk.notes_len, sizeof said / sizeof said[0]);
    for (size_t i = 0; i < fk.notes_len; i++) {
        cr_assert_str_eq(fk.notes[i], said[i]);
    }
    /* The same crash without texts says nothing (the fake refuses a note). */
    fk.notes_on = false;
    fk.notes_len = 0;
    int d2;
    int f = reopen(&d2, "log");
    write_str(f, "x", 0);
    crash();
    cr_assert_eq(fk.notes_len, 0);
}

/* Past PL__DISK_CRASH_LINES losses, one line counts the rest. */
Test(disk, a_crash_with_many_losses_counts_the_rest)
{
    fk.notes_on = true;
    int dir = dir_open();
    char name[8];
    for (int i = 0; i < 11; i++) {
        snprintf(name, sizeof name, "f%02d", i);
        cr_assert_geq(open_file(dir, name, RWC), 0);
    }
    crash();
    cr_assert_eq(fk.notes_len, PL__DISK_CRASH_LINES + 1);
    cr_assert_str_eq(fk.notes[0], "disk crash: 'db/f00' lost its directory entry (created, "
                                  "never fsynced in its directory)");
    cr_assert_str_eq(fk.notes[PL__DISK_CRASH_LINES], "disk crash: and 3 more");
}

Test(disk, a_synced_rename_survives_and_replaces)
{
    int dir = dir_open();
    durable_file(dir, "snap", "old");
    int t = durable_file(dir, "snap.tmp", "new");
    cr_assert_eq(pl__disk_dir_rename(&sim, dir, "snap.tmp", "snap"), 0);
    cr_assert_eq(pl__disk_file_sync(&sim, dir, 0), 0);
    crash();
    int d2;
    int f = reopen(&d2, "snap");
    cr_assert_str_eq(contents(f), "new");
    cr_assert_eq(open_file(d2, "snap.tmp", RW), PL_ENOENT);
    (void)t;
}

/* ---- The crash: none, all, a torn prefix ------------------------------- */

static int three_pending_writes(int *dir)
{
    *dir = dir_open();
    int f = durable_file(*dir, "log", "");
    write_str(f, "aaaa", 0);
    write_str(f, "bbbb", 4);
    write_str(f, "cccc", 8);
    return f;
}

Test(disk, crash_keeps_none_of_the_unsynced_writes)
{
    int dir;
    three_pending_writes(&dir);
    SCRIPT(PL_DECIDE_DISK_LOSE, 0);
    crash();
    int f = reopen(&dir, "log");
    cr_assert_eq(pl__disk_file_size(&sim, f), 0);
}

Test(disk, crash_keeps_all_of_the_unsynced_writes)
{
    int dir;
    three_pending_writes(&dir);
    SCRIPT(PL_DECIDE_DISK_LOSE, 1);
    crash();
    int f = reopen(&dir, "log");
    cr_assert_str_eq(contents(f), "aaaabbbbcccc");
}

Test(disk, crash_tears_the_unsynced_writes)
{
    int dir;
    three_pending_writes(&dir);
    SCRIPT(PL_DECIDE_DISK_LOSE, 2, 6);
    crash();
    int f = reopen(&dir, "log");
    cr_assert_str_eq(contents(f), "aaaabb", "the first 6 bytes of the list survive");
    cr_assert_eq(pl__disk_file_size(&sim, f), 6);
    char what[160];
    size_t len;
    uint32_t count;
    char *names = pl__disk_names_blob(sim.disk, &len, &count);
    cr_assert_eq(count, 1);
    cr_assert(pl__disk_explain(what, sizeof what, PL_DECIDE_DISK_LOSE,
                               fk.last_key[PL_DECIDE_DISK_LOSE], 6, 12, names, count));
    cr_assert_str_eq(what, "disk: the crash tore 'db/log''s unsynced writes after 6 of 12 bytes");
    free(names);
}

Test(disk, a_pending_truncation_is_undone_by_a_crash)
{
    int dir = dir_open();
    durable_file(dir, "f", "hello");
    int t = open_file(dir, "f", RW | PL_FILE_TRUNC);
    cr_assert_eq(pl__disk_file_size(&sim, t), 0);
    write_str(t, "xy", 3);
    cr_assert_eq(memcmp(contents(t), "\0\0\0xy", 5), 0, "a hole reads as zeros");
    crash();
    int f = reopen(&dir, "f");
    cr_assert_str_eq(contents(f), "hello");
}

/* ---- Faults ------------------------------------------------------------- */

Test(disk, latency_delays_an_operation_by_virtual_time)
{
    int dir = dir_open();
    int f = durable_file(dir, "f", "");
    pl_io_source src = {.handle = f, .read_waker = PL_WAKER_EMPTY, .write_waker = PL_WAKER_EMPTY};
    cr_assert_eq(pl__disk_io_register(&sim, &src), 0);
    SCRIPT(PL_DECIDE_DISK_LATENCY, 3);
    uint64_t asked = fk.asked[PL_DECIDE_DISK_LATENCY];
    cr_assert_eq(pl__disk_file_write(&sim, f, "abc", 3, 0), PL_EAGAIN);
    pl_time due = 3 * PL_SIM_DISK_LATENCY_QUANTUM_NS;
    cr_assert_eq(pl__disk_next_event(sim.disk), due);
    cr_assert_eq(pl__disk_file_size(&sim, f), 0, "nothing written yet");
    cr_assert_eq(pl__disk_file_write(&sim, f, "abc", 3, 0), PL_EAGAIN, "not due yet");
    sim.now = due - 1;
    cr_assert_eq(pl__disk_deliver(sim.disk, sim.now), 0);
    sim.now = due;
    cr_assert_eq(pl__disk_deliver(sim.disk, sim.now), 1);
    cr_assert_eq(src.ready & PL_IO_WRITABLE, PL_IO_WRITABLE);
    cr_assert_eq(pl__disk_next_event(sim.disk), PL_TIME_NEVER);
    cr_assert_eq(pl__disk_file_write(&sim, f, "abc", 3, 0), 3, "the repeated call runs it");
    cr_assert_eq(fk.asked[PL_DECIDE_DISK_LATENCY], asked + 1, "one decision per operation");
    char what[160];
    cr_assert(pl__disk_explain(what, sizeof what, PL_DECIDE_DISK_LATENCY,
                               fk.last_key[PL_DECIDE_DISK_LATENCY], 3, 16, NULL, 0));
    cr_assert_str_eq(what, "disk: write of file #1 at offset 0 took 0.750 ms");
    pl__disk_io_deregister(&sim, &src);
}

Test(disk, eio_and_short_writes)
{
    int dir = dir_open();
    int f = durable_file(dir, "f", "");
    SCRIPT(PL_DECIDE_DISK_FAULT, 1);
    cr_assert_eq(pl__disk_file_write(&sim, f, "abcd", 4, 0), PL_EIO);
    cr_assert_eq(pl__disk_file_size(&sim, f), 0, "a failed write writes nothing");
    SCRIPT(PL_DECIDE_DISK_FAULT, 2, 1);
    cr_assert_eq(pl__disk_file_write(&sim, f, "abcd", 4, 0), 2, "short: 1 + choice 1");
    cr_assert_str_eq(contents(f), "ab");
    SCRIPT(PL_DECIDE_DISK_FAULT, 1);
    cr_assert_eq(pl__disk_file_sync(&sim, f, 0), PL_EIO);
    crash();
    int f2 = reopen(&dir, "f");
    cr_assert_eq(pl__disk_file_size(&sim, f2), 0, "a failed sync made nothing durable");
}

Test(disk, eio_and_short_reads)
{
    int dir = dir_open();
    int f = durable_file(dir, "f", "abcdef");
    char buf[8] = {0};
    SCRIPT(PL_DECIDE_DISK_FAULT, 1, 2, 0);
    cr_assert_eq(pl__disk_file_read(&sim, f, buf, sizeof buf, 0), PL_EIO);
    cr_assert_eq(pl__disk_file_read(&sim, f, buf, sizeof buf, 2), 1, "short: 1 byte");
    cr_assert_eq(buf[0], 'c');
    char what[160];
    cr_assert(pl__disk_explain(what, sizeof what, PL_DECIDE_DISK_FAULT,
                               pl__disk_key(PL__DISK_OP_READ, 0, 1, 2), 1, 3, NULL, 0));
    cr_assert_str_eq(what, "disk: read of file #1 at offset 2 failed with EIO");
}

Test(disk, corruption_flips_one_bit_of_what_is_read)
{
    int dir = dir_open();
    int f = durable_file(dir, "f", "abcd");
    char buf[4];
    SCRIPT(PL_DECIDE_DISK_CORRUPT, 10); /* bit 9: byte 1, bit 1 */
    cr_assert_eq(pl__disk_file_read(&sim, f, buf, 4, 0), 4);
    cr_assert_eq(memcmp(buf,
                        "a"
                        "\x60"
                        "cd",
                        4),
                 0, "'b' ^ 0x02");
    cr_assert_str_eq(contents(f), "abcd", "the stored bytes are intact");
    char what[160];
    const char names[] = "snap\0log.dat"; /* files #1 and #2 */
    cr_assert(pl__disk_explain(what, sizeof what, PL_DECIDE_DISK_CORRUPT,
                               pl__disk_key(PL__DISK_OP_READ, 0, 2, 4096), 10, 33, names, 2));
    cr_assert_str_eq(what, "disk: read of 'log.dat' at offset 4096 returned a flipped bit (bit 9 "
                           "of 4 bytes)");
    cr_assert(pl__disk_explain(what, sizeof what, PL_DECIDE_DISK_CORRUPT,
                               pl__disk_key(PL__DISK_OP_READ, 0, 3, 0), 1, 9, names, 2));
    cr_assert_str_eq(what,
                     "disk: read of file #3 at offset 0 returned a flipped bit (bit 0 "
                     "of 1 bytes)",
                     "a file the record has no name for");
}

/* ---- Names, errors and bounds ------------------------------------------- */

Test(disk, open_errors)
{
    int dir = dir_open();
    cr_assert_eq(pl__disk_dir_open(&sim, "nowhere", 0), PL_ENOENT);
    cr_assert_eq(open_file(dir, "x", RW), PL_ENOENT);
    int x = open_file(dir, "x", RWC | PL_FILE_EXCL);
    cr_assert_geq(x, 0);
    cr_assert_eq(open_file(dir, "x", RWC | PL_FILE_EXCL), PL_EEXIST);
    cr_assert_eq(open_file(dir, "a/b", RWC), PL_EINVAL);
    cr_assert_eq(open_file(dir, ".", RWC), PL_EINVAL);
    char longname[PL_FILE_NAME_MAX + 2];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    cr_assert_eq(open_file(dir, longname, RWC), PL_ENAMETOOLONG);
    int r = open_file(dir, "x", PL_FILE_READ);
    cr_assert_eq(pl__disk_file_write(&sim, r, "a", 1, 0), PL_EBADF, "opened read-only");
    cr_assert_eq(pl__disk_file_read(&sim, dir, (char[1]){0}, 1, 0), PL_EISDIR);
    cr_assert_eq(pl__disk_dir_list(&sim, x, (char[8]){0}, 8), PL_EBADF);
    cr_assert_eq(pl__disk_dir_rename(&sim, dir, "none", "y"), PL_ENOENT);
    cr_assert_eq(pl__disk_dir_list(&sim, dir, (char[1]){0}, 1), PL_EMSGSIZE);
    cr_assert_eq(pl__disk_close(&sim, PL__DISK_HANDLE_FIRST + 999), PL_EBADF);
}

Test(disk, no_space_past_the_bound)
{
    int dir = dir_open();
    int f = durable_file(dir, "big", "");
    cr_assert_eq(pl__disk_file_write(&sim, f, "x", 1, PL_SIM_DISK_BYTES_MAX), PL_ENOSPC);
    static char chunk[1 << 20];
    int n = 0;
    ssize_t rc;
    while ((rc = pl__disk_file_write(&sim, f, chunk, sizeof chunk, (uint64_t)n << 20)) > 0) {
        n++;
    }
    cr_assert_eq(rc, PL_ENOSPC);
    cr_assert_geq(n, 60, "about PL_SIM_DISK_BYTES_MAX worth of writes fit (%d MiB)", n);
    cr_assert_leq(pl__disk_bytes_used(sim.disk), PL_SIM_DISK_BYTES_MAX);
    cr_assert_eq(pl__disk_file_sync(&sim, f, 0), 0, "a sync never runs out of room");
    cr_assert_eq(pl__disk_close(&sim, f), 0);
    cr_assert_eq(pl__disk_dir_unlink(&sim, dir, "big"), 0);
    cr_assert_eq(pl__disk_file_sync(&sim, dir, 0), 0);
    cr_assert_lt(pl__disk_bytes_used(sim.disk), 64, "the file's bytes are given back");
}

Test(disk, too_many_open_handles)
{
    int dir = dir_open();
    for (unsigned i = 1; i < PL_SIM_DISK_HANDLES_MAX; i++) {
        cr_assert_geq(pl__disk_dir_open(&sim, "db", 0), 0);
    }
    cr_assert_eq(pl__disk_dir_open(&sim, "db", 0), PL_EMFILE);
    cr_assert_eq(open_file(dir, "f", RWC), PL_EMFILE);
    cr_assert_eq(pl__disk_open_handles(sim.disk), PL_SIM_DISK_HANDLES_MAX);
    cr_assert_eq(pl__disk_close(&sim, dir), 0);
    cr_assert_eq(pl__disk_dir_open(&sim, "db", 0), dir, "the lowest free slot is reused");
}

/* Destroying the disk with open handles, unsynced writes, pending
 * completions and unsynced names frees all of it (teardown checks). */
Test(disk, destroy_frees_everything)
{
    int dir = dir_open();
    int f = open_file(dir, "f", RWC);
    write_str(f, "unsynced", 0);
    pl_io_source src = {.handle = f, .read_waker = PL_WAKER_EMPTY, .write_waker = PL_WAKER_EMPTY};
    cr_assert_eq(pl__disk_io_register(&sim, &src), 0);
    SCRIPT(PL_DECIDE_DISK_LATENCY, 5);
    cr_assert_eq(pl__disk_file_sync(&sim, f, 0), PL_EAGAIN);
    cr_assert_neq(pl__disk_next_event(sim.disk), PL_TIME_NEVER);
}

Test(disk, a_crash_before_any_file_loses_nothing)
{
    cr_assert_eq(pl_sim_disk_crash(), 0, "no disk yet: nothing to lose");
    cr_assert_null(sim.disk);
}
