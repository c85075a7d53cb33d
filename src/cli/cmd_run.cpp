// `kplay run`: specialize, compile, launch on fresh random data, verify against the double
// reference, and time against a device-to-device copy of the same bytes in the same run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>

#include "check/benchmark.hpp"
#include "check/problem.hpp"
#include "codegen/config_validation.hpp"
#include "command.hpp"
#include "config_flags.hpp"
#include "engine/engine.hpp"
#include "engine/launch_geometry.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "tuner/config_lookup.hpp"
#include "util/size_parse.hpp"
#include "util/watchdog.hpp"
#include "watched_backend.hpp"

namespace kplay::cli {
namespace {

// The largest single allocation the device makes.
std::uint64_t alloc_limit(const rt::DeviceInfo& dev) {
  return dev.max_alloc_bytes ? dev.max_alloc_bytes : dev.memory_bytes;
}

// How many slices `n` elements of `spec` need so that each buffer of a slice (output, input,
// saved tensor, the copy's scratch) fits one allocation and all of them fit 90 % of the memory.
std::uint64_t slice_count(const rt::DeviceInfo& dev, const KernelSpec& spec, std::uint64_t n, std::uint64_t offset) {
  if (dev.memory_bytes == 0 || n == 0) return 1;
  const std::uint64_t esize = dtype_size(spec.dtype);
  const std::uint64_t spare = (kGuardElements + offset + 64) * esize;  // guards and offsets
  const std::uint64_t alloc = alloc_limit(dev) > spare ? alloc_limit(dev) - spare : 1;
  // In units of n elements: element-wise input, output, saved tensor and the copy's scratch; gated
  // [rows, 2d] inputs, outputs, the incoming gradient and the copy's source and scratch.
  const bool backward = spec.direction == Direction::backward;
  const std::uint64_t buffers = resolve_activation(spec.activation).gated ? (backward ? 5 : 3) : (backward ? 4 : 3);
  const auto room = static_cast<std::uint64_t>(0.9 * static_cast<double>(dev.memory_bytes)) / buffers;
  const std::uint64_t per_buffer = std::max<std::uint64_t>(std::min(alloc, room) / esize, 1);
  return (n + per_buffer - 1) / per_buffer;
}

// The most elements a buffer may start past its aligned allocation: misalignment needs fewer than
// a vector's 16 bytes; more only wastes memory the slicing must leave room for.
constexpr std::uint64_t kMaxOffset = 1u << 20;

std::uint64_t parse_offset(const std::string& text, const char* flag) {
  const std::uint64_t v = parse_count(text, flag);
  if (v > kMaxOffset)
    throw Error(ErrorCode::invalid_argument,
                std::string(flag) + " " + text + ": at most 2^20 (" + std::to_string(kMaxOffset) + ") elements");
  return v;
}

class RunCommand : public Command {
 public:
  explicit RunCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("run", "run, verify and time activation kernels on a device");
    add_config_flags(*app_, flags_, true, KnobDefaults::tuned);
    auto* n = app_->add_option("--n", n_text_, "number of elements: 1000000, 2^31, 2^31+5");
    auto* shape = app_->add_option("--shape", shape_text_,
                                   "shape, e.g. 4096x393216 (elements = product); for a gated activation the shape "
                                   "of its input [..., 2d], e.g. 4096x28672: 4096 rows of a (the first half, d = "
                                   "14336) and b (the second half), out = act(a) * b of 4096 x 14336");
    n->excludes(shape);
    app_->add_option("--in-offset", in_offset_text_, "elements the input starts past an aligned allocation (0..2^20)")
        ->capture_default_str();
    app_->add_option("--out-offset", out_offset_text_,
                     "elements the output starts past an aligned allocation (0..2^20)")
        ->capture_default_str();
    app_->add_flag("--in-place", in_place_,
                   "write the output over the input (gated: the output over a, the gradients over a and b)");
    app_->add_flag("--two-tensors", two_tensors_,
                   "gated: a and b (and a backward's gradients) in two tensors of [rows, d] instead of the halves "
                   "of one [rows, 2d]");
    app_->add_option("--pad", pad_text_,
                     "gated: elements each operand's row pitch has beyond its data (a slice of a wider tensor), "
                     "0..2^20; a gets PAD, b and the incoming gradient 2 PAD, the output PAD + 1 when PAD > 0")
        ->capture_default_str();
    app_->add_option("--scale", scale_, "FP8 output (--out-dtype f8e4m3|f8e5m2): out = fp8(act(a) * b / SCALE)")
        ->capture_default_str();
    app_->add_option("--channels", channels_text_,
                     "prelu: the weight's length, the shape's dim 1 (the default for two dimensions or more) or 1 "
                     "(one weight in all)");
    app_->add_option("--dim", dim_text_,
                     "row activations (softmax, log_softmax, softmin): the dimension of --shape the function runs "
                     "over, as torch's dim (negative counts from the end; default -1, the last)");
    app_->add_option("--seed", seed_, "input seed (default: fresh each run; training(rrelu): also its seed)")
        ->check(whole_number());
    app_->add_option("--warmup", warmup_, "untimed launches first")
        ->capture_default_str()
        ->check(CLI::Range(0, kMaxLaunches));
    app_->add_option("--repeat", repeat_, "timed launches; the median is reported")
        ->capture_default_str()
        ->check(CLI::Range(1, kMaxLaunches));
    app_->add_option("--check", check_, "sample (head, tail, random blocks) or all")->capture_default_str();
    app_->add_option("--db", db_path_, "kernel database (default: $KPLAY_DB, else the cache dir)");
    app_->add_flag("--no-db", no_db_,
                   "neither read your tuned configs and binaries nor store binaries (the shipped tunings still "
                   "serve; KPLAY_SHIPPED_TUNINGS=off: the device model alone)");
    add_timeout_flag(*app_, timeout_);
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    flags_.resolve_backend();
    // Everything the user typed is checked before any device work.
    std::uint64_t n = 0;
    std::string size_text;
    if (!shape_text_.empty()) {
      const auto shape = parse_shape(shape_text_);
      n = shape_elements(shape);
      size_text = shape_string(shape) + " = " + std::to_string(n) + " elements";
    } else if (!n_text_.empty()) {
      n = parse_count(n_text_);
      size_text = std::to_string(n) + " elements";
    } else {
      throw Error(ErrorCode::invalid_argument, "give the problem size with --n N or --shape AxB");
    }
    check_elements(n, shape_text_.empty() ? "--n" : "--shape");
    const std::uint64_t in_offset = parse_offset(in_offset_text_, "--in-offset");
    const std::uint64_t out_offset = parse_offset(out_offset_text_, "--out-offset");
    const std::uint64_t pad = parse_offset(pad_text_, "--pad");
    if (!(scale_ > 0 && scale_ <= 3.4e38))
      throw Error(ErrorCode::invalid_argument,
                  "--scale " + app_->get_option("--scale")->as<std::string>() + ": expected a finite number above 0");
    // A gated activation's input is [rows, 2d]: the rows are every dimension but the last (each
    // slice and problem counts them as n / last).
    const std::uint64_t last = shape_text_.empty() ? n : parse_shape(shape_text_).back();
    if (check_ != "sample" && check_ != "all")
      throw Error(ErrorCode::invalid_argument, "--check '" + check_ + "': expected sample or all");
    const auto acts = flags_.activation_list();
    std::vector<KernelSpec> specs;
    specs.reserve(acts.size());
    for (const auto& a : acts) specs.push_back(flags_.spec(a));
    const KernelConfig requested = flags_.config();
    bool any_gated = false;
    for (const auto& spec : specs) any_gated |= resolve_activation(spec.activation).gated;
    if (any_gated && last % 2 != 0)
      throw Error(ErrorCode::invalid_argument,
                  std::string(shape_text_.empty() ? "--n " : "--shape ") +
                      (shape_text_.empty() ? n_text_ : shape_text_) +
                      ": a gated activation's input is [..., 2d] (a, then b), so its last dimension must be even, "
                      "not " +
                      std::to_string(last));
    if (!any_gated && (two_tensors_ || app_->count("--pad") || app_->count("--scale")))
      throw Error(ErrorCode::invalid_argument, "--two-tensors, --pad and --scale are for gated activations");
    // Only an FP8 output is scaled: without one, the scale would be ignored without a word.
    if (app_->count("--scale") && parse_out_dtype(flags_.out_dtype) == OutDtype::same)
      throw Error(ErrorCode::invalid_argument, "--scale is for FP8 output (--out-dtype f8e4m3 or f8e5m2)");
    // prelu: the weight's length and the elements per channel position (torch's channel is dim 1).
    bool any_prelu = false;
    for (const auto& spec : specs) any_prelu |= resolve_activation(spec.activation).slope == SlopeForm::weight;
    const std::vector<std::uint64_t> dims =
        shape_text_.empty() ? std::vector<std::uint64_t>{n} : parse_shape(shape_text_);
    std::uint64_t channels = dims.size() >= 2 ? dims[1] : 1, inner = 1;
    if (app_->count("--channels")) {
      if (!any_prelu) throw Error(ErrorCode::invalid_argument, "--channels is for prelu");
      const std::uint64_t c = parse_count(channels_text_, "--channels");
      if (c != 1 && c != channels)
        throw Error(ErrorCode::invalid_argument,
                    "--channels " + channels_text_ + ": prelu's weight has one element or one per channel, and the " +
                        (dims.size() >= 2 ? "input's channel dimension (dim 1 of " + shape_text_ + ") has " +
                                                std::to_string(channels)
                                          : std::string("input has no channel dimension (one dimension): 1")));
      channels = c;
    }
    if (channels > 1)
      for (std::size_t k = 2; k < dims.size(); ++k) inner *= dims[k];
    bool any_row = false;
    for (const auto& spec : specs) any_row |= resolve_activation(spec.activation).is_row();
    // A row activation's rows: cols elements along --dim, inner apart (1: the last dimension).
    if (app_->count("--dim") && !any_row)
      throw Error(ErrorCode::invalid_argument, "--dim is for the row activations (" + row_activation_names() + ")");
    const RowDims row_shape = row_dims(dims, app_->count("--dim") ? dim_text_ : std::string());
    const std::uint64_t row_cols = any_row ? row_shape.cols : last, row_inner = any_row ? row_shape.inner : 1;
    const bool strided = row_inner > 1;
    specs = buildable_specs(std::move(specs), requested, generic_limits(flags_.backend));
    std::uint64_t most_bytes = 0;
    for (const auto& spec : specs) most_bytes = std::max(most_bytes, launch_bytes(spec, n));
    arm_watchdog(timeout_seconds(*app_, timeout_, most_bytes));

