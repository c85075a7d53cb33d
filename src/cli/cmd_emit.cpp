// `kplay emit`: the specialized source of a kernel, or with --ptx its PTX from NVRTC. Needs no
// device: configs are checked against the backend's general limits.
#include <cstdio>

#include "codegen/codegen.hpp"
#include "codegen/config_validation.hpp"
#include "command.hpp"
#include "config_flags.hpp"
#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"

namespace kplay::cli {
namespace {
class EmitCommand : public Command {
 public:
  explicit EmitCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("emit", "print a specialized kernel's source, or its PTX (no GPU needed)");
    add_config_flags(*app_, flags_, false);
    app_->add_flag("--ptx", ptx_, "compile with NVRTC and print the PTX");
    app_->add_option("--arch", arch_, "with --ptx: target architecture, e.g. sm_90")->capture_default_str();
    app_->add_option("--fast-fp64", fast_fp64_,
                     "render for a device with fast FP64 (1: float32 math in double, as on an H100; 0: float-float)")
        ->check(CLI::Range(0, 1))
        ->capture_default_str();
    app_->add_option("--layout", layout_,
                     "flat: the kernel for one vector-aligned run below 2^31 elements (what contiguous "
                     "buffers get); general: any rows, pitches, offsets and sizes")
        ->check(CLI::IsMember({"flat", "general"}))
        ->capture_default_str();
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    flags_.resolve_backend(false);
    const KernelSpec spec = flags_.spec(flags_.activations);
    const TargetLimits limits = generic_limits(flags_.backend);
    Dialect dialect = dialect_for(flags_.backend);
    dialect.fast_fp64 = fast_fp64_ != 0;
    const KernelConfig config = resolve_config(spec, flags_.config(), limits);
    // A config with the flat kernel off launches only the general one, so that is what it prints.
    const bool flat = layout_ == "flat" && config.flat;
    const RenderedKernel k = render_kernel(spec, config, dialect, flat ? Layout::flat : Layout::general);
    if (!ptx_) {
      std::fputs(k.source.c_str(), stdout);
      std::fprintf(stderr, "entry %s, options [%s], hash %s\n", k.entry.c_str(), k.options_string().c_str(),
                   k.hash.c_str());
      return kExitOk;
    }
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
  bool ptx_ = false;
  std::string arch_ = "sm_90";
  int fast_fp64_ = 0;
  std::string layout_ = "flat";
};
}  // namespace

std::unique_ptr<Command> make_emit_command(CLI::App& parent) { return std::make_unique<EmitCommand>(parent); }

}  // namespace kplay::cli
