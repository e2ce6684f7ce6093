/* sim/src/run_record.h: what a finished run keeps for the CLI, the
 * shrinker and the campaigns (pl_sim_result's internals): its decisions,
 * events, names, spawn sites, coverage and files, copied out of the
 * world before pl__sim_finish frees it (run.c, by run_record.c).
 */
#ifndef POLLEN_SIM_RUN_RECORD_H
#define POLLEN_SIM_RUN_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decide.h"
#include "pollen/sim.h"
#include "pollen/sim_node.h"
#include "sites.h"
#include "trace.h"

/* Where a task was spawned, as a run record keeps it. */
typedef struct pl__spawn_site {
    const char *where; /* "file:line" of its pl_spawn (static); NULL: unknown */
    const char *func;
} pl__spawn_site;

typedef struct pl__run_record {
    pl__dec_record *decisions;
    size_t decisions_len;
    bool decisions_truncated;
    uint64_t *checkpoints;
    size_t checkpoints_len;
    pl__trace_rec *events;
    size_t events_len;
    pl__dec_knobs knobs; /* the run's; as text only when a replay or rerun needs it */
    char scenario[64];
    char *names_blob;            /* "\0"-separated task names, by id (1-based) */
    pl__spawn_site *spawn_sites; /* by id - 1, names_count of them; log-only */
    char *texts;                 /* the texts USER events point into (pl__trace_texts) */
    size_t texts_len;
    struct pl__decision_note *notes; /* a crashed run's decision subjects (its crash
                                        ring's), for the shrinker; NULL otherwise */
    size_t notes_len;
    size_t names_len;
    uint32_t names_count;
    /* Coverage: decisions consulted and deviated from 0, per kind, and
     * the PL_BUGGIFY sites the run met, in the order it met them (their
     * strings are the program's literals). */
    uint64_t consulted[PL_DECIDE__COUNT];
    uint64_t deviated[PL_DECIDE__COUNT];
    pl__site *buggify;
    size_t buggify_len;
    /* The run's pl_sometimes counts (check_props.h's, taken over):
     * (hits, reached) per site of pl__sometimes_sites, and per site
     * PL__SOMETIMES_LAST bytes of its last false message while not yet
     * true; NULL when the run met no site (or either array: memory). */
    uint32_t *sometimes;
    char *sometimes_last;
    size_t sometimes_len; /* sites: pl__sometimes_sites' count, or 0 */
    char *files_blob; /* every disk's paths, by node (pl__disk_run_names) */
    char node_names[PL_SIM_NODES_MAX + 1][33]; /* by node index; "" when none */
    size_t files_len;
    uint32_t files_count;
} pl__run_record;

typedef struct pl__sim pl__sim;

/* The record of the run `s` just finished for scenario `sc`, on the
 * heap: its decisions move out of s->dec, the rest is copied. NULL when
 * memory ran out (no partial record). Called once per run, before
 * pl__sim_finish. */
pl__run_record *pl__run_record_make(pl__sim *s, const pl_scenario *sc);
/* Frees a record of pl__run_record_make; NULL is a no-op. */
void pl__run_record_free(pl__run_record *rec);

const pl__run_record *pl__sim_result_record(const pl_sim_result *r);
/* The buggify site of `key` in a finished run, or NULL. */
const pl__site *pl__run_buggify_site(const pl__run_record *rec, uint64_t key);
/* Site i's pl_sometimes counts in a finished run: true evaluations in
 * *hits, all in *reached (0 and 0 when the run never met it), and its
 * last false message while not yet true in *last ("" when none). */
void pl__run_sometimes(const pl__run_record *rec, size_t i, uint32_t *hits, uint32_t *reached,
                       const char **last);
/* The name of task `id` in a finished run, or NULL. */
const char *pl__run_task_name(const pl__run_record *rec, uint32_t id);
/* Where task `id` of the run record `ud` was spawned: its base
 * "file:line" (*func: its function or NULL), or NULL when not known
 * (a pl__trace_spawn_site_fn). */
const char *pl__run_spawn_site(void *ud, uint32_t id, const char **func);

#endif
