/* sim/src/cli/main.c: pl_main, the `pollen` command line: the command
 * table, dispatch, `help` and `version`.
 *
 * The CLI (with budget.c's poll budget) is the part of pollen that forks,
 * handles signals and reads a wall clock, so that a crash or a hang in
 * user code costs a finding, never the whole campaign. Its files, one concern each, share
 * cli_internal.h; the pure helpers they use are in cli.h (text.c). */
#include "cli_internal.h"

static int cmd_help(cli *c, int argc, char **argv)
{
    if (argc > 1) {
        return usage_error(c, "help", "one command at a time");
    }
    return pl__cli_show_help(c, argc == 1 ? argv[0] : NULL);
}

static int cmd_version(cli *c, int argc, char **argv)
{
    (void)argv;
    if (argc > 0) {
        char hint[96];
        snprintf(hint, sizeof hint, "'%s version' takes no arguments", c->prog);
        return pl__cli_usage_hint(c, "version", hint, "unexpected argument '%s'", argv[0]);
    }
    printf("%s %s\n", c->prog, PL_VERSION_STRING);
    return fflush(stdout) == 0 ? ST_CLEAN : ST_INTERNAL;
}

typedef struct command {
    const char *name;
    int (*fn)(cli *c, int argc, char **argv);
} command;

static const command commands[] = {
    {"list", pl__cli_cmd_list},     {"run", pl__cli_cmd_run}, {"replay", pl__cli_cmd_replay},
    {"shrink", pl__cli_cmd_shrink}, {"why", pl__cli_cmd_why},  {"merge", pl__cli_cmd_merge},
    {"help", cmd_help},             {"version", cmd_version},
};

static int unknown_command(const cli *c, const char *name)
{
    const char *best = NULL;
    size_t best_d = 3;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        size_t d = pl__cli_distance(name, commands[i].name, 3);
        if (d < best_d) {
            best_d = d;
            best = commands[i].name;
        }
    }
    if (name[0] == '-') {
        return usage_error(c, NULL, "unknown option '%s'", name);
    }
    if (best != NULL) {
        return usage_error(c, NULL, "unknown command '%s' (did you mean '%s'?)", name, best);
    }
    return usage_error(c, NULL, "unknown command '%s'", name);
}

/* Nothing to run is almost always a link problem, not a choice: the
 * scenarios were compiled into a static library whose objects the linker
 * dropped, since nothing refers to a PL_SCENARIO. An empty table with
 * status 0 would let a CI job pass without testing anything. */
static int no_scenarios(const cli *c)
{
    fprintf(stderr,
            "%s: error: no scenarios are linked into this program\n"
            "  PL_SCENARIO registers a scenario in a linker section that nothing refers to,\n"
            "  so the linker drops the objects of a static library that hold them.\n"
            "  Link the library whole:\n"
            "    meson:  executable(..., link_whole: my_scenarios)\n"
            "    cc/ld:  -Wl,--whole-archive libmy_scenarios.a -Wl,--no-whole-archive\n"
            "  or put PL_SCENARIO_FILE(tag) in each scenario file and PL_SCENARIO_USE(tag)\n"
            "  next to main() (pollen/sim.h).\n",
            c->prog);
    return ST_USAGE;
}

static bool needs_scenarios(const char *arg)
{
    static const char *const without[] = {"help", "--help", "-h", "version", "--version"};
    for (size_t i = 0; i < sizeof without / sizeof without[0]; i++) {
        if (strcmp(arg, without[i]) == 0) {
            return false;
        }
    }
    return true;
}

int pl_main(int argc, char **argv, const pl_scenario *const *extra)
{
    cli c;
    memset(&c, 0, sizeof c);
    c.argv0 = argc > 0 && argv[0] != NULL ? argv[0] : "pollen";
    const char *slash = strrchr(c.argv0, '/');
    pl__cli_escape(slash != NULL ? slash + 1 : c.argv0, false, c.prog_buf, sizeof c.prog_buf);
    c.prog = c.prog_buf;
    int rc = pl__cli_catalogue_init(&c, extra);
    if (rc != 0) {
        free(c.all);
        return rc;
    }
    if (c.nall == 0 && argc >= 2 && needs_scenarios(argv[1])) {
        rc = no_scenarios(&c);
    } else if (argc < 2) {
        pl__cli_put_text(stderr, pl__cli_help_main, c.prog);
        rc = ST_USAGE;
    } else if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        rc = pl__cli_show_help(&c, NULL);
    } else if (strcmp(argv[1], "--version") == 0) {
        rc = cmd_version(&c, 0, NULL);
    } else {
        rc = -1;
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
            if (strcmp(argv[1], commands[i].name) == 0) {
                rc = commands[i].fn(&c, argc - 2, argv + 2);
            }
        }
        rc = rc == -1 ? unknown_command(&c, argv[1]) : rc;
    }
    free(c.all);
    return rc;
}
