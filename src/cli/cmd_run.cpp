// `kplay run`: specialize, compile, launch on fresh random data, verify against the double
// reference, and time against a device-to-device copy of the same bytes in the same run.
#include <chrono>
#include <cstdio>
#include <random>

#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "check/benchmark.hpp"
#include "codegen/config_validation.hpp"
#include "engine/engine.hpp"
#include "check/problem.hpp"
#include "util/size_parse.hpp"
#include "tuner/config_lookup.hpp"
#include "command.hpp"
#include "config_flags.hpp"
#include "kplay/error.hpp"

namespace kplay::cli {
namespace {
class RunCommand : public Command {
 public:
  explicit RunCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("run", "run, verify and time activation kernels on a device");
    add_config_flags(*app_, flags_, true);
    auto* n = app_->add_option("--n", n_text_, "number of elements: 1000000, 2^31, 2^31+5");
    auto* shape = app_->add_option("--shape", shape_text_, "shape, e.g. 4096x393216 (elements = product)");
    n->excludes(shape);
    app_->add_option("--in-offset", in_offset_, "elements the input starts past an aligned allocation")
        ->capture_default_str();
    app_->add_option("--out-offset", out_offset_, "elements the output starts past an aligned allocation")
        ->capture_default_str();
    app_->add_flag("--in-place", in_place_, "write the output over the input");
    app_->add_option("--seed", seed_, "input seed (default: fresh each run)");
    app_->add_option("--warmup", warmup_, "untimed launches first")->capture_default_str();
    app_->add_option("--repeat", repeat_, "timed launches; the median is reported")->capture_default_str();
    app_->add_option("--check", check_, "sample (head, tail, random blocks) or all")->capture_default_str();
    app_->add_option("--db", db_path_, "kernel database (default: $KPLAY_DB, else the cache dir)");
    app_->add_flag("--no-db", no_db_, "neither read tuned configs and binaries nor store binaries");
  }
  CLI::App* app() const override { return app_; }

  int run() override {
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
    if (check_ != "sample" && check_ != "all")
      throw Error(ErrorCode::invalid_argument, "--check '" + check_ + "': expected sample or all");
    if (warmup_ < 0 || repeat_ < 1) throw Error(ErrorCode::invalid_argument, "--warmup must be >= 0 and --repeat >= 1");
    const auto acts = flags_.activation_list();
    std::vector<KernelSpec> specs;
    specs.reserve(acts.size());
    for (const auto& a : acts) specs.push_back(flags_.spec(a));
    const KernelConfig requested = flags_.config();
    specs = buildable_specs(std::move(specs), requested, generic_limits(flags_.backend));

    auto backend = rt::make_backend(flags_.backend, flags_.device);
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
                  db->persistent() ? "" : " (in memory: nothing persists)", db_open_ms);
    }
    Engine engine(*backend, db.get());
    const bool knobs = flags_.knobs_given(*app_);

    int status = kExitOk;
    for (const auto& spec : specs) {
      std::printf("\n== %s, %s\n", to_string(spec).c_str(), size_text.c_str());
      ConfigChoice choice;
      if (knobs) {
        choice.config = requested;
        choice.source = "from the command line (unset knobs at built-in defaults)";
      } else {
        choice = choose_config(db.get(), engine, spec, n);
      }
      auto kernel = engine.prepare(spec, choice.config);
      std::printf("config: %s\n        %s\n", to_string(kernel->config).c_str(), choice.source.c_str());

      ProblemShape shape;
      shape.n = n;
      shape.in_offset = in_offset_;
      shape.out_offset = out_offset_;
      shape.in_place = in_place_;
      shape.seed = app_->count("--seed") ? seed_ : std::random_device{}() * 0x100000001ull ^ std::random_device{}();
      Problem problem(*backend, spec, shape);
      // The kernel this launch runs: the flat one, or (offsets off the vector, 2^31 elements and
      // more) its general twin, built here so that its compile time is reported, not timed.
      const PreparedKernel& runs =
          n ? engine.kernel_for(*kernel, flat_args(*kernel, problem.out(), problem.in0(), problem.in1(), n)) : *kernel;
      std::printf("kernel: %s, %s %.1f KB, %s; ready to launch in %.2f ms\n", runs.rendered.entry.c_str(),
                  runs.binary_format.c_str(), runs.binary_bytes / 1024.0,
                  runs.origin == "compiled" ? "compiled now" : "loaded from the database", runs.compile_ms);
      engine.launch_flat(*kernel, problem.out(), problem.in0(), problem.in1(), n);
      backend->synchronize();
      ErrorStats err = problem.verify(check_ == "sample");
      const bool fast = kernel->config.fast_math;
      const bool pass = err.mismatches == 0;
      std::printf("check: %s, seed %llu: %s\n",
                  check_ == "all" ? "every element" : "sample (head, tail, 64 random blocks) and guards",
                  static_cast<unsigned long long>(shape.seed), err.summary().c_str());
      if (!resolve_activation(spec.activation).act->forward)
        std::printf(
            "reference: the same snippet compiled for float64 and run on the same inputs; this checks "
            "rounding, not the formula\n");
      if (fast)
        std::printf("fast-math: max error %.3g ulp, rel %.3g (the bound of %.3g ulp applies to precise math only)\n",
                    err.max_ulps, err.max_rel_error, err.bound_ulps);
      else
        std::printf("verdict: %s (bound %.3g ulp)\n", pass ? "PASS" : "FAIL", err.bound_ulps);
      if (!pass && !fast) status = kExitFailed;
      if (n == 0) continue;

      BenchResult b = bench_against_copy(engine, *kernel, problem, warmup_, repeat_);
      std::printf("kernel: %.4f ms median of %d (min %.4f, max %.4f), %.1f GB/s over %.2f GB\n", b.kernel.median_ms,
                  repeat_, b.kernel.min_ms, b.kernel.max_ms, b.kernel_gbps, b.kernel_bytes / 1e9);
      std::printf(
          "copy:   %.4f ms median of %d (min %.4f, max %.4f), %.1f GB/s over %.2f GB (device-to-device, same run)\n",
          b.copy.median_ms, repeat_, b.copy.min_ms, b.copy.max_ms, b.copy_gbps, b.copy_bytes / 1e9);
      std::printf("ratio:  %.1f %% of copy bandwidth\n", 100.0 * b.ratio);
    }
    return status;
  }

 private:
  CLI::App* app_;
  ConfigFlags flags_;
  std::string n_text_, shape_text_;
  std::uint64_t in_offset_ = 0, out_offset_ = 0, seed_ = 0;
  bool in_place_ = false;
  int warmup_ = 3, repeat_ = 15;
  std::string check_ = "sample";
  std::string db_path_;
  bool no_db_ = false;
};
}  // namespace

std::unique_ptr<Command> make_run_command(CLI::App& parent) { return std::make_unique<RunCommand>(parent); }

}  // namespace kplay::cli
