/* sim/src/cli/cover.c: a campaign's coverage as `run` reports it and
 * `merge` adds it up: decisions consulted and deviated from production
 * per kind, every PL_BUGGIFY site the campaign met and every pl_sometimes
 * site it judges, by file:line, with their counts.
 *
 * Workers tally their slice (campaign.c) and send it once, at the end of
 * the slice (MSG_COVER); the parent adds the slices up. What is printed
 * and written under --json is a `cover`, text only, so that `merge`
 * rebuilds the same value from the JSON of shards run elsewhere and
 * gives the verdict one campaign over their union gives. */
#include "cli_internal.h"

/* ---- Worker -> parent ---------------------------------------------------- */

/* The payload: the kind count, then consulted and deviated per kind, then
 * the buggify sites as they are (plain bytes). */
typedef struct cover_head {
    uint32_t kinds;
    uint32_t sites;
    uint64_t consulted[PL_DECIDE__COUNT];
    uint64_t deviated[PL_DECIDE__COUNT];
    uint64_t discarded; /* runs a pl_assume discarded */
} cover_head;

void *pl__cli_cover_pack(const pl__campaign_tally *t, size_t *len)
{
    /* The head counts the sites in 32 bits; the kinds are the build's. */
    PL__CLI_ASSERT(t != NULL && len != NULL && t->nbuggify <= UINT32_MAX);
    size_t sites = t->nbuggify * sizeof *t->buggify;
    uint8_t *p = calloc(1, sizeof(cover_head) + sites);
    if (p == NULL) {
        return NULL;
    }
    cover_head h;
    memset(&h, 0, sizeof h);
    h.kinds = PL_DECIDE__COUNT;
    h.sites = (uint32_t)t->nbuggify;
    memcpy(h.consulted, t->consulted, sizeof h.consulted);
    memcpy(h.deviated, t->deviated, sizeof h.deviated);
    h.discarded = t->discarded;
    memcpy(p, &h, sizeof h);
    if (sites > 0) {
        memcpy(p + sizeof h, t->buggify, sites);
    }
    *len = sizeof h + sites;
    return p;
}

int pl__cli_cover_unpack(pl__campaign_tally *t, const void *payload, size_t len)
{
    PL__CLI_ASSERT(t != NULL && (payload != NULL || len == 0));
    cover_head h;
    if (len < sizeof h) {
        return PL_EFORMAT;
    }
    memcpy(&h, payload, sizeof h);
    if (h.kinds != PL_DECIDE__COUNT || len != sizeof h + h.sites * sizeof(pl__cover_buggify)) {
        return PL_EFORMAT;
    }
    /* The sites sit unaligned in the receive buffer. */
    pl__cover_buggify *sites = calloc((size_t)h.sites + 1, sizeof *sites);
    if (sites == NULL) {
        return PL_ENOMEM;
    }
    memcpy(sites, (const uint8_t *)payload + sizeof h, len - sizeof h);
    for (uint32_t i = 0; i < h.sites; i++) {
        sites[i].file[sizeof sites[i].file - 1] = '\0';
        sites[i].func[sizeof sites[i].func - 1] = '\0';
    }
    int rc = pl__campaign_tally_cover(t, h.consulted, h.deviated, sites, h.sites);
    free(sites);
    t->discarded += h.discarded;
    return rc;
}

/* ---- The campaign's coverage ---------------------------------------------- */

void pl__cli_cover_free(cover *cv)
{
    free(cv->buggify);
    free(cv->sometimes);
    memset(cv, 0, sizeof *cv);
}

int pl__cli_cover_of(const campaign *cp, const char *not_judged, cover *cv)
{
    memset(cv, 0, sizeof *cv);
    snprintf(cv->not_judged, sizeof cv->not_judged, "%s", not_judged);
    for (uint32_t k = 0; k < PL_DECIDE__COUNT && k < COVER_KINDS_MAX; k++) {
        cover_kind *ck = &cv->kinds[cv->nkinds++];
        snprintf(ck->name, sizeof ck->name, "%s", pl__dec_kind_name(k));
        ck->consulted = cp->tally.consulted[k];
        ck->deviated = cp->tally.deviated[k];
    }
    size_t n = 0;
    const pl__sometimes_site *sites = pl__sometimes_sites(&n);
    cv->buggify = calloc(cp->tally.nbuggify + 1, sizeof *cv->buggify);
    cv->sometimes = calloc(n + 1, sizeof *cv->sometimes);
    if (cv->buggify == NULL || cv->sometimes == NULL) {
        pl__cli_cover_free(cv);
        return PL_ENOMEM;
    }
    if (cp->tally.nbuggify > 0) {
        memcpy(cv->buggify, cp->tally.buggify, cp->tally.nbuggify * sizeof *cv->buggify);
    }
    cv->nbuggify = cp->tally.nbuggify;
    bool counted = n == cp->tally.nsites && cp->tally.sites != NULL;
    for (size_t i = 0; i < n; i++) {
        const pl__sometimes_site *s = &sites[i];
        uint64_t hits = counted ? cp->tally.sites[2 * i] : 0;
        uint64_t reached = counted ? cp->tally.sites[2 * i + 1] : 0;
        bool own = cp->sc->source_file != NULL && strcmp(s->file, cp->sc->source_file) == 0;
        if (reached == 0 && !own) {
            continue; /* another scenario's site */
        }
        cover_sometimes *cs = &cv->sometimes[cv->nsometimes++];
        snprintf(cs->msg, sizeof cs->msg, "%s", s->msg);
        snprintf(cs->file, sizeof cs->file, "%s", s->file);
        snprintf(cs->func, sizeof cs->func, "%s", s->func != NULL ? s->func : "?");
        cs->line = s->line;
        cs->own = own;
        cs->reached = reached;
        cs->hits = hits;
        if (cp->tally.last != NULL) {
            memcpy(cs->last, cp->tally.last + i * PL__SOMETIMES_LAST, sizeof cs->last);
        }
    }
    return 0;
}

