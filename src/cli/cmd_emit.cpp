// `kplay emit`: the source of the kernel `kplay run` would launch, or with --ptx its PTX from
// NVRTC. It resolves --backend auto and the config as run does (ConfigFlags::resolve_backend and
// ConfigFlags::choose: the knobs given, else the tuning layers for --n, or for a row activation
// the row tunings of --shape's rows) and renders for the device. Where the backend has no device,
// it still prints: the knobs given (else the built-in defaults), rendered for the backend's general
// limits, and says so.
#include <chrono>
#include <cstdio>

#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "command.hpp"
#include "config_flags.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "util/size_parse.hpp"

namespace kplay::cli {
namespace {
class EmitCommand : public Command {
 public:
  explicit EmitCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("emit", "print the kernel `kplay run` would launch: its source, or its PTX");
    add_config_flags(*app_, flags_, false, KnobDefaults::tuned);
    auto* n = app_->add_option("--n", n_text_, "the problem size whose config the tuning layers give, as run's --n")
                  ->capture_default_str();
    auto* shape = app_->add_option("--shape", shape_text_,
                                   "instead of --n, as run's --shape: a row activation's config is that of rows of "
                                   "the last dimension's length (with --layout strided: strided rows of that length)");
    n->excludes(shape);
    app_->add_option("--db", db_path_, "kernel database (default: $KPLAY_DB, else the cache dir)");
    app_->add_flag("--no-db", no_db_, "as run's --no-db: the shipped tunings, else the device model");
    app_->add_flag("--ptx", ptx_, "compile with NVRTC and print the PTX (--backend auto: cuda)");
    app_->add_option("--arch", arch_, "with --ptx: target architecture, e.g. sm_90")->capture_default_str();
    app_->add_option("--fast-fp64", fast_fp64_,
                     "render for a device with fast FP64 (1: float32 math in double, as on an H100; 0: float-float; "
                     "default: the device's, 0 without one)")
        ->check(CLI::Range(0, 1));
    app_->add_option("--layout", layout_,
                     "flat: the kernel for one vector-aligned run below 2^31 elements (what contiguous "
                     "buffers get; a row activation's: rows of whole vectors, each on a vector); general: any "
                     "rows, pitches, offsets and sizes; strided: a row activation over a dim that is not the "
                     "last (run's --dim), with strided rows' knobs")
        ->check(CLI::IsMember({"flat", "general", "strided"}))
        ->capture_default_str();
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    // Everything typed is checked before any device work.
    const KernelSpec spec = flags_.spec(flags_.activations);
    std::uint64_t n = 0, cols = 0;  // cols: a row's length, the last dimension
    if (!shape_text_.empty()) {
      const auto dims = parse_shape(shape_text_);
      n = shape_elements(dims);
      cols = dims.back();
    } else {
      n = cols = parse_count(n_text_, "--n");
    }
    check_elements(n, shape_text_.empty() ? "--n" : "--shape");
    if (ptx_ && flags_.backend == "auto") flags_.backend = "cuda";  // PTX is CUDA's
    std::string no_device;
    try {
      flags_.resolve_backend(stderr);  // stdout is the kernel's
    } catch (const Error& e) {
      if (e.code() != ErrorCode::no_device) throw;
      flags_.backend = "cuda";
      no_device = e.what();
    }
    resolve_config(spec, flags_.config(), generic_limits(flags_.backend));  // refuses a bad knob
    std::unique_ptr<rt::Backend> backend;
    if (no_device.empty()) {
      try {
        backend = rt::make_backend(flags_.backend, flags_.device);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::no_device) throw;
        no_device = e.what();
      }
    }
    KernelConfig config;
    Dialect dialect;
    if (backend) {
      std::unique_ptr<KernelDatabase> db;
      if (!no_db_) {
        KernelDatabase::Options o;
        o.path = db_path_;
        db = std::make_unique<KernelDatabase>(o);
      }
      const Engine engine(*backend, db.get());
      const ConfigChoice choice =
          flags_.choose(*app_, db.get(), engine, spec, n, cols ? n / cols : 0, cols, layout_ == "strided");
      config = resolve_config(spec, choice.config, backend->limits());
      dialect = backend->dialect();
      const rt::DeviceInfo& dev = backend->info();
      std::fprintf(stderr, "device: %s [%d] %s (%s)\nconfig: %s\nlayer:  %s: %s\n", dev.backend.c_str(), dev.index,
                   dev.name.c_str(), dev.arch.c_str(), to_string(config).c_str(), choice.layer.c_str(),
                   choice.source.c_str());
    } else {
      config = resolve_config(spec, flags_.config(), generic_limits(flags_.backend));
      dialect = dialect_for(flags_.backend);
      std::fprintf(
          stderr,
          "no device (%s): the %s kernel of %s, for the backend's general limits; on a device, the "
          "config would come from the tuning layers\nconfig: %s\n",
          no_device.c_str(), flags_.backend.c_str(),
          flags_.knobs_given(*app_) ? "the knobs given (the others at the built-in defaults)" : "the built-in defaults",
          to_string(config).c_str());
    }
    if (app_->count("--fast-fp64") > 0) dialect.fast_fp64 = fast_fp64_ != 0;
    // A config with the flat kernel off launches only the general one, so that is what it prints.
    const bool flat = layout_ == "flat" && config.flat;
    const Layout layout = layout_ == "strided" ? Layout::strided : flat ? Layout::flat : Layout::general;
    const RenderedKernel k = render_kernel(spec, config, dialect, layout);
    if (!ptx_) {
      std::fputs(k.source.c_str(), stdout);
      std::fflush(stdout);  // the source first, where both go to one file
      std::fprintf(stderr, "entry %s, options [%s], hash %s\n", k.entry.c_str(), k.options_string().c_str(),
                   k.hash.c_str());
      return kExitOk;
    }
    working_on(spec);
    const rt::Binary ptx = rt::compile_offline(flags_.backend, k, arch_);
    // NVRTC's PTX ends in the NUL that cuModuleLoadData needs; text for ptxas and people does not.
    std::size_t size = ptx.bytes.size();
    while (size > 0 && ptx.bytes[size - 1] == '\0') --size;
    std::fwrite(ptx.bytes.data(), 1, size, stdout);
    return kExitOk;
  }

 private:
  CLI::App* app_;
  ConfigFlags flags_;
  std::string n_text_ = "2^24";
  std::string shape_text_;
  std::string db_path_;
  bool no_db_ = false;
  bool ptx_ = false;
  std::string arch_ = "sm_90";
  int fast_fp64_ = 0;
  std::string layout_ = "flat";
};
}  // namespace

std::unique_ptr<Command> make_emit_command(CLI::App& parent) { return std::make_unique<EmitCommand>(parent); }

}  // namespace kplay::cli
