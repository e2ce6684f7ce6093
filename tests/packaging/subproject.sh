#!/usr/bin/env bash
# tests/packaging/subproject.sh: pollen used the way a user's project uses
# it. Copies tests/packaging/parent/ into a temporary directory, links this
# checkout in as subprojects/pollen, builds it with -Dwerror=true ($CC, or
# meson's default compiler) and checks:
#   - dependency('pollen'), dependency('pollen-sim') and
#     dependency('pollen-fuzz-replay') resolve to the subproject;
#   - the parent's `meson test` lists the parent's tests and no others,
#     and they pass;
#   - scenarios in a static library: linked whole (link_whole, or
#     -Wl,--whole-archive by hand) or named with PL_SCENARIO_USE they are
#     all there; linked plainly, pl_main exits 2 naming the fix;
#   - the user's fuzz target (replay driver) names itself, not `pollen`,
#     in the replay command of a finding, and that command reproduces it.
# Ends with "N passed, N failed"; exits nonzero on a failure.
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/pollen-subproject.XXXXXX")
trap 'rm -rf "$work"' EXIT
parent=$work/parent
build=$work/build

. "$src/tests/verdict.sh"

cp -r "$src/tests/packaging/parent" "$parent"
mkdir "$parent/subprojects"
ln -s "$src" "$parent/subprojects/pollen"

# Fallback forced: an installed pollen must not stand in for the subproject.
meson setup "$build" "$parent" --buildtype=debug -Dwerror=true \
    --force-fallback-for=pollen,pollen-sim,pollen-fuzz-replay >"$work/setup.log" 2>&1 &&
    meson compile -C "$build" >"$work/compile.log" 2>&1
verdict $? "the parent project builds pollen as a subproject, -Dwerror=true" "$work/compile.log"
if [ "$failed" != 0 ]; then
    tail -n 30 "$work/setup.log"
    summary
    exit 1
fi

grep -q '^Dependency pollen-sim found: YES .*(overridden)' "$work/setup.log" &&
    grep -q '^Dependency pollen found: YES .*(overridden)' "$work/setup.log" &&
    grep -q '^Dependency pollen-fuzz-replay found: YES .*(overridden)' "$work/setup.log"
verdict $? "dependency() finds pollen's overrides" "$work/setup.log"

meson test -C "$build" --list >"$work/list.log" 2>&1
[ "$(grep -v '^ninja: ' "$work/list.log" | sort)" = "$(printf 'relay_clean\nrelay_lost_found')" ]
verdict $? "the parent's meson test lists only the parent's tests" "$work/list.log"

meson test -C "$build" >"$work/test.log" 2>&1
verdict $? "the parent's tests pass" "$build/meson-logs/testlog.txt"

# Scenarios in a static library, linked three ways.
"$src/tests/packaging/static_scenarios.sh" "$build/mytests" "$build/mytests_use" \
    "$build/mytests_dropped" >"$work/static.log" 2>&1
verdict $? "static-library scenarios: link_whole, PL_SCENARIO_USE, a plain link" \
    "$work/static.log"

# The linker line the message gives, by hand.
obj=$(find "$build" -path '*mytests_dropped.p/main.c.o' | head -1)
${CC:-cc} -o "$work/mytests_ld" "$obj" \
    -Wl,--whole-archive "$build/libuser_scenarios.a" -Wl,--no-whole-archive \
    "$build/subprojects/pollen/sim/libpollen-sim.a" "$build/subprojects/pollen/core/libpollen.a" \
    $(pkg-config --libs libxxhash) $(pkg-config --libs libdw 2>/dev/null) -ldl -lpthread \
    >"$work/ld.log" 2>&1 &&
    "$work/mytests_ld" list >>"$work/ld.log" 2>&1 && grep -q '^relay_lost ' "$work/ld.log"
verdict $? "-Wl,--whole-archive by hand: the library's scenarios are listed" "$work/ld.log"

# The user's fuzz target: a finding's replay line names the target itself.
fuzz=$build/fuzz_relay_lost
: >"$work/empty"
# (Braces: the shell's own "Aborted" notice goes to the null device.)
{ "$fuzz" "$work/empty" >"$work/fuzz.log" 2>&1; } 2>/dev/null
rc=$?
want="  replay: $fuzz replay $work/empty --scenario relay_lost"
[ "$rc" != 0 ] && grep -q 'finding in scenario relay_lost: orphan' "$work/fuzz.log" &&
    grep -qxF "$want" "$work/fuzz.log" && ! grep -q 'pollen replay' "$work/fuzz.log"
verdict $? "the fuzz target's finding names the target in its replay command" "$work/fuzz.log"

line=$(grep '^  replay: ' "$work/fuzz.log" | head -1)
eval "${line#  replay: }" >"$work/replay.log" 2>&1 &&
    grep -q 'reproduced: the input produces orphan' "$work/replay.log"
verdict $? "that replay command reproduces the finding" "$work/replay.log"

"$fuzz" >"$work/noinput.log" 2>&1
grep -q "only replays inputs: $fuzz FILE|DIR" "$work/noinput.log"
verdict $? "the replay driver run without input says what it does" "$work/noinput.log"

summary
