#!/usr/bin/env bash
# The GPU check of kplay inside PyTorch models, by capability, each within one device call's 10
# minutes: torch's OpInfo samples through kplay.torch, the model benchmark (eager rows, then the
# compiled ones, which spend minutes compiling), and DDP on two GPUs. Logs and JSON go to OUT_DIR;
# the verdict lines are printed at the end. Exits 1 when a step failed.
# Usage on the GPU machine: tools/models_check.sh OUT_DIR CAPABILITY...
#   opinfo   pytest tests/python/test_opinfo_parity.py and test_bench_modules.py (about 2 min)
#   eager    python -m kplay.bench_models --modes eager_f32,eager_bf16 (about 2-3 min on an H100)
#   compile  python -m kplay.bench_models --modes compile_bf16, stopped from starting rows after
#            KPLAY_TIME_LIMIT seconds (default 480); rows left are listed as not run
#   ddp      torchrun --nproc_per_node=2 -m kplay.bench_ddp twice on one fresh database: cold, warm
#            (two GPUs: nvidia-h100-x2)
# Environment:
#   KPLAY_WHEEL   a kplay wheel built elsewhere, installed into OUT_DIR/site (else `import kplay` must work)
#   KPLAY_PYDEPS  a folder of wheels for what the machine's python lacks (expecttest, hypothesis,
#                 sortedcontainers for torch.testing._internal), installed into OUT_DIR/site
#   KPLAY_MODELS  --models of the benchmark (default all)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
OUT=${1:?usage: models_check.sh OUT_DIR opinfo|eager|compile|ddp ...}
shift
[ $# -gt 0 ] || { echo "models_check.sh: name at least one of opinfo eager compile ddp" >&2; exit 2; }
for c in "$@"; do
  [[ " opinfo eager compile ddp " == *" $c "* ]] || { echo "models_check.sh: unknown capability '$c'" >&2; exit 2; }
done
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
PY="${PYTHON:-python3}"
failed=0
summary="$OUT/models_summary.txt"
: >"$summary"

if [ -n "${KPLAY_WHEEL:-}" ] || [ -n "${KPLAY_PYDEPS:-}" ]; then
  wheels=()
  [ -n "${KPLAY_WHEEL:-}" ] && wheels+=("$KPLAY_WHEEL")
  [ -n "${KPLAY_PYDEPS:-}" ] && wheels+=("$KPLAY_PYDEPS"/*.whl)
  "$PY" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$OUT/site" "${wheels[@]}" ||
    { echo "models_check.sh: installing ${wheels[*]} failed" >&2; exit 1; }
  export PYTHONPATH="$OUT/site${PYTHONPATH:+:$PYTHONPATH}"
fi
cd "$root" || exit 1
"$PY" -c "import kplay, kplay.torch" || { echo "models_check.sh: kplay.torch does not import: set KPLAY_WHEEL" >&2; exit 1; }

# step NAME COMMAND...: runs it with its log in OUT, records its status and time
step() {
  local name=$1; shift
  echo; echo "### $name: $*"
  local t0=$SECONDS
  "$@" 2>&1 </dev/null | tee "$OUT/$name.log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || failed=$((failed + 1))
  echo "$name rc=$rc ($((SECONDS - t0)) s)" >>"$summary"
}
models=(); [ -n "${KPLAY_MODELS:-}" ] && models=(--models "$KPLAY_MODELS")

for cap in "$@"; do
  case $cap in
    opinfo)
      KPLAY_DB="$OUT/opinfo.db" step opinfo timeout 540 "$PY" -m pytest -q -rfs -p no:cacheprovider \
        tests/python/test_opinfo_parity.py tests/python/test_bench_modules.py
      grep -E "^(FAILED|SKIPPED)|passed|failed" "$OUT/opinfo.log" | tail -n 30 >>"$summary" ;;
    eager)
      KPLAY_DB="$OUT/models.db" step models_eager timeout 570 "$PY" -m kplay.bench_models ${models[@]+"${models[@]}"} \
        --modes eager_f32,eager_bf16 --time-limit 420 --json "$OUT/models_eager.json"
      sed -n '/^model /,$p' "$OUT/models_eager.log" >>"$summary" ;;
    compile)
      KPLAY_DB="$OUT/models.db" step models_compile timeout 590 "$PY" -m kplay.bench_models ${models[@]+"${models[@]}"} \
        --modes compile_bf16 --time-limit "${KPLAY_TIME_LIMIT:-480}" --json "$OUT/models_compile.json"
      sed -n '/^model /,$p' "$OUT/models_compile.log" >>"$summary" ;;
    ddp)
      gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
      if [ "$gpus" -lt 2 ]; then
        echo "ddp skipped: $gpus GPU(s)" | tee -a "$summary"
        continue
      fi
      rm -f "$OUT/ddp.db"*
      for run in cold warm; do
        step "ddp_$run" timeout 280 "$PY" -m torch.distributed.run --standalone --nproc_per_node=2 -m kplay.bench_ddp \
          --db "$OUT/ddp.db" --json "$OUT/ddp_$run.json"
        sed -n "/^kernels' first use/,\$p" "$OUT/ddp_$run.log" >>"$summary"
      done ;;
  esac
done
echo; echo "######## summary ($failed failed)"; cat "$summary"
[ "$failed" = 0 ]
