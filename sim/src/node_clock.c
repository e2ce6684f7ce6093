/* sim/src/node_clock.c: skewed nodes' clocks (nemesis.h,
 * pollen/sim_node.h's `skewed`).
 *
 * The run keeps one true timeline: the executor's clock, its timer heap,
 * the trace and every event order. A skewed node's clock is a function
 * of that time, fixed at its first boot: reading = t + offset + t * drift
 * / 10^6. Being a function, it needs no state per tick; being
 * non-decreasing, its inverse finds when a deadline on it comes, so the
 * executor's clock map (pollen/observer.h) makes a node's pl_now read its
 * clock and its timers fire when its clock reaches their deadlines. Only
 * the wall clock jumps (an NTP step, an operator's date): jumping the
 * monotonic clock would break what every program assumes of it, and
 * would move armed timers, which a real kernel does not do for a step
 * of CLOCK_REALTIME either.
 */
#include <stdio.h>

#include "node.h"
#include "sim_internal.h"

enum { PPM = 1000000 };

/* t * ppm / 10^6 without overflow for any t >= 0 (|ppm| < 10^6),
 * rounded toward zero: t + it never decreases as t grows. */
static pl_time drift_of(pl_time t, int32_t ppm) { return t / PPM * ppm + t % PPM * ppm / PPM; }

static pl_time mono_read(const pl__nemesis *z, uint32_t n, pl_time t)
{
    if (t > PL_TIME_NEVER / 2) {
        return PL_TIME_NEVER; /* past any run's limit: the end of time, no overflow */
    }
    return t + z->clock_offset_ns[n] + drift_of(t, z->clock_drift_ppm[n]);
}

pl_time pl__node_clock_read(const pl__sim *s, uint32_t n, pl_time t, bool wall)
{
    if (n == 0 || n >= s->nodes.len || !s->nodes.list[n].def.skewed) {
        return t;
    }
    const pl__nemesis *z = &s->nemesis;
    return mono_read(z, n, t) + (wall ? z->wall_jump_ns[n] : 0);
}

/* The clock map's halves, for the code running now (pl__node_current). */
static pl_time map_local(void *ud, pl_time now_ns)
{
    const pl__sim *s = ud;
    return pl__node_clock_read(s, pl__node_current(s), now_ns, false);
}

/* The inverse of the linear part, then a step or two to the exact one
 * (the rounding of both directions differs by a nanosecond or so). */
pl_time pl__node_clock_due(const pl__sim *s, uint32_t n, pl_time local_ns)
{
    /* A deadline a quarter of time's range away (PL_TIME_NEVER among
     * them) comes after any run's limit: where exactly does not matter,
     * and the steps below stay clear of mono_read's saturation. */
    if (n == 0 || !s->nodes.list[n].def.skewed || local_ns > PL_TIME_NEVER / 4) {
        return local_ns;
    }
    const pl__nemesis *z = &s->nemesis;
    pl_time x = local_ns - z->clock_offset_ns[n];
    if (x <= 0) {
        return 0; /* the clock read it from the start: due now */
    }
    int32_t ppm = z->clock_drift_ppm[n];
    pl_time rate = PPM + ppm;
    pl_time t = x - (x / rate * ppm + x % rate * ppm / rate);
    PL__SIM_ASSERT(t >= 0 && t < PL_TIME_NEVER / 2);
    while (t > 0 && mono_read(z, n, t - 1) >= local_ns) {
        t--;
    }
    while (mono_read(z, n, t) < local_ns) {
        t++;
    }
    return t;
}

static pl_time map_deadline(void *ud, pl_time local_ns)
{
    const pl__sim *s = ud;
    return pl__node_clock_due(s, pl__node_current(s), local_ns);
}

/* How many of a kind's sizes, quantum << l for l = 0.., are within the
 * run's bound (the knobs' clock_*_max): its decision draws only those, so
 * a value keeps its meaning (step k is the same size under every bound)
 * and a replay, which records its knobs, draws from the same n. At the
 * default bound, all PL_SIM_CLOCK_STEPS: n as before there were bounds. */
static uint32_t steps_within(const pl__sim *s, uint32_t bound, int64_t quantum, int64_t unit)
{
    int64_t most = (int64_t)s->dec.knobs.bound[bound] * unit;
    uint32_t l = 0;
    while (l < PL_SIM_CLOCK_STEPS && (quantum << l) <= most) {
        l++;
    }
    return l;
}

/* Value v of a signed decision: 0 none, then +1, -1, +2, -2, ... steps
 * of powers of two: the shrinker's lower values are the smaller skews. */
static int64_t signed_steps(uint32_t v, int64_t quantum)
{
    if (v == 0) {
        return 0;
    }
    int64_t size = quantum << ((v - 1) / 2);
    return (v & 1u) != 0 ? size : -size;
}

