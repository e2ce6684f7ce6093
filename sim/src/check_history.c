/* sim/src/check_history.c: the verdict on a run's client history
 * (pollen/sim_history.h; the search is lin_search.c).
 *
 * Keys are checked one at a time in increasing order and the first one
 * that fails is reported: its operations shrunk to a sub-history none of
 * whose operations can be left out, which is what a user reads to see
 * the bug (a write acknowledged, then a read that misses it), rather
 * than the hundreds of operations around it. A history the search
 * cannot decide is reported as such: passing it would claim what was
 * never checked.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_history.h"
#include "history.h"
#include "sim_internal.h"

/* Steps the search of the first failing key may spend to shrink it. */
#define MINIMIZE_STEPS_MAX 2000000u
/* Operations a finding's message lists. */
#define LISTED_MAX 8u

/* A record's place: records are kept in invocation order, so (key,
 * index) orders a key's operations by invocation. */
typedef struct keyed {
    uint64_t key;
    uint32_t i;
} keyed;

static int by_key(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->i < y->i ? -1 : x->i > y->i;
}

static void describe_time(const pl__history_rec *r, char *buf, size_t len)
{
    if (r->status == PL__OP_OK) {
        snprintf(buf, len, "invoked %.3f ms, returned %.3f ms", (double)r->invoke_ns / 1e6,
                 (double)r->return_ns / 1e6);
    } else if (r->status == PL__OP_UNKNOWN) {
        snprintf(buf, len, "invoked %.3f ms, unknown since %.3f ms", (double)r->invoke_ns / 1e6,
                 (double)r->return_ns / 1e6);
    } else {
        snprintf(buf, len, "invoked %.3f ms, never returned (unknown)",
                 (double)r->invoke_ns / 1e6);
    }
}

/* What snprintf returned, as the bytes msg (cap bytes) now holds: a
 * truncated write leaves used at cap - 1, so the next write's size is 1,
 * never a wrapped one. */
static int clamp_used(int used, size_t cap)
{
    return used < 0 ? 0 : (size_t)used >= cap ? (int)cap - 1 : used;
}

/* The finding for the failing key: its kept operations, in invocation order. */
static void report(pl__sim *s, const uint32_t *idx, const bool *keep, size_t n, bool minimal)
{
    const pl__history *h = &s->history;
    const pl_model *m = h->model;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        kept += keep[i];
    }
    char msg[sizeof s->finding.message];
    int used = 0;
    const pl__history_rec *first = &h->ops[idx[0]];
    if (m->per_key) {
        used = snprintf(msg, sizeof msg, "history not linearizable (model %s, key %" PRIu64 "): ",
                        m->name, first->op.key);
    } else {
        used = snprintf(msg, sizeof msg, "history not linearizable (model %s): ", m->name);
    }
    used = clamp_used(used, sizeof msg);
    used += snprintf(msg + used, sizeof msg - (size_t)used,
                     "no order of the %zu operation(s)%s explains the %zu below, whatever the "
                     "others did (each may have taken effect at any point after its invocation, "
                     "or not at all)%s:",
                     n, m->per_key ? " on the key" : "", kept,
                     minimal ? "" : " (search budget spent: maybe not the fewest)");
    used = clamp_used(used, sizeof msg);
    size_t listed = 0;
    for (size_t i = 0; i < n && (size_t)used < sizeof msg - 1; i++) {
        if (!keep[i]) {
            continue;
        }
        if (listed++ == LISTED_MAX) {
            snprintf(msg + used, sizeof msg - (size_t)used, "\n  ... and %zu more", kept - LISTED_MAX);
            break;
        }
        const pl__history_rec *r = &h->ops[idx[i]];
        char what[96];
        char when[96];
        m->describe(&r->op, what, sizeof what);
        describe_time(r, when, sizeof when);
        used += snprintf(msg + used, sizeof msg - (size_t)used, "\n  %-14s %-24s %s",
                         r->client, what, when);
        used = clamp_used(used, sizeof msg);
    }
    pl__sim_finding(s, PL_FINDING_LINEARIZABILITY, NULL, "%s", msg);
}

