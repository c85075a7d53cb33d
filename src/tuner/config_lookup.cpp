// Config fallback device -> architecture -> default; see config_lookup.hpp.
#include "config_lookup.hpp"

#include "../config_validation.hpp"

namespace kplay {

ConfigChoice choose_config(KernelDatabase* db, const Engine& engine, const KernelSpec& spec, std::uint64_t n) {
  ConfigChoice choice;
  choice.config = default_config(spec);
  if (db) {
    const rt::DeviceInfo& dev = engine.backend().info();
    if (auto rec = db->find_tuning(engine.fingerprint(), dev.arch, dev.backend, spec, n)) {
      choice.config = rec->best;
      const std::string where = rec->match == "device" ? "this device" : "another " + dev.arch + " device (" +
                                                                             rec->device_name + ")";
      choice.source = "tuned on " + where + " for n = " + std::to_string(rec->n) + ", the nearest size bucket (2^" +
                      std::to_string(rec->size_bucket) + ") to n = " + std::to_string(n);
      return choice;
    }
    choice.source = std::string("built-in default: no tuning for this ") + to_string(spec.dtype) +
                    " kernel on this device or architecture in " + db->path() + " (run kplay autotune)";
    return choice;
  }
  choice.source = "built-in default (no kernel database)";
  return choice;
}

}  // namespace kplay
