// CUDA implementation of the Backend interface.
#include "cuda_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>

#include "cuda_dialect.hpp"
#include "cuda_driver.hpp"
#include "kplay/error.hpp"
#include "nvrtc_compiler.hpp"
#include "runtime/fast_fp64.hpp"

namespace kplay::rt::cuda {
namespace {

// Makes the primary context current for the scope, whatever the caller had current.
class ContextScope {
 public:
  explicit ContextScope(CUcontext ctx) { check(driver().cuCtxPushCurrent(ctx), "cuCtxPushCurrent"); }
  ~ContextScope() {
    CUcontext popped = nullptr;
    driver().cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;
};

class CudaKernel : public LoadedKernel {
 public:
  CudaKernel(CUcontext ctx, CUmodule module, CUfunction fn) : ctx_(ctx), module_(module), fn_(fn) {}
  ~CudaKernel() override {
    try {
      ContextScope scope(ctx_);
      driver().cuModuleUnload(module_);
    } catch (...) {  // destructors never throw
    }
  }
  CUfunction fn() const { return fn_; }
  // Clusters (blocks, for a cluster of one) of this function with `shared_bytes` of dynamic shared
  // memory resident on the device at once, as the driver computes it (GPC packing included);
  // cached per size. After allow(), which the occupancy of a large cluster or slice depends on.
  std::uint64_t resident(unsigned block, unsigned shared_bytes, unsigned cluster, int units) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto at = resident_.find(shared_bytes);
    if (at != resident_.end()) return at->second;
    int n = 0;
    if (cluster > 1) {
      CUlaunchConfig config{};
      config.gridDimX = cluster;
      config.gridDimY = config.gridDimZ = 1;
      config.blockDimX = block;
      config.blockDimY = config.blockDimZ = 1;
      config.sharedMemBytes = shared_bytes;
      check(driver().cuOccupancyMaxActiveClusters(&n, fn_, &config), "cuOccupancyMaxActiveClusters");
    } else {
      check(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&n, fn_, static_cast<int>(block), shared_bytes),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
      n *= units;
    }
    const std::uint64_t r = static_cast<std::uint64_t>(n > 0 ? n : 1);
    resident_.emplace(shared_bytes, r);
    return r;
  }

