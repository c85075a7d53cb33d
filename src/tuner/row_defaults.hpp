// The default config of a row kernel (the softmax family) on a device no tuning covers, from the
// row length: the whole row in registers where it fits 4 vectors per thread of up to 1024 threads,
// with one vector per thread where a block of threads holds the row (short rows share a block of
// 256, several rows a warp); else the online two-pass kernel of 1024 threads, 4 vectors in flight
// each, which takes any row on any device. Vectors of 16 bytes throughout. Measured on an H200
// (`kplay bench --act softmax --shape ... --row ...`, docs/benchmarks.md): 65536x128 float32 takes
// 72 % of a copy with 32 threads a row and one vector each against 53 % with 8 threads of 4;
// 4096x393216 online takes 58 % (bfloat16 64 %) against the cluster kernel's best 45 % (55 %),
// though it reads each row twice. Clusters and shared memory stay in the tuner's space.
#pragma once
#include <cstdint>

#include "kplay/types.hpp"
#include "runtime/target.hpp"

namespace kplay {

KernelConfig default_row_config(const KernelSpec& spec, std::uint64_t cols, const rt::TargetLimits& limits);

}  // namespace kplay
