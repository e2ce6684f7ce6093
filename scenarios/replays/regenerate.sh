#!/usr/bin/env bash
# scenarios/replays/regenerate.sh BUILD_DIR: rewrites the committed
# replays, one shrunk replay per known-bug scenario, from a fresh
# campaign. The `replays` test suite replays them and fails when a run no
# longer reproduces its finding and trace hash exactly; when a change
# alters behaviour on purpose, regenerate them in the same commit.
set -euo pipefail
cd "$(dirname "$0")"
pollen="${1:?usage: regenerate.sh BUILD_DIR}/scenarios/pollen"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for name in $("$pollen" list | awk 'NR > 1 && $2 != "-" && $1 !~ /^selftest/ { print $1 }'); do
    "$pollen" run "$name" --seeds 0..9999 --out "$out" --quiet -j 1 >/dev/null 2>&1 || true
    shrunk=$(ls "$out/$name"-*.shrunk.replay 2>/dev/null | head -1)
    if [ -z "$shrunk" ]; then
        echo "no finding for $name" >&2
        exit 1
    fi
    cp "$shrunk" "$name.replay"
    echo "$name.replay"
done
