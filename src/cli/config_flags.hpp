// Flags shared by every kplay command that builds a kernel: what to compute (--act, --dtype,
// --direction, --saved) and the config knobs (--vec, --block, --per-thread, --fast-math, --grid,
// --cache), plus where (--backend, --device).
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "kplay/limits.hpp"
#include "kplay/types.hpp"
#include "runtime/backend.hpp"
#include "tuner/config_lookup.hpp"

namespace kplay::cli {

struct ConfigFlags {
  std::string activations = "selu";  // comma-separated for commands that take several
  std::string dtype = "f32";
  std::string direction = "forward";
  std::string saved = "input";
  std::string out_dtype = "same";
  std::string backend = "auto";  // resolve_backend() turns "auto" into cuda or opencl
  int device = 0;
  int vec = KernelConfig{}.vec;  // the knobs not given: the built-in defaults
  int block = KernelConfig{}.block;
  int per_thread = KernelConfig{}.per_thread;
  bool fast_math = false;
  std::string grid = "one-shot";
  std::string cache = "default";
  bool general_kernel = false;
  bool late_gradient = false;
  bool recompute_terms = false;
  std::string row;  // row kernels: registers, shared, online, cluster ("": the default)
  int cluster = 0;
  int row_threads = 0;

  std::vector<std::string> activation_list() const;
  KernelSpec spec(const std::string& activation) const;
  KernelConfig config() const;
  // Whether the user set any knob on the command line (vs. defaults).
  bool knobs_given(const CLI::App& app) const;
  // --backend auto: CUDA where there is a CUDA device, else OpenCL (rt::choose_backend), said on
  // `report` (stdout; emit's is stderr, its stdout being the kernel). Throws Error(no_device)
  // where no backend has a device.
  void resolve_backend(std::FILE* report = stdout);
  // The config spec launches with over `rows` rows of `cols` elements (n elements in all): the
  // knobs given (those not given at their built-in defaults), else the tuning layers' for n
  // (choose_config: db, shipped tunings, model), or for a row activation its rows' (choose_row_config)
  // and over strided rows (a dim that is not the last) strided_row_config. Strided rows take vectors
  // of one element and a thread a row unless --vec and --row-threads are given. run, bench and emit
  // all choose here, so that emit prints what the other two launch.
  ConfigChoice choose(const CLI::App& app, KernelDatabase* db, const Engine& engine, const KernelSpec& spec,
                      std::uint64_t n, std::uint64_t rows, std::uint64_t cols, bool strided) const;
};

// Where a command takes the knobs not given: fixed (the built-in defaults, shown in --help: check),
// tuned (the tuning layers when no knob is given: run, bench, emit; --help says so instead of a
// default that does not hold) or searched (autotune, which refuses knobs: hidden from --help).
enum class KnobDefaults { fixed, tuned, searched };

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

void add_config_flags(CLI::App& app, ConfigFlags& flags, bool several_activations, KnobDefaults defaults);

// Numbers from the command line (docs: every one is range-checked, exit 2 naming the flag).
// CLI11 reads "-1" into an unsigned option as 2^64 - 1 (strtoull) and "010" as octal: options of
// unsigned type take this validator, which accepts decimal digits only.
CLI::Validator whole_number();
// Problem sizes as typed: each must be 1 .. kMaxElements (kplay/limits.hpp); `flag` names the option in the message.
void check_elements(std::uint64_t n, const char* flag);
// Refuses (Error(invalid_argument) naming `flag`) a problem of n elements of spec whose buffers
// (`sets` sets of input, output, saved tensor and the copy's scratch) do not fit the device: each
// buffer in one allocation, all of them in its memory. `kplay run` slices instead.
void check_fits_device(const rt::DeviceInfo& dev, const KernelSpec& spec, std::uint64_t n, std::uint64_t sets,
                       const char* flag);
// --timeout SECONDS for the commands that run kernels (run, check, bench, autotune): a wait on
// the device longer than that ends the process with exit status 4 (util/watchdog.hpp).
void add_timeout_flag(CLI::App& app, double& seconds);
// The timeout for launches that move at most `bytes_per_launch` each: the flag's value when
// given (0 turns the watchdog off; anything but 0 .. 604800 is refused, naming the flag), else
// 60 s plus 1 s per 25 MB, which no honest kernel comes near (a CPU's OpenCL moves GB/s).
double timeout_seconds(const CLI::App& app, double flag_seconds, std::uint64_t bytes_per_launch);
// Bytes one launch of spec on n elements moves: input(s) and output.
std::uint64_t launch_bytes(const KernelSpec& spec, std::uint64_t n);

// A row activation's rows in a shape: `cols` elements along dim, `inner` apart (the product of the
// dimensions after it: 1 for the last, else strided rows), rows = elements / cols of them.
struct RowDims {
  std::uint64_t rows = 0, cols = 0, inner = 1;
};
// --dim TEXT of `dims` as torch takes dim (negative counts from the end; empty text: the last),
// Error(invalid_argument) naming --dim for anything else.
RowDims row_dims(const std::vector<std::uint64_t>& dims, const std::string& dim_text);
}  // namespace kplay::cli
