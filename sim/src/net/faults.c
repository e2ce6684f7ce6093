/* sim/src/net/faults.c: the fault options (pl_sim_fault_options) and
 * every latency and fault decision the network draws. Whether a class of
 * fault may fire is the options' business; how often is the decision
 * stream's (the io_fault and io_latency knobs). */
#include <stdio.h>

#include "net_impl.h"

/* ---- Options ------------------------------------------------------------ */

void pl_sim_fault_options_default(pl_sim_fault_options *o)
{
    *o = (pl_sim_fault_options){
        .latency_steps = 8,
        .latency_quantum_ns = 100 * PL_US,
        .short_read = true,
        .short_write = true,
        .eagain = true,
        .dgram_loss = false,
        .conn_reset = false,
        .timer_late_max = 4,
        .timer_late_quantum_ns = PL_MS,
    };
    pl_sim_link_options_default(&o->link);
}

void pl_sim_link_options_default(pl_sim_link_options *o)
{
    *o = (pl_sim_link_options){
        .latency_ns = 500 * PL_US,
        .jitter_quantum_ns = 100 * PL_US,
        .jitter_steps = 8,
        .loss = true,
        .dup = true,
        .reorder = true,
        .reorder_ns = 2 * PL_MS,
        .reset = true,
        .partition = true,
        .clog = true,
        .fault_steps = 8,
        .break_after_ns = 100 * PL_MS,
    };
}

static int invalid_in(char *err, size_t err_len, const char *where, const char *what,
                      long long v, long long lo, long long hi)
{
    if (err != NULL && err_len > 0) {
        snprintf(err, err_len, "%s: %s %lld is outside %lld..%lld", where, what, v, lo, hi);
    }
    return PL_EINVAL;
}

static int invalid(char *err, size_t err_len, const char *what, long long v, long long lo,
                   long long hi)
{
    return invalid_in(err, err_len, "fault options", what, v, lo, hi);
}

/* A duration field of the link options must lie in [lo, PL_S] (or an
 * hour for break_after_ns). */
static int link_time(char *err, size_t err_len, const char *what, pl_time v, pl_time lo,
                     pl_time hi)
{
    return v < lo || v > hi ? invalid_in(err, err_len, "link options", what, v, lo, hi) : 0;
}

static int link_steps(char *err, size_t err_len, const char *what, uint32_t v)
{
    if (v < 1 || v > PL_SIM_LINK_STEPS_MAX) {
        return invalid_in(err, err_len, "link options", what, v, 1, PL_SIM_LINK_STEPS_MAX);
    }
    return 0;
}

int pl_sim_link_options_validate(const pl_sim_link_options *o, char *err, size_t err_len)
{
    int rc = link_time(err, err_len, "latency_ns", o->latency_ns, 0, PL_S);
    if (rc == 0) {
        rc = link_time(err, err_len, "jitter_quantum_ns", o->jitter_quantum_ns, 0, PL_S);
    }
    if (rc == 0) {
        rc = link_steps(err, err_len, "jitter_steps", o->jitter_steps);
    }
    if (rc == 0) {
        rc = link_time(err, err_len, "reorder_ns", o->reorder_ns, 0, PL_S);
    }
    if (rc == 0) {
        rc = link_steps(err, err_len, "fault_steps", o->fault_steps);
    }
    if (rc == 0) {
        rc = link_time(err, err_len, "break_after_ns", o->break_after_ns, 1, 3600 * PL_S);
    }
    return rc;
}

int pl_sim_fault_options_validate(const pl_sim_fault_options *o, char *err, size_t err_len)
{
    if (o->latency_steps < 1 || o->latency_steps > PL_SIM_LATENCY_STEPS_MAX) {
        return invalid(err, err_len, "latency_steps", o->latency_steps, 1,
                       PL_SIM_LATENCY_STEPS_MAX);
    }
    if (o->latency_quantum_ns < 0 || o->latency_quantum_ns > PL_SIM_FAULT_QUANTUM_MAX) {
        return invalid(err, err_len, "latency_quantum_ns", o->latency_quantum_ns, 0,
                       PL_SIM_FAULT_QUANTUM_MAX);
    }
    if (o->timer_late_max > PL_SIM_TIMER_LATE_MAX) {
        return invalid(err, err_len, "timer_late_max", o->timer_late_max, 0, PL_SIM_TIMER_LATE_MAX);
    }
    if (o->timer_late_quantum_ns < 0 || o->timer_late_quantum_ns > PL_SIM_FAULT_QUANTUM_MAX) {
        return invalid(err, err_len, "timer_late_quantum_ns", o->timer_late_quantum_ns, 0,
                       PL_SIM_FAULT_QUANTUM_MAX);
    }
    return pl_sim_link_options_validate(&o->link, err, err_len);
}

void pl__net_faults_of(const pl_sim_options *o, pl_sim_fault_options *out)
{
    if (o != NULL && o->faults != NULL) {
        *out = *o->faults;
    } else {
        pl_sim_fault_options_default(out);
    }
}

/* ---- Decisions ---------------------------------------------------------- */

pl_time pl__net_latency(pl__reactor *r, const ep *e)
{
    uint32_t steps =
        pl__sim_choose(r->sim, PL_DECIDE_IO_LATENCY, r->faults.latency_steps, e->hdr.id);
    PL__SIM_ASSERT(steps < r->faults.latency_steps);
    return (pl_time)steps * r->faults.latency_quantum_ns;
}

