#!/usr/bin/env python3
"""The cluster workload runs, and compare.py can read what it prints.

    python3 tests/bench/check_cluster.py BUILD/tests/bench/pollen-bench

Runs `pollen-bench cluster N --sim` once in this process's child and once
as the median of two runs (the re-executing path), parses every line with
compare.py's own LINE and line_key, and checks the lines a reader of the
figures relies on: each metric of both exchanges (UDP, and the streams'
stream_ lines) for 5 hosts and for 1 host, the sizes it says it ran, that
one host delivers everything, and that crossing links consults decisions
a single host does not (the link model ran). No timing is asserted. Exits 0, or 1 saying why.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

MESSAGES = 4000
WANT = [
    ("ns_per_message", "hosts=5"), ("rss_per_message", "hosts=5"),
    ("decisions_per_message", "hosts=5"), ("ns_per_message", "hosts=1"),
    ("decisions_per_message", "hosts=1"), ("link_cost_ratio", None),
    ("stream_ns_per_message", "hosts=5"), ("stream_decisions_per_message", "hosts=5"),
    ("stream_ns_per_message", "hosts=1"), ("stream_decisions_per_message", "hosts=1"),
    ("stream_link_cost_ratio", None),
]


def fail(msg):
    print("check_cluster: " + msg, file=sys.stderr)
    sys.exit(1)


def run(bench, extra):
    cmd = [bench, "cluster", str(MESSAGES), "--sim"] + extra
    out = subprocess.run(cmd, stdout=subprocess.PIPE, universal_newlines=True, timeout=300)
    if out.returncode != 0:
        fail("%s exited %d" % (" ".join(cmd), out.returncode))
    lines = {}
    for line in out.stdout.splitlines():
        m = compare.LINE.match(line)
        if m is None:
            fail("compare.py cannot parse: %r" % line)
        fields = dict(f.split("=", 1) for f in m.group(6).split())
        if fields.get("messages") != str(MESSAGES):
            fail("ran %s messages, asked for %d: %r" % (fields.get("messages"), MESSAGES, line))
        lines[compare.line_key(m)] = (float(m.group(4)), fields)
    for metric, variant in WANT:
        key = ("cluster", "pollen/sim", metric) + ((variant,) if variant else ())
        if key not in lines:
            fail("no line %s in:\n%s" % (" ".join(key), out.stdout))
    return lines


def check(lines, prefix):
    def value(metric, hosts):
        return lines[("cluster", "pollen/sim", prefix + metric, "hosts=%d" % hosts)]

    across, one = value("decisions_per_message", 5), value("decisions_per_message", 1)
    if not across[0] > one[0] > 0:
        fail("%sdecisions per message: %.2f across hosts, %.2f on one host"
             % (prefix, across[0], one[0]))
    if int(one[1]["delivered"]) != MESSAGES or int(across[1]["delivered"]) == 0:
        fail("%sdelivered %s on one host, %s across hosts" % (prefix, one[1]["delivered"],
                                                              across[1]["delivered"]))


def main():
    if len(sys.argv) != 2:
        fail("usage: check_cluster.py PATH/TO/pollen-bench")
    for extra in ([], ["--runs", "2"]):
        lines = run(sys.argv[1], extra)
        check(lines, "")
        check(lines, "stream_")
        # Run from this (bigger) Python process: a peak read through
        # ru_maxrss, which Linux carries over exec, would show no growth.
        rss = lines[("cluster", "pollen/sim", "rss_per_message", "hosts=5")][0]
        if not rss > 0:
            fail("rss_per_message is %.2f: the peak memory is not this process's own" % rss)


if __name__ == "__main__":
    main()
