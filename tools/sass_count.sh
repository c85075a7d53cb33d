#!/usr/bin/env bash
# Static SASS cost per element of each activation's math, as kplay compiles it. For every
# activation, direction and math path, `kplay emit` gives the kernel source kplay would hand NVRTC
# (prelude, the math headers the activation uses, its snippet and parameters); its kernel is
# replaced by minimal ones (load, math, store), compiled by nvcc with the options kplay gives NVRTC,
# and disassembled by nvdisasm. Figures are per element over a kernel with the same loads and
# stores and no math (forward: convert and store; backward from input: g * x):
#   INSTR/FP64/CVT  all instructions (NOPs left out) / FP64-pipe ops (DFMA DADD DMUL DSETP DMNMX)
#                   / F2F F2I I2F MUFU (16 per clock per SM on sm_90, a quarter of the FP32 rate)
#   x1: one element per thread; xV: one 16-byte vector per thread, as kplay's kernels access
#   memory (constants and setup shared by its V elements).
# float32 is counted on both of its math paths: float-float (--fast-fp64 0, precise_math.h) and
# double (--fast-fp64 1, fp64_math.h, what devices with fast FP64 get).
# Usage: tools/sass_count.sh [--kplay CLI] [--dtype f32|f16|bf16|f64] [--direction forward|backward|both]
#                            [--fast-fp64 0|1] [--arch sm_90] [--keep DIR] [ACT ...]
#        tools/sass_count.sh --costs [--kplay CLI] [--arch sm_90] [ACT ...] >src/spec/activation_costs.inc
#   --costs: the INSTR of the xV column for every dtype, path and direction, as the rows of the
#   default model's cost table (src/spec/activation_costs.hpp says what each column is); ACT
#   default: every line of `kplay list --formulas` (--texts, gelu(approximate=tanh), the tier texts).
#   ACT: activation text as kplay takes it, e.g. 'softplus(beta=2, threshold=10)'; default: every
#   line of `kplay list --texts`. CLI: default $KPLAY_CLI, else build/kplay. --keep DIR keeps the
#   sources and disassembly. NVCC=... and NVDISASM=... override the tools.
# nvdisasm is in the CUDA toolkit but not in every install of it (not in the NVRTC-only one). PyPI has
# it: `pip download nvidia-cuda-nvdisasm --no-deps`, unzip the wheel, NVDISASM=<dir>/nvidia/cu*/bin/nvdisasm.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kplay="${KPLAY_CLI:-$root/build/kplay}"
dtype=f32 dirs="forward backward" fp64_paths="" arch=sm_90 keep="" costs=""
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --kplay) kplay=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    --direction) dirs=$2; [ "$dirs" = both ] && dirs="forward backward"; shift 2 ;;
    --fast-fp64) fp64_paths=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --keep) keep=$2; mkdir -p "$keep"; shift 2 ;;
    --costs) costs=1; shift ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "sass_count.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
nvdisasm="${NVDISASM:-$(command -v nvdisasm || echo /usr/local/cuda/bin/nvdisasm)}"
[ -x "$nvdisasm" ] || { echo "sass_count.sh: no nvdisasm at $nvdisasm; set NVDISASM (see the header)" >&2; exit 2; }
[ -x "$nvcc" ] || { echo "sass_count.sh: no nvcc at $nvcc; set NVCC" >&2; exit 2; }
[ -x "$kplay" ] || { echo "sass_count.sh: no kplay CLI at $kplay; pass --kplay or set KPLAY_CLI" >&2; exit 2; }
# The fast-FP64 path only changes float32 (the other dtypes' math does not depend on it).
[ -n "$fp64_paths" ] || { [ "$dtype" = f32 ] && fp64_paths="0 1" || fp64_paths="0"; }
if [ $# -gt 0 ]; then acts=("$@"); elif [ -n "$costs" ]; then mapfile -t acts < <("$kplay" list --formulas)
else mapfile -t acts < <("$kplay" list --texts); fi
[ ${#acts[@]} -gt 0 ] || { echo "sass_count.sh: no activations (\`$kplay list --texts\` printed none)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The kernels counted, appended to the emitted source in place of kplay's own kernel. KP_T is the
# storage type, KP_C the compute type, KP_VEC the elements of one 16-byte vector (all from the
# emitted prelude). The gradient input of the forward and copy kernels is never read, so its load
# is dropped by the compiler.
kernels() {
  cat <<'K'
#line 1 "sass_count.cu"
struct KpVec { KP_T v[KP_VEC]; };
#define KP_K1(name, expr)                                                                              \
  extern "C" __global__ void name(const KP_T* __restrict__ x, const KP_T* __restrict__ gr,             \
                                  KP_T* __restrict__ y, int n) {                                       \
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;                                 \
    KP_C a = kp_to_compute(x[i]), g = kp_to_compute(gr[i]); (void)g; y[i] = kp_to_storage(expr); }
#define KP_KV(name, expr)                                                                              \
  extern "C" __global__ void name(const uint4* __restrict__ x, const uint4* __restrict__ gr,           \
                                  uint4* __restrict__ y, int n) {                                      \
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;                                 \
    uint4 p = x[i], q = gr[i]; KpVec b = *(KpVec*)&p, c = *(KpVec*)&q, o;                             \
    _Pragma("unroll") for (int j = 0; j < KP_VEC; ++j) {                                               \
      KP_C a = kp_to_compute(b.v[j]), g = kp_to_compute(c.v[j]); (void)g; o.v[j] = kp_to_storage(expr); } \
    y[i] = *(uint4*)&o; }
KP_K1(k_base1, a)
KP_KV(k_baseV, a)
KP_K1(k_mul1, g * a)
KP_KV(k_mulV, g * a)
K
  if [ "$1" = forward ]; then
    echo 'KP_K1(k_act1, kp_act_forward(a))'
    echo 'KP_KV(k_actV, kp_act_forward(a))'
  else
    echo 'KP_K1(k_act1, kp_act_backward_from_input(g, a))'
    echo 'KP_KV(k_actV, kp_act_backward_from_input(g, a))'
  fi
}

count() {  # SASS_FILE KERNEL -> "all fp64 cvt" of that kernel
  awk -v k="$2" '
    /^[[:space:]]*\.(text|section)/ { on = ($0 ~ ("\\.text\\." k "([:\",]|$)")); next }
    on && /^[[:space:]]+\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]\*\// {
      sub(/^[[:space:]]+\/\*[0-9a-f]+\*\/[[:space:]]+/, ""); sub(/^@!?U?P[T0-9]+[[:space:]]+/, "")
      split($0, w, /[ ;]/); op = w[1]
      if (op ~ /^NOP/ || op == "") next
      all++
      if (op ~ /^D(FMA|ADD|MUL|SETP|MNMX)/) fp64++
      if (op ~ /^(F2F|F2I|I2F|MUFU)/) cvt++
    }
    END { printf "%d %d %d\n", all, fp64, cvt }' "$1"
}

net() {  # SASS_FILE BASE_KERNEL KERNEL ELEMENTS -> "instr/fp64/cvt" per element over the base kernel
  local b a
  b=$(count "$1" "$2") a=$(count "$1" "$3")
  awk -v b="$b" -v a="$a" -v e="$4" 'BEGIN { split(b, x, " "); split(a, y, " ")
    f = (e == 1) ? "%d/%d/%d" : "%.1f/%.1f/%.1f"
    printf f, (y[1] - x[1]) / e, (y[2] - x[2]) / e, (y[3] - x[3]) / e }'
}

