#!/bin/sh
# tests/check_seam.sh: core reaches the clock, randomness and epoll only
# through the system seam, so the simulator can replace all of them.
# Only core/backend/ may call them; this fails listing every hit in
# core/src and core/include. Comments are blanked first (line numbers are
# kept) so prose about the backend does not count.
#
# Usage: check_seam.sh [SOURCE_ROOT]   (default: the repository root)
set -eu

root=${1:-$(dirname "$0")/..}
w='(^|[^A-Za-z0-9_])'  # a word start, so pl_time( or operand( do not match
pattern="clock_gettime|gettimeofday|${w}time[[:space:]]*\\(|${w}s?rand[[:space:]]*\\("
pattern="$pattern|${w}s?random[[:space:]]*\\(|getrandom|arc4random"
pattern="$pattern|epoll_|eventfd|sys/epoll\\.h|sys/random\\.h"

files=$(find "$root/core/src" "$root/core/include" -type f \( -name '*.c' -o -name '*.h' \) | sort)
if [ -z "$files" ]; then
    echo "check_seam: no sources found under $root/core" >&2
    exit 1
fi

hits=0
for f in $files; do
    # Blank /* */ and // comments, keeping newlines so line numbers hold.
    out=$(perl -0777 -pe 's{/\*.*?\*/}{ $& =~ tr/\n//cdr }gse; s{//[^\n]*}{}g' "$f" |
        grep -nE "$pattern" || true)
    if [ -n "$out" ]; then
        echo "$out" | sed "s|^|${f#"$root"/}:|"
        hits=$((hits + 1))
    fi
done

if [ "$hits" -ne 0 ]; then
    echo "check_seam: FAIL: $hits file(s) outside core/backend call the clock," \
        "a random source, epoll or eventfd directly; go through pl_system" >&2
    exit 1
fi
echo "check_seam: ok ($(echo "$files" | wc -l) files clean)"
