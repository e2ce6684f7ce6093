/* Every decision kind is exercised: a scenario that touches each thing the
 * simulator decides (schedule order, I/O readiness order, timer ties and
 * lateness, spurious wakes and polls, remote-wake delay, cancellation,
 * I/O faults and latency, buggify sites, the disk's latency, faults,
 * bit flips and crash losses) runs over seeds with every knob
 * on, and each kind must be consulted and must leave production's choice
 * at least once, with no finding: the simulator's faults are ones correct
 * code tolerates. */
#include <criterion/criterion.h>
#include <string.h>

#include <pollen/sim.h>

#include "leakcheck.h"
#include "run_record.h"
#include "sim_internal.h"

TestSuite(decisions, .fini = pl_test_leak_check);

/* Sleeps on a shared deadline (equal-deadline ties), takes a buggify
 * detour, then wakes itself through a remote waker. */
typedef struct sleeper {
    pl_future base;
    pl_sleep sleep;
    pl_remote_waker *rw;
    int phase;
} sleeper;

static pl_poll_result sleeper_poll(pl_future *f, pl_context *cx)
{
    sleeper *s = (sleeper *)f;
    PL_ASYNC_BEGIN(s);
    s->sleep = pl_sleep_until(2 * PL_MS);
    PL_AWAIT(cx, &s->sleep);
    if (PL_BUGGIFY(cx)) {
        s->sleep = pl_sleep_for(PL_MS);
        PL_AWAIT(cx, &s->sleep);
    }
    if (pl_remote_waker_create(cx, &s->rw) != 0) {
        return PL_READY;
    }
    pl_remote_waker_wake(s->rw);
    s->phase = 1;
    /* Parked until the remote wake is delivered; tolerant of spurious
     * polls because the phase only moves on the poll after it. */
    PL_YIELD(cx);
    PL_ASYNC_END;
}

static void sleeper_drop(pl_future *f) { pl_drop_child(&((sleeper *)f)->sleep.base); }

static const pl_future_vtable sleeper_vt = {"sleeper", sleeper_poll, sleeper_drop};

/* Writes to its own pipe and reads it back: two of these make readiness
 * arrive together, and reads and writes meet the reactor's faults. */
typedef struct piper {
    pl_future base;
    pl_pipe_reader r;
    pl_pipe_writer w;
    char buf[256];
    int got;
    pl_io_write_all wr;
    pl_io_read rd;
} piper;

static pl_poll_result piper_poll(pl_future *f, pl_context *cx)
{
    piper *p = (piper *)f;
    PL_ASYNC_BEGIN(p);
    if (pl_pipe_open(cx->ex, &p->r, &p->w) != 0) {
        return PL_READY;
    }
    memset(p->buf, 'p', sizeof p->buf);
    p->wr = pl_pipe_write_all(&p->w, p->buf, sizeof p->buf);
    PL_AWAIT(cx, &p->wr);
    pl_pipe_writer_close(&p->w);
    for (;;) {
        p->rd = pl_pipe_read(&p->r, p->buf, sizeof p->buf);
        PL_AWAIT(cx, &p->rd);
        if (p->rd.result <= 0) {
            break;
        }
        p->got += (int)p->rd.result;
    }
    pl_always(p->got == (int)sizeof p->buf, "every byte written is read back");
    pl_pipe_reader_close(&p->r);
    PL_ASYNC_END;
}

static void piper_drop(pl_future *f)
{
    piper *p = (piper *)f;
    pl_drop_child(&p->wr.base);
    pl_drop_child(&p->rd.base);
    pl_pipe_writer_close(&p->w);
    pl_pipe_reader_close(&p->r);
}

static const pl_future_vtable piper_vt = {"piper", piper_poll, piper_drop};

/* Creates a file durably, writes a synced and an unsynced block, reads,
 * then crashes the disk: every disk decision has its chance, and none of
 * them may make it fail (errors are taken, bytes read are not trusted). */
typedef struct filer {
    pl_future base;
    pl_dir dir;
    pl_file file;
    pl_file_open op;
    pl_file_pwrite wr;
    pl_file_fsync sy;
    pl_file_pread rd;
    char buf[64];
} filer;

