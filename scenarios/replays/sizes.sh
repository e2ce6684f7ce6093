#!/usr/bin/env bash
# scenarios/replays/sizes.sh [--check MAX] [DIR]: the shrunk size of every
# committed replay (DIR, default this directory), as the Markdown table
# docs/exploring.md shows: the finding, its departures from production's order
# (non-default decisions), the list's length and the candidate runs its
# shrink took. With --check MAX it prints nothing but fails, naming each
# replay, when one has more than MAX departures. Run it after
# regenerate.sh and paste the table into docs/exploring.md (under "Finding
# bugs faster, and explaining them").
set -euo pipefail
max=""
if [ "${1:-}" = "--check" ]; then
    max="${2:?usage: sizes.sh [--check MAX] [DIR]}"
    shift 2
fi
dir="${1:-$(dirname "$0")}"
[ -n "$max" ] || {
    echo "| scenario | finding | non-default decisions | decisions | candidate runs |"
    echo "|---|---|---:|---:|---:|"
}
status=0
for f in "$dir"/*.replay; do
    row=$(awk '
        /^# shrunk-from / { for (i = 1; i <= NF; i++) if ($i == "runs" || $i == "runs,") runs = $(i - 1) }
        /^scenario / { sc = $2 }
        /^finding / { kind = $2 }
        /^decisions / { len = $2 }
        /^d / {
            for (i = 2; i <= NF; i++) {
                split($i, vr, "*"); split(vr[1], kv, ":")
                if (kv[2] != "0") nz += (vr[2] == "" ? 1 : vr[2])
            }
        }
        END { printf "%s %s %d %d %s\n", sc, kind, nz, len, runs == "" ? "-" : runs }
    ' "$f")
    read -r sc kind nz len runs <<<"$row"
    if [ -n "$max" ]; then
        if [ "$nz" -gt "$max" ]; then
            echo "$(basename "$f"): $nz non-default decisions (more than $max)" >&2
            status=1
        fi
    else
        echo "| $sc | $kind | $nz | $len | $runs |"
    fi
done
exit $status