static cover_kind *kind_named(cover *cv, const char *name)
{
    for (size_t i = 0; i < cv->nkinds; i++) {
        if (strcmp(cv->kinds[i].name, name) == 0) {
            return &cv->kinds[i];
        }
    }
    if (cv->nkinds == COVER_KINDS_MAX) {
        return NULL;
    }
    cover_kind *k = &cv->kinds[cv->nkinds++];
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    return k;
}

static pl__cover_buggify *buggify_of(cover *cv, uint64_t key)
{
    for (size_t i = 0; i < cv->nbuggify; i++) {
        if (cv->buggify[i].key == key) {
            return &cv->buggify[i];
        }
    }
    pl__cover_buggify *b = realloc(cv->buggify, (cv->nbuggify + 1) * sizeof *b);
    if (b == NULL) {
        return NULL;
    }
    cv->buggify = b;
    b = &cv->buggify[cv->nbuggify++];
    memset(b, 0, sizeof *b);
    b->key = key;
    return b;
}

static cover_sometimes *sometimes_of(cover *cv, const cover_sometimes *like)
{
    for (size_t i = 0; i < cv->nsometimes; i++) {
        cover_sometimes *s = &cv->sometimes[i];
        if (s->line == like->line && strcmp(s->file, like->file) == 0 &&
            strcmp(s->msg, like->msg) == 0) {
            return s;
        }
    }
    cover_sometimes *s = realloc(cv->sometimes, (cv->nsometimes + 1) * sizeof *s);
    if (s == NULL) {
        return NULL;
    }
    cv->sometimes = s;
    s = &cv->sometimes[cv->nsometimes++];
    *s = *like;
    s->reached = s->hits = 0;
    return s;
}

int pl__cli_cover_add(cover *into, const cover *from)
{
    for (size_t i = 0; i < from->nkinds; i++) {
        cover_kind *k = kind_named(into, from->kinds[i].name);
        if (k == NULL) {
            return PL_ENOMEM;
        }
        k->consulted += from->kinds[i].consulted;
        k->deviated += from->kinds[i].deviated;
    }
    for (size_t i = 0; i < from->nbuggify; i++) {
        const pl__cover_buggify *f = &from->buggify[i];
        pl__cover_buggify *b = buggify_of(into, f->key);
        if (b == NULL) {
            return PL_ENOMEM;
        }
        b->reached += f->reached;
        b->runs_enabled += f->runs_enabled;
        b->fired += f->fired;
        if (b->line == 0) {
            b->line = f->line;
            memcpy(b->file, f->file, sizeof b->file);
            memcpy(b->func, f->func, sizeof b->func);
        }
    }
    for (size_t i = 0; i < from->nsometimes; i++) {
        cover_sometimes *s = sometimes_of(into, &from->sometimes[i]);
        if (s == NULL) {
            return PL_ENOMEM;
        }
        s->reached += from->sometimes[i].reached;
        s->hits += from->sometimes[i].hits;
        s->own = s->own || from->sometimes[i].own;
        if (s->hits == 0 && from->sometimes[i].last[0] != '\0') {
            memcpy(s->last, from->sometimes[i].last, sizeof s->last);
        }
    }
    return 0;
}

/* ---- Text and JSON ------------------------------------------------------- */

/* Writes the kinds with (consulted true) or without decisions, comma
 * separated, to f (NULL: only counts them); returns how many. */
static size_t kinds_text(FILE *f, const cover *cv, bool consulted)
{
    size_t n = 0;
    for (size_t i = 0; i < cv->nkinds; i++) {
        const cover_kind *k = &cv->kinds[i];
        if ((k->consulted > 0) != consulted) {
            continue;
        }
        if (f != NULL) {
            fprintf(f, "%s%s", n > 0 ? ", " : " ", k->name);
        }
        if (f != NULL && consulted) {
            fprintf(f, " %" PRIu64 " / %" PRIu64, k->consulted, k->deviated);
        }
        n++;
    }
    return n;
}

static void decisions_text(FILE *f, const cover *cv)
{
    fputs("  decisions (consulted / deviated from production):", f);
    if (kinds_text(f, cv, true) == 0) {
        fputs(" none", f);
    } else if (kinds_text(NULL, cv, false) > 0) {
        fputs("; never consulted:", f);
        kinds_text(f, cv, false);
    }
    fputc('\n', f);
}