  // Row kernels of the cluster strategy: the dynamic shared memory this function may take,
  // raised (cuFuncSetAttribute) on the first launch that needs more than it was allowed, and
  // clusters beyond the portable 8 allowed once. The default allows 48 KiB less the function's
  // static shared memory, which the backend does not track: any dynamic amount is set.
  void allow(unsigned shared_bytes, unsigned cluster) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shared_bytes > shared_allowed_) {
      check(driver().cuFuncSetAttribute(fn_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                        static_cast<int>(shared_bytes)),
            "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
      shared_allowed_ = shared_bytes;
    }
    if (cluster > 8 && !non_portable_) {
      check(driver().cuFuncSetAttribute(fn_, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
            "cuFuncSetAttribute(NON_PORTABLE_CLUSTER_SIZE_ALLOWED)");
      non_portable_ = true;
    }
  }

 private:
  std::mutex mutex_;
  unsigned shared_allowed_ = 0;
  std::map<unsigned, std::uint64_t> resident_;
  bool non_portable_ = false;
  CUcontext ctx_;
  CUmodule module_;
  CUfunction fn_;
};

int attribute(CUdevice dev, CUdevice_attribute a) {
  int v = 0;
  check(driver().cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute");
  return v;
}

DeviceInfo describe(CUdevice dev, int index) {
  const Driver& d = driver();
  DeviceInfo info;
  info.backend = "cuda";
  info.index = index;
  char name[256] = {};
  check(d.cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
  info.name = name;
  const int cc = attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
                 attribute(dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.arch = "sm_" + std::to_string(cc);
  info.fast_fp64 = cuda_fast_fp64(cc);
  size_t mem = 0;
  check(d.cuDeviceTotalMem(&mem, dev), "cuDeviceTotalMem");
  info.memory_bytes = mem;
  info.compute_units = attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.max_threads_per_unit = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info.max_block = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.l2_bytes = static_cast<std::uint64_t>(attribute(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  info.max_blocks_per_unit = attribute(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  info.clock_ghz = attribute(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1e6;  // kHz
  // Peak DRAM bandwidth from the memory clock (kHz) and bus width (bits), double data rate.
  // A driver that reports 0 for either leaves it unknown, and the default model steps aside.
  const double mem_khz = attribute(dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  const double bus_bits = attribute(dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  info.memory_bandwidth_gbps = 2.0 * mem_khz * 1e3 * bus_bits / 8.0 / 1e9;
  info.driver_version = "CUDA " + version_string(d.version);
  try {
    const Nvrtc& nvrtc = Nvrtc::get();
    info.compiler_version = "NVRTC " + nvrtc.version();
    CompileTarget t = choose_target(cc, nvrtc.supported_archs(), nvrtc.version(), version_string(d.version));
    info.compile_target = t.describe();
    info.note = t.note;
  } catch (const Error& e) {
    info.compiler_version = "none";
    info.note = e.what();
  }
  return info;
}

// Spins one thread until `ns` nanoseconds of the GPU's global timer have passed. PTX for the
// oldest target, so that the driver compiles it for any GPU it runs.
constexpr const char* kHoldPtx = R"(.version 6.0
.target sm_50
.address_size 64
.visible .entry kp_hold(.param .u64 ns)
{
  .reg .pred %p;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [ns];
  mov.u64 %rd2, %globaltimer;
SPIN:
  mov.u64 %rd3, %globaltimer;
  sub.s64 %rd4, %rd3, %rd2;
  setp.lt.u64 %p, %rd4, %rd1;
  @%p bra SPIN;
  ret;
}
)";

class CudaBackend : public Backend {
 public:
  explicit CudaBackend(int index) {
    const Driver& d = driver();
    int count = 0;
    check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (index < 0 || index >= count)
      throw Error(ErrorCode::no_device,
                  "no CUDA device " + std::to_string(index) + " (this machine has " + std::to_string(count) + ")");
    check(d.cuDeviceGet(&dev_, index), "cuDeviceGet");
    info_ = describe(dev_, index);
    const Nvrtc& nvrtc = Nvrtc::get();  // a backend that cannot compile is no use
    const int cc = std::stoi(info_.arch.substr(3));
    target_ = choose_target(cc, nvrtc.supported_archs(), nvrtc.version(), version_string(d.version));
    check(d.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
    ContextScope scope(ctx_);
    check(d.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(d.cuEventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
    check(d.cuEventCreate(&stop_, CU_EVENT_DEFAULT), "cuEventCreate");
    limits_.backend = "cuda";
    limits_.max_block = info_.max_block;
    limits_.compute_units = info_.compute_units;
    limits_.max_threads_per_unit = info_.max_threads_per_unit;
    limits_.cache_hints = true;
    limits_.fp8 = cc >= 89;
    limits_.max_cluster = cc >= 90 ? 16 : 0;  // 8 portable, 16 with the non-portable attribute
    limits_.max_shared_optin =
        static_cast<std::uint64_t>(attribute(dev_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
    limits_.fp8_why =
        limits_.fp8 ? ""
                    : "FP8 output needs a GPU of sm_89 or newer (Ada, Hopper); " + info_.name + " is " + info_.arch;
  }

  ~CudaBackend() override {
    try {
      const Driver& d = driver();
      {
        ContextScope scope(ctx_);
        if (hold_module_) d.cuModuleUnload(hold_module_);
        d.cuEventDestroy(start_);
        d.cuEventDestroy(stop_);
        d.cuStreamDestroy(stream_);
      }
      d.cuDevicePrimaryCtxRelease(dev_);
    } catch (...) {  // destructors never throw
    }
  }

  const DeviceInfo& info() const override { return info_; }
  const TargetLimits& limits() const override { return limits_; }
  Dialect dialect() const override {
    Dialect d = cuda::dialect();
    d.fast_fp64 = info_.fast_fp64;
    return d;
  }

  Binary compile(const RenderedKernel& kernel) override { return Nvrtc::get().compile(kernel, target_); }

  std::unique_ptr<LoadedKernel> load(const Binary& binary, const std::string& entry) override {
    ContextScope scope(ctx_);
    std::string image = binary.bytes;
    if (binary.format == "ptx" && (image.empty() || image.back() != '\0')) image.push_back('\0');
    CUmodule module = nullptr;
    check(driver().cuModuleLoadData(&module, image.data()), "cuModuleLoadData");
    CUfunction fn = nullptr;
    CUresult r = driver().cuModuleGetFunction(&fn, module, entry.c_str());
    if (r != CUDA_SUCCESS) {
      driver().cuModuleUnload(module);
      check(r, ("cuModuleGetFunction(" + entry + ")").c_str());
    }
    return std::make_unique<CudaKernel>(ctx_, module, fn);
  }

  void launch(LoadedKernel& kernel, const LaunchDims& dims, const KernelArgs& a, void* stream) override {
    auto& k = static_cast<CudaKernel&>(kernel);
    CUdeviceptr out = a.out.handle + a.out.offset, in0 = a.in0.handle + a.in0.offset, in1 = a.in1.handle + a.in1.offset;
    CUdeviceptr out1 = a.out1.handle + a.out1.offset, in2 = a.in2.handle + a.in2.offset;
    CUdeviceptr scale_ptr = a.scale_ptr.handle ? a.scale_ptr.handle + a.scale_ptr.offset : 0;
    float scale = a.scale;
    unsigned long long rows = a.rows, cols = a.cols, ld_out = a.ld_out, ld0 = a.ld_in0, ld1 = a.ld_in1;
    unsigned long long ld_out1 = a.ld_out1, ld2 = a.ld_in2;
    // The kernel's parameters in its order (templates/common/elementwise.h): buffers, sizes and
    // pitches, a gated backward's two more of each, FP8's scale.
    CUdeviceptr weight = a.weight.handle + a.weight.offset;
    unsigned long long inner = a.inner, channels = a.channels, seed = a.seed, counter = a.counter, parts = a.parts;
    void* params[24];
    unsigned count = 0;
    for (void* p : {static_cast<void*>(&out), static_cast<void*>(&in0), static_cast<void*>(&in1)}) params[count++] = p;
    if (a.gated_backward) {
      params[count++] = &out1;
      params[count++] = &in2;
    }
    for (void* p : {static_cast<void*>(&rows), static_cast<void*>(&cols), static_cast<void*>(&ld_out),
                    static_cast<void*>(&ld0), static_cast<void*>(&ld1)})
      params[count++] = p;
    if (a.gated_backward) {
      params[count++] = &ld_out1;
      params[count++] = &ld2;
    }
    if (a.strided) params[count++] = &inner;
    if (a.scaled) {
      params[count++] = &scale_ptr;
      params[count++] = &scale;
    }
    if (a.slope)
      for (void* p : {static_cast<void*>(&weight), static_cast<void*>(&inner), static_cast<void*>(&channels),
                      static_cast<void*>(&seed), static_cast<void*>(&counter), static_cast<void*>(&parts)})
        params[count++] = p;
    ContextScope scope(ctx_);
    if (dims.shared_bytes || dims.cluster) k.allow(dims.shared_bytes, dims.cluster);
    std::uint64_t grid_x = dims.grid_x;
    if (dims.resident_waves) {
      const std::uint64_t per = std::max(dims.cluster, 1u);
      grid_x = std::min(
          grid_x, dims.resident_waves * k.resident(dims.block, dims.shared_bytes, per, info_.compute_units) * per);
    }
    check(driver().cuLaunchKernel(k.fn(), static_cast<unsigned>(grid_x), static_cast<unsigned>(dims.grid_y), 1,
                                  dims.block, 1, 1, dims.shared_bytes, stream ? static_cast<CUstream>(stream) : stream_,
                                  params, nullptr),
          "cuLaunchKernel");
  }

  DevicePtr allocate(std::uint64_t bytes) override {
    ContextScope scope(ctx_);
    CUdeviceptr p = 0;
    check(driver().cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
    return {p, 0};
  }
  void release(DevicePtr ptr) noexcept override {
    if (!ptr.handle) return;
    try {
      ContextScope scope(ctx_);
      driver().cuMemFree(ptr.handle);
    } catch (...) {  // destructors never throw; a failed free leaks
    }
  }
  // Uploads and fills go on the backend's own stream, which is non-blocking: on the legacy stream
  // nothing would order them before the next kernel (cuMemsetD8 is asynchronous, and a pageable
  // cuMemcpyHtoD may return before its DMA lands), and a kernel could read the poison under load.
  void upload(DevicePtr dst, const void* src, std::uint64_t bytes) override {
    ContextScope scope(ctx_);
    check(driver().cuMemcpyHtoDAsync(dst.handle + dst.offset, src, bytes, stream_), "cuMemcpyHtoDAsync");
    check(driver().cuStreamSynchronize(stream_), "cuStreamSynchronize");  // the caller may free src
  }
  void download(void* dst, DevicePtr src, std::uint64_t bytes) override {
    ContextScope scope(ctx_);
    check(driver().cuStreamSynchronize(stream_), "cuStreamSynchronize");
    check(driver().cuMemcpyDtoH(dst, src.handle + src.offset, bytes), "cuMemcpyDtoH");
  }
  void fill_bytes(DevicePtr dst, unsigned char value, std::uint64_t bytes) override {
    ContextScope scope(ctx_);
    check(driver().cuMemsetD8Async(dst.handle + dst.offset, value, bytes, stream_), "cuMemsetD8Async");
    check(driver().cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }
  void copy(DevicePtr dst, DevicePtr src, std::uint64_t bytes) override {
    ContextScope scope(ctx_);
    check(driver().cuMemcpyDtoDAsync(dst.handle + dst.offset, src.handle + src.offset, bytes, stream_),
          "cuMemcpyDtoDAsync");
  }
  // The events bracket the GPU's work alone, as OpenCL's profiling events do: a hold kernel keeps
  // the stream busy while the host submits `work`, so the start event fires when the work is
  // already queued. Without it the time counts the host's launch (a few µs, as long as a kernel
  // of 2^20 elements, whose autotuning it would decide). The hold lasts twice the host time the
  // previous call took, so it covers a work of many launches too.
  double time_ms(const std::function<void()>& work) override {
    std::lock_guard<std::mutex> lock(timing_);
    ContextScope scope(ctx_);
    const Driver& d = driver();
    hold(hold_ns_);
    check(d.cuEventRecord(start_, stream_), "cuEventRecord");
    const auto host_start = std::chrono::steady_clock::now();
    work();
    const double host_ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - host_start).count();
    check(d.cuEventRecord(stop_, stream_), "cuEventRecord");
    check(d.cuEventSynchronize(stop_), "cuEventSynchronize");
    hold_ns_ = std::clamp<std::uint64_t>(static_cast<std::uint64_t>(2 * host_ns), kMinHoldNs, kMaxHoldNs);
    float ms = 0;
    check(d.cuEventElapsedTime(&ms, start_, stop_), "cuEventElapsedTime");
    return ms;
  }
  void synchronize() override {
    ContextScope scope(ctx_);
    check(driver().cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

 private:
  static constexpr std::uint64_t kMinHoldNs = 20'000, kMaxHoldNs = 5'000'000;

  // Runs kp_hold for `ns` on the stream (its module loaded on first use). A driver that cannot
  // load it leaves timing as it was, host launch included, rather than failing the measurement.
  void hold(std::uint64_t ns) {
    const Driver& d = driver();
    if (!hold_tried_) {
      hold_tried_ = true;
      if (d.cuModuleLoadData(&hold_module_, kHoldPtx) != CUDA_SUCCESS ||
          d.cuModuleGetFunction(&hold_fn_, hold_module_, "kp_hold") != CUDA_SUCCESS)
        hold_fn_ = nullptr;
    }
    if (!hold_fn_) return;
    unsigned long long arg = ns;
    void* params[] = {&arg};
    check(d.cuLaunchKernel(hold_fn_, 1, 1, 1, 1, 1, 1, 0, stream_, params, nullptr), "cuLaunchKernel(kp_hold)");
  }

  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  CUevent start_ = nullptr, stop_ = nullptr;
  std::mutex timing_;  // one time_ms at a time; guards the hold's state too
  bool hold_tried_ = false;
  CUmodule hold_module_ = nullptr;
  CUfunction hold_fn_ = nullptr;
  std::uint64_t hold_ns_ = kMinHoldNs;
  DeviceInfo info_;
  TargetLimits limits_;
  CompileTarget target_;
};
}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int index) { return std::make_unique<CudaBackend>(index); }

int pointer_device(std::uint64_t ptr, const char* name) {
  int ordinal = -1;
  const CUresult r = driver().cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
  if (r != CUDA_SUCCESS || ordinal < 0)
    throw Error(ErrorCode::invalid_argument, std::string(name) + " is not device memory known to the CUDA driver");
  return ordinal;
}

void require_primary_context(int ordinal) {
  const Driver& d = driver();
  CUcontext current = nullptr;
  check(d.cuCtxGetCurrent(&current), "cuCtxGetCurrent");
  if (!current) return;
  // The primary context of each device, retained once for the process (a per-call retain and
  // release would cost more than the rest of an API call's host work).
  static std::mutex mutex;
  static std::map<int, std::pair<CUdevice, CUcontext>> primaries;
  std::pair<CUdevice, CUcontext> primary;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = primaries.find(ordinal);
    if (it == primaries.end()) {
      CUdevice dev = 0;
      CUcontext ctx = nullptr;
      check(d.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
      check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
      it = primaries.emplace(ordinal, std::make_pair(dev, ctx)).first;
    }
    primary = it->second;
  }
  CUdevice current_dev = 0;
  check(d.cuCtxGetDevice(&current_dev), "cuCtxGetDevice");
  if (current_dev == primary.first && current != primary.second)
    throw Error(ErrorCode::unsupported,
                "the current CUDA context is not the device's primary context; kplay runs in the primary "
                "context (the CUDA runtime's), so use it or make it current");
}

// NOLINTNEXTLINE(performance-no-int-to-ptr): the driver's handle is that integer (cuda.h casts it too)
void* legacy_default_stream() { return reinterpret_cast<void*>(kStreamLegacyHandle); }

bool stream_is_capturing(void* stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (driver().cuStreamIsCapturing(static_cast<CUstream>(stream), &status) != CUDA_SUCCESS) return false;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

BackendReport probe_cuda() {
  BackendReport report;
  report.backend = "cuda";
  // NVRTC first: it needs no driver, and `kplay devices` says which one it found either way.
  std::string no_nvrtc;
  try {
    const Nvrtc& nvrtc = Nvrtc::get();
    report.compiler = "NVRTC " + nvrtc.version() + ", " + nvrtc.path() + " (" + nvrtc.found() + ")";
  } catch (const Error& e) {
    no_nvrtc = e.what();
    report.compiler = no_nvrtc;
  }
  try {
    const Driver& d = driver();
    int count = 0;
    check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
    for (int i = 0; i < count; ++i) {
      CUdevice dev = 0;
      check(d.cuDeviceGet(&dev, i), "cuDeviceGet");
      report.devices.push_back(describe(dev, i));
    }
    report.status = std::to_string(count) + " device(s), driver CUDA " + version_string(d.version);
    // Devices without a compiler are listed but not offered: --backend auto passes over them.
    report.available = no_nvrtc.empty();
    if (!no_nvrtc.empty()) report.status += ", unusable without NVRTC (" + no_nvrtc + ")";
  } catch (const Error& e) {
    report.status = e.what();
  }
  return report;
}

}  // namespace kplay::rt::cuda
