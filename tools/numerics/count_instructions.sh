#!/usr/bin/env bash
# Static SASS (or, without nvdisasm, PTX) instruction counts per element of the precise
# functions: one sm_90 kernel per function (load, call, store), minus a plain copy kernel.
# Usage: tools/numerics/count_instructions.sh [nvcc] ; set NVDISASM=/path/to/nvdisasm for SASS.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
nvcc="${1:-${NVCC:-/usr/local/cuda/bin/nvcc}}"
nvdisasm="${NVDISASM:-$(command -v nvdisasm || true)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fns=(copy exp_ff expm1_ff selu sigmoid silu tanh tanhshrink softplus softplus_b2 logsigmoid mish
     gelu_tanh gelu sigmoid_grad tanh_grad silu_grad silu_grad_g gelu_grad_g gelu_tanh_grad_g mish_grad_g)
{
  echo '#include "cuda_prelude_stub.cuh"'
  echo '#include "precise_math.h"'
  echo '#include "precise_grad.h"'
  echo 'static __device__ __forceinline__ float f_copy(float x) { return x; }'
  echo 'static __device__ __forceinline__ float f_exp_ff(float x) { float l; float h = kp_exp_ff(x, &l); return h + l; }'
  echo 'static __device__ __forceinline__ float f_expm1_ff(float x) { float l; float h = kp_expm1_ff(x, &l); return h + l; }'
  echo 'static __device__ __forceinline__ float f_selu(float x) { if (x >= 0.0f) return 0x1.0cfabep+0f * x;'
  echo '  float l; float h = kp_expm1_ff(x, &l); return fmaf(0x1.c212ccp+0f, h, fmaf(0x1.c212ccp+0f, l, 0x1.903c0cp-26f * h)); }'
  echo 'static __device__ __forceinline__ float f_softplus(float x) { return kp_precise_softplus(x, 1.0f, 20.0f); }'
  echo 'static __device__ __forceinline__ float f_softplus_b2(float x) { return kp_precise_softplus(x, 2.0f, 20.0f); }'
  for f in sigmoid silu tanh tanhshrink logsigmoid mish gelu_tanh gelu sigmoid_grad tanh_grad; do
    echo "static __device__ __forceinline__ float f_$f(float x) { return kp_precise_$f(x); }"
  done
  # silu's one-argument derivative: kp_precise_silu_grad(g, x) is precise_grad.h's (no overloads in OpenCL C)
  echo 'static __device__ __forceinline__ float f_silu_grad(float x) { return kp_precise_silu_derivative(x); }'
  # backward functions g * f'(x): g from a second input array, so the count includes its load
  for f in silu gelu gelu_tanh mish; do
    echo "static __device__ __forceinline__ float f_${f}_grad_g(float x, float g) { return kp_precise_${f}_grad(g, x); }"
  done
  for f in "${fns[@]}"; do
    case $f in
      *_grad_g)
        echo "extern \"C\" __global__ void k_$f(const float* __restrict__ in, const float* __restrict__ gin, float* __restrict__ out, int n) {"
        echo "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = f_$f(in[i], gin[i]); }"
        continue ;;
    esac
    echo "extern \"C\" __global__ void k_$f(const float* __restrict__ in, float* __restrict__ out, int n) {"
    echo "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = f_$f(in[i]); }"
  done
} > "$work/k.cu"
# --fmad=false as the kernels are compiled: every fma in the headers is an explicit KP_FMAF
"$nvcc" -arch=sm_90 -O3 --fmad=false -I"$here" -I"$here/../../templates/common" -cubin -o "$work/k.cubin" "$work/k.cu"
"$nvcc" -arch=sm_90 -O3 --fmad=false -I"$here" -I"$here/../../templates/common" -ptx -o "$work/k.ptx" "$work/k.cu"
declare -A sass ptx
if [ -n "$nvdisasm" ]; then
  "$nvdisasm" "$work/k.cubin" > "$work/k.sass"
  for f in "${fns[@]}"; do
    # instructions of the function's section, without the NOP padding
    sass[$f]=$(awk -v s=".text.k_$f:" '$1 == s {on = 1; next} /^[ \t]*\.section/ {on = 0}
      on && /\/\*[0-9a-f][0-9a-f][0-9a-f][0-9a-f]\*\// && !/ NOP/ {n++} END {print n + 0}' "$work/k.sass")
  done
fi
for f in "${fns[@]}"; do
  ptx[$f]=$(awk -v s="k_$f(" 'index($0, ".entry " s) {on = 1; next} on && /^}/ {on = 0}
    on && /^[ \t]+[a-z]/ {n++} END {print n + 0}' "$work/k.ptx")
done
printf '%-18s %12s %12s\n' function "SASS-copy" "PTX-copy"
for f in "${fns[@]}"; do
  [ "$f" = copy ] && continue
  s="-"
  [ -n "$nvdisasm" ] && s=$(( ${sass[$f]} - ${sass[copy]} ))
  printf '%-18s %12s %12s\n' "$f" "$s" "$(( ${ptx[$f]} - ${ptx[copy]} ))"
done
[ -n "$nvdisasm" ] && echo "(copy kernel itself: ${sass[copy]} SASS, ${ptx[copy]} PTX instructions)"
