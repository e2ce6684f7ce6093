/* sim/src/run.c: the world's life cycle and one run.
 *
 * A run: set up the simulator, let the scenario spawn its tasks, run the
 * executor to quiescence, consult the oracles, then tear down in an
 * order that frees everything even when tasks are stuck: cancel the
 * tasks (their drops release wakers), tear the scenario down, count
 * leaks, destroy the executor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_contract.h"
#include "check_history.h"
#include "check_leaks.h"
#include "disk/disk.h"
#include "env/env.h"
#include "isolate/mirror.h"
#include "isolate/progress.h"
#include "knobs_of.h"
#include "net/net.h"
#include "node.h"
#include "oracle.h"
#include "pollen/testing.h"
#include "run.h"
#include "run_record.h"
#include "sim_internal.h"
#include "strategy.h"

/* ---- The judges the world calls -------------------------------------- */

/* At a timer-quiescent point: the probes, then the one timer left, if one
 * is (check_rescue.c). */
static bool judge_point(pl__sim *s)
{
    if (pl__probe_point(s)) {
        return true;
    }
    pl__rescue_point(s);
    return false;
}

/* With a quiet phase, at its deadline or at the run's end if that comes
 * first: what never happened once faults stopped, the pl_eventually
 * sites first, then the scenario's liveness check. */
static void judge_liveness(pl__sim *s)
{
    pl__quiet *q = &s->quiet;
    PL__SIM_ASSERT(q->start_ns != 0 && !q->judged);
    q->judged = true;
    char when[128];
    pl__quiet_when(s, when, sizeof when);
    pl__props_verdict(s, PL_FINDING_LIVENESS, when);
    const pl_scenario *sc = s->scenario;
    char msg[512] = "";
    if (s->finding.kind == PL_FINDING_NONE && sc->liveness != NULL &&
        sc->liveness(s->ex, q->state, msg, sizeof msg) != 0) {
        pl__sim_finding(s, PL_FINDING_LIVENESS, NULL, "liveness check failed%s: %s", when,
                        msg[0] ? msg : "(no message)");
    }
}

static const pl__sim_judges judges = {
    .point = judge_point,
    .before_injection = pl__probe_before_injection,
    .time_limit = pl__probe_time_limit,
    .quiet_end = judge_liveness,
};

/* ---- The world's life cycle ------------------------------------------ */

static int init_decisions(pl__sim *s, const pl_sim_options *o, pl__capture *capture, char *err,
                          size_t err_len)
{
    pl__strategy_spec spec;
    if (pl__strategy_parse(o->strategy, &spec, err, err_len) != 0) {
        return PL_EINVAL;
    }
    pl__dec_knobs knobs;
    if (pl__sim_knobs_of(o, &knobs, err, err_len) != 0) {
        return PL_EINVAL;
    }
    pl__dec_init(&s->dec, &knobs);
    switch (o->source) {
    case PL_SIM_SOURCE_SEED:
        pl__dec_use_prng(&s->dec, o->seed);
        break;
    case PL_SIM_SOURCE_BYTES:
        pl__dec_use_bytes(&s->dec, o->bytes, o->bytes_len);
        break;
    case PL_SIM_SOURCE_LIST:
        pl__dec_use_list(&s->dec, o->decisions, o->decisions_len);
        break;
    case PL_SIM_SOURCE_LIST_BY_KIND:
        pl__dec_use_list_by_kind(&s->dec, o->decisions, o->decisions_len);
        break;
    case PL_SIM_SOURCE_PREFIX:
        pl__dec_use_prefix(&s->dec, o->decisions, o->decisions_len, o->prefix_seed);
        break;
    }
    if (!o->keep_decisions) {
        pl__dec_set_record_max(&s->dec, 0);
    }
    return pl__strategy_install(s, &spec, o, capture);
}

