#!/usr/bin/env bash
# tests/run-all.sh: the whole test run, as CI does it.
#
#   1. gcc, -O2, -Dwerror=true: build and every test suite (the test setup
#      `full`: the `campaigns` suite too, which a plain `meson test` leaves
#      out), including the fuzz regressions replayed by the standalone
#      driver;
#   2. clang, -O0, ASan + UBSan (fatal) + LeakSanitizer: build and every
#      test suite (the golden trace hash test runs in both builds, so the
#      same seed must give the same hash under gcc -O2 and clang -O0 with
#      sanitizers);
#   3. clang + libFuzzer: build the fuzz targets and run the fuzz smoke
#      test, then the OSS-Fuzz / ClusterFuzzLite build under the builders'
#      environment (fuzz/oss_fuzz_check.sh) (skip both with POLLEN_SKIP_FUZZ=1);
#   4. packaging, gcc: pollen as a meson subproject of a user's project
#      (tests/packaging/subproject.sh), and README's install recipe run
#      as written into a temporary prefix, a user's program built against
#      it through pkg-config (tests/packaging/install.sh), and a plain
#      pthread program built against it with the one compile line of
#      docs/threads.md (tests/packaging/sim_pthread.sh).
# Ends with one line "N passed, N failed" counting every test case.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/deps.sh
pollen_install_deps dwarves || { echo "pollen: could not install the packages"; exit 2; }

out=${POLLEN_BUILD_ROOT:-build-ci}
status=0
SECONDS=0

# A phase's header, with the time spent so far: CI must stay under 20
# minutes on 2 cores, and this says where the time went.
phase() { echo "== $* (at ${SECONDS} s)" >&2; }
logs=()

build_and_test() {
    local dir=$1
    shift
    phase "$dir: $*"
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; return 1; }
    fi
    meson compile -C "$dir" || return 1
    meson test -C "$dir" --setup full --num-processes 2 --print-errorlogs || status=1
    # meson names a setup's log after it: testlog-full.json.
    logs+=("$dir/meson-logs/testlog-full.json")
}

mkdir -p "$out"
CC=gcc build_and_test "$out/gcc" -Dwerror=true --buildtype=debugoptimized \
    -Dfuzz=true -Dfuzzing_engine=none \
    -Dbench=true || status=1
CC=clang build_and_test "$out/clang-asan" --buildtype=debug \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbench=false || status=1

fuzz_result=""
if [ "${POLLEN_SKIP_FUZZ:-0}" != 1 ] && [ -x fuzz/smoke.sh ]; then
    phase "fuzz smoke"
    dir="$out/fuzz"
    if [ ! -f "$dir/build.ninja" ]; then
        CC=clang meson setup "$dir" -Dfuzz=true -Dtests=disabled -Dbench=false \
            -Db_sanitize=address,undefined -Db_lundef=false >"$dir.setup.log" 2>&1 ||
            cat "$dir.setup.log"
    fi
    # Only the targets the smoke test runs; the OSS-Fuzz build below
    # builds every one.
    if meson compile -C "$dir" $(fuzz/smoke.sh --targets) &&
        fuzz/smoke.sh "$dir" "$out/gcc"; then
        fuzz_result=pass
    else
        fuzz_result=fail
        status=1
    fi
fi

oss_fuzz_result=""
if [ "${POLLEN_SKIP_FUZZ:-0}" != 1 ]; then
    phase "OSS-Fuzz build"
    if fuzz/oss_fuzz_check.sh; then
        oss_fuzz_result=pass
    else
        oss_fuzz_result=fail
        status=1
    fi
fi

phase "packaging"
if CC=gcc tests/packaging/subproject.sh; then
    packaging_result=pass
else
    packaging_result=fail
    status=1
fi
if CC=gcc tests/packaging/install.sh; then
    install_result=pass
else
    install_result=fail
    status=1
fi
if CC=gcc tests/packaging/sim_pthread.sh; then
    sim_pthread_result=pass
else
    sim_pthread_result=fail
    status=1
fi

phase "done"
python3 tests/count.py "${logs[@]}" ${fuzz_result:+--extra fuzz_smoke=$fuzz_result} \
    ${oss_fuzz_result:+--extra oss_fuzz_build=$oss_fuzz_result} \
    --extra packaging_subproject=$packaging_result \
    --extra packaging_install=$install_result \
    --extra packaging_sim_pthread=$sim_pthread_result || status=1
exit $status
