#!/usr/bin/env bash
# fuzz/messages.sh EXE SCENARIO CRASHER: (a file, or the first file of a
# directory) a finding of a fuzz target built
# with the replay driver (-Dfuzzing_engine=none) names the target itself
# in its replay command, never `pollen replay` (a user's scenarios are not
# in the pollen binary), and that command, run as printed, reproduces the
# finding. Run without an input, the driver says it only replays.
set -uo pipefail
exe=${1:?usage: fuzz/messages.sh EXE SCENARIO CRASHER}
name=${2:?}
input=${3:?}
if [ -d "$input" ]; then
    input=$(find "$input" -maxdepth 1 -type f | sort | head -1)
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/pollen-fuzz-messages.XXXXXX")
trap 'rm -rf "$work"' EXIT
status=0
fail() {
    echo "FAILED: $1"
    sed 's/^/    /' "$2"
    status=1
}

{ "$exe" "$input" >"$work/run.log" 2>&1; } 2>/dev/null && fail "$input did not crash" "$work/run.log"
grep -qxF "  replay: $exe replay $input --scenario $name" "$work/run.log" ||
    fail "no replay line naming $exe" "$work/run.log"
! grep -q 'pollen replay' "$work/run.log" || fail "the finding names pollen replay" "$work/run.log"

line=$(grep '^  replay: ' "$work/run.log" | head -1)
(eval "${line#  replay: }") >"$work/replay.log" 2>&1 ||
    fail "the printed replay command did not reproduce the finding" "$work/replay.log"
grep -q '^  reproduced: ' "$work/replay.log" || fail "no 'reproduced' line" "$work/replay.log"

"$exe" >"$work/noinput.log" 2>&1
grep -qF "only replays inputs: $exe FILE|DIR" "$work/noinput.log" ||
    fail "no hint when run without input" "$work/noinput.log"
[ "$status" = 0 ] && echo "ok: $exe names itself in its replay command, which reproduces"
exit $status
