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
# Prints the graph's edges ("caller callee") with -v. The library must
# be static (the default); a shared build skips (exit 77).
#
# Usage: check_sim_graph.sh [-v] LIBPOLLEN_SIM_A
set -eu

verbose=0
if [ "${1:-}" = "-v" ]; then
    verbose=1
    shift
fi
lib=${1:?usage: check_sim_graph.sh [-v] libpollen-sim.a}
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
bad=$(printf '%s\n%s\n%s\n' "$bad" "$bad2" "$bad3" | sed '/^$/d')
if [ -n "$bad" ]; then
    echo "check_sim_graph: against the layout (docs/internals.md, sim/src):" >&2
    echo "$bad" >&2
    exit 1
fi
echo "check_sim_graph: $(wc -l < "$tmp/edges") edges, no cycle"
