#!/bin/bash
# A pollen campaign in 4 shards on one machine with GNU parallel, and
# its verdict. Each job's PARALLEL_SEQ
# (1 to 4) is its shard; GNU parallel gives no count, so the jobs get
# POLLEN_SHARD_COUNT. (The job slot, {%}, is no shard number: slots are
# reused.)
#
#   ./gnu-parallel.sh        # exits as one unsharded `run` would

TESTS=${TESTS:-./mytests}
CAMPAIGN=${CAMPAIGN:-run all --seeds 0..99999 --keep-going}
SHARDS=${SHARDS:-4}
# Each shard's workers: the machine's CPUs split over the shards.
JOBS=$(($(nproc) / SHARDS))
[ "$JOBS" -ge 1 ] || JOBS=1
export TESTS CAMPAIGN JOBS POLLEN_SHARD_COUNT=$SHARDS
# set -f: CAMPAIGN's words are arguments, not globs.
seq "$SHARDS" | parallel -j "$SHARDS" \
    'set -f; $TESTS $CAMPAIGN --shard auto --jobs $JOBS --json > shard-{}.json || true'
$TESTS merge shard-*.json
