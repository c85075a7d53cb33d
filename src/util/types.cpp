// Names and parsers for the vocabulary in kplay/types.hpp, shared by the CLI, the database and
// the C API so that a config prints and parses the same way everywhere.
#include "kplay/types.hpp"

#include <sstream>

#include "kplay/error.hpp"

namespace kplay {

std::size_t dtype_size(Dtype d) {
  switch (d) {
    case Dtype::f32: return 4;
    case Dtype::f16:
    case Dtype::bf16: return 2;
    case Dtype::f64: return 8;
  }
  return 0;
}

std::size_t out_size(const KernelSpec& s) { return s.out == OutDtype::same ? dtype_size(s.dtype) : 1; }

const char* to_string(OutDtype d) {
  switch (d) {
    case OutDtype::same: return "same";
    case OutDtype::f8e4m3: return "f8e4m3";
    case OutDtype::f8e5m2: return "f8e5m2";
  }
  return "?";
}

const char* to_string(Dtype d) {
  switch (d) {
    case Dtype::f32: return "f32";
    case Dtype::f16: return "f16";
    case Dtype::bf16: return "bf16";
    case Dtype::f64: return "f64";
  }
  return "?";
}

const char* to_string(Direction d) { return d == Direction::forward ? "forward" : "backward"; }
const char* to_string(Saved s) { return s == Saved::input ? "input" : "output"; }
const char* to_string(CacheHint c) { return c == CacheHint::normal ? "default" : "streaming"; }

const char* to_string(RowStrategy r) {
  switch (r) {
    case RowStrategy::none: return "none";
    case RowStrategy::registers: return "registers";
    case RowStrategy::shared: return "shared";
    case RowStrategy::online: return "online";
    case RowStrategy::cluster: return "cluster";
  }
  return "?";
}

RowStrategy parse_row_strategy(const std::string& s) {
  for (RowStrategy r : {RowStrategy::registers, RowStrategy::shared, RowStrategy::online, RowStrategy::cluster})
    if (s == to_string(r)) return r;
  throw Error(ErrorCode::invalid_argument,
              "unknown row strategy '" + s + "' (expected registers, shared, online or cluster)");
}

std::string to_string(GridPolicy g, int waves) {
  if (g == GridPolicy::one_shot) return "one-shot";
  return "grid-stride:" + std::to_string(waves);
}

std::string to_string(const KernelConfig& c) {
  std::ostringstream os;
  os << "vec=" << c.vec << " block=" << c.block << " per-thread=" << c.per_thread
     << " grid=" << to_string(c.grid, c.waves) << " cache=" << to_string(c.cache)
     << " fast-math=" << (c.fast_math ? "on" : "off");
  // Named only when not the default, so most configs read as they always have.
  if (!c.flat) os << " kernel=general";
  if (c.late_gradient) os << " gradient=late";
  if (c.row != RowStrategy::none) os << " row=" << to_string(c.row);
  if (c.row == RowStrategy::cluster || c.cluster > 1) os << " cluster=" << c.cluster;
  if (c.row_threads != 0) os << " row-threads=" << c.row_threads;
  if (c.recompute_terms) os << " terms=recompute";
  return os.str();
}

std::string to_string(const KernelSpec& s) {
  std::string out = s.activation + " " + to_string(s.direction) + " " + to_string(s.dtype);
  if (s.direction == Direction::backward) out += std::string(" saved=") + to_string(s.saved);
  if (s.out != OutDtype::same) out += std::string(" out=") + to_string(s.out);
  return out;
}

Dtype parse_dtype(const std::string& s) {
  if (s == "f32" || s == "float32" || s == "float") return Dtype::f32;
  if (s == "f16" || s == "float16" || s == "half") return Dtype::f16;
  if (s == "bf16" || s == "bfloat16") return Dtype::bf16;
  if (s == "f64" || s == "float64" || s == "double") return Dtype::f64;
  throw Error(ErrorCode::invalid_argument, "unknown dtype '" + s + "' (expected f32, f16, bf16 or f64)");
}

OutDtype parse_out_dtype(const std::string& s) {
  if (s == "same" || s.empty()) return OutDtype::same;
  if (s == "f8e4m3" || s == "f8e4m3fn" || s == "float8_e4m3fn" || s == "e4m3") return OutDtype::f8e4m3;
  if (s == "f8e5m2" || s == "float8_e5m2" || s == "e5m2") return OutDtype::f8e5m2;
  throw Error(ErrorCode::invalid_argument,
              "unknown output dtype '" + s + "' (expected f8e4m3 (float8_e4m3fn), f8e5m2 (float8_e5m2) or same)");
}

Direction parse_direction(const std::string& s) {
  if (s == "forward" || s == "fwd") return Direction::forward;
  if (s == "backward" || s == "bwd") return Direction::backward;
  throw Error(ErrorCode::invalid_argument, "unknown direction '" + s + "' (expected forward or backward)");
}

Saved parse_saved(const std::string& s) {
  if (s == "input" || s == "x") return Saved::input;
  if (s == "output" || s == "y") return Saved::output;
  throw Error(ErrorCode::invalid_argument, "unknown saved tensor '" + s + "' (expected input or output)");
}

CacheHint parse_cache_hint(const std::string& s) {
  if (s == "default" || s == "normal") return CacheHint::normal;
  if (s == "streaming" || s == "stream" || s == "evict-first") return CacheHint::streaming;
  throw Error(ErrorCode::invalid_argument, "unknown cache hint '" + s + "' (expected default or streaming)");
}

void parse_grid_policy(const std::string& s, GridPolicy& grid, int& waves) {
  if (s == "one-shot" || s == "oneshot") {
    grid = GridPolicy::one_shot;
    return;
  }
  const std::string prefix = "grid-stride";
  if (s.compare(0, prefix.size(), prefix) == 0) {
    grid = GridPolicy::grid_stride;
    if (s.size() == prefix.size()) return;  // keep the current number of waves
    if (s[prefix.size()] == ':') {
      const std::string w = s.substr(prefix.size() + 1);
      char* end = nullptr;
      long v = std::strtol(w.c_str(), &end, 10);
      if (!w.empty() && end && *end == '\0' && v > 0 && v <= 1024) {
        waves = static_cast<int>(v);
        return;
      }
    }
  }
  throw Error(ErrorCode::invalid_argument,
              "unknown grid policy '" + s + "' (expected one-shot or grid-stride[:WAVES], WAVES 1..1024)");
}

std::string Error::describe() const {
  std::string out = what();
  if (!options_.empty()) out += "\n  options: " + options_;
  if (!log_.empty()) out += "\n  compiler log:\n" + log_;
  return out;
}

}  // namespace kplay
