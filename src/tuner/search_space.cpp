// Search space enumeration and the tie-break order; see search_space.hpp.
#include "search_space.hpp"

#include <cstdlib>
#include <sstream>
#include <tuple>

#include "kplay/error.hpp"

namespace kplay {

const std::vector<Constraint>& search_constraints() {
  static const std::vector<Constraint> constraints = {
      {"vector at most 16 bytes and at least one element",
       [](const KernelSpec& s, const KernelConfig& c, const TargetLimits&) {
         return c.vec >= 1 && c.vec * static_cast<int>(dtype_size(s.dtype)) <= kMaxVectorBytes;
       }},
      {"block within the device limit",
       [](const KernelSpec&, const KernelConfig& c, const TargetLimits& l) { return c.block <= l.max_block; }},
      {"cache hints only where the backend has them",
       [](const KernelSpec&, const KernelConfig& c, const TargetLimits& l) {
         return c.cache == CacheHint::normal || l.cache_hints;
       }},
      {"at most 128 bytes in flight per thread and input (register pressure)",
       [](const KernelSpec& s, const KernelConfig& c, const TargetLimits&) {
         return c.per_thread * c.vec * static_cast<int>(dtype_size(s.dtype)) <= 128;
       }},
  };
  return constraints;
}

std::vector<KernelConfig> SearchSpace::enumerate(const KernelSpec& spec, const TargetLimits& limits) const {
  std::vector<KernelConfig> out;
  const int esize = static_cast<int>(dtype_size(spec.dtype));
  for (int bytes : vec_bytes) {
    if (bytes % esize) continue;  // a 4-byte vector of float64 does not exist
    for (int block : blocks)
      for (int pt : per_thread)
        for (const GridChoice& g : grids)
          for (CacheHint cache : caches) {
            KernelConfig c;
            c.vec = bytes / esize;
            c.block = block;
            c.per_thread = pt;
            c.grid = g.policy;
            c.waves = g.waves;
            c.cache = cache;
            bool ok = true;
            for (const auto& k : search_constraints()) ok = ok && k.holds(spec, c, limits);
            if (!ok) continue;
            try {
              out.push_back(resolve_config(spec, c, limits));  // the same checks as user input
            } catch (const Error&) {
            }
          }
  }
  return out;
}

std::string SearchSpace::describe() const {
  std::ostringstream os;
  os << "vec_bytes=";
  for (int v : vec_bytes) os << v << ',';
  os << " block=";
  for (int v : blocks) os << v << ',';
  os << " per_thread=";
  for (int v : per_thread) os << v << ',';
  os << " grid=";
  for (const auto& g : grids) os << to_string(g.policy, g.waves) << ',';
  os << " cache=";
  for (CacheHint c : caches) os << to_string(c) << ',';
  return os.str();
}

bool simpler(const KernelConfig& a, const KernelConfig& b) {
  auto rank = [](const KernelConfig& c) {
    int block_distance = 0;
    for (int v = c.block; v != 256 && v > 0; v = v > 256 ? v / 2 : v * 2) ++block_distance;
    return std::make_tuple(c.grid != GridPolicy::one_shot, c.waves, c.cache != CacheHint::normal, c.per_thread, -c.vec,
                           block_distance, c.block);
  };
  return rank(a) < rank(b);
}

}  // namespace kplay
