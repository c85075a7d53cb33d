// The default config of a row kernel (the softmax family) on a device no tuning covers, from the
// row length and direction: the whole row in registers where it fits 4 vectors per thread of up
// to 1024 threads (forward: one vector a thread, two for 16-bit rows of 64 vectors or more;
// backward: four), short rows sharing a block of 256; else the online two-pass kernel of 1024
// threads, 4 vectors in flight each, which takes any row on any device. Vectors of 16 bytes.
// Measured on an H200 (`kplay bench --act softmax --shape ... --row ...`, docs/benchmarks.md,
// "Softmax"): forward float32 65536x128 72 % of a copy with 32 threads a row and one vector each
// against 53 % with 8 threads of 4, 32768x1024 57 % against 50 %; bfloat16 16384x4096 62 % with two
// vectors a thread against 51 % with one, 32768x1024 62 % against 57 %, 65536x128 71 % with one
// against 65 %; backward 16384x4096 80 % (bfloat16 82 %) with four against 60 % (73 %) with one.
// 4096x393216 online takes 58 % (bfloat16 64 %) against the one-shot cluster kernel's best 45 %
// (55 %) and the pipelined one's 39 % (50 %), though it reads each row twice. Clusters, pipelined
// or not, and shared memory stay in the tuner's space.
#pragma once
#include <cstdint>

#include "kplay/types.hpp"
#include "runtime/target.hpp"

namespace kplay {

KernelConfig default_row_config(const KernelSpec& spec, std::uint64_t cols, const rt::TargetLimits& limits);

}  // namespace kplay
