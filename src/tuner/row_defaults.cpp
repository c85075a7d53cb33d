// The row kernel's default config; see row_defaults.hpp.
#include "row_defaults.hpp"

#include <algorithm>

#include "codegen/row_codegen.hpp"

namespace kplay {

KernelConfig default_row_config(const KernelSpec& spec, std::uint64_t cols, const rt::TargetLimits& limits) {
  KernelConfig c;
  c.vec = static_cast<int>(16 / dtype_size(spec.dtype));
  const int max_block = std::min(1024, limits.max_block > 0 ? limits.max_block : 1024);
  const std::uint64_t vecs = (cols + c.vec - 1) / c.vec;
  constexpr int kRegisterVectors = 4;  // 16 float32 values a thread, and twice that backward
  if (vecs <= static_cast<std::uint64_t>(max_block) * kRegisterVectors) {
    int threads = 1;
    while (threads < max_block && static_cast<std::uint64_t>(threads) * kRegisterVectors < vecs) threads *= 2;
    c.block = std::max(threads, std::min(256, max_block));
    c.row_threads = threads == c.block ? 0 : threads;
    c.per_thread = static_cast<int>(std::max<std::uint64_t>(1, (vecs + threads - 1) / threads));
    c.row = RowStrategy::registers;
    return c;
  }
  c.block = std::min(512, max_block);
  c.per_thread = 4;
  if (limits.max_cluster >= 2) {
    KernelConfig k = c;
    k.row = RowStrategy::cluster;
    for (std::uint64_t room : {limits.max_shared_optin / 2, limits.max_shared_optin})
      for (int size = 2; size <= limits.max_cluster; size *= 2) {
        k.cluster = size;
        if (row_slice_bytes(spec, k, cols) + row_static_shared_bytes(spec, k) <= room) return k;
      }
  }
  c.row = RowStrategy::online;
  return c;
}

}  // namespace kplay
