// The backend seam. A backend (one folder under runtime/) describes its device, compiles a
// rendered kernel to a binary, loads it, launches it, and offers the few memory and timing
// operations that `kplay run`, the tuner and the tests need. Everything else (rendering,
// validation, launch geometry, caching, verification) lives in src/ and is shared; backends
// include nothing of src/ but src/util/.
//
// Thread-safety: a Backend may be used from several threads; implementations serialize what
// their API requires. Destructors never throw.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "target.hpp"

namespace kplay::rt {

struct DeviceInfo {
  std::string backend;  // "cuda", "opencl"
  int index = 0;        // index within the backend (OpenCL: over all platforms)
  std::string name;
  std::string platform;  // OpenCL platform; empty for CUDA
  std::string arch;      // "sm_90"; OpenCL: device version string
  std::string driver_version;
  std::string compiler_version;  // "NVRTC 13.0"; OpenCL: OpenCL C version
  std::uint64_t memory_bytes = 0;
  std::uint64_t max_alloc_bytes = 0;  // the largest single allocation; 0: memory_bytes
  int compute_units = 0;
  int max_threads_per_unit = 0;  // resident threads per SM / compute unit
  int max_block = 0;
  std::uint64_t l2_bytes = 0;  // last-level cache; 0 if unknown (the tuner then assumes 64 MiB)
  // Memory system, for the default-config model (src/tuner/default_model.hpp); 0 if unknown.
  double memory_bandwidth_gbps = 0;  // peak DRAM bandwidth: 2 x memory clock x bus width / 8
  int max_blocks_per_unit = 0;       // resident blocks per SM / compute unit
  double clock_ghz = 0;              // SM clock (CUDA: its typical clock), for the same model
  // FP64 at >= 1/2 the FP32 rate (runtime/fast_fp64.hpp): float32 transcendental activations
  // then evaluate in double (KP_FAST_FP64).
  bool fast_fp64 = false;
  std::string compile_target;  // what binaries are built for ("sm_90 cubin", "compute_90 PTX")
  std::string note;            // anything the user should know (e.g. PTX fallback)
};

// A compiled program as stored in the kernel cache.
struct Binary {
  std::string format;  // "cubin", "ptx", "opencl-binary"
  std::string bytes;
  std::string log;  // compiler warnings, if any
};

// Device memory as the backend sees it: a CUdeviceptr or a cl_mem, plus a byte offset.
struct DevicePtr {
  std::uint64_t handle = 0;
  std::uint64_t offset = 0;  // bytes
  DevicePtr at(std::uint64_t bytes) const { return {handle, offset + bytes}; }
};

// Arguments of the generic kernel (templates/common/elementwise.h); pitches in elements.
struct KernelArgs {
  DevicePtr out, in0, in1;
  std::uint64_t rows = 0, cols = 0;
  std::uint64_t ld_out = 0, ld_in0 = 0, ld_in1 = 0;
  // A gated backward (KP_GATED and KP_BACKWARD) has a second output and a third input: grad_a in
  // out, grad_b in out1, from g, a and b in in0, in1 and in2. Its kernel takes them after in1 and
  // their pitches after ld_in1.
  bool gated_backward = false;
  DevicePtr out1, in2;
  std::uint64_t ld_out1 = 0, ld_in2 = 0;
  // FP8 output (KP_OUT_F8, CUDA only): out = fp8(v / scale), the scale read from scale_ptr (one
  // float32 in device memory) where its handle is not 0, else `scale`. Its kernel takes the two
  // last.
  bool scaled = false;
  DevicePtr scale_ptr;
  float scale = 1.0f;
  // A per-element slope (PReLU's weight, RReLU's training noise: KP_SLOPE) and PReLU's weight
  // gradient kernels take six more after everything above: the weight buffer, the elements per
  // channel position (inner: the product of the dimensions after the channel's), the channels
  // (the weight's length, 1 for one weight in all), RReLU's seed and the index its counter starts
  // at (the element index of the launch's first element), and the weight gradient's parts per
  // channel (templates/common/slope.h).
  bool slope = false;
  DevicePtr weight;
  std::uint64_t inner = 1, channels = 1, seed = 0, counter = 0, parts = 1;
  // Strided rows (a row kernel of codegen's Layout::strided): the kernel takes `inner`, the
  // distance between a row's elements, after the pitches.
  bool strided = false;
};

struct LaunchDims {
  std::uint64_t grid_x = 1, grid_y = 1;
  unsigned block = 256;
  // Row kernels of the cluster strategy (CUDA): the dynamic shared memory of each block and the
  // blocks per cluster the kernel was compiled for (__cluster_dims__; grid_x is a multiple).
  unsigned shared_bytes = 0;
  unsigned cluster = 0;
  // Persistent row kernels: where not 0, grid_x is an upper bound that a backend knowing how
  // many blocks (clusters) of this kernel are resident at once lowers to resident_waves times that.
  unsigned resident_waves = 0;
};

class LoadedKernel {
 public:
  virtual ~LoadedKernel() = default;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const DeviceInfo& info() const = 0;
  virtual const TargetLimits& limits() const = 0;
  virtual Dialect dialect() const = 0;

  // Throws Error(compile_failed) carrying the log and options.
  virtual Binary compile(const RenderedKernel& kernel) = 0;
  // Throws Error(runtime_failed) if the binary does not load (then the caller recompiles).
  virtual std::unique_ptr<LoadedKernel> load(const Binary& binary, const std::string& entry) = 0;
  // stream: CUstream / cl_command_queue, or nullptr for the backend's own.
  virtual void launch(LoadedKernel& kernel, const LaunchDims& dims, const KernelArgs& args, void* stream) = 0;

  virtual DevicePtr allocate(std::uint64_t bytes) = 0;
  virtual void release(DevicePtr ptr) noexcept = 0;
  virtual void upload(DevicePtr dst, const void* src, std::uint64_t bytes) = 0;
  virtual void download(void* dst, DevicePtr src, std::uint64_t bytes) = 0;
  virtual void fill_bytes(DevicePtr dst, unsigned char value, std::uint64_t bytes) = 0;
  // Device-to-device copy on the backend's own stream: the roofline that kernels are judged by.
  virtual void copy(DevicePtr dst, DevicePtr src, std::uint64_t bytes) = 0;
  // Milliseconds that `work` (enqueued on the backend's own stream) took, timed on the device.
  virtual double time_ms(const std::function<void()>& work) = 0;
  virtual void synchronize() = 0;
};

// RAII owner of one allocation.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend& backend, std::uint64_t bytes)
      : backend_(&backend), ptr_(backend.allocate(bytes)), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(backend_, o.backend_);
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (backend_) backend_->release(ptr_);
  }
  DevicePtr ptr() const { return ptr_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  Backend* backend_ = nullptr;
  DevicePtr ptr_;
  std::uint64_t bytes_ = 0;
};

// What `kplay devices` prints for one backend: whether it is built, its status line and devices.
struct BackendReport {
  std::string backend;
  bool available = false;
  std::string status;  // e.g. "no CUDA device: libcuda.so.1 not found (...)"
  std::vector<DeviceInfo> devices;
  // The compiler the backend found, or why none ("NVRTC 13.0, <path> (on the library path)");
  // "" where it has nothing to say apart from its devices (OpenCL's compiler is the driver's).
  std::string compiler;
};

}  // namespace kplay::rt
