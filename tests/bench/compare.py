#!/usr/bin/env python3
"""pollen-bench beside its peers, measured side by side in one run.

    python3 tests/bench/compare.py PEERS_DIR [BUILD_DIR] [--reps R] [--no-smol]
                                   [--asyncio] [--quick] [--build-peers] [--work DIR]
                                   [--fuzz TARGET]

PEERS_DIR is the peers' benchmark folder (run.sh, c/limit.c, rust/: the
same workloads for tokio, smol, asyncio and a C floor). BUILD_DIR (default
build-bench) holds an optimized pollen build; this script builds nothing
of pollen's. The peers' binaries must exist (c/limit,
rust/target/release/tokio_bench and smol_bench unless --no-smol); with
--build-peers the peers' own run.sh builds them first (in PEERS_DIR, or in
a copy under --work DIR when PEERS_DIR is read-only). asyncio
(python/asyncio_bench.py) runs only with --asyncio: one of its rounds
takes minutes.

With --fuzz TARGET (the outbox fuzz target of a clang build with
-Dfuzz=true, ASan and UBSan) every round also runs `pollen-bench fuzz`,
30 s of that target: its executions per second join the table.

Every process runs one workload. A round runs every pollen workload (real
and --sim) and every peer workload once, one after the other; R rounds
(default 5, or the REPS environment variable) interleave them, so a
change in the machine's load reaches every implementation alike. Prints
Markdown: the median of each metric over the rounds (with the spread),
then the ratios the performance goals are stated in, pollen's time or
bytes over the other's (lower is better). Exits 1 when a run fails, 2
when a binary is missing (saying how to build it).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

SIZES = {"pingpong": 2000000, "spawn": 1000000, "timers": 1000000, "outbox": 10000,
         "cluster": 100000, "dispatches": 200000000}
OUTBOX_RUNS = 20
TIMEOUT_S = 600
LINE = re.compile(r"^([a-z_]+) (\S+) ([a-z_]+)=([0-9.eE+-]+) (\S+)(.*)$")

# (label, numerator key, denominator key[, denominator factor]); a key is
# (workload, impl, metric). The goals of the speed work, in this order.
RATIOS = [
    ("pingpong real / tokio", ("pingpong", "pollen", "ns_per_roundtrip"),
     ("pingpong", "tokio", "ns_per_roundtrip")),
    ("spawn ns real / tokio", ("spawn", "pollen", "ns_per_task"),
     ("spawn", "tokio", "ns_per_task")),
    ("spawn ns real / floor", ("spawn", "pollen", "ns_per_task"),
     ("spawn", "c-limit", "ns_per_task")),
    ("spawn bytes real / floor", ("spawn", "pollen", "rss_per_task"),
     ("spawn", "c-limit", "rss_per_task")),
    ("pingpong sim / tokio (real)", ("pingpong", "pollen/sim", "ns_per_roundtrip"),
     ("pingpong", "tokio", "ns_per_roundtrip")),
    ("spawn ns sim / tokio", ("spawn", "pollen/sim", "ns_per_task"),
     ("spawn", "tokio", "ns_per_task")),
    ("timers ns sim / floor", ("timers", "pollen/sim", "ns_per_timer"),
     ("timers", "c-limit/vclock", "ns_per_timer")),
    ("timers bytes sim / floor", ("timers", "pollen/sim", "rss_per_timer"),
     ("timers", "c-limit/vclock", "rss_per_timer")),
    ("outbox ns/item sim / floor", ("outbox", "pollen/sim", "ns_per_item"),
     ("outbox", "c-limit/vclock", "ns_per_item")),
]
# Context, not goals: the floor of a round trip (2 dispatches, hot cache)
# and tokio's paused clock for the virtual-time workloads.
CONTEXT = [
    ("pingpong real / floor (2 x dispatch)", ("pingpong", "pollen", "ns_per_roundtrip"),
     ("limit", "c-limit", "ns_per_dispatch"), 2.0),
    ("timers ns sim / tokio (paused)", ("timers", "pollen/sim", "ns_per_timer"),
     ("timers", "tokio/paused", "ns_per_timer")),
    ("outbox ns/item sim / tokio (paused)", ("outbox", "pollen/sim", "ns_per_item"),
     ("outbox", "tokio/paused", "ns_per_item")),
    # pollen only (the peers simulate no network): what the link model adds.
    ("cluster ns/message 5 hosts / 1 host", ("cluster", "pollen/sim", "ns_per_message",
                                            "hosts=5"),
     ("cluster", "pollen/sim", "ns_per_message", "hosts=1")),
]


def die(msg, code=2):
    print("compare.py: " + msg, file=sys.stderr)
    sys.exit(code)


def parse_args():
    p = argparse.ArgumentParser(description="pollen-bench beside its peers, side by side")
    p.add_argument("peers_dir")
    p.add_argument("build_dir", nargs="?", default="build-bench")
    p.add_argument("--reps", type=int, default=int(os.environ.get("REPS", "5")))
    p.add_argument("--no-smol", dest="smol", action="store_false", help="skip smol_bench")
    p.add_argument("--asyncio", action="store_true",
                   help="run asyncio too (minutes per round; PYTHON= picks the interpreter)")
    p.add_argument("--quick", action="store_true", help="every size /10 (a smoke test)")
    p.add_argument("--build-peers", action="store_true",
                   help="build the peers first with their run.sh (QUICK=1)")
    p.add_argument("--work", help="where --build-peers copies a read-only PEERS_DIR")
    p.add_argument("--fuzz", metavar="TARGET",
                   help="the outbox fuzz target: pollen-bench fuzz runs it 30 s per round")
    a = p.parse_args()
    if a.reps < 1:
        die("--reps must be at least 1")
    return a


def build_peers(a, peers):
    """Runs the peers' run.sh (a quick smoke run that builds everything)."""
    only = "c tokio smol" if a.smol else "c tokio"
    env = dict(os.environ, QUICK="1", ONLY=only)
    if not os.access(peers, os.W_OK):
        work = a.work or tempfile.mkdtemp(prefix="pollen-peers-")
        env["PEERS_OUT"] = work
        peers = work
    print("# building the peers: ONLY=\"%s\" QUICK=1 run.sh" % only, file=sys.stderr)
    rc = subprocess.call(["bash", os.path.join(a.peers_dir, "run.sh")], env=env,
                         stdout=sys.stderr)
    if rc != 0:
        die("the peers' run.sh failed (exit %d)" % rc, 1)
    return peers


