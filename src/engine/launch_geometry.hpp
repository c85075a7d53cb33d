// Grid sizes for the generic kernel. One-shot: one block per chunk of block * per_thread
// vectors. Grid-stride: `waves` times the blocks that fit on the device at once, each looping.
#pragma once
#include <cstdint>

#include "runtime/backend.hpp"

namespace kplay {

rt::LaunchDims launch_dims(const KernelConfig& config, std::uint64_t rows, std::uint64_t cols,
                           const rt::DeviceInfo& device);

// A row kernel's launch (templates/common/rowwise.h): one block per row, or one cluster of
// config.cluster blocks, each with its slice's dynamic shared memory; rows beyond the grid loop.
// Throws Error(invalid_config) where the strategy cannot hold a row of `cols` (registers and
// shared: longer than block x per-thread x vec; cluster: a slice larger than the shared memory a
// block may have), naming what would.
rt::LaunchDims row_launch_dims(const KernelSpec& spec, const KernelConfig& config, std::uint64_t rows,
                               std::uint64_t cols, const rt::TargetLimits& limits);

constexpr std::uint64_t kMaxGridX = 2147483647ull;  // CUDA's limit; the kernel loops beyond it
constexpr std::uint64_t kMaxGridY = 65535ull;

}  // namespace kplay
