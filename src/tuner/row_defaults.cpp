// The row kernel's default config; see row_defaults.hpp.
#include "row_defaults.hpp"

#include <algorithm>
#include <optional>

#include "codegen/row_codegen.hpp"
#include "spec/activations.hpp"

namespace kplay {

// Strided rows: up to 16 columns in registers (a power of two of them: one kernel serves several
// channel counts), longer rows online, 4 in flight a thread; a thread a row, so that a warp's lanes
// are 32 neighbouring rows (each load one contiguous run) and no reduction crosses threads, except
// beyond 128 columns, where a group of 4 neighbouring lanes takes a row (8 rows a warp, each load of
// a column a 32-byte run): on the H200, online, 64x256x56x56 --dim 1 float32 forward 39.0 % of copy
// against 31.4 a thread a row (groups of 2: 38.4, 8: 38.2), backward 48.7 against 45.2; at 64
// columns (8x64x128x128) and 21 (32x21x512x512) groups gained nothing (docs/design.md, "Strided rows").
KernelConfig strided_row_config(const KernelSpec& spec, std::uint64_t cols) {
  (void)spec;
  KernelConfig c;
  c.vec = 1;
  c.block = 256;
  constexpr std::uint64_t kHeld = 16;        // kMaxPerThread vectors of one element
  constexpr std::uint64_t kGroupFrom = 129;  // rows this long are spread over groups of 4 lanes
  c.row_threads = cols >= kGroupFrom ? 4 : 1;
  c.row = cols <= kHeld ? RowStrategy::registers : RowStrategy::online;
  c.per_thread = 4;
  if (cols <= kHeld)
    while (static_cast<std::uint64_t>(c.per_thread) < cols) c.per_thread *= 2;
  return c;
}

// The smallest power-of-two cluster, from `from` blocks up to the device's largest, whose blocks
// take slices of at most `slice` elements of a row of `cols` (the largest where none does).
static int slice_cluster(std::uint64_t cols, std::uint64_t slice, int from, const rt::TargetLimits& limits) {
  int cluster = from;
  while (cluster < limits.max_cluster && static_cast<std::uint64_t>(cluster) * slice < cols) cluster *= 2;
  return cluster;
}

// Backward rows that a block's registers hold (four vectors of g and y a thread) but that run
// faster from a cluster's shared memory on sm_90, measured on the H200 (`kplay bench --no-db
// --direction backward`, % of copy): bfloat16 8192x32768 in the one-shot cluster kernel, clusters
// of 4, 76.0 against 67.1 (clusters of 2: 72.6; the pipelined kernel in clusters of 2: 71.1, of 4:
// 64.4); float32 rows of 8192 and 16384, which registers hold in blocks of 512 and 1024, in the
// pipelined kernel, clusters of 2 (not measured against a persistent registers grid). float32 rows
// of up to 4096 stay in registers on a persistent grid (an H100: softmax 16384x4096 96.0 against
// the pipelined kernel's 92.8, 32768x1024 94.9 against a block a row's 86.4; log_softmax 95.7
// against 61.0 and 90.8 against 51.2). 16-bit log_softmax, whose first pass reads g alone, keeps
// such rows in a block's registers (bfloat16 8192x32768 on an H100: 80.1 against 68.3 in clusters of
// 4; softmax's 83.9 against 98.6).
static bool backward_in_clusters(const KernelSpec& spec, std::uint64_t cols, bool clusters) {
  if (!clusters || spec.direction != Direction::backward) return false;
  if (spec.dtype == Dtype::f32) return cols > 4096 && cols <= 16384;
  return dtype_size(spec.dtype) == 2 && cols > 16384 && cols <= 32768 &&
         !resolve_activation(spec.activation).act->row_form.log;
}

// Those rows' cluster config: float32 in the pipelined kernel, clusters of 2, blocks of 128, two
// vectors a thread; 16-bit one-shot (a cluster a row), slices of 8192 in blocks of 256, four. None
// where its shared memory does not fit the device (the rows then stay in registers).
static std::optional<KernelConfig> clustered_backward(const KernelSpec& spec, std::uint64_t cols,
                                                      const rt::TargetLimits& limits, int max_block, KernelConfig p) {
  p.row = RowStrategy::cluster;
  if (spec.dtype == Dtype::f32) {
    p.cluster = 2;
    p.block = std::min(128, max_block);
    p.per_thread = 2;
    p.grid = GridPolicy::grid_stride;
    p.waves = 1;
  } else {
    p.cluster = slice_cluster(cols, 8192, 2, limits);
    p.block = std::min(256, max_block);
    p.per_thread = 4;
  }
  if (row_slice_bytes(spec, p, cols) + row_static_shared_bytes(spec, p) > limits.max_shared_optin) return std::nullopt;
  return p;
}

KernelConfig default_row_config(const KernelSpec& spec, std::uint64_t cols, const rt::TargetLimits& limits) {
  KernelConfig c;
  c.vec = static_cast<int>(16 / dtype_size(spec.dtype));
  const int max_block = std::min(1024, limits.max_block > 0 ? limits.max_block : 1024);
  const std::uint64_t vecs = (cols + c.vec - 1) / c.vec;
  constexpr int kRegisterVectors = 4;  // 16 float32 values a thread, and twice that backward
  // A forward on CUDA holds rows in registers only on the persistent grid (two vectors a thread);
  // longer ones go online, where blocks of 128 beat the one-shot registers kernel of 1024.
  const bool cuda_forward = spec.direction == Direction::forward && limits.backend == "cuda";
  const std::uint64_t held =
      static_cast<std::uint64_t>(max_block) * (cuda_forward && spec.dtype != Dtype::f64 ? 2 : kRegisterVectors);
  const bool clusters = limits.backend == "cuda" && limits.max_cluster >= 2;
  if (vecs <= held) {
    if (backward_in_clusters(spec, cols, clusters))
      if (const std::optional<KernelConfig> p = clustered_backward(spec, cols, limits, max_block, c)) return *p;
    // Vectors a thread aimed at (docs/design.md, "Row defaults, measured", says what each was measured against): a
    // forward below float64 on CUDA whose row fits two a thread, two on a persistent grid (one wave of blocks of at
    // least 128, each loading its next row before it reduces this one); other forwards one, 16-bit rows of 64 vectors
    // or more two; the backward, which has one reduction and no exp to spread over threads, four, but on CUDA one in
    // rows a warp holds so (reduced by shuffles alone; four vectors' double arithmetic took 94 registers, a quarter of
    // the SM's warps: float32 65536x128 on the H200 100.2 % of copy against 72.0, bfloat16 80.3 against 76.6), and
    // longer ones on a persistent grid too (32768x1024 on an H100: bfloat16 93.3 against one-shot's 90.2).
    //
    // log_softmax on CUDA differs from softmax (docs/design.md, "Row defaults, measured"). Its forward below float64
    // keeps no terms (a result is x - max - log sum), so a thread holds 32 elements in registers (eight float32
    // vectors, four 16-bit ones), in rows of at least 8 threads (or two vectors a thread, where fewer would hold more):
    // the row's work -- two reductions, one of a compensated sum, and the log -- spread over more elements. On the
    // H200, float32 32768x1024 82.6 % of copy against 58.9 at two vectors, 16384x4096 75.6 against 54.8, 65536x128 (8
    // threads of 4 vectors) 79.6 against 72.2 (16 of 2; 32 of 1: 56.8); bfloat16 16384x4096 73.2 against 58.8. Its
    // float32 backward in rows a warp holds takes two vectors a thread on the persistent grid: the compensated sum of g
    // merges in fewer levels (65536x128 on an H100: 90.2 against 82.3; softmax's plain sum is as fast either way, 99.0
    // against 100.3; bfloat16 log_softmax's slower, 83.0 against 85.5). 16-bit log_softmax's backward in longer rows
    // takes two vectors a thread too (an H100: bfloat16 32768x1024 85.4 against 74.7 at four, 16384x4096 83.5 against
    // 78.5; softmax's lost at 16384x4096, 93.2 against 95.8); a row across the whole block runs one-shot, its block
    // alone on the SM (bfloat16 8192x32768: 80.1 against 47.4 on the persistent grid).
    const bool narrow = dtype_size(spec.dtype) == 2;
    constexpr std::uint64_t kWarpVectors = 32;
    const bool warp_rows = limits.backend == "cuda" && vecs <= kWarpVectors;
    const bool log_rows =
        limits.backend == "cuda" && spec.dtype != Dtype::f64 && resolve_activation(spec.activation).act->row_form.log;
    const bool log_forward = log_rows && spec.direction == Direction::forward;
    const bool log_f32_backward = log_rows && spec.direction == Direction::backward && spec.dtype == Dtype::f32;
    const bool cuda_backward_rows =
        limits.backend == "cuda" && spec.direction == Direction::backward && (!warp_rows || log_f32_backward);
    const bool persistent = (cuda_forward || cuda_backward_rows) && spec.dtype != Dtype::f64;
    constexpr std::uint64_t kLogForwardElements = 32;
    constexpr int kLogForwardThreads = 8;
    // The float32 torch tier (accuracy=torch) computes in float: softmax's and softmin's forward keeps
    // float terms where the exact kernel keeps doubles, so that a thread holds four vectors in the
    // registers two took (eight from rows of 1024 vectors), and log_softmax's backward takes 16-bit's
    // two vectors a thread. An H100 (`kplay bench --no-db --compare`, three rounds, % of copy):
    // softmax's 65536x128 98.8 against 97.4 at two, 32768x1024 97.0 against 95.3, 16384x4096 95.8
    // against 95.6 (four: 95.0); log_softmax's backward 32768x1024 95.7 against 92.4 at four,
    // 16384x4096 96.7 against 94.0 (65536x128, rows a warp holds, already two: 98.3 against 97.1 at
    // four); its forward keeps the exact kernel's 32 elements (97.0 against 95.0 at 16).
    const bool tier = limits.backend == "cuda" && row_torch_tier(spec);
    const bool log_float_backward = log_rows && spec.direction == Direction::backward && (narrow || tier);
    const bool tier_forward = tier && spec.direction == Direction::forward && !log_forward;
    constexpr std::uint64_t kTierWideVectors = 1024;
    const std::uint64_t backward_aim = !warp_rows         ? (log_float_backward ? 2 : kRegisterVectors)
                                       : log_f32_backward ? 2
                                                          : 1;
    const std::uint64_t aim = spec.direction == Direction::backward  ? backward_aim
                              : log_forward                          ? kLogForwardElements / c.vec
                              : tier_forward                         ? (vecs >= kTierWideVectors ? 8 : 4)
                              : persistent || (narrow && vecs >= 64) ? 2
                                                                     : 1;
    int threads = 1;
    while (threads < max_block && static_cast<std::uint64_t>(threads) * aim < vecs) threads *= 2;
    if (log_forward)
      while (threads < kLogForwardThreads && static_cast<std::uint64_t>(threads) * 2 < vecs) threads *= 2;
    c.block = std::max(threads, std::min(persistent && cuda_forward ? 128 : 256, max_block));
    c.row_threads = threads == c.block ? 0 : threads;
    c.per_thread = static_cast<int>(std::max<std::uint64_t>(1, (vecs + threads - 1) / threads));
    c.row = RowStrategy::registers;
    if (persistent && !(spec.direction == Direction::backward && threads == max_block)) {
      c.grid = GridPolicy::grid_stride;
      c.waves = 1;
    }
    return c;
  }
  c.row = RowStrategy::online;
  c.block = max_block;
  c.per_thread = 4;
  // Forward on CUDA: rows of up to 128 vectors a thread in blocks of 128 (more rows in flight, each
  // pass's reductions across fewer warps), longer ones across the largest block.
  constexpr std::uint64_t kSmallBlockVectors = 16384;  // 128 vectors a thread of 128
  if (cuda_forward && vecs <= kSmallBlockVectors) c.block = std::min(128, max_block);
  // A 16-bit forward where clusters exist: the pipelined cluster kernel (one read an element: the
  // bulk copy engine loads the next row's slices while the cluster reduces this one's), with
  // slices of about 16384 elements, four vectors a thread at a time in blocks of 128 (256 for
  // longer slices), in clusters of 2 to 16 whose two stages of the slice fit in shared memory.
  // float32 log_softmax's forward (no term kept: its results are x - max - log sum) the same up to
  // 65536 columns, in slices of 8192 and blocks of 128: on the H200, 8192x32768 at 79.9 % of copy
  // in clusters of 4 against 65.1 in clusters of 2 of 256 (of 2 of 128: 46.6); longer rows stay
  // online (4096x393216 in clusters of 16: 65.1 against 64.0, a tie).
  constexpr std::uint64_t kLogF32ClusterCols = 65536;
  const bool log_f32_forward = cuda_forward && spec.dtype == Dtype::f32 &&
                               resolve_activation(spec.activation).act->row_form.log && cols <= kLogF32ClusterCols;
  if (cuda_forward && (dtype_size(spec.dtype) == 2 || log_f32_forward) && limits.max_cluster >= 2) {
    const std::uint64_t slice_target = log_f32_forward ? 8192 : 16384;
    const int cluster = slice_cluster(cols, slice_target, 2, limits);
    KernelConfig p = c;
    p.row = RowStrategy::cluster;
    p.cluster = cluster;
    p.block = std::min((cols + cluster - 1) / cluster > slice_target ? 256 : 128, max_block);
    p.per_thread = 4;
    p.grid = GridPolicy::grid_stride;
    p.waves = 1;
    if (row_slice_bytes(spec, p, cols) + row_static_shared_bytes(spec, p) <= limits.max_shared_optin) return p;
  }
  // A float32 softmax or softmin forward too long for registers where clusters exist: the pipelined
  // cluster kernel, keeping its terms, where two stages and the terms' bytes fit in shared memory
  // (up to 402240 columns on the H200), each range's config the one measured fastest at one shape
  // (docs/design.md, "Row defaults, measured": 8192x16384, 8192x32768, 4096x131072, 4096x393216).
  // Blocks of 128 in clusters of 2 and 4 (86.5 % of copy against 62.3 online at 8192x16384; 81.6
  // against 75.7 in blocks of 256 at 8192x32768), of 256 in clusters of 16: those of 512 (two
  // stages, four vectors a thread) ran at 62.7 against 64.3. The torch tier (accuracy=torch;
  // log_softmax's beyond 65536 columns) keeps no terms and takes the same layout, whose two stages
  // fit wherever the exact kernel's and its terms do: 4096x393216 on an H100 at 95.7 % of copy
  // against 65.6 online (`kplay run --act "softmax(accuracy=torch)"`; clusters of 16, blocks of
  // 256, four vectors a thread: 94.7; of 512: 94.3; clusters of 8 (one stage): 89.1).
  if (cuda_forward && spec.dtype == Dtype::f32 && limits.max_cluster >= 2) {
    KernelConfig p = c;
    p.row = RowStrategy::cluster;
    p.cluster = cols <= 24576 ? 2 : cols <= 49152 ? 4 : cols <= 196608 ? 8 : 16;
    p.block = std::min(p.cluster <= 4 ? 128 : p.cluster == 8 ? 512 : 256, max_block);
    p.per_thread = p.cluster == 16 ? 8 : 4;
    p.grid = GridPolicy::grid_stride;
    p.waves = 1;
    if (p.cluster <= limits.max_cluster && (row_keeps_stage_terms(spec, p) || row_torch_tier(spec)) &&
        row_slice_bytes(spec, p, cols) + row_static_shared_bytes(spec, p) <= limits.max_shared_optin)
      return p;
  }
  if (spec.direction == Direction::backward) {
    // Two vectors of g and two of y a thread: four spill (ptxas -v: 536 bytes at blocks of 1024).
    c.per_thread = 2;
    // Where clusters exist, a slice of at most 8192 float32 or 32768 16-bit elements a block of 512,
    // up to the device's largest cluster: the second pass reads g and y back from L2, not from
    // memory. At 4096x131072 bfloat16, clusters of 16 (slices of 8192, one chunk of vectors a pass)
    // ran at 36 % of copy, 8 at 57, 4 at 64, 2 at 62. log_softmax's first pass reads g alone, so
    // that a cluster saves only g's second read: its rows of more than 8 slices take clusters of 4,
    // which beat clusters of 16 and blocks of 1024 alone on an H100 (`kplay bench --no-db --act
    // log_softmax --direction backward --compare`, % of copy): bfloat16 4096x393216 76.1 against
    // 73.9 alone, 1024x1048576 74.6 against 71.1; float32 4096x393216 76.4 against 75.5,
    // 1024x1048576 74.1 against 73.6 (clusters of 16 at 4096x131072: 54.9 against 76.5 alone).
    const std::uint64_t slice = dtype_size(spec.dtype) == 2 ? 32768 : 8192;
    constexpr int kMaxLogCluster = 8, kLongLogCluster = 4;
    int cluster = slice_cluster(cols, slice, 1, limits);
    if (cluster > kMaxLogCluster && resolve_activation(spec.activation).act->row_form.log) cluster = kLongLogCluster;
    if (cluster > 1) {  // only where limits.max_cluster allows more than one block
      c.cluster = cluster;
      c.block = std::min(512, max_block);
    }
    // The pipelined cluster kernel, g's and y's slices read once (the bulk copy engine loads the
    // next row's while the cluster reduces this one's), where its stages fit in shared memory:
    // float32 in clusters of up to 8 slices of 8192 (up to 65536 columns), four vectors a thread in
    // blocks of 256 (8192x32768: 96 % of copy against the online kernel's 74); softmax and softmin
    // also in clusters of 16, and 16-bit beyond the one-shot cluster kernel's 32768 columns in
    // slices of 8192, two vectors a thread, blocks of 512 where a slice is longer (on the H200,
    // 4096x131072: float32 92.8 against 54.8 online across 16, bfloat16 91.0 against 77.1 across 4;
    // bfloat16 8192x65536 91.5 against 77.5, 4096x393216 92.6 against 68.3, in blocks of 256 82.6;
    // float32 4096x393216 stays online: 62.2 against 59.0 for the pipelined kernel in blocks of 512
    // of two vectors, with room for one stage). log_softmax, whose results take the device's double
    // exp there, in blocks of 512, two vectors a thread (an H100: 89.5 against 85.1).
    // docs/design.md, "Row defaults, measured".
    const bool log = resolve_activation(spec.activation).act->row_form.log;
    const bool f32 = spec.dtype == Dtype::f32;
    if (limits.backend == "cuda" && !log && (f32 || cols > 32768) && limits.max_cluster >= 2) {
      KernelConfig p = c;
      p.row = RowStrategy::cluster;
      p.cluster = slice_cluster(cols, 8192, 2, limits);
      p.block = std::min(f32 || cols <= static_cast<std::uint64_t>(p.cluster) * 8192 ? 256 : 512, max_block);
      p.per_thread = f32 ? 4 : 2;
      p.grid = GridPolicy::grid_stride;
      p.waves = 1;
      if (row_slice_bytes(spec, p, cols) + row_static_shared_bytes(spec, p) <= limits.max_shared_optin) return p;
    }
    if (f32 && log && cluster > 1 && cluster <= 8 && limits.backend == "cuda") {
      KernelConfig p = c;
      p.row = RowStrategy::cluster;
      p.block = std::min(512, max_block);
      p.per_thread = 2;
      p.grid = GridPolicy::grid_stride;
      p.waves = 1;
      if (row_slice_bytes(spec, p, cols) + row_static_shared_bytes(spec, p) <= limits.max_shared_optin) return p;
    }
  }
  return c;
}

}  // namespace kplay
