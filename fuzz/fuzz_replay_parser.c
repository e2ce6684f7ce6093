/* fuzz/fuzz_replay_parser.c: the replay-file parser on hostile bytes.
 *
 * pl__replay_parse_buffer reads files users pass around, so it must
 * never crash, leak or read out of bounds, whatever the input. Beyond
 * surviving, the target checks the parser's promises:
 *   - it returns 0, PL_EFORMAT, PL_EVERSION or PL_ENOMEM, and a failure
 *     leaves the struct empty except error_line;
 *   - what it accepts satisfies the documented invariants (decisions in
 *     range, counts within limits);
 *   - writing what it accepted and parsing that again gives the same
 *     content (the writer and the parser agree on the format).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "pollen/error.h"
#include "replay.h"

/* Large enough for real replay files with a few thousand decisions. */
#define INPUT_MAX (256 * 1024)

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    pl__fuzz_parse_flags(*argc, *argv);
    return 0;
}

static void broken(const char *what)
{
    fprintf(stderr, "\n==pollen== replay parser broke a promise: %s\n\n", what);
    fflush(stderr);
    abort();
}

static bool is_empty(const pl__replay *r)
{
    return r->pollen_version == NULL && r->build == NULL && r->scenario == NULL &&
           r->strategy == NULL && r->finding == NULL && r->message == NULL &&
           r->checkpoints == NULL && r->checkpoints_len == 0 && r->decisions == NULL &&
           r->decisions_len == 0 && r->notes == NULL;
}

static void check_valid(const pl__replay *r)
{
    if (r->decisions_len > PL__REPLAY_DECISIONS_MAX ||
        r->checkpoints_len > PL__REPLAY_CHECKPOINTS_MAX) {
        broken("accepted more than the documented limits");
    }
    if (r->checkpoints_len > 0 && r->checkpoint_events == 0) {
        broken("accepted checkpoints every 0 events");
    }
    for (size_t i = 0; i < r->decisions_len; i++) {
        const pl__dec_record *d = &r->decisions[i];
        if (d->kind >= PL_DECIDE__COUNT || d->n < 2 || d->value >= d->n) {
            broken("accepted a decision out of range");
        }
    }
}

/* Writes r to memory and parses it back. */
static void round_trip(const pl__replay *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f == NULL) {
        return; /* out of memory: not the parser's fault */
    }
    int rc = pl__replay_write(f, r);
    fclose(f);
    if (rc != 0) {
        free(text);
        broken("the writer refused what the parser accepted");
    }
    pl__replay again;
    pl__replay_init(&again);
    char err[256] = "";
    rc = pl__replay_parse_buffer(text, len, &again, err, sizeof err);
    if (rc == PL_ENOMEM) {
        free(text);
        return;
    }
    if (rc != 0) {
        fprintf(stderr, "written text:\n%s\nparse error: %s\n", text, err);
        broken("the parser rejected what the writer wrote");
    }
    if (!pl__replay_same(r, &again)) {
        fprintf(stderr, "written text:\n%s\n", text);
        broken("writing then parsing changed the content");
    }
    pl__replay_free(&again);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > INPUT_MAX) {
        return -1;
    }
    pl__replay r;
    pl__replay_init(&r);
    char err[256];
    memset(err, 'x', sizeof err);
    int rc = pl__replay_parse_buffer((const char *)data, size, &r, err, sizeof err);
    if (rc == 0) {
        check_valid(&r);
        round_trip(&r);
    } else if (rc != PL_EFORMAT && rc != PL_EVERSION && rc != PL_ENOMEM) {
        broken("returned a code outside 0, PL_EFORMAT, PL_EVERSION, PL_ENOMEM");
    } else if (!is_empty(&r) || memchr(err, '\0', sizeof err) == NULL) {
        broken("a failure left content behind or an unterminated message");
    }
    pl__fuzz_keep((uint64_t)rc ^ r.decisions_len ^ r.seed);
    pl__replay_free(&r);
    return 0;
}
