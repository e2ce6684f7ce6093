/* sim/src/check_props.c: the property checker (pl_always, pl_eventually,
 * pl_sometimes) and the premise of a run (pl_assume).
 *
 * Event hooks: the property macros of sim.h call in here, and reach the
 * run through pl__sim_current(). pl_always fails at once; pl_eventually
 * keeps each site's latest evaluation in a site table, and the verdict
 * at the end of a clean run fails the sites whose latest evaluation was
 * false. pl_sometimes only counts, in the run's own counters: a site
 * never true over a whole campaign is the campaign's verdict, not a
 * run's, and the campaign sums its runs' counts from their records.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "check_props.h"
#include "sim_internal.h"

/* __FILE__ is the path the build passed to the compiler (a build
 * directory's "../../src/x.c"): a finding, and the replay file that
 * keeps it, name the file alone, the same from every build. */
static const char *file_name(const char *file)
{
    const char *slash = strrchr(file, '/');
    return slash != NULL ? slash + 1 : file;
}

/* The message is formatted here, never at the call site, so a holding
 * pl_always formats nothing. A finding's message is cut at its buffer
 * anyway: 512 bytes of the user's text are plenty. */
void pl__always_failed(const char *file, int line, const char *func, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        fprintf(stderr, "pollen: pl_always failed: %s (%s:%d, in %s)\n", msg, file, line, func);
        fflush(stderr);
        abort();
    }
    pl__sim_finding(s, PL_FINDING_ASSERTION, pl__sim_polled(s),
                    "pl_always failed: %s (%s:%d, in %s)", msg, file_name(file), line, func);
}

/* The run stops as at a finding, but is marked discarded instead: the
 * finding that a stopped run's last poll may still raise is not kept
 * (instance.c), nor is anything judged after it (run.c). */
void pl__assume(bool ok, const char *expr, const char *file, int line, const char *func)
{
    pl__sim *s = pl__sim_current();
    if (ok || s == NULL || s->assume.discarded || s->finding.kind != PL_FINDING_NONE) {
        return;
    }
    s->assume.discarded = true;
    snprintf(s->assume.by, sizeof s->assume.by, "pl_assume(%s) failed (%s:%d, in %s)", expr,
             file_name(file), line, func);
    s->stopped = true;
    if (s->ex != NULL) {
        pl_executor_stop(s->ex);
    }
}

void pl__eventually(bool ok, const char *msg, const char *file, int line, const char *func)
{
    pl__sim *s = pl__sim_current();
    if (s == NULL) {
        return;
    }
    bool created;
    pl__site *site = pl__site_lookup(&s->props.eventually, pl__site_key(file, line), &created);
    if (site == NULL) {
        /* A property the end of the run would not check must not pass. */
        pl__sim_finding(s, PL_FINDING_ASSERTION, pl__sim_polled(s),
                        "simulator out of memory: no room for pl_eventually site %s:%d (%s)",
                        file, line, func);
        return;
    }
    site->last_ok = ok;
    site->msg = msg;
    site->file = file;
    site->line = line;
    site->func = func;
}

void pl__props_verdict(pl__sim *s, pl_finding_kind kind, const char *when)
{
    PL__SIM_ASSERT(s->run_over || kind == PL_FINDING_LIVENESS);
    PL__SIM_ASSERT(s->props.eventually.len == s->props.eventually.index.count);
    for (size_t i = 0; i < s->props.eventually.len && s->finding.kind == PL_FINDING_NONE; i++) {
        const pl__site *site = &s->props.eventually.sites[i];
        if (!site->last_ok) {
            pl__sim_finding(s, kind, NULL, "pl_eventually never became true%s: %s (%s:%d, in %s)",
                            when, site->msg, site->file, site->line, site->func);
        }
    }
}

/* The site's index in the section, its counters allocated at the first
 * site a run meets (every site at once: a run meets few, and the record
 * is then one array). SIZE_MAX outside a run or out of memory, when the
 * evaluation is not counted. */
static size_t sometimes_index(pl__sim *s, const pl__sometimes_site *site)
{
    size_t n = 0;
    const pl__sometimes_site *all = pl__sometimes_sites(&n);
    PL__SIM_ASSERT(all != NULL && site >= all && site < all + n);
    if (s->props.sometimes == NULL) {
        s->props.sometimes = calloc(2 * n, sizeof *s->props.sometimes);
        if (s->props.sometimes == NULL) {
            return SIZE_MAX;
        }
    }
    return (size_t)(site - all);
}

bool pl__sometimes(const pl__sometimes_site *site, bool ok)
{
    pl__sim *s = pl__sim_current();
    size_t i = s != NULL ? sometimes_index(s, site) : SIZE_MAX;
    if (i == SIZE_MAX) {
        return false;
    }
    s->props.sometimes[2 * i] += ok;
    s->props.sometimes[2 * i + 1]++;
    return s->props.sometimes[2 * i] == 0;
}

/* Formats only while the site was not yet true in the run: the text of a
 * site true in a run cannot end a finding (a campaign's verdict names
 * sites never true), so it would never be read. */
void pl__sometimes_missed(const pl__sometimes_site *site, const char *fmt, ...)
{
    pl__sim *s = pl__sim_current();
    size_t n = 0;
    const pl__sometimes_site *all = pl__sometimes_sites(&n);
    PL__SIM_ASSERT(s != NULL && s->props.sometimes != NULL && site >= all && site < all + n);
    if (s->props.sometimes_last == NULL) {
        s->props.sometimes_last = calloc(n, PL__SOMETIMES_LAST);
        if (s->props.sometimes_last == NULL) {
            return; /* the finding then names the site without its values */
        }
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->props.sometimes_last + (size_t)(site - all) * PL__SOMETIMES_LAST,
              PL__SOMETIMES_LAST, fmt, ap);
    va_end(ap);
}

extern pl__sometimes_site __start_pl_sometimes[] __attribute__((weak));
extern pl__sometimes_site __stop_pl_sometimes[] __attribute__((weak));

pl__sometimes_site *pl__sometimes_sites(size_t *count)
{
    if (__start_pl_sometimes == NULL || __stop_pl_sometimes == NULL) {
        *count = 0;
        return NULL;
    }
    *count = (size_t)(__stop_pl_sometimes - __start_pl_sometimes);
    return __start_pl_sometimes;
}

void pl__props_free(pl__props *p)
{
    pl__site_table_free(&p->eventually);
    free(p->sometimes);
    p->sometimes = NULL;
    free(p->sometimes_last);
    p->sometimes_last = NULL;
}
