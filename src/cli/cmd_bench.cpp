// `kplay bench`: a sweep over sizes for chosen activations and dtypes, kplay's config (tuned,
// else the device model's default, as the API would pick it) against a device-to-device copy of
// the same bytes, timed interleaved in one run. Buffers rotate through enough sets to cover 4x
// the L2, so no size is flattered by the cache. A row activation (the softmax family) takes one
// --shape instead of the sweep, its rows the last dimension, and its config from
// choose_row_config. --compare times other configs on the same buffers in the same process, in
// turn, --rounds times over (an A/B of configs without the drift between processes). Prints a
// table; --csv/--json write files whose columns docs/benchmarks.md describes (for plotting).
#include <algorithm>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "check/benchmark.hpp"
#include "check/problem.hpp"
#include "command.hpp"
#include "config_flags.hpp"
#include "kplay/error.hpp"
#include "output_file.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "tuner/config_lookup.hpp"
#include "util/size_parse.hpp"
#include "util/watchdog.hpp"
#include "watched_backend.hpp"

namespace kplay::cli {
namespace {

struct Row {
  std::string device, activation, direction, dtype, config, source;
  std::string shape;  // --shape as given (a row activation's rows x columns), else ""
  std::uint64_t n = 0, kernel_bytes = 0, copy_bytes = 0;
  std::size_t buffer_sets = 0;
  int round = 1;
  double kernel_ms = 0, copy_ms = 0, kernel_gbps = 0, copy_gbps = 0, ratio = 0;
  bool verified = false;
};

class BenchCommand : public Command {
 public:
  explicit BenchCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("bench", "kplay against a same-run copy over a sweep of sizes (table, CSV, JSON)");
    add_config_flags(*app_, flags_, true, KnobDefaults::tuned);
    app_->get_option("--dtype")->description("element types, comma-separated (f32,f16,bf16,f64)");
    auto* n = app_->add_option("--n", n_text_, "sizes: a list and/or ranges of powers of two")->capture_default_str();
    auto* shape = app_->add_option("--shape", shape_text_,
                                   "one size as a shape instead of --n, e.g. 4096x1024; a row activation (softmax, "
                                   "log_softmax, softmin) needs it and runs over the last dimension");
    n->excludes(shape);
    app_->add_option("--dim", dim_text_,
                     "row activations: the dimension of --shape the function runs over, as torch's dim (negative "
                     "counts from the end; default -1, the last); another than the last reads strided rows");
    app_->add_option("--warmup", warmup_, "untimed samples first")
        ->capture_default_str()
        ->check(CLI::Range(0, kMaxLaunches));
    app_->add_option("--repeat", repeat_, "timed samples; medians are reported")
        ->capture_default_str()
        ->check(CLI::Range(1, kMaxLaunches));
    app_->add_option("--compare", compare_texts_,
                     "another config to time on the same buffers after the default (or the knobs given): its knobs "
                     "in one argument, e.g. --compare \"--row registers --per-thread 4\" (those not given at the "
                     "built-in defaults); repeatable");
    app_->add_option("--rounds", rounds_, "times every config this many times, in turn (with --compare: an A/B)")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    app_->add_option("--csv", csv_path_, "write the rows as CSV to this file");
    app_->add_option("--json", json_path_, "write the rows as JSON to this file");
    app_->add_option("--db", db_path_, "kernel database (default: $KPLAY_DB, else the cache dir)");
    app_->add_flag("--no-db", no_db_,
                   "ignore your database: the shipped tunings, else the device model (KPLAY_SHIPPED_TUNINGS=off: "
                   "the model alone)");
    add_timeout_flag(*app_, timeout_);
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    std::vector<std::uint64_t> sizes;
    if (!shape_text_.empty()) {
      const auto dims = parse_shape(shape_text_);
      sizes.push_back(shape_elements(dims));
      check_elements(sizes.front(), "--shape");
      const RowDims rd = row_dims(dims, dim_text_);
      rows_ = rd.rows;
      inner_ = rd.inner;
      shape_ = shape_string(dims) + (app_->count("--dim") ? "@" + dim_text_ : std::string());
    } else {
      sizes = parse_size_list(n_text_);
      for (auto n : sizes) check_elements(n, "--n");
    }
    check_output_file(csv_path_, "--csv");  // before the sweep, not after it
    check_output_file(json_path_, "--json");
    if (csv_path_ == "-" && json_path_ == "-")
      throw Error(ErrorCode::invalid_argument,
                  "--csv - and --json - would both write to standard output: give one of them a file");
    // With --csv - or --json -, standard output is that document alone; the table goes to stderr.
    std::FILE* table = csv_path_ == "-" || json_path_ == "-" ? stderr : stdout;
    flags_.resolve_backend(table);
    std::vector<KernelSpec> specs;
    for (const auto& a : flags_.activation_list()) {
      std::stringstream ss(flags_.dtype);
      for (std::string d; std::getline(ss, d, ',');) {
        KernelSpec s;
        s.activation = a;
        s.dtype = parse_dtype(d);
        s.direction = parse_direction(flags_.direction);
        s.saved = parse_saved(flags_.saved);
        if (resolve_activation(a).is_row()) s.saved = Saved::output;  // the one backward there is
        s.out = parse_out_dtype(flags_.out_dtype);
        specs.push_back(s);
      }
    }
    specs = buildable_specs(std::move(specs), flags_.config(), generic_limits(flags_.backend));
    compares_.clear();
    for (const auto& text : compare_texts_) compares_.push_back(parse_compare(text));
    for (const auto& spec : specs)  // a compared config that cannot run a spec, refused before any device work
      for (const Compare& c : compares_) try {
          resolve_config(spec, c.config, generic_limits(flags_.backend));
        } catch (const Error& e) {
          throw Error(e.code(), "--compare '" + c.text + "': " + e.what());
        }
    bool any_row = false;
    for (const auto& spec : specs) any_row |= resolve_activation(spec.activation).is_row();
    if (app_->count("--dim") && (!any_row || shape_text_.empty()))
      throw Error(ErrorCode::invalid_argument,
                  "--dim is for the row activations (" + row_activation_names() + "), with --shape");
    for (const auto& spec : specs)
      if (resolve_activation(spec.activation).is_row() && shape_text_.empty())
        throw Error(ErrorCode::invalid_argument,
                    spec.activation +
                        " runs over rows: give --shape ROWSxCOLS (e.g. --shape 4096x1024; it runs over the last "
                        "dimension) instead of --n");
    for (const auto& spec : specs)
      for (auto n : sizes)
        if (n % 2 && resolve_activation(spec.activation).gated)
          throw Error(ErrorCode::invalid_argument, "--n " + std::to_string(n) +
                                                       ": a gated activation's input is [..., 2d] (a, then b), so its "
                                                       "size must be even (bench runs one row of n)");

