// Search space enumeration and the tie-break order; see search_space.hpp.
#include "search_space.hpp"

#include <algorithm>
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
          for (CacheHint cache : caches)
            for (bool flat_kernel : flat)
              for (bool late : late_gradient) {
                KernelConfig c;
                c.vec = bytes / esize;
                c.block = block;
                c.per_thread = pt;
                c.grid = g.policy;
                c.waves = g.waves;
                c.cache = cache;
                c.flat = flat_kernel;
                c.late_gradient = late;
                bool ok = true;
                for (const auto& k : search_constraints()) ok = ok && k.holds(spec, c, limits);
                if (!ok) continue;
                try {
                  out.push_back(resolve_config(spec, c, limits));  // the same checks as user input
                } catch (const Error&) {                           // a late gradient in a forward kernel, ...
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
  // Named only when searched, so that the run keys of the spaces before these knobs stay the same.
  if (flat != std::vector<bool>{true}) {
    os << " kernel=";
    for (bool f : flat) os << (f ? "flat" : "general") << ',';
  }
  if (late_gradient != std::vector<bool>{false}) {
    os << " gradient=";
    for (bool l : late_gradient) os << (l ? "late" : "early") << ',';
  }
  return os.str();
}

SearchSpace SearchSpace::parse(const std::string& text, SearchSpace space) {
  std::string items = text;
  std::replace(items.begin(), items.end(), ';', ' ');
  std::istringstream is(items);
  for (std::string item; is >> item;) {
    const auto eq = item.find('=');
    auto bad = [&](const std::string& why) {
      std::string message = "--space '" + item;
      message += "': ";
      message += why;
      throw Error(ErrorCode::invalid_argument, message);
    };
    if (eq == std::string::npos || eq + 1 == item.size()) bad("expected KNOB=VALUE,VALUE,...");
    const std::string knob = item.substr(0, eq);
    std::vector<std::string> values;
    std::stringstream vs(item.substr(eq + 1));
    for (std::string v; std::getline(vs, v, ',');)
      if (!v.empty()) values.push_back(v);
    auto number = [&](const std::string& v, int lo, int hi, bool pow2 = false) {
      char* end = nullptr;
      const long x = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || x < lo || x > hi || (pow2 && (x & (x - 1))))
        bad("'" + v + "' is not " + (pow2 ? "a power of two" : "a number") + " in " + std::to_string(lo) + ".." +
            std::to_string(hi));
      return static_cast<int>(x);
    };
    if (knob == "vec-bytes") {
      space.vec_bytes.clear();
      for (const auto& v : values) space.vec_bytes.push_back(number(v, 1, kMaxVectorBytes, true));
    } else if (knob == "block") {
      space.blocks.clear();
      for (const auto& v : values) space.blocks.push_back(number(v, 32, 1024, true));
    } else if (knob == "per-thread") {
      space.per_thread.clear();
      for (const auto& v : values) space.per_thread.push_back(number(v, 1, kMaxPerThread));
    } else if (knob == "grid") {
      space.grids.clear();
      for (const auto& v : values) {
        GridChoice g{};
        try {
          parse_grid_policy(v, g.policy, g.waves);
        } catch (const Error& e) {
          bad(e.what());
        }
        if (g.policy == GridPolicy::one_shot) g.waves = 0;
        space.grids.push_back(g);
      }
    } else if (knob == "cache") {
      space.caches.clear();
      for (const auto& v : values) try {
          space.caches.push_back(parse_cache_hint(v));
        } catch (const Error& e) {
          bad(e.what());
        }
    } else if (knob == "kernel" || knob == "gradient") {
      const char* first = knob == "kernel" ? "flat" : "early";
      const char* second = knob == "kernel" ? "general" : "late";
      std::vector<bool> set;
      for (const auto& v : values) {
        if (v != first && v != second) bad("'" + v + "': expected " + first + " or " + second);
        set.push_back(knob == "kernel" ? v == first : v == second);
      }
      (knob == "kernel" ? space.flat : space.late_gradient) = set;
    } else {
      bad("unknown knob '" + knob + "' (vec-bytes, block, per-thread, grid, cache, kernel, gradient)");
    }
    if (values.empty()) bad("no value");
  }
  return space;
}

bool simpler(const KernelConfig& a, const KernelConfig& b) {
  auto rank = [](const KernelConfig& c) {
    int block_distance = 0;
    for (int v = c.block; v != 256 && v > 0; v = v > 256 ? v / 2 : v * 2) ++block_distance;
    return std::make_tuple(c.grid != GridPolicy::one_shot, c.waves, c.cache != CacheHint::normal, !c.flat,
                           c.late_gradient, c.per_thread, -c.vec, block_distance, c.block, static_cast<int>(c.row),
                           c.cluster, c.row_threads);
  };
  return rank(a) < rank(b);
}

}  // namespace kplay
