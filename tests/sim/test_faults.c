/* pl_sim_fault_options through pl_sim_run: validation, and each group of
 * knobs reaching the part of the simulated world it drives (the network's
 * latency, the executor's timer lateness). The network's handling of each
 * fault class is tested on its own in test_reactor.c. */
#include <criterion/criterion.h>
#include <string.h>

#include <pollen/sim.h>

#include "leakcheck.h"

TestSuite(faults, .fini = pl_test_leak_check);

enum { SEEDS = 40 };

typedef struct faults_state {
    pl_time woke_ns; /* when the sleeper's 1 ms sleep ended */
    int pipe_bytes;
} faults_state;

/* Sleeps 1 ms and notes when it woke. */
typedef struct sleeper {
    pl_future base;
    faults_state *s;
    pl_sleep sleep;
} sleeper;

static pl_poll_result sleeper_poll(pl_future *f, pl_context *cx)
{
    sleeper *p = (sleeper *)f;
    PL_ASYNC_BEGIN(p);
    p->sleep = pl_sleep_for(PL_MS);
    PL_AWAIT(cx, &p->sleep);
    p->s->woke_ns = pl_now(cx->ex);
    PL_ASYNC_END;
}

static const pl_future_vtable sleeper_vt = {"sleeper", sleeper_poll, NULL};

/* Writes 2 KiB through a pipe and reads it back. */
typedef struct piper {
    pl_future base;
    faults_state *s;
    pl_pipe_reader r;
    pl_pipe_writer w;
    char buf[2048];
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
    memset(p->buf, 'x', sizeof p->buf);
    p->wr = pl_pipe_write_all(&p->w, p->buf, sizeof p->buf);
    PL_AWAIT(cx, &p->wr);
    pl_pipe_writer_close(&p->w);
    for (;;) {
        p->rd = pl_pipe_read(&p->r, p->buf, sizeof p->buf);
        PL_AWAIT(cx, &p->rd);
        if (p->rd.result <= 0) {
            break;
        }
        p->s->pipe_bytes += (int)p->rd.result;
    }
    pl_pipe_reader_close(&p->r);
    PL_ASYNC_END;
}

static void piper_drop(pl_future *f)
{
    piper *p = (piper *)f;
    pl_pipe_writer_close(&p->w);
    pl_pipe_reader_close(&p->r);
}

static const pl_future_vtable piper_vt = {"piper", piper_poll, piper_drop};

static int sleep_setup(pl_executor *ex, void *state)
{
    sleeper t;
    memset(&t, 0, sizeof t);
    t.base = PL_FUTURE_INIT(&sleeper_vt);
    t.s = state;
    return PL_SPAWN(ex, t, "sleeper", NULL);
}

static int pipe_setup(pl_executor *ex, void *state)
{
    piper p;
    memset(&p, 0, sizeof p);
    p.base = PL_FUTURE_INIT(&piper_vt);
    p.s = state;
    return PL_SPAWN(ex, p, "piper", NULL);
}

PL_SCENARIO(faults_sleep, .name = "faults_sleep", .summary = "one 1 ms sleep",
            .state_size = sizeof(faults_state), .setup = sleep_setup);
PL_SCENARIO(faults_pipe, .name = "faults_pipe", .summary = "2 KiB through a pipe",
            .state_size = sizeof(faults_state), .setup = pipe_setup);

/* Runs sc for one seed with the given fault options (NULL: none given). */
static pl_sim_result run(const pl_scenario *sc, uint64_t seed, const pl_sim_fault_options *fo)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.seed = seed;
    o.faults = fo;
    pl_sim_result r;
    cr_assert_eq(pl_sim_run(sc, &o, &r), 0, "%s", r.finding.message);
    cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "seed %llu: %s", (unsigned long long)seed,
                 r.finding.message);
    return r;
}

Test(faults, defaults_are_what_no_options_give)
{
    pl_sim_fault_options d;
    pl_sim_fault_options_default(&d);
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        pl_sim_result a = run(&faults_pipe, seed, NULL);
        pl_sim_result b = run(&faults_pipe, seed, &d);
        cr_assert_eq(a.hash, b.hash, "seed %llu", (unsigned long long)seed);
        pl_sim_result_free(&a);
        pl_sim_result_free(&b);
    }
}

