/* core/src/file.c: files and directories (pollen/file.h).
 *
 * Each future is an instance of io.c's operation future (io_op.h), so a
 * file operation parks and wakes exactly as a socket's does. On the real
 * backend a regular file never says PL_EAGAIN and every future completes
 * in its first poll; the simulator's disk uses the same path to delay an
 * operation by virtual time. No system call is made here.
 */
#include <string.h>

#include "internal.h"
#include "io_op.h"
#include "pollen/error.h"
#include "pollen/file.h"

/* ---- Objects ------------------------------------------------------------ */

int pl_dir_open(pl_executor *ex, pl_dir *d, const char *path, bool create)
{
    d->src = NULL;
    if (path == NULL || path[0] == '\0') {
        return PL_EINVAL;
    }
    const pl_system *sys = pl__executor_system(ex);
    if (sys->vtable->dir_open == NULL) {
        return PL_ENOSYS;
    }
    int handle = sys->vtable->dir_open(sys->self, path, create ? 1 : 0);
    if (handle < 0) {
        return handle;
    }
    int rc = pl__io_source_open(ex, handle, &d->src);
    if (rc < 0) {
        pl__io_handle_close(ex, handle);
    }
    return rc;
}

void pl_dir_close(pl_dir *d)
{
    if (d != NULL) {
        pl__io_source_close(&d->src);
    }
}

void pl_file_close(pl_file *f)
{
    if (f != NULL) {
        pl__io_source_close(&f->src);
    }
}

int64_t pl_file_size(const pl_file *f)
{
    if (f->src == NULL) {
        return PL_EBADF;
    }
    const pl_system *sys = pl__executor_system(f->src->ex);
    if (sys->vtable->file_size == NULL) {
        return PL_ENOSYS;
    }
    return sys->vtable->file_size(sys->self, f->src->handle);
}

/* ---- Open ------------------------------------------------------------------ */

static ssize_t open_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_file_open *self = (pl_file_open *)f;
    if ((self->flags & ~(uint32_t)PL_FILE_FLAGS_ALL) != 0 ||
        (self->flags & (PL_FILE_READ | PL_FILE_WRITE)) == 0 || self->name == NULL) {
        return PL_EINVAL;
    }
    if (sys->vtable->file_open == NULL) {
        return PL_ENOSYS;
    }
    return sys->vtable->file_open(sys->self, src->handle, self->name, self->flags, self->mode);
}

/* Registers the opened handle; one that cannot be registered is closed. */
static void open_finish(pl_future *f, pl_io_source *src, ssize_t handle)
{
    pl_file_open *self = (pl_file_open *)f;
    if (handle < 0) {
        self->result = (int)handle;
        return;
    }
    self->result = pl__io_source_open(src->ex, (int)handle, &self->file.src);
    if (self->result < 0) {
        pl__io_handle_close(src->ex, (int)handle);
    }
}

static void open_release(pl_future *f) { pl_file_close(&((pl_file_open *)f)->file); }

static const io_op file_open_op = {
    .vtable = IO_OP_VTABLE("pl_file_open"),
    .bit = PL_IO_WRITABLE,
    IO_OP_FIELDS(pl_file_open),
    .attempt = open_attempt,
    .finish = open_finish,
    .release = open_release,
};

pl_file_open pl_file_open_make(pl_dir *dir, const char *name, uint32_t flags, uint32_t mode)
{
    return (pl_file_open){.base = PL_FUTURE_INIT(&file_open_op.vtable),
                          .src = dir->src,
                          .name = name,
                          .flags = flags,
                          .mode = mode};
}

pl_file pl_file_open_take(pl_file_open *op)
{
    pl_file f = op->file;
    op->file.src = NULL;
    return f;
}

/* ---- Read and write ------------------------------------------------------ */

static ssize_t read_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_file_pread *self = (pl_file_pread *)f;
    if (sys->vtable->file_read == NULL) {
        return PL_ENOSYS;
    }
    return sys->vtable->file_read(sys->self, src->handle, self->buf, self->len, self->offset);
}

static const io_op file_read_op = {
    .vtable = IO_OP_VTABLE("pl_file_read"),
    .bit = PL_IO_READABLE,
    IO_OP_FIELDS(pl_file_pread),
    .attempt = read_attempt,
    .result_at = offsetof(pl_file_pread, result),
};

pl_file_pread pl_file_read(pl_file *f, void *buf, size_t len, uint64_t offset)
{
    return (pl_file_pread){.base = PL_FUTURE_INIT(&file_read_op.vtable),
                           .src = f->src,
                           .buf = buf,
                           .len = len,
                           .offset = offset};
}

/* One write, or (all) writes until the buffer is gone: progress survives
 * a PL_EAGAIN, as in io.c's write_all. */
static ssize_t write_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_file_pwrite *self = (pl_file_pwrite *)f;
    if (sys->vtable->file_write == NULL) {
        return PL_ENOSYS;
    }
    do {
        const char *from = (const char *)self->buf + self->written;
        ssize_t n = sys->vtable->file_write(sys->self, src->handle, from, self->len - self->written,
                                            self->offset + self->written);
        if (n < 0 || !self->all) {
            return n;
        }
        /* A zero-byte write of a non-empty buffer would spin forever. */
        if (n == 0 && self->written < self->len) {
            return PL_EIO;
        }
        self->written += (size_t)n;
    } while (self->written < self->len);
    return (ssize_t)self->written;
}

