// Shared flag definitions; see config_flags.hpp.
#include "config_flags.hpp"

#include <cstdio>
#include <sstream>

#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activation_text.hpp"
#include "spec/activations.hpp"
#include "tuner/row_defaults.hpp"

namespace kplay::cli {

void add_config_flags(CLI::App& app, ConfigFlags& f, bool several, KnobDefaults defaults) {
  app.add_option("--act", f.activations,
                 std::string("activation") +
                     (several ? "s, comma-separated, or all (gated(all): the gated form of each)" : "") +
                     " with parameters as in torch, e.g. leaky_relu(negative_slope=0.2) (float32 at torch's accuracy "
                     "and cost: silu(accuracy=torch), docs/accuracy.md), or a snippet file ./my_act.h, or "
                     "the gated form of any: gated(silu) is out = silu(a) * b (" +
                     activation_names() + ")")
      ->capture_default_str();
  app.add_option("--dtype", f.dtype, "element type: f32, f16, bf16, f64")->capture_default_str();
  app.add_option("--direction", f.direction, "forward or backward")->capture_default_str();
  app.add_option("--saved", f.saved, "backward: the saved tensor, input or output")->capture_default_str();
  app.add_option("--out-dtype", f.out_dtype,
                 "output element type: same, or f8e4m3 / f8e5m2 (FP8, float8_e4m3fn / float8_e5m2: the forward of a "
                 "gated activation on CUDA, sm_89 and newer)")
      ->capture_default_str();
  app.add_option("--backend", f.backend, "cuda, opencl, or auto: CUDA where there is a CUDA device, else OpenCL")
      ->capture_default_str();
  app.add_option("--device", f.device, "device index within the backend")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  // The knobs: with tuned defaults, no fixed value to show (the footer says where they come from).
  const bool tuned = defaults == KnobDefaults::tuned;
  auto knob = [&](CLI::Option* o, bool flag = false) {
    if (!tuned && !flag) o->capture_default_str();
    if (defaults == KnobDefaults::searched) o->group("");  // still parsed, to be refused by name
  };
  const std::string from_layers = tuned ? " (default: from the tuning layers)" : "";
  knob(app.add_option("--vec", f.vec, "elements per vector access (0: widest within 16 bytes)" + from_layers));
  knob(app.add_option("--block", f.block, "threads per block: a power of two in 32..1024" + from_layers));
  knob(app.add_option("--per-thread", f.per_thread, "vectors per thread per chunk, 1..16" + from_layers));
  knob(app.add_flag("--fast-math", f.fast_math, "fast, less accurate math (its error is reported)"), true);
  knob(app.add_option("--grid", f.grid, "one-shot or grid-stride[:WAVES]" + from_layers));
  knob(app.add_option("--cache", f.cache, "cache hint: default or streaming" + from_layers));
  knob(app.add_flag("--general-kernel", f.general_kernel,
                    "always launch the general kernel, also where the flat one fits (contiguous, aligned)"),
       true);
  knob(app.add_flag("--late-gradient", f.late_gradient,
                    "backward: load the gradient after the saved tensor's math instead of with it"),
       true);
  knob(app.add_option("--row", f.row,
                      "row activations (softmax, log_softmax, softmin): how a row is held: registers, shared, "
                      "online (two passes, any row) or cluster (CUDA sm_90: split across a thread-block cluster)" +
                          from_layers));
  knob(app.add_option("--cluster", f.cluster,
                      "--row cluster, registers and online (CUDA sm_90): blocks per row, a power of two in 1..16, each "
                      "taking a slice of it (--row cluster --cluster 1: with --grid grid-stride, a block a row)" +
                          from_layers)
           ->check(CLI::Range(0, 1024)));
  knob(app.add_option("--row-threads", f.row_threads,
                      "row activations: threads per row, a power of two up to --block (0: the block); short rows "
                      "share a block" +
                          from_layers)
           ->check(CLI::Range(0, 1024)));
  knob(app.add_flag("--recompute-terms", f.recompute_terms,
                    "--row cluster --grid grid-stride, float32 softmax and softmin forward: compute each term again "
                    "for its result instead of keeping it in shared memory (a second exp an element, a byte an "
                    "element less shared memory)"),
       true);
  if (tuned)
    app.footer(
        "Config knobs (--vec, --block, --per-thread, --fast-math, --grid, --cache, --general-kernel, "
        "--late-gradient, --row, --cluster, --row-threads, --recompute-terms): when none is given, the config comes "
        "from the tuning layers, the first that has one: "
        "your kernel database (kplay autotune), the tunings shipped for the device, the device model (README, "
        "\"How the default is chosen\"); the output's layer line says which. Once any knob is given, those not "
        "given take the built-in defaults (" +
        to_string(KernelConfig{}) + ").\n");
}

CLI::Validator whole_number() {
  return CLI::Validator(
      [](std::string& text) {
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return std::string("'" + text + "' is not a whole number (decimal digits, no sign)");
        // Without its leading zeros (CLI11 would read 010 as octal); a number above 2^64 - 1 CLI11
        // would clamp to it.
        const std::size_t first = text.find_first_not_of('0');
        const std::string digits = first == std::string::npos ? "0" : text.substr(first);
        if (digits.size() > 20 || (digits.size() == 20 && digits > "18446744073709551615"))
          return std::string("'" + text + "' is more than 18446744073709551615 (2^64 - 1)");
        text = digits;
        return std::string();
      },
      "UINT");
}

RowDims row_dims(const std::vector<std::uint64_t>& dims, const std::string& dim_text) {
  const auto rank = static_cast<long long>(dims.size());
  long long d = rank - 1;
  if (!dim_text.empty()) {
    try {
      std::size_t used = 0;
      d = std::stoll(dim_text, &used);
      if (used != dim_text.size()) throw std::invalid_argument(dim_text);
    } catch (const std::exception&) {
      throw Error(ErrorCode::invalid_argument, "--dim '" + dim_text + "': expected a whole number");
    }
    if (d < -rank || d >= rank)
      throw Error(ErrorCode::invalid_argument, "--dim " + dim_text + ": the shape has " + std::to_string(rank) +
                                                   " dimension(s), so dim is in " + std::to_string(-rank) + ".." +
                                                   std::to_string(rank - 1));
    if (d < 0) d += rank;
  }
  RowDims r;
  if (dims.empty()) return r;
  std::uint64_t n = 1;
  for (std::uint64_t v : dims) n *= v;
  r.cols = dims[static_cast<std::size_t>(d)];
  for (std::size_t k = static_cast<std::size_t>(d) + 1; k < dims.size(); ++k) r.inner *= dims[k];
  r.rows = r.cols ? n / r.cols : 0;
  return r;
}

void check_elements(std::uint64_t n, const char* flag) {
  if (n == 0)
    throw Error(ErrorCode::invalid_argument,
                std::string(flag) + " 0: there is nothing to do (a problem needs at least 1 element)");
  if (n > kMaxElements)
    throw Error(ErrorCode::invalid_argument,
                std::string(flag) + " " + std::to_string(n) + ": at most 2^48 elements (281474976710656)");
}

void check_fits_device(const rt::DeviceInfo& dev, const KernelSpec& spec, std::uint64_t n, std::uint64_t sets,
                       const char* flag) {
  const std::uint64_t buffer = n * dtype_size(spec.dtype);
  // Gated: n counts a and b together, so a set is a [rows, 2d] input and outputs of half that
  // (both gradients: as much), the incoming gradient for backward, and the copy's source and
  // scratch (the kernel's bytes).
  const bool gated = resolve_activation(spec.activation).gated, backward = spec.direction == Direction::backward;
  const std::uint64_t buffers = gated ? sets * (backward ? 3 : 2) + 2 : sets * (backward ? 3 : 2) + 1;
  const std::uint64_t alloc = dev.max_alloc_bytes ? dev.max_alloc_bytes : dev.memory_bytes;
  auto gib = [](std::uint64_t b) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(b) / (1ull << 30));
    return std::string(text);
  };
  const std::string what = std::string(flag) + " " + std::to_string(n) + " (" + to_string(spec) + "): ";
  if (alloc && buffer > alloc)
    throw Error(ErrorCode::invalid_argument, what + "a buffer of " + gib(buffer) + " is more than the device " +
                                                 dev.name + " allocates at once (" + gib(alloc) + ")");
  if (dev.memory_bytes && buffer > dev.memory_bytes / buffers)
    throw Error(ErrorCode::invalid_argument, what + std::to_string(buffers) + " buffers of " + gib(buffer) +
                                                 " do not fit the device's " + gib(dev.memory_bytes));
}

