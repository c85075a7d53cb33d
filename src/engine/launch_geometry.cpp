// Launch geometry; see launch_geometry.hpp.
#include "launch_geometry.hpp"

#include <algorithm>

namespace kplay {

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
    const std::uint64_t per_unit =
        std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::max(device.max_threads_per_unit, c.block)) /
                                       static_cast<std::uint64_t>(c.block));
    const std::uint64_t resident = static_cast<std::uint64_t>(std::max(device.compute_units, 1)) * per_unit;
    const std::uint64_t target = static_cast<std::uint64_t>(c.waves) * resident;
    d.grid_x = std::min({chunks, std::max<std::uint64_t>(1, target / d.grid_y), kMaxGridX});
  }
  return d;
}

}  // namespace kplay