void pl__cli_cover_text(FILE *f, const cover *cv, uint64_t runs)
{
    decisions_text(f, cv);
    for (size_t i = 0; i < cv->nbuggify; i++) {
        const pl__cover_buggify *b = &cv->buggify[i];
        if (b->line != 0) {
            fprintf(f, "  buggify at %s:%" PRId32 " (%s)", pl__cli_safe_text(b->file).s, b->line,
                    pl__cli_safe_text(b->func).s);
        } else {
            fprintf(f, "  buggify site %016" PRIx64, b->key);
        }
        fprintf(f,
                ": reached %" PRIu64 ", enabled in %" PRIu64 " of %" PRIu64 " runs, fired %" PRIu64
                "\n",
                b->reached, b->runs_enabled, runs, b->fired);
    }
    for (size_t i = 0; i < cv->nsometimes; i++) {
        const cover_sometimes *s = &cv->sometimes[i];
        fprintf(
            f, "  sometimes at %s:%" PRId32 " (%s) \"%s\": reached %" PRIu64 ", true %" PRIu64 "\n",
            pl__cli_safe_text(pl__site_base(s->file)).s, s->line, pl__cli_safe_text(s->func).s,
            pl__cli_safe_text(s->msg).s, s->reached, s->hits);
    }
    if (cv->nsometimes > 0) {
        fprintf(f, "  pl_sometimes: %s%s\n", cv->not_judged[0] != '\0' ? "not judged: " : "judged",
                cv->not_judged);
    }
}

void pl__cli_cover_json(FILE *f, const cover *cv)
{
    fputs("{\"decisions\":{", f);
    for (size_t i = 0; i < cv->nkinds; i++) {
        fputs(i > 0 ? "," : "", f);
        pl__cli_json_string(f, cv->kinds[i].name);
        fprintf(f, ":{\"consulted\":%" PRIu64 ",\"deviated\":%" PRIu64 "}", cv->kinds[i].consulted,
                cv->kinds[i].deviated);
    }
    fputs("},\"buggify\":[", f);
    for (size_t i = 0; i < cv->nbuggify; i++) {
        const pl__cover_buggify *b = &cv->buggify[i];
        fprintf(f, "%s{\"key\":\"%016" PRIx64 "\",\"file\":", i > 0 ? "," : "", b->key);
        pl__cli_json_string(f, b->file);
        fprintf(f, ",\"line\":%" PRId32 ",\"func\":", b->line);
        pl__cli_json_string(f, b->func);
        fprintf(f, ",\"reached\":%" PRIu64 ",\"runs_enabled\":%" PRIu64 ",\"fired\":%" PRIu64 "}",
                b->reached, b->runs_enabled, b->fired);
    }
    fputs("],\"sometimes\":[", f);
    for (size_t i = 0; i < cv->nsometimes; i++) {
        const cover_sometimes *s = &cv->sometimes[i];
        fputs(i > 0 ? ",{\"message\":" : "{\"message\":", f);
        pl__cli_json_string(f, s->msg);
        fputs(",\"file\":", f);
        pl__cli_json_string(f, s->file);
        fprintf(f, ",\"line\":%" PRId32 ",\"func\":", s->line);
        pl__cli_json_string(f, s->func);
        fprintf(f, ",\"own\":%s,\"reached\":%" PRIu64 ",\"true\":%" PRIu64,
                s->own ? "true" : "false", s->reached, s->hits);
        if (s->last[0] != '\0') {
            fputs(",\"last\":", f);
            pl__cli_json_string(f, s->last);
        }
        fputc('}', f);
    }
    fputs("],\"sometimes_judged\":", f);
    fputs(cv->not_judged[0] == '\0' ? "true" : "false", f);
    fputs(",\"sometimes_not_judged\":", f);
    pl__cli_json_string(f, cv->not_judged);
    fputc('}', f);
}

size_t pl__cli_cover_verdict(const cover *cv, void (*fn)(void *ud, const pl_finding *f), void *ud)
{
    size_t failed = 0;
    for (size_t i = 0; i < cv->nsometimes; i++) {
        const cover_sometimes *s = &cv->sometimes[i];
        pl_finding f;
        if (pl__campaign_sometimes_failed(s->msg, s->file, s->line, s->func, s->own, s->hits,
                                          s->reached, s->last, &f)) {
            fn(ud, &f);
            failed++;
        }
    }
    return failed;
}

/* Runs a pl_assume discarded are neither clean nor findings: when they
 * are most of a campaign, the scenario tests far less than its seeds say. */
void pl__cli_discarded_text(FILE *f, uint64_t discarded, uint64_t runs)
{
    PL__CLI_ASSERT(discarded <= runs);
    if (discarded == 0) {
        return;
    }
    fprintf(f, "  discarded: %" PRIu64 " of %" PRIu64 " runs (a pl_assume premise failed)\n",
            discarded, runs);
    if (discarded * 2 > runs) {
        fprintf(f, "  warning: most runs were discarded: the premise rarely holds, so few "
                   "seeds tested anything\n");
    }
}
