// What the backend seam (backend.hpp) and codegen (src/codegen/) exchange, kept below both so
// that backends never include codegen: a backend describes its kernel language (Dialect) and its
// device's limits (TargetLimits); codegen hands it a RenderedKernel to compile.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kplay/types.hpp"

namespace kplay::rt {

// What a backend tells codegen about its kernel language.
struct Dialect {
  std::string name;                            // "cuda" or "opencl"
  std::string prelude;                         // template path, e.g. "cuda/prelude.cuh"
  std::string kernel;                          // template path, e.g. "common/elementwise.h"
  std::vector<std::string> options;            // always passed
  std::vector<std::string> fast_math_options;  // passed when config.fast_math
  // Passed for float16/bfloat16 kernels, whose float32 math needs only ~2^-20 relative precision
  // (see templates/common/narrow_math.h): CUDA's full-range division within 2 ulp.
  std::vector<std::string> narrow_options;
  // Passed for float32 kernels without fast-math, whose float-float math (precise_math.h) needs
  // every operation rounded as written: CUDA must not contract a * b + c into an fma.
  std::vector<std::string> precise_options;
  // The device's FP64 is fast (rt::DeviceInfo::fast_fp64): KP_FAST_FP64, see fp64_math.h.
  bool fast_fp64 = false;
};

// What a backend and device allow; backends fill it, validation reads it.
struct TargetLimits {
  std::string backend = "cuda";
  int max_block = 1024;     // device limit on threads per block / work-group
  bool cache_hints = true;  // false: only --cache default is accepted
  // FP8 output (OutDtype f8e4m3 and f8e5m2): CUDA devices of sm_89 and newer, whose PTX converts
  // float32 to FP8 (cvt.rn.satfinite.e4m3x2.f32). `fp8_why` says why not where it is false.
  bool fp8 = false;
  std::string fp8_why = "FP8 output is for CUDA only (OpenCL has no FP8 type)";
  std::vector<Dtype> dtypes = {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64};
  // Row kernels (the softmax family): the largest thread-block cluster (0: none; CUDA sm_90 and
  // newer: 16, of which 8 is portable), and the dynamic shared memory one block may opt in to.
  int max_cluster = 0;
  std::uint64_t max_shared_optin = 48ull * 1024;
  // The device's compute units and resident threads per unit (rt::DeviceInfo's), for a row
  // kernel's persistent grid (--grid grid-stride:WAVES): WAVES times the blocks resident at once.
  int compute_units = 0;
  int max_threads_per_unit = 0;
};

// A kernel ready to compile: what codegen (render_kernel) produces for a backend.
struct RenderedKernel {
  std::string source;
  std::string entry;
  std::vector<std::string> options;  // without the target architecture, which the backend adds
  std::string hash;                  // over dialect, source, options and entry (16 hex digits)
  std::string options_string() const;
};

}  // namespace kplay::rt
