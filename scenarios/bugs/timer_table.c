/* Zoo: a session table's expiry sweeper that re-arms its sleep on every poll.
 *
 * The primitive: `session_table`, a table of sessions that expire, and
 * the sweeper task that expires them. Each poll the sweeper reads the
 * whole table, expires the sessions that are due and sleeps until the
 * earliest expiry left (pl_sleep_reset), its waker stored in the table.
 * Three clients open a session each: "keepalive" at 0 for 40 ms,
 * "burst" at 5 ms for 5 ms, "late" at 20 ms for 10 ms. Four sweepers,
 * one per pair, differ only in their bookkeeping, all of it correct:
 *  - timer_table: re-arms its sleep on every poll, also to the deadline
 *    it is already armed for (a new arming number each time);
 *  - timer_table_later: re-arms only when the earliest expiry moved; the
 *    keepalive client pings at 35 ms, which extends its session to 75 ms
 *    without waking the sweeper (an extension never needs to: the
 *    sweeper wakes early, finds nothing due and sleeps on), so the next
 *    poll re-arms to a later deadline;
 *  - timer_table_count: counts its polls in its future (statistics);
 *  - timer_table_clock: keeps the time of its latest poll in its future;
 *    the keepalive client pings at 25 ms, while the earliest expiry is
 *    late's (30 ms), so the sweeper sleeps on as it was, and a poll at
 *    25 ms only refreshes that time.
 * A poll of a parked sweeper that nothing woke changes its bytes in each
 * of them, and changes nothing that matters: the simulator's probe must
 * not take that for progress (it used to report each as a lost wakeup,
 * at seed 0).
 *
 * BUG (bug_timer_table, bug_timer_table_later, bug_timer_table_count,
 * bug_timer_table_clock): session_open wakes the sweeper only when the
 * table held no open session ("otherwise it is sleeping on a timer and
 * will read the table when that fires"). But its timer is armed for the
 * earliest expiry it saw; a new session that expires sooner waits for
 * that timer: "burst" opens at 5 ms for 5 ms while the sweeper sleeps
 * until 40 ms, and is expired 30 ms late.
 * Why it is a bug: a sleeper that computed its deadline from a table
 * must be told when the table gains an earlier entry; the timer it armed
 * promises nothing about entries it never saw.
 * Finding: lost_wakeup. Before the 40 ms timer fires, a probe poll of the
 * sweeper reads the table and re-arms its sleep for an earlier deadline:
 * progress, and the report names the timer that woke it only at 40 ms.
 * FIX (fix_timer_table, ...): session_open always wakes the sweeper.
 */
#include "zoo.h"

enum { SESSIONS = 3 };

typedef enum sweep_style {
    SWEEP_EVERY_POLL = 0, /* re-arm on every poll, same deadline or not */
    SWEEP_ON_CHANGE = 1,  /* re-arm when the earliest expiry moved */
    SWEEP_COUNT = 2,      /* on change, and count polls */
    SWEEP_CLOCK = 3,      /* on change, and keep the latest poll's time */
} sweep_style;

typedef struct session {
    bool open;
    pl_time expiry_ns;
    pl_time expired_at_ns;
} session;

typedef struct session_table {
    session sessions[SESSIONS];
    int expired;
    pl_waker sweeper; /* the sweeper's waker, stored on each of its polls */
    bool fixed;
} session_table;

typedef struct table_state {
    session_table table;
    sweep_style style;
    pl_time ping_ns; /* when the keepalive client extends its session; 0: never */
} table_state;

static int pending(const session_table *tb)
{
    int n = 0;
    for (int i = 0; i < SESSIONS; i++) {
        n += tb->sessions[i].open;
    }
    return n;
}

static void session_open(session_table *tb, int i, pl_time expiry_ns)
{
    bool was_idle = pending(tb) == 0;
    tb->sessions[i].open = true;
    tb->sessions[i].expiry_ns = expiry_ns;
    /* BUG when !fixed: "it will read the table when its timer fires" */
    if ((tb->fixed || was_idle) && pl_waker_is_set(&tb->sweeper)) {
        pl_waker_wake_by_ref(&tb->sweeper);
    }
}

/* An extension needs no wake: the sweeper wakes at the old expiry at the
 * latest, finds the session not due and sleeps on. */
static void session_extend(session_table *tb, int i, pl_time expiry_ns)
{
    tb->sessions[i].expiry_ns = expiry_ns;
}

/* ---- The sweeper ------------------------------------------------------- */

