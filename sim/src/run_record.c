/* sim/src/run_record.c: the record a finished run keeps (run_record.h),
 * copied out of the world before pl__sim_finish frees it, and what its
 * readers ask of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "disk/disk.h"
#include "node.h"
#include "run_record.h"
#include "sim_internal.h"

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

void pl__run_record_free(pl__run_record *rec)
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
        free(rec->sometimes);
        free(rec->sometimes_last);
        free(rec);
    }
}

/* True when copying n elements from src should have produced dst. */
static bool dup_failed(const void *dst, const void *src, size_t n)
{
    return dst == NULL && src != NULL && n > 0;
}

pl__run_record *pl__run_record_make(pl__sim *s, const pl_scenario *sc)
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
        pl__run_record_free(rec);
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
    /* Moved, as the decisions: the run is finished. */
    rec->sometimes = s->props.sometimes;
    rec->sometimes_last = s->props.sometimes_last;
    s->props.sometimes = NULL;
    s->props.sometimes_last = NULL;
    if (rec->sometimes != NULL) {
        pl__sometimes_sites(&rec->sometimes_len);
    }
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

void pl__run_sometimes(const pl__run_record *rec, size_t i, uint32_t *hits, uint32_t *reached,
                       const char **last)
{
    bool met = rec != NULL && rec->sometimes != NULL && i < rec->sometimes_len;
    *hits = met ? rec->sometimes[2 * i] : 0;
    *reached = met ? rec->sometimes[2 * i + 1] : 0;
    *last = met && rec->sometimes_last != NULL ? rec->sometimes_last + i * PL__SOMETIMES_LAST
                                               : "";
}

void pl_sim_result_free(pl_sim_result *r)
{
    pl__run_record_free(r->internal);
    r->internal = NULL;
}
