#!/usr/bin/env bash
# Installs the build in ./build into a temporary prefix and builds tests/consumer against it:
# with find_package(kplay) (C and C++, the README snippet included), with pkg-config (C), and
# from the source tree with add_subdirectory. Each program runs; all work without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
# The add_subdirectory build sits beside build/, at its depth: ccache (CCACHE_BASEDIR, .ci/run) names
# the sources relative to the build folder, so that only there does the library compile with the
# README build's command lines and take its objects (from /tmp it compiled them all again: 60 s of
# CI's two cores).
sub=$PWD/build-consumer
trap 'rm -rf "$work" "$sub"' EXIT
rm -rf "$sub"
prefix=$work/prefix

cmake --install build --prefix "$prefix" >/dev/null
echo "installed: $(cd "$prefix" && find . -type f -o -type l | sort | tr '\n' ' ')"
soname=$(objdump -p "$prefix"/lib*/libkplay.so | awk '/SONAME/ {print $2}')
echo "SONAME: $soname"
[[ "$soname" == libkplay.so.* ]] || { echo "libkplay.so has no versioned SONAME"; exit 1; }
"$prefix/bin/kplay" --help >/dev/null
# The shipped tunings, where the installed command and library look for them (docs/design.md).
[ -f "$prefix/share/kplay/tunings/README.md" ] || { echo "no share/kplay/tunings in the install"; exit 1; }
if env -u KPLAY_SHIPPED_TUNINGS "$prefix/bin/kplay" db list --layer shipped --db :memory: 2>&1 | grep -q warning; then
  echo "the installed kplay does not find its shipped tunings"; exit 1
fi

# The license travels with the install: its text, and its SPDX name in the CMake package.
cmp -s LICENSE "$prefix/share/doc/kplay/LICENSE" || { echo "the install lacks share/doc/kplay/LICENSE"; exit 1; }
grep -q 'set(KPLAY_LICENSE "Apache-2.0")' "$prefix"/lib*/cmake/kplay/kplayConfig.cmake ||
  { echo "kplayConfig.cmake does not state KPLAY_LICENSE"; exit 1; }

echo "-- find_package(kplay)"
cmake -S tests/consumer -B "$work/fp" -DCMAKE_PREFIX_PATH="$prefix" -DKPLAY_README="$PWD/README.md" >/dev/null
cmake --build "$work/fp" -j"$(nproc)" >/dev/null
ctest --test-dir "$work/fp" --output-on-failure

echo "-- pkg-config"
export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$(find "$prefix" -name kplay.pc)")
libdir=$(pkg-config --variable=libdir kplay)
# shellcheck disable=SC2046  # pkg-config's flags are meant to split
cc tests/consumer/consumer.c -o "$work/consumer_pc" -DKPLAY_EXPECTED_VERSION="\"$(pkg-config --modversion kplay)\"" \
  $(pkg-config --cflags --libs kplay) -Wl,-rpath,"$libdir"
"$work/consumer_pc"

echo "-- add_subdirectory"
# Release, as the README build: under .ci/run, ccache then serves the library's objects from it.
cmake -S tests/consumer -B "$sub" -DKPLAY_SOURCE_DIR="$PWD" -DKPLAY_README="$PWD/README.md" \
  -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$sub" -j"$(nproc)" >/dev/null
ctest --test-dir "$sub" --output-on-failure
