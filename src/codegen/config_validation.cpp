// Config checks; each message names the flag the user typed.
#include "config_validation.hpp"

#include <algorithm>

#include "kplay/error.hpp"
#include "row_codegen.hpp"
#include "spec/activations.hpp"

namespace kplay {
namespace {
bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

[[noreturn]] void refuse(const std::string& msg) { throw Error(ErrorCode::invalid_config, msg); }

// The row kernel's knobs (templates/common/rowwise.h): the strategy (online where none is given:
// it takes any row), the cluster size, and what the element-wise kernel's knobs mean there.
KernelConfig resolve_row_config(const KernelSpec& spec, KernelConfig c, const TargetLimits& limits) {
  if (c.row == RowStrategy::none) c.row = RowStrategy::online;
  if (c.fast_math) refuse("--fast-math: the row kernels have one path, in double (docs/accuracy.md)");
  if (c.grid != GridPolicy::one_shot && c.row != RowStrategy::registers && c.row != RowStrategy::cluster)
    refuse(std::string("--grid grid-stride is for --row registers and --row cluster (persistent blocks that load "
                       "their next rows while they reduce these); --row ") +
           to_string(c.row) + " takes one block per row");
  if (c.late_gradient) refuse("--late-gradient is for the element-wise kernels");
  if (c.recompute_terms && !row_terms_can_be_kept(spec, c))
    refuse(
        "--recompute-terms: only the pipelined cluster kernel's float32 softmax and softmin forward keep their "
        "terms (--row cluster --grid grid-stride); drop it for " +
        to_string(spec));
  c.flat = true;  // one kernel: rows with pitches
  if (c.row == RowStrategy::cluster) {
    if (limits.max_cluster < 2)
      throw Error(ErrorCode::unsupported, "--row cluster needs thread-block clusters (CUDA, sm_90 and newer); the " +
                                              limits.backend + " device has none: use --row online");
    if (c.cluster == 0) c.cluster = 8;
    if (!is_pow2(c.cluster) || c.cluster > limits.max_cluster)
      refuse("--cluster " + std::to_string(c.cluster) + ": blocks per cluster must be a power of two in 1.." +
             std::to_string(limits.max_cluster) + " on this device");
  } else if ((c.row == RowStrategy::registers || c.row == RowStrategy::online) && c.cluster > 1) {
    // Registers or online across a cluster: each block of the cluster takes a slice of the row.
    if (limits.max_cluster < 2)
      throw Error(ErrorCode::unsupported,
                  "--row " + std::string(to_string(c.row)) + " --cluster " + std::to_string(c.cluster) +
                      " needs thread-block clusters (CUDA, sm_90 and newer); the " + limits.backend +
                      " device has none: " +
                      (c.row == RowStrategy::online ? "--cluster 1 (a block a row)" : "--cluster 1, or --row online"));
    if (!is_pow2(c.cluster) || c.cluster > limits.max_cluster)
      refuse("--cluster " + std::to_string(c.cluster) + ": blocks per cluster must be a power of two in 1.." +
             std::to_string(limits.max_cluster) + " on this device");
    if (c.grid != GridPolicy::one_shot)
      refuse("--row registers --cluster " + std::to_string(c.cluster) +
             " --grid grid-stride: a cluster's registers hold one row, none to load the next into; one-shot");
  } else if ((c.row == RowStrategy::registers || c.row == RowStrategy::online) && c.cluster == 1) {
    c.cluster = 0;  // one name for one kernel
  } else if (c.cluster != 0) {
    refuse("--cluster " + std::to_string(c.cluster) + " is for --row cluster, registers and online, not --row " +
           to_string(c.row));
  }
  if (c.row_threads != 0) {
    if (c.cluster > 1 || c.row == RowStrategy::cluster)
      refuse("--row-threads " + std::to_string(c.row_threads) +
             ": a cluster's blocks each hold a slice with all their "
             "threads; --row-threads is for registers, shared and online without --cluster");
    if (!is_pow2(c.row_threads) || c.row_threads > c.block)
      refuse("--row-threads " + std::to_string(c.row_threads) +
             ": threads per row must be a power of two up to --block " + std::to_string(c.block));
    if (c.row_threads == c.block) c.row_threads = 0;  // one name for one kernel
  }
  constexpr std::uint64_t kStaticShared = 48ull * 1024;
  if (row_static_shared_bytes(spec, c) > kStaticShared)
    refuse("--row " + std::string(to_string(c.row)) + " with --block " + std::to_string(c.block) + " --per-thread " +
           std::to_string(c.per_thread) + ": " + std::to_string(row_static_shared_bytes(spec, c)) +
           " bytes of shared memory, more than the 48 KiB every device offers a block; fewer vectors per thread");
  return c;
}
}  // namespace

KernelConfig default_config(const KernelSpec& spec) {
  KernelConfig c;
  c.per_thread = dtype_size(spec.dtype) == 2 ? 4 : 1;
  if (spec.dtype == Dtype::f32) c.block = 128;
  return c;
}

std::string spec_unsupported(const KernelSpec& spec, const TargetLimits& limits) {
  const ResolvedActivation act = resolve_activation(spec.activation);
  if (spec.direction == Direction::backward && !act.has_backward())
    return "activation '" + act.canonical +
           "' has no backward pass (a user snippet defines kp_act_backward_from_input for it)";
  if (act.gated && spec.direction == Direction::backward && spec.saved == Saved::output)
    return "'" + act.canonical + "' takes its inputs a and b for backward (--saved input), not an output";
  if (spec.direction == Direction::backward && spec.saved == Saved::output && !act.has_grad_from_output())
    return "activation '" + act.canonical + "' cannot recover its derivative from the saved output; save the input";
  if (spec.out != OutDtype::same) {
    if (!act.gated || spec.direction != Direction::forward)
      return std::string("output dtype ") + to_string(spec.out) +
             " is for the forward of a gated activation (e.g. gated(silu)), not " + to_string(spec);
    if (!limits.fp8) return limits.fp8_why;
  }
  if (std::find(limits.dtypes.begin(), limits.dtypes.end(), spec.dtype) == limits.dtypes.end())
    return std::string("the ") + limits.backend + " device cannot do dtype " + to_string(spec.dtype);
  if (act.is_row()) {
    if (spec.direction == Direction::backward && spec.saved != Saved::output)
      return "'" + act.canonical + "' computes its backward from the saved output, as torch does (--saved output)";
    if (std::find(limits.dtypes.begin(), limits.dtypes.end(), Dtype::f64) == limits.dtypes.end())
      return "a row kernel keeps its max and sums in double, and this " + limits.backend +
             " device has no float64 (cl_khr_fp64)";
  }
  return {};
}

KernelConfig resolve_config(const KernelSpec& spec, const KernelConfig& config, const TargetLimits& limits) {
  const std::string unsupported = spec_unsupported(spec, limits);
  if (!unsupported.empty()) throw Error(ErrorCode::unsupported, unsupported);

  KernelConfig c = config;
  // accuracy=torch changes float32 math only: 16-bit kernels compute in float already (within 1
  // ulp of their dtype), float64 and the gated kernels have one accuracy.
  if (resolve_activation(spec.activation).torch_tier()) {
    if (spec.dtype != Dtype::f32)
      throw Error(ErrorCode::invalid_argument, std::string("accuracy=torch is a float32 tier; ") +
                                                   to_string(spec.dtype) +
                                                   " kernels have one accuracy (drop accuracy=torch)");
    if (c.fast_math)
      refuse("--fast-math with accuracy=torch: fast-math is held to no bound, the tier to its own; pick one");
  }
  const int esize = static_cast<int>(dtype_size(spec.dtype));
  const int widest = kMaxVectorBytes / esize;
  if (c.vec == 0) c.vec = widest;
  if (!is_pow2(c.vec) || c.vec > widest)
    refuse("--vec " + std::to_string(c.vec) + ": a vector of " + std::to_string(c.vec) + " x " + to_string(spec.dtype) +
           (c.vec > widest ? " is wider than 16 bytes" : " is not a power of two") + "; use a power of two from 1 to " +
           std::to_string(widest));
  if (!is_pow2(c.block) || c.block < 32 || c.block > 1024)
    refuse("--block " + std::to_string(c.block) + ": block size must be a power of two in 32..1024");
  if (c.block > limits.max_block)
    refuse("--block " + std::to_string(c.block) + ": the " + limits.backend + " device allows at most " +
           std::to_string(limits.max_block) + " threads per block");
  if (c.per_thread < 1 || c.per_thread > kMaxPerThread)
    refuse("--per-thread " + std::to_string(c.per_thread) + ": vectors per thread must be in 1.." +
           std::to_string(kMaxPerThread));
  if (c.grid == GridPolicy::grid_stride && (c.waves < 1 || c.waves > 1024))
    refuse("--grid grid-stride:" + std::to_string(c.waves) + ": waves must be in 1..1024");
  if (c.grid == GridPolicy::one_shot) c.waves = 0;  // meaningless there; keep configs comparable
  if (c.cache == CacheHint::streaming && !limits.cache_hints)
    refuse("--cache streaming: the " + limits.backend + " backend has no cache hints; use --cache default");
  // A float32 gated kernel computes in double (gated_wide_math): a device without float64 cannot.
  if (gated_wide_math(spec.dtype, c.fast_math) && resolve_activation(spec.activation).gated &&
      std::find(limits.dtypes.begin(), limits.dtypes.end(), Dtype::f64) == limits.dtypes.end())
    throw Error(ErrorCode::unsupported,
                "a float32 gated kernel computes in double, and this " + limits.backend +
                    " device has no float64 (cl_khr_fp64): use --fast-math (float math, held to no bound) or a "
                    "16-bit dtype");
  if (c.late_gradient && spec.direction != Direction::backward)
    refuse("--late-gradient: only a backward kernel reads a gradient; drop it for " + to_string(spec));
  if (resolve_activation(spec.activation).is_row()) return resolve_row_config(spec, c, limits);
  if (c.row != RowStrategy::none || c.cluster != 0 || c.row_threads != 0 || c.recompute_terms)
    refuse("--row, --cluster, --row-threads and --recompute-terms are for the row activations (" +
           row_activation_names() + "), not " + to_string(spec));
  return c;
}

}  // namespace kplay
