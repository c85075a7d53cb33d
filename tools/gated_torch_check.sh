#!/usr/bin/env bash
# kplay.torch's gated activations on a CUDA machine, from a wheel built elsewhere against the
# machine's torch (as tools/torch_gpu_check.sh): installs the wheel beside that torch (no network),
# checks that the C++ operators load, runs tests/python/test_gated_torch.py (values and gradients
# against torch, gradcheck, opcheck, glu's OpInfo samples, FP8 output, a patched tiny LLaMA,
# compiled graphs, the extension against the Python operators), then the SwiGLU benchmark
# (python -m kplay.bench_gated: torch eager, torch.compile, kplay and a copy, forward and backward,
# bf16 and f32) and the 4-layer LLaMA training step with its gated MLPs fused (kplay.bench_models,
# eager bf16). About four minutes on an H100. Exits 1 when a step failed.
#
# Build the wheel with a Python that has the GPU machine's torch and scikit-build-core and nanobind:
#   python -m pip wheel . --no-build-isolation --no-deps -w DIR
# On the GPU machine, from the repository root:
#   tools/gated_torch_check.sh DIR/kplay-*.whl [OUT_DIR]      (OUT_DIR: default /tmp/kplay-gated)
# Environment: PYTHON (default python3, the interpreter with torch).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
WHEEL=${1:?usage: gated_torch_check.sh WHEEL [OUT_DIR]}
OUT=${2:-/tmp/kplay-gated}
PY=${PYTHON:-python3}
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
failed=0
step() {  # step NAME COMMAND...: runs it, logs to OUT/NAME.log, counts a failure
  local name=$1; shift
  echo; echo "### $name"
  "$@" 2>&1 | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "### $name: rc=$rc"
  [ "$rc" = 0 ] || failed=$((failed + 1))
  return "$rc"
}
rm -rf "$OUT/site"
step install "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$OUT/site" "$WHEEL" ||
  exit 1
export PYTHONPATH="$OUT/site${PYTHONPATH:+:$PYTHONPATH}"
export KPLAY_DB="$OUT/kernels.db"  # never the machine's cache dir
step extension "$PY" -W error::RuntimeWarning -c "
import torch, kplay, kplay.torch as kt
print('torch', torch.__version__, '| kplay', kplay.__version__, 'from', kplay.__file__)
print('C++ operators (kplay._torch_ops):', kt.EXTENSION, '| device:', torch.cuda.get_device_name(),
      torch.cuda.get_device_capability())
assert kt.EXTENSION and torch.cuda.is_available()
assert 'gated_forward' in dir(torch.ops.kplay)" || exit 1
cd "$root" || exit 1
step pytest timeout 600 "$PY" -m pytest -q -rfs -p no:cacheprovider tests/python/test_gated_torch.py
step bench_gated timeout 400 "$PY" -m kplay.bench_gated --rounds 5 --json "$OUT/bench_gated.json"
step llama timeout 300 "$PY" -m kplay.bench_models --models llama --modes eager_bf16 --rounds 5 --steps 2 \
  --warmup 2 --profile-steps 1 --json "$OUT/llama.json"
echo
echo "== summary ($OUT)"
grep -E "passed|failed" "$OUT/pytest.log" | tail -n 3
sed -n '/^shape  /,/^µs:/p' "$OUT/bench_gated.log"
grep -E "gated MLPs fused|^llama|^met:" "$OUT/llama.log"
echo "failed steps: $failed"
[ "$failed" = 0 ]
