#!/usr/bin/env bash
# The README's first command, before `kplay run`: installs the Debian packages that building,
# testing and running kplay need (when missing), then builds the `kplay` command alone into build/.
# The configure step also configures the tests (the README's second command builds and runs them
# right after this one), so doctest is installed here too: without it configure stops. On a
# machine without a GPU, `kplay run` then takes OpenCL on the CPU through PoCL (--backend auto).
# .ci/bare_root.sh runs this in a bare Debian root on every CI run, so a missing package fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake g++ make ninja-build doctest-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev ocl-icd-opencl-dev opencl-headers
          pocl-opencl-icd)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# An existing build/ keeps its generator; a new one uses Ninja.
generator=(); [ -f build/CMakeCache.txt ] || generator=(-G Ninja)
cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target kplay
