// Grid sizes for the generic kernel. One-shot: one block per chunk of block * per_thread
// vectors. Grid-stride: `waves` times the blocks that fit on the device at once, each looping.
#pragma once
#include <cstdint>

#include "runtime/backend.hpp"

namespace kplay {

rt::LaunchDims launch_dims(const KernelConfig& config, std::uint64_t rows, std::uint64_t cols,
                           const rt::DeviceInfo& device);

constexpr std::uint64_t kMaxGridX = 2147483647ull;  // CUDA's limit; the kernel loops beyond it
constexpr std::uint64_t kMaxGridY = 65535ull;

}  // namespace kplay
