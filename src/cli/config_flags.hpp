// Flags shared by every kplay command that builds a kernel: what to compute (--act, --dtype,
// --direction, --saved) and the config knobs (--vec, --block, --per-thread, --fast-math, --grid,
// --cache), plus where (--backend, --device).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "kplay/types.hpp"

namespace kplay::cli {

struct ConfigFlags {
  std::string activations = "selu";  // comma-separated for commands that take several
  std::string dtype = "f32";
  std::string direction = "forward";
  std::string saved = "input";
  std::string backend = "auto";  // resolve_backend() turns "auto" into cuda or opencl
  int device = 0;
  int vec = 0;
  int block = 256;
  int per_thread = 1;
  bool fast_math = false;
  std::string grid = "one-shot";
  std::string cache = "default";
  bool general_kernel = false;
  bool late_gradient = false;

  std::vector<std::string> activation_list() const;
  KernelSpec spec(const std::string& activation) const;
  KernelConfig config() const;
  // Whether the user set any knob on the command line (vs. defaults).
  bool knobs_given(const CLI::App& app) const;
  // --backend auto: CUDA where there is a CUDA device, else OpenCL (rt::choose_backend), said on
  // stdout; `kplay emit`, which needs no device, takes cuda (with_device = false).
  void resolve_backend(bool with_device = true);
};

// Limits and dialect of a backend by name, without a device: for checking flags before any
// device work and for `kplay emit`. Throws Error(invalid_argument) for an unknown backend.
TargetLimits generic_limits(const std::string& backend);
Dialect dialect_for(const std::string& backend);

// The specs of a list that can be built with `config` on the backend, checked before any device
// work. In a list of several (--act all with --saved output, say), a spec that cannot exist
// whatever the config (spec_unsupported) is skipped with a line on stderr; a spec asked for alone
// is refused with that reason, and a list with none left throws Error(unsupported). Every kept
// spec then goes through resolve_config, which refuses a bad knob.
std::vector<KernelSpec> buildable_specs(std::vector<KernelSpec> specs, const KernelConfig& config,
                                        const TargetLimits& limits);

void add_config_flags(CLI::App& app, ConfigFlags& flags, bool several_activations);

}  // namespace kplay::cli
