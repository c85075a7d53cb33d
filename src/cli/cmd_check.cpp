// `kplay check`: the accuracy of one kernel over every input of its dtype (see
// src/exhaustive_check.hpp), with progress, against the activation's stated bound.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "check/exhaustive_check.hpp"
#include "check/problem.hpp"
#include "command.hpp"
#include "config_flags.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "tuner/row_defaults.hpp"
#include "util/watchdog.hpp"
#include "watched_backend.hpp"

namespace kplay::cli {
namespace {
// A row activation (the softmax family) is a function of a whole row, so no sweep of every input
// exists: its check runs rows of several lengths, from 1 to over a million elements (each length
// where the defaults change kernel: 1502, ragged and with every other row misaligned, is a float32
// backward's block-a-row pipelined kernel on sm_90), each with the edge rows of row_problem.cpp
// (+inf, NaN, all -inf, some -inf, extremes, wide spread, constant, deep: results in float's
// subnormal range) and every element judged against the row reference; then, with the default
// configs, strided rows (a dim that is not the last: [outer, cols, inner]) of 1 to 1000 elements.
// The config: the flags' where knobs are given, else the default for each row length. Returns
// whether all passed.
bool check_rows(Engine& engine, const KernelSpec& spec, const KernelConfig* given, std::uint64_t seed) {
  bool pass = true;
  // {rows, cols, inner}: inner > 1 for strided rows
  const std::uint64_t shapes[][3] = {{8, 1, 1},     {64, 7, 1},      {16, 1000, 1}, {16, 1502, 1},  {16, 4099, 1},
                                     {8, 65536, 1}, {2, 1000003, 1}, {132, 1, 33},  {800, 21, 100}, {8192, 1000, 4096}};
  for (const auto& shape : shapes) {
    const bool strided = shape[2] > 1;
    if (strided && given) continue;  // knobs for contiguous rows need not suit strided ones
    const KernelConfig config = given     ? *given
                                : strided ? strided_row_config(spec, shape[1])
                                          : default_row_config(spec, shape[1], engine.backend().limits());
    ProblemShape ps;
    ps.rows = shape[0];
    ps.inner = shape[2];
    ps.n = shape[0] * shape[1];
    ps.seed = seed;
    const auto kernel = engine.prepare(spec, config, strided ? Layout::strided : Layout::flat);
    const auto problem = make_problem(engine.backend(), spec, ps);
    problem->launch(engine, *kernel);
    engine.backend().synchronize();
    const ErrorStats e = problem->verify(false);
    pass &= e.mismatches == 0;
    const std::string where = strided ? " (strided, " + std::to_string(shape[2]) + " apart)" : "";
    std::printf("rows %llu x %llu%s, %s: %s\n", static_cast<unsigned long long>(shape[0]),
                static_cast<unsigned long long>(shape[1]), where.c_str(), to_string(kernel->config).c_str(),
                e.summary().c_str());
    std::fflush(stdout);
  }
  std::printf("verdict: %s\n", pass ? "PASS" : "FAIL");
  return pass;
}

class CheckCommand : public Command {
 public:
  explicit CheckCommand(CLI::App& parent) {
    app_ =
        parent.add_subcommand("check", "sweep every input of the dtype through a kernel against the double reference");
    add_config_flags(*app_, flags_, true, KnobDefaults::fixed);
    app_->add_option("--sample", sample_,
                     "how many random bit patterns (float64 always samples; given, the other dtypes sample too)")
        ->capture_default_str()
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
    app_->add_option("--gradients", gradients_,
                     "backward: gradients per input; gated: values of b (and g) per input (default 64 for float16 and "
                     "bfloat16, 1 otherwise)")
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 20));
    app_->add_option("--bound", bound_, "ulps to hold the kernel to (default: the activation's stated bound)");
    app_->add_option("--scale", scale_, "FP8 output (--out-dtype f8e4m3|f8e5m2): out = fp8(act(a) * b / SCALE)")
        ->capture_default_str();
    app_->add_option("--seed", seed_, "float64 sample seed")->capture_default_str()->check(whole_number());
    app_->add_option("--range", range_,
                     "float32: every input in LO..HI only, e.g. --range=-1.3:-1.2 (a hard spot); float64: --sample "
                     "values uniform in it");
    add_timeout_flag(*app_, timeout_);
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    // NaN fails every comparison, so each test is written to fail for it too.
    if (app_->count("--bound") > 0 && !(bound_ > 0 && bound_ <= 1e15))
      throw Error(ErrorCode::invalid_argument, "--bound " + app_->get_option("--bound")->as<std::string>() +
                                                   ": expected ulps above 0 (at most 1e15)");
    if (!range_.empty()) {
      SweepOptions checked;
      parse_range(checked);  // refused before any device work
    }
    flags_.resolve_backend();
    const auto acts = flags_.activation_list();
    std::vector<KernelSpec> specs;
    specs.reserve(acts.size());
    for (const auto& a : acts) specs.push_back(flags_.spec(a));
    const KernelConfig config = flags_.config();
    specs = buildable_specs(std::move(specs), config, generic_limits(flags_.backend));
    const bool gated = resolve_activation(specs.front().activation).gated;
    if (app_->count("--gradients") > 0 && specs.front().direction != Direction::backward && !gated)
      throw Error(ErrorCode::invalid_argument,
                  "--gradients is for --direction backward (gradients per input) and gated activations (values of b "
                  "per input)");
    if (!(scale_ > 0 && scale_ <= 3.4e38))
      throw Error(ErrorCode::invalid_argument,
                  "--scale " + app_->get_option("--scale")->as<std::string>() + ": expected a finite number above 0");
    // Only an FP8 output is scaled: without one, the scale would be ignored without a word.
    if (app_->count("--scale") && parse_out_dtype(flags_.out_dtype) == OutDtype::same)
      throw Error(ErrorCode::invalid_argument, "--scale is for FP8 output (--out-dtype f8e4m3 or f8e5m2)");
    // A sweep waits on one chunk of 2^24 elements at a time (exhaustive_check.cpp).
    std::uint64_t most_bytes = 0;
    for (const auto& spec : specs) most_bytes = std::max(most_bytes, launch_bytes(spec, 1u << 24));
    arm_watchdog(timeout_seconds(*app_, timeout_, most_bytes));
    auto backend = watched(rt::make_backend(flags_.backend, flags_.device));
    const rt::DeviceInfo& dev = backend->info();
    std::printf("device: %s [%d] %s (%s, %s)\n", dev.backend.c_str(), dev.index, dev.name.c_str(), dev.arch.c_str(),
                dev.compiler_version.c_str());
    Engine engine(*backend);
    const bool tty = ::isatty(STDERR_FILENO);
    int status = kExitOk;
    for (const auto& spec : specs) {
      working_on(spec);
      SweepOptions o;
      o.sample = sample_;
      o.force_sample = app_->count("--sample") > 0;
      o.seed = seed_;
      o.bound = bound_;
      const bool spec_gated = resolve_activation(spec.activation).gated;
      o.gradients = spec.direction == Direction::backward || spec_gated ? gradients_ : 0;
      o.scale = scale_;
      if (!range_.empty()) parse_range(o);
      int last_tenth = -1;
      o.progress = [&](double f, const SweepStats& s) {
        const int tenth = static_cast<int>(f * 10);
        if (tty)
          std::fprintf(stderr, "\r  %5.1f %%  max so far %.3g ulp  ", 100 * f, s.max_ulps);
        else if (tenth != last_tenth)
          std::fprintf(stderr, "  %3d %%  max so far %.3g ulp\n", tenth * 10, s.max_ulps);
        last_tenth = tenth;
      };
      const watchdog::Activity doing("the sweep of " + to_string(spec));
      if (resolve_activation(spec.activation).is_row()) {
        std::printf("\n== %s, rows of several lengths with the edge rows\n", to_string(spec).c_str());
        const KernelConfig* given = flags_.knobs_given(*app_) ? &config : nullptr;
        if (!check_rows(engine, spec, given, seed_)) status = kExitFailed;
        continue;
      }
      std::printf("\n== %s, config %s\n", to_string(spec).c_str(),
                  to_string(resolve_config(spec, config, backend->limits())).c_str());
      std::fflush(stdout);
      const SweepResult r = exhaustive_check(engine, spec, config, o);
      if (tty) std::fprintf(stderr, "\r%60s\r", "");
      const SweepStats& s = r.stats;
      const bool spec_gated_out = resolve_activation(spec.activation).gated;
      const std::string per_input =
          r.gradients > 1
              ? ", " + std::to_string(r.gradients) +
                    (spec_gated_out
                         ? (spec.direction == Direction::backward ? " values of b and g each" : " values of b each")
                         : " gradients each")
              : std::string(spec_gated_out ? ", one value of b each" : "");
      const std::uint64_t outputs_each = spec_gated_out && spec.direction == Direction::backward ? 2 : 1;
      std::printf(
          "inputs: %llu (%s%s) in %.1f s\n", static_cast<unsigned long long>(s.checked / r.gradients / outputs_each),
          !r.exhaustive
              ? (range_.empty() ? "a seeded random sample of bit patterns" : "a seeded sample, uniform in the range")
          : range_.empty() ? "every bit pattern of the dtype"
                           : "every float32 in the range",
          per_input.c_str(), r.seconds);
      if (r.self_referenced)
        std::printf(
            "reference: the same snippet compiled for float64 on the device; this checks rounding, not the formula "
            "(its conditioning and range are not counted: docs/user-activations.md)\n");
      std::printf("max error: %.4g ulp at x = %.9g (got %.9g, exact %.17g)\n", s.max_ulps, s.worst_input, s.worst_out,
                  s.worst_ref);
      std::printf("over 0.5 ulp: %llu, over 1 ulp: %llu, over 2 ulp: %llu\n",
                  static_cast<unsigned long long>(s.over_half), static_cast<unsigned long long>(s.over_one),
                  static_cast<unsigned long long>(s.over_two));
      std::printf("NaN mismatches: %llu, inf mismatches: %llu, signed-zero mismatches: %llu (reported, not judged)\n",
                  static_cast<unsigned long long>(s.nan_mismatch), static_cast<unsigned long long>(s.inf_mismatch),
                  static_cast<unsigned long long>(s.signed_zero_mismatch));
      if (spec.direction == Direction::backward || s.subnormal_skipped)
        std::printf("subnormal exact results (not judged, the bound holds for normal results): %llu\n",
                    static_cast<unsigned long long>(s.subnormal_skipped));
      const bool pass = s.over_bound == 0 && s.nan_mismatch == 0 && s.inf_mismatch == 0;
      std::printf("verdict: %s (bound %.3g ulp; %llu over it)\n", pass ? "PASS" : "FAIL", r.bound,
                  static_cast<unsigned long long>(s.over_bound));
      std::printf("row: | %s | %s | %s | %.3g | %.3g | %llu | %llu | %llu | %llu | %s |\n", spec.activation.c_str(),
                  to_string(spec.dtype),
                  spec.direction == Direction::forward
                      ? "forward"
                      : (spec.saved == Saved::input ? "backward (input)" : "backward (output)"),
                  s.max_ulps, r.bound, static_cast<unsigned long long>(s.over_half),
                  static_cast<unsigned long long>(s.over_one), static_cast<unsigned long long>(s.over_two),
                  static_cast<unsigned long long>(s.nan_mismatch) + static_cast<unsigned long long>(s.inf_mismatch),
                  pass ? "PASS" : "FAIL");
      std::fflush(stdout);
      if (!pass && !config.fast_math) status = kExitFailed;
    }
    return status;
  }

 private:
  CLI::App* app_;
  ConfigFlags flags_;
  std::uint64_t sample_ = 1ull << 26, seed_ = 1, gradients_ = 0;
  std::string range_;

  void parse_range(SweepOptions& o) const {
    const auto colon = range_.find(':', 1);  // LO may start with a minus sign
    std::size_t a = 0, b = 0;
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      o.range_lo = std::stod(range_.substr(0, colon), &a);
      o.range_hi = std::stod(range_.substr(colon + 1), &b);
    } catch (const std::exception&) {
      a = b = std::string::npos;
    }
    if (a != colon || b != range_.size() - colon - 1 || !(o.range_lo <= o.range_hi) || !std::isfinite(o.range_lo) ||
        !std::isfinite(o.range_hi))
      throw Error(ErrorCode::invalid_argument,
                  "--range '" + range_ + "': expected LO:HI, finite numbers with LO <= HI, e.g. -1.3:-1.2");
  }
  double bound_ = 0;
  double scale_ = 1;
  double timeout_ = 0;
};
}  // namespace

std::unique_ptr<Command> make_check_command(CLI::App& parent) { return std::make_unique<CheckCommand>(parent); }

}  // namespace kplay::cli
