/* sim/src/cli/cmd_list.c: the scenario catalogue (registered and extra
 * scenarios), selection by name, glob or 'all', and the `list` command. */
#include "cli_internal.h"

/* A name the CLI can take on its command line and in file names. */
static bool valid_name(const char *name)
{
    static const char allowed[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
    return name != NULL && name[0] != '\0' && strspn(name, allowed) == strlen(name);
}

static bool known_kind(const char *name)
{
    for (int k = 1; k < PL_FINDING__COUNT; k++) {
        if (strcmp(name, pl_finding_name((pl_finding_kind)k)) == 0) {
            return true;
        }
    }
    return false;
}

/* A scenario the CLI could only misjudge: a name no command line can
 * select, or an .expect no run can meet (a typo such as "lost_wakeups"
 * would pass every campaign unnoticed). Returns 0 or ST_USAGE. */
static int catalogue_check(const cli *c, const pl_scenario *sc)
{
    if (!valid_name(sc->name)) {
        return pl__cli_usage_hint(c, NULL, "use lowercase letters, digits and '_'",
                                  "scenario name '%s' is not [a-z0-9_]+",
                                  pl__cli_safe_text(sc->name != NULL ? sc->name : "").s);
    }
    if (sc->expect == NULL || known_kind(sc->expect)) {
        return 0;
    }
    const char *best = NULL;
    size_t best_d = 4;
    for (int k = 1; k < PL_FINDING__COUNT; k++) {
        const char *name = pl_finding_name((pl_finding_kind)k);
        size_t d = pl__cli_distance(sc->expect, name, 4);
        if (d < best_d) {
            best_d = d;
            best = name;
        }
    }
    char hint[96] = "'--help' lists the finding kinds";
    if (best != NULL) {
        snprintf(hint, sizeof hint, "did you mean '%s'? '--help' lists the finding kinds", best);
    }
    return pl__cli_usage_hint(c, NULL, hint, "scenario '%s' expects '%s', which is no finding kind",
                              sc->name, pl__cli_safe_text(sc->expect).s);
}

static int catalogue_add(cli *c, const pl_scenario *sc)
{
    int rc = catalogue_check(c, sc);
    if (rc != 0) {
        return rc;
    }
    for (size_t i = 0; i < c->nall; i++) {
        if (c->all[i] == sc) {
            return 0;
        }
        if (strcmp(c->all[i]->name, sc->name) == 0) {
            return pl__cli_internal_error(c, NULL, "two different scenarios are named '%s'",
                                          sc->name);
        }
    }
    c->all[c->nall++] = sc;
    return 0;
}

int pl__cli_catalogue_init(cli *c, const pl_scenario *const *extra)
{
    size_t nreg = 0, nextra = 0;
    const pl_scenario *const *reg = pl_scenarios(&nreg);
    while (extra != NULL && extra[nextra] != NULL) {
        nextra++;
    }
    c->all = calloc(nreg + nextra + 1, sizeof *c->all);
    if (c->all == NULL) {
        return pl__cli_internal_error(c, NULL, "out of memory");
    }
    for (size_t i = 0; i < nreg + nextra; i++) {
        const pl_scenario *sc = i < nreg ? reg[i] : extra[i - nreg];
        int rc = sc != NULL ? catalogue_add(c, sc) : 0;
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

const pl_scenario *pl__cli_catalogue_find(const cli *c, const char *name)
{
    for (size_t i = 0; i < c->nall; i++) {
        if (strcmp(c->all[i]->name, name) == 0) {
            return c->all[i];
        }
    }
    return NULL;
}

int pl__cli_no_such_scenario(const cli *c, const char *cmd, const char *pattern)
{
    char hint[128];
    snprintf(hint, sizeof hint, "'%s list' shows them", c->prog);
    const char *best = NULL;
    size_t best_d = 4;
    for (size_t i = 0; i < c->nall; i++) {
        size_t d = pl__cli_distance(pattern, c->all[i]->name, 4);
        if (d < best_d) {
            best_d = d;
            best = c->all[i]->name;
        }
    }
    if (best != NULL) {
        return pl__cli_usage_hint(c, cmd, hint, "no scenario matches '%s' (did you mean '%s'?)",
                                  pattern, best);
    }
    return pl__cli_usage_hint(c, cmd, hint, "no scenario matches '%s'", pattern);
}

static bool selected(const pl_scenario *const *sel, size_t n, const pl_scenario *sc)
{
    for (size_t i = 0; i < n; i++) {
        if (sel[i] == sc) {
            return true;
        }
    }
    return false;
}

/* Resolves names, globs and 'all' into sel (room for c->nall), in the
 * order of the patterns, each scenario once. */
int pl__cli_select_scenarios(const cli *c, const char *cmd, char **pats, size_t npats,
                             const pl_scenario **sel, size_t *nsel)
{
    *nsel = 0;
    for (size_t p = 0; p < npats; p++) {
        bool glob = strpbrk(pats[p], "*?[") != NULL, all = strcmp(pats[p], "all") == 0;
        size_t matched = 0;
        for (size_t i = 0; i < c->nall; i++) {
            const char *name = c->all[i]->name;
            bool hit = all || (glob ? fnmatch(pats[p], name, 0) == 0 : strcmp(pats[p], name) == 0);
            if (hit) {
                matched++;
                if (!selected(sel, *nsel, c->all[i])) {
                    sel[(*nsel)++] = c->all[i];
                }
            }
        }
        if (matched == 0 && !(all && c->nall == 0)) {
            return pl__cli_no_such_scenario(c, cmd, pats[p]);
        }
    }
    return 0;
}

static const opt_spec list_specs[] = {
    {"json", 0, NULL},
    {"help", 'h', NULL},
    {NULL, 0, NULL},
};

static void list_text(const cli *c)
{
    int wname = 8, wexpect = 6;
    for (size_t i = 0; i < c->nall; i++) {
        const pl_scenario *sc = c->all[i];
        int n = (int)strlen(sc->name), e = sc->expect != NULL ? (int)strlen(sc->expect) : 1;
        wname = n > wname ? n : wname;
        wexpect = e > wexpect ? e : wexpect;
    }
    printf("%-*s  %-*s  %s\n", wname, "SCENARIO", wexpect, "EXPECT", "SUMMARY");
    for (size_t i = 0; i < c->nall; i++) {
        const pl_scenario *sc = c->all[i];
        printf("%-*s  %-*s  %s\n", wname, sc->name, wexpect,
               sc->expect != NULL ? sc->expect : "-", sc->summary != NULL ? sc->summary : "");
    }
}

static void list_json(const cli *c)
{
    for (size_t i = 0; i < c->nall; i++) {
        const pl_scenario *sc = c->all[i];
        fputs("{\"name\":", stdout);
        pl__cli_json_string(stdout, sc->name);
        fputs(",\"expect\":", stdout);
        if (sc->expect != NULL) {
            pl__cli_json_string(stdout, sc->expect);
        } else {
            fputs("null", stdout);
        }
        fputs(",\"summary\":", stdout);
        pl__cli_json_string(stdout, sc->summary != NULL ? sc->summary : "");
        fputs("}\n", stdout);
    }
}

int pl__cli_cmd_list(cli *c, int argc, char **argv)
{
    opts_iter it = {c, "list", list_specs, argc, argv, 0, false, {NULL}};
    bool json = false;
    const char *v;
    for (int id; (id = pl__cli_opts_next(&it, &v)) != OPT_END;) {
        if (id == OPT_ERROR) {
            return ST_USAGE;
        }
        if (id == OPT_POSITIONAL) {
            return usage_error(c, "list", "unexpected argument '%s'", v);
        }
        if (strcmp(list_specs[id].name, "help") == 0) {
            return pl__cli_show_help(c, "list");
        }
        json = true;
    }
    if (json) {
        list_json(c);
    } else {
        list_text(c);
    }
    return fflush(stdout) == 0 ? ST_CLEAN : ST_INTERNAL;
}