/* "node 'n2' clock runs 0.500% fast, +4 ms offset" (while a run explains). */
static void say_clock(pl__sim *s, uint32_t n)
{
    char *text = pl__sim_decision_text(s);
    if (text == NULL) {
        return;
    }
    int32_t ppm = s->nemesis.clock_drift_ppm[n];
    int w = snprintf(text, PL__DECISION_TEXT_MAX, "node '%s' clock ", pl__node_name(&s->nodes, n));
    if (w <= 0 || w >= PL__DECISION_TEXT_MAX) {
        return;
    }
    if (ppm != 0) {
        w += snprintf(text + w, PL__DECISION_TEXT_MAX - (size_t)w, "runs %.3f%% %s, ",
                      (double)(ppm < 0 ? -ppm : ppm) / 1e4, ppm > 0 ? "fast" : "slow");
    }
    if (w > 0 && w < PL__DECISION_TEXT_MAX) {
        snprintf(text + w, PL__DECISION_TEXT_MAX - (size_t)w, "+%lld ms offset",
                 (long long)(s->nemesis.clock_offset_ns[n] / PL_MS));
    }
}

void pl__node_clock_boot(pl__sim *s, uint32_t n)
{
    pl__nemesis *z = &s->nemesis;
    PL__SIM_ASSERT(n != 0 && n < s->nodes.len);
    if (!s->nodes.list[n].def.skewed || z->clock_drawn[n]) {
        return;
    }
    z->clock_drawn[n] = true;
    uint64_t key = (uint64_t)n << 32;
    uint32_t steps = steps_within(s, PL__DEC_BOUND_CLOCK_OFFSET_MS, PL_SIM_CLOCK_OFFSET_QUANTUM_NS,
                                  PL_MS);
    uint32_t v = pl__sim_choose(s, PL_DECIDE_CLOCK_OFFSET, 1 + steps, key);
    z->clock_offset_ns[n] = v == 0 ? 0 : PL_SIM_CLOCK_OFFSET_QUANTUM_NS << (v - 1);
    PL__SIM_ASSERT(z->clock_offset_ns[n] <=
                   (pl_time)s->dec.knobs.bound[PL__DEC_BOUND_CLOCK_OFFSET_MS] * PL_MS);
    say_clock(s, n);
    steps = steps_within(s, PL__DEC_BOUND_CLOCK_DRIFT_PPM, PL_SIM_CLOCK_DRIFT_QUANTUM_PPM, 1);
    v = pl__sim_choose(s, PL_DECIDE_CLOCK_DRIFT, 1 + 2 * steps, key);
    z->clock_drift_ppm[n] = (int32_t)signed_steps(v, PL_SIM_CLOCK_DRIFT_QUANTUM_PPM);
    int64_t drift_max = s->dec.knobs.bound[PL__DEC_BOUND_CLOCK_DRIFT_PPM];
    PL__SIM_ASSERT(z->clock_drift_ppm[n] <= drift_max && -z->clock_drift_ppm[n] <= drift_max);
    say_clock(s, n);
    if (z->clock_map.local == NULL) {
        /* Set at the first skewed node only: a run without one keeps the
         * executor's plain pl_now and timers. */
        z->clock_map = (pl_clock_map){map_local, map_deadline, s};
        pl__executor_set_clock_map(s->ex, &z->clock_map);
    }
}

/* "node 'n1' wall clock jumped +4 ms at 12.000 ms". */
static void say_jump(pl__sim *s, uint32_t n, int64_t jump_ns)
{
    char *text = pl__sim_decision_text(s);
    if (text != NULL) {
        snprintf(text, PL__DECISION_TEXT_MAX, "node '%s' wall clock jumped %+lld ms at %.3f ms",
                 pl__node_name(&s->nodes, n), (long long)(jump_ns / PL_MS), (double)s->now / 1e6);
    }
}

void pl__node_clock_deliver(pl__sim *s)
{
    pl__nemesis *z = &s->nemesis;
    for (uint32_t n = 1; n < s->nodes.len && !s->stopped; n++) {
        if (!s->nodes.list[n].def.skewed || !s->nodes.list[n].up) {
            continue;
        }
        uint64_t key = (uint64_t)n << 32 | z->clock_jumps[n];
        uint32_t steps =
            steps_within(s, PL__DEC_BOUND_CLOCK_JUMP_MS, PL_SIM_CLOCK_JUMP_QUANTUM_NS, PL_MS);
        uint32_t v = pl__sim_choose(s, PL_DECIDE_CLOCK_JUMP, 1 + 2 * steps, key);
        if (v != 0) {
            int64_t jump = signed_steps(v, PL_SIM_CLOCK_JUMP_QUANTUM_NS);
            z->clock_jumps[n]++;
            z->wall_jump_ns[n] += jump;
            say_jump(s, n, jump);
        }
    }
}
