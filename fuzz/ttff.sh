#!/usr/bin/env bash
# fuzz/ttff.sh BUILD_DIR TARGET [RUNS] [BUDGET_S] [libFuzzer flags...]:
# time to first finding of a scenario target, over libFuzzer seeds
# 1..RUNS (default 9), each from an empty corpus with BUDGET_S seconds
# (default 120). Prints each run and the medians of executions and
# seconds until the first crash; a run that finds nothing counts as
# slower than any that does. Compare two builds or two flag sets by
# running it twice: execution counts are exact for a given binary and
# seed, seconds depend on the machine's load.
set -uo pipefail
usage="usage: fuzz/ttff.sh BUILD_DIR TARGET [RUNS] [BUDGET_S] [libFuzzer flags...]"
build=${1:?$usage}
target=${2:?$usage}
runs=${3:-9}
budget=${4:-120}
shift $(($# < 4 ? $# : 4))
exe=$(cd "$build/fuzz" && pwd)/fuzz_$target
work=$(mktemp -d "${TMPDIR:-/tmp}/pollen-ttff.XXXXXX")
trap 'rm -rf "$work"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

: >"$work/execs"
: >"$work/secs"
for seed in $(seq 1 "$runs"); do
    rm -rf "$work/corpus" "$work"/crash-*
    mkdir "$work/corpus"
    start=$(date +%s.%N)
    out=$(cd "$work" && "$exe" corpus -seed="$seed" -max_total_time="$budget" \
        -print_final_stats=1 "$@" 2>&1)
    end=$(date +%s.%N)
    execs=$(grep -o 'number_of_executed_units: [0-9]*' <<<"$out" | grep -o '[0-9]*$')
    secs=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.1f", b - a}')
    if ! grep -q '==pollen== finding' <<<"$out"; then
        execs=inf
        secs=inf
    fi
    echo "$execs" >>"$work/execs"
    echo "$secs" >>"$work/secs"
    echo "seed=$seed execs=$execs secs=$secs"
done
echo "fuzz_$target $*: median execs $(median <"$work/execs"), median secs $(median <"$work/secs")"