void add_timeout_flag(CLI::App& app, double& seconds) {
  app.add_option("--timeout", seconds,
                 "seconds a kernel may keep kplay waiting before it ends with exit status 4 (default: 60 s plus "
                 "1 s per 25 MB a launch moves; 0: wait forever)");
}

double timeout_seconds(const CLI::App& app, double flag_seconds, std::uint64_t bytes_per_launch) {
  constexpr double kMaxSeconds = 7 * 24 * 3600;
  if (app.count("--timeout") > 0) {
    if (!(flag_seconds >= 0 && flag_seconds <= kMaxSeconds))  // NaN fails too
      throw Error(ErrorCode::invalid_argument, "--timeout " + app.get_option("--timeout")->as<std::string>() +
                                                   ": expected seconds from 0 (no timeout) to 604800 (a week)");
    return flag_seconds;
  }
  return 60.0 + static_cast<double>(bytes_per_launch) / 25e6;
}

std::uint64_t launch_bytes(const KernelSpec& spec, std::uint64_t n) {
  if (resolve_activation(spec.activation).gated)  // n elements of a and b, half as many outputs
    return spec.direction == Direction::backward ? n * dtype_size(spec.dtype) * 5 / 2
                                                 : n * dtype_size(spec.dtype) + n / 2 * out_size(spec);
  return n * dtype_size(spec.dtype) * (spec.direction == Direction::backward ? 3 : 2);
}

