// Kernel preparation and launch; see engine.hpp.
#include "engine.hpp"

#include <algorithm>

#include "codegen/config_validation.hpp"
#include "device_fingerprint.hpp"
#include "kplay/error.hpp"
#include "launch_geometry.hpp"
#include "launch_layout.hpp"
#include "spec/activations.hpp"
#include "util/hash.hpp"

namespace kplay {

Engine::Engine(rt::Backend& backend, BinaryStore* store)
    : backend_(backend), store_(store), handles_are_addresses_(backend.info().backend != "opencl") {}

std::string request_key(const KernelSpec& spec, const KernelConfig& c, Layout layout) {
  return to_string(spec) + "|" + to_string(c) + "|" + to_string(layout);
}

std::string Engine::fingerprint() const { return device_fingerprint(backend_.info()); }

std::shared_ptr<const PreparedKernel> Engine::prepare(const KernelSpec& spec, const KernelConfig& config,
                                                      Layout layout) {
  if (!config.flat && layout == Layout::flat) layout = Layout::general;
  const std::string key = request_key(spec, config, layout);
  std::promise<std::shared_ptr<PreparedKernel>> promise;
  std::shared_future<std::shared_ptr<PreparedKernel>> future;
  bool builder = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      future = it->second;
    } else {
      future = promise.get_future().share();
      cache_.emplace(key, future);
      builder = true;
    }
  }
  if (builder) {
    try {
      promise.set_value(build(spec, config, layout));
    } catch (...) {
      {  // forget the failure so a later call (after a fix, e.g. of a template) tries again
        std::lock_guard<std::mutex> lock(mutex_);
        cache_.erase(key);
      }
      promise.set_exception(std::current_exception());
    }
  }
  return future.get();
}

std::shared_ptr<PreparedKernel> Engine::build(const KernelSpec& spec, const KernelConfig& config, Layout layout) {
  const auto start = std::chrono::steady_clock::now();
  auto k = std::make_shared<PreparedKernel>();
  k->spec = spec;
  k->config = resolve_config(spec, config, backend_.limits());
  k->layout = layout;
  k->gated = resolve_activation(spec.activation).gated;
  k->row = resolve_activation(spec.activation).is_row();
  k->rendered = render_kernel(spec, k->config, backend_.dialect(), layout);
  k->binary_key = hash_hex({k->rendered.hash, fingerprint()});

  rt::Binary binary;
  auto load_stored = [&] {
    if (!store_ || !store_->get(k->binary_key, binary)) return;
    try {
      k->loaded = backend_.load(binary, k->rendered.entry);
      k->origin = "binary store";
    } catch (const Error&) {
      store_->drop(k->binary_key);  // stale or corrupt: never serve it again
      k->loaded.reset();
    }
  };
  load_stored();
  std::unique_ptr<BinaryStore::KeyLock> lock;
  if (!k->loaded && store_) {
    lock = store_->lock(k->binary_key);  // another process may be compiling it right now
    load_stored();
  }
  if (!k->loaded) {
    binary = backend_.compile(k->rendered);
    k->loaded = backend_.load(binary, k->rendered.entry);
    k->origin = "compiled";
    if (store_) store_->put(k->binary_key, binary);
  }
  k->binary_format = binary.format;
  k->binary_bytes = binary.bytes.size();
  k->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return k;
}

bool Engine::runs_itself(const PreparedKernel& k, const rt::KernelArgs& args) const {
  if (k.layout != Layout::flat) return true;
  const std::size_t vec_bytes = static_cast<std::size_t>(k.config.vec) * dtype_size(k.spec.dtype);
  const std::size_t out_vec_bytes = static_cast<std::size_t>(k.config.vec) * out_size(k.spec);
  const bool reads_in1 = k.gated || k.spec.direction == Direction::backward;
  return k.row ? row_whole(args, reads_in1, vec_bytes, dtype_size(k.spec.dtype), handles_are_addresses_)
               : flat_elements(args, reads_in1, vec_bytes, handles_are_addresses_, out_vec_bytes) != 0;
}