typedef struct sweeper {
    pl_future base;
    table_state *st;
    pl_sleep sleep;  /* armed for the earliest expiry; never completes */
    uint64_t polls;  /* SWEEP_COUNT */
    pl_time seen_ns; /* SWEEP_CLOCK */
} sweeper;

/* Expires what is due; returns the earliest expiry left. */
static pl_time sweep(session_table *tb, pl_time now)
{
    pl_time next = PL_TIME_NEVER;
    for (int i = 0; i < SESSIONS; i++) {
        session *s = &tb->sessions[i];
        if (!s->open) {
            continue;
        }
        if (s->expiry_ns <= now) {
            s->open = false;
            s->expired_at_ns = now;
            tb->expired++;
        } else if (s->expiry_ns < next) {
            next = s->expiry_ns;
        }
    }
    return next;
}

static pl_poll_result sweeper_poll(pl_future *f, pl_context *cx)
{
    sweeper *w = (sweeper *)f;
    session_table *tb = &w->st->table;
    pl_time now = pl_now(cx->ex);
    if (w->st->style == SWEEP_COUNT) {
        w->polls++;
    } else if (w->st->style == SWEEP_CLOCK) {
        w->seen_ns = now;
    }
    pl_time next = sweep(tb, now);
    if (tb->expired == SESSIONS) {
        pl_waker_slot_clear(&tb->sweeper);
        return PL_READY;
    }
    pl_waker_slot_set(&tb->sweeper, &cx->waker);
    if (next == PL_TIME_NEVER) {
        return PL_PENDING; /* an open wakes it */
    }
    /* The sleep never completes: its deadline is always ahead of now,
     * and a reset clears a fired timer. */
    if (w->st->style == SWEEP_EVERY_POLL || next != w->sleep.deadline_ns ||
        !pl_timer_is_armed(&w->sleep.timer)) {
        pl_sleep_reset(&w->sleep, next);
    }
    (void)pl_poll(&w->sleep.base, cx);
    return PL_PENDING;
}

static void sweeper_drop(pl_future *f)
{
    sweeper *w = (sweeper *)f;
    pl_drop_child(&w->sleep.base);
    pl_waker_slot_clear(&w->st->table.sweeper);
}

static const pl_future_vtable sweeper_vt = {"sweeper", sweeper_poll, sweeper_drop};

/* ---- Clients ----------------------------------------------------------- */

typedef struct client {
    pl_future base;
    table_state *st;
    int i;
    pl_time start_ns;
    pl_time ttl_ns;
    pl_time ping_ns; /* 0: never pings */
    pl_sleep wait;
} client;

static pl_poll_result client_poll(pl_future *f, pl_context *cx)
{
    client *c = (client *)f;
    session_table *tb = &c->st->table;
    PL_ASYNC_BEGIN(c);
    c->wait = pl_sleep_until(c->start_ns);
    PL_AWAIT(cx, &c->wait);
    session_open(tb, c->i, pl_now(cx->ex) + c->ttl_ns);
    if (c->ping_ns != 0) {
        c->wait = pl_sleep_until(c->ping_ns);
        PL_AWAIT(cx, &c->wait);
        session_extend(tb, c->i, pl_now(cx->ex) + c->ttl_ns);
    }
    PL_ASYNC_END;
}

static void client_drop(pl_future *f) { pl_drop_child(&((client *)f)->wait.base); }

static const pl_future_vtable client_vt = {"client", client_poll, client_drop};

/* ---- Scenario ---------------------------------------------------------- */

static int spawn_client(pl_executor *ex, table_state *st, int i, const char *name,
                        pl_time start_ns, pl_time ttl_ns, pl_time ping_ns)
{
    client c = {.base = PL_FUTURE_INIT(&client_vt), .st = st, .i = i, .start_ns = start_ns,
                .ttl_ns = ttl_ns, .ping_ns = ping_ns};
    return PL_SPAWN(ex, c, name, NULL);
}

static int setup(pl_executor *ex, void *state, sweep_style style, bool fixed)
{
    table_state *st = state;
    st->table.fixed = fixed;
    st->table.sweeper = PL_WAKER_EMPTY;
    st->style = style;
    /* At 35 ms the extension moves the earliest expiry later; at 25 ms it
     * extends a session that is not the earliest, so only time passes. */
    st->ping_ns = style == SWEEP_ON_CHANGE ? 35 * PL_MS : style == SWEEP_CLOCK ? 25 * PL_MS : 0;
    pl_time t0 = pl_now(ex);
    sweeper w = {.base = PL_FUTURE_INIT(&sweeper_vt), .st = st,
                 .sleep = pl_sleep_until(PL_TIME_NEVER)};
    int rc = PL_SPAWN(ex, w, "sweeper", NULL);
    rc = rc != 0 ? rc
                 : spawn_client(ex, st, 0, "keepalive", t0, 40 * PL_MS,
                                st->ping_ns != 0 ? t0 + st->ping_ns : 0);
    rc = rc != 0 ? rc : spawn_client(ex, st, 1, "burst", t0 + 5 * PL_MS, 5 * PL_MS, 0);
    return rc != 0 ? rc : spawn_client(ex, st, 2, "late", t0 + 20 * PL_MS, 10 * PL_MS, 0);
}

