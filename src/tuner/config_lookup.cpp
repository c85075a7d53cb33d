// Config fallback: the user's database -> the shipped tunings -> the device model; see
// config_lookup.hpp.
#include "config_lookup.hpp"

#include "default_model.hpp"

namespace kplay {
namespace {

std::string bucket_text(const TuningRecord& r, std::uint64_t n) {
  return "for n = " + std::to_string(r.n) + ", the nearest size bucket (2^" + std::to_string(r.size_bucket) +
         ") to n = " + std::to_string(n);
}

ConfigChoice from_shipped(const TuningRecord& r, const rt::DeviceInfo& dev, std::uint64_t n, ShippedTunings& shipped) {
  const Provenance& p = r.provenance;
  ConfigChoice c;
  c.config = r.best;
  c.layer = "shipped";
  c.source = "shipped tuning for " + to_string(device_class(dev)) + " " + bucket_text(r, n) + "; measured on " + p.gpu +
             " (driver " + p.driver + ", " + p.compiler + ", kplay " + p.kplay + ") on " + p.date + " by `" +
             p.command + "` (" + shipped.file_for(dev) + ")";
  return c;
}

// FP8 output is not tuned of its own: it takes the tuning of the same gated kernel with the
// inputs' dtype as output (the same loads, fewer bytes stored).
KernelSpec tuned_as(const KernelSpec& spec) {
  KernelSpec t = spec;
  t.out = OutDtype::same;
  return t;
}

std::string fp8_note(const KernelSpec& spec) {
  return spec.out == OutDtype::same ? "" : "the " + std::string(to_string(spec.dtype)) + "-output kernel's tuning: ";
}

ConfigChoice from_model(const KernelSpec& spec, const rt::DeviceInfo& dev, std::uint64_t n) {
  ConfigChoice c;
  c.layer = "model";
  c.config = device_default_config(spec, dev, n, &c.source);
  return c;
}

}  // namespace

ConfigChoice untuned_config(const Engine& engine, const KernelSpec& spec, std::uint64_t n, ShippedTunings* shipped) {
  ShippedTunings& s = shipped ? *shipped : ShippedTunings::process();
  const rt::DeviceInfo& dev = engine.backend().info();
  std::string why_not;
  if (auto rec = s.find(dev, tuned_as(spec), n, &why_not)) return from_shipped(*rec, dev, n, s);
  ConfigChoice c = from_model(spec, dev, n);
  c.source += "; " + why_not;
  return c;
}

ConfigChoice choose_config(KernelDatabase* db, const Engine& engine, const KernelSpec& spec, std::uint64_t n,
                           ShippedTunings* shipped) {
  ShippedTunings& s = shipped ? *shipped : ShippedTunings::process();
  const rt::DeviceInfo& dev = engine.backend().info();
  std::string user = "no kernel database";
  std::optional<TuningRecord> other_device;  // of the same architecture, another class
  if (db) {
    user = "no tuning of this " + std::string(to_string(spec.dtype)) + " kernel for this device in " + db->path() +
           " (run kplay autotune)";
    if (auto rec = db->find_tuning(engine.fingerprint(), dev.arch, dev.backend, tuned_as(spec), n)) {
      // A device of another name may have another memory system (one architecture has several):
      // its tuning serves only where the model cannot run (next).
      if (rec->match == "device" || rec->device_name == dev.name) {
        ConfigChoice c;
        c.config = rec->best;
        c.layer = "user";
        c.source = fp8_note(spec) +
                   (rec->match == "device" ? "tuned on this device " : "tuned on another " + dev.name + " ") +
                   bucket_text(*rec, n) + " (" + db->path() + ")";
        return c;
      }
      user = "the " + dev.arch + " tuning of " + rec->device_name + " in " + db->path() +
             " is not used: another device (run kplay autotune)";
      other_device = std::move(rec);
    }
  }
  std::string why_not;
  if (auto rec = s.find(dev, tuned_as(spec), n, &why_not)) return from_shipped(*rec, dev, n, s);
  if (other_device && dev.memory_bandwidth_gbps <= 0) {
    ConfigChoice c;
    c.config = other_device->best;
    c.layer = "user";
    c.source = "tuned on another " + dev.arch + " device (" + other_device->device_name + ") " +
               bucket_text(*other_device, n) + " (" + db->path() + "; this device reports no bandwidth to model)";
    return c;
  }
  ConfigChoice c = from_model(spec, dev, n);
  c.source += "; " + user + "; " + why_not;
  return c;
}

}  // namespace kplay
