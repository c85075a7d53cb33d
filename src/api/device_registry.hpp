// The public API's engines: one backend + engine per device (CUDA ordinal, or OpenCL context and
// device), created on first use and kept for the life of the process, all sharing one kernel
// database for binaries and tuned configs. Thread-safe.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "database/kernel_database.hpp"
#include "engine/engine.hpp"
#include "kplay/kplay.hpp"  // Backend

namespace kplay::api {

class DeviceEngine {
 public:
  DeviceEngine(std::unique_ptr<rt::Backend> backend, KernelDatabase* db);
  Engine& engine() { return *engine_; }
  rt::Backend& backend() { return *backend_; }
  // The kernel for spec at size n: config from the database (nearest size bucket, device ->
  // architecture -> default), remembered per (spec, bucket) so repeat calls skip the lookup.
  std::shared_ptr<const PreparedKernel> kernel(const KernelSpec& spec, std::uint64_t n);
  // The same kernel if an earlier call already prepared it, else nullptr (no lookup, no compile).
  std::shared_ptr<const PreparedKernel> cached_kernel(const KernelSpec& spec, std::uint64_t n);
  // kernel(), for a launch on `queue`: a first use compiles or loads, which a CUDA graph capture
  // does not allow, so on a capturing CUDA stream it refuses with a message saying to warm up.
  std::shared_ptr<const PreparedKernel> kernel_for_launch(const KernelSpec& spec, std::uint64_t n, Backend backend,
                                                          void* queue);
  // A row activation's kernel for `rows` rows of `cols` elements (tuner/config_lookup.hpp's
  // choose_row_config), remembered per (spec, size bucket, cols); on a capturing CUDA stream a
  // first use refuses as kernel_for_launch does. inner > 1: strided rows (elements inner apart),
  // the kernel of tuner/row_defaults.hpp's strided_row_config, remembered per (spec, cols).
  std::shared_ptr<const PreparedKernel> row_kernel_for_launch(const KernelSpec& spec, std::uint64_t rows,
                                                              std::uint64_t cols, Backend backend, void* queue,
                                                              std::uint64_t inner = 1);
  // The engine's launch, which refuses on a capturing CUDA stream where `args` need the kernel's
  // general twin (pointers, pitches or a row length off the vector) and no launch has built it yet.
  void launch(const PreparedKernel& kernel, const rt::KernelArgs& args, Backend backend, void* queue);

 private:
  std::unique_ptr<rt::Backend> backend_;
  KernelDatabase* db_;
  std::unique_ptr<Engine> engine_;
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<const PreparedKernel>> kernels_;
};

// The spec of an API call: the activation's canonical text, and the direction and saved tensor
// checked against what the activation has (Error unsupported otherwise). A row activation (the
// softmax family) is refused here: its calls are row_call.hpp's.
KernelSpec checked_spec(const std::string& activation, Dtype dtype, Direction direction, Saved saved);

// The engine of CUDA device `ordinal`.
DeviceEngine& cuda_engine(int ordinal);
// The engine of the context and device of an OpenCL command queue.
DeviceEngine& opencl_engine(void* queue);

}  // namespace kplay::api