bool Engine::built_for(const PreparedKernel& k, const rt::KernelArgs& args) const {
  if (runs_itself(k, args)) return true;
  std::lock_guard<std::mutex> lock(k.general_mutex);
  return k.general != nullptr;
}

const PreparedKernel& Engine::kernel_for(const PreparedKernel& k, const rt::KernelArgs& args) {
  if (runs_itself(k, args)) return k;
  std::lock_guard<std::mutex> lock(k.general_mutex);
  // Through the cache: flat kernels whose configs resolve alike share one twin, and a twin
  // prepared ahead (the tests' warm-up) is found. k.config is resolved.
  if (!k.general) k.general = prepare(k.spec, k.config, Layout::general);
  return *k.general;
}

void Engine::launch(const PreparedKernel& k, const rt::KernelArgs& args, void* stream) {
  if (args.rows == 0 || args.cols == 0) return;  // nothing to do; a zero-sized grid is an error
  const PreparedKernel& run = kernel_for(k, args);
  if (run.row) {
    backend_.launch(*run.loaded, row_launch_dims(run.spec, run.config, args.rows, args.cols, backend_.limits()), args,
                    stream);
  } else if (run.layout == Layout::wgrad_parts || run.layout == Layout::wgrad_sum) {
    rt::LaunchDims dims;
    dims.block = static_cast<unsigned>(run.config.block);
    dims.grid_x =
        run.layout == Layout::wgrad_parts ? args.channels * args.parts : (args.channels + dims.block - 1) / dims.block;
    backend_.launch(*run.loaded, dims, args, stream);
  } else if (run.layout == Layout::flat) {  // one run of n elements
    rt::KernelArgs flat = args;
    flat.cols = flat.ld_out = flat.ld_in0 = flat.ld_in1 = flat.ld_out1 = flat.ld_in2 = args.rows * args.cols;
    flat.rows = 1;
    backend_.launch(*run.loaded, launch_dims(run.config, 1, flat.cols, backend_.info()), flat, stream);
  } else {
    backend_.launch(*run.loaded, launch_dims(run.config, args.rows, args.cols, backend_.info()), args, stream);
  }
}

std::uint64_t prelu_weight_grad_parts(std::uint64_t n, std::uint64_t channels) {
  const std::uint64_t per_channel = channels ? n / channels : 0;
  // About 16 Ki elements a block, and at most 256 parts: enough blocks to fill a GPU for one
  // weight in all, few enough that the sums stay short.
  const std::uint64_t parts = (per_channel + (1u << 14) - 1) >> 14;
  return std::min<std::uint64_t>(std::max<std::uint64_t>(parts, 1), 256);
}

std::uint64_t prelu_workspace_bytes(Dtype dtype, std::uint64_t n, std::uint64_t channels) {
  return channels * prelu_weight_grad_parts(n, channels) * (dtype == Dtype::f64 ? 8 : 4);
}

bool reads_second_input(const KernelSpec& spec) {
  return spec.direction == Direction::backward || resolve_activation(spec.activation).gated;
}

rt::KernelArgs flat_args(rt::DevicePtr out, rt::DevicePtr in0, rt::DevicePtr in1, std::uint64_t n) {
  rt::KernelArgs a;
  a.out = out;
  a.in0 = in0;
  a.in1 = in1;
  a.rows = 1;
  a.cols = n;
  a.ld_out = a.ld_in0 = a.ld_in1 = n;
  return a;
}

rt::KernelArgs flat_args(const PreparedKernel& k, rt::DevicePtr out, rt::DevicePtr in0, rt::DevicePtr in1,
                         std::uint64_t n) {
  return flat_args(out, in0, k.gated || k.spec.direction == Direction::backward ? in1 : in0, n);
}

void Engine::launch_flat(const PreparedKernel& k, rt::DevicePtr out, rt::DevicePtr in0, rt::DevicePtr in1,
                         std::uint64_t n, void* stream) {
  launch(k, flat_args(k, out, in0, in1, n), stream);
}

}  // namespace kplay
