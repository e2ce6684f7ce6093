#!/usr/bin/env bash
# scenarios/campaign.sh: pollen's main job, from a fresh machine.
#
# Installs what is missing, builds pollen, and runs a campaign over the
# outbox relay that signals with notify_waiters: 4 relay workers, 1
# listener, a lost wakeup that strands an item when every worker is busy
# relaying at the moment of the broadcast. The simulator finds it, saves a
# replay file, shrinks it, and prints the one-line command that
# reproduces it. Extra arguments go to `pollen run` (e.g. --seeds 0..99999,
# --strategy pct:3, --jobs 2). Exits 0 when the known bug is found.
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/deps.sh
pollen_install_deps || { echo "pollen: could not install the packages" >&2; exit 2; }

build=${POLLEN_BUILD:-build}
if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" --buildtype=release -Dtests=disabled >/dev/null ||
        { echo "pollen: meson setup failed" >&2; exit 3; }
fi
meson compile -C "$build" scenarios/pollen >/dev/null || { echo "pollen: build failed" >&2; exit 3; }

"$build/scenarios/pollen" run outbox_broadcast --seeds 0..9999 --out pollen-out "$@"
status=$?
# pollen exits 10 + the finding's kind; this scenario is a known bug whose
# expected finding is a deadlock (13). Finding it is the job done.
case "$status" in
13) echo "campaign.sh: found the known bug (exit status 13: deadlock); the replay command is above" >&2
    exit 0 ;;
0|4) echo "campaign.sh: no finding in these seeds, which is unexpected for this scenario" >&2
    exit 1 ;;
*)  exit "$status" ;;
esac
