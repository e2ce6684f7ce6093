/* sim/src/run.c: one run of a scenario, replay files, registry.
 *
 * A run: set up the simulator, let the scenario spawn its tasks, run the
 * executor to quiescence, consult the oracles, then tear down in an
 * order that frees everything even when tasks are stuck: cancel the
 * tasks (their drops release wakers), tear the scenario down, count
 * leaks, destroy the executor.
 */
#include <stdarg.h>
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

/* ---- Registry --------------------------------------------------------- */

extern const pl_scenario *const __start_pl_scenarios[] __attribute__((weak));
extern const pl_scenario *const __stop_pl_scenarios[] __attribute__((weak));

const pl_scenario *const *pl_scenarios(size_t *count)
{
    if (__start_pl_scenarios == NULL || __stop_pl_scenarios == NULL) {
        *count = 0;
        return NULL;
    }
    *count = (size_t)(__stop_pl_scenarios - __start_pl_scenarios);
    return __start_pl_scenarios;
}

const pl_scenario *pl_scenario_find(const char *name)
{
    size_t n;
    const pl_scenario *const *all = pl_scenarios(&n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(all[i]->name, name) == 0) {
            return all[i];
        }
    }
    return NULL;
}

int pl_check_fail(char *msg, size_t msg_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msg_len, fmt, ap);
    va_end(ap);
    return 1;
}

static const char *const finding_names[PL_FINDING__COUNT] = {
    "none",      "orphan",     "lost_wakeup", "deadlock", "stale_waker",
    "poll_after_ready", "double_drop", "waker_leak", "task_leak", "livelock",
    "assertion", "nondeterminism", "crash", "linearizability",
};

const char *pl_finding_name(pl_finding_kind kind)
{
    return (unsigned)kind < PL_FINDING__COUNT ? finding_names[kind] : "unknown";
}

int pl_finding_from_name(const char *name)
{
    for (int k = 0; k < PL_FINDING__COUNT; k++) {
        if (strcmp(finding_names[k], name) == 0) {
            return k;
        }
    }
    return PL_EINVAL;
}

/* ---- Options ---------------------------------------------------------- */

void pl_sim_options_default(pl_sim_options *o)
{
    memset(o, 0, sizeof *o);
    o->strategy = "random";
    o->rotate_wakers = true;
    o->keep_decisions = true;
}

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

static const pl__sim_judges judges = {
    .point = judge_point,
    .before_injection = pl__probe_before_injection,
    .time_limit = pl__probe_time_limit,
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
    pl__nodes_free(s);
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
}

/* ---- One run ---------------------------------------------------------- */

static void set_name_blob(pl__run_record *rec, const pl__sim *s)
{
    size_t len = 0;
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        const char *n = s->tasks.info[id].kind->name != NULL ? s->tasks.info[id].kind->name : "?";
        len += strlen(n) + 1;
    }
    rec->names_blob = malloc(len ? len : 1);
    if (rec->names_blob == NULL) {
        return;
    }
    char *p = rec->names_blob;
    for (uint32_t id = 1; id <= s->tasks.spawned; id++) {
        const char *n = s->tasks.info[id].kind->name != NULL ? s->tasks.info[id].kind->name : "?";
        size_t l = strlen(n) + 1;
        memcpy(p, n, l);
        p += l;
    }
    /* Both loops read the same names: the sizes agree. */
    PL__SIM_ASSERT((size_t)(p - rec->names_blob) == len);
    rec->names_len = len;
    rec->names_count = s->tasks.spawned;
    /* Without it the timeline only lacks the sites: not worth failing
     * the record. */
    rec->spawn_sites = calloc(s->tasks.spawned ? s->tasks.spawned : 1, sizeof *rec->spawn_sites);
    for (uint32_t id = 1; rec->spawn_sites != NULL && id <= s->tasks.spawned; id++) {
        rec->spawn_sites[id - 1].where = s->tasks.info[id].kind->where;
        rec->spawn_sites[id - 1].func = s->tasks.info[id].kind->func;
    }
}

