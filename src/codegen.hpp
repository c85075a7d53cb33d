// Specialization: (spec, resolved config, dialect) -> complete kernel source, compile options,
// entry name and a stable hash of all three. The source starts with the knob definitions,
// then the backend prelude, the activation snippet and the generic kernel, each behind a #line
// marker so compiler messages point at the template file and line.
#pragma once
#include <string>
#include <vector>

#include "kplay/types.hpp"

namespace kplay {

// What a backend tells codegen about its kernel language.
struct Dialect {
  std::string name;                            // "cuda" or "opencl"
  std::string prelude;                         // template path, e.g. "cuda/prelude.cuh"
  std::string kernel;                          // template path, e.g. "cuda/elementwise.cu"
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

Dialect cuda_dialect();
Dialect opencl_dialect();

// Which kernel of the template: `general` takes any rows, pitches, offsets and sizes; `flat`
// takes one row of fewer than 2^31 elements with every pointer vector-aligned (what contiguous
// tensors give), and is shorter and faster. The engine picks one per launch (launch_layout.hpp).
enum class Layout { general, flat };
const char* to_string(Layout layout);

struct RenderedKernel {
  std::string source;
  std::string entry;
  std::vector<std::string> options;  // without the target architecture, which the backend adds
  std::string hash;                  // over dialect, source, options and entry (16 hex digits)
  std::string options_string() const;
};

// `config` must come from resolve_config (vec filled in).
RenderedKernel render_kernel(const KernelSpec& spec, const KernelConfig& config, const Dialect& dialect,
                             Layout layout = Layout::general);

// "kplay_selu_fwd_f32_v4_b256_p1_cd_pm" (general), "..._cd_pm_flat" (flat) — readable in
// profilers; names every knob that changes the code (the grid policy changes only the launch,
// so it is not part of it).
std::string entry_name(const KernelSpec& spec, const KernelConfig& config, Layout layout = Layout::general);

}  // namespace kplay
