// OpenCL implementation of the Backend interface; see opencl_backend.hpp.
#include "opencl_backend.hpp"

#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <mutex>
#include <set>
#include <vector>

#include "kplay/error.hpp"
#include "opencl_devices.hpp"
#include "opencl_dialect.hpp"
#include "opencl_errors.hpp"
#include "opencl_program.hpp"

namespace kplay::rt::opencl {
namespace {

// DevicePtr carries a cl_mem as an integer handle (backend.hpp); this is its way back.
cl_mem mem(DevicePtr p) {
  // NOLINTNEXTLINE(performance-no-int-to-ptr): the handle is a cl_mem stored as an integer
  return reinterpret_cast<cl_mem>(static_cast<std::uintptr_t>(p.handle));
}

// clEnqueueFillBuffer is used only for ranges that end at or below this byte (see fill_bytes).
constexpr std::uint64_t kFillLimit = (std::uint64_t{1} << 31) - 4096;

class OpenClKernel : public LoadedKernel {
 public:
  OpenClKernel(ProgramKernel pk, std::string entry) : pk_(pk), entry_(std::move(entry)) {}
  ~OpenClKernel() override {
    clReleaseKernel(pk_.kernel);
    clReleaseProgram(pk_.program);
  }
  OpenClKernel(const OpenClKernel&) = delete;
  OpenClKernel& operator=(const OpenClKernel&) = delete;

  cl_kernel kernel() const { return pk_.kernel; }
  std::size_t element_size() const { return pk_.element_size; }
  const std::string& entry() const { return entry_; }
  // clSetKernelArg is the one OpenCL call that is not thread-safe: held from the first argument
  // to the enqueue, which captures them.
  std::mutex& arguments() { return arguments_; }

 private:
  ProgramKernel pk_;
  std::string entry_;
  std::mutex arguments_;
};

class OpenClBackend : public Backend {
 public:
  // `context`: the caller's context of the device (retained here), or nullptr for a new one.
  OpenClBackend(const DeviceHandle& handle, int index, cl_context context) : handle_(handle) {
    info_ = describe(handle_, index);
    limits_ = limits_for(handle_, info_);
    check(clGetDeviceInfo(handle_.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof max_alloc_, &max_alloc_, nullptr),
          "clGetDeviceInfo(CL_DEVICE_MAX_MEM_ALLOC_SIZE)");
    cl_int status = CL_SUCCESS;
    if (context) {
      check(clRetainContext(context), "clRetainContext");
      context_ = context;
    } else {
      const cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                             reinterpret_cast<cl_context_properties>(handle_.platform), 0};
      context_ = clCreateContext(props, 1, &handle_.device, nullptr, nullptr, &status);
      check(status, "clCreateContext");
    }
    queue_ = clCreateCommandQueue(context_, handle_.device, CL_QUEUE_PROFILING_ENABLE, &status);
    if (status != CL_SUCCESS) {
      clReleaseContext(context_);
      check(status, "clCreateCommandQueue");
    }
  }

  ~OpenClBackend() override {
    // Plain C calls: nothing here throws. Finish first so no command outlives its queue.
    clFinish(queue_);
    clReleaseCommandQueue(queue_);
    clReleaseContext(context_);
  }

  const DeviceInfo& info() const override { return info_; }
  const TargetLimits& limits() const override { return limits_; }
  Dialect dialect() const override {
    Dialect d = opencl::dialect();
    d.fast_fp64 = info_.fast_fp64;
    return d;
  }

  Binary compile(const RenderedKernel& kernel) override {
    return build_program(context_, handle_.device, info_.name, kernel);
  }

  std::unique_ptr<LoadedKernel> load(const Binary& binary, const std::string& entry) override {
    ProgramKernel pk = load_program(context_, handle_.device, binary, entry);
    return std::make_unique<OpenClKernel>(pk, entry);
  }