const char *pl__run_spawn_site(void *ud, uint32_t id, const char **func)
{
    const pl__run_record *rec = ud;
    *func = NULL;
    if (rec == NULL || rec->spawn_sites == NULL || id == 0 || id > rec->names_count ||
        rec->spawn_sites[id - 1].where == NULL) {
        return NULL;
    }
    *func = rec->spawn_sites[id - 1].func;
    return pl__site_base(rec->spawn_sites[id - 1].where);
}

const char *pl__run_task_name(const pl__run_record *rec, uint32_t id)
{
    if (rec == NULL || rec->names_blob == NULL || id == 0 || id > rec->names_count) {
        return NULL;
    }
    const char *p = rec->names_blob;
    for (uint32_t i = 1; i < id; i++) {
        p += strlen(p) + 1;
    }
    /* names_count names fill names_len bytes: name id starts inside. */
    PL__SIM_ASSERT(p < rec->names_blob + rec->names_len);
    return p;
}

static void *dup_array(const void *src, size_t n, size_t size)
{
    if (src == NULL || n == 0) {
        return NULL;
    }
    void *dst = malloc(n * size);
    if (dst != NULL) {
        memcpy(dst, src, n * size);
    }
    return dst;
}

static void free_record(pl__run_record *rec)
{
    if (rec != NULL) {
        free(rec->decisions);
        free(rec->checkpoints);
        free(rec->events);
        free(rec->names_blob);
        free(rec->spawn_sites);
        free(rec->texts);
        free(rec->notes);
        free(rec->buggify);
        free(rec->files_blob);
        free(rec);
    }
}

/* True when copying n elements from src should have produced dst. */
static bool dup_failed(const void *dst, const void *src, size_t n)
{
    return dst == NULL && src != NULL && n > 0;
}

static pl__run_record *make_record(pl__sim *s, const pl_scenario *sc)
{
    pl__run_record *rec = calloc(1, sizeof *rec);
    if (rec == NULL) {
        return NULL;
    }
    size_t nd, nc, ne;
    /* The decisions move over (the run is finished): a run's longest
     * array is not copied once more. */
    rec->decisions = pl__dec_take_records(&s->dec, &nd);
    const uint64_t *cp = pl__trace_checkpoints(s->trace, &nc);
    const pl__trace_rec *ev = pl__trace_log(s->trace, &ne, NULL);
    rec->checkpoints = dup_array(cp, nc, sizeof *cp);
    rec->events = dup_array(ev, ne, sizeof *ev);
    size_t nt;
    const char *texts = pl__trace_texts(s->trace, &nt);
    rec->texts = dup_array(texts, nt, 1);
    rec->texts_len = rec->texts != NULL ? nt : 0;
    rec->buggify = dup_array(s->buggify.sites, s->buggify.len, sizeof *s->buggify.sites);
    if (dup_failed(rec->checkpoints, cp, nc) || dup_failed(rec->events, ev, ne) ||
        dup_failed(rec->texts, texts, nt) ||
        dup_failed(rec->buggify, s->buggify.sites, s->buggify.len)) {
        /* A record missing its decisions would replay and shrink as a
         * run that decided nothing; no record is what readers expect
         * when memory ran out. */
        free_record(rec);
        return NULL;
    }
    rec->decisions_len = rec->decisions != NULL ? nd : 0;
    rec->decisions_truncated = s->dec.truncated;
    rec->checkpoints_len = rec->checkpoints != NULL ? nc : 0;
    rec->events_len = rec->events != NULL ? ne : 0;
    rec->buggify_len = rec->buggify != NULL ? s->buggify.len : 0;
    memcpy(rec->consulted, s->dec.count, sizeof rec->consulted);
    memcpy(rec->deviated, s->dec.nonzero, sizeof rec->deviated);
    uint64_t consulted = 0;
    for (uint32_t k = 0; k < PL_DECIDE__COUNT; k++) {
        consulted += rec->consulted[k];
    }
    /* A kept list holds every consulted decision, or says it does not. */
    PL__SIM_ASSERT(rec->decisions == NULL || rec->decisions_truncated ||
                   rec->decisions_len == consulted);
    rec->knobs = s->dec.knobs;
    /* A copy, not snprintf: every run of a campaign makes a record. The
     * record is zeroed, so the name stays terminated when cut. */
    memcpy(rec->scenario, sc->name, strnlen(sc->name, sizeof rec->scenario - 1));
    set_name_blob(rec, s);
    rec->files_blob = pl__disk_run_names(s, &rec->files_len, &rec->files_count);
    PL__SIM_ASSERT(rec->names_blob == NULL || rec->names_count == s->tasks.spawned);
    PL__SIM_ASSERT(s->nodes.len <= sizeof rec->node_names / sizeof rec->node_names[0]);
    for (uint32_t n = 1; n < s->nodes.len; n++) {
        snprintf(rec->node_names[n], sizeof rec->node_names[n], "%s", pl__node_name(&s->nodes, n));
    }
    return rec;
}

