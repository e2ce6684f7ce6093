#!/usr/bin/env python3
"""Prints the code block a document (README.md or a page of docs/) shows
between two markers, so a test runs or compiles exactly what a reader
copies:

    <!-- test-block NAME: what tests it -->
    ```sh
    ...
    ```
    <!-- /test-block NAME -->

Usage: readme_block.py DOC.md NAME [OUT]  (OUT: write there, not stdout)

Exits 2, saying why, when a marker is missing or given twice, or when the
markers do not hold exactly one fenced block: an edit that drops the
markers fails the test instead of leaving it with nothing to check.
"""
import re
import sys


def block(text, name):
    begin = re.findall(r"^<!-- test-block " + re.escape(name) + r"(?::[^\n]*)? -->$", text, re.M)
    end = re.findall(r"^<!-- /test-block " + re.escape(name) + r" -->$", text, re.M)
    if len(begin) != 1 or len(end) != 1:
        raise ValueError(f"expected one '<!-- test-block {name}' and one "
                         f"'<!-- /test-block {name} -->' line, found {len(begin)} and {len(end)}")
    start = text.index(begin[0]) + len(begin[0])
    stop = text.index(end[0])
    if stop < start:
        raise ValueError(f"'/test-block {name}' comes before 'test-block {name}'")
    fences = re.findall(r"^```[^\n]*\n(.*?)^```$", text[start:stop], re.M | re.S)
    if len(fences) != 1:
        raise ValueError(f"test-block {name} holds {len(fences)} fenced blocks, not one")
    return fences[0]


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: readme_block.py DOC.md NAME [OUT]", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        text = f.read()
    try:
        code = block(text, argv[1])
    except ValueError as e:
        print(f"{argv[0]}: {e}", file=sys.stderr)
        return 2
    if len(argv) == 3:
        with open(argv[2], "w", encoding="utf-8") as f:
            f.write(code)
    else:
        sys.stdout.write(code)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
