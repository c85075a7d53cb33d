#!/usr/bin/env bash
# kplay's PyTorch operators on a CUDA machine, from a wheel built elsewhere against the torch the
# machine has (the C++ extension kplay._torch_ops is tied to that torch version): installs the
# wheel beside the machine's torch (no network), then runs the torch tests that need the GPU
# (tests/python/test_torch.py: opcheck on CUDA for every op and activation, gradcheck in float64,
# CUDA graphs, layouts, values and gradients against torch; test_torch_ops.py: compiled graphs in
# each compile mode against eager, the current stream, the extension against the Python
# operators; test_foreign_activations.py; test_gated_torch.py, the gated ops; test_prelu_rrelu.py:
# prelu and rrelu against torch; test_softmax_torch.py and test_softmax_opinfo.py: the softmax
# family against torch in every layout and dtype, compiled, and torch's OpInfo samples), prints the per-call host cost table (examples/overhead.py) and
# the training step of compiled models in each compile mode against
# torch's compiled activations (examples/compile_modes.py), and the SwiGLU benchmark
# (python -m kplay.bench_gated). Exits 1 when a step failed.
#
# Build the wheel with a Python that has the GPU machine's torch (there: Python 3.12, torch 2.11)
# and scikit-build-core and nanobind installed:
#   python -m pip wheel . --no-build-isolation --no-deps -w DIR
# From PyPI alone (no download.pytorch.org), torch==2.11.0 is its CUDA build: `pip install --no-deps
# torch==2.11.0` and its pure-Python needs (filelock typing-extensions sympy networkx jinja2 fsspec)
# build it, once `import torch` finds CUDA 13's libraries (the toolkit's lib64 and pip's nvidia-*
# cu13 wheels: cufile, nccl, nvshmem, cusparselt) on LD_LIBRARY_PATH.
# On the GPU machine, from the repository root:
#   tools/torch_gpu_check.sh DIR/kplay-*.whl [OUT_DIR]      (OUT_DIR: default /tmp/kplay-torch)
# Environment: PYTHON (default python3, the interpreter with torch); KPLAY_MODELS (models for
# compile_modes.py, default "mlp efficientnet_b0"; torchvision names); KPLAY_PYDEPS, a folder of
# wheels for what the machine's python lacks, installed beside kplay's: the OpInfo tests import
# torch.testing._internal, which needs expecttest (and hypothesis, sortedcontainers) and skip
# without it (`pip download --no-deps expecttest -d DIR` where PyPI is reachable).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
WHEEL=${1:?usage: torch_gpu_check.sh WHEEL [OUT_DIR]}
OUT=${2:-/tmp/kplay-torch}
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
wheels=("$WHEEL")
[ -n "${KPLAY_PYDEPS:-}" ] && wheels+=("$KPLAY_PYDEPS"/*.whl)
step install "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$OUT/site" "${wheels[@]}" ||
  exit 1
export PYTHONPATH="$OUT/site${PYTHONPATH:+:$PYTHONPATH}"
export KPLAY_DB="$OUT/kernels.db"  # never the machine's cache dir
# The extension must load: a wheel built for another torch would fall back to the Python ops.
step extension "$PY" -W error::RuntimeWarning -c "
import torch, kplay, kplay.torch as kt
print('torch', torch.__version__, '| kplay', kplay.__version__, 'from', kplay.__file__)
print('C++ operators (kplay._torch_ops):', kt.EXTENSION, '| device:', torch.cuda.get_device_name())
assert kt.EXTENSION and torch.cuda.is_available()" || exit 1
cd "$root" || exit 1
step pytest timeout 1200 "$PY" -m pytest -q -rfs -p no:cacheprovider tests/python/test_torch.py \
  tests/python/test_torch_ops.py tests/python/test_foreign_activations.py tests/python/test_gated_torch.py \
  tests/python/test_prelu_rrelu.py tests/python/test_softmax_torch.py tests/python/test_softmax_opinfo.py
step overhead timeout 600 "$PY" examples/overhead.py --json "$OUT/overhead.json"
step compile_modes timeout 1800 "$PY" examples/compile_modes.py ${KPLAY_MODELS:+--models $KPLAY_MODELS}
step bench_gated timeout 400 "$PY" -m kplay.bench_gated --rounds 5 --json "$OUT/bench_gated.json"
echo
echo "== summary ($OUT)"
grep -E "passed|failed" "$OUT/pytest.log" | tail -n 3
grep -E "^\||^kplay op|^eager" "$OUT/overhead.log"
grep -E "^\|" "$OUT/compile_modes.log"
sed -n '/^shape  /,/^µs:/p' "$OUT/bench_gated.log"
echo "failed steps: $failed"
[ "$failed" = 0 ]
