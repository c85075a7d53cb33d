// `kplay autotune`: tunes every activation x direction x dtype x size on one device or all of
// them and stores the winners, with every candidate, in the kernel database. One progress line
// for the whole run goes to stderr; a summary table (or --json) to stdout. A killed run resumes:
// jobs already in the database are skipped (--no-resume tunes them again).
#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <sstream>

#include "command.hpp"
#include "config_flags.hpp"
#include "database/tuning_json.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "tuner/strategies.hpp"
#include "tuner/table_run.hpp"
#include "tuner/tuner.hpp"
#include "util/size_parse.hpp"
#include "util/watchdog.hpp"
#include "watched_backend.hpp"

namespace kplay::cli {
namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// "all" or a comma-separated list, each item checked by `parse`.
template <class T, class Parse>
std::vector<T> list_of(const std::string& text, const std::vector<T>& all, Parse parse) {
  if (text == "all") return all;
  std::vector<T> out;
  for (const auto& item : split(text)) out.push_back(parse(item));
  if (out.empty()) out.push_back(parse(text));
  return out;
}

// A job's size as the user gave it: a row activation's shape (ROWSxCOLS), else "n=N" (`named`)
// or the bare N of the table's n column.
std::string size_label(const TableJob& job, bool named = true) {
  if (job.rows) return std::to_string(job.rows) + "x" + std::to_string(job.n / job.rows);
  return (named ? "n=" : "") + std::to_string(job.n);
}

// --strategy's and --budget's help, from the strategy table (strategies.hpp).
std::string strategy_help() {
  std::string out = "search strategy:";
  for (const auto& s : strategies()) out += std::string("\n  ") + s.name + ": " + s.summary;
  return out;
}

std::string budget_help() {
  std::string names;
  for (const auto& s : strategies())
    if (s.uses_budget) names += (names.empty() ? "" : ", ") + std::string(s.name);
  return "at most this many candidates (" + names + ")";
}

// A kernel that outlived --timeout leaves the device to a wait no call can end, and one that
// crashed (a user snippet's bad store, on PoCL in this process) leaves nothing to go on with, so
// autotune goes on in a fresh process: the watchdog's thread has recorded the candidate as timed
// out or crashed in the database (tuner.hpp, kTimedOut, kCrashed), and the same command line,
// started again with resume on, skips it and what this run finished. The environment carries the count (bounded) and,
// when this run was told --no-resume, its start, so that older records still count as not done.
constexpr const char* kRestartsEnv = "KPLAY_AUTOTUNE_RESTARTS";
constexpr const char* kSinceEnv = "KPLAY_AUTOTUNE_SINCE";
constexpr int kMaxRestarts = 256;

// Runs on the watchdog's thread; returns only when it cannot start again (the watchdog then ends
// the process with exit status 4).
void restart_after_timeout(const std::string& message, bool recorded, bool no_resume, long long started) {
  const char* previous = std::getenv(kRestartsEnv);
  const int count = previous ? std::atoi(previous) : 0;
  std::fflush(stdout);
  if (!recorded) {
    std::fprintf(stderr, "\nkplay: autotune cannot go on in a fresh process: %s\n",
                 "no failed candidate could be recorded (an in-memory or unwritable database, or no candidate "
                 "was running)");
    return;
  }
  if (count >= kMaxRestarts) {
    std::fprintf(stderr, "\nkplay: autotune started again %d times already; not again\n", count);
    return;
  }
  std::fprintf(stderr,
               "\nkplay: %s\nkplay: autotune: that candidate is recorded as failed; going on in a fresh process "
               "(this one cannot take the device back)\n",
               message.c_str());
  std::fflush(stderr);
  // A new environment for the new image (setenv here would race with getenv in other threads).
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, kRestartsEnv, std::strlen(kRestartsEnv)) != 0 || (*e)[std::strlen(kRestartsEnv)] != '=')
      env.emplace_back(*e);
  env.push_back(std::string(kRestartsEnv) + "=" + std::to_string(count + 1));
  if (no_resume && !std::getenv(kSinceEnv)) env.push_back(std::string(kSinceEnv) + "=" + std::to_string(started));
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args;
  for (const auto& a : program_arguments())
    if (a != "--no-resume") args.push_back(a);
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The new image must not inherit this one's descriptors: database, locks, the driver's files.
  if (DIR* fds = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(fds)) {
      const int fd = std::atoi(e->d_name);
      if (fd > 2 && fd != ::dirfd(fds)) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    ::closedir(fds);
  }
  ::execve("/proc/self/exe", argv.data(), envp.data());
  std::fprintf(stderr, "kplay: autotune cannot start again: %s\n", std::strerror(errno));
}