int pl__sim_init(pl__sim *s, const pl_scenario *sc, const pl_sim_options *o, pl__capture *capture,
                 char *err, size_t err_len)
{
    memset(s, 0, sizeof *s);
    s->scenario = sc;
    s->opts = *o;
    s->labels.on = capture != NULL; /* only a run that explains keeps words */
    s->system.vtable = &pl__sim_vtable;
    s->judges = &judges;
    s->system.self = s;
    s->time_limit_ns = o->time_limit_ns > 0    ? o->time_limit_ns
                       : sc->time_limit_ns > 0 ? sc->time_limit_ns
                                               : 3600 * PL_S;
    pl__contract_init(s, o);
    if (o->poll_cost_ns < 0 || o->poll_cost_ns > PL_SIM_POLL_COST_MAX) {
        snprintf(err, err_len, "poll cost %lld ns is outside 0..%lld ns",
                 (long long)o->poll_cost_ns, (long long)PL_SIM_POLL_COST_MAX);
        return PL_EINVAL;
    }
    if (o->faults != NULL && pl_sim_fault_options_validate(o->faults, err, err_len) != 0) {
        return PL_EINVAL;
    }
    if (pl__quiet_init(s, sc, err, err_len) != 0) {
        return PL_EINVAL;
    }
    pl__budget_init(&s->bounds, o);
    int rc = init_decisions(s, o, capture, err, err_len);
    if (rc != 0) {
        return rc;
    }
    pl__trace_options topts = {.keep_log = o->keep_events, .checkpoints = true};
    if (pl__trace_create(&s->trace, &topts) != 0 || pl__reactor_create(&s->reactor, s) != 0) {
        pl__sim_finish(s);
        return PL_ENOMEM;
    }
    pl_executor_options eo;
    pl_executor_options_default(&eo);
    eo.system = &s->system;
    eo.observer = &pl__sim_observer;
    eo.observer_ud = s;
    pl__oracle_watch_init(s);
    pl_sim_fault_options faults;
    pl__net_faults_of(o, &faults);
    pl_executor_testing_options to;
    pl_executor_testing_options_default(&to);
    to.rotate_wakers = o->rotate_wakers;
    to.poll_watch = &s->watch;
    to.timer_late_max = faults.timer_late_max;
    to.timer_late_quantum_ns = faults.timer_late_quantum_ns;
    eo.testing = &to;
    rc = pl_executor_create(&s->ex, &eo);
    if (rc != 0) {
        pl__sim_finish(s);
        return rc;
    }
    pl__threads_install(s);
    pl__sim_mirror_restart();
    pl__sim_ring_restart(s);
    pl__progress_run();
    pl__sim_set_current(s);
    pl__env_install(s);
    return 0;
}

void pl__sim_finish(pl__sim *s)
{
    if (pl__sim_current() == s) {
        pl__sim_set_current(NULL);
        pl__env_install(NULL);
    }
    pl__threads_executors_orphan(s);
    pl__threads_free(s);
    pl_executor_destroy(s->ex);
    s->ex = NULL;
    pl__threads_release_executors(s);
    pl__reactor_destroy(s->reactor);
    s->reactor = NULL;
    pl__disk_destroy(s->disk);
    s->disk = NULL;
    pl__nodes_free(&s->nodes);
    pl__trace_destroy(s->trace);
    s->trace = NULL;
    pl__dec_finish(&s->dec);
    pl__strategy_free(s->strategy);
    s->strategy = NULL;
    pl__tasks_free(s);
    pl__probe_free(&s->probe);
    pl__rescue_free(s);
    pl__site_table_free(&s->buggify);
    pl__props_free(&s->props);
    pl__history_free(&s->history);
    pl__bt_free(&s->bt);
    pl__label_free(&s->labels);
}

/* ---- The verdicts, once pl_run returned ---------------------------- */

/* A setup error says which call refused and why when a call of the
 * simulator's API recorded it; the code alone ("invalid argument") left
 * the user guessing which of the setup's calls failed. */
static void setup_failed(pl__sim *s, int rc)
{
    if (s->call_error[0] != '\0') {
        pl__sim_finding(s, PL_FINDING_ASSERTION, NULL, PL_SIM_SETUP_FAILED ": %s: %s",
                        pl_strerror(rc), s->call_error);
    } else {
        pl__sim_finding(s, PL_FINDING_ASSERTION, NULL,
                        PL_SIM_SETUP_FAILED ": %s (returned by the scenario's setup)",
                        pl_strerror(rc));
    }
}

/* A deadlock says who is stuck; the scenario's check usually says what
 * it costs (an item stranded, a reply never sent), so it is appended. */
static void annotate_deadlock(pl__sim *s, const pl_scenario *sc, void *state)
{
    char msg[512] = "";
    if (sc->check == NULL || sc->check(s->ex, state, msg, sizeof msg) == 0 || msg[0] == '\0') {
        return;
    }
    size_t used = strlen(s->finding.message);
    snprintf(s->finding.message + used, sizeof s->finding.message - used,
             "\n  and the scenario check fails: %s", msg);
}

