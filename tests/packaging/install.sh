#!/usr/bin/env bash
# tests/packaging/install.sh: README's install recipe, run as written.
# Takes the blocks the documents mark `test-block NAME` (README.md:
# install; docs/using.md: fuzz; docs/guide.md: criterion-build, shell
# lines, and criterion, a test file) with
# tests/packaging/readme_block.py and runs them with bash -e in a
# temporary directory that holds this checkout as pollen/ (a link) and a
# user's relay.c and main.c (tests/packaging/parent/: the scenario
# `relay`, pl_main), with HOME there too, so "$HOME/.local" is a
# temporary prefix. Checks:
#   - the install block runs: setup, install, the PKG_CONFIG_PATH it
#     exports, the user's program linked through pkg-config and its
#     campaign `./mytests run relay --seeds 0..9`;
#   - the .pc files are in the pkgconfig/ directory that block names, and
#     the build holds nothing of tests/ (no test suite, no benchmark);
#   - the guide's Criterion test (`test-block criterion`, as test_relay.c)
#     builds and passes with the guide's lines (`test-block criterion-build`);
#   - the fuzz block's pkg-config line names the installed driver's
#     sources; with clang's libFuzzer (not under POLLEN_SKIP_FUZZ=1) the
#     whole block runs, its 600 s cut to 1000 runs;
#   - the replay driver ($F/main.c in place of libFuzzer) links the same
#     target under $CC and replays an input.
# Ends with "N passed, N failed"; exits nonzero on a failure.
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/pollen-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

. "$src/tests/verdict.sh"

user=$work/user
mkdir -p "$user" "$work/home"
ln -s "$src" "$user/pollen"
cp "$src/tests/packaging/parent/scenarios.c" "$user/relay.c"
cp "$src/tests/packaging/parent/main.c" "$user/main.c"
for block in README.md:install docs/using.md:fuzz docs/guide.md:criterion \
    docs/guide.md:criterion-build; do
    doc=${block%%:*}
    name=${block#*:}
    python3 "$src/tests/packaging/readme_block.py" "$src/$doc" "$name" "$work/$name.sh" \
        2>"$work/$name.extract.log"
    verdict $? "$doc marks the $name recipe" "$work/$name.extract.log"
done
if [ "$failed" != 0 ]; then
    summary
    exit 1
fi

# The block's own lines, then what the rest of this script needs from
# them (the user's shell keeps PKG_CONFIG_PATH the same way).
printf 'set -e\n' >"$work/run_install.sh"
cat "$work/install.sh" >>"$work/run_install.sh"
printf 'printf "%%s\\n" "$PKG_CONFIG_PATH" >%q\n' "$work/pkg_config_path" >>"$work/run_install.sh"
(cd "$user" && HOME=$work/home bash "$work/run_install.sh") >"$work/install.log" 2>&1
rc=$?
[ "$rc" = 0 ] && grep -q '^relay: 10 runs, 0 findings' "$work/install.log"
verdict $? "the install recipe installs, links a user's scenario through pkg-config and runs it" \
    "$work/install.log"
if [ "$rc" != 0 ]; then
    summary
    exit 1
fi

export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(cat "$work/pkg_config_path")
pcdir=${PKG_CONFIG_PATH%%:*}
case $pcdir in "$work/home/.local/"*/pkgconfig) true ;; *) false ;; esac &&
    [ -f "$pcdir/pollen.pc" ] && [ -f "$pcdir/pollen-sim.pc" ] &&
    [ "$(pkg-config --variable=prefix pollen)" = "$work/home/.local" ]
verdict $? "the .pc files are in the directory the recipe exports ($pcdir)" "$work/install.log"

tested=$(python3 -c 'import json, os, sys
src = os.path.realpath(sys.argv[2]) + "/tests/"
print(" ".join(sorted(t["name"] for t in json.load(open(sys.argv[1]))
                      if os.path.realpath(t["defined_in"]).startswith(src))))' \
    "$user/build-pollen/meson-info/intro-targets.json" "$src")
[ -z "$tested" ]
verdict $? "-Dtests=disabled -Dbench=false builds no test or benchmark (got: ${tested:-none})"

# The guide's Criterion test in a file of its own, built and run by the
# guide's lines against the installed pollen, the scenario in relay.c.
cp "$work/criterion.sh" "$user/test_relay.c"
(cd "$user" && bash -e "$work/criterion-build.sh") >"$work/criterion.log" 2>&1 &&
    grep -q 'Synthesis: Tested: 1 | Passing: 1 | Failing: 0 | Crashing: 0' "$work/criterion.log"
verdict $? "the guide's Criterion test builds apart from its scenario and passes" \
    "$work/criterion.log"

# The fuzz recipe: its first line, then (with libFuzzer) all of it.
first=$(head -n 1 "$work/fuzz.sh")
[ "$first" = 'F=$(pkg-config --variable=prefix pollen)/share/pollen/fuzz' ] &&
    eval "$first" && [ -f "$F/fuzz_scenario.c" ] && [ -f "$F/common.c" ] &&
    [ -f "$F/fuzz.h" ] && [ -f "$F/main.c" ]
verdict $? "the fuzz recipe's pkg-config line names the installed driver (${F:-unset})"

: >"$work/empty"
${CC:-cc} -DPL_FUZZ_SCENARIO='"relay"' -I"$F" "$F/fuzz_scenario.c" "$F/common.c" "$F/main.c" \
    "$user/relay.c" $(pkg-config --cflags --libs pollen-sim) -o "$work/fuzz_relay_replay" \
    >"$work/replay_driver.log" 2>&1 &&
    "$work/fuzz_relay_replay" "$work/empty" >>"$work/replay_driver.log" 2>&1
verdict $? "the replay driver (\$F/main.c) links the same target and replays an input" \
    "$work/replay_driver.log"

if [ "${POLLEN_SKIP_FUZZ:-0}" = 1 ]; then
    echo "(POLLEN_SKIP_FUZZ=1: the libFuzzer build of the fuzz recipe is left out)"
else
    sed 's/-max_total_time=600$/-runs=1000/' "$work/fuzz.sh" >"$work/fuzz_short.sh"
    grep -q -- '-runs=1000$' "$work/fuzz_short.sh" &&
        (cd "$user" && bash -e "$work/fuzz_short.sh") >"$work/fuzz.log" 2>&1 &&
        grep -q '^Done 1000 runs' "$work/fuzz.log"
    verdict $? "the fuzz recipe builds a libFuzzer target with clang and runs it" "$work/fuzz.log"
fi

summary
