// Turns a user's KernelConfig into a complete, checked one for a spec and a target, or refuses it
// with a message that names the knob (as spelled on the command line) and the allowed values.
#pragma once
#include <string>
#include <vector>

#include "kplay/types.hpp"
#include "runtime/target.hpp"

namespace kplay {

using rt::TargetLimits;

// Why the spec itself cannot be built on the target, whatever the config: no backward pass, no
// derivative from the saved output, or a dtype the backend lacks. Empty when it can. Commands
// given a list skip such specs (cli/config_flags.hpp); resolve_config throws with this message.
std::string spec_unsupported(const KernelSpec& spec, const TargetLimits& limits);

// Fills vec = 0 with the widest vector of at most 16 bytes, then checks every knob and the spec
// (activation known; saved output only where the activation's derivative follows from it).
// Throws Error(unsupported) with spec_unsupported's reason, else Error(invalid_config) or
// Error(invalid_argument) for a knob.
KernelConfig resolve_config(const KernelSpec& spec, const KernelConfig& config, const TargetLimits& limits);

// The built-in default when neither the caller nor the kernel database gives a config, from the
// H100 tuning tables in docs/benchmarks.md: 16-byte vectors and a one-shot grid; float32 in
// blocks of 128 (SELU 100.4 % of copy, 98.9 % at 256), others 256; one vector per thread for
// 32/64-bit types, four for 16-bit types, whose SELU needs more loads in flight to hide its math
// (99.5-99.9 % at 4, 83-92 % at 1).
KernelConfig default_config(const KernelSpec& spec);

constexpr int kMaxVectorBytes = 16;
constexpr int kMaxPerThread = 16;

}  // namespace kplay