  void launch(LoadedKernel& kernel, const LaunchDims& dims, const KernelArgs& a, void* stream) override {
    auto& k = static_cast<OpenClKernel&>(kernel);
    const std::size_t esize = k.element_size();
    if (a.scaled)
      throw Error(ErrorCode::unsupported, "OpenCL launch of " + k.entry() + ": FP8 output is for CUDA only");
    for (const DevicePtr* p : {&a.out, &a.in0, &a.in1, &a.out1, &a.in2, &a.weight})
      if (p->offset % esize)
        throw Error(ErrorCode::invalid_argument, "OpenCL launch of " + k.entry() + ": byte offset " +
                                                     std::to_string(p->offset) +
                                                     " is not a multiple of the element size " + std::to_string(esize));
    const cl_mem out = mem(a.out), in0 = mem(a.in0), in1 = mem(a.in1);
    const cl_ulong out_off = a.out.offset / esize, in0_off = a.in0.offset / esize, in1_off = a.in1.offset / esize;
    const cl_mem out1 = mem(a.gated_backward ? a.out1 : a.out), in2 = mem(a.gated_backward ? a.in2 : a.in0);
    const cl_ulong out1_off = a.out1.offset / esize, in2_off = a.in2.offset / esize;
    const cl_ulong rows = a.rows, cols = a.cols, ld_out = a.ld_out, ld0 = a.ld_in0, ld1 = a.ld_in1;
    const cl_ulong ld_out1 = a.ld_out1, ld2 = a.ld_in2;
    const cl_mem weight = mem(a.slope ? a.weight : a.in0);
    const cl_ulong weight_off = a.weight.offset / esize, inner = a.inner, channels = a.channels, seed = a.seed,
                   counter = a.counter, parts = a.parts;
    const std::size_t global[2] = {static_cast<std::size_t>(dims.grid_x) * dims.block,
                                   static_cast<std::size_t>(dims.grid_y)};
    const std::size_t local[2] = {dims.block, 1};
    cl_command_queue queue = stream ? static_cast<cl_command_queue>(stream) : queue_;

    std::lock_guard<std::mutex> lock(k.arguments());
    // The kernel's parameters in its order (templates/common/elementwise.h): buffers with their
    // offsets, sizes and pitches, a gated backward's two more of each.
    struct Arg {
      std::size_t size;
      const void* value;
    };
    Arg args[28];
    cl_uint count = 0;
    auto add = [&](std::initializer_list<Arg> list) {
      for (const Arg& arg : list) args[count++] = arg;
    };
    // NOLINTBEGIN(bugprone-sizeof-expression): OpenCL takes handles (cl_mem, cl_context) by their size
    add({{sizeof out, &out},
         {sizeof out_off, &out_off},
         {sizeof in0, &in0},
         {sizeof in0_off, &in0_off},
         {sizeof in1, &in1},
         {sizeof in1_off, &in1_off}});
    if (a.gated_backward)
      add({{sizeof out1, &out1}, {sizeof out1_off, &out1_off}, {sizeof in2, &in2}, {sizeof in2_off, &in2_off}});
    add({{sizeof rows, &rows}, {sizeof cols, &cols}, {sizeof ld_out, &ld_out}, {sizeof ld0, &ld0}, {sizeof ld1, &ld1}});
    if (a.gated_backward) add({{sizeof ld_out1, &ld_out1}, {sizeof ld2, &ld2}});
    if (a.strided) add({{sizeof inner, &inner}});
    if (a.slope)
      add({{sizeof weight, &weight},
           {sizeof weight_off, &weight_off},
           {sizeof inner, &inner},
           {sizeof channels, &channels},
           {sizeof seed, &seed},
           {sizeof counter, &counter},
           {sizeof parts, &parts}});
    // NOLINTEND(bugprone-sizeof-expression)
    for (cl_uint i = 0; i < count; ++i)
      check(clSetKernelArg(k.kernel(), i, args[i].size, args[i].value),
            "clSetKernelArg(" + k.entry() + ", " + std::to_string(i) + ")");
    cl_event event = nullptr;
    check(clEnqueueNDRangeKernel(queue, k.kernel(), 2, nullptr, global, local, 0, nullptr,
                                 queue == queue_ ? &event : nullptr),
          "clEnqueueNDRangeKernel(" + k.entry() + ")");
    track(event);
  }