const pl__run_record *pl__sim_result_record(const pl_sim_result *r) { return r->internal; }

const pl__site *pl__run_buggify_site(const pl__run_record *rec, uint64_t key)
{
    /* A run meets few sites: a scan beats keeping the index. */
    for (size_t i = 0; rec != NULL && i < rec->buggify_len; i++) {
        if (rec->buggify[i].key == key) {
            return &rec->buggify[i];
        }
    }
    return NULL;
}

void pl_sim_result_free(pl_sim_result *r)
{
    free_record(r->internal);
    r->internal = NULL;
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
    pl__props_verdict(s);
    pl__history_verdict(s);
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
    fill_result(s, out);
    out->internal = make_record(s, sc);
    pl__sim_finish(s);
    if (s->probe.follow_wanted) {
        follow_up(sc, s, out);
    }
    free(state);
    return 0;
}

/* ---- PCT's horizon --------------------------------------------------
 * Measured here, before a run, by whoever starts runs: pl_sim_run for a
 * caller that passed none, pl_sim_campaign once per campaign. The
 * measuring runs are runs like any other (pl__sim_run_captured), with a
 * horizon given, so none of them measures again. */

/* The measuring runs must not count as coverage of pl_sometimes sites. */
static uint32_t *save_sometimes(size_t *count)
{
    pl__sometimes_site *sites = pl__sometimes_sites(count);
    uint32_t *saved = *count ? malloc(*count * 2 * sizeof *saved) : NULL;
    for (size_t i = 0; saved != NULL && i < *count; i++) {
        saved[2 * i] = sites[i].hits;
        saved[2 * i + 1] = sites[i].reached;
    }
    return saved;
}

static void restore_sometimes(uint32_t *saved, size_t count)
{
    size_t n;
    pl__sometimes_site *sites = pl__sometimes_sites(&n);
    for (size_t i = 0; saved != NULL && i < count && i < n; i++) {
        sites[i].hits = saved[2 * i];
        sites[i].reached = saved[2 * i + 1];
    }
    free(saved);
}

/* The production run: an empty list (every value 0) with only schedule
 * decisions consulted, so result.decisions counts exactly those. Values
 * are all 0 either way, so the knobs change what is counted, not what
 * the run does. */
static int measure_production(const pl_scenario *sc, const pl_sim_options *o, uint32_t *tasks,
                              uint64_t *steps)
{
    pl_sim_options m = *o;
    m.source = PL_SIM_SOURCE_LIST;
    m.decisions = NULL;
    m.decisions_len = 0;
    m.strategy = "random";
    m.knobs = "schedule=on,io_order=off,timer_order=off,timer_late=off,spurious_wake=off,"
              "spurious_poll=off,wake_delay=off,cancel=off,io_fault=off,io_latency=off,"
              "buggify_site=off,buggify_fire=off,disk_latency=off,disk_fault=off,"
              "disk_corrupt=off,disk_lose=off";
    m.keep_events = false;
    m.keep_decisions = false;
    pl_sim_result r;
    int rc = pl__sim_run_captured(sc, &m, NULL, &r);
    if (rc == 0) {
        *tasks = r.tasks;
        *steps = r.decisions;
    }
    pl_sim_result_free(&r);
    return rc;
}

/* Schedule decisions of a finished run, from its record (a lower bound
 * when the recorder hit its cap). */