std::vector<std::string> ConfigFlags::activation_list() const {
  // Commas inside parentheses separate parameters, not activations; "all" is every built-in.
  std::vector<std::string> out;
  for (const auto& item : split_activation_list(activations)) {
    if (item == "all") {
      for (const auto& a : all_activation_texts()) out.push_back(resolve_activation(a).canonical);
    } else if (item == "gated(all)") {
      for (const auto& a : all_activation_texts()) out.push_back(resolve_activation("gated(" + a + ")").canonical);
    } else {
      out.push_back(resolve_activation(item).canonical);  // bad text fails before any work
    }
  }
  if (out.empty()) throw Error(ErrorCode::invalid_argument, "--act: no activation given");
  return out;
}

KernelSpec ConfigFlags::spec(const std::string& activation) const {
  KernelSpec s;
  s.activation = resolve_activation(activation).canonical;
  s.dtype = parse_dtype(dtype);
  s.direction = parse_direction(direction);
  s.saved = parse_saved(saved);
  s.out = parse_out_dtype(out_dtype);
  // A row activation's backward takes the saved output (torch saves it); there is no other.
  if (resolve_activation(activation).is_row()) s.saved = Saved::output;
  return s;
}

KernelConfig ConfigFlags::config() const {
  KernelConfig c;
  c.vec = vec;
  c.block = block;
  c.per_thread = per_thread;
  c.fast_math = fast_math;
  parse_grid_policy(grid, c.grid, c.waves);
  c.cache = parse_cache_hint(cache);
  c.flat = !general_kernel;
  c.late_gradient = late_gradient;
  if (!row.empty()) c.row = parse_row_strategy(row);
  c.cluster = cluster;
  c.row_threads = row_threads;
  c.recompute_terms = recompute_terms;
  return c;
}

TargetLimits generic_limits(const std::string& backend) {
  TargetLimits lim;
  lim.backend = backend;
  if (backend == "opencl") {
    lim.cache_hints = false;
  } else if (backend == "cuda") {
    lim.fp8 = true;        // the device's own limits say whether it has FP8 (sm_89 and newer)
    lim.max_cluster = 16;  // and whether it has clusters (sm_90 and newer)
  } else {
    throw Error(ErrorCode::invalid_argument, "unknown backend '" + backend + "' (expected cuda or opencl)");
  }
  return lim;
}

std::vector<KernelSpec> buildable_specs(std::vector<KernelSpec> specs, const KernelConfig& config,
                                        const TargetLimits& limits) {
  if (specs.size() <= 1) {
    for (const auto& s : specs) resolve_config(s, config, limits);
    return specs;
  }
  std::vector<KernelSpec> kept;
  std::string last_reason;
  for (auto& s : specs) {
    std::string why = spec_unsupported(s, limits);
    if (why.empty()) {
      kept.push_back(std::move(s));
      continue;
    }
    std::fprintf(stderr, "skipping %s: %s\n", to_string(s).c_str(), why.c_str());
    last_reason = std::move(why);
  }
  if (kept.empty()) throw Error(ErrorCode::unsupported, "nothing left to do: " + last_reason);
  for (const auto& s : kept) resolve_config(s, config, limits);
  return kept;
}

Dialect dialect_for(const std::string& backend) {
  generic_limits(backend);  // refuses unknown names
  return rt::dialect_of(backend);
}

void ConfigFlags::resolve_backend(std::FILE* report) {
  if (backend != "auto") return;
  std::string why;
  backend = rt::choose_backend(&why);
  std::fprintf(report, "backend: %s (--backend auto%s)\n", backend.c_str(), why.empty() ? "" : ("; " + why).c_str());
}

ConfigChoice ConfigFlags::choose(const CLI::App& app, KernelDatabase* db, const Engine& engine, const KernelSpec& spec,
                                 std::uint64_t n, std::uint64_t rows, std::uint64_t cols, bool strided) const {
  const bool row = resolve_activation(spec.activation).is_row();
  strided = strided && row;
  if (row && !knobs_given(app)) {
    if (!strided) return choose_row_config(db, engine, spec, rows, cols);
    ConfigChoice c;
    c.config = strided_row_config(spec, cols);
    c.layer = "strided default";
    c.source = "strided_row_config (tuner/row_defaults.hpp), not tuned";
    return c;
  }
  if (!knobs_given(app)) return choose_config(db, engine, spec, n);
  ConfigChoice c;
  c.config = config();
  c.layer = "command line";
  c.source = "the knobs given; those not given at the built-in defaults";
  if (strided && !app.count("--vec")) c.config.vec = 1;
  if (strided && !app.count("--row-threads")) c.config.row_threads = 1;
  return c;
}

bool ConfigFlags::knobs_given(const CLI::App& app) const {
  for (const char* name : {"--vec", "--block", "--per-thread", "--fast-math", "--grid", "--cache", "--general-kernel",
                           "--late-gradient", "--row", "--cluster", "--row-threads"})
    if (app.count(name) > 0) return true;
  return false;
}

}  // namespace kplay::cli
