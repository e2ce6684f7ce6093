#!/usr/bin/env python3
"""tests/check_doc_refs.py: the documents name only what exists.

Usage: check_doc_refs.py SOURCE_ROOT

Reads README.md, CONTRIBUTING.md, NEWS.md, docs/*.md and every folder's
README.md, and fails, naming the document and the line, on:
  - a repository path (`sim/src/run.c`, tests/check_seam.sh, a glob such
    as sim/src/node*.c, a directory) that does not exist; a path counts
    when its first part is an entry of the repository's top level or of
    the document's own folder, and `pollen/x.h` is looked up among the
    public headers;
  - a file name in backticks (`check_rescue.c`, `outbox.c:124`) that no
    file of the repository has, user-example names apart (relay.c, ...);
  - a name in backticks (`pl_spawn`, `PL_AWAIT`) or called (pl_run(...))
    that no header of the project declares (the public ones under
    core/include and sim/include, and the private headers the pages on
    the internals name); an internal one (`pl__sim_init`) that no source
    file has;
    a name ending in `_` or `*` is a prefix (`pl_sim_pthread_*`);
  - a relative link whose file, or whose #anchor among that file's
    headings, does not exist.
Scenario names, CLI flags and output samples name nothing checked here.
Exits 1 when something is missing, 2 on a usage error.
"""
import fnmatch
import os
import re
import sys

# Files named in the documents that live elsewhere: a reader's own files in
# the examples, the peers' benchmark scripts (tests/bench/README.md).
ELSEWHERE_FILES = {"relay.c", "main.c", "prog.c", "test_relay.c", "pool.c", "run.sh"}
# What a build makes, named by its place in any build directory.
BUILT_PATHS = {"scenarios/pollen", "tests/bench/pollen-bench"}
# Placeholders of the naming rules (CONTRIBUTING.md, Names), not names.
PLACEHOLDER_NAMES = {"PL_UPPER"}
SKIP_DIRS = {".git", "subprojects", "pollen-out", "__pycache__"}
PATH_RE = re.compile(r"(?<![\w$./-])((?:\.?[\w-]+|\.\.)(?:/[\w.*\[\]<>-]*)+)")
NAME_IN_TICKS_RE = re.compile(r"\b(pl__?[a-z0-9_]*[a-z0-9_]|PL__?[A-Z0-9_]*[A-Z0-9_])(\*?)")
CALL_RE = re.compile(r"\b(pl__?[a-z0-9_]+)\s*\(")
BARE_FILE_RE = re.compile(r"(?<![\w/.*<-])([\w-]+\.(?:c|h|sh|py|txt|build|md))\b")
LINK_RE = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TICKS_RE = re.compile(r"`([^`]+)`")


def walk_files(root):
    for d, dirs, files in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build")
                         and not os.path.exists(os.path.join(d, x, "meson-private")))
        for f in files:
            yield os.path.join(d, f)


def documents(root, all_files):
    docs = []
    for name in ("README.md", "CONTRIBUTING.md", "NEWS.md"):
        if os.path.exists(os.path.join(root, name)):
            docs.append(name)
    for f in all_files:
        rel = os.path.relpath(f, root)
        if rel.startswith("docs" + os.sep) and rel.endswith(".md"):
            docs.append(rel)
        elif os.path.basename(rel) == "README.md" and os.sep in rel:
            docs.append(rel)
    return sorted(set(docs))


def slug(heading):
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


