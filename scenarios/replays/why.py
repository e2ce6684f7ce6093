#!/usr/bin/env python3
"""scenarios/replays/why.py POLLEN [DIR] [--table]: `pollen why` over every
committed replay (DIR, default this directory).

Checks, for each replay:
  - the answer is deterministic: the first replay's JSON twice, byte for byte;
  - every passing twin passes: each departure from production's order, set
    back to production's choice alone, makes the run pass;
  - the point of no return lies within one simulator step of the shrunk
    schedule's last departure (the step of the decision that completes the
    point's prefix against the step of the list's last non-default
    decision), except for the replays of EXCEPTIONS, where `why` measures
    something else and says why; an exception that comes within one step
    fails too, so the list stays what `why` answers. A replay without a
    departure (production's own schedule fails) has no decisive decision:
    only its point is printed.
With --table it prints the Markdown table docs/guide.md shows instead.
"""
import json
import os
import subprocess
import sys

# Replays whose point of no return is not within one step of their last
# departure, each with what `pollen why` shows instead (10 continuations
# per prefix, the default).
EXCEPTIONS = {
    # Random runs hit these bugs at least 9 times in 10 from the start: the
    # departure makes production's own schedule fail, not random ones.
    "bug_edge_notify": "inevitable from the start",
    "bug_prefetch_leak": "inevitable from the start",
    # The failure also needs later production choices: a FIFO poll two
    # steps after the departure (random continuations reorder it).
    "bug_node_register_late": "a later FIFO poll",
    "bug_reply_busy": "a later FIFO poll",
    # The node paused at step 6 fails for sure only once it resumes (step
    # 88) with its link at production's latency: random latency there
    # avoids the failure half the time.
    "bug_lease_pause": "the link's latency at the resume",
    # The client stuck on a backup that does not lead is rescued by any
    # later fault that makes the backup take over (a long isolation of the
    # primary) until faults stop at 150 ms: random continuations rescue it
    # 3 times in 10 from the cut on, and the point comes near the quiet
    # phase (step 301, 124 ms).
    "bug_failover_stick": "faults before the quiet phase rescue it",
    # The leader isolated at step 6 (0.5 ms) meets a second leader only if
    # the election 100 ms later succeeds while the cut lasts: a random
    # continuation spoils it about 1 time in 5 (a vote lost to io_fault or
    # link_loss, a late tick, a split vote), so 10 of 10 continuations fail
    # only from a prefix close to the election (step 18, 80 ms).
    "bug_isolated_leader": "faults at the election spoil it",
}

# A livelock's runs each run in a child under this CPU budget per poll;
# the default (1 s) would make the three livelock replays take a minute.
POLL_BUDGET = "50ms"


def why(pollen, path):
    out = subprocess.run([pollen, "why", "--json", "--quiet", "--poll-budget", POLL_BUDGET, path],
                         check=True, capture_output=True, text=True).stdout
    return out, json.loads(out)


def last_departure_step(j):
    for t in j["twins"]:
        if t["decision"]["index"] == j["last_departure"]:
            return t["decision"]["step"]
    return None


def point_step(j):
    p = j["point_of_no_return"]
    if p is None or p["at_start"]:
        return None
    return p["decision"]["step"]


def row(name, j):
    p = j["point_of_no_return"]
    where = ("none" if p is None else "start" if p["at_start"] else
             "decision %d, step %d" % (p["decision"]["index"], p["decision"]["step"]))
    last = last_departure_step(j)
    twins = sum(t["passes"] for t in j["twins"])
    return "| %s | %s | %d | %s | %s | %d of %d |" % (
        name, j["finding"], j["decisions"], "-" if last is None else "step %d" % last, where,
        twins, len(j["twins"]))


def main():
    args = [a for a in sys.argv[1:] if a != "--table"]
    table = "--table" in sys.argv
    pollen = args[0]
    d = args[1] if len(args) > 1 else os.path.dirname(os.path.abspath(__file__))
    files = sorted(f for f in os.listdir(d) if f.endswith(".replay"))
    bad = []
    if table:
        print("| replay | finding | decisions | last departure | point of no return "
              "| twins that pass |")
        print("|---|---|---:|---|---|---|")
    for i, f in enumerate(files):
        name = f[:-len(".replay")]
        text, j = why(pollen, os.path.join(d, f))
        if table:
            print(row(name, j))
            continue
        if i == 0 and why(pollen, os.path.join(d, f))[0] != text:
            bad.append("%s: two runs of `why` differ" % name)
        failing = [t["decision"]["index"] for t in j["twins"] if not t["passes"]]
        if failing or len(j["twins"]) != j["departures"]:
            bad.append("%s: the twins of decisions %s do not pass (%d twins, %d departures)"
                       % (name, failing, len(j["twins"]), j["departures"]))
        last = last_departure_step(j)
        if j["departures"] == 0:
            continue
        at = point_step(j)
        near = last is not None and at is not None and abs(at - last) <= 1
        if near and name in EXCEPTIONS:
            bad.append("%s: listed as an exception (%s) but its point of no return (step %s) "
                       "is within one step of its last departure (step %s)"
                       % (name, EXCEPTIONS[name], at, last))
        elif not near and name not in EXCEPTIONS:
            bad.append("%s: point of no return at step %s, last departure at step %s"
                       % (name, at, last))
    for b in bad:
        print(b)
    if not table:
        print("%d replays, %d problems" % (len(files), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