static void scenario_check(pl__sim *s, const pl_scenario *sc, void *state)
{
    char msg[512] = "";
    if (sc->check != NULL && sc->check(s->ex, state, msg, sizeof msg) != 0) {
        pl__sim_finding(s, PL_FINDING_ASSERTION, NULL, "scenario check failed: %s",
                        msg[0] ? msg : "(no message)");
    }
}

static void judge(pl__sim *s, const pl_scenario *sc, void *state, int rc)
{
    PL__SIM_ASSERT(s->run_over); /* pl_run returned */
    if (rc == PL_EDEADLK) {
        pl__probe_quiescence(s);
    } else if (rc < 0 && rc != PL_ECANCELED) {
        pl__sim_finding(s, PL_FINDING_ASSERTION, NULL, "the executor failed: %s", pl_strerror(rc));
    }
    if (s->finding.kind == PL_FINDING_DEADLOCK || s->probe.stuck_finding) {
        annotate_deadlock(s, sc, state);
    }
    if (s->finding.kind != PL_FINDING_NONE) {
        return;
    }
    bool quiet = s->quiet.start_ns != 0;
    if (!quiet) {
        pl__props_verdict(s, PL_FINDING_ASSERTION, "");
    }
    pl__history_verdict(s);
    if (quiet && !s->quiet.judged && s->finding.kind == PL_FINDING_NONE) {
        judge_liveness(s); /* the run ended before the deadline */
    }
    if (s->finding.kind == PL_FINDING_NONE) {
        scenario_check(s, sc, state);
    }
}

/* pl_run under the escape of check_budget.c: a poll that spins is left
 * with a longjmp back here and its task abandoned. The escape is not
 * armed for judge(): a probe that spins is reported but not escaped,
 * since the probe holds memory of its own. Nothing this function
 * changes between setjmp and longjmp lives in a local. */
static void run_escapable(pl__sim *s, const pl_scenario *sc, void *state)
{
    jmp_buf escape;
    s->escape = &escape;
    if (setjmp(escape) != 0) {
        s->escape = NULL;
        s->run_over = true;
        s->polling = 0;
        s->polling_probe = false;
        pl__progress_idle();
        pl__executor_abandon_poll(s->ex);
        return;
    }
    int rc = pl_run(s->ex);
    /* An executor with nothing in flight returns without a wait, so the
     * other threads had no turn: they run now, and pl_run again if they
     * woke a task (threads/sched.c). */
    while (rc == PL_EDEADLK && pl__threads_active(&s->threads) && !s->stopped) {
        pl__threads_idle(s);
        if (s->stopped || (pl__executor_runnable_count(s->ex) == 0 && !s->remote_pending)) {
            break;
        }
        rc = pl_run(s->ex);
    }
    if (rc == 0 && pl__threads_active(&s->threads)) {
        pl__threads_finish_run(s); /* the threads still running end first */
    }
    s->escape = NULL;
    s->run_over = true;
    s->nodes.dropping = 0; /* the check runs on the scenario's own disk */
    if (s->assume.discarded) {
        return; /* its premise failed: nothing to judge */
    }
    judge(s, sc, state, rc);
    if (s->finding.kind == PL_FINDING_DEADLOCK && s->threads.len > 1) {
        pl__threads_annotate(s);
    }
}

_Static_assert(sizeof(((pl_sim_result *)0)->discarded_by) == sizeof(((pl__premise *)0)->by),
               "the result keeps the premise whole");

static void fill_result(pl__sim *s, pl_sim_result *out)
{
    pl__dec_check(&s->dec);
    pl__trace_check(s->trace);
    pl__tasks_check(s);
    out->finding = s->finding;
    out->discarded = s->assume.discarded;
    memcpy(out->discarded_by, s->assume.by, sizeof out->discarded_by);
    out->hash = pl__trace_hash(s->trace);
    out->steps = s->step;
    out->events = pl__trace_count(s->trace);
    out->time_ns = s->now;
    out->tasks = s->tasks.spawned;
    out->decisions = s->dec.consulted;
    for (int k = 0; k < PL_DECIDE__COUNT; k++) {
        out->nonzero_decisions += s->dec.nonzero[k];
    }
    const pl__dec_divergence *d = &s->dec.divergence;
    if (d->diverged) {
        out->diverged = true;
        snprintf(out->divergence, sizeof out->divergence,
                 "decision #%llu: the file recorded %s (n=%u, value %u), the run asked for "
                 "%s (n=%u)",
                 (unsigned long long)d->index, pl__dec_kind_name(d->expected_kind),
                 d->expected_n, d->expected_value, pl__dec_kind_name(d->asked_kind),
                 d->asked_n);
    }
}

