/* sim/src/history.c: recording a run's client history
 * (pollen/sim_history.h). The calls are as cheap as an append: the
 * whole judgement waits for the end of the run (check_history.c), so a
 * client's poll pays no search.
 */
#include <stdlib.h>
#include <string.h>

#include "pollen/sim_history.h"
#include "sim_internal.h"
#include "grow.h"

int pl_history_use(const pl_model *model)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        return PL_ENOSYS;
    }
    if (model == NULL || model->name == NULL || model->init == NULL || model->step == NULL ||
        model->describe == NULL || model->state_size == 0 ||
        model->state_size > PL_MODEL_STATE_MAX || (model->hash == NULL) != (model->equal == NULL)) {
        return pl__sim_call_error(
            s, PL_EINVAL,
            "pl_history_use: a model needs a name, init, step and describe, a "
            "state of 1 to %u bytes, and both hash and equal or neither",
            PL_MODEL_STATE_MAX);
    }
    if (s->history.model != NULL) {
        return pl__sim_call_error(s, PL_EINVAL, "pl_history_use: the run's model is already '%s'",
                                  s->history.model->name);
    }
    s->history.model = model;
    return 0;
}

/* The record of `id`, or NULL (and an assertion finding) when the id is
 * not one this run returned or its operation already completed. */
static pl__history_rec *open_op(pl__sim *s, uint64_t id, const char *call)
{
    pl__history *h = &s->history;
    if (id == 0 || id > h->len + h->dropped) {
        pl__sim_finding(s, PL_FINDING_ASSERTION, pl__sim_polled(s),
                        "%s(%llu): no operation of this run has that id", call,
                        (unsigned long long)id);
        return NULL;
    }
    if (id > h->len) {
        return NULL; /* dropped: the verdict says the history was cut */
    }
    pl__history_rec *r = &h->ops[id - 1];
    if (r->status != PL__OP_OPEN) {
        pl__sim_finding(s, PL_FINDING_ASSERTION, pl__sim_polled(s),
                        "%s(%llu): operation %llu by %s already completed", call,
                        (unsigned long long)id, (unsigned long long)id, r->client);
        return NULL;
    }
    r->return_ns = s->now;
    r->return_seq = ++h->seq;
    return r;
}

uint64_t pl_history_invoke(const char *client, uint32_t kind, uint64_t key, int64_t in,
                           int64_t in2)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        return 0;
    }
    pl__history *h = &s->history;
    if (h->dropped > 0 || h->len >= PL_HISTORY_OPS_MAX) {
        h->dropped++;
        return h->len + h->dropped;
    }
    int rc = pl__grow((void **)&h->ops, &h->cap, h->len + 1, sizeof *h->ops, 64,
                      PL_HISTORY_OPS_MAX);
    if (rc != 0) {
        h->no_memory = true;
        h->dropped++;
        return h->len + h->dropped;
    }
    if (client == NULL) {
        uint32_t n = pl__node_current(s);
        client = n != 0 ? pl__node_name(&s->nodes, n) : "scenario";
    }
    pl__history_rec *r = &h->ops[h->len++];
    *r = (pl__history_rec){
        .op = {.kind = kind, .key = key, .in = in, .in2 = in2},
        .client = client,
        .invoke_ns = s->now,
        .invoke_seq = ++h->seq,
    };
    return h->len;
}

void pl_history_ok(uint64_t id, int64_t out, int64_t out2)
{
    pl__sim *s = pl__sim_current();
    pl__history_rec *r = s != NULL && id != 0 ? open_op(s, id, "pl_history_ok") : NULL;
    if (r != NULL) {
        r->status = PL__OP_OK;
        r->op.out = out;
        r->op.out2 = out2;
    }
}

void pl_history_fail(uint64_t id)
{
    pl__sim *s = pl__sim_current();
    pl__history_rec *r = s != NULL && id != 0 ? open_op(s, id, "pl_history_fail") : NULL;
    if (r != NULL) {
        r->status = PL__OP_FAIL;
    }
}

void pl_history_unknown(uint64_t id)
{
    pl__sim *s = pl__sim_current();
    pl__history_rec *r = s != NULL && id != 0 ? open_op(s, id, "pl_history_unknown") : NULL;
    if (r != NULL) {
        r->status = PL__OP_UNKNOWN;
        r->op.unknown = true;
    }
}

void pl__history_free(pl__history *h)
{
    free(h->ops);
    memset(h, 0, sizeof *h);
}
