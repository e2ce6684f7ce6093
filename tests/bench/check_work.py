#!/usr/bin/env python3
"""The work-per-unit lines under --sim: present, parseable, and right.

    python3 tests/bench/check_work.py BUILD/tests/bench/pollen-bench

Ping-pong's round trip is two polls by construction (ping's and pong's),
so polls_per_roundtrip must read 2.00 give or take the main task's few;
spawn's task is polled at least twice (it parks, then finishes); every
workload hashes events and the outbox consults decisions. The real
backend prints none of these lines (it has no trace). The fuzz workload
runs a stand-in target (a script printing libFuzzer's final statistics,
or failing): its line carries the target's figures, a failing target
fails it, and no target at all skips it (exit 77). No timing is
asserted; the time lines are checked to read the real clock, not the
run's virtual one. Exits 0, or 1 saying why.
"""

import os
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

RUNS = [("pingpong", "2000", "roundtrip"), ("spawn", "2000", "task"),
        ("timers", "2000", "timer"), ("outbox", "100", "item")]


def fail(msg):
    print("check_work: " + msg, file=sys.stderr)
    sys.exit(1)


def lines_of(bench, args):
    out = subprocess.run([bench] + args, stdout=subprocess.PIPE, universal_newlines=True,
                         timeout=300)
    if out.returncode != 0:
        fail("%s exited %d" % (" ".join(args), out.returncode))
    found = {}
    for line in out.stdout.splitlines():
        m = compare.LINE.match(line)
        if m is None:
            fail("compare.py cannot parse: %r" % line)
        found[m.group(3)] = float(m.group(4))
    return found, out.stdout


def fake_target(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, stat.S_IRWXU)


def check_fuzz(bench):
    env = dict(os.environ)
    env.pop("POLLEN_FUZZ_TARGET", None)
    out = subprocess.run([bench, "fuzz", "1"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    if out.returncode != 77 or "POLLEN_FUZZ_TARGET" not in out.stderr:
        fail("fuzz without a target: exit %d, %r" % (out.returncode, out.stderr))
    with tempfile.TemporaryDirectory() as d:
        target = os.path.join(d, "fuzz_outbox")
        fake_target(target, "echo 'stat::number_of_executed_units: 4321' >&2\n"
                            "echo 'stat::average_exec_per_sec:     1234' >&2\n")
        env["POLLEN_FUZZ_TARGET"] = target
        out = subprocess.run([bench, "fuzz", "1"], env=env, stdout=subprocess.PIPE,
                             universal_newlines=True, timeout=60)
        want = "fuzz pollen/sim execs_per_sec=1234 1/s seconds=1 runs=4321"
        if out.returncode != 0 or out.stdout.strip() != want:
            fail("fuzz with a stand-in target: exit %d, %r, want %r"
                 % (out.returncode, out.stdout, want))
        fake_target(target, "echo '==1== ERROR: libFuzzer: deadly signal' >&2\nexit 1\n")
        out = subprocess.run([bench, "fuzz", "1"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        if out.returncode == 0 or out.stdout.strip():
            fail("fuzz with a failing target: exit 0 or a figure: %r" % out.stdout)


def main():
    bench = sys.argv[1]
    check_fuzz(bench)
    for workload, n, unit in RUNS:
        found, text = lines_of(bench, [workload, n, "--sim"])
        work = {w: found.get("%s_per_%s" % (w, unit)) for w in ("polls", "events", "decisions")}
        if None in work.values():
            fail("%s --sim: no %s_per_%s lines in:\n%s" % (workload, "polls/events/decisions",
                                                           unit, text))
        if work["events"] < work["polls"]:
            fail("%s: fewer events than polls (every poll is an event): %r" % (workload, work))
        if workload == "pingpong" and not 2.0 <= work["polls"] <= 2.01:
            fail("pingpong: %.2f polls per round trip, two by construction" % work["polls"])
        if workload == "spawn" and work["polls"] < 2.0:
            fail("spawn: %.2f polls per task, at least two" % work["polls"])
        if workload == "outbox" and work["decisions"] <= 0:
            fail("outbox: no decisions consulted: %r" % work)
        # The region is timed inside a run, where clock_gettime reads
        # virtual time unless the harness turns routing off: ping-pong's
        # virtual clock never moves (0 ns exactly) and the outbox's moves
        # 1 ms per item (1,000,000 ns exactly). A real clock gives neither.
        ns = found.get("ns_per_%s" % unit)
        virtual = {"pingpong": 0.0, "outbox": 1e6}.get(workload)
        if ns is None or (virtual is not None and ns == virtual):
            fail("%s --sim: ns_per_%s is %r, the run's virtual clock, not the real one"
                 % (workload, unit, ns))
    found, text = lines_of(bench, ["pingpong", "2000"])
    if any(k.endswith("_per_roundtrip") and k != "ns_per_roundtrip" for k in found):
        fail("the real backend printed work lines:\n" + text)
    print("check_work: the work lines of %d workloads, the fuzz workload's" % len(RUNS))


if __name__ == "__main__":
    main()
