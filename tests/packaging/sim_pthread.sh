#!/usr/bin/env bash
# tests/packaging/sim_pthread.sh: an unmodified pthread program built
# against an installed pollen with the one compile line of docs/threads.md.
#
# Installs this checkout into a temporary prefix (-Dtests=disabled
# -Dbench=false), takes the block docs/threads.md marks `test-block pthread`
# (tests/packaging/readme_block.py) and runs its lines as written with
# bash -e in a directory holding a plain pthread program as prog.c:
#   - a clean program (scenarios/pthread/lock_order_fixed.c): the lines
#     build it and its campaign runs clean;
#   - a bug (scenarios/pthread/lock_order.c): the same lines build it,
#     and the campaign exits 13 (a deadlock) with a replay file that
#     `./prog replay` reproduces;
#   - pollen-sim-pthread.pc is installed beside pollen-sim.pc, and
#     pollen/sim_pthread.h under the include directory.
# Ends with "N passed, N failed"; exits nonzero on a failure.
set -uo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/pollen-pthread.XXXXXX")
trap 'rm -rf "$work"' EXIT

. "$src/tests/verdict.sh"

python3 "$src/tests/packaging/readme_block.py" "$src/docs/threads.md" pthread "$work/pthread.sh" \
    2>"$work/extract.log"
verdict $? "docs/threads.md marks the pthread compile line" "$work/extract.log"

prefix=$work/prefix
{
    meson setup "$work/build" "$src" --prefix="$prefix" -Dtests=disabled -Dbench=false &&
        meson install -C "$work/build"
} >"$work/install.log" 2>&1
verdict $? "pollen installs into a temporary prefix" "$work/install.log"
if [ "$failed" != 0 ]; then
    summary
    exit 1
fi

libdir=$(meson configure "$work/build" | awk '$1 == "libdir" {print $2}')
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
[ -f "$PKG_CONFIG_PATH/pollen-sim-pthread.pc" ] && [ -f "$PKG_CONFIG_PATH/pollen-sim.pc" ] &&
    [ -f "$prefix/include/pollen/sim_pthread.h" ] &&
    [ -f "$prefix/$libdir/libpollen-sim-pthread.a" ]
verdict $? "pollen-sim-pthread.pc, pollen/sim_pthread.h and the library are installed"

# The block's lines as written, in a directory holding prog.c. $1: the
# program; the rest of this script reads what the block built.
run_block() {
    local dir=$work/$1
    mkdir -p "$dir"
    cp "$src/scenarios/pthread/$1.c" "$dir/prog.c"
    (cd "$dir" && bash -e "$work/pthread.sh") >"$dir.log" 2>&1
}

run_block lock_order_fixed
verdict $? "the documented lines build a clean pthread program and its campaign is clean" \
    "$work/lock_order_fixed.log"

run_block lock_order
rc=$?
[ "$rc" = 13 ] && grep -q "FINDING deadlock in main" "$work/lock_order.log"
verdict $? "the same lines build the lock-order bug and its campaign finds the deadlock (exit $rc)" \
    "$work/lock_order.log"
replay=$(ls "$work"/lock_order/pollen-out/main-seed*.replay 2>/dev/null | grep -v shrunk | head -1)
[ -n "$replay" ] && (cd "$work/lock_order" && ./prog replay "$replay") >"$work/replay.log" 2>&1 &&
    grep -q "reproduced: deadlock" "$work/replay.log"
verdict $? "its replay file reproduces the deadlock" "$work/replay.log"

summary