def binaries(a, peers):
    bench = os.path.join(a.build_dir, "tests", "bench", "pollen-bench")
    found = {"pollen": bench, "c": os.path.join(peers, "c", "limit"),
             "tokio": os.path.join(peers, "rust", "target", "release", "tokio_bench")}
    if a.smol:
        found["smol"] = os.path.join(peers, "rust", "target", "release", "smol_bench")
    how = {
        "pollen": "meson setup %s --buildtype=release -Doptimization=2 -Dtests=disabled && "
                  "meson compile -C %s" % (a.build_dir, a.build_dir),
        "c": "gcc -O2 -o PEERS_DIR/c/limit PEERS_DIR/c/limit.c, or rerun with --build-peers",
        "tokio": "PEERS_DIR/run.sh (QUICK=1 ONLY=\"c tokio smol\"; PEERS_OUT=DIR when "
                 "PEERS_DIR is read-only, then pass DIR), or rerun with --build-peers",
    }
    how["smol"] = how["tokio"]
    missing = [k for k, path in found.items() if not os.access(path, os.X_OK)]
    for k in missing:
        print("compare.py: missing %s (%s); build it with: %s" % (k, found[k], how[k]),
              file=sys.stderr)
    if missing:
        sys.exit(2)
    if a.asyncio:
        found["asyncio"] = os.path.join(peers, "python", "asyncio_bench.py")
        if not os.path.isfile(found["asyncio"]):
            die("missing asyncio (%s): PEERS_DIR has no python/" % found["asyncio"])
    return found


