#!/usr/bin/env bash
# tests/sim/test_pthread.sh: the pthread programs of scenarios/pthread/,
# built as a user builds them (-include pollen/sim_pthread.h and the
# shim's library), tested through their own CLI binaries.
#
#   test_pthread.sh BINDIR SEEDS
#
# BINDIR holds pt_<program>; SEEDS is how many seeds each fixed twin must
# run clean (10000 in the suite). Each bug must be found within seeds
# 0..999 with its finding kind and exit status, its replay file must
# reproduce, `shrink` must shrink it to a file that reproduces too; the
# twins and the clean programs must stay clean, the clean ones also under
# --check-determinism. Prints TAP.
set -uo pipefail

bin=$1
twin_seeds=${2:-10000}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
n=0
failed=0

ok() {
    n=$((n + 1))
    echo "ok $n - $1"
}

not_ok() {
    n=$((n + 1))
    failed=$((failed + 1))
    echo "not ok $n - $1"
    shift
    for line in "$@"; do
        echo "# $line"
    done
}

# bug PROGRAM KIND STATUS MESSAGE_PART
bug() {
    local prog=$1 kind=$2 status=$3 part=$4
    local dir="$out/$prog"
    local json rc
    json=$("$bin/pt_$prog" run main --seeds 0..999 --json --out "$dir" -j 2 2>"$dir.err")
    rc=$?
    if [ "$rc" != "$status" ]; then
        not_ok "$prog: exit $status over seeds 0..999" "got exit $rc" "$(tail -5 "$dir.err")"
        return
    fi
    ok "$prog: exit $status over seeds 0..999"
    local first
    first=$(printf '%s\n' "$json" | head -1)
    if printf '%s' "$first" | grep -q "\"kind\":\"$kind\"" &&
        printf '%s' "$first" | grep -qF -- "$part"; then
        ok "$prog: --json names $kind and says '$part'"
    else
        not_ok "$prog: --json names $kind and says '$part'" "${first:0:400}"
    fi
    local replay
    replay=$(ls "$dir"/main-seed*.replay 2>/dev/null | grep -v shrunk | head -1)
    if [ -n "$replay" ] && "$bin/pt_$prog" replay "$replay" >"$dir.replay.out" 2>&1 &&
        grep -q "reproduced: $kind" "$dir.replay.out"; then
        ok "$prog: the replay file reproduces the $kind"
    else
        not_ok "$prog: the replay file reproduces the $kind" "$(tail -3 "$dir.replay.out" 2>/dev/null)"
    fi
    if [ -n "$replay" ] && "$bin/pt_$prog" shrink "$replay" -o "$dir/shrunk.replay" \
        >"$dir.shrink.out" 2>&1 && "$bin/pt_$prog" replay "$dir/shrunk.replay" \
        >"$dir.shrunk.out" 2>&1 && grep -q "reproduced: $kind" "$dir.shrunk.out" &&
        grep -q "^# shrunk-from" "$dir/shrunk.replay"; then
        ok "$prog: shrink writes a smaller replay that reproduces"
    else
        not_ok "$prog: shrink writes a smaller replay that reproduces" \
            "$(tail -3 "$dir.shrink.out" 2>/dev/null)" "$(tail -3 "$dir.shrunk.out" 2>/dev/null)"
    fi
}

# clean PROGRAM SEEDS [OPTIONS...]
clean() {
    local prog=$1 seeds=$2
    shift 2
    local log="$out/$prog.clean"
    if "$bin/pt_$prog" run main --seeds "0..$((seeds - 1))" -j 2 -q --out "$out/$prog-clean" "$@" \
        >"$log" 2>&1; then
        ok "$prog: clean over $seeds seeds $*"
    else
        not_ok "$prog: clean over $seeds seeds $*" "$(head -8 "$log")"
    fi
}

bug lock_order deadlock 13 "blocked on mutex"
bug claim_flag assertion 20 "assert failed: atomic_load(&runs) == 1"
bug cond_if assertion 20 "assert failed: count > 0"
bug lost_signal deadlock 13 "blocked on condition variable"
bug exit_status assertion 20 "the program called exit with status 3"

for twin in lock_order_fixed claim_flag_fixed cond_if_fixed lost_signal_fixed; do
    clean "$twin" "$twin_seeds"
done
for prog in api_tour exit_early main_exit globals own_prototypes; do
    clean "$prog" 1000
    clean "$prog" 200 --check-determinism
done

if "$bin/pt_globals" list | grep -q "^main "; then
    ok "list shows the one scenario, main"
else
    not_ok "list shows the one scenario, main" "$("$bin/pt_globals" list 2>&1 | head -3)"
fi

echo "1..$n"
exit $((failed > 0))
