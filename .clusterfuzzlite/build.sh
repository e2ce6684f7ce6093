#!/bin/bash -eu
# The builder's entry point ($SRC/build.sh, run in $SRC/pollen): pollen's
# own build of its fuzz targets. OSS-Fuzz's projects/pollen/build.sh is
# the same line.
exec "$SRC/pollen/fuzz/build.sh"
