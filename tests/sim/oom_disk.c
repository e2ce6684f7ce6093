/* tests/sim/oom_disk.c: the disk workload of the out-of-memory sweep
 * (test_oom.c runs it with the N-th allocation failing). */
#include <string.h>

#include <pollen/file.h>
#include <pollen/sim.h>

/* A file written, synced, renamed, read and crashed, the disk's
 * allocations all on the path: any error simply ends the task (a real
 * program would report it), so the run's outcome is "no finding" unless
 * the crash itself ran out of memory. */
typedef struct filer {
    pl_future base;
    pl_dir dir;
    pl_file file;
    pl_file_open op;
    pl_file_pwrite wr;
    pl_file_fsync sy;
    pl_dir_change mv;
    pl_file_pread rd;
    char buf[32];
} filer;

static pl_poll_result filer_poll(pl_future *f, pl_context *cx)
{
    filer *p = (filer *)f;
    PL_ASYNC_BEGIN(p);
    if (pl_dir_open(cx->ex, &p->dir, "d", true) != 0) {
        return PL_READY;
    }
    p->op = pl_file_open_make(&p->dir, "tmp", PL_FILE_READ | PL_FILE_WRITE | PL_FILE_CREATE, 0);
    PL_AWAIT(cx, &p->op);
    p->file = pl_file_open_take(&p->op);
    memset(p->buf, 'z', sizeof p->buf);
    p->wr = pl_file_write_all(&p->file, p->buf, sizeof p->buf, 0);
    PL_AWAIT(cx, &p->wr);
    p->sy = pl_file_sync(&p->file);
    PL_AWAIT(cx, &p->sy);
    p->mv = pl_dir_rename(&p->dir, "tmp", "snap");
    PL_AWAIT(cx, &p->mv);
    p->sy = pl_dir_sync(&p->dir);
    PL_AWAIT(cx, &p->sy);
    p->wr = pl_file_write_all(&p->file, p->buf, sizeof p->buf, sizeof p->buf);
    PL_AWAIT(cx, &p->wr);
    p->rd = pl_file_read(&p->file, p->buf, sizeof p->buf, 0);
    PL_AWAIT(cx, &p->rd);
    (void)pl_sim_disk_crash();
    pl_file_close(&p->file);
    pl_dir_close(&p->dir);
    PL_ASYNC_END;
}

static void filer_drop(pl_future *f)
{
    filer *p = (filer *)f;
    pl_drop_child(&p->op.base);
    pl_drop_child(&p->wr.base);
    pl_drop_child(&p->sy.base);
    pl_drop_child(&p->mv.base);
    pl_drop_child(&p->rd.base);
    pl_file_close(&p->file);
    pl_dir_close(&p->dir);
}

static const pl_future_vtable filer_vt = {"filer", filer_poll, filer_drop};

static int filer_setup(pl_executor *ex, void *state)
{
    (void)state;
    filer fl;
    memset(&fl, 0, sizeof fl);
    fl.base = PL_FUTURE_INIT(&filer_vt);
    return PL_SPAWN(ex, fl, "filer", NULL);
}

PL_SCENARIO(oom_disk, .name = "oom_disk", .summary = "a file written, synced, renamed, crashed",
            .setup = filer_setup);
