/* sim/src/replay.h: replay files.
 *
 * A replay file is self-describing, versioned text that reproduces one
 * simulator run: the decision list replayed through a list source
 * (decide.h) plus what the run is expected to produce. Example:
 *
 *     pollen-replay 1
 *     pollen-version 0.1.0
 *     build gcc 12.2.0 -O2 -fsanitize=address,undefined
 *     scenario outbox_broadcast
 *     seed 123
 *     strategy random
 *     knobs schedule=32768,io_order=32768,...,buggify_fire=8192
 *     poll-cost-ns 100
 *     finding lost_wakeup
 *     message task relay-2 parked at poll 3 could run but was never woken
 *     steps 1234
 *     events 5678
 *     hash 0123456789abcdef
 *     checkpoints 256 2
 *     c 1111111111111111 2222222222222222
 *     decisions 312
 *     d s3:1 s2:0*40 t2:1 ...
 *     end
 *
 * Grammar (format version 2; version 1 is the same without the probe kind):
 *   - Lines end with "\n" ("\r\n" is accepted). The first line must be
 *     "pollen-replay <version>"; otherwise the file is foreign
 *     (PL_EFORMAT). A version above PL__REPLAY_FORMAT is PL_EVERSION.
 *   - Then "key value" lines in any order, each key at most once, up to
 *     a line "end", after which only blank and comment lines may follow.
 *     Blank lines and lines starting with '#' are ignored anywhere after
 *     the first line.
 *   - Required: seed, decisions, end. Everything else is optional.
 *   - Text values (pollen-version, build, scenario, strategy, finding,
 *     message) are the rest of the line after one space, escaped with
 *     \\ \n \r \t and \xHH (any byte below 0x20 and 0x7f); NUL is never
 *     allowed. Numbers are decimal uint64 (seed, steps, events) with no
 *     sign; hashes are exactly 16 hex digits.
 *   - knobs: the text of pl__dec_knobs_format, parsed over the defaults.
 *   - poll-cost-ns: the run's pl_sim_options.poll_cost_ns, a number up to
 *     PL_SIM_POLL_COST_MAX; written only when not 0, and a file without
 *     it (every file before the key existed) reads as 0.
 *   - time-limit-ns: the run's pl_sim_options.time_limit_ns (a shrunk
 *     finding at the virtual time limit records the smaller limit it
 *     needs), a number from 1 to PL__REPLAY_TIME_LIMIT_MAX; written only
 *     when not 0, and a file without it reads as 0 (the scenario's).
 *   - waker-rotation: "off" when the run did not rotate wakers
 *     (pl_sim_options.rotate_wakers false, `--waker-rotation=off`);
 *     written only then, and a file without it reads as "on".
 *   - truncated: 0 or 1 (1: the recorder dropped decisions past its cap,
 *     so the list is only a prefix of the run). The parser refuses
 *     "truncated 1" with any decision (PL_EFORMAT, "this run's decisions
 *     were truncated at N: it cannot be replayed"): such a list cannot
 *     reproduce the run. "truncated 1" with no decision is the seed-only
 *     form, replayed from the seed.
 *   - "checkpoints <events per checkpoint> <count>" is followed by
 *     exactly <count> hashes on lines starting with "c ".
 *   - "decisions <count>" is followed by exactly <count> decisions on
 *     lines starting with "d ". A token is <letter><n>:<value>, with
 *     letters from pl__dec_kind_letter, n >= 2 and value < n, optionally
 *     "*<repeat>" for that many identical consecutive decisions. The
 *     writer wraps lines at about 100 columns.
 *   - Unknown keys are ignored, with a note in pl__replay.notes: a newer
 *     pollen may add keys without bumping the version. Anything that
 *     changes the meaning of existing content bumps the version.
 *
 * Limits, so hostile input cannot exhaust memory or hang a reader, each
 * checked before the memory it guards is allocated, each refused with
 * PL_EFORMAT and a message saying which:
 *   - files are read from regular files only: a directory, FIFO, device
 *     or socket is refused before anything is read (a FIFO is opened
 *     without blocking), and the file must be smaller than
 *     PL__REPLAY_FILE_MAX bytes by its size, before it is read;
 *   - at most PL__REPLAY_LINES_MAX lines of at most PL__REPLAY_LINE_MAX
 *     bytes each, and text values of at most PL__REPLAY_TEXT_MAX bytes
 *     once unescaped (so that escaped again, as the writer does, any
 *     accepted value still fits on one line; the writer refuses longer
 *     ones);
 *   - at most PL__REPLAY_DECISIONS_MAX decisions, counted after
 *     run-length expansion (the same cap as a run's record, so every
 *     recorded run can be written and read), and
 *     PL__REPLAY_CHECKPOINTS_MAX checkpoints. The decision array is
 *     allocated once, at the declared count (12 bytes a decision), only
 *     after the whole file parsed: a short file that declares millions of
 *     run-length decisions and is invalid anywhere costs nothing.
 *
 * Ownership: the writer only reads the struct; its pointers may be
 * borrowed. The parser fills a struct whose pointer members it owns
 * (malloc'd); release them with pl__replay_free. Never call
 * pl__replay_free on a struct holding borrowed pointers.
 */
#ifndef POLLEN_SIM_REPLAY_H
#define POLLEN_SIM_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "decide.h"

