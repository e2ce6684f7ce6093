/* fuzz/fuzz_scenario.c: one scenario under libFuzzer.
 *
 * The input bytes are the run's decision stream (PL_SIM_SOURCE_BYTES):
 * each consulted decision takes a byte, an exhausted input answers 0,
 * which is production's order, so the all-zero input is the production
 * schedule. Every oracle is on; a finding aborts so libFuzzer keeps the
 * input, after printing the command that replays it.
 *
 * Built once per scenario: -DPL_FUZZ_SCENARIO="name" picks it.
 *
 * The target is also the pollen command line over the scenarios linked
 * into it: `fuzz_relay replay CRASH --scenario relay` is pl_main. A user's
 * target is the one binary known to hold the user's scenarios, so the
 * replay command a finding prints names it (argv[0]), not `pollen`, whose
 * binary holds only pollen's own scenarios.
 *
 * No extra feedback beyond code coverage: libFuzzer extra counters fed
 * with schedule features (task-after-task pairs mod 16, decision kinds
 * and values, wake outcomes) were tried on outbox_broadcast and made
 * the first finding slower (median 6,986 executions and 2.5 s over 11
 * libFuzzer seeds, against 4,242 and 1.0 s without), so they are gone;
 * fuzz/ttff.sh measures a candidate the same way.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "pollen/sim.h"

#ifndef PL_FUZZ_SCENARIO
#error "define PL_FUZZ_SCENARIO as the scenario's name in quotes"
#endif

/* Longer inputs are rejected, not truncated: `pollen replay` feeds the
 * whole file, and a crash file must mean the same run there. */
#define INPUT_MAX 4096

static const pl_scenario *scenario;
static const char *self = "./fuzz_" PL_FUZZ_SCENARIO; /* argv[0] once known */

static void list_scenarios(void)
{
    size_t n;
    const pl_scenario *const *all = pl_scenarios(&n);
    fprintf(stderr, "scenarios linked into this target:");
    for (size_t i = 0; i < n; i++) {
        fprintf(stderr, " %s", all[i]->name);
    }
    fprintf(stderr, "%s\n", n == 0 ? " none" : "");
    if (n == 0) {
        fprintf(stderr, "a static library's scenarios are dropped by the linker: link it with\n"
                        "link_whole: (meson) or -Wl,--whole-archive, or see PL_SCENARIO_USE\n");
    }
}

/* Writes s to f quoted for a POSIX shell when it needs it, so the
 * printed command can be pasted whatever the path holds. */
static void put_shell_word(FILE *f, const char *s)
{
    static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789_-+=.,/:@%";
    if (s[0] != '\0' && strspn(s, plain) == strlen(s)) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s != '\0'; s++) {
        if (*s == '\'') {
            fputs("'\\''", f);
        } else {
            fputc(*s, f);
        }
    }
    fputc('\'', f);
}

/* True when the first argument is a pollen command rather than an input:
 * one of pl_main's command names that is not an existing file or
 * directory (a corpus directory called `run` stays a corpus). */
static bool is_cli_command(const char *arg)
{
    static const char *const commands[] = {"list", "run",     "replay", "shrink",
                                           "help", "version", "--help", "--version"};
    struct stat st;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(arg, commands[i]) == 0) {
            return stat(arg, &st) != 0;
        }
    }
    return false;
}

/* libFuzzer starts with tiny inputs and lengthens them slowly
 * (-len_control). Here a short input means "production order after the
 * first few decisions", and bugs such as outbox_broadcast's need
 * decisions deep into the run: -len_control=0 found it after a median
 * of 4,242 executions (11 seeds) instead of 70,158 (9 seeds). Added
 * unless the user chose.
 * libFuzzer parses its flags after this function returns. */
static void default_len_control(int *argc, char ***argv)
{
    static char flag[] = "-len_control=0";
    /* Held here too: the driver may drop its last reference to the new
     * argv before exit, and LeakSanitizer would report it then. */
    static char **args;
    for (int i = 1; i < *argc; i++) {
        if (strncmp((*argv)[i], "-len_control=", 13) == 0) {
            return;
        }
    }
    args = malloc(((size_t)*argc + 2) * sizeof *args);
    if (args == NULL) {
        return;
    }
    memcpy(args, *argv, (size_t)*argc * sizeof *args);
    args[*argc] = flag;
    args[*argc + 1] = NULL;
    *argv = args; /* lives as long as the process, like argv itself */
    (*argc)++;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    if (*argc > 0 && (*argv)[0] != NULL) {
        self = (*argv)[0];
    }
    /* Before libFuzzer parses its flags, which it does after this returns. */
    if (*argc > 1 && is_cli_command((*argv)[1])) {
        exit(pl_main(*argc, *argv, NULL));
    }
    pl__fuzz_parse_flags(*argc, *argv);
    default_len_control(argc, argv);
    scenario = pl_scenario_find(PL_FUZZ_SCENARIO);
    if (scenario == NULL) {
        fprintf(stderr, "fuzz: scenario '%s' is not linked into this target\n", PL_FUZZ_SCENARIO);
        list_scenarios();
        exit(2);
    }
    return 0;
}

