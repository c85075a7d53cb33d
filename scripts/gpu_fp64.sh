#!/usr/bin/env bash
# The float32 double path (KP_FAST_FP64, templates/common/fp64_math.h) on an H100/H200: the device
# trait, the tests of both math paths, accuracy sweeps and hard spots, and the copy-relative rate
# of each changed activation by both paths (double, and float-float forced by KPLAY_FP64_MATH=0).
# Usage: scripts/gpu_fp64.sh BIN_DIR OUT_DIR [PART...]   parts: tests check ranges perf (default: all)
set -uo pipefail
BIN=${1:?usage: gpu_fp64.sh BIN_DIR OUT_DIR [PART...]}
OUT=${2:?usage: gpu_fp64.sh BIN_DIR OUT_DIR [PART...]}
shift 2
PARTS=${*:-tests check ranges perf}
mkdir -p "$OUT"
export KPLAY_CLI="$BIN/kplay" KPLAY_DB="$OUT/default.db"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
K="$BIN/kplay"
SHAPE=${KPLAY_SHAPE:-4096x393216}
ACTS=("gelu" "gelu(approximate=tanh)" "silu" "sigmoid" "tanh" "mish" "softplus" "softplus(beta=2,threshold=10)"
      "logsigmoid" "tanhshrink")
has() { [[ " $PARTS " == *" $1 "* ]]; }
t0=$SECONDS
"$K" devices | grep -E "^\s+\[|architecture|float32 math"  # expect "in double" on sm_90
if has tests; then
  "$BIN/kplay_tests" -tc="*both math paths*,*fast FP64*,*fast-FP64*" >"$OUT/tests_fp64.log" 2>&1
  echo "tests rc=$? ($((SECONDS - t0)) s): $(grep -E '^\[doctest\] (test cases|assertions)' "$OUT/tests_fp64.log" | tr '\n' ' ')"
  grep -B2 -A6 "ERROR" "$OUT/tests_fp64.log" | head -40
fi
if has check; then  # forward: every float32 input; backward: 2^28 random bit patterns
  for a in "${ACTS[@]}"; do
    "$K" check --act "$a" --dtype f32 2>/dev/null | grep "^row:"
    "$K" check --act "$a" --dtype f32 --direction backward --sample 268435456 2>/dev/null | grep "^row:"
  done | tee "$OUT/check_fp64.txt"
  echo "check ($((SECONDS - t0)) s): $(grep -c PASS "$OUT/check_fp64.txt") pass, $(grep -c FAIL "$OUT/check_fp64.txt") fail"
fi
if has ranges; then  # every float32 around the roots of the derivatives and the branch points
  while read -r a dir lo hi; do
    "$K" check --act "$a" --dtype f32 --direction "$dir" --range="$lo:$hi" 2>/dev/null | grep "^row:" | sed "s|\$| [$lo, $hi]|"
  done <<'RANGES' | tee "$OUT/ranges_fp64.txt"
gelu backward -16 0
gelu backward 0.25 16
silu backward -4 -0.5
mish backward -16 0.5
gelu(approximate=tanh) backward -16 -0.25
tanhshrink forward -1 1
gelu forward -16 0
gelu forward 0 8
softplus forward -20 20
logsigmoid forward -20 20
tanhshrink forward -12 12
tanh backward -1 1
RANGES
fi
if has perf; then  # --no-db: the built-in default config for both paths; ratio = % of a same-run copy
  for a in "${ACTS[@]}"; do
    for dir in forward backward; do
      d=$("$K" run --no-db --act "$a" --direction $dir --shape "$SHAPE" 2>&1 | grep -E "^ratio" | grep -oE "[0-9.]+ %")
      f=$(KPLAY_FP64_MATH=0 "$K" run --no-db --act "$a" --direction $dir --shape "$SHAPE" 2>&1 | grep -E "^ratio" | grep -oE "[0-9.]+ %")
      printf "%-32s %-9s double %8s   float-float %8s\n" "$a" $dir "$d" "$f"
    done
  done | tee "$OUT/perf_fp64.txt"
fi
echo "total $((SECONDS - t0)) s"
