// Which configuration to use when the caller gives none, layer by layer (docs/design.md, "Shipped
// tunings"):
//   user     the user's kernel database: the tuning of this device for the nearest size bucket,
//            else one of another device of the same class (name and architecture);
//   shipped  the tunings shipped with kplay for this device's class (database/shipped_tunings.hpp);
//   model    the device model (default_model.hpp), or, where the device reports no memory
//            bandwidth, the static table, which also takes a user tuning of another device of the
//            same architecture first.
// Never tunes.
#pragma once
#include <string>

#include "database/kernel_database.hpp"
#include "database/shipped_tunings.hpp"
#include "engine/engine.hpp"

namespace kplay {

struct ConfigChoice {
  KernelConfig config;
  std::string layer;   // "user", "shipped" or "model"
  std::string source;  // what served it, and why the layers above did not
};

// `shipped`: nullptr is the process's own (ShippedTunings::process()).
ConfigChoice choose_config(KernelDatabase* db, const Engine& engine, const KernelSpec& spec, std::uint64_t n,
                           ShippedTunings* shipped = nullptr);

// The config of a row activation (the softmax family) for `rows` rows of `cols` elements: the
// user's and the shipped layers as above (keyed by rows x cols elements) where their config holds
// rows of this length, else the row kernel's default for the row length (row_defaults.hpp).
ConfigChoice choose_row_config(KernelDatabase* db, const Engine& engine, const KernelSpec& spec, std::uint64_t rows,
                               std::uint64_t cols, ShippedTunings* shipped = nullptr);

// What a device serves without the user's database: the shipped tuning, else the model. The
// tuner's baseline, which every tuning must match or beat.
ConfigChoice untuned_config(const Engine& engine, const KernelSpec& spec, std::uint64_t n,
                            ShippedTunings* shipped = nullptr);

}  // namespace kplay
