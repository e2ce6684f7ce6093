#!/usr/bin/env bash
# fuzz/oss_fuzz_check.sh: runs the ClusterFuzzLite / OSS-Fuzz build the
# way their builders do, without docker: $SRC/pollen is this checkout,
# .clusterfuzzlite/build.sh is copied to $SRC/build.sh and run in
# $SRC/pollen under the environment of an address-sanitizer libFuzzer
# build (CC, CXX, CFLAGS, CXXFLAGS, LIB_FUZZING_ENGINE, SANITIZER,
# FUZZING_ENGINE; OUT, SRC and WORK in a temporary directory). Checks:
#   - the build succeeds, and $OUT holds the parser, outbox and fix_*
#     targets with their .options, the parser's dictionary and seed corpora;
#   - no target that crashes by design (canary, bug_*, outbox_broadcast);
#   - no target needs libxxhash at run time (the runners do not have it);
#   - every target runs its seed corpus and 200 more inputs (-runs=200)
#     cleanly;
#   - a target is also the command line over its scenarios (`list`).
# Needs clang with libFuzzer. Ends with "N passed, N failed"; exits
# nonzero on a failure.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pollen-oss-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

. "$repo/tests/verdict.sh"

# What OSS-Fuzz's base-builder sets for SANITIZER=address, engine libFuzzer.
export SRC=$tmp/src OUT=$tmp/out WORK=$tmp/work
export CC=clang CXX=clang++
export CFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only \
-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -fsanitize=address \
-fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link"
export CXXFLAGS="$CFLAGS"
export LIB_FUZZING_ENGINE=-fsanitize=fuzzer
export SANITIZER=address FUZZING_ENGINE=libfuzzer FUZZING_LANGUAGE=c ARCHITECTURE=x86_64
mkdir -p "$SRC" "$OUT" "$WORK"
ln -s "$repo" "$SRC/pollen"
# The Dockerfile's COPY .clusterfuzzlite/build.sh $SRC/ and WORKDIR.
cp "$repo/.clusterfuzzlite/build.sh" "$SRC/build.sh"
(cd "$SRC/pollen" && bash -eu "$SRC/build.sh") >"$tmp/build.log" 2>&1
verdict $? "build.sh builds under the builder's environment" "$tmp/build.log"

targets=$(cd "$OUT" && find . -maxdepth 1 -name 'fuzz_*' -type f -perm -u+x | sed 's|^\./||' | sort)
ls -l "$OUT" >"$tmp/out.log" 2>&1
want_ok=0
for t in fuzz_replay_parser fuzz_outbox fuzz_fix_sem_release; do
    echo "$targets" | grep -qx "$t" || want_ok=1
done
for t in $targets; do
    [ -f "$OUT/$t.options" ] || want_ok=1
done
[ -f "$OUT/fuzz_replay_parser.dict" ] || want_ok=1
if command -v zip >/dev/null; then
    [ -f "$OUT/fuzz_outbox_seed_corpus.zip" ] || want_ok=1
fi
verdict $want_ok "\$OUT holds the targets, their options, dictionary and seed corpora" \
    "$tmp/out.log"

! echo "$targets" | grep -Eq '^fuzz_(canary|bug_.*|outbox_broadcast)$'
verdict $? "no target that crashes by design is shipped" "$tmp/out.log"

: >"$tmp/needed.log"
for t in $targets; do
    readelf -d "$OUT/$t" | grep NEEDED | sed "s|^|$t: |" >>"$tmp/needed.log"
done
! grep -q 'libxxhash' "$tmp/needed.log"
verdict $? "no target needs libxxhash at run time" "$tmp/needed.log"

# One target: its seed corpus (as the runner unpacks it), then 200 inputs.
run_one() {
    local t=$1 dir=$tmp/run/$1
    mkdir -p "$dir/corpus"
    if [ -f "$OUT/${t}_seed_corpus.zip" ]; then
        python3 -m zipfile -e "$OUT/${t}_seed_corpus.zip" "$dir/corpus"
    fi
    local dict=()
    [ -f "$OUT/$t.dict" ] && dict=("-dict=$OUT/$t.dict")
    (cd "$dir" && "$OUT/$t" -runs=200 -timeout=10 "${dict[@]}" corpus >"$dir.log" 2>&1) &&
        grep -q '^Done [0-9]* runs' "$dir.log"
    echo "$? $t"
}
export -f run_one
export tmp
echo "$targets" | xargs -P 2 -I{} bash -c 'run_one {}' >"$tmp/runs.txt"
bad=$(awk '$1 != 0 { print $2 }' "$tmp/runs.txt")
for t in $bad; do
    cat "$tmp/run/$t.log" >>"$tmp/bad.log"
done
[ -z "$bad" ] && [ "$(wc -l <"$tmp/runs.txt")" = "$(echo "$targets" | wc -w)" ]
verdict $? "every target runs -runs=200 cleanly ($(echo "$targets" | wc -w) targets)" \
    "$tmp/bad.log"

"$OUT/fuzz_outbox" list >"$tmp/list.log" 2>&1 && grep -q '^outbox ' "$tmp/list.log"
verdict $? "a target is also the command line over its scenarios" "$tmp/list.log"

summary
