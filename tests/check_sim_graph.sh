#!/bin/sh
# tests/check_sim_graph.sh: no call cycle between the files of sim/src.
# Reads the static library libpollen-sim.a: each object's undefined
# symbols are matched with the object defining them, which gives the
# file-level call graph, and tsort refuses it if it has a loop. Rules
# of the layout are checked on the same symbols: the observer
# (oracle.c) raises no finding itself; the strategies (strategy.c) and
# the simulator's init (sim.c) start no run; only the CLI (cli/) and
# isolate/ fork, wait for, kill or signal processes and install signal
# handlers (threads/fiber.c's stack-overflow handler aside); and only
# the CLI calls isolate/cpu_budget.c (the shrinker gets its candidate
# runner as a parameter). Objects are named as meson spells them, the
# folder joined with '_' (src_isolate_guard.c.o: isolate_guard.c).
# The checkers stay apart: a checker (check_F.c, or check_F_*.c of the
# same family F) neither calls another family's checker nor includes its
# header, and the world (sim.c) calls no checker and includes no
# checker's header: it reaches them through the judges the run installs
# (pl__sim_judges). Prints the graph's edges ("caller callee") with -v.
# The library must be static (the default); a shared build skips (exit
# 77). SIM_SRC (sim/src) is where the include rules read the sources.
#
# Usage: check_sim_graph.sh [-v] LIBPOLLEN_SIM_A SIM_SRC
set -eu

verbose=0
if [ "${1:-}" = "-v" ]; then
    verbose=1
    shift
fi
lib=${1:?usage: check_sim_graph.sh [-v] libpollen-sim.a sim/src}
src=${2:?usage: check_sim_graph.sh [-v] libpollen-sim.a sim/src}
case $lib in
*.a) ;;
*) echo "check_sim_graph: $lib is not a static library: skipped"; exit 77 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# "symbol file" pairs; object names as meson spells them (src_run.c.o).
nm -A --defined-only "$lib" |
    awk 'NF >= 3 && $(NF-1) ~ /^[TDBRC]$/ { n = split($1, p, ":"); o = p[n-1];
         sub(/^src_/, "", o); sub(/\.o$/, "", o); print $NF, o }' | sort -u > "$tmp/defs"
nm -A -u "$lib" |
    awk '{ n = split($1, p, ":"); o = p[n-1]; sub(/^src_/, "", o); sub(/\.o$/, "", o);
           print $NF, o }' | sort -u > "$tmp/uses"
join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 { print $2, $3 }' | sort -u > "$tmp/edges"

if [ ! -s "$tmp/edges" ]; then
    echo "check_sim_graph: no edges read from $lib" >&2
    exit 1
fi
if [ "$verbose" = 1 ]; then
    cat "$tmp/edges"
fi
if ! tsort "$tmp/edges" > "$tmp/order" 2> "$tmp/loops"; then
    echo "check_sim_graph: a call cycle between sim/src's files:" >&2
    cat "$tmp/loops" >&2
    exit 1
fi
# "file symbol" pairs a layout rule forbids.
bad=$(awk '{ runs = $1 == "pl_sim_run" || $1 == "pl__sim_run_captured" ||
                    $1 == "pl_sim_pct_estimate" }
           ($2 == "oracle.c" && $1 == "pl__sim_finding") ||
           (($2 == "strategy.c" || $2 == "sim.c") && runs) { print $2 " calls " $1 }' \
      "$tmp/uses")
# Process machinery outside cli/ and isolate/.
bad2=$(awk '$1 ~ /^(fork|vfork|waitpid|wait|kill|setitimer|sigaction|signal|pipe)$/ &&
               $2 !~ /^(cli|isolate)_/ && !($2 == "threads_fiber.c" && $1 == "sigaction") {
                   print $2 " calls " $1 }' "$tmp/uses")
# isolate/cpu_budget.c is the CLI's: no library file calls it.
bad3=$(awk '$2 == "isolate_cpu_budget.c" && $1 !~ /^(cli|isolate)_/ {
                   print $1 " calls isolate/cpu_budget.c" }' "$tmp/edges")
# Checkers apart, and the world above none: by calls...
family() { echo "$1" | sed -n 's/^check_\([a-z]*\).*/\1/p'; }
bad4=$(awk 'function fam(f) { return f ~ /^check_[a-z]+/ ? substr(f, 7, match(substr(f, 7), /[_.]/) - 1) : "" }
           { ff = fam($1); ft = fam($2) }
           ft != "" && ($1 == "sim.c" || (ff != "" && ff != ft)) { print $1 " calls " $2 }' \
      "$tmp/edges")
# ... and by includes.
bad5=$(for f in "$src"/check_*.c "$src"/sim.c; do
           name=$(basename "$f")
           ff=$(family "$name")
           sed -n 's/^#include "\(check_[a-z_]*\.h\)".*/\1/p' "$f" | while read -r h; do
               fh=$(family "$h")
               if [ "$name" = sim.c ] || [ "$fh" != "$ff" ]; then echo "$name includes $h"; fi
           done
       done)
bad=$(printf '%s\n%s\n%s\n%s\n%s\n' "$bad" "$bad2" "$bad3" "$bad4" "$bad5" | sed '/^$/d')
if [ -n "$bad" ]; then
    echo "check_sim_graph: against the layout (docs/internals.md, sim/src):" >&2
    echo "$bad" >&2
    exit 1
fi
echo "check_sim_graph: $(wc -l < "$tmp/edges") edges, no cycle, checkers apart"
