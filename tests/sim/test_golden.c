/* Golden trace hashes: the same scenario and seeds must hash the same in
 * every build. CI runs this file in the gcc -O2 build and in the clang
 * -O0 ASan+UBSan build, so a pointer, an uninitialised byte or a
 * compiler-dependent order leaking into the simulation fails here.
 *
 * When behaviour changes on purpose (a new event, a new decision), update
 * GOLDEN in the same commit and say why in its message. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include <pollen/sim.h>

#include "leakcheck.h"

TestSuite(golden, .fini = pl_test_leak_check);

enum { ITEMS = 12 };

typedef struct golden_state {
    pl_mpsc ch;
    pl_semaphore sem;
    uint64_t items[8];
    uint64_t sum;
    int finished;
    int pipe_bytes;
} golden_state;

/* Producer: sends ITEMS values with small sleeps through a bounded
 * channel, then closes it. */
typedef struct producer {
    pl_future base;
    golden_state *s;
    uint64_t k;
    pl_sleep sleep;
    pl_mpsc_send send;
} producer;

static pl_poll_result producer_poll(pl_future *f, pl_context *cx)
{
    producer *p = (producer *)f;
    PL_ASYNC_BEGIN(p);
    for (p->k = 1; p->k <= ITEMS; p->k++) {
        p->sleep = pl_sleep_for((pl_time)(p->k % 3) * PL_MS);
        PL_AWAIT(cx, &p->sleep);
        p->send = pl_mpsc_send_make(&p->s->ch, &p->k);
        PL_AWAIT(cx, &p->send);
    }
    pl_mpsc_sender_drop(&p->s->ch);
    PL_ASYNC_END;
}

static void producer_drop(pl_future *f)
{
    producer *p = (producer *)f;
    if (!pl_future_is_done(&p->base)) {
        pl_mpsc_sender_drop(&p->s->ch);
    }
}

static const pl_future_vtable producer_vt = {"producer", producer_poll, producer_drop};

/* Worker: holds a semaphore permit around a short sleep, then adds its
 * item to the sum. */
typedef struct worker {
    pl_future base;
    golden_state *s;
    uint64_t item;
    pl_semaphore_acquire acq;
    pl_sleep sleep;
} worker;

static pl_poll_result worker_poll(pl_future *f, pl_context *cx)
{
    worker *w = (worker *)f;
    PL_ASYNC_BEGIN(w);
    w->acq = pl_semaphore_acquire_make(&w->s->sem, 1);
    PL_AWAIT(cx, &w->acq);
    w->sleep = pl_sleep_for((pl_time)(w->item % 2 + 1) * PL_MS);
    PL_AWAIT(cx, &w->sleep);
    w->s->sum += w->item;
    w->s->finished++;
    pl_semaphore_release(&w->s->sem, 1);
    PL_ASYNC_END;
}

static void worker_drop(pl_future *f)
{
    worker *w = (worker *)f;
    if (w->base.resume != 0 && !pl_future_is_done(&w->base)) {
        pl_drop(w->sleep.base.vtable != NULL ? &w->sleep.base : &w->acq.base);
    }
}

static const pl_future_vtable worker_vt = {"worker", worker_poll, worker_drop};

/* Consumer: the channel's one receiver; spawns a worker per item until
 * the channel closes. */
typedef struct consumer {
    pl_future base;
    golden_state *s;
    uint64_t item;
    pl_mpsc_recv recv;
} consumer;

static pl_poll_result consumer_poll(pl_future *f, pl_context *cx)
{
    consumer *c = (consumer *)f;
    PL_ASYNC_BEGIN(c);
    for (;;) {
        c->recv = pl_mpsc_recv_make(&c->s->ch, &c->item);
        PL_AWAIT(cx, &c->recv);
        if (c->recv.result != 0) {
            break;
        }
        worker w;
        memset(&w, 0, sizeof w);
        w.base = PL_FUTURE_INIT(&worker_vt);
        w.s = c->s;
        w.item = c->item;
        if (PL_SPAWN(cx->ex, w, "worker", NULL) != 0) {
            break;
        }
    }
    PL_ASYNC_END;
}

static const pl_future_vtable consumer_vt = {"consumer", consumer_poll, NULL};

/* Pipe pair: one task writes 4 KiB through an in-memory pipe, the other
 * reads it all (short reads and latency come from the decision stream). */
typedef struct piper {
    pl_future base;
    golden_state *s;
    pl_pipe_reader r;
    pl_pipe_writer w;
    char buf[4096];
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
        p->rd = pl_pipe_read(&p->r, p->buf, 1000);
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

static int golden_setup(pl_executor *ex, void *state)
{
    golden_state *s = state;
    pl_mpsc_init_buffer(&s->ch, s->items, sizeof s->items[0], 8);
    pl_semaphore_init(&s->sem, 2);
    producer p;
    memset(&p, 0, sizeof p);
    p.base = PL_FUTURE_INIT(&producer_vt);
    p.s = s;
    int rc = PL_SPAWN(ex, p, "producer", NULL);
    consumer c;
    memset(&c, 0, sizeof c);
    c.base = PL_FUTURE_INIT(&consumer_vt);
    c.s = s;
    rc = rc != 0 ? rc : PL_SPAWN(ex, c, "consumer", NULL);
    piper pp;
    memset(&pp, 0, sizeof pp);
    pp.base = PL_FUTURE_INIT(&piper_vt);
    pp.s = s;
    return rc != 0 ? rc : PL_SPAWN(ex, pp, "piper", NULL);
}

static int golden_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    golden_state *s = state;
    (void)ex;
    if (s->sum != ITEMS * (ITEMS + 1) / 2 || s->finished != ITEMS || s->pipe_bytes != 4096) {
        snprintf(msg, len, "sum %llu, pipe bytes %d", (unsigned long long)s->sum,
                 s->pipe_bytes);
        return 1;
    }
    return 0;
}

static void golden_teardown(void *state) { pl_mpsc_finish(&((golden_state *)state)->ch); }

PL_SCENARIO(golden_mix, .name = "golden_mix",
            .summary = "channel, semaphore, timers and a pipe: the golden-hash scenario",
            .state_size = sizeof(golden_state), .setup = golden_setup, .check = golden_check,
            .teardown = golden_teardown);

/* The combined hash of seeds 0..39: every seed's hash folded in order. */
static uint64_t combined_hash(void)
{
    uint64_t h = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        pl_sim_options o;
        pl_sim_options_default(&o);
        o.seed = seed;
        pl_sim_result r;
        cr_assert_eq(pl_sim_run(&golden_mix, &o, &r), 0);
        cr_assert_eq(r.finding.kind, PL_FINDING_NONE, "seed %llu: %s: %s",
                     (unsigned long long)seed, pl_finding_name(r.finding.kind),
                     r.finding.message);
        h = (h ^ r.hash) * 0x100000001b3ull;
        pl_sim_result_free(&r);
    }
    return h;
}

#define GOLDEN UINT64_C(0x6abd82c2c32b2491)

Test(golden, scenario_hashes_are_the_same_in_every_build)
{
    uint64_t h = combined_hash();
    cr_assert_eq(h, GOLDEN, "combined hash %016llx (expected %016llx): see the comment at the "
                 "top of this file", (unsigned long long)h, (unsigned long long)GOLDEN);
}

Test(golden, a_seed_replays_to_the_same_hash)
{
    uint64_t first = combined_hash();
    cr_assert_eq(combined_hash(), first);
}
