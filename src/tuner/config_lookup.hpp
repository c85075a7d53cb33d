// Which configuration to use when the caller gives none: the tuned one for the nearest size
// bucket on this device, else one tuned on another device of the same name and architecture,
// else the device model's default (src/tuner/default_model.hpp), else the static table (devices
// that report no bandwidth, which also accept any same-architecture tuning). Never tunes.
#pragma once
#include <string>

#include "database/kernel_database.hpp"
#include "engine/engine.hpp"

namespace kplay {

struct ConfigChoice {
  KernelConfig config;
  std::string source;  // "tuned on this device for n = 1048576 (2^20)", "built-in default (...)"
};

ConfigChoice choose_config(KernelDatabase* db, const Engine& engine, const KernelSpec& spec, std::uint64_t n);

}  // namespace kplay