/* One run of the scenario on the input's bytes, every oracle on. Aborts
 * on a harness error: bad options are this file's bug. */
static void run(const uint8_t *data, size_t size, bool keep_decisions, pl_sim_result *res)
{
    pl_sim_options o;
    pl_sim_options_default(&o);
    o.source = PL_SIM_SOURCE_BYTES;
    o.bytes = data;
    o.bytes_len = size;
    o.keep_decisions = keep_decisions;
    int rc = pl_sim_run(scenario, &o, res);
    if (rc != 0) {
        fprintf(stderr, "fuzz: pl_sim_run failed: %s (%s)\n", pl_strerror(rc),
                res->finding.message);
        abort();
    }
}

/* Next to libFuzzer's crash file, a replay file of the same run: the
 * form `pollen shrink` and the regression tools read. Not when the
 * standalone driver replays a file, which may be a checked-in one. */
static void write_replay(const uint8_t *data, size_t size, const char *artifact)
{
    if (pl__fuzz_input_path != NULL) {
        return;
    }
    char path[600];
    snprintf(path, sizeof path, "%s.replay", artifact);
    pl_sim_options o;
    pl_sim_options_default(&o);
    pl_sim_result res;
    run(data, size, true, &res);
    if (pl_sim_write_replay(scenario, &o, &res, path) == 0) {
        fprintf(stderr, "  replay file: %s\n  shrink: ", path);
        put_shell_word(stderr, self);
        fputs(" shrink ", stderr);
        put_shell_word(stderr, path);
        fputc('\n', stderr);
    }
    pl_sim_result_free(&res);
}

/* Prints what was found and how to replay it, then aborts: the abort is
 * what makes libFuzzer save the input. */
static void report(const pl_finding *f, const uint8_t *data, size_t size)
{
    char path[512];
    pl__fuzz_artifact(data, size, path, sizeof path);
    fprintf(stderr,
            "\n==pollen== finding in scenario %s: %s\n"
            "  task: %u (%s), poll %u; step %llu, virtual time %.3f ms\n"
            "  message: %s\n"
            "  replay: ",
            scenario->name, pl_finding_name(f->kind), f->task_id,
            f->task_id != 0 ? f->task_name : "-", f->task_polls, (unsigned long long)f->step,
            (double)f->time_ns / 1e6, f->message);
    put_shell_word(stderr, self);
    fputs(" replay ", stderr);
    put_shell_word(stderr, path);
    fprintf(stderr, " --scenario %s\n", scenario->name);
    write_replay(data, size, path);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}

/* libFuzzer times each input from a SIGALRM handler that reads
 * clock_gettime on the run's thread. Inside a run that name reads virtual
 * time, and a virtual reading made libFuzzer judge every input timed out;
 * turning routing off for the whole target made the runs read the real
 * clock instead, so code that measures time (zoo lease_clock) lost its
 * determinism. The handler alone reads the real clock: wrapped, it turns
 * routing off around itself. */
static struct sigaction fuzzer_alarm;

static void alarm_on_real_clocks(int sig, siginfo_t *info, void *uc)
{
    bool was = pl_sim_route_clocks(false);
    if ((fuzzer_alarm.sa_flags & SA_SIGINFO) != 0) {
        fuzzer_alarm.sa_sigaction(sig, info, uc);
    } else {
        fuzzer_alarm.sa_handler(sig);
    }
    (void)pl_sim_route_clocks(was);
}

/* libFuzzer installs its handler after LLVMFuzzerInitialize and before
 * the first input, so the first input wraps it; -timeout=0 and the
 * standalone driver install none, and nothing is wrapped. */
static void wrap_fuzzer_alarm(void)
{
    static bool done;
    if (done) {
        return;
    }
    done = true;
    struct sigaction now;
    if (sigaction(SIGALRM, NULL, &now) != 0) {
        return;
    }
    bool handled = (now.sa_flags & SA_SIGINFO) != 0 ||
                   (now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN);
    if (!handled) {
        return;
    }
    fuzzer_alarm = now;
    struct sigaction wrapped = now;
    wrapped.sa_flags |= SA_SIGINFO;
    wrapped.sa_sigaction = alarm_on_real_clocks;
    if (sigaction(SIGALRM, &wrapped, NULL) != 0) {
        perror("fuzz: sigaction(SIGALRM)");
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wrap_fuzzer_alarm();
    if (size > INPUT_MAX) {
        return -1;
    }
    pl_sim_result res;
    /* Decisions are not recorded: the input itself is the replay. */
    run(data, size, false, &res);
    pl__fuzz_keep(res.hash ^ res.steps);
    pl_finding finding = res.finding;
    pl_sim_result_free(&res);
    if (finding.kind != PL_FINDING_NONE) {
        report(&finding, data, size);
    }
    return 0;
}