/* Not checked is not passed. */
static void no_memory(pl__sim *s)
{
    pl__sim_finding(s, PL_FINDING_LINEARIZABILITY, NULL,
                    "history not checked: the simulator ran out of memory; not passed");
}

/* Checks the records idx[0..n) as one key; true when it raised a finding. */
static bool check_key(pl__sim *s, const uint32_t *idx, size_t n)
{
    const pl__history *h = &s->history;
    pl__lin_op *ops = malloc(n * sizeof *ops);
    bool *keep = malloc(n * sizeof *keep);
    if (ops == NULL || keep == NULL) {
        free(ops);
        free(keep);
        no_memory(s);
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        const pl__history_rec *r = &h->ops[idx[i]];
        ops[i] = (pl__lin_op){.op = r->op, .call = r->invoke_seq,
                              .ret = r->status == PL__OP_OK ? r->return_seq : UINT64_MAX};
        ops[i].op.unknown = r->status != PL__OP_OK;
        keep[i] = true;
    }
    pl__lin_verdict v = pl__lin_check(h->model, ops, n, PL_HISTORY_STEPS_MAX, NULL);
    if (v == PL__LIN_BAD) {
        bool minimal = pl__lin_minimize(h->model, ops, n, keep, MINIMIZE_STEPS_MAX);
        report(s, idx, keep, n, minimal);
    } else if (v == PL__LIN_BUDGET) {
        pl__sim_finding(s, PL_FINDING_LINEARIZABILITY, NULL,
                        "history too large to check (model %s, key %" PRIu64 "): %zu operations "
                        "took more than %u search steps or 64 MiB of memo; not checked, not "
                        "passed",
                        h->model->name, h->ops[idx[0]].op.key, n, PL_HISTORY_STEPS_MAX);
    } else if (v == PL__LIN_NOMEM) {
        no_memory(s);
    }
    free(ops);
    free(keep);
    return v != PL__LIN_OK;
}

/* False (after raising a finding) when the history cannot be checked at all. */
static bool checkable(pl__sim *s)
{
    const pl__history *h = &s->history;
    if (h->model == NULL) {
        pl__sim_finding(s, PL_FINDING_LINEARIZABILITY, NULL,
                        "history not checked: %zu operation(s) recorded but no model set "
                        "(pl_history_use in the scenario's setup)",
                        h->len + (size_t)h->dropped);
        return false;
    }
    if (h->dropped > 0) {
        pl__sim_finding(s, PL_FINDING_LINEARIZABILITY, NULL,
                        "history too large to check: %" PRIu64 " operation(s) past the first "
                        "%zu were not recorded (%s); not checked, not passed",
                        h->dropped, h->len,
                        h->no_memory ? "out of memory" : "PL_HISTORY_OPS_MAX");
        return false;
    }
    return true;
}

void pl__history_verdict(pl__sim *s)
{
    const pl__history *h = &s->history;
    if (s->finding.kind != PL_FINDING_NONE || (h->len == 0 && h->dropped == 0) || !checkable(s)) {
        return;
    }
    /* Failed operations took no effect: they are left out. */
    keyed *order = malloc(h->len * sizeof *order);
    uint32_t *idx = malloc(h->len * sizeof *idx);
    if (order == NULL || idx == NULL) {
        free(order);
        free(idx);
        no_memory(s);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < h->len; i++) {
        if (h->ops[i].status != PL__OP_FAIL) {
            order[n++] = (keyed){.key = h->model->per_key ? h->ops[i].op.key : 0, .i = (uint32_t)i};
        }
    }
    qsort(order, n, sizeof *order, by_key);
    for (size_t i = 0; i < n; i++) {
        idx[i] = order[i].i;
    }
    free(order);
    for (size_t lo = 0; lo < n;) {
        size_t hi = lo + 1;
        while (hi < n && (!h->model->per_key || h->ops[idx[hi]].op.key == h->ops[idx[lo]].op.key)) {
            hi++;
        }
        if (check_key(s, idx + lo, hi - lo)) {
            break;
        }
        lo = hi;
    }
    free(idx);
}