static uint64_t schedule_steps(const pl_sim_result *r)
{
    const pl__run_record *rec = pl__sim_result_record(r);
    uint64_t n = 0;
    for (size_t i = 0; rec != NULL && i < rec->decisions_len; i++) {
        n += rec->decisions[i].kind == PL_DECIDE_SCHEDULE;
    }
    return n;
}

/* PCT runs are often much longer than production's (a task of high rank
 * runs until it blocks, a spinner spins until it is demoted), and change
 * points drawn over the production run never reach their later steps.
 * So the horizon is also measured on PCT_CALIBRATION_RUNS runs of PCT
 * itself (seeds 0.., change points over the production horizon, the
 * caller's knobs): the longest of them all. A function of the scenario,
 * depth and knobs alone, so every seed of a campaign, and a rerun of one,
 * uses the same horizon. */
#define PCT_CALIBRATION_RUNS 8u

static int measure_pct_runs(const pl_scenario *sc, const pl_sim_options *o, uint32_t depth,
                            uint32_t *tasks, uint64_t *steps)
{
    pl_sim_options m = *o;
    char spec[64];
    snprintf(spec, sizeof spec, "pct:%u:%llu", depth,
             (unsigned long long)(*steps > 0 ? *steps : 1));
    m.source = PL_SIM_SOURCE_SEED;
    m.strategy = spec;
    m.keep_events = false;
    m.keep_decisions = true;
    int rc = 0;
    for (uint64_t seed = 0; seed < PCT_CALIBRATION_RUNS && rc == 0; seed++) {
        m.seed = seed;
        pl_sim_result r;
        rc = pl__sim_run_captured(sc, &m, NULL, &r);
        if (rc == 0) {
            uint64_t k = schedule_steps(&r);
            *steps = k > *steps ? k : *steps;
            *tasks = r.tasks > *tasks ? r.tasks : *tasks;
        }
        pl_sim_result_free(&r);
    }
    return rc;
}

/* PCT's depth in the caller's options; 3, a common choice, otherwise. */
static uint32_t pct_depth_of(const pl_sim_options *o)
{
    pl__strategy_spec spec;
    if (pl__strategy_parse(o->strategy, &spec, NULL, 0) == 0 && spec.kind == PL__STRATEGY_PCT) {
        return spec.depth;
    }
    return 3;
}

int pl_sim_pct_estimate(const pl_scenario *sc, const pl_sim_options *opts, uint32_t *tasks,
                        uint64_t *steps)
{
    pl_sim_options o;
    if (opts != NULL) {
        o = *opts;
    } else {
        pl_sim_options_default(&o);
    }
    size_t nsites;
    uint32_t *saved = save_sometimes(&nsites);
    int rc = measure_production(sc, &o, tasks, steps);
    if (rc == 0) {
        rc = measure_pct_runs(sc, &o, pct_depth_of(&o), tasks, steps);
    }
    restore_sometimes(saved, nsites);
    return rc;
}

int pl__resolve_pct_horizon(const pl_scenario *sc, pl_sim_options *o)
{
    if (!pl__strategy_needs_horizon(o)) {
        return 0;
    }
    uint32_t tasks;
    uint64_t steps;
    int rc = pl_sim_pct_estimate(sc, o, &tasks, &steps);
    if (rc == 0) {
        o->pct_horizon = steps > 0 ? steps : 1;
    }
    return rc;
}

int pl_sim_run(const pl_scenario *sc, const pl_sim_options *opts, pl_sim_result *out)
{
    pl_sim_options o;
    if (opts != NULL) {
        o = *opts;
    } else {
        pl_sim_options_default(&o);
    }
    int rc = pl__resolve_pct_horizon(sc, &o);
    if (rc != 0) {
        memset(out, 0, sizeof *out);
        return rc;
    }
    return pl__sim_run_captured(sc, &o, NULL, out);
}

/* ---- Replay files ----------------------------------------------------- */

const char *pl__run_build_id(void)
{
#if defined(__clang__)
    return "clang " __clang_version__
#elif defined(__GNUC__)
    return "gcc " __VERSION__
#else
    return "cc"
#endif
#if defined(__OPTIMIZE__)
           " optimized"
#endif
#if defined(__SANITIZE_ADDRESS__)
           " asan"
#endif
        ;
}

