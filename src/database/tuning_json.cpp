// JSON conversion and validation of the tuning vocabulary; see tuning_json.hpp.
#include "tuning_json.hpp"

#include <cctype>
#include <limits>
#include <regex>

#include "kplay/error.hpp"
#include "spec/activations.hpp"

namespace kplay {
using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw Error(ErrorCode::invalid_argument, where + ": " + what);
}

const json& field(const json& obj, const char* name, const std::string& where) {
  if (!obj.is_object()) bad(where, "expected an object");
  const auto it = obj.find(name);
  if (it == obj.end()) bad(where, std::string("missing field '") + name + "'");
  return *it;
}

bool has(const json& obj, const char* name) { return obj.is_object() && obj.contains(name); }

std::string get_string(const json& obj, const char* name, const std::string& where) {
  const json& v = field(obj, name, where);
  if (!v.is_string()) bad(where + "." + name, "expected a string");
  return v.get<std::string>();
}

std::int64_t get_int(const json& obj, const char* name, const std::string& where, std::int64_t lo, std::int64_t hi) {
  const json& v = field(obj, name, where);
  if (!v.is_number_integer()) bad(where + "." + name, "expected an integer");
  const std::string range = "expected " + std::to_string(lo) + ".." + std::to_string(hi);
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) bad(where + "." + name, range);
  const auto x = v.get<std::int64_t>();
  if (x < lo || x > hi) bad(where + "." + name, range);
  return x;
}

double get_number(const json& obj, const char* name, const std::string& where) {
  const json& v = field(obj, name, where);
  if (!v.is_number()) bad(where + "." + name, "expected a number");
  const double x = v.get<double>();
  if (!(x >= 0)) bad(where + "." + name, "expected a number >= 0");
  return x;
}

bool get_bool(const json& obj, const char* name, const std::string& where) {
  const json& v = field(obj, name, where);
  if (!v.is_boolean()) bad(where + "." + name, "expected true or false");
  return v.get<bool>();
}

// The type helpers' parsers throw their own message; give it the field's place.
template <class F>
auto parsed(const std::string& where, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error& e) {
    bad(where, e.what());
  }
}

constexpr std::int64_t kIntMax = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kI64Max = std::numeric_limits<std::int64_t>::max();

}  // namespace

json config_to_json(const KernelConfig& c) {
  json j = {{"vec", c.vec},
            {"block", c.block},
            {"per_thread", c.per_thread},
            {"fast_math", c.fast_math},
            {"grid", c.grid == GridPolicy::one_shot ? "one-shot" : "grid-stride"},
            {"waves", c.waves},
            {"cache", to_string(c.cache)},
            {"flat", c.flat},
            {"late_gradient", c.late_gradient}};
  // Row kernels only, so element-wise records read as they always have.
  if (c.row != RowStrategy::none) {
    j["row"] = to_string(c.row);
    j["cluster"] = c.cluster;
    if (c.row_threads != 0) j["row_threads"] = c.row_threads;
    if (c.recompute_terms) j["recompute_terms"] = true;
  }
  return j;
}

KernelConfig config_from_json(const json& j, const std::string& where) {
  KernelConfig c;
  c.vec = static_cast<int>(get_int(j, "vec", where, 0, 16));
  c.block = static_cast<int>(get_int(j, "block", where, 1, 65536));
  c.per_thread = static_cast<int>(get_int(j, "per_thread", where, 1, 1024));
  c.fast_math = get_bool(j, "fast_math", where);
  const std::string grid = get_string(j, "grid", where);
  parsed(where + ".grid", [&] { parse_grid_policy(grid, c.grid, c.waves); });
  // A resolved one-shot config carries waves = 0 (meaningless there; see resolve_config).
  if (has(j, "waves"))
    c.waves = static_cast<int>(get_int(j, "waves", where, c.grid == GridPolicy::one_shot ? 0 : 1, 1024));
  const std::string cache = get_string(j, "cache", where);
  c.cache = parsed(where + ".cache", [&] { return parse_cache_hint(cache); });
  // Records written before these two knobs existed mean the defaults.
  if (has(j, "flat")) c.flat = get_bool(j, "flat", where);
  if (has(j, "late_gradient")) c.late_gradient = get_bool(j, "late_gradient", where);
  if (has(j, "row")) {
    const std::string row = get_string(j, "row", where);
    c.row = parsed(where + ".row", [&] { return parse_row_strategy(row); });
    if (has(j, "cluster")) c.cluster = static_cast<int>(get_int(j, "cluster", where, 0, 16));
    if (has(j, "row_threads")) c.row_threads = static_cast<int>(get_int(j, "row_threads", where, 0, 1024));
    if (has(j, "recompute_terms")) c.recompute_terms = get_bool(j, "recompute_terms", where);
  }
  return c;
}