// The jobs whose buffers every chosen device holds. A size too large for some kernels (a table
// 2^16..2^30 on a device that allocates less than 2^30 float64 at once) is skipped for those with
// one line, and the rest is tuned; where nothing fits, the first reason is refused (exit 2).
std::vector<TableJob> fitting_jobs(const std::vector<TableJob>& jobs,
                                   const std::vector<std::unique_ptr<rt::Backend>>& backends, const char* flag) {
  std::vector<TableJob> kept;
  std::map<std::uint64_t, std::size_t> total, skipped;
  std::map<std::uint64_t, std::string> first_reason;
  for (const auto& job : jobs) {
    ++total[job.n];
    std::string why;
    for (const auto& b : backends) {
      try {
        check_fits_device(b->info(), job.spec, job.n, 1, flag);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::invalid_argument) throw;
        why = e.what();
        break;
      }
    }
    if (why.empty()) {
      kept.push_back(job);
    } else if (skipped[job.n]++ == 0) {
      first_reason[job.n] = why;
    }
  }
  if (kept.empty() && !first_reason.empty()) throw Error(ErrorCode::invalid_argument, first_reason.begin()->second);
  for (const auto& [n, count] : skipped)
    std::fprintf(stderr, "skipping %s %llu for %zu of %zu kernels, too large for the device (the first: %s)\n", flag,
                 static_cast<unsigned long long>(n), count, total[n], first_reason[n].c_str());
  return kept;
}

