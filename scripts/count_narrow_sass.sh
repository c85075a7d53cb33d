#!/usr/bin/env bash
# Static sm_90 SASS cost per element of the 16-bit activation math (float16/bfloat16 storage,
# float32 math from templates/common/narrow_math.h), fast-math off: each snippet is compiled with
# the real CUDA prelude into 8-wide kernels (one 16-byte load, 8 elements, one store) with the
# options kplay gives NVRTC (-prec-div=false); the figures are instructions per element over a
# convert-and-store kernel (forward) or a multiply kernel (backward), and MUFU ops per element.
# Usage: scripts/count_narrow_sass.sh f16|bf16 ACT [KP_P_NAME=VALUE ...]   (NVCC=..., NVDISASM=...)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
nvdisasm="${NVDISASM:-$(command -v nvdisasm || echo /usr/local/cuda/bin/nvdisasm)}"
dt=${1:?usage: count_narrow_sass.sh f16|bf16 ACT [KP_P_NAME=VALUE ...]}
act=${2:?usage: count_narrow_sass.sh f16|bf16 ACT [KP_P_NAME=VALUE ...]}
shift 2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
{
  printf '#define KP_DTYPE_F32 0\n#define KP_DTYPE_F16 %d\n#define KP_DTYPE_BF16 %d\n#define KP_DTYPE_F64 0\n' \
    "$([[ $dt == f16 ]] && echo 1 || echo 0)" "$([[ $dt == bf16 ]] && echo 1 || echo 0)"
  printf '#define KP_FAST_MATH 0\n#define KP_FAST_FP64 0\n'
  for p in "$@"; do echo "#define ${p%%=*} ${p#*=}"; done
  for f in cuda/prelude.cuh common/narrow_math.h "activations/$act.h"; do printf '#include "%s/templates/%s"\n' "$root" "$f"; done
  # k(NAME, EXPR of a (and g)): 8 elements of one uint4, converted, EXPR, stored
  cat <<'K'
struct V8 { KP_T v[8]; };
#define K(name, expr) extern "C" __global__ void name(const uint4* x, const uint4* gr, uint4* y, int n) { \
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return; uint4 p = x[i], q = gr[i];       \
  V8 b = *(V8*)&p, c = *(V8*)&q, o;                                                                   \
  for (int j = 0; j < 8; ++j) { float a = kp_to_compute(b.v[j]), g = kp_to_compute(c.v[j]); (void)g;  \
    o.v[j] = kp_to_storage(expr); } y[i] = *(uint4*)&o; }
K(k_copy, a)
K(k_fwd, kp_act_forward(a))
K(k_mul, g * a)
K(k_bwd, kp_act_backward_from_input(g, a))
K
} >"$work/k.cu"
"$nvcc" -arch=sm_90 -prec-div=false -cubin -o "$work/k.cubin" "$work/k.cu"
"$nvdisasm" "$work/k.cubin" >"$work/k.sass"
count() {  # kernel -> "instructions mufu"
  awk -v k="$1" -f "$root/scripts/sass_ops.awk" "$work/k.sass" | cut -d' ' -f1,4
}
read -r c _ < <(count k_copy); read -r f fm < <(count k_fwd)
read -r m _ < <(count k_mul); read -r b bm < <(count k_bwd)
awk -v dt="$dt" -v act="$act" -v c="$c" -v f="$f" -v fm="$fm" -v m="$m" -v b="$b" -v bm="$bm" 'BEGIN {
  printf "%s %s: copy %.1f/element; forward +%.1f (MUFU %.2f); backward from input +%.1f (MUFU %.2f)\n",
    act, dt, c / 8, (f - c) / 8, fm / 8, (b - m) / 8, bm / 8 }'