/* What runs after the run was judged, in one order for every run: the
 * tasks are cancelled (their drops release wakers and handles), then the
 * scenario's teardown, then what the nodes and the scenario still hold
 * open goes as at a crash (node.h), so that the leak verdict and a
 * LeakSanitizer around many runs agree. */
static void wind_down(pl__sim *s, const pl_scenario *sc, void *state)
{
    pl_executor_cancel_all(s->ex);
    s->nodes.dropping = 0;
    if (sc->teardown != NULL) {
        sc->teardown(state);
    }
    pl__nodes_end_run(s);
}

/* A probe found that a task could have run although nothing woke it. A
 * second run of the same decisions, in which that probe does not happen,
 * shows what would have woken the task and when, so the report can say
 * how late the rescue came without anything the probe did leaking into
 * it. Runs only for such findings. */
static void follow_up(const pl_scenario *sc, const pl__sim *first, pl_sim_result *out)
{
    const pl__run_record *rec = out->internal;
    if (rec == NULL || rec->decisions_truncated || !first->opts.keep_decisions) {
        return;
    }
    pl_sim_options o = first->opts;
    o.source = PL_SIM_SOURCE_LIST;
    o.decisions = rec->decisions;
    o.decisions_len = rec->decisions_len;
    o.strategy = "random"; /* the record holds every value; the knobs say which kinds */
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    pl__dec_knobs_format(&rec->knobs, knobs, sizeof knobs);
    o.knobs = knobs;
    o.keep_events = false;
    o.keep_decisions = false;
    pl__sim sim; /* on the stack: see pl__sim_run_captured */
    pl__sim *s = &sim;
    void *state = calloc(1, sc->state_size ? sc->state_size : 1);
    char err[128];
    if (state == NULL || pl__sim_init(s, sc, &o, NULL, err, sizeof err) != 0) {
        free(state);
        return;
    }
    s->quiet.state = state;
    s->probe.follow = (pl__follow){
        .active = true, .task = first->probe.follow_task, .point = first->probe.follow_point};
    if (sc->setup(s->ex, state) == 0) {
        (void)pl_run(s->ex);
    }
    pl__follow f = s->probe.follow;
    uint32_t by = f.how == PL__WOKEN_BY_TIMER ? f.timer_armer : f.by_task;
    char by_name[96] = "";
    if (by != 0) {
        snprintf(by_name, sizeof by_name, "'%s' (#%u)", pl__tasks_name_of(s, by), by);
    }
    wind_down(s, sc, state);
    pl__sim_finish(s);
    free(state);
    pl__probe_follow_explain(&f, by != 0 ? by_name : NULL, out->finding.time_ns, &out->finding);
}

int pl__sim_run_captured(const pl_scenario *sc, const pl_sim_options *opts,
                         pl__capture *capture, pl_sim_result *out)
{
    memset(out, 0, sizeof *out);
    /* The simulator's own state lives on the stack: pl__sim_init zeroes
     * it anyway, and a heap block of its 4 KB per run was a fresh page
     * for every run under ASan, whose quarantine keeps freed blocks from
     * being reused (a page fault and a zeroing per run of a fuzzer). The
     * scenario's state stays on the heap, where ASan bounds it. */
    pl__sim sim;
    pl__sim *s = &sim;
    void *state = calloc(1, sc->state_size ? sc->state_size : 1);
    if (state == NULL) {
        return PL_ENOMEM;
    }
    int rc = pl__sim_init(s, sc, opts, capture, out->finding.message,
                          sizeof out->finding.message);
    if (rc != 0) {
        free(state);
        return rc;
    }
    s->quiet.state = state;
    rc = sc->setup(s->ex, state);
    if (rc != 0) {
        setup_failed(s, rc);
    } else {
        run_escapable(s, sc, state);
    }
    s->run_over = true;
    wind_down(s, sc, state);
    if (s->finding.kind == PL_FINDING_NONE && !s->assume.discarded) {
        pl__leaks_verdict(s);
    }
    pl__quiet_unmute(s); /* the record keeps the knobs the run began with */
    fill_result(s, out);
    out->internal = pl__run_record_make(s, sc);
    pl__sim_finish(s);
    if (s->probe.follow_wanted) {
        follow_up(sc, s, out);
    }
    free(state);
    return 0;
}