    std::uint64_t most_bytes = 0;
    for (const auto& spec : specs)
      for (auto n : sizes) most_bytes = std::max(most_bytes, launch_bytes(spec, n));
    arm_watchdog(timeout_seconds(*app_, timeout_, most_bytes));
    auto backend = watched(rt::make_backend(flags_.backend, flags_.device));
    const rt::DeviceInfo& dev = backend->info();
    std::unique_ptr<KernelDatabase> db;
    if (!no_db_) {
      KernelDatabase::Options o;
      o.path = db_path_;
      db = std::make_unique<KernelDatabase>(o);
    }
    for (const auto& spec : specs)
      for (auto n : sizes) check_fits_device(dev, spec, n, 1, shape_text_.empty() ? "--n" : "--shape");
    Engine engine(*backend, db.get());
    std::fprintf(table, "device: %s [%d] %s (%s)\n", dev.backend.c_str(), dev.index, dev.name.c_str(),
                 dev.arch.c_str());
    std::fprintf(table, "%-10s %-8s %-5s %12s %5s %10s %10s %9s %9s %7s  %s\n", "activation", "dir", "dtype",
                 shape_text_.empty() ? "n" : "shape", "sets", "kernel ms", "copy ms", "GB/s", "copy GB/s", "% copy",
                 "config");
    std::vector<Row> rows;
    int status = kExitOk;
    for (const auto& spec : specs)
      for (auto n : sizes) {
        const watchdog::Activity doing(to_string(spec) + ", " + std::to_string(n) + " elements");
        working_on(spec);
        for (const Row& r : measure(engine, db.get(), spec, n, table)) {
          if (!r.verified) status = kExitFailed;
          rows.push_back(r);
        }
      }
    write_files(rows);
    return status;
  }

