#!/bin/bash
# A pollen campaign in 4 shards as a Slurm job array, and its verdict.
# Each array task runs one shard: `--shard auto` reads the task's
# position in the array from SLURM_ARRAY_TASK_ID, _MIN, _MAX, _STEP and
# _COUNT (any range --array=A-B or A-B:S; not a list such as 1,5,9).
#
#   jobid=$(sbatch --parsable slurm-array.sh)
#   sbatch --dependency=afterany:$jobid --wrap "./mytests merge shard-*.json"
#
# The merge job runs once every task ended, whatever their exit status,
# and exits as one unsharded `run` would (0 clean, 10 + kind, 4, 5).
#SBATCH --job-name=pollen-shards
#SBATCH --array=0-3
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=8
#SBATCH --output=shard-%a.log

TESTS=${TESTS:-./mytests}
CAMPAIGN=${CAMPAIGN:-run all --seeds 0..99999 --keep-going}
set -f # CAMPAIGN's words are arguments, not globs
# A shard with a finding exits 10 + kind; its file is complete all the same.
$TESTS $CAMPAIGN --shard auto --jobs "${SLURM_CPUS_PER_TASK:-1}" --json \
    > "shard-$SLURM_ARRAY_TASK_ID.json"