/* The file just written must parse back to the record it was written
 * from: a writer/parser mismatch would make every replay of it fail or,
 * worse, replay another run. A truncated list cannot be replayed (the
 * parser refuses it on purpose), so its file is not read back. Reading
 * it can still fail on its own (the file gone, memory): that is the
 * caller's error, not a broken invariant. */
static int check_round_trip(const pl__replay *rp, const char *path)
{
    if (rp->truncated && rp->decisions_len > 0) {
        return 0;
    }
    pl__replay back;
    char err[256];
    int rc = pl__replay_parse_file(path, &back, err, sizeof err);
    if (rc == PL_EFORMAT || rc == PL_EVERSION) {
        PL__SIM_ASSERT(!"a replay file as written does not parse");
    }
    if (rc == 0) {
        PL__SIM_ASSERT(pl__replay_same(rp, &back));
        pl__replay_free(&back);
    }
    return rc;
}

int pl_sim_write_replay(const pl_scenario *sc, const pl_sim_options *opts,
                        const pl_sim_result *r, const char *path)
{
    const pl__run_record *rec = r->internal;
    if (rec == NULL) {
        return PL_EINVAL;
    }
    pl__replay rp;
    pl__replay_init(&rp);
    rp.pollen_version = (char *)PL_VERSION_STRING;
    rp.build = (char *)pl__run_build_id();
    rp.scenario = (char *)sc->name;
    rp.seed = opts != NULL ? opts->seed : 0;
    rp.strategy = (char *)(opts != NULL && opts->strategy != NULL ? opts->strategy : "random");
    /* Through the text, as the file's reader will see them (a kind that
     * is off keeps no probability there). */
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    pl__dec_knobs_format(&rec->knobs, knobs, sizeof knobs);
    pl__dec_knobs_default(&rp.knobs);
    rp.has_knobs = pl__dec_knobs_parse(&rp.knobs, knobs, strlen(knobs), NULL, 0) == 0;
    rp.poll_cost_ns = opts != NULL ? opts->poll_cost_ns : 0;
    rp.time_limit_ns = opts != NULL ? opts->time_limit_ns : 0;
    rp.rotation_off = opts != NULL && !opts->rotate_wakers;
    rp.finding = r->finding.kind != PL_FINDING_NONE ? (char *)pl_finding_name(r->finding.kind)
                                                     : NULL;
    rp.message = r->finding.kind != PL_FINDING_NONE ? (char *)r->finding.message : NULL;
    rp.steps = r->steps;
    rp.events = r->events;
    rp.has_hash = true;
    rp.hash = r->hash;
    rp.truncated = rec->decisions_truncated;
    rp.checkpoints = rec->checkpoints;
    rp.checkpoints_len = rec->checkpoints_len;
    rp.decisions = rec->decisions;
    rp.decisions_len = rec->decisions_len;
    int rc = pl__replay_write_path(path, &rp);
    return rc == 0 ? check_round_trip(&rp, path) : rc;
}

/* The log entry of the i-th hashed event (the log also holds log-only
 * kinds, which checkpoints do not count), or NULL. */
static const pl__trace_rec *hashed_event(const pl__run_record *rec, size_t i)
{
    for (size_t k = 0; rec != NULL && k < rec->events_len; k++) {
        if (pl__trace_kind_hashed(rec->events[k].kind) && i-- == 0) {
            return &rec->events[k];
        }
    }
    return NULL;
}