def commands(b, quick, fuzz):
    n = {k: (v // 10 if quick else v) for k, v in SIZES.items()}
    p = b["pollen"]
    cmds = [[p, "fuzz", "3" if quick else "30"]] if fuzz else []
    cmds += [
        [p, "pingpong", str(n["pingpong"])],
        [p, "spawn", str(n["spawn"])],
        [p, "pingpong", str(n["pingpong"]), "--sim"],
        [p, "spawn", str(n["spawn"]), "--sim"],
        [p, "timers", str(n["timers"]), "--sim"],
        [p, "outbox", str(n["outbox"]), "--sim"],
        [p, "campaign"],
        [p, "cluster", str(n["cluster"]), "--sim"],
        [b["c"], "dispatch", "2", str(n["dispatches"])],
        [b["c"], "spawn", str(n["spawn"])],
        [b["c"], "timers", str(n["timers"])],
        [b["c"], "outbox", str(n["outbox"]), str(OUTBOX_RUNS)],
        [b["tokio"], "pingpong", str(n["pingpong"])],
        [b["tokio"], "spawn", str(n["spawn"])],
        [b["tokio"], "timers", str(n["timers"]), "paused"],
        [b["tokio"], "outbox", str(n["outbox"]), str(OUTBOX_RUNS)],
    ]
    if "smol" in b:
        s = b["smol"]
        cmds += [
            [s, "pingpong", str(n["pingpong"])],
            [s, "spawn", str(n["spawn"])],
            [s, "timers", str(n["timers"]), "vclock"],
            [s, "outbox", str(n["outbox"]), str(OUTBOX_RUNS), "vclock"],
        ]
    if "asyncio" in b:
        py = [os.environ.get("PYTHON", sys.executable), b["asyncio"]]
        cmds += [
            py + ["pingpong", str(n["pingpong"])],
            py + ["spawn", str(n["spawn"])],
            py + ["timers", str(n["timers"]), "vclock"],
            py + ["outbox", str(n["outbox"]), "3", "vclock"],
        ]
    return cmds


def line_key(m):
    """(workload, impl, metric[, variant]): tasks=, scenario= and hosts= tell lines apart."""
    variant = " ".join(f for f in m.group(6).split()
                       if f.startswith(("tasks=", "scenario=", "hosts=")))
    return (m.group(1), m.group(2), m.group(3)) + ((variant,) if variant else ())


def run_one(cmd, values, units):
    """Runs one benchmark process and files its lines. Returns True on success."""
    try:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print("# FAILED (timeout): %s" % " ".join(cmd), file=sys.stderr)
        return False
    if out.returncode != 0:
        print("# FAILED (exit %d): %s\n%s" % (out.returncode, " ".join(cmd),
                                              out.stderr.strip()[-800:]), file=sys.stderr)
        return False
    for line in out.stdout.splitlines():
        m = LINE.match(line)
        if m is None:
            continue
        print(line, file=sys.stderr)
        key = line_key(m)
        values.setdefault(key, []).append(float(m.group(4)))
        units[key] = m.group(5)
    return True


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def fmt(v):
    if v >= 1000:
        return "%.0f" % v
    return "%.1f" % v if v >= 10 else "%.2f" % v


def lookup(values, key):
    """The median of a key, or of its first variant (limit: tasks=2)."""
    if key in values:
        return statistics.median(values[key])
    variants = sorted(k for k in values if k[:3] == key)
    for k in variants:
        if k[3] == "tasks=2" or len(variants) == 1:
            return statistics.median(values[k])
    return None


def unit_of(units, key):
    """The unit of a key or of its first variant; B and bytes are one unit."""
    u = units.get(key) or next((units[k] for k in sorted(units) if k[:3] == key), "")
    return "bytes" if u == "B" else u


def print_tables(values, units, reps):
    print("| workload | impl | metric | median | unit | min..max |")
    print("|---|---|---|---:|---|---|")
    for key in sorted(values):
        v = values[key]
        metric = key[2] + (" " + key[3] if len(key) > 3 else "")
        print("| %s | %s | %s | %s | %s | %s..%s |" % (
            key[0], key[1], metric, fmt(statistics.median(v)), unit_of(units, key), fmt(min(v)),
            fmt(max(v))))
    print()
    print("| ratio (pollen / other; lower is better) | pollen | other | ratio |")
    print("|---|---:|---:|---:|")
    for row in RATIOS + CONTEXT:
        label, num, den = row[:3]
        factor = row[3] if len(row) > 3 else 1.0
        a, b = lookup(values, num), lookup(values, den)
        if a is None or b is None or b == 0:
            print("| %s | %s | %s | n/a |" % (label, "n/a" if a is None else fmt(a),
                                             "n/a" if b is None else fmt(b * factor)))
            continue
        print("| %s | %s %s | %s %s | %.2f |" % (label, fmt(a), unit_of(units, num),
                                                fmt(b * factor), unit_of(units, den),
                                                a / (b * factor)))
    print()
    print("Medians of %d interleaved rounds; the last %d rows are context, not goals."
          % (reps, len(CONTEXT)))


def main():
    a = parse_args()
    peers = a.peers_dir
    if not os.path.isdir(peers):
        die("no such directory: %s (the peers' benchmarks: run.sh, c/, rust/)" % peers)
    if a.build_peers:
        peers = build_peers(a, peers)
    b = binaries(a, peers)
    cmds = commands(b, a.quick, a.fuzz)
    if a.fuzz:
        if not os.access(a.fuzz, os.X_OK):
            die("--fuzz: no executable %s (build-fuzz/fuzz/fuzz_outbox: see "
                "tests/bench/README.md)" % a.fuzz)
        os.environ["POLLEN_FUZZ_TARGET"] = os.path.abspath(a.fuzz)
    values, units = {}, {}
    failed = 0
    load0 = loadavg()
    for r in range(a.reps):
        print("# round %d/%d (load %s)" % (r + 1, a.reps, loadavg()), file=sys.stderr)
        for cmd in cmds:
            failed += 0 if run_one(cmd, values, units) else 1
    print("Load average (1/5/15 min): %s before, %s after; %d cores.\n"
          % (load0, loadavg(), os.cpu_count() or 0))
    print_tables(values, units, a.reps)
    if failed:
        die("%d benchmark run(s) failed (see above)" % failed, 1)


if __name__ == "__main__":
    main()
