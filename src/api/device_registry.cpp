// Per-device engines for the public API; see device_registry.hpp.
#include "device_registry.hpp"

#include "kplay/error.hpp"
#include "runtime/backend_factory.hpp"
#include "spec/activations.hpp"
#include "tuner/config_lookup.hpp"
#include "tuner/row_defaults.hpp"

namespace kplay::api {
namespace {
std::mutex registry_mutex;
std::unordered_map<std::string, std::unique_ptr<DeviceEngine>>& registry() {
  static std::unordered_map<std::string, std::unique_ptr<DeviceEngine>> engines;
  return engines;
}

// One database per process, opened on first use (KPLAY_DB or the default path). It never fails:
// an unusable file becomes an in-memory database with one warning.
KernelDatabase* database() {
  static KernelDatabase db(KernelDatabase::Options{});
  return &db;
}

template <class Make>
DeviceEngine& find_or_make(const std::string& key, Make make) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  auto& engines = registry();
  auto it = engines.find(key);
  if (it != engines.end()) return *it->second;
  auto engine = std::make_unique<DeviceEngine>(make(), database());
  return *engines.emplace(key, std::move(engine)).first->second;
}
}  // namespace

DeviceEngine::DeviceEngine(std::unique_ptr<rt::Backend> backend, KernelDatabase* db)
    : backend_(std::move(backend)), db_(db), engine_(std::make_unique<Engine>(*backend_, db)) {}

namespace {
std::string kernel_key(const KernelSpec& spec, std::uint64_t n) {
  return to_string(spec) + "#" + std::to_string(size_bucket(n));
}
}  // namespace

std::shared_ptr<const PreparedKernel> DeviceEngine::cached_kernel(const KernelSpec& spec, std::uint64_t n) {
  const std::string key = kernel_key(spec, n);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = kernels_.find(key);
  return it == kernels_.end() ? nullptr : it->second;
}

std::shared_ptr<const PreparedKernel> DeviceEngine::kernel(const KernelSpec& spec, std::uint64_t n) {
  const std::string key = kernel_key(spec, n);
  if (auto k = cached_kernel(spec, n)) return k;
  const ConfigChoice choice = choose_config(db_, *engine_, spec, n);
  auto k = engine_->prepare(spec, choice.config);
  std::lock_guard<std::mutex> lock(mutex_);
  kernels_.emplace(key, k);
  return k;
}

std::shared_ptr<const PreparedKernel> DeviceEngine::kernel_for_launch(const KernelSpec& spec, std::uint64_t n,
                                                                      Backend backend, void* queue) {
  if (auto k = cached_kernel(spec, n)) return k;
  if (backend == Backend::cuda && rt::interop::cuda_stream_is_capturing(queue))
    throw Error(ErrorCode::unsupported,
                "kplay: '" + to_string(spec) + "' for " + std::to_string(n) +
                    " elements is not compiled yet and the stream is being captured into a CUDA graph; call it "
                    "once with the same activation, dtype and size before the capture (warm-up)");
  return kernel(spec, n);
}

std::shared_ptr<const PreparedKernel> DeviceEngine::row_kernel_for_launch(const KernelSpec& spec, std::uint64_t rows,
                                                                          std::uint64_t cols, Backend backend,
                                                                          void* queue, std::uint64_t inner) {
  const bool strided = inner > 1;
  const std::string key = strided ? kernel_key(spec, 0) + "strided" + std::to_string(cols)
                                  : kernel_key(spec, rows * cols) + "x" + std::to_string(cols);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = kernels_.find(key);
    if (it != kernels_.end()) return it->second;
  }
  if (backend == Backend::cuda && rt::interop::cuda_stream_is_capturing(queue))
    throw Error(ErrorCode::unsupported,
                "kplay: '" + to_string(spec) + "' for rows of " + std::to_string(cols) +
                    " elements is not compiled yet and the stream is being captured into a CUDA graph; call it "
                    "once with the same activation, dtype and shape before the capture (warm-up)");
  auto k = strided ? engine_->prepare(spec, strided_row_config(spec, cols), Layout::strided)
                   : engine_->prepare(spec, choose_row_config(db_, *engine_, spec, rows, cols).config);
  std::lock_guard<std::mutex> lock(mutex_);
  kernels_.emplace(key, k);
  return k;
}

void DeviceEngine::launch(const PreparedKernel& kernel, const rt::KernelArgs& args, Backend backend, void* queue) {
  const bool empty = args.rows == 0 || args.cols == 0;  // the engine launches nothing
  if (backend == Backend::cuda && !empty && !engine_->built_for(kernel, args) &&
      rt::interop::cuda_stream_is_capturing(queue))
    throw Error(ErrorCode::unsupported,
                "kplay: '" + to_string(kernel.spec) +
                    "' on these buffers (a pointer, row pitch or row length off the kernel's vector) takes its "
                    "general kernel, which is not compiled yet, and the stream is being captured into a CUDA "
                    "graph; call it once on buffers laid out the same way before the capture (warm-up)");
  engine_->launch(kernel, args, queue);
}

KernelSpec checked_spec(const std::string& activation, Dtype dtype, Direction direction, Saved saved) {
  const ResolvedActivation act = resolve_activation(activation);
  if (act.is_row())
    throw Error(ErrorCode::invalid_argument, "'" + act.canonical +
                                                 "' is a row activation (each output depends on its whole row): "
                                                 "kplay::softmax_forward / softmax_backward take its rows");
  if (act.slope == SlopeForm::weight)
    throw Error(ErrorCode::invalid_argument, "prelu takes a weight tensor: kplay::prelu_forward / prelu_backward");
  if (act.slope == SlopeForm::random)
    throw Error(ErrorCode::invalid_argument,
                "training(rrelu) takes a seed: kplay::rrelu_forward / rrelu_backward with training = true");
  if (direction == Direction::backward && !act.has_backward())
    throw Error(ErrorCode::unsupported, "activation '" + act.canonical + "' has no backward pass");
  if (direction == Direction::backward && saved == Saved::output && !act.has_grad_from_output())
    throw Error(ErrorCode::unsupported,
                "activation '" + act.canonical + "' cannot recover its derivative from the saved output");
  KernelSpec s;
  s.activation = act.canonical;
  s.dtype = dtype;
  s.direction = direction;
  s.saved = direction == Direction::backward ? saved : Saved::input;
  return s;
}

DeviceEngine& cuda_engine(int ordinal) {
  return find_or_make("cuda:" + std::to_string(ordinal), [&] { return rt::make_backend("cuda", ordinal); });
}

DeviceEngine& opencl_engine(void* queue) {
  if (!queue) throw Error(ErrorCode::invalid_argument, "OpenCL calls need the cl_command_queue as their stream");
  return find_or_make(rt::interop::opencl_queue_identity(queue),
                      [&] { return rt::interop::make_opencl_backend_for_queue(queue); });
}

}  // namespace kplay::api
