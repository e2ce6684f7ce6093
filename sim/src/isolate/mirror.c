/* sim/src/isolate/mirror.c: the crash mirror and the crash ring a run
 * copies into (mirror.h).
 *
 * Process globals, not a run's state: the memory outlives the run and
 * its process, and the CLI attaches it once per child before any run.
 * The mirror's count is volatile and bumped after its entry is stored:
 * the parent reads a prefix that was entirely written.
 */
#include "mirror.h"

#include "sim_assert.h"
#include "sim_internal.h"
#include "trace_ring.h"

static pl__dec_record *mirror_buf;
static size_t mirror_cap;
static volatile uint64_t *mirror_len;

static pl__trace_ring *ring_to;

/* mirror_len != NULL || ring_to != NULL: one test per decision for both. */
bool pl__mirror_on;

void pl__sim_record_to(pl__dec_record *buf, size_t cap, volatile uint64_t *len)
{
    PL__SIM_ASSERT(len == NULL || buf != NULL || cap == 0);
    mirror_buf = buf;
    mirror_cap = cap;
    mirror_len = len;
    pl__mirror_on = mirror_len != NULL || ring_to != NULL;
}

void pl__sim_mirror_restart(void)
{
    if (mirror_len != NULL) {
        *mirror_len = 0;
    }
}

static void mirror(pl_decision_kind kind, uint32_t n, uint32_t v)
{
    uint64_t i = *mirror_len;
    if (i < mirror_cap) {
        mirror_buf[i] = (pl__dec_record){(uint32_t)kind, n, v};
    }
    /* Counted past the cap too: a length above it marks the copy as
     * truncated for the replay file written from it. */
    *mirror_len = i + 1;
}

void pl__sim_ring_to(pl__trace_ring *ring)
{
    ring_to = ring;
    pl__mirror_on = mirror_len != NULL || ring_to != NULL;
}

pl__trace_ring *pl__sim_ring(void) { return ring_to; }

void pl__sim_ring_restart(pl__sim *s)
{
    PL__SIM_ASSERT(s != NULL);
    if (ring_to != NULL) {
        PL__SIM_ASSERT(s->trace != NULL);
        pl__ring_reset(ring_to);
        pl__trace_set_ring(s->trace, ring_to);
    }
}

void pl__mirror_decision(pl_decision_kind kind, uint32_t n, uint32_t v, uint64_t key)
{
    /* Only called while something is attached (pl__mirror_on). */
    PL__SIM_ASSERT(mirror_len != NULL || ring_to != NULL);
    PL__SIM_ASSERT((uint32_t)kind < PL_DECIDE__COUNT);
    if (mirror_len != NULL) {
        mirror(kind, n, v);
    }
    if (ring_to != NULL) {
        pl__ring_key(ring_to, key);
    }
}
