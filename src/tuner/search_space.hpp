// The tuner's search space, declared as data: the values each knob may take, and the constraints
// between knobs (each with a name, so a skipped configuration says why). Fast-math is never
// searched: the tuner must not trade precision for speed behind the user's back.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/config_validation.hpp"
#include "kplay/types.hpp"

namespace kplay {

struct GridChoice {
  GridPolicy policy;
  int waves;
};

struct SearchSpace {
  std::vector<int> vec_bytes = {4, 8, 16};  // vector widths in bytes, so one space fits every dtype
  std::vector<int> blocks = {64, 128, 256, 512, 1024};
  std::vector<int> per_thread = {1, 2, 4, 8};
  std::vector<GridChoice> grids = {
      {GridPolicy::one_shot, 0}, {GridPolicy::grid_stride, 2}, {GridPolicy::grid_stride, 8}};
  std::vector<CacheHint> caches = {CacheHint::normal, CacheHint::streaming};
  std::vector<bool> flat = {true};            // false: the general kernel only (--general-kernel)
  std::vector<bool> late_gradient = {false};  // backward: the gradient loaded after the math

  // The space with the knobs named in `text` replaced (`kplay autotune --space`): items separated
  // by spaces or ';', each KNOB=V,V,...: vec-bytes=4,8,16 block=64,...,1024 per-thread=1,...,16
  // grid=one-shot,grid-stride:W cache=default,streaming kernel=flat,general gradient=early,late.
  // Throws Error(invalid_argument) naming the item for an unknown knob or value.
  static SearchSpace parse(const std::string& text, SearchSpace base);

  // Every configuration that satisfies the constraints for this spec and target, in a fixed order.
  std::vector<KernelConfig> enumerate(const KernelSpec& spec, const TargetLimits& limits) const;
  std::string describe() const;  // for the run key and --json
};

// The row kernel's space (the softmax family, templates/common/rowwise.h): the second problem,
// `rows` rows of `cols` elements, whose main knob is how a row is held. registers and shared take
// the threads per row (row_threads, a power of two) and the fewest vectors per thread that hold
// the row; online and cluster take a block and vectors in flight from the lists; cluster, and
// online across a cluster (blocks of 512, two vectors a thread), only where the device has
// clusters (cluster: in the sizes whose slice fits its shared memory). Every candidate
// passes search_constraints(), resolve_config and row_launch_dims for these rows: a config that
// cannot hold them is left out, not measured and failed.
struct RowSearchSpace {
  std::vector<RowStrategy> strategies = {RowStrategy::registers, RowStrategy::shared, RowStrategy::online,
                                         RowStrategy::cluster};
  std::vector<int> vec_bytes = {4, 8, 16};
  std::vector<int> blocks = {128, 256, 512, 1024};  // shared, online and cluster
  std::vector<int> per_thread = {1, 2, 4};          // online and cluster: vectors in flight
  std::vector<int> clusters = {2, 4, 8, 16};

  std::vector<KernelConfig> enumerate(const KernelSpec& spec, const TargetLimits& limits, std::uint64_t rows,
                                      std::uint64_t cols) const;
  std::string describe() const;  // for the run key
};

struct Constraint {
  const char* name;
  bool (*holds)(const KernelSpec& spec, const KernelConfig& c, const TargetLimits& limits);
};

// The constraints, in the order they are checked.
const std::vector<Constraint>& search_constraints();

// Total order used to break ties among equally fast configurations: the simplest first
// (one-shot, default cache, the flat kernel, the gradient loaded first, fewest vectors per thread,
// widest vector, block nearest 256; for rows then the row strategy in RowStrategy's order, the
// smaller cluster, the fewer threads per row).
bool simpler(const KernelConfig& a, const KernelConfig& b);

}  // namespace kplay