json spec_to_json(const KernelSpec& s) {
  return {{"activation", s.activation},
          {"direction", to_string(s.direction)},
          {"dtype", to_string(s.dtype)},
          {"saved", to_string(s.saved)}};
}

// An imported activation is a built-in in canonical form ("leaky_relu(negative_slope=0.2)") or
// a user snippet's key ("my_act@1a2b3c4d", which only ever matches that snippet); never a path,
// which resolving would open.
void check_activation_text(const std::string& text, const std::string& where) {
  static const std::regex user_key("[A-Za-z_][A-Za-z0-9_]{0,63}@[0-9a-f]{8}");
  if (text.empty() || text.size() > 256)
    bad(where, "'" + text.substr(0, 64) + "' is not an activation (empty or longer than 256 characters)");
  for (char ch : text)
    if (ch == '/' || ch == '\\' || static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      bad(where, "'" + text + "' is not an activation (a path or a control character)");
  if (std::regex_match(text, user_key)) return;
  std::string canonical;
  try {
    canonical = resolve_activation(text).canonical;
  } catch (const Error& e) {
    bad(where, e.what());
  }
  if (canonical != text) bad(where, "'" + text + "' is not in canonical form (write '" + canonical + "')");
}

KernelSpec spec_from_json(const json& j, const std::string& where) {
  KernelSpec s;
  s.activation = get_string(j, "activation", where);
  check_activation_text(s.activation, where + ".activation");
  const std::string direction = get_string(j, "direction", where);
  s.direction = parsed(where + ".direction", [&] { return parse_direction(direction); });
  const std::string dtype = get_string(j, "dtype", where);
  s.dtype = parsed(where + ".dtype", [&] { return parse_dtype(dtype); });
  if (has(j, "saved")) {
    const std::string saved = get_string(j, "saved", where);
    s.saved = parsed(where + ".saved", [&] { return parse_saved(saved); });
  }
  return s;
}

json candidate_to_json(const CandidateResult& c) {
  return {{"config", config_to_json(c.config)}, {"ok", c.ok},     {"median_ms", c.median_ms},
          {"spread_ms", c.spread_ms},           {"gbps", c.gbps}, {"rejection", c.rejection}};
}

CandidateResult candidate_from_json(const json& j, const std::string& where) {
  CandidateResult c;
  c.config = config_from_json(field(j, "config", where), where + ".config");
  c.ok = get_bool(j, "ok", where);
  c.median_ms = has(j, "median_ms") ? get_number(j, "median_ms", where) : 0;
  c.spread_ms = has(j, "spread_ms") ? get_number(j, "spread_ms", where) : 0;
  c.gbps = has(j, "gbps") ? get_number(j, "gbps", where) : 0;
  c.rejection = has(j, "rejection") ? get_string(j, "rejection", where) : "";
  return c;
}

json provenance_to_json(const Provenance& p) {
  return {{"gpu", p.gpu},     {"driver", p.driver}, {"compiler", p.compiler},
          {"kplay", p.kplay}, {"date", p.date},     {"command", p.command}};
}

Provenance provenance_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) bad(where, "expected an object");
  Provenance p;
  p.gpu = get_string(j, "gpu", where);
  p.driver = get_string(j, "driver", where);
  p.compiler = get_string(j, "compiler", where);
  p.kplay = get_string(j, "kplay", where);
  p.date = get_string(j, "date", where);
  p.command = get_string(j, "command", where);
  return p;
}