 private:
  // A --compare argument: config knobs alone (the others at the built-in defaults), parsed as the
  // command's own; anything else is refused naming the argument.
  struct Compare {
    KernelConfig config;
    bool vec = false, row_threads = false;  // given: strided rows keep them
    std::string text;
  };
  static Compare parse_compare(const std::string& text) {
    CLI::App knobs("--compare");
    ConfigFlags f;
    add_config_flags(knobs, f, false, KnobDefaults::fixed);
    try {
      knobs.parse(text, false);
    } catch (const CLI::ParseError& e) {
      throw Error(ErrorCode::invalid_argument, "--compare '" + text + "': " + e.what());
    }
    for (const char* other : {"--act", "--dtype", "--direction", "--saved", "--out-dtype", "--backend", "--device"})
      if (knobs.count(other))
        throw Error(ErrorCode::invalid_argument, "--compare '" + text + "': config knobs only (" + other +
                                                     " is the command's, for every config it times)");
    if (!f.knobs_given(knobs) && !knobs.count("--recompute-terms"))
      throw Error(ErrorCode::invalid_argument,
                  "--compare '" + text + "': no config knob given (e.g. --compare \"--per-thread 4\")");
    Compare c;
    c.config = f.config();
    c.vec = knobs.count("--vec") > 0;
    c.row_threads = knobs.count("--row-threads") > 0;
    c.text = text;
    return c;
  }

  // The rows of spec at n: its config (and each --compare's) checked on one problem, then timed
  // against the copy on the same buffer sets, each in turn, --rounds times; each row printed as
  // it is measured.
  std::vector<Row> measure(Engine& engine, KernelDatabase* db, const KernelSpec& spec, std::uint64_t n,
                           std::FILE* table) {
    rt::Backend& be = engine.backend();
    // A row activation's rows: the other dimensions of --shape, each row its last.
    const bool row = resolve_activation(spec.activation).is_row();
    const bool strided = row && inner_ > 1;  // --dim other than the last: strided rows
    const Layout layout = strided ? Layout::strided : Layout::flat;
    const ConfigChoice choice =
        flags_.choose(*app_, db, engine, spec, n, row ? rows_ : 0, row && rows_ ? n / rows_ : 0, strided);
    std::vector<ConfigChoice> choices{choice};
    for (const Compare& c : compares_) {
      ConfigChoice k;
      k.config = c.config;
      if (strided && !c.vec) k.config.vec = 1;
      if (strided && !c.row_threads) k.config.row_threads = 1;
      k.layer = "--compare";
      k.source = c.text;
      choices.push_back(k);
    }
    // A gated activation's n elements are one row [1, n] of its input (d = n / 2). A row
    // activation's problem moves what the op must (forward: x read, y written; backward: y and g
    // read, the gradient written), and its copy is of the input's bytes, read and written.
    std::vector<std::unique_ptr<DeviceProblem>> problems;
    ProblemShape shape;
    shape.n = n;
    if (row) shape.rows = rows_;
    if (row) shape.inner = inner_;
    shape.seed = 1;
    problems.push_back(make_problem(be, spec, shape));
    // Each config built and checked on that problem; a compared one the device cannot build or
    // launch for these rows (a row longer than it holds) is refused naming it.
    std::vector<std::shared_ptr<const PreparedKernel>> kernels;
    std::vector<bool> verified;
    for (std::size_t k = 0; k < choices.size(); ++k) try {
        kernels.push_back(engine.prepare(spec, choices[k].config, layout));
        problems[0]->launch(engine, *kernels[k]);
        be.synchronize();
        verified.push_back(problems[0]->verify(true).mismatches == 0);
      } catch (const Error& e) {
        if (k == 0) throw;
        throw Error(e.code(), "--compare '" + choices[k].source + "': " + e.what());
      }
    // Timed on ordinary inputs (ProblemShape::ordinary), not the check's specials, tails and edge
    // rows, which send some kernels down slow or exact paths; the checked problem goes first.
    if (has_ordinary_inputs(spec)) {
      shape.ordinary = true;
      problems[0].reset();
      problems[0] = make_problem(be, spec, shape);
    }
    const std::size_t set_count = buffer_sets(be.info(), problems[0]->bytes_moved());
    for (std::size_t i = 1; i < set_count; ++i) {
      shape.seed = 1 + i;
      problems.push_back(make_problem(be, spec, shape));
    }
    std::vector<const DeviceProblem*> sets;
    sets.reserve(problems.size());
    for (const auto& p : problems) sets.push_back(p.get());
    std::vector<Row> rows;
    for (int round = 1; round <= rounds_; ++round)
      for (std::size_t k = 0; k < kernels.size(); ++k) {
        Row r;
        r.device = be.info().name;
        r.activation = spec.activation;
        r.direction = to_string(spec.direction);
        r.dtype = to_string(spec.dtype);
        r.n = n;
        r.shape = shape_;
        r.round = round;
        r.config = to_string(kernels[k]->config);
        r.source = choices[k].source.empty() ? choices[k].layer : choices[k].layer + ": " + choices[k].source;
        r.verified = verified[k];
        r.buffer_sets = set_count;
        const BenchResult b = bench_against_copy(engine, *kernels[k], sets, warmup_, repeat_);
        r.kernel_ms = b.kernel.median_ms;
        r.copy_ms = b.copy.median_ms;
        r.kernel_bytes = b.kernel_bytes;
        r.copy_bytes = b.copy_bytes;
        r.kernel_gbps = b.kernel_gbps;
        r.copy_gbps = b.copy_gbps;
        r.ratio = b.ratio;
        const std::string size = shape_text_.empty() ? std::to_string(n) : shape_;
        std::fprintf(table, "%-10s %-8s %-5s %12s %5zu %10.4f %10.4f %9.1f %9.1f %6.1f%%  %s%s\n", r.activation.c_str(),
                     r.direction.c_str(), r.dtype.c_str(), size.c_str(), r.buffer_sets, r.kernel_ms, r.copy_ms,
                     r.kernel_gbps, r.copy_gbps, 100.0 * r.ratio, r.config.c_str(), r.verified ? "" : "  WRONG OUTPUT");
        std::fflush(table);
        rows.push_back(r);
      }
    return rows;
  }

