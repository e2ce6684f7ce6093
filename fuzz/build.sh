#!/bin/bash -eu
# fuzz/build.sh: OSS-Fuzz / ClusterFuzzLite build of pollen's fuzz targets.
#
# Reads what those builders set: $CC, $CFLAGS (sanitizers and
# -fsanitize=fuzzer-no-link), $LIB_FUZZING_ENGINE (how to link the
# engine), $OUT (where binaries, seed corpora, dictionaries and options
# go) and $WORK (scratch: the meson build directory). $SRC is not needed:
# the sources are the checkout this script sits in. Outside a builder the
# defaults build libFuzzer targets with ASan and UBSan into ./out:
#   fuzz/build.sh
#   CC=clang CFLAGS='-fsanitize=address -fsanitize=fuzzer-no-link' \
#       LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT=/tmp/out fuzz/build.sh
#
# Only targets that must stay clean are built and shipped: the parser,
# `outbox` and every `fix_*` scenario. The canary and the known-bug
# targets (`bug_*`, `outbox_broadcast`) crash by design and would be
# reported as bugs; POLLEN_FUZZ_KNOWN_BUGS=1 builds them too.
# Only fuzz targets are built: with $CFLAGS instrumenting every object,
# the other executables would not link. libxxhash is linked statically
# (-Dprefer_static=true): the machines that run the targets lack it.

src=$(cd "$(dirname "$0")/.." && pwd)
export CC=${CC:-clang}
export CFLAGS=${CFLAGS:--fsanitize=address,undefined -fsanitize=fuzzer-no-link}
engine=${LIB_FUZZING_ENGINE:--fsanitize=fuzzer}
out=${OUT:-$PWD/out}
build=${WORK:-$PWD}/build-oss-fuzz
known_bugs=${POLLEN_FUZZ_KNOWN_BUGS:-0}

mkdir -p "$out"
# A fresh directory: meson reads CC and CFLAGS only when it creates one.
rm -rf "$build"
meson setup "$build" "$src" \
    --buildtype=plain -Db_lundef=false -Dprefer_static=true \
    -Dtests=disabled -Dbench=false \
    -Dfuzz=true -Dfuzzing_engine="$engine"

# The fuzz_* executables, by their ninja target names.
targets=""
for t in $(ninja -C "$build" -t targets all |
    sed -n 's|^\(fuzz/fuzz_[a-z0-9_]*\): c_LINKER.*|\1|p'); do
    case ${t#fuzz/fuzz_} in
    canary | bug_* | outbox_broadcast) [ "$known_bugs" = 1 ] || continue ;;
    esac
    targets="$targets $t"
done
[ -n "$targets" ] || { echo "build.sh: no fuzz targets configured" >&2; exit 1; }
# shellcheck disable=SC2086
ninja -C "$build" $targets

for t in $targets; do
    exe=$(basename "$t")
    name=${exe#fuzz_}
    cp "$build/$t" "$out/"
    # libFuzzer options the builders pass to each target.
    if [ "$name" = replay_parser ]; then
        cp "$src/fuzz/replay_parser.dict" "$out/$exe.dict"
        printf '[libfuzzer]\nmax_len = 65536\ndict = %s.dict\n' "$exe" >"$out/$exe.options"
    else
        printf '[libfuzzer]\nmax_len = 4096\ntimeout = 10\n' >"$out/$exe.options"
    fi
    if [ -d "$src/fuzz/corpus/$name" ] && command -v zip >/dev/null; then
        rm -f "$out/${exe}_seed_corpus.zip"
        (cd "$src/fuzz/corpus/$name" && zip -q -j "$out/${exe}_seed_corpus.zip" ./*)
    fi
done
echo "build.sh: $(echo "$targets" | wc -w) targets in $out"
