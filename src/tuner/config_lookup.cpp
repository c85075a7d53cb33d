// Config fallback: this device -> the same device model elsewhere -> the device model -> the
// static table; see config_lookup.hpp.
#include "config_lookup.hpp"

#include "codegen/config_validation.hpp"
#include "default_model.hpp"

namespace kplay {

ConfigChoice choose_config(KernelDatabase* db, const Engine& engine, const KernelSpec& spec, std::uint64_t n) {
  const rt::DeviceInfo& dev = engine.backend().info();
  ConfigChoice choice;
  std::string why;
  choice.config = device_default_config(spec, dev, n, &why);
  const bool modelled = dev.memory_bandwidth_gbps > 0;
  if (!db) {
    choice.source = why + "; no kernel database";
    return choice;
  }
  // FP8 output is not tuned of its own: it takes the tuning of the same gated kernel with the
  // inputs' dtype as output (the same loads, fewer bytes stored).
  KernelSpec tuned = spec;
  tuned.out = OutDtype::same;
  if (auto rec = db->find_tuning(engine.fingerprint(), dev.arch, dev.backend, tuned, n)) {
    // Another device of the same architecture may have another memory system (an H200 is an
    // sm_90 like the H100, with 1.4x the bandwidth): its tuning is used only for a device of the
    // same name (which names the memory: "H100 80GB HBM3"), or when the model cannot run.
    const bool same_device = rec->match == "device" || rec->device_name == dev.name;
    if (same_device || !modelled) {
      choice.config = rec->best;
      const std::string where =
          rec->match == "device" ? "this device" : "another " + dev.arch + " device (" + rec->device_name + ")";
      choice.source = std::string(spec.out != OutDtype::same
                                      ? "the " + std::string(to_string(spec.dtype)) + "-output kernel's tuning: "
                                      : "") +
                      "tuned on " + where + " for n = " + std::to_string(rec->n) + ", the nearest size bucket (2^" +
                      std::to_string(rec->size_bucket) + ") to n = " + std::to_string(n);
      return choice;
    }
    choice.source = why + "; the " + dev.arch + " tuning of " + rec->device_name +
                    " is not used: another device (run kplay autotune)";
    return choice;
  }
  choice.source = why + ": no tuning for this " + std::string(to_string(spec.dtype)) +
                  " kernel on this device or architecture in " + db->path() + " (run kplay autotune)";
  return choice;
}

}  // namespace kplay