class Repo:
    def __init__(self, root):
        self.root = root
        self.files = list(walk_files(root))
        self.basenames = {os.path.basename(f) for f in self.files}
        self.top = set(os.listdir(root))
        code = [f for f in self.files if os.path.relpath(f, root).split(os.sep)[0] in
                ("core", "sim", "scenarios", "fuzz", "tests")]
        # Public names are declared in a header (core/include, sim/include,
        # or the private headers documents about the internals name);
        # internal pl__ names anywhere in the sources.
        self.declared = self._words([f for f in code if f.endswith(".h")])
        self.internal = self._words([f for f in code if f.endswith((".c", ".h", ".S"))])

    @staticmethod
    def _words(paths):
        words = set()
        for p in paths:
            with open(p, encoding="utf-8", errors="replace") as f:
                words.update(re.findall(r"\b[A-Za-z_]\w*", f.read()))
        return words

    def name_known(self, name, prefix):
        if name in PLACEHOLDER_NAMES:
            return True
        pool = self.internal if name.lower().startswith("pl__") else self.declared
        if prefix or name.endswith("_"):
            return any(w.startswith(name) for w in pool)
        return name in pool

    def path_exists(self, base, path):
        path = re.sub(r"<[^>]*>", "*", path).rstrip("/")
        full = os.path.normpath(os.path.join(base, path))
        if not any(c in path for c in "*[]"):
            return os.path.exists(full)
        return any(fnmatch.fnmatch(f, full) for f in self.files) or any(
            fnmatch.fnmatch(os.path.dirname(f), full) for f in self.files)


def strip_path(tok):
    tok = re.sub(r":\d+(?:[-:]\d+)?$", "", tok)
    tok = tok.rstrip(".,;:)'\"")
    if tok.endswith("]") and "[" not in tok:
        tok = tok.rstrip("]")
    return tok


def check_paths(repo, doc_dir, line, where, errors):
    for m in PATH_RE.finditer(line):
        tok = strip_path(m.group(1))
        if tok in BUILT_PATHS:
            continue
        first = tok.split("/", 1)[0]
        if first == "pollen" and re.match(r"pollen/\w+\.h$", tok):
            if not any(os.path.exists(os.path.join(repo.root, inc, tok))
                       for inc in ("core/include", "sim/include")):
                errors.append(f"{where}: no public header {tok}")
            continue
        bases = []
        if first in repo.top:
            bases.append(repo.root)
        local = os.path.join(repo.root, doc_dir)
        if doc_dir and (first in ("..", ".") or os.path.exists(os.path.join(local, first))):
            bases.append(local)
        if bases and not any(repo.path_exists(b, tok) for b in bases):
            errors.append(f"{where}: no such path {tok}")


def check_ticks(repo, line, where, errors):
    for span in TICKS_RE.findall(line):
        for m in NAME_IN_TICKS_RE.finditer(span):
            if not repo.name_known(m.group(1), m.group(2) == "*"):
                errors.append(f"{where}: {m.group(1)}{m.group(2)} is declared nowhere")
        for m in BARE_FILE_RE.finditer(span):
            name = m.group(1)
            if name not in ELSEWHERE_FILES and name not in repo.basenames:
                errors.append(f"{where}: no file is called {name}")


def check_links(repo, doc, line, where, errors):
    for target in LINK_RE.findall(line):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(repo.root, os.path.dirname(doc), path)) if path \
            else os.path.join(repo.root, doc)
        if not os.path.exists(full):
            errors.append(f"{where}: link to a missing file {path}")
        elif anchor and full.endswith(".md") and anchor not in anchors(full):
            errors.append(f"{where}: link to a missing heading {target}")


def check(root):
    repo = Repo(root)
    errors = []
    for doc in documents(root, repo.files):
        doc_dir = os.path.dirname(doc)
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            lines = f.read().split("\n")
        fenced = False
        for i, line in enumerate(lines, 1):
            where = f"{doc}:{i}"
            if line.startswith("```"):
                fenced = not fenced
                continue
            check_paths(repo, doc_dir, line, where, errors)
            for m in CALL_RE.finditer(line):
                if not repo.name_known(m.group(1), False):
                    errors.append(f"{where}: {m.group(1)}() is declared nowhere")
            if not fenced:
                check_ticks(repo, line, where, errors)
                check_links(repo, doc, line, where, errors)
    return sorted(set(errors), key=lambda e: (e.split(":")[0], int(e.split(":")[1])))


def main(argv):
    if len(argv) != 1 or not os.path.isdir(argv[0]):
        print("usage: check_doc_refs.py SOURCE_ROOT", file=sys.stderr)
        return 2
    errors = check(os.path.abspath(argv[0]))
    for e in errors:
        print(e)
    print(f"check_doc_refs: {len(errors)} missing reference(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
