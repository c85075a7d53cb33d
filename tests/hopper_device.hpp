// An sm_90 device (H100, H200) as the CUDA backend reports it, for tests of the default model and
// the tuner's space: 132 SMs of 2048 threads and 32 blocks each at 1.98 GHz, fast FP64; only the
// bandwidth differs.
#pragma once
#include "runtime/backend.hpp"

namespace kplay::test {

inline rt::DeviceInfo hopper_device(double gbps) {
  rt::DeviceInfo d;
  d.backend = "cuda";
  d.memory_bandwidth_gbps = gbps;
  d.compute_units = 132;
  d.max_threads_per_unit = 2048;
  d.max_blocks_per_unit = 32;
  d.max_block = 1024;
  d.clock_ghz = 1.98;
  d.fast_fp64 = true;
  d.name = "NVIDIA H100-like test device";
  d.arch = "sm_90";
  return d;
}

}  // namespace kplay::test
