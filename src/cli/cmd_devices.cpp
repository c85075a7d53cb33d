// `kplay devices`: every backend, whether it is usable, and its devices.
#include <cstdio>

#include "command.hpp"
#include "runtime/backend_factory.hpp"

namespace kplay::cli {
namespace {
class DevicesCommand : public Command {
 public:
  explicit DevicesCommand(CLI::App& parent) {
    app_ = parent.add_subcommand("devices", "list backends and devices (exits 0 when there are none)");
  }
  CLI::App* app() const override { return app_; }

  int run() override {
    std::size_t total = 0;
    for (const auto& r : rt::probe_backends()) {
      std::printf("%s: %s\n", r.backend.c_str(), r.status.c_str());
      if (!r.compiler.empty()) std::printf("  compiler: %s\n", r.compiler.c_str());
      for (const auto& d : r.devices) {
        ++total;
        std::printf("  [%d] %s\n", d.index, d.name.c_str());
        if (!d.platform.empty()) std::printf("      platform:     %s\n", d.platform.c_str());
        std::printf("      architecture: %s, %d compute units, max block %d\n", d.arch.c_str(), d.compute_units,
                    d.max_block);
        std::printf("      memory:       %.1f GiB", static_cast<double>(d.memory_bytes) / (1ull << 30));
        if (d.memory_bandwidth_gbps > 0) std::printf(", %.0f GB/s peak", d.memory_bandwidth_gbps);
        std::printf("\n");
        std::printf("      driver:       %s\n", d.driver_version.c_str());
        std::printf("      compiler:     %s%s%s\n", d.compiler_version.c_str(),
                    d.compile_target.empty() ? "" : ", builds ", d.compile_target.c_str());
        std::printf("      float32 math: %s\n",
                    d.fast_fp64 ? "in double (fast FP64; KPLAY_FP64_MATH=0 turns it off)" : "float-float");
        if (!d.note.empty()) std::printf("      note:         %s\n", d.note.c_str());
      }
    }
    if (total == 0) std::printf("no device found on any backend\n");
    return kExitOk;
  }

 private:
  CLI::App* app_;
};
}  // namespace

std::unique_ptr<Command> make_devices_command(CLI::App& parent) { return std::make_unique<DevicesCommand>(parent); }

}  // namespace kplay::cli