  DevicePtr allocate(std::uint64_t bytes) override {
    if (bytes > max_alloc_)
      throw Error(ErrorCode::runtime_failed, "clCreateBuffer: " + std::to_string(bytes) +
                                                 " bytes exceed the device's CL_DEVICE_MAX_MEM_ALLOC_SIZE of " +
                                                 std::to_string(max_alloc_));
    cl_int status = CL_SUCCESS;
    cl_mem m = clCreateBuffer(context_, CL_MEM_READ_WRITE, bytes ? bytes : 1, nullptr, &status);
    check(status, "clCreateBuffer(" + std::to_string(bytes) + " bytes)");
    return {static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(m)), 0};
  }
  void release(DevicePtr ptr) noexcept override {
    if (ptr.handle) clReleaseMemObject(mem(ptr));  // OpenCL keeps it alive until queued work is done
  }
  void upload(DevicePtr dst, const void* src, std::uint64_t bytes) override {
    if (!bytes) return;  // OpenCL refuses empty transfers
    cl_event event = nullptr;
    check(clEnqueueWriteBuffer(queue_, mem(dst), CL_TRUE, dst.offset, bytes, src, 0, nullptr, &event),
          "clEnqueueWriteBuffer");
    track(event);
  }
  void download(void* dst, DevicePtr src, std::uint64_t bytes) override {
    if (!bytes) return;
    cl_event event = nullptr;
    check(clEnqueueReadBuffer(queue_, mem(src), CL_TRUE, src.offset, bytes, dst, 0, nullptr, &event),
          "clEnqueueReadBuffer");
    track(event);
  }
  void fill_bytes(DevicePtr dst, unsigned char value, std::uint64_t bytes) override {
    if (!bytes) return;
    if (dst.offset + bytes <= kFillLimit) {
      cl_event event = nullptr;
      check(clEnqueueFillBuffer(queue_, mem(dst), &value, 1, dst.offset, bytes, 0, nullptr, &event),
            "clEnqueueFillBuffer");
      const cl_int status = clWaitForEvents(1, &event);  // synchronous, like the other transfers
      track(event);
      check(status, "clWaitForEvents(clEnqueueFillBuffer)");
      return;
    }
    // Past 2 GiB, NVIDIA's driver (580.159) hangs, fails with -9999 or leaves bytes unfilled in
    // clEnqueueFillBuffer, so there the bytes come from the host, in pieces.
    const std::uint64_t piece = std::min<std::uint64_t>(bytes, std::uint64_t{64} << 20);
    const std::vector<unsigned char> pattern(piece, value);
    for (std::uint64_t done = 0; done < bytes; done += piece)
      upload(dst.at(done), pattern.data(), std::min(piece, bytes - done));
  }
  void copy(DevicePtr dst, DevicePtr src, std::uint64_t bytes) override {
    if (!bytes) return;
    cl_event event = nullptr;
    check(clEnqueueCopyBuffer(queue_, mem(src), mem(dst), src.offset, dst.offset, bytes, 0, nullptr, &event),
          "clEnqueueCopyBuffer");
    track(event);
  }

  double time_ms(const std::function<void()>& work) override {
    std::lock_guard<std::mutex> lock(timing_);
    check(clFinish(queue_), "clFinish");
    struct Recording {  // stops recording and releases the events on every way out
      OpenClBackend& b;
      explicit Recording(OpenClBackend& backend) : b(backend) {
        std::lock_guard<std::mutex> l(b.events_mutex_);
        b.recording_ = true;
      }
      ~Recording() {
        std::lock_guard<std::mutex> l(b.events_mutex_);
        b.recording_ = false;
        for (cl_event e : b.events_) clReleaseEvent(e);
        b.events_.clear();
      }
    } recording(*this);
    const auto host_start = std::chrono::steady_clock::now();
    work();
    check(clFinish(queue_), "clFinish");
    const double host_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start).count();

