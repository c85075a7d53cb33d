// Config fallback: the user's database -> the shipped tunings -> the device model; see
// config_lookup.hpp.
#include "config_lookup.hpp"

#include <optional>
#include <vector>

#include "codegen/config_validation.hpp"
#include "codegen/row_codegen.hpp"
#include "default_model.hpp"
#include "engine/launch_geometry.hpp"
#include "kplay/error.hpp"
#include "row_defaults.hpp"
#include "spec/activations.hpp"

namespace kplay {
namespace {

std::string bucket_text(const TuningRecord& r, std::uint64_t n) {
  return "for n = " + std::to_string(r.n) + ", the nearest size bucket (2^" + std::to_string(r.size_bucket) +
         ") to n = " + std::to_string(n);
}

// What a served record was tuned for, where that is not `spec` itself: the FP8 kernel's
// inputs'-dtype output, the tier's exact kernel.
std::string borrowed_note(const KernelSpec& spec, const TuningRecord& rec) {
  std::string note;
  if (spec.out != OutDtype::same) note += "the " + std::string(to_string(spec.dtype)) + "-output kernel's tuning: ";
  const ResolvedActivation a = resolve_activation(spec.activation);
  if (a.torch_tier() && !a.torch_tier_kernel(spec.direction))
    note += "the tuning of '" + a.exact_canonical() + "' (accuracy=torch changes the forward alone): ";
  else if (a.torch_tier() && resolve_activation(rec.spec.activation).canonical != a.canonical)
    note += "the tuning of '" + a.exact_canonical() + "' (none of its own): ";
  return note;
}

ConfigChoice from_shipped(const KernelSpec& spec, const TuningRecord& r, const rt::DeviceInfo& dev, std::uint64_t n,
                          ShippedTunings& shipped) {
  const Provenance& p = r.provenance;
  ConfigChoice c;
  c.config = r.best;
  c.layer = "shipped";
  c.source = borrowed_note(spec, r) + "shipped tuning for " + to_string(device_class(dev)) + " " + bucket_text(r, n) +
             "; measured on " + p.gpu + " (driver " + p.driver + ", " + p.compiler + ", kplay " + p.kplay + ") on " +
             p.date + " by `" + p.command + "` (" + shipped.file_for(dev) + ")";
  return c;
}

// The specs whose tunings serve `spec`, in order. FP8 output is not tuned of its own: it takes
// the tuning of the same gated kernel with the inputs' dtype as output (the same loads, fewer
// bytes stored). The torch accuracy tier takes its own where one is stored, else the exact
// kernel's (the same loads and stores, less math: at one wave the tier of tanh and hardswish is
// fastest with two vectors a thread where the exact kernel takes one, docs/benchmarks.md). Where
// the tier has no backward kernel of its own, its backward is the exact kernel, and takes the
// exact text's alone (tuning_spec). A row activation's tier kernel borrows nothing: it keeps float
// terms where the exact kernel keeps doubles, so that its registers hold twice the vectors, and the
// row model gives it its own layout (row_defaults.cpp).
std::vector<KernelSpec> tuned_as(const KernelSpec& spec) {
  KernelSpec t = tuning_spec(spec);  // a tier's backward without a kernel of its own: the exact text alone
  t.out = OutDtype::same;
  std::vector<KernelSpec> out{t};
  if (const ResolvedActivation a = resolve_activation(spec.activation);
      a.torch_tier() && !(a.is_row() && a.torch_tier_kernel(spec.direction))) {
    t.activation = a.exact_canonical();
    out.push_back(t);
  }
  return out;
}

std::optional<TuningRecord> find_shipped(ShippedTunings& s, const rt::DeviceInfo& dev, const KernelSpec& spec,
                                         std::uint64_t n, std::string* why_not) {
  for (const KernelSpec& t : tuned_as(spec))
    if (auto rec = s.find(dev, t, n, why_not)) return rec;
  return std::nullopt;
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
  if (auto rec = find_shipped(s, dev, spec, n, &why_not)) return from_shipped(spec, *rec, dev, n, s);
  ConfigChoice c = from_model(spec, dev, n);
  c.source += "; " + why_not;
  return c;
}

namespace {
// The user's and the shipped layers of choose_config; nullopt where neither serves, with *why_not
// saying why.
std::optional<ConfigChoice> stored_config(KernelDatabase* db, const Engine& engine, const KernelSpec& spec,
                                          std::uint64_t n, ShippedTunings& s, std::string* why_not) {
  const rt::DeviceInfo& dev = engine.backend().info();
  std::string user = "no kernel database";
  std::optional<TuningRecord> other_device;  // of the same architecture, another class
  if (db) {
    user = "no tuning of this " + std::string(to_string(spec.dtype)) + " kernel for this device in " + db->path() +
           " (run kplay autotune)";
    std::optional<TuningRecord> rec;
    for (const KernelSpec& t : tuned_as(spec))
      if (!rec) rec = db->find_tuning(engine.fingerprint(), dev.arch, dev.backend, t, n);
    if (rec) {
      // A device of another name may have another memory system (one architecture has several):
      // its tuning serves only where the model cannot run (next).
      if (rec->match == "device" || rec->device_name == dev.name) {
        ConfigChoice c;
        c.config = rec->best;
        c.layer = "user";
        c.source = borrowed_note(spec, *rec) +
                   (rec->match == "device" ? "tuned on this device " : "tuned on another " + dev.name + " ") +
                   bucket_text(*rec, n) + " (" + db->path() + ")";
        return c;
      }
      user = "the " + dev.arch + " tuning of " + rec->device_name + " in " + db->path() +
             " is not used: another device (run kplay autotune)";
      other_device = std::move(rec);
    }
  }
  std::string shipped_why;
  if (auto rec = find_shipped(s, dev, spec, n, &shipped_why)) return from_shipped(spec, *rec, dev, n, s);
  if (other_device && dev.memory_bandwidth_gbps <= 0) {
    ConfigChoice c;
    c.config = other_device->best;
    c.layer = "user";
    c.source = "tuned on another " + dev.arch + " device (" + other_device->device_name + ") " +
               bucket_text(*other_device, n) + " (" + db->path() + "; this device reports no bandwidth to model)";
    return c;
  }
  *why_not = user + "; " + shipped_why;
  return std::nullopt;
}
}  // namespace

ConfigChoice choose_config(KernelDatabase* db, const Engine& engine, const KernelSpec& spec, std::uint64_t n,
                           ShippedTunings* shipped) {
  ShippedTunings& s = shipped ? *shipped : ShippedTunings::process();
  std::string why_not;
  if (auto c = stored_config(db, engine, spec, n, s, &why_not)) return *c;
  ConfigChoice c = from_model(spec, engine.backend().info(), n);
  c.source += "; " + why_not;
  return c;
}

ConfigChoice choose_row_config(KernelDatabase* db, const Engine& engine, const KernelSpec& spec, std::uint64_t rows,
                               std::uint64_t cols, ShippedTunings* shipped) {
  ShippedTunings& s = shipped ? *shipped : ShippedTunings::process();
  const rt::TargetLimits& limits = engine.backend().limits();
  std::string why_not;
  if (auto c = stored_config(db, engine, spec, rows * cols, s, &why_not)) {
    // A tuning is stored by size bucket, which rows of any length share, and a registers or shared
    // config holds rows up to a length: one tuned for shorter rows than these cannot run them.
    // Nor is one tuned for rows twice as long or longer kept: it would leave more than half of
    // each row's threads idle where the default sizes the group to the row. An online or cluster
    // config holds any row, but one whose blocks would have fewer vectors of the row (of their
    // slice, across a cluster) than half their threads was tuned for far longer rows and leaves
    // most threads idle on these (a cluster of 2 tuned at 32768 bfloat16 columns ran rows of 1024
    // at 8 % of copy): the tuner proposes none such for these rows, and the lookup keeps none.
    try {
      const KernelConfig resolved = resolve_config(spec, c->config, limits);
      row_launch_dims(spec, resolved, rows, cols, limits);
      const std::uint64_t capacity = row_capacity(resolved);
      const std::uint64_t vecs = (cols + resolved.vec - 1) / resolved.vec;
      const std::uint64_t per_block = (vecs + row_cluster(resolved) - 1) / row_cluster(resolved);
      const bool streaming_idle =
          capacity == 0 && 2 * per_block < static_cast<std::uint64_t>(row_group_threads(resolved));
      if ((capacity == 0 && !streaming_idle) || (capacity != 0 && capacity < 2 * cols)) return *c;
      why_not = "the " + c->layer + " tuning (" + c->source + ") " +
                (capacity ? "holds rows of up to " + std::to_string(capacity) + " elements: rows"
                          : "gives each block " + std::to_string(per_block) + " vectors of a row: rows") +
                " of " + std::to_string(cols) + " would leave more than half of its threads idle";
    } catch (const Error& e) {
      if (e.code() != ErrorCode::invalid_config) throw;  // e.g. a dtype the device cannot do: no config can
      why_not = "the " + c->layer + " tuning (" + c->source + ") does not hold these rows: " + e.what();
    }
  }
  ConfigChoice c;
  c.layer = "model";
  c.config = default_row_config(spec, cols, limits);
  c.source = "the row kernel's default for rows of " + std::to_string(cols) + " elements on this device; " + why_not;
  return c;
}

}  // namespace kplay
