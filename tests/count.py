#!/usr/bin/env python3
"""Counts test cases across meson test logs and prints "N passed, N failed".

Each meson test registered with protocol 'tap' counts its TAP lines (ok /
not ok); a test whose process failed without any "not ok" line counts as
one more failure (a crash after the last case, a leak report at exit). A
test without TAP counts once. An unexpected skip is a failure: Criterion
and meson skip silently on a typo. A LeakSanitizer report anywhere in a
test's output is one more failure.
"""
import json
import re
import sys


def count_log(path, totals):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            t = json.loads(line)
            result = t.get("result", "")
            out = t.get("stdout", "") or ""
            err = t.get("stderr", "") or ""
            leaked = "LeakSanitizer: detected memory leaks" in out + err
            ok = len(re.findall(r"^ok\b", out, re.M))
            bad = len(re.findall(r"^not ok\b", out, re.M))
            name = t.get("name", "?")
            if ok or bad:
                totals["passed"] += ok
                totals["failed"] += bad
                if result not in ("OK", "EXPECTEDFAIL") and bad == 0:
                    totals["failed"] += 1
                    print(f"failed: {path}: {name} ({result})", file=sys.stderr)
            elif result in ("OK", "EXPECTEDFAIL"):
                totals["passed"] += 1
            else:
                totals["failed"] += 1
                print(f"failed: {path}: {name} ({result})", file=sys.stderr)
            if leaked:
                # LeakSanitizer reports after Criterion recorded the case
                # as passed: the leak still fails the run.
                totals["failed"] += 1
                print(f"failed: {path}: {name} leaked memory", file=sys.stderr)
            for m in re.finditer(r"^not ok.*$", out, re.M):
                print(f"failed: {name}: {m.group(0)}", file=sys.stderr)


def main(argv):
    totals = {"passed": 0, "failed": 0}
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--extra":
            name, _, result = args.pop(0).partition("=")
            totals["passed" if result == "pass" else "failed"] += 1
            continue
        try:
            count_log(a, totals)
        except OSError as e:
            print(f"missing log {a}: {e}", file=sys.stderr)
            totals["failed"] += 1
    print(f"{totals['passed']} passed, {totals['failed']} failed")
    return 1 if totals["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
