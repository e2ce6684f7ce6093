/* sim/src/threads/tpc.c: thread per core, a simulated thread running an
 * executor of its own (pl_thread_executor_create).
 *
 * The executor runs on a small system of its own on the run's virtual
 * clock: its wait blocks the simulated thread until a remote wake (a
 * pl_remote_waker of one of its tasks, pushed from any thread) or its
 * next timer, and lets the other threads run meanwhile, as an epoll_wait
 * would. It has no observer: the oracles judge its threads (a thread
 * parked in its executor for good is a deadlock) and thread 0's tasks,
 * not its tasks one by one, and its tasks run in production's order (no
 * schedule decision). It has no I/O: the I/O entries say PL_ENOSYS.
 * Its executor allocates through a linked heap of its own, released with
 * the run: a thread that never ends (blocked for good when a finding
 * stops the run) leaves its executor, tasks and remote wakers behind, and
 * nothing else would free them.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../sim_internal.h"
#include "threads.h"

/* A block of the executor's heap: every allocation its executor makes
 * is linked, so what a thread never released goes with the run. */
typedef union heap_block {
    struct {
        union heap_block *prev;
        union heap_block *next;
    } link;
    max_align_t align; /* the user's bytes follow, aligned as malloc's */
} heap_block;

typedef struct pl__tpc tpc_sys;

struct pl__tpc {
    pl_system system;
    pl__sim *s;
    tpc_sys *next;      /* the run's list (pl__threads.executors) */
    heap_block heap;    /* sentinel of the live blocks' ring */
    uint32_t thread;    /* the thread it belongs to */
    bool pending;       /* a remote wake came since the last drain */
    bool parked;        /* its thread is blocked in wait */
    bool orphaned;      /* the threads are gone: a remote wake only queues */
};

static pl_time tpc_now(void *self) { return ((tpc_sys *)self)->s->now; }

static int tpc_wait(void *self, pl_executor *ex, pl_time deadline_ns)
{
    tpc_sys *y = self;
    pl__sim *s = y->s;
    if (s->stopped) {
        return PL_ECANCELED;
    }
    pl__thread_rec *me = pl__threads_self(s);
    PL__SIM_ASSERT(me->id == y->thread);
    if (!y->pending && pl__executor_runnable_count(ex) == 0 && deadline_ns > s->now) {
        me->state = PL__TH_BLOCKED;
        me->waits = PL__WAIT_EXECUTOR;
        me->obj = 0;
        me->wake_at = deadline_ns;
        y->parked = true;
        bool ok = pl__threads_block(s);
        y->parked = false;
        if (!ok) {
            return PL_ECANCELED;
        }
    } else {
        /* A busy executor still checks in: another thread may run. */
        pl__threads_point(s, NULL, PL_THREAD_POINT_READ);
    }
    if (y->pending) {
        y->pending = false;
        pl_executor_drain_remote(ex);
    }
    return s->stopped ? PL_ECANCELED : 0;
}

/* Any thread: makes the parked owner runnable. */
static void tpc_remote_wake(void *self)
{
    tpc_sys *y = self;
    y->pending = true;
    if (!y->orphaned && y->parked && y->s->threads.t[y->thread]->state == PL__TH_BLOCKED) {
        pl__threads_ready(y->s, y->thread);
    }
}

static int no_register(void *self, pl_io_source *src)
{
    (void)self;
    (void)src;
    return PL_ENOSYS;
}

static void no_deregister(void *self, pl_io_source *src)
{
    (void)self;
    (void)src;
}

static int no_socket(void *self, int domain, int type)
{
    (void)self;
    (void)domain;
    (void)type;
    return PL_ENOSYS;
}

static int no_pipe(void *self, int handles[2])
{
    (void)self;
    (void)handles;
    return PL_ENOSYS;
}

static int no_handle(void *self, int handle)
{
    (void)self;
    (void)handle;
    return PL_ENOSYS;
}

static int no_addr(void *self, int handle, const struct sockaddr *addr, socklen_t len)
{
    (void)self;
    (void)handle;
    (void)addr;
    (void)len;
    return PL_ENOSYS;
}

static int no_listen(void *self, int handle, int backlog)
{
    (void)self;
    (void)handle;
    (void)backlog;
    return PL_ENOSYS;
}

static int no_accept(void *self, int handle, struct sockaddr *addr, socklen_t *len)
{
    (void)self;
    (void)handle;
    (void)addr;
    (void)len;
    return PL_ENOSYS;
}

static ssize_t no_read(void *self, int handle, void *buf, size_t len)
{
    (void)self;
    (void)handle;
    (void)buf;
    (void)len;
    return PL_ENOSYS;
}

