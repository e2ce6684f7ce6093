/* core/src/test/mock_io.c: scripted byte streams (pl_test_io).
 *
 * A script is a list of steps the stream goes through in order; the
 * system's read and write calls consume them. Readiness follows the next
 * step (a read step makes the handle readable, a write step writable),
 * so core's I/O futures park and wake as they would on a socket. A wait
 * step starts counting when it becomes the next step: the script's time
 * is the manual clock's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mock.h"

enum step_kind { STEP_READ, STEP_WRITE, STEP_WAIT, STEP_READ_ERROR };

typedef struct step {
    enum step_kind kind;
    unsigned char *data; /* read and write steps: the bytes */
    size_t len;
    pl_time wait_ns; /* wait steps */
    int err;         /* read_error steps */
} step;

struct pl_test_io {
    pl_test_io *next; /* in the pl_test's list */
    pl_test *t;
    int handle;
    pl_io_source *src; /* while registered */
    step *steps;
    size_t nsteps, cap;
    size_t at;          /* the next step */
    size_t done;        /* bytes of it consumed */
    bool waiting;       /* the wait step at `at` has started */
    pl_time wait_until; /* ... and ends then */
    uint32_t writes;    /* write calls, for messages */
    char failure[200];  /* the first wrong write; "" when none */
};

pl_test_io *pl_test_io_create(pl_test *t)
{
    pl_test_io *io = calloc(1, sizeof *io);
    if (io == NULL) {
        return NULL;
    }
    io->t = t;
    io->handle = t->next_handle++;
    io->next = t->ios;
    t->ios = io;
    return io;
}

int pl_test_io_handle(const pl_test_io *io) { return io->handle; }

pl_test_io *pl__test_io_find(pl_test *t, int h)
{
    pl_test_io *io = t->ios;
    while (io != NULL && io->handle != h) {
        io = io->next;
    }
    return io;
}

pl_test_io *pl__test_io_next(const pl_test_io *io) { return io->next; }

static int add_step(pl_test_io *io, step s, const void *data)
{
    if (io->nsteps == io->cap) {
        size_t cap = io->cap != 0 ? 2 * io->cap : 8;
        step *grown = realloc(io->steps, cap * sizeof *grown);
        if (grown == NULL) {
            return PL_ENOMEM;
        }
        io->steps = grown;
        io->cap = cap;
    }
    if (data != NULL) {
        s.data = malloc(s.len != 0 ? s.len : 1);
        if (s.data == NULL) {
            return PL_ENOMEM;
        }
        memcpy(s.data, data, s.len);
    }
    io->steps[io->nsteps++] = s;
    return 0;
}

int pl_test_io_read(pl_test_io *io, const void *data, size_t len)
{
    return add_step(io, (step){.kind = STEP_READ, .len = len}, data);
}

int pl_test_io_write(pl_test_io *io, const void *data, size_t len)
{
    return add_step(io, (step){.kind = STEP_WRITE, .len = len}, data);
}

int pl_test_io_wait(pl_test_io *io, pl_time ns)
{
    PL_ASSERT(ns >= 0);
    return add_step(io, (step){.kind = STEP_WAIT, .wait_ns = ns}, NULL);
}

int pl_test_io_read_error(pl_test_io *io, int err)
{
    PL_ASSERT(err < 0);
    return add_step(io, (step){.kind = STEP_READ_ERROR, .err = err}, NULL);
}

static void next_step(pl_test_io *io)
{
    io->at++;
    io->done = 0;
    io->waiting = false;
}

/* The step due now, past the waits that are over; NULL at the end. */
static const step *current(pl_test_io *io)
{
    pl_time now = io->t->now_ns;
    while (io->at < io->nsteps && io->steps[io->at].kind == STEP_WAIT) {
        if (!io->waiting) {
            io->waiting = true;
            io->wait_until = now + io->steps[io->at].wait_ns;
        }
        if (now < io->wait_until) {
            return &io->steps[io->at];
        }
        next_step(io);
    }
    return io->at < io->nsteps ? &io->steps[io->at] : NULL;
}

