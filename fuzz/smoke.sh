#!/usr/bin/env bash
# fuzz/smoke.sh BUILD_DIR [POLLEN_BUILD_DIR]: a short libFuzzer run of
# every kind of target, for CI. BUILD_DIR was configured with -Dfuzz=true
# (clang, libFuzzer); POLLEN_BUILD_DIR holds scenarios/pollen for the
# replay check (default: BUILD_DIR).
#
# Asserts, in about a minute on 2 cores (two lanes run side by side):
#   - fuzz_canary finds its planted crash (the pipeline finds crashes);
#   - fuzz_replay_parser survives its corpus and a short run;
#   - fuzz_outbox survives its corpus and a short run (a clean scenario);
#   - fuzz_outbox_broadcast finds its known deadlock within its budget,
#     and `pollen replay CRASH --scenario outbox_broadcast` reproduces it,
#     as does the replay command the finding prints (the target itself);
#   - every checked-in crasher (fuzz/regressions/) still produces its
#     finding, and the fixed twin (fix_X for bug_X) survives it.
# Fuzzers work on copies of the seed corpora: nothing is written to the
# source tree. Ends with "N passed, N failed"; exits nonzero on a failure.
#
# fuzz/smoke.sh --targets prints the targets it runs, so that CI builds
# those (`meson compile -C BUILD_DIR $(fuzz/smoke.sh --targets)`) and not
# the hundred others.
set -uo pipefail

# The fixed twin of a known bug's target: outbox for outbox_broadcast,
# fix_X for bug_X; nothing for other names.
twin_of() {
    case $1 in
    outbox_broadcast) echo outbox ;;
    bug_*) echo "fix_${1#bug_}" ;;
    esac
}

