// kplay/admin.hpp — devices, the activation registry, tuning and the kernel database, for
// programs that manage kplay rather than launch through it (the Python package, tools).
//
// Database paths: "" means the default ($KPLAY_DB, else $XDG_CACHE_HOME/kplay/kernels.db, else
// ~/.cache/kplay/kernels.db). Errors are kplay::Error (kplay/error.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kplay/types.hpp"

namespace kplay {

struct DeviceDescription {
  std::string backend;  // "cuda", "opencl"
  int index = 0;        // within the backend
  std::string name, platform, arch, driver_version, compiler_version;
  std::uint64_t memory_bytes = 0;
  int compute_units = 0;
  int max_block = 0;
  std::string compile_target;  // "sm_90 cubin", "compute_90 PTX", ...
  std::string note;            // anything the user should know (e.g. a PTX fallback)
};

// One entry per backend kplay knows, built or not; never throws.
struct BackendStatus {
  std::string backend;
  bool available = false;
  std::string status;  // why there are no devices, when there are none
  std::vector<DeviceDescription> devices;
};
std::vector<BackendStatus> backends();

// A built-in activation as the registry (src/spec/activations.cpp) describes it.
struct ParameterDescription {
  std::string name;                  // torch's name for it ("negative_slope")
  double default_value = 0;          // NaN when required
  std::vector<std::string> choices;  // a choice parameter's words; default_value is the index
};
struct ActivationDescription {
  std::string name;  // kplay's name ("leaky_relu")
  std::vector<ParameterDescription> parameters;
  bool has_backward = false;
  // Autograd's default saved tensor: true where the derivative follows exactly from the output,
  // or where torch saves the output too (sigmoid, tanh).
  bool saves_output = false;
  std::string torch_class;     // torch.nn's class ("LeakyReLU"), "" where torch has none
  bool torch_inplace = false;  // torch's module and function take inplace=
};
std::vector<ActivationDescription> builtin_activations();

struct TuneRequest {
  std::string activation;
  std::uint64_t n = 0;
  Dtype dtype = Dtype::f32;
  Direction direction = Direction::forward;
  Saved saved = Saved::input;
  std::string backend = "auto";  // "cuda", "opencl", or "auto": CUDA where it has a device, else OpenCL
  int device = 0;
  std::string strategy = "exhaustive";  // as `kplay autotune --strategy`
  int budget = 40, warmup = 2, repeats = 7;
  bool resume = true;
  std::string db_path;
};
// Tunes and stores the result; returns the tuning record as JSON (the `kplay db export` form).
// Numbers outside kplay/limits.hpp's bounds (those of `kplay autotune`'s flags) are refused with
// Error(invalid_argument) naming the field.
std::string autotune(const TuneRequest& request);

namespace db {
std::string path(const std::string& db_path);
std::string export_json(const std::string& db_path);
std::size_t import_json(const std::string& db_path, const std::string& text);  // records written
void clear(const std::string& db_path);
struct Stats {
  std::string path;
  bool persistent = false;  // false: the file could not be used and kplay runs from memory
  std::uint64_t binaries = 0, binary_bytes = 0, tunings = 0, devices = 0;
};
Stats stats(const std::string& db_path);
}  // namespace db

}  // namespace kplay
