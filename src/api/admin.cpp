// The management API (kplay/admin.hpp) over the registry, the backends, the tuner and the
// kernel database.
#include "kplay/admin.hpp"

#include <nlohmann/json.hpp>

#include "database/kernel_database.hpp"
#include "database/tuning_json.hpp"
#include "engine/engine.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "tuner/tuner.hpp"

namespace kplay {
namespace {

KernelDatabase::Options db_options(const std::string& path) {
  KernelDatabase::Options o;
  o.path = path;
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
  TuneOptions o;
  o.n = r.n;
  o.strategy = r.strategy;
  o.budget = r.budget;
  o.warmup = r.warmup;
  o.repeats = r.repeats;
  o.resume = r.resume;
  auto backend = rt::make_backend(r.backend, r.device);
  KernelDatabase db(db_options(r.db_path));
  Engine engine(*backend, &db);
  return tuning_to_json(tune(engine, db, spec, o)).dump();
}

namespace db {

std::string path(const std::string& db_path) { return db_path.empty() ? KernelDatabase::default_path() : db_path; }

std::string export_json(const std::string& db_path) { return KernelDatabase(db_options(db_path)).export_json().dump(); }

std::size_t import_json(const std::string& db_path, const std::string& text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::invalid_argument, std::string("not JSON: ") + e.what());
  }
  return KernelDatabase(db_options(db_path)).import_json(doc);
}

void clear(const std::string& db_path) { KernelDatabase(db_options(db_path)).clear(); }

Stats stats(const std::string& db_path) {
  KernelDatabase database(db_options(db_path));
  const auto s = database.stats();
  return {database.path(), database.persistent(), s.binaries, s.binary_bytes, s.tunings, s.devices};
}

}  // namespace db
}  // namespace kplay
