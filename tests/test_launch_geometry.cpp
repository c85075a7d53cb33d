// Grid sizes: one block per chunk for one-shot, a bounded resident grid for grid-stride.
#include <doctest/doctest.h>

#include "engine/launch_geometry.hpp"

using namespace kplay;

namespace {
rt::DeviceInfo h100() {
  rt::DeviceInfo d;
  d.compute_units = 132;
  d.max_threads_per_unit = 2048;
  d.max_block = 1024;
  return d;
}
KernelConfig cfg(int vec, int block, int per_thread) {
  KernelConfig c;
  c.vec = vec;
  c.block = block;
  c.per_thread = per_thread;
  return c;
}
}  // namespace

TEST_CASE("one-shot: a block per block*per_thread vectors, rounded up") {
  const auto d = launch_dims(cfg(4, 256, 1), 1, 1610612736ull, h100());
  CHECK(d.block == 256);
  CHECK(d.grid_x == 1610612736ull / 1024);
  CHECK(d.grid_y == 1);
  CHECK(launch_dims(cfg(4, 256, 1), 1, 1025, h100()).grid_x == 2);
  CHECK(launch_dims(cfg(4, 256, 2), 1, 1, h100()).grid_x == 1);
}

TEST_CASE("grid-stride: waves times resident blocks, never more than the work") {
  KernelConfig c = cfg(4, 256, 1);
  c.grid = GridPolicy::grid_stride;
  c.waves = 4;
  CHECK(launch_dims(c, 1, 1ull << 32, h100()).grid_x == 4ull * 132 * 8);
  CHECK(launch_dims(c, 1, 4096, h100()).grid_x == 4);
}

TEST_CASE("huge sizes stay within the grid limits; the kernel loops over the rest") {
  const auto d = launch_dims(cfg(1, 32, 1), 1, 1ull << 40, h100());
  CHECK(d.grid_x == kMaxGridX);
  const auto r = launch_dims(cfg(4, 256, 1), 100000, 8, h100());
  CHECK(r.grid_y == kMaxGridY);
}