static pl_poll_result filer_poll(pl_future *f, pl_context *cx)
{
    filer *p = (filer *)f;
    PL_ASYNC_BEGIN(p);
    if (pl_dir_open(cx->ex, &p->dir, "data", true) != 0) {
        return PL_READY;
    }
    p->op = pl_file_open_make(&p->dir, "f", PL_FILE_READ | PL_FILE_WRITE | PL_FILE_CREATE, 0600);
    PL_AWAIT(cx, &p->op);
    p->file = pl_file_open_take(&p->op);
    p->sy = pl_dir_sync(&p->dir);
    PL_AWAIT(cx, &p->sy);
    memset(p->buf, 'a', sizeof p->buf);
    p->wr = pl_file_write_all(&p->file, p->buf, sizeof p->buf, 0);
    PL_AWAIT(cx, &p->wr);
    p->sy = pl_file_sync(&p->file);
    PL_AWAIT(cx, &p->sy);
    p->wr = pl_file_write_all(&p->file, p->buf, sizeof p->buf, sizeof p->buf);
    PL_AWAIT(cx, &p->wr);
    p->rd = pl_file_read(&p->file, p->buf, sizeof p->buf, 0);
    PL_AWAIT(cx, &p->rd);
    pl_always(pl_sim_disk_crash() >= 0, "a crash inside the run is allowed");
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
    pl_drop_child(&p->rd.base);
    pl_file_close(&p->file);
    pl_dir_close(&p->dir);
}

static const pl_future_vtable filer_vt = {"filer", filer_poll, filer_drop};

static int everything_setup(pl_executor *ex, void *state)
{
    filer fl;
    memset(&fl, 0, sizeof fl);
    fl.base = PL_FUTURE_INIT(&filer_vt);
    int frc = PL_SPAWN(ex, fl, "filer", NULL);
    if (frc != 0) {
        return frc;
    }
    (void)state;
    for (int i = 0; i < 3; i++) {
        sleeper s;
        memset(&s, 0, sizeof s);
        s.base = PL_FUTURE_INIT(&sleeper_vt);
        pl_task *t;
        int rc = PL_SPAWN(ex, s, "sleeper", &t);
        if (rc != 0) {
            return rc;
        }
        pl_task_set_abortable(t, true);
        pl_task_release(t);
    }
    for (int i = 0; i < 2; i++) {
        piper p;
        memset(&p, 0, sizeof p);
        p.base = PL_FUTURE_INIT(&piper_vt);
        int rc = PL_SPAWN(ex, p, "piper", NULL);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

PL_SCENARIO(everything, .name = "test_everything",
            .summary = "touches every decision kind", .setup = everything_setup);

#define ALL_ON                                                                              \
    "schedule=32768,io_order=32768,timer_order=32768,timer_late=32768,"                    \
    "spurious_wake=32768,spurious_poll=32768,wake_delay=32768,cancel=8192,"                 \
    "io_fault=32768,io_latency=32768,buggify_site=32768,buggify_fire=32768,"                \
    "disk_latency=32768,disk_fault=32768,disk_corrupt=32768,disk_lose=32768"

Test(decisions, every_kind_is_consulted_and_deviates)
{
    uint64_t asked[PL_DECIDE__COUNT] = {0};
    uint64_t deviated[PL_DECIDE__COUNT] = {0};
    for (uint64_t seed = 0; seed < 300; seed++) {
        pl_sim_options o;
        pl_sim_options_default(&o);
        o.seed = seed;
        o.knobs = ALL_ON;
        pl_sim_result r;
        cr_assert_eq(pl_sim_run(&everything, &o, &r), 0, "%s", r.finding.message);
        cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "seed %llu: %s: %s",
                     (unsigned long long)seed, pl_finding_name(r.finding.kind),
                     r.finding.message);
        const pl__run_record *rec = pl__sim_result_record(&r);
        for (size_t i = 0; i < rec->decisions_len; i++) {
            asked[rec->decisions[i].kind]++;
            deviated[rec->decisions[i].kind] += rec->decisions[i].value != 0;
        }
        pl_sim_result_free(&r);
    }
    /* The link kinds need two hosts and change what correct code computes
     * (a lost datagram, a reset): tests/sim/test_links.c exercises them. A
     * number without a name is not assigned in this build. */
    for (int k = 0; k < (int)PL_DECIDE_LINK_LATENCY; k++) {
        if (pl__dec_kind_name((uint32_t)k) == NULL) {
            continue;
        }
        cr_expect_gt(asked[k], 0, "%s never consulted", pl__dec_kind_name((uint32_t)k));
        cr_expect_gt(deviated[k], 0, "%s never left choice 0", pl__dec_kind_name((uint32_t)k));
    }
}

Test(decisions, a_disabled_kind_is_never_consulted)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.knobs = "schedule=off,timer_late=off,io_fault=off";
    for (uint64_t seed = 0; seed < 50; seed++) {
        o.seed = seed;
        pl_sim_result r;
        cr_assert_eq(pl_sim_run(&everything, &o, &r), 0);
        const pl__run_record *rec = pl__sim_result_record(&r);
        for (size_t i = 0; i < rec->decisions_len; i++) {
            uint32_t k = rec->decisions[i].kind;
            cr_assert(k != PL_DECIDE_SCHEDULE && k != PL_DECIDE_TIMER_LATE &&
                      k != PL_DECIDE_IO_FAULT, "%s consulted", pl__dec_kind_name(k));
        }
        pl_sim_result_free(&r);
    }
}