/* An address as text; `none` when unset. */
static void addr_text(const addr *a, char *buf, size_t len, const char *none)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (a->family == 0) {
        snprintf(buf, len, "%s", none);
        return;
    }
    pl__net_addr_write(a, (struct sockaddr *)&ss, &sl);
    pl_addr_format((struct sockaddr *)&ss, buf, len);
}

/* "pipe (read end)", "stream socket 127.0.0.1:8080 (peer 127.0.0.1:40000)". */
static void ep_text(const ep *e, char *buf, size_t len)
{
    char local[PL_ADDR_STRLEN], peer[PL_ADDR_STRLEN];
    addr_text(&e->local, local, sizeof local, "unbound");
    addr_text(&e->peer, peer, sizeof peer, "none");
    switch (e->kind) {
    case EP_PIPE_R:
        snprintf(buf, len, "pipe (read end)");
        break;
    case EP_PIPE_W:
        snprintf(buf, len, "pipe (write end)");
        break;
    case EP_STREAM:
        snprintf(buf, len, "stream socket %s (peer %s)", local, peer);
        break;
    case EP_DGRAM:
    default:
        snprintf(buf, len, "datagram socket %s", local);
        break;
    }
}

void pl__net_conn_text(const ep *e, char *buf, size_t len)
{
    char local[PL_ADDR_STRLEN], peer[PL_ADDR_STRLEN];
    addr_text(&e->local, local, sizeof local, "unbound");
    addr_text(&e->peer, peer, sizeof peer, "none");
    snprintf(buf, len, "%s <-> %s", local, peer);
}

/* Says what a fault decision chose, for the explanation of a shrunk run
 * (only while one is made: pl__sim_decision_text). */
static void say_fault(pl__reactor *r, const ep *e, fault f)
{
    static const char *const names[] = {
        [F_NONE] = "no fault", [F_SHORT] = "a short transfer", [F_EAGAIN] = "EAGAIN",
        [F_LOSS] = "a lost datagram", [F_RESET] = "a connection reset"};
    char *text = pl__sim_decision_text(r->sim);
    if (text != NULL) {
        char where[144];
        ep_text(e, where, sizeof where);
        snprintf(text, PL__DECISION_TEXT_MAX, "%s on %s", names[f], where);
    }
}

fault pl__net_pick_fault(pl__reactor *r, const ep *e, uint32_t allowed)
{
    fault opts[5];
    uint32_t n = 0;
    opts[n++] = F_NONE;
    for (int f = F_SHORT; f <= F_RESET; f++) {
        if (allowed & PL__NET_FBIT(f)) {
            opts[n++] = (fault)f;
        }
    }
    if (n == 1) {
        return F_NONE;
    }
    uint32_t k = pl__sim_choose(r->sim, PL_DECIDE_IO_FAULT, n, e->hdr.id);
    PL__SIM_ASSERT(k < n);
    say_fault(r, e, opts[k]);
    return opts[k];
}

size_t pl__net_short_len(pl__reactor *r, const ep *e, size_t n)
{
    PL__SIM_ASSERT(n >= 2);
    uint32_t span = n - 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(n - 1);
    size_t len = 1 + pl__sim_choose(r->sim, PL_DECIDE_IO_FAULT, span, e->hdr.id);
    char *text = pl__sim_decision_text(r->sim);
    if (text != NULL) {
        char where[144];
        ep_text(e, where, sizeof where);
        snprintf(text, PL__DECISION_TEXT_MAX, "the short transfer on %s moves %zu of %zu bytes",
                 where, len, n);
    }
    return len;
}

/* Never twice in a row on one endpoint and direction: the attempt after
 * one is exempt, so even an always-on io_fault knob cannot starve correct
 * code (an accept offered only "none, EAGAIN" would otherwise never
 * succeed). Called only where the operation can succeed, which is what
 * consumes the exemption. */
uint32_t pl__net_eagain_fault(const pl__reactor *r, ep *e, uint32_t bit)
{
    if (e->eagain_owed & bit) {
        e->eagain_owed &= ~bit;
        return 0;
    }
    return r->faults.eagain ? PL__NET_FBIT(F_EAGAIN) : 0;
}

uint32_t pl__net_stream_faults(const pl__reactor *r, ep *e, size_t n, uint32_t bit)
{
    bool short_on = bit == PL_IO_READABLE ? r->faults.short_read : r->faults.short_write;
    uint32_t allowed = pl__net_eagain_fault(r, e, bit);
    if (short_on && n >= 2) {
        allowed |= PL__NET_FBIT(F_SHORT);
    }
    if (r->faults.conn_reset && e->kind == EP_STREAM) {
        allowed |= PL__NET_FBIT(F_RESET);
    }
    return allowed;
}

uint32_t pl__net_send_faults(const pl__reactor *r, ep *e)
{
    uint32_t allowed = pl__net_eagain_fault(r, e, PL_IO_WRITABLE);
    if (r->faults.dgram_loss) {
        allowed |= PL__NET_FBIT(F_LOSS);
    }
    return allowed;
}

/* The operation could have succeeded, so readiness must come back by
 * itself or a correct future would wait forever. */
ssize_t pl__net_spurious_eagain(pl__reactor *r, ep *e, uint32_t bit)
{
    e->eagain_owed |= bit;
    pl__net_notify_later(r, e, bit, pl__net_latency(r, e));
    return PL_EAGAIN;
}
