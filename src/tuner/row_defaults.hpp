// The default config of a row kernel (the softmax family) on a device no tuning covers, from the
// row length and what the device offers: the whole row in registers where it fits 4 vectors per
// thread of up to 1024 threads, as many threads per row as that takes (short rows share a block of
// 256, several rows a warp); else, on CUDA devices with thread-block clusters (sm_90), the row
// split across the smallest cluster whose slices leave room for two blocks per SM (one where none
// does); else the online two-pass kernel, which takes any row on any device. Vectors of 16 bytes
// throughout, and 4 of them in flight per thread where the row is streamed.
#pragma once
#include <cstdint>

#include "kplay/types.hpp"
#include "runtime/target.hpp"

namespace kplay {

KernelConfig default_row_config(const KernelSpec& spec, std::uint64_t cols, const rt::TargetLimits& limits);

}  // namespace kplay
