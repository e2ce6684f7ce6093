#!/usr/bin/env bash
# tests/packaging/static_scenarios.sh WHOLE USE DROPPED: three pl_main
# binaries over the same static library of scenarios (parent/scenarios.c):
# WHOLE linked with link_whole, USE with link_with and PL_SCENARIO_USE,
# DROPPED with link_with alone. The first two list the library's
# scenarios; DROPPED exits 2 naming each fix and still answers --help.
set -uo pipefail
whole=${1:?usage: static_scenarios.sh WHOLE USE DROPPED}
use=${2:?}
dropped=${3:?}
log=$(mktemp "${TMPDIR:-/tmp}/pollen-static.XXXXXX")
trap 'rm -f "$log"' EXIT
status=0
check() {
    if [ "$1" = 0 ]; then
        echo "ok     $2"
    else
        echo "FAILED $2"
        sed 's/^/    /' "$log"
        status=1
    fi
}
lists_both() { "$1" list >"$log" 2>&1 && grep -q '^relay ' "$log" && grep -q '^relay_lost ' "$log"; }

lists_both "$whole"
check $? "link_whole: the library's scenarios are listed"
lists_both "$use"
check $? "PL_SCENARIO_USE: the library's scenarios are listed"

"$dropped" list >"$log" 2>&1
rc=$?
[ "$rc" = 2 ] && grep -q 'no scenarios are linked into this program' "$log" &&
    grep -q 'link_whole' "$log" && grep -q -- '-Wl,--whole-archive' "$log" &&
    grep -q 'PL_SCENARIO_USE' "$log"
check $? "plain link_with: pl_main exits 2 and names the fix (exit $rc)"
"$dropped" --help >"$log" 2>&1
check $? "plain link_with: --help still works"
exit $status