measure() {  # ACT DIRECTION FAST_FP64 -> "x1 xV" cells, or "emit-failed"/"nvcc-failed"
  local act=$1 dir=$2 fp=$3 tag opts vec
  tag="$(printf '%s' "$act" | tr -c 'A-Za-z0-9_' '_')_${dtype}_${dir}_fp$fp"
  if ! "$kplay" emit --backend cuda --act "$act" --dtype "$dtype" --direction "$dir" --fast-fp64 "$fp" \
       >"$work/emit.cu" 2>"$work/emit.err"; then
    echo "emit-failed emit-failed"; return
  fi
  # stderr: "entry NAME, options [-default-device -fmad=false], hash H"; -default-device is NVRTC's alone
  opts=$(sed -n 's/.*options \[\(.*\)\].*/\1/p' "$work/emit.err" | tr ' ' '\n' | grep -v '^-default-device$' | tr '\n' ' ' || true)
  vec=$(sed -n 's/^#define KP_VEC \([0-9]*\)$/\1/p' "$work/emit.cu")
  { sed '/^#line 1 "common\/elementwise.h"/,$d' "$work/emit.cu"; kernels "$dir"; } >"$work/$tag.cu"
  # shellcheck disable=SC2086  # the options are separate words
  if ! "$nvcc" -arch="$arch" -cubin $opts -o "$work/k.cubin" "$work/$tag.cu" 2>"$work/nvcc.err"; then
    cat "$work/nvcc.err" >&2; echo "nvcc-failed nvcc-failed"; return
  fi
  "$nvdisasm" "$work/k.cubin" >"$work/$tag.sass"
  [ -z "$keep" ] || cp "$work/$tag.cu" "$work/$tag.sass" "$keep"/
  local b1=k_base1 bV=k_baseV
  [ "$dir" = backward ] && b1=k_mul1 bV=k_mulV
  echo "$(net "$work/$tag.sass" $b1 k_act1 1) $(net "$work/$tag.sass" $bV k_actV "$vec")"
}

if [ -n "$costs" ]; then
  instr() {  # ACT DIRECTION FAST_FP64 -> INSTR per element of a 16-byte vector thread, or "-1"
    local cV
    read -r _ cV < <(measure "$1" "$2" "$3")
    case $cV in *failed) echo "-1" ;; *) echo "${cV%%/*}" ;; esac
  }
  echo "// Generated by tools/sass_count.sh --costs --arch $arch; do not edit: run it again after a math change."
  echo "// {text, {{f32 double path}, {f32 float-float path}, {f16}, {bf16}, {f64}}}, each {forward, backward}."
  echo "// clang-format off"
  for act in "${acts[@]}"; do
    row=""
    for cell in f32:1 f32:0 f16:0 bf16:0 f64:0; do
      dtype=${cell%%:*}
      row+="{$(instr "$act" forward "${cell##*:}"), $(instr "$act" backward "${cell##*:}")}, "
    done
    printf '{"%s", {%s}},\n' "$act" "${row%, }"
  done
  echo "    // clang-format on"
  exit 0
fi

path_name() { case $dtype:$1 in f32:0) echo "float-float" ;; f32:1) echo "double" ;; *) echo "$dtype" ;; esac; }
echo "$dtype, $arch: per element over a no-math kernel: INSTR/FP64/CVT (see the header);"
echo "x1: one element per thread, xV: one 16-byte vector per thread"
printf "%-36s %-9s" activation direction
for fp in $fp64_paths; do printf " %16s %16s" "$(path_name "$fp") x1" "$(path_name "$fp") xV"; done
echo
for act in "${acts[@]}"; do
  for dir in $dirs; do
    printf "%-36s %-9s" "$act" "$dir"
    for fp in $fp64_paths; do
      read -r c1 cV < <(measure "$act" "$dir" "$fp")
      printf " %16s %16s" "$c1" "$cV"
    done
    echo
  done
done
