// Specialization: (spec, resolved config, dialect) -> complete kernel source, compile options,
// entry name and a stable hash of all three. The source starts with the knob definitions,
// then the backend prelude, the activation snippet and the generic kernel, each behind a #line
// marker so compiler messages point at the template file and line.
#pragma once
#include <string>
#include <vector>

#include "kplay/types.hpp"
#include "runtime/target.hpp"

namespace kplay {

using rt::Dialect;
using rt::RenderedKernel;

// Which kernel of the template: `general` takes any rows, pitches, offsets and sizes; `flat`
// takes one row of fewer than 2^31 elements with every pointer vector-aligned (what contiguous
// tensors give), and is shorter and faster. The engine picks one per launch (launch_layout.hpp).
// prelu's backward has two more kernels for the weight's gradient (templates/common/slope.h):
// `wgrad_parts` sums fixed ranges of each channel into a workspace, `wgrad_sum` adds each
// channel's parts in order. Row kernels take `strided` for rows whose elements are `inner` apart
// (softmax over a dimension that is not the last; row_codegen.hpp), `flat` for rows of whole
// vectors (every row of every buffer starts on a vector and holds a multiple of its lanes: no
// lane-by-lane path), `general` for any rows of contiguous elements.
enum class Layout { general, flat, wgrad_parts, wgrad_sum, strided };
const char* to_string(Layout layout);

// `config` must come from resolve_config (vec filled in).
RenderedKernel render_kernel(const KernelSpec& spec, const KernelConfig& config, const Dialect& dialect,
                             Layout layout = Layout::general);

// "kplay_selu_fwd_f32_v4_b256_p1_cd_pm" (general), "..._cd_pm_flat" (flat) — readable in
// profilers; names every knob that changes the code (the grid policy changes only the launch,
// so it is not part of it).
std::string entry_name(const KernelSpec& spec, const KernelConfig& config, Layout layout = Layout::general);

}  // namespace kplay
