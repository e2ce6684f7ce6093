#!/usr/bin/env python3
"""How fast pollen finds each known bug, and how small it explains it.

Usage: hunt.py POLLEN_BINARY [--campaigns 10] [--max-seeds 10000]
               [--fuzz-dir BUILD/fuzz] [--fuzz-time 60] [--only NAME...]

For every scenario with an expected finding (`pollen list --json`):
  - random and pct:3: CAMPAIGNS campaigns over disjoint seed ranges
    (campaign c starts at seed c * 1,000,000), each stopped at its first
    finding; reports the median number of runs and seconds to it;
  - bounded:2: one exploration (it is deterministic); runs and seconds;
  - the shrunk schedule of the first random finding: its non-default
    decisions (from the shrunk replay's header);
  - with --fuzz-dir: the libFuzzer target fuzz_<scenario> run CAMPAIGNS
    times with -seed=1..CAMPAIGNS, median executions and seconds to the
    first crash.
Prints a Markdown table. Every number is measured here, on one core
(-j1), never copied.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time


def pollen_json(binary, args):
    out = subprocess.run([binary] + args, capture_output=True, text=True)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return rows


def scenarios(binary):
    return [r for r in pollen_json(binary, ["list", "--json"]) if r.get("expect")]


def campaign(binary, name, strategy, start, count, outdir, shrink):
    args = ["run", name, "--json", "--out", outdir, "--strategy", strategy]
    if not strategy.startswith("bounded"):
        args += ["-j", "1", "--seeds", f"{start}..{start + count - 1}"]
    if not shrink:
        args.append("--no-shrink")
    t0 = time.monotonic()
    rows = pollen_json(binary, args)
    seconds = time.monotonic() - t0
    summary = next((r["summary"] for r in rows if "summary" in r), None)
    finding = next((r for r in rows if "kind" in r), None)
    if summary is None or finding is None:
        return None
    sc = summary["scenarios"][0]
    return {"runs": sc["runs"], "seconds": sc.get("seconds", seconds), "finding": finding}


def shrunk_nondefault(path):
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = re.search(r"to \d+ \((\d+) non-default\)", line)
                if m:
                    return int(m.group(1))
    except OSError:
        pass
    return None


def fuzz_ttff(fuzz_dir, name, seed, max_time):
    target = os.path.join(fuzz_dir, f"fuzz_{name}")
    if not os.access(target, os.X_OK):
        return None
    with tempfile.TemporaryDirectory() as d:
        t0 = time.monotonic()
        out = subprocess.run([target, f"-seed={seed}", f"-max_total_time={max_time}",
                              "-print_final_stats=1", f"-artifact_prefix={d}/"],
                             capture_output=True, text=True)
        seconds = time.monotonic() - t0
        crashed = any(n.startswith("crash-") for n in os.listdir(d))
    m = re.search(r"stat::number_of_executed_units:\s*(\d+)", out.stderr)
    if not crashed:
        return None
    return {"runs": int(m.group(1)) if m else None, "seconds": seconds}


def seconds_per_run(binary, name, outdir):
    """Per-run time of the scenario's clean twin (fix_X for bug_X, outbox
    for outbox_broadcast) over 2,000 seeds: finding runs stop a campaign
    at its first finding, too soon to time it by itself."""
    twin = "outbox" if name == "outbox_broadcast" else name.replace("bug_", "fix_", 1)
    rows = pollen_json(binary, ["run", twin, "--json", "-j", "1", "--no-shrink", "--out", outdir,
                                "--seeds", "0..1999"])
    summary = next((r["summary"] for r in rows if "summary" in r), None)
    if summary is None or not summary["scenarios"][0]["runs"]:
        return None
    sc = summary["scenarios"][0]
    return sc["seconds"] / sc["runs"]


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(runs, seconds, found, total):
    if runs is None:
        return "not found"
    note = "" if found == total else f" ({found}/{total})"
    if seconds is None:
        return f"{runs:g}{note}"
    return f"{runs:g} / {seconds * 1000:.2f} ms{note}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--campaigns", type=int, default=10)
    ap.add_argument("--max-seeds", type=int, default=10000)
    ap.add_argument("--fuzz-dir")
    ap.add_argument("--fuzz-time", type=int, default=60)
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as out:
        for sc in scenarios(a.binary):
            name = sc["name"]
            if a.only and name not in a.only:
                continue
            cells = {}
            shrunk = None
            per_run = seconds_per_run(a.binary, name, out)
            for strategy in ("random", "pct:3"):
                res = []
                for c in range(a.campaigns):
                    r = campaign(a.binary, name, strategy, c * 1_000_000, a.max_seeds, out,
                                 shrink=(strategy == "random" and c == 0))
                    if r is not None and strategy == "random" and c == 0:
                        shrunk = shrunk_nondefault(r["finding"].get("shrunk") or "")
                    res.append(r)
                found = [r for r in res if r is not None]
                runs = median([r["runs"] for r in found])
                cells[strategy] = fmt(runs, runs * per_run if runs and per_run else None,
                                      len(found), a.campaigns)
            b = campaign(a.binary, name, "bounded:2", 0, 0, out, shrink=False)
            cells["bounded:2"] = (fmt(b["runs"], b["runs"] * per_run if per_run else None, 1, 1)
                                  if b else "not found")
            if a.fuzz_dir:
                fz = [fuzz_ttff(a.fuzz_dir, name, s + 1, a.fuzz_time) for s in range(a.campaigns)]
                found = [r for r in fz if r is not None]
                cells["fuzz"] = fmt(median([r["runs"] for r in found]),
                                    median([r["seconds"] for r in found]) or 0.0,
                                    len(found), a.campaigns)
            rows.append((name, sc["expect"], cells, shrunk))
            print(f"measured {name}", file=sys.stderr)
    cols = ["random", "pct:3", "bounded:2"] + (["fuzz"] if a.fuzz_dir else [])
    print("| scenario | finding | " + " | ".join(cols) + " | shrunk non-default |")
    print("|---|---|" + "---|" * len(cols) + "---|")
    for name, expect, cells, shrunk in rows:
        print(f"| {name} | {expect} | " + " | ".join(cells[c] for c in cols)
              + f" | {shrunk if shrunk is not None else '-'} |")
    print(f"\nCells: median runs (seeds, schedules or fuzzer executions) / time to the "
          f"first finding over {a.campaigns} campaigns of at most {a.max_seeds} seeds "
          f"(bounded:2 is one deterministic exploration; fuzz: -max_total_time="
          f"{a.fuzz_time}, wall time); simulator time = runs x the per-run time of the "
          f"scenario's clean twin; (k/n) when only k of n campaigns found it.")


if __name__ == "__main__":
    main()