  void write_files(const std::vector<Row>& rows) const {
    if (!csv_path_.empty()) {
      std::ostringstream f;
      f << "device,activation,direction,dtype,n,buffer_sets,kernel_ms,copy_ms,kernel_bytes,copy_bytes,kernel_gbps,"
           "copy_gbps,ratio,verified,config,config_source\n";
      for (const auto& r : rows)
        f << '"' << r.device << "\"," << r.activation << ',' << r.direction << ',' << r.dtype << ',' << r.n << ','
          << r.buffer_sets << ',' << r.kernel_ms << ',' << r.copy_ms << ',' << r.kernel_bytes << ',' << r.copy_bytes
          << ',' << r.kernel_gbps << ',' << r.copy_gbps << ',' << r.ratio << ',' << (r.verified ? 1 : 0) << ",\""
          << r.config << "\",\"" << r.source << "\"\n";
      write_output_file(csv_path_, f.str(), "--csv");
    }
    if (!json_path_.empty()) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& r : rows) {
        out.push_back({{"device", r.device},
                       {"activation", r.activation},
                       {"direction", r.direction},
                       {"dtype", r.dtype},
                       {"n", r.n},
                       {"buffer_sets", r.buffer_sets},
                       {"kernel_ms", r.kernel_ms},
                       {"copy_ms", r.copy_ms},
                       {"kernel_bytes", r.kernel_bytes},
                       {"copy_bytes", r.copy_bytes},
                       {"kernel_gbps", r.kernel_gbps},
                       {"copy_gbps", r.copy_gbps},
                       {"ratio", r.ratio},
                       {"verified", r.verified},
                       {"config", r.config},
                       {"config_source", r.source},
                       {"round", r.round}});
        if (!r.shape.empty()) out.back()["shape"] = r.shape;
      }
      write_output_file(json_path_, out.dump(2) + "\n", "--json");
    }
  }

  CLI::App* app_;
  ConfigFlags flags_;
  std::string n_text_ = "2^12..2^31", shape_text_, csv_path_, json_path_, db_path_;
  std::string shape_;        // --shape, normalized
  std::uint64_t rows_ = 0;   // --shape's rows: the elements over the length of --dim (the last)
  std::uint64_t inner_ = 1;  // their elements' distance: the product of the dimensions after --dim
  std::string dim_text_;
  std::vector<std::string> compare_texts_;
  std::vector<Compare> compares_;
  int warmup_ = 3, repeat_ = 15, rounds_ = 1;
  bool no_db_ = false;
  double timeout_ = 0;
};
}  // namespace

std::unique_ptr<Command> make_bench_command(CLI::App& parent) { return std::make_unique<BenchCommand>(parent); }

}  // namespace kplay::cli