static int check(pl_executor *ex, void *state, char *msg, size_t len)
{
    (void)ex;
    const session_table *tb = &((table_state *)state)->table;
    if (tb->expired != SESSIONS) {
        return pl_check_fail(msg, len, "%d of %d sessions expired", tb->expired, SESSIONS);
    }
    for (int i = 0; i < SESSIONS; i++) {
        const session *s = &tb->sessions[i];
        if (s->expired_at_ns < s->expiry_ns) {
            return pl_check_fail(msg, len, "session %d expired at %lld ns, before %lld ns", i,
                                 (long long)s->expired_at_ns, (long long)s->expiry_ns);
        }
    }
    return 0;
}

/* The setups of one pair. The scenarios are written out below, each
 * `.name = "..."` literal: the fuzz build reads the names from the text. */
#define TABLE_SETUPS(id, style)                                                                  \
    static int setup_bug_##id(pl_executor *ex, void *state)                                    \
    {                                                                                            \
        return setup(ex, state, style, false);                                                   \
    }                                                                                            \
    static int setup_fix_##id(pl_executor *ex, void *state)                                    \
    {                                                                                            \
        return setup(ex, state, style, true);                                                    \
    }

TABLE_SETUPS(timer_table, SWEEP_EVERY_POLL)
TABLE_SETUPS(timer_table_later, SWEEP_ON_CHANGE)
TABLE_SETUPS(timer_table_count, SWEEP_COUNT)
TABLE_SETUPS(timer_table_clock, SWEEP_CLOCK)

PL_SCENARIO(bug_timer_table_sc, .name = "bug_timer_table",
            .summary = "expiry sweeper (re-arms on every poll) "
                       "is not woken for an earlier session (lost wakeup)",
            .state_size = sizeof(table_state), .setup = setup_bug_timer_table, .check = check,
            .expect = "lost_wakeup");
PL_SCENARIO(fix_timer_table_sc, .name = "fix_timer_table",
            .summary = "expiry sweeper (re-arms on every poll) woken by every open",
            .state_size = sizeof(table_state), .setup = setup_fix_timer_table, .check = check);

PL_SCENARIO(bug_timer_table_later_sc, .name = "bug_timer_table_later",
            .summary = "expiry sweeper (re-arms later after an extension) "
                       "is not woken for an earlier session (lost wakeup)",
            .state_size = sizeof(table_state), .setup = setup_bug_timer_table_later,
            .check = check,
            .expect = "lost_wakeup");
PL_SCENARIO(fix_timer_table_later_sc, .name = "fix_timer_table_later",
            .summary = "expiry sweeper (re-arms later after an extension) woken by every open",
            .state_size = sizeof(table_state), .setup = setup_fix_timer_table_later,
            .check = check);

PL_SCENARIO(bug_timer_table_count_sc, .name = "bug_timer_table_count",
            .summary = "expiry sweeper (counts its polls) "
                       "is not woken for an earlier session (lost wakeup)",
            .state_size = sizeof(table_state), .setup = setup_bug_timer_table_count,
            .check = check,
            .expect = "lost_wakeup");
PL_SCENARIO(fix_timer_table_count_sc, .name = "fix_timer_table_count",
            .summary = "expiry sweeper (counts its polls) woken by every open",
            .state_size = sizeof(table_state), .setup = setup_fix_timer_table_count,
            .check = check);

PL_SCENARIO(bug_timer_table_clock_sc, .name = "bug_timer_table_clock",
            .summary = "expiry sweeper (keeps its latest poll's time) "
                       "is not woken for an earlier session (lost wakeup)",
            .state_size = sizeof(table_state), .setup = setup_bug_timer_table_clock,
            .check = check,
            .expect = "lost_wakeup");
PL_SCENARIO(fix_timer_table_clock_sc, .name = "fix_timer_table_clock",
            .summary = "expiry sweeper (keeps its latest poll's time) woken by every open",
            .state_size = sizeof(table_state), .setup = setup_fix_timer_table_clock,
            .check = check);