class AutotuneCommand : public Command {
 public:
  explicit AutotuneCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("autotune", "find the fastest correct config per activation and size, and store it");
    add_config_flags(*app_, flags_, true, KnobDefaults::searched);
    // --device and the spec flags take lists and "all" here.
    app_->remove_option(app_->get_option("--device"));
    app_->add_option("--device", device_text_, "device index, comma-separated indices, or all (tuned in parallel)")
        ->capture_default_str();
    app_->get_option("--act")->description(
        "activations, comma-separated, or all, with parameters as in torch, or a snippet file");
    app_->get_option("--dtype")->description("element types, comma-separated (f32,f16,bf16,f64), or all");
    app_->get_option("--direction")->description("forward, backward, or all");
    auto* n = app_->add_option("--n", n_text_, "sizes: 1048576,2^24 or a range of powers of two 2^16..2^31");
    auto* shape = app_->add_option("--shape", shape_text_,
                                   "one size as a shape, e.g. 4096x393216; a row activation (softmax, ...) is "
                                   "tuned for rows of its last dimension, over the row kernel's space");
    n->excludes(shape);
    app_->add_option("--strategy", options_.tune.strategy, strategy_help())->capture_default_str();
    app_->add_option("--budget", options_.tune.budget, budget_help())
        ->capture_default_str()
        ->check(CLI::Range(1, kMaxTuneBudget));
    app_->add_option("--seed", options_.tune.seed, "seed for inputs and the random strategy")
        ->capture_default_str()
        ->check(whole_number());
    app_->add_option("--warmup", options_.tune.warmup, "untimed launches per candidate")
        ->capture_default_str()
        ->check(CLI::Range(0, kMaxLaunches));
    app_->add_option("--repeat", options_.tune.repeats, "timed launches per candidate (median)")
        ->capture_default_str()
        ->check(CLI::Range(kMinTuneRepeats, kMaxLaunches));
    app_->add_option("--space", space_text_,
                     "search other knob values: 'block=128,256 per-thread=1,2 grid=one-shot cache=default "
                     "kernel=flat,general gradient=early,late vec-bytes=16' (knobs not named keep theirs)");
    app_->add_flag("--no-resume", no_resume_, "tune again what the database already has, and ignore interrupted runs");
    app_->add_flag("--times", times_, "print where each job spent its time (setup, compile, measure, re-measure)");
    app_->add_flag("--json", json_, "print the results as JSON on stdout");
    app_->add_option("--db", db_path_, "database file (default: $KPLAY_DB, else the cache dir)");
    add_timeout_flag(*app_, timeout_);
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    if (flags_.knobs_given(*app_))
      throw Error(ErrorCode::invalid_argument,
                  "autotune searches the knobs itself: drop --vec/--block/--per-thread/--fast-math/--grid/--cache");
    std::vector<std::uint64_t> sizes;
    if (!shape_text_.empty())
      sizes.push_back(shape_elements(parse_shape(shape_text_)));
    else if (!n_text_.empty())
      sizes = parse_size_list(n_text_);
    else
      throw Error(ErrorCode::invalid_argument, "give the sizes with --n N[,N...], --n 2^A..2^B or --shape AxB");
    for (auto n : sizes) check_elements(n, shape_text_.empty() ? "--n" : "--shape");
    if (parse_out_dtype(flags_.out_dtype) != OutDtype::same)
      throw Error(ErrorCode::invalid_argument,
                  "--out-dtype " + flags_.out_dtype +
                      ": FP8 output is not tuned of its own; it takes the tuning of the same gated kernel with the "
                      "inputs' dtype as output: tune that (drop --out-dtype)");
    flags_.resolve_backend(json_ ? stderr : stdout);  // --json: stdout is the JSON alone
    const auto specs = table_specs();
    // A row activation runs over the last dimension of --shape: its rows are the other dimensions.
    bool any_row = false;
    for (const auto& spec : specs) any_row |= resolve_activation(spec.activation).is_row();
    std::uint64_t row_count = 0;
    if (any_row) {
      if (shape_text_.empty())
        throw Error(ErrorCode::invalid_argument,
                    "a row activation (" + row_activation_names() +
                        ") is tuned for a shape: give --shape ROWSxCOLS (it runs over the last dimension), not --n");
      if (!space_text_.empty())
        throw Error(ErrorCode::invalid_argument,
                    "--space names the element-wise kernel's knobs; a row activation searches the row kernel's "
                    "strategies (registers, shared, online, cluster) itself: drop --space");
      const auto dims = parse_shape(shape_text_);
      row_count = dims.back() ? sizes.front() / dims.back() : 0;
      if (row_count == 0) throw Error(ErrorCode::invalid_argument, "--shape " + shape_text_ + ": rows of no elements");
    }
    // A gated activation tunes on one row of its [1, 2d] input: the size must be even.
    for (const auto& spec : specs)
      for (auto n : sizes)
        if (n % 2 && resolve_activation(spec.activation).gated)
          throw Error(ErrorCode::invalid_argument,
                      std::string(shape_text_.empty() ? "--n " : "--shape ") + std::to_string(n) +
                          " elements: a gated activation's input is [..., 2d] (a, then b), so its size must be even");
    generic_limits(flags_.backend);
    find_strategy(options_.tune.strategy);  // refuses an unknown one before any device work
    if (!space_text_.empty()) options_.tune.space = SearchSpace::parse(space_text_, SearchSpace{});
    options_.resume = !no_resume_;
    options_.tune.resume = !no_resume_;
    std::uint64_t most_bytes = 0;
    for (const auto& spec : specs)
      for (auto n : sizes) most_bytes = std::max(most_bytes, launch_bytes(spec, n));
    const double timeout = timeout_seconds(*app_, timeout_, most_bytes);
    // Started again by itself after a timeout (restart_after_timeout): resume what this run did.
    const char* restarts = std::getenv(kRestartsEnv);
    if (restarts && *restarts) {
      const char* since = std::getenv(kSinceEnv);
      if (since && *since) options_.resume_since = std::atoll(since);
      std::fprintf(stderr, "autotune: going on after %s kernel timeout(s) or crash(es), resuming this run\n", restarts);
    }