json tuning_to_json(const TuningRecord& r) {
  json candidates = json::array();
  for (const auto& c : r.candidates) candidates.push_back(candidate_to_json(c));
  json j = {{"fingerprint", r.fingerprint},   {"backend", r.backend},
            {"device_name", r.device_name},   {"arch", r.arch},
            {"spec", spec_to_json(r.spec)},   {"n", r.n},
            {"size_bucket", r.size_bucket},   {"best", config_to_json(r.best)},
            {"best_ms", r.best_ms},           {"best_gbps", r.best_gbps},
            {"copy_gbps", r.copy_gbps},       {"strategy", r.strategy},
            {"created_unix", r.created_unix}, {"candidates", candidates}};
  if (!r.provenance.empty()) j["provenance"] = provenance_to_json(r.provenance);
  return j;
}

TuningRecord tuning_from_json(const json& j, const std::string& where, const std::vector<Provenance>* provenances) {
  TuningRecord r;
  r.fingerprint = get_string(j, "fingerprint", where);
  if (r.fingerprint.empty()) bad(where + ".fingerprint", "must not be empty");
  r.backend = get_string(j, "backend", where);
  r.device_name = get_string(j, "device_name", where);
  r.arch = get_string(j, "arch", where);
  r.spec = spec_from_json(field(j, "spec", where), where + ".spec");
  r.n = static_cast<std::uint64_t>(get_int(j, "n", where, 0, kI64Max));
  r.size_bucket = has(j, "size_bucket") ? static_cast<int>(get_int(j, "size_bucket", where, 0, 64)) : size_bucket(r.n);
  r.best = config_from_json(field(j, "best", where), where + ".best");
  r.best_ms = get_number(j, "best_ms", where);
  r.best_gbps = get_number(j, "best_gbps", where);
  r.copy_gbps = has(j, "copy_gbps") ? get_number(j, "copy_gbps", where) : 0;
  r.strategy = has(j, "strategy") ? get_string(j, "strategy", where) : "";
  r.created_unix = has(j, "created_unix") ? get_int(j, "created_unix", where, 0, kI64Max) : 0;
  if (has(j, "provenance")) {
    const json& p = j.at("provenance");
    if (!p.is_number_integer()) {
      r.provenance = provenance_from_json(p, where + ".provenance");
    } else {
      const std::size_t count = provenances ? provenances->size() : 0;
      const std::int64_t i = get_int(j, "provenance", where, 0, kI64Max);
      if (static_cast<std::uint64_t>(i) >= count)
        bad(where + ".provenance", "index " + std::to_string(i) + " into \"provenances\", which has " +
                                       std::to_string(count) + (count == 1 ? " entry" : " entries"));
      r.provenance = (*provenances)[static_cast<std::size_t>(i)];
    }
  }
  if (has(j, "candidates")) {
    const json& cs = j.at("candidates");
    if (!cs.is_array()) bad(where + ".candidates", "expected an array");
    for (std::size_t i = 0; i < cs.size(); ++i)
      r.candidates.push_back(candidate_from_json(cs[i], where + ".candidates[" + std::to_string(i) + "]"));
  }
  return r;
}

json device_to_json(const std::string& fingerprint, const rt::DeviceInfo& d) {
  return {{"fingerprint", fingerprint},
          {"backend", d.backend},
          {"index", d.index},
          {"name", d.name},
          {"platform", d.platform},
          {"arch", d.arch},
          {"driver_version", d.driver_version},
          {"compiler_version", d.compiler_version},
          {"memory_bytes", d.memory_bytes},
          {"compute_units", d.compute_units},
          {"max_threads_per_unit", d.max_threads_per_unit},
          {"max_block", d.max_block},
          {"l2_bytes", d.l2_bytes},
          {"compile_target", d.compile_target},
          {"note", d.note}};
}

