// The management API (kplay/admin.hpp) over the registry, the backends, the tuner and the
// kernel database.
#include "kplay/admin.hpp"

#include <sys/stat.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "database/kernel_database.hpp"
#include "database/tuning_json.hpp"
#include "engine/engine.hpp"
#include "kplay/error.hpp"
#include "kplay/limits.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "tuner/tuner.hpp"

namespace kplay {
namespace {

// The database helpers open the file as `kplay db` does: a file that is not a kplay database is
// refused (Error(invalid_argument)) and left as it is, and those that only read (stats, export)
// create, write and move nothing, a missing folder included. A path that names something other
// than a regular file (/dev/zero, a FIFO, a folder) is refused too: opening would only warn and
// serve an empty database from memory.
KernelDatabase::Options db_options(const std::string& path, bool read_only) {
  const std::string file = path.empty() ? KernelDatabase::default_path() : path;
  struct stat st {};
  if (file != ":memory:" && ::stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error(ErrorCode::invalid_argument, "not using " + file +
                                                 " as the kernel database: it is not a regular file; it is left "
                                                 "exactly as it is");
  KernelDatabase::Options o;
  o.path = path;
  o.read_only = read_only;
  o.strict = true;
  return o;
}

DeviceDescription describe(const rt::DeviceInfo& d) {
  DeviceDescription r;
  r.backend = d.backend;
  r.index = d.index;
  r.name = d.name;
  r.platform = d.platform;
  r.arch = d.arch;
  r.driver_version = d.driver_version;
  r.compiler_version = d.compiler_version;
  r.memory_bytes = d.memory_bytes;
  r.compute_units = d.compute_units;
  r.max_block = d.max_block;
  r.compile_target = d.compile_target;
  r.note = d.note;
  return r;
}

// A number of a request held to [lo, hi], as the command line holds its flag (kplay/limits.hpp).
void check_range(const char* name, std::int64_t value, std::int64_t lo, std::int64_t hi) {
  if (value < lo || value > hi)
    throw Error(ErrorCode::invalid_argument, std::string(name) + " = " + std::to_string(value) + ": must be " +
                                                 std::to_string(lo) + " .. " + std::to_string(hi));
}

}  // namespace

std::vector<BackendStatus> backends() {
  std::vector<BackendStatus> out;
  for (const auto& r : rt::probe_backends()) {
    BackendStatus b{r.backend, r.available, r.status, {}};
    for (const auto& d : r.devices) b.devices.push_back(describe(d));
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<ActivationDescription> builtin_activations() {
  std::vector<ActivationDescription> out;
  for (const Activation& a : activations()) {
    ActivationDescription d;
    d.name = a.name;
    for (const ParamDef& p : a.params) {
      ParameterDescription pd{p.name, p.default_value, {}};
      for (const char* c : p.choices) pd.choices.emplace_back(c);
      d.parameters.push_back(std::move(pd));
    }
    d.has_backward = a.grad_from_input != nullptr;
    d.saves_output = a.saves_output;
    d.torch_class = a.torch_class;
    d.torch_inplace = a.torch_inplace;
    out.push_back(std::move(d));
  }
  return out;
}

std::string autotune(const TuneRequest& r) {
  KernelSpec spec;
  spec.activation = r.activation;
  spec.dtype = r.dtype;
  spec.direction = r.direction;
  spec.saved = r.saved;
  resolve_activation(r.activation);  // refuses unknown names and bad parameters first
  if (r.n == 0) throw Error(ErrorCode::invalid_argument, "n = 0: there is nothing to tune");
  if (r.n > kMaxElements)
    throw Error(ErrorCode::invalid_argument,
                "n = " + std::to_string(r.n) + ": at most 2^48 elements (" + std::to_string(kMaxElements) + ")");
  check_range("budget", r.budget, 1, kMaxTuneBudget);
  check_range("warmup", r.warmup, 0, kMaxLaunches);
  check_range("repeats", r.repeats, kMinTuneRepeats, kMaxLaunches);
  check_range("device", r.device, 0, std::numeric_limits<int>::max());
  TuneOptions o;
  o.n = r.n;
  o.strategy = r.strategy;
  o.budget = r.budget;
  o.warmup = r.warmup;
  o.repeats = r.repeats;
  o.resume = r.resume;
  // "auto" as `kplay autotune --backend auto`: CUDA where it has a device, else OpenCL.
  auto backend = rt::make_backend(r.backend == "auto" ? rt::choose_backend() : r.backend, r.device);
  KernelDatabase::Options options;  // as `kplay autotune`: an unusable file warns and runs in memory
  options.path = r.db_path;
  KernelDatabase db(options);
  Engine engine(*backend, &db);
  return tuning_to_json(tune(engine, db, spec, o)).dump();
}

namespace db {

std::string path(const std::string& db_path) { return db_path.empty() ? KernelDatabase::default_path() : db_path; }

std::string export_json(const std::string& db_path) {
  return KernelDatabase(db_options(db_path, true)).export_json().dump();
}

std::size_t import_json(const std::string& db_path, const std::string& text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::invalid_argument, std::string("not JSON: ") + e.what());
  }
  return KernelDatabase(db_options(db_path, false)).import_json(doc);
}

void clear(const std::string& db_path) { KernelDatabase(db_options(db_path, false)).clear(); }

Stats stats(const std::string& db_path) {
  KernelDatabase database(db_options(db_path, true));
  const auto s = database.stats();
  return {database.path(), database.persistent(), s.binaries, s.binary_bytes, s.tunings, s.devices};
}

}  // namespace db
}  // namespace kplay
