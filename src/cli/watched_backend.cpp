// See watched_backend.hpp.
#include "watched_backend.hpp"

#include "util/watchdog.hpp"

namespace kplay::cli {
namespace {

class WatchedBackend : public rt::Backend {
 public:
  explicit WatchedBackend(std::unique_ptr<rt::Backend> inner) : inner_(std::move(inner)) {}

  const rt::DeviceInfo& info() const override { return inner_->info(); }
  const rt::TargetLimits& limits() const override { return inner_->limits(); }
  rt::Dialect dialect() const override { return inner_->dialect(); }
  rt::Binary compile(const rt::RenderedKernel& kernel) override {
    const watchdog::Wait wait("compile", watchdog::WaitFor::compiler);
    return inner_->compile(kernel);
  }
  std::unique_ptr<rt::LoadedKernel> load(const rt::Binary& binary, const std::string& entry) override {
    const watchdog::Wait wait("load", watchdog::WaitFor::compiler);  // PoCL finishes compiling here
    return inner_->load(binary, entry);
  }
  void launch(rt::LoadedKernel& kernel, const rt::LaunchDims& dims, const rt::KernelArgs& args, void* stream) override {
    const watchdog::Wait wait("launch");
    inner_->launch(kernel, dims, args, stream);
  }
  rt::DevicePtr allocate(std::uint64_t bytes) override { return inner_->allocate(bytes); }
  void release(rt::DevicePtr ptr) noexcept override { inner_->release(ptr); }
  void upload(rt::DevicePtr dst, const void* src, std::uint64_t bytes) override {
    const watchdog::Wait wait("upload");
    inner_->upload(dst, src, bytes);
  }
  void download(void* dst, rt::DevicePtr src, std::uint64_t bytes) override {
    const watchdog::Wait wait("download");
    inner_->download(dst, src, bytes);
  }
  void fill_bytes(rt::DevicePtr dst, unsigned char value, std::uint64_t bytes) override {
    const watchdog::Wait wait("fill");
    inner_->fill_bytes(dst, value, bytes);
  }
  void copy(rt::DevicePtr dst, rt::DevicePtr src, std::uint64_t bytes) override {
    const watchdog::Wait wait("copy");
    inner_->copy(dst, src, bytes);
  }
  double time_ms(const std::function<void()>& work) override {
    const watchdog::Wait wait("timed launches");
    return inner_->time_ms(work);
  }
  void synchronize() override {
    const watchdog::Wait wait("synchronize");
    inner_->synchronize();
  }

 private:
  std::unique_ptr<rt::Backend> inner_;
};

}  // namespace

std::unique_ptr<rt::Backend> watched(std::unique_ptr<rt::Backend> backend) {
  return std::make_unique<WatchedBackend>(std::move(backend));
}

}  // namespace kplay::cli