static const io_op file_write_op = {
    .vtable = IO_OP_VTABLE("pl_file_write"),
    .bit = PL_IO_WRITABLE,
    IO_OP_FIELDS(pl_file_pwrite),
    .attempt = write_attempt,
    .result_at = offsetof(pl_file_pwrite, result),
};

static pl_file_pwrite write_make(pl_file *f, const void *buf, size_t len, uint64_t offset, bool all)
{
    return (pl_file_pwrite){.base = PL_FUTURE_INIT(&file_write_op.vtable),
                            .src = f->src,
                            .buf = buf,
                            .len = len,
                            .offset = offset,
                            .all = all};
}

pl_file_pwrite pl_file_write(pl_file *f, const void *buf, size_t len, uint64_t offset)
{
    return write_make(f, buf, len, offset, false);
}

pl_file_pwrite pl_file_write_all(pl_file *f, const void *buf, size_t len, uint64_t offset)
{
    return write_make(f, buf, len, offset, true);
}

/* ---- Sync ------------------------------------------------------------------ */

static ssize_t sync_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_file_fsync *self = (pl_file_fsync *)f;
    if (sys->vtable->file_sync == NULL) {
        return PL_ENOSYS;
    }
    return sys->vtable->file_sync(sys->self, src->handle, self->data_only ? 1 : 0);
}

static void sync_finish(pl_future *f, pl_io_source *src, ssize_t result)
{
    (void)src;
    ((pl_file_fsync *)f)->result = (int)result;
}

static const io_op file_sync_op = {
    .vtable = IO_OP_VTABLE("pl_file_sync"),
    .bit = PL_IO_WRITABLE,
    IO_OP_FIELDS(pl_file_fsync),
    .attempt = sync_attempt,
    .finish = sync_finish,
};

static pl_file_fsync sync_make(pl_io_source *src, bool data_only)
{
    return (pl_file_fsync){
        .base = PL_FUTURE_INIT(&file_sync_op.vtable), .src = src, .data_only = data_only};
}

pl_file_fsync pl_file_sync(pl_file *f) { return sync_make(f->src, false); }

pl_file_fsync pl_file_datasync(pl_file *f) { return sync_make(f->src, true); }

pl_file_fsync pl_dir_sync(pl_dir *d) { return sync_make(d->src, false); }

/* ---- Directory changes and listing ------------------------------------- */

static ssize_t change_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_dir_change *self = (pl_dir_change *)f;
    if (self->name == NULL) {
        return PL_EINVAL;
    }
    if (self->to != NULL) {
        return sys->vtable->dir_rename != NULL
                   ? sys->vtable->dir_rename(sys->self, src->handle, self->name, self->to)
                   : PL_ENOSYS;
    }
    return sys->vtable->dir_unlink != NULL
               ? sys->vtable->dir_unlink(sys->self, src->handle, self->name)
               : PL_ENOSYS;
}

static void change_finish(pl_future *f, pl_io_source *src, ssize_t result)
{
    (void)src;
    ((pl_dir_change *)f)->result = (int)result;
}

static const io_op dir_change_op = {
    .vtable = IO_OP_VTABLE("pl_dir_change"),
    .bit = PL_IO_WRITABLE,
    IO_OP_FIELDS(pl_dir_change),
    .attempt = change_attempt,
    .finish = change_finish,
};

pl_dir_change pl_dir_rename(pl_dir *dir, const char *from, const char *to)
{
    /* A rename to nowhere would read as an unlink: refuse it at the poll. */
    return (pl_dir_change){.base = PL_FUTURE_INIT(&dir_change_op.vtable),
                           .src = dir->src,
                           .name = to != NULL ? from : NULL,
                           .to = to};
}

pl_dir_change pl_dir_unlink(pl_dir *dir, const char *name)
{
    return (pl_dir_change){
        .base = PL_FUTURE_INIT(&dir_change_op.vtable), .src = dir->src, .name = name};
}

static ssize_t list_attempt(pl_future *f, pl_io_source *src, const pl_system *sys)
{
    pl_dir_listing *self = (pl_dir_listing *)f;
    if (sys->vtable->dir_list == NULL) {
        return PL_ENOSYS;
    }
    return sys->vtable->dir_list(sys->self, src->handle, self->buf, self->len);
}

static const io_op dir_list_op = {
    .vtable = IO_OP_VTABLE("pl_dir_list"),
    .bit = PL_IO_READABLE,
    IO_OP_FIELDS(pl_dir_listing),
    .attempt = list_attempt,
    .result_at = offsetof(pl_dir_listing, result),
};

pl_dir_listing pl_dir_list(pl_dir *dir, char *buf, size_t len)
{
    return (pl_dir_listing){
        .base = PL_FUTURE_INIT(&dir_list_op.vtable), .src = dir->src, .buf = buf, .len = len};
}

const char *pl_dir_next_name(const char *buf, size_t used, const char *prev)
{
    const char *next = prev == NULL ? buf : prev + strlen(prev) + 1;
    return next < buf + used ? next : NULL;
}