if [ "${1:-}" = --targets ]; then
    {
        echo fuzz_canary fuzz_replay_parser fuzz_outbox fuzz_outbox_broadcast
        for dir in "$(dirname "$0")"/regressions/*; do
            [ -d "$dir" ] || continue
            name=$(basename "$dir")
            twin=$(twin_of "$name")
            [ -n "$twin" ] && echo "fuzz_$name fuzz_$twin"
        done
    } | tr ' ' '\n' | sort -u
    exit 0
fi

build=${1:?usage: fuzz/smoke.sh BUILD_DIR [POLLEN_BUILD_DIR]}
pollen_build=${2:-$build}
src=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$build/fuzz" && pwd) || exit 2
pollen=$pollen_build/scenarios/pollen
[ -x "$pollen" ] || pollen=$build/scenarios/pollen
work=$(mktemp -d "${TMPDIR:-/tmp}/pollen-fuzz-smoke.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Budgets in seconds. outbox_broadcast's median time to first finding
# is about 1 s (4,000 executions); 60 s leaves room for a slow machine.
canary_budget=${SMOKE_CANARY_S:-20}
parser_budget=${SMOKE_PARSER_S:-10}
clean_budget=${SMOKE_CLEAN_S:-10}
bug_budget=${SMOKE_BUG_S:-60}

# Runs a target in its own directory on a copy of its seed corpus.
# fuzz NAME TAG SECONDS [libFuzzer flags...]; output in $work/TAG.log.
fuzz() {
    local name=$1 tag=$2 secs=$3
    shift 3
    local dir=$work/$tag
    mkdir -p "$dir/corpus"
    if [ -d "$src/corpus/$name" ]; then
        cp "$src/corpus/$name"/* "$dir/corpus/" 2>/dev/null
    fi
    (cd "$dir" && "$bin/fuzz_$name" corpus -max_total_time="$secs" -timeout=10 \
        -print_final_stats=1 "$@" >"$work/$tag.log" 2>&1)
}

# The raw crash file, not the .replay file a scenario target writes beside it.
crash_of() { find "$work/$1" -maxdepth 1 -name 'crash-*' ! -name '*.replay' | head -1; }

. "$src/../tests/verdict.sh"

# Lane 1: canary, parser, the clean outbox.
lane_one() {
    fuzz canary canary "$canary_budget"
    fuzz replay_parser parser "$parser_budget" -dict="$src/replay_parser.dict"
    echo $? >"$work/parser.rc"
    fuzz outbox outbox "$clean_budget"
    echo $? >"$work/outbox.rc"
}

# Lane 2: the known bug must be found.
lane_two() {
    fuzz outbox_broadcast broadcast "$bug_budget"
}

for t in canary replay_parser outbox outbox_broadcast; do
    if [ ! -x "$bin/fuzz_$t" ]; then
        verdict 1 "target fuzz_$t is built"
    fi
done
if [ "$failed" != 0 ]; then
    summary
    exit 1
fi

lane_one &
lane_two
wait

crash=$(crash_of canary)
[ -n "$crash" ] && [ "$(cat "$crash")" = PLFZ ]
verdict $? "fuzz_canary finds its planted crash" "$work/canary.log"

[ "$(cat "$work/parser.rc")" = 0 ] && [ -z "$(crash_of parser)" ]
verdict $? "fuzz_replay_parser survives ${parser_budget}s" "$work/parser.log"

[ "$(cat "$work/outbox.rc")" = 0 ] && [ -z "$(crash_of outbox)" ]
verdict $? "fuzz_outbox stays clean for ${clean_budget}s" "$work/outbox.log"

crash=$(crash_of broadcast)
[ -n "$crash" ] && grep -q '==pollen== finding in scenario outbox_broadcast: deadlock' \
    "$work/broadcast.log"
verdict $? "fuzz_outbox_broadcast finds its deadlock within ${bug_budget}s" \
    "$work/broadcast.log"

if [ -n "$crash" ] && [ -x "$pollen" ]; then
    "$pollen" replay "$crash" --scenario outbox_broadcast >"$work/replay.log" 2>&1
    verdict $? "pollen replay reproduces the crash file" "$work/replay.log"
elif [ -n "$crash" ]; then
    echo "skip   pollen replay (no $pollen)"
fi

# The finding's own replay line names the target (which is also the
# command line over its scenarios), and works as printed, from the
# directory the fuzzer ran in.
line=$(grep -m1 '^  replay: ' "$work/broadcast.log")
if [ -n "$crash" ]; then
    want="  replay: $bin/fuzz_outbox_broadcast replay ./$(basename "$crash")"
    [ "$line" = "$want --scenario outbox_broadcast" ] &&
        (cd "$work/broadcast" && eval "${line#  replay: }") >"$work/self-replay.log" 2>&1
    verdict $? "the finding's replay command (the target itself) reproduces it" \
        "$work/self-replay.log"
fi

# Checked-in crashers, named <finding kind>-<sha1 prefix>: each must
# still produce its finding, and the fixed twin must survive them all.
# One process per file: a crash ends a libFuzzer process.
finds_each() {
    local exe=$1 name=$2 dir=$3 log=$4 f kind
    : >"$log"
    for f in "$dir"/*; do
        kind=$(basename "$f")
        kind=${kind%-*}
        "$exe" "$f" -artifact_prefix="$work/" >>"$log" 2>&1 && return 1
        grep -q "finding in scenario $name: $kind\$" "$log" || return 1
    done
}

for dir in "$src"/regressions/*; do
    [ -d "$dir" ] || continue
    name=$(basename "$dir")
    twin=$(twin_of "$name")
    [ -n "$twin" ] || continue
    if [ -x "$bin/fuzz_$name" ]; then
        finds_each "$bin/fuzz_$name" "$name" "$dir" "$work/regress-$name.log"
        verdict $? "fuzz_$name still finds its checked-in crashers" "$work/regress-$name.log"
    fi
    if [ -x "$bin/fuzz_$twin" ]; then
        "$bin/fuzz_$twin" -runs=0 "$dir" >"$work/regress-$twin.log" 2>&1
        verdict $? "fuzz_$twin survives the crashers of $name" "$work/regress-$twin.log"
    fi
done

summary
[ "$failed" = 0 ]