std::pair<std::string, rt::DeviceInfo> device_from_json(const json& j, const std::string& where) {
  std::string fingerprint = get_string(j, "fingerprint", where);
  if (fingerprint.empty()) bad(where + ".fingerprint", "must not be empty");
  rt::DeviceInfo d;
  d.backend = get_string(j, "backend", where);
  d.name = get_string(j, "name", where);
  d.arch = get_string(j, "arch", where);
  auto text = [&](const char* name) { return has(j, name) ? get_string(j, name, where) : std::string(); };
  auto integer = [&](const char* name, std::int64_t hi) { return has(j, name) ? get_int(j, name, where, 0, hi) : 0; };
  d.index = static_cast<int>(integer("index", kIntMax));
  d.platform = text("platform");
  d.driver_version = text("driver_version");
  d.compiler_version = text("compiler_version");
  d.memory_bytes = static_cast<std::uint64_t>(integer("memory_bytes", kI64Max));
  d.compute_units = static_cast<int>(integer("compute_units", kIntMax));
  d.max_threads_per_unit = static_cast<int>(integer("max_threads_per_unit", kIntMax));
  d.max_block = static_cast<int>(integer("max_block", kIntMax));
  d.l2_bytes = static_cast<std::uint64_t>(integer("l2_bytes", kI64Max));
  d.compile_target = text("compile_target");
  d.note = text("note");
  return {std::move(fingerprint), std::move(d)};
}

std::string config_text(const KernelConfig& c) { return config_to_json(c).dump(); }

KernelConfig config_from_text(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) bad("config", "not valid JSON: " + text.substr(0, 80));
  return config_from_json(j, "config");
}

json document_to_json(const TuningDocument& doc) {
  json devices = json::array(), tunings = json::array();
  for (const auto& [fp, d] : doc.devices) devices.push_back(device_to_json(fp, d));
  for (const auto& r : doc.tunings) tunings.push_back(tuning_to_json(r));
  return {{"format", kTuningFormatName}, {"version", kTuningExportVersion}, {"devices", devices}, {"tunings", tunings}};
}

TuningDocument document_from_json(const json& j) {
  if (!j.is_object()) bad("document", "expected a JSON object (as written by `kplay db export`)");
  // Compiled code is never imported: a binary is found by its key, which only this kplay's own
  // compile of the rendered source for this device produces.
  if (j.contains("binaries"))
    bad("document.binaries",
        "binaries are never imported (kplay compiles its own on each device); "
        "remove the field to import the tunings");
  for (const auto& [name, value] : j.items())
    if (name != "format" && name != "version" && name != "devices" && name != "tunings" && name != "exported_unix" &&
        name != "provenances")
      bad("document", "unknown field '" + name.substr(0, 40) +
                          "' (expected format, version, exported_unix, devices, provenances, tunings)");
  if (j.contains("exported_unix")) get_int(j, "exported_unix", "document", 0, kI64Max);
  if (get_string(j, "format", "document") != kTuningFormatName)
    bad("document.format", std::string("expected \"") + kTuningFormatName + "\"");
  const std::int64_t version = get_int(j, "version", "document", 1, kI64Max);
  if (version > kTuningFormatVersion)
    bad("document.version", "version " + std::to_string(version) +
                                " was written by a newer kplay (this one reads up to " +
                                std::to_string(kTuningFormatVersion) + ")");
  TuningDocument doc;
  auto array = [&](const char* name) -> const json& {
    static const json empty = json::array();
    if (!j.contains(name)) return empty;
    const json& a = j.at(name);
    if (!a.is_array()) bad(std::string(name), "expected an array");
    return a;
  };
  const json& devices = array("devices");
  for (std::size_t i = 0; i < devices.size(); ++i)
    doc.devices.push_back(device_from_json(devices[i], "devices[" + std::to_string(i) + "]"));
  std::vector<Provenance> table;
  const json& provenances = array("provenances");
  for (std::size_t i = 0; i < provenances.size(); ++i)
    table.push_back(provenance_from_json(provenances[i], "provenances[" + std::to_string(i) + "]"));
  if (!j.contains("tunings")) bad("document", "missing field 'tunings'");
  const json& tunings = array("tunings");
  for (std::size_t i = 0; i < tunings.size(); ++i)
    doc.tunings.push_back(tuning_from_json(tunings[i], "tunings[" + std::to_string(i) + "]", &table));
  return doc;
}

}  // namespace kplay