    // Every chosen device, its own backend and engine, one shared database.
    std::vector<int> indices;
    if (device_text_ == "all") {
      for (const auto& r : rt::probe_backends())
        if (r.backend == flags_.backend)
          for (const auto& d : r.devices) indices.push_back(d.index);
      if (indices.empty()) rt::make_backend(flags_.backend, 0);  // throws with the reason
    } else {
      for (const auto& item : split(device_text_)) {
        const std::uint64_t index = parse_count(item, "--device");
        if (index > 65535)
          throw Error(ErrorCode::invalid_argument, "--device " + item + ": a device index is 0..65535");
        indices.push_back(static_cast<int>(index));
      }
      if (indices.empty()) throw Error(ErrorCode::invalid_argument, "--device '" + device_text_ + "': no device index");
    }
    KernelDatabase::Options dbo;
    dbo.path = db_path_;
    KernelDatabase db(dbo);
    const bool persistent = db.persistent();
    const bool no_resume = no_resume_;
    const auto started = static_cast<long long>(std::time(nullptr));
    watchdog::configure(timeout, kExitTimeout,
                        [persistent, no_resume, started](const std::string& message, bool recorded) {
                          restart_after_timeout(message, recorded && persistent, no_resume, started);
                        });
    std::vector<std::unique_ptr<rt::Backend>> backends;
    std::vector<std::unique_ptr<Engine>> engines;
    std::vector<TableDevice> devices;
    for (int index : indices) {
      backends.push_back(watched(rt::make_backend(flags_.backend, index)));
      engines.push_back(std::make_unique<Engine>(*backends.back(), &db));
      Engine* engine = engines.back().get();
      const rt::DeviceInfo& dev = backends.back()->info();
      TableDevice d;
      d.fingerprint = engine->fingerprint();
      d.label = dev.backend + " [" + std::to_string(dev.index) + "] " + dev.name;
      d.tune = [engine, &db](const TableJob& job, const TuneOptions& o, TuneTimes& times) {
        const watchdog::Activity doing("autotune of " + to_string(job.spec) + " " + size_label(job));
        return tune(*engine, db, job.spec, o, &times);
      };
      d.verify = [engine](const TableJob& job, const KernelConfig& best, const TuneOptions& o) {
        return verify_config(*engine, job.spec, best, job.n, o.seed, job.rows);
      };
      devices.push_back(d);
      std::fprintf(stderr, "autotune on %s (%s); database %s%s\n", d.label.c_str(), dev.arch.c_str(), db.path().c_str(),
                   db.persistent() ? (db.writable() ? "" : " (read-only: results are not stored)") : " (in memory)");
    }