Test(faults, defaults_validate_and_keep_loss_and_reset_off)
{
    pl_sim_fault_options d;
    pl_sim_fault_options_default(&d);
    cr_assert_eq(pl_sim_fault_options_validate(&d, NULL, 0), 0);
    cr_assert(d.short_read && d.short_write && d.eagain);
    cr_assert(!d.dgram_loss && !d.conn_reset);
}

/* Each out-of-range field is refused, by pl_sim_run too, naming itself. */
Test(faults, out_of_range_fields_are_refused_with_their_name)
{
    static const char *const names[] = {
        "latency_steps",  "latency_steps",         "latency_quantum_ns",   "latency_quantum_ns",
        "timer_late_max", "timer_late_quantum_ns", "timer_late_quantum_ns"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        pl_sim_fault_options f;
        pl_sim_fault_options_default(&f);
        switch (i) {
        case 0:
            f.latency_steps = 0;
            break;
        case 1:
            f.latency_steps = PL_SIM_LATENCY_STEPS_MAX + 1;
            break;
        case 2:
            f.latency_quantum_ns = -1;
            break;
        case 3:
            f.latency_quantum_ns = PL_SIM_FAULT_QUANTUM_MAX + 1;
            break;
        case 4:
            f.timer_late_max = PL_SIM_TIMER_LATE_MAX + 1;
            break;
        case 5:
            f.timer_late_quantum_ns = -1;
            break;
        default:
            f.timer_late_quantum_ns = PL_SIM_FAULT_QUANTUM_MAX + 1;
            break;
        }
        char err[128] = "";
        cr_assert_eq(pl_sim_fault_options_validate(&f, err, sizeof err), PL_EINVAL, "case %zu", i);
        cr_assert(strstr(err, names[i]) != NULL, "case %zu: %s", i, err);
        pl_sim_options o;
        pl_sim_options_default(&o);
        o.faults = &f;
        pl_sim_result r;
        cr_assert_eq(pl_sim_run(&faults_pipe, &o, &r), PL_EINVAL, "case %zu", i);
        cr_assert(strstr(r.finding.message, names[i]) != NULL, "case %zu: %s", i,
                  r.finding.message);
        pl_sim_result_free(&r);
    }
}

/* Latency drawn for the pipe's data moves the clock by default; with a
 * zero quantum no seed's run takes any virtual time. */
Test(faults, latency_options_reach_the_network)
{
    pl_sim_fault_options f;
    pl_sim_fault_options_default(&f);
    f.latency_quantum_ns = 0;
    bool moved = false;
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        pl_sim_result a = run(&faults_pipe, seed, NULL);
        pl_sim_result b = run(&faults_pipe, seed, &f);
        moved = moved || a.time_ns > 0;
        cr_assert_eq(b.time_ns, 0, "seed %llu", (unsigned long long)seed);
        pl_sim_result_free(&a);
        pl_sim_result_free(&b);
    }
    cr_assert(moved, "some seed drew a latency by default");
}

/* By default a timer may fire up to 4 ms late; timer_late_max 0 makes
 * every 1 ms sleep end at 1 ms. */
Test(faults, timer_lateness_reaches_the_executor)
{
    pl_sim_fault_options f;
    pl_sim_fault_options_default(&f);
    f.timer_late_max = 0;
    bool late = false;
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        pl_sim_result a = run(&faults_sleep, seed, NULL);
        pl_sim_result b = run(&faults_sleep, seed, &f);
        late = late || a.time_ns > PL_MS;
        cr_assert_leq(a.time_ns, 5 * PL_MS, "seed %llu", (unsigned long long)seed);
        cr_assert_eq(b.time_ns, PL_MS, "seed %llu", (unsigned long long)seed);
        pl_sim_result_free(&a);
        pl_sim_result_free(&b);
    }
    cr_assert(late, "some seed drew a late timer by default");
}