static ssize_t no_write(void *self, int handle, const void *buf, size_t len)
{
    (void)self;
    (void)handle;
    (void)buf;
    (void)len;
    return PL_ENOSYS;
}

static ssize_t no_sendto(void *self, int handle, const void *buf, size_t len,
                         const struct sockaddr *addr, socklen_t addr_len)
{
    (void)self;
    (void)handle;
    (void)buf;
    (void)len;
    (void)addr;
    (void)addr_len;
    return PL_ENOSYS;
}

static ssize_t no_recvfrom(void *self, int handle, void *buf, size_t len, struct sockaddr *addr,
                           socklen_t *addr_len)
{
    (void)self;
    (void)handle;
    (void)buf;
    (void)len;
    (void)addr;
    (void)addr_len;
    return PL_ENOSYS;
}

static const pl_system_vtable tpc_vtable = {
    .version = PL_SYSTEM_VERSION,
    .name = "sim-thread",
    .now = tpc_now,
    .wait = tpc_wait,
    .decide = NULL, /* production's order for its tasks */
    .remote_wake = tpc_remote_wake,
    .io_register = no_register,
    .io_deregister = no_deregister,
    .socket = no_socket,
    .pipe = no_pipe,
    .close = no_handle,
    .bind = no_addr,
    .listen = no_listen,
    .accept = no_accept,
    .connect = no_addr,
    .connect_result = no_handle,
    .local_addr = no_accept,
    .read = no_read,
    .write = no_write,
    .sendto = no_sendto,
    .recvfrom = no_recvfrom,
};

static void heap_link(tpc_sys *y, heap_block *b)
{
    b->link.prev = &y->heap;
    b->link.next = y->heap.link.next;
    y->heap.link.next->link.prev = b;
    y->heap.link.next = b;
}

static void heap_unlink(heap_block *b)
{
    PL__SIM_ASSERT(b->link.prev->link.next == b && b->link.next->link.prev == b);
    b->link.prev->link.next = b->link.next;
    b->link.next->link.prev = b->link.prev;
}

/* The executor's pl_alloc_fn: malloc with a link. Also what keeps the
 * arena off: its default would map a fresh 64 KB chunk per run and unmap
 * it with the executor, and a campaign of short runs then spends its
 * time in munmap's TLB flushes. */
static void *heap_alloc(void *ud, void *ptr, size_t old_size, size_t new_size)
{
    (void)old_size;
    tpc_sys *y = ud;
    heap_block *b = ptr != NULL ? (heap_block *)ptr - 1 : NULL;
    if (b != NULL) {
        heap_unlink(b);
    }
    if (new_size == 0) {
        free(b);
        return NULL;
    }
    heap_block *nb = new_size <= SIZE_MAX - sizeof *b ? realloc(b, sizeof *b + new_size) : NULL;
    if (nb == NULL) {
        if (b != NULL) {
            heap_link(y, b); /* the old block stays the caller's */
        }
        return NULL;
    }
    heap_link(y, nb);
    return nb + 1;
}

void pl__threads_executors_orphan(pl__sim *s)
{
    for (tpc_sys *y = s->threads.executors; y != NULL; y = y->next) {
        y->orphaned = true;
        y->parked = false;
    }
}

void pl__threads_release_executors(pl__sim *s)
{
    tpc_sys *y = s->threads.executors;
    while (y != NULL) {
        PL__SIM_ASSERT(y->orphaned);
        while (y->heap.link.next != &y->heap) {
            heap_block *b = y->heap.link.next;
            heap_unlink(b);
            free(b);
        }
        tpc_sys *next = y->next;
        free(y);
        y = next;
    }
    s->threads.executors = NULL;
}

int pl__threads_executor_create(pl__sim *s, pl_executor **out)
{
    if (pl__threads_ensure_main(s) != 0) {
        return PL_ENOMEM;
    }
    pl__thread_rec *me = pl__threads_self(s);
    tpc_sys *y = calloc(1, sizeof *y);
    if (y == NULL) {
        return PL_ENOMEM;
    }
    y->system.vtable = &tpc_vtable;
    y->system.self = y;
    y->s = s;
    y->thread = me->id;
    y->heap.link.prev = &y->heap;
    y->heap.link.next = &y->heap;
    /* Listed first: the run frees it even if the executor never comes. */
    y->next = s->threads.executors;
    s->threads.executors = y;
    pl_executor_options eo;
    pl_executor_options_default(&eo);
    eo.system = &y->system;
    eo.alloc = heap_alloc;
    eo.alloc_ud = y;
    return pl_executor_create(out, &eo);
}
