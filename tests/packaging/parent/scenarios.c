/* A user's scenarios, compiled into a static library by meson.build:
 * `relay` stays clean, `relay_lost` is a known bug (a future that parks
 * without storing its waker) for the fuzz target's finding. */
#include <pollen/sim.h>

/* Lets a main() that links this library without link_whole keep it. */
PL_SCENARIO_FILE(user_relay);

enum { ITEMS = 20 };

typedef struct relay_state {
    int sent;
    int relayed;
} relay_state;

/* ---- relay: a producer and a relay taking turns through yields -------- */

typedef struct producer {
    pl_future base;
    relay_state *st;
} producer;

static pl_poll_result producer_poll(pl_future *f, pl_context *cx)
{
    producer *self = (producer *)f;
    PL_ASYNC_BEGIN(self);
    while (self->st->sent < ITEMS) {
        self->st->sent++;
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable producer_vtable = {"producer", producer_poll, NULL};

typedef struct relayer {
    pl_future base;
    relay_state *st;
} relayer;

static pl_poll_result relayer_poll(pl_future *f, pl_context *cx)
{
    relayer *self = (relayer *)f;
    PL_ASYNC_BEGIN(self);
    while (self->st->relayed < ITEMS) {
        if (self->st->relayed < self->st->sent) {
            self->st->relayed++;
        }
        PL_YIELD(cx);
    }
    PL_ASYNC_END;
}

static const pl_future_vtable relayer_vtable = {"relayer", relayer_poll, NULL};

static int relay_setup(pl_executor *ex, void *state)
{
    producer p = {.base = PL_FUTURE_INIT(&producer_vtable), .st = state};
    relayer r = {.base = PL_FUTURE_INIT(&relayer_vtable), .st = state};
    int rc = PL_SPAWN(ex, p, "producer", NULL);
    return rc != 0 ? rc : PL_SPAWN(ex, r, "relayer", NULL);
}

static int relay_check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const relay_state *st = state;
    if (st->relayed != ITEMS) {
        return pl_check_fail(msg, len, "relayed %d of %d items", st->relayed, ITEMS);
    }
    return 0;
}

PL_SCENARIO(user_relay, .name = "relay", .summary = "user project: a producer and a relay",
            .state_size = sizeof(relay_state), .setup = relay_setup, .check = relay_check);

/* ---- relay_lost: parks once without storing the waker ----------------- */

typedef struct forgetful {
    pl_future base;
    bool parked;
} forgetful;

static pl_poll_result forgetful_poll(pl_future *f, pl_context *cx)
{
    (void)cx;
    forgetful *self = (forgetful *)f;
    if (self->parked) {
        return PL_READY;
    }
    self->parked = true; /* the bug: nobody holds this poll's waker */
    return PL_PENDING;
}

static const pl_future_vtable forgetful_vtable = {"forgetful", forgetful_poll, NULL};

static int lost_setup(pl_executor *ex, void *state)
{
    (void)state;
    forgetful fg = {.base = PL_FUTURE_INIT(&forgetful_vtable)};
    return PL_SPAWN(ex, fg, "forgetful", NULL);
}

PL_SCENARIO(user_relay_lost, .name = "relay_lost",
            .summary = "user project: a future that parks without storing its waker",
            .expect = "orphan", .setup = lost_setup);