/* Says where a replayed run left the recorded one. */
static void explain_divergence(const pl__replay *rp, const pl_sim_result *out, char *err,
                               size_t err_len)
{
    const pl__run_record *rec = out->internal;
    if (out->diverged) {
        snprintf(err, err_len, "the run diverged at %s", out->divergence);
        return;
    }
    size_t w = pl__trace_first_diff_window(rp->checkpoints, rp->checkpoints_len,
                                           rec != NULL ? rec->checkpoints : NULL,
                                           rec != NULL ? rec->checkpoints_len : 0);
    const pl__trace_rec *e = w != SIZE_MAX ? hashed_event(rec, w * 256) : NULL;
    if (e != NULL) {
        const char *name = pl__run_task_name(rec, e->task);
        snprintf(err, err_len,
                 "the trace differs within events %zu..%zu (step %llu, %.3f ms; that window "
                 "starts with %s of task %s); expected hash %016llx, got %016llx",
                 w * 256, w * 256 + 255, (unsigned long long)e->step, (double)e->time_ns / 1e6,
                 pl__trace_kind_name(e->kind), name != NULL ? name : "-",
                 (unsigned long long)rp->hash, (unsigned long long)out->hash);
        return;
    }
    snprintf(err, err_len, "expected hash %016llx and %s, got hash %016llx and %s",
             (unsigned long long)rp->hash, rp->finding != NULL ? rp->finding : "no finding",
             (unsigned long long)out->hash, pl_finding_name(out->finding.kind));
}

bool pl__replay_seed_only(const pl__replay *rp)
{
    return rp->decisions_len == 0 && rp->truncated;
}

int pl__replay_options(const pl__replay *rp, pl_sim_options *o, char *knobs, size_t knobs_len)
{
    pl_sim_options_default(o);
    o->seed = rp->seed;
    o->poll_cost_ns = rp->poll_cost_ns;
    o->time_limit_ns = rp->time_limit_ns;
    o->rotate_wakers = !rp->rotation_off;
    if (pl__replay_seed_only(rp)) {
        o->source = PL_SIM_SOURCE_SEED;
        o->strategy = rp->strategy != NULL ? rp->strategy : "random";
    } else {
        o->source = PL_SIM_SOURCE_LIST;
        o->decisions = rp->decisions;
        o->decisions_len = rp->decisions_len;
    }
    if (rp->has_knobs) {
        int n = pl__dec_knobs_format(&rp->knobs, knobs, knobs_len);
        if (n < 0 || (size_t)n >= knobs_len) {
            return PL_EINVAL;
        }
        o->knobs = knobs;
    }
    return 0;
}

int pl__replay_compare(const pl__replay *rp, const pl_sim_result *r, char *err, size_t err_len)
{
    const char *want = rp->finding;
    const char *got = r->finding.kind != PL_FINDING_NONE ? pl_finding_name(r->finding.kind) : NULL;
    if ((want == NULL) != (got == NULL) || (want != NULL && strcmp(want, got) != 0)) {
        snprintf(err, err_len, "expected %s, got %s%s%s", want != NULL ? want : "no finding",
                 got != NULL ? got : "no finding", r->diverged ? "; " : "",
                 r->diverged ? r->divergence : "");
        return 1;
    }
    bool hashed = rp->has_hash && !pl__replay_seed_only(rp);
    if ((hashed && rp->hash != r->hash) || r->diverged) {
        explain_divergence(rp, r, err, err_len);
        return 1;
    }
    return 0;
}

int pl_sim_replay_file(const char *path, pl_sim_result *out, char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    pl__replay rp;
    int rc = pl__replay_parse_file(path, &rp, err, err_len);
    if (rc != 0) {
        return rc;
    }
    const pl_scenario *sc = rp.scenario != NULL ? pl_scenario_find(rp.scenario) : NULL;
    if (sc == NULL) {
        snprintf(err, err_len, "%s: scenario '%s' is not linked into this program", path,
                 rp.scenario != NULL ? rp.scenario : "(none)");
        pl__replay_free(&rp);
        return PL_EFORMAT;
    }
    pl_sim_options o;
    char knobs[PL__DEC_KNOBS_TEXT_MAX];
    rc = pl__replay_options(&rp, &o, knobs, sizeof knobs);
    o.keep_events = true;
    if (rc == 0) {
        rc = pl_sim_run(sc, &o, out);
    }
    if (rc != 0) {
        snprintf(err, err_len, "%s: the run could not start: %s", path, pl_strerror(rc));
        pl__replay_free(&rp);
        return rc;
    }
    rc = pl__replay_compare(&rp, out, err, err_len);
    pl__replay_free(&rp);
    return rc;
}
