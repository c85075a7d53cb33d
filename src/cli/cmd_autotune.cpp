// `kplay autotune`: tunes each activation at each size on one device and stores the winners,
// with every candidate, in the kernel database. Progress goes to stderr; --json prints records.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "../../runtime/backend_factory.hpp"
#include "../database/tuning_json.hpp"
#include "../size_parse.hpp"
#include "../tuner/tuner.hpp"
#include "command.hpp"
#include "config_flags.hpp"
#include "kplay/error.hpp"

namespace kplay::cli {
namespace {
class AutotuneCommand : public Command {
 public:
  explicit AutotuneCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("autotune", "find the fastest correct config per activation and size, and store it");
    add_config_flags(*app_, flags_, true);
    auto* n = app_->add_option("--n", n_text_, "sizes, comma-separated: 1048576,2^24");
    auto* shape = app_->add_option("--shape", shape_text_, "one size as a shape, e.g. 4096x393216");
    n->excludes(shape);
    app_->add_option("--strategy", options_.strategy, "exhaustive, random or local")->capture_default_str();
    app_->add_option("--budget", options_.budget, "candidates for random and local")->capture_default_str();
    app_->add_option("--seed", options_.seed, "seed for inputs and the random strategy")->capture_default_str();
    app_->add_option("--warmup", options_.warmup, "untimed launches per candidate")->capture_default_str();
    app_->add_option("--repeat", options_.repeats, "timed launches per candidate (median)")->capture_default_str();
    app_->add_flag("--no-resume", no_resume_, "ignore the progress of an interrupted run");
    app_->add_flag("--json", json_, "print the results as JSON on stdout");
    app_->add_option("--db", db_path_, "database file (default: $KPLAY_DB, else the cache dir)");
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    if (flags_.knobs_given(*app_))
      throw Error(ErrorCode::invalid_argument,
                  "autotune searches the knobs itself: drop --vec/--block/--per-thread/--fast-math/--grid/--cache");
    std::vector<std::uint64_t> sizes;
    if (!shape_text_.empty()) {
      sizes.push_back(shape_elements(parse_shape(shape_text_)));
    } else if (!n_text_.empty()) {
      std::stringstream ss(n_text_);
      for (std::string item; std::getline(ss, item, ',');) sizes.push_back(parse_count(item));
    } else {
      throw Error(ErrorCode::invalid_argument, "give the sizes with --n N[,N...] or --shape AxB");
    }
    for (auto n : sizes)
      if (n == 0) throw Error(ErrorCode::invalid_argument, "--n 0: there is nothing to tune");
    std::vector<KernelSpec> specs;
    for (const auto& a : flags_.activation_list()) specs.push_back(flags_.spec(a));
    generic_limits(flags_.backend);
    options_.resume = !no_resume_;

    auto backend = rt::make_backend(flags_.backend, flags_.device);
    KernelDatabase::Options dbo;
    dbo.path = db_path_;
    KernelDatabase db(dbo);
    Engine engine(*backend, &db);
    const rt::DeviceInfo& dev = backend->info();
    std::fprintf(stderr, "autotune on %s [%d] %s (%s); database %s%s\n", dev.backend.c_str(), dev.index,
                 dev.name.c_str(), dev.arch.c_str(), db.path().c_str(), db.persistent() ? "" : " (in memory)");

    nlohmann::json out = nlohmann::json::array();
    const bool tty = isatty(STDERR_FILENO);
    for (const auto& spec : specs)
      for (auto n : sizes) {
        const std::string label = to_string(spec) + " n=" + std::to_string(n);
        TuneOptions o = options_;
        o.n = n;
        std::size_t last_decile = 0;
        o.progress = [&](const TuneProgress& p) {
          const std::size_t decile = p.total ? 10 * p.done / p.total : 0;
          if (!tty && decile == last_decile && p.done != p.total) return;
          last_decile = decile;
          std::fprintf(stderr, "%s[%s] %s %zu/%zu", tty ? "\r\033[K" : "", label.c_str(), p.phase.c_str(), p.done,
                       p.total);
          if (p.have_best)
            std::fprintf(stderr, ", best %.0f GB/s (%s)", p.best_gbps, to_string(p.best).c_str());
          if (p.eta_seconds > 0) std::fprintf(stderr, ", %.0f s left", p.eta_seconds);
          if (!tty) std::fputc('\n', stderr);
        };
        const auto t0 = std::chrono::steady_clock::now();
        TuningRecord rec = tune(engine, db, spec, o);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (tty) std::fputc('\n', stderr);
        std::size_t rejected = 0;
        for (const auto& c : rec.candidates) rejected += !c.ok;
        if (json_) {
          nlohmann::json j = tuning_to_json(rec);
          j["seconds"] = secs;
          out.push_back(j);
        } else {
          std::printf("%s: %s\n  %.4f ms, %.1f GB/s = %.1f %% of the same-run copy (%.1f GB/s); %zu candidates, "
                      "%zu rejected, %s strategy, %.1f s\n",
                      label.c_str(), to_string(rec.best).c_str(), rec.best_ms, rec.best_gbps,
                      100.0 * rec.best_gbps / rec.copy_gbps, rec.copy_gbps, rec.candidates.size(), rejected,
                      rec.strategy.c_str(), secs);
          for (const auto& c : rec.candidates)
            if (!c.ok) std::printf("  rejected %s: %s\n", to_string(c.config).c_str(), c.rejection.c_str());
        }
      }
    if (json_) std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }

 private:
  CLI::App* app_;
  ConfigFlags flags_;
  TuneOptions options_;
  std::string n_text_, shape_text_, db_path_;
  bool no_resume_ = false, json_ = false;
};
}  // namespace

std::unique_ptr<Command> make_autotune_command(CLI::App& parent) { return std::make_unique<AutotuneCommand>(parent); }

}  // namespace kplay::cli
