#!/usr/bin/env bash
# Issue 8 on a GPU: the CUDA test suite (every activation case, dtype and direction), the accuracy
# sweeps (`kplay check`: every float32 input for the forward pass of every activation, every
# 16-bit input forward and backward), and the parameter experiment. Prints a summary last.
# Usage: scripts/gpu_issue8.sh BIN_DIR OUT_DIR [PART...]   parts: tests check16 check32 checkbwd params
#   (default: all). The performance table is scripts/perf_table.py (needs the Python package).
set -uo pipefail
BIN=${1:?usage: gpu_issue8.sh BIN_DIR OUT_DIR [PART...]}
OUT=${2:?usage: gpu_issue8.sh BIN_DIR OUT_DIR [PART...]}
shift 2
PARTS=${*:-tests check16 check32 checkbwd params}
mkdir -p "$OUT"
export KPLAY_CLI="$BIN/kplay" KPLAY_DB_STRESS="$BIN/kplay_db_stress" KPLAY_DB="$OUT/default.db"
export LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
K="$BIN/kplay"
SHAPE=${KPLAY_SHAPE:-4096x393216}
VARIANTS="leaky_relu(negative_slope=0.2),elu(alpha=0.5),celu(alpha=2.5),gelu(approximate=tanh),softplus(beta=2,threshold=10),softshrink(lambd=1.25)"
has() { [[ " $PARTS " == *" $1 "* ]]; }
t0=$SECONDS
if has tests; then
  echo "### CUDA suite"
  "$BIN/kplay_tests" --test-suite=cuda >"$OUT/tests_cuda.log" 2>&1
  echo "tests_cuda rc=$? ($((SECONDS - t0)) s): $(grep -E '^\[doctest\] (test cases|assertions)' "$OUT/tests_cuda.log" | tr '\n' ' ')"
  grep -B2 -A6 "ERROR" "$OUT/tests_cuda.log" | head -60
fi
if has check16; then
  for d in f16 bf16; do
    for dir in "forward" "backward --saved input" "backward --saved output"; do
      acts="all,$VARIANTS"
      [[ $dir == *output* ]] && acts="relu,relu6,leaky_relu,elu,celu,selu,softplus,softsign,sigmoid,tanh,hardtanh,hardsigmoid,logsigmoid,softshrink,hardshrink"
      "$K" check --act "$acts" --dtype $d --direction $dir 2>/dev/null | grep "^row:" >>"$OUT/check16.txt"
    done
  done
  echo "check16 ($((SECONDS - t0)) s): $(grep -c PASS "$OUT/check16.txt") pass, $(grep -c FAIL "$OUT/check16.txt") fail"
  grep FAIL "$OUT/check16.txt"
fi
if has check32; then
  "$K" check --act "all,$VARIANTS" --dtype f32 >"$OUT/check32.log" 2>/dev/null
  grep "^row:" "$OUT/check32.log" >"$OUT/check32.txt"
  echo "check32 ($((SECONDS - t0)) s): $(grep -c PASS "$OUT/check32.txt") pass, $(grep -c FAIL "$OUT/check32.txt") fail"
  cat "$OUT/check32.txt"
fi
if has checkbwd; then
  # float32 backward: 2^28 random bit patterns per case (every exponent and sign, a sixteenth of all).
  "$K" check --act "all,$VARIANTS" --dtype f32 --direction backward --sample 268435456 2>/dev/null | grep "^row:" >"$OUT/checkbwd.txt"
  echo "checkbwd ($((SECONDS - t0)) s): $(grep -c PASS "$OUT/checkbwd.txt") pass, $(grep -c FAIL "$OUT/checkbwd.txt") fail"
  grep FAIL "$OUT/checkbwd.txt"
fi
if has params; then
  for a in "leaky_relu(negative_slope=0.2)" docs/experiments/leaky_relu_arg.h "softplus(beta=2,threshold=10)" docs/experiments/softplus_arg.h; do
    "$K" run --no-db --act "$a" --shape "$SHAPE" 2>&1 | grep -E "^(==|kernel:|ratio:|verdict)" >>"$OUT/params.txt"
  done
  cat "$OUT/params.txt"
fi
echo "total $((SECONDS - t0)) s"
