// The "fast FP64" device trait: FP64 at >= 1/2 the FP32 rate, where float32 activations with
// transcendental math evaluate in double (templates/common/fp64_math.h) instead of float-float
// (precise_math.h). Codegen passes it to the kernel as KP_FAST_FP64.
#pragma once
#include <cstdlib>
#include <cstring>

namespace kplay::rt {

// KPLAY_FP64_MATH=0 forces the float-float path on any device (tests run both paths on one
// device with it); unset or any other value leaves the device's trait.
inline bool fp64_math_allowed() {
  const char* v = std::getenv("KPLAY_FP64_MATH");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

// CUDA: the data-centre parts, whose FP64 runs at half the FP32 rate (P100, V100, A100, H100/H200,
// B100/B200); every other compute capability has 1/32 or 1/64 rate FP64.
inline bool cuda_fast_fp64(int compute_capability) {
  switch (compute_capability) {
    case 60:
    case 70:
    case 80:
    case 90:
    case 100: return fp64_math_allowed();
    default: return false;
  }
}

// OpenCL: CPUs with cl_khr_fp64 (double costs about what float does there); GPUs: no, since
// OpenCL does not report the FP64 rate and most GPUs are slow at it.
inline bool opencl_fast_fp64(bool is_cpu, bool has_fp64) { return is_cpu && has_fp64 && fp64_math_allowed(); }

}  // namespace kplay::rt