ssize_t pl__test_io_read(pl_test_io *io, void *buf, size_t len)
{
    const step *s = current(io);
    if (s == NULL) {
        return 0;
    }
    if (s->kind == STEP_READ_ERROR) {
        int err = s->err;
        next_step(io);
        return err;
    }
    if (s->kind != STEP_READ) {
        return PL_EAGAIN;
    }
    size_t n = s->len - io->done < len ? s->len - io->done : len;
    memcpy(buf, s->data + io->done, n);
    io->done += n;
    if (io->done == s->len) {
        next_step(io);
    }
    return (ssize_t)n;
}

/* Prints up to 40 bytes as a C string literal's contents. */
static void quoted(char *out, size_t len, const unsigned char *p, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n && i < 40 && o + 5 < len; i++) {
        o += (size_t)(p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\'
                          ? snprintf(out + o, len - o, "%c", p[i])
                          : snprintf(out + o, len - o, "\\x%02x", p[i]));
    }
    snprintf(out + o, len - o, "%s", n > 40 ? "..." : "");
}

static ssize_t wrong_write(pl_test_io *io, const step *s, const void *buf, size_t len)
{
    if (io->failure[0] == '\0') {
        char want[180] = "(the end of the script)", got[180];
        if (s != NULL) {
            quoted(want, sizeof want, s->data + io->done, s->len - io->done);
        }
        quoted(got, sizeof got, buf, len);
        snprintf(io->failure, sizeof io->failure, "write %u: expected \"%.60s\", got \"%.60s\"",
                 io->writes, want, got);
    }
    return PL_EIO;
}

ssize_t pl__test_io_write(pl_test_io *io, const void *buf, size_t len)
{
    io->writes++;
    const step *s = current(io);
    if (s == NULL) {
        return wrong_write(io, NULL, buf, len);
    }
    if (s->kind != STEP_WRITE) {
        io->writes--; /* not made: it would block */
        return PL_EAGAIN;
    }
    size_t n = s->len - io->done < len ? s->len - io->done : len;
    if (memcmp(buf, s->data + io->done, n) != 0 || (n == 0 && len > 0)) {
        return wrong_write(io, s, buf, len);
    }
    io->done += n;
    if (io->done == s->len) {
        next_step(io);
    }
    return (ssize_t)n;
}

int pl__test_io_register(pl_test_io *io, pl_io_source *src)
{
    if (io->src != NULL) {
        return PL_EEXIST;
    }
    io->src = src;
    return 0;
}

void pl__test_io_deregister(pl_test_io *io) { io->src = NULL; }

bool pl__test_io_deliver(pl_test_io *io, pl_time now)
{
    (void)now; /* current() reads the same clock */
    if (io->src == NULL) {
        return false;
    }
    const step *s = current(io);
    uint32_t bits = s == NULL               ? PL_IO_READABLE | PL_IO_WRITABLE
                    : s->kind == STEP_WRITE ? PL_IO_WRITABLE
                    : s->kind == STEP_WAIT  ? 0
                                            : PL_IO_READABLE;
    if ((io->src->ready & bits) == bits) {
        return false;
    }
    pl_io_source_ready(io->src, bits);
    return true;
}

bool pl_test_io_done(const pl_test_io *io, char *why, size_t why_len)
{
    if (io->failure[0] != '\0') {
        snprintf(why, why_len, "%s", io->failure);
        return false;
    }
    size_t at = io->at;
    /* A last wait nobody read past is still a step left. */
    if (at < io->nsteps) {
        static const char *const names[] = {"read", "write", "wait", "read_error"};
        const step *s = &io->steps[at];
        snprintf(why, why_len, "step %zu of %zu left: %s of %zu bytes (%zu done)", at + 1,
                 io->nsteps, names[s->kind], s->len, io->done);
        return false;
    }
    if (why_len > 0) {
        why[0] = '\0';
    }
    return true;
}

void pl__test_io_free_all(pl_test_io *ios)
{
    while (ios != NULL) {
        pl_test_io *next = ios->next;
        for (size_t i = 0; i < ios->nsteps; i++) {
            free(ios->steps[i].data);
        }
        free(ios->steps);
        free(ios);
        ios = next;
    }
}
