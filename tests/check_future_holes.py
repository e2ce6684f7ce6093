#!/usr/bin/env python3
"""Every struct of pollen's public headers is free of padding holes.

    python3 tests/check_future_holes.py SOURCE_DIR LIBPOLLEN

The simulator's probe compares a parked future's bytes before and after
a probe poll (sim/src/check_probe.c), and users assign pollen's futures
by value: a hole or tail padding in one of them is stack garbage, which
differs between compilers, so a probe could see a change that is only
padding. CONTRIBUTING.md ("Futures and wakers") has the rule: name the
padding and set it in the constructor. This check reads the structs'
layouts from the library's debug information with pahole (Debian's
dwarves) and fails naming each public struct with a hole, except the
few below that are never a future's bytes. Exits 0, 1 naming the
structs, or 77 (skipped) without pahole or debug information.
"""

import glob
import os
import re
import shutil
import subprocess
import sys

# Public structs that are no future's bytes, so their holes are harmless.
NOT_FUTURE_BYTES = {
    "pl_await_site": "a static await site, read only by the simulator's backtraces",
    "pl_source_site": "a static source location",
    "pl_executor_testing_options": "options passed by pointer at executor creation",
    "pl_system_vtable": "a const table of the system's functions",
    "pl_thread_ops": "a const table of the thread functions a simulator installs",
    "pl_thread_site": "a static schedule-point site, read only by the simulator",
    "pl_wait": "a wait declaration the simulator copies field by field",
}


def public_structs(source_dir):
    names = set()
    for h in glob.glob(os.path.join(source_dir, "core", "include", "pollen", "*.h")):
        with open(h) as f:
            names |= set(re.findall(r"typedef struct (pl_\w+) \{", f.read()))
    return names


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    source_dir, lib = sys.argv[1], sys.argv[2]
    if shutil.which("pahole") is None:
        print("check_future_holes: skipped: no pahole (apt-get install dwarves)")
        return 77
    out = subprocess.run(["pahole", lib], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=300).stdout
    layouts = {m.group(1): m.group(2)
               for m in re.finditer(r"^struct (\w+) \{(.*?)^\};", out, re.S | re.M)}
    if not layouts:
        print("check_future_holes: skipped: %s has no debug information" % lib)
        return 77
    names = public_structs(source_dir)
    unknown = sorted(set(NOT_FUTURE_BYTES) - names)
    if unknown:
        print("check_future_holes: the exceptions name no public struct: %s" % unknown)
        return 1
    bad = []
    for name in sorted(names - set(NOT_FUTURE_BYTES)):
        body = layouts.get(name, "")
        holes = [l.strip() for l in body.splitlines() if "hole" in l or "padding:" in l]
        if holes:
            bad.append("%s: %s" % (name, "; ".join(holes)))
    checked = len([n for n in names if n in layouts]) - len(NOT_FUTURE_BYTES)
    if bad:
        print("check_future_holes: public structs with padding (name it and zero it in "
              "the constructor, CONTRIBUTING.md):\n  " + "\n  ".join(bad))
        return 1
    print("check_future_holes: %d public structs without holes" % checked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