/* Version 2 added the probe decision kind (letter q); files of version 1
 * replay with the probe knob off. */
#define PL__REPLAY_FORMAT 2u
#define PL__REPLAY_DECISIONS_MAX PL__DEC_RECORD_MAX_DEFAULT
#define PL__REPLAY_CHECKPOINTS_MAX ((size_t)1 << 20)
#define PL__REPLAY_FILE_MAX ((size_t)1 << 30)
#define PL__REPLAY_LINE_MAX ((size_t)1 << 16)
#define PL__REPLAY_TEXT_MAX ((size_t)16000) /* 4 bytes escaped each, plus a key */
#define PL__REPLAY_LINES_MAX ((uint64_t)1 << 24)
#define PL__REPLAY_TIME_LIMIT_MAX ((int64_t)1 << 62)

typedef struct pl__replay {
    uint32_t format;        /* parsed: the file's version; ignored by the writer */
    char *pollen_version;   /* NULL: omitted */
    char *build;            /* compiler and flags, given by the caller */
    char *scenario;
    uint64_t seed;
    char *strategy;         /* "random", "pct:3", "bounded:2", "swarm" */
    bool has_knobs;         /* false: omitted (readers use the defaults) */
    pl__dec_knobs knobs;
    int64_t poll_cost_ns;   /* virtual ns per poll; 0: omitted */
    int64_t time_limit_ns;  /* the run's virtual time limit; 0: omitted (the scenario's) */
    bool rotation_off;      /* "waker-rotation off"; false: omitted (rotation on) */
    char *finding;          /* finding name, e.g. "lost_wakeup"; NULL: none */
    char *message;          /* free text, may hold newlines (escaped) */
    uint64_t steps;         /* simulator steps of the run */
    uint64_t events;        /* trace events of the run */
    bool has_hash;          /* false: omitted, nothing to check */
    uint64_t hash;          /* expected final trace hash */
    bool truncated;         /* decisions are a prefix of the run's */
    uint32_t checkpoint_events; /* events per checkpoint, > 0 when any */
    uint64_t *checkpoints;  /* trace hashes every checkpoint_events events */
    size_t checkpoints_len;
    pl__dec_record *decisions; /* kind < PL_DECIDE__COUNT, n >= 2, value < n */
    size_t decisions_len;
    char *notes;            /* parsed: "line N: ..." per ignored key, or NULL */
    uint64_t error_line;    /* parse failure: 1-based line, 0 if none applies */
} pl__replay;

/* Zeroes *r; format = PL__REPLAY_FORMAT, checkpoint_events =
 * PL__TRACE_CHECKPOINT_EVENTS (256). */
void pl__replay_init(pl__replay *r);

/* Frees every pointer member and re-initializes *r. */
void pl__replay_free(pl__replay *r);

/* Replaces *field (freeing the old value) with a malloc'd copy of value
 * (NULL clears it). Returns 0 or PL_ENOMEM. */
int pl__replay_set(char **field, const char *value);

/* Writes *r. Validates first (decisions in range, counts and text
 * lengths within the limits, checkpoint_events > 0 when there are
 * checkpoints) and writes nothing if invalid. Returns 0, PL_EINVAL or PL_EIO. */
int pl__replay_write(FILE *f, const pl__replay *r);

/* True when b holds what a holds (the parse-only fields format, notes and
 * error_line aside): a file written from a parses back to such a b. */
bool pl__replay_same(const pl__replay *a, const pl__replay *b);

/* Writes *r to `path` through "<path>.tmp" and a rename, so a crash never
 * leaves a half-written file. Returns 0, PL_EINVAL or a negative errno
 * (PL_EIO, PL_ENOENT, ...). */
int pl__replay_write_path(const char *path, const pl__replay *r);

/* Parses data[0, len) (no NUL terminator needed) into *out, which must
 * not hold owned memory (init or free it first). Returns 0, or PL_EFORMAT
 * (corrupt, truncated or foreign), PL_EVERSION (newer format) or
 * PL_ENOMEM, with *out emptied except error_line, and a message in err
 * like "line 12: expected 'end', got 'decisions 3'" (err may be NULL). */
int pl__replay_parse_buffer(const char *data, size_t len, pl__replay *out, char *err,
                            size_t errlen);

/* Reads the whole of `path` (any bytes, not only replay files) into a
 * malloc'd buffer: *data, which the caller frees, and *len. Only regular
 * files are read; the check happens after a non-blocking open, so a FIFO
 * never blocks. Returns 0, a negative errno (PL_ENOENT, -EACCES, ...),
 * PL_ENOMEM, or PL_EFORMAT for something that is not a regular file
 * ("it is a directory, not a file", "it is a named pipe (FIFO)...") or a
 * file of PL__REPLAY_FILE_MAX bytes or more; on failure nothing stays
 * allocated and err (may be NULL) says what failed, naming the path. */
int pl__replay_read_path(const char *path, char **data, size_t *len, char *err, size_t errlen);

/* Reads `path` (pl__replay_read_path) and parses it like
 * pl__replay_parse_buffer. I/O errors return a negative errno (PL_ENOENT,
 * ...); what pl__replay_read_path refuses returns PL_EFORMAT. */
int pl__replay_parse_file(const char *path, pl__replay *out, char *err, size_t errlen);

#endif
