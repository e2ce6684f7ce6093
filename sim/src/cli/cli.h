/* sim/src/cli/cli.h: the pure parts of the `pollen` command line.
 *
 * pl_main (cli/) is mostly process plumbing: forking workers, reading
 * their pipes, printing. The arithmetic and parsing it relies on live
 * behind these functions so tests can check them without a process.
 * None of them allocates, prints or touches global state.
 */
#ifndef POLLEN_SIM_CLI_H
#define POLLEN_SIM_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pollen/time.h"

/* Copies text into dst (dst_len > 0) whole, or cut after a whole line,
 * followed by one line "<indent>... N more of M lines: the shrunk replay
 * <replay> holds them all in its header". dst ends NUL-terminated. */
void pl__cli_cut_lines(char *dst, size_t dst_len, const char *text, const char *indent,
                       const char *replay);

/* Parses a decimal uint64 ("0", "42"; no sign, no spaces, no overflow).
 * Returns 0 or PL_EINVAL. */
int pl__cli_parse_u64(const char *text, uint64_t *out);

/* Parses a seed: a decimal uint64, "0x" and up to 16 hex digits, or a
 * 40-hex-digit commit hash, whose first 16 hex digits become the seed
 * (so `--seed $(git rev-parse HEAD)` gives one seed per commit).
 * Returns 0 or PL_EINVAL. */
int pl__cli_parse_seed(const char *text, uint64_t *out);

/* Parses an inclusive seed range "A..B" (each side as pl__cli_parse_seed,
 * A <= B; 0..18446744073709551615, all 2^64 seeds, is valid). Returns 0
 * or PL_EINVAL. */
int pl__cli_parse_seeds(const char *text, uint64_t *lo, uint64_t *hi);

/* Parses a positive duration: a number with an optional fraction of up
 * to 9 digits and a unit, one of ns, us, ms, s, m, h ("100ns", "250ms",
 * "1.5s", "10m").
 * A bare number is an error: the unit is never guessed. Returns 0 or
 * PL_EINVAL (also for zero and for more than 10 years). */
int pl__cli_parse_duration(const char *text, pl_time *out_ns);

/* Parses "K/N" with 1 <= K <= N <= PL__CLI_SHARDS_MAX. Returns 0 or
 * PL_EINVAL. */
#define PL__CLI_SHARDS_MAX 65536u
#define PL__CLI_JOBS_MAX 1024u /* --jobs */
int pl__cli_parse_shard(const char *text, uint32_t *k, uint32_t *n);

/* `--shard auto`: the shard a batch engine's environment gives this
 * worker, read through env (getenv, or a table in tests). POLLEN_SHARD
 * ("K/N", 1-based) wins; otherwise exactly one engine's index variable
 * must be set: JOB_COMPLETION_INDEX (Kubernetes Indexed Job, from 0,
 * count in POLLEN_SHARD_COUNT), SLURM_ARRAY_TASK_ID (Slurm, the task's
 * position in an A-B or A-B:S array, count SLURM_ARRAY_TASK_COUNT),
 * PARALLEL_SEQ (GNU parallel, from 1, count in POLLEN_SHARD_COUNT),
 * CI_NODE_INDEX (GitLab, from 1, CI_NODE_TOTAL), CIRCLE_NODE_INDEX
 * (CircleCI, from 0, CIRCLE_NODE_TOTAL), BUILDKITE_PARALLEL_JOB
 * (Buildkite, from 0, BUILDKITE_PARALLEL_JOB_COUNT). K is always
 * 1-based, as in --shard K/N. Returns 0 with `said` naming the shard and
 * the variables it came from; PL_ENOENT when no engine's variable is set
 * (`said` lists those looked for); PL_EINVAL when they are set but give
 * no shard, or two engines' are (`said` says why). */
typedef char *(*pl__cli_env_fn)(const char *name); /* getenv's type */
int pl__cli_shard_auto(pl__cli_env_fn env, uint32_t *k, uint32_t *n, char *said, size_t len);

/* Parses a size: a whole number and a unit, one of KiB, MiB, GiB, TiB
 * ("512MiB", "1GiB"); a bare number is an error. Returns 0 or PL_EINVAL
 * (also for zero and for sizes that overflow). */
int pl__cli_parse_size(const char *text, uint64_t *out_bytes);

/* Copies text into buf with terminal control bytes escaped as \xHH: C0
 * controls (but newline and tab when keep_lines), DEL, C1 controls
 * (U+0080-U+009F) and bytes that are not valid UTF-8, so that names and
 * contents from files or the command line cannot drive the terminal.
 * Returns the length of the full result like snprintf. */
int pl__cli_escape(const char *text, bool keep_lines, char *buf, size_t len);

/* The length of the valid UTF-8 sequence at p (1 to 4 bytes; 1 for
 * ASCII), or 0 when the bytes there are not valid UTF-8 (overlong forms,
 * surrogates and values past U+10FFFF included). p is NUL-terminated. */
size_t pl__cli_utf8_len(const unsigned char *p);

/* Edit distance between a and b, capped at `cap` (returns cap when it is
 * at least cap): used for "did you mean" hints. */
size_t pl__cli_distance(const char *a, const char *b, size_t cap);

/* Writes `text` quoted for a POSIX shell into buf when it needs quoting
 * (single quotes, with embedded ones as '\''), as is otherwise. Returns
 * the length of the full result like snprintf. */
int pl__cli_shell_quote(const char *text, char *buf, size_t len);

#endif