    std::lock_guard<std::mutex> l(events_mutex_);
    if (events_.empty()) return 0.0;  // nothing was enqueued
    cl_ulong first = ~cl_ulong{0}, last = 0;
    for (cl_event e : events_) {
      cl_ulong start = 0, end = 0;
      if (clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr) != CL_SUCCESS ||
          clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) != CL_SUCCESS)
        return host_ms;  // profiling info unavailable: the host clock is the best there is
      first = std::min(first, start);
      last = std::max(last, end);
    }
    return last > first ? static_cast<double>(last - first) * 1e-6 : 0.0;
  }

  void synchronize() override { check(clFinish(queue_), "clFinish"); }

 private:
  // Keeps an event of the own queue while time_ms records, releases it otherwise.
  void track(cl_event event) {
    if (!event) return;
    std::lock_guard<std::mutex> lock(events_mutex_);
    if (recording_)
      events_.push_back(event);
    else
      clReleaseEvent(event);
  }

  DeviceHandle handle_;
  DeviceInfo info_;
  TargetLimits limits_;
  cl_ulong max_alloc_ = 0;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::mutex timing_;        // one time_ms at a time
  std::mutex events_mutex_;  // guards recording_ and events_
  bool recording_ = false;
  std::vector<cl_event> events_;
};

// The context and device of a caller's queue.
struct QueueOwner {
  cl_context context = nullptr;
  cl_device_id device = nullptr;
};

QueueOwner queue_owner(void* queue) {
  if (!queue) throw Error(ErrorCode::invalid_argument, "the OpenCL stream must be a cl_command_queue, not null");
  auto q = static_cast<cl_command_queue>(queue);
  QueueOwner o;
  // NOLINTBEGIN(bugprone-sizeof-expression): OpenCL takes handles (cl_mem, cl_context) by their size
  check(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof o.context, &o.context, nullptr),
        "clGetCommandQueueInfo(CL_QUEUE_CONTEXT) on the stream", ErrorCode::invalid_argument);
  check(clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof o.device, &o.device, nullptr),
        "clGetCommandQueueInfo(CL_QUEUE_DEVICE) on the stream", ErrorCode::invalid_argument);
  // NOLINTEND(bugprone-sizeof-expression)
  return o;
}

std::string pointer_text(const void* p) {
  char buf[2 + 2 * sizeof(void*) + 1];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace

std::unique_ptr<Backend> make_opencl_backend(int index) {
  const std::vector<DeviceHandle> devices = list_devices();
  if (index < 0 || index >= static_cast<int>(devices.size()))
    throw Error(ErrorCode::no_device, "no OpenCL device: there is no device " + std::to_string(index) +
                                          " (this machine has " + std::to_string(devices.size()) + ")");
  return std::make_unique<OpenClBackend>(devices[static_cast<std::size_t>(index)], index, nullptr);
}

std::string queue_identity(void* queue) {
  const QueueOwner o = queue_owner(queue);
  return "opencl:" + pointer_text(o.context) + ":" + pointer_text(o.device);
}

std::unique_ptr<Backend> make_opencl_backend_for_queue(void* queue) {
  const QueueOwner o = queue_owner(queue);
  DeviceHandle handle;
  handle.device = o.device;
  // NOLINTBEGIN(bugprone-sizeof-expression): OpenCL takes handles (cl_mem, cl_context) by their size
  check(clGetDeviceInfo(o.device, CL_DEVICE_PLATFORM, sizeof handle.platform, &handle.platform, nullptr),
        "clGetDeviceInfo(CL_DEVICE_PLATFORM)");
  // NOLINTEND(bugprone-sizeof-expression)
  int index = 0;  // the device's place in `kplay devices`, for messages; 0 if not listed (a sub-device)
  try {
    const std::vector<DeviceHandle> devices = list_devices();
    for (std::size_t i = 0; i < devices.size(); ++i)
      if (devices[i].device == o.device) index = static_cast<int>(i);
  } catch (const Error&) {  // only the index is at stake
  }
  return std::make_unique<OpenClBackend>(handle, index, o.context);
}

BackendReport probe_opencl() {
  BackendReport report;
  report.backend = "opencl";
  try {
    const std::vector<DeviceHandle> devices = list_devices();
    std::set<cl_platform_id> platforms;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      platforms.insert(devices[i].platform);
      report.devices.push_back(describe(devices[i], static_cast<int>(i)));
    }
    report.available = true;
    report.status =
        std::to_string(devices.size()) + " device(s) on " + std::to_string(platforms.size()) + " platform(s)";
  } catch (const std::exception& e) {
    report.status = e.what();
  } catch (...) {
    report.status = "no OpenCL device: the OpenCL driver failed in an unexpected way";
  }
  return report;
}

}  // namespace kplay::rt::opencl
