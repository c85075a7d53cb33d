#!/usr/bin/env bash
# Static sm_90 SASS cost per element of the float32 activation math (fast-math off), for both
# paths: float-float (KP_FAST_FP64 0, precise_math.h) and double (KP_FAST_FP64 1, fp64_math.h).
# Each activation snippet is compiled with the real CUDA prelude into one-element-per-thread
# kernels (forward: load, f, store; backward from input: two loads, f', store); the table gives
# the instructions over a plain copy kernel (backward: over y = g * x), and how many of them are FP64-pipe ops (DFMA, DADD,
# DMUL, DSETP) and conversions or MUFU (F2F, F2I, I2F, MUFU: 16/clk/SM).
# Usage: scripts/count_activation_sass.sh [KPLAY_CLI]   (NVCC=..., NVDISASM=... to override;
# KP_ACTS="gelu softplus" for a subset)
# nvdisasm is in the CUDA toolkit but not in every install of it (not in the NVRTC-only one). PyPI has
# it: `pip download nvidia-cuda-nvdisasm --no-deps`, unzip the wheel, NVDISASM=<dir>/nvidia/cu*/bin/nvdisasm.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kplay="${1:-$root/build/kplay}"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
nvdisasm="${NVDISASM:-$(command -v nvdisasm || echo /usr/local/cuda/bin/nvdisasm)}"
[ -x "$nvdisasm" ] || { echo "count_activation_sass.sh: no nvdisasm at $nvdisasm; set NVDISASM (see the header)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
acts=(${KP_ACTS:-"gelu" "gelu(approximate=tanh)" "silu" "sigmoid" "tanh" "mish" "softplus" "logsigmoid" "tanhshrink"})
count() {  # file kernel -> "all fp64 conv"
  awk -v k="$2" -f "$root/scripts/sass_ops.awk" "$1" | cut -d' ' -f1-3
}
net() {  # file baseline kernel elements -> "all/fp64/conv" per element, over the baseline kernel
  local base all f64 cv
  read -r base _ _ < <(count "$1" "$2")
  read -r all f64 cv < <(count "$1" "$3")
  echo "$(((all - base) / $4))/$((f64 / $4))/$((cv / $4))"
}
echo "per element: instructions over the copy / FP64-pipe ops / conversions+MUFU; x1: one element per"
echo "thread, x4: per element of a float4 thread (kplay's float32 default; constants shared by four)"
printf "%-24s %-9s %16s %16s %16s %16s\n" activation direction "float-float x1" "float-float x4" "double x1" "double x4"
for act in "${acts[@]}"; do
  name="${act%%(*}"
  params="$("$kplay" emit --backend cuda --act "$act" 2>/dev/null | grep '^#define KP_P_' || true)"
  declare -A res=()
  for fp64 in 0 1; do
    cu="$work/k$fp64.cu"
    {
      printf '#define KP_DTYPE_F32 1\n#define KP_DTYPE_F16 0\n#define KP_DTYPE_BF16 0\n#define KP_DTYPE_F64 0\n'
      printf '#define KP_FAST_MATH 0\n#define KP_FAST_FP64 %d\n%s\n' "$fp64" "$params"
      for f in cuda/prelude.cuh common/narrow_math.h common/precise_math.h common/precise_grad.h common/fp64_math.h \
               "activations/$name.h"; do
        printf '#include "%s/templates/%s"\n' "$root" "$f"
      done
      echo 'extern "C" __global__ void k_copy(const float* __restrict__ x, float* __restrict__ y, int n) {'
      echo '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }'
      echo 'extern "C" __global__ void k_mul(const float* __restrict__ g, const float* __restrict__ x, float* __restrict__ y, int n) {'
      echo '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = g[i] * x[i]; }'
      # the 4-wide forms (float4 accesses, kplay's float32 default): constants load once per 4
      echo 'extern "C" __global__ void k_copy4(const float4* __restrict__ x, float4* __restrict__ y, int n) {'
      echo '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }'
      echo 'extern "C" __global__ void k_mul4(const float4* __restrict__ g, const float4* __restrict__ x, float4* __restrict__ y, int n) {'
      echo '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { float4 a = g[i], b = x[i];'
      echo '  y[i] = make_float4(a.x * b.x, a.y * b.y, a.z * b.z, a.w * b.w); } }'
      echo 'extern "C" __global__ void k_fwd4(const float4* __restrict__ x, float4* __restrict__ y, int n) {'
      echo '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { float4 b = x[i];'
      echo '  y[i] = make_float4(kp_act_forward(b.x), kp_act_forward(b.y), kp_act_forward(b.z), kp_act_forward(b.w)); } }'
      echo 'extern "C" __global__ void k_bwd4(const float4* __restrict__ g, const float4* __restrict__ x, float4* __restrict__ y, int n) {'
      echo '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) { float4 a = g[i], b = x[i];'
      echo '  y[i] = make_float4(kp_act_backward_from_input(a.x, b.x), kp_act_backward_from_input(a.y, b.y),'
      echo '                     kp_act_backward_from_input(a.z, b.z), kp_act_backward_from_input(a.w, b.w)); } }'
      echo 'extern "C" __global__ void k_fwd(const float* __restrict__ x, float* __restrict__ y, int n) {'
      echo '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = kp_act_forward(x[i]); }'
      echo 'extern "C" __global__ void k_bwd(const float* __restrict__ g, const float* __restrict__ x, float* __restrict__ y, int n) {'
      echo '  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = kp_act_backward_from_input(g[i], x[i]); }'
    } >"$cu"
    "$nvcc" -arch=sm_90 -cubin -fmad=false -o "$work/k.cubin" "$cu"
    "$nvdisasm" "$work/k.cubin" >"$work/k.sass"
    res[${fp64}fwd]=$(net "$work/k.sass" k_copy k_fwd 1)
    res[${fp64}bwd]=$(net "$work/k.sass" k_mul k_bwd 1)
    res[${fp64}fwd4]=$(net "$work/k.sass" k_copy4 k_fwd4 4)
    res[${fp64}bwd4]=$(net "$work/k.sass" k_mul4 k_bwd4 4)
  done
  for dir in fwd bwd; do
    printf "%-24s %-9s %16s %16s %16s %16s\n" "$act" "$([[ $dir == fwd ]] && echo forward || echo backward)" \
      "${res[0$dir]}" "${res[0${dir}4]}" "${res[1$dir]}" "${res[1${dir}4]}"
  done
  unset res
done
