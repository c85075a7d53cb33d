// The engine: from (spec, config) to a launched kernel on one backend. It resolves and checks
// the config, renders, compiles (or fetches the binary from a BinaryStore), loads, and keeps the
// result in an in-process cache so a repeat call costs one hash lookup. Thread-safe; concurrent
// requests for the same kernel compile it once and share it.
#pragma once
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "binary_store.hpp"
#include "codegen/codegen.hpp"
#include "runtime/backend.hpp"

namespace kplay {

struct PreparedKernel {
  KernelSpec spec;
  KernelConfig config;              // resolved
  Layout layout = Layout::general;  // the safe default for a kernel assembled by hand
  bool gated = false;               // gated(ACT): reads a and b (and a gated backward writes two outputs)
  bool row = false;                 // a row activation's kernel (templates/common/rowwise.h)
  RenderedKernel rendered;
  std::string binary_key;     // rendered.hash + device fingerprint
  std::string binary_format;  // "cubin", "ptx", ...
  std::size_t binary_bytes = 0;
  std::string origin;     // "compiled", "binary store"
  double compile_ms = 0;  // render + compile (or fetch) + load
  std::shared_ptr<rt::LoadedKernel> loaded;
  // A flat kernel's general twin, built by the first launch that does not fit the flat one.
  mutable std::mutex general_mutex;
  mutable std::shared_ptr<const PreparedKernel> general;
};

class Engine {
 public:
  explicit Engine(rt::Backend& backend, BinaryStore* store = nullptr);

  rt::Backend& backend() { return backend_; }
  const rt::Backend& backend() const { return backend_; }

  // Throws Error(invalid_config / compile_failed / ...). The returned kernel stays valid while
  // the engine lives. The flat layout (the default) still launches any arguments: those that do
  // not fit it go to the general kernel, compiled on first need.
  std::shared_ptr<const PreparedKernel> prepare(const KernelSpec& spec, const KernelConfig& config,
                                                Layout layout = Layout::flat);

  // Launches on `stream` (nullptr: the backend's own) over rows x cols with pitches in args.
  void launch(const PreparedKernel& kernel, const rt::KernelArgs& args, void* stream = nullptr);

  // The kernel that launch() runs for `args`: `kernel` itself, or its general twin.
  const PreparedKernel& kernel_for(const PreparedKernel& kernel, const rt::KernelArgs& args);
  // Whether launch(kernel, args) runs a kernel already built: false where it would build the
  // general twin first (a compile, which a CUDA graph capture does not allow).
  bool built_for(const PreparedKernel& kernel, const rt::KernelArgs& args) const;

  // Flat convenience: n contiguous elements; in1 is ignored for forward kernels.
  void launch_flat(const PreparedKernel& kernel, rt::DevicePtr out, rt::DevicePtr in0, rt::DevicePtr in1,
                   std::uint64_t n, void* stream = nullptr);

  // Fingerprint of the device and compiler: part of every binary key.
  std::string fingerprint() const;

 private:
  std::shared_ptr<PreparedKernel> build(const KernelSpec& spec, const KernelConfig& config, Layout layout);
  // Whether `args` fit the kernel itself (not its general twin).
  bool runs_itself(const PreparedKernel& kernel, const rt::KernelArgs& args) const;

  rt::Backend& backend_;
  BinaryStore* store_;
  bool handles_are_addresses_;  // CUDA device pointers; OpenCL cl_mem handles are not
  std::mutex mutex_;
  std::unordered_map<std::string, std::shared_future<std::shared_ptr<PreparedKernel>>> cache_;
};

// PReLU's weight gradient (prelu backward's Layout::wgrad_parts and wgrad_sum kernels): the parts
// each channel's n / channels elements are summed in (a function of the shape alone, so the sum's
// order and its result do not depend on the device or the config's block size other than through
// the tree within a block), and the workspace they need (channels x parts values of float; double
// for float64).
std::uint64_t prelu_weight_grad_parts(std::uint64_t n, std::uint64_t channels);
std::uint64_t prelu_workspace_bytes(Dtype dtype, std::uint64_t n, std::uint64_t channels);

// Whether spec's kernel reads in1: backward (the saved tensor) and gated (b) kernels do.
bool reads_second_input(const KernelSpec& spec);

// The arguments of n contiguous elements (one row), the buffers as given.
rt::KernelArgs flat_args(rt::DevicePtr out, rt::DevicePtr in0, rt::DevicePtr in1, std::uint64_t n);
// The same for kernel, with in1 replaced by in0 where the kernel does not read it. Not for a
// gated backward, which has five buffers (set gated_backward, out1 and in2 yourself).
rt::KernelArgs flat_args(const PreparedKernel& kernel, rt::DevicePtr out, rt::DevicePtr in0, rt::DevicePtr in1,
                         std::uint64_t n);

// Key of a request in the in-process cache (spec, config and layout, as text).
std::string request_key(const KernelSpec& spec, const KernelConfig& config, Layout layout = Layout::flat);

}  // namespace kplay
