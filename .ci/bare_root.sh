#!/usr/bin/env bash
# The README's two commands on a bare Debian 12 root: proves that tools/setup.sh installs
# everything that building and testing kplay need, which CI's own machine cannot show (it keeps
# what earlier runs installed). Needs root, debootstrap and the network to Debian's packages.
#   .ci/bare_root.sh make    debootstrap --variant=minbase bookworm into ROOT (default
#                            build/bare-root), fresh each time: no package cache from a run before
#   .ci/bare_root.sh run     in ROOT, from a clean clone of this checkout's HEAD: the README's
#                            first command exactly as written, then the second command's configure
#                            and build (its ctest runs in CI's main stage); prints each one's time
# `make` is network and disk more than CPU, so .ci/run starts it in the background at its start.
# `run` may share the main stage's compiler cache (CCACHE_DIR, named by .ci/run, which also builds
# with Ninja and CCACHE_COMPILERCHECK=content): the clone sits at the same absolute path inside the
# root as this checkout outside it, and paths are hashed relative to it (CCACHE_BASEDIR), so the
# compiler sees the same command lines and ccache serves the objects the main stage compiled. ccache is installed in
# the root for that alone; it is no build dependency, so it cannot hide a missing one.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$PWD
root=$(realpath -m "${BARE_ROOT:-build/bare-root}")

# The Debian mirror this machine's apt uses (deb822 or one-line sources), else debootstrap's own.
mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && awk '/^URIs:/ {print $2; exit}' "$f" && return
  done
  [ -f /etc/apt/sources.list ] && awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list
}

unmount_all() {  # deepest first; a busy mount is detached lazily so that nothing is left mounted
  local m
  for m in $(awk -v r="$root/" 'index($2, r) == 1 {print $2}' /proc/self/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
}

case ${1:-} in
  make)
    unmount_all
    rm -rf --one-file-system "$root"
    mkdir -p "$(dirname "$root")"
    debootstrap --variant=minbase bookworm "$root" $(mirror) >"$root.debootstrap.log" 2>&1 ||
      { cat "$root.debootstrap.log"; exit 1; }
    echo "bare root made: $(du -sh --one-file-system "$root" | cut -f1) in $root"
    ;;
  run)
    [ -x "$root/usr/bin/apt-get" ] || { echo "no bare root at $root: run '$0 make' first"; exit 1; }
    # Never leave /dev or /sys mounted inside build/: a later rm -rf of it would go through them.
    trap unmount_all EXIT
    trap 'unmount_all; exit 143' TERM INT
    mkdir -p "$root/dev/pts"
    mount -t proc proc "$root/proc"
    mount --bind /sys "$root/sys"
    mount --bind /dev "$root/dev"
    mount -t devpts devpts "$root/dev/pts" 2>/dev/null || true  # apt logs through a pty
    inside=$root$checkout
    rm -rf "$inside"
    mkdir -p "$(dirname "$inside")"
    git clone -q --no-hardlinks "$checkout" "$inside"
    cache=()
    if [ -n "${CCACHE_DIR:-}" ] && [ -d "$CCACHE_DIR" ]; then
      mkdir -p "$root$CCACHE_DIR"
      mount --bind "$CCACHE_DIR" "$root$CCACHE_DIR"
      chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ccache >/dev/null 2>&1 ||
        { apt_rc=$?; chroot "$root" apt-get update -qq && chroot "$root" env DEBIAN_FRONTEND=noninteractive \
          apt-get install -y -qq ccache >/dev/null || echo "ccache not installed in the root (exit $apt_rc)"; }
      cache=(CCACHE_DIR="$CCACHE_DIR" CCACHE_COMPILERCHECK=content CCACHE_BASEDIR="$checkout"
             CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-4G}" CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache)
    fi
    # A login-like environment: nothing of CI's own (PATH, POCL_*, CMAKE_*) leaks in.
    in_root() {
      chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${cache[@]}" \
        bash -c "cd '$checkout' && $1"
    }
    first='bash tools/setup.sh && ./build/kplay run --act selu,relu --shape 4096x393216'
    second='cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j"$(nproc)"'
    grep -qF -- "$first" README.md || { echo "README.md no longer says: $first"; exit 1; }
    grep -qF -- "$second" README.md || { echo "README.md no longer says: $second"; exit 1; }
    start=$SECONDS
    echo "-- the README's first command, in the bare root: $first"
    in_root "$first"
    echo "-- first command: $((SECONDS - start)) s"
    start=$SECONDS
    echo "-- the README's second command, configure and build: $second"
    in_root "$second" | tail -n 3
    echo "-- second command's configure and build: $((SECONDS - start)) s"
    ;;
  *)
    echo "usage: $0 make|run (BARE_ROOT=DIR, default build/bare-root)" >&2
    exit 2
    ;;
esac
