#!/bin/bash -eu
# fuzz/build.sh: OSS-Fuzz style build of the fuzz targets.
#
# Reads the usual OSS-Fuzz variables: $CC, $CFLAGS (sanitizers and
# -fsanitize=fuzzer-no-link), $LIB_FUZZING_ENGINE (how to link the
# engine) and $OUT (where binaries, seed corpora, dictionaries and
# options go). Outside OSS-Fuzz the defaults build libFuzzer targets
# with ASan and UBSan into ./out:
#   fuzz/build.sh
#   CC=clang CFLAGS='-fsanitize=address -fsanitize=fuzzer-no-link' \
#       LIB_FUZZING_ENGINE=-fsanitize=fuzzer OUT=/tmp/out fuzz/build.sh
# Only the fuzz targets are built: with $CFLAGS instrumenting every
# object, the other executables would not link.

src=$(cd "$(dirname "$0")/.." && pwd)
export CC=${CC:-clang}
export CFLAGS=${CFLAGS:--fsanitize=address,undefined -fsanitize=fuzzer-no-link}
engine=${LIB_FUZZING_ENGINE:--fsanitize=fuzzer}
out=${OUT:-$PWD/out}
build=${WORK:-$PWD}/build-oss-fuzz

mkdir -p "$out"
# A fresh directory: meson reads CC and CFLAGS only when it creates one.
rm -rf "$build"
meson setup "$build" "$src" \
    --buildtype=plain -Db_lundef=false -Dtests=disabled -Dbench=false \
    -Dfuzz=true -Dfuzzing_engine="$engine"

# The fuzz_* executables, by their ninja target names.
targets=$(ninja -C "$build" -t targets all |
    sed -n 's|^\(fuzz/fuzz_[a-z0-9_]*\): c_LINKER.*|\1|p')
[ -n "$targets" ] || { echo "build.sh: no fuzz targets configured" >&2; exit 1; }
# shellcheck disable=SC2086
ninja -C "$build" $targets

for t in $targets; do
    exe=$(basename "$t")
    name=${exe#fuzz_}
    cp "$build/$t" "$out/"
    # libFuzzer options OSS-Fuzz passes to each target.
    if [ "$name" = replay_parser ]; then
        cp "$src/fuzz/replay_parser.dict" "$out/$exe.dict"
        printf '[libfuzzer]\nmax_len = 65536\ndict = %s.dict\n' "$exe" >"$out/$exe.options"
    else
        printf '[libfuzzer]\nmax_len = 4096\ntimeout = 10\n' >"$out/$exe.options"
    fi
    if [ -d "$src/fuzz/corpus/$name" ] && command -v zip >/dev/null; then
        (cd "$src/fuzz/corpus/$name" && zip -q -j "$out/${exe}_seed_corpus.zip" ./*)
    fi
done
echo "build.sh: $(echo "$targets" | wc -w) targets in $out"