    const bool tty = isatty(STDERR_FILENO);
    std::size_t last_done = SIZE_MAX;
    options_.progress = [&](const TableProgress& p) {
      // A terminal gets one line rewritten in place; a log gets a line per finished job.
      if (!tty && p.done == last_done) return;
      last_done = p.done;
      std::string now;
      for (std::size_t i = 0; i < p.current.size(); ++i)
        if (!p.current[i].empty() && p.current[i] != "done")
          now += (now.empty() ? "" : " | ") + (p.current.size() > 1 ? "dev" + std::to_string(i) + ": " : "") +
                 p.current[i];
      std::fprintf(stderr, "%s[%zu/%zu]", tty ? "\r\033[K" : "", p.done, p.total);
      if (p.resumed) std::fprintf(stderr, " %zu resumed,", p.resumed);
      if (p.failed) std::fprintf(stderr, " %zu failed,", p.failed);
      if (!p.best.empty()) std::fprintf(stderr, " best %s,", p.best.c_str());
      if (p.eta_seconds > 0) std::fprintf(stderr, " ~%.0f s left,", p.eta_seconds);
      std::fprintf(stderr, " %s%s", now.c_str(), tty ? "" : "\n");
    };
    auto table = table_jobs(specs, sizes);
    for (auto& job : table)
      if (resolve_activation(job.spec.activation).is_row()) job.rows = row_count;
    const auto jobs = fitting_jobs(table, backends, shape_text_.empty() ? "--n" : "--shape");
    const auto rows = run_table(devices, db, jobs, options_);
    if (tty) std::fputc('\n', stderr);
    // A database that could not be opened runs in memory (with a warning at the start): nothing
    // measured here is kept, which the report says, as it does for writes that failed later.
    const std::string unusable =
        !db.persistent() && db.path() != ":memory:" ? "the database " + db.path() + " could not be used" : "";
    return report(rows, devices, unusable);
  }

 private:
  std::vector<KernelSpec> table_specs() const {
    // The same parsing as run, check and bench: parameters in parentheses, snippet files, "all".
    const auto acts = flags_.activation_list();
    const auto dtypes = list_of<Dtype>(flags_.dtype, {Dtype::f32, Dtype::f16, Dtype::bf16, Dtype::f64}, parse_dtype);
    const auto dirs = list_of<Direction>(flags_.direction, {Direction::forward, Direction::backward}, parse_direction);
    const TargetLimits limits = generic_limits(flags_.backend);
    std::vector<KernelSpec> specs;
    for (const auto& a : acts)
      for (Direction dir : dirs)
        for (Dtype d : dtypes) {
          KernelSpec s;
          s.activation = a;
          s.direction = dir;
          s.dtype = d;
          s.saved = parse_saved(flags_.saved);
          // A row activation's backward takes the saved output (torch saves it); there is no other.
          if (resolve_activation(a).is_row()) s.saved = Saved::output;
          // A tier's backward without a kernel of its own is the exact kernel's job: once, under
          // the exact text.
          s = tuning_spec(s);
          const bool again = std::any_of(specs.begin(), specs.end(), [&](const KernelSpec& o) {
            return o.activation == s.activation && o.direction == s.direction && o.dtype == s.dtype &&
                   o.saved == s.saved;
          });
          if (!again) specs.push_back(s);
        }
    // A whole table skips what cannot exist (saved output for an activation without it); a single
    // spec asked for by name fails as before.
    return buildable_specs(std::move(specs), KernelConfig{}, limits);
  }

  int report(const std::vector<TableRow>& rows, const std::vector<TableDevice>& devices,
             const std::string& unusable) const {
    int status = kExitOk;
    // Why a row's result is not in the database ("" when it is, or was there already).
    auto not_stored = [&](const TableRow& r) {
      if (!r.error.empty() || r.resumed) return std::string();
      return unusable.empty() ? r.times.not_stored : unusable;
    };
    if (json_) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& r : rows) {
        if (!r.error.empty()) continue;
        nlohmann::json j = tuning_to_json(r.record);
        if (r.job.rows) j["shape"] = size_label(r.job);
        j["seconds"] = r.seconds;
        j["resumed"] = r.resumed;
        j["stored"] = not_stored(r).empty();
        j["device_label"] = devices[r.device].label;
        j["verified_on"] = nlohmann::json::array();
        for (std::size_t e : r.verified_on) j["verified_on"].push_back(devices[e].label);
        j["times"] = {{"setup_s", r.times.setup_s},
                      {"compile_s", r.times.compile_s},
                      {"measure_s", r.times.measure_s},
                      {"remeasure_s", r.times.remeasure_s},
                      {"binaries", r.times.binaries},
                      {"samples", r.times.samples},
                      {"contenders", r.times.contenders},
                      {"remeasure_rounds", r.times.remeasure_rounds},
                      {"contender_spread", r.times.contender_spread}};
        out.push_back(j);
      }
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      // The activation column fits the longest activation text: a parameter or gated(...) cut
      // short would name another activation.
      int act_width = 10;
      for (const auto& r : rows) act_width = std::max(act_width, static_cast<int>(r.job.spec.activation.size()));
      std::printf("%-4s %-*s %-8s %-5s %-12s %9s %7s %-10s %8s  %s\n", "dev", act_width, "activation", "dir", "dtype",
                  "size", "GB/s", "% copy", "strategy", "seconds", "best config");
      for (const auto& r : rows) {
        std::printf("%-4zu %-*s %-8s %-5s %-12s ", r.device, act_width, r.job.spec.activation.c_str(),
                    to_string(r.job.spec.direction), to_string(r.job.spec.dtype), size_label(r.job, false).c_str());
        if (!r.error.empty()) {
          std::printf("FAILED: %s\n", r.error.c_str());
          continue;
        }
        const TuningRecord& rec = r.record;
        char secs[32];
        std::snprintf(secs, sizeof secs, "%.1f", r.seconds);
        std::printf("%9.1f %6.1f%% %-10s %8s  %s%s\n", rec.best_gbps,
                    rec.copy_gbps > 0 ? 100.0 * rec.best_gbps / rec.copy_gbps : 0.0, rec.strategy.c_str(),
                    r.resumed ? "resumed" : secs, to_string(rec.best).c_str(),
                    not_stored(r).empty() ? "" : "  (NOT STORED)");
        if (times_ && !r.resumed)
          std::printf(
              "     times: setup %.2f s, compile %.2f s (%zu binaries), measure %.2f s, "
              "re-measure %.2f s (%zu contenders x %d rounds, spread %.2f %%), %zu samples\n",
              r.times.setup_s, r.times.compile_s, r.times.binaries, r.times.measure_s, r.times.remeasure_s,
              r.times.contenders, r.times.remeasure_rounds, 100 * r.times.contender_spread, r.times.samples);
        // Contenders whose samples still vary by several per cent after 2 x repeats rounds (seen on
        // H200s running float64-heavy kernels back to back: clocks under the power cap) may rank
        // differently in another run; say so rather than present the choice as settled.
        if (!r.resumed && r.times.contender_spread > 0.02)
          std::printf(
              "     note: the contenders' timings varied by up to %.1f %% (interquartile range); "
              "the choice may not reproduce\n",
              100 * r.times.contender_spread);
        std::size_t rejected = 0;
        for (const auto& c : rec.candidates)
          if (!c.ok && c.rejection.rfind("dropped early", 0) != 0) ++rejected;
        if (rejected && !r.resumed)
          for (const auto& c : rec.candidates)
            if (!c.ok && c.rejection.rfind("dropped early", 0) != 0)
              std::printf("     rejected %s: %s\n", to_string(c.config).c_str(), c.rejection.c_str());
      }
    }
    if (!json_) print_shared_verification(rows, devices);
    for (const auto& r : rows)
      if (!r.error.empty()) {
        std::fprintf(stderr, "kplay: %s %s failed: %s\n", to_string(r.job.spec).c_str(), size_label(r.job).c_str(),
                     r.error.c_str());
        status = kExitFailed;
      }
    // Measured, reported above, but not kept: not a failed measurement, still not a success.
    std::size_t lost = 0;
    std::string why;
    for (const auto& r : rows)
      if (!not_stored(r).empty()) {
        ++lost;
        if (why.empty()) why = not_stored(r);
      }
    if (lost) {
      std::fprintf(stderr,
                   "kplay: error: %zu tuning result(s) were measured and are reported above, but were NOT stored in "
                   "the database (%s); kplay run will not use them\n",
                   lost, why.c_str());
      status = kExitFailed;
    }
    return status;
  }

  // Identical devices split a table; say how many winners were also checked on the others.
  static void print_shared_verification(const std::vector<TableRow>& rows, const std::vector<TableDevice>& devices) {
    std::map<std::string, std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < devices.size(); ++i) groups[devices[i].fingerprint].push_back(i);
    for (const auto& [fingerprint, members] : groups) {
      if (members.size() < 2) continue;
      std::size_t measured = 0, verified = 0;
      for (const auto& r : rows)
        if (!r.resumed && devices[r.device].fingerprint == fingerprint) {
          ++measured;
          verified += r.error.empty() && r.verified_on.size() == members.size() - 1;
        }
      if (measured == 0) continue;  // everything resumed
      std::string list;
      for (std::size_t i : members) list += (list.empty() ? "" : ",") + std::to_string(i);
      std::printf(
          "identical devices %s shared the table: %zu of %zu winners tuned on one were verified on every other one\n",
          list.c_str(), verified, measured);
    }
  }

  CLI::App* app_;
  ConfigFlags flags_;
  TableOptions options_;
  std::string n_text_, shape_text_, db_path_, device_text_ = "0", space_text_;
  bool no_resume_ = false, json_ = false, times_ = false;
  double timeout_ = 0;
};
}  // namespace

std::unique_ptr<Command> make_autotune_command(CLI::App& parent) { return std::make_unique<AutotuneCommand>(parent); }

}  // namespace kplay::cli
