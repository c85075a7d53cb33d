// Rendering of the row kernel; see row_codegen.hpp.
#include "row_codegen.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "kplay/error.hpp"
#include "spec/activations.hpp"
#include "template_store.hpp"
#include "util/hash.hpp"

namespace kplay {
namespace {
const char* row_tag(RowStrategy r) {
  switch (r) {
    case RowStrategy::registers: return "reg";
    case RowStrategy::shared: return "shm";
    case RowStrategy::online: return "onl";
    case RowStrategy::cluster: return "cl";
    default: return "none";
  }
}

int row_macro(RowStrategy r) {
  switch (r) {
    case RowStrategy::registers: return 1;
    case RowStrategy::shared: return 2;
    case RowStrategy::online: return 3;
    case RowStrategy::cluster: return 4;
    default: return 0;
  }
}

void append_file(std::ostringstream& os, const std::string& name) {
  const std::string text = template_text(name);
  os << "#line 1 \"" << name << "\"\n" << text;
  if (text.empty() || text.back() != '\n') os << '\n';
}
}  // namespace

std::string row_entry_name(const KernelSpec& spec, const KernelConfig& c, RowLayout layout) {
  const ResolvedActivation act = resolve_activation(spec.activation);
  std::ostringstream os;
  os << "kplay_" << act.act->name << '_' << (spec.direction == Direction::forward ? "fwd" : "bwdy") << '_'
     << to_string(spec.dtype) << "_v" << c.vec << "_b" << c.block << "_p" << c.per_thread << '_' << row_tag(c.row);
  if (c.row == RowStrategy::cluster) os << c.cluster;
  if (c.row != RowStrategy::cluster && c.cluster > 1) os << "_cl" << c.cluster;
  if (c.row_threads != 0 && c.row_threads != c.block) os << "_t" << c.row_threads;
  if (c.grid == GridPolicy::grid_stride) os << "_pf";
  if (c.recompute_terms) os << "_rt";
  if (c.cache == CacheHint::streaming) os << "_cs";
  if (layout == RowLayout::strided) os << "_st";
  if (layout == RowLayout::whole) os << "_w";
  if (row_torch_tier(spec)) os << "_tt";
  return os.str();
}

std::string strided_config_problem(const KernelConfig& c) {
  if (c.vec != 1) return "--vec " + std::to_string(c.vec) + " (strided rows are read an element at a time: --vec 1)";
  if (row_cluster(c) > 1)
    return "--cluster " + std::to_string(c.cluster) + " (a strided row is its block's: no cluster)";
  if (c.row != RowStrategy::registers && c.row != RowStrategy::online)
    return std::string("--row ") + to_string(c.row) +
           " (strided rows are held in registers or read twice: --row registers or online)";
  if (c.grid != GridPolicy::one_shot) return "--grid grid-stride (strided rows take a one-shot grid)";
  return {};
}

rt::RenderedKernel render_row_kernel(const KernelSpec& spec, const KernelConfig& c, const rt::Dialect& dialect,
                                     RowLayout layout) {
  const ResolvedActivation act = resolve_activation(spec.activation);
  const bool strided = layout == RowLayout::strided;
  if (strided) {
    const std::string why = strided_config_problem(c);
    if (!why.empty()) throw Error(ErrorCode::invalid_config, "strided rows (a dim that is not the last): " + why);
  }
  rt::RenderedKernel k;
  k.entry = row_entry_name(spec, c, layout);
  std::ostringstream os;
  os << "/* kplay " << dialect.name << " row kernel: " << to_string(spec) << " */\n";
  os << "#define KP_ENTRY " << k.entry << '\n';
  os << "#define KP_DTYPE_F32 " << (spec.dtype == Dtype::f32 ? 1 : 0) << '\n';
  os << "#define KP_DTYPE_F16 " << (spec.dtype == Dtype::f16 ? 1 : 0) << '\n';
  os << "#define KP_DTYPE_BF16 " << (spec.dtype == Dtype::bf16 ? 1 : 0) << '\n';
  os << "#define KP_DTYPE_F64 " << (spec.dtype == Dtype::f64 ? 1 : 0) << '\n';
  os << "#define KP_WIDE_F32 0\n";
  os << "#define KP_VEC " << c.vec << '\n';
  os << "#define KP_VEC_BYTES " << c.vec * dtype_size(spec.dtype) << '\n';
  os << "#define KP_OUT_VEC_BYTES " << c.vec * dtype_size(spec.dtype) << '\n';
  os << "#define KP_VPT " << c.per_thread << '\n';
  os << "#define KP_BLOCK " << c.block << '\n';
  os << "#define KP_TPR " << row_group_threads(c) << '\n';
  os << "#define KP_BACKWARD " << (spec.direction == Direction::backward ? 1 : 0) << '\n';
  os << "#define KP_OUT_F8 0\n";
  os << "#define KP_STREAMING " << (c.cache == CacheHint::streaming ? 1 : 0) << '\n';
  os << "#define KP_FAST_MATH 0\n";
  // Below float64, on a device whose FP64 runs at half the FP32 rate, exp is row_math.h's
  // kp_row_exp (2^-31.2 relative, 6 FP64 operations and a table) instead of the device library's
  // double exp (about 30 and a branch): the results are rounded to float32 or narrower once, so
  // its error adds 2^-31.2 2^24 = 0.007 ulp, and the memory rate can feed it (docs/accuracy.md,
  // "Softmax").
  const bool fast_fp64 = dialect.fast_fp64 && spec.dtype != Dtype::f64;
  os << "#define KP_FAST_FP64 " << (fast_fp64 ? 1 : 0) << '\n';
  os << "#define KP_ROW " << row_macro(c.row) << '\n';
  os << "#define KP_CLUSTER " << (row_cluster(c) > 1 || c.row == RowStrategy::cluster ? row_cluster(c) : 1) << '\n';
  os << "#define KP_PREFETCH " << (c.grid == GridPolicy::grid_stride ? 1 : 0) << '\n';
  os << "#define KP_STRIDED " << (strided ? 1 : 0) << '\n';
  os << "#define KP_WHOLE_ROWS " << (layout == RowLayout::whole ? 1 : 0) << '\n';
  os << "#define KP_STAGE_KEEP " << (row_keeps_stage_terms(spec, c) ? 1 : 0) << '\n';
  os << "#define KP_XCHG1 " << (row_exchanges_once(spec, c) ? 1 : 0) << '\n';
  os << "#define KP_ROW_TIER " << (row_torch_tier(spec) ? 1 : 0) << '\n';
  append_file(os, dialect.prelude);
  append_file(os, act.act->snippet);
  for (const char* part : {"common/rowwise.h", "common/row_math.h", "common/row_reduce.h", "common/row_constants.h",
                           "common/row_vectors.h", "common/row_stages.h", "common/row_kernel.h"})
    append_file(os, part);
  k.source = os.str();
  // The compensated sums must be rounded as written: no contraction into fma (CUDA's -fmad=false;
  // OpenCL's FP_CONTRACT OFF is in the template).
  k.options = dialect.options;
  k.options.insert(k.options.end(), dialect.precise_options.begin(), dialect.precise_options.end());
  Hasher h;
  h.add(dialect.name).add(k.source).add(k.entry);
  for (const auto& o : k.options) h.add(o);
  k.hash = h.hex();
  return k;
}

bool row_torch_tier(const KernelSpec& spec) {
  // float32 alone (config_validation refuses the tier elsewhere); a backward only where the registry
  // gives the tier one (log_softmax's), else the exact kernel
  return spec.dtype == Dtype::f32 && resolve_activation(spec.activation).torch_tier_kernel(spec.direction);
}

bool row_terms_can_be_kept(const KernelSpec& spec, const KernelConfig& c) {
  // the kept terms are the exact float32 kernel's doubles; the tier's float terms are recomputed
  return c.row == RowStrategy::cluster && c.grid == GridPolicy::grid_stride && spec.dtype == Dtype::f32 &&
         spec.direction == Direction::forward && !resolve_activation(spec.activation).act->row_form.log &&
         !row_torch_tier(spec);
}

bool row_keeps_stage_terms(const KernelSpec& spec, const KernelConfig& c) {
  return row_terms_can_be_kept(spec, c) && !c.recompute_terms;
}

bool row_exchanges_once(const KernelSpec& spec, const KernelConfig& c) {
  // float32 (the pipelined kernel's default forward: softmax and softmin beyond 8,192 columns,
  // log_softmax from 8,193 to 65,536; row_defaults.cpp); the 16-bit forward, whose default is that
  // kernel too, exchanges twice. KPLAY_ROW_XCHG1=all asks for it below float64 (to test and time the
  // 16-bit rows), =0 nowhere.
  const char* v = std::getenv("KPLAY_ROW_XCHG1");
  const std::string which = v ? v : "";
  if (which == "0") return false;
  // float32's tier computes in float as the 16-bit rows do, and exchanges as they do
  const bool dtype_ok = which == "all" ? spec.dtype != Dtype::f64 : spec.dtype == Dtype::f32 && !row_torch_tier(spec);
  return c.row == RowStrategy::cluster && c.grid == GridPolicy::grid_stride && c.cluster > 1 &&
         spec.direction == Direction::forward && dtype_ok;
}

std::uint64_t row_slice_bytes(const KernelSpec& spec, const KernelConfig& c, std::uint64_t cols, std::uint64_t room) {
  if (c.row != RowStrategy::cluster || c.cluster < 1 || c.vec < 1) return 0;
  const std::uint64_t vecs = (cols + c.vec - 1) / c.vec;
  const std::uint64_t slice_vecs = (vecs + c.cluster - 1) / c.cluster;
  const std::uint64_t vec_bytes = static_cast<std::uint64_t>(c.vec) * dtype_size(spec.dtype);
  const std::uint64_t parts = spec.direction == Direction::backward ? 2 : 1;
  if (c.grid == GridPolicy::grid_stride) {
    // The pipelined kernel: two stages, each part of them (backward: g's slice, y's) aligned as
    // row_stages.h's KP_STAGE_ALIGN for the bulk copies.
    const std::uint64_t align = std::max<std::uint64_t>(16, vec_bytes);
    const std::uint64_t part = (slice_vecs * vec_bytes + align - 1) / align * align;
    // The kept terms' bytes (row_stages.h's kp_lo): one an element of the part, 16-byte aligned.
    const std::uint64_t kept = row_keeps_stage_terms(spec, c) ? (part / dtype_size(spec.dtype) + 15) / 16 * 16 : 0;
    return 2 * parts * part + kept <= room ? 2 * parts * part + kept : parts * part + kept;
  }
  return (slice_vecs * vec_bytes * parts + 15) / 16 * 16;
}

std::uint64_t row_shared_room(const KernelSpec& spec, const KernelConfig& c, std::uint64_t max_shared_optin) {
  const std::uint64_t fixed = row_static_shared_bytes(spec, c);
  return max_shared_optin > fixed ? max_shared_optin - fixed : 0;
}

int row_cluster(const KernelConfig& c) {
  return (c.row == RowStrategy::cluster || c.row == RowStrategy::registers || c.row == RowStrategy::online) &&
                 c.cluster > 1
             ? c.cluster
             : 1;
}

int row_group_threads(const KernelConfig& c) {
  return c.row == RowStrategy::cluster || row_cluster(c) > 1 || c.row_threads == 0 ? c.block : c.row_threads;
}

std::uint64_t row_capacity(const KernelConfig& c) {
  if (c.row != RowStrategy::registers && c.row != RowStrategy::shared) return 0;
  return static_cast<std::uint64_t>(row_group_threads(c)) * c.per_thread * c.vec * row_cluster(c);
}

std::uint64_t row_static_shared_bytes(const KernelSpec& spec, const KernelConfig& c) {
  // Both kinds: the exp table (row_math.h's 256 doubles). The cluster kernel (--row cluster across
  // more than one block) reduces through its exchange alone (row_reduce.h): two buffers of a (hi,
  // lo) pair for each warp of each block of the cluster (where a row takes one exchange, its max
  // too, or for a plain sum (hi, max) pairs), and the exchange's and the stages' mbarriers. Every
  // other kernel: the reductions' scratch (OpenCL's trees: two of the block's doubles; CUDA's:
  // three of 64), counted for the largest where the config may run as any (the cluster kernel and
  // clusters run on CUDA alone, contiguous), the cluster's slots and the pipelined kernel's
  // mbarriers. The kernels' PTX declares no more (tests/test_rows.cpp).
  std::uint64_t bytes = 256 * sizeof(double);
  if (c.row == RowStrategy::cluster && c.cluster > 1) {
    const bool once = row_exchanges_once(spec, c);
    const bool compensated = spec.dtype == Dtype::f64 || resolve_activation(spec.activation).act->row_form.log;
    const std::uint64_t values = once ? (compensated ? 3 : 2) : 2;
    bytes +=
        2 * values * static_cast<std::uint64_t>(c.block / 32) * static_cast<std::uint64_t>(c.cluster) * sizeof(double) +
        32;
  } else {
    const bool cuda_only = c.row == RowStrategy::cluster || row_cluster(c) > 1;
    bytes += (cuda_only ? 3ull * 64 : std::max<std::uint64_t>(2ull * c.block, 3ull * 64)) * sizeof(double) +
             6 * sizeof(double) + 16;
  }
  if (c.row == RowStrategy::shared)
    bytes += row_capacity(c) * dtype_size(spec.dtype) * (spec.direction == Direction::backward ? 2 : 1);
  return bytes;
}

}  // namespace kplay
