/* Zoo: a hand-written race whose drop drops the loser a second time.
 *
 * The primitive: `race2`, a first-of-two combinator written by hand: it
 * polls both children, and when one is READY it drops the other at once
 * (to release what the loser holds: a timer, a wait-list entry) and
 * completes. A fetch task races a 2 ms lookup against a 3 ms deadline.
 *
 * BUG (bug_race_double_drop): race2's own drop drops both children
 * unconditionally, "to be safe". The executor drops a task's future as
 * soon as it completes, so right after the race finishes its drop runs
 * and drops the loser a second time. (The winner's single drop is fine:
 * a completed future may be dropped once.)
 * Why it is a bug: pl_drop runs a future's destructor; running it twice
 * releases the same resources twice (a waker dropped twice, a node
 * unlinked twice, memory freed twice). Whoever drops a child must record
 * that it did.
 * Finding: double_drop, reported by pl_drop on the second drop (in
 * production it aborts the process).
 * FIX (fix_race_double_drop): race2 forgets a child once it dropped it
 * (sets the pointer to NULL), and its drop drops only the children it
 * still owns.
 */
#include "zoo.h"

typedef struct race_state {
    int winner; /* 0: the lookup, 1: the deadline */
    bool finished;
} race_state;

/* ---- race2 ------------------------------------------------------------- */

typedef struct race2 {
    pl_future base;
    pl_future *child[2]; /* NULL once dropped (fixed version) */
    bool fixed;
    int winner;
} race2;

static void race_drop_loser(race2 *self, int loser)
{
    pl_drop(self->child[loser]);
    if (self->fixed) {
        self->child[loser] = NULL; /* FIX: remember it is gone */
    }
}

static pl_poll_result race2_poll(pl_future *f, pl_context *cx)
{
    race2 *self = (race2 *)f;
    for (int i = 0; i < 2; i++) {
        if (pl_poll(self->child[i], cx) == PL_READY) {
            self->winner = i;
            race_drop_loser(self, 1 - i);
            return PL_READY;
        }
    }
    return PL_PENDING;
}

static void race2_drop(pl_future *f)
{
    race2 *self = (race2 *)f;
    for (int i = 0; i < 2; i++) {
        /* BUG (when !fixed): the loser was already dropped at completion. */
        if (self->child[i] != NULL) {
            pl_drop(self->child[i]);
        }
    }
}

static const pl_future_vtable race2_vt = {"race2", race2_poll, race2_drop};

/* ---- The fetch task: race2(lookup 2 ms, deadline 3 ms) ----------------- */

typedef struct fetcher {
    pl_future base;
    race_state *st;
    bool fixed;
    pl_sleep lookup;
    pl_sleep deadline;
    race2 race;
} fetcher;

static pl_poll_result fetcher_poll(pl_future *f, pl_context *cx)
{
    fetcher *self = (fetcher *)f;
    PL_ASYNC_BEGIN(self);
    self->lookup = pl_sleep_for(2 * PL_MS);
    self->deadline = pl_sleep_for(3 * PL_MS);
    self->race = (race2){.base = PL_FUTURE_INIT(&race2_vt),
                         .child = {&self->lookup.base, &self->deadline.base},
                         .fixed = self->fixed};
    PL_AWAIT(cx, &self->race);
    self->st->winner = self->race.winner;
    self->st->finished = true;
    PL_ASYNC_END;
}

/* The race owns its children: dropping it releases them. */
static void fetcher_drop(pl_future *f)
{
    fetcher *self = (fetcher *)f;
    if (self->race.base.vtable != NULL) {
        pl_drop(&self->race.base);
    }
}

static const pl_future_vtable fetcher_vt = {"fetcher", fetcher_poll, fetcher_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int setup(pl_executor *ex, race_state *st, bool fixed)
{
    fetcher t = {.base = PL_FUTURE_INIT(&fetcher_vt), .st = st, .fixed = fixed};
    return PL_SPAWN(ex, t, "fetcher", NULL);
}

static int setup_buggy(pl_executor *ex, void *state) { return setup(ex, state, false); }

static int setup_fixed(pl_executor *ex, void *state) { return setup(ex, state, true); }

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    race_state *st = state;
    if (!st->finished) {
        return pl_check_fail(msg, len, "the fetch never finished");
    }
    return 0;
}

PL_SCENARIO(bug_race_double_drop_sc, .name = "bug_race_double_drop",
            .summary = "hand-written race drops its loser again in its own drop (double drop)",
            .state_size = sizeof(race_state), .setup = setup_buggy, .check = check,
            .expect = "double_drop");

PL_SCENARIO(fix_race_double_drop_sc, .name = "fix_race_double_drop",
            .summary = "hand-written race drops each child once",
            .state_size = sizeof(race_state), .setup = setup_fixed, .check = check);