    auto backend = watched(rt::make_backend(flags_.backend, flags_.device));
    const rt::DeviceInfo& dev = backend->info();
    std::printf("device: %s [%d] %s (%s, %s, %s)\n", dev.backend.c_str(), dev.index, dev.name.c_str(), dev.arch.c_str(),
                dev.driver_version.c_str(), dev.compiler_version.c_str());
    if (!dev.note.empty()) std::printf("note: %s\n", dev.note.c_str());
    // The database: tuned configs (when no knob is given) and compiled binaries.
    std::unique_ptr<KernelDatabase> db;
    double db_open_ms = 0;
    if (!no_db_) {
      const auto t0 = std::chrono::steady_clock::now();
      KernelDatabase::Options o;
      o.path = db_path_;
      db = std::make_unique<KernelDatabase>(o);
      db_open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("database: %s%s, opened in %.2f ms\n", db->path().c_str(),
                  db->persistent() ? (db->writable() ? "" : " (read-only: nothing new is stored)")
                                   : " (in memory: nothing persists)",
                  db_open_ms);
    }
    Engine engine(*backend, db.get());

    int status = kExitOk;
    for (const auto& spec : specs) {
      std::printf("\n== %s, %s\n", to_string(spec).c_str(), size_text.c_str());
      const watchdog::Activity doing(to_string(spec) + ", " + size_text);
      working_on(spec);
      const bool row = resolve_activation(spec.activation).is_row();
      const ConfigChoice choice = flags_.choose(*app_, db.get(), engine, spec, n, row && last ? n / last : 0,
                                                strided ? row_cols : last, strided);
      // A row longer than the config holds is refused before its kernel is compiled.
      if (row)
        row_launch_dims(spec, resolve_config(spec, choice.config, backend->limits()), row_cols ? n / row_cols : 0,
                        row_cols, backend->limits());
      const bool strided_rows = strided && row;
      auto kernel = engine.prepare(spec, choice.config, strided_rows ? Layout::strided : Layout::flat);
      std::printf("config: %s\nlayer:  %s: %s\n", to_string(kernel->config).c_str(), choice.layer.c_str(),
                  choice.source.c_str());

      const bool gated = resolve_activation(spec.activation).gated;
      ProblemShape shape;
      shape.in_offset = in_offset;
      shape.out_offset = out_offset;
      shape.in_place = in_place_;
      if (gated) {
        shape.two_tensors = two_tensors_;
        shape.pad_a = pad;
        shape.pad_b = 2 * pad;
        shape.pad_out = pad ? pad + 1 : 0;
        shape.scale = scale_;
      }
      const bool prelu = resolve_activation(spec.activation).slope == SlopeForm::weight;
      if (prelu) {
        shape.channels = channels;
        shape.inner = inner;
      }
      shape.seed = app_->count("--seed") ? seed_ : std::random_device{}() * 0x100000001ull ^ std::random_device{}();
      // A problem larger than the device holds (a CPU's OpenCL caps single allocations) runs as
      // slices, one after the other, each with its own buffers: each is checked and timed, and
      // the times and bytes add up to the whole problem's.
      // A gated problem is sliced by whole rows.
      // prelu by whole [channels, inner] blocks, so that each slice's channels line up.
      // Strided rows by whole outer blocks (cols x inner elements).
      const std::uint64_t unit = gated ? last : row ? row_cols * row_inner : prelu ? channels * inner : 1;
      const std::uint64_t slices = std::min(slice_count(dev, spec, n, std::max(in_offset, out_offset) + 4 * pad),
                                            std::max<std::uint64_t>(n / unit, 1));
      const std::uint64_t per_slice = (n / unit + slices - 1) / slices * unit;
      if (slices > 1)
        std::printf(
            "slices: %llu of %llu elements (the device allocates at most %.2f GiB at once and holds %.2f GiB)\n",
            static_cast<unsigned long long>(slices), static_cast<unsigned long long>(per_slice),
            alloc_limit(dev) / 1073741824.0, dev.memory_bytes / 1073741824.0);
      std::optional<ErrorStats> err;
      std::string problem_note;
      std::vector<BenchResult> timed;
      std::size_t buffer_set_count = 1;
      TimingPlan plan{warmup_, repeat_};
      for (std::uint64_t s = 0; s < slices; ++s) {
        ProblemShape part = shape;
        part.n = std::min(per_slice, n - s * per_slice);
        part.rows = gated ? part.n / last : row ? (row_cols ? part.n / row_cols : 0) : 0;
        if (row) part.inner = row_inner;
        part.seed = shape.seed + s;
        auto problem = make_problem(*backend, spec, part);
        if (s == 0) {
          // The kernel this launch runs: the flat one, or (offsets off the vector, pitches, 2^31
          // elements and more) its general twin, built here so that its compile time is reported,
          // not timed.
          const PreparedKernel& runs = part.n ? engine.kernel_for(*kernel, problem->args()) : *kernel;
          std::printf("kernel: %s, %s %.1f KB, %s; ready to launch in %.2f ms\n", runs.rendered.entry.c_str(),
                      runs.binary_format.c_str(), runs.binary_bytes / 1024.0,
                      runs.origin == "compiled" ? "compiled now" : "loaded from the database", runs.compile_ms);
        }
        problem->launch(engine, *kernel);
        backend->synchronize();
        const ErrorStats e = problem->verify(check_ == "sample");
        if (s == 0) problem_note = problem->note();
        if (err)
          err->merge(e);
        else
          err = e;
        if (part.n == 0) continue;
        // Timed over enough sets of buffers to cover 4x the L2 (the checked set and others of its
        // shape), as kplay bench times: a problem that fits in L2 is then timed from memory, and so
        // is its copy. The sets hold ordinary inputs (ProblemShape::ordinary), not the check's
        // specials, tails and edge rows: the checked problem is freed and an ordinary one takes its place.
        if (has_ordinary_inputs(spec)) {
          ProblemShape ordinary = part;
          ordinary.ordinary = true;
          problem.reset();
          problem = make_problem(*backend, spec, ordinary);
        }
        std::vector<std::unique_ptr<DeviceProblem>> more;
        std::vector<const DeviceProblem*> sets{problem.get()};
        const std::size_t nsets = buffer_sets(dev, problem->bytes_moved());
        sets.reserve(nsets);
        more.reserve(nsets);
        for (std::size_t k = 1; k < nsets; ++k) {
          ProblemShape other = part;
          other.ordinary = true;
          other.seed = part.seed + 0x9e3779b97f4a7c15ull * k;
          more.push_back(make_problem(*backend, spec, other));
          sets.push_back(more.back().get());
        }
        if (s == 0) buffer_set_count = nsets;
        // Unless the user set them, fewer timed samples where each is long (see plan_timing).
        auto sample = [&] {
          for (const DeviceProblem* p : sets) p->launch(engine, *kernel);
        };
        if (s == 0 && !app_->count("--repeat") && !app_->count("--warmup"))
          plan = plan_timing(backend->time_ms(sample), plan);
        timed.push_back(bench_against_copy(engine, *kernel, sets, plan.warmup, plan.repeats));
      }
      const bool fast = kernel->config.fast_math;
      const bool pass = err->mismatches == 0;
      std::printf("check: %s, seed %llu%s: %s\n",
                  check_ == "all" ? "every element" : "sample (head, tail, 64 random blocks) and guards",
                  static_cast<unsigned long long>(shape.seed), slices > 1 ? " (+1 per slice)" : "",
                  err->summary().c_str());
      if (!problem_note.empty()) std::printf("%s\n", problem_note.c_str());
      if (!resolve_activation(spec.activation).act->forward && !row)
        std::printf(
            "reference: the same snippet compiled for float64 and run on the same inputs; this checks "
            "rounding, not the formula (its conditioning and range are not counted: docs/user-activations.md)\n");
      if (fast)
        std::printf("fast-math: max error %.3g ulp, rel %.3g (the bound of %.3g ulp applies to precise math only)\n",
                    err->max_ulps, err->max_rel_error, err->bound_ulps);
      else
        std::printf("verdict: %s (bound %.3g ulp)\n", pass ? "PASS" : "FAIL", err->bound_ulps);
      if (!pass && !fast) status = kExitFailed;
      if (timed.empty()) continue;

      const BenchResult b = add_slices(timed);
      const char* of = slices > 1 ? "sum over the slices of medians" : "median";
      std::printf("kernel: %.4f ms %s of %d (min %.4f, max %.4f), %.1f GB/s over %.2f GB\n", b.kernel.median_ms, of,
                  plan.repeats, b.kernel.min_ms, b.kernel.max_ms, b.kernel_gbps, b.kernel_bytes / 1e9);
      std::printf(
          "copy:   %.4f ms %s of %d (min %.4f, max %.4f), %.1f GB/s over %.2f GB (device-to-device, same run)\n",
          b.copy.median_ms, of, plan.repeats, b.copy.min_ms, b.copy.max_ms, b.copy_gbps, b.copy_bytes / 1e9);
      if (buffer_set_count > 1)
        std::printf("sets:   each sample over %zu sets of buffers (4x the L2), times per set\n", buffer_set_count);
      if (row)
        std::printf("timed:  on ordinary rows, not the check's edge rows (some take a kernel's exact path)\n");
      else if (has_ordinary_inputs(spec))
        std::printf(
            "timed:  on ordinary inputs in [-8, 8), not the check's specials and tails (some take a slow path)\n");
      std::printf("ratio:  %.1f %% of copy bandwidth\n", 100.0 * b.ratio);
    }
    return status;
  }

 private:
  CLI::App* app_;
  ConfigFlags flags_;
  std::string n_text_, shape_text_;
  std::string in_offset_text_ = "0", out_offset_text_ = "0";
  std::string pad_text_ = "0";
  std::string channels_text_;
  std::string dim_text_;

  bool two_tensors_ = false;
  double scale_ = 1;
  std::uint64_t seed_ = 0;
  bool in_place_ = false;
  int warmup_ = 3, repeat_ = 15;
  std::string check_ = "sample";
  std::string db_path_;
  bool no_db_ = false;
  double timeout_ = 0;
};
}  // namespace

std::unique_ptr<Command> make_run_command(CLI::App& parent) { return std::make_unique<RunCommand>(parent); }

}  // namespace kplay::cli
