// Launch geometry; see launch_geometry.hpp.
#include "launch_geometry.hpp"

#include <algorithm>
#include <string>

#include "codegen/row_codegen.hpp"
#include "kplay/error.hpp"

namespace kplay {
namespace {
// Blocks of `block` threads resident at once on the whole device (at least one per unit).
std::uint64_t resident_blocks(int block, int compute_units, int max_threads_per_unit) {
  const std::uint64_t per_unit =
      std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::max(max_threads_per_unit, block)) / block);
  return static_cast<std::uint64_t>(std::max(compute_units, 1)) * per_unit;
}
}  // namespace

rt::LaunchDims launch_dims(const KernelConfig& c, std::uint64_t rows, std::uint64_t cols,
                           const rt::DeviceInfo& device) {
  rt::LaunchDims d;
  d.block = static_cast<unsigned>(c.block);
  const std::uint64_t per_block = static_cast<std::uint64_t>(c.block) * c.per_thread * c.vec;
  const std::uint64_t chunks = std::max<std::uint64_t>(1, (cols + per_block - 1) / per_block);
  d.grid_y = std::max<std::uint64_t>(1, std::min(rows, kMaxGridY));
  if (c.grid == GridPolicy::one_shot) {
    d.grid_x = std::min(chunks, kMaxGridX);
  } else {
    const std::uint64_t target = static_cast<std::uint64_t>(c.waves) *
                                 resident_blocks(c.block, device.compute_units, device.max_threads_per_unit);
    d.grid_x = std::min({chunks, std::max<std::uint64_t>(1, target / d.grid_y), kMaxGridX});
  }
  return d;
}

rt::LaunchDims row_launch_dims(const KernelSpec& spec, const KernelConfig& c, std::uint64_t rows, std::uint64_t cols,
                               const rt::TargetLimits& limits) {
  rt::LaunchDims d;
  d.block = static_cast<unsigned>(c.block);
  // row_vectors.h indexes within a row in 32 bits.
  if (cols >= (1ull << 31))
    throw Error(ErrorCode::invalid_argument, "a row of " + std::to_string(cols) +
                                                 " elements: the row kernels take rows of fewer than 2^31 elements");
  const std::uint64_t capacity = row_capacity(c);
  if (capacity && cols > capacity)
    throw Error(ErrorCode::invalid_config, "a row of " + std::to_string(cols) + " elements is longer than --row " +
                                               to_string(c.row) + " holds with --block " + std::to_string(c.block) +
                                               " --per-thread " + std::to_string(c.per_thread) + " --vec " +
                                               std::to_string(c.vec) + " (" + std::to_string(capacity) +
                                               "): more vectors per thread, a larger block, or --row online (any row)");
  const std::uint64_t per_row = static_cast<std::uint64_t>(row_cluster(c));
  if (per_row > 1) d.cluster = static_cast<unsigned>(per_row);
  if (c.row == RowStrategy::cluster) {
    const std::uint64_t slice = row_slice_bytes(spec, c, cols, row_shared_room(spec, c, limits.max_shared_optin));
    const std::uint64_t need = slice + row_static_shared_bytes(spec, c);
    if (need > limits.max_shared_optin)
      throw Error(ErrorCode::invalid_config,
                  "--row cluster --cluster " + std::to_string(c.cluster) + ": a row of " + std::to_string(cols) +
                      " elements puts " + std::to_string(need / 1024) +
                      " KiB of shared memory on each block, more "
                      "than the " +
                      std::to_string(limits.max_shared_optin / 1024) +
                      " KiB the device allows: a larger --cluster, or --row online" +
                      std::string(c.grid != GridPolicy::grid_stride ? ""
                                  : row_keeps_stage_terms(spec, c)
                                      ? " (--grid grid-stride holds a stage of the slice, two where they fit, and a "
                                        "float32 softmax or softmin forward a byte an element more for its kept terms)"
                                      : " (--grid grid-stride holds a stage of the slice, two where they fit)"));
    d.shared_bytes = static_cast<unsigned>(slice);
    d.cluster = static_cast<unsigned>(c.cluster);
  }
  // A block holds block / row threads rows at once.
  const std::uint64_t per_block = static_cast<std::uint64_t>(c.block) / row_group_threads(c);
  const std::uint64_t row_blocks = (rows + per_block - 1) / per_block;
  std::uint64_t blocks = std::min(row_blocks, kMaxGridX / per_row);
  if (c.grid == GridPolicy::grid_stride) {
    // Persistent: waves x the blocks (clusters) resident at once. Residency also depends on the
    // kernel's registers, its shared memory and, for clusters, on how the device packs them into
    // its GPCs, which only the compiled kernel and the driver know: the estimate here (threads, and
    // shared memory for clusters) is an upper bound that the backend lowers to the blocks or
    // clusters the driver says fit (LaunchDims::resident_waves): by threads alone, float32 softmax
    // 32768x1024 (blocks of 128 at 56 registers, 9 resident an SM, not 16) had 1.78 waves, whose
    // later blocks start their rows only when earlier ones finish.
    std::uint64_t resident = resident_blocks(c.block, limits.compute_units, limits.max_threads_per_unit);
    if (c.row == RowStrategy::cluster) {
      const std::uint64_t need = d.shared_bytes + row_static_shared_bytes(spec, c);
      const std::uint64_t by_memory =
          static_cast<std::uint64_t>(std::max(limits.compute_units, 1)) *
          std::max<std::uint64_t>(1, (limits.max_shared_optin + 1024) / std::max<std::uint64_t>(need, 1));
      resident = std::max<std::uint64_t>(1, std::min(resident, by_memory) / per_row);
    }
    d.resident_waves = static_cast<unsigned>(c.waves);
    blocks = std::min(blocks, static_cast<std::uint64_t>(c.waves) * resident);
  }
  d.grid_x = std::max<std::uint64_t>(1, blocks) * per_row;
  return d;
}

}  // namespace kplay
