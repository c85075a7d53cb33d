// The row kernel's search space (the softmax family); see search_space.hpp. Kept apart from the
// element-wise space: its candidates depend on the row length, and each must hold the rows.
#include <algorithm>
#include <sstream>

#include "codegen/row_codegen.hpp"
#include "engine/launch_geometry.hpp"
#include "kplay/error.hpp"
#include "search_space.hpp"

namespace kplay {
namespace {

// The candidates of one strategy and vector width, before any check: registers and shared from
// the row length, online and cluster from the lists.
std::vector<KernelConfig> proposals(const RowSearchSpace& s, RowStrategy row, int vec, const TargetLimits& limits,
                                    std::uint64_t cols) {
  std::vector<KernelConfig> out;
  const std::uint64_t vecs = std::max<std::uint64_t>(1, (cols + vec - 1) / vec);
  // One candidate in the grids asked for: one-shot, persistent (grid-stride:1: registers' groups
  // load their next row while they reduce this one; clusters pipeline theirs), or both.
  enum class Grids { one_shot, persistent, both };
  auto add = [&](int block, int per_thread, int row_threads, int cluster, Grids grids = Grids::one_shot) {
    KernelConfig c;
    c.vec = vec;
    c.row = row;
    c.block = block;
    c.per_thread = per_thread;
    c.row_threads = row_threads;
    c.cluster = cluster;
    if (grids != Grids::persistent) out.push_back(c);
    if (grids != Grids::one_shot) {
      c.grid = GridPolicy::grid_stride;
      c.waves = 1;
      out.push_back(c);
    }
  };
  switch (row) {
    case RowStrategy::registers:
      // Threads per row from one up, each with the fewest vectors that hold the row, until a
      // vector a thread (more threads would idle); rows shorter than a block share one of 128 or 256.
      for (int t = 1; t <= limits.max_block; t *= 2) {
        const auto pt = static_cast<int>((vecs + t - 1) / t);
        if (pt <= kMaxPerThread)
          for (int block : {std::max(t, 128), std::max(t, 256)}) add(block, pt, t, 0, Grids::both);
        if (static_cast<std::uint64_t>(t) >= vecs) break;
      }
      // Registers across a cluster (--cluster N) is not a candidate: at 4096x393216 float32 on
      // the H200 it took twice the online kernel's time (docs/benchmarks.md, "Softmax").
      break;
    case RowStrategy::shared:
      for (int block : s.blocks) {
        const auto pt = static_cast<std::uint64_t>((vecs + block - 1) / block);
        if (pt <= static_cast<std::uint64_t>(kMaxPerThread)) add(block, static_cast<int>(pt), 0, 0);
      }
      break;
    case RowStrategy::online:
      // Blocks of more than twice the row's vectors leave most threads without one: only the
      // smallest block of the list serves such short rows.
      for (int block : s.blocks)
        if (block == *std::min_element(s.blocks.begin(), s.blocks.end()) ||
            static_cast<std::uint64_t>(block) <= 2 * vecs)
          for (int pt : s.per_thread) add(block, pt, 0, 0);
      // Across a cluster (sm_90): blocks of 512, two vectors a thread, each block with a slice of
      // at least a vector a thread, so that the second pass finds its slice in L2 (measured for
      // the backward, which reads g and y twice; its default is one of these).
      if (limits.max_cluster >= 2 && limits.max_block >= 512)
        for (int cluster : s.clusters)
          if (cluster >= 2 && cluster <= limits.max_cluster && vecs >= static_cast<std::uint64_t>(cluster) * 512)
            add(512, 2, 0, cluster);
      break;
    case RowStrategy::cluster:
      if (limits.max_cluster < 2) break;  // CUDA sm_90 and newer
      // A cluster whose blocks' slices have fewer vectors than threads splits a row that one block
      // holds: not a candidate.
      for (int cluster : s.clusters)
        if (cluster <= limits.max_cluster)
          for (int block : s.blocks)
            if ((vecs + cluster - 1) / cluster >= static_cast<std::uint64_t>(block))
              for (int pt : s.per_thread) add(block, pt, 0, cluster);
      // The pipelined kernel (persistent clusters, two stages filled by the bulk copy engine):
      // a cluster of one block too, for rows a block's shared memory holds twice. --per-thread is
      // the vectors a thread reads from the stage at once: 1, 2 or 4 (4 measured fastest with
      // blocks of 128 to 512 on the H200; blocks of 1024 spill at 2 and 4: src/tuner/row_defaults.hpp),
      // and 8 where a thread's part of the slice has that many (float32 4096x393216 in clusters of
      // 16, blocks of 256: 64.0 % of copy at 8, 50.6 at 4).
      for (int cluster = 1; cluster <= limits.max_cluster; cluster *= 2) {
        if (cluster > 1 && std::find(s.clusters.begin(), s.clusters.end(), cluster) == s.clusters.end()) continue;
        const std::uint64_t slice_vecs = (vecs + cluster - 1) / cluster;
        for (int block : s.blocks)
          if (slice_vecs >= static_cast<std::uint64_t>(block))
            for (int pt : {1, 2, 4, 8})
              if (pt < 8 || slice_vecs >= 8ull * static_cast<std::uint64_t>(block))
                add(block, pt, 0, cluster, Grids::persistent);
      }
      break;
    default: break;
  }
  return out;
}

}  // namespace

std::vector<KernelConfig> RowSearchSpace::enumerate(const KernelSpec& spec, const TargetLimits& limits,
                                                    std::uint64_t rows, std::uint64_t cols) const {
  std::vector<KernelConfig> out;
  const int esize = static_cast<int>(dtype_size(spec.dtype));
  for (RowStrategy row : strategies)
    for (int bytes : vec_bytes) {
      if (bytes % esize) continue;  // a 4-byte vector of float64 does not exist
      for (const KernelConfig& p : proposals(*this, row, bytes / esize, limits, cols)) {
        // Where the pipelined kernel may keep its terms, keeping them (a byte an element more shared
        // memory, fewer blocks an SM) and computing them again (a second exp) are both candidates.
        std::vector<KernelConfig> forms{p};
        if (row_terms_can_be_kept(spec, p)) {
          forms.push_back(p);
          forms.back().recompute_terms = true;
        }
        for (const KernelConfig& c : forms) {
          bool ok = true;
          for (const auto& k : search_constraints()) ok = ok && k.holds(spec, c, limits);
          if (!ok) continue;
          try {
            const KernelConfig r = resolve_config(spec, c, limits);  // the same checks as user input
            row_launch_dims(spec, r, rows, cols, limits);            // holds these rows
            if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
          } catch (const Error& e) {
            // Too long for the strategy, a slice beyond the shared memory, 48 KiB of static shared
            // memory: skipped. Anything else (the spec itself unsupported) is the caller's to hear.
            if (e.code() != ErrorCode::invalid_config) throw;
          }
        }
      }
    }
  return out;
}

std::string RowSearchSpace::describe() const {
  std::ostringstream os;
  os << "row=";
  for (RowStrategy r : strategies) os << to_string(r) << ',';
  os << " vec_bytes=";
  for (int v : vec_bytes) os << v << ',';
  os << " block=";
  for (int v : blocks) os << v << ',';
  os << " per_thread=";
  for (int v : per_thread) os << v << ',';
  os << " cluster=";
  for (int v : clusters) os << v << ',';
  os << " registers,cluster-grid=one-shot,grid-stride:1 (grid-stride cluster: 1 too, per-thread 1,2,4,8 where 8 a "
        "thread fit)"
     << " online-cluster=block 512 per-thread 2 terms=keep,recompute";
  return os.str();
}

}  // namespace kplay
